"""`hookd serve`: the Starlette app and its uvicorn lifecycle.

Listeners: a Unix socket (0600 in a 0700 directory; trusted by file permissions) and a
loopback TCP port, where every request needs ``Authorization: Bearer <token>`` (token in
``HOOKD_HOME/token``, 0600), or, on the harness routes only (:data:`HARNESS_PREFIXES`), the
hook token made at each start and written to ``run/endpoint`` (:class:`hookd.config.Endpoint`);
hook replies over TCP carry that endpoint's proof (header ``X-Hookd-Proof``). One serve per
home (``run/serve.lock``).

Routes (all errors: ``{"error": {"code", "message"}}`` with a 4xx/5xx status):

- ``POST /v1/hooks/{harness}/{builder}[/hold]``: one hook payload, optionally streamed with
  chunked encoding; answered as soon as one complete JSON object has arrived (stdin held
  open is not waited for). Response body = exact hook stdout (may be empty).
  Header ``X-Hookd-Delivery``: the client's unique id for this invocation;
  ``X-Hookd-Deadline-Ms``: the client's own deadline (ms); ``X-Hookd-Agent-Pid``: the agent's
  process id (``CLAUDE_PID``), for lane liveness. A PermissionRequest hook posted to
  ``/hold`` (the generated PermissionRequest command) whose deadline is at least HOLD_MIN_MS
  is held (up to its deadline less HOLD_MARGIN_S) for a
  remote answer: the response is then the decision, or empty when the desk answered first or
  the window ended; when the daemon stops, empty with ``X-Hookd-Hold: <interaction id>``: the
  client posts the same delivery again, with that header, to the next daemon, which holds it
  again (:meth:`hookd.core.holds.Holds.reattach`). A hook refused after its raw bytes were
  stored (4xx) names them: ``X-Hookd-Stored: <hook event id>``, and ``stored`` in the error.
- ``POST /v1/interactions/{id}/answer`` (:class:`hookd.models.AnswerRequest`; 200 with the
  receipt, 409 when refused: already resolved or expired (the answer is kept as an inbox
  message, named in the error), stale revision, other input, response_id reused);
  ``POST /v1/interactions/await`` (``{"ids", "timeout_s", "collect"?}``);
  ``POST /v1/builders/{builder}/asks`` (``{"question", "options"?, "session_id"?,
  "expires_in_s"?, "author"?}``; 201); ``POST /v1/builders/{builder}/preanswers``
  (``{"question", "answer", "actor"?}``; 201); ``POST /v1/builders/{builder}/transcripts``
  (``{"paths", "session_id"?}``: follow these transcripts too; 201 with rows read, and ``refused``: why a
  file is not read);
- ``POST /v1/builders/{builder}/messages`` (``{"text", "id"?, "session_id"?, "agent_id"?,
  "author"?}``; 201 created, 200 for a repeated key with the same content, 409 otherwise),
  ``GET /v1/messages?builder=``;
- ``GET /v1/lanes`` (every builder's lane, those waiting on a human first),
  ``GET /v1/status``, ``GET /v1/questions?state=pending|resolved|all``,
  ``GET /v1/transcripts`` (every tailed file: path, builder, session, offset, rows read),
  ``GET /v1/interactions/{id}``, ``GET /v1/events?after=SEQ&limit=N[&follow=1]``
  (JSON lines; ``follow`` keeps the stream open).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import gc
import hmac
import logging
import os
import secrets
import signal
import socket
import tempfile
import time
from http import HTTPStatus
from pathlib import Path
from typing import Any, AsyncIterator
from urllib.parse import unquote_to_bytes

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

try:  # the transport uvloop gives a Unix socket's connections (none to tell by with asyncio's own loop)
    from uvloop.loop import UnixTransport as _UvUnixTransport

    _UNIX_TRANSPORTS: tuple[type, ...] = (_UvUnixTransport,)
except ImportError:  # pragma: no cover - uvloop is a dependency where it installs
    _UNIX_TRANSPORTS = ()

from hookd import __version__
from hookd.config import (Endpoint, Home, atomic_write, check_builder_id, ensure_private_dir, env_number,
                          private_dir_problem, process_start, write_private)
from hookd.models import (
    AlreadyServing,
    AnswerRequest,
    BadRequest,
    ConfigError,
    ErrorBody,
    ErrorResponse,
    HookdError,
    NotFound,
    PayloadInvalid,
    PayloadTooLarge,
    StorageUnavailable,
    Unauthorized,
)
from hookd.core import HookResult, Hookd
from hookd.core.ingest import CUT_SUFFIX, MAX_PAYLOAD
from hookd.core.state import DaemonStopping
from hookd.settings import Settings
from hookd.clawhttp import routes as claw_routes
from hookd.spawn import list_manifests, read_manifest, write_client
from hookd.settings import Settings
from hookd.store import Store
from hookd.untrusted import decode_json
from hookd.watchers.lanes import LaneAlerts, LaneWatch
from hookd.watchers.tailer import Tailer
from hookd.storage_health import retry_until_back
from hookd.web import WebAuth, WebPage, bind_loopback

log = logging.getLogger("hookd")
_enc = msgspec.json.Encoder()
#: How long one hook request may take to arrive, seconds (clients give up after ~5 s);
#: ``HOOKD_BODY_TIMEOUT_S``.
BODY_TIMEOUT_S = env_number("HOOKD_BODY_TIMEOUT_S", 30.0)
#: A PermissionRequest hook (posted to ``/hold``) is held for a remote answer only when its
#: client's deadline is at least this long (ms) ...
HOLD_MIN_MS = 3000
#: ... and it is answered this long (s) before that deadline, so the client reads the reply.
HOLD_MARGIN_S = 1.5
#: ``HOOKD_HOOK_TIMINGS=1`` (benchmarks only, off by default): the daemon records how long it
#: handles each hook request (seconds, from its whole body read to its reply handed to the
#: transport: a slow client's upload is not the daemon's time) and hands them over, clearing
#: them, at ``GET /v1/debug/hook-timings`` (a JSON list; bench/load.py).
HOOK_TIMINGS_ENV = "HOOKD_HOOK_TIMINGS"
#: ``HOOKD_FASTPATH=0``: plain hooks over the Unix socket go through uvicorn's ASGI cycle
#: like every other request, instead of :class:`_HttpProtocol`'s fast path (default on).
FASTPATH = os.environ.get("HOOKD_FASTPATH", "1") != "0"
#: The hook routes (POST) :class:`HookdASGI` serves itself, before routing; ``{harness}`` is
#: any of :data:`hookd.harness.registry.ADAPTERS`.
HOOK_ROUTES = ("/v1/hooks/{harness}/{builder}", "/v1/hooks/{harness}/{builder}/hold",
               "/v1/hooks/{harness}/{builder}/wake")
#: Paths the endpoint's hook token admits over TCP (the bash hook client, claw-http loops).
HARNESS_PREFIXES = ("/v1/hooks/", "/v1/claw/")


class AskRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/asks``."""

    question: str
    options: list[str] | None = None
    session_id: str | None = None
    expires_in_s: float | None = None
    author: str | None = None


class AwaitRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/interactions/await``: ids, timeout_s (seconds, mandatory)."""

    ids: list[str]
    timeout_s: float
    collect: bool = True


class TailRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/transcripts``: absolute paths of transcripts to
    follow for the builder (session_id: when they are one session's)."""

    paths: list[str]
    session_id: str | None = None


class PreanswerRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/preanswers``."""

    question: str
    answer: str
    actor: str | None = None


#: Most rows one list request returns (``limit``): a negative limit would be no limit at all.
MAX_LIMIT = 100_000


def _int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    """Query parameter ``name`` as an integer in [lo, hi]; raises BadRequest naming it."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be an integer") from None
    if not lo <= value <= hi:
        raise BadRequest(f"{name} must be between {lo} and {hi}")
    return value


def decode_body(raw: bytes, type_: Any, what: str) -> Any:
    """Decode a JSON request body; raises BadRequest naming what is wrong."""
    try:
        return decode_json(raw, type=type_)  # a lone surrogate decodes as U+FFFD
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as e:
        raise BadRequest(f"{what} body: {e}") from None


#: Largest body (bytes) of the answer, message, ask and preanswer routes: the texts in them
#: are limited far below (hookd.core.limits.MAX_ANSWER_CHARS, hookd.core.limits.MAX_MESSAGE_CHARS), so
#: a bigger body is refused (413) without being read into memory.
MAX_API_BODY = 256 * 1024


async def read_api_body(request: Request, limit: int = MAX_API_BODY) -> bytes:
    """The request's body, at most ``limit`` bytes; raises PayloadTooLarge past it."""
    declared = request.headers.get("content-length", "")
    too_large = PayloadTooLarge(f"request body over {limit} bytes (answers and messages are limited far below)")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    buf = bytearray()
    async for chunk in request.stream():
        buf += chunk
        if len(buf) > limit:
            raise too_large
    return bytes(buf)


class SendRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/messages``. id: idempotency key; session_id /
    agent_id: scope the message to one session or one subagent."""

    text: str
    id: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    author: str = "human"


def json_response(obj: Any, status: int = 200) -> Response:
    return Response(_enc.encode(obj), status_code=status, media_type="application/json")


def error_response(code: str, message: str, status: int) -> Response:
    return Response(_error_body(code, message), status_code=status, media_type="application/json")


class HookdASGI:
    """The outer ASGI app.

    Access: requests that came over TCP need the bearer token; the Unix socket
    (``scope["server"]`` is a path or None) is protected by its file mode instead.
    Hot path: ``POST /v1/hooks/{harness}/{builder}`` is served here directly (no routing or
    middleware layers: it runs on every hook of every agent), or, over the Unix socket, by
    :class:`_HttpProtocol` before any ASGI (:meth:`plain_hook`); everything else goes to the
    Starlette app.
    """

    def __init__(self, app: Any, core: Hookd, token: str, web: WebAuth | None = None,
                 endpoint: Endpoint | None = None):
        self.app = app
        self.core = core
        self._expected = f"Bearer {token}".encode()
        # the endpoint's hook token admits the harness routes only; its proof goes back on
        # every hook reply over TCP (hookd.config.Endpoint)
        self._hook_expected = f"Bearer {endpoint.hook_token}".encode() if endpoint else None
        self._proof = (b"x-hookd-proof", endpoint.proof.encode()) if endpoint else None
        self.web = web  # the operator page's session cookie also admits (hookd/web.py)
        self.timings: list[float] | None = [] if os.environ.get(HOOK_TIMINGS_ENV) == "1" else None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        server = scope.get("server")
        over_tcp = isinstance(server, (tuple, list)) and isinstance(server[1], int)
        if over_tcp:
            got = b""
            for k, v in scope["headers"]:
                if k == b"authorization":
                    got = v
                    break
            if not hmac.compare_digest(got, self._expected) and not (
                self._hook_expected is not None
                and scope["path"].startswith(HARNESS_PREFIXES)
                and hmac.compare_digest(got, self._hook_expected)
            ):
                refused = self.web.admit(scope) if self.web else Unauthorized("missing or wrong bearer token")
                if refused is not None:
                    html = getattr(refused, "html", None)  # a browser's page request (hookd.web.SignInNeeded)
                    await _send(send, refused.status, html or _error_body(refused.code, refused.message),
                                getattr(refused, "headers", None) if html else None)
                    return
        path: str = scope["path"]
        if path.startswith("/v1/hooks/") and scope["method"] == "POST":
            if over_tcp and self._proof is not None:
                send = _with_header(send, self._proof)
            await self._hook(scope, receive, send)
            if self.timings is not None and "hookd.body_at" in scope:
                self.timings.append(time.perf_counter() - scope["hookd.body_at"])
            return
        if self.timings is not None and path == "/v1/debug/hook-timings":
            out, self.timings = self.timings, []
            await _send(send, 200, _enc.encode(out))
            return
        await self.app(scope, receive, send)

    async def _hook(self, scope: dict, receive: Any, send: Any) -> None:
        parts = scope["path"].split("/")  # ['', 'v1', 'hooks', harness, builder(, 'hold' | 'wake')]
        try:
            wake = len(parts) == 6 and parts[5] == "wake"
            holdable = len(parts) == 6 and parts[5] == "hold"
            if len(parts) != 5 and not (wake or holdable):
                raise NotFound("hook routes are POST /v1/hooks/{harness}/{builder}[/hold|/wake]")
            builder = check_builder_id(parts[4])
            raw, ended = await read_hook_body(receive)
            if self.timings is not None:
                scope["hookd.body_at"] = time.perf_counter()
            if wake:
                if ended == "late":
                    raise BadRequest(_LATE)
                await _send(send, 200, await _unless_disconnected(self.core.wake(parts[3], builder, raw), receive))
                return
            headers = _hook_headers(scope["headers"])
            deadline_ms = headers[1]
            hold = holdable and deadline_ms >= HOLD_MIN_MS
            result = await self._ingest(parts[3], builder, raw, ended, headers, hold=hold)
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
                    await _send(send, 200, b"", {"content-type": "application/json", "x-hookd-hold": iid})
                    return
                read_iid = iid if body else None  # a remote answer: delivered once the hook has read it
        except HookdError as e:
            await _send(send, e.status, _error_body(e.code, e.message, e.stored),
                        None if e.stored is None else {"content-type": "application/json", "x-hookd-stored": str(e.stored)})
            return
        except Exception as e:
            log.exception("internal error on hook %s", scope["path"])
            await _send(send, 500, _error_body("internal", f"internal error: {type(e).__name__}"))
            return
        await _send(send, 200, body)
        if read_iid is not None:
            read = await _reply_read(scope)
            try:
                await self.core.reply_read(read_iid, read)
            except Exception:
                log.exception("recording the delivery of the answer to %s failed", read_iid)

    async def _ingest(self, harness: str, builder: str, raw: bytes, ended: str,
                      headers: tuple[str | None, int, int | None, str | None], *, hold: bool = False) -> HookResult:
        """Store one hook body (``ended`` as :func:`read_hook_body` says; ``headers`` as
        :func:`_hook_headers` reads them). A body that did not end (the caller knows it is not
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
            late = BadRequest(_LATE)
            late.stored = stored
            raise late
        return await self.core.ingest_hook(harness, builder, raw, delivery_id=delivery, hold=hold,
                                           agent_pid=agent_pid, cwd=cwd)

    async def plain_hook(self, path: str, headers: list[tuple[bytes, bytes]], raw: bytes, *,
                         ended: str = "whole") -> tuple[int, bytes, int | None]:
        """``POST /v1/hooks/{harness}/{builder}`` (no hold, no wake) with its body ``raw``,
        as :class:`_HttpProtocol`'s fast path serves it: returns (HTTP status, JSON body, the
        hook event id of a refused hook's stored bytes: its ``X-Hookd-Stored`` header),
        errors in the one error shape, exactly as :meth:`_hook` answers them. ended: how the
        body ended (:func:`read_hook_body`)."""
        parts = path.split("/")
        try:
            builder = check_builder_id(parts[4])
            result = await self._ingest(parts[3], builder, raw, ended, _hook_headers(headers))
            return 200, result.body, None
        except HookdError as e:
            return e.status, _error_body(e.code, e.message, e.stored), e.stored
        except Exception as e:
            log.exception("internal error on hook %s", path)
            return 500, _error_body("internal", f"internal error: {type(e).__name__}"), None


def _hook_headers(headers: list[tuple[bytes, bytes]]) -> tuple[str | None, int, int | None, str | None]:
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


def _with_header(send: Any, header: tuple[bytes, bytes]) -> Any:
    """``send`` that adds ``header`` to the response's head."""
    async def send_with(message: dict) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message["headers"], header]
        await send(message)
    return send_with


#: Longest wait (s) for a held hook's client to close after its reply with a remote answer.
REPLY_READ_WAIT_S = 10.0


async def _reply_read(scope: dict) -> bool | None:
    """After a held hook's reply was sent: did its client read all of it and close its end
    (True), go away leaving part of it unread (False), or neither within REPLY_READ_WAIT_S
    (None)? :class:`_HttpProtocol` half-closes such a reply and watches the client's close
    (``hookd.reply_read`` in the scope's extensions); without it (another protocol), True:
    the transport took the whole reply."""
    read = scope.get("extensions", {}).get("hookd.reply_read")
    if read is None:
        return True
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


def _error_body(code: str, message: str, stored: int | None = None) -> bytes:
    return _enc.encode(ErrorResponse(ErrorBody(code, message, stored)))


async def _send(send: Any, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    """Send one response: ``body`` as JSON, or with ``headers`` (which name its content-type)."""
    hs = [(k.encode(), v.encode()) for k, v in headers.items()] if headers else [(b"content-type", b"application/json")]
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [*hs, (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})


def _complete_json(buf: bytearray) -> bool:
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


async def read_hook_body(receive: Any) -> tuple[bytes, str]:
    """Read a hook body until the client ends it or one complete JSON object has arrived.
    Returns (the body, how it ended): ``whole``; ``cut``: the client went away before either;
    ``late``: BODY_TIMEOUT_S passed before either (see :meth:`HookdASGI._ingest`).

    Raises PayloadTooLarge past MAX_PAYLOAD bytes.
    """
    buf = bytearray()
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return bytes(buf), "whole" if _complete_json(buf) else "cut"
                buf += message.get("body", b"")
                if len(buf) > MAX_PAYLOAD:
                    raise PayloadTooLarge(f"hook payload over {MAX_PAYLOAD} bytes")
                if not message.get("more_body", False):
                    break
                if _complete_json(buf):
                    break  # stdin held open after a complete object: answer now
    except TimeoutError:
        return bytes(buf), "late"
    return bytes(buf), "whole"


def build_app(core: Hookd, *, token: str, lifespan: Any = None, should_exit: Any = None,
              endpoint: Endpoint | None = None) -> Any:
    """The ASGI app (HookdASGI around Starlette). should_exit: callable telling followers
    that the server is shutting down."""

    async def status(request: Request) -> Response:
        return json_response(await core_status(core))

    async def questions(request: Request) -> Response:
        state = request.query_params.get("state", "pending")
        if state not in ("pending", "resolved", "all"):
            raise BadRequest("state must be one of: pending, resolved, all")
        try:
            limit = int(request.query_params.get("limit", "1000"))
        except ValueError:
            raise BadRequest("limit must be an integer") from None
        if not 1 <= limit <= 100_000:
            raise BadRequest("limit must be between 1 and 100000")
        return json_response(await core.store.interactions(state, limit))

    async def interaction(request: Request) -> Response:
        i = await core.store.interaction(request.path_params["id"])
        if i is None:
            raise NotFound(f"no interaction {request.path_params['id']!r}")
        return json_response(i)

    async def send(request: Request) -> Response:
        builder = await known_builder(request)
        body = decode_body(await read_api_body(request), SendRequest, "message")
        message, created = await core.send_message(
            builder, body.text, key=body.id, session_id=body.session_id, agent_id=body.agent_id,
            author=body.author,
        )
        return json_response({"message": message, "created": created}, 201 if created else 200)

    async def known_builder(request: Request) -> str:
        builder = check_builder_id(request.path_params["builder"])
        if read_manifest(core.home, builder) is None and not await core.store.builder_known(builder):
            raise NotFound(f"builder {builder!r} is not known: spawn it first (or check the name)")
        return builder

    async def answer(request: Request) -> Response:
        body = decode_body(await read_api_body(request), AnswerRequest, "answer")
        return json_response(await core.answer(request.path_params["id"], body, surface=body.surface))

    async def ask(request: Request) -> Response:
        builder = await known_builder(request)
        body = decode_body(await read_api_body(request), AskRequest, "ask")
        i = await core.ask_async(builder, body.question, body.options, session_id=body.session_id,
                                 expires_in_s=body.expires_in_s, author=body.author)
        return json_response({"interaction": i}, 201)

    async def await_answers(request: Request) -> Response:
        body = decode_body(await request.body(), AwaitRequest, "await")
        return json_response(await core.await_answers(body.ids, body.timeout_s, collect=body.collect))

    async def preanswer(request: Request) -> Response:
        builder = await known_builder(request)
        body = decode_body(await read_api_body(request), PreanswerRequest, "preanswer")
        return json_response(await core.preanswer(builder, body.question, body.answer, actor=body.actor), 201)

    async def tail(request: Request) -> Response:
        builder = await known_builder(request)
        body = decode_body(await request.body(), TailRequest, "tail")
        tailer = core.tailer
        if tailer is None:
            raise BadRequest("the transcript tailer is not running")
        out = []
        for path in body.paths:
            if not os.path.isabs(path):
                raise BadRequest(f"transcript path must be absolute: {path!r}")
            if os.path.isdir(path) or not path.endswith(".jsonl"):  # a folder, or one still to be made
                n = tailer.add_dir(path, builder)
                out.append({"path": os.path.abspath(path), "folder": True, "files": n,
                            "rows": sum([await tailer.poll(f) for f in tailer.targets() if f.startswith(os.path.abspath(path) + os.sep)])})
                continue
            tailer.add(path, builder, body.session_id)
            rows = await tailer.poll(os.path.abspath(path))
            # refused: why the tailer will not read it (a FIFO, a device, a directory)
            out.append({"path": os.path.abspath(path), "rows": rows, "refused": tailer.refusal(os.path.abspath(path))})
        return json_response({"builder": builder, "files": out}, 201)

    async def lanes(request: Request) -> Response:
        watch = core.lanes
        if watch is None:
            raise BadRequest("lanes are not being watched")
        lanes = sorted(await watch.compute(), key=_lane_order)
        parts = []
        for i in range(0, len(lanes), 500):  # encoded 500 lanes per turn of the event loop
            if i:
                await asyncio.sleep(0)
            parts.append(_enc.encode(lanes[i:i + 500])[1:-1])
        return Response(b"[" + b",".join(parts) + b"]", media_type="application/json")

    async def transcripts(request: Request) -> Response:
        return json_response(await core.store.transcripts())

    async def messages(request: Request) -> Response:
        builder = request.query_params.get("builder")
        if builder is not None:
            check_builder_id(builder)
        limit = _int_param(request, "limit", 1000, 0, MAX_LIMIT)
        items, total = await core.store.messages(builder, limit)
        if builder is not None and not items and read_manifest(core.home, builder) is None \
                and not await core.store.builder_known(builder):
            raise NotFound(f"builder {builder!r} is not known: spawn it first (or check the name)")
        return Response(_enc.encode(items), media_type="application/json", headers={"x-total-count": str(total)})

    async def events(request: Request) -> Response:
        after = _int_param(request, "after", 0, -(2**63), 2**63 - 1)
        limit = _int_param(request, "limit", 1000, 0, MAX_LIMIT)
        follow = request.query_params.get("follow") in ("1", "true", "yes")
        if not follow:
            evs = await core.store.events_after(after, limit)
            return Response(b"".join(_enc.encode(e) + b"\n" for e in evs), media_type="application/x-ndjson")

        async def stream() -> AsyncIterator[bytes]:
            last = after
            while True:
                version = core.bus.version  # a commit published during the read below wakes the wait
                evs = await core.store.events_after(last, 1000)
                if evs:
                    last = evs[-1].seq
                    yield b"".join(_enc.encode(e) + b"\n" for e in evs)
                    continue
                if core.bus.closed or (should_exit and should_exit()):
                    return
                await core.bus.wait(0.5, since=version)

        return StreamingResponse(stream(), media_type="application/x-ndjson")

    web = WebPage(core, token, should_exit)

    async def on_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HookdError):
            return error_response(exc.code, exc.message, exc.status)
        if isinstance(exc, HTTPException):
            code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
            return error_response(code, str(exc.detail), exc.status_code)
        if isinstance(exc, RecursionError):  # a JSON body nested deeper than the decoder goes
            return error_response(BadRequest.code, "request body is nested too deeply", 400)
        if isinstance(exc, OverflowError):  # a number SQLite cannot hold (64-bit integers)
            return error_response(BadRequest.code, f"a number in the request is out of range: {exc}", 400)
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response("internal", f"internal error: {type(exc).__name__}", 500)

    app = Starlette(
        routes=[
            *claw_routes(core),  # claw-http (hookd/clawhttp.py)
            Route("/v1/status", status),
            Route("/v1/questions", questions),
            Route("/v1/interactions/await", await_answers, methods=["POST"]),
            Route("/v1/interactions/{id}", interaction),
            Route("/v1/interactions/{id}/answer", answer, methods=["POST"]),
            Route("/v1/builders/{builder}/asks", ask, methods=["POST"]),
            Route("/v1/builders/{builder}/preanswers", preanswer, methods=["POST"]),
            Route("/v1/builders/{builder}/transcripts", tail, methods=["POST"]),
            Route("/v1/events", events),
            Route("/v1/builders/{builder}/messages", send, methods=["POST"]),
            Route("/v1/messages", messages),
            Route("/v1/lanes", lanes),
            Route("/v1/transcripts", transcripts),
            *web.routes(),
        ],
        exception_handlers={Exception: on_error, HTTPException: on_error, HookdError: on_error},
        lifespan=lifespan,
    )
    return HookdASGI(app, core, token, web=web.auth, endpoint=endpoint)


_LANE_RANK = {"stalled": 0, "dead": 1, "waiting_question": 2, "waiting_permission": 3, "idle": 4, "working": 5, "ended": 6}


def _lane_order(lane: Any) -> tuple[int, float]:
    """Lanes waiting on a human first, then the rest; oldest state first."""
    return (_LANE_RANK.get(lane.state, 9), lane.since)


async def core_status(core: Hookd) -> dict[str, Any]:
    """The daemon's status: process, listeners, counts, builders (spawned and seen), the
    interactions a PermissionRequest hook is held for (``held``), and ``storage``: whether
    the database commits (:meth:`hookd.store.Store.storage`; while it cannot
    be read either, ``read_error`` says so and the counts and builders read from it are
    empty). Files (manifests, the spool) are read off the event loop."""
    storage = core.store.storage()
    try:
        stats = await core.store.builder_stats()
        counts = await core.store.counts()
        migrations = await core.store.applied_migrations()
    except StorageUnavailable as e:
        storage["read_error"] = e.message
        stats, counts, migrations = {}, {}, []
    manifests, spooled = await asyncio.to_thread(_status_files, core.home)
    builders = []
    for m in manifests:
        s = stats.pop(m["builder"], None)
        builders.append(_builder_status(m["builder"], m, s))
    for b, s in sorted(stats.items()):
        builders.append(_builder_status(b, None, s))
    return {
        "version": __version__,
        "pid": os.getpid(),
        "home": str(core.home.root),
        "socket": str(core.home.socket_path),
        "tcp_port": core.tcp_port,
        "started_at": core.started_at,
        "uptime_s": round(time.time() - core.started_at, 3),
        "migrations": migrations,
        "counts": {**counts, "spooled": spooled},
        "builders": builders,
        "held": core.held(),
        "storage": storage,
        # hooks answered on the Unix socket's fast path since start (hookd.server._HttpProtocol),
        # and how many of them had to wait (their write joined a group commit)
        "fast_path": {"enabled": FASTPATH, "hooks": core.fast_hooks, "waited": core.fast_hooks_resumed},
    }


def _status_files(home: Home) -> tuple[list[dict[str, Any]], int]:
    """(every spawn manifest, payloads in the spool): status's file reads, in a thread."""
    return list_manifests(home), sum(1 for root in home.spool_roots() for d in root.glob("*/*.json"))


def _builder_status(builder: str, manifest: dict | None, stats: dict | None) -> dict[str, Any]:
    hooks_seen = stats["hooks_seen"] if stats else 0
    out: dict[str, Any] = {
        "builder": builder,
        "harness": (manifest or {}).get("harness") or (stats or {}).get("harness"),
        "worktree": (manifest or {}).get("worktree"),
        "settings_file": (manifest or {}).get("settings_file"),
        "spawned": manifest is not None,
        # the hook client spawn wrote: "c" (compiled) or "bash"; None when not spawned (or
        # a harness with no hook client); client_note: why it fell back to bash
        "client": (manifest or {}).get("client"),
        "client_note": (manifest or {}).get("client_note"),
        "hooks_seen": hooks_seen,
        "last_hook_at": (stats or {}).get("last_hook_at"),
        "pending": (stats or {}).get("pending", 0),
        "sessions": (stats or {}).get("sessions", []),
    }
    if manifest is not None and hooks_seen == 0:
        # Installed is not active (case B19): Claude Code snapshots hooks at session start.
        out["warning"] = (
            "no hook received yet: a Claude Code session started before spawn does not "
            "see the new hooks; run /hooks in it or restart it"
        )
    return out


# --- lifecycle ------------------------------------------------------------------------


class _Lock:
    """An exclusive flock on ``run/serve.lock`` held for the daemon's lifetime."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(self.fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(self.fd)
            raise AlreadyServing(
                f"hookd is already serving {path.parent.parent} (pid {pid}); stop it first or use another --home"
            ) from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
            os.close(self.fd)


def _socket_location(home: Home) -> tuple[Path, Path | None]:
    """Where to bind: ``run/hookd.sock``, or, for a home whose path makes that too long, the
    first of :meth:`Home.socket_candidates` whose directory is (or is made) a private
    directory of this user's. When every candidate's directory is someone else's (another
    user created ``/tmp/hookd-<uid>`` first, to receive hookd's payloads and answer its hooks),
    a fresh directory with an unpredictable name (``mkdtemp``, 0700) instead, and a warning
    naming what to remove. Returns (path, the directory made for this run, or None)."""
    short = home.run_dir / "hookd.sock"
    if home.socket_path == short:
        return short, None
    refused = []
    for candidate in home.socket_candidates():
        try:
            ensure_private_dir(candidate.parent)
            return candidate, None
        except (ConfigError, OSError):
            refused.append(private_dir_problem(candidate.parent) or f"{candidate.parent} cannot be created")
    fresh = Path(tempfile.mkdtemp(prefix=f"hookd-{os.geteuid()}-", dir=home.socket_candidates()[-1].parent.parent))
    log.warning("not binding the socket in %s: %s; another user may have created it to take over hookd's socket. "
                "Using %s instead (hook clients and the CLI find it through %s). Remove %s (as its owner or "
                "root), or set XDG_RUNTIME_DIR to a private directory of yours, to get the usual place back.",
                " or ".join(str(c.parent) for c in home.socket_candidates()), "; ".join(refused), fresh,
                home.socket_path_file, " and ".join(str(c.parent) for c in home.socket_candidates()))
    return fresh / home.socket_candidates()[0].name, fresh


def _bind_unix(home: Home) -> tuple[socket.socket, Path, Path | None]:
    """Bind and listen on the home's socket (:func:`_socket_location`), 0600; a long home's
    path is recorded in ``bin/socket-path`` (0600), where its clients read it. Returns (the
    socket, its path, the directory made for this run or None)."""
    try:
        recorded: Path | None = Path(os.fsdecode(home.socket_path_file.read_bytes()))
    except OSError:
        recorded = None
    path, made = _socket_location(home)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # stale: we hold the serve lock
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(os.fspath(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(512)
    sock.set_inheritable(True)
    if path != home.run_dir / "hookd.sock" and recorded != path:
        atomic_write(home.socket_path_file, os.fsencode(path), mode=0o600)
        if recorded is not None and recorded.parent.name.startswith(f"hookd-{os.geteuid()}-") \
                and private_dir_problem(recorded.parent) is None:
            with contextlib.suppress(OSError):  # an earlier run's fresh directory (a kill -9 left it)
                recorded.unlink(missing_ok=True)
                recorded.parent.rmdir()
    return sock, path, made


def _bind_tcp(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(512)
    return sock


class _HttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with two changes.

    A request it cannot parse (bad framing, headers or URL) is answered with hookd's one error
    shape, not uvicorn's plain text.

    The fast path: ``POST /v1/hooks/{harness}/{builder}`` (no ``/hold``, no ``/wake``, no
    query) over the Unix socket with ``Connection: close``, what the compiled hook client
    sends on every hook, is answered from here (:class:`_HookRequest`), without uvicorn's
    ASGI request cycle and task; keep-alive clients (load generators) keep the ASGI path.
    uvicorn still owns the connection, the parser (httptools), flow control and shutdown.
    Measured in one interleaved run (docs/decisions.md "The round-trip budget"): ~0.06 ms
    less per hook. ``HOOKD_FASTPATH=0`` turns it off (every request through ASGI).
    """

    _hook: "_HookRequest | None" = None

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        if isinstance(transport, _UNIX_TRANSPORTS):
            # uvicorn's connection_made (0.54) less its three socket calls (getsockname twice,
            # getpeername) per connection: a Unix socket's peer has no address, ours is its path
            self.connections.add(self)
            self.transport = transport
            self.flow = FlowControl(transport)
            self.server, self.client, self.scheme = (getattr(self.config, "hookd_socket", ""), None), None, "http"
            return
        super().connection_made(transport)

    def send_400_response(self, msg: str) -> None:
        body = _error_body("bad_request", f"invalid HTTP request: {msg}")
        self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
        self.transport.close()

    def on_headers_complete(self) -> None:
        if self._hook is not None:
            return  # a request after a fast-path hook on one connection: the reply closes it
        url = self.url
        if (FASTPATH and url.startswith(b"/v1/hooks/") and url.count(b"/") == 4
                and b"?" not in url and b"%" not in url and self.parser.get_method() == b"POST"
                and self.server is not None and self.server[1] is None  # a Unix socket: (path, None)
                and not self.parser.should_keep_alive()):  # one request, as hook clients send it
            if self.expect_100_continue:
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self._hook = _HookRequest(self, url.decode("ascii"), self.headers)
            return
        super().on_headers_complete()
        if url.endswith(b"/hold") and url.startswith(b"/v1/hooks/") and self.parser.get_method() == b"POST":
            # a held PermissionRequest hook: its reply may carry a remote answer, recorded as
            # delivered only once the client has read all of it (HookdASGI._hook)
            self._reply_read = self.loop.create_future()
            self.cycle.transport = _HalfClose(self.transport, self)
            self.cycle.scope.setdefault("extensions", {})["hookd.reply_read"] = self._reply_read

    def on_body(self, body: bytes) -> None:
        if self._hook is not None:
            self._hook.add(body)
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._hook is not None:
            self._hook.start("whole")
            return
        super().on_message_complete()

    def data_received(self, data: bytes) -> None:
        if self._replied:
            return  # a held hook's reply is out: only its client's close matters now
        super().data_received(data)
        hook = self._hook
        if hook is not None and not hook.started:
            if _complete_json(hook.body):
                hook.start("whole")  # stdin held open after a complete object: answer now
            elif hook.timer is None:
                hook.arm()  # the rest is still to come (the usual hook arrives whole: no timer)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._hook is not None:
            self._hook.start("cut")  # what arrived is stored, as on the ASGI path
        if self._reply_read is not None and not self._reply_read.done():
            # reset (ECONNRESET: the client closed with part of the reply unread, or never read
            # it), or closed by us first (shutdown, keep-alive timer): not known to be read
            self._reply_read.set_result(False if exc is not None else None)
        super().connection_lost(exc)

    # --- a held hook's reply: delivered once its client has read it -------------------
    _reply_read: "asyncio.Future[bool | None] | None" = None
    _replied = False

    def reply_sent(self) -> None:
        """The response cycle of a held hook ended (uvicorn closes the transport here): shut
        down our writing side only, and keep reading, so that the client's close tells
        whether it read the whole reply. A Unix or TCP socket closed with unread data in its
        receive queue resets the connection (ECONNRESET here); closed after reading, it ends
        with EOF. uvicorn's keep-alive timer closes the connection if the client never does."""
        self._replied = True
        t = self.transport
        if t.is_closing():
            return
        try:
            t.write_eof()
        except (OSError, RuntimeError, NotImplementedError):
            t.close()
            return
        self.flow.resume_reading()

    def eof_received(self) -> bool | None:
        if self._replied and self._reply_read is not None and not self._reply_read.done():
            self._reply_read.set_result(True)
        return super().eof_received()  # (None: the transport closes)

    def shutdown(self) -> None:
        if self._hook is not None:
            return  # the hook is answered (or times out), then the connection closes
        super().shutdown()


class _HalfClose:
    """The transport a held hook's response cycle writes to: the real one, except that
    ``close()`` (uvicorn's end of a ``Connection: close`` response) is
    :meth:`_HttpProtocol.reply_sent`."""

    def __init__(self, transport: Any, proto: _HttpProtocol):
        self._transport, self._proto = transport, proto

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def close(self) -> None:
        self._proto.reply_sent()


class _HookRequest:
    """One plain hook request on :class:`_HttpProtocol`'s fast path, answered exactly as
    :meth:`HookdASGI._hook` answers it: the body is read until the request ends, one complete
    JSON object has arrived, or the client goes away (what arrived is stored); over
    MAX_PAYLOAD bytes: 413 (nothing stored); not all there within BODY_TIMEOUT_S: stored raw
    as it is, and 400 (:meth:`HookdASGI._ingest`). Then
    :meth:`HookdASGI.plain_hook` runs at once, in the protocol's callback (:meth:`start`); one
    that has to wait for a group commit is finished by a task of the server's (a graceful
    shutdown waits for it). The reply is written with ``connection: close``."""

    def __init__(self, proto: _HttpProtocol, path: str, headers: list[tuple[bytes, bytes]]):
        self.proto, self.path, self.headers = proto, path, headers
        self.body = bytearray()
        self.started = False
        self.timer: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        """Start the body's clock (BODY_TIMEOUT_S from the first bytes that did not complete it)."""
        self.timer = self.proto.loop.call_later(BODY_TIMEOUT_S, self._timed_out)

    def add(self, chunk: bytes) -> None:
        if self.started:
            return
        self.body += chunk
        if len(self.body) > MAX_PAYLOAD:
            self._refuse(PayloadTooLarge(f"hook payload over {MAX_PAYLOAD} bytes"))

    def _timed_out(self) -> None:
        self.timer = None
        self.start("late")

    def _refuse(self, e: HookdError) -> None:
        self.start("cut", error=e)

    def start(self, ended: str, error: HookdError | None = None) -> None:
        """Answer now: the body ended as ``ended`` (:func:`read_hook_body`), or refuse it
        with ``error`` (nothing stored)."""
        if self.started:
            return
        self.started = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        proto = self.proto
        proto.flow.pause_reading()  # the rest of a held-open stdin is not read
        # Run the hook now, in this callback, as far as it goes without waiting: the usual
        # hook (the first write of its event-loop turn) commits and replies without ever
        # suspending, so it needs no task and no further turn of the loop. One that does wait
        # (its write joined a group commit) is finished by a task of the server's.
        coro = self._run(ended, error)
        try:
            waiting_on = coro.send(None)
        except StopIteration:
            return
        except Exception:  # _run answers every error itself; this is a bug: never the agent's problem
            log.exception("hook fast path failed")
            proto.transport.close()
            return
        proto.config.hookd_app.core.fast_hooks_resumed += 1  # type: ignore[attr-defined]
        task = proto.loop.create_task(_resume(coro, waiting_on))
        task.add_done_callback(proto.tasks.discard)
        proto.tasks.add(task)

    async def _run(self, ended: str, error: HookdError | None) -> None:
        app: HookdASGI = self.proto.config.hookd_app  # type: ignore[attr-defined]
        stored = None
        if error is not None:
            status, body = error.status, _error_body(error.code, error.message)
        else:
            t0 = time.perf_counter()
            status, body, stored = await app.plain_hook(self.path, self.headers, bytes(self.body), ended=ended)
            app.core.fast_hooks += 1
            if app.timings is not None:
                app.timings.append(time.perf_counter() - t0)
        t = self.proto.transport
        if not t.is_closing():
            extra = b"" if stored is None else b"x-hookd-stored: %d\r\n" % stored
            t.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                    b"%sconnection: close\r\n\r\n%s" % (status, _REASONS[status], len(body), extra, body))
            t.close()


_REASONS = {s.value: s.phrase.encode() for s in HTTPStatus}
_LATE = f"hook payload did not arrive within {BODY_TIMEOUT_S:.0f} s; what arrived is stored raw"


async def _resume(coro: Any, waiting_on: Any) -> Any:
    """Drive ``coro``, already started and suspended on ``waiting_on`` (what it yielded: an
    asyncio future, or None for a bare yield), to its end, as a Task would have: each time
    the future is done, resume it (an awaited future hands over its own result or error); a
    cancellation of this task is thrown into it. Returns its return value."""
    while True:
        try:
            if waiting_on is None:
                await asyncio.sleep(0)
            else:
                await asyncio.wait((waiting_on,))  # done; its result is the coroutine's to take
        except asyncio.CancelledError as e:
            step = functools.partial(coro.throw, e)
        else:
            step = functools.partial(coro.send, None)
        try:
            waiting_on = step()
        except StopIteration as done:
            return done.value


def _outside_spools(home: Home) -> list[Path]:
    """The spools outside the home to watch (:meth:`Home.outside_spool_roots`): those that
    exist as private directories of this user's, and the first a client would use (under a
    base that exists: ``$XDG_RUNTIME_DIR`` or ``/run/user/<uid>`` only when it is this user's
    private directory; ``/dev/shm``, ``/tmp``), created 0700 if missing. One whose directory
    another user created is skipped, with a warning (neither the clients nor the daemon use
    it). Every one is scanned whenever the spool is ingested, watched or not."""
    out: list[Path] = []
    for root in home.outside_spool_roots():
        top = root.parent.parent
        if not top.is_dir() or (root.parent.name == "hookd" and private_dir_problem(top) is not None):
            continue
        if out and not root.is_dir():
            continue  # (only the first is made ahead of need)
        try:
            ensure_private_dir(root.parent)
            ensure_private_dir(root)
        except (ConfigError, OSError):
            log.warning("not using %s for payloads spooled outside the home: %s", root,
                        private_dir_problem(root.parent) or private_dir_problem(root))
            continue
        out.append(root)
    return out


async def _watch_spool(core: Hookd, stop: asyncio.Event, backend: str = "auto") -> None:
    """Ingest payloads spooled while the daemon runs (a client that timed out, or one that
    read no endpoint during start-up), in the home's spool and in those outside it. backend:
    :attr:`hookd.settings.Settings.watch_backend`."""
    from hookd.watchers.watch import awatch_dirs

    logging.getLogger("watchfiles").setLevel(logging.WARNING)
    outside = _outside_spools(core.home)
    try:
        async for _ in awatch_dirs(os.fspath(core.home.spool_root), *map(os.fspath, outside), stop_event=stop,
                                   debounce=50, step=20, recursive=True, backend=backend, rust_timeout=200):
            try:
                await core.ingest_spool()
            except Exception:  # (a database that cannot commit: the files stay for a later pass)
                log.exception("spool ingestion failed; the spooled files stay")
    except Exception:  # never let the watcher take the daemon down
        log.exception("spool watcher stopped")
    for root in outside:  # (kept while it holds anything)
        for d in [*root.iterdir(), root] if root.is_dir() else []:
            with contextlib.suppress(OSError):
                d.rmdir()


class _Server(uvicorn.Server):
    """uvicorn's server with signals handled on the event loop: SIGTERM/SIGINT start a
    graceful shutdown (a second one forces it) and the process then exits 0, instead of
    uvicorn re-raising the signal after shutdown."""

    core: Hookd | None = None
    _exit_wake: asyncio.Event | None = None
    _exit_loop: asyncio.AbstractEventLoop | None = None

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        if self.core is not None:
            self.core.release_all()  # held hooks go now, to come back to the next daemon (X-Hookd-Hold)
        if self._exit_wake is not None and self._exit_loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                self._exit_loop.call_soon_threadsafe(self._exit_wake.set)

    async def main_loop(self) -> None:
        """uvicorn's loop, without its 0.1 s tick (the idle daemon's last wake-ups): wait for
        handle_exit, with a 1 s safety tick for a should_exit set elsewhere. Each tick is
        uvicorn's once-a-second one (default headers, should_exit, max requests)."""
        self._exit_loop = asyncio.get_running_loop()
        self._exit_wake = asyncio.Event()
        while not await self.on_tick(0):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._exit_wake.wait(), 1.0)

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        loop = asyncio.get_running_loop()
        sigs = (signal.SIGINT, signal.SIGTERM)
        for sig in sigs:
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in sigs:
                loop.remove_signal_handler(sig)


def serve(home: Home, port: int = 0, notify_overrides: dict[str, Any] | None = None) -> None:
    """Run the daemon in the foreground until SIGTERM/SIGINT. Raises AlreadyServing, and
    ConfigError for an invalid config.toml (before binding anything)."""
    from hookd.watchers import notify

    notify_config = notify.load_config(home, notify_overrides)
    settings = Settings.from_env()  # the daemon's tunables (ConfigError before binding anything)
    os.umask(0o077)  # the database, its WAL and the spool are the user's alone
    home.ensure()
    lock = _Lock(home.lock_file)
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(_serve(home, port, notify_config, settings))
    finally:
        lock.release()


def _loop_factory() -> Any:
    """uvloop's event loop where it is installed (a dependency off Windows; bench/load.py: about
    +20% hooks/s back to back on 2 cores), else asyncio's default (None)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def _serve(home: Home, port: int, notify_config: Any, settings: Settings) -> None:
    from hookd.watchers import notify

    token = home.read_token()
    unix_sock, sock_path, sock_dir = _bind_unix(home)
    tcp_sock = bind_loopback(home, port, _bind_tcp)  # port 0: the last one first (an open page reconnects)
    tcp_port = tcp_sock.getsockname()[1]
    endpoint = Endpoint(tcp_port, secrets.token_urlsafe(32), os.getpid(), process_start(),
                        secrets.token_urlsafe(24))
    store = await Store(home.db, settings=settings).open()
    core = Hookd(home, store, settings, tcp_port=tcp_port)
    stop_watch = asyncio.Event()
    server: _Server | None = None

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        counts = await core.ingest_spool()
        if counts["ingested"] or counts["invalid"]:
            log.info("spool: %s", counts)
        # Hook clients find us only from here on; what they spooled meanwhile is picked up
        # by the watcher and a second pass.
        if home.client_script.exists():
            # a bash client written by an older hookd may read an older endpoint line
            try:
                write_client(home)
            except OSError as e:
                log.warning("could not refresh %s: %s", home.client_script, e)
        write_private(home.endpoint_file, endpoint.line())
        watcher = asyncio.create_task(_watch_spool(core, stop_watch, settings.watch_backend))
        expiry = asyncio.create_task(core.run_expiry())
        notifier, notifying = notify.start(core, notify_config or notify.load_config(home))
        tailer = Tailer(core, settings=settings)
        core.attach_tailer(tailer)
        tailing = asyncio.create_task(tailer.run(stop_watch))
        lanes = LaneWatch(core, LaneAlerts(notifier), question_after_s=notifier.config.question_after_s,
                          idle_inbox_after_s=notifier.config.idle_inbox_after_s, settings=settings)
        core.attach_lanes(lanes)
        laning = asyncio.create_task(lanes.run(stop_watch))
        retrying = asyncio.create_task(retry_until_back(core, stop_watch))
        await core.ingest_spool()
        # what start-up made (modules, the app) lives as long as the daemon: the garbage
        # collector's full passes, pauses of the hook path, need not walk it again and again
        gc.freeze()
        log.info(
            "hookd %s serving %s on unix:%s and http://127.0.0.1:%d (pid %d)",
            __version__, home.root, sock_path, tcp_port, os.getpid(),
        )
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                home.endpoint_file.unlink()
            stop_watch.set()
            expiry.cancel()
            notifying.cancel()
            await asyncio.gather(notifying, return_exceptions=True)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(tailing, 2)
            laning.cancel()
            retrying.cancel()
            core.release_all()
            await core.bus.close()
            await core.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(watcher, 2)

    app = build_app(core, token=token, lifespan=lifespan, should_exit=lambda: server is not None and server.should_exit,
                    endpoint=endpoint)
    config = uvicorn.Config(
        app,
        http=_HttpProtocol,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=3,
        server_header=False,
        date_header=False,
        # no proxy in front of hookd: X-Forwarded-* headers are never trusted
        proxy_headers=False,
    )
    config.hookd_app = app  # type: ignore[attr-defined]
    config.hookd_socket = os.fspath(sock_path)  # type: ignore[attr-defined]
    server = _Server(config)
    server.core = core
    try:
        await server.serve(sockets=[unix_sock, tcp_sock])
    finally:
        await store.close()
        with contextlib.suppress(FileNotFoundError):
            sock_path.unlink()
        if sock_dir is not None:
            with contextlib.suppress(OSError):
                sock_dir.rmdir()
        log.info("hookd stopped")
