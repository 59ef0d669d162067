"""hookd's core: turns hook payloads into durable records and events.

:class:`Hookd` is used by the server (live hooks, spool ingestion, reads). Persisted, then
published: events reach :class:`EventBus` followers only after their transaction commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from hookd.answers import Answers, check_name
from hookd.claw_core import ClawCore
from hookd.transcripts import Transcripts
from hookd.config import Home, env_number, private_dir_problem
from hookd.lanes import process_started_at
from hookd.harness.base import (
    INJECTION_CAP,
    STOP_CAP,
    Adapter,
    Compacting,
    DeliveredSeen,
    Payload,
    PermissionAsked,
    QuestionAsked,
    QuestionResolved,
    SessionEnded,
    SessionStarted,
    ToolFinished,
    TurnMovedOn,
    frame_batch,
    frame_message,
    injection_size,
    input_hash,
)
from hookd.harness.base import text as as_text
from hookd.harness.registry import ADAPTERS, DEFAULT_HARNESS, reader_of
from hookd.models import (
    TERMINAL_STATES,
    BadRequest,
    Conflict,
    Event,
    HookdError,
    InboxMessage,
    Interaction,
    InteractionHead,
    NotFound,
    PayloadInvalid,
    StorageUnavailable,
    resolved_event,
)
from hookd.store import Store, Tx
from hookd.untrusted import NotRegularFile, open_regular, read_regular

log = logging.getLogger("hookd")

#: A PermissionRequest is matched to a pending call of the same input asked within this
#: window (seconds; it normally follows its PreToolUse within milliseconds).
MATCH_WINDOW_S = 120.0
#: ... or to one resolved within this window (seconds): the desk answered first.
RESOLVED_MATCH_S = 60.0
#: SessionStart(compact) links to the session whose PreCompact came within this many seconds
COMPACT_LINK_S = 600.0
#: A message delivered but not adopted (no Stop of that agent came after it) is offered again
#: at a boundary this many seconds after its delivery (at-least-once; its id is in the text).
REDELIVER_AFTER_S = env_number("HOOKD_REDELIVER_AFTER_S", 300.0)
#: Longest an idle wake waits (seconds); the hook's own deadline may be shorter.
WAKE_MAX_S = 3600.0
#: How long a wake waits for the regular Stop hook of the same Stop to be stored (seconds).
WAKE_STOP_GRACE_S = 10.0
#: Largest message accepted (:func:`hookd.harness.base.injection_size`: JSON-escaped UTF-8
#: bytes, ~characters for plain text): one message must fit one injection.
MAX_MESSAGE_CHARS = 8000
#: Largest hook payload accepted (bytes).
MAX_PAYLOAD = 64 * 1024 * 1024
#: A hook body that did not end (its client went away, or it came too late) is stored under
#: its delivery id plus this (hookd.http.hooks.HookPath.ingest), so that the client's spooled copy
#: is not taken for a duplicate; a spooled copy with the very same bytes is.
CUT_SUFFIX = "~cut"


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


class EventBus:
    """Wakes waiters after commits. ``version`` counts publishes, so a waiter that checked the
    store at version v and then waits with ``since=v`` never misses a publish in between;
    followers re-read the store from their last seq, so nothing is missed or doubled."""

    def __init__(self) -> None:
        # one Event per version, replaced at each publish: publishing never waits for a lock
        # (with a Condition, a hook's publish queued behind the woken waiters re-taking its
        # lock: bench/load.py saw 13 ms per hook with 50 builders back to back)
        self._event = asyncio.Event()
        self.version = 0
        self.closed = False

    async def publish(self) -> None:
        self.version += 1
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait(self, timeout: float, since: int | None = None) -> None:
        """Return after the next publish (or at once if one happened since ``since``), or
        after ``timeout`` seconds."""
        if since is not None and self.version != since:
            return
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except TimeoutError:
            pass

    async def close(self) -> None:
        self.closed = True
        await self.publish()


class Hookd(Answers, Transcripts, ClawCore):
    """The daemon's core over one home and its store (answers: :class:`hookd.answers.Answers`;
    transcripts: :class:`hookd.transcripts.Transcripts`; claw harnesses:
    :class:`hookd.claw_core.ClawCore`)."""

    def __init__(self, home: Home, store: Store):
        self.home = home
        self.store = store
        self.bus = EventBus()
        self.started_at = time.time()
        #: when this daemon started, on hookd's timeline (:mod:`hookd.clock`)
        self.started_mono = store.clock.mono()
        #: hooks the server answered on its fast path (hookd.http.fastpath.HttpProtocol), and those
        #: of them that waited for a group commit (finished by a task)
        self.fast_hooks = 0
        self.fast_hooks_resumed = 0
        # Caches of what the store already holds, to skip redundant reads and writes on
        # the hook path. Touched only on the writer thread, after the commit that made them
        # true; the store stays the source of truth.
        self._builders: set[str] = set()
        self._sessions: dict[str, tuple[str | None, str | None]] = {}
        # Last hook of each session (hook event id, payload fingerprint): what an idle wake
        # waits on. Wake waits are ephemeral (a restart ends them; Claude Code's hook fails
        # open), so this need not be durable.
        self._activity: dict[str, tuple[int, bytes]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # held PermissionRequest hooks, by interaction id (ephemeral, like wake waits)
        self._waiters: dict[str, set[asyncio.Future[bytes]]] = {}
        self._expiry_changed = asyncio.Event()
        self._spool_lock = asyncio.Lock()  # one spool pass at a time (ingest_spool)
        #: called with (path, builder, session_id) when a session reports a new transcript
        #: path (the tailer follows it)
        self.on_transcript: Any = None
        self._pids: dict[str, int] = {}  # session -> agent pid already recorded
        self._latest: dict[str, str] = {}  # builder -> session of its newest hook (no stale check)
        self._registered: dict[str, float] = {}  # claw-http session -> when it last registered
        self._spool_refused: set[str] = set()  # spool entries not regular files, already logged

    async def close(self) -> None:
        """Cancel background work (transcript reads) before the store closes."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- hooks ------------------------------------------------------------------------
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
        as the transaction commits, for :meth:`hold`). agent_pid: the agent's process id
        (``CLAUDE_PID`` in the hook's environment), for lane liveness. cwd: the hook's working
        directory as its client reported it (claw identifies sessions by it; None: the
        builder's spawned worktree). Raises PayloadInvalid
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
        box: list[asyncio.Future[bytes]] = []
        (hook_id, body, iid), events = await self.store.write(
            self._ingest_tx, adapter, harness, builder, raw, payload, error, at, source, delivery_id,
            box if hold else None, agent_pid, received_at is not None,
        )
        if hook_id is None:
            return HookResult(b"", [], duplicate=True)
        await self.bus.publish()
        if error is not None:
            error.stored = hook_id
            raise error
        return HookResult(body, events, hold=(iid, box[0]) if iid and box else None, hook_event_id=hook_id)

    def _ingest_tx(
        self, tx: Tx, adapter: Adapter, harness: str, builder: str, raw: bytes, payload: Payload | None,
        error: PayloadInvalid | None, at: float, source: str, delivery_id: str | None,
        hold_box: list[asyncio.Future[bytes]] | None = None, agent_pid: int | None = None,
        backdate: bool = False,
    ) -> tuple[int | None, bytes, str | None]:
        """The transaction of one hook. Returns (hook event id or None when this delivery was
        already stored, the hook's stdout, the interaction a PermissionRequest hook may hold
        for). backdate: ``at`` is when the hook was received, earlier (a spooled hook): its
        windows are measured from then, on the timeline (:meth:`hookd.clock.Clock.stamp`)."""
        if backdate:
            tx.mono = self.store.clock.stamp(at)
        twin = _cut_twin(delivery_id, source)
        if twin is not None and tx.stored_as(twin, raw):
            # a cut body and its client's spooled copy are one invocation when they are the same
            # bytes (whichever of the two arrives first is kept)
            return None, b"", None
        stale = None
        if payload is not None and payload.session_id and self._latest.get(builder) != payload.session_id:
            payload, stale = self._canonical_session(tx, builder, payload, agent_pid if source == "live" else None)
        hook_id = tx.insert_hook_event(
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
        )
        if hook_id is None:
            return None, b"", None
        if builder not in self._builders:
            tx.add_builder(builder, harness, at)
            tx.after_commit.append(lambda: self._builders.add(builder))
        if payload is None:
            assert error is not None
            tx.append_event(
                "hook_invalid", builder, error.session_id, at,
                {"harness": harness, "error": error.message, "bytes": len(raw), "source": source},
            )
            return hook_id, b"", None
        sid = payload.session_id
        if sid and self._latest.get(builder) != sid:
            tx.after_commit.append(lambda: self._latest.__setitem__(builder, sid))
        if sid:
            # only a Stop's fingerprint is ever compared (by an idle wake of that Stop)
            mark = (hook_id, _fingerprint(raw) if payload.hook_event_name == "Stop" else b"")
            tx.after_commit.append(lambda: self._activity.__setitem__(sid, mark))
        body, hold = self._apply(tx, adapter, harness, builder, payload, at, source, stale=stale)
        if sid and agent_pid and source == "live" and self._pids.get(sid) != agent_pid:
            # after _apply, so the session row exists; psutil once per session and pid
            if tx.agent_pid(sid) != agent_pid:
                tx.set_agent_pid(sid, agent_pid, process_started_at(agent_pid))
            tx.after_commit.append(lambda: self._pids.__setitem__(sid, agent_pid))
        if hold and hold_box is not None:
            iid = hold
            tx.after_commit.append(lambda: hold_box.append(self.register_waiter(iid)))
        return hook_id, body, hold

    def _apply(
        self, tx: Tx, adapter: Adapter, harness: str, builder: str, p: Payload, at: float, source: str,
        stale: str | None = None,
    ) -> tuple[bytes, str | None]:
        """Apply one parsed payload: what ``adapter.observe`` makes of it, then a delivery at
        its boundary. Returns (hook stdout, id of the interaction a held PermissionRequest hook
        waits on). stale: the session id the payload reported when :meth:`_canonical_session`
        put it under its conversation's current one."""
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
        if sid:
            started = next((ob for ob in observations if isinstance(ob, SessionStarted)), None)
            self._track_session(tx, harness, builder, p, at, started)
        reply, hold = b"", None
        for ob in observations:
            if adapter.sequential_questions and isinstance(ob, (QuestionAsked, QuestionResolved)):
                ob = self._bind_sequential(tx, builder, p, ob, at)
            if isinstance(ob, QuestionAsked):
                reply, hold = self._question_asked(tx, builder, p, ob, at, desk_only=adapter.desk_only)
            elif isinstance(ob, PermissionAsked):
                hold = self._permission_asked(tx, builder, p, ob, at)
            elif isinstance(ob, ToolFinished) and sid:
                self._tool_finished(tx, builder, p, ob, at)
            elif isinstance(ob, QuestionResolved):
                self._question_resolved(tx, builder, p, ob, at)
            elif isinstance(ob, TurnMovedOn) and sid:
                self._close_open_questions(tx, builder, sid, ob, at)
            elif isinstance(ob, SessionEnded) and sid:
                if tx.end_session(sid, at, ob.reason):
                    tx.append_event("session_ended", builder, sid, at, {"reason": ob.reason})
            elif isinstance(ob, DeliveredSeen) and sid and source == "live":
                self._adopt_earlier(tx, builder, p, ob.via, at)
            elif isinstance(ob, Compacting) and sid:
                tx.mark_compacting(sid, at)
                # what was delivered and not yet adopted would reach only the compaction's
                # summariser: queued again, the SessionStart(compact) that follows delivers it
                requeued = tx.requeue_delivered(sid)
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
            return reply, None  # a pre-registered answer (PreToolUse)
        name = p.hook_event_name
        if name in ("Stop", "SubagentStop"):
            transcript = as_text(p.transcript_path) if name == "Stop" else None
            if transcript and source == "live" and os.path.isfile(transcript):
                # proof from the transcript, read off the hook path once this commits
                hook_id = tx.hook_event_id or 0
                tx.after_commit.append(lambda: self._schedule_transcript_adoption(builder, sid, transcript, hook_id))
            else:
                # no readable transcript: the agent answered after everything delivered
                # earlier in this turn, the weaker proof the issue allows
                self._adopt_earlier(tx, builder, p, name, at)
        if source == "live":  # a spooled hook ran long ago: its output can reach no one
            return self._deliver(tx, builder, p, at, adapter), hold
        return b"", None

    def _canonical_session(self, tx: Tx, builder: str, p: Payload, agent_pid: int | None) -> tuple[Payload, str | None]:
        """The payload under its conversation's current session, and the stale id it reported
        (None when it is not stale). Claude Code can report an earlier session id of the same
        conversation on some hooks (ids alternating seconds apart: anthropics/claude-code#58682).
        A hook's id is stale when (a) its ``tool_use_id`` is a call still open in another session
        of the same builder (a call belongs to one conversation), or (b) it is an earlier session
        of the same agent process (``CLAUDE_PID``) that has since started another one: the
        process's current session is its live session with the newest hook. SessionStart and
        SessionEnd are never moved (they start and end the sessions they name), nor is an id
        hookd never saw from that process (a new session whose SessionStart came late)."""
        sid = p.session_id
        if p.hook_event_name in ("SessionStart", "SessionEnd"):
            return p, None
        current = None
        tool_use_id = getattr(p, "tool_use_id", None)
        if isinstance(tool_use_id, str) and tool_use_id:
            head = tx.interaction_head_by_tool_use_id(tool_use_id)
            if (head is not None and head.builder == builder and head.session_id and head.session_id != sid
                    and (head.state == "pending" or (head.state == "answered" and head.received_at is not None))):
                current = head.session_id
        if current is None and agent_pid and sid and tx.agent_pid(sid) == agent_pid:
            current = tx.process_session(builder, agent_pid)
        if current is None or current == sid:
            return p, None
        # its transcript_path is the stale session's file too: the current one's stays followed
        return msgspec.structs.replace(p, session_id=current, transcript_path=None), sid

    def _adopt_earlier(self, tx: Tx, builder: str, p: Payload, via: str, at: float) -> None:
        """Adopt what earlier hooks of ``p``'s session (and agent) delivered: this hook proves
        the agent went on after reading it."""
        assert p.session_id is not None
        self._adopt(tx, builder, p.session_id, via=via, at=at, up_to_hook_event_id=(tx.hook_event_id or 0) - 1,
                    agent_id=p.agent_id)

    @staticmethod
    def _adopt(tx: Tx, builder: str, sid: str, *, via: str, at: float, up_to_hook_event_id: int,
               agent_id: str | None = None, only: list[str] | None = None) -> list[str]:
        """Mark delivered messages adopted (:meth:`hookd.store.Tx.adopt`) and record
        ``inbox_adopted``. Returns the ids changed."""
        adopted = tx.adopt(sid, up_to_hook_event_id=up_to_hook_event_id, via=via, at=at, agent_id=agent_id, only=only)
        if adopted:
            tx.append_event("inbox_adopted", builder, sid, at, {"ids": adopted, "via": via})
        return adopted

    def _deliver(self, tx: Tx, builder: str, p: Payload, at: float, adapter: Adapter) -> bytes:
        """Claim the builder's deliverable messages for this hook and render them as its
        stdout, in the hook's own transaction (DESIGN.md "Inbox and delivery"). Where and how
        is the adapter's: ``adapter.boundary(p)`` (None: no delivery here; ``"final"``: the
        Stop kind, capped at STOP_CAP in a row) and ``adapter.render_context``."""
        sid, agent, name = p.session_id, p.agent_id, p.hook_event_name
        assert sid is not None
        kind = adapter.boundary(p)
        if kind is None:
            return b""
        messages = tx.deliverable(builder, sid, agent, redeliver_before=self._redeliver_before(adapter, sid, tx.mono))
        if name == "UserPromptSubmit":
            tx.set_stop_deliveries(sid, 0)  # a new human turn
            if messages:
                messages = self._drop_typed(tx, builder, p, messages, at)
        if not messages:
            if kind == "final":
                tx.set_stop_deliveries(sid, 0)
            return b""
        if tx.has_open_question(sid, agent):
            return b""  # never into a turn sitting on an open AskUserQuestion
        if kind == "final":
            n = tx.stop_deliveries(sid)
            if n >= STOP_CAP:
                return b""  # let the agent stop; the messages wait for the next boundary
            tx.set_stop_deliveries(sid, n + 1)
        text = self._claim(tx, builder, sid, messages, hook_event_id=tx.hook_event_id, via=name, at=at)
        return adapter.render_context(name, text)

    def _drop_typed(self, tx: Tx, builder: str, p: Payload, messages: list[InboxMessage], at: float) -> list[InboxMessage]:
        """B30: a queued message the human typed verbatim reached the model as the prompt:
        adopt it (``typed``) instead of sending it again. Returns the rest."""
        prompt = as_text(getattr(p, "prompt", None)) or as_text(getattr(p, "user_prompt", None))
        if not prompt:
            return messages
        typed = [m.id for m in messages if m.state == "queued" and m.text.strip() == prompt.strip()]
        if not typed:
            return messages
        assert p.session_id is not None
        tx.adopt_typed(typed, p.session_id, at)
        tx.append_event("inbox_adopted", builder, p.session_id, at, {"ids": typed, "via": "typed"})
        return [m for m in messages if m.id not in typed]

    def _claim(self, tx: Tx, builder: str, sid: str, messages: list[InboxMessage], *,
               hook_event_id: int | None, via: str, at: float) -> str:
        """Take messages FIFO while the injection stays under the cap, mark them delivered,
        and return the framed text (the rest waits for the next boundary, in order: B14)."""
        framed: list[str] = []
        chosen = []
        # room for the header and the "N more will follow" line
        size = injection_size(frame_batch([], waiting=len(messages)))
        for m in messages:
            line = frame_message(m.id, m.author, _iso(m.created_at), m.text)
            grow = injection_size(line) + 2
            if chosen and size + grow > INJECTION_CAP:
                break
            framed.append(line)
            chosen.append(m)
            size += grow
        ids = [m.id for m in chosen]
        tx.mark_delivered(ids, hook_event_id=hook_event_id, session_id=sid, via=via, at=at)
        framed_text = frame_batch(framed, waiting=len(messages) - len(chosen))
        tx.append_event("inbox_delivered", builder, sid, at, {
            "ids": ids, "via": via, "chars": len(framed_text),
            "redelivered": [m.id for m in chosen if m.state == "delivered"],
            "waiting": len(messages) - len(chosen),
        })
        return framed_text

    # --- adoption from the transcript ------------------------------------------------------
    def _schedule_transcript_adoption(self, builder: str, sid: str, path: str, before_hook_id: int) -> None:
        task = asyncio.get_running_loop().create_task(self._adopt_from_transcript(builder, sid, path, before_hook_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _adopt_from_transcript(self, builder: str, sid: str, path: str, before_hook_id: int) -> None:
        """Mark adopted the messages delivered to ``sid`` that its transcript proves were
        sent to the model (``via: "transcript"``). Unproven ones stay delivered and are
        offered again after REDELIVER_AFTER_S."""
        try:
            ids = await asyncio.to_thread(_sent_ids_in, path)
        except OSError as e:
            log.warning("cannot read transcript %s: %s", path, e)
            return
        if not ids:
            return
        at = time.time()

        adopted, _ = await self.store.write(lambda tx: self._adopt(
            tx, builder, sid, via="transcript", at=at, up_to_hook_event_id=before_hook_id, only=sorted(ids)))
        if adopted:
            await self.bus.publish()

    # --- idle wake -------------------------------------------------------------------------
    async def wake(self, harness: str, builder: str, raw: bytes, max_wait_s: float = WAKE_MAX_S) -> bytes:
        """Hold an idle agent's async Stop hook until a message for it arrives.

        raw: the Stop payload (the same bytes the regular Stop hook sent). Returns the framed
        messages (the hook prints them to stderr and exits 2, which starts a new turn), or
        b"" when the agent becomes active again (any newer hook of the session), the Stop
        itself never reaches hookd, or ``max_wait_s`` seconds pass. Event-driven: woken by
        every commit. Respects the open-question guard and the Stop cap. Raises
        PayloadInvalid / BadRequest for anything but a Stop payload with a session id.
        """
        adapter = ADAPTERS.get(harness)
        if adapter is None:
            raise NotFound(f"unknown harness {harness!r}")
        if not adapter.idle_wake:
            raise BadRequest(f"idle wake is a Claude Code Stop hook; harness {harness!r} has none")
        p = adapter.parse(raw, builder=builder, cwd=None)
        if p.hook_event_name != "Stop" or not p.session_id:
            raise BadRequest("wake takes the main agent's Stop payload")
        sid, fp = p.session_id, _fingerprint(raw)
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + min(max_wait_s, WAKE_MAX_S)
        baseline: int | None = None
        while not self.bus.closed:
            version = self.bus.version
            act = self._activity.get(sid)
            if baseline is None:
                if act is not None and act[1] == fp:
                    baseline = act[0]  # the regular Stop hook of this very Stop is stored
                elif loop.time() - start > WAKE_STOP_GRACE_S:
                    return b""
            elif act is not None and act[0] > baseline:
                return b""  # the agent is working again: this wake is stale
            if baseline is not None:
                (text, release), _events = await self.store.write(self._wake_tx, builder, sid, baseline, time.time())
                if release:
                    return b""
                if text:
                    await self.bus.publish()
                    return text.encode()
            remaining = deadline - loop.time()
            if remaining <= 0:
                return b""
            await self.bus.wait(min(remaining, 5.0), since=version)
        return b""

    def _wake_tx(self, tx: Tx, builder: str, sid: str, baseline: int, at: float) -> tuple[str, bool]:
        """(text to wake with, release). Releases when the regular hook of this very Stop
        delivered messages: the turn goes on (with no hook while the model writes), so the
        agent is not idle and a wake now would bypass the Stop cap."""
        if tx.delivered_by_hook(baseline):
            return "", True
        if tx.has_open_question(sid, None):
            return "", False
        n = tx.stop_deliveries(sid)
        if n >= STOP_CAP:
            return "", False  # the human's next prompt resets the count
        messages = tx.deliverable(builder, sid, None, redeliver_before=tx.mono - REDELIVER_AFTER_S)
        if not messages:
            return "", False
        tx.set_stop_deliveries(sid, n + 1)
        return self._claim(tx, builder, sid, messages, hook_event_id=baseline, via="Stop (asyncRewake)", at=at), False

    # --- inbox ---------------------------------------------------------------------------
    async def send_message(
        self, builder: str, text: str, *, key: str | None = None, session_id: str | None = None,
        agent_id: str | None = None, author: str = "human",
    ) -> tuple[InboxMessage, bool]:
        """Queue ``text`` for ``builder``'s agent. Returns (message, created).

        key: idempotency key: the same key with the same text and scope returns the first
        message (created False); with other content raises Conflict. Raises BadRequest for
        empty text or text over MAX_MESSAGE_CHARS (split it: one injection stays under
        Claude Code's limit).
        """
        if not text.strip():
            raise BadRequest("message text is empty")
        size = injection_size(text)
        if size > MAX_MESSAGE_CHARS:
            raise BadRequest(
                f"message is {size} bytes as sent (JSON-escaped UTF-8); the limit is {MAX_MESSAGE_CHARS} (split it)"
            )
        if not author.strip():
            raise BadRequest("author is empty")
        check_name("author", author)

        def tx_fn(tx: Tx) -> tuple[InboxMessage, bool]:
            if key is not None:
                old = tx.message_by_key(builder, key)
                if old is not None:
                    if (old.text, old.session_id, old.agent_id) != (text, session_id, agent_id):
                        raise Conflict(f"message key {key!r} was already used for {old.id} with other content")
                    return old, False
            at = time.time()
            m = tx.insert_message(builder=builder, session_id=session_id, agent_id=agent_id,
                                  author=author, text=text, key=key, at=at)
            tx.append_event("inbox_queued", builder, session_id, at, {
                "id": m.id, "author": author, "chars": len(text), "agent_id": agent_id, "key": key,
            })
            return m, True

        (message, created), _ = await self.store.write(tx_fn)
        if created:
            await self.bus.publish()
        return message, created

    def _close_open_questions(self, tx: Tx, builder: str, sid: str, ob: TurnMovedOn, at: float) -> None:
        """Resolve questions left pending when the session's turn went on without a
        PostToolUse/PostToolUseFailure for them (Esc at the menu fires no hook). A remote
        deny handed to a held hook is adopted here: 2.1.332 fires no PostToolUse(Failure) for
        a denied call (only PostToolBatch, which hookd does not register), and had the desk
        allowed it first its PostToolUse would have settled it before the turn went on."""
        for i in tx.delivered_denies(sid, agent_id=ob.agent_id, all_agents=ob.all_agents):
            if tx.mark_adopted(i.id, at):
                tx.append_event("answer_adopted", builder, sid, at, {
                    "id": i.id, "kind": i.kind, "via": ob.via, "tool_use_id": None,
                })
        for i in tx.pending_in_session(builder, sid, agent_id=ob.agent_id, all_agents=ob.all_agents):
            if i.kind == "async":
                continue  # asked so that the agent keeps working: outlives its turn
            if ob.outcome == "orphaned":
                warning = f"the session ended ({ob.via}) while the question was open"
            else:
                warning = (f"no PostToolUse or PostToolUseFailure arrived for this call before {ob.via}; "
                           "Claude Code fires no hook when the question menu is escaped")
            if tx.resolve_interaction(
                i.id, expected_state="pending", state=ob.outcome, answers=None, selections=None,
                surface=None, warning=warning, error=None, at=at,
            ):
                data: dict[str, Any] = {
                    "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": ob.outcome,
                    "answers": None, "selections": None, "surface": None, "warning": warning,
                    "inferred_from": ob.via,
                }
                if i.agent_id:
                    data["agent_id"] = i.agent_id
                tx.append_event(resolved_event(i.kind), builder, sid, at, data)
                self._release_after(tx, i.id)
                self._inbox_answers_after(tx, i, at, outcome=ob.outcome, answers=None, surface=None)

    def _track_session(self, tx: Tx, harness: str, builder: str, p: Payload, at: float,
                       started: SessionStarted | None) -> None:
        """Record ``p``'s session (new, or its paths changed) and follow its transcript.
        started: the payload's :class:`~hookd.harness.base.SessionStarted` (None for any other
        hook): a session start or restart (``resume``, ``compact``, ...) is recorded as one."""
        sid = p.session_id
        assert sid is not None
        transcript_path, cwd = as_text(p.transcript_path), as_text(p.cwd)
        source = started.source if started is not None else None
        known = self._sessions.get(sid)
        if known is None:
            known = tx.session_info(sid)
            if known is not None and tx.clear_hooks_unarmed(sid):
                tx.append_event("hooks_armed", builder, sid, at, {"hook_event_name": p.hook_event_name})
        if known is not None:
            paths = (transcript_path or known[0], cwd or known[1])
            if paths != known:
                tx.update_session_paths(sid, transcript_path, cwd)
                if transcript_path and transcript_path != known[0]:
                    self._follow_after(tx, transcript_path, builder, sid)
            tx.after_commit.append(lambda: self._sessions.__setitem__(sid, paths))
            if started is not None:
                # `claude --resume ID` keeps the session id (2.1.332): the session reopens.
                parent = tx.reopen_session(sid, source, at)
                tx.append_event(
                    "session_started", builder, sid, at,
                    {"source": source, "parent_session_id": parent, "transcript_path": transcript_path, "cwd": cwd},
                )
            return
        parent, via = None, None
        if source == "compact":
            # SessionStart(compact) carries no parent id (field case B23): the session whose
            # PreCompact hook came last links it
            parent, via = tx.compacting_session(builder, since=tx.mono - COMPACT_LINK_S, exclude=sid), "precompact"
        if parent is None and source in ("resume", "compact", "clear", "fork"):
            # otherwise the builder's most recent other session; a fork's transcript, which
            # copies its parent's rows, corrects this guess (hookd.transcripts)
            parent, via = tx.latest_session(builder, exclude=sid), "latest"
        tx.insert_session(
            session_id=sid, builder=builder, harness=harness, parent_id=parent, source=source,
            transcript_path=transcript_path, cwd=cwd, at=at, parent_via=via,
        )
        tx.after_commit.append(lambda: self._sessions.__setitem__(sid, (transcript_path, cwd)))
        if transcript_path:
            self._follow_after(tx, transcript_path, builder, sid)
        tx.append_event(
            "session_started", builder, sid, at,
            {"source": source, "parent_session_id": parent, "transcript_path": transcript_path, "cwd": cwd},
        )

    def _follow_after(self, tx: Tx, path: str, builder: str, sid: str) -> None:
        """Once this commits, have the tailer follow a session's transcript."""
        if self.on_transcript is not None:
            tx.after_commit.append(lambda: self.on_transcript(path, builder, sid))

    def _question_asked(
        self, tx: Tx, builder: str, p: Payload, ob: QuestionAsked, at: float, desk_only: bool = False,
    ) -> tuple[bytes, str | None]:
        """Returns (hook stdout: a pre-registered answer at PreToolUse, or b""; the id a
        PermissionRequest hook may hold for). desk_only: the harness reads the answer at its
        own terminal (claw): no hook can carry one, so the question is marked as past its
        prompt phase (a remote answer becomes an inbox message) and never pre-answered."""
        existing = None
        if ob.tool_use_id:
            key, existing = self._call_interaction(tx, builder, p, ob.tool_use_id, at)
            if key != ob.tool_use_id:
                ob = msgspec.structs.replace(ob, tool_use_id=key)
            if existing is None:
                # A PermissionRequest (no tool_use_id) may have arrived first.
                existing = tx.interaction_by_hash(
                    builder=builder, session_id=p.session_id, tool_name=ob.tool_name,
                    input_hash=ob.input_hash, states=("pending",), since=tx.mono - MATCH_WINDOW_S,
                    without_tool_use_id=True,
                )
                if existing is not None:
                    tx.set_tool_use_id(existing.id, ob.tool_use_id)
        else:
            # No tool_use_id (PermissionRequest in 2.1.332): the same call is the newest
            # pending one with this input, or one resolved moments ago (the desk answered
            # first). A second copy of the same hook matches the same way, never opening a
            # second question.
            existing = tx.interaction_by_hash(
                builder=builder, session_id=p.session_id, tool_name=ob.tool_name,
                input_hash=ob.input_hash, states=("pending",), since=tx.mono - MATCH_WINDOW_S,
            )
            if existing is None:
                existing = tx.interaction_by_hash(
                    builder=builder, session_id=p.session_id, tool_name=ob.tool_name,
                    input_hash=ob.input_hash, states=TERMINAL_STATES, since=tx.mono - RESOLVED_MATCH_S,
                )
        if existing is not None:
            if ob.tool_input is not None and existing.input is None:
                tx.set_input(existing.id, ob.tool_input)
            if desk_only:
                tx.mark_permission_seen(existing.id, at)
                return b"", None
            if ob.via == "PermissionRequest":
                tx.mark_permission_seen(existing.id, at)
                return b"", existing.id if _holdable(existing) else None
            return b"", None
        i = self._open_question(tx, builder, p, ob.tool_use_id, ob.tool_name, ob.input_hash, ob.questions,
                                ob.via, at, tool_input=ob.tool_input)
        if desk_only:
            tx.mark_permission_seen(i.id, at)
            return b"", None
        if ob.via == "PreToolUse":
            return self._preanswered(tx, i, at), None
        return b"", i.id if ob.via == "PermissionRequest" else None

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
        ids unchanged, under its own session id: Claude Code 2.1.332)."""
        lookup = tx.interaction_head_by_tool_use_id if head else tx.interaction_by_tool_use_id
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
    ) -> Interaction:
        iid = tool_use_id or _synthetic_id(p.session_id, input_hash, tx.hook_event_id)
        i = Interaction(
            id=iid, kind="question", builder=builder, session_id=p.session_id,
            agent_id=p.agent_id, tool_name=tool_name, tool_use_id=tool_use_id, state="pending",
            questions=questions, answers=None, selections=None, surface=None, warning=None,
            error=None, created_at=at, resolved_at=None, revision=1, input=tool_input, input_hash=input_hash,
        )
        tx.insert_interaction(i, permission_seen_at=at if via == "PermissionRequest" else None)
        data: dict[str, Any] = {"id": iid, "kind": "question", "tool_use_id": tool_use_id,
                                "questions": questions, "via": via}
        if p.agent_id:
            data["agent_id"] = p.agent_id
        tx.append_event("question_pending", builder, p.session_id, at, data)
        return i

    def _question_resolved(self, tx: Tx, builder: str, p: Payload, ob: QuestionResolved, at: float) -> None:
        existing: Interaction | InteractionHead | None = None
        if ob.tool_use_id:
            # the head: a resolved call's PostToolUse (or a second copy of it) needs no more
            key, existing = self._call_interaction(tx, builder, p, ob.tool_use_id, at, head=True)
            if key != ob.tool_use_id:
                ob = msgspec.structs.replace(ob, tool_use_id=key)
        if existing is None:
            existing = tx.interaction_by_hash(
                builder=builder, session_id=p.session_id, tool_name=ob.tool_name,
                input_hash=ob.input_hash, states=("pending", "answered"), since=tx.mono - MATCH_WINDOW_S,
                without_tool_use_id=True,
            )
            if existing is not None and ob.tool_use_id:
                tx.set_tool_use_id(existing.id, ob.tool_use_id)
        if existing is None:
            # The ask itself was never seen (hook missed or registered late): record it now,
            # so every tool call has exactly one pending and one resolved event.
            existing = self._open_question(
                tx, builder, p, ob.tool_use_id, ob.tool_name, ob.input_hash, ob.questions, p.hook_event_name, at,
                tool_input=getattr(p, "tool_input", None),
            )
        self._release_after(tx, existing.id)  # the desk answered: a held hook has nothing to do
        if existing.state == "answered" and existing.received_at is not None:
            # answered remotely: did that answer reach the tool, or did the desk win the race?
            if isinstance(existing, InteractionHead):
                full = tx.interaction(existing.id)
                assert full is not None  # read in this same transaction
                existing = full
            self._settle_remote(tx, existing, p, at, outcome=ob.outcome, answers=ob.answers,
                                selections=ob.selections, decision=None, error=ob.error)
            return
        if existing.state != "pending":
            return  # already resolved: the same hook ran twice, or a late duplicate
        if not tx.resolve_interaction(
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
        self._inbox_answers_after(tx, existing, at, outcome=ob.outcome, answers=ob.answers, surface=ob.surface)

    def _permission_asked(self, tx: Tx, builder: str, p: Payload, ob: PermissionAsked, at: float) -> str | None:
        """A tool permission prompt: one ``permission`` interaction per prompt (a second copy
        of the same hook matches it). Returns its id when a hook may hold for it."""
        sid = p.session_id
        existing = tx.permission_by_hash(sid, ob.tool_name, ob.input_hash, since=tx.mono - MATCH_WINDOW_S) if sid else None
        if existing is not None:
            tx.mark_permission_seen(existing.id, at)
            return existing.id if _holdable(existing) else None
        iid = _synthetic_id(sid, ob.input_hash, tx.hook_event_id)
        i = Interaction(
            id=iid, kind="permission", builder=builder, session_id=sid, agent_id=p.agent_id,
            tool_name=ob.tool_name, tool_use_id=None, state="pending", questions=None, answers=None,
            selections=None, surface=None, warning=None, error=None, created_at=at, resolved_at=None,
            revision=1, input=ob.tool_input, input_hash=ob.input_hash,
        )
        tx.insert_interaction(i, permission_seen_at=at)
        data: dict[str, Any] = {"id": iid, "kind": "permission", "tool_name": ob.tool_name,
                                "tool_input": ob.tool_input, "input_hash": ob.input_hash,
                                "permission_mode": ob.permission_mode}
        if p.agent_id:
            data["agent_id"] = p.agent_id
        tx.append_event("permission_pending", builder, sid, at, data)
        return iid

    def _tool_finished(self, tx: Tx, builder: str, p: Payload, ob: ToolFinished, at: float) -> None:
        """A tool call ended: a permission prompt for it is over. PostToolUse /
        PostToolUseFailure mean the tool ran (allowed). (A PermissionRequest deny fires neither
        in 2.1.332: see :meth:`_close_open_questions`.)"""
        sid = p.session_id
        assert sid is not None
        if not tx.awaiting_tool_result(sid):
            return  # the common case: no prompt open, nothing to hash
        i = tx.permission_by_hash(sid, ob.tool_name, input_hash(ob.tool_input), since=0.0)
        if i is None:
            return
        if ob.tool_use_id and i.tool_use_id is None:
            key, holder = self._call_interaction(tx, builder, p, ob.tool_use_id, at, head=True)
            if holder is None:  # (one of this session's holding it already: leave both alone)
                tx.set_tool_use_id(i.id, key)
        self._release_after(tx, i.id)
        if i.state == "answered" and i.received_at is None:
            return  # allowed at the desk, seen while the tool ran (hookd.answers)
        if i.state == "answered":
            # the tool ran: a remote allow was adopted, a remote deny lost to the desk's Yes
            self._settle_remote(tx, i, p, at, outcome="answered", answers=None, selections=None,
                                decision="allow", error=ob.error)
            return
        if not tx.resolve_interaction(
            i.id, expected_state="pending", state="answered", answers=None, selections=None,
            surface="terminal", warning=None, error=ob.error, at=at, decision="allow",
        ):
            return
        tx.append_event("permission_resolved", builder, sid, at, {
            "id": i.id, "kind": "permission", "tool_name": i.tool_name, "tool_use_id": ob.tool_use_id,
            "outcome": "answered", "decision": "allow", "surface": "terminal",
            "tool_failed": ob.failed,
        })

    # --- spool --------------------------------------------------------------------------
    async def ingest_spool(self) -> dict[str, int]:
        """Ingest every spooled payload, oldest first, each exactly once.

        Spool files are ``spool/<builder>/<usec>-<pid>-<rand>.<harness>.json`` written by
        hook clients (temp file + rename), or the same under a spool outside the home
        (:meth:`hookd.config.Home.spool_roots`) when the home's could not be written. A file is deleted only after its transaction
        committed; its name is its delivery id, so a crash between commit and delete, or a
        payload that also reached the daemon live, is not stored twice. While the database
        cannot commit (StorageUnavailable) the pass stops at the first file: it and the rest
        stay, for the next pass once storage is back (hookd.storage_health.retry_until_back).
        A file that fails for another reason stays too (logged). One pass at a time.
        Returns counts: ingested, duplicates, invalid.
        """
        async with self._spool_lock:
            return await self._ingest_spool()

    async def _ingest_spool(self) -> dict[str, int]:
        counts = {"ingested": 0, "duplicates": 0, "invalid": 0}
        files = await asyncio.to_thread(_spool_files, self.home)
        for name, builder, f in files:
            stem = name[: -len(".json")]
            delivery_id, _, harness = stem.rpartition(".")
            if not delivery_id:
                delivery_id, harness = stem, DEFAULT_HARNESS
            try:
                # off the event loop, and never a FIFO, device or symlink someone put there
                raw = await asyncio.to_thread(read_regular, f, follow=False)
            except NotRegularFile as e:
                if e.filename not in self._spool_refused:
                    self._spool_refused.add(e.filename)
                    log.warning("spool entry %s; left in place (remove it)", e)
                continue
            except OSError as e:
                log.warning("cannot read spool file %s: %s", f, e)
                continue
            try:
                received = int(delivery_id.split("-", 1)[0]) / 1e6
            except ValueError:
                received = f.stat().st_mtime
            try:
                res = await self.ingest_hook(harness, builder, raw, source="spool", delivery_id=delivery_id, received_at=received)
                counts["duplicates" if res.duplicate else "ingested"] += 1
            except PayloadInvalid as e:
                counts["invalid"] += 1  # stored with its raw bytes; safe to delete
                log.warning("spooled payload %s stored as invalid: %s", f, e.message)
            except StorageUnavailable:
                break  # it and the rest stay (the store logs the outage once)
            except HookdError as e:
                log.warning("spooled payload %s left in the spool: %s", f, e.message)
                continue
            except Exception:  # a bug: never the spool watcher's end, never the file's
                log.exception("spooled payload %s left in the spool", f)
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f)
        return counts


#: How much of a transcript's end is read for adoption proof (bytes).
TRANSCRIPT_TAIL_BYTES = 16 * 1024 * 1024


def _spool_files(home: Home) -> list[tuple[str, str, Path]]:
    """The spools' ``(name, builder, path)`` entries named like payloads, oldest first: the
    home's ``spool/``, then those outside it (a full disk: :meth:`Home.spool_roots`), whose
    builder folders must be private directories of this user's too."""
    files: list[tuple[str, str, Path]] = []
    for root in home.spool_roots():
        if not root.is_dir():
            continue
        for bdir in root.iterdir():
            if not bdir.is_dir() or bdir.is_symlink():
                continue
            if root != home.spool_root and private_dir_problem(bdir) is not None:
                continue
            for f in bdir.iterdir():
                if f.name.startswith(".") or not f.name.endswith(".json"):
                    continue
                files.append((f.name, bdir.name, f))
    files.sort(key=lambda t: (t[0].split("-", 1)[0].rjust(20, "0"), t[0]))
    return files


def _sent_ids_in(path: str) -> set[str]:
    """Message ids the transcript at ``path`` proves were sent (its last 16 MiB, read by its
    harness's reader: :func:`hookd.harness.registry.reader_of`). Raises OSError
    (NotRegularFile for a FIFO or device: never waited on)."""
    fd, st = open_regular(path)
    try:
        start = max(0, st.st_size - TRANSCRIPT_TAIL_BYTES)
        data = os.pread(fd, st.st_size - start, start)
    finally:
        os.close(fd)
    return reader_of(path).sent_message_ids(data.splitlines())


def _holdable(i: Interaction) -> bool:
    """May a PermissionRequest hook wait on ``i``: still open, or answered remotely with the
    answer not yet handed to a hook."""
    return i.state == "pending" or (i.state == "answered" and i.received_at is not None and i.delivered_at is None
                                    and i.kind != "async")


def _fingerprint(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=16).digest()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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
