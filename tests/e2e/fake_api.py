"""A scripted fake of the Anthropic Messages API for end-to-end tests.

The real Claude Code binary is pointed at it with ``ANTHROPIC_BASE_URL``. It
binds ``127.0.0.1`` on an ephemeral port, serves ``POST /v1/messages`` as
server-sent events (or plain JSON when the request says ``"stream": false``)
and logs every request it receives so tests can assert what reached the model.

Scripts have the shape of the recorded fixtures' ``model-script.json``::

    {"turns": [{"content": [<content blocks>]}, ...],
     "fallback_text": "done",      # optional: answer once the turns are used up
     "side_text": "ok",            # optional: answer to side requests
     "main_error": {"status": 429, "type": "rate_limit_error", "message": "..."}}
                                   # optional: every main request fails so (fail_main)

Each *main* request consumes the next turn. A turn whose content holds a
``tool_use`` block ends with ``stop_reason: "tool_use"``, otherwise
``"end_turn"``. Requests carrying the header ``x-claude-code-agent-id``
(subagents) consume turns of a separate per-agent script. ``fail_main(status,
error_type, message)`` makes every main request an HTTP error with the API's
error body until it is cleared (``fail_main(None)``), for the harness's own
retries and its ``StopFailure``. Side requests that
Claude Code makes on its own (session title, topic detection, ...) are
recognised by substrings of their body and never consume a scripted turn.

A string ``{plan_file}`` anywhere in a main turn's blocks is replaced, when that turn is
served, by the plan file path the request names (plan mode's "Plan File Info": 2.1.332 picks a
random file name per session, and its ExitPlanMode reads the plan from that file).

``main_gate(n)``, when set, is called (on the server's thread, before the answer) for every
main request with the number of main requests answered before it: a test holds the main
agent's next turn there until something else happened (a background subagent finished).
"""

from __future__ import annotations

import copy
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

__all__ = ["FakeAnthropicAPI", "LoggedRequest", "classify_request", "load_script", "plan_file_of"]

DEFAULT_FALLBACK_TEXT = "done"
DEFAULT_SIDE_TEXT = "ok"
AGENT_HEADER = "x-claude-code-agent-id"

# How Claude Code 2.1.332's own side requests look (found empirically with
# this fake; see classify_request). Two families:
#  * tool-free helpers (session title, /rename, tool-use summary labels, prompt
#    hooks, agent namer): a short system prompt and NO ``tools``;
#  * forks of the main conversation (/btw, /compact, away summary, prompt
#    suggestion): the main system prompt and tools, but the LAST user message
#    carries a fixed instruction text. Matched by substring.
FORK_SIDE_MARKERS: tuple[tuple[str, str], ...] = (
    ("btw", "This is a side question from the user."),
    ("compact", "Your task is to create a detailed summary of the conversation so far"),
    ("away_summary", "The user stepped away and is coming back."),
    ("prompt_suggestion", "[SUGGESTION MODE:"),
)
TOOL_FREE_MARKERS: tuple[tuple[str, str], ...] = (
    ("title", 'Return JSON with a single "title" field'),
    ("rename", "Generate a short kebab-case name"),
    ("tool_summary", "Write a short summary label describing what these tool calls"),
)
SIDE_QUERY_BETA = "claude-code-side-query"
PLAN_FILE = "{plan_file}"
# Plan mode's system reminder in 2.1.332 names the plan file in one of these two sentences.
PLAN_FILE_RE = re.compile(r"(?:create your plan at|A plan file already exists at) (/\S+?\.md)")


@dataclass
class LoggedRequest:
    """One request the fake API received.

    Attributes:
        method: HTTP method (``"POST"``, ``"GET"``, ...).
        path: request path including any query string (``"/v1/messages?beta=true"``).
        headers: header names lower-cased -> value.
        raw: the body as received (bytes).
        body: the parsed JSON body, or ``None`` when absent or not JSON.
        kind: ``"main"``, ``"side"``, ``"subagent"`` or ``"unknown"`` (unknown path).
        side_kind: for side requests, what they are (``"title"``, ``"rename"``,
            ``"btw"``, ``"compact"``, ``"away_summary"``, ``"prompt_suggestion"``,
            ``"tool_summary"``, ``"tool_free"``, ``"side_beta"``), else ``None``.
        agent_id: value of ``x-claude-code-agent-id`` or ``None``.
        turn: index of the scripted turn served (``None`` for side/unknown
            requests and for fallback answers once the script is exhausted).
        status: HTTP status the fake answered with.
        at: ``time.monotonic()`` when the request arrived (seconds).
    """

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    kind: str = "unknown"
    side_kind: str | None = None
    agent_id: str | None = None
    turn: int | None = None
    status: int = 0
    at: float = 0.0
    _strings: str | None = field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The raw body decoded as UTF-8 (errors replaced)."""
        return self.raw.decode("utf-8", "replace")

    def strings(self) -> str:
        """Every string value (and key) of the parsed JSON body, decoded and
        joined by newlines: search this for text containing quotes or
        non-ASCII characters, which are escaped in the raw body."""
        if self._strings is None:
            parts: list[str] = []
            _walk_strings(self.body, parts)
            self._strings = "\n".join(parts)
        return self._strings

    def contains(self, needle: str) -> bool:
        """True when ``needle`` occurs in the raw body or in any decoded string
        of the JSON body (so escaped quotes or non-ASCII still match)."""
        return needle in self.text or needle in self.strings()

    def last_user_text(self) -> str:
        """All text of the last ``user`` message of a Messages request
        (text blocks and tool_result contents joined by newlines); ``""`` if none."""
        msgs = (self.body or {}).get("messages") if isinstance(self.body, dict) else None
        if not msgs:
            return ""
        for msg in reversed(msgs):
            if msg.get("role") == "user":
                return "\n".join(_texts(msg.get("content")))
        return ""

    def tail_text(self) -> str:
        """Text of every message after the last ``assistant`` message (any role:
        2.1.332 sends hook context as a ``role: "system"`` message right after
        the ``user`` tool_result message), joined by newlines."""
        msgs = self.body.get("messages") if isinstance(self.body, dict) else None
        if not msgs:
            return ""
        last_asst = max((i for i, m in enumerate(msgs)
                         if isinstance(m, dict) and m.get("role") == "assistant"), default=-1)
        return "\n".join(t for m in msgs[last_asst + 1:] if isinstance(m, dict)
                         for t in _texts(m.get("content")))

    def tool_results(self) -> dict[str, str]:
        """``{tool_use_id: result text}`` for every ``tool_result`` block in the
        request's messages (text of nested blocks joined by newlines)."""
        out: dict[str, str] = {}
        msgs = self.body.get("messages") if isinstance(self.body, dict) else None
        for msg in msgs or []:
            content = msg.get("content") if isinstance(msg, dict) else None
            if not isinstance(content, list):
                continue
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out[str(block.get("tool_use_id"))] = "\n".join(_texts(block.get("content")))
        return out

    def system_text(self) -> str:
        """The system prompt of a Messages request as one string (``""`` if none)."""
        if not isinstance(self.body, dict):
            return ""
        return "\n".join(_texts(self.body.get("system")))


def _walk_strings(obj: Any, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.append(str(k))
            _walk_strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _walk_strings(v, out)


def _texts(content: Any) -> Iterable[str]:
    """Yield every text found in a Messages ``content``/``system`` value."""
    if content is None:
        return
    if isinstance(content, str):
        yield content
        return
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                yield block
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    yield block["text"]
                if "content" in block:
                    yield from _texts(block["content"])


def load_script(script: Any) -> dict:
    """Normalise a script to ``{"turns": [...], ...}``.

    Accepts a dict with ``turns``, a plain list of turns, a list of content
    block lists, a path (str/Path) to a ``model-script.json``, or ``None``
    (no turns). Each turn becomes ``{"content": [blocks]}``; a bare string turn
    becomes one text block. Raises ``TypeError`` on any other shape.
    """
    if script is None:
        return {"turns": []}
    if isinstance(script, (str, Path)):
        script = json.loads(Path(script).read_text())
    if isinstance(script, list):
        script = {"turns": script}
    if not isinstance(script, dict) or not isinstance(script.get("turns"), list):
        raise TypeError(f"script must be {{'turns': [...]}}, got {type(script).__name__}")
    out = dict(script)
    turns = []
    for turn in script["turns"]:
        if isinstance(turn, str):
            turn = {"content": [{"type": "text", "text": turn}]}
        elif isinstance(turn, list):
            turn = {"content": turn}
        if not isinstance(turn, dict) or not isinstance(turn.get("content"), list):
            raise TypeError(f"bad turn: {turn!r}")
        turns.append(copy.deepcopy(turn))
    out["turns"] = turns
    return out


def plan_file_of(body: Any) -> str | None:
    """The plan file path a plan-mode request names (its last mention), or None."""
    found = PLAN_FILE_RE.findall(json.dumps(body))
    return json.loads(f'"{found[-1]}"') if found else None


def _with_plan_file(content: list[dict], body: Any) -> list[dict]:
    """``content`` with every ``{plan_file}`` replaced by the path ``body`` names."""
    text = json.dumps(content)
    if PLAN_FILE not in text:
        return content
    path = plan_file_of(body)
    if path is None:
        return content
    return json.loads(text.replace(PLAN_FILE, json.dumps(path)[1:-1]))


def _last_user_text(body: Any) -> str:
    msgs = body.get("messages") if isinstance(body, dict) else None
    for msg in reversed(msgs or []):
        if isinstance(msg, dict) and msg.get("role") == "user":
            return "\n".join(_texts(msg.get("content")))
    return ""


def classify_request(headers: Mapping[str, str], body: Any) -> tuple[str, str | None]:
    """Classify a ``/v1/messages`` request as ``(kind, side_kind)``.

    ``kind`` is ``"subagent"``, ``"side"`` or ``"main"``; ``side_kind`` names
    the side request (``None`` otherwise). Rules for 2.1.332, found
    empirically (match substrings, not structure):

      * header ``x-claude-code-agent-id`` present -> ``"subagent"``;
      * the last user message holds a ``FORK_SIDE_MARKERS`` text -> side
        (forks of the conversation: /btw, /compact, away summary, suggestion);
      * no ``tools`` offered -> side (tool-free helpers; labelled by
        ``TOOL_FREE_MARKERS`` in the system prompt, else ``"tool_free"``):
        Claude Code's conversation turns always offer tools;
      * ``anthropic-beta`` names ``claude-code-side-query`` -> side;
      * anything else -> ``"main"``.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    if AGENT_HEADER in lower:
        return "subagent", None
    if not isinstance(body, dict):
        return "side", "tool_free"
    last_user = _last_user_text(body)
    for name, marker in FORK_SIDE_MARKERS:
        if marker in last_user:
            return "side", name
    if not body.get("tools"):
        system = "\n".join(_texts(body.get("system")))
        for name, marker in TOOL_FREE_MARKERS:
            if marker in system:
                return "side", name
        return "side", "tool_free"
    if SIDE_QUERY_BETA in lower.get("anthropic-beta", ""):
        return "side", "side_beta"
    return "main", None


class _Script:
    """A cursor over one script's turns (not thread-safe on its own)."""

    def __init__(self, script: Any):
        self.script = load_script(script)
        self.next = 0

    def take(self) -> tuple[int | None, list[dict] | None]:
        if self.next < len(self.script["turns"]):
            idx = self.next
            self.next += 1
            return idx, copy.deepcopy(self.script["turns"][idx]["content"])
        return None, None


def wait_on(cond: threading.Condition, predicate: Callable[[], Any], timeout: float, step: float,
            what: str) -> Any:
    """``predicate()``'s first truthy value, checked each time ``cond`` is notified (and every
    ``step`` seconds); ``TimeoutError`` naming ``what`` after ``timeout`` seconds. The fakes
    notify ``cond`` on every request or message they log."""
    deadline = time.monotonic() + timeout
    with cond:
        while True:
            value = predicate()
            if value:
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what}: condition not met within {timeout}s")
            cond.wait(min(left, step))


class LoopbackServer:
    """A fake API's HTTP server on 127.0.0.1 (a free port) in a daemon thread: the subclass's
    :meth:`_handler` (a ``BaseHTTPRequestHandler`` class) answers, with ``fake`` set to this
    object. ``with`` starts and stops it. Shared by this module's fake and
    ``fake_responses.FakeResponsesAPI``."""

    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def port(self) -> int:
        """The bound TCP port (raises ``RuntimeError`` when not started)."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} not started")
        return self._server.server_address[1]

    def start(self) -> Self:
        """Bind 127.0.0.1:0 and serve in a daemon thread; returns self."""
        if self._server is not None:
            return self
        handler = type("Handler", (self._handler(),), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}-{self.port}", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeAnthropicAPI(LoopbackServer):
    """Scripted fake Anthropic Messages API on ``127.0.0.1:<ephemeral port>``.

    Args:
        script: the main agent's script (see ``load_script`` for shapes).
        subagent_scripts: ``{agent_id: script}`` for specific subagents.
        default_subagent_script: script for any subagent not listed above; each
            new agent id gets its own cursor over a copy of it.
        fallback_text: text answered once a script is exhausted (default
            ``"done"``; the script's own ``fallback_text`` wins over it).
        side_text: text answered to side requests (default ``"ok"``).
        model: model name put in responses.

    Use as a context manager or call ``start()``/``stop()``. Attributes ``url``
    (``"http://127.0.0.1:PORT"``) and ``port`` are valid once started.
    """

    def __init__(
        self,
        script: Any = None,
        *,
        subagent_scripts: Mapping[str, Any] | None = None,
        default_subagent_script: Any = None,
        fallback_text: str | None = None,
        side_text: str | None = None,
        model: str = "claude-opus-5-5",
    ):
        self._lock = threading.Condition()
        self._main = _Script(script)
        self._sub_specs = {k: load_script(v) for k, v in (subagent_scripts or {}).items()}
        self._sub_default = load_script(default_subagent_script)
        self._subs: dict[str, _Script] = {}
        self.fallback_text = (
            fallback_text or self._main.script.get("fallback_text") or DEFAULT_FALLBACK_TEXT
        )
        self.side_text = side_text or self._main.script.get("side_text") or DEFAULT_SIDE_TEXT
        self.model = model
        self.requests: list[LoggedRequest] = []
        #: called with the number of main requests answered so far before a main request is
        #: answered, on the server's thread (it may block: the request waits), or None
        self.main_gate: Callable[[int], None] | None = None
        #: (HTTP status, the API's error body) answered to every main request, or None
        self.main_error: tuple[int, dict] | None = None
        failure = self._main.script.get("main_error")
        if isinstance(failure, dict):
            self.fail_main(int(failure["status"]), failure.get("type", "api_error"), failure.get("message", "fake failure"))

    @property
    def url(self) -> str:
        """Base URL for ``ANTHROPIC_BASE_URL``, e.g. ``"http://127.0.0.1:40123"``."""
        return f"http://127.0.0.1:{self.port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    # ------------------------------------------------------------------ scripting
    def set_script(self, script: Any) -> None:
        """Replace the main script and rewind it to its first turn."""
        with self._lock:
            self._main = _Script(script)
            self.fallback_text = self._main.script.get("fallback_text") or self.fallback_text

    def fail_main(self, status: int | None, error_type: str = "api_error", message: str = "fake failure") -> None:
        """Answer every main request (no turn consumed) with HTTP ``status`` and the Messages
        API's error body ``{"type": "error", "error": {"type": error_type, "message":
        message}}`` (429 ``rate_limit_error``, 529 ``overloaded_error``, 401
        ``authentication_error``, ...); ``None`` answers normally again."""
        with self._lock:
            self.main_error = None if status is None else (
                status, {"type": "error", "error": {"type": error_type, "message": message}})

    def add_turns(self, *turns: Any) -> None:
        """Append turns (same shapes as in ``load_script``) to the main script."""
        extra = load_script(list(turns))["turns"]
        with self._lock:
            self._main.script["turns"].extend(extra)

    @property
    def turns_served(self) -> int:
        """How many main-script turns have been served so far."""
        with self._lock:
            return self._main.next

    def side_answer(self, side_kind: str | None) -> str:
        """Text answered to a side request of ``side_kind``: a ``<summary>``
        block for ``compact``, ``{"title": ...}`` JSON for ``title``, a
        kebab-case name for ``rename``, else ``side_text``."""
        if side_kind == "compact":
            return (f"<analysis>{self.side_text}</analysis>\n"
                    f"<summary>FAKE-COMPACT-SUMMARY {self.side_text}</summary>")
        if side_kind == "title":
            return json.dumps({"title": "Fake session title"})
        if side_kind == "rename":
            return "fake-session-name"
        return self.side_text

    def _answer_for(self, kind: str, agent_id: str | None,
                    side_kind: str | None = None) -> tuple[int | None, list[dict]]:
        with self._lock:
            if kind == "side":
                return None, [{"type": "text", "text": self.side_answer(side_kind)}]
            if kind == "subagent":
                cur = self._subs.get(agent_id or "")
                if cur is None:
                    spec = self._sub_specs.get(agent_id or "", self._sub_default)
                    cur = self._subs[agent_id or ""] = _Script(spec)
            else:
                cur = self._main
            idx, content = cur.take()
            if content is None:
                text = cur.script.get("fallback_text") or self.fallback_text
                content = [{"type": "text", "text": text}]
            return idx, content

    # ------------------------------------------------------------------ log queries
    def _snapshot(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self.requests)

    def messages_requests(self, kind: str | None = None) -> list[LoggedRequest]:
        """``/v1/messages`` requests in arrival order, optionally of one ``kind``
        (``"main"``, ``"side"``, ``"subagent"``)."""
        return [
            r for r in self._snapshot()
            if r.path.split("?")[0] == "/v1/messages" and (kind is None or r.kind == kind)
        ]

    def main_requests(self) -> list[LoggedRequest]:
        """Main-agent conversation requests (the ones that consume turns)."""
        return self.messages_requests("main")

    def requests_containing(self, needle: str, kind: str | None = "main") -> list[LoggedRequest]:
        """Requests whose body contains ``needle`` (substring of the raw or
        decoded JSON body). ``kind`` filters as in ``messages_requests``; pass
        ``None`` to search every logged request including unknown paths."""
        if kind is None:
            pool = self._snapshot()
        else:
            pool = self.messages_requests(kind)
        return [r for r in pool if r.contains(needle)]

    def wait_for(
        self, predicate: Callable[[FakeAnthropicAPI], Any], timeout: float = 10.0,
        interval: float = 0.02,
    ) -> Any:
        """Poll ``predicate(self)`` until it returns a truthy value, which is
        returned. Raises ``TimeoutError`` after ``timeout`` seconds."""
        return wait_on(self._lock, lambda: predicate(self), timeout, interval, "fake API")

    def wait_for_main_requests(self, n: int, timeout: float = 10.0) -> list[LoggedRequest]:
        """Wait until at least ``n`` main requests arrived; returns them all."""
        return self.wait_for(lambda a: len(a.main_requests()) >= n and a.main_requests(), timeout)

    def _log(self, req: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(req)
            self._lock.notify_all()

    # ------------------------------------------------------------------ responses
    def build_message(self, content: list[dict]) -> dict:
        """A complete Messages API response object for ``content`` blocks."""
        stop = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
        for b in content:
            if b.get("type") == "tool_use" and not b.get("id"):
                b["id"] = "toolu_" + uuid.uuid4().hex[:24]
        return {
            "id": "msg_" + uuid.uuid4().hex[:26],
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }


def sse_events(message: dict) -> Iterable[tuple[str, dict]]:
    """Yield ``(event_name, data)`` pairs streaming ``message`` the way the
    real API does (one delta per text / tool-input block)."""
    start = dict(message, content=[], stop_reason=None, stop_sequence=None,
                 usage={"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1,
                        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(message["content"]):
        btype = block.get("type")
        if btype == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        elif btype == "tool_use":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "tool_use", "id": block["id"],
                                                            "name": block["name"], "input": {}}}
            yield "content_block_delta", {
                "type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta",
                          "partial_json": json.dumps(block.get("input", {}))}}
        elif btype == "thinking":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "thinking", "thinking": "",
                                                            "signature": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "thinking_delta",
                                                    "thinking": block.get("thinking", "")}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "signature_delta",
                                                    "signature": block.get("signature", "sig")}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": block}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": message["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAnthropicAPI  # set by FakeAnthropicAPI.start()
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _record(self, raw: bytes) -> LoggedRequest:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        return LoggedRequest(
            method=self.command, path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            raw=raw, body=body, agent_id=self.headers.get(AGENT_HEADER), at=time.monotonic(),
        )

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self) -> None:
        raw = self._read_body()
        req = self._record(raw)
        req.kind, req.status = "unknown", 404
        self.fake._log(req)
        self._send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                         "message": f"no route {self.path}"}})

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = _not_found

    def do_POST(self) -> None:
        if self.path.split("?")[0] != "/v1/messages":
            self._not_found()
            return
        raw = self._read_body()
        req = self._record(raw)
        if not isinstance(req.body, dict):
            req.kind, req.status = "unknown", 400
            self.fake._log(req)
            self._send_json(400, {"type": "error", "error": {
                "type": "invalid_request_error", "message": "body must be a JSON object"}})
            return
        req.kind, req.side_kind = classify_request(req.headers, req.body)
        failure = self.fake.main_error if req.kind == "main" else None
        if failure is not None:
            req.status = failure[0]
            self.fake._log(req)
            self._send_json(*failure)
            return
        gate = self.fake.main_gate
        if req.kind == "main" and gate is not None:
            gate(len(self.fake.main_requests()))
        req.turn, content = self.fake._answer_for(req.kind, req.agent_id, req.side_kind)
        if req.kind == "main":
            content = _with_plan_file(content, req.body)
        req.status = 200
        self.fake._log(req)
        message = self.fake.build_message(content)
        if not req.body.get("stream"):
            self._send_json(200, message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in sse_events(message):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


def main(argv: list[str] | None = None) -> int:
    """``python tests/e2e/fake_api.py SCRIPT.json``: serve SCRIPT on 127.0.0.1 (a free port), print its URL (for ``ANTHROPIC_BASE_URL``) on stdout, log each request's kind
    on stderr, until Ctrl-C or SIGTERM."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python tests/e2e/fake_api.py",
        description="A scripted fake of Anthropic's Messages API for running the real Claude Code offline "
                    "(docs/testing.md \"Trying Claude Code by hand, offline\"). Prints its URL: set "
                    "ANTHROPIC_BASE_URL to it and ANTHROPIC_API_KEY to any sk-ant-... string.",
        epilog="A script is a JSON file shaped like fixtures/claude-code/2.1.332/*/model-script.json; this "
               "module's docstring says what it may hold.")
    ap.add_argument("script", type=Path, help="the model's turns, one per main request")
    args = ap.parse_args(argv)
    return serve_by_hand(FakeAnthropicAPI(str(args.script)).start(), "fake_api")


def serve_by_hand(api: Any, name: str) -> int:
    """Print started ``api``'s URL on stdout, then each request's kind on stderr (``NAME:
    main request``) until Ctrl-C or SIGTERM; stop it; 0. ``api``: a started fake with ``url``
    and ``requests`` (this module's or ``fake_responses``'s)."""
    import signal

    print(api.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        seen = 0
        while not stop.wait(0.2):
            for r in api.requests[seen:]:
                print(f"{name}: {r.kind} request", file=sys.stderr, flush=True)
            seen = len(api.requests)
    except KeyboardInterrupt:
        pass
    api.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
