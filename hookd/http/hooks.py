"""The hook path: ``POST /v1/hooks/{harness}/{builder}[/hold|/wake]``, one implementation for
both transports.

:class:`HookPath` reads, stores and answers a hook. The ASGI app (:class:`hookd.http.app.HookdASGI`)
hands it every hook request (:meth:`HookPath.asgi`: plain, held and wake hooks, over the Unix
socket and TCP); the fast path (:mod:`hookd.http.fastpath`) hands it the plain hooks it reads
itself over the Unix socket (:meth:`HookPath.plain`). Both store through :meth:`HookPath.ingest`
and answer errors through :func:`refusal`, so a hook gets the same reply and the same records
either way (``tests/test_fastpath.py`` sends both the same requests).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from typing import Any
from urllib.parse import unquote_to_bytes

import msgspec

from hookd.core.state import DaemonStopping
from hookd.config import check_builder_id
from hookd.http.responses import error_body, send_response
from hookd.models import BadRequest, HookdError, NotFound, PayloadInvalid, PayloadTooLarge
from hookd.core import HookResult, Hookd
from hookd.core.ingest import CUT_SUFFIX, MAX_PAYLOAD
from hookd.settings import Settings
from hookd.untrusted import decode_json

log = logging.getLogger("hookd")

#: The hook routes (POST) :class:`hookd.http.app.HookdASGI` serves itself, before routing;
#: ``{harness}`` is any of :data:`hookd.harness.registry.ADAPTERS`.
HOOK_ROUTES = ("/v1/hooks/{harness}/{builder}", "/v1/hooks/{harness}/{builder}/hold",
               "/v1/hooks/{harness}/{builder}/wake")
#: A PermissionRequest hook (posted to ``/hold``) is held for a remote answer only when its
#: client's deadline is at least this long (ms) ...
HOLD_MIN_MS = 3000
#: ... and it is answered this long (s) before that deadline, so the client reads the reply.
HOLD_MARGIN_S = 1.5
#: Longest wait (s) for a held hook's client to close after its reply with a remote answer.
REPLY_READ_WAIT_S = 10.0

#: A hook's reply as the fast path writes it: (HTTP status, JSON body, the hook event id of a
#: refused hook's stored bytes: its ``X-Hookd-Stored`` header, or None).
Reply = tuple[int, bytes, int | None]


class HookPath:
    """Reads, stores and answers hook requests for ``core``.

    ``settings.body_timeout_s``: how long one hook request may take to arrive, seconds (clients
    give up after ~5 s). ``settings.hook_timings`` (benchmarks only, off by default): keep how
    long the daemon handles each hook request in :attr:`timings` (seconds, from its whole body
    read to its reply handed to the transport: a slow client's upload is not the daemon's
    time), handed over, cleared, at ``GET /v1/debug/hook-timings`` (a JSON list; bench/load.py).
    """

    def __init__(self, core: Hookd, settings: Settings | None = None):
        settings = settings or Settings()
        self.core = core
        self.body_timeout_s = settings.body_timeout_s
        self.late = f"hook payload did not arrive within {self.body_timeout_s:.0f} s; what arrived is stored raw"
        self.timings: list[float] | None = [] if settings.hook_timings else None

    async def asgi(self, scope: dict, receive: Any, send: Any) -> None:
        """Answer one hook request of the ASGI app (any of :data:`HOOK_ROUTES`)."""
        await self._route(scope, receive, send)
        if self.timings is not None and "hookd.body_at" in scope:
            self.timings.append(time.perf_counter() - scope["hookd.body_at"])

    async def _route(self, scope: dict, receive: Any, send: Any) -> None:
        parts = scope["path"].split("/")  # ['', 'v1', 'hooks', harness, builder(, 'hold' | 'wake')]
        try:
            wake = len(parts) == 6 and parts[5] == "wake"
            holdable = len(parts) == 6 and parts[5] == "hold"
            if len(parts) != 5 and not (wake or holdable):
                raise NotFound("hook routes are POST /v1/hooks/{harness}/{builder}[/hold|/wake]")
            builder = check_builder_id(parts[4])
            raw, ended = await read_hook_body(receive, self.body_timeout_s)
            if self.timings is not None:
                scope["hookd.body_at"] = time.perf_counter()
            if wake:
                if ended == "late":
                    raise BadRequest(self.late)
                await send_response(send, 200, await _unless_disconnected(self.core.wake(parts[3], builder, raw), receive))
                return
            headers = hook_headers(scope["headers"])
            deadline_ms = headers[1]
            hold = holdable and deadline_ms >= HOLD_MIN_MS
            result = await self.ingest(parts[3], builder, raw, ended, headers, hold=hold)
            body = result.body
            read_iid = None
            if hold and result.duplicate and result.hold is None:
                # the same PermissionRequest hook, back after its daemon restarted: wait on the
                # interaction it was held for, if it still waits for an answer
                again = dict(scope["headers"]).get(b"x-hookd-hold")
                if again:
                    result.hold = await self.core.reattach(again.decode("latin-1"), builder)
            if result.hold is not None:
                iid, fut = result.hold
                try:
                    body = await self.core.hold(iid, fut, deadline_ms / 1000 - HOLD_MARGIN_S, _disconnected(receive))
                except DaemonStopping:
                    # the payload is stored: the client reconnects to the next daemon and posts
                    # it again with this header (hooks/client.c)
                    await send_response(send, 200, b"", {"content-type": "application/json", "x-hookd-hold": iid})
                    return
                read_iid = iid if body else None  # a remote answer: delivered once the hook has read it
        except Exception as e:
            status, out, stored = refusal(e, scope["path"])
            await send_response(send, status, out,
                                None if stored is None else {"content-type": "application/json", "x-hookd-stored": str(stored)})
            return
        await send_response(send, 200, body)
        if read_iid is not None:
            read = await _reply_read(scope)
            try:
                await self.core.reply_read(read_iid, read)
            except Exception:
                log.exception("recording the delivery of the answer to %s failed", read_iid)

    async def ingest(self, harness: str, builder: str, raw: bytes, ended: str,
                     headers: tuple[str | None, int, int | None, str | None], *, hold: bool = False) -> HookResult:
        """Store one hook body (``ended`` as :func:`read_hook_body` says; ``headers`` as
        :func:`hook_headers` reads them). A body that did not end (the caller knows it is not
        one complete object) is stored raw under ``<delivery id>~cut``, so that the client's
        spooled copy is not taken for a duplicate of it; one that came too
        late (``late``: its client is still waiting, a held PermissionRequest's with its long
        deadline, say) is then refused with a 400 saying so, naming the hook event it is
        stored as (``stored``: the reply's ``X-Hookd-Stored``), so that the client does not
        spool it. Raises what :meth:`hookd.core.ingest.Ingest.ingest_hook` raises (a
        PayloadInvalid names its stored hook event too)."""
        delivery, _, agent_pid, cwd = headers
        if ended != "whole" and delivery is not None:
            delivery += CUT_SUFFIX  # (see hookd.core.ingest.CUT_SUFFIX)
        if ended == "late":
            try:
                res = await self.core.ingest_hook(harness, builder, raw, delivery_id=delivery, agent_pid=agent_pid, cwd=cwd)
                stored = res.hook_event_id
                if stored is None and delivery is not None:  # a copy of it was stored before
                    stored = await self.core.store.hook_event_id(delivery)
            except PayloadInvalid as e:  # (stored raw as hook_invalid)
                stored = e.stored
            late = BadRequest(self.late)
            late.stored = stored
            raise late
        return await self.core.ingest_hook(harness, builder, raw, delivery_id=delivery, hold=hold,
                                           agent_pid=agent_pid, cwd=cwd)

    async def plain(self, path: str, headers: list[tuple[bytes, bytes]], raw: bytes, *,
                    ended: str = "whole") -> Reply:
        """``POST /v1/hooks/{harness}/{builder}`` (no hold, no wake) with its body ``raw``,
        as the fast path serves it: returns (HTTP status, JSON body, the hook event id of a
        refused hook's stored bytes: its ``X-Hookd-Stored`` header), errors in the one error
        shape, exactly as :meth:`asgi` answers them. ended: how the body ended
        (:func:`read_hook_body`)."""
        parts = path.split("/")
        try:
            builder = check_builder_id(parts[4])
            result = await self.ingest(parts[3], builder, raw, ended, hook_headers(headers))
            return 200, result.body, None
        except Exception as e:
            return refusal(e, path)


def refusal(e: Exception, path: str) -> Reply:
    """The reply to a hook whose handling raised ``e``: a HookdError's status and error (with
    the hook event id its stored bytes have, if any); anything else is logged and answered 500
    ``internal``."""
    if isinstance(e, HookdError):
        return e.status, error_body(e.code, e.message, e.stored), e.stored
    log.error("internal error on hook %s", path, exc_info=e)
    return 500, error_body("internal", f"internal error: {type(e).__name__}"), None


def hook_headers(headers: list[tuple[bytes, bytes]]) -> tuple[str | None, int, int | None, str | None]:
    """(delivery id, deadline ms (0: none), agent pid, cwd) from a hook request's headers
    (``X-Hookd-Delivery``, ``X-Hookd-Deadline-Ms``, ``X-Hookd-Agent-Pid``, ``X-Hookd-Cwd``:
    percent-encoded by the claw client); malformed values are ignored."""
    delivery, deadline_ms, agent_pid, cwd = None, 0, None, None
    for k, v in headers:
        if k == b"x-hookd-delivery":
            delivery = v.decode("latin-1") or None
        elif k == b"x-hookd-deadline-ms" and v.isdigit():
            deadline_ms = int(v)
        elif k == b"x-hookd-agent-pid" and v.isdigit() and len(v) < 10:
            agent_pid = int(v)
        elif k == b"x-hookd-cwd" and v.startswith(b"/"):
            cwd = os.fsdecode(unquote_to_bytes(v))
    return delivery, deadline_ms, agent_pid, cwd


async def _reply_read(scope: dict) -> bool | None:
    """After a held hook's reply was sent: did its client read all of it and close its end
    (True), go away leaving part of it unread (False), or neither within REPLY_READ_WAIT_S
    (None)? The fast path's protocol (:mod:`hookd.http.fastpath`) half-closes such a reply and
    watches the client's close (the scope's extension ``hookd.reply_read``, ``{"future": f}``:
    ``f`` gets that answer); without it (another protocol), True: the transport took the whole
    reply."""
    ext = scope.get("extensions", {}).get("hookd.reply_read")
    if ext is None:
        return True
    read = ext["future"]
    try:
        return await asyncio.wait_for(asyncio.shield(read), REPLY_READ_WAIT_S)
    except TimeoutError:
        return None


async def _disconnected(receive: Any) -> None:
    """Return when the client goes away (the request body has been read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _unless_disconnected(work: Any, receive: Any) -> bytes:
    """``work``'s reply, or b"" (``work`` cancelled) as soon as the client goes away: an idle
    wake whose hook ended (its deadline, the agent's exit) stops waiting at once instead of
    up to WAKE_MAX_S; a message it claimed meanwhile is offered again (at-least-once)."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return b""


def complete_json(buf: bytearray) -> bool:
    """True when ``buf`` holds exactly one complete JSON object (maybe trailing space)."""
    end = len(buf) - 1
    while end >= 0 and buf[end] in b" \t\r\n":
        end -= 1
    if end < 0 or buf[end] != ord("}"):
        return False
    try:
        decode_json(buf)  # complete also with a lone surrogate escape, as the parser reads it
    except msgspec.DecodeError:
        return False
    except RecursionError:
        return True  # nested too deeply to tell: the parser refuses it anyway
    return True


async def read_hook_body(receive: Any, timeout_s: float) -> tuple[bytes, str]:
    """Read a hook body until the client ends it or one complete JSON object has arrived.
    Returns (the body, how it ended): ``whole``; ``cut``: the client went away before either;
    ``late``: ``timeout_s`` seconds passed before either (see :meth:`HookPath.ingest`).

    Raises PayloadTooLarge past MAX_PAYLOAD bytes.
    """
    buf = bytearray()
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return bytes(buf), "whole" if complete_json(buf) else "cut"
                buf += message.get("body", b"")
                if len(buf) > MAX_PAYLOAD:
                    raise PayloadTooLarge(f"hook payload over {MAX_PAYLOAD} bytes")
                if not message.get("more_body", False):
                    break
                if complete_json(buf):
                    break  # stdin held open after a complete object: answer now
    except TimeoutError:
        return bytes(buf), "late"
    return bytes(buf), "whole"
