"""Answering from anywhere (DESIGN.md "Interactions"): remote answers to native questions and
permission prompts through a held PermissionRequest hook, pre-registered answers, async asks
(``hookd mcp``), expiry.

:class:`Answers` is mixed into :class:`hookd.service.Hookd`; its transaction functions run on
the store's writer (one transaction each), so an answer and its follow-up (the release of a
waiting hook, or an inbox message) commit together.

Lifecycle of a remote answer: accepted (compare-and-set ``pending`` -> ``answered`` at the
revision the human saw; ``received_at``) -> handed to a hook (``delivered_at``, via
``PermissionRequest`` or ``PreToolUse``) or to the inbox (async asks; delivered with the
message) -> adopted (``adopted_at``: the tool result carried it, or its inbox message was
adopted). If the desk answered first after all, the desk's outcome replaces it
(``answer_superseded``) and the remote text is kept as an inbox message: never dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Awaitable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import msgspec
import psutil

from hookd.harness import claude_code as cc
from hookd.harness.base import Payload, Question, decode_answers, encode_answer, injection_size
from hookd.models import (
    AnswerRequest,
    BadRequest,
    Conflict,
    Interaction,
    NotFound,
    Selection,
    resolved_event,
)
from hookd.store import Tx

if TYPE_CHECKING:
    from hookd.service import Hookd

log = logging.getLogger("hookd")

#: Longest ``await_answers`` wait (seconds).
MAX_AWAIT_S = 600.0
#: Longest expiry of an async ask (seconds).
MAX_EXPIRY_S = 7 * 86400.0
SURFACES = ("cli", "api", "web")
MAX_QUESTION_CHARS = 4000
MAX_OPTIONS = 12
MAX_OPTION_CHARS = 200
#: Longest human text in one answer: the free text of all its questions together, or a deny
#: message (:func:`hookd.harness.base.injection_size`: JSON-escaped UTF-8 bytes, as messages
#: are measured). It reaches the model in a tool result, or, kept as an inbox message (an
#: answer that came late or had no hook to go through), in one injection: with the question
#: lines and the late-answer framing it stays under :data:`hookd.harness.base.INJECTION_CAP`
#: (~9k characters; Claude Code 2.1.332 collapses longer hook context to a preview).
#: docs/decisions.md "Answer and message limits".
MAX_ANSWER_CHARS = 6000
#: Longest name of who answers or writes (``actor``, ``author``): framed into what the model
#: reads (``[human msg m-3 from <author> ...]``).
MAX_NAME_CHARS = 200
#: Largest reply (bytes) a remote answer may make a hook print. The compiled client reads at
#: most 1 MiB of reply, headers included (``REPLY_MAX``, hooks/client.c), the bash client
#: 1,048,576 characters; a reply over this is never offered to a hook (the answer goes the
#: way of one no hook holds for: an inbox message, or refused for a permission prompt).
MAX_HOOK_REPLY = 64 * 1024
#: How often (seconds) the agent's child processes are looked at while a hook is held for a
#: prompt whose tool runs as one (:meth:`Answers._watch_tool_start`).
TOOL_WATCH_S = 0.25
_canon = msgspec.json.Encoder(order="sorted")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _questions(i: Interaction) -> list[Question]:
    try:
        return msgspec.convert(i.questions or [], list[Question])
    except (msgspec.ValidationError, TypeError):
        return []


def _find_question(qs: list[Question], key: str) -> Question:
    """The question ``key`` names: its exact text, its 1-based number, or "" when there is
    only one. Raises BadRequest listing the questions."""
    if key == "" and len(qs) == 1:
        return qs[0]
    for q in qs:
        if q.question == key:
            return q
    if key.isdigit() and 1 <= int(key) <= len(qs):
        return qs[int(key) - 1]
    listing = "; ".join(f"{n}: {q.question!r}" for n, q in enumerate(qs, 1))
    if key == "":
        raise BadRequest(f"this interaction asks {len(qs)} questions; name one (--question TEXT or NUMBER): {listing}")
    raise BadRequest(f"no question {key!r} in this interaction; its questions: {listing}")


def _one_answer(q: Question, labels: list[str], text: str | None) -> str:
    """Validate one question's answer and encode it as Claude Code does."""
    names = [o.label for o in q.options]
    for label in labels:
        if label not in names:
            hint = f"options: {', '.join(repr(n) for n in names)}; use --text for free text" if names else "it has no options: use --text"
            raise BadRequest(f"{label!r} is not an option of {q.question!r} ({hint})")
    if len(set(labels)) != len(labels):
        raise BadRequest(f"an option is given twice for {q.question!r}")
    text = text if text is None else text.strip("\n")
    if text is not None and not text.strip():
        text = None
    if not labels and text is None:
        raise BadRequest(f"no answer for {q.question!r}: give an option or free text")
    if not q.multiSelect and (len(labels) > 1 or (labels and text is not None)):
        raise BadRequest(f"{q.question!r} takes one option or free text, not several")
    return encode_answer(labels, text)


def check_name(what: str, name: str | None) -> None:
    """Refuse (BadRequest) an ``actor`` / ``author`` longer than MAX_NAME_CHARS characters."""
    if name is not None and len(name) > MAX_NAME_CHARS:
        raise BadRequest(f"{what} is {len(name)} characters; the limit is {MAX_NAME_CHARS}")


def check_answer_size(texts: list[str | None], what: str = "the answer's text") -> None:
    """Refuse (BadRequest, saying the size and the limit) human text over MAX_ANSWER_CHARS
    (JSON-escaped UTF-8 bytes, all of ``texts`` together)."""
    size = sum(injection_size(t) - 2 for t in texts if t)
    if size > MAX_ANSWER_CHARS:
        raise BadRequest(f"{what} is {size} bytes as sent (JSON-escaped UTF-8); the limit is {MAX_ANSWER_CHARS}"
                         " (it must reach the agent whole, in one injection): shorten it")


def normalize_answer(i: Interaction, req: AnswerRequest) -> tuple[dict[str, str] | None, list[Selection] | None, str | None, str | None]:
    """(answers, selections, decision, message) of ``req`` for ``i``, validated.

    Questions (``question``, ``async``): every question answered, labels among its options,
    one label or free text for single-select; answers text-keyed as Claude Code reports them.
    Permissions: ``decision`` (or one option) ``allow`` | ``deny``; ``message`` / ``text``
    goes with deny. The free text (or deny message) is at most MAX_ANSWER_CHARS bytes as sent.
    Raises BadRequest with what is wrong.
    """
    check_name("actor", req.actor)
    if i.kind == "permission":
        if req.answers is not None or len(req.options) > 1:
            raise BadRequest("a permission prompt takes --option allow or --option deny [--text MESSAGE]")
        decision = req.decision or (req.options[0] if req.options else None)
        if decision not in ("allow", "deny"):
            raise BadRequest("a permission prompt takes --option allow or --option deny [--text MESSAGE]")
        message = req.message if req.message is not None else req.text
        if message is not None and not message.strip():
            message = None
        if decision == "allow" and message is not None:
            raise BadRequest("a message goes with deny (it is shown to the model); allow takes none")
        check_answer_size([message], "the deny message")
        return None, None, decision, message
    if req.decision is not None:
        raise BadRequest(f"{i.id} is a {i.kind}, not a permission prompt: answer with options or text")
    qs = _questions(i)
    if not qs:
        raise BadRequest(f"{i.id} has no readable questions")
    parts: dict[str, str] = {}
    texts: list[str | None] = []
    if req.answers is not None:
        if req.options or req.text is not None or req.question is not None:
            raise BadRequest("give either answers, or question/options/text, not both")
        for key, v in req.answers.items():
            q = _find_question(qs, key)
            names = [o.label for o in q.options]
            if isinstance(v, str):
                labels, text = ([v], None) if v in names else ([], v)
            elif isinstance(v, list):
                labels, text = list(v), None
            else:
                labels, text = list(v.options), v.text
            texts.append(text)
            parts[q.question] = _one_answer(q, labels, text)
    else:
        q = _find_question(qs, req.question or "")
        texts.append(req.text)
        parts[q.question] = _one_answer(q, list(req.options), req.text)
    check_answer_size(texts)
    missing = [q.question for q in qs if q.question not in parts]
    if missing:
        raise BadRequest(f"answer every question of {i.id}; missing: {'; '.join(repr(m) for m in missing)}")
    answers = {q.question: parts[q.question] for q in qs}
    return answers, decode_answers(i.questions, answers), None, None


def answer_text(i: Interaction, answers: dict[str, str] | None, decision: str | None, message: str | None,
                late: str | None = None) -> str:
    """The inbox text of an answer: ``[Answer to question <id>] Q: ... A: ...``; a late one
    (``late``: why it was not used) says so: ``[Late answer to question <id> (not used: ...)]``."""
    lines = [answer_head(i, late)]
    if i.kind == "permission":
        return lines[0] + f" {decision}" + (f": {message}" if message else "")
    for q, a in (answers or {}).items():
        lines.append(f"Q: {_clip(q, 500)}\nA: {a}")  # (the question is the agent's own text)
    return "\n".join(lines)


def answer_head(i: Interaction, late: str | None = None) -> str:
    """The first line of :func:`answer_text`: ``[Answer to question <id>]``, or
    ``[Late answer to question <id> (not used: <late>)]``."""
    head = f"Late answer to {{}} (not used: {late})" if late else "Answer to {}"
    if i.kind == "permission":
        return "[" + head.format(f"permission prompt {i.id} for {i.tool_name}") + "]"
    return "[" + head.format(f"question {i.id}") + "]"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def hook_body(i: Interaction) -> bytes:
    """The held PermissionRequest hook's stdout for a remote answer to ``i``. An
    AskUserQuestion allow always carries the original input plus every answer; a permission
    allow carries the tool's input where Claude Code needs it (:func:`cc.allow_input`)."""
    if i.kind == "permission":
        assert i.decision in ("allow", "deny")
        if i.decision == "allow":
            return cc.permission_decision("allow", updated_input=cc.allow_input(i.tool_name, i.input))
        return cc.permission_decision(i.decision, message=i.message)
    assert i.answers, "never a decision without answers"
    base = i.input if isinstance(i.input, dict) else {"questions": i.questions}
    return cc.permission_decision("allow", updated_input={**base, "answers": i.answers})


def _late_reason(i: Interaction) -> str:
    """Why a late answer to ``i`` was not used, for the agent: what happened instead."""
    if i.state == "answered":
        what = i.decision if i.kind == "permission" else "; ".join(str(a) for a in (i.answers or {}).values())
        return f"already answered at the {i.surface or 'desk'}: {_clip(what, 300)}" if what else "already answered"
    return f"the question was already {i.state}"


def _child_running(pid: int, since: float, before: set[int] | None, tool_name: str | None,
                   tool_input: Any) -> tuple[list[str] | None, set[int]]:
    """(the argv of a new child process of ``pid`` that runs this tool call
    (:func:`cc.runs_tool`), or None; the pids of its children now). New: not among ``before``
    (the children at an earlier look), or, at the first look (``before`` None), started at or
    after ``since`` (UNIX seconds, less a clock tick). Reads /proc: run it off the event loop."""
    try:
        children = _children(pid)
    except psutil.Error:
        return None, set()
    for child in children:
        try:
            if (child.pid in before) if before is not None else (child.create_time() < since - 0.05):
                continue
            argv = child.cmdline()
        except psutil.Error:
            continue
        if cc.runs_tool(tool_name, tool_input, argv):
            return argv, set()
    return None, {c.pid for c in children}


def _children(pid: int) -> list[psutil.Process]:
    """The child processes of ``pid``: from Linux's /proc/PID/task/TID/children (about 20 us),
    else psutil's scan of every process (milliseconds)."""
    try:
        kids: set[int] = set()
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.update(int(x) for x in f.read().split())
    except OSError:
        return psutil.Process(pid).children()
    out = []
    for k in kids:
        try:
            out.append(psutil.Process(k))
        except psutil.Error:
            continue
    return out


def _same_selections(a: list[Selection] | None, b: list[Selection] | None) -> bool:
    def key(s: list[Selection] | None) -> set[tuple[str, tuple[str, ...], str | None]]:
        return {(x.question, tuple(x.labels), x.other) for x in (s or [])}
    return key(a) == key(b)


class DaemonStopping(Exception):
    """A held hook let go because the daemon is stopping (SIGTERM: a restart, an upgrade): its
    payload is stored, and its client may come back to the next daemon and wait on the same
    interaction (:meth:`Answers.reattach`)."""


class Answers:
    """Answer, hold, ask-async and expiry logic of :class:`hookd.service.Hookd`."""

    _waiters: dict[str, set[asyncio.Future[bytes]]]
    _expiry_changed: asyncio.Event
    #: the daemon is stopping: no hook is held from here on (release_all)
    _stopping = False

    # --- waiting hooks ------------------------------------------------------------------
    def _release(self, iid: str, body: bytes = b"") -> None:
        for fut in self._waiters.get(iid, ()):
            if not fut.done():
                fut.set_result(body)

    def _release_after(self: "Hookd", tx: Tx, iid: str, body: bytes = b"") -> None:  # type: ignore[misc]
        if iid in self._waiters:
            tx.after_commit.append(lambda: self._release(iid, body))

    def held(self) -> list[str]:
        """Ids of the interactions a hook is being held for right now."""
        return sorted(iid for iid, ws in self._waiters.items() if any(not f.done() for f in ws))

    def release_all(self) -> None:
        """Shutdown: let every held hook go, and hold none from here on. Each one's :meth:`hold`
        raises DaemonStopping (its client reconnects to the next daemon and waits on); the
        desk can answer meanwhile."""
        self._stopping = True
        for iid in list(self._waiters):
            for fut in self._waiters[iid]:
                if not fut.done():
                    fut.set_exception(DaemonStopping(iid))

    async def reattach(self: "Hookd", iid: str, builder: str) -> tuple[str, asyncio.Future[bytes]] | None:  # type: ignore[misc]
        """A PermissionRequest hook already stored (its delivery id is known) comes back,
        after the daemon that held it stopped, asking to wait on interaction ``iid`` again
        (header ``X-Hookd-Hold``). Returns (iid, its waiter) for :meth:`hold` when ``iid`` is
        ``builder``'s question or permission prompt and still waits for an answer, or has a
        remote answer no hook returned yet; else None (the hook gets an empty reply)."""
        i = await self.store.interaction(iid)
        if i is None or i.builder != builder or i.kind == "async":
            return None
        if not (i.state == "pending" or (i.state == "answered" and i.received_at is not None and i.delivered_at is None)):
            return None
        log.info("held PermissionRequest hook for %s is back after a restart", iid)
        return iid, self.register_waiter(iid)

    def register_waiter(self, iid: str) -> asyncio.Future[bytes]:
        """Called inside the hook's own transaction, so an answer committed right after it
        already finds the waiting hook."""
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(iid, set()).add(fut)
        return fut

    async def hold(self: "Hookd", iid: str, fut: asyncio.Future[bytes], timeout_s: float,  # type: ignore[misc]
                   disconnected: Awaitable[Any]) -> bytes:
        """Hold a PermissionRequest hook for interaction ``iid`` until a remote answer (returns
        the decision JSON), the desk resolves it (b""), the hook goes away (Esc / No at the
        desk: Claude Code SIGTERMs it; the interaction ends ``dismissed``), or ``timeout_s``
        seconds pass (b"": the prompt stays open at the desk). Event-driven. A decision
        returned is not delivered yet: the caller sends it, then says whether the hook read
        it (:meth:`reply_read`). While it holds, a tool whose run shows before it ends (a Bash
        command: :meth:`_watch_tool_start`) proves the desk allowed it. Raises DaemonStopping
        when the daemon stops meanwhile, or has begun to."""
        disc = asyncio.ensure_future(disconnected)
        watch: asyncio.Future[None] | None = None
        try:
            if self._stopping:
                raise DaemonStopping(iid)
            i = await self.store.interaction(iid)
            if i is None:
                return b""
            if i.state == "answered" and i.received_at is not None and i.delivered_at is None:
                body = hook_body(i)  # answered before this hook arrived
            elif i.state != "pending":
                return b""
            else:
                if i.kind == "permission" and i.tool_name in cc.RUNS_AS_CHILD:
                    watch = asyncio.ensure_future(self._watch_tool_start(i))
                done, _ = await asyncio.wait({fut, disc}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
                if fut not in done:
                    if disc in done:
                        await self._write_publish(self._hook_gone_tx, iid, time.time())
                    return b""
                body = fut.result()
                if not body:
                    return b""
                if disc.done():
                    await self._write_publish(self._hook_gone_tx, iid, time.time())
                    return b""
            return body
        finally:
            ws = self._waiters.get(iid)
            if ws is not None:
                ws.discard(fut)
                if not ws:
                    del self._waiters[iid]
            if fut.done() and not fut.cancelled():
                fut.exception()  # (a DaemonStopping never looked at is not an error)
            disc.cancel()
            if watch is not None:
                watch.cancel()

    async def _watch_tool_start(self: "Hookd", i: Interaction) -> None:  # type: ignore[misc]
        """Claude Code 2.1.332 does nothing to a held PermissionRequest hook when the desk
        allows the tool (no signal, no transcript row, no other hook until the tool's
        PostToolUse: docs/harness-claude-code.md), and a Bash command may run for minutes.
        What shows at once is the command's process, a child of the agent's
        (:func:`cc.runs_tool`): seen while the hook is held, the desk allowed it. The agent's
        children are looked at every TOOL_WATCH_S seconds (off the event loop) while the hook
        is held; nothing is watched without the agent's pid (``CLAUDE_PID``)."""
        pid = self._pids.get(i.session_id) if i.session_id else None
        if pid is None:
            return
        before: set[int] | None = None  # the agent's children at the first look
        try:
            while True:
                argv, kids = await asyncio.to_thread(_child_running, pid, i.created_at, before, i.tool_name, i.input)
                if argv is not None:
                    await self._write_publish(self._desk_allowed_tx, i.id, time.time())
                    return
                if before is None:
                    before = kids
                await asyncio.sleep(TOOL_WATCH_S)
        except Exception:
            log.exception("watching %s's tool process failed; its PostToolUse will resolve it", i.id)

    def _desk_allowed_tx(self: "Hookd", tx: Tx, iid: str, at: float) -> None:  # type: ignore[misc]
        """The held prompt's tool is running: the desk allowed it. Resolved ``answered`` /
        ``allow`` by ``terminal`` now (its PostToolUse attaches the tool_use_id later), and the
        held hook is let go with no decision (Claude Code no longer reads it)."""
        i = tx.interaction(iid)
        if i is None or i.state != "pending":
            return
        if not tx.resolve_interaction(iid, expected_state="pending", state="answered", answers=None,
                                      selections=None, surface="terminal", warning=None, error=None, at=at,
                                      decision="allow"):
            return
        data: dict[str, Any] = {"id": iid, "kind": "permission", "tool_name": i.tool_name, "tool_use_id": None,
                                "outcome": "answered", "decision": "allow", "surface": "terminal",
                                "inferred_from": "tool running"}
        if i.agent_id:
            data["agent_id"] = i.agent_id
        tx.append_event("permission_resolved", i.builder, i.session_id, at, data)
        self._release_after(tx, iid)

    async def _write_publish(self: "Hookd", fn: Any, *args: Any) -> Any:  # type: ignore[misc]
        result, events = await self.store.write(fn, *args)
        if events:
            await self.bus.publish()
        return result

    async def reply_read(self: "Hookd", iid: str, read: bool | None) -> None:  # type: ignore[misc]
        """A held hook was sent the remote answer to ``iid`` (:meth:`hold`): ``read`` True when
        its client read the whole reply and closed (``answer_delivered``, via
        PermissionRequest); False when it went away leaving it unread (Esc or No at the desk
        SIGTERMs it; a reply it cannot take: :meth:`_hook_gone_tx`); None when that is not
        known (the daemon closed first): nothing is recorded, the tool's own hooks settle it."""
        if read:
            await self._write_publish(self._hook_delivered_tx, iid, time.time())
        elif read is False:
            await self._write_publish(self._hook_gone_tx, iid, time.time())

    def _hook_delivered_tx(self, tx: Tx, iid: str, at: float) -> None:
        i = tx.interaction(iid)
        if i is not None and tx.mark_answer_delivered(iid, via="PermissionRequest", at=at):
            tx.append_event("answer_delivered", i.builder, i.session_id, at,
                            {"id": iid, "kind": i.kind, "via": "PermissionRequest"})

    def _hook_gone_tx(self: "Hookd", tx: Tx, iid: str, at: float) -> None:  # type: ignore[misc]
        """The held hook went away before the prompt closed: Claude Code SIGTERMs it when the
        desk presses Esc or No."""
        i = tx.interaction(iid)
        if i is None:
            return
        if i.state == "pending":
            warning = "the held PermissionRequest hook was cancelled (SIGTERM): Esc or No at the desk"
            if tx.resolve_interaction(iid, expected_state="pending", state="dismissed", answers=None,
                                      selections=None, surface="terminal", warning=warning, error=None, at=at):
                tx.append_event(resolved_event(i.kind), i.builder, i.session_id, at, {
                    "id": iid, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": "dismissed",
                    "answers": None, "selections": None, "surface": "terminal", "warning": warning,
                    "inferred_from": "hook cancelled",
                })
        elif i.state == "answered" and i.received_at is not None and i.delivered_at is None:
            self._supersede(tx, i, at, state="dismissed", answers=None, selections=None, decision=None,
                            error=None, reason="the held hook ended without reading the remote answer"
                            " (Esc or No at the desk as it arrived)")

    def _supersede(self, tx: Tx, i: Interaction, at: float, *, state: str, answers: Any, selections: Any,
                   decision: str | None, error: str | None, reason: str) -> None:
        """The desk's outcome replaces a remote answer that did not reach the tool; the
        remote text is kept as an inbox message."""
        m = tx.insert_message(builder=i.builder, session_id=i.session_id, agent_id=i.agent_id,
                              author=i.actor or "human",
                              text=answer_text(i, i.answers, i.decision, i.message, late=reason),
                              key=None, at=at)
        tx.append_event("inbox_queued", i.builder, i.session_id, at, {
            "id": m.id, "author": m.author, "chars": len(m.text), "agent_id": i.agent_id, "key": None,
            "late_answer_to": i.id,
        })
        warning = f"{reason}; the remote answer did not reach the tool and was kept as inbox message {m.id}"
        tx.supersede_answer(i.id, state=state, answers=answers, selections=selections, decision=decision,
                            surface="terminal", warning=warning, error=error, at=at)
        tx.set_inbox_message(i.id, m.id)
        tx.append_event("answer_superseded", i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "outcome": state, "answers": answers,
            "selections": msgspec.to_builtins(selections), "decision": decision, "surface": "terminal",
            "remote": {"answers": i.answers, "decision": i.decision, "message": i.message,
                       "surface": i.surface, "actor": i.actor, "response_id": i.response_id},
            "message_id": m.id, "reason": reason,
        })

    def _inbox_answers_after(self, tx: Tx, i: Any, at: float, *, outcome: str, answers: Any,
                             surface: str | None) -> None:
        """Question ``i`` (an Interaction or InteractionHead) was just resolved ``outcome``
        without a remote answer: an answer a human sent meanwhile through the inbox (no hook
        could carry it: the daemon had restarted, holding was off, the session had no hooks)
        is still queued, since nothing is delivered into a turn sitting on an open question.
        The same answer as the desk's: adopted (``via: "desk"``: the tool result carried it);
        another: its text says it was not used and what was (``answer_superseded``), as a
        late answer's does, so that the model never gets two answers unexplained."""
        if i.kind != "question":
            return
        head = answer_head(i)
        for m in tx.queued_with_prefix(i.builder, head + "\n"):
            if outcome == "answered" and answers and m.text == answer_text(i, answers, None, None):
                if tx.adopt_queued([m.id], via="desk", at=at):
                    tx.append_event("inbox_adopted", i.builder, m.session_id, at, {"ids": [m.id], "via": "desk"})
                continue
            if outcome == "answered":
                what = "; ".join(str(a) for a in (answers or {}).values())
                late = f"already answered at the {surface or 'desk'}: {_clip(what, 300)}" if what else "already answered"
            else:
                late = f"the question was already {outcome}"
            if not tx.set_message_text(m.id, answer_head(i, late) + m.text[len(head):]):
                continue
            tx.append_event("answer_superseded", i.builder, i.session_id, at, {
                "id": i.id, "kind": i.kind, "outcome": outcome, "answers": answers, "selections": None,
                "decision": None, "surface": surface, "remote": None, "message_id": m.id,
                "reason": "the desk answered first" if outcome == "answered" else f"the question was {outcome}",
            })

    def _settle_remote(self, tx: Tx, i: Interaction, p: Payload, at: float, *, outcome: str,
                       answers: Any, selections: Any, decision: str | None, error: str | None) -> None:
        """The tool call of an interaction answered remotely ended: adopted when the tool got
        that answer, superseded when the desk won the race."""
        if i.kind == "permission":
            same = decision == i.decision
        else:
            same = outcome == "answered" and _same_selections(i.selections, selections)
        if same:
            if tx.mark_adopted(i.id, at):
                tx.append_event("answer_adopted", i.builder, i.session_id, at, {
                    "id": i.id, "kind": i.kind, "via": p.hook_event_name,
                    "tool_use_id": getattr(p, "tool_use_id", None),
                })
            return
        self._supersede(tx, i, at, state=outcome, answers=answers, selections=selections, decision=decision,
                        error=error, reason="the desk answered first")

    # --- answers -------------------------------------------------------------------------
    async def answer(self: "Hookd", interaction_id: str, req: AnswerRequest, *,  # type: ignore[misc]
                     surface: str = "api") -> dict[str, Any]:
        """Answer interaction ``interaction_id`` (its id or tool_use_id) for a human.

        req: the answer (:class:`hookd.models.AnswerRequest`); surface: ``cli`` | ``api`` |
        ``web``. Returns the receipt ``{"interaction", "response_id", "duplicate",
        "delivery": "hook"|"inbox", "message_id", "warning"}``. Idempotent by
        ``response_id``: the same id and content return the first receipt (``duplicate``
        true). Raises NotFound (unknown id), BadRequest (the answer does not fit the
        questions), Conflict (the same response_id with other content; a stale revision or
        another input than shown; the interaction is already resolved or expired: the answer
        is then kept as an inbox message for the builder, named in the message).
        """
        if surface not in SURFACES:
            raise BadRequest(f"surface must be one of {', '.join(SURFACES)}")
        if req.response_id is not None and not 0 < len(req.response_id) <= 200:
            raise BadRequest("response_id must be 1 to 200 characters")
        (status, receipt), events = await self.store.write(self._answer_tx, interaction_id, req, surface, time.time())
        if events:
            await self.bus.publish()
        if status == "refused":
            raise Conflict(receipt["reason"])
        return receipt

    def _answer_tx(self: "Hookd", tx: Tx, iid: str, req: AnswerRequest, surface: str,  # type: ignore[misc]
                   at: float) -> tuple[str, dict[str, Any]]:
        i = tx.interaction(iid)
        if i is None:
            raise NotFound(f"no interaction {iid!r}")
        answers, selections, decision, message = normalize_answer(i, req)
        content = _canon.encode({"interaction": i.id, "answers": answers, "decision": decision, "message": message})
        if req.response_id is not None:
            prev = tx.response(req.response_id)
            if prev is not None:
                if prev[1] != content:
                    raise Conflict(f"response_id {req.response_id!r} was already used for another answer"
                                   f" (to {prev[0]}); use a new response_id")
                receipt = msgspec.json.decode(prev[2])
                receipt["duplicate"] = True
                return ("refused" if receipt.get("refused") else "duplicate"), receipt
        if i.state == "pending" and i.expires_at is not None and i.expires_at <= at:
            self._expire(tx, i, at)
            i = tx.interaction(i.id)
            assert i is not None
        if req.input_hash is not None and req.input_hash != i.input_hash:
            raise Conflict(f"this answer was made for another input (input_hash {req.input_hash}) than"
                           f" {i.id} shows ({i.input_hash}); look at it again")
        if i.state == "pending" and req.revision is not None and req.revision != i.revision:
            raise Conflict(f"{i.id} is at revision {i.revision}, not {req.revision} (it changed since you saw"
                           " it, or that revision never existed); look at it again")
        author = req.actor or "human"
        if i.state != "pending":
            by = f" by {i.surface}" if i.surface else ""
            reason = f"{i.id} is already {i.state}{by} at {_iso(i.resolved_at or at)}"
            if i.surface == "terminal":
                reason = "the desk answered first: " + reason
            return self._keep_late(tx, i, req, content, answers, decision, message, author, at, reason)
        route: str | None
        if i.kind == "async":
            route = "inbox"
        elif i.id in self._waiters or (i.kind == "question" and not tx.permission_seen(i.id)
                                       and i.session_id is not None and tx.session_has_hooks(i.session_id)):
            route = "hook"  # a held hook waits, or the PermissionRequest hook is still to come
        else:
            route = None
        reply = 0
        if route == "hook":
            reply = len(hook_body(msgspec.structs.replace(i, answers=answers, decision=decision, message=message)))
            if reply > MAX_HOOK_REPLY:
                route = None  # never offered to a hook that cannot take it whole
        if route is None:
            harness = tx.session_harness(i.session_id) if i.session_id is not None else None
            if reply > MAX_HOOK_REPLY:
                reason = (f"the hook's reply for this answer would be {reply} bytes (the tool's input with the"
                          f" answer), over the {MAX_HOOK_REPLY} a hook takes, so it can only be answered at the desk")
            elif harness in ("claw", "claw-code-go"):
                reason = (f"{harness} reads the answer to {i.id} at its own prompt (no hook can carry one),"
                          " so it can only be answered at the desk")
            elif i.session_id is not None and not tx.session_has_hooks(i.session_id):
                reason = (f"{i.id} was seen only in a transcript (no hook came from its session), so no hook"
                          " can carry an answer; it can only be answered at the desk")
            else:
                reason = (f"no hook is holding {i.id} (holding is off, or the daemon restarted since it was"
                          " asked), so it can only be answered at the desk")
            if i.kind == "permission":
                return self._keep_late(tx, i, req, content, answers, decision, message, author, at, reason,
                                       late="no hook was holding the permission prompt")
            # a question: the text still reaches the agent, as a message
            m = self._queue_answer(tx, i, answers, decision, message, author, at)
            receipt = {"interaction": msgspec.to_builtins(i), "response_id": req.response_id, "duplicate": False,
                       "delivery": "inbox", "message_id": m,
                       "warning": reason + f"; your answer was queued as inbox message {m} instead"}
            if req.response_id is not None:
                tx.insert_response(req.response_id, i.id, content, msgspec.json.encode(receipt), at)
            return "ok", receipt
        if not tx.record_answer(i.id, expected_revision=i.revision, answers=answers, selections=selections,
                                decision=decision, message=message, surface=surface, actor=req.actor,
                                response_id=req.response_id, at=at):
            raise Conflict(f"{i.id} changed while it was being answered; look at it again")
        done = tx.interaction(i.id)
        assert done is not None
        message_id = None
        if route == "inbox":
            message_id = self._queue_answer(tx, done, answers, decision, message, author, at)
            tx.set_inbox_message(i.id, message_id)
            done = tx.interaction(i.id)
            assert done is not None
        else:
            self._release_after(tx, i.id, hook_body(done))
        data = {"id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "surface": surface, "actor": req.actor,
                "response_id": req.response_id, "answers": answers, "decision": decision, "message": message,
                "delivery": route}
        tx.append_event("interaction_answered", i.builder, i.session_id, at, data)
        tx.append_event(resolved_event(i.kind), i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": "answered", "answers": answers,
            "selections": msgspec.to_builtins(selections), "decision": decision, "message": message,
            "surface": surface, "actor": req.actor,
        })
        receipt = {"interaction": msgspec.to_builtins(done), "response_id": req.response_id, "duplicate": False,
                   "delivery": route, "message_id": message_id, "warning": None}
        if req.response_id is not None:
            tx.insert_response(req.response_id, i.id, content, msgspec.json.encode(receipt), at)
        return "ok", receipt

    def _queue_answer(self, tx: Tx, i: Interaction, answers: Any, decision: str | None, message: str | None,
                      author: str, at: float, late: str | None = None) -> str:
        m = tx.insert_message(builder=i.builder, session_id=None if i.kind == "async" else i.session_id,
                              agent_id=i.agent_id, author=author,
                              text=answer_text(i, answers, decision, message, late=late), key=None, at=at)
        tx.append_event("inbox_queued", i.builder, m.session_id, at, {
            "id": m.id, "author": author, "chars": len(m.text), "agent_id": i.agent_id, "key": None,
            "answer_to": i.id,
        })
        return m.id

    def _keep_late(self, tx: Tx, i: Interaction, req: AnswerRequest, content: bytes, answers: Any,
                   decision: str | None, message: str | None, author: str, at: float, reason: str,
                   late: str | None = None) -> tuple[str, dict[str, Any]]:
        """Refuse an answer to a closed interaction; a human's text is kept as an inbox
        message (never dropped) that says it came late. A permission decision is kept only for
        its deny message (a bare allow/deny means nothing to the model). The refusal is the
        receipt of its response_id."""
        message_id = None
        if i.kind != "permission" or message is not None:
            message_id = self._queue_answer(tx, i, answers, decision, message, author, at, late=late or _late_reason(i))
            reason += f"; your answer was kept as inbox message {message_id} for {i.builder}"
        tx.append_event("answer_refused", i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "reason": reason, "message_id": message_id, "response_id": req.response_id,
        })
        receipt = {"refused": True, "reason": reason, "message_id": message_id, "response_id": req.response_id}
        if req.response_id is not None:
            tx.insert_response(req.response_id, i.id, content, msgspec.json.encode(receipt), at)
        return "refused", receipt

    # --- pre-registered answers ------------------------------------------------------------
    async def preanswer(self: "Hookd", builder: str, question: str, answer: str, *,  # type: ignore[misc]
                        actor: str | None = None) -> dict[str, Any]:
        """Register ``answer`` for the next AskUserQuestion of ``builder`` asking exactly
        ``question``: its PreToolUse hook answers it (no menu appears) when every question
        of the call has one. answer: an option label, labels joined with ", ", or free text.
        Returns ``{"id", "builder", "question", "answer"}``. Raises BadRequest."""
        if not question.strip() or not answer.strip():
            raise BadRequest("question and answer must not be empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise BadRequest(f"question must be at most {MAX_QUESTION_CHARS} characters")
        check_answer_size([answer])
        check_name("actor", actor)
        at = time.time()

        def tx_fn(tx: Tx) -> int:
            pid = tx.insert_preanswer(builder, question, answer, actor, at)
            tx.append_event("answer_preregistered", builder, None, at,
                            {"id": pid, "question": question, "answer": answer, "actor": actor})
            return pid

        pid = await self._write_publish(tx_fn)
        return {"id": pid, "builder": builder, "question": question, "answer": answer}

    def _preanswered(self, tx: Tx, i: Interaction, at: float) -> bytes:
        """A pre-registered answer for every question of a new AskUserQuestion: answer it
        from its PreToolUse hook (returns the hook's stdout, or b"")."""
        qs = _questions(i)
        if not qs or not isinstance(i.input, dict):
            return b""
        pre = tx.open_preanswers(i.builder, [q.question for q in qs])
        if len(pre) != len({q.question for q in qs}):
            return b""
        answers = {q.question: pre[q.question][1] for q in qs}
        actors = {pre[q.question][2] for q in qs} - {None}
        actor = actors.pop() if len(actors) == 1 else None
        reply = cc.pre_tool_answer({**i.input, "answers": answers})
        if len(reply) > MAX_HOOK_REPLY:
            return b""  # the menu asks the desk instead; the answer stays registered
        selections = decode_answers(i.questions, answers)
        if not tx.record_answer(i.id, expected_revision=i.revision, answers=answers, selections=selections,
                                decision=None, message=None, surface="hook", actor=actor, response_id=None, at=at):
            return b""
        tx.mark_answer_delivered(i.id, via="PreToolUse", at=at)
        tx.use_preanswers([pre[q.question][0] for q in qs], i.id, at)
        tx.append_event("interaction_answered", i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "surface": "hook", "actor": actor,
            "response_id": None, "answers": answers, "decision": None, "message": None, "delivery": "PreToolUse",
        })
        tx.append_event("question_resolved", i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": "answered", "answers": answers,
            "selections": msgspec.to_builtins(selections), "surface": "hook", "actor": actor,
        })
        return reply

    # --- async asks (hookd mcp) ------------------------------------------------------------
    async def ask_async(self: "Hookd", builder: str, question: str, options: list[str] | None = None, *,  # type: ignore[misc]
                        session_id: str | None = None, expires_in_s: float | None = None,
                        author: str | None = None) -> Interaction:
        """Ask the humans ``question`` for ``builder``'s agent without blocking it (ADR-081).

        options: up to 12 distinct labels (None: free text only); expires_in_s: seconds until
        the question ends ``expired`` unanswered (None: never). Returns the interaction
        (kind ``async``, id ``ask_…``); event ``human_input_requested`` (async: true). The
        answer reaches the agent through ``await_answers``/``check_answers`` and as an inbox
        message ``[Answer to question <id>] Q: ... A: ...`` at its next turn boundary.
        Raises BadRequest.
        """
        question = question.strip()
        if not question or len(question) > MAX_QUESTION_CHARS:
            raise BadRequest(f"question must be 1 to {MAX_QUESTION_CHARS} characters")
        opts = [o.strip() for o in (options or [])]
        if len(opts) > MAX_OPTIONS or any(not o for o in opts) or len(set(opts)) != len(opts):
            raise BadRequest(f"options must be at most {MAX_OPTIONS} distinct, non-empty labels")
        if any(len(o) > MAX_OPTION_CHARS for o in opts):
            raise BadRequest(f"an option label must be at most {MAX_OPTION_CHARS} characters")
        check_name("author", author)
        if expires_in_s is not None and not 0 < expires_in_s <= MAX_EXPIRY_S:
            raise BadRequest(f"expires_in_s must be more than 0 and at most {MAX_EXPIRY_S:.0f} seconds")
        at = time.time()
        i = Interaction(
            id=f"ask_{secrets.token_hex(6)}", kind="async", builder=builder, session_id=session_id,
            agent_id=None, tool_name=None, tool_use_id=None, state="pending",
            questions=[{"question": question, "header": None, "options": [{"label": o} for o in opts],
                        "multiSelect": False}],
            answers=None, selections=None, surface=None, warning=None, error=None, created_at=at,
            resolved_at=None, revision=1, actor=author,
            expires_at=None if expires_in_s is None else at + expires_in_s,
        )

        def tx_fn(tx: Tx) -> None:
            tx.insert_interaction(i, permission_seen_at=None)
            tx.append_event("human_input_requested", builder, session_id, at, {
                "id": i.id, "kind": "async", "async": True, "question": question, "options": opts,
                "expires_at": i.expires_at, "author": author,
            })

        await self._write_publish(tx_fn)
        if i.expires_at is not None:
            self._expiry_changed.set()
        return i

    async def await_answers(self: "Hookd", ids: list[str], timeout_s: float, *,  # type: ignore[misc]
                            collect: bool = True) -> dict[str, Any]:
        """Wait until every interaction in ``ids`` is resolved, or ``timeout_s`` seconds
        (0: just check; at most MAX_AWAIT_S). Returns ``{"answered": [{id, questions,
        answers, surface, actor, answered_at}], "closed": [{id, state, warning}], "pending":
        [ids], "timed_out": bool}``. collect: an async answer returned here is adopted, so its
        inbox copy is not delivered again. Raises BadRequest, NotFound (unknown ids).
        Event-driven: woken by every commit."""
        if not ids or len(ids) > 100:
            raise BadRequest("give 1 to 100 interaction ids")
        if not 0 <= timeout_s <= MAX_AWAIT_S:
            raise BadRequest(f"timeout_s must be between 0 and {MAX_AWAIT_S:.0f}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            version = self.bus.version
            found = await self.store.interactions_by_ids(ids)
            missing = [x for x in ids if x not in found]
            if missing:
                raise NotFound(f"no interaction {', '.join(missing)}")
            open_ = [x for x in ids if found[x].state == "pending"]
            remaining = deadline - loop.time()
            if not open_ or remaining <= 0 or self.bus.closed:
                break
            await self.bus.wait(remaining, since=version)
        answered = [found[x] for x in ids if found[x].state == "answered"]
        if collect:
            mids = [i.inbox_message_id for i in answered if i.kind == "async" and i.inbox_message_id and i.adopted_at is None]
            if mids:
                at = time.time()

                def tx_fn(tx: Tx) -> None:
                    adopted = tx.adopt_queued(mids, via="await_answers", at=at)
                    if adopted:
                        tx.append_event("inbox_adopted", answered[0].builder, None, at,
                                        {"ids": adopted, "via": "await_answers"})

                await self._write_publish(tx_fn)
        return {
            "answered": [{"id": i.id, "questions": [q.question for q in _questions(i)], "answers": i.answers,
                          "surface": i.surface, "actor": i.actor, "answered_at": i.received_at or i.resolved_at}
                         for i in answered],
            "closed": [{"id": found[x].id, "state": found[x].state, "warning": found[x].warning}
                       for x in ids if found[x].state not in ("pending", "answered")],
            "pending": [found[x].id for x in ids if found[x].state == "pending"],
            "timed_out": timeout_s > 0 and any(found[x].state == "pending" for x in ids),
        }

    # --- expiry ---------------------------------------------------------------------------
    def _expire(self: "Hookd", tx: Tx, i: Interaction, at: float) -> bool:  # type: ignore[misc]
        warning = f"expired unanswered at {_iso(i.expires_at or at)}"
        if not tx.resolve_interaction(i.id, expected_state="pending", state="expired", answers=None,
                                      selections=None, surface=None, warning=warning, error=None, at=at):
            return False
        tx.append_event(resolved_event(i.kind), i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": "expired", "answers": None,
            "selections": None, "surface": None, "warning": warning,
        })
        self._release_after(tx, i.id)
        return True

    def _expire_due_tx(self, tx: Tx, at: float) -> int:
        return sum(self._expire(tx, i, at) for i in tx.due_expiries(at))

    async def run_expiry(self: "Hookd") -> None:  # type: ignore[misc]
        """Expire interactions when their ``expires_at`` passes (sleeps until the next one)."""
        while not self.bus.closed:
            self._expiry_changed.clear()
            try:
                await self._write_publish(self._expire_due_tx, time.time())
                nxt = await self.store.next_expiry()
            except Exception:
                log.exception("expiry pass failed")
                nxt = time.time() + 5
            wait = 3600.0 if nxt is None else max(0.0, nxt - time.time()) + 0.01
            try:
                await asyncio.wait_for(self._expiry_changed.wait(), min(wait, 3600.0))
            except TimeoutError:
                pass
