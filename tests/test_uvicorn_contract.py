"""The contract between hookd.http.fastpath and uvicorn's internals, checked in-process.

hookd.http.fastpath subclasses uvicorn's private ``HttpToolsProtocol`` (overriding six of its
methods, reading attributes its ``__init__``, ``connection_made`` and parser callbacks set) and
``uvicorn.Server`` (signals, the main loop); its own ``HookProtocol`` is made by uvicorn's server
with that protocol's arguments, is asked to stop and waited for by its graceful shutdown, and
hands connections to the subclass. pyproject.toml pins uvicorn to the versions this
was tested with. These tests fail when a newer uvicorn changes one of those internals: a name,
a signature, an attribute, or the source of a method the fast path overrides, copies or relies
on (FINGERPRINTS). Before widening the pin: read what changed in each method named, check
hookd/http/fastpath.py against it, run tests/test_fastpath.py, then record the new
fingerprints here (``python tests/test_uvicorn_contract.py`` prints them).
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http import httptools_impl
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from hookd.http import fastpath
from hookd.settings import Settings

#: uvicorn's internals the fast path depends on, with the sha256 (first 16 hex digits) of each
#: one's source in the pinned versions (0.54.0).
FINGERPRINTS = {
    "HttpToolsProtocol.__init__": "264f2f06759670d4",
    "HttpToolsProtocol.connection_made": "ba1915817ccf6c1b",
    "HttpToolsProtocol.connection_lost": "21bb5222b35990e7",
    "HttpToolsProtocol.eof_received": "cf1db74cbefe2709",
    "HttpToolsProtocol.data_received": "02c2572f1df55907",
    "HttpToolsProtocol.send_400_response": "0b0d3ace8d263788",
    "HttpToolsProtocol.on_message_begin": "0efab6f9456c4987",
    "HttpToolsProtocol.on_url": "4670fe11c5fd5028",
    "HttpToolsProtocol.on_header": "374f1e380c062750",
    "HttpToolsProtocol.on_headers_complete": "7e259152e5aade71",
    "HttpToolsProtocol._start_asgi_task": "2ab8b185c1a9b25b",
    "HttpToolsProtocol.on_response_complete": "5684fd801d0683ac",
    "RequestResponseCycle.__init__": "459bebd3022b64c2",
    "RequestResponseCycle.send": "cfc84491029529db",
    "FlowControl.__init__": "56685b6831683d3d",
    "FlowControl.resume_reading": "06e36d83841b63db",
    "Server.__init__": "577a47d14dacbc1d",
    "Server.serve": "20557f5f925b5a3c",
    "Server.main_loop": "425d26add0e59678",
    "Server.on_tick": "371ccecb27e5e5d4",
    "Server.startup": "61dd959a73fc3de8",
    "Server.shutdown": "9f8a90ed456dcfee",
    "Server._wait_tasks_to_complete": "1a1914c408f5b2d6",
    "ServerState.__init__": "5696c8f9d56a74fc",
    "Server.capture_signals": "85d29b580603d413",
    "Server.handle_exit": "b31a1f2364655748",
}

#: Read in a fresh interpreter that imports only uvicorn: in the test run, other libraries may
#: have replaced uvicorn's methods by then (sse-starlette wraps ``Server.handle_exit`` at its
#: import), and it is uvicorn's own code this contract is about.
_PROBE = r"""
import hashlib, inspect, json, sys, textwrap
import uvicorn
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState
owners = {"HttpToolsProtocol": HttpToolsProtocol, "RequestResponseCycle": RequestResponseCycle,
          "FlowControl": FlowControl, "Server": uvicorn.Server, "ServerState": ServerState}
fingerprints, signatures = {}, {}
for name in json.loads(sys.argv[1]):
    owner, attr = name.split(".")
    member = getattr(owners[owner], attr, None)
    if member is None:
        fingerprints[name] = signatures[name] = None
        continue
    fn = inspect.unwrap(member)
    fingerprints[name] = hashlib.sha256(textwrap.dedent(inspect.getsource(fn)).encode()).hexdigest()[:16]
    signatures[name] = list(inspect.signature(fn).parameters)
print(json.dumps({"version": uvicorn.__version__, "fingerprints": fingerprints, "signatures": signatures}))
"""


def _uvicorn(names: list[str]) -> dict[str, Any]:
    """{version, fingerprints: {name: sha256[:16] | None}, signatures: {name: [params] | None}}
    of uvicorn's own ``Class.method`` names, read by a fresh interpreter."""
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(names)], capture_output=True, text=True,
                       timeout=120, check=True)
    return json.loads(r.stdout)


def test_the_internals_the_fast_path_uses_are_unchanged() -> None:
    facts = _uvicorn(list(FINGERPRINTS))
    changed = [n for n, fp in FINGERPRINTS.items() if facts["fingerprints"][n] != fp]
    assert not changed, (
        f"uvicorn {facts['version']} changed internals hookd/http/fastpath.py relies on: {changed}. "
        "Check the fast path against them (see this module's docstring) before widening the pin.")


def test_every_overridden_method_is_one_of_uvicorn_with_the_same_signature() -> None:
    """Each method the fast path's protocol and server override exists in uvicorn with the
    parameters the override takes (a renamed or re-shaped method would be silently bypassed)."""
    pairs = [(fastpath.HttpProtocol, HttpToolsProtocol), (fastpath.Server, uvicorn.Server)]
    mine = {f"{theirs.__name__}.{name}": list(inspect.signature(inspect.unwrap(member)).parameters)
            for ours, theirs in pairs for name, member in vars(ours).items()
            if callable(member) and not name.startswith("__") and name != "reply_sent"}  # (hookd's own)
    base = _uvicorn(sorted(mine))["signatures"]
    for name, params in mine.items():
        assert base[name] is not None, f"{name} is gone"
        assert params == base[name], name
    overridden = list(mine)
    assert sorted(overridden) == sorted([
        "HttpToolsProtocol.connection_made", "HttpToolsProtocol.send_400_response",
        "HttpToolsProtocol.on_headers_complete", "HttpToolsProtocol.data_received",
        "HttpToolsProtocol.connection_lost", "HttpToolsProtocol.eof_received",
        "Server.handle_exit", "Server.main_loop", "Server.capture_signals"])
    assert list(inspect.signature(HttpToolsProtocol.__init__).parameters) == [
        "self", "config", "server_state", "app_state", "_loop"]
    assert list(inspect.signature(uvicorn.Server.on_tick).parameters) == ["self", "counter"]
    assert list(inspect.signature(FlowControl).parameters) == ["transport"]


def test_uvicorn_makes_asks_and_waits_for_the_hook_protocol_as_its_own() -> None:
    """HookProtocol is made by uvicorn's server with the arguments it gives its protocol class,
    answers ``shutdown()`` as uvicorn's graceful shutdown calls it on each connection, and is
    waited for through the server state's ``connections`` and ``tasks``."""
    startup = inspect.getsource(uvicorn.Server.startup)
    assert "config.http_protocol_class(" in startup
    assert all(f"{k}=" in startup for k in ("config", "server_state", "app_state", "_loop"))
    assert list(inspect.signature(fastpath.HookProtocol.__init__).parameters) == [
        "self", "config", "server_state", "app_state", "_loop"]
    assert "connection.shutdown()" in inspect.getsource(uvicorn.Server.shutdown)
    waits = inspect.getsource(uvicorn.Server._wait_tasks_to_complete)
    assert "self.server_state.connections" in waits and "self.server_state.tasks" in waits
    assert {"connections", "tasks"} <= _assigned(ServerState.__init__)
    assert list(inspect.signature(fastpath.HookProtocol.shutdown).parameters) == ["self"]


def _assigned(fn: Any) -> set[str]:
    """The ``self.<name>`` attributes ``fn`` assigns."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    out = set()
    for node in ast.walk(tree):
        for target in getattr(node, "targets", []) + ([node.target] if isinstance(node, ast.AnnAssign) else []):
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    out.add(t.attr)
    return out


def test_the_unix_connection_made_sets_what_uvicorns_sets() -> None:
    """The fast path's connection_made for a Unix socket is uvicorn's less its socket calls: it
    must set every attribute uvicorn's sets (and add the protocol to ``connections``)."""
    assert _assigned(HttpToolsProtocol.connection_made) == {"transport", "flow", "server", "client", "scheme"}
    assert _assigned(fastpath.HttpProtocol.connection_made) >= {"transport", "flow", "server", "client", "scheme"}
    assert "self.connections.add(self)" in inspect.getsource(HttpToolsProtocol.connection_made)
    init = _assigned(HttpToolsProtocol.__init__)
    assert {"config", "loop", "parser", "connections", "tasks", "transport", "flow", "server", "headers",
            "expect_100_continue", "cycle"} <= init, init
    assert "url" in _assigned(HttpToolsProtocol.on_message_begin)
    assert {"transport", "scope"} <= _assigned(RequestResponseCycle.__init__)


class _Transport:
    """Enough of an asyncio transport for the protocols: records what is written, and which
    protocol it hands what it reads to (``set_protocol``)."""

    def __init__(self, sockname: Any) -> None:
        self.sockname, self.out, self.closed, self.eof, self.paused = sockname, bytearray(), False, False, False
        self.protocol: Any = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": self.sockname}.get(name, default)

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol

    def write(self, data: bytes) -> None:
        self.out += data

    def write_eof(self) -> None:
        self.eof = True

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def feed(self, data: bytes) -> None:
        """Hand ``data`` to the connection's protocol, as the event loop does."""
        self.protocol.data_received(data)


class _Core:
    fast_hooks = 0
    fast_hooks_resumed = 0


class _Hooks:
    """A stand-in for hookd.http.hooks.HookPath: what the fast path calls of it."""

    body_timeout_s = 30.0
    timings = None

    def __init__(self, gate: "asyncio.Future[None] | None" = None) -> None:
        self.core = _Core()
        self.seen: list[tuple[str, bytes, str]] = []
        self.gate = gate  # awaited before each reply (a hook that waits for a group commit)

    async def plain(self, path: str, headers: list, raw: bytes, *, ended: str = "whole") -> tuple[int, bytes, None]:
        self.seen.append((path, raw, ended))
        if self.gate is not None:
            await self.gate
        return 200, b'{"ok":true}', None


async def _asgi_app(scope: dict, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _connection(hooks: _Hooks, sockname: Any, settings: Settings | None = None) -> tuple[ServerState, _Transport]:
    """A connection made as uvicorn's server makes one (its protocol class, its arguments)."""
    cls = fastpath.protocol(hooks, "/run/hookd.sock", settings or Settings())  # type: ignore[arg-type]
    config = uvicorn.Config(_asgi_app, http=cls, lifespan="off", log_level="warning")
    config.load()
    assert config.http_protocol_class is cls  # a class given as http= is used as it is
    state = ServerState()
    proto = cls(config=config, server_state=state, app_state={}, _loop=asyncio.get_running_loop())
    transport = _Transport(sockname)
    transport.protocol = proto
    proto.connection_made(transport)
    return state, transport


def test_a_plain_hook_on_a_unix_socket_is_answered_by_the_fast_path() -> None:
    """Read in pieces (the head split inside a header): the hook is answered by HookProtocol
    itself and never reaches uvicorn's protocol or ASGI."""
    async def run() -> None:
        hooks = _Hooks()
        state, transport = _connection(hooks, "/run/hookd.sock")
        proto = transport.protocol
        assert isinstance(proto, fastpath.HookProtocol) and state.connections == {proto}
        body = b'{"hook_event_name":"Stop"}'
        request = (b"POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   b"X-Hookd-Delivery: d1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        for piece in (request[:20], request[20:70], request[70:]):
            transport.feed(piece)
        assert transport.protocol is proto and hooks.seen == [("/v1/hooks/claude-code/b1", body, "whole")]
        assert transport.out.startswith(b"HTTP/1.1 200 OK\r\n") and transport.out.endswith(b'{"ok":true}')
        assert transport.closed and transport.paused and not state.tasks
        proto.connection_lost(None)
        assert not state.connections
    asyncio.run(run())


def test_a_plain_hook_that_expects_100_continue_is_told_to_go_on() -> None:
    async def run() -> None:
        hooks = _Hooks()
        _, transport = _connection(hooks, "/run/hookd.sock")
        transport.feed(b"POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nConnection: close\r\nEXPECT: 100-Continue\r\n"
                       b"Content-Length: 2\r\n\r\n")
        assert transport.out == b"HTTP/1.1 100 Continue\r\n\r\n" and hooks.seen == []
        transport.feed(b"{}")
        assert hooks.seen == [("/v1/hooks/claude-code/b1", b"{}", "whole")]
        assert transport.out.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n")
    asyncio.run(run())


@pytest.mark.parametrize("after", [b"NOT HTTP\r\n\r\n", b"GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"],
                         ids=["garbage", "another-request"])
def test_bytes_after_a_plain_hook_do_not_change_its_reply(after: bytes) -> None:
    """A hook whose reply waits (a group commit) while bytes follow its request in the same
    read: the hook's 200 is the only reply, not a 400 for what followed."""
    async def run() -> None:
        gate = asyncio.get_running_loop().create_future()
        hooks = _Hooks(gate)
        state, transport = _connection(hooks, "/run/hookd.sock")
        transport.feed(b"POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"2\r\n{}\r\n0\r\n\r\n" + after)
        assert hooks.seen == [("/v1/hooks/claude-code/b1", b"{}", "whole")] and transport.out == b""
        gate.set_result(None)
        await asyncio.wait(state.tasks)
        assert transport.out.startswith(b"HTTP/1.1 200 OK\r\n") and transport.out.count(b"HTTP/1.1 ") == 1
    asyncio.run(run())


def test_a_hook_refused_mid_read_gets_its_one_reply_whatever_follows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A body over the size limit is refused (413) while the parser is still in the read;
    broken framing after it in the same read is not answered a second time."""
    monkeypatch.setattr(fastpath, "MAX_PAYLOAD", 4)

    async def run() -> None:
        hooks = _Hooks()
        _, transport = _connection(hooks, "/run/hookd.sock")
        transport.feed(b"POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"9\r\n{\"a\": 1 }\r\nzz\r\n")
        assert transport.out.startswith(b"HTTP/1.1 413 ") and transport.out.count(b"HTTP/1.1 ") == 1
        assert b'"code":"payload_too_large"' in transport.out and hooks.seen == []
    asyncio.run(run())


def test_a_whole_body_with_broken_framing_after_it_is_refused_and_stored_whole() -> None:
    """As on the ASGI path: the framing error is answered 400, and the complete object that
    arrived is stored as it is (not as a cut body) when the connection closes."""
    async def run() -> None:
        hooks = _Hooks()
        _, transport = _connection(hooks, "/run/hookd.sock")
        transport.feed(b"POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"9\r\n{\"a\": 1 }\r\nzz\r\n")
        assert transport.out.startswith(b"HTTP/1.1 400 Bad Request\r\n") and transport.closed
        transport.protocol.connection_lost(None)
        assert hooks.seen == [("/v1/hooks/claude-code/b1", b'{"a": 1 }', "whole")]
    asyncio.run(run())


@pytest.mark.parametrize("request_", [
    b"POST /v1/hooks/claude-code/b1/hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",  # keep-alive
    b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    b"POST /v1/hooks/claude-code/b1#x HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
], ids=["held-hook", "keep-alive-hook", "api", "fragment"])
def test_any_other_request_on_the_unix_socket_is_handed_to_uvicorn_with_its_bytes(request_: bytes) -> None:
    """Read in pieces: what HookProtocol read before it knew is handed over whole, and uvicorn's
    protocol (HttpProtocol) runs the request through ASGI."""
    async def run() -> None:
        hooks = _Hooks()
        state, transport = _connection(hooks, "/run/hookd.sock")
        first = transport.protocol
        cut = request_.index(b"\r\n") + 5
        transport.feed(request_[:cut])
        assert transport.protocol is first
        transport.feed(request_[cut:])
        proto = transport.protocol
        assert isinstance(proto, fastpath.HttpProtocol) and state.connections == {proto}
        assert proto.server == ("/run/hookd.sock", None)
        assert isinstance(proto.cycle, RequestResponseCycle)
        assert proto.cycle.scope["path"] == request_.split()[1].split(b"#")[0].decode()
        await asyncio.wait(state.tasks)
        assert hooks.seen == [] and transport.out.startswith(b"HTTP/1.1 204 No Content\r\n")
    asyncio.run(run())


def test_a_tcp_connection_is_handed_over_at_once_and_a_held_hook_half_closes() -> None:
    async def run() -> None:
        hooks = _Hooks()
        state, transport = _connection(hooks, ("127.0.0.1", 4242))
        proto = transport.protocol
        assert isinstance(proto, fastpath.HttpProtocol) and state.connections == {proto}
        transport.feed(b"POST /v1/hooks/claude-code/b1/hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                       b"Content-Length: 2\r\n\r\n{}")
        assert hooks.seen == []
        assert isinstance(proto.cycle, RequestResponseCycle) and proto.cycle.scope["path"].endswith("/hold")
        assert isinstance(proto.cycle.transport, fastpath._HalfClose)
        assert proto.cycle.scope["extensions"]["hookd.reply_read"]["future"] is proto._reply_read
        await asyncio.wait(state.tasks)
        assert transport.out.startswith(b"HTTP/1.1 204 No Content\r\n")
        assert transport.eof and not transport.closed  # written, half-closed: the client's close tells
        proto.eof_received()
        assert proto._reply_read.result() is True
    asyncio.run(run())


def test_without_the_fast_path_uvicorns_protocol_takes_every_connection() -> None:
    async def run() -> None:
        hooks = _Hooks()
        state, transport = _connection(hooks, "/run/hookd.sock", Settings(fastpath=False))
        proto = transport.protocol
        assert isinstance(proto, fastpath.HttpProtocol) and not isinstance(proto, fastpath.HookProtocol)
        transport.feed(b"POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                       b"Content-Length: 2\r\n\r\n{}")
        await asyncio.wait(state.tasks)
        assert hooks.seen == [] and transport.out.startswith(b"HTTP/1.1 204 No Content\r\n")
    asyncio.run(run())


@pytest.mark.parametrize("sockname", ["/run/hookd.sock", ("127.0.0.1", 4242)], ids=["unix", "tcp"])
def test_an_unparsable_request_gets_the_one_error_shape(sockname: Any) -> None:
    """From HookProtocol (the Unix socket) and from uvicorn's protocol (TCP) alike."""
    async def run() -> None:
        _, transport = _connection(_Hooks(), sockname)
        transport.feed(b"NOT HTTP\r\n\r\n")
        assert transport.out.startswith(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n")
        assert b'"code":"bad_request"' in transport.out and transport.closed
    asyncio.run(run())


def test_a_graceful_shutdown_closes_a_connection_with_no_hook_yet_and_lets_a_hook_finish() -> None:
    async def run() -> None:
        hooks = _Hooks()
        _, idle = _connection(hooks, "/run/hookd.sock")
        idle.feed(b"POST /v1/hooks/claude-code/b1 HTT")
        idle.protocol.shutdown()
        assert idle.closed
        _, reading = _connection(hooks, "/run/hookd.sock")
        reading.feed(b'POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nConnection: close\r\nContent-Length: 9\r\n\r\n{"a":')
        reading.protocol.shutdown()
        assert not reading.closed and hooks.seen == []
        reading.protocol.connection_lost(None)  # the client went away: what arrived is stored
        assert hooks.seen == [("/v1/hooks/claude-code/b1", b'{"a":', "cut")]
    asyncio.run(run())


def test_the_module_is_uvicorns_httptools_one() -> None:
    assert fastpath.HttpToolsProtocol is httptools_impl.HttpToolsProtocol


if __name__ == "__main__":  # print the fingerprints of the installed uvicorn
    facts = _uvicorn(list(FINGERPRINTS))
    print(f"uvicorn {facts['version']}")
    for name in FINGERPRINTS:
        print(f'    "{name}": "{facts["fingerprints"][name]}",')
    sys.exit(0)
