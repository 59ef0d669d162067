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
failure (daemon not running, unknown id, bad argument) is an ``is_error`` result with one
clear sentence, never a crash of the server. stdout carries only MCP; logs go to stderr.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import os
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from hookd.client import AsyncClient
from hookd.config import Home, check_builder_id
from hookd.models import HookdError

log = logging.getLogger("hookd.mcp")

#: The daemon caps one await at this many seconds (``MAX_AWAIT_S``); longer requests are cut
#: to it. Claude Code's own limit for a silent stdio tool call is 30 min (2.1.332).
MAX_TIMEOUT_S = 600.0
#: Extra seconds the HTTP request to the daemon may take beyond the await's own timeout.
HTTP_MARGIN_S = 30.0

INSTRUCTIONS = (
    "hookd relays questions to the human operator without blocking you: ask_user_async returns "
    "an id at once; keep working and collect answers later with check_answers or await_answers "
    "(answers also arrive as a message at your next turn boundary)."
)


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


class _Session:
    """What the tools of one server share: the daemon of ``home``, the builder, the agent's
    session id (sent with each ask) and the ids asked through this process, oldest first."""

    def __init__(self, home: Home, builder: str, session_id: str | None):
        self.home = home
        self.builder = builder
        self.session_id = session_id
        self.asked: list[str] = []

    async def call(self, path: str, body: dict[str, Any], timeout: float) -> Any:
        """POST ``body`` to the daemon's ``path`` (``timeout`` seconds); any failure is a
        ToolError with one sentence (the model's error result), never an exception out of the
        server."""
        from mcp.server.mcpserver.exceptions import ToolError

        client = AsyncClient(self.home, timeout=timeout)
        try:
            return await client.post_json(path, body)
        except HookdError as e:  # daemon down (with how to start it), 4xx with the reason
            raise ToolError(e.message) from None
        except Exception as e:  # never crash the server: the model gets one sentence
            log.exception("request to hookd failed: %s", path)
            raise ToolError(f"hookd request failed: {type(e).__name__}: {e}") from None
        finally:
            await client.aclose()

    async def wait_for(self, ids: list[str] | None, timeout_s: float, note: str = "") -> str:
        """The daemon's await of ``ids`` (None or empty: every id asked here) for at most
        ``timeout_s`` seconds, described for the model (:func:`describe_await`)."""
        from mcp.server.mcpserver.exceptions import ToolError

        ids = list(dict.fromkeys(ids if ids else self.asked))
        if not ids:
            raise ToolError("no question was asked through this server yet: pass ids=[...] "
                            "(the ids ask_user_async returned)")
        r = await self.call("/v1/interactions/await", {"ids": ids, "timeout_s": timeout_s, "collect": True},
                            timeout_s + HTTP_MARGIN_S)
        return describe_await(r, timeout_s, note)


def build_server(home: Home, builder: str, *, session_id: str | None = None) -> Any:
    """The MCP server (``mcp.server.mcpserver.MCPServer``) for ``builder``'s agent in
    ``home``. session_id: sent with each ask (default: ``CLAUDE_CODE_SESSION_ID``)."""
    from mcp.server.mcpserver import MCPServer

    check_builder_id(builder)
    if session_id is None:
        session_id = os.environ.get("CLAUDE_CODE_SESSION_ID") or None
    app = MCPServer("hookd", instructions=INSTRUCTIONS, log_level="WARNING")

    def tool(fn: Any) -> Any:
        """Register ``fn`` as a tool: plain-text result (no ``{"result": ...}`` wrapper), its
        docstring (dedented) as the description the model reads."""
        return app.tool(structured_output=False, description=inspect.cleandoc(fn.__doc__ or ""))(fn)

    s = _Session(home, builder, session_id)
    _ask_tool(tool, s)
    _answer_tools(tool, s)
    return app


def _ask_tool(tool: Callable[[Any], Any], s: _Session) -> None:
    """Register ``ask_user_async`` with ``tool``."""
    @tool
    async def ask_user_async(
        question: Annotated[str, Field(description="The question for the human, self-contained (1 to 4000 characters).")],
        options: Annotated[list[str] | None, Field(
            description="Up to 12 distinct answer labels the human may pick from; omit for a free-text answer.")] = None,
    ) -> str:
        """Ask the human operator a question WITHOUT blocking: returns the question's id
        (`ask_<hex>`) at once. Keep working on what does not depend on the answer; collect
        it later with check_answers() or await_answers(timeout_s=...), or wait for it to
        arrive as a message "[Answer to question <id>] Q: ... A: ..." at your next turn
        boundary (after a tool call). Errors: hookd not running, builder unknown, empty
        question or bad options."""
        r = await s.call(f"/v1/builders/{s.builder}/asks",
                         {"question": question, "options": options, "session_id": s.session_id}, 10.0)
        i = r["interaction"]
        s.asked.append(i["id"])
        opts = [o.get("label") for o in (i["questions"][0].get("options") or [])] if i.get("questions") else options
        # the text names the id but not the inbox copy's exact marker "[Answer to question <id>]",
        # so that marker only ever shows where the answer itself is
        return (f"Asked {i['id']}: the question is pending with the human operator. Do not wait for it: "
                "keep working. Later call check_answers() or await_answers(timeout_s=...) to collect the "
                "answer; it will also reach you as a message naming this id at your next turn boundary.\n"
                + _dumps({"id": i["id"], "state": i["state"], "question": question, "options": opts or None}))


def _answer_tools(tool: Callable[[Any], Any], s: _Session) -> None:
    """Register ``await_answers`` and ``check_answers`` with ``tool``."""
    from mcp.server.mcpserver.exceptions import ToolError

    @tool
    async def await_answers(
        timeout_s: Annotated[float, Field(
            description="How long to wait at most, in seconds: more than 0, at most 600 (larger values are cut to 600).")],
        ids: Annotated[list[str] | None, Field(
            description="Question ids from ask_user_async; omit for every question asked in this session.")] = None,
    ) -> str:
        """Wait for the human's answers to questions asked with ask_user_async. Returns as
        soon as every question in `ids` is answered (or closed, e.g. expired), or after
        `timeout_s` seconds (mandatory; 0 < timeout_s <= 600) saying which ids are still
        pending. The reply is a sentence, then JSON {"answered": [{"id", "questions",
        "answers" (question -> answer text), "surface", "actor", "answered_at" (Unix
        seconds)}], "closed": [{"id", "state", "warning"}], "pending": [ids], "timed_out"}.
        Answers returned here are not delivered to you again as messages. Errors: bad
        timeout, unknown id, hookd not running."""
        if not math.isfinite(timeout_s) or timeout_s <= 0:
            raise ToolError("timeout_s must be a number of seconds above 0 and at most 600 "
                            "(use check_answers to look without waiting)")
        note = ""
        if timeout_s > MAX_TIMEOUT_S:
            note = f"(timeout_s {timeout_s:g} was cut to {MAX_TIMEOUT_S:g} s.)"
            timeout_s = MAX_TIMEOUT_S
        return await s.wait_for(ids, timeout_s, note)

    @tool
    async def check_answers(
        ids: Annotated[list[str] | None, Field(
            description="Question ids from ask_user_async; omit for every question asked in this session.")] = None,
    ) -> str:
        """Look, without waiting, whether the human answered questions asked with
        ask_user_async. Same reply as await_answers (a sentence, then JSON with "answered",
        "closed", "pending", "timed_out"). Errors: unknown id, hookd not running."""
        return await s.wait_for(ids, 0.0)


def run(home: Home, builder: str) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    build_server(home, builder).run("stdio")
