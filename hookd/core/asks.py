"""Questions hookd asks or answers on its own: pre-registered answers (a PreToolUse hook answers
an AskUserQuestion from them), async asks (``hookd mcp``: the agent asks without blocking and
collects the answers later) and expiry of asks that set one.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any

import msgspec

from hookd.clock import when
from hookd.core.bus import EventBus, write_publish
from hookd.core.limits import MAX_OPTION_CHARS, MAX_OPTIONS, MAX_QUESTION_CHARS, check_answer_size, check_name
from hookd.core.outcomes import MAX_HOOK_REPLY, questions_of, session_remote
from hookd.core.state import Waiters
from hookd.harness.base import decode_answers
from hookd.models import BadRequest, Interaction, NotFound, resolved_event
from hookd.store import Store, Tx

log = logging.getLogger("hookd")

#: Longest ``await_answers`` wait (seconds).
MAX_AWAIT_S = 600.0
#: Longest expiry of an async ask (seconds).
MAX_EXPIRY_S = 7 * 86400.0


class Asks:
    """Pre-registered answers, async asks and expiry over ``store`` (``bus``: publishes;
    ``waiters``: a hook held for an interaction that expires is let go)."""

    def __init__(self, store: Store, bus: EventBus, waiters: Waiters):
        self.store = store
        self.bus = bus
        self.waiters = waiters
        self._expiry_changed = asyncio.Event()  # an ask with an expiry was added: run_expiry looks again

    async def preanswer(self, builder: str, question: str, answer: str, *,
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
            pid = tx.interactions.insert_preanswer(builder, question, answer, actor, at)
            tx.append_event("answer_preregistered", builder, None, at,
                            {"id": pid, "question": question, "answer": answer, "actor": actor})
            return pid

        pid = await write_publish(self.store, self.bus, tx_fn)
        return {"id": pid, "builder": builder, "question": question, "answer": answer}

    def preanswered(self, tx: Tx, i: Interaction, at: float, via: str) -> bytes:
        """A pre-registered answer for every question of a new AskUserQuestion: answer it
        from the hook that sees the call before it runs (a ``tool_before`` hook, named ``via``
        as its harness names it; returns the hook's stdout, rendered by the session's harness:
        ``preanswer_reply``; or b"")."""
        qs = questions_of(i)
        if not qs or not isinstance(i.input, dict):
            return b""
        pre = tx.interactions.open_preanswers(i.builder, [q.question for q in qs])
        if len(pre) != len({q.question for q in qs}):
            return b""
        remote = session_remote(tx, i)
        if remote is None:
            return b""  # (a desk-only harness: never asked, see Questions.question_asked)
        answers = {q.question: pre[q.question][1] for q in qs}
        actors = {pre[q.question][2] for q in qs} - {None}
        actor = actors.pop() if len(actors) == 1 else None
        reply = remote.preanswer_reply(i.input, answers)
        if len(reply) > MAX_HOOK_REPLY:
            return b""  # the menu asks the desk instead; the answer stays registered
        selections = decode_answers(i.questions, answers)
        if not tx.interactions.record_answer(i.id, expected_revision=i.revision, answers=answers, selections=selections,
                                decision=None, message=None, surface="hook", actor=actor, response_id=None, at=at):
            return b""
        tx.interactions.mark_answer_delivered(i.id, via=via, at=at)
        tx.interactions.use_preanswers([pre[q.question][0] for q in qs], i.id, at)
        tx.append_event("interaction_answered", i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "surface": "hook", "actor": actor,
            "response_id": None, "answers": answers, "decision": None, "message": None, "delivery": via,
        })
        tx.append_event("question_resolved", i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": "answered", "answers": answers,
            "selections": msgspec.to_builtins(selections), "surface": "hook", "actor": actor,
        })
        return reply

    # --- async asks (hookd mcp) ------------------------------------------------------------
    async def ask_async(self, builder: str, question: str, options: list[str] | None = None, *,
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
            tx.interactions.insert_interaction(i, permission_seen_at=None)
            tx.append_event("human_input_requested", builder, session_id, at, {
                "id": i.id, "kind": "async", "async": True, "question": question, "options": opts,
                "expires_at": i.expires_at, "author": author,
            })

        await write_publish(self.store, self.bus, tx_fn)
        if i.expires_at is not None:
            self._expiry_changed.set()
        return i

    async def await_answers(self, ids: list[str], timeout_s: float, *,
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
                    adopted = tx.inbox.adopt_queued(mids, via="await_answers", at=at)
                    if adopted:
                        tx.append_event("inbox_adopted", answered[0].builder, None, at,
                                        {"ids": adopted, "via": "await_answers"})

                await write_publish(self.store, self.bus, tx_fn)
        return {
            "answered": [{"id": i.id, "questions": [q.question for q in questions_of(i)], "answers": i.answers,
                          "surface": i.surface, "actor": i.actor, "answered_at": i.received_at or i.resolved_at}
                         for i in answered],
            "closed": [{"id": found[x].id, "state": found[x].state, "warning": found[x].warning}
                       for x in ids if found[x].state not in ("pending", "answered")],
            "pending": [found[x].id for x in ids if found[x].state == "pending"],
            "timed_out": timeout_s > 0 and any(found[x].state == "pending" for x in ids),
        }

    # --- expiry ---------------------------------------------------------------------------
    def expire(self, tx: Tx, i: Interaction, at: float) -> bool:
        warning = f"expired unanswered at {when(i.expires_at or at)}"
        if not tx.interactions.resolve_interaction(i.id, expected_state="pending", state="expired", answers=None,
                                      selections=None, surface=None, warning=warning, error=None, at=at):
            return False
        tx.append_event(resolved_event(i.kind), i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": "expired", "answers": None,
            "selections": None, "surface": None, "warning": warning,
        })
        self.waiters.release_after(tx, i.id)
        return True

    def _expire_due_tx(self, tx: Tx, at: float) -> int:
        return sum(self.expire(tx, i, at) for i in tx.interactions.due_expiries(at))

    async def run_expiry(self) -> None:
        """Expire interactions when their ``expires_at`` passes (sleeps until the next one)."""
        while not self.bus.closed:
            self._expiry_changed.clear()
            try:
                await write_publish(self.store, self.bus, self._expire_due_tx, time.time())
                nxt = await self.store.next_expiry()
            except Exception:
                log.exception("expiry pass failed")
                nxt = time.time() + 5
            wait = 3600.0 if nxt is None else max(0.0, nxt - time.time()) + 0.01
            try:
                await asyncio.wait_for(self._expiry_changed.wait(), min(wait, 3600.0))
            except TimeoutError:
                pass
