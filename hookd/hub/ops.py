"""The hub for the CLI (``hookd hub ...``, ``hookd --hub URL lanes|questions|inbox|answer|send``): one
connection per call, run to completion on its own event loop, asyncpg's failures turned into
:class:`hookd.errors.HubUnavailable` (exit 1) naming the hub without its password.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from typing import Any, Callable, Coroutine

from hookd.errors import BadRequest, Conflict, HubUnavailable, NotFound, Unauthorized
from hookd.hub import sql
from hookd.hub.config import check_url, redact, require_driver


def _run(url: str, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
    """``fn(conn, *args)`` on a new connection to ``url``. Raises ConfigError (a bad URL, no
    asyncpg), HubUnavailable (unreachable, refused), Unauthorized (the role may not: a host's
    role queueing a command)."""
    check_url(url)
    require_driver()
    import asyncpg

    async def go() -> Any:
        conn = await asyncpg.connect(url, timeout=10)
        try:
            return await fn(conn, *args)
        finally:
            await conn.close()

    try:
        return asyncio.run(go())
    except asyncpg.InsufficientPrivilegeError as e:  # (a host's role asking what only an operator's may)
        raise Unauthorized(f"hub {redact(url)}: {str(e).strip()}: this role may not do that (a host's role ships "
                           "its own events; an operator's reads every host and queues answers and messages: "
                           "hookd --hub ADMIN_URL hub add-operator NAME)") from None
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise HubUnavailable(f"hub {redact(url)}: {text}") from None


def install(url: str) -> None:
    """Create or update the hub's schema, roles and policies (:func:`hookd.hub.sql.install`)."""
    _run(url, sql.install)


def add_role(url: str, name: str, operator: bool, password: str | None = None) -> str:
    """Create (or give a new password to) host role ``name`` (an operator's with ``operator``);
    returns its password (``password``, else a new random one). Raises ValueError for a bad
    name."""
    sql.check_host_id(name)
    password = password or secrets.token_urlsafe(24)
    _run(url, sql.add_operator if operator else sql.add_host, name, password)
    return password


def is_operator(url: str) -> bool:
    """Whether ``url``'s role is an operator's (a member of ``hookd_operator``: it reads every
    host's rows and queues commands), not a host's."""
    return bool(_run(url, sql.is_operator))


def hosts(url: str) -> list[dict[str, Any]]:
    """:func:`hookd.hub.sql.hosts`, ``heartbeat_at`` as UNIX seconds."""
    return [{**h, "heartbeat_at": h["heartbeat_at"].timestamp()} for h in _run(url, sql.hosts)]


def lanes(url: str) -> list[dict[str, Any]]:
    """:func:`hookd.hub.sql.lanes`."""
    return list(_run(url, sql.lanes))


def pending(url: str) -> list[dict[str, Any]]:
    """:func:`hookd.hub.sql.pending`."""
    return list(_run(url, sql.pending))


def resolved(url: str, limit: int = 100) -> list[dict[str, Any]]:
    """:func:`hookd.hub.sql.resolved`."""
    return list(_run(url, sql.resolved, limit))


# --- down to hosts: an operator's commands ----------------------------------------------------

def _qualified(target: str) -> tuple[str | None, str]:
    """(host, name) of ``HOST/NAME``; (None, ``target``) for a bare name."""
    host, slash, name = target.partition("/")
    return (host, name) if slash else (None, target)


async def _host(conn: Any, host: str) -> str:
    """``host`` if the hub knows it (it has shipped at least once); raises BadRequest,
    NotFound."""
    try:
        sql.check_host_id(host)
    except ValueError as e:
        raise BadRequest(str(e)) from None
    if not any(h["host_id"] == host for h in await sql.hosts(conn)):
        raise NotFound(f"no host {host!r} on the hub (`hookd --hub URL hub hosts` lists them)")
    return host


async def _answer_target(conn: Any, target: str) -> tuple[str, str, str | None]:
    """(host, interaction id, its builder when the hub knows it) for ``target``
    (``HOST/ID`` or an ID pending on exactly one host). Raises NotFound, BadRequest."""
    host, iid = _qualified(target)
    found = []
    for r in await sql.pending(conn):
        d = json.loads(r["data"])
        if iid in (d.get("id"), d.get("tool_use_id")) and host in (None, r["host_id"]):
            found.append((r["host_id"], str(d.get("id") or iid), r["builder"]))
    if host is not None:
        return found[0] if found else (await _host(conn, host), iid, None)
    hosts = sorted({f[0] for f in found})
    if not hosts:
        raise NotFound(f"no interaction {iid!r} is pending on the hub; name its host: HOST/{iid}")
    if len(hosts) > 1:
        raise BadRequest(f"{iid} is pending on several hosts ({', '.join(hosts)}): name one, as HOST/{iid}")
    return found[0]


async def _send_target(conn: Any, target: str) -> tuple[str, str]:
    """(host, builder) for ``target`` (``HOST/BUILDER`` or a BUILDER the hub knows on exactly
    one host). Raises NotFound, BadRequest."""
    host, builder = _qualified(target)
    if host is not None:
        return await _host(conn, host), builder
    hosts = sorted({r["host_id"] for r in await sql.lanes(conn) if r["builder"] == builder})
    if not hosts:
        raise NotFound(f"no host has a builder {builder!r} on the hub; name its host: HOST/{builder}")
    if len(hosts) > 1:
        raise BadRequest(f"{builder} is a builder on several hosts ({', '.join(hosts)}): name one, as HOST/{builder}")
    return hosts[0], builder


async def _wait_outcome(conn: Any, cid: str, wait_s: float) -> None:
    """Until command ``cid`` is no longer queued, or ``wait_s`` seconds pass (woken by the
    hub's NOTIFY on :data:`hookd.hub.sql.OUTCOMES`; read again at least every second)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    woken = asyncio.Event()
    await conn.add_listener(sql.OUTCOMES, lambda *_: woken.set())
    while (left := deadline - loop.time()) > 0:
        row = await sql.command(conn, cid)
        if row is None or row["state"] != "queued":
            return
        woken.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(woken.wait(), min(1.0, left))


async def queue(conn: Any, kind: str, target: str, body: dict[str, Any], wait_s: float) -> dict[str, Any]:
    """:func:`command` on an open connection (the hub page's answers and sends, hookd/hub/page.py)."""
    revision, input_hash = None, None
    if kind == "answer":
        host, iid, builder = await _answer_target(conn, target)
        key = body.get("response_id") or f"hub-{secrets.token_hex(8)}"
        payload = {k: v for k, v in body.items() if k not in ("actor", "surface", "response_id") and v is not None}
        payload["response_id"] = key
        revision, input_hash = body.get("revision"), body.get("input_hash")
    else:
        host, builder = await _send_target(conn, target)
        key = body.get("id") or f"hub-{secrets.token_hex(8)}"
        payload = {"text": body["text"], "key": key, "session_id": body.get("session_id"),
                   "agent_id": body.get("agent_id"), "force": bool(body.get("force"))}
        iid = None
    cid = f"{kind}:{host}:{key}"
    row, created = await sql.put_command(conn, cid, kind, host, builder, iid, revision, input_hash,
                                        json.dumps(payload, sort_keys=True))
    if not created and (json.loads(row["payload"]) != payload or row["interaction_id"] != iid):
        raise Conflict(f"command {cid} was already queued with other content; use a new "
                       + ("--response-id" if kind == "answer" else "--id"))
    if wait_s > 0:
        await _wait_outcome(conn, cid, wait_s)
    done = await sql.command(conn, cid)
    assert done is not None
    return {**view(done), "created": created}


def command(url: str, kind: str, target: str, body: dict[str, Any], wait_s: float) -> dict[str, Any]:
    """Queue an operator's command on the hub and wait up to ``wait_s`` seconds (0: not at
    all) for its host's outcome. kind: ``answer`` (``target``: ``[HOST/]INTERACTION_ID``,
    ``body``: what ``hookd answer`` sends) or ``send`` (``target``: ``[HOST/]BUILDER``,
    ``body``: ``text``, ``id`` (the message's key), ``session_id``, ``agent_id``, ``force``).
    Returns the command as :func:`view` gives it, with ``created`` (False: the same command id
    was queued before). Raises NotFound / BadRequest (the target), Conflict (the id was used
    for another command), HubUnavailable, ConfigError."""
    return dict(_run(url, queue, kind, target, body, wait_s))


def view(row: dict[str, Any]) -> dict[str, Any]:
    """A command row of :mod:`hookd.hub.sql` for the CLI's JSON: ``payload`` and ``result``
    decoded, times as UNIX seconds (``created_at``, ``applied_at``: None while queued)."""
    return {"id": row["id"], "kind": row["kind"], "host_id": row["host_id"], "builder": row["builder"],
            "interaction_id": row["interaction_id"], "revision": row["revision"], "input_hash": row["input_hash"],
            "payload": json.loads(row["payload"]), "operator": row["operator"],
            "created_at": row["created_at"].timestamp(), "state": row["state"], "reason": row["reason"],
            "result": json.loads(row["result"]) if row["result"] is not None else None,
            "applied_at": row["applied_at"].timestamp() if row["applied_at"] is not None else None,
            "heartbeat_age_s": row.get("heartbeat_age_s")}


def on_host(host: str, reason: str) -> str:
    """A host's refusal ``reason`` as read away from the host: the local commands it advises
    (``take it back: hookd inbox cancel m-5``, :func:`hookd.core.answers.take_back`) are the
    host's, run on that host (the hub takes nothing back yet)."""
    return reason.replace("take it back: hookd ", f"take it back on {host} (a command run there): hookd ")


def check_target(url: str, target: str) -> None:
    """Raise NotFound (BadRequest: not a host id) unless the hub knows ``target``: a host
    (``HOST/BUILDER``: the host, whatever the builder) or a builder of some host's lanes or
    commands (a bare ``BUILDER``), as ``hookd --hub URL inbox [[HOST/]BUILDER]`` names one."""
    async def check(conn: Any) -> None:
        host, builder = _qualified(target)
        if host is not None:
            await _host(conn, host)
        elif not (any(r["builder"] == builder for r in await sql.lanes(conn))
                  or await sql.commands_for(conn, builder)):
            raise NotFound(f"no host has a builder {builder!r} on the hub (hookd --hub URL lanes lists them)")
    _run(url, check)


def commands(url: str, host: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
    """The newest ``limit`` commands the role may see (of ``host``, else every host's), oldest
    first, as :func:`view` gives each."""
    return [view(r) for r in _run(url, sql.list_commands, host, limit)]


def queued_counts(url: str) -> dict[tuple[str, str, str], int]:
    """:func:`hookd.hub.sql.queued_counts`."""
    return dict(_run(url, sql.queued_counts))


def grant_notifier(url: str, role: str) -> None:
    """Let host role ``role`` lead the fleet's notifications (:func:`hookd.hub.fleet_sql.grant_notifier`).
    Raises ValueError for a bad name."""
    from hookd.hub import fleet_sql

    fleet_sql.check_role(role)
    _run(url, fleet_sql.grant_notifier, role)
