"""The transaction's SQL about where hooks come from: hook events, builders, sessions,
tailed transcripts and lanes (the :class:`hookd.store.Tx` part :class:`SessionsTx`)."""

from __future__ import annotations

from typing import Any

import msgspec

from hookd.models import Interaction
from hookd.store.base import TxPart
from hookd.store.rows import _INTERACTION_COLS, _interaction

#: A session's failure (``failed_at``) that a later main-agent hook went past: the human
#: prompted again, or the agent went on (its SessionEnd, and notices, say nothing of a turn).
#: The StopFailure's own hook has ``received_at`` equal to ``failed_at``.
SUPERSEDED_FAILURE = (
    "failed_at IS NOT NULL AND EXISTS (SELECT 1 FROM hook_events h WHERE h.session_id=sessions.id"
    " AND h.agent_id IS NULL AND h.received_at>sessions.failed_at"
    " AND COALESCE(h.hook_kind, '') NOT IN ('session_end', 'notice'))"
)


class SessionsTx(TxPart):
    """Hook events, builders, sessions, transcripts and lanes, inside one write transaction."""

    __slots__ = ()

    # hook events ---------------------------------------------------------------------
    def insert_hook_event(
        self,
        *,
        delivery_id: str | None,
        builder: str,
        harness: str,
        source: str,
        received_at: float,
        raw: bytes,
        hook_event_name: str | None,
        session_id: str | None,
        tool_name: str | None,
        tool_use_id: str | None,
        agent_id: str | None,
        error: str | None,
        hook_kind: str | None = None,
    ) -> int | None:
        """Store one raw hook payload; None when ``delivery_id`` was already stored. hook_kind:
        what its adapter says the event means (:data:`hookd.harness.base.HookKind`), or None."""
        cur = self._db.execute(
            "INSERT INTO hook_events (delivery_id, builder, harness, source, received_at, raw,"
            " hook_event_name, session_id, tool_name, tool_use_id, agent_id, error, received_mono, hook_kind)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(delivery_id) DO NOTHING",
            (delivery_id, builder, harness, source, received_at, raw, hook_event_name,
             session_id, tool_name, tool_use_id, agent_id, error, self._tx.mono, hook_kind),
        )
        if cur.rowcount == 0:
            return None
        self._tx.hook_event_id = cur.lastrowid
        return cur.lastrowid

    def record_checkpoint(self, at: float, frames: int) -> None:
        """The last WAL checkpoint: when, and how many frames it copied (Store._restart_wal)."""
        self._db.execute("INSERT INTO checkpoints (id, at, frames) VALUES (1, ?, ?) ON CONFLICT(id)"
                         " DO UPDATE SET at=excluded.at, frames=excluded.frames", (at, frames))

    def stored_as(self, delivery_id: str, raw: bytes) -> bool:
        """Whether ``raw``, byte for byte, is stored under ``delivery_id``."""
        return self._one("SELECT 1 FROM hook_events WHERE delivery_id=? AND raw=?", (delivery_id, raw)) is not None

    def add_builder(self, builder: str, harness: str, at: float) -> None:
        """Record the builder on its first hook (no-op afterwards)."""
        self._db.execute(
            "INSERT INTO builders (id, harness, first_hook_at) VALUES (?,?,?) ON CONFLICT(id) DO NOTHING",
            (builder, harness, at),
        )

    # sessions ------------------------------------------------------------------------
    def session_harness(self, session_id: str) -> str | None:
        row = self._one("SELECT harness FROM sessions WHERE id=?", (session_id,))
        return row[0] if row else None

    def session_info(self, session_id: str) -> tuple[str | None, str | None] | None:
        """(transcript_path, cwd) of a known session, None if unknown."""
        row = self._one("SELECT transcript_path, cwd FROM sessions WHERE id=?", (session_id,))
        return (row[0], row[1]) if row else None

    def latest_session(self, builder: str, exclude: str) -> str | None:
        """The builder's most recently active session other than ``exclude``."""
        row = self._one(
            "SELECT session_id FROM hook_events WHERE builder=? AND session_id IS NOT NULL AND session_id<>?"
            " ORDER BY id DESC LIMIT 1",
            (builder, exclude),
        )
        return row[0] if row else None

    def insert_session(
        self, *, session_id: str, builder: str, harness: str, parent_id: str | None,
        source: str | None, transcript_path: str | None, cwd: str | None, at: float,
        parent_via: str | None = None,
    ) -> None:
        self._db.execute(
            "INSERT INTO sessions (id, builder, harness, parent_id, parent_via, source, transcript_path, cwd,"
            " started_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (session_id, builder, harness, parent_id, parent_via if parent_id else None, source,
             transcript_path, cwd, at),
        )

    def mark_compacting(self, session_id: str, at: float) -> None:
        """PreCompact seen for ``session_id`` (the marker a SessionStart(compact) with a new
        session id is linked by: that payload carries no parent id)."""
        self._db.execute("UPDATE sessions SET compacting_at=?, compacting_mono=? WHERE id=?", (at, self._tx.mono, session_id))

    def mark_failed(self, session_id: str, at: float, failure: dict[str, Any]) -> None:
        """The session's turn ended on an API error at ``at`` (UNIX seconds, the hook's own
        received time: its lane compares the two); ``failure``: ``{"error", "details",
        "message"}`` (stored as JSON)."""
        self._db.execute("UPDATE sessions SET failed_at=?, failure=? WHERE id=?",
                         (at, msgspec.json.encode(failure).decode(), session_id))

    def mark_refused(self, session_id: str, at: float, line: str) -> None:
        """A tool call of the session was refused without asking anyone at ``at`` (UNIX
        seconds); ``line``: it as a person reads it (the lane shows the last one)."""
        self._db.execute("UPDATE sessions SET refused_at=?, refused=? WHERE id=?", (at, line, session_id))

    def mark_notified(self, session_id: str, at: float, line: str) -> None:
        """The session's agent addressed its human itself at ``at`` (UNIX seconds); ``line``:
        the message's first line (the lane shows the last one)."""
        self._db.execute("UPDATE sessions SET notified_at=?, notified=? WHERE id=?", (at, line, session_id))

    def compacting_session(self, builder: str, since: float, exclude: str) -> str | None:
        """The builder's session with the newest PreCompact marker at or after ``since``
        (hookd's timeline: :attr:`mono`), other than ``exclude``."""
        row = self._one(
            "SELECT id FROM sessions WHERE builder=? AND id<>? AND COALESCE(compacting_mono, compacting_at)>=?"
            " ORDER BY COALESCE(compacting_mono, compacting_at) DESC LIMIT 1",
            (builder, exclude, since),
        )
        return row[0] if row else None

    def set_root_uuid(self, session_id: str, uuid: str, first_row_at: float | None) -> list[tuple[str, str]]:
        """Record the uuid of a session's first conversation row and the time of its first
        timestamped row (first record wins). Returns the (session, parent) links this implies:
        of the builder's sessions sharing that root, the one whose first row is oldest (then:
        seen first) is the origin, and the others were forked from it (a fork of a fork is
        linked to the origin too). Sessions of other builders are never linked."""
        self._db.execute("UPDATE sessions SET root_uuid=?, root_at=? WHERE id=? AND root_uuid IS NULL",
                         (uuid, first_row_at, session_id))
        rows = self._db.execute(
            "SELECT id, parent_id, parent_via FROM sessions WHERE root_uuid=? AND builder=(SELECT builder FROM sessions WHERE id=?)"
            " ORDER BY root_at IS NULL, root_at, rowid", (uuid, session_id),
        ).fetchall()
        origin = rows[0][0] if rows else None
        return [(sid, origin) for sid, parent, via in rows[1:]
                if (parent, via) != (origin, "transcript") and origin is not None]

    def link_parent(self, session_id: str, parent_id: str, via: str) -> bool:
        """Set a session's parent from transcript evidence; replaces a parent guessed by the
        ``latest`` heuristic (also when the guess was right: it is then proven) or an earlier
        transcript link, never one a PreCompact marker gave. Returns True when it changed."""
        cur = self._db.execute(
            "UPDATE sessions SET parent_id=?, parent_via=? WHERE id=? AND (parent_id IS NOT ? OR parent_via IS NOT ?)"
            " AND (parent_id IS NULL OR parent_via IS NULL OR parent_via IN ('latest', 'transcript'))",
            (parent_id, via, session_id, parent_id, via),
        )
        return cur.rowcount == 1

    def lineage(self, session_id: str) -> list[str]:
        """``session_id`` and its ancestors, nearest first (cycles cut)."""
        out: list[str] = []
        sid: str | None = session_id
        while sid and sid not in out:
            out.append(sid)
            row = self._one("SELECT parent_id FROM sessions WHERE id=?", (sid,))
            sid = row[0] if row else None
        return out

    def update_session_paths(self, session_id: str, transcript_path: str | None, cwd: str | None) -> None:
        self._db.execute(
            "UPDATE sessions SET transcript_path=COALESCE(?, transcript_path), cwd=COALESCE(?, cwd) WHERE id=?",
            (transcript_path, cwd, session_id),
        )

    def reopen_session(self, session_id: str, source: str | None, at: float) -> str | None:
        """Mark an existing session started again (resume with the same id); returns its
        parent session id."""
        self._db.execute(
            "UPDATE sessions SET source=COALESCE(?, source), ended_at=NULL, end_reason=NULL WHERE id=?",
            (source, session_id),
        )
        row = self._one("SELECT parent_id FROM sessions WHERE id=?", (session_id,))
        return row[0] if row else None

    def pending_in_session(self, builder: str, session_id: str, *, agent_id: str | None, all_agents: bool) -> list[Interaction]:
        """Pending interactions of one session: of ``agent_id`` (None: the main agent), or
        of every agent when ``all_agents``."""
        sql = f"SELECT {_INTERACTION_COLS} FROM interactions WHERE builder=? AND session_id=? AND state='pending'"
        args: tuple = (builder, session_id)
        if not all_agents:
            sql += " AND agent_id IS ?"
            args += (agent_id,)
        return [_interaction(r) for r in self._db.execute(sql + " ORDER BY created_at", args).fetchall()]

    def open_tool_call(self, session_id: str) -> tuple[bytes, str, str | None, str | None] | None:
        """(raw payload, tool name, tool_use_id, agent_id: None for the main agent) of the tool
        call an agent of the session is about to run: the session's newest hook of an agent's
        activity (a ``notice`` is none; a subagent's too: the main agent's Agent call stays
        open while its subagent works) when that is a ``tool_before``; else None."""
        row = self._one("SELECT hook_kind, raw, tool_name, tool_use_id, agent_id FROM hook_events WHERE session_id=?"
                        " AND hook_kind IS NOT NULL AND hook_kind<>'notice' ORDER BY id DESC LIMIT 1", (session_id,))
        if row is None or row[0] != "tool_before" or not row[2]:
            return None
        return bytes(row[1]), row[2], row[3], row[4]

    def remote_denies(self, session_id: str, *, agent_id: str | None, all_agents: bool) -> list[Interaction]:
        """Remote permission denies of this session handed to a held hook, not yet adopted:
        those whose hook's read is recorded (``delivered_at``) and those whose is not yet."""
        sql = (f"SELECT {_INTERACTION_COLS} FROM interactions WHERE session_id=? AND kind IN ('permission','plan')"
               " AND state='answered' AND decision='deny' AND received_at IS NOT NULL AND adopted_at IS NULL")
        args: tuple = (session_id,)
        if not all_agents:
            sql += " AND agent_id IS ?"
            args += (agent_id,)
        return [_interaction(r) for r in self._db.execute(sql, args).fetchall()]

    def end_session(self, session_id: str, at: float, reason: str | None) -> bool:
        """The session ended at ``at`` (UNIX seconds) for ``reason`` (the harness's words).
        A failure that a later turn went past is forgotten now (:data:`SUPERSEDED_FAILURE`):
        the failure an ended session keeps is the one that stopped its last turn. The answers
        hookd kept as messages for the session and still queued become the builder's (its next
        session takes them: :meth:`release_kept_answers`). Returns False when it had ended
        already."""
        cur = self._db.execute(
            "UPDATE sessions SET ended_at=?, end_reason=? WHERE id=? AND ended_at IS NULL",
            (at, reason, session_id),
        )
        if cur.rowcount != 1:
            return False
        self._db.execute(f"UPDATE sessions SET failed_at=NULL, failure=NULL WHERE id=? AND {SUPERSEDED_FAILURE}",
                         (session_id,))
        self.release_kept_answers(session_id)
        return True

    def release_kept_answers(self, session_id: str) -> int:
        """The answers hookd kept as messages for ``session_id`` and still queued become its
        builder's (its next session takes them): the session ended, or its agent is gone.
        A message sent for the session (``hookd send --session``) stays its own. Returns how
        many."""
        return self._db.execute(
            "UPDATE inbox_messages SET session_id=NULL WHERE builder=(SELECT builder FROM sessions"
            " WHERE id=?) AND state='queued' AND session_id=? AND answer_to IS NOT NULL",
            (session_id, session_id)).rowcount  # (the builder's queue through its index, not the whole table)

    def ended(self, session_id: str) -> bool:
        """Whether the session has ended (an unknown one has not)."""
        return self._one("SELECT 1 FROM sessions WHERE id=? AND ended_at IS NOT NULL", (session_id,)) is not None


    # transcripts ---------------------------------------------------------------------------
    def transcript_cursor(self, dev: int, ino: int) -> tuple[str, int, str, str | None, bytes] | None:
        """(path, offset, builder, session_id, tail: the bytes just before the offset, b"" when
        not recorded) of a tailed file identity."""
        row = self._one("SELECT path, offset, builder, session_id, tail FROM transcripts WHERE dev=? AND ino=?",
                        (dev, ino))
        return (row[0], row[1], row[2], row[3], bytes(row[4] or b"")) if row else None

    def transcript_session(self, dev: int, ino: int) -> str | None:
        """The session recorded for a tailed file identity, if any."""
        row = self._one("SELECT session_id FROM transcripts WHERE dev=? AND ino=?", (dev, ino))
        return row[0] if row else None

    def save_transcript(self, *, dev: int, ino: int, path: str, builder: str, session_id: str | None,
                        offset: int, rows: int, damaged: int, unknown_rows: int, at: float, tail: bytes = b"") -> None:
        """A tailed file's cursor after a read (``tail``: the bytes just before ``offset``, as
        :class:`hookd.watchers.jsonl.Cursor` keeps them) and its counts, added to what is saved."""
        self._db.execute(
            "INSERT INTO transcripts (dev, ino, path, builder, session_id, offset, rows, damaged, unknown_rows,"
            " first_seen_at, last_row_at, tail) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(dev, ino) DO UPDATE SET path=excluded.path, builder=excluded.builder,"
            " session_id=COALESCE(excluded.session_id, transcripts.session_id), offset=excluded.offset,"
            " rows=transcripts.rows+excluded.rows, damaged=transcripts.damaged+excluded.damaged,"
            " unknown_rows=transcripts.unknown_rows+excluded.unknown_rows,"
            " last_row_at=COALESCE(excluded.last_row_at, transcripts.last_row_at), tail=excluded.tail",
            (dev, ino, path, builder, session_id, offset, rows, damaged, unknown_rows, at, at if rows else None,
             tail or None),
        )

    def session_has_hooks(self, session_id: str) -> bool:
        return self._one("SELECT 1 FROM hook_events WHERE session_id=? LIMIT 1", (session_id,)) is not None

    def mark_hooks_unarmed(self, session_id: str, at: float) -> bool:
        cur = self._db.execute(
            "UPDATE sessions SET hooks_unarmed_at=? WHERE id=? AND hooks_unarmed_at IS NULL", (at, session_id))
        return cur.rowcount == 1

    def clear_hooks_unarmed(self, session_id: str) -> bool:
        cur = self._db.execute(
            "UPDATE sessions SET hooks_unarmed_at=NULL WHERE id=? AND hooks_unarmed_at IS NOT NULL", (session_id,))
        return cur.rowcount == 1

    def last_hook_at(self, session_id: str) -> float | None:
        """When the newest hook event of ``session_id`` that is the agent's activity was received
        (UNIX seconds; a hook of a kind other than ``notice``: a settings change or a
        notification is no sign that the turn's hooks run), or None."""
        row = self._one("SELECT received_at FROM hook_events WHERE session_id=? AND hook_kind IS NOT NULL"
                        " AND hook_kind<>'notice' ORDER BY id DESC LIMIT 1", (session_id,))
        return row[0] if row else None

    def transcript_turn_started(self, session_id: str) -> float | None:
        """The newest turn start a transcript showed for ``session_id`` (row time), or None."""
        row = self._one("SELECT turn_started_at FROM sessions WHERE id=?", (session_id,))
        return row[0] if row else None

    # hooks that stopped working (hookd.core.hookhealth) ------------------------------------
    def hooks_changed_builders(self) -> set[str]:
        return {r[0] for r in self._db.execute("SELECT builder FROM hooks_changed")}

    def set_hooks_changed(self, builder: str, since: float, data: dict[str, Any]) -> bool:
        """Flag ``builder``'s hooks as changed; True when it was not flagged (else the row is
        kept as it was: the first warning stands)."""
        cur = self._db.execute("INSERT OR IGNORE INTO hooks_changed (builder, since, data) VALUES (?, ?, ?)",
                               (builder, since, msgspec.json.encode(data).decode()))
        return cur.rowcount == 1

    def hooks_changed_of(self, builder: str) -> dict[str, Any] | None:
        """``builder``'s warning (with ``since``), or None."""
        row = self._one("SELECT since, data FROM hooks_changed WHERE builder=?", (builder,))
        return None if row is None else {**msgspec.json.decode(row[1]), "since": row[0]}

    def replace_hooks_changed(self, builder: str, data: dict[str, Any]) -> None:
        """Replace what ``builder``'s warning says (its ``since`` kept): its cause changed."""
        self._db.execute("UPDATE hooks_changed SET data=? WHERE builder=?", (msgspec.json.encode(data).decode(), builder))

    def clear_hooks_changed(self, builder: str) -> dict[str, Any] | None:
        """Unflag ``builder``; the warning it had (with ``since``), or None when it had none."""
        row = self._one("SELECT since, data FROM hooks_changed WHERE builder=?", (builder,))
        if row is None:
            return None
        self._db.execute("DELETE FROM hooks_changed WHERE builder=?", (builder,))
        return {**msgspec.json.decode(row[1]), "since": row[0]}

    # lanes -------------------------------------------------------------------------------
    def set_agent_pid(self, session_id: str, pid: int, started_at: float | None) -> None:
        self._db.execute("UPDATE sessions SET agent_pid=?, agent_started_at=? WHERE id=?", (pid, started_at, session_id))

    def process_session(self, builder: str, pid: int) -> str | None:
        """The current session of ``builder``'s agent process ``pid``: of its sessions that
        process reported and that have not ended, the one with the newest hook."""
        row = self._one(
            "SELECT s.id FROM sessions s WHERE s.builder=? AND s.agent_pid=? AND s.ended_at IS NULL"
            " ORDER BY (SELECT MAX(h.id) FROM hook_events h WHERE h.session_id=s.id) DESC LIMIT 1",
            (builder, pid),
        )
        return row[0] if row else None

    def agent_pid(self, session_id: str) -> int | None:
        row = self._one("SELECT agent_pid FROM sessions WHERE id=?", (session_id,))
        return row[0] if row else None

    def set_transcript_turn(self, session_id: str, *, started_at: float | None = None,
                            ended_at: float | None = None) -> None:
        """Record a turn's start or end seen in a transcript (row time, UNIX seconds; the
        newest wins)."""
        self._db.execute(
            "UPDATE sessions SET turn_started_at=MAX(COALESCE(turn_started_at, ?), COALESCE(?, turn_started_at)),"
            " turn_ended_at=MAX(COALESCE(turn_ended_at, ?), COALESCE(?, turn_ended_at)) WHERE id=?",
            (started_at, started_at, ended_at, ended_at, session_id),
        )

    def set_interrupted(self, session_id: str, at: float) -> None:
        self._db.execute("UPDATE sessions SET interrupted_at=? WHERE id=?", (at, session_id))

    def lane(self, builder: str) -> tuple[str, float, str | None, str | None] | None:
        """(state, since, session_id, detail) last recorded for ``builder``."""
        row = self._one("SELECT state, since, session_id, detail FROM lanes WHERE builder=?", (builder,))
        return (row[0], row[1], row[2], row[3]) if row else None

    def save_lane(self, builder: str, state: str, since: float, session_id: str | None, detail: str | None) -> None:
        self._db.execute(
            "INSERT INTO lanes (builder, state, since, session_id, detail) VALUES (?,?,?,?,?)"
            " ON CONFLICT(builder) DO UPDATE SET state=excluded.state, since=excluded.since,"
            " session_id=excluded.session_id, detail=excluded.detail",
            (builder, state, since, session_id, detail),
        )
