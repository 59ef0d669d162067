"""The hook path: one hook payload, parsed by its harness's adapter, applied in one transaction
(its raw bytes, its session, what it observes, a delivery at its boundary), then published.

:class:`Ingest` hands questions to :class:`hookd.core.questions.Questions` and deliveries to
:class:`hookd.core.inbox.Inbox`, inside the hook's own transaction; what it needs from outside
the database (a file's existence, a process's start time, a spawn manifest) is read before it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from hookd.config import Home
from hookd.core.bus import EventBus
from hookd.core.elicitations import elicitation_asked, elicitation_resolved
from hookd.core.hookhealth import HookHealth
from hookd.core.inbox import Inbox
from hookd.core.notices import agent_notified
from hookd.core.procs import process_started_at
from hookd.core import subagents
from hookd.core.questions import Questions
from hookd.core.state import HookCache, Waiters, fingerprint
from hookd.harness.base import (
    AttentionAsked,
    ElicitationAsked,
    ElicitationResolved,
    Adapter,
    Compacting,
    DeliveredSeen,
    DialogAtDesk,
    HookKind,
    Payload,
    PermissionAsked,
    PermissionRefused,
    QuestionAsked,
    QuestionResolved,
    SessionEnded,
    SessionStarted,
    SubagentStarted,
    SubagentStopped,
    ToolFinished,
    TurnFailed,
    TurnMovedOn,
)
from hookd.harness.base import text as as_text
from hookd.harness.registry import ADAPTERS
from hookd.models import Event, NotFound, PayloadInvalid
from hookd.store import Store, Tx

#: SessionStart(compact) links to the session whose PreCompact came within this many seconds
COMPACT_LINK_S = 600.0

#: A refused tool call's command or URL is kept (event, lane) to this many characters.
REFUSED_CHARS = 200

#: Largest hook payload accepted (bytes).
MAX_PAYLOAD = 64 * 1024 * 1024

#: A hook body that did not end (its client went away, or it came too late) is stored under
#: its delivery id plus this (hookd.http.hooks.HookPath.ingest), so that the client's spooled copy
#: is not taken for a duplicate; a spooled copy with the very same bytes is.
CUT_SUFFIX = "~cut"


def _turn_failed(tx: Tx, builder: str, sid: str, p: Payload, ob: TurnFailed, at: float) -> None:
    """An API error ended a turn: the main agent's session remembers it (its lane says so until
    the next hook) and ``turn_failed`` records it (a subagent's: only the event)."""
    failure = {"error": ob.error, "details": ob.details, "message": ob.message, "transient": ob.transient,
               "advice": ob.advice}
    if p.agent_id is None:
        tx.sessions.mark_failed(sid, at, failure)
    data: dict[str, Any] = {**failure, "via": p.hook_event_name}
    if p.agent_id is not None:
        data["agent_id"] = p.agent_id
    tx.append_event("turn_failed", builder, sid, at, data)


def _permission_refused(tx: Tx, adapter: Adapter, builder: str, sid: str | None, p: Payload, ob: PermissionRefused,
                        at: float) -> None:
    """A tool call refused without asking anyone: ``permission_refused`` with the call as a
    person reads it (the adapter's ``present_tool``), so that a human sees what was refused."""
    view = adapter.present_tool(ob.tool_name, ob.tool_input)
    # what it would have done: a command or a URL itself (its first line), else the summary
    what = view.detail.split("\n", 1)[0][:REFUSED_CHARS] if view.kind in ("command", "url") else view.summary
    data: dict[str, Any] = {"tool_use_id": ob.tool_use_id, "tool_name": ob.tool_name, "reason": ob.reason,
                            "summary": view.summary, "what": what, "destructive": view.destructive,
                            "via": p.hook_event_name}
    if ob.server is not None:
        data["server"] = ob.server
    if p.agent_id is not None:
        data["agent_id"] = p.agent_id
    if sid and p.agent_id is None:
        tx.sessions.mark_refused(sid, at, f"{ob.tool_name} {what} ({ob.reason or 'no reason given'})")
    tx.append_event("permission_refused", builder, sid, at, data)


def _cut_twin(delivery_id: str | None, source: str) -> str | None:
    """The delivery id under which another copy of this invocation may be stored: a cut
    body's (``<id>~cut``) for a spooled one, the spooled one's for a cut body; None for a
    whole live hook (not checked: the hot path)."""
    if not delivery_id:
        return None
    if delivery_id.endswith(CUT_SUFFIX):
        return delivery_id[: -len(CUT_SUFFIX)]
    return delivery_id + CUT_SUFFIX if source == "spool" else None


@dataclass
class HookResult:
    """What the hook client must print (``body``, may be empty) and the stored events."""

    body: bytes
    events: list[Event]
    duplicate: bool = False
    #: (interaction id, waiter): a PermissionRequest hook to hold for a remote answer
    hold: tuple[str, asyncio.Future[bytes]] | None = None
    #: the hook event id its raw bytes were stored under (None for a duplicate)
    hook_event_id: int | None = None


@dataclass(frozen=True)
class _Looked:
    """What a hook's transaction needs from outside the database (:meth:`Ingest._look`)."""

    #: a live Stop's reported transcript_path is a file (its proof of adoption is read later)
    transcript_file: bool = False
    #: the agent process's start time (UNIX seconds; None: unknown), when ``agent_looked``
    agent_started_at: float | None = None
    agent_looked: bool = False


_NOTHING_LOOKED = _Looked()


class Ingest:
    """The hook path over ``home`` and ``store``: ``bus`` publishes; ``questions`` and ``inbox``
    apply what a payload says; ``waiters`` take a held hook; ``cache`` spares re-reading what
    the store holds. ``on_transcript(path, builder, session_id)``: called once a session
    reports a new transcript path (the tailer follows it; None: nobody follows).
    ``on_hook(session_id)``: called once each live hook of a session has committed, with the
    session it was recorded under (the tailer reads a hooked session's transcript at its
    hooks or once they go quiet; None: nobody listens)."""

    def __init__(self, home: Home, store: Store, bus: EventBus, questions: Questions, inbox: Inbox,
                 waiters: Waiters, cache: HookCache):
        self.home = home
        self.store = store
        self.bus = bus
        self.questions = questions
        self.inbox = inbox
        self.waiters = waiters
        self.cache = cache
        self.on_transcript: Callable[[str, str, str], Any] | None = None
        self.on_hook: Callable[[str], Any] | None = None
        #: the hooks_changed warning (set by the facade; None: not tracked)
        self.health: HookHealth | None = None

    async def ingest_hook(
        self,
        harness: str,
        builder: str,
        raw: bytes,
        *,
        source: str = "live",
        delivery_id: str | None = None,
        received_at: float | None = None,
        hold: bool = False,
        agent_pid: int | None = None,
        cwd: str | None = None,
    ) -> HookResult:
        """Record one hook payload and everything it implies, in one transaction.

        harness: adapter name (``claude-code``); builder: id baked into the hook command;
        raw: stdin bytes as received; source: ``live`` or ``spool``; delivery_id: the
        client's unique id for this invocation (a spooled copy of an already stored
        delivery is skipped). hold: the caller will hold a PermissionRequest hook for a remote
        answer (``HookResult.hold`` then carries the interaction id and its waiter, registered
        as the transaction commits, for :meth:`hookd.core.holds.Holds.hold`). agent_pid: the
        agent's process id (``CLAUDE_PID`` in the hook's environment), for lane liveness. cwd:
        the hook's working directory as its client reported it (claw identifies sessions by it;
        None: the builder's spawned worktree). Raises PayloadInvalid
        after storing the raw bytes when the payload cannot be parsed (nothing is lost; its
        ``stored`` is the hook event id), NotFound for an unknown harness, StorageUnavailable
        when the database cannot commit (nothing stored: the client must keep the payload).
        """
        adapter = ADAPTERS.get(harness)
        if adapter is None:
            raise NotFound(f"unknown harness {harness!r}; known: {', '.join(ADAPTERS)}")
        at = received_at if received_at is not None else self.store.clock.wall()
        try:
            payload = self._parse_hook(adapter, builder, raw, cwd)
            error = None
        except PayloadInvalid as e:
            payload, error = None, e
        looked = self._look(adapter, builder, payload, source, agent_pid)
        box: list[asyncio.Future[bytes]] = []
        (hook_id, body, iid, sid), events = await self.store.write(
            self._ingest_tx, adapter, harness, builder, raw, payload, error, at, source, delivery_id,
            box if hold else None, agent_pid, received_at is not None, looked,
        )
        if hook_id is None:
            return HookResult(b"", [], duplicate=True)
        await self.bus.publish(events)
        if self.on_hook is not None and sid and source == "live":
            self.on_hook(sid)
        if error is not None:
            error.stored = hook_id
            raise error
        return HookResult(body, events, hold=(iid, box[0]) if iid and box else None, hook_event_id=hook_id)

    def _look(self, adapter: Adapter, builder: str, p: Payload | None, source: str, agent_pid: int | None) -> _Looked:
        """What the transaction of a live hook needs from outside the database, read before it
        (a transaction touches only SQLite): whether a ``turn_end`` hook's transcript is a file
        (:data:`~hookd.harness.base.HookKind`, the adapter's ``hook_kinds``), and the
        agent process's start time when its pid may be recorded (once per session and pid: the
        cache says it is recorded unless the session is new to it, or the hook may be put under
        another session, :meth:`_canonical_session`)."""
        if p is None or source != "live" or not p.session_id:
            return _NOTHING_LOOKED
        turn_end = adapter.hook_kinds.get(p.hook_event_name) == "turn_end"
        transcript = as_text(p.transcript_path) if turn_end else None
        looked = _Looked(transcript_file=bool(transcript and os.path.isfile(transcript)))
        sid = p.session_id
        if agent_pid and (self.cache.pids.get(sid) != agent_pid or self.cache.latest.get(builder) != sid):
            looked = _Looked(looked.transcript_file, process_started_at(agent_pid), True)
        return looked

    def _ingest_tx(
        self, tx: Tx, adapter: Adapter, harness: str, builder: str, raw: bytes, payload: Payload | None,
        error: PayloadInvalid | None, at: float, source: str, delivery_id: str | None,
        hold_box: list[asyncio.Future[bytes]] | None = None, agent_pid: int | None = None,
        backdate: bool = False, looked: _Looked | None = None,
    ) -> tuple[int | None, bytes, str | None, str | None]:
        """The transaction of one hook. Returns (hook event id or None when this delivery was
        already stored, the hook's stdout, the interaction a PermissionRequest hook may hold
        for, the session it was recorded under: its conversation's current one when it
        reported a stale id, :meth:`_canonical_session`). backdate: ``at`` is when the hook
        was received, earlier (a spooled hook): its windows are measured from then, on the
        timeline (:meth:`hookd.clock.Clock.stamp`).
        looked: what :meth:`_look` read before the transaction."""
        looked = looked or _NOTHING_LOOKED
        if backdate:
            tx.mono = self.store.clock.stamp(at)
        twin = _cut_twin(delivery_id, source)
        if twin is not None and tx.sessions.stored_as(twin, raw):
            # a cut body and its client's spooled copy are one invocation when they are the same
            # bytes (whichever of the two arrives first is kept)
            return None, b"", None, None
        stale = None
        kind = adapter.hook_kinds.get(payload.hook_event_name) if payload is not None else None
        if payload is not None and payload.session_id and self.cache.latest.get(builder) != payload.session_id:
            payload, stale = self._canonical_session(tx, builder, payload, kind, agent_pid if source == "live" else None)
        hook_id = tx.sessions.insert_hook_event(
            delivery_id=delivery_id,
            builder=builder,
            harness=harness,
            source=source,
            received_at=at,
            raw=raw,
            hook_event_name=getattr(payload, "hook_event_name", None),
            session_id=getattr(payload, "session_id", None),
            tool_name=getattr(payload, "tool_name", None),
            tool_use_id=getattr(payload, "tool_use_id", None),
            agent_id=getattr(payload, "agent_id", None),
            error=error.message if error else None,
            hook_kind=kind,
        )
        if hook_id is None:
            return None, b"", None, None
        if builder not in self.cache.builders:
            tx.sessions.add_builder(builder, harness, at)
            tx.after_commit.append(lambda: self.cache.builders.add(builder))
        if payload is None:
            assert error is not None
            tx.append_event(
                "hook_invalid", builder, error.session_id, at,
                {"harness": harness, "error": error.message, "bytes": len(raw), "source": source},
            )
            return hook_id, b"", None, None
        sid = payload.session_id
        if sid and self.cache.latest.get(builder) != sid:
            tx.after_commit.append(lambda: self.cache.latest.__setitem__(builder, sid))
        if sid:
            # only a turn end's fingerprint is ever compared (by an idle wake of that hook)
            mark = (hook_id, fingerprint(raw) if kind == "turn_end" else b"")
            tx.after_commit.append(lambda: self.cache.activity.__setitem__(sid, mark))
        body, hold = self._apply(tx, adapter, harness, builder, payload, kind, at, source, stale=stale,
                                 transcript_file=looked.transcript_file)
        if sid and agent_pid and source == "live" and self.cache.pids.get(sid) != agent_pid and looked.agent_looked:
            # after _apply, so the session row exists; the process's start time was read before
            # the transaction (not read: another hook of the session committed the pid
            # meanwhile, or the next hook records it)
            if tx.sessions.agent_pid(sid) != agent_pid:
                tx.sessions.set_agent_pid(sid, agent_pid, looked.agent_started_at)
            tx.after_commit.append(lambda: self.cache.pids.__setitem__(sid, agent_pid))
        if hold and hold_box is not None:
            iid = hold
            tx.after_commit.append(lambda: hold_box.append(self.waiters.register(iid)))
        return hook_id, body, hold, sid

    def _apply(
        self, tx: Tx, adapter: Adapter, harness: str, builder: str, p: Payload, kind: HookKind | None,
        at: float, source: str, stale: str | None = None, transcript_file: bool = False,
    ) -> tuple[bytes, str | None]:
        """Apply one parsed payload: what ``adapter.observe`` makes of it, then a delivery at
        its boundary. kind: what the hook means (the adapter's ``hook_kinds``). Returns (hook
        stdout, id of the interaction a held permission hook waits on). stale: the session id
        the payload reported when :meth:`_canonical_session` put it under its conversation's
        current one. transcript_file: a live ``turn_end`` hook's reported transcript is a file
        (read before the transaction)."""
        sid = p.session_id
        hook_data: dict[str, Any] = {"hook_event_name": p.hook_event_name, "source": source}
        for key in ("tool_name", "tool_use_id", "agent_id", "agent_type"):
            val = getattr(p, key, None)
            if val is not None:
                hook_data[key] = val
        if stale:
            hook_data["stale_session_id"] = stale
        tx.append_event("hook_received", builder, sid, at, hook_data)
        observations = adapter.observe(p)
        if self.health is not None:
            self.health.hook_seen(tx, builder, p, observations, at)
        if sid:
            started = next((ob for ob in observations if isinstance(ob, SessionStarted)), None)
            self._track_session(tx, harness, builder, p, at, started)
        reply, hold = b"", None
        if sid and p.agent_id and not any(isinstance(ob, (SubagentStarted, SubagentStopped)) for ob in observations):
            subagents.seen(tx, builder, sid, p, at)  # a subagent first seen by another of its hooks
        for ob in observations:
            if adapter.sequential_questions and isinstance(ob, (QuestionAsked, QuestionResolved)):
                ob = self.questions.bind_sequential(tx, builder, p, ob, at)
            if isinstance(ob, QuestionAsked):
                reply, hold = self.questions.question_asked(tx, builder, p, ob, at, desk_only=adapter.questions_at_desk,
                                                            hook_kind=kind)
            elif isinstance(ob, PermissionAsked):
                hold = self.questions.permission_asked(tx, builder, p, ob, at)
            elif isinstance(ob, ElicitationAsked):
                hold = elicitation_asked(tx, builder, p, ob, at)
            elif isinstance(ob, ElicitationResolved):
                elicitation_resolved(tx, self.waiters, builder, p, ob, at)
            elif isinstance(ob, ToolFinished) and sid:
                self.questions.tool_finished(tx, builder, p, ob, at)
            elif isinstance(ob, QuestionResolved):
                self.questions.question_resolved(tx, builder, p, ob, at)
            elif isinstance(ob, TurnMovedOn) and sid:
                self.questions.close_open_questions(tx, builder, sid, ob, at)
            elif isinstance(ob, SessionEnded) and sid:
                if tx.sessions.end_session(sid, at, ob.reason):
                    tx.append_event("session_ended", builder, sid, at, {"reason": ob.reason})
                subagents.session_ended(tx, builder, sid, p.hook_event_name, at)
                # delivered at its start, and it ended before any turn: no model read them
                if requeued := tx.inbox.requeue_never_used(sid):
                    tx.append_event("inbox_requeued", builder, sid, at, {
                        "ids": requeued, "via": p.hook_event_name,
                        "reason": "delivered, but its session ended before any turn: offered again"})
            elif isinstance(ob, SubagentStarted) and sid:
                subagents.running(tx, builder, sid, ob.agent_id, ob.agent_type, p.hook_event_name, at)
            elif isinstance(ob, SubagentStopped) and sid:
                subagents.stopped(tx, builder, sid, ob, p.hook_event_name, at)
            elif isinstance(ob, DeliveredSeen) and sid and source == "live":
                self.inbox.adopt_earlier(tx, builder, p, ob.via, at)
            elif isinstance(ob, TurnFailed) and sid:
                _turn_failed(tx, builder, sid, p, ob, at)
            elif isinstance(ob, PermissionRefused):
                _permission_refused(tx, adapter, builder, sid, p, ob, at)
            elif isinstance(ob, AttentionAsked):
                agent_notified(tx, builder, sid, p, ob, at)
            elif isinstance(ob, DialogAtDesk) and sid:
                self.questions.dialog_at_desk(tx, adapter, builder, p, ob, at)
            elif isinstance(ob, Compacting) and sid:
                tx.sessions.mark_compacting(sid, at)
                # what was delivered and not yet adopted would reach only the compaction's
                # summariser: queued again, the SessionStart(compact) that follows delivers it
                requeued = tx.inbox.requeue_delivered(sid)
                if requeued:
                    tx.append_event("inbox_requeued", builder, sid, at, {
                        "ids": requeued, "via": ob.via,
                        "reason": "delivered but not adopted before compaction: offered again after it",
                    })
        if not sid:
            return b"", None
        if source != "live":
            hold = None  # a spooled hook ran long ago: nothing waits on it
        elif reply:
            return reply, None  # a pre-registered answer (a tool_before hook)
        name = p.hook_event_name
        if kind in ("turn_end", "subagent_end"):
            transcript = as_text(p.transcript_path) if kind == "turn_end" else None
            if transcript and source == "live" and transcript_file:
                # proof from the transcript, read off the hook path once this commits
                hook_id = tx.hook_event_id or 0
                tx.after_commit.append(lambda: self.inbox.adopt_from_transcript_later(builder, sid, transcript, hook_id))
            else:
                # no readable transcript: the agent answered after everything delivered
                # earlier in this turn, the weaker proof the issue allows
                self.inbox.adopt_earlier(tx, builder, p, name, at)
        if source == "live":  # a spooled hook ran long ago: its output can reach no one
            return self.inbox.deliver(tx, builder, p, at, adapter, kind), hold
        return b"", None

    def _canonical_session(self, tx: Tx, builder: str, p: Payload, kind: HookKind | None,
                           agent_pid: int | None) -> tuple[Payload, str | None]:
        """The payload under its conversation's current session, and the stale id it reported
        (None when it is not stale). Claude Code can report an earlier session id of the same
        conversation on some hooks (ids alternating seconds apart: anthropics/claude-code#58682).
        A hook's id is stale when (a) its ``tool_use_id`` is a call still open in another session
        of the same builder (a call belongs to one conversation), or (b) it is an earlier session
        of the same agent process (``CLAUDE_PID``) that has since started another one: the
        process's current session is its live session with the newest hook. A ``session_start``
        or ``session_end`` hook (``kind``) is never moved (they start and end the sessions they
        name), nor is an id hookd never saw from that process (a new session whose start came
        late)."""
        sid = p.session_id
        if kind in ("session_start", "session_end"):
            return p, None
        current = None
        tool_use_id = getattr(p, "tool_use_id", None)
        if isinstance(tool_use_id, str) and tool_use_id:
            head = tx.interactions.interaction_head_by_tool_use_id(tool_use_id)
            if (head is not None and head.builder == builder and head.session_id and head.session_id != sid
                    and (head.state == "pending" or (head.state == "answered" and head.received_at is not None))):
                current = head.session_id
        if current is None and agent_pid and sid and tx.sessions.agent_pid(sid) == agent_pid:
            current = tx.sessions.process_session(builder, agent_pid)
        if current is None or current == sid:
            return p, None
        # its transcript_path is the stale session's file too: the current one's stays followed
        return msgspec.structs.replace(p, session_id=current, transcript_path=None), sid

    def _parse_hook(self, adapter: Adapter, builder: str, raw: bytes,
                    cwd: str | None) -> Payload:
        """Parse ``raw`` with ``adapter``; an adapter that ``needs_context`` (claw) gets the
        builder and the hook's cwd (reported by the client, else the builder's spawned
        worktree), the others the reported cwd (unused)."""
        if not adapter.needs_context:
            return adapter.parse(raw, builder=builder, cwd=cwd)
        if cwd is None:
            from hookd.spawn import read_manifest

            m = read_manifest(self.home, builder)
            cwd = (m or {}).get("worktree")
        return adapter.parse(raw, builder=builder, cwd=cwd or None)

    def _track_session(self, tx: Tx, harness: str, builder: str, p: Payload, at: float,
                       started: SessionStarted | None) -> None:
        """Record ``p``'s session (new, or its paths changed) and follow its transcript.
        started: the payload's :class:`~hookd.harness.base.SessionStarted` (None for any other
        hook): a session start or restart (``resume``, ``compact``, ...) is recorded as one."""
        sid = p.session_id
        assert sid is not None
        transcript_path, cwd = as_text(p.transcript_path), as_text(p.cwd)
        source = started.source if started is not None else None
        known = self.cache.sessions.get(sid)
        if known is None:
            known = tx.sessions.session_info(sid)
            if known is not None and tx.sessions.clear_hooks_unarmed(sid):
                tx.append_event("hooks_armed", builder, sid, at, {"hook_event_name": p.hook_event_name})
        if known is not None:
            paths = (transcript_path or known[0], cwd or known[1])
            if paths != known:
                tx.sessions.update_session_paths(sid, transcript_path, cwd)
                if transcript_path and transcript_path != known[0]:
                    self._follow_after(tx, transcript_path, builder, sid)
            tx.after_commit.append(lambda: self.cache.sessions.__setitem__(sid, paths))
            if started is not None:
                # `claude --resume ID` keeps the session id (2.1.332): the session reopens.
                parent = tx.sessions.reopen_session(sid, source, at)
                tx.append_event(
                    "session_started", builder, sid, at,
                    {"source": source, "parent_session_id": parent, "transcript_path": transcript_path, "cwd": cwd},
                )
            return
        parent, via = None, None
        if source == "compact":
            # SessionStart(compact) carries no parent id (field case B23): the session whose
            # PreCompact hook came last links it
            parent, via = tx.sessions.compacting_session(builder, since=tx.mono - COMPACT_LINK_S, exclude=sid), "precompact"
        if parent is None and source in ("resume", "compact", "clear", "fork"):
            # otherwise the builder's most recent other session; a fork's transcript, which
            # copies its parent's rows, corrects this guess (hookd.core.transcripts)
            parent, via = tx.sessions.latest_session(builder, exclude=sid), "latest"
        tx.sessions.insert_session(
            session_id=sid, builder=builder, harness=harness, parent_id=parent, source=source,
            transcript_path=transcript_path, cwd=cwd, at=at, parent_via=via,
        )
        tx.after_commit.append(lambda: self.cache.sessions.__setitem__(sid, (transcript_path, cwd)))
        if transcript_path:
            self._follow_after(tx, transcript_path, builder, sid)
        tx.append_event(
            "session_started", builder, sid, at,
            {"source": source, "parent_session_id": parent, "transcript_path": transcript_path, "cwd": cwd},
        )

    def _follow_after(self, tx: Tx, path: str, builder: str, sid: str) -> None:
        """Once this commits, have the tailer follow a session's transcript."""
        follow = self.on_transcript
        if follow is not None:
            tx.after_commit.append(lambda: follow(path, builder, sid))
