"""Bad input (issue 8): property-based tests (hypothesis) against a REAL daemon process over
its Unix socket, on every hook route and every REST route (enumerated from the app at test
time: tests/apiroutes.py).

Inputs: the recorded payloads (fixtures/claude-code/**/hooks) mutated (fields deleted, given
wrong types, huge strings, deep nesting, other events' names), random JSON, random bytes,
invalid UTF-8, truncated and concatenated bodies, random path parameters, query strings and
headers; plus malformed HTTP framing, truncated bodies and slow or stalled clients on raw
sockets. Asserted for every input: the daemon process never dies; every error is the one
JSON error shape with a 4xx status (a 5xx is a bug); every hook reply is a valid stdout for
its event (tests/hookoutput.py). The number of inputs tried is printed at the end of the run
(``bad-input examples tried: N``) and written to ``bench/results/bad-input.json``.

Derandomized (fixed examples, no example database): the same inputs in every run.
"""

from __future__ import annotations

import http.client
import importlib
import json
import os
import pkgutil
import socket
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hookd
from hookd.config import Home
from hookd.daemonproc import DaemonProcess, wait_until
from hookd.core.ingest import MAX_PAYLOAD

from . import hardening_stats
from .apiroutes import PATH_VALUES, RouteInfo, harnesses, hook_routes, rest_routes
from .conftest import REPO, TUI, hookd_run
from .hookoutput import check_error, check_hook_output

# one daemon for the module, and the last test checks what all the others did to it: under
# pytest-xdist the module runs on one worker, in order
pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("bad_input")]

FIXTURES = sorted((REPO / "fixtures" / "claude-code").glob("**/hooks/*.json"))
PAYLOADS = [p.read_bytes() for p in FIXTURES]
HOOK_EXAMPLES = int(os.environ.get("HOOKD_FUZZ_HOOK_EXAMPLES", "300"))
REST_EXAMPLES = int(os.environ.get("HOOKD_FUZZ_REST_EXAMPLES", "80"))
SETTINGS = settings(
    max_examples=HOOK_EXAMPLES, derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure",
          "Notification", "Stop", "SubagentStop", "PreCompact", "SessionEnd", "PostToolBatch", "MessageDisplay",
          "NoSuchEvent", ""]
#: An interaction that exists in the daemon (from the seeded scenario).
REAL_ID = "toolu_01ASK0000000000000000001"


def _request_fields() -> list[str]:
    """Every field name of every request body hookd decodes (msgspec Structs named
    ``*Request`` in hookd's modules), so that random bodies hit the real decoders."""
    names: set[str] = set()
    for mod in pkgutil.iter_modules(hookd.__path__):
        if mod.name in ("__main__", "cli"):
            continue
        try:
            m = importlib.import_module(f"hookd.{mod.name}")
        except Exception:  # noqa: BLE001 - an optional module (platform, extras)
            continue
        for obj in vars(m).values():
            if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj.__name__.endswith("Request"):
                names.update(f.encode_name for f in msgspec.structs.fields(obj))
    return sorted(names)


FIELDS = _request_fields()

# --- strategies -----------------------------------------------------------------------

#: st.text()'s own alphabet (``characters(codec="utf-8")``: every code point but the
#: surrogates) named by category instead: the same characters, so the same examples, without
#: hypothesis building the codec's table (~3 CPU-s on a fresh checkout: .hypothesis/ is not kept)
CHARS = st.characters(exclude_categories=("Cs",))


def text(max_size: int) -> st.SearchStrategy[str]:
    return st.text(CHARS, max_size=max_size)


HUGE_SIZES = (10_000, 200_000, 2_000_000)
huge_text = st.sampled_from(HUGE_SIZES).map(lambda n: "x" * n)
leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), text(max_size=40),
    st.sampled_from(["", " ", "\u0000", "\ud800", "☃" * 3, "'; DROP TABLE events; --", "$(touch /tmp/x)", "..", "%s%n"]),
    huge_text,
)
json_values = st.recursive(
    leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(text(max_size=12), c, max_size=4), max_leaves=12,
)


@st.composite
def mutated(draw: Any, obj: Any, depth: int = 0) -> Any:
    """``obj`` with one place (a random path into it) deleted, replaced or extended."""
    if isinstance(obj, dict) and obj and depth < 6 and draw(st.integers(0, 4)) > 0:
        key = draw(st.sampled_from(sorted(obj)))
        op = draw(st.sampled_from(["descend", "descend", "delete", "replace", "add"]))
        new = dict(obj)
        if op == "descend":
            new[key] = draw(mutated(obj[key], depth + 1))
        elif op == "delete":
            del new[key]
        elif op == "replace":
            new[key] = draw(json_values)
        else:
            new[draw(text(max_size=20) | st.sampled_from(FIELDS))] = draw(json_values)
        return new
    if isinstance(obj, list) and obj and depth < 6 and draw(st.integers(0, 4)) > 0:
        i = draw(st.integers(0, len(obj) - 1))
        new_list = list(obj)
        op = draw(st.sampled_from(["descend", "delete", "replace", "dup"]))
        if op == "descend":
            new_list[i] = draw(mutated(obj[i], depth + 1))
        elif op == "delete":
            del new_list[i]
        elif op == "replace":
            new_list[i] = draw(json_values)
        else:
            new_list += new_list * 3
        return new_list
    return draw(json_values)


#: huge_text's strings as JSON, encoded once: json.dumps of 2 MB takes ~10 ms, and they are
#: most of the module's encoding
_HUGE_JSON = {n: b'"' + b"x" * n + b'"' for n in HUGE_SIZES}
#: what stands in for each while the rest is encoded (a private-use code point around it: no
#: generated text is this long string)
_HUGE_MARK = {n: f"\ue000hookd-fuzz-huge-{n}\ue000" for n in HUGE_SIZES}


def _unhuge(v: Any) -> Any:
    """``v`` with each of huge_text's strings replaced by its mark."""
    if isinstance(v, str):
        return _HUGE_MARK[len(v)] if len(v) in _HUGE_MARK and v.count("x") == len(v) else v
    if isinstance(v, dict):
        return {k: _unhuge(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_unhuge(x) for x in v]
    return v


def _dumps(obj: Any) -> bytes:
    """JSON as a careless client writes it: NaN/Infinity as such, lone surrogates as (invalid)
    UTF-8 bytes. The same bytes as ``json.dumps(obj, ensure_ascii=False)`` encoded so
    (test_dumps_is_json_dumps), huge_text's strings spliced in already encoded."""
    out = json.dumps(_unhuge(obj), ensure_ascii=False).encode("utf-8", "surrogatepass")
    for n, mark in _HUGE_MARK.items():
        quoted = f'"{mark}"'.encode()
        if quoted in out:
            out = out.replace(quoted, _HUGE_JSON[n])
    return out


def _nested(depth: int, kind: str) -> bytes:
    opener, closer = ("[", "]") if kind == "list" else ('{"a":', "}")
    return (b'{"hook_event_name":"Stop","session_id":"s-deep","x":' + opener.encode() * depth + b"1"
            + closer.encode() * depth + b"}")


@st.composite
def raw_body(draw: Any, base: list[bytes]) -> bytes:
    """One request body: a (mutated) real payload or random/broken bytes."""
    src = draw(st.sampled_from(base))
    kind = draw(st.sampled_from([
        "real", "mutated", "mutated", "mutated", "event-swap", "json", "binary", "truncated", "invalid-utf8",
        "deep", "huge", "concat", "empty", "whitespace",
    ]))
    if kind == "real":
        return src
    if kind in ("mutated", "event-swap"):
        try:
            obj = json.loads(src)
        except ValueError:
            obj = {}
        if kind == "event-swap" and isinstance(obj, dict):
            obj = dict(obj, hook_event_name=draw(st.sampled_from(EVENTS) | text(max_size=10)))
        return _dumps(draw(mutated(obj)))
    if kind == "json":
        return _dumps(draw(json_values))
    if kind == "binary":
        return draw(st.binary(max_size=2000))
    if kind == "truncated":
        return src[: draw(st.integers(0, max(0, len(src) - 1)))]
    if kind == "invalid-utf8":
        at = draw(st.integers(0, len(src)))
        bad = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\x00",
                                    b"\x80\x80\x80"]) | st.binary(min_size=1, max_size=8))
        return src[:at] + bad + src[at:]
    if kind == "deep":
        return _nested(draw(st.sampled_from([64, 1000, 20_000, 200_000])), draw(st.sampled_from(["list", "dict"])))
    if kind == "huge":
        try:
            obj = json.loads(src)
        except ValueError:
            obj = {}
        if isinstance(obj, dict):
            obj[draw(st.sampled_from(sorted(obj) or ["x"]))] = draw(huge_text)
        return _dumps(obj)
    if kind == "concat":
        return src + draw(st.sampled_from(base))
    if kind == "whitespace":
        return b" \n\t\r" * draw(st.integers(1, 100))
    return b""


def _sanitize(v: Any) -> Any:
    """Keep random bodies from asking for real harm the API allows its local user: following
    every transcript under / (a path), waiting minutes (timeouts)."""
    if isinstance(v, str) and v.startswith("/"):
        return "/nonexistent-hookd-fuzz" + v
    if isinstance(v, dict):
        out = {k: _sanitize(x) for k, x in v.items()}
        for k in ("timeout_s",):
            if isinstance(out.get(k), (int, float)) and not isinstance(out.get(k), bool) and out[k] > 0.2:
                out[k] = 0.2
        return out
    if isinstance(v, list):
        return [_sanitize(x) for x in v]
    return v


@st.composite
def rest_body(draw: Any) -> bytes:
    kind = draw(st.sampled_from(["fields", "fields", "fields", "json", "binary", "truncated", "deep", "empty", "huge"]))
    if kind == "fields":
        obj = draw(st.dictionaries(st.sampled_from(FIELDS) | text(max_size=8), json_values, max_size=6))
        if draw(st.booleans()) and obj:
            obj = draw(mutated(obj))
        return _dumps(_sanitize(obj))
    if kind == "json":
        return _dumps(_sanitize(draw(json_values)))
    if kind == "binary":
        return draw(st.binary(max_size=500))
    if kind == "truncated":
        full = _dumps(_sanitize(draw(st.dictionaries(st.sampled_from(FIELDS), json_values, min_size=1, max_size=4))))
        return full[: draw(st.integers(0, len(full) - 1))]
    if kind == "deep":
        return _nested(draw(st.sampled_from([1000, 200_000])), "list")
    if kind == "huge":
        return _dumps({draw(st.sampled_from(FIELDS)): draw(huge_text)})
    return b""


def _quote(value: str | bytes) -> str:
    return urllib.parse.quote(value, safe="")


path_value = st.one_of(
    st.just("plausible"), st.just(REAL_ID), text(max_size=30), st.sampled_from(["..", ".", "%", "a/b", "\x00", "é"]),
    st.binary(min_size=1, max_size=6),  # invalid UTF-8, percent-encoded
    st.just("y" * 5000),
)
query = st.dictionaries(
    st.sampled_from(["after", "limit", "state", "builder", "follow", "id", "ids", "code", "q"]) | text(max_size=6),
    text(max_size=12) | st.sampled_from(["-1", "0", "1e9", "99999999999999999999999", "nan", "pending", "all"]),
    max_size=4,
)
header_values = st.one_of(st.none(), st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
                          st.sampled_from(["0", "1", "2999", "-5", "abc", "١٢٣"]))

# --- the daemon ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzzd(tmp_path_factory: pytest.TempPathFactory):
    """One real daemon for the module, seeded with a spawned builder, a recorded session with
    an interaction and queued messages (so that turn-boundary hooks have something to
    return)."""
    home = tmp_path_factory.mktemp("fuzz") / "home"
    d = DaemonProcess(home).start()
    assert hookd_run(home, "spawn", "b1", "--settings-file", os.fspath(home.parent / "s.json")).returncode == 0
    c = _client(home)
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "007-PreToolUse.json"):
        assert c.post("/v1/hooks/claude-code/b1", content=(TUI / name).read_bytes()).status_code == 200
    for i, text in enumerate(["hello", "quotes \" ' ` $(x) \\", "☃ unicode 木", "x" * 7000, "line\nbreaks\r\n"] * 6):
        assert c.post("/v1/builders/b1/messages", json={"text": f"{i} {text}"}).status_code == 201
    yield d
    c.close()
    d.stop()
    d.kill()


def _client(home: Path) -> httpx.Client:
    # verify=False: no certificates to load (~50 ms a client) for a Unix socket
    return httpx.Client(transport=httpx.HTTPTransport(uds=os.fspath(Home.resolve(home).socket_path), verify=False),
                        base_url="http://hookd", timeout=15)


@pytest.fixture(scope="module")
def client(fuzzd: DaemonProcess):
    c = _client(fuzzd.home.root)
    yield c
    c.close()


class UnixHTTP(http.client.HTTPConnection):
    """The standard library's HTTP/1.1 client on the daemon's Unix socket (one keep-alive
    connection, reopened when closed): the generated requests go through it. httpx checks
    every character of a URL in Python, which was most of this module's client time with the
    long generated paths; here the request line is checked by one regular expression."""

    def __init__(self, path: str) -> None:
        super().__init__("hookd", timeout=15)
        self.unix_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


@pytest.fixture(scope="module")
def raw_client(fuzzd: DaemonProcess):
    c = UnixHTTP(os.fspath(Home.resolve(fuzzd.home.root).socket_path))
    yield c
    c.close()


class ReadTimeout(Exception):
    """No reply within the call's timeout (the request was sent)."""


def _call(c: UnixHTTP, method: str, path: str, *, content: Any = None, headers: Any = None,
          params: dict[str, str] | None = None, timeout: float = 15) -> tuple[int, str, bytes]:
    """One request (``content``: bytes, sent with a Content-Length, or an iterator of bytes,
    sent chunked; ``timeout`` seconds per socket operation); returns the status, the
    content type and the body (of an endless event stream: its first bytes)."""
    if params:
        path += "?" + urllib.parse.urlencode(params)
    c.timeout = timeout
    if c.sock is not None:
        c.sock.settimeout(timeout)
    sent = True
    try:
        c.request(method, path, body=content, headers=headers or {})
    except (BrokenPipeError, ConnectionResetError):
        sent = False  # refused mid-body: what it said is read below
    try:
        r = c.getresponse()
        ct = r.getheader("content-type", "")
        stream = ct.startswith("text/event-stream")
        body = r.read1(65536) if stream else r.read()
    except TimeoutError:
        c.close()
        raise ReadTimeout(f"{method} {path[:200]}") from None
    except BaseException:
        c.close()
        raise
    if stream or not sent:
        c.close()
    return r.status, ct, body


def _alive(d: DaemonProcess) -> None:
    assert d.proc is not None and d.proc.poll() is None, f"the daemon died: {d.log.read_text()[-3000:]}"


def _event_of(raw: bytes) -> Any:
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return obj.get("hook_event_name") if isinstance(obj, dict) else None


def _is_wake_stop(harness: str, raw: bytes) -> bool:
    """Would /wake rightly wait on this payload (a Stop with a session id)?"""
    from hookd.harness.registry import ADAPTERS

    adapter = ADAPTERS.get(harness)
    try:
        p = adapter.parse(raw, builder="b", cwd=None) if adapter is not None and adapter.idle_wake else None
    except Exception:  # noqa: BLE001
        return False
    return p is not None and getattr(p, "hook_event_name", None) == "Stop" and bool(getattr(p, "session_id", None))


# --- hook routes ----------------------------------------------------------------------

HOOKS = hook_routes()


@pytest.mark.parametrize("route", HOOKS, ids=str)
def test_hook_routes_answer_any_input_with_a_valid_reply_or_one_error_shape(route: RouteInfo, fuzzd: DaemonProcess,
                                                                            raw_client: UnixHTTP) -> None:
    wake = route.template.endswith("/wake")

    @SETTINGS
    @given(body=raw_body(PAYLOADS), harness=st.sampled_from(harnesses()) | st.sampled_from(["", "nosuch", "CLAUDE"]),
           builder=st.sampled_from(["b1", "b1", "b1", "fuzz-2"]) | path_value,
           delivery=header_values, deadline=header_values, pid=header_values,
           chunked=st.booleans())
    def run(body: bytes, harness: str, builder: Any, delivery: Any, deadline: Any, pid: Any, chunked: bool) -> None:
        hardening_stats.tried(str(route))
        b = PATH_VALUES["builder"] if builder == "plausible" else builder
        path = route.path(harness=_quote(harness) or "x", builder=_quote(b) if b else "")
        headers = {}
        for name, v in (("X-Hookd-Delivery", delivery), ("X-Hookd-Deadline-Ms", deadline), ("X-Hookd-Agent-Pid", pid)):
            if v is not None:
                headers[name] = v.strip().encode("utf-8")  # (h11 refuses padded values)
        content: Any = body
        if chunked:  # streamed like the bash client: chunked transfer encoding, in pieces
            content = iter([body[i:i + 997] for i in range(0, len(body), 997)] or [b""])
        try:
            status, ct, reply = _call(raw_client, "POST", path, content=content, headers=headers,
                                      timeout=2 if wake else 15)
        except ReadTimeout:
            # only an idle wake may wait (for a message): on a real Stop of a session
            assert wake and _is_wake_stop(harness, body), (path, body[:200])
            _alive(fuzzd)
            return
        _alive(fuzzd)
        if status >= 400:
            check_error(status, ct, reply)
            return
        assert status == 200, (status, reply[:200])
        if wake:
            assert reply == b"" or reply.decode("utf-8")  # the framed messages, for stderr
        else:
            check_hook_output(_event_of(body), reply)

    run()


# --- REST routes ----------------------------------------------------------------------

REST = rest_routes()


@pytest.mark.parametrize("route", REST, ids=str)
def test_rest_routes_answer_any_input_with_json_or_one_error_shape(route: RouteInfo, fuzzd: DaemonProcess,
                                                                   raw_client: UnixHTTP) -> None:
    @settings(SETTINGS, max_examples=REST_EXAMPLES)
    @given(values=st.fixed_dictionaries({p: path_value for p in route.params()}), params=query,
           # a GET is sent without a body: none is made for it
           body=rest_body() if route.method != "GET" else st.just(b""),
           ctype=st.sampled_from([None, "application/json", "text/plain", "multipart/form-data"]))
    def run(values: dict[str, Any], params: dict[str, str], body: bytes, ctype: str | None) -> None:
        hardening_stats.tried(str(route))
        filled = {k: (PATH_VALUES.get(k, "x") if v == "plausible" else _quote(v) or "x") for k, v in values.items()}
        path = route.path(**filled)
        if params.get("follow", "").lower() in ("1", "true", "yes"):
            params["follow"] = "0"  # (an endless stream by request: not bad input)
        headers = {"content-type": ctype} if ctype else {}
        status, ct, reply = _call(raw_client, route.method, path, params=params, headers=headers,
                                  content=body if route.method != "GET" else None)
        _alive(fuzzd)
        if status >= 400:
            check_error(status, ct, reply)
            return
        assert status < 400, (status, reply[:200])
        if ct.startswith("application/json"):
            json.loads(reply)
        elif ct.startswith("application/x-ndjson"):
            for line in reply.splitlines():
                json.loads(line)

    run()


def test_dumps_is_json_dumps() -> None:
    """_dumps splices huge_text's strings in already encoded: the bytes are json.dumps's."""
    nan, surrogate = float("nan"), "a\ud800b"
    cases: list[Any] = [
        {"a": "x" * n, "b": [1, nan, surrogate, {"c": "x" * m}], "x" * 3: "☃"}
        for n in HUGE_SIZES for m in HUGE_SIZES]
    cases += ["x" * HUGE_SIZES[0], ["x" * (HUGE_SIZES[0] - 1), "x" * HUGE_SIZES[0] + "y"], {}, None, 1e400,
              {"k": "y" * HUGE_SIZES[0]}]
    for obj in cases:
        assert _dumps(obj) == json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")


# --- raw sockets: framing, truncation, slow and stalled clients -------------------------


def _raw(home: Path, data: bytes, *, shut: bool = True, timeout: float = 10) -> bytes:
    """Send ``data`` on a fresh Unix-socket connection, optionally end our side, read the
    reply until the daemon closes (or ``timeout``)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(os.fspath(Home.resolve(home).socket_path))
    try:
        try:
            s.sendall(data)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused mid-send: what it said is read below
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return out
    finally:
        s.close()


def _reply(raw: bytes) -> tuple[int, str, bytes] | None:
    if not raw:
        return None
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if hdrs.get("transfer-encoding") == "chunked":
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size, 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    elif "content-length" in hdrs:
        body = body[: int(hdrs["content-length"])]
    return status, hdrs.get("content-type", ""), body


PAYLOAD = (TUI / "001-SessionStart.json").read_bytes()
HOOK = b"POST /v1/hooks/claude-code/b1 HTTP/1.1\r\nHost: hookd\r\n"
FRAMING = {
    "garbage": b"\x00\xff\x16\x03\x01 hello\r\n\r\n",
    "tls-hello": bytes.fromhex("160301020001000200030300") + os.urandom(64),
    "no-version": b"GET /v1/status\r\n\r\n",
    "http-0.9": b"GET /v1/status HTTP/0.9\r\n\r\n",
    "bad-method": b"G\x00T /v1/status HTTP/1.1\r\nHost: x\r\n\r\n",
    "space-in-path": b"GET /v1/st atus HTTP/1.1\r\nHost: x\r\n\r\n",
    "non-ascii-path": "GET /v1/interactions/é HTTP/1.1\r\nHost: x\r\n\r\n".encode(),
    "invalid-utf8-path": b"GET /v1/interactions/%ff%fe\xff HTTP/1.1\r\nHost: x\r\n\r\n",
    "nul-in-header": b"GET /v1/status HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
    "bad-header-line": b"GET /v1/status HTTP/1.1\r\nHost x\r\n\r\n",
    "huge-header": b"GET /v1/status HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 2_000_000 + b"\r\n\r\n",
    "many-headers": b"GET /v1/status HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 20_000 + b"\r\n",
    "huge-url": b"GET /v1/interactions/" + b"a" * 1_000_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    "bad-content-length": HOOK + b"Content-Length: abc\r\n\r\n" + PAYLOAD,
    "negative-content-length": HOOK + b"Content-Length: -5\r\n\r\n" + PAYLOAD,
    "two-content-lengths": HOOK + b"Content-Length: 5\r\nContent-Length: 9\r\n\r\n" + PAYLOAD,
    "cl-and-chunked": HOOK + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + PAYLOAD,
    "bad-chunk-size": HOOK + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" + PAYLOAD + b"\r\n0\r\n\r\n",
    "huge-chunk-size": HOOK + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n" + PAYLOAD,
    "chunk-shorter-than-said": HOOK + b"Transfer-Encoding: chunked\r\n\r\n2000\r\n" + PAYLOAD + b"\r\n0\r\n\r\n",
    "unknown-transfer-encoding": HOOK + b"Transfer-Encoding: gzip\r\n\r\n" + PAYLOAD,
    "expect-100": HOOK + b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(PAYLOAD) + PAYLOAD,
    "upgrade-websocket": b"GET /v1/status HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    "pipelined-garbage": b"GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n\x00\x01garbage\r\n\r\n",
}


@pytest.mark.parametrize("name", list(FRAMING), ids=list(FRAMING))
def test_malformed_http_gets_one_error_shape_or_a_close(name: str, fuzzd: DaemonProcess) -> None:
    hardening_stats.tried("raw: malformed HTTP")
    out = _raw(fuzzd.home.root, FRAMING[name])
    _alive(fuzzd)
    if name == "upgrade-websocket" and out.startswith(b"HTTP/1.1 200"):
        return  # served as a plain GET: the upgrade header is ignored
    for part in _split_replies(out):
        rep = _reply(part)
        assert rep is not None
        status, ct, body = rep
        if status == 100:
            continue
        if status < 400:
            continue  # the parser was lenient and served it as a request: fine
        check_error(status, ct, body)
    assert _client(fuzzd.home.root).get("/v1/status").status_code == 200


def _split_replies(raw: bytes) -> list[bytes]:
    """Replies on one connection (pipelining): split on the status line."""
    if not raw:
        return []
    parts = raw.split(b"HTTP/1.1 ")
    return [b"HTTP/1.1 " + p for p in parts if p]


def test_truncated_bodies_are_kept_raw_and_the_daemon_serves_on(fuzzd: DaemonProcess, client: httpx.Client) -> None:
    before = client.get("/v1/status").json()["counts"]["hook_events"]
    cases = [
        HOOK + b"Content-Length: 5000\r\n\r\n" + PAYLOAD[:100],
        HOOK + b"Transfer-Encoding: chunked\r\n\r\n64\r\n" + PAYLOAD[:100] + b"\r\n",
        HOOK + b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(PAYLOAD) + PAYLOAD[:50],
        HOOK + b"Content-Length: 10\r\n",  # headers never finished
        HOOK[:20],
    ]
    for data in cases:
        hardening_stats.tried("raw: truncated body")
        _raw(fuzzd.home.root, data)
        _alive(fuzzd)
    # the three whose headers arrived are stored raw (hook_invalid), nothing else
    wait_until(lambda: client.get("/v1/status").json()["counts"]["hook_events"] == before + 3, 60,
               what="the truncated payloads to be stored raw")


def test_oversized_payload_is_refused_with_413(fuzzd: DaemonProcess) -> None:
    hardening_stats.tried("raw: oversized payload")
    big = b'{"hook_event_name":"Stop","x":"' + b"a" * (MAX_PAYLOAD + 10) + b'"}'
    out = _raw(fuzzd.home.root, HOOK + b"Content-Length: %d\r\n\r\n" % len(big) + big, timeout=60)
    rep = _reply(out)
    assert rep is not None
    err = check_error(*rep)
    assert rep[0] == 413 and err["code"] == "payload_too_large"
    _alive(fuzzd)


def test_slow_and_stalled_clients_do_not_hold_up_others(fuzzd: DaemonProcess, client: httpx.Client) -> None:
    """20 clients trickle a hook body 4 bytes per 10 ms (chunked, as a slow stdin is
    streamed) and hold back its last bytes, 50 stall after half their headers and 50 after
    half their body; meanwhile 100 status requests and 100 hooks are served. Then the slow
    ones finish and are stored too."""
    home = fuzzd.home.root
    sock_path = os.fspath(Home.resolve(home).socket_path)
    stalled: list[socket.socket] = []
    for i in range(100):
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock_path)
        if i % 2:
            s.sendall(HOOK[:30])
        else:
            s.sendall(HOOK + b"Content-Length: %d\r\n\r\n" % len(PAYLOAD) + PAYLOAD[: len(PAYLOAD) // 2])
        stalled.append(s)
    mid = threading.Barrier(21)  # the 20 slow clients and this test
    release = threading.Event()
    replies: list[bytes] = []
    lock = threading.Lock()

    def trickle(i: int) -> None:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(sock_path)
        s.sendall(HOOK + b"X-Hookd-Delivery: slow-%d\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n" % i)
        body, last = PAYLOAD.rstrip(), PAYLOAD[len(PAYLOAD.rstrip()) - 1:]
        try:
            for j in range(0, len(body) - 1, 4):
                piece = body[j:min(j + 4, len(body) - 1)]
                s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                time.sleep(0.01)
                if j == 0:
                    mid.wait(30)
            release.wait(60)
            s.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last))
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered and closed as soon as the object was complete
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        s.close()
        with lock:
            replies.append(out)

    threads = [threading.Thread(target=trickle, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    served = 0
    try:
        mid.wait(30)  # every slow client is mid-body
        for i in range(100):
            hardening_stats.tried("raw: slow clients")
            assert client.get("/v1/status").status_code == 200
            r = client.post("/v1/hooks/claude-code/b1", content=(TUI / "004-PreToolUse.json").read_bytes(),
                            headers={"X-Hookd-Delivery": f"fast-{i}"})
            assert r.status_code == 200
            served += 2
        with lock:
            assert not replies, "a slow client was answered before its body was complete"
    finally:
        release.set()
        for t in threads:
            t.join(60)
        for s in stalled:
            s.close()
    assert served == 200 and len(replies) == 20
    assert all(r.startswith(b"HTTP/1.1 200 ") for r in replies), [r[:40] for r in replies]
    _alive(fuzzd)


# --- after everything -----------------------------------------------------------------


def test_zz_daemon_survived_everything_and_logged_no_internal_error(fuzzd: DaemonProcess, client: httpx.Client) -> None:
    _alive(fuzzd)
    st_ = client.get("/v1/status").json()
    assert st_["pid"] == fuzzd.proc.pid and st_["counts"]["hook_events"] > 100
    log = fuzzd.log.read_text(errors="replace")
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
    counts = hardening_stats.counts()
    assert sum(counts.values()) > 0
    hardening_stats.write()
