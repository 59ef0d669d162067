"""Questions and permission prompts as the hooks and transcripts show them: one interaction per
tool call (keyed by its ``tool_use_id``, or matched by its input where a hook carries none),
opened, matched across hooks, resolved at the desk or inferred closed when the turn went on.

:class:`Questions` works inside the caller's transaction (a hook's, a transcript read's); its
methods take the :class:`hookd.store.Tx`. A harness without hook tool_use_ids (claw: trait
``sequential_questions``) binds each question hook to the session's newest open question with
the same input (:meth:`Questions.bind_sequential`; claw runs one tool at a time and a question
blocks it).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, TypeVar

import msgspec

from hookd.core.asks import Asks
from hookd.core.outcomes import AT_DESK, SURFACES, close_unanswered, inbox_answers_after, settle_remote
from hookd.core.state import Waiters
from hookd.harness.base import (
    Adapter,
    DialogAtDesk,
    HookKind,
    Payload,
    PermissionAsked,
    PlanAsked,
    QuestionAsked,
    QuestionResolved,
    ToolFinished,
    TurnMovedOn,
    input_hash,
    text,
)
from hookd.models import TERMINAL_STATES, Interaction, InteractionHead, PayloadInvalid, by_text
from hookd.store import Tx

#: A PermissionRequest is matched to a pending call of the same input asked within this
#: window (seconds; it normally follows its PreToolUse within milliseconds).
MATCH_WINDOW_S = 120.0
#: ... or to one resolved within this window (seconds): the desk answered first.
RESOLVED_MATCH_S = 60.0
#: A hook's question resolution that finds its question already resolved this recently
#: (seconds) is the same call seen twice (the transcript was first).
RESOLVED_BIND_S = 60.0
#: a question observation (:meth:`Questions.bind_sequential` returns the kind it is given)
_Q = TypeVar("_Q", bound=QuestionAsked | QuestionResolved)


class Questions:
    """Interactions of the hook path (``waiters``: a hook held for one is let go when it
    resolves; ``asks``: a new AskUserQuestion may be pre-answered)."""

    def __init__(self, waiters: Waiters, asks: Asks):
        self.waiters = waiters
        self.asks = asks

    def question_asked(
        self, tx: Tx, builder: str, p: Payload, ob: QuestionAsked, at: float, desk_only: bool = False,
        hook_kind: HookKind | None = None,
    ) -> tuple[bytes, str | None]:
        """Returns (hook stdout: a pre-registered answer at a ``tool_before`` hook, or b""; the
        id a ``permission`` hook may hold for). hook_kind: what the hook that showed the
        question means (the adapter's ``hook_kinds``; None: a transcript row, or a hook that is
        neither). desk_only: the harness reads the answer at its own terminal (claw): no hook
        can carry one, so the question is marked as past its prompt phase (a remote answer
        becomes an inbox message) and never pre-answered."""
        existing = None
        if ob.tool_use_id:
            key, existing = self._call_interaction(tx, builder, p, ob.tool_use_id, at)
            if key != ob.tool_use_id:
                ob = msgspec.structs.replace(ob, tool_use_id=key)
            if existing is None:
                # A PermissionRequest (no tool_use_id) may have arrived first.
                existing = tx.interactions.interaction_by_hash(
                    builder=builder, session_id=p.session_id, tool_name=ob.tool_name,
                    input_hash=ob.input_hash, states=("pending",), since=tx.mono - MATCH_WINDOW_S,
                    without_tool_use_id=True,
                )
                if existing is not None:
                    tx.interactions.set_tool_use_id(existing.id, key)  # (ob.tool_use_id is key)
        else:
            # No tool_use_id (PermissionRequest in 2.1.332): the same call is the newest
            # pending one with this input, or one resolved moments ago (the desk answered
            # first). A second copy of the same hook matches the same way, never opening a
            # second question.
            existing = tx.interactions.interaction_by_hash(
                builder=builder, session_id=p.session_id, tool_name=ob.tool_name,
                input_hash=ob.input_hash, states=("pending",), since=tx.mono - MATCH_WINDOW_S,
            )
            if existing is None:
                existing = tx.interactions.interaction_by_hash(
                    builder=builder, session_id=p.session_id, tool_name=ob.tool_name,
                    input_hash=ob.input_hash, states=TERMINAL_STATES, since=tx.mono - RESOLVED_MATCH_S,
                )
        if existing is not None:
            if ob.tool_input is not None and existing.input is None:
                tx.interactions.set_input(existing.id, ob.tool_input)
            if desk_only:
                tx.interactions.mark_permission_seen(existing.id, at)
                return b"", None
            if hook_kind == "permission":
                tx.interactions.mark_permission_seen(existing.id, at)
                return b"", existing.id if _holdable(existing) else None
            return b"", None
        i = self._open_question(tx, builder, p, ob.tool_use_id, ob.tool_name, ob.input_hash, ob.questions,
                                ob.via, at, tool_input=ob.tool_input, permission_seen=hook_kind == "permission")
        if desk_only:
            tx.interactions.mark_permission_seen(i.id, at)
            return b"", None
        if hook_kind == "tool_before":
            return self.asks.preanswered(tx, i, at, via=ob.via), None
        return b"", i.id if hook_kind == "permission" else None

    def _call_interaction(
        self, tx: Tx, builder: str, p: Payload, tool_use_id: str, at: float, *, head: bool = False,
    ) -> tuple[str, Any]:
        """The key under which this hook's tool call is stored (the ``tool_use_id`` of its
        interaction, also its id when the call opened it) and that interaction (with head: only
        its :class:`~hookd.models.InteractionHead`), None when none has it yet.

        Interactions are keyed by the harness's tool_use_id (unique). Claude Code's ids are
        random per call, so one already held by an interaction of another session or builder
        was copied (payloads copied or replayed, a recorded fixture played twice, a bug
        upstream): this call then gets its own key, :func:`_reused_key`, the same for every
        hook of the call, and ``interaction_id_reused`` is recorded when it is first given
        (the caller stores an interaction under it in the same transaction). The other
        session's interaction is never touched. Exception: a transcript row of the same
        builder is that builder's call (a fork, ``--fork-session``, copies its parent's rows,
        ids unchanged, under its own session id: Claude Code 2.1.332); such a copy may resolve
        the call while it is pending, never re-decide it once resolved
        (:meth:`question_resolved`)."""
        lookup = tx.interactions.interaction_head_by_tool_use_id if head else tx.interactions.interaction_by_tool_use_id
        i = lookup(tool_use_id)
        if i is None or (i.builder, i.session_id) == (builder, p.session_id):
            return tool_use_id, i
        key = _reused_key(tool_use_id, builder, p.session_id)
        mine = lookup(key)
        if mine is not None:
            return key, mine
        if p.hook_event_name == "transcript" and i.builder == builder:
            return tool_use_id, i
        tx.append_event("interaction_id_reused", builder, p.session_id, at, {
            "id": key, "tool_use_id": tool_use_id, "via": p.hook_event_name,
            "first": {"id": i.id, "builder": i.builder, "session_id": i.session_id},
            "reason": ("this tool_use_id already belongs to another session's interaction (copied or replayed "
                       "payloads?): this call is recorded on its own under the id given here"),
        })
        return key, None

    def _open_question(
        self, tx: Tx, builder: str, p: Payload, tool_use_id: str | None, tool_name: str,
        input_hash: str, questions: Any, via: str, at: float, tool_input: Any = None,
        permission_seen: bool = False,
    ) -> Interaction:
        iid = tool_use_id or _synthetic_id(p.session_id, input_hash, tx.hook_event_id)
        i = Interaction(
            id=iid, kind="question", builder=builder, session_id=p.session_id,
            agent_id=p.agent_id, tool_name=tool_name, tool_use_id=tool_use_id, state="pending",
            questions=questions, answers=None, selections=None, surface=None, warning=None,
            error=None, created_at=at, resolved_at=None, revision=1, input=tool_input, input_hash=input_hash,
            agent_type=_agent_type(tx, p),
        )
        tx.interactions.insert_interaction(i, permission_seen_at=at if permission_seen else None)
        data: dict[str, Any] = {"id": iid, "kind": "question", "tool_use_id": tool_use_id,
                                "questions": questions, "via": via}
        if p.agent_id:
            data["agent_id"], data["agent_type"] = p.agent_id, _agent_type(tx, p)
        tx.append_event("question_pending", builder, p.session_id, at, data)
        return i

    def question_resolved(self, tx: Tx, builder: str, p: Payload, ob: QuestionResolved, at: float) -> None:
        existing: Interaction | InteractionHead | None = None
        if ob.tool_use_id:
            # the head: a resolved call's PostToolUse (or a second copy of it) needs no more
            key, existing = self._call_interaction(tx, builder, p, ob.tool_use_id, at, head=True)
            if key != ob.tool_use_id:
                ob = msgspec.structs.replace(ob, tool_use_id=key)
            if existing is not None and existing.session_id != p.session_id and existing.state != "pending":
                # another session's transcript copy of a call already decided (a fork's copy of
                # its parent's rows, or a scripted model reusing the id): it reads what
                # happened there and never re-decides it
                return
        if existing is None:
            existing = tx.interactions.interaction_by_hash(
                builder=builder, session_id=p.session_id, tool_name=ob.tool_name,
                input_hash=ob.input_hash, states=("pending", "answered"), since=tx.mono - MATCH_WINDOW_S,
                without_tool_use_id=True,
            )
            if existing is not None and ob.tool_use_id:
                tx.interactions.set_tool_use_id(existing.id, ob.tool_use_id)
        if existing is None:
            # The ask itself was never seen (hook missed or registered late): record it now,
            # so every tool call has exactly one pending and one resolved event.
            existing = self._open_question(
                tx, builder, p, ob.tool_use_id, ob.tool_name, ob.input_hash, ob.questions, p.hook_event_name, at,
                tool_input=getattr(p, "tool_input", None),
            )
        self.waiters.release_after(tx, existing.id)  # the desk answered: a held hook has nothing to do
        if existing.state == "answered" and existing.received_at is not None:
            # answered remotely: did that answer reach the tool, or did the desk win the race?
            if isinstance(existing, InteractionHead):
                full = tx.interactions.interaction(existing.id)
                assert full is not None  # read in this same transaction
                existing = full
            settle_remote(tx, existing, p, at, outcome=ob.outcome, answers=ob.answers,
                                selections=ob.selections, decision=None, error=ob.error)
            return
        if existing.state == "dismissed" and ob.outcome == "answered":
            # dismissed by a human, then answered at the desk after all (a dismissal lets the
            # held hook go with no decision): the desk's answer is what the agent got
            full = tx.interactions.interaction(existing.id)
            if full is None or full.surface not in SURFACES or not tx.interactions.answered_after_dismissal(
                    existing.id, answers=ob.answers, selections=ob.selections, surface=ob.surface, at=at,
                    warning=f"dismissed {full.by} ({full.message}), then answered {by_text(ob.surface, None) or 'at the desk'}"):
                return
        elif existing.state != "pending":
            return  # already resolved: the same hook ran twice, or a late duplicate
        elif not tx.interactions.resolve_interaction(
            existing.id, expected_state="pending", state=ob.outcome, answers=ob.answers,
            selections=ob.selections, surface=ob.surface, warning=ob.warning, error=ob.error, at=at,
        ):
            return
        data: dict[str, Any] = {
            "id": existing.id, "kind": existing.kind,
            "tool_use_id": existing.tool_use_id if ob.tool_use_id == existing.id else ob.tool_use_id or existing.tool_use_id,
            "outcome": ob.outcome,
            "answers": ob.answers, "selections": msgspec.to_builtins(ob.selections),
            "surface": ob.surface,
        }
        if ob.warning:
            data["warning"] = ob.warning
        if ob.error:
            data["error"] = ob.error
        if p.hook_event_name == "transcript":
            data["via"] = "transcript"
        tx.append_event("question_resolved", builder, p.session_id, at, data)
        inbox_answers_after(tx, existing, at, outcome=ob.outcome, answers=ob.answers, surface=ob.surface)

    def permission_asked(self, tx: Tx, builder: str, p: Payload, ob: PermissionAsked, at: float,
                         at_desk: str | None = None) -> str | None:
        """A tool permission prompt: one ``permission`` interaction per prompt (a second copy
        of the same hook matches it). Returns its id when a hook may hold for it. at_desk: a
        prompt no hook of its own says (:meth:`dialog_at_desk`): its warning, and its
        ``permission_pending`` says ``held: false`` (only the desk answers it)."""
        sid = p.session_id
        existing = tx.interactions.permission_by_hash(sid, ob.tool_name, ob.input_hash, since=tx.mono - MATCH_WINDOW_S) if sid else None
        if existing is not None:
            tx.interactions.mark_permission_seen(existing.id, at)
            return existing.id if _holdable(existing) else None
        iid = _synthetic_id(sid, ob.input_hash, tx.hook_event_id)
        kind: Literal["permission", "plan"] = "plan" if isinstance(ob, PlanAsked) else "permission"
        i = Interaction(
            id=iid, kind=kind, builder=builder, session_id=sid, agent_id=p.agent_id,
            tool_name=ob.tool_name, tool_use_id=None, state="pending", questions=None, answers=None,
            selections=None, surface=None, warning=at_desk, error=None, created_at=at, resolved_at=None,
            revision=1, input=ob.tool_input, input_hash=ob.input_hash, agent_type=_agent_type(tx, p),
        )
        tx.interactions.insert_interaction(i, permission_seen_at=at)
        data: dict[str, Any] = {"id": iid, "kind": kind, "tool_name": ob.tool_name,
                                "tool_input": ob.tool_input, "input_hash": ob.input_hash,
                                "permission_mode": ob.permission_mode}
        if at_desk is not None:
            data["warning"], data["held"] = at_desk, False
        if isinstance(ob, PlanAsked):
            data["plan"], data["plan_path"] = ob.plan, ob.plan_path
        if p.agent_id:
            data["agent_id"], data["agent_type"] = p.agent_id, _agent_type(tx, p)
        tx.append_event("permission_pending", builder, sid, at, data)
        return iid

    def dialog_at_desk(self, tx: Tx, adapter: Adapter, builder: str, p: Payload, ob: DialogAtDesk,
                       at: float) -> str | None:
        """The harness says a dialog waits at the desk and no hook of its own came for it: the
        session's open tool call (its newest activity hook is a ``tool_before``, of the main
        agent or a subagent; parsed again by ``adapter``) becomes a ``permission`` interaction
        of that agent that only the desk answers, so that it is seen, listed and notified
        (docs/harness-claude-code.md "A dialog no hook holds"), unless that agent has something
        pending already. Settled as any prompt: its tool's end, the turn going on. Returns its
        id, or None."""
        sid = p.session_id
        call = tx.sessions.open_tool_call(sid) if sid else None
        if sid is None or call is None:
            return None
        raw, tool_name, tool_use_id, agent_id = call
        if tx.sessions.pending_in_session(builder, sid, agent_id=agent_id, all_agents=False):
            return None
        if agent_id != p.agent_id:  # (the Notification names no subagent: the call's agent asks)
            p = msgspec.structs.replace(p, agent_id=agent_id, agent_type=None)
        try:
            tool_input = adapter.call_input(adapter.parse(raw, builder=builder, cwd=None))
        except PayloadInvalid:
            tool_input = None
        said = f" ({ob.message})" if ob.message else ""
        warning = f"{AT_DESK}{said}, its harness's {ob.kind}: only the desk answers it"
        ask = PermissionAsked(tool_name=tool_name, tool_input=tool_input, input_hash=input_hash(tool_input),
                              permission_mode=None)
        iid = self.permission_asked(tx, builder, p, ask, at, at_desk=warning)
        if iid is not None and tool_use_id:
            tx.interactions.set_tool_use_id(iid, tool_use_id)
        return iid

    def tool_finished(self, tx: Tx, builder: str, p: Payload, ob: ToolFinished, at: float) -> None:
        """A tool call ended: a permission prompt for it is over. PostToolUse /
        PostToolUseFailure mean the tool ran (allowed). (A PermissionRequest deny fires neither
        in 2.1.332: see :meth:`close_open_questions`.)"""
        sid = p.session_id
        assert sid is not None
        if not tx.interactions.awaiting_tool_result(sid):
            return  # the common case: no prompt open, nothing to hash
        i = tx.interactions.permission_by_hash(sid, ob.tool_name, input_hash(ob.tool_input), since=0.0)
        if i is None:
            return
        if ob.tool_use_id and i.tool_use_id is None:
            key, holder = self._call_interaction(tx, builder, p, ob.tool_use_id, at, head=True)
            if holder is None:  # (one of this session's holding it already: leave both alone)
                tx.interactions.set_tool_use_id(i.id, key)
        self.waiters.release_after(tx, i.id)
        if i.state == "answered" and i.received_at is None:
            return  # allowed at the desk, seen while the tool ran (hookd.core.holds)
        if i.state == "answered":
            # the tool ran: a remote allow was adopted, a remote deny lost to the desk's Yes
            settle_remote(tx, i, p, at, outcome="answered", answers=None, selections=None,
                                decision="allow", error=ob.error)
            return
        # a plan approved at the desk: the mode chosen there, as the tool's end reports it
        mode = ob.plan_mode if i.kind == "plan" else None
        if not tx.interactions.resolve_interaction(
            i.id, expected_state="pending", state="answered", answers=None if mode is None else {"mode": mode},
            selections=None, surface="terminal", warning=None, error=ob.error, at=at, decision="allow",
        ):
            return
        data: dict[str, Any] = {
            "id": i.id, "kind": i.kind, "tool_name": i.tool_name, "tool_use_id": ob.tool_use_id,
            "outcome": "answered", "decision": "allow", "surface": "terminal",
            "tool_failed": ob.failed,
        }
        if mode is not None:
            data["mode"] = mode
        tx.append_event("permission_resolved", builder, sid, at, data)

    def close_open_questions(self, tx: Tx, builder: str, sid: str, ob: TurnMovedOn, at: float) -> None:
        """Resolve questions left pending when the session's turn went on without a
        PostToolUse/PostToolUseFailure for them (Esc at the menu fires no hook). A remote
        deny handed to a held hook is adopted here: 2.1.332 fires no PostToolUse(Failure) for
        a denied call (only PostToolBatch, which hookd does not register), and had the desk
        allowed it first its PostToolUse would have settled it before the turn went on."""
        for i in tx.sessions.remote_denies(sid, agent_id=ob.agent_id, all_agents=ob.all_agents):
            if i.delivered_at is None:
                # its hook's read not recorded yet (a busy daemon took this hook first): adopted
                # when the read is (hookd.core.holds.Holds._hook_delivered_tx)
                tx.interactions.note_moved_on(i.id, via=ob.via, at=at)
            elif tx.interactions.mark_adopted(i.id, at):
                tx.append_event("answer_adopted", builder, sid, at, {
                    "id": i.id, "kind": i.kind, "via": ob.via, "tool_use_id": None,
                })
        for i in tx.sessions.pending_in_session(builder, sid, agent_id=ob.agent_id, all_agents=ob.all_agents):
            if i.kind == "async":
                continue  # asked so that the agent keeps working: outlives its turn
            if ob.outcome == "orphaned":
                warning = f"the session ended ({ob.via}) while the question was open"
            elif i.kind == "elicitation":
                warning = f"no answer to the elicitation was seen before {ob.via}"
            elif i.kind == "plan":
                warning = (f"no tool result of this plan's call arrived before {ob.via}: "
                           "the desk sent it back with feedback, or escaped it")
            else:
                warning = (f"no PostToolUse or PostToolUseFailure arrived for this call before {ob.via}; "
                           "Claude Code fires no hook when the question menu is escaped")
            close_unanswered(tx, self.waiters, builder, sid, i, ob.outcome, warning, ob.via, at)

    def close_at_interrupt(self, tx: Tx, builder: str, sid: str, marker: str, before: float, at: float) -> list[str]:
        """The human interrupted the session's turn (its transcript's interrupt row, written at
        ``before``, UNIX seconds): what the session asked before then and still waits on is
        over (Esc or No at the desk fires no hook when none is held), closed ``dismissed``. A
        prompt a hook holds, or whose held hook just went (:attr:`Waiters.watched`), is left to
        its hook's fate; one asked after the marker (the next turn's) and an async ask stay.
        Returns the ids closed."""
        closed = []
        for i in tx.sessions.pending_in_session(builder, sid, agent_id=None, all_agents=True):
            if (i.kind == "async" or i.created_at > before or self.waiters.waiting(i.id)
                    or i.id in self.waiters.watched):
                continue
            warning = f"the desk interrupted the turn while it was open (its transcript: {marker})"
            if close_unanswered(tx, self.waiters, builder, sid, i, "dismissed", warning, "transcript interrupt", at):
                closed.append(i.id)
        return closed

    def bind_sequential(self, tx: Tx, builder: str, p: Payload, ob: _Q, at: float) -> _Q:
        """Bind a question observation of a harness without hook tool_use_ids (claw) to the
        interaction it belongs to; returns the observation to apply (its ``tool_use_id`` set
        to that interaction's tool_use_id or id), or ``ob`` unchanged (a new call).

        - with a tool_use_id (a transcript row) not known yet: the session's newest question
          with the same input that has none (opened by a hook) gets it;
        - without one (a hook): the session's newest pending (or remotely answered) question
          with the same input, whatever its age (one tool at a time; a question blocks claw
          until the desk answers); for a resolution, else one resolved moments ago (the
          transcript's tool_result came first: this hook is its duplicate).
        """
        sid = p.session_id
        if sid is None:
            return ob
        if ob.tool_use_id:
            if tx.interactions.interaction_by_tool_use_id(ob.tool_use_id) is None:
                i = tx.interactions.interaction_by_hash(builder=builder, session_id=sid, tool_name=ob.tool_name,
                                           input_hash=ob.input_hash, states=("pending", *TERMINAL_STATES),
                                           since=0.0, without_tool_use_id=True)
                if i is not None:
                    tx.interactions.set_tool_use_id(i.id, ob.tool_use_id)
            return ob
        i = tx.interactions.interaction_by_hash(builder=builder, session_id=sid, tool_name=ob.tool_name,
                                   input_hash=ob.input_hash, states=("pending", "answered"), since=0.0)
        if i is not None and i.state == "answered" and i.received_at is None:
            i = None  # answered at the desk already: not an open call
        if i is None and isinstance(ob, QuestionResolved):
            done = tx.interactions.interaction_by_hash(builder=builder, session_id=sid, tool_name=ob.tool_name,
                                          input_hash=ob.input_hash, states=TERMINAL_STATES, since=0.0)
            if done is not None and (done.resolved_at or 0.0) >= at - RESOLVED_BIND_S:
                i = done
        if i is None:
            return ob
        return msgspec.structs.replace(ob, tool_use_id=i.tool_use_id or i.id)


def _holdable(i: Interaction) -> bool:
    """May a PermissionRequest hook wait on ``i``: still open, or answered remotely with the
    answer not yet handed to a hook."""
    return i.state == "pending" or (i.state == "answered" and i.received_at is not None and i.delivered_at is None
                                    and i.kind != "async")


def _reused_key(tool_use_id: str, builder: str, session_id: str | None) -> str:
    """The key of a call whose tool_use_id another session's interaction already holds:
    ``<tool_use_id>~`` + 8 hex digits derived from the builder and the session (URL-safe)."""
    h = hashlib.sha256(f"{builder}|{session_id}".encode()).hexdigest()[:8]
    return f"{tool_use_id}~{h}"


def _synthetic_id(session_id: str | None, input_hash: str, hook_event_id: int | None) -> str:
    """Id of an interaction first seen without a tool_use_id: ``pr_`` + 20 hex digits,
    derived from the session, the input hash and the id of the hook event that opened it."""
    h = hashlib.sha256(f"{session_id}|{input_hash}|{hook_event_id}".encode()).hexdigest()[:20]
    return f"pr_{h}"


def _agent_type(tx: Tx, p: Payload) -> str | None:
    """The kind of subagent that asked (``general-purpose``), None for the main agent: as
    ``p`` says it, else as the subagent's own hooks did (a transcript's row carries none)."""
    if not p.agent_id:
        return None
    said = text(p.agent_type)
    if said is None and p.session_id:
        said = tx.subagents.agent_type(p.session_id, p.agent_id)
    return said
