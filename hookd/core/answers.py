"""Answering from anywhere (docs/decisions.md "Interactions"): a human's answer to a native
question, a permission prompt or an async ask, validated against what was asked and routed to
the hook held for it, to the inbox, or refused (kept as a late inbox message).

:class:`Answers` runs each answer in one transaction on the store's writer, so an answer and
its follow-up (the release of a waiting hook, or an inbox message) commit together. What then
becomes of it: :mod:`hookd.core.outcomes`.
"""

from __future__ import annotations

import shlex
import time
from typing import Any

import msgspec

from hookd.core.asks import Asks
from hookd.clock import when
from hookd.core.bus import EventBus
from hookd.core.elicitations import normalize_elicitation
from hookd.core.limits import MAX_ANSWER_CHARS, check_answer_size, check_name
from hookd.core.outcomes import (AT_DESK, MAX_HOOK_REPLY, SURFACES, hook_body, late_reason, questions_of, queue_answer,
                                 remote_answers, session_remote)
from hookd.core.plans import normalize_plan_answer
from hookd.core.state import Waiters
from hookd.harness.base import Question, decode_answers, encode_answer
from hookd.harness.registry import ADAPTERS
from hookd.models import (
    AnswerRequest,
    BadRequest,
    Conflict,
    Interaction,
    DECISION_KINDS,
    NotFound,
    Selection,
    os_user,
    resolved_event,
)
from hookd.store import Store, Tx

#: (re-exported: the limits an answer is checked against)
__all__ = ["MAX_ANSWER_CHARS", "MAX_HOOK_REPLY", "SURFACES", "Answers", "normalize_answer"]


_canon = msgspec.json.Encoder(order="sorted")


def _each_question(iid: str, qs: list[Question]) -> str:
    """How to answer every question of ``iid`` in one call, in ``hookd answer``'s flags, then
    each question with its options (shell-quoted as they are typed), e.g. ``toolu_1 asks 2
    questions; answer each question: --question 1 --option LABEL --question 2 --option LABEL
    [--option LABEL]... (1: 'Which color?', options: Red, Blue; 2: 'Which toppings?',
    multi-select, options: Cheese, 'Ham, smoked')``."""
    form, listing = [], []
    for n, q in enumerate(qs, 1):
        labels = ", ".join(shlex.quote(o.label) for o in q.options)
        if not q.options:
            form.append(f"--question {n} --text TEXT")
        else:
            form.append(f"--question {n} --option LABEL" + (" [--option LABEL]..." if q.multiSelect else ""))
        listing.append(f"{n}: {q.question!r}" + (", multi-select" if q.multiSelect else "")
                       + (f", options: {labels}" if labels else ", free text"))
    return f"{iid} asks {len(qs)} questions; answer each question: {' '.join(form)} ({'; '.join(listing)})"


def _find_question(iid: str, qs: list[Question], key: str) -> Question:
    """The question ``key`` names: its exact text, its 1-based number, or "" when there is
    only one. Raises BadRequest: with none named of several, how to answer each of them."""
    if key == "" and len(qs) == 1:
        return qs[0]
    for q in qs:
        if q.question == key:
            return q
    if key.isdigit() and 1 <= int(key) <= len(qs):
        return qs[int(key) - 1]
    if key == "":
        raise BadRequest(_each_question(iid, qs))
    listing = "; ".join(f"{n}: {q.question!r}" for n, q in enumerate(qs, 1))
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


def normalize_answer(i: Interaction, req: AnswerRequest) -> tuple[dict[str, str] | None, list[Selection] | None, str | None, str | None]:
    """(answers, selections, decision, message) of ``req`` for ``i``, validated.

    Questions (``question``, ``async``): every question answered, labels among its options,
    one label or free text for single-select; answers text-keyed as Claude Code reports them.
    Permissions: ``decision`` (or one option) ``allow`` | ``deny``; ``message`` / ``text``
    goes with deny. Plans: :func:`hookd.core.plans.normalize_plan_answer`. The free text (or deny message) is at most MAX_ANSWER_CHARS bytes as sent.
    Raises BadRequest with what is wrong.
    """
    check_name("actor", req.actor)
    if i.kind == "elicitation":
        content, action = normalize_elicitation(i, req)
        return content, None, action, None
    if req.content is not None:
        raise BadRequest(f"{i.id} is a {i.kind}: fields (content) answer an elicitation only")
    if i.kind == "plan":
        plan_answer = normalize_plan_answer(req)
        check_answer_size([plan_answer[3]], "the feedback")
        return plan_answer
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
    qs = questions_of(i)
    if not qs:
        raise BadRequest(f"{i.id} has no readable questions")
    parts: dict[str, str] = {}
    texts: list[str | None] = []
    if req.answers is not None:
        if req.options or req.text is not None or req.question is not None:
            raise BadRequest("give either answers, or question/options/text, not both")
        for key, v in req.answers.items():
            q = _find_question(i.id, qs, key)
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
        q = _find_question(i.id, qs, req.question or "")
        texts.append(req.text)
        parts[q.question] = _one_answer(q, list(req.options), req.text)
    check_answer_size(texts)
    missing = [q.question for q in qs if q.question not in parts]
    if missing:
        raise BadRequest(f"this answer leaves out {'; '.join(repr(m) for m in missing)}: {_each_question(i.id, qs)}")
    answers = {q.question: parts[q.question] for q in qs}
    return answers, decode_answers(i.questions, answers), None, None


class Answers:
    """A human's answers over ``store`` (``bus``: publishes; ``waiters``: the hooks held for an
    answer; ``asks``: expires an ask found past its time)."""

    def __init__(self, store: Store, bus: EventBus, waiters: Waiters, asks: Asks):
        self.store = store
        self.bus = bus
        self.waiters = waiters
        self.asks = asks

    async def answer(self, interaction_id: str, req: AnswerRequest, *,
                     surface: str = "api") -> dict[str, Any]:
        """Answer interaction ``interaction_id`` (its id or tool_use_id) for a human.

        req: the answer (:class:`hookd.models.AnswerRequest`); surface: ``cli`` | ``api`` |
        ``web`` | ``telegram`` (a two-way chat channel: hookd.watchers.chat) | ``hub`` (an
        operator's answer from the fleet's hub, applied by hookd.hub.commands). Returns the receipt ``{"interaction", "response_id", "duplicate",
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
        if req.actor is None:  # (the daemon's user: the only one its socket and token let in)
            req = msgspec.structs.replace(req, actor=os_user())
        (status, receipt), events = await self.store.write(self._answer_tx, interaction_id, req, surface, time.time())
        if events:
            await self.bus.publish()
        if status == "refused":
            raise Conflict(receipt["reason"])
        return receipt

    async def answer_by_default(self, interaction_id: str, req: AnswerRequest) -> dict[str, Any] | None:
        """A builder's default answer (:mod:`hookd.core.policy`): ``req`` (made against
        ``req.revision``) as actor ``hookd``, surface ``default``, only while the interaction is
        still pending at that revision and a hook can carry it (a held hook; for a question,
        also its PermissionRequest still to come). Returns the receipt, or None when the desk
        or a human was first, or no hook can take it (nothing recorded then)."""
        try:
            result, events = await self.store.write(self._default_tx, interaction_id, req, time.time())
        except _NotDefaulted:  # (rolled back)
            return None
        if events:
            await self.bus.publish()
        return result

    def _default_tx(self, tx: Tx, iid: str, req: AnswerRequest, at: float) -> dict[str, Any] | None:
        i = tx.interactions.interaction(iid)
        if i is None or i.state != "pending" or i.revision != req.revision or self._route(tx, i) != "hook":
            return None
        status, receipt = self._answer_tx(tx, iid, req, "default", at)
        if status != "ok" or receipt["delivery"] != "hook":
            raise _NotDefaulted(iid)  # (the hook could not take it whole: never an inbox message)
        return receipt

    def _answer_tx(self, tx: Tx, iid: str, req: AnswerRequest, surface: str,
                   at: float) -> tuple[str, dict[str, Any]]:
        i = tx.interactions.interaction(iid)
        if i is None:
            raise NotFound(f"no interaction {iid!r}")
        try:
            answers, selections, decision, message = normalize_answer(i, req)
        except BadRequest as e:
            if i.state == "pending":
                raise
            # over already: that first (a misfit answer to it is kept nowhere, nothing to fix in it)
            by = f" {i.by}" if i.by else ""
            raise Conflict(f"{i.id} is already {i.outcome}{by} at {when(i.resolved_at or at)}"
                           f" (and the answer did not fit it: {e}; nothing was kept)") from None
        content = _canon.encode({"interaction": i.id, "answers": answers, "decision": decision, "message": message})
        if req.response_id is not None:
            prev = tx.interactions.response(req.response_id)
            if prev is not None:
                if prev[1] != content:
                    raise Conflict(f"response_id {req.response_id!r} was already used for another answer"
                                   f" (to {prev[0]}); use a new response_id")
                receipt = msgspec.json.decode(prev[2])
                receipt["duplicate"] = True
                return ("refused" if receipt.get("refused") else "duplicate"), receipt
        if i.state == "pending" and i.expires_at is not None and i.expires_at <= at:
            self.asks.expire(tx, i, at)
            i = tx.interactions.interaction(i.id)
            assert i is not None
        if req.input_hash is not None and req.input_hash != i.input_hash:
            raise Conflict(f"this answer was made for another input (input_hash {req.input_hash}) than"
                           f" {i.id} shows ({i.input_hash}); look at it again")
        if i.state == "pending" and req.revision is not None and req.revision != i.revision:
            raise Conflict(f"{i.id} is at revision {i.revision}, not {req.revision} (it changed since you saw"
                           " it, or that revision never existed); look at it again")
        author = req.actor or os_user()
        if i.state != "pending":
            by = f" {i.by}" if i.by else ""
            reason = f"{i.id} is already {i.outcome}{by} at {when(i.resolved_at or at)}"
            others = tx.interactions.pending_sharing_call(i.id)
            if others:
                # the call id was reused (a replayed or scripted session): the human meant the open one
                listed = ", ".join(f"{o.id} ({o.kind}, {o.builder})" for o in others)
                raise Conflict(f"{reason}; open with the same call id: {listed}: answer that id"
                               " (nothing was kept)")
            if i.surface == "terminal":
                reason = "the desk answered first: " + reason
            return self._keep_late(tx, i, req, content, answers, decision, message, author, at, reason)
        route = self._route(tx, i)
        remote = session_remote(tx, i) if route == "hook" else None  # (its harness renders the hook's reply)
        reply = len(hook_body(msgspec.structs.replace(i, answers=answers, decision=decision, message=message), remote)) if remote else 0
        if route == "hook" and (remote is None or reply > MAX_HOOK_REPLY):
            route = None  # never offered to a hook that cannot take it whole
        if route is None:
            reason = _no_hook_reason(tx, i, reply)
            if i.kind in DECISION_KINDS:
                return self._keep_late(tx, i, req, content, answers, decision, message, author, at, reason,
                                       late=f"no hook was holding the {_WHAT[i.kind]}")
            # a question: the text still reaches the agent, as a message
            m = queue_answer(tx, i, answers, decision, message, author, at)
            receipt = {"interaction": msgspec.to_builtins(i), "response_id": req.response_id, "duplicate": False,
                       "delivery": "inbox", "message_id": m,
                       "warning": reason + f"; your answer was queued as inbox message {m} instead"
                                  f" ({take_back(m)})"}
            if req.response_id is not None:
                tx.interactions.insert_response(req.response_id, i.id, content, msgspec.json.encode(receipt), at)
            return "ok", receipt
        if not tx.interactions.record_answer(i.id, expected_revision=i.revision, answers=answers, selections=selections,
                                decision=decision, message=message, surface=surface, actor=req.actor,
                                response_id=req.response_id, at=at):
            raise Conflict(f"{i.id} changed while it was being answered; look at it again")
        done = tx.interactions.interaction(i.id)
        assert done is not None
        message_id = None
        if route == "inbox":
            message_id = queue_answer(tx, done, answers, decision, message, author, at)
            tx.interactions.set_inbox_message(i.id, message_id)
            done = tx.interactions.interaction(i.id)
            assert done is not None
        else:
            assert remote is not None  # (route "hook")
            self.waiters.release_after(tx, i.id, hook_body(done, remote))
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
            tx.interactions.insert_response(req.response_id, i.id, content, msgspec.json.encode(receipt), at)
        return "ok", receipt

    async def reachable(self, items: list[Interaction]) -> dict[str, bool]:
        """For each pending question of ``items``: whether a remote answer would reach its
        agent through a hook now (a held hook waits for it, or its PermissionRequest hook is
        still to come, and its harness renders such a reply); False: only the desk can answer it
        (a remote answer is queued as an inbox message). ``{interaction id: bool}``; other kinds
        and states are absent (a decision's ``held`` is :meth:`hookd.core.holds.Holds.holding`).
        Read on the store's reader connection: never waits for the writer. Raises
        StorageUnavailable when the store cannot be read."""
        asked = [i for i in items if i.kind == "question" and i.state == "pending"]
        if not asked:
            return {}
        facts = await self.store.hook_facts([i.id for i in asked])
        return {i.id: _to_hook(i, self.waiters.waiting(i.id), *facts[i.id][:2])
                and remote_answers(facts[i.id][2]) is not None for i in asked if i.id in facts}

    def _route(self, tx: Tx, i: Interaction) -> str | None:
        """How an answer to pending ``i`` reaches the agent: ``"inbox"`` (an async ask),
        ``"hook"`` (a held hook waits, or the PermissionRequest hook is still to come), or None
        (no hook can carry it)."""
        if i.kind == "async":
            return "inbox"
        waiting = self.waiters.waiting(i.id)
        asks = not waiting and i.kind == "question"  # (only then do the store's facts decide)
        seen = asks and tx.interactions.permission_seen(i.id)
        hooked = asks and i.session_id is not None and tx.sessions.session_has_hooks(i.session_id)
        return "hook" if _to_hook(i, waiting, seen, hooked) else None

    def _keep_late(self, tx: Tx, i: Interaction, req: AnswerRequest, content: bytes, answers: Any,
                   decision: str | None, message: str | None, author: str, at: float, reason: str,
                   late: str | None = None) -> tuple[str, dict[str, Any]]:
        """Refuse an answer to a closed interaction; a human's text is kept as an inbox
        message (never dropped) that says it came late. A permission decision is kept only for
        its deny message (a bare allow/deny means nothing to the model). The refusal is the
        receipt of its response_id."""
        message_id = None
        if i.kind not in DECISION_KINDS or message is not None:
            message_id = queue_answer(tx, i, answers, decision, message, author, at, late=late or late_reason(i))
            reason += f"; your answer was kept as inbox message {message_id} for {i.builder}; {take_back(message_id)}"
        else:  # (said, so that nobody looks for it in the inbox)
            reason += "; nothing was kept (a bare decision or a form's content means nothing to the agent later)"
        tx.append_event("answer_refused", i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "reason": reason, "message_id": message_id, "response_id": req.response_id,
        })
        receipt = {"refused": True, "reason": reason, "message_id": message_id, "response_id": req.response_id}
        if req.response_id is not None:
            tx.interactions.insert_response(req.response_id, i.id, content, msgspec.json.encode(receipt), at)
        return "refused", receipt


def _to_hook(i: Interaction, waiting: bool, permission_seen: bool, session_hooked: bool) -> bool:
    """Whether a hook can carry an answer to pending ``i`` (not an async ask): a held hook
    waits for it (``waiting``), or it is a question whose PermissionRequest hook is still to come
    from a session that sends hooks."""
    return waiting or (i.kind == "question" and not permission_seen and session_hooked)


class _NotDefaulted(Exception):
    """A default answer no hook could carry: its transaction is rolled back."""


#: what an interaction of a kind no hook held is called, for the human
_WHAT = {"permission": "permission prompt", "plan": "plan", "elicitation": "elicitation"}


def take_back(message_id: str) -> str:
    """How a human retracts a queued message: ``take it back: hookd inbox cancel <id>``."""
    return f"take it back: hookd inbox cancel {message_id}"


def _no_hook_reason(tx: Tx, i: Interaction, reply: int) -> str:
    """Why no hook can carry an answer to ``i`` (``reply``: the size in bytes its hook's reply
    would have, 0 when not computed), for the human."""
    harness = tx.sessions.session_harness(i.session_id) if i.session_id is not None else None
    if reply > MAX_HOOK_REPLY:
        return (f"the hook's reply for this answer would be {reply} bytes (the tool's input with the"
                f" answer), over the {MAX_HOOK_REPLY} a hook takes, so it can only be answered at the desk")
    adapter = ADAPTERS.get(harness) if harness is not None else None
    if adapter is not None and (adapter.desk_only or (i.kind == "question" and adapter.questions_at_desk)):
        return (f"{harness} reads the answer to {i.id} at its own prompt (no hook can carry one),"
                " so it can only be answered at the desk")
    if i.warning is not None and i.warning.startswith(AT_DESK):
        return (f"{i.id} was asked at the desk with no hook of its own (its harness fired none for this"
                " dialog), so it can only be answered at the desk")
    if i.session_id is not None and not tx.sessions.session_has_hooks(i.session_id):
        return (f"{i.id} was seen only in a transcript (no hook came from its session), so no hook"
                " can carry an answer; it can only be answered at the desk")
    return (f"no hook is holding {i.id} (holding is off, or the daemon restarted since it was"
            " asked), so it can only be answered at the desk")
