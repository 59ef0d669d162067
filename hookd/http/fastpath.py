"""The fast path, and everything else of hookd's that knows uvicorn's internals.

:class:`HookProtocol`, each connection's first protocol, answers plain hooks itself and hands
every other request to :class:`HttpProtocol`, which subclasses uvicorn's private
``HttpToolsProtocol`` and overrides its methods; uvicorn's server makes, stops and waits for
:class:`HookProtocol` as it does its own protocols. :class:`Server` subclasses
``uvicorn.Server`` and overrides its signal handling and main loop. Nothing else in hookd
imports uvicorn but :mod:`hookd.daemon` (``uvicorn.Config``, and :class:`Server` from here),
which an import-linter contract in pyproject.toml checks.
pyproject.toml pins uvicorn to the versions these were tested with, and
``tests/test_uvicorn_contract.py`` fails when an internal used here changes (a name, a
signature, an attribute read or overridden): check this module against the new uvicorn before
widening the pin. docs/decisions.md "The fast path's uvicorn pin" gives the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import time
from http import HTTPStatus
from typing import Any, cast

import httptools
import uvicorn
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

try:  # the transport uvloop gives a Unix socket's connections (none to tell by with asyncio's own loop)
    from uvloop.loop import UnixTransport as _UvUnixTransport  # type: ignore[attr-defined]  # uvloop's loop.pyi omits the class its compiled module has

    _UNIX_TRANSPORTS: tuple[type[asyncio.Transport], ...] = (_UvUnixTransport,)
except ImportError:  # pragma: no cover - uvloop is a dependency where it installs
    _UNIX_TRANSPORTS = ()

from hookd.http.hooks import HookPath, complete_json
from hookd.http.responses import error_body
from hookd.models import HookdError, PayloadTooLarge
from hookd.core import Hookd
from hookd.core.ingest import MAX_PAYLOAD
from hookd.settings import Settings

log = logging.getLogger("hookd")


def protocol(hooks: HookPath, socket_path: str, settings: Settings | None = None) -> type[asyncio.Protocol]:
    """The protocol class to give ``uvicorn.Config(http=...)``: :class:`HookProtocol` answering
    plain hooks with ``hooks`` (the app's :attr:`hookd.http.app.HookdASGI.hooks`) on the Unix
    socket at ``socket_path`` and handing every other connection to :class:`HttpProtocol`;
    ``settings.fastpath`` False: :class:`HttpProtocol` alone (every request through ASGI)."""
    settings = settings or Settings()
    http = type("HookdHttpProtocol", (HttpProtocol,), {"socket_path": socket_path})
    if not settings.fastpath:
        return http
    return type("HookdProtocol", (HookProtocol,), {"hooks": hooks, "http": http})


class HookProtocol(asyncio.Protocol):
    """Each connection's first protocol: the fast path for plain hooks.

    ``POST /v1/hooks/{harness}/{builder}`` (no ``/hold``, no ``/wake``, no query, escape or
    fragment) over the Unix socket with ``Connection: close``, what the compiled hook client
    sends on every hook, is read with httptools' parser and answered here (:class:`_HookRequest`), without uvicorn's
    protocol, its ASGI request cycle and task. Any other request (keep-alive clients, held and
    wake hooks, the API), and every connection that is not on the Unix socket, is handed to
    uvicorn's protocol (:attr:`http`, a :class:`HttpProtocol`) with the bytes read so far, as
    uvicorn hands a WebSocket upgrade to its WebSocket protocol. Measured (docs/decisions.md
    "The hook's own protocol"): ~0.06 ms of CPU less per hook than the same fast path inside
    uvicorn's protocol. ``HOOKD_FASTPATH=0`` leaves it out (:func:`protocol`).

    Made for one server by :func:`protocol`, which sets the class attributes below; uvicorn
    makes one per connection with its protocol's arguments.
    """

    #: the hook path the fast path answers with (the app's own)
    hooks: HookPath
    #: uvicorn's protocol (a :class:`HttpProtocol`) for every request this one does not answer
    http: type[HttpProtocol]

    def __init__(self, config: uvicorn.Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._made_with = config, server_state, app_state, _loop
        self.loop = _loop or asyncio.get_event_loop()
        # a graceful shutdown asks each of these connections to stop, and waits for the tasks
        self.connections = cast(set[Any], server_state.connections)
        self.tasks = server_state.tasks
        self.transport: Any = None
        self.parser: Any = None
        self.head: list[bytes] = []  # what was read until the request is known to be a plain hook's
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.expect_100_continue = False
        self.hook: _HookRequest | None = None
        self.other = False  # not a plain hook: handed to uvicorn once the parser returns

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        if not isinstance(transport, _UNIX_TRANSPORTS) and not isinstance(transport.get_extra_info("sockname"), str):
            self._hand_over()  # not the Unix socket (uvloop's Unix transport is told by its class)
            return
        self.connections.add(self)
        self.parser = httptools.HttpRequestParser(self)
        # bytes after a Connection: close request are not an error (uvicorn's setting): the
        # hook's reply is the one that counts
        self.parser.set_dangerous_leniencies(lenient_data_after_close=True)

    def data_received(self, data: bytes) -> None:
        hook = self.hook
        if hook is None:
            self.head.append(data)  # (kept, not copied: handed over only if it is not a hook)
        elif hook.started:
            return  # answered or being answered: a held-open stdin's rest is not read
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass  # (an upgrade is never a plain hook: on_headers_complete said so)
        except httptools.HttpParserError as e:
            if self.hook is not None and self.hook.started:
                return  # what follows an answered hook is not read: its reply is the one that counts
            if not self.other:
                _write_400(self.transport, str(e))
                return
        if self.other:
            self._hand_over()
            return
        hook = self.hook
        if hook is not None and not hook.started:
            if complete_json(hook.body):
                hook.start("whole")  # stdin held open after a complete object: answer now
            elif hook.timer is None:
                hook.arm()  # the rest is still to come (the usual hook arrives whole: no timer)

    # httptools' parser callbacks
    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if self.hook is not None or self.other:
            return  # a request after a plain hook on one connection: the hook's reply closes it
        url, parser = self.url, self.parser
        if (url.startswith(b"/v1/hooks/") and url.count(b"/") == 4
                and b"?" not in url and b"%" not in url and b"#" not in url  # (uvicorn's path decodes them)
                and parser.get_method() == b"POST"
                and not parser.should_keep_alive()  # one request, as hook clients send it
                and not parser.should_upgrade()):
            if self.expect_100_continue:
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.hook = _HookRequest(self, url.decode("ascii"), self.headers)
            self.head = []
        else:
            self.other = True

    def on_body(self, body: bytes) -> None:
        if self.hook is not None:
            self.hook.add(body)

    def on_message_complete(self) -> None:
        if self.hook is not None:
            self.hook.start("whole")

    def _hand_over(self) -> None:
        """Give the connection, and the bytes read so far, to uvicorn's protocol."""
        config, server_state, app_state, loop = self._made_with
        proto = self.http(config=config, server_state=server_state, app_state=app_state, _loop=loop)
        self.connections.discard(self)
        transport = self.transport
        transport.set_protocol(proto)
        proto.connection_made(transport)
        head, self.head = b"".join(self.head), []
        if head:
            proto.data_received(head)

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections.discard(self)
        hook = self.hook
        if hook is not None:
            # what arrived is stored, as on the ASGI path (hookd.http.hooks.read_hook_body):
            # whole if it is one complete object
            hook.start("whole" if complete_json(hook.body) else "cut")

    def shutdown(self) -> None:
        """A graceful shutdown: a hook being read is answered (or times out), then its
        connection closes; a connection with no hook yet is closed."""
        if self.hook is None:
            self.transport.close()


def _write_400(transport: Any, msg: str) -> None:
    """Answer a request that cannot be parsed with hookd's one error shape, and close."""
    body = error_body("bad_request", f"invalid HTTP request: {msg}")
    transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
    transport.close()


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, for every request :class:`HookProtocol` hands over, with
    three changes.

    A request it cannot parse (bad framing, headers or URL) is answered with hookd's one error
    shape, not uvicorn's plain text.

    A Unix socket's connection is made without uvicorn's socket calls (its peer has no address).

    A held hook (``POST /v1/hooks/{harness}/{builder}/hold``) is half-closed after its reply,
    so that its client's close tells whether it read a remote answer (:meth:`reply_sent`).

    Made for one server by :func:`protocol`, which sets :attr:`socket_path`.
    """

    #: the Unix socket's path: ``scope["server"]`` of its connections, ``(path, None)``
    socket_path = ""

    def connection_made(self, transport: Any) -> None:
        if isinstance(transport, _UNIX_TRANSPORTS):
            # uvicorn's connection_made (0.54) less its three socket calls (getsockname twice,
            # getpeername) per connection: a Unix socket's peer has no address, ours is its path
            self.connections.add(self)
            self.transport = transport
            self.flow = FlowControl(transport)
            self.server, self.client, self.scheme = (self.socket_path, None), None, "http"
            return
        super().connection_made(transport)

    def send_400_response(self, msg: str) -> None:
        _write_400(self.transport, msg)

    def on_headers_complete(self) -> None:
        url = self.url
        super().on_headers_complete()
        if url.endswith(b"/hold") and url.startswith(b"/v1/hooks/") and self.parser.get_method() == b"POST":
            # a held PermissionRequest hook: its reply may carry a remote answer, recorded as
            # delivered only once the client has read all of it (hookd.http.hooks.HookPath)
            self._reply_read = self.loop.create_future()
            # _HalfClose is the transport to the cycle (every attribute the real one's but close)
            self.cycle.transport = cast(asyncio.Transport, _HalfClose(self.transport, self))
            self.cycle.scope.setdefault("extensions", {})["hookd.reply_read"] = {"future": self._reply_read}

    def data_received(self, data: bytes) -> None:
        if self._replied:
            return  # a held hook's reply is out: only its client's close matters now
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
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

    def eof_received(self) -> None:
        if self._replied and self._reply_read is not None and not self._reply_read.done():
            self._reply_read.set_result(True)
        super().eof_received()  # (it returns None: the transport closes)


class _HalfClose:
    """The transport a held hook's response cycle writes to: the real one, except that
    ``close()`` (uvicorn's end of a ``Connection: close`` response) is
    :meth:`HttpProtocol.reply_sent`."""

    def __init__(self, transport: Any, proto: HttpProtocol):
        self._transport, self._proto = transport, proto

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def close(self) -> None:
        self._proto.reply_sent()


class _HookRequest:
    """One plain hook request on :class:`HookProtocol`'s fast path, answered exactly as
    :meth:`hookd.http.hooks.HookPath.asgi` answers it: the body is read until the request
    ends, one complete JSON object has arrived, or the client goes away (what arrived is
    stored); over MAX_PAYLOAD bytes: 413 (nothing stored); not all there within the hook
    path's ``body_timeout_s``: stored raw as it is, and 400
    (:meth:`hookd.http.hooks.HookPath.ingest`). Then :meth:`hookd.http.hooks.HookPath.plain`
    runs at once, in the protocol's callback (:meth:`start`); one that has to wait for a group
    commit is finished by a task of the server's (a graceful shutdown waits for it). The reply
    is written with ``connection: close``."""

    def __init__(self, proto: HookProtocol, path: str, headers: list[tuple[bytes, bytes]]):
        self.proto, self.path, self.headers = proto, path, headers
        self.body = bytearray()
        self.started = False
        self.timer: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        """Start the body's clock (``body_timeout_s`` from the first bytes that did not complete it)."""
        self.timer = self.proto.loop.call_later(self.proto.hooks.body_timeout_s, self._timed_out)

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
        """Answer now: the body ended as ``ended`` (:func:`hookd.http.hooks.read_hook_body`),
        or refuse it with ``error`` (nothing stored)."""
        if self.started:
            return
        self.started = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        proto = self.proto
        if not proto.transport.is_closing():
            proto.transport.pause_reading()  # the rest of a held-open stdin is not read
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
        proto.hooks.core.fast_hooks_resumed += 1
        task = proto.loop.create_task(_resume(coro, waiting_on))
        task.add_done_callback(proto.tasks.discard)
        proto.tasks.add(task)

    async def _run(self, ended: str, error: HookdError | None) -> None:
        hooks = self.proto.hooks
        stored = None
        if error is not None:
            status, body = error.status, error_body(error.code, error.message)
        else:
            t0 = time.perf_counter()
            status, body, stored = await hooks.plain(self.path, self.headers, bytes(self.body), ended=ended)
            hooks.core.fast_hooks += 1
            if hooks.timings is not None:
                hooks.timings.append(time.perf_counter() - t0)
        t = self.proto.transport
        if not t.is_closing():
            extra = b"" if stored is None else b"x-hookd-stored: %d\r\n" % stored
            t.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                    b"%sconnection: close\r\n\r\n%s" % (status, _REASONS[status], len(body), extra, body))
            t.close()


_REASONS = {s.value: s.phrase.encode() for s in HTTPStatus}


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


class Server(uvicorn.Server):
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
        """uvicorn's loop, without its 0.1 s tick: asleep until :meth:`handle_exit` (the only
        setter of ``should_exit`` in uvicorn 0.3x besides startup's failure, before this loop),
        then uvicorn's tick once (``should_exit``). Its once-a-second work is not needed: the
        default headers do not change (no ``date`` header, ``server_header=False``), no
        ``callback_notify`` (no supervisor) and no ``limit_max_requests``. An idle daemon is
        not woken for it."""
        self._exit_loop = asyncio.get_running_loop()
        self._exit_wake = asyncio.Event()
        while not await self.on_tick(0):
            await self._exit_wake.wait()
            self._exit_wake.clear()

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
