"""`hookd mcp --builder B`: a stdio MCP server that lets a builder's agent ask without blocking.

Claude Code starts it (``.mcp.json`` written by `hookd spawn`, or ``--mcp-config``) once per
session, cwd = the session's cwd, with ``CLAUDE_CODE_SESSION_ID`` in its environment. Its
three tools talk to the daemon over its Unix socket:

* ``ask_user_async(question, options?)`` -> ``POST /v1/builders/{B}/asks``: the interaction
  id at once; the agent keeps working.
* ``await_answers(timeout_s, ids?)`` -> ``POST /v1/interactions/await``: the answers once all
  are answered, else, after at most `timeout_s` seconds, which are still pending.
* ``check_answers(ids?)``: the same without waiting.

Results are plain text for the model (a sentence, then the daemon's JSON on one line); a
failure (daemon not running, unknown id, bad argument) is an ``isError`` result with one
clear sentence (``Error executing tool NAME: ...``), never a crash of the server. stdout
carries only MCP; logs go to stderr.

The protocol is served here, not by the ``mcp`` SDK: newline-delimited JSON-RPC 2.0 on
stdin/stdout (MCP's stdio transport), the ``initialize`` handshake (protocol revisions
2024-11-05 to 2025-11-25), ``ping``, ``tools/list``, ``tools/call`` (each call in a thread of
its own, so a long ``await_answers`` never holds up another request) and
``notifications/cancelled`` (the call's request to the daemon is broken off, no reply). The
SDK's import alone takes longer than the whole start may (docs/decisions.md "The CLI starts
fast"); the tests drive this server with the SDK's client.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
from typing import Any, BinaryIO, Callable

from hookd import __version__
from hookd.client import Client
from hookd.config import Home, check_builder_id
from hookd.errors import HookdError

log = logging.getLogger("hookd.mcp")

#: The daemon caps one await at this many seconds (``MAX_AWAIT_S``); longer requests are cut
#: to it. Claude Code's own limit for a silent stdio tool call is 30 min (2.1.332).
MAX_TIMEOUT_S = 600.0
#: Extra seconds the HTTP request to the daemon may take beyond the await's own timeout.
HTTP_MARGIN_S = 30.0
#: The MCP revisions this server speaks (all with the ``initialize`` handshake), oldest first:
#: a client's requested one is answered with itself, any other with the newest.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

INSTRUCTIONS = (
    "hookd relays questions to the human operator without blocking you: ask_user_async returns "
    "an id at once; keep working and collect answers later with check_answers or await_answers "
    "(answers also arrive as a message at your next turn boundary)."
)

_IDS = {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}], "default": None,
        "description": "Question ids from ask_user_async; omit for every question asked in this session.",
        "title": "Ids"}

#: The tools as ``tools/list`` gives them (descriptions: what the model reads).
TOOLS: list[dict[str, Any]] = [
    {"name": "ask_user_async",
     "description": "Ask the human operator a question WITHOUT blocking: returns the question's id\n"
                    "(`ask_<hex>`) at once. Keep working on what does not depend on the answer; collect\n"
                    "it later with check_answers() or await_answers(timeout_s=...), or wait for it to\n"
                    "arrive as a message \"[Answer to question <id>] Q: ... A: ...\" at your next turn\n"
                    "boundary (after a tool call). Errors: hookd not running, builder unknown, empty\n"
                    "question or bad options.",
     "inputSchema": {"properties": {
         "question": {"description": "The question for the human, self-contained (1 to 4000 characters).",
                      "title": "Question", "type": "string"},
         "options": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}], "default": None,
                     "description": "Up to 12 distinct answer labels the human may pick from; omit for a "
                                    "free-text answer.",
                     "title": "Options"}},
         "required": ["question"], "title": "ask_user_asyncArguments", "type": "object"}},
    {"name": "await_answers",
     "description": "Wait for the human's answers to questions asked with ask_user_async. Returns as\n"
                    "soon as every question in `ids` is answered (or closed, e.g. expired), or after\n"
                    "`timeout_s` seconds (mandatory; 0 < timeout_s <= 600) saying which ids are still\n"
                    "pending. The reply is a sentence, then JSON {\"answered\": [{\"id\", \"questions\",\n"
                    "\"answers\" (question -> answer text), \"surface\", \"actor\", \"answered_at\" (Unix\n"
                    "seconds)}], \"closed\": [{\"id\", \"state\", \"warning\"}], \"pending\": [ids], \"timed_out\"}.\n"
                    "Answers returned here are not delivered to you again as messages. Errors: bad\n"
                    "timeout, unknown id, hookd not running.",
     "inputSchema": {"properties": {
         "timeout_s": {"description": "How long to wait at most, in seconds: more than 0, at most 600 (larger "
                                      "values are cut to 600).",
                       "title": "Timeout S", "type": "number"},
         "ids": _IDS},
         "required": ["timeout_s"], "title": "await_answersArguments", "type": "object"}},
    {"name": "check_answers",
     "description": "Look, without waiting, whether the human answered questions asked with\n"
                    "ask_user_async. Same reply as await_answers (a sentence, then JSON with \"answered\",\n"
                    "\"closed\", \"pending\", \"timed_out\"). Errors: unknown id, hookd not running.",
     "inputSchema": {"properties": {"ids": _IDS}, "title": "check_answersArguments", "type": "object"}},
]


_EMPTY_LISTS = {"resources/list": "resources", "resources/templates/list": "resourceTemplates",
                "prompts/list": "prompts"}


class ToolError(Exception):
    """A tool's failure: its message is what the model reads (after ``Error executing tool
    NAME: ``)."""


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def _ids_text(ids: list[str]) -> str:
    return ", ".join(ids)


def describe_await(result: dict[str, Any], waited_s: float | None, note: str = "") -> str:
    """The model-facing text for the daemon's await reply: one or two sentences naming every
    id by its outcome, then the reply itself as JSON on one line."""
    answered = [a["id"] for a in result.get("answered", [])]
    closed = result.get("closed", [])
    pending = result.get("pending", [])
    parts = []
    if not pending and not closed:
        parts.append(f"All {len(answered)} answered: {_ids_text(answered)}.")
    else:
        if answered:
            parts.append(f"Answered: {_ids_text(answered)}.")
        if closed:
            parts.append("Closed without an answer: "
                         + ", ".join(f"{c['id']} ({c['state']})" for c in closed) + ".")
        if pending:
            when = "now" if not waited_s else f"after waiting {waited_s:g} s"
            parts.append(f"Still pending {when}: {_ids_text(pending)}. Keep working; check again later "
                         "with check_answers or await_answers (the answers will also arrive as messages "
                         "at your next turn boundary).")
    if note:
        parts.append(note)
    return " ".join(parts) + "\n" + _dumps(result)


def _string_list(args: dict[str, Any], name: str) -> list[str] | None:
    """``args[name]``: a list of strings, or None when absent or null. Raises ToolError."""
    value = args.get(name)
    if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ToolError(f"{name} must be a list of strings (got {_dumps(value)})")
    return value


def _seconds(args: dict[str, Any], name: str) -> float:
    """``args[name]``: a number (or a string holding one, as a model may send it). Raises
    ToolError."""
    value = args.get(name)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolError(f"{name} is required: a number of seconds (got {_dumps(value)})")
    return float(value)


class _Session:
    """What the tools of one server share: the daemon of ``home``, the builder, the agent's
    session id (sent with each ask) and the ids asked through this process, oldest first."""

    def __init__(self, home: Home, builder: str, session_id: str | None):
        self.home = home
        self.builder = builder
        self.session_id = session_id
        self.asked: list[str] = []

    def call(self, client: Client, path: str, body: dict[str, Any], timeout: float) -> Any:
        """POST ``body`` to the daemon's ``path`` (``timeout`` seconds); any failure is a
        ToolError with one sentence (the model's error result), never an exception out of the
        server."""
        try:
            return client.post_json(path, body, timeout=timeout)
        except HookdError as e:  # daemon down (with how to start it), 4xx with the reason, no answer in time
            raise ToolError(e.message) from None
        except Exception as e:  # never crash the server: the model gets one sentence
            log.exception("request to hookd failed: %s", path)
            raise ToolError(f"hookd request failed: {type(e).__name__}: {e}") from None

    def ask_user_async(self, client: Client, args: dict[str, Any]) -> str:
        question = args.get("question")
        if not isinstance(question, str):
            raise ToolError(f"question is required: a string (got {_dumps(question)})")
        options = _string_list(args, "options")
        r = self.call(client, f"/v1/builders/{self.builder}/asks",
                      {"question": question, "options": options, "session_id": self.session_id}, 10.0)
        i = r["interaction"]
        self.asked.append(i["id"])
        opts = [o.get("label") for o in (i["questions"][0].get("options") or [])] if i.get("questions") else options
        # the text names the id but not the inbox copy's exact marker "[Answer to question <id>]",
        # so that marker only ever shows where the answer itself is
        return (f"Asked {i['id']}: the question is pending with the human operator. Do not wait for it: "
                "keep working. Later call check_answers() or await_answers(timeout_s=...) to collect the "
                "answer; it will also reach you as a message naming this id at your next turn boundary.\n"
                + _dumps({"id": i["id"], "state": i["state"], "question": question, "options": opts or None}))

    def await_answers(self, client: Client, args: dict[str, Any]) -> str:
        timeout_s = _seconds(args, "timeout_s")
        ids = _string_list(args, "ids")
        if not math.isfinite(timeout_s) or timeout_s <= 0:
            raise ToolError("timeout_s must be a number of seconds above 0 and at most 600 "
                            "(use check_answers to look without waiting)")
        note = ""
        if timeout_s > MAX_TIMEOUT_S:
            note = f"(timeout_s {timeout_s:g} was cut to {MAX_TIMEOUT_S:g} s.)"
            timeout_s = MAX_TIMEOUT_S
        return self.wait_for(client, ids, timeout_s, note)

    def check_answers(self, client: Client, args: dict[str, Any]) -> str:
        return self.wait_for(client, _string_list(args, "ids"), 0.0)

    def wait_for(self, client: Client, ids: list[str] | None, timeout_s: float, note: str = "") -> str:
        """The daemon's await of ``ids`` (None or empty: every id asked here) for at most
        ``timeout_s`` seconds, described for the model (:func:`describe_await`)."""
        ids = list(dict.fromkeys(ids if ids else self.asked))
        if not ids:
            raise ToolError("no question was asked through this server yet: pass ids=[...] "
                            "(the ids ask_user_async returned)")
        r = self.call(client, "/v1/interactions/await", {"ids": ids, "timeout_s": timeout_s, "collect": True},
                      timeout_s + HTTP_MARGIN_S)
        return describe_await(r, timeout_s, note)


class Server:
    """One MCP server on ``stdin``/``stdout`` (binary streams) for ``builder``'s agent in
    ``home``. session_id: sent with each ask (default: ``CLAUDE_CODE_SESSION_ID``)."""

    def __init__(self, home: Home, builder: str, *, session_id: str | None = None,
                 stdin: BinaryIO | None = None, stdout: BinaryIO | None = None):
        check_builder_id(builder)
        if session_id is None:
            session_id = os.environ.get("CLAUDE_CODE_SESSION_ID") or None
        self.session = _Session(home, builder, session_id)
        self.stdin = stdin or sys.stdin.buffer
        self.stdout = stdout or sys.stdout.buffer
        self._lock = threading.Lock()  # one writer at a time; guards the two fields below
        self._calls: dict[Any, Client] = {}  # JSON-RPC id of a tool call under way -> its client
        self._cancelled: set[Any] = set()
        self._closed = False
        self.tools: dict[str, Callable[[Client, dict[str, Any]], str]] = {
            "ask_user_async": self.session.ask_user_async, "await_answers": self.session.await_answers,
            "check_answers": self.session.check_answers}

    def send(self, msg: dict[str, Any]) -> None:
        line = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            if self._closed:
                return
            self.stdout.write(line)
            self.stdout.flush()

    def reply(self, msg_id: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": err})

    def serve(self) -> None:
        """Answer requests until stdin ends; then break off the tool calls under way."""
        try:
            for line in self.stdin:
                if line.strip():
                    self.handle(line)
        finally:
            with self._lock:
                self._closed = True
                calls = list(self._calls.values())
            for client in calls:
                client.abort()

    def handle(self, line: bytes) -> None:
        """One JSON-RPC message from the client."""
        try:
            msg = json.loads(line)
        except ValueError:
            self.error(None, -32700, "Parse error")
            return
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
            if isinstance(msg, dict) and ("result" in msg or "error" in msg):
                return  # a reply to a request: this server sends none
            self.error(msg.get("id") if isinstance(msg, dict) else None, -32600, "Invalid Request")
            return
        method, params = msg["method"], msg.get("params") or {}
        if "id" not in msg:  # a notification
            if method == "notifications/cancelled" and isinstance(params, dict):
                self.cancel(params.get("requestId"))
            return
        msg_id = msg["id"]
        if method == "initialize":
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            self.reply(msg_id, {
                "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "hookd", "version": __version__},
                "instructions": INSTRUCTIONS})
        elif method == "ping":
            self.reply(msg_id, {})
        elif method == "tools/list":
            self.reply(msg_id, {"tools": TOOLS})
        elif method in _EMPTY_LISTS:  # not offered (capabilities), but a client that asks gets none
            self.reply(msg_id, {_EMPTY_LISTS[method]: []})
        elif method == "tools/call" and isinstance(params, dict):
            self.start_call(msg_id, params)
        elif method == "tools/call":
            self.error(msg_id, -32602, "Invalid params")
        else:
            self.error(msg_id, -32601, "Method not found", method)

    def start_call(self, msg_id: Any, params: dict[str, Any]) -> None:
        """Run one tool call in a thread of its own; its result is sent when it ends."""
        name, args = params.get("name"), params.get("arguments") or {}
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            self.reply(msg_id, {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True})
            return
        client = Client(self.session.home)
        with self._lock:
            self._calls[msg_id] = client
        threading.Thread(target=self.run_call, args=(msg_id, name, tool, client, args), daemon=True,
                         name=f"mcp-call-{msg_id}").start()

    def run_call(self, msg_id: Any, name: str, tool: Callable[[Client, dict[str, Any]], str],
                 client: Client, args: Any) -> None:
        try:
            if not isinstance(args, dict):
                raise ToolError(f"arguments must be an object (got {_dumps(args)})")
            text, is_error = tool(client, args), False
        except ToolError as e:
            text, is_error = f"Error executing tool {name}: {e}", True
        except Exception as e:  # never crash the server
            log.exception("tool %s failed", name)
            text, is_error = f"Error executing tool {name}: {type(e).__name__}: {e}", True
        with self._lock:
            del self._calls[msg_id]
            cancelled = msg_id in self._cancelled
            self._cancelled.discard(msg_id)
        if not cancelled:  # a cancelled request gets no reply (MCP "Cancellation")
            self.reply(msg_id, {"content": [{"type": "text", "text": text}], "isError": is_error})

    def cancel(self, msg_id: Any) -> None:
        """The client gave up on tool call ``msg_id``: break off its request to the daemon."""
        with self._lock:
            client = self._calls.get(msg_id)
            if client is not None:
                self._cancelled.add(msg_id)
        if client is not None:
            client.abort()


def run(home: Home, builder: str) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    Server(home, builder).serve()
