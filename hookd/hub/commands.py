"""Down to hosts: the task beside the shipper that applies the hub's commands addressed to this
host (operators' answers and messages, :mod:`hookd.hub.sql` "down to hosts") through the
daemon's own answer and send paths, and writes each outcome back.

On each connect it first writes back the outcomes it recorded but could not ship (the
connection was lost), then reads its queued commands by seq from the start (``seq > 0``: what
is still queued is what is left to do), and from then on after the last seq it took, woken by
the hub's NOTIFY on the host's own channel (a wake-up only; it also reads every ``poll_s``
seconds, and at once when the connection ends).

Only the home that claimed its host on the hub (:func:`hookd.hub.sql.claim`, made by the
shipper) takes the host's commands: a second home with the same role takes none (``state``
``refused``), so two homes never apply one command each.

Applied once: each command's outcome is recorded in the local SQLite (``hub_commands``,
migration ``0024_hub_commands``) before it is written back; a command recorded there is never
applied again (after a restart its recorded outcome is shipped instead). Between the answer's
own transaction and that record a crash could fall; the command is then applied again, and the
local path's own idempotency takes it once: an answer carries the command's ``response_id``, a
message its ``key`` (the first receipt comes back, nothing is done twice).

The outcome is the local path's: ``applied`` with its receipt (an answer's: what ``POST
/v1/interactions/{id}/answer`` returns; a message's: ``{message, created}``), or ``refused``
with the reason the local path gives (the desk answered first, a stale revision, an unknown
interaction, an unspawned builder...). The answer's actor is the operator's role (recorded by
the hub), its surface ``hub``. A local failure that is not a refusal (storage refusing writes)
leaves the command queued; it is tried again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any

import msgspec

from hookd.hub import sql
from hookd.hub.config import redact
from hookd.hub.shipper import check_claimed, failed_state, keep_connected, why
from hookd.models import AnswerRequest, BadRequest, Conflict, NotFound

if TYPE_CHECKING:
    from hookd.core import Hookd

log = logging.getLogger("hookd.hub")

#: Queued commands read at once.
BATCH = 100

#: The local path's refusals: the command is ``refused`` with the error's message.
REFUSALS = (BadRequest, Conflict, NotFound)


class Applier:
    """Applies the hub's commands for this host over ``core`` (module doc).

    url: the hub's URL (the host's role); poll_s: how often it reads its queued commands with
    no NOTIFY (seconds); retry_max_s, connect_timeout_s, command_timeout_s: as
    :class:`hookd.hub.shipper.Shipper`'s. State for status and tests: ``state``
    (``connecting``, ``up``, ``down``; ``refused``: another home ships as this host and takes
    its commands, :class:`hookd.hub.shipper.HostTaken`), ``error``, ``applied`` and ``refused`` (commands this
    daemon applied and refused since it started)."""

    def __init__(self, core: "Hookd", url: str, *, poll_s: float = 10.0, retry_max_s: float = 5.0,
                 connect_timeout_s: float = 10.0, command_timeout_s: float = 30.0):
        self.core = core
        self.url = url
        self.key = redact(url)
        self.poll_s = poll_s
        self.retry_max_s = retry_max_s
        self.connect_timeout_s = connect_timeout_s
        self.command_timeout_s = command_timeout_s
        self.state = "connecting"
        self.error: str | None = None
        self.applied = 0
        self.refused = 0

    def view(self) -> dict[str, Any]:
        """``state``, ``error``, ``applied``, ``refused`` (status's ``hub.commands``)."""
        return {"state": self.state, "error": self.error, "applied": self.applied, "refused": self.refused}

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, apply, follow; on any failure wait and connect again, until ``stop`` is
        set (or the task is cancelled)."""
        await keep_connected(self.url, stop, self._follow, self._failed, lambda: self.state == "up",
                             connect_timeout_s=self.connect_timeout_s, command_timeout_s=self.command_timeout_s,
                             retry_max_s=self.retry_max_s)

    def _failed(self, e: Exception) -> None:
        state = failed_state(e)
        if state != "connecting" and (self.state != state or self.error != why(e)):
            log.warning("hub %s: commands: %s; queued ones wait on the hub", self.key, why(e))
        self.state, self.error = state, why(e)

    async def _follow(self, conn: Any, stop: asyncio.Event) -> None:
        host = await sql.host_id(conn)
        mine = await self.core.store.hub_cursor(self.key)
        await check_claimed(conn, mine[1] if mine is not None else None, host, "commands")
        wake = asyncio.Event()
        await conn.add_listener(sql.command_channel(host), lambda *_: wake.set())
        conn.add_termination_listener(lambda *_: wake.set())
        for done in await self.core.store.hub_commands(self.key, unshipped=True):  # (lost with a connection)
            await self._ship(conn, done)
        self.state, self.error = "up", None
        cursor = 0
        while not stop.is_set():
            wake.clear()
            rows = await sql.queued_commands(conn, cursor, BATCH)
            for row in rows:
                await self._take(conn, row)
                cursor = row["seq"]
            if conn.is_closed():
                raise ConnectionError("the hub's connection ended")
            if len(rows) < BATCH:  # (a full batch: more may be queued, read on at once)
                await _first(wake, stop, self.poll_s)

    async def _take(self, conn: Any, row: dict[str, Any]) -> None:
        """Apply command ``row`` unless recorded as applied here, record it, ship its outcome.
        Raises what the store raises when it cannot record (the command stays queued)."""
        store = self.core.store
        done = await store.hub_commands(self.key, row["id"])
        if not done:
            state, reason, result = await self.apply(row)
            await store.write(_record, self.key, row["id"], row["seq"], row["kind"], state, reason, result, time.time())
            if state == "applied":
                self.applied += 1
            else:
                self.refused += 1
            done = await store.hub_commands(self.key, row["id"])
        await self._ship(conn, done[0])

    async def _ship(self, conn: Any, done: dict[str, Any]) -> None:
        await sql.set_outcome(conn, done["id"], done["state"], done["reason"], done["result"], done["applied_at"])
        await self.core.store.write(_shipped, self.key, done["id"], time.time())

    async def apply(self, row: dict[str, Any]) -> tuple[str, str | None, str | None]:
        """Apply one command through the local paths: (``applied`` | ``refused``, the reason
        refused, the result as JSON text). Raises what is not a refusal (the store refusing
        writes: :class:`hookd.models.StorageUnavailable`)."""
        try:
            payload = json.loads(row["payload"])
            if not isinstance(payload, dict):
                raise BadRequest("the command's payload is not a JSON object")
            if row["kind"] == "answer":
                result = await self._answer(row, payload)
            elif row["kind"] == "send":
                result = await self._send(row, payload)
            else:
                raise BadRequest(f"this hookd applies no {row['kind']!r} commands")
        except REFUSALS as e:
            return "refused", e.message, None
        except (msgspec.ValidationError, ValueError) as e:
            return "refused", f"the command is malformed: {e}", None
        return "applied", None, msgspec.json.encode(result).decode()

    async def _answer(self, row: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
        body = {k: v for k, v in payload.items() if k not in ("actor", "surface")}
        req = msgspec.convert({**body, "actor": row["operator"], "surface": "hub"}, AnswerRequest)
        if not row["interaction_id"]:
            raise BadRequest("the command names no interaction")
        return await self.core.answer(row["interaction_id"], req, surface="hub")

    async def _send(self, row: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
        from hookd.config import check_builder_id
        from hookd.models import ConfigError
        from hookd.spawn import unspawned_at

        builder = str(row["builder"] or "")
        try:
            check_builder_id(builder)
        except ConfigError as e:
            raise BadRequest(e.message) from None
        core = self.core
        try:
            await core.known_builder(builder)  # (the spawn record read in a thread)
        except NotFound:
            raise NotFound(f"builder {builder!r} is not known on this host") from None
        if not payload.get("force"):
            gone = await asyncio.to_thread(unspawned_at, core.home, builder)
            if gone is not None:
                raise Conflict(f"{builder} was unspawned on this host at "
                               f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(gone))}; send with --force")
        message, created = await core.send_message(
            builder, str(payload.get("text") or ""), key=payload.get("key"), session_id=payload.get("session_id"),
            agent_id=payload.get("agent_id"), author=str(row["operator"]))
        return {"message": msgspec.to_builtins(message), "created": created}


async def _first(wake: asyncio.Event, stop: asyncio.Event, timeout: float) -> None:
    """Until ``wake`` or ``stop`` is set, or ``timeout`` seconds pass."""
    waits = [asyncio.ensure_future(wake.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


def _record(tx: Any, hub: str, cid: str, seq: int, kind: str, state: str, reason: str | None, result: str | None,
            at: float) -> None:
    tx.log.record_hub_command(hub, cid, seq, kind, state, reason, result, at)


def _shipped(tx: Any, hub: str, cid: str, at: float) -> None:
    tx.log.hub_command_shipped(hub, cid, at)
