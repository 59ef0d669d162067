"""What becomes of an answer: its text as an inbox message, the reply a held hook prints for
it, and its fate once the tool call ends (adopted, or superseded by the desk's answer).

Functions over one transaction (:class:`hookd.store.Tx`), shared by the questions, answers and
held-hook components; they hold no state. Lifecycle of a remote answer: accepted (compare-and-set
``pending`` -> ``answered`` at the revision the human saw; ``received_at``) -> handed to a hook
(``delivered_at``, via ``PermissionRequest`` or ``PreToolUse``) or to the inbox (async asks;
delivered with the message) -> adopted (``adopted_at``: the tool result carried it, or its inbox
message was adopted). If the desk answered first after all, the desk's outcome replaces it
(``answer_superseded``) and the remote text is kept as an inbox message: never dropped.
"""

from __future__ import annotations

from typing import Any

import msgspec

from hookd.harness.base import Payload, Question, RemoteAnswers
from hookd.harness.registry import ADAPTERS
from hookd.core.plans import plan_body
from hookd.models import DECISION_KINDS, PROMPT_KINDS, Interaction, Selection, by_text, resolved_event
from hookd.store import Tx

#: Where an answer (or a dismissal) comes from (``surface`` of :meth:`hookd.core.answers.Answers.answer`).
SURFACES = ("cli", "api", "web", "telegram", "slack", "hub")

#: Largest reply (bytes) a remote answer may make a hook print. The compiled client reads at
#: most 1 MiB of reply, headers included (``REPLY_MAX``, hooks/client.c), the bash client
#: 1,048,576 characters; a reply over this is never offered to a hook (the answer goes the
#: way of one no hook holds for: an inbox message, or refused for a permission prompt).
MAX_HOOK_REPLY = 64 * 1024


def questions_of(i: Interaction) -> list[Question]:
    try:
        return msgspec.convert(i.questions or [], list[Question])
    except (msgspec.ValidationError, TypeError):
        return []


def answer_text(i: Interaction, answers: dict[str, str] | None, decision: str | None, message: str | None,
                late: str | None = None) -> str:
    """The inbox text of an answer: ``[Answer to question <id>] Q: ... A: ...``; a late one
    (``late``: why it was not used) says so: ``[Late answer to question <id> (not used: ...)]``."""
    lines = [answer_head(i, late)]
    if i.kind == "plan":
        mode = (answers or {}).get("mode")
        return lines[0] + (f" approved ({mode})" if decision == "allow" else " sent back") + (f": {message}" if message else "")
    if i.kind == "permission":
        return lines[0] + f" {decision}" + (f": {message}" if message else "")
    if i.kind == "elicitation":
        return lines[0] + f" {decision}" + "".join(f"; {k} = {clip(str(v), 300)}" for k, v in (answers or {}).items())
    for q, a in (answers or {}).items():
        lines.append(f"Q: {clip(q, 500)}\nA: {a}")  # (the question is the agent's own text)
    return "\n".join(lines)


def answer_head(i: Interaction, late: str | None = None) -> str:
    """The first line of :func:`answer_text`: ``[Answer to question <id>]``, or
    ``[Late answer to question <id> (not used: <late>)]``."""
    head = f"Late answer to {{}} (not used: {late})" if late else "Answer to {}"
    if i.kind == "permission":
        return "[" + head.format(f"permission prompt {i.id} for {i.tool_name}") + "]"
    if i.kind == "elicitation":
        return "[" + head.format(f"elicitation {i.id} from {i.tool_name}") + "]"
    if i.kind == "plan":
        return "[" + head.format(f"plan {i.id}") + "]"
    return "[" + head.format(f"question {i.id}") + "]"


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def remote_answers(harness: str | None) -> RemoteAnswers | None:
    """The remote-answer outputs of ``harness`` (a session's harness name: its adapter in
    :data:`hookd.harness.registry.ADAPTERS`), None when no hook of it carries a remote answer
    (``desk_only``) or the harness is unknown."""
    adapter = ADAPTERS.get(harness) if harness is not None else None
    return adapter.remote_answers if adapter is not None else None


def session_remote(tx: Tx, i: Interaction) -> RemoteAnswers | None:
    """:func:`remote_answers` of the harness of ``i``'s session (None: no session)."""
    return remote_answers(tx.sessions.session_harness(i.session_id) if i.session_id is not None else None)


def hook_body(i: Interaction, remote: RemoteAnswers) -> bytes:
    """The held hook's stdout for a remote answer to ``i``, rendered by its harness's
    ``remote``: a permission's decision (``remote.permission_reply``), or a question's answers
    (``remote.question_reply``: the original input plus every answer)."""
    if i.kind == "elicitation":
        assert i.decision in ("accept", "decline", "cancel")
        return remote.elicitation_reply(i.decision, i.answers)
    if i.kind == "plan":
        return plan_body(i, remote)
    if i.kind == "permission":
        assert i.decision in ("allow", "deny")
        return remote.permission_reply(i.decision, i.tool_name, i.input, i.message)
    assert i.answers, "never a decision without answers"
    return remote.question_reply(i.input, i.questions, i.answers)


#: How the warning of a prompt no hook of its own came for begins (a dialog the harness said
#: only in a notification: :meth:`hookd.core.questions.Questions.dialog_at_desk`)
AT_DESK = "asked at the desk with no hook to hold"

#: What an interaction is, in the words a late answer's note uses for it
_WHAT_KIND = {"question": "question", "async": "question", "permission": "permission prompt", "plan": "plan",
              "elicitation": "form"}


def late_reason(i: Interaction) -> str:
    """Why a late answer to ``i`` was not used, for the agent: what happened instead."""
    if i.state == "answered":
        what = i.decision if i.kind in DECISION_KINDS else "; ".join(str(a) for a in (i.answers or {}).values())
        how = f"already {i.outcome} {i.by or 'at the desk'}"
        return f"{how}: {clip(what, 300)}" if what and i.kind not in DECISION_KINDS else how
    return f"the {_WHAT_KIND.get(i.kind, 'question')} was already {i.state}"


def _same_selections(a: list[Selection] | None, b: list[Selection] | None) -> bool:
    def key(s: list[Selection] | None) -> set[tuple[str, tuple[str, ...], str | None]]:
        return {(x.question, tuple(x.labels), x.other) for x in (s or [])}
    return key(a) == key(b)


def _answer_scope(tx: Tx, i: Any) -> str | None:
    """The session a message keeping a human's answer to ``i`` goes to: the question's while
    it lives; None (the builder's next turn boundary, in any of its sessions) for an async ask,
    and once that session has ended or ``i`` was closed ``orphaned`` (its agent gone), so that
    no answer waits for a session nobody resumes (its end, or its agent found gone, makes the
    queued ones the builder's: :meth:`hookd.store.sessions.SessionsTx.release_kept_answers`)."""
    if (i.kind == "async" or i.session_id is None or i.state == "orphaned"
            or tx.sessions.ended(i.session_id)):
        return None
    return i.session_id


def queue_answer(tx: Tx, i: Interaction, answers: Any, decision: str | None, message: str | None,
                  author: str, at: float, late: str | None = None) -> str:
    m = tx.inbox.insert_message(builder=i.builder, session_id=_answer_scope(tx, i), agent_id=i.agent_id, author=author,
                                text=answer_text(i, answers, decision, message, late=late), key=None, at=at,
                                answer_to=i.id)
    tx.append_event("inbox_queued", i.builder, m.session_id, at, {
        "id": m.id, "author": author, "chars": len(m.text), "agent_id": i.agent_id, "key": None,
        "answer_to": i.id,
    })
    return m.id


def supersede(tx: Tx, i: Interaction, at: float, *, state: str, answers: Any, selections: Any,
               decision: str | None, error: str | None, reason: str) -> None:
    """The desk's outcome replaces a remote answer that did not reach the tool; the
    remote text is kept as an inbox message."""
    m = tx.inbox.insert_message(builder=i.builder, session_id=_answer_scope(tx, i), agent_id=i.agent_id,
                                author=i.actor or "human",
                                text=answer_text(i, i.answers, i.decision, i.message, late=reason),
                                key=None, at=at, answer_to=i.id)
    tx.append_event("inbox_queued", i.builder, m.session_id, at, {
        "id": m.id, "author": m.author, "chars": len(m.text), "agent_id": i.agent_id, "key": None,
        "late_answer_to": i.id,
    })
    warning = f"{reason}; the remote answer did not reach the tool and was kept as inbox message {m.id}"
    tx.interactions.supersede_answer(i.id, state=state, answers=answers, selections=selections, decision=decision,
                        surface="terminal", warning=warning, error=error, at=at)
    tx.interactions.set_inbox_message(i.id, m.id)
    tx.append_event("answer_superseded", i.builder, i.session_id, at, {
        "id": i.id, "kind": i.kind, "outcome": state, "answers": answers,
        "selections": msgspec.to_builtins(selections), "decision": decision, "surface": "terminal",
        "remote": {"answers": i.answers, "decision": i.decision, "message": i.message,
                   "surface": i.surface, "actor": i.actor, "response_id": i.response_id},
        "message_id": m.id, "reason": reason,
    })


def close_unanswered(tx: Tx, waiters: Any, builder: str, sid: str, i: Interaction, outcome: str, warning: str,
                     via: str, at: float) -> bool:
    """Resolve pending ``i`` of ``builder``'s session ``sid`` with no answer (``outcome``:
    ``dismissed`` or ``orphaned``; ``warning``: why, in words), inferred from ``via`` (the hook,
    ``liveness``, ``transcript interrupt``): its ``*_resolved`` event, its held hook let go
    (``waiters``: :class:`hookd.core.state.Waiters`), the answers kept for it
    (:func:`inbox_answers_after`). False when it was no longer pending."""
    if not tx.interactions.resolve_interaction(
        i.id, expected_state="pending", state=outcome, answers=None, selections=None,
        surface=None, warning=warning, error=None, at=at,
    ):
        return False
    data: dict[str, Any] = {
        "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": outcome,
        "answers": None, "selections": None, "surface": None, "warning": warning,
        "inferred_from": via,
    }
    if i.agent_id:
        data["agent_id"] = i.agent_id
    tx.append_event(resolved_event(i.kind), builder, sid, at, data)
    waiters.release_after(tx, i.id)
    inbox_answers_after(tx, i, at, outcome=outcome, answers=None, surface=None)
    return True


def inbox_answers_after(tx: Tx, i: Any, at: float, *, outcome: str, answers: Any,
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
    for m in tx.inbox.queued_with_prefix(i.builder, head + "\n"):
        if outcome == "answered" and answers and m.text == answer_text(i, answers, None, None):
            if tx.inbox.adopt_queued([m.id], via="desk", at=at):
                tx.append_event("inbox_adopted", i.builder, m.session_id, at, {"ids": [m.id], "via": "desk"})
            continue
        if outcome == "answered":
            what = "; ".join(str(a) for a in (answers or {}).values())
            how = f"already answered {by_text(surface, None) or 'at the desk'}"
            late = f"{how}: {clip(what, 300)}" if what else how
        else:
            late = f"the question was already {outcome}"
        if not tx.inbox.set_message_text(m.id, answer_head(i, late) + m.text[len(head):]):
            continue
        tx.append_event("answer_superseded", i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "outcome": outcome, "answers": answers, "selections": None,
            "decision": None, "surface": surface, "remote": None, "message_id": m.id,
            "reason": "the desk answered first" if outcome == "answered" else f"the question was {outcome}",
        })


def settle_remote(tx: Tx, i: Interaction, p: Payload, at: float, *, outcome: str,
                   answers: Any, selections: Any, decision: str | None, error: str | None) -> None:
    """The tool call of an interaction answered remotely ended: adopted when the tool got
    that answer, superseded when the desk won the race."""
    if i.kind in PROMPT_KINDS:
        same = decision == i.decision
    else:
        same = outcome == "answered" and _same_selections(i.selections, selections)
    if same:
        if tx.interactions.mark_adopted(i.id, at):
            tx.append_event("answer_adopted", i.builder, i.session_id, at, {
                "id": i.id, "kind": i.kind, "via": p.hook_event_name,
                "tool_use_id": getattr(p, "tool_use_id", None),
            })
        return
    supersede(tx, i, at, state=outcome, answers=answers, selections=selections, decision=decision,
                    error=error, reason="the desk answered first")
