"""The store: SQLite (WAL) through aiosqlite. The only module that contains SQL.

One writer: every write is a function run by :meth:`Store.write` inside one
``BEGIN IMMEDIATE`` transaction on the writer connection (datasette's ``execute_write_fn``
pattern), so a hook's raw payload, its derived events and the interaction changes commit
together or not at all. The writer runs on the event loop's thread: a hook's transaction
takes ~0.09 ms, less than the ~0.14 ms a hop to a writer thread (or aiosqlite's) costs, and
its commit never fsyncs (WAL, ``synchronous=NORMAL``: durable across a process crash, not a
power cut) because checkpoints are moved off the write path (``wal_autocheckpoint=0``; a
background thread runs passive checkpoints, and after one that copied everything the writer
connection, lent to a thread meanwhile, records it in ``checkpoints``: that restarts the WAL,
so the restart's fsync is never a hook's). Reads go through aiosqlite on a second
connection (WAL readers never block the writer). Migrations are numbered and recorded in
the same transaction that applies them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

import aiosqlite
import msgspec

from hookd.clock import Clock
from hookd.config import env_number
from hookd.models import NOT_ACTIVITY_HOOKS, Event, InboxMessage, Interaction, InteractionHead, Selection, StorageUnavailable
from hookd.storage_health import StorageHealth, is_busy, storage_code

log = logging.getLogger("hookd")
#: commit the writes of one event-loop turn together (Store.write); "0" turns it off
GROUP_COMMIT = os.environ.get("HOOKD_GROUP_COMMIT", "1") != "0"

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()

# (name, statements). Never edit an applied migration; append a new one.
MIGRATIONS: list[tuple[str, list[str]]] = [
    (
        "0001_initial",
        [
            """CREATE TABLE builders (
                id TEXT PRIMARY KEY,
                harness TEXT NOT NULL,
                first_hook_at REAL NOT NULL,
                last_hook_at REAL NOT NULL,
                hooks_seen INTEGER NOT NULL DEFAULT 0
            )""",
            """CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                builder TEXT NOT NULL,
                harness TEXT NOT NULL,
                parent_id TEXT,
                source TEXT,
                transcript_path TEXT,
                cwd TEXT,
                started_at REAL NOT NULL,
                last_hook_at REAL NOT NULL,
                ended_at REAL,
                end_reason TEXT
            )""",
            "CREATE INDEX sessions_builder ON sessions(builder, last_hook_at)",
            """CREATE TABLE hook_events (
                id INTEGER PRIMARY KEY,
                delivery_id TEXT UNIQUE,
                builder TEXT NOT NULL,
                harness TEXT NOT NULL,
                source TEXT NOT NULL,
                received_at REAL NOT NULL,
                raw BLOB NOT NULL,
                hook_event_name TEXT,
                session_id TEXT,
                tool_name TEXT,
                tool_use_id TEXT,
                agent_id TEXT,
                error TEXT
            )""",
            "CREATE INDEX hook_events_session ON hook_events(session_id, id)",
            """CREATE TABLE events (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                kind TEXT NOT NULL,
                builder TEXT,
                session_id TEXT,
                at REAL NOT NULL,
                data BLOB NOT NULL
            )""",
            "CREATE INDEX events_builder ON events(builder, seq)",
            """CREATE TABLE interactions (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                builder TEXT NOT NULL,
                session_id TEXT,
                agent_id TEXT,
                tool_name TEXT,
                tool_use_id TEXT UNIQUE,
                input_hash TEXT,
                questions BLOB,
                state TEXT NOT NULL,
                answers BLOB,
                selections BLOB,
                surface TEXT,
                warning TEXT,
                error TEXT,
                created_at REAL NOT NULL,
                resolved_at REAL,
                permission_seen_at REAL,
                revision INTEGER NOT NULL DEFAULT 1
            )""",
            "CREATE INDEX interactions_state ON interactions(state, created_at)",
            "CREATE INDEX interactions_match ON interactions(session_id, tool_name, input_hash)",
        ],
    ),
    (
        # Per-hook counters made every hook write three rows; activity is derived from
        # hook_events instead (one insert per hook), and builders are rows written once.
        "0002_activity_from_hook_events",
        [
            "DROP INDEX sessions_builder",
            "ALTER TABLE sessions DROP COLUMN last_hook_at",
            "CREATE INDEX sessions_builder ON sessions(builder, started_at)",
            "ALTER TABLE builders DROP COLUMN last_hook_at",
            "ALTER TABLE builders DROP COLUMN hooks_seen",
            "CREATE INDEX hook_events_builder ON hook_events(builder, id)",
        ],
    ),
    (
        "0003_inbox",
        [
            """CREATE TABLE inbox_messages (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                builder TEXT NOT NULL,
                session_id TEXT,
                agent_id TEXT,
                author TEXT NOT NULL,
                text TEXT NOT NULL,
                idem_key TEXT,
                state TEXT NOT NULL,
                created_at REAL NOT NULL,
                delivered_at REAL,
                delivered_hook_event_id INTEGER,
                delivered_session_id TEXT,
                delivered_via TEXT,
                deliveries INTEGER NOT NULL DEFAULT 0,
                adopted_at REAL,
                adopted_via TEXT,
                cancelled_at REAL
            )""",
            "CREATE UNIQUE INDEX inbox_idem ON inbox_messages(builder, idem_key) WHERE idem_key IS NOT NULL",
            "CREATE INDEX inbox_queue ON inbox_messages(builder, state, seq)",
            "ALTER TABLE sessions ADD COLUMN stop_deliveries INTEGER NOT NULL DEFAULT 0",
        ],
    ),
    (
        # Answers from anywhere: the input shown, a permission's decision, who answered
        # remotely and the four timestamps; idempotency receipts by response_id.
        "0004_answers",
        [
            "ALTER TABLE interactions ADD COLUMN input BLOB",
            "ALTER TABLE interactions ADD COLUMN decision TEXT",
            "ALTER TABLE interactions ADD COLUMN message TEXT",
            "ALTER TABLE interactions ADD COLUMN actor TEXT",
            "ALTER TABLE interactions ADD COLUMN response_id TEXT",
            "ALTER TABLE interactions ADD COLUMN expires_at REAL",
            "ALTER TABLE interactions ADD COLUMN received_at REAL",
            "ALTER TABLE interactions ADD COLUMN delivered_at REAL",
            "ALTER TABLE interactions ADD COLUMN delivered_via TEXT",
            "ALTER TABLE interactions ADD COLUMN adopted_at REAL",
            "ALTER TABLE interactions ADD COLUMN inbox_message_id TEXT",
            "CREATE INDEX interactions_inbox ON interactions(inbox_message_id) WHERE inbox_message_id IS NOT NULL",
            "CREATE INDEX interactions_expiry ON interactions(expires_at) WHERE state='pending' AND expires_at IS NOT NULL",
            """CREATE TABLE responses (
                response_id TEXT PRIMARY KEY,
                interaction_id TEXT NOT NULL,
                content BLOB NOT NULL,
                receipt BLOB NOT NULL,
                created_at REAL NOT NULL
            )""",
            """CREATE TABLE preanswers (
                id INTEGER PRIMARY KEY,
                builder TEXT NOT NULL,
                question TEXT NOT NULL,
                answer TEXT NOT NULL,
                actor TEXT,
                created_at REAL NOT NULL,
                used_at REAL,
                used_by TEXT
            )""",
            "CREATE INDEX preanswers_open ON preanswers(builder, question) WHERE used_at IS NULL",
        ],
    ),
    (
        # Transcript tailing: a cursor per file identity (device + inode); the builder and
        # session a file belongs to.
        "0005_transcripts",
        [
            """CREATE TABLE transcripts (
                dev INTEGER NOT NULL,
                ino INTEGER NOT NULL,
                path TEXT NOT NULL,
                builder TEXT NOT NULL,
                session_id TEXT,
                offset INTEGER NOT NULL DEFAULT 0,
                rows INTEGER NOT NULL DEFAULT 0,
                damaged INTEGER NOT NULL DEFAULT 0,
                unknown_rows INTEGER NOT NULL DEFAULT 0,
                first_seen_at REAL NOT NULL,
                last_row_at REAL,
                PRIMARY KEY (dev, ino)
            )""",
            "CREATE INDEX transcripts_path ON transcripts(path)",
            "ALTER TABLE sessions ADD COLUMN hooks_unarmed_at REAL",
        ],
    ),
    (
        # Lanes: the agent process of a session (CLAUDE_PID from the hook's environment, with
        # its start time against pid reuse), the last interrupt, and each builder's lane.
        "0006_lanes",
        [
            "ALTER TABLE sessions ADD COLUMN agent_pid INTEGER",
            "ALTER TABLE sessions ADD COLUMN agent_started_at REAL",
            "ALTER TABLE sessions ADD COLUMN interrupted_at REAL",
            """CREATE TABLE lanes (
                builder TEXT PRIMARY KEY,
                state TEXT NOT NULL,
                since REAL NOT NULL,
                session_id TEXT,
                detail TEXT
            )""",
        ],
    ),
    (
        # Notifications (hookd.notify): one row per (subject key, escalation step, channel);
        # a step is claimed (status 'pending') in the same transaction that decides to send it,
        # so a restart never sends a step twice. status: pending | sent | failed | cleared.
        "0007_notifications",
        [
            """CREATE TABLE notifications (
                key TEXT NOT NULL,
                step INTEGER NOT NULL,
                channel TEXT NOT NULL,
                rule TEXT NOT NULL,
                builder TEXT,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                last_error TEXT,
                alert BLOB NOT NULL,
                created_at REAL NOT NULL,
                sent_at REAL,
                PRIMARY KEY (key, step, channel)
            )""",
            "CREATE INDEX notifications_pending ON notifications(status) WHERE status='pending'",
        ],
    ),
    (
        # Lineage: how a session's parent was found (``parent_via``: precompact | latest |
        # transcript), the uuid of its first conversation row (a fork copies its parent's rows
        # with their uuids: Claude Code 2.1.332, verified) and the last PreCompact marker.
        "0008_lineage",
        [
            "ALTER TABLE sessions ADD COLUMN parent_via TEXT",
            "ALTER TABLE sessions ADD COLUMN root_uuid TEXT",
            "ALTER TABLE sessions ADD COLUMN root_at REAL",
            "ALTER TABLE sessions ADD COLUMN compacting_at REAL",
            "CREATE INDEX sessions_root ON sessions(root_uuid) WHERE root_uuid IS NOT NULL",
        ],
    ),
    (
        # Turns seen in transcripts (row times): what a session's lane follows when no hook
        # comes from it (no UserPromptSubmit or Stop hook to say so).
        "0009_transcript_turns",
        [
            "ALTER TABLE sessions ADD COLUMN turn_started_at REAL",
            "ALTER TABLE sessions ADD COLUMN turn_ended_at REAL",
        ],
    ),
    (
        # The hook path's queries by session (bench/load.py --explain): adoption at Stop scanned
        # every inbox message ever sent, and a session's pending questions or delivered denies
        # were searched through every interaction in that state, of every session.
        "0010_hot_path_indexes",
        [
            "CREATE INDEX inbox_delivered ON inbox_messages(delivered_session_id, seq) WHERE state='delivered'",
            "CREATE INDEX interactions_session ON interactions(session_id, state, created_at)",
        ],
    ),
    (
        # The last WAL checkpoint (Store._restart_wal): recording it is the write that restarts
        # the WAL, so no hook's commit pays for that (a header write and an fsync).
        "0011_checkpoints",
        [
            "CREATE TABLE checkpoints (id INTEGER PRIMARY KEY CHECK (id = 1), at REAL NOT NULL, frames INTEGER NOT NULL)",
        ],
    ),
    (
        # Two of the 8 pages a hook's commit wrote (docs/decisions.md "The round-trip budget"):
        # events.seq without AUTOINCREMENT (every event also rewrote sqlite_sequence; the same
        # numbers either way: events are never deleted, so the next rowid, the largest plus
        # one, is what AUTOINCREMENT gave: monotonic, never reused, no gaps), and no
        # events_builder index (no query reads events by builder: they are read by seq).
        "0012_events_seq_plain_rowid",
        [
            """CREATE TABLE events_new (
                seq INTEGER PRIMARY KEY,
                kind TEXT NOT NULL,
                builder TEXT,
                session_id TEXT,
                at REAL NOT NULL,
                data BLOB NOT NULL
            )""",
            "INSERT INTO events_new (seq, kind, builder, session_id, at, data)"
            " SELECT seq, kind, builder, session_id, at, data FROM events ORDER BY seq",
            "DROP TABLE events",
            "ALTER TABLE events_new RENAME TO events",
            "DELETE FROM sqlite_sequence WHERE name = 'events'",
        ],
    ),
    (
        # Windows on hookd's timeline (hookd.clock), not the wall clock: a clock step must not
        # split a call in two or redeliver early. A stamp per column a window reads (NULL on
        # older rows: their wall time stands in) and each boot's timeline offset.
        "0013_timeline",
        [
            "ALTER TABLE hook_events ADD COLUMN received_mono REAL",
            "ALTER TABLE interactions ADD COLUMN created_mono REAL",
            "ALTER TABLE inbox_messages ADD COLUMN created_mono REAL",
            "ALTER TABLE inbox_messages ADD COLUMN delivered_mono REAL",
            "ALTER TABLE sessions ADD COLUMN compacting_mono REAL",
            "CREATE TABLE clock_boots (boot_id TEXT PRIMARY KEY, offset REAL NOT NULL, last REAL NOT NULL)",
        ],
    ),
]


def _j(v: Any) -> bytes | None:
    return None if v is None else _enc.encode(v)


def _uj(v: bytes | str | None) -> Any:
    return None if v is None else _dec.decode(v)


_INTERACTION_COLS = (
    "id, kind, builder, session_id, agent_id, tool_name, tool_use_id, state, questions, "
    "answers, selections, surface, warning, error, created_at, resolved_at, revision, "
    "input, input_hash, decision, message, actor, response_id, expires_at, received_at, "
    "delivered_at, delivered_via, adopted_at, inbox_message_id"
)


def _interaction(row: aiosqlite.Row | tuple) -> Interaction:
    sel = _uj(row[10])
    return Interaction(
        id=row[0],
        kind=row[1],
        builder=row[2],
        session_id=row[3],
        agent_id=row[4],
        tool_name=row[5],
        tool_use_id=row[6],
        state=row[7],
        questions=_uj(row[8]),
        answers=_uj(row[9]),
        selections=None if sel is None else msgspec.convert(sel, list[Selection]),
        surface=row[11],
        warning=row[12],
        error=row[13],
        created_at=row[14],
        resolved_at=row[15],
        revision=row[16],
        input=_uj(row[17]),
        input_hash=row[18],
        decision=row[19],
        message=row[20],
        actor=row[21],
        response_id=row[22],
        expires_at=row[23],
        received_at=row[24],
        delivered_at=row[25],
        delivered_via=row[26],
        adopted_at=row[27],
        inbox_message_id=row[28],
    )


_MESSAGE_COLS = (
    "id, builder, session_id, agent_id, author, text, state, created_at, delivered_at,"
    " delivered_hook_event_id, delivered_session_id, delivered_via, deliveries, adopted_at,"
    " adopted_via, cancelled_at, idem_key"
)


#: A permission prompt whose tool result is still to come: pending, answered remotely and not
#: yet adopted, or allowed at the desk while its tool ran (hookd.answers: the tool's process
#: seen; no tool_use_id until its PostToolUse).
_AWAITING_TOOL = ("(state='pending' OR (state='answered' AND received_at IS NOT NULL AND adopted_at IS NULL)"
                  " OR (state='answered' AND received_at IS NULL AND decision='allow' AND tool_use_id IS NULL))")


def _message(row: tuple) -> InboxMessage:
    return InboxMessage(*row)


def _event(row: tuple) -> Event:
    return Event(seq=row[0], kind=row[1], builder=row[2], session_id=row[3], at=row[4], data=_dec.decode(row[5]))


class InboxLive:
    """The builders that may have live inbox messages (``queued`` or ``delivered``): every
    turn-boundary hook (each PostToolUse, Stop, UserPromptSubmit) asks for its builder's
    deliverable messages, and almost always there are none; for a builder not in this set
    that question is answered without a query (0.03 ms of a 0.3 ms hook, measured cold).

    A superset, never a subset: a builder is added as a message is inserted (before its
    commit: a rolled-back insert leaves a harmless extra), and removed only after the commit
    of a transaction whose query found none of its messages live, unless a message was
    inserted for it meanwhile (``_added``). Messages become live only by insertion (one
    writer: the daemon), and leave that state only by adoption."""

    def __init__(self, builders: set[str]):
        self.builders = builders
        self._added: dict[str, int] = {}  # builder -> insertions so far

    def add(self, builder: str) -> None:
        self.builders.add(builder)
        self._added[builder] = self._added.get(builder, 0) + 1

    def drained(self, tx: "Tx", builder: str) -> None:
        """``tx`` found no live message of ``builder``: forget it once ``tx`` commits."""
        mark = self._added.get(builder, 0)

        def forget() -> None:
            if self._added.get(builder, 0) == mark:
                self.builders.discard(builder)

        tx.after_commit.append(forget)


class Tx:
    """Operations inside one write transaction, on the writer thread (see :meth:`Store.write`)."""

    def __init__(self, db: sqlite3.Connection, inbox: InboxLive, mono: float = 0.0):
        self._db = db
        #: the store's :class:`InboxLive`
        self._inbox = inbox
        #: this transaction's moment on hookd's timeline (:meth:`hookd.clock.Clock.mono`): the
        #: stamp of what it records, and what its windows are measured from (the core moves it
        #: back for a spooled hook)
        self.mono = mono
        self.events: list[Event] = []
        #: id of the hook event stored in this transaction, if any
        self.hook_event_id: int | None = None
        #: callables run on the writer thread after COMMIT (cache updates)
        self.after_commit: list[Callable[[], None]] = []

    def _one(self, sql: str, args: tuple = ()) -> tuple | None:
        return self._db.execute(sql, args).fetchone()

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
    ) -> int | None:
        """Store one raw hook payload; None when ``delivery_id`` was already stored."""
        cur = self._db.execute(
            "INSERT INTO hook_events (delivery_id, builder, harness, source, received_at, raw,"
            " hook_event_name, session_id, tool_name, tool_use_id, agent_id, error, received_mono)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(delivery_id) DO NOTHING",
            (delivery_id, builder, harness, source, received_at, raw, hook_event_name,
             session_id, tool_name, tool_use_id, agent_id, error, self.mono),
        )
        if cur.rowcount == 0:
            return None
        self.hook_event_id = cur.lastrowid
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
        self._db.execute("UPDATE sessions SET compacting_at=?, compacting_mono=? WHERE id=?", (at, self.mono, session_id))

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

    def delivered_denies(self, session_id: str, *, agent_id: str | None, all_agents: bool) -> list[Interaction]:
        """Remote permission denies a hook returned in this session, not yet adopted."""
        sql = (f"SELECT {_INTERACTION_COLS} FROM interactions WHERE session_id=? AND kind='permission'"
               " AND state='answered' AND decision='deny' AND received_at IS NOT NULL"
               " AND delivered_at IS NOT NULL AND adopted_at IS NULL")
        args: tuple = (session_id,)
        if not all_agents:
            sql += " AND agent_id IS ?"
            args += (agent_id,)
        return [_interaction(r) for r in self._db.execute(sql, args).fetchall()]

    def end_session(self, session_id: str, at: float, reason: str | None) -> bool:
        cur = self._db.execute(
            "UPDATE sessions SET ended_at=?, end_reason=? WHERE id=? AND ended_at IS NULL",
            (at, reason, session_id),
        )
        return cur.rowcount == 1

    # interactions --------------------------------------------------------------------
    def interaction_by_tool_use_id(self, tool_use_id: str) -> Interaction | None:
        row = self._one(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE tool_use_id=? OR id=?",
            (tool_use_id, tool_use_id),
        )
        return _interaction(row) if row else None

    def interaction_head_by_tool_use_id(self, tool_use_id: str) -> InteractionHead | None:
        """:meth:`interaction_by_tool_use_id` without the JSON columns (questions, input,
        answers, selections): a third of its cost on the hook path."""
        row = self._one(
            "SELECT id, kind, builder, session_id, tool_use_id, state, received_at FROM interactions"
            " WHERE tool_use_id=? OR id=?",
            (tool_use_id, tool_use_id),
        )
        return InteractionHead(*row) if row else None

    def interaction_by_hash(
        self, *, builder: str, session_id: str | None, tool_name: str, input_hash: str,
        states: tuple[str, ...], since: float, without_tool_use_id: bool = False,
    ) -> Interaction | None:
        """Newest interaction of that (builder, session, tool, input hash) in ``states``,
        created at or after ``since`` (hookd's timeline: :attr:`mono`)."""
        marks = ",".join("?" * len(states))
        sql = (
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE builder=? AND session_id IS ?"
            f" AND tool_name=? AND input_hash=? AND state IN ({marks}) AND COALESCE(created_mono, created_at)>=?"
        )
        if without_tool_use_id:
            sql += " AND tool_use_id IS NULL"
        sql += " ORDER BY COALESCE(created_mono, created_at) DESC LIMIT 1"
        row = self._one(sql, (builder, session_id, tool_name, input_hash, *states, since))
        return _interaction(row) if row else None

    def insert_interaction(self, i: Interaction, *, permission_seen_at: float | None) -> None:
        self._db.execute(
            "INSERT INTO interactions (id, kind, builder, session_id, agent_id, tool_name, tool_use_id,"
            " state, questions, answers, selections, surface, warning, error, created_at, resolved_at,"
            " revision, input, input_hash, expires_at, permission_seen_at, created_mono)"
            f" VALUES ({','.join('?' * 22)})",
            (i.id, i.kind, i.builder, i.session_id, i.agent_id, i.tool_name, i.tool_use_id,
             i.state, _j(i.questions), _j(i.answers), _j(i.selections), i.surface, i.warning,
             i.error, i.created_at, i.resolved_at, i.revision, _j(i.input), i.input_hash,
             i.expires_at, permission_seen_at, self.mono),
        )

    def interaction(self, interaction_id: str) -> Interaction | None:
        """By id or by the harness's tool_use_id."""
        row = self._one(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE id=? OR tool_use_id=? LIMIT 1",
            (interaction_id, interaction_id),
        )
        return _interaction(row) if row else None

    def permission_seen(self, interaction_id: str) -> bool:
        row = self._one("SELECT permission_seen_at FROM interactions WHERE id=?", (interaction_id,))
        return bool(row and row[0] is not None)

    def record_answer(
        self, interaction_id: str, *, expected_revision: int, answers: Any, selections: Any,
        decision: str | None, message: str | None, surface: str, actor: str | None,
        response_id: str | None, at: float,
    ) -> bool:
        """Compare-and-set a remote answer onto a pending interaction at ``expected_revision``:
        state ``answered``, received_at = resolved_at = ``at``. False when it changed."""
        cur = self._db.execute(
            "UPDATE interactions SET state='answered', answers=?, selections=?, decision=?, message=?,"
            " surface=?, actor=?, response_id=?, received_at=?, resolved_at=?, revision=revision+1"
            " WHERE id=? AND state='pending' AND revision=?",
            (_j(answers), _j(selections), decision, message, surface, actor, response_id, at, at,
             interaction_id, expected_revision),
        )
        return cur.rowcount == 1

    def mark_answer_delivered(self, interaction_id: str, *, via: str, at: float,
                              inbox_message_id: str | None = None) -> bool:
        """First delivery of a remote answer (a hook returned it, or it was queued to the
        inbox as ``inbox_message_id``). False when it was already delivered."""
        cur = self._db.execute(
            "UPDATE interactions SET delivered_at=?, delivered_via=?, inbox_message_id=COALESCE(?, inbox_message_id),"
            " revision=revision+1 WHERE id=? AND delivered_at IS NULL",
            (at, via, inbox_message_id, interaction_id),
        )
        return cur.rowcount == 1

    def set_inbox_message(self, interaction_id: str, message_id: str) -> None:
        self._db.execute("UPDATE interactions SET inbox_message_id=? WHERE id=?", (message_id, interaction_id))

    def mark_adopted(self, interaction_id: str, at: float) -> bool:
        cur = self._db.execute(
            "UPDATE interactions SET adopted_at=?, revision=revision+1 WHERE id=? AND adopted_at IS NULL",
            (at, interaction_id),
        )
        return cur.rowcount == 1

    def supersede_answer(
        self, interaction_id: str, *, state: str, answers: Any, selections: Any, decision: str | None,
        surface: str | None, warning: str | None, error: str | None, at: float,
    ) -> bool:
        """The desk won a race a remote answer lost: replace the outcome (the remote answer's
        text is kept elsewhere, as an inbox message). False unless it was answered remotely."""
        cur = self._db.execute(
            "UPDATE interactions SET state=?, answers=?, selections=?, decision=?, message=NULL, surface=?,"
            " warning=?, error=?, resolved_at=?, revision=revision+1"
            " WHERE id=? AND state='answered' AND received_at IS NOT NULL",
            (state, _j(answers), _j(selections), decision, surface, warning, error, at, interaction_id),
        )
        return cur.rowcount == 1

    def awaiting_tool_result(self, session_id: str) -> bool:
        """Has the session a permission prompt whose tool result is still to come (pending,
        answered remotely and not yet adopted, or allowed at the desk while its tool runs)?
        Cheap: spares hashing every tool input."""
        return self._one(
            f"SELECT 1 FROM interactions WHERE session_id=? AND kind='permission' AND {_AWAITING_TOOL} LIMIT 1",
            (session_id,),
        ) is not None

    def permission_by_hash(self, session_id: str, tool_name: str, input_hash: str, since: float) -> Interaction | None:
        """The newest permission prompt of this input still awaiting its tool result, created
        at or after ``since`` (hookd's timeline: :attr:`mono`)."""
        row = self._one(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE session_id=? AND kind='permission'"
            f" AND tool_name=? AND input_hash=? AND COALESCE(created_mono, created_at)>=? AND {_AWAITING_TOOL}"
            " ORDER BY COALESCE(created_mono, created_at) DESC LIMIT 1",
            (session_id, tool_name, input_hash, since),
        )
        return _interaction(row) if row else None

    def due_expiries(self, now: float) -> list[Interaction]:
        rows = self._db.execute(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE state='pending' AND expires_at IS NOT NULL"
            " AND expires_at<=? ORDER BY expires_at",
            (now,),
        ).fetchall()
        return [_interaction(r) for r in rows]

    # transcripts ---------------------------------------------------------------------------
    def transcript_cursor(self, dev: int, ino: int) -> tuple[str, int, str, str | None] | None:
        """(path, offset, builder, session_id) of a tailed file identity."""
        row = self._one("SELECT path, offset, builder, session_id FROM transcripts WHERE dev=? AND ino=?", (dev, ino))
        return (row[0], row[1], row[2], row[3]) if row else None

    def transcript_session(self, dev: int, ino: int) -> str | None:
        """The session recorded for a tailed file identity, if any."""
        row = self._one("SELECT session_id FROM transcripts WHERE dev=? AND ino=?", (dev, ino))
        return row[0] if row else None

    def save_transcript(self, *, dev: int, ino: int, path: str, builder: str, session_id: str | None,
                        offset: int, rows: int, damaged: int, unknown_rows: int, at: float) -> None:
        self._db.execute(
            "INSERT INTO transcripts (dev, ino, path, builder, session_id, offset, rows, damaged, unknown_rows,"
            " first_seen_at, last_row_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(dev, ino) DO UPDATE SET path=excluded.path, builder=excluded.builder,"
            " session_id=COALESCE(excluded.session_id, transcripts.session_id), offset=excluded.offset,"
            " rows=transcripts.rows+excluded.rows, damaged=transcripts.damaged+excluded.damaged,"
            " unknown_rows=transcripts.unknown_rows+excluded.unknown_rows,"
            " last_row_at=COALESCE(excluded.last_row_at, transcripts.last_row_at)",
            (dev, ino, path, builder, session_id, offset, rows, damaged, unknown_rows, at, at if rows else None),
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

    # responses (idempotency receipts) --------------------------------------------------
    def response(self, response_id: str) -> tuple[str, bytes, bytes] | None:
        """(interaction_id, content, receipt) stored for ``response_id``."""
        row = self._one("SELECT interaction_id, content, receipt FROM responses WHERE response_id=?", (response_id,))
        return (row[0], bytes(row[1]), bytes(row[2])) if row else None

    def insert_response(self, response_id: str, interaction_id: str, content: bytes, receipt: bytes, at: float) -> None:
        self._db.execute(
            "INSERT INTO responses (response_id, interaction_id, content, receipt, created_at) VALUES (?,?,?,?,?)",
            (response_id, interaction_id, content, receipt, at),
        )

    # pre-registered answers --------------------------------------------------------------
    def insert_preanswer(self, builder: str, question: str, answer: str, actor: str | None, at: float) -> int:
        cur = self._db.execute(
            "INSERT INTO preanswers (builder, question, answer, actor, created_at) VALUES (?,?,?,?,?)",
            (builder, question, answer, actor, at),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def open_preanswers(self, builder: str, questions: list[str]) -> dict[str, tuple[int, str, str | None]]:
        """Oldest unused pre-registered answer per question text: {question: (id, answer, actor)}."""
        out: dict[str, tuple[int, str, str | None]] = {}
        if not questions:
            return out
        rows = self._db.execute(
            f"SELECT id, question, answer, actor FROM preanswers WHERE builder=? AND used_at IS NULL"
            f" AND question IN ({','.join('?' * len(questions))}) ORDER BY id",
            (builder, *questions),
        ).fetchall()
        for pid, q, a, actor in rows:
            out.setdefault(q, (pid, a, actor))
        return out

    def use_preanswers(self, ids: list[int], interaction_id: str, at: float) -> None:
        self._db.executemany(
            "UPDATE preanswers SET used_at=?, used_by=? WHERE id=? AND used_at IS NULL",
            [(at, interaction_id, i) for i in ids],
        )

    def mark_permission_seen(self, interaction_id: str, at: float) -> None:
        self._db.execute(
            "UPDATE interactions SET permission_seen_at=COALESCE(permission_seen_at, ?) WHERE id=?",
            (at, interaction_id),
        )

    def set_input(self, interaction_id: str, tool_input: Any) -> None:
        self._db.execute("UPDATE interactions SET input=COALESCE(input, ?) WHERE id=?", (_j(tool_input), interaction_id))

    def set_tool_use_id(self, interaction_id: str, tool_use_id: str) -> None:
        self._db.execute(
            "UPDATE interactions SET tool_use_id=? WHERE id=? AND tool_use_id IS NULL",
            (tool_use_id, interaction_id),
        )

    def resolve_interaction(
        self, interaction_id: str, *, expected_state: str, state: str, answers: Any,
        selections: Any, surface: str | None, warning: str | None, error: str | None, at: float,
        decision: str | None = None,
    ) -> bool:
        """Compare-and-set: move ``interaction_id`` from ``expected_state`` to ``state``.
        Returns False (and changes nothing) when it was no longer in ``expected_state``."""
        cur = self._db.execute(
            "UPDATE interactions SET state=?, answers=?, selections=?, surface=?, warning=?,"
            " error=?, resolved_at=?, decision=COALESCE(?, decision), revision=revision+1 WHERE id=? AND state=?",
            (state, _j(answers), _j(selections), surface, warning, error, at, decision, interaction_id, expected_state),
        )
        return cur.rowcount == 1

    # inbox ---------------------------------------------------------------------------
    def message_by_key(self, builder: str, key: str) -> InboxMessage | None:
        row = self._one(f"SELECT {_MESSAGE_COLS} FROM inbox_messages WHERE builder=? AND idem_key=?", (builder, key))
        return _message(row) if row else None

    def insert_message(
        self, *, builder: str, session_id: str | None, agent_id: str | None, author: str,
        text: str, key: str | None, at: float,
    ) -> InboxMessage:
        """Queue a message; its id is ``m-<n>``, n counting every message of this store."""
        cur = self._db.execute(
            "INSERT INTO inbox_messages (id, builder, session_id, agent_id, author, text, idem_key, state, created_at,"
            " created_mono) VALUES ('m-' || (SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox_messages), ?,?,?,?,?,?,'queued',?,?)",
            (builder, session_id, agent_id, author, text, key, at, self.mono),
        )
        self._inbox.add(builder)
        row = self._one(f"SELECT {_MESSAGE_COLS} FROM inbox_messages WHERE seq=?", (cur.lastrowid,))
        assert row is not None
        return _message(row)

    def deliverable(
        self, builder: str, session_id: str, agent_id: str | None, redeliver_before: float,
    ) -> list[InboxMessage]:
        """Messages this hook may carry, FIFO: queued ones, and delivered ones never adopted
        whose delivery is older than ``redeliver_before`` (hookd's timeline: :attr:`mono`;
        at-least-once). Scope: a message
        for a session goes only to that session; a message for an agent only to that agent;
        an unscoped one to the main agent (``agent_id`` None) of any session; a session inherits
        its ancestors' messages as :meth:`inherited_sessions` says. A builder with
        no live message at all (:class:`InboxLive`) is answered without a query."""
        if builder not in self._inbox.builders:
            return []
        sessions = self.inherited_sessions(session_id)
        rows = self._db.execute(
            f"SELECT {_MESSAGE_COLS} FROM inbox_messages WHERE builder=? AND state IN ('queued', 'delivered')"
            " AND (state='queued' OR COALESCE(delivered_mono, delivered_at)<?)"  # (IN: the index skips adopted ones)
            f" AND (session_id IS NULL OR session_id IN ({','.join('?' * len(sessions))})) AND agent_id IS ? ORDER BY seq",
            (builder, redeliver_before, *sessions, agent_id),
        ).fetchall()
        if not rows and self._one(
                "SELECT 1 FROM inbox_messages WHERE builder=? AND state IN ('queued', 'delivered') LIMIT 1",
                (builder,)) is None:
            self._inbox.drained(self, builder)  # none live at all, in any scope
        return [_message(r) for r in rows]

    def inherited_sessions(self, session_id: str) -> list[str]:
        """``session_id`` and the ancestors whose session-scoped messages it receives, nearest
        first: a parent the session continues in place (it started by ``compact`` or ``clear``),
        and a parent it was forked from (linked by the fork's transcript) that has ended. Not a
        parent that is only guessed (``latest``) for a fork, nor one still running: that one
        gets its messages itself."""
        out = [session_id]
        while len(out) < 64:
            row = self._one(
                "SELECT c.parent_id, c.source, c.parent_via, p.ended_at FROM sessions c"
                " LEFT JOIN sessions p ON p.id=c.parent_id WHERE c.id=?", (out[-1],))
            if row is None or row[0] is None or row[0] in out:
                break
            parent, source, via, parent_ended = row
            if not (source in ("compact", "clear") or (via == "transcript" and parent_ended is not None)):
                break
            out.append(parent)
        return out

    def requeue_delivered(self, session_id: str) -> list[str]:
        """Put the messages delivered to ``session_id`` and not adopted back in the queue (the
        context that carried them is about to be compacted away). Returns their ids, FIFO."""
        ids = [r[0] for r in self._db.execute(
            "SELECT id FROM inbox_messages WHERE state='delivered' AND delivered_session_id=? ORDER BY seq",
            (session_id,)).fetchall()]
        self._db.executemany("UPDATE inbox_messages SET state='queued' WHERE id=? AND state='delivered'",
                             [(i,) for i in ids])
        return ids

    def queued_with_prefix(self, builder: str, prefix: str) -> list[InboxMessage]:
        """Queued messages of ``builder`` whose text starts with ``prefix``, FIFO."""
        if builder not in self._inbox.builders:
            return []
        rows = self._db.execute(
            f"SELECT {_MESSAGE_COLS} FROM inbox_messages WHERE builder=? AND state='queued'"
            " AND substr(text, 1, ?)=? ORDER BY seq",
            (builder, len(prefix), prefix),
        ).fetchall()
        return [_message(r) for r in rows]

    def set_message_text(self, message_id: str, text: str) -> bool:
        """Replace a still queued message's text. False when it is no longer queued."""
        cur = self._db.execute("UPDATE inbox_messages SET text=? WHERE id=? AND state='queued'", (text, message_id))
        return cur.rowcount == 1

    def mark_delivered(self, ids: list[str], *, hook_event_id: int | None, session_id: str, via: str, at: float) -> None:
        self._db.executemany(
            "UPDATE inbox_messages SET state='delivered', delivered_at=?, delivered_mono=?, delivered_hook_event_id=?,"
            " delivered_session_id=?, delivered_via=?, deliveries=deliveries+1 WHERE id=?",
            [(at, self.mono, hook_event_id, session_id, via, i) for i in ids],
        )
        self._answers_follow(ids, "delivered", at)

    def _answers_follow(self, message_ids: list[str], what: str, at: float) -> None:
        """An answer sent through the inbox is delivered / adopted with its message."""
        if not message_ids:
            return
        marks = ",".join("?" * len(message_ids))
        if what == "delivered":
            sql = ("UPDATE interactions SET delivered_at=?, delivered_via='inbox', revision=revision+1"
                   f" WHERE inbox_message_id IN ({marks}) AND delivered_at IS NULL")
        else:
            sql = ("UPDATE interactions SET delivered_at=COALESCE(delivered_at, ?), delivered_via=COALESCE(delivered_via, 'inbox'),"
                   f" adopted_at=?, revision=revision+1 WHERE inbox_message_id IN ({marks}) AND adopted_at IS NULL")
        self._db.execute(sql, (at, *message_ids) if what == "delivered" else (at, at, *message_ids))

    def adopt_queued(self, ids: list[str], *, via: str, at: float) -> list[str]:
        """Messages whose content the agent already got another way (an async answer returned
        by ``await_answers``): adopted without being delivered. Returns the ids changed."""
        changed = []
        for i in ids:
            cur = self._db.execute(
                "UPDATE inbox_messages SET state='adopted', adopted_at=?, adopted_via=? WHERE id=? AND state IN ('queued', 'delivered')",
                (at, via, i),
            )
            if cur.rowcount:
                changed.append(i)
        self._answers_follow(changed, "adopted", at)
        return changed

    def adopt(self, session_id: str, *, up_to_hook_event_id: int, via: str, at: float,
              agent_id: str | None = None, only: list[str] | None = None) -> list[str]:
        """Mark adopted the messages delivered to ``session_id`` by hook events up to
        ``up_to_hook_event_id`` (inclusive): those of ``agent_id`` (None: the main agent), or,
        with ``only``, those of these ids. Returns the ids changed, in FIFO order."""
        sql = ("SELECT id FROM inbox_messages WHERE state='delivered' AND delivered_session_id=?"
               " AND delivered_hook_event_id<=?")
        args: tuple = (session_id, up_to_hook_event_id)
        if only is None:
            sql += " AND agent_id IS ?"
            args += (agent_id,)
        else:
            sql += f" AND id IN ({','.join('?' * len(only))})"
            args += tuple(only)
        ids = [r[0] for r in self._db.execute(sql + " ORDER BY seq", args).fetchall()]
        self._db.executemany(
            "UPDATE inbox_messages SET state='adopted', adopted_at=?, adopted_via=? WHERE id=?",
            [(at, via, i) for i in ids],
        )
        self._answers_follow(ids, "adopted", at)
        return ids

    def has_unadopted(self, session_id: str) -> bool:
        """Has ``session_id`` been delivered messages not yet adopted?"""
        return self._one("SELECT 1 FROM inbox_messages WHERE state='delivered' AND delivered_session_id=? LIMIT 1",
                         (session_id,)) is not None

    def adopt_typed(self, ids: list[str], session_id: str, at: float) -> None:
        """Queued messages the human typed verbatim: they reached the model as the prompt."""
        self._db.executemany(
            "UPDATE inbox_messages SET state='adopted', delivered_at=?, delivered_session_id=?, delivered_via='typed',"
            " adopted_at=?, adopted_via='typed' WHERE id=? AND state='queued'",
            [(at, session_id, at, i) for i in ids],
        )
        self._answers_follow(ids, "adopted", at)

    def delivered_by_hook(self, hook_event_id: int) -> bool:
        """Did the hook event ``hook_event_id`` itself deliver messages?"""
        return self._one(
            "SELECT 1 FROM inbox_messages WHERE delivered_hook_event_id=? AND delivered_via NOT LIKE '%asyncRewake%' LIMIT 1",
            (hook_event_id,),
        ) is not None

    def stop_deliveries(self, session_id: str) -> int:
        row = self._one("SELECT stop_deliveries FROM sessions WHERE id=?", (session_id,))
        return row[0] if row else 0

    def set_stop_deliveries(self, session_id: str, n: int) -> None:
        self._db.execute("UPDATE sessions SET stop_deliveries=? WHERE id=? AND stop_deliveries<>?", (n, session_id, n))

    def has_open_question(self, session_id: str, agent_id: str | None) -> bool:
        return self._one(
            "SELECT 1 FROM interactions WHERE session_id=? AND agent_id IS ? AND state='pending' AND kind='question' LIMIT 1",
            (session_id, agent_id),
        ) is not None

    # events --------------------------------------------------------------------------
    def append_event(self, kind: str, builder: str | None, session_id: str | None, at: float, data: dict[str, Any]) -> Event:
        """Append to the event log. The event is published only after commit."""
        blob = _enc.encode(data)
        cur = self._db.execute(
            "INSERT INTO events (kind, builder, session_id, at, data) VALUES (?,?,?,?,?)",
            (kind, builder, session_id, at, blob),
        )
        ev = Event(seq=cur.lastrowid, kind=kind, builder=builder, session_id=session_id, at=at, data=data)
        self.events.append(ev)
        return ev

    # notifications -------------------------------------------------------------------
    # (hookd.notify: escalation steps claimed once per subject, delivery per channel)
    def claim_notification(self, key: str, step: int, rule: str, builder: str | None,
                           channels: list[str], alert: bytes, at: float) -> tuple[int, float, list[str]]:
        """Claim escalation ``step`` of subject ``key`` for ``channels``, unless a step at
        least as high was claimed before. Returns (highest step claimed, when the subject's
        first step was claimed, the channels claimed now: empty when nothing is to be sent)."""
        row = self._one("SELECT MAX(step), MIN(created_at) FROM notifications WHERE key=?", (key,))
        top, first = (row[0], row[1]) if row and row[0] is not None else (-1, at)
        if top >= step:
            return top, first, []
        self._db.executemany(
            "INSERT OR IGNORE INTO notifications (key, step, channel, rule, builder, status, alert, created_at)"
            " VALUES (?,?,?,?,?,'pending',?,?)",
            [(key, step, ch, rule, builder, alert, at) for ch in channels],
        )
        return step, first, list(channels)

    def notification_steps(self, keys: list[str]) -> dict[str, tuple[int, float]]:
        """{key: (highest step claimed, first claimed at)} for the keys with notifications."""
        out: dict[str, tuple[int, float]] = {}
        for k in keys:
            row = self._one("SELECT MAX(step), MIN(created_at) FROM notifications WHERE key=?", (k,))
            if row and row[0] is not None:
                out[k] = (row[0], row[1])
        return out

    def finish_notification(self, key: str, step: int, channel: str, *, status: str, attempts: int,
                            error: str | None, at: float) -> bool:
        """Record the outcome of a pending delivery (``sent`` | ``failed`` | ``cleared``)."""
        cur = self._db.execute(
            "UPDATE notifications SET status=?, attempts=attempts+?, last_error=?, sent_at=?"
            " WHERE key=? AND step=? AND channel=? AND status='pending'",
            (status, attempts, error, at if status == "sent" else None, key, step, channel),
        )
        return cur.rowcount == 1

    def clear_notifications(self, key: str) -> int:
        """The subject is resolved: its deliveries still pending are not retried."""
        return self._db.execute(
            "UPDATE notifications SET status='cleared' WHERE key=? AND status='pending'", (key,)).rowcount

    def pending_notifications(self) -> list[tuple[str, int, str, bytes, int]]:
        """(key, step, channel, alert, attempts) of deliveries claimed but not finished (a
        restart resumes them)."""
        return [tuple(r) for r in self._db.execute(
            "SELECT key, step, channel, alert, attempts FROM notifications WHERE status='pending' ORDER BY created_at")]

    def notifications(self, limit: int = 1000) -> list[dict[str, Any]]:
        keys = ("key", "step", "channel", "rule", "builder", "status", "attempts", "last_error", "created_at", "sent_at")
        rows = self._db.execute(
            f"SELECT {', '.join(keys)} FROM notifications ORDER BY created_at DESC, key, step, channel LIMIT ?", (limit,))
        return [dict(zip(keys, r)) for r in rows]
    # --- notifications


T = TypeVar("T")


async def _finish(job: "asyncio.Future[T]") -> T:
    """``job``'s result (a thread's: ``asyncio.ensure_future(asyncio.to_thread(...))``);
    cancelled, this still waits for ``job`` to end before raising ``CancelledError``:
    cancelling ``to_thread`` does not stop the thread, and nothing it uses (a connection) may
    be closed under it. Raises what ``job`` raises."""
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        await asyncio.wait((job,))
        if not job.cancelled():
            job.exception()  # retrieved: the cancellation is what the caller gets
        raise


#: First and longest pause (seconds) between two tries of a write on a database another
#: connection has locked (doubling; :meth:`Store.write`).
_LOCK_PAUSE_S = (0.002, 0.05)


class _Locked(Exception):
    """BEGIN IMMEDIATE found the database locked by another connection (``error``)."""

    def __init__(self, error: sqlite3.Error):
        super().__init__(str(error))
        self.error = error


def _rollback(db: sqlite3.Connection) -> None:
    """End a failed transaction, if SQLite has not already (a failed COMMIT may leave it
    open: the writer would refuse every later BEGIN)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


def _fail(futures: list[asyncio.Future[Any]], e: BaseException) -> None:
    """Hand ``e`` to every waiting write (a StorageUnavailable: a fresh one each)."""
    for fut in futures:
        if not fut.done():
            fut.set_exception(StorageUnavailable(e.message) if isinstance(e, StorageUnavailable) else e)


class Store:
    """The database of one hookd home. ``open`` applies pending migrations."""

    #: seconds between passive WAL checkpoints
    CHECKPOINT_INTERVAL_S = 1.0

    def __init__(self, path: Path, clock: Clock | None = None):
        self.path = path
        #: wall time and hookd's timeline (:mod:`hookd.clock`); each transaction's
        #: :attr:`Tx.mono` is read from it
        self.clock = clock if clock is not None else Clock()
        self._w: sqlite3.Connection | None = None
        self._r: aiosqlite.Connection | None = None
        self._checkpointer: asyncio.Task[None] | None = None
        # writes waiting for the next group commit: (fn, args, future, loop time past which a
        # database locked by another connection refuses it)
        self._batch: list[tuple[Callable[..., Any], tuple, asyncio.Future[Any], float]] = []
        self._flushing: asyncio.Handle | None = None  # the scheduled _flush of the batch
        self._lock_pause = _LOCK_PAUSE_S[0]  # the pause before the next try on a locked database
        self._busy = False  # a write committed in this turn of the event loop
        #: whether the store can commit (hookd.storage_health); status shows it
        self.health = StorageHealth(path)
        #: how long a write waits for a database another connection has locked (seconds;
        #: ``HOOKD_BUSY_WAIT_S``), in pauses that never block the event loop; then it is
        #: refused (StorageUnavailable): a hook's client spools it well within its deadline
        self.busy_wait_s = env_number("HOOKD_BUSY_WAIT_S", 2.0)
        self._ident: tuple[int, int] | None = None  # (device, inode) of the database opened
        #: write transactions committed by this store (the checkpoint loop's clock)
        self.commits = 0
        #: the writer connection's WAL restart, running in a thread (:meth:`_restart_wal`)
        self._restarting: asyncio.Future[None] | None = None
        #: builders that may have live inbox messages (filled by :meth:`open`)
        self._inbox = InboxLive(set())

    async def open(self) -> "Store":
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=5000",
                       "foreign_keys=ON", "wal_autocheckpoint=0"):
            db.execute(f"PRAGMA {pragma}")
        self._w = db
        self._migrate()
        self.clock.attach(db)
        self.clock.record(db)
        # from here on a locked database is waited for off the event loop (write, _flush)
        db.execute("PRAGMA busy_timeout=0")
        st = os.stat(self.path)
        self._ident = (st.st_dev, st.st_ino)
        self._inbox.builders.update(r[0] for r in db.execute(
            "SELECT DISTINCT builder FROM inbox_messages WHERE state IN ('queued', 'delivered')"))
        self._r = await aiosqlite.connect(self.path, isolation_level=None)
        await self._r.execute("PRAGMA busy_timeout=5000")
        self._checkpointer = asyncio.create_task(self._checkpoint_loop())
        return self

    async def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.cancel()
            try:
                await self._checkpointer
            except asyncio.CancelledError:
                pass
            self._checkpointer = None
        if self._flushing is not None:  # writes waiting for a locked database: refused
            self._flushing.cancel()
            self._flushing = None
            batch, self._batch = self._batch, []
            for _, _, fut, _ in batch:
                if not fut.done():
                    fut.set_exception(StorageUnavailable("storage unavailable: the daemon is stopping; nothing was stored"))
        if self._r is not None:
            await self._r.close()
            self._r = None
        if self._w is not None:
            try:
                self.clock.record(self._w)
            except sqlite3.Error as e:  # the next boot's floor is then an earlier record
                log.warning("recording the timeline: %s", e)
            with contextlib.suppress(sqlite3.Error):  # disk full, deleted: nothing more to save
                self._w.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._w.close()
            self._w = None

    async def _checkpoint_loop(self) -> None:
        """Every CHECKPOINT_INTERVAL_S with commits since the last time: copy the WAL into the
        database (PASSIVE, on a connection of its own, in a thread: it never blocks the
        writer), then, when everything was copied, restart the WAL (:meth:`_restart_wal`).

        Cancelled (:meth:`close`), it still waits for the thread it has started (:func:`_finish`)
        before closing that thread's connection, or before the writer's connection is closed:
        closing a connection a thread is using is a segfault in ``sqlite3`` (CI, stop 16)."""
        conn = await _finish(asyncio.ensure_future(asyncio.to_thread(
            sqlite3.connect, self.path, check_same_thread=False, isolation_level=None)))
        seen = -1
        logged: str | None = None
        try:
            while True:
                await asyncio.sleep(self.CHECKPOINT_INTERVAL_S)
                if self.commits == seen:
                    continue  # nothing new: the WAL has restarted and holds only the last record
                seen = self.commits
                try:
                    busy, frames, copied = await _finish(asyncio.ensure_future(
                        asyncio.to_thread(self._passive_checkpoint, conn)))
                    if busy or frames <= 0 or copied != frames:
                        continue  # not all copied (a reader's snapshot): no restart; the next round
                    if self._batch:
                        continue  # writes are queued for the writer right now: the next round
                    self._restarting = asyncio.ensure_future(asyncio.to_thread(self._restart_wal, frames))
                    try:
                        await _finish(self._restarting)
                    finally:
                        self._restarting = None  # the writer is back from its thread
                except sqlite3.Error as e:  # disk full, say: the next round tries again
                    if str(e) != logged:  # once per change: the store's health says the rest
                        log.warning("WAL checkpoint: %s", e)
                        logged = str(e)
                else:
                    logged = None
        finally:
            conn.close()

    @staticmethod
    def _passive_checkpoint(conn: sqlite3.Connection) -> tuple[int, int, int]:
        """``PRAGMA wal_checkpoint(PASSIVE)`` on ``conn``: (busy, WAL frames, frames copied)."""
        return conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()

    def _restart_wal(self, frames: int) -> None:
        """Record the checkpoint that just copied ``frames`` WAL frames (the ``checkpoints``
        row) on the writer connection, in a thread, while :meth:`write` holds new writes back.

        Why: the first commit after a complete checkpoint starts the WAL over, and SQLite
        writes and fsyncs a new WAL header for that even at ``synchronous=NORMAL`` (0.3 ms
        here; milliseconds on many disks). Agents' hooks come seconds apart, after the
        checkpoint has copied everything, so each one's commit was that one. Now this record
        is; the hooks after it append to a WAL that has already restarted. It is the writer's
        own connection (never the loop's and this thread's at once) because a commit by any
        other connection would make the writer drop its whole page cache and read it back
        from the file at the next hook."""
        # not counted in ``commits``: the next round, with nothing else committed, has nothing to do
        try:
            self._transaction(Tx.record_checkpoint, (time.time(), frames), counted=False)
        except _Locked as e:  # another connection holds the lock: the next round
            raise e.error from None

    def _migrate(self) -> None:
        db = self._w
        assert db is not None
        db.execute(
            "CREATE TABLE IF NOT EXISTS migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, applied_at REAL NOT NULL)"
        )
        done = {r[0] for r in db.execute("SELECT name FROM migrations")}
        for name, statements in MIGRATIONS:
            if name in done:
                continue
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql in statements:
                    db.execute(sql)
                db.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    async def applied_migrations(self) -> list[str]:
        return [r[0] for r in await self._all("SELECT name FROM migrations ORDER BY id")]

    async def write(self, fn: Callable[..., T], *args: Any) -> tuple[T, list[Event]]:
        """Run ``fn(tx, *args)`` in one write transaction.

        Commits when ``fn`` returns, rolls back (and re-raises) when it raises. Returns
        ``fn``'s result and the events it appended, to be published after the commit.
        ``fn`` is synchronous and must be quick: it runs on the event loop's thread.

        Group commit: the first write of a turn of the event loop commits at once; the
        writes requested after it in that turn (hooks of many builders arriving together)
        run in submission order in one transaction, each in its own savepoint (a raising
        ``fn`` undoes only its own changes), and one COMMIT makes them all durable before any
        of them returns. ``HOOKD_GROUP_COMMIT=0``: one transaction per write.

        Raises StorageUnavailable when the database cannot commit (:mod:`hookd.storage_health`):
        a storage error (disk full, I/O error, corrupt, read-only, ...) in any write of a
        group fails the whole group (rolled back: none of it is acknowledged; the next write
        tries again); a database another connection has locked is waited for, in pauses that
        never block the event loop, up to ``busy_wait_s``; a database file deleted or replaced
        since :meth:`open` refuses every write from then on. ``tx.after_commit`` callbacks
        run only for a write that is acknowledged.
        """
        if self._restarting is not None and not self._restarting.done():
            await asyncio.wait((self._restarting,))  # the writer is restarting the WAL in its thread
        self.health.check()
        loop = asyncio.get_running_loop()
        if not GROUP_COMMIT:
            return await self._solo(fn, args, loop.time() + self.busy_wait_s)
        if not self._busy and not self._batch:
            # the first write of this turn commits at once: no added latency when quiet
            self._busy = True
            loop.call_soon(self._turn_over)
            try:
                return self._transaction(fn, args)
            except _Locked:
                pass  # another connection holds the write lock: wait in line (_flush)
        fut: asyncio.Future[tuple[T, list[Event]]] = loop.create_future()
        self._batch.append((fn, args, fut, loop.time() + self.busy_wait_s))
        if self._flushing is None:
            self._flushing = loop.call_soon(self._flush)
        return await fut

    async def _solo(self, fn: Callable[..., T], args: tuple, until: float) -> tuple[T, list[Event]]:
        """One transaction for one write (no group commit); a locked database is retried
        until the loop time ``until``."""
        pause = _LOCK_PAUSE_S[0]
        while True:
            try:
                return self._transaction(fn, args)
            except _Locked as e:
                if asyncio.get_running_loop().time() >= until:
                    raise self.health.failed(e.error) from e.error
                await asyncio.sleep(pause)
                pause = min(pause * 2, _LOCK_PAUSE_S[1])

    def _turn_over(self) -> None:
        self._busy = False

    def _flush(self) -> None:
        self._flushing = None
        db = self._w
        loop = asyncio.get_running_loop()
        try:
            assert db is not None, "the store is closed"
            self._begin(db)
        except _Locked as e:
            # another connection holds the write lock: refuse the writes that waited long
            # enough, try the others again after a pause (the event loop runs meanwhile)
            now = loop.time()
            late = [w for w in self._batch if w[3] <= now]
            if late:
                self._batch = [w for w in self._batch if w[3] > now]
                _fail([w[2] for w in late], self.health.failed(e.error))
            if self._batch:
                self._flushing = loop.call_later(self._lock_pause, self._flush)
                self._lock_pause = min(self._lock_pause * 2, _LOCK_PAUSE_S[1])
            return
        except BaseException as e:  # noqa: BLE001 - nothing of the batch was committed
            batch, self._batch = self._batch, []
            _fail([w[2] for w in batch], self._refusal(e))
            return
        self._lock_pause = _LOCK_PAUSE_S[0]
        batch, self._batch = self._batch, []
        done: list[tuple[asyncio.Future[Any], BaseException | None, Any]] = []
        try:
            try:
                for fn, args, fut, _ in batch:
                    db.execute("SAVEPOINT w")
                    tx = Tx(db, self._inbox, self.clock.mono())
                    try:
                        result = fn(tx, *args)
                    except BaseException as e:  # noqa: BLE001 - handed to its caller
                        if storage_code(e) is not None:
                            raise  # the database failed, not this write: the whole group fails
                        db.execute("ROLLBACK TO w")
                        db.execute("RELEASE w")
                        done.append((fut, e, None))
                        continue
                    db.execute("RELEASE w")
                    done.append((fut, None, (result, tx)))
                db.execute("COMMIT")
                self.commits += 1
            except BaseException:
                _rollback(db)
                raise
            self._check_file()
        except BaseException as e:  # noqa: BLE001 - nothing of the batch is acknowledged
            _fail([w[2] for w in batch], self._refusal(e))
            return
        self.health.succeeded()
        for fut, err, ok in done:
            if err is not None:
                if not fut.done():
                    fut.set_exception(err)
                continue
            result, tx = ok
            for fn_after in tx.after_commit:
                try:
                    fn_after()
                except Exception:
                    log.exception("after-commit callback failed")
            if not fut.done():
                fut.set_result((result, tx.events))

    def _begin(self, db: sqlite3.Connection) -> None:
        """BEGIN IMMEDIATE; raises _Locked when another connection holds the write lock."""
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            if is_busy(e):
                raise _Locked(e) from e
            raise

    def _refusal(self, e: BaseException) -> BaseException:
        """What a write that failed with ``e`` raises: StorageUnavailable for a storage
        error (recorded in :attr:`health`), ``e`` itself otherwise."""
        if isinstance(e, StorageUnavailable):
            return e
        if storage_code(e) is not None:
            return self.health.failed(e)
        return e

    def _check_file(self) -> None:
        """Raise StorageUnavailable when the file at the database's path is no longer the
        one opened (deleted, moved away or replaced): what was just committed went into a
        file no one will open again. One stat per commit (~2 us), not per hook."""
        try:
            st = os.stat(self.path)
            ident: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            ident = None
        except OSError:
            return  # cannot tell (a permission change): the commits themselves will say
        if ident != self._ident:
            raise self.health.gone("deleted" if ident is None else "replaced")

    def _transaction(self, fn: Callable[..., T], args: tuple, counted: bool = True) -> tuple[T, list[Event]]:
        """One write transaction on the writer connection. ``counted``: a write of the
        event loop's (health recorded, file checked, :attr:`commits` counted), not the WAL
        restart's in its thread. Raises _Locked (nothing done) when the database is locked."""
        db = self._w
        assert db is not None
        try:
            self._begin(db)
        except sqlite3.Error as e:
            raise self._refusal(e) if counted else e
        tx = Tx(db, self._inbox, self.clock.mono())
        try:
            result = fn(tx, *args)
            db.execute("COMMIT")
        except BaseException as e:
            _rollback(db)
            refusal = self._refusal(e) if counted else e
            if refusal is e:
                raise
            raise refusal from e
        if counted:
            self.commits += 1
            self._check_file()
            self.health.succeeded()
        for fn_after in tx.after_commit:
            fn_after()
        return result, tx.events

    def storage(self) -> dict[str, Any]:
        """:attr:`health`'s status, and ``waiting``: writes waiting for their commit (for more
        than a turn of the event loop only while another connection has the database locked)."""
        return {**self.health.status(), "waiting": len(self._batch)}

    async def record_recovery(self) -> None:
        """Write the ``storage_recovered`` event of the current or last outage (error,
        message, since, refused, after_s), if there is one not yet recorded: the write that
        tells whether storage commits again (hookd.storage_health.retry_until_back). Raises
        StorageUnavailable while it does not."""
        health = self.health

        def tx_fn(tx: Tx) -> None:
            outage = health.outage()
            if outage is None:
                return
            at = time.time()
            tx.append_event("storage_recovered", None, None, at,
                            {**outage, "after_s": round(at - (outage["since"] or at), 3)})
            tx.after_commit.append(health.recorded)

        await self.write(tx_fn)

    # reads ---------------------------------------------------------------------------
    async def _all(self, sql: str, args: tuple = ()) -> list[tuple]:
        db = self._r
        assert db is not None
        # execute and fetch in one call on the reader's thread: a statement left half-read
        # between two calls would hold its read snapshot for the other readers' statements
        # queued in between (they would miss a commit made meanwhile: a lost wake-up)
        try:
            return list(await db.execute_fetchall(sql, args))
        except sqlite3.Error as e:
            code = storage_code(e)
            if code is None:
                raise
            raise StorageUnavailable(f"storage unavailable: cannot read the database: {e} ({code})") from e

    async def interactions_by_ids(self, ids: list[str]) -> dict[str, Interaction]:
        """{requested id: interaction} for the ids (or tool_use_ids) that exist."""
        out: dict[str, Interaction] = {}
        for i in ids:
            rows = await self._all(f"SELECT {_INTERACTION_COLS} FROM interactions WHERE id=? OR tool_use_id=? LIMIT 1", (i, i))
            if rows:
                out[i] = _interaction(rows[0])
        return out

    async def session_builders(self, session_ids: list[str]) -> dict[str, str]:
        """session id -> builder, for those of ``session_ids`` hookd knows."""
        if not session_ids:
            return {}
        marks = ",".join("?" * len(session_ids))
        return dict(await self._all(f"SELECT id, builder FROM sessions WHERE id IN ({marks})", tuple(session_ids)))

    async def transcript_targets(self) -> list[tuple[str, str, str | None]]:
        """Files to tail: (path, builder, session_id) of every session's reported transcript
        and every file already tailed."""
        rows = await self._all(
            "SELECT transcript_path, builder, id FROM sessions WHERE transcript_path IS NOT NULL"
            " UNION SELECT path, builder, session_id FROM transcripts"
        )
        seen: dict[str, tuple[str, str, str | None]] = {}
        for path, builder, sid in rows:
            seen.setdefault(path, (path, builder, sid))
        return list(seen.values())

    async def transcripts(self) -> list[dict[str, Any]]:
        rows = await self._all(
            "SELECT path, builder, session_id, offset, rows, damaged, unknown_rows, first_seen_at, last_row_at"
            " FROM transcripts ORDER BY first_seen_at"
        )
        keys = ("path", "builder", "session_id", "offset", "rows", "damaged", "unknown_rows", "first_seen_at", "last_row_at")
        return [dict(zip(keys, r)) for r in rows]

    async def lane_inputs(self, builders: list[str]) -> list[dict[str, Any]]:
        """What a lane is derived from, per builder (see :mod:`hookd.lanes`), in the order of
        ``builders``: its current session (the one of its newest hook, else its newest
        transcript-only session) with the agent pid, end and interrupt times; the session's
        newest main-agent hook that is agent activity (not one of
        :data:`hookd.models.NOT_ACTIVITY_HOOKS`); its pending interactions (a list, or ``()`` when there are
        none: one shared object, so that the dicts of most builders hold nothing the garbage
        collector tracks); its queued inbox messages.

        Three statements per thousand builders (each builder's rows found through the indexes
        inside SQLite, on the reader's thread), not five per builder; the event loop runs
        between two thousands (10,000 builders must not hold it: hooks are answered in
        between), and no more than a thousand rows are alive at once."""
        out: list[dict[str, Any]] = []
        for i in range(0, len(builders), 1000):
            out += await self._lane_inputs(builders[i:i + 1000])
        return out

    async def _lane_inputs(self, builders: list[str]) -> list[dict[str, Any]]:
        names = _enc.encode(builders)
        marks = "SELECT value FROM json_each(?)"
        rows = await self._all(
            "WITH b(k, id) AS (SELECT key, value FROM json_each(?)),"
            " cur AS (SELECT b.k, b.id AS builder, COALESCE("
            "  (SELECT s.id FROM sessions s WHERE s.id=(SELECT h.session_id FROM hook_events h"
            "    WHERE h.builder=b.id AND h.session_id IS NOT NULL ORDER BY h.id DESC LIMIT 1)),"
            "  (SELECT s.id FROM sessions s WHERE s.builder=b.id ORDER BY s.started_at DESC LIMIT 1)) AS sid FROM b)"
            " SELECT cur.builder, s.id, s.started_at, s.ended_at, s.end_reason, s.agent_pid, s.agent_started_at,"
            " s.interrupted_at, s.hooks_unarmed_at, s.cwd, s.harness, s.turn_started_at, s.turn_ended_at,"
            " lh.hook_event_name, lh.received_at, COALESCE(lh.received_mono, lh.received_at)"
            " FROM cur LEFT JOIN sessions s ON s.id=cur.sid"
            " LEFT JOIN hook_events lh ON lh.id=(SELECT h.id FROM hook_events h WHERE h.session_id=s.id"
            "   AND h.agent_id IS NULL"
            f"   AND h.hook_event_name NOT IN ({','.join('?' * len(NOT_ACTIVITY_HOOKS))})"
            "   ORDER BY h.id DESC LIMIT 1)"
            " ORDER BY cur.k", (names, *sorted(NOT_ACTIVITY_HOOKS)))
        pending: dict[str, list[dict[str, Any]]] = {}
        for b, i, k, c, s_, m in await self._all(
                "SELECT builder, id, kind, created_at, session_id, COALESCE(created_mono, created_at) FROM interactions"
                f" WHERE state='pending' AND builder IN ({marks}) ORDER BY created_at", (names,)):
            pending.setdefault(b, []).append({"id": i, "kind": k, "created_at": c, "session_id": s_, "created_mono": m})
        queued = {b: (n, oldest, oldest_mono) for b, n, oldest, oldest_mono in await self._all(
            "SELECT builder, COUNT(*), MIN(created_at), MIN(COALESCE(created_mono, created_at)) FROM inbox_messages"
            f" WHERE state='queued' AND builder IN ({marks}) GROUP BY builder", (names,))}
        keys = ("session_id", "started_at", "ended_at", "end_reason", "agent_pid", "agent_started_at",
                "interrupted_at", "hooks_unarmed_at", "cwd", "harness", "turn_started_at", "turn_ended_at")
        out = []
        for r in rows:
            b = r[0]
            q = queued.get(b, (0, None, None))
            out.append({
                "builder": b, "session": dict(zip(keys, r[1:13])) if r[1] is not None else None,
                "last_hook": {"hook_event_name": r[13], "at": r[14], "mono": r[15]} if r[14] is not None else None,
                "pending": pending.get(b, ()), "queued": q[0], "oldest_queued_at": q[1], "oldest_queued_mono": q[2],
            })
        return out

    async def builders(self) -> list[str]:
        return [r[0] for r in await self._all("SELECT id FROM builders ORDER BY id")]

    async def lanes(self) -> dict[str, tuple[str, float, str | None, str | None]]:
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in await self._all("SELECT builder, state, since, session_id, detail FROM lanes")}

    async def next_expiry(self) -> float | None:
        (t,), = await self._all("SELECT MIN(expires_at) FROM interactions WHERE state='pending' AND expires_at IS NOT NULL")
        return t

    async def interactions(self, state: str = "all", limit: int = 1000) -> list[Interaction]:
        """The newest ``limit`` interactions in ``state`` (``pending`` | ``resolved`` | ``all``),
        listed oldest first."""
        where = {"pending": "WHERE state='pending'", "resolved": "WHERE state<>'pending'", "all": ""}[state]
        rows = await self._all(
            f"SELECT {_INTERACTION_COLS} FROM interactions {where} ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (limit,),
        )
        return [_interaction(r) for r in reversed(rows)]

    async def interaction(self, interaction_id: str) -> Interaction | None:
        rows = await self._all(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE id=? OR tool_use_id=?", (interaction_id, interaction_id)
        )
        return _interaction(rows[0]) if rows else None

    async def hook_event_id(self, delivery_id: str) -> int | None:
        """The id of the hook event stored under ``delivery_id``, if any."""
        rows = await self._all("SELECT id FROM hook_events WHERE delivery_id=?", (delivery_id,))
        return rows[0][0] if rows else None

    async def events_after(self, after: int = 0, limit: int = 1000) -> list[Event]:
        rows = await self._all(
            "SELECT seq, kind, builder, session_id, at, data FROM events WHERE seq>? ORDER BY seq LIMIT ?",
            (after, limit),
        )
        return [_event(r) for r in rows]

    async def builder_stats(self) -> dict[str, dict[str, Any]]:
        """Per builder: harness, hooks_seen, first/last hook time, sessions, pending count."""
        out: dict[str, dict[str, Any]] = {}
        # (index-only: the count reads hook_events_builder, the last hook one index entry;
        # a join with MAX(received_at) read every stored payload row: 0.8 s at 1.1M events)
        for b, harness, first, seen, last in await self._all(
            "SELECT b.id, b.harness, b.first_hook_at,"
            " (SELECT COUNT(*) FROM hook_events h WHERE h.builder=b.id),"
            " (SELECT received_at FROM hook_events h WHERE h.builder=b.id ORDER BY h.id DESC LIMIT 1)"
            " FROM builders b"
        ):
            out[b] = {"harness": harness, "hooks_seen": seen, "first_hook_at": first,
                      "last_hook_at": last, "sessions": [], "pending": 0}
        for sid, b, harness, parent, via, source, tp, cwd, started, ended, reason, last in await self._all(
            "SELECT s.id, s.builder, s.harness, s.parent_id, s.parent_via, s.source, s.transcript_path, s.cwd, s.started_at,"
            " s.ended_at, s.end_reason,"
            " (SELECT received_at FROM hook_events h WHERE h.session_id=s.id ORDER BY h.id DESC LIMIT 1)"
            " FROM sessions s ORDER BY s.started_at"
        ):
            if b not in out:  # known only from its transcripts: no hook ever came
                out[b] = {"harness": harness, "hooks_seen": 0, "first_hook_at": None,
                          "last_hook_at": None, "sessions": [], "pending": 0}
            out[b]["sessions"].append({
                "session_id": sid, "harness": harness, "parent_session_id": parent, "parent_via": via, "source": source,
                "transcript_path": tp, "cwd": cwd, "started_at": started,
                "last_hook_at": last, "ended_at": ended, "end_reason": reason,
            })
        for b, n in await self._all("SELECT builder, COUNT(*) FROM interactions WHERE state='pending' GROUP BY builder"):
            if b in out:
                out[b]["pending"] = n
        return out

    async def counts(self) -> dict[str, int]:
        # append-only tables whose ids count from 1 without gaps: the last id is the count,
        # read from the index end instead of counting every row (status stays O(1) with 1M rows)
        (h,), = await self._all("SELECT COALESCE(MAX(id), 0) FROM hook_events")
        (e,), = await self._all("SELECT COALESCE(MAX(seq), 0) FROM events")
        (p,), = await self._all("SELECT COUNT(*) FROM interactions WHERE state='pending'")
        return {"hook_events": h, "events": e, "pending_interactions": p}

    async def messages(self, builder: str | None = None, limit: int = 1000) -> tuple[list[InboxMessage], int]:
        """The newest ``limit`` inbox messages (of one builder or all), oldest first, and how
        many there are in all."""
        where, args = ("WHERE builder=?", (builder,)) if builder is not None else ("", ())
        rows = await self._all(
            f"SELECT * FROM (SELECT seq, {_MESSAGE_COLS} FROM inbox_messages {where} ORDER BY seq DESC LIMIT ?)"
            " ORDER BY seq", (*args, limit),
        )
        (total,), = await self._all(f"SELECT COUNT(*) FROM inbox_messages {where}", args)
        return [_message(r[1:]) for r in rows], total

    async def builder_known(self, builder: str) -> bool:
        return bool(await self._all("SELECT 1 FROM builders WHERE id=?", (builder,)))
