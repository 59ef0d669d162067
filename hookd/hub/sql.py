"""All of the hub's SQL (PostgreSQL, through asyncpg): its schema, the hosts' roles, what a host
ships, what an operator reads. No other module holds hub SQL but :mod:`hookd.hub.fleet_sql`
(the fleet notifier's).

The hub's tables live in the schema ``hookd``:

- ``hookd.events``: every host's event log, one row per ``(host_id, seq)`` (``seq``: the host's
  own event seq, :class:`hookd.models.Event`), ``data`` as ``json`` (the host's text, kept as
  sent: ``json`` takes every JSON text SQLite holds, ``jsonb`` would refuse a ``\\u0000``);
  ``shipped_at``: when the hub took the row.
- ``hookd.hosts``: one heartbeat row per host: ``shipped_seq`` (the newest seq the hub holds
  from it, contiguous from 1), ``heartbeat_at`` (the hub's clock), hookd's version,
  ``home_id`` (the hookd home that ships as this host: a second home is refused, its seqs
  would collide with the first's).
- ``hookd.commands``: operators' answers and messages for hosts, and each one's outcome as its
  host wrote it back (below, "down to hosts").

Security (docs/fleet.md "Security", docs/decisions.md "The hub: one role per host, row-level
security"): a host is a PostgreSQL role (``host_id`` is the role's name), member of the group
role ``hookd_host``; row-level security lets such a role see, insert and update only rows whose
``host_id`` is ``current_user`` (of ``hookd.commands``: see and write the outcome of, not
insert). The group role ``hookd_operator`` reads every row and inserts commands. The tables
belong to whoever ran :func:`install` (the hub's administrator), which row-level security does
not restrict.

Each function takes an open ``asyncpg.Connection`` and raises what asyncpg raises
(``asyncpg.PostgresError`` subclasses, ``OSError`` for a lost connection).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

#: The NOTIFY channel a host signals after each batch (a wake-up only; its payload: the host id).
CHANNEL = "hookd_hub"

#: A host id: a PostgreSQL role name hookd creates and quotes nowhere (lowercase, no quoting).
HOST_ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,47}$")

SCHEMA: list[str] = [
    """DO $$ BEGIN
         IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookd_host') THEN CREATE ROLE hookd_host NOLOGIN; END IF;
         IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookd_operator') THEN CREATE ROLE hookd_operator NOLOGIN; END IF;
       END $$""",
    "CREATE SCHEMA IF NOT EXISTS hookd",
    """CREATE TABLE IF NOT EXISTS hookd.hosts (
         host_id text PRIMARY KEY DEFAULT current_user,
         shipped_seq bigint NOT NULL DEFAULT 0,
         heartbeat_at timestamptz NOT NULL DEFAULT now(),
         version text,
         home_id text
       )""",
    "ALTER TABLE hookd.hosts ADD COLUMN IF NOT EXISTS home_id text",
    """CREATE TABLE IF NOT EXISTS hookd.events (
         host_id text NOT NULL DEFAULT current_user,
         seq bigint NOT NULL,
         kind text NOT NULL,
         builder text,
         session_id text,
         at double precision NOT NULL,
         data json NOT NULL,
         shipped_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (host_id, seq)
       )""",
    "CREATE INDEX IF NOT EXISTS events_kind ON hookd.events (kind, host_id, seq)",
    "ALTER TABLE hookd.hosts ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE hookd.events ENABLE ROW LEVEL SECURITY",
    "DROP POLICY IF EXISTS own_rows ON hookd.hosts",
    "DROP POLICY IF EXISTS own_rows ON hookd.events",
    "DROP POLICY IF EXISTS operator_reads ON hookd.hosts",
    "DROP POLICY IF EXISTS operator_reads ON hookd.events",
    "CREATE POLICY own_rows ON hookd.hosts TO hookd_host USING (host_id = current_user) WITH CHECK (host_id = current_user)",
    "CREATE POLICY own_rows ON hookd.events TO hookd_host USING (host_id = current_user) WITH CHECK (host_id = current_user)",
    "CREATE POLICY operator_reads ON hookd.hosts FOR SELECT TO hookd_operator USING (true)",
    "CREATE POLICY operator_reads ON hookd.events FOR SELECT TO hookd_operator USING (true)",
    "REVOKE ALL ON hookd.hosts, hookd.events FROM PUBLIC",
    "GRANT USAGE ON SCHEMA hookd TO hookd_host, hookd_operator",
    "GRANT SELECT, INSERT, UPDATE ON hookd.hosts TO hookd_host",
    "GRANT SELECT, INSERT ON hookd.events TO hookd_host",
    "GRANT SELECT ON hookd.hosts, hookd.events TO hookd_operator",
]


async def install(conn: Any) -> None:
    """Create (or bring up to date) the hub's roles, schema, tables and policies; idempotent.
    Needs a role that may create roles and schemas (the hub's administrator). With it, the
    fleet notifier's tables and role (:data:`hookd.hub.fleet_sql.SCHEMA`)."""
    from hookd.hub.fleet_sql import SCHEMA as FLEET_SCHEMA

    async with conn.transaction():
        for sql in SCHEMA + FLEET_SCHEMA:
            await conn.execute(sql)


def check_host_id(host_id: str) -> str:
    """``host_id`` if it is a valid host id (:data:`HOST_ID_RE`); raises ValueError saying why."""
    if not HOST_ID_RE.match(host_id):
        raise ValueError(f"host id {host_id!r} must be 1-48 of a-z, 0-9 and _, starting with a letter")
    return host_id


async def add_host(conn: Any, host_id: str, password: str) -> None:
    """Create the login role ``host_id`` (a member of ``hookd_host``, nothing more) with
    ``password``, or set the password of an existing one. Raises ValueError for a bad id."""
    check_host_id(host_id)
    exists = await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", host_id)
    # (a role name and a password cannot be bind parameters: the id is checked above, the
    # password quoted by PostgreSQL's own quote_literal)
    quoted = await conn.fetchval("SELECT quote_literal($1::text)", password)
    if exists:
        await conn.execute(f"ALTER ROLE {host_id} LOGIN PASSWORD {quoted}")
    else:
        await conn.execute(f"CREATE ROLE {host_id} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS"
                           f" PASSWORD {quoted} IN ROLE hookd_host")


async def add_operator(conn: Any, role: str, password: str) -> None:
    """Create the login role ``role`` (a member of ``hookd_operator``: reads every host's rows,
    writes none) with ``password``, or set the password of an existing one."""
    check_host_id(role)
    exists = await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", role)
    quoted = await conn.fetchval("SELECT quote_literal($1::text)", password)
    if exists:
        await conn.execute(f"ALTER ROLE {role} LOGIN PASSWORD {quoted}")
    else:
        await conn.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS"
                           f" PASSWORD {quoted} IN ROLE hookd_operator")


async def host_id(conn: Any) -> str:
    """This connection's host id: its role's name."""
    return str(await conn.fetchval("SELECT current_user"))


async def claim(conn: Any, home_id: str) -> str:
    """Claim this connection's host row for the hookd home ``home_id`` (created when missing;
    a row no home claimed yet takes it). Returns the home id the row holds now: another one
    means another home ships as this host."""
    return str(await conn.fetchval(
        "INSERT INTO hookd.hosts (host_id, home_id) VALUES (current_user, $1) ON CONFLICT (host_id)"
        " DO UPDATE SET home_id = COALESCE(hookd.hosts.home_id, EXCLUDED.home_id) RETURNING home_id", home_id))


async def shipped_seq(conn: Any) -> int:
    """The newest seq the hub holds from this connection's host, contiguous from 1 (0: none,
    or no heartbeat row yet)."""
    v = await conn.fetchval("SELECT shipped_seq FROM hookd.hosts WHERE host_id = current_user")
    return int(v or 0)


_INSERT = ("INSERT INTO hookd.events (host_id, seq, kind, builder, session_id, at, data)"
           " VALUES (current_user, $1, $2, $3, $4, $5, $6::text::json) ON CONFLICT (host_id, seq) DO NOTHING")
# A heartbeat's age is read against clock_timestamp() (the hub's clock as the statement runs),
# never now(): now() is the reading transaction's start, and a heartbeat committed after it
# (one statement later, or while a single statement was planned) would be a negative age
# (tests/test_hub.py).
_HEARTBEAT = ("INSERT INTO hookd.hosts (host_id, shipped_seq, heartbeat_at, version)"
              " VALUES (current_user, $1, now(), $2) ON CONFLICT (host_id) DO UPDATE"
              " SET shipped_seq = GREATEST(hookd.hosts.shipped_seq, EXCLUDED.shipped_seq),"
              " heartbeat_at = EXCLUDED.heartbeat_at, version = EXCLUDED.version")


async def ship(conn: Any, rows: Sequence[tuple[int, str, str | None, str | None, float, str]], version: str) -> int:
    """Upsert ``rows`` (``(seq, kind, builder, session_id, at, data as JSON text)``, oldest
    first, contiguous after the hub's ``shipped_seq``) as this host's, move its heartbeat row's
    ``shipped_seq`` to the last one, and NOTIFY :data:`CHANNEL`: one transaction. A row the hub
    already holds is left as it is (an event never changes). Returns how many rows were new."""
    async with conn.transaction():
        before = await conn.fetchval("SELECT count(*) FROM hookd.events WHERE host_id = current_user AND seq = ANY($1)",
                                     [r[0] for r in rows])
        await conn.executemany(_INSERT, rows)
        await conn.execute(_HEARTBEAT, rows[-1][0] if rows else 0, version)
        await conn.execute("SELECT pg_notify($1, current_user)", CHANNEL)
    return len(rows) - int(before)


async def heartbeat(conn: Any, seq: int, version: str) -> None:
    """This host's heartbeat row: now, ``seq`` shipped (never moved back), ``version``."""
    await conn.execute(_HEARTBEAT, seq, version)


# --- the operators' read side ----------------------------------------------------------------

async def hosts(conn: Any) -> list[dict[str, Any]]:
    """Every host the connection may see: ``host_id``, ``shipped_seq``, ``heartbeat_at``
    (timestamptz), ``version``, ``age_s`` (seconds since the heartbeat, the hub's clock)."""
    rows = await conn.fetch("SELECT host_id, shipped_seq, heartbeat_at, version,"
                            " extract(epoch FROM clock_timestamp() - heartbeat_at)::float8 AS age_s FROM hookd.hosts ORDER BY host_id")
    return [dict(r) for r in rows]


async def events(conn: Any, host: str | None = None, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
    """The events the connection may see (of ``host``, else every host's) with ``seq > after``,
    each host's oldest first: ``host_id``, ``seq``, ``kind``, ``builder``, ``session_id``,
    ``at``, ``data`` (JSON text)."""
    rows = await conn.fetch("SELECT host_id, seq, kind, builder, session_id, at, data::text AS data FROM hookd.events"
                            " WHERE ($1::text IS NULL OR host_id = $1) AND seq > $2 ORDER BY host_id, seq LIMIT $3",
                            host, after, limit)
    return [dict(r) for r in rows]


#: Each host's inbox messages still queued, by builder, from its shipped inbox events: a
#: message (``inbox_queued``'s ``id``) is queued while the last event naming it
#: (``inbox_cancelled``'s ``id``; ``inbox_delivered``'s, ``inbox_adopted``'s,
#: ``inbox_requeued``'s ``ids``) is ``inbox_queued`` or ``inbox_requeued``.
_INBOX_QUEUED = (
    "WITH touched AS (SELECT e.host_id, e.seq, e.kind, x.id FROM hookd.events e CROSS JOIN LATERAL"
    " (SELECT e.data->>'id' AS id WHERE e.kind IN ('inbox_queued', 'inbox_cancelled')"
    " UNION ALL SELECT json_array_elements_text(e.data->'ids')"
    " WHERE e.kind IN ('inbox_delivered', 'inbox_adopted', 'inbox_requeued')) x"
    " WHERE e.kind IN ('inbox_queued', 'inbox_cancelled', 'inbox_delivered', 'inbox_adopted', 'inbox_requeued')),"
    " last AS (SELECT DISTINCT ON (host_id, id) host_id, id, kind FROM touched ORDER BY host_id, id, seq DESC)"
    " SELECT q.host_id, q.builder, count(*) AS n FROM last l JOIN hookd.events q ON q.host_id = l.host_id"
    " AND q.kind = 'inbox_queued' AND q.data->>'id' = l.id"
    " WHERE l.kind IN ('inbox_queued', 'inbox_requeued') GROUP BY q.host_id, q.builder")


async def lanes(conn: Any) -> list[dict[str, Any]]:
    """Each host's builders' lanes as their last ``lane_changed`` event says: ``host_id``,
    ``builder``, ``seq``, ``at`` (UNIX seconds), ``data`` (JSON text: ``from``, ``to``,
    ``since``, ``detail``, ``pending``, ``queued``: as of that event), ``inbox_queued`` (the
    builder's inbox messages still queued now, as the host's shipped inbox events say),
    ``heartbeat_age_s`` (the host's freshness: seconds since its heartbeat, None without
    one); by host, then builder."""
    rows = await conn.fetch(
        f"WITH inbox AS ({_INBOX_QUEUED})"
        " SELECT DISTINCT ON (e.host_id, e.builder) e.host_id, e.builder, e.seq, e.at, e.data::text AS data,"
        " coalesce(i.n, 0)::int AS inbox_queued,"
        " extract(epoch FROM clock_timestamp() - h.heartbeat_at)::float8 AS heartbeat_age_s"
        " FROM hookd.events e LEFT JOIN hookd.hosts h ON h.host_id = e.host_id"
        " LEFT JOIN inbox i ON i.host_id = e.host_id AND i.builder = e.builder"
        " WHERE e.kind = 'lane_changed' AND e.builder IS NOT NULL ORDER BY e.host_id, e.builder, e.seq DESC")
    return [dict(r) for r in rows]


PENDING_KINDS = ("question_pending", "permission_pending", "elicitation_pending")
RESOLVED_KINDS = ("question_resolved", "permission_resolved", "elicitation_resolved")
#: What an operator reads as waiting: :data:`PENDING_KINDS` and an agent's async ask
#: (``human_input_requested``, ended by ``question_resolved``; the fleet's notifier leaves it
#: to its host, as before).
ASKED_KINDS = PENDING_KINDS + ("human_input_requested",)


#: A pending decision's ``held`` (whether its host can take a remote answer for it) as its
#: host's events say: false once a ``hold_ended`` is its newest hold event (its hold ran out,
#: or no held hook came back after the host's restart), true after a ``hold_resumed``; before
#: either, what its pending event says (``held: false``: a dialog no hook of its own came for),
#: else true; NULL for the other kinds (a question's remote answer, not held, is kept as a
#: message, never refused). The pending event is ``p``.
_HELD = ("CASE WHEN p.kind IN ('permission_pending', 'elicitation_pending') THEN coalesce((SELECT x.kind = 'hold_resumed'"
         " FROM hookd.events x WHERE x.host_id = p.host_id AND x.kind IN ('hold_ended', 'hold_resumed') AND x.seq > p.seq"
         " AND x.data->>'id' = p.data->>'id' ORDER BY x.seq DESC LIMIT 1), (p.data->>'held')::boolean, true) END AS held")


async def pending(conn: Any) -> list[dict[str, Any]]:
    """The interactions still pending on each host as its events say (a ``*_pending`` or
    ``human_input_requested`` event with no ``*_resolved`` of the same ``id``): ``host_id``, ``seq``, ``kind`` (the event's),
    ``builder``, ``at``, ``data`` (JSON text, the pending event's), ``heartbeat_age_s``,
    ``held`` (:data:`_HELD`); oldest first."""
    rows = await conn.fetch(
        f"SELECT p.host_id, p.seq, p.kind, p.builder, p.at, p.data::text AS data, {_HELD},"
        " extract(epoch FROM clock_timestamp() - h.heartbeat_at)::float8 AS heartbeat_age_s"
        " FROM hookd.events p LEFT JOIN hookd.hosts h ON h.host_id = p.host_id"
        " WHERE p.kind = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM hookd.events r WHERE r.host_id = p.host_id"
        " AND r.kind = ANY($2::text[]) AND r.seq > p.seq AND r.data->>'id' = p.data->>'id') ORDER BY p.at, p.host_id, p.seq",
        list(ASKED_KINDS), list(RESOLVED_KINDS))
    return [dict(r) for r in rows]


async def resolved(conn: Any, limit: int = 100) -> list[dict[str, Any]]:
    """The newest ``limit`` interactions resolved on any host (a ``*_resolved`` event and the
    ``*_pending`` event of the same ``id`` before it): ``host_id``, ``seq`` (the pending
    event's), ``kind`` (the pending event's), ``builder``, ``at`` (asked), ``resolved_at``
    (UNIX seconds), ``data`` and ``resolution`` (JSON text: the two events' data),
    ``heartbeat_age_s``; newest resolved first."""
    rows = await conn.fetch(
        "SELECT p.host_id, p.seq, p.kind, p.builder, p.at, r.at AS resolved_at, p.data::text AS data,"
        " r.data::text AS resolution, extract(epoch FROM clock_timestamp() - h.heartbeat_at)::float8 AS heartbeat_age_s"
        " FROM hookd.events r JOIN LATERAL (SELECT * FROM hookd.events p WHERE p.host_id = r.host_id"
        " AND p.kind = ANY($1::text[]) AND p.seq < r.seq AND p.data->>'id' = r.data->>'id' ORDER BY p.seq DESC LIMIT 1) p"
        " ON true LEFT JOIN hookd.hosts h ON h.host_id = r.host_id"
        " WHERE r.kind = ANY($2::text[]) ORDER BY r.at DESC, r.host_id, r.seq DESC LIMIT $3",
        list(ASKED_KINDS), list(RESOLVED_KINDS), limit)
    return [dict(r) for r in rows]


async def interaction(conn: Any, host: str, iid: str) -> dict[str, Any] | None:
    """Interaction ``iid`` of ``host`` as its events say (None: no ``*_pending`` event of that
    id): as :func:`resolved` gives one, ``resolved_at`` and ``resolution`` None while it is
    pending, and its ``held`` (:data:`_HELD`)."""
    row = await conn.fetchrow(
        f"SELECT p.host_id, p.seq, p.kind, p.builder, p.at, r.at AS resolved_at, p.data::text AS data, {_HELD},"
        " r.data::text AS resolution, extract(epoch FROM clock_timestamp() - h.heartbeat_at)::float8 AS heartbeat_age_s"
        " FROM hookd.events p LEFT JOIN LATERAL (SELECT * FROM hookd.events r WHERE r.host_id = p.host_id"
        " AND r.kind = ANY($4::text[]) AND r.seq > p.seq AND r.data->>'id' = p.data->>'id' ORDER BY r.seq LIMIT 1) r"
        " ON true LEFT JOIN hookd.hosts h ON h.host_id = p.host_id"
        " WHERE p.host_id = $1 AND p.kind = ANY($3::text[]) AND p.data->>'id' = $2 ORDER BY p.seq DESC LIMIT 1",
        host, iid, list(ASKED_KINDS), list(RESOLVED_KINDS))
    return dict(row) if row is not None else None


# --- down to hosts: the commands table --------------------------------------------------------
# (operators' answers and messages for a host; the host applies each through its own answer and
# send paths and writes back the outcome: hookd.hub.commands, docs/fleet.md "Down to hosts")

#: What a command asks of its host: an answer to one of its interactions, or a message for one
#: of its builders.
COMMAND_KINDS = ("answer", "send")

COMMANDS_SCHEMA: list[str] = [
    """CREATE TABLE IF NOT EXISTS hookd.commands (
         id text PRIMARY KEY,
         seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
         kind text NOT NULL CHECK (kind IN ('answer', 'send')),
         host_id text NOT NULL,
         builder text,
         interaction_id text,
         revision bigint,
         input_hash text,
         payload json NOT NULL,
         operator text NOT NULL DEFAULT current_user,
         created_at timestamptz NOT NULL DEFAULT now(),
         state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'applied', 'refused')),
         reason text,
         result json,
         applied_at timestamptz
       )""",
    "CREATE INDEX IF NOT EXISTS commands_queued ON hookd.commands (host_id, seq) WHERE state = 'queued'",
    # the database, not the client, says who wrote a command and when; a new one is queued;
    # its host is woken (NOTIFY on the host's own channel, a wake-up only: the host reads by seq)
    """CREATE OR REPLACE FUNCTION hookd.command_queued() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         NEW.operator := current_user; NEW.created_at := now(); NEW.state := 'queued';
         NEW.reason := NULL; NEW.result := NULL; NEW.applied_at := NULL;
         PERFORM pg_notify('hookd_commands_' || NEW.host_id, NEW.seq::text);
         RETURN NEW;
       END $$""",
    # an outcome is written once: queued -> applied | refused; the operators waiting are woken
    """CREATE OR REPLACE FUNCTION hookd.command_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF OLD.state <> 'queued' OR NEW.state NOT IN ('applied', 'refused') THEN
           RAISE EXCEPTION 'command % is already %', OLD.id, OLD.state USING ERRCODE = 'check_violation';
         END IF;
         PERFORM pg_notify('hookd_outcomes', NEW.id);
         RETURN NEW;
       END $$""",
    "DROP TRIGGER IF EXISTS queued ON hookd.commands",
    "DROP TRIGGER IF EXISTS outcome ON hookd.commands",
    "CREATE TRIGGER queued BEFORE INSERT ON hookd.commands FOR EACH ROW EXECUTE FUNCTION hookd.command_queued()",
    "CREATE TRIGGER outcome BEFORE UPDATE ON hookd.commands FOR EACH ROW EXECUTE FUNCTION hookd.command_outcome()",
    "ALTER TABLE hookd.commands ENABLE ROW LEVEL SECURITY",
    "DROP POLICY IF EXISTS own_commands ON hookd.commands",
    "DROP POLICY IF EXISTS own_outcomes ON hookd.commands",
    "DROP POLICY IF EXISTS operator_reads ON hookd.commands",
    "DROP POLICY IF EXISTS operator_inserts ON hookd.commands",
    "CREATE POLICY own_commands ON hookd.commands FOR SELECT TO hookd_host USING (host_id = current_user)",
    "CREATE POLICY own_outcomes ON hookd.commands FOR UPDATE TO hookd_host USING (host_id = current_user)"
    " WITH CHECK (host_id = current_user)",
    "CREATE POLICY operator_reads ON hookd.commands FOR SELECT TO hookd_operator USING (true)",
    "CREATE POLICY operator_inserts ON hookd.commands FOR INSERT TO hookd_operator WITH CHECK (operator = current_user)",
    "REVOKE ALL ON hookd.commands FROM PUBLIC",
    # column grants: an operator names only what the command is; a host writes only its outcome
    "GRANT SELECT, INSERT (id, kind, host_id, builder, interaction_id, revision, input_hash, payload)"
    " ON hookd.commands TO hookd_operator",
    "GRANT SELECT, UPDATE (state, reason, result, applied_at) ON hookd.commands TO hookd_host",
]
SCHEMA += COMMANDS_SCHEMA

#: The channel operators waiting for an outcome LISTEN on (payload: the command's id).
OUTCOMES = "hookd_outcomes"


def command_channel(host: str) -> str:
    """The NOTIFY channel host ``host`` LISTENs on for its new commands (a wake-up only)."""
    return f"hookd_commands_{host}"


_COMMAND_COLS = ("id, seq, kind, host_id, builder, interaction_id, revision, input_hash, payload::text AS payload,"
                 " operator, created_at, state, reason, result::text AS result, applied_at")


async def put_command(conn: Any, cid: str, kind: str, host: str, builder: str | None, interaction_id: str | None,
                      revision: int | None, input_hash: str | None, payload: str) -> tuple[dict[str, Any], bool]:
    """Queue command ``cid`` (``kind`` one of :data:`COMMAND_KINDS`) for ``host`` with
    ``payload`` (JSON text), as this connection's role (an operator). Returns (the command's
    row, whether it is new): an id already queued returns the row that holds it, whatever it
    says (the caller compares)."""
    row = await conn.fetchrow(
        "INSERT INTO hookd.commands (id, kind, host_id, builder, interaction_id, revision, input_hash, payload)"
        f" VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::json) ON CONFLICT (id) DO NOTHING RETURNING {_COMMAND_COLS}",
        cid, kind, host, builder, interaction_id, revision, input_hash, payload)
    if row is not None:
        return dict(row), True
    old = await command(conn, cid)
    assert old is not None  # (the conflict was on it)
    return old, False


async def command(conn: Any, cid: str) -> dict[str, Any] | None:
    """Command ``cid`` as the connection may see it (None: none): ``id``, ``seq``, ``kind``,
    ``host_id``, ``builder``, ``interaction_id``, ``revision``, ``input_hash``, ``payload`` and
    ``result`` (JSON text), ``operator``, ``created_at``, ``state``, ``reason``,
    ``applied_at`` (timestamptz or None), ``heartbeat_age_s`` (its host's freshness)."""
    row = await conn.fetchrow(
        f"SELECT {_COMMAND_COLS}, (SELECT extract(epoch FROM clock_timestamp() - h.heartbeat_at)::float8 FROM hookd.hosts h"
        " WHERE h.host_id = c.host_id) AS heartbeat_age_s FROM hookd.commands c WHERE id = $1", cid)
    return dict(row) if row is not None else None


async def commands_for(conn: Any, builder: str) -> bool:
    """Whether any command the connection may see names ``builder`` (on any host)."""
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM hookd.commands WHERE builder = $1)", builder))


async def is_operator(conn: Any) -> bool:
    """Whether the connection's role is an operator's (a member of ``hookd_operator``)."""
    return bool(await conn.fetchval("SELECT pg_has_role(current_user, 'hookd_operator', 'MEMBER')"))


async def list_commands(conn: Any, host: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
    """The newest ``limit`` commands the connection may see (of ``host``, else every host's),
    oldest first, as :func:`command` gives each."""
    rows = await conn.fetch(
        f"SELECT * FROM (SELECT {_COMMAND_COLS}, (SELECT extract(epoch FROM clock_timestamp() - h.heartbeat_at)::float8"
        " FROM hookd.hosts h WHERE h.host_id = c.host_id) AS heartbeat_age_s FROM hookd.commands c"
        " WHERE ($1::text IS NULL OR host_id = $1) ORDER BY seq DESC LIMIT $2) x ORDER BY seq", host, limit)
    return [dict(r) for r in rows]


async def queued_commands(conn: Any, after: int = 0, limit: int = 100) -> list[dict[str, Any]]:
    """This connection's host's queued commands with ``seq > after``, oldest first (as
    :func:`command`, without ``heartbeat_age_s``)."""
    rows = await conn.fetch(f"SELECT {_COMMAND_COLS} FROM hookd.commands WHERE host_id = current_user"
                            " AND state = 'queued' AND seq > $1 ORDER BY seq LIMIT $2", after, limit)
    return [dict(r) for r in rows]


async def set_outcome(conn: Any, cid: str, state: str, reason: str | None, result: str | None,
                      applied_at: float) -> bool:
    """Write the outcome of this host's queued command ``cid``: ``state`` ``applied`` or
    ``refused``, ``reason`` (why refused), ``result`` (JSON text: what the host's answer or
    send path returned), ``applied_at`` (UNIX seconds, the host's clock). False: no such
    queued command of this host (an outcome written before: a resend after a lost reply)."""
    done = await conn.execute("UPDATE hookd.commands SET state = $2, reason = $3, result = $4::text::json,"
                              " applied_at = to_timestamp($5) WHERE id = $1 AND host_id = current_user"
                              " AND state = 'queued'", cid, state, reason, result, applied_at)
    return bool(done == "UPDATE 1")


async def queued_counts(conn: Any) -> dict[tuple[str, str, str], int]:
    """How many commands wait queued, by ``(host_id, kind, target)``: ``target`` is the
    interaction id of an answer, the builder of a send."""
    rows = await conn.fetch("SELECT host_id, kind, CASE kind WHEN 'answer' THEN interaction_id ELSE builder END AS target,"
                            " count(*) AS n FROM hookd.commands WHERE state = 'queued' GROUP BY 1, 2, 3")
    return {(r["host_id"], r["kind"], r["target"]): int(r["n"]) for r in rows}
