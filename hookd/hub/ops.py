"""The hub for the CLI (``hookd hub ...``, ``hookd --hub URL lanes|questions``): one
connection per call, run to completion on its own event loop, asyncpg's failures turned into
:class:`hookd.errors.HubUnavailable` (exit 1) naming the hub without its password.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any, Callable, Coroutine

from hookd.errors import HubUnavailable
from hookd.hub import sql
from hookd.hub.config import check_url, redact, require_driver


def _run(url: str, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
    """``fn(conn, *args)`` on a new connection to ``url``. Raises ConfigError (a bad URL, no
    asyncpg), HubUnavailable (unreachable, refused)."""
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


def hosts(url: str) -> list[dict[str, Any]]:
    """:func:`hookd.hub.sql.hosts`, ``heartbeat_at`` as UNIX seconds."""
    return [{**h, "heartbeat_at": h["heartbeat_at"].timestamp()} for h in _run(url, sql.hosts)]


def lanes(url: str) -> list[dict[str, Any]]:
    """:func:`hookd.hub.sql.lanes`."""
    return list(_run(url, sql.lanes))


def pending(url: str) -> list[dict[str, Any]]:
    """:func:`hookd.hub.sql.pending`."""
    return list(_run(url, sql.pending))


def grant_notifier(url: str, role: str) -> None:
    """Let host role ``role`` lead the fleet's notifications (:func:`hookd.hub.fleet_sql.grant_notifier`).
    Raises ValueError for a bad name."""
    from hookd.hub import fleet_sql

    fleet_sql.check_role(role)
    _run(url, fleet_sql.grant_notifier, role)
