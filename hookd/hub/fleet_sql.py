"""The hub's SQL for the fleet's one notifier (docs/fleet.md "One notifier for the fleet"):
the schema it adds to :mod:`hookd.hub.sql`'s (installed with it by
:func:`hookd.hub.sql.install`), the links, the lead's advisory lock and the claims. Like
``sql``, each function takes an open ``asyncpg.Connection`` and raises what asyncpg raises.

- ``hookd.links``: one row per host whose daemon is linked to the hub for notifications:
  ``notify`` (``fleet``: the fleet notifier covers its interactions; ``local``: it notifies
  them itself), ``linked_at`` (the host's clock, UNIX seconds: interaction steps due from then
  on are the fleet's), ``pid`` and ``lock_key`` (the link's session holds the advisory lock
  ``(LINK_CLASS, lock_key)``: a row whose session is gone is a host no longer linked).
- ``hookd.notified``: one row per notified step of an interaction, keyed by ``(host_id,
  interaction_id, step)`` (``host_id``: the interaction's host), ``notified_by`` (the role
  that notified it), ``via`` (``fleet``: as the fleet notifier; ``host``: the interaction's own
  host, notifying it itself).
  The key is the arbiter: whoever inserts a step first notifies it, nobody else does.
- The lead: the session holding the advisory lock ``(LEAD_CLASS, 0)`` of the hub's database
  is the fleet notifier. Only members of the group role ``hookd_notifier`` may lead: they
  read every host's interaction events (``*_pending``, ``*_resolved``; no other kind) and
  links, and insert ``notified`` rows for any host in their own name.
"""

from __future__ import annotations

from typing import Any

from hookd.hub.sql import PENDING_KINDS, RESOLVED_KINDS, check_host_id

#: The advisory lock class (first int4 key) of the fleet notifier's lock (second key: 0).
LEAD_CLASS = 0x686B6401
#: The advisory lock class of the hosts' links (second key: the link's ``lock_key``).
LINK_CLASS = 0x686B6402

_KINDS = "ARRAY[" + ", ".join(f"'{k}'" for k in PENDING_KINDS + RESOLVED_KINDS) + "]"

SCHEMA: list[str] = [
    """DO $$ BEGIN
         IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookd_notifier') THEN CREATE ROLE hookd_notifier NOLOGIN; END IF;
       END $$""",
    """CREATE TABLE IF NOT EXISTS hookd.links (
         host_id text PRIMARY KEY DEFAULT current_user,
         notify text NOT NULL CHECK (notify IN ('fleet', 'local')),
         linked_at double precision NOT NULL,
         pid integer NOT NULL,
         lock_key integer NOT NULL
       )""",
    """CREATE TABLE IF NOT EXISTS hookd.notified (
         host_id text NOT NULL DEFAULT current_user,
         interaction_id text NOT NULL,
         step integer NOT NULL,
         seq bigint,
         notified_by text NOT NULL DEFAULT current_user,
         via text NOT NULL DEFAULT 'host' CHECK (via IN ('host', 'fleet')),
         notified_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (host_id, interaction_id, step)
       )""",
    "ALTER TABLE hookd.links ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE hookd.notified ENABLE ROW LEVEL SECURITY",
    *(f"DROP POLICY IF EXISTS {p} ON hookd.{t}" for t, p in (
        ("links", "own_rows"), ("links", "notifier_reads"), ("links", "operator_reads"),
        ("notified", "own_rows"), ("notified", "notifier_reads"), ("notified", "notifier_inserts"),
        ("notified", "operator_reads"), ("events", "notifier_reads"))),
    "CREATE POLICY own_rows ON hookd.links TO hookd_host USING (host_id = current_user) WITH CHECK (host_id = current_user)",
    "CREATE POLICY notifier_reads ON hookd.links FOR SELECT TO hookd_notifier USING (true)",
    "CREATE POLICY operator_reads ON hookd.links FOR SELECT TO hookd_operator USING (true)",
    "CREATE POLICY own_rows ON hookd.notified TO hookd_host USING (host_id = current_user)"
    " WITH CHECK (host_id = current_user AND notified_by = current_user AND via = 'host')",
    "CREATE POLICY notifier_reads ON hookd.notified FOR SELECT TO hookd_notifier USING (true)",
    "CREATE POLICY notifier_inserts ON hookd.notified FOR INSERT TO hookd_notifier"
    " WITH CHECK (notified_by = current_user AND via = 'fleet')",
    "CREATE POLICY operator_reads ON hookd.notified FOR SELECT TO hookd_operator USING (true)",
    f"CREATE POLICY notifier_reads ON hookd.events FOR SELECT TO hookd_notifier USING (kind = ANY({_KINDS}))",
    "REVOKE ALL ON hookd.links, hookd.notified FROM PUBLIC",
    "GRANT SELECT, INSERT, UPDATE ON hookd.links TO hookd_host",
    "GRANT SELECT, INSERT ON hookd.notified TO hookd_host, hookd_notifier",
    "GRANT USAGE ON SCHEMA hookd TO hookd_notifier",
    "GRANT SELECT ON hookd.events, hookd.links TO hookd_notifier",
    "GRANT SELECT ON hookd.links, hookd.notified TO hookd_operator",
]

_THIS_DB = "(SELECT oid FROM pg_database WHERE datname = current_database())"


def check_role(role: str) -> str:
    """``role`` if it is a valid host id (:func:`hookd.hub.sql.check_host_id`); raises ValueError."""
    return check_host_id(role)


async def grant_notifier(conn: Any, role: str) -> None:
    """Make host role ``role`` a member of ``hookd_notifier`` (it may lead the fleet's
    notifications). Raises ValueError for a bad role name."""
    check_role(role)
    await conn.execute(f"GRANT hookd_notifier TO {role}")


async def may_lead(conn: Any) -> bool:
    """Whether this connection's role is a member of ``hookd_notifier`` (False too on a hub
    without the role: one installed before it)."""
    return bool(await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookd_notifier')"
        " AND pg_has_role(current_user, 'hookd_notifier', 'MEMBER')"))


async def try_lead(conn: Any) -> bool:
    """Take the lead's advisory lock for this session if no session holds it (never waits);
    True: this session holds it (until it ends)."""
    return bool(await conn.fetchval("SELECT pg_try_advisory_lock($1, 0)", LEAD_CLASS))


async def lead_present(conn: Any) -> bool:
    """Whether some session (this one or another) holds the lead's lock in this database."""
    return bool(await conn.fetchval(
        f"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = {_THIS_DB}"
        " AND classid = $1::int8::oid AND objid = 0 AND objsubid = 2 AND granted)", LEAD_CLASS))


async def link(conn: Any, notify: str, lock_key: int, linked_at: float) -> None:
    """Link this session's host: hold ``(LINK_CLASS, lock_key)`` for the session and write the
    host's ``links`` row (``notify``, ``linked_at``, this session's pid, ``lock_key``)."""
    await conn.execute("SELECT pg_advisory_lock($1, $2)", LINK_CLASS, lock_key)
    await conn.execute(
        "INSERT INTO hookd.links (host_id, notify, linked_at, pid, lock_key) VALUES (current_user, $1, $2,"
        " pg_backend_pid(), $3) ON CONFLICT (host_id) DO UPDATE SET notify = EXCLUDED.notify,"
        " linked_at = EXCLUDED.linked_at, pid = EXCLUDED.pid, lock_key = EXCLUDED.lock_key",
        notify, linked_at, lock_key)


async def claim(conn: Any, interaction_id: str, step: int, seq: int | None) -> bool:
    """Claim step ``step`` of this connection's host's interaction for the host itself (``via
    = 'host'``); True: the host notifies it (claimed now, or by the host earlier), False: the
    fleet notifier did. A claim in flight in another session (the lead's transaction, open
    while it sends) is waited for."""
    mine = await conn.fetchval(
        "INSERT INTO hookd.notified (interaction_id, step, seq) VALUES ($1, $2, $3)"
        " ON CONFLICT DO NOTHING RETURNING true", interaction_id, step, seq)
    if mine:
        return True
    # (a new statement: its snapshot sees the row the conflict waited for)
    via = await conn.fetchval("SELECT via FROM hookd.notified WHERE host_id = current_user"
                              " AND interaction_id = $1 AND step = $2", interaction_id, step)
    return via != "fleet"


async def claim_new(conn: Any, host_id: str, interaction_id: str, step: int, seq: int) -> bool:
    """Insert the claim of step ``step`` of ``host_id``'s interaction for this role; True when
    this insert made it (run inside the transaction that is committed once it is sent: another
    session's insert of the same step waits for that transaction to end)."""
    return bool(await conn.fetchval(
        "INSERT INTO hookd.notified (host_id, interaction_id, step, seq, via) VALUES ($1, $2, $3, $4, 'fleet')"
        " ON CONFLICT DO NOTHING RETURNING true", host_id, interaction_id, step, seq))


async def fleet_pending(conn: Any) -> list[dict[str, Any]]:
    """The interactions the fleet notifier covers: pending on a host (a ``*_pending`` event
    with no ``*_resolved`` of the same id) whose link is live (its session holds its lock)
    with ``notify = 'fleet'``: ``host_id``, ``seq``, ``kind``, ``builder``, ``session_id``,
    ``at`` (the host's clock), ``data`` (JSON text), ``linked_at`` (the link's, the host's
    clock), ``top`` (the highest step claimed, None: none); oldest first."""
    rows = await conn.fetch(
        "SELECT p.host_id, p.seq, p.kind, p.builder, p.session_id, p.at, p.data::text AS data, l.linked_at,"
        " (SELECT max(n.step) FROM hookd.notified n WHERE n.host_id = p.host_id AND n.interaction_id = p.data->>'id') AS top"
        " FROM hookd.events p JOIN hookd.links l ON l.host_id = p.host_id AND l.notify = 'fleet'"
        " WHERE p.kind = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM hookd.events r WHERE r.host_id = p.host_id"
        " AND r.kind = ANY($2::text[]) AND r.seq > p.seq AND r.data->>'id' = p.data->>'id')"
        f" AND EXISTS (SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.database = {_THIS_DB}"
        " AND k.classid = $3::int8::oid AND k.objid = l.lock_key::int8::oid AND k.objsubid = 2 AND k.pid = l.pid AND k.granted)"
        " ORDER BY p.at, p.host_id, p.seq",
        list(PENDING_KINDS), list(RESOLVED_KINDS), LINK_CLASS)
    return [dict(r) for r in rows]


async def notified(conn: Any) -> list[dict[str, Any]]:
    """The ``notified`` rows the connection may see: ``host_id``, ``interaction_id``,
    ``step``, ``seq``, ``notified_by``, ``via``; by host, interaction, step."""
    rows = await conn.fetch("SELECT host_id, interaction_id, step, seq, notified_by, via FROM hookd.notified"
                            " ORDER BY host_id, interaction_id, step")
    return [dict(r) for r in rows]
