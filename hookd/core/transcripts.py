"""Applying transcript rows to hookd's records (the fallback when hooks are missing).

Rows read by the transcript tailer (:mod:`hookd.watchers.tailer`, which hands them to
:meth:`Transcripts.apply_transcript`) are classified by the file's reader (a
:class:`hookd.harness.base.TranscriptReader`, :func:`hookd.harness.registry.reader_of`) and
applied with the same functions the hooks use, keyed by ``tool_use_id``: an AskUserQuestion seen by both a hook and
the transcript is one interaction with one ``question_pending`` and one ``question_resolved``.
A session whose transcript moves while no hook ever arrived from it is ``hooks_unarmed``
(field case B19: Claude Code snapshots hooks at session start).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from datetime import datetime
from functools import partial
from typing import Any, Protocol

import msgspec

from hookd.core.bus import EventBus
from hookd.core.hookhealth import HookHealth
from hookd.core.inbox import Inbox
from hookd.core.questions import Questions
from hookd.core.state import HookCache
from hookd.harness.base import (
    Interrupted,
    Observation,
    Payload,
    QuestionAsked,
    QuestionResolved,
    ToolResultSeen,
    TranscriptReader,
    TurnEnded,
    TurnStarted,
    question_result,
)
from hookd.harness.base import text as as_text
from hookd.harness.registry import reader_of
from hookd.store import Store, Tx

#: A session is flagged hooks_unarmed once its newest transcript row is this old (seconds) and
#: still no hook event came from it: the first hook may be on its way.
UNARMED_GRACE_S = 5.0
#: no bound on the hook that delivered a message proven sent by a transcript read (the tailer's
#: proof may come after any number of later hooks)
ANY_HOOK = 2**63 - 1
#: permissionDecision.source -> hookd surface
_SURFACES = {"hook": "hook"}
#: The tool name a question resolved from a transcript's tool result is matched under (the
#: result row does not name its tool).
_ASK_TOOL = "AskUserQuestion"


def _row_time(row: dict[str, Any]) -> float | None:
    ts = row.get("timestamp")
    if not isinstance(ts, str):
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


_SESSION_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def session_of_path(path: str) -> str | None:
    """The session a Claude Code transcript's path names: ``<session id>.jsonl``, or
    ``<session id>/subagents/<agent>.jsonl`` for a subagent's (2.1.332); None when the name is
    no session id (a file registered by hand)."""
    folder, name = os.path.split(path)
    if os.path.basename(folder) == "subagents":
        name = os.path.basename(os.path.dirname(folder)) + ".jsonl"
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else ""
    return stem if _SESSION_NAME.fullmatch(stem) else None


class _Cursor(Protocol):
    dev: int
    ino: int
    offset: int
    tail: bytes


class _Stats(Protocol):
    rows: int
    nul_padded: int
    spliced: int
    invalid_utf8: int
    torn: int

    def as_dict(self) -> dict[str, int]: ...


class TranscriptRead(Protocol):
    """One read of a transcript file (the tailer's :class:`hookd.watchers.jsonl.ReadResult`): its rows,
    where reading now stands (``cursor``) and what it met (``stats``)."""

    rows: list[dict[str, Any]]
    cursor: _Cursor
    stats: _Stats


class Transcripts:
    """Transcript rows applied over ``store`` (``bus``: publishes; ``questions``: the same
    interactions the hooks open; ``inbox``: adoption proof from a model request row; ``cache``:
    a session flagged hooks_unarmed is re-read by its next hook)."""

    def __init__(self, store: Store, bus: EventBus, questions: Questions, inbox: Inbox, cache: HookCache):
        self.store = store
        self.bus = bus
        self.questions = questions
        self.inbox = inbox
        self.cache = cache
        self._unarmed_checks: dict[str, asyncio.TimerHandle] = {}  # sid -> its pending hooks_unarmed check
        #: the hooks_changed warning (set by the facade; None: not tracked)
        self.health: HookHealth | None = None

    async def apply_transcript(self, path: str, builder: str, session_id: str | None,
                               result: TranscriptRead) -> int:
        """Apply what one read of ``path`` (``builder``'s transcript; ``session_id`` if known)
        returned, and persist its cursor, in one transaction. Returns the number of events."""
        _, events = await self.store.write(self._transcript_tx, path, builder, session_id, result, time.time())
        if events:
            await self.bus.publish(events)
        return len(events)

    async def transcript_followed(self, path: str, builder: str, session_id: str) -> None:
        """Record that the tailer now also follows ``path``, a file that is not the hooks'
        ``transcript_path`` but carries ``session_id``'s rows (field case B23: after
        compaction the reported path can freeze while the session writes elsewhere)."""
        def tx_(tx: Tx) -> None:
            tx.append_event("transcript_followed", builder, session_id, time.time(), {
                "path": path, "reason": "a file in the session's folder carries its session id",
            })
        await self.store.write(tx_)
        await self.bus.publish()

    def _transcript_tx(self, tx: Tx, path: str, builder: str, session_hint: str | None,
                       result: TranscriptRead, at: float) -> None:
        rows = reader_of(path)  # the harness that writes this file
        # rows without a session id belong to the file's session: the one it is followed for,
        # else the one its location names (claw), else any of its rows that names one, else
        # the one its cursor recorded, else its name
        session_hint = session_hint or rows.transcript_session(builder, path)
        session_hint = (session_hint or next((s for s in map(rows.row_session, result.rows) if s), None)
                        or tx.sessions.transcript_session(result.cursor.dev, result.cursor.ino) or session_of_path(path))
        unknown = blocks = 0
        sessions: dict[str, tuple[float | None, str | None]] = {}  # sid -> (newest row time, cwd)
        roots: dict[str, str] = {}  # sid -> uuid of its first conversation root row in this read
        firsts: dict[str, float | None] = {}  # sid -> time of its first timestamped row in this read
        requests: set[str] = set()  # sessions whose sent model requests this read shows
        for row in result.rows:
            kind = row.get("type")
            sid = rows.row_session(row) or session_hint
            if kind == "api-request" and sid:
                requests.add(sid)
            if kind not in rows.TRANSCRIPT_ROW_TYPES:
                unknown += 1
            else:
                blocks += rows.unknown_blocks(row)
            if sid and firsts.get(sid) is None:
                firsts[sid] = _row_time(row)  # a fork's first rows are written when it forks
            if sid and kind in ("user", "assistant"):
                prev = sessions.get(sid, (None, None))
                sessions[sid] = (_row_time(row) or prev[0], as_text(row.get("cwd")) or prev[1])
                root = rows.row_root(row)
                if root and sid not in roots:
                    roots[sid] = root
            obs = rows.transcript_observations(row)
            if not obs:
                continue
            if sid and tx.sessions.session_info(sid) is None:  # the session first, then what it asked
                self._transcript_session(tx, builder, sid, path, as_text(row.get("cwd")), None, at, rows)
            if sid and sid not in sessions:
                sessions[sid] = (_row_time(row), as_text(row.get("cwd")))
            self._row_observations(tx, rows, builder, path, row, sid, obs, at)
        for sid, (newest, cwd) in sessions.items():
            self._transcript_session(tx, builder, sid, path, cwd, newest, at, rows)
        self._forks_and_adoptions(tx, builder, path, roots, firsts, requests, at)
        file_session = session_hint or (next(iter(sessions)) if len(sessions) == 1 else None)
        self._save_read(tx, path, builder, file_session, result, unknown, blocks, at)

    def _row_observations(self, tx: Tx, rows: TranscriptReader, builder: str, path: str, row: dict[str, Any],
                          sid: str | None, obs: list[Observation], at: float) -> None:
        """Apply the observations ``rows`` found in one transcript ``row`` of session ``sid``
        (None: the row and the file name none), as the hooks' facts."""
        agent = as_text(row.get("agentId")) if row.get("isSidechain") else None
        p = Payload(hook_event_name="transcript", session_id=sid, agent_id=agent)
        for ob in obs:
            if isinstance(ob, QuestionAsked):
                if rows.sequential_questions:  # no tool_use_id in its hooks: bind to the hook-opened question
                    ob = self.questions.bind_sequential(tx, builder, p, ob, at)
                self.questions.question_asked(tx, builder, p, ob, at, desk_only=rows.questions_at_desk)
            elif isinstance(ob, ToolResultSeen):
                self._tool_result_seen(tx, builder, p, ob, at)
            elif isinstance(ob, (TurnStarted, TurnEnded)) and sid:
                t = _row_time(row) or at
                if isinstance(ob, TurnStarted):
                    tx.sessions.set_transcript_turn(sid, started_at=t)
                    if ob.text and agent is None:
                        self.inbox.typed_in_transcript(tx, builder, sid, ob.text, t, at)
                else:
                    tx.sessions.set_transcript_turn(sid, ended_at=t)
                    if self.health is not None and agent is None:
                        self.health.turn_ended(tx, builder, sid, t)
            elif isinstance(ob, Interrupted):
                tx.append_event("turn_interrupted", builder, sid, at, {"marker": ob.marker, "via": "transcript"})
                if sid:
                    if tx.sessions.session_info(sid) is None:
                        self._transcript_session(tx, builder, sid, path, as_text(row.get("cwd")), None, at, rows)
                    written = _row_time(row)
                    tx.sessions.set_interrupted(sid, written or at)
                    if written is not None and agent is None:  # (a row without its time: not known what it follows)
                        self.questions.close_at_interrupt(tx, builder, sid, ob.marker, written, at)

    def _forks_and_adoptions(self, tx: Tx, builder: str, path: str, roots: dict[str, str],
                             firsts: dict[str, float | None], requests: set[str], at: float) -> None:
        """After one read's rows: link each session whose transcript starts with another's rows
        (``roots``: sid -> its first root row's uuid; ``firsts``: sid -> its first row's time)
        to that parent, and look for the adoption proof of the sessions in ``requests`` (their
        sent model requests are in this read) once the transaction commits."""
        for sid, root in roots.items():
            for child, parent in tx.sessions.set_root_uuid(sid, root, firsts.get(sid)):
                if tx.sessions.link_parent(child, parent, "transcript"):
                    tx.append_event("session_linked", builder, child, at, {
                        "parent_session_id": parent, "via": "transcript",
                        "reason": "its transcript starts with the parent's rows (a fork)",
                    })
        for sid in requests:
            if tx.inbox.has_unadopted(sid):
                # adoption proof written after the Stop that looked for it (the request that
                # carried a message is logged later): read it now, off the hook path
                tx.after_commit.append(partial(self.inbox.adopt_from_transcript_later, builder, sid, path, ANY_HOOK))

    def _save_read(self, tx: Tx, path: str, builder: str, file_session: str | None, result: TranscriptRead,
                   unknown: int, blocks: int, at: float) -> None:
        """Persist the file's cursor after one read (``file_session``: the session its rows
        belong to, None when several or none) and record damaged or unknown rows (``unknown``
        rows of unknown type, ``blocks`` unknown content blocks) as one event."""
        st = result.stats
        tx.sessions.save_transcript(
            dev=result.cursor.dev, ino=result.cursor.ino, path=path, builder=builder,
            session_id=file_session,
            offset=result.cursor.offset, rows=st.rows,
            damaged=st.nul_padded + st.spliced + st.invalid_utf8 + st.torn, unknown_rows=unknown, at=at,
            tail=result.cursor.tail,
        )
        damaged = {k: v for k, v in st.as_dict().items() if k not in ("rows", "bytes") and v}
        if damaged or unknown or blocks:
            tx.append_event("transcript_damaged" if damaged else "transcript_unknown_rows", builder, file_session, at,
                            {"path": path, **damaged, "unknown_rows": unknown, "unknown_blocks": blocks})

    def _transcript_session(self, tx: Tx, builder: str, sid: str, path: str,
                            cwd: str | None, newest: float | None, at: float, rows: TranscriptReader) -> None:
        """A session seen in a transcript read by ``rows``: recorded if new
        (source ``transcript``); flagged ``hooks_unarmed`` when it is moving and no hook ever
        came from it."""
        if tx.sessions.session_info(sid) is None:
            tx.sessions.insert_session(session_id=sid, builder=builder, harness=rows.HARNESS, parent_id=None,
                              source="transcript", transcript_path=path, cwd=cwd, at=at)
            tx.append_event("session_started", builder, sid, at, {
                "source": "transcript", "parent_session_id": None, "transcript_path": path, "cwd": cwd,
            })
        if newest is not None and at - newest < UNARMED_GRACE_S and not tx.sessions.session_has_hooks(sid):
            # the first hook may be on its way: look again when the grace has passed, even
            # if the transcript does not move again (an agent blocked on its question)
            tx.after_commit.append(lambda: self._unarmed_later(builder, sid, path, newest + UNARMED_GRACE_S, rows))
        elif newest is not None and not tx.sessions.session_has_hooks(sid):
            if tx.sessions.mark_hooks_unarmed(sid, at):
                tx.append_event("hooks_unarmed", builder, sid, at,
                                {"transcript_path": path, "advice": rows.UNARMED_ADVICE})
                tx.after_commit.append(lambda: self.cache.sessions.pop(sid, None))  # next hook re-reads it

    def _unarmed_later(self, builder: str, sid: str, path: str, due: float,
                       rows: TranscriptReader) -> None:
        """At ``due`` (UNIX seconds), flag ``sid`` hooks_unarmed if still no hook came from it
        (one pending check per session)."""
        checks = self._unarmed_checks
        if sid in checks:
            return

        async def check() -> None:
            checks.pop(sid, None)
            try:
                def tx_(tx: Tx) -> None:
                    if tx.sessions.session_info(sid) is not None:
                        self._transcript_session(tx, builder, sid, path, None, due - UNARMED_GRACE_S, time.time(), rows)
                _, events = await self.store.write(tx_)
                if events:
                    await self.bus.publish()
            except Exception:  # the store is closing: the next read of the file checks again
                pass

        loop = asyncio.get_running_loop()
        checks[sid] = loop.call_later(max(0.0, due - time.time()) + 0.05, lambda: asyncio.ensure_future(check()))

    @staticmethod
    def _answers_by_text(tx: Tx, ob: ToolResultSeen) -> ToolResultSeen:
        """``ob`` with its answers keyed by question id (``answers_by_id``: Codex's) keyed by
        the text of the call's question with that ``id`` instead, and those questions; answers
        None when the call is no question hookd knows (nothing to key them by)."""
        i = tx.interactions.interaction_by_tool_use_id(ob.tool_use_id)
        qs = i.questions if i is not None and i.kind == "question" and isinstance(i.questions, list) else []
        texts = {q.get("id"): q.get("question") for q in qs if isinstance(q, dict)}
        answers = {texts[k]: v for k, v in (ob.answers or {}).items() if isinstance(texts.get(k), str)}
        return msgspec.structs.replace(ob, answers=answers if qs else None, questions=qs or None, answers_by_id=False)

    def _tool_result_seen(self, tx: Tx, builder: str, p: Payload, ob: ToolResultSeen,
                          at: float) -> None:
        surface: str | None  # where the question was answered; None: no human was asked
        if ob.answers_by_id:
            ob = self._answers_by_text(tx, ob)
        if ob.answers is not None and isinstance(ob.questions, list):
            surface = _SURFACES.get(ob.decision_source or "", "terminal")
            self.questions.question_resolved(tx, builder, p,
                                    question_result(ob.tool_use_id, _ASK_TOOL, ob.questions, ob.answers, surface=surface),
                                    at)
            return
        i = tx.interactions.interaction_by_tool_use_id(ob.tool_use_id)
        if i is None or i.kind != "question":
            return
        if ob.rejected:
            outcome, surface, warning = "dismissed", "terminal", "rejected at the desk (Esc or No), as the transcript shows"
        elif ob.is_error:
            # no human was asked: the harness refused the tool (plain `claude -p`: "No such tool
            # available"; field case B05); the model may go on as if someone had answered
            outcome, surface = "denied", None
            warning = ("the harness refused the tool without asking anyone (its error is in `error`); "
                       "the model may proceed as if a human had answered")
        elif i.state == "pending":
            # the call has its result, but the row carries no answers (no toolUseResult): the
            # question is over all the same (a pending one would stall the lane for good);
            # what was answered is not known here
            outcome, surface = "empty", None
            warning = ("the transcript shows the call's result without its answers (no toolUseResult): "
                       "the question is over, what was answered is not known")
        else:
            return
        self.questions.question_resolved(tx, builder, p, QuestionResolved(
            tool_use_id=ob.tool_use_id, tool_name=_ASK_TOOL, input_hash=i.input_hash or "", questions=i.questions,
            outcome=outcome, answers=None, selections=None, surface=surface, warning=warning,
            error=ob.error if outcome == "denied" else None,
        ), at)
