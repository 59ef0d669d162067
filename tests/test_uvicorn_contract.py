"""The contract between hookd.http.fastpath and uvicorn's internals, checked in-process.

hookd.http.fastpath subclasses uvicorn's private ``HttpToolsProtocol`` (overriding nine of its
methods, reading attributes its ``__init__``, ``connection_made`` and parser callbacks set) and
``uvicorn.Server`` (signals, the main loop); pyproject.toml pins uvicorn to the versions this
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
    "HttpToolsProtocol.on_body": "415b4cef19fba083",
    "HttpToolsProtocol.on_message_complete": "377f9122ee6f3ab8",
    "HttpToolsProtocol.on_response_complete": "5684fd801d0683ac",
    "HttpToolsProtocol.shutdown": "4822ef10fa982b12",
    "RequestResponseCycle.__init__": "459bebd3022b64c2",
    "RequestResponseCycle.send": "cfc84491029529db",
    "FlowControl.__init__": "56685b6831683d3d",
    "FlowControl.pause_reading": "0c34066c765b8da2",
    "FlowControl.resume_reading": "06e36d83841b63db",
    "Server.__init__": "577a47d14dacbc1d",
    "Server.serve": "20557f5f925b5a3c",
    "Server.main_loop": "425d26add0e59678",
    "Server.on_tick": "371ccecb27e5e5d4",
    "Server.shutdown": "9f8a90ed456dcfee",
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
owners = {"HttpToolsProtocol": HttpToolsProtocol, "RequestResponseCycle": RequestResponseCycle,
          "FlowControl": FlowControl, "Server": uvicorn.Server}
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
        "HttpToolsProtocol.on_headers_complete", "HttpToolsProtocol.on_body",
        "HttpToolsProtocol.on_message_complete", "HttpToolsProtocol.data_received",
        "HttpToolsProtocol.connection_lost", "HttpToolsProtocol.eof_received", "HttpToolsProtocol.shutdown",
        "Server.handle_exit", "Server.main_loop", "Server.capture_signals"])
    assert list(inspect.signature(HttpToolsProtocol.__init__).parameters) == [
        "self", "config", "server_state", "app_state", "_loop"]
    assert list(inspect.signature(uvicorn.Server.on_tick).parameters) == ["self", "counter"]
    assert list(inspect.signature(FlowControl).parameters) == ["transport"]


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
    """Enough of an asyncio transport for the protocol: records what is written."""

    def __init__(self, sockname: Any) -> None:
        self.sockname, self.out, self.closed, self.eof, self.paused = sockname, bytearray(), False, False, False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": self.sockname}.get(name, default)

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


class _Core:
    fast_hooks = 0
    fast_hooks_resumed = 0


class _Hooks:
    """A stand-in for hookd.http.hooks.HookPath: what the fast path calls of it."""

    body_timeout_s = 30.0
    timings = None

    def __init__(self) -> None:
        self.core = _Core()
        self.seen: list[tuple[str, bytes, str]] = []

    async def plain(self, path: str, headers: list, raw: bytes, *, ended: str = "whole") -> tuple[int, bytes, None]:
        self.seen.append((path, raw, ended))
        return 200, b'{"ok":true}', None


async def _asgi_app(scope: dict, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _protocol(hooks: _Hooks, sockname: Any) -> tuple[Any, _Transport]:
    cls = fastpath.protocol(hooks, "/run/hookd.sock", Settings())  # type: ignore[arg-type]
    config = uvicorn.Config(_asgi_app, http=cls, lifespan="off", log_level="warning")
    config.load()
    assert config.http_protocol_class is cls  # a class given as http= is used as it is
    proto = cls(config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop())
    transport = _Transport(sockname)
    proto.connection_made(transport)
    return proto, transport


def test_a_plain_hook_on_a_unix_socket_is_answered_by_the_fast_path() -> None:
    """Driven through uvicorn's own parser callbacks: the hook never reaches ASGI."""
    async def run() -> None:
        hooks = _Hooks()
        proto, transport = _protocol(hooks, "/run/hookd.sock")
        assert proto.server == ("/run/hookd.sock", None) and proto in proto.connections
        body = b'{"hook_event_name":"Stop"}'
        proto.data_received(b"POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        assert hooks.seen == [("/v1/hooks/claude-code/b1", body, "whole")]
        assert transport.out.startswith(b"HTTP/1.1 200 OK\r\n") and transport.out.endswith(b'{"ok":true}')
        assert transport.closed and proto.cycle is None and not proto.tasks
    asyncio.run(run())


def test_other_requests_take_uvicorns_asgi_cycle_and_a_held_hook_half_closes() -> None:
    async def run() -> None:
        hooks = _Hooks()
        proto, transport = _protocol(hooks, ("127.0.0.1", 4242))
        proto.data_received(b"POST /v1/hooks/claude-code/b1/hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                            b"Content-Length: 2\r\n\r\n{}")
        assert hooks.seen == []
        assert isinstance(proto.cycle, RequestResponseCycle) and proto.cycle.scope["path"].endswith("/hold")
        assert isinstance(proto.cycle.transport, fastpath._HalfClose)
        assert proto.cycle.scope["extensions"]["hookd.reply_read"]["future"] is proto._reply_read
        await asyncio.wait(proto.tasks)
        assert transport.out.startswith(b"HTTP/1.1 204 No Content\r\n")
        assert transport.eof and not transport.closed  # written, half-closed: the client's close tells
        proto.eof_received()
        assert proto._reply_read.result() is True
    asyncio.run(run())


def test_an_unparsable_request_gets_the_one_error_shape() -> None:
    async def run() -> None:
        proto, transport = _protocol(_Hooks(), "/run/hookd.sock")
        proto.data_received(b"NOT HTTP\r\n\r\n")
        assert transport.out.startswith(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n")
        assert b'"code":"bad_request"' in transport.out and transport.closed
    asyncio.run(run())


def test_the_module_is_uvicorns_httptools_one() -> None:
    assert fastpath.HttpToolsProtocol is httptools_impl.HttpToolsProtocol


if __name__ == "__main__":  # print the fingerprints of the installed uvicorn
    facts = _uvicorn(list(FINGERPRINTS))
    print(f"uvicorn {facts['version']}")
    for name in FINGERPRINTS:
        print(f'    "{name}": "{facts["fingerprints"][name]}",')
    sys.exit(0)
