"""A scripted fake of the OpenAI Responses API for end-to-end tests against Codex.

The real Codex binary is pointed at it through its own provider configuration
(``codex_config`` writes it: ``model_providers.<id>.base_url`` with ``wire_api =
"responses"``; docs/harness-codex.md says how this was found). It binds ``127.0.0.1`` on an
ephemeral port, answers ``POST /v1/responses`` with a server-sent event stream and logs every
request it receives, whatever the path, so a test asserts what reached the model.

A script is ``{"turns": [<turn>, ...], "fallback_text": "done", "subagent": <script>}``; a turn is a list of
Responses output items (``message``, ``function_call``, ...: build them with ``say`` and
``call``), or a bare string (one assistant message). Each *main* request (one that offers the
model tools) consumes the next turn; once they are used up the fake answers
``fallback_text``. Requests that offer no tools (Codex's own helpers, if any) are ``"side"``
and answered ``side_text`` without consuming a turn. Requests of a subagent (they carry
the ``x-openai-subagent`` header) consume turns of a
separate ``subagent_script``, one cursor per agent (its ``thread-id`` header).

The stream follows the API: ``response.created``, then for each item
``response.output_item.added``, its deltas (``response.output_text.delta`` for a message,
``response.function_call_arguments.delta`` for a call), ``response.output_item.done``, and
last ``response.completed`` with the whole response and its usage.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

if __package__:
    from .fake_api import LoopbackServer, serve_by_hand, wait_on
else:  # (run as a file: python tests/e2e/fake_responses.py)
    import sys as _sys

    _sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.e2e.fake_api import LoopbackServer, serve_by_hand, wait_on

__all__ = ["FakeResponsesAPI", "LoggedRequest", "call", "codex_config", "load_script", "say"]

DEFAULT_FALLBACK_TEXT = "done"
DEFAULT_SIDE_TEXT = "ok"
PROVIDER_ID = "hookdfake"
#: the environment variable named by the provider's ``env_key`` (the fake accepts any value)
KEY_ENV = "HOOKD_FAKE_OPENAI_KEY"
#: the header Codex sets on a subagent's model requests (``collab_spawn`` for ``spawn_agent``)
SUBAGENT_HEADER = "x-openai-subagent"


def say(text: str) -> dict:
    """An assistant ``message`` output item holding ``text``."""
    return {"type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call(name: str, arguments: dict | str, call_id: str | None = None,
         namespace: str | None = None) -> dict:
    """A ``function_call`` output item: the model calls tool ``name`` with ``arguments``
    (a dict is JSON-encoded, as the API sends them). ``call_id`` defaults to a fresh
    ``call_...`` id; ``namespace`` names the tool's namespace when it is in one (Codex's
    ``spawn_agent`` is in ``multi_agent_v1``: without it Codex answers "unsupported call")."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    item = {"type": "function_call", "status": "completed", "name": name, "arguments": args,
            "call_id": call_id or "call_" + uuid.uuid4().hex[:24]}
    if namespace is not None:
        item["namespace"] = namespace
    return item


def load_script(script: Any) -> dict:
    """Normalise a script to ``{"turns": [[item, ...], ...], ...}``.

    Accepts a dict with ``turns``, a plain list of turns, a path to a JSON file holding
    either, or ``None`` (no turns). A turn is a list of output items, a single item (a dict
    with ``type``), ``{"output": [items]}``, or a string (one message). Raises ``TypeError``
    on any other shape."""
    if script is None:
        return {"turns": []}
    if isinstance(script, (str, Path)):
        script = json.loads(Path(script).read_text())
    if isinstance(script, list):
        script = {"turns": script}
    if not isinstance(script, dict) or not isinstance(script.get("turns"), list):
        raise TypeError(f"script must be {{'turns': [...]}}, got {type(script).__name__}")
    turns = []
    for turn in script["turns"]:
        if isinstance(turn, str):
            turn = [say(turn)]
        elif isinstance(turn, dict):
            turn = turn["output"] if "output" in turn else [turn]
        if not isinstance(turn, list) or not all(isinstance(i, dict) for i in turn):
            raise TypeError(f"bad turn: {turn!r}")
        turns.append(copy.deepcopy(turn))
    return dict(script, turns=turns)


@dataclass
class LoggedRequest:
    """One request the fake received.

    Attributes:
        method, path: as received (``path`` keeps any query string).
        headers: header names lower-cased -> value.
        raw: the body (bytes); ``body``: it parsed as JSON, or ``None``.
        kind: ``"main"`` (a ``/responses`` request of the main agent offering tools),
            ``"subagent"`` (one with the ``x-openai-subagent`` header), ``"side"`` (one offering no tools) or
            ``"unknown"`` (any other path: answered 404).
        agent: the request's ``thread-id`` header (a subagent's is its ``agent_id`` in the
            hook payloads), or ``None``.
        turn: index of the scripted turn served, or ``None`` (side, unknown, fallback).
        status: the HTTP status answered; ``at``: ``time.monotonic()`` on arrival (s).
    """

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    kind: str = "unknown"
    agent: str | None = None
    turn: int | None = None
    status: int = 0
    at: float = 0.0

    @property
    def text(self) -> str:
        """The raw body decoded as UTF-8 (errors replaced)."""
        return self.raw.decode("utf-8", "replace")

    def contains(self, needle: str) -> bool:
        """True when ``needle`` occurs in the raw body or in any string of the JSON body
        (so text with quotes or non-ASCII, escaped in the raw body, still matches)."""
        return needle in self.text or needle in "\n".join(_strings(self.body))

    def input_items(self) -> list[dict]:
        """The request's ``input`` items (``[]`` when absent)."""
        items = self.body.get("input") if isinstance(self.body, dict) else None
        return [i for i in items or [] if isinstance(i, dict)]

    def tool_names(self) -> list[str]:
        """Names of the tools offered to the model, in order (namespaced tools as
        ``namespace.name``; a tool without a name by its ``type``)."""
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return [str(t.get("name") or t.get("type")) for t in tools or [] if isinstance(t, dict)]

    def function_outputs(self) -> dict[str, str]:
        """``{call_id: output text}`` of every ``function_call_output`` (and
        ``custom_tool_call_output``) item of the input."""
        out: dict[str, str] = {}
        for item in self.input_items():
            if item.get("type") in ("function_call_output", "custom_tool_call_output"):
                out[str(item.get("call_id"))] = "\n".join(_texts(item.get("output")))
        return out

    def user_texts(self) -> list[str]:
        """Text of each ``role: "user"`` message of the input, in order."""
        return ["\n".join(_texts(i.get("content"))) for i in self.input_items()
                if i.get("type", "message") == "message" and i.get("role") == "user"]

    def tail_text(self) -> str:
        """Text of every input item after the last assistant message or function call
        (what is new to the model in this request), joined by newlines."""
        items = self.input_items()
        last = max((n for n, i in enumerate(items) if i.get("role") == "assistant"
                    or i.get("type") == "function_call"), default=-1)
        return "\n".join(t for i in items[last + 1:] for t in _texts(
            i.get("content") if "content" in i else i.get("output")))


def _texts(content: Any) -> Iterable[str]:
    """The texts of a message's ``content`` (or a tool output): a string itself, else the
    ``text`` of each part, in order."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                yield part
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]


def _strings(obj: Any) -> Iterable[str]:
    """Every string value in ``obj`` (a JSON value), depth first (keys left out)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def sse_events(response: dict) -> Iterable[tuple[str, dict]]:
    """``(event, data)`` pairs streaming ``response`` (a complete Responses object) the way
    the API does: one delta per message text or call's arguments."""
    seq = iter(range(1_000_000))
    head = dict(response, status="in_progress", output=[], usage=None)
    yield "response.created", {"type": "response.created", "sequence_number": next(seq),
                               "response": head}
    for idx, item in enumerate(response["output"]):
        start = dict(item, status="in_progress")
        if item["type"] == "message":
            start["content"] = []
        elif item["type"] == "function_call":
            start["arguments"] = ""
        yield "response.output_item.added", {"type": "response.output_item.added",
                                             "sequence_number": next(seq), "output_index": idx,
                                             "item": start}
        if item["type"] == "message":
            for part_idx, part in enumerate(item.get("content") or []):
                if part.get("type") == "output_text":
                    yield "response.output_text.delta", {
                        "type": "response.output_text.delta", "sequence_number": next(seq),
                        "item_id": item["id"], "output_index": idx,
                        "content_index": part_idx, "delta": part["text"]}
        elif item["type"] == "function_call":
            yield "response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "sequence_number": next(seq),
                "item_id": item["id"], "output_index": idx, "delta": item["arguments"]}
        yield "response.output_item.done", {"type": "response.output_item.done",
                                            "sequence_number": next(seq), "output_index": idx,
                                            "item": item}
    yield "response.completed", {"type": "response.completed", "sequence_number": next(seq),
                                 "response": response}


class FakeResponsesAPI(LoopbackServer):
    """Scripted fake Responses API on ``127.0.0.1:<ephemeral port>``.

    Args:
        script: the main agent's script (shapes: ``load_script``).
        subagent_script: the script of every subagent (each gets its own cursor over it);
            default: the main script's ``subagent`` entry, if any.
        fallback_text: the message answered once the turns are used up (default ``"done"``;
            the script's own ``fallback_text`` wins).
        side_text: the message answered to side requests (default ``"ok"``).
        model: the model name put in responses.

    Use as a context manager or call ``start()``/``stop()``; ``url`` (the provider's
    ``base_url``, ending in ``/v1``) and ``port`` are valid once started.
    """

    def __init__(self, script: Any = None, *, subagent_script: Any = None,
                 fallback_text: str | None = None, side_text: str | None = None,
                 model: str = "gpt-fake"):
        self._lock = threading.Condition()
        self._script = load_script(script)
        self._next = 0
        self._sub_script = load_script(subagent_script if subagent_script is not None
                                       else self._script.get("subagent"))
        self._sub_next: dict[str, int] = {}
        self.fallback_text = (fallback_text or self._script.get("fallback_text")
                              or DEFAULT_FALLBACK_TEXT)
        self.side_text = side_text or self._script.get("side_text") or DEFAULT_SIDE_TEXT
        self.model = model
        self.requests: list[LoggedRequest] = []
        #: called (on the server's thread, before answering; it may block) with the number of
        #: main requests answered before this one, or None
        self.main_gate: Callable[[int], None] | None = None

    @property
    def url(self) -> str:
        """The provider's ``base_url``: ``"http://127.0.0.1:PORT/v1"``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    # ------------------------------------------------------------------ scripting
    def set_script(self, script: Any) -> None:
        """Replace the script (and the subagents' with its ``subagent`` script, when it has
        one) and rewind them to their first turn."""
        with self._lock:
            self._script = load_script(script)
            self._next = 0
            if self._script.get("subagent") is not None:
                self._sub_script = load_script(self._script["subagent"])
                self._sub_next = {}
            self.fallback_text = self._script.get("fallback_text") or self.fallback_text

    def add_turns(self, *turns: Any) -> None:
        """Append turns (shapes as in ``load_script``) to the script."""
        extra = load_script(list(turns))["turns"]
        with self._lock:
            self._script["turns"].extend(extra)

    @property
    def turns_served(self) -> int:
        """How many scripted turns have been served."""
        with self._lock:
            return self._next

    def _take(self, kind: str, agent: str | None) -> tuple[int | None, list[dict]]:
        with self._lock:
            if kind == "side":
                return None, [say(self.side_text)]
            if kind == "subagent":
                idx = self._sub_next.get(agent or "", 0)
                turns = self._sub_script["turns"]
                if idx < len(turns):
                    self._sub_next[agent or ""] = idx + 1
                    return idx, copy.deepcopy(turns[idx])
                return None, [say(self._sub_script.get("fallback_text") or self.fallback_text)]
            if self._next < len(self._script["turns"]):
                self._next += 1
                return self._next - 1, copy.deepcopy(self._script["turns"][self._next - 1])
            return None, [say(self.fallback_text)]

    def build_response(self, output: list[dict]) -> dict:
        """A complete Responses object for ``output`` items (ids filled in)."""
        for item in output:
            item.setdefault("id", ("msg_" if item["type"] == "message" else "fc_")
                            + uuid.uuid4().hex[:24])
        return {"id": "resp_" + uuid.uuid4().hex[:24], "object": "response",
                "created_at": int(time.time()), "status": "completed", "model": self.model,
                "output": output, "usage": {
                    "input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 120}}

    # ------------------------------------------------------------------ log queries
    def _snapshot(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self.requests)

    def main_requests(self) -> list[LoggedRequest]:
        """The model requests of the conversation (the ones that consume turns), in order."""
        return [r for r in self._snapshot() if r.kind == "main"]

    def requests_containing(self, needle: str, kind: str | None = "main") -> list[LoggedRequest]:
        """Requests of ``kind`` (``None``: any, whatever the path) whose body holds
        ``needle`` (``LoggedRequest.contains``)."""
        return [r for r in self._snapshot() if (kind is None or r.kind == kind)
                and r.contains(needle)]

    def wait_for(self, predicate: Callable[[FakeResponsesAPI], Any], timeout: float = 10.0) -> Any:
        """``predicate(self)``'s first truthy value, polled on every request;
        ``TimeoutError`` after ``timeout`` seconds."""
        return wait_on(self._lock, lambda: predicate(self), timeout, 0.05, "fake Responses API")

    def _log(self, req: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(req)
            self._lock.notify_all()


class _Handler(BaseHTTPRequestHandler):
    fake: FakeResponsesAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        return

    def _record(self) -> LoggedRequest:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        return LoggedRequest(self.command, self.path,
                             {k.lower(): v for k, v in self.headers.items()}, raw, body,
                             at=time.monotonic())

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        req = self._record()
        req.status = 404
        self.fake._log(req)
        self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        req = self._record()
        if self.path.split("?")[0].rstrip("/") != "/v1/responses":
            req.status = 404
            self.fake._log(req)
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        body = req.body if isinstance(req.body, dict) else {}
        req.agent = req.headers.get("thread-id")
        req.kind = ("side" if not body.get("tools") else
                    "subagent" if SUBAGENT_HEADER in req.headers else "main")
        if req.kind == "main" and self.fake.main_gate is not None:
            self.fake.main_gate(len(self.fake.main_requests()))
        req.turn, output = self.fake._take(req.kind, req.agent)
        req.status = 200
        self.fake._log(req)
        response = self.fake.build_response(output)
        if body.get("stream") is False:
            self._send(200, response)
            return
        chunks = b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                          for name, data in sse_events(response))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(chunks)))
        self.end_headers()
        self.wfile.write(chunks)


def codex_config(api: FakeResponsesAPI, *, model: str | None = None) -> str:
    """The ``config.toml`` text pointing Codex at ``api`` (a started fake): a custom provider
    on the Responses wire API, no retries, no login (its key comes from ``KEY_ENV``, which the
    caller sets to any value); and ``/tmp`` out of the sandbox's writable roots: Codex 0.171's
    Linux sandbox makes empty ``.git``, ``.codex``, ``.agents`` and ``.aws`` folders in each
    writable root, and a ``/tmp/.git`` makes Claude Code take ``/tmp`` for the repository of
    every test project under it (its MCP dialog then stops the TUI tests: docs/testing.md
    "A Codex sandbox's /tmp/.git"). The private ``TMPDIR`` (``codex_env``) stays writable."""
    return (f'model = "{model or api.model}"\n'
            f'model_provider = "{PROVIDER_ID}"\n'
            f"\n[model_providers.{PROVIDER_ID}]\n"
            f'name = "hookd fake"\n'
            f'base_url = "{api.url}"\n'
            f'wire_api = "responses"\n'
            f'env_key = "{KEY_ENV}"\n'
            f"request_max_retries = 0\n"
            f"stream_max_retries = 0\n"
            "\n[sandbox_workspace_write]\n"
            "exclude_slash_tmp = true\n")


def main(argv: list[str] | None = None) -> int:
    """``python tests/e2e/fake_responses.py SCRIPT.json [--codex-home DIR]``: serve SCRIPT on
    127.0.0.1 (a free port), print its URL on stdout (and, with ``--codex-home``, write DIR's
    ``config.toml`` pointing Codex at it), log each request on stderr, until Ctrl-C or SIGTERM."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python tests/e2e/fake_responses.py",
        description="A scripted fake of OpenAI's Responses API for running the real Codex CLI offline "
                    "(docs/testing.md \"Trying Codex by hand, offline\"). Prints its URL.",
        epilog="A script is a JSON file {\"turns\": [...]} as this module's docstring describes; Codex "
               f"needs {KEY_ENV} set to any value.")
    ap.add_argument("script", type=Path, help="the model's turns, one per main request")
    ap.add_argument("--codex-home", type=Path, help="write config.toml there (a CODEX_HOME of your own)")
    args = ap.parse_args(argv)
    api = FakeResponsesAPI(str(args.script)).start()
    if args.codex_home is not None:
        args.codex_home.mkdir(parents=True, exist_ok=True)
        (args.codex_home / "config.toml").write_text(codex_config(api))
    return serve_by_hand(api, "fake_responses")

if __name__ == "__main__":
    raise SystemExit(main())
