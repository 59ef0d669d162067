"""The store's reads: queries on the reader connection (aiosqlite, a thread of its own;
WAL readers never block the writer). :class:`Reads` is the base of :class:`hookd.store.Store`,
which opens and closes that connection."""

from __future__ import annotations

import sqlite3
from typing import Any

import aiosqlite

from hookd.models import PROMPT_KINDS, Event, InboxMessage, Interaction, Run, StorageUnavailable, Subagent
from hookd.storage_health import storage_code
from hookd.store.chat import CHAT_POST_COLS, ChatPost, chat_post_of
from hookd.store.inbox import SESSION_SCOPE_SQL, SUBAGENT_SCOPE_SQL, session_scope, subagent_scope
from hookd.store.runs import RUN_COLS, run_of
from hookd.store.rows import _INTERACTION_COLS, _MESSAGE_COLS, _dec, _enc, _event, _interaction, _message


#: Most builders whose lane inputs are read on the event loop's thread (:meth:`Reads.lane_inputs`).
LANES_NOW = 20

_LANE_NAMES = "SELECT value FROM json_each(?)"
#: The lane inputs' three statements, each given the builders' names as one JSON array:
#: the current session and its newest main-agent hook (in the array's order); the pending
#: interactions; the queued inbox messages, by session (:func:`_lane_dicts` leaves out those
#: for an ended or unknown session other than the lane's: they wait for that session's resume;
#: the statement, those for a subagent that is not running: they wait for its resume).
_LANE_SQL = (
    "WITH b(k, id) AS (SELECT key, value FROM json_each(?)),"
    " cur AS (SELECT b.k, b.id AS builder, COALESCE("
    "  (SELECT s.id FROM sessions s WHERE s.id=(SELECT h.session_id FROM hook_events h"
    "    WHERE h.builder=b.id AND h.session_id IS NOT NULL ORDER BY h.id DESC LIMIT 1)),"
    "  (SELECT s.id FROM sessions s WHERE s.builder=b.id ORDER BY s.started_at DESC LIMIT 1)) AS sid FROM b)"
    " SELECT cur.builder, s.id, s.started_at, s.ended_at, s.end_reason, s.agent_pid, s.agent_started_at,"
    " s.interrupted_at, s.hooks_unarmed_at, s.cwd, s.harness, s.turn_started_at, s.turn_ended_at, s.failed_at, s.failure,"
    " s.refused_at, s.refused, s.notified_at, s.notified,"
    " lh.hook_event_name, lh.received_at, COALESCE(lh.received_mono, lh.received_at), lh.hook_kind,"
    " (SELECT i.state || ' ' || i.kind FROM interactions i WHERE i.session_id=s.id AND i.agent_id IS NULL"
    "   AND i.kind IN ('permission', 'plan', 'question') ORDER BY i.created_at DESC LIMIT 1),"
    " rn.started_at, rn.stopped_at, rn.stop_reason, rn.exit_status, rn.hooks, rn.mode, rn.log_path, rn.pid"
    " FROM cur LEFT JOIN sessions s ON s.id=cur.sid"
    " LEFT JOIN runs rn ON rn.id=(SELECT MAX(r.id) FROM runs r WHERE r.builder=cur.builder)"
    " LEFT JOIN hook_events lh ON lh.id=(SELECT h.id FROM hook_events h WHERE h.session_id=s.id"
    "   AND h.agent_id IS NULL AND h.hook_kind IS NOT 'notice'"
    "   ORDER BY h.id DESC LIMIT 1)"
    " ORDER BY cur.k",
    "SELECT builder, id, kind, created_at, session_id, COALESCE(created_mono, created_at) FROM interactions"
    f" WHERE state='pending' AND builder IN ({_LANE_NAMES}) ORDER BY created_at",
    # (a message for a session hookd has no row of, or for a subagent that is not running, waits
    # for a resume, not for this lane's agent: not counted)
    "SELECT m.builder, m.session_id, s.id IS NULL OR s.ended_at IS NOT NULL, COUNT(*), MIN(m.created_at),"
    " MIN(COALESCE(m.created_mono, m.created_at)) FROM inbox_messages m LEFT JOIN sessions s ON s.id=m.session_id"
    f" WHERE m.state='queued' AND m.builder IN ({_LANE_NAMES}) AND (m.agent_id IS NULL OR EXISTS (SELECT 1"
    "  FROM subagents a WHERE a.builder=m.builder AND a.state='running' AND a.agent_id=m.agent_id"
    "  AND (m.session_id IS NULL OR a.session_id=m.session_id))) GROUP BY m.builder, m.session_id",
)
_RUN_KEYS = ("started_at", "stopped_at", "stop_reason", "exit_status", "hooks", "mode", "log_path", "pid")
_SESSION_KEYS = ("session_id", "started_at", "ended_at", "end_reason", "agent_pid", "agent_started_at",
                 "interrupted_at", "hooks_unarmed_at", "cwd", "harness", "turn_started_at", "turn_ended_at",
                 "failed_at", "failure", "refused_at", "refused", "notified_at", "notified")


def _lane_dicts(rows: list[tuple], pending_rows: list[tuple], queued_rows: list[tuple]) -> list[dict[str, Any]]:
    """The lane inputs (:meth:`Reads.lane_inputs`) from the rows of :data:`_LANE_SQL`'s three statements."""
    pending: dict[str, list[dict[str, Any]]] = {}
    for b, i, k, c, s_, m in pending_rows:
        pending.setdefault(b, []).append({"id": i, "kind": k, "created_at": c, "session_id": s_, "created_mono": m})
    n = 1 + len(_SESSION_KEYS)  # the first column after the session's: the last hook's name
    current = {r[0]: r[1] for r in rows}
    queued: dict[str, tuple[int, Any, Any]] = {}
    for b, sid, ended, count, oldest, oldest_mono in queued_rows:
        if sid is not None and ended and sid != current.get(b):
            continue  # waits for an ended (or unknown) session to be resumed, not for this lane's agent
        was = queued.get(b)
        queued[b] = (count, oldest, oldest_mono) if was is None else (
            was[0] + count, min(was[1], oldest), min(was[2], oldest_mono))
    out = []
    for r in rows:
        b = r[0]
        q = queued.get(b, (0, None, None))
        out.append({
            "builder": b, "session": dict(zip(_SESSION_KEYS, r[1:n])) if r[1] is not None else None,
            "last_hook": {"hook_event_name": r[n], "at": r[n + 1], "mono": r[n + 2], "kind": r[n + 3]}
            if r[n + 1] is not None else None,
            # how the session's newest permission prompt, plan or question (its main agent's)
            # stands, and its kind
            "last_prompt": r[n + 4].split(" ")[0] if r[n + 4] else None,
            "last_prompt_kind": r[n + 4].split(" ")[1] if r[n + 4] else None,
            # the builder's newest run that hookd started (hookd run / continue), or None
            "run": dict(zip(_RUN_KEYS, r[n + 5:])) if r[n + 5] is not None else None,
            "pending": pending.get(b, ()), "queued": q[0], "oldest_queued_at": q[1], "oldest_queued_mono": q[2],
        })
    return out


class Reads:
    """Reads on the reader connection ``_r`` (None until :meth:`hookd.store.Store.open`).
    Each method returns lists or dicts built from one snapshot per statement; a storage error
    is raised as StorageUnavailable (:meth:`_all`)."""

    _r: aiosqlite.Connection | None

    async def applied_migrations(self) -> list[str]:
        return [r[0] for r in await self._all("SELECT name FROM migrations ORDER BY id")]

    # reads ---------------------------------------------------------------------------
    def _now(self, sql: str, args: tuple = ()) -> list[tuple] | None:
        """The rows of one small read run at once on the event loop's thread, or None when it
        cannot be (then it is :meth:`_all`'s). :class:`hookd.store.Store` runs it on the
        writer connection (:meth:`hookd.store.Store.read_now`)."""
        return None

    async def _all(self, sql: str, args: tuple = ()) -> list[tuple]:
        db = self._r
        assert db is not None
        # execute and fetch in one call on the reader's thread: a statement left half-read
        # between two calls would hold its read snapshot for the other readers' statements
        # queued in between (they would miss a commit made meanwhile: a lost wake-up)
        try:
            return list(await db.execute_fetchall(sql, args))  # type: ignore[arg-type]  # aiosqlite says sqlite3.Row even with no row_factory (ours: tuples)
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
        """What a lane is derived from, per builder (see :mod:`hookd.watchers.lane_state`), in the order of
        ``builders``: its current session (the one of its newest hook, else its newest
        transcript-only session) with the agent pid, end and interrupt times; the session's
        newest main-agent hook that is agent activity (its ``hook_kind`` is not ``notice``) with
        its name and kind; its pending interactions (a list, or ``()`` when there are
        none: one shared object, so that the dicts of most builders hold nothing the garbage
        collector tracks); its queued inbox messages; its newest run hookd started (``run``:
        how and when it ended, the hooks its builder sent meanwhile), or None.

        Three statements per thousand builders (each builder's rows found through the indexes
        inside SQLite, on the reader's thread), not five per builder; the event loop runs
        between two thousands (10,000 builders must not hold it: hooks are answered in
        between), and no more than a thousand rows are alive at once. Up to
        :data:`LANES_NOW` builders (the lanes a commit touched) are read at once on the event
        loop's thread instead (:meth:`_now`: a few hundred microseconds less per refresh than
        three trips to the reader's thread)."""
        if len(builders) <= LANES_NOW:
            names = _enc.encode(builders)
            parts = [self._now(sql, (names,)) for sql in _LANE_SQL]
            if all(p is not None for p in parts):
                return _lane_dicts(*parts)  # type: ignore[arg-type]
        out: list[dict[str, Any]] = []
        for i in range(0, len(builders), 1000):
            names = _enc.encode(builders[i:i + 1000])
            out += _lane_dicts(*[await self._all(sql, (names,)) for sql in _LANE_SQL])
        return out

    async def changed_builders(self, after: int) -> tuple[int, set[str]]:
        """What the events after seq ``after`` touched: (the last seq, or ``after`` when there
        is none; the builders of those that are not ``lane_changed``). One statement, run at
        once on the event loop's thread where it can be (:meth:`_now`)."""
        sql = ("SELECT builder, MAX(seq), MIN(kind = 'lane_changed') FROM events WHERE seq > ?"
               " GROUP BY builder")
        rows = self._now(sql, (after,))
        if rows is None:
            rows = await self._all(sql, (after,))
        last = max((r[1] for r in rows), default=after)
        return last, {b for b, _, only_lanes in rows if b and not only_lanes}

    async def builders(self) -> list[str]:
        return [r[0] for r in await self._all("SELECT id FROM builders ORDER BY id")]

    async def lanes(self) -> dict[str, tuple[str, float, str | None, str | None]]:
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in await self._all("SELECT builder, state, since, session_id, detail FROM lanes")}

    async def next_expiry(self) -> float | None:
        (t,), = await self._all("SELECT MIN(expires_at) FROM interactions WHERE state='pending' AND expires_at IS NOT NULL")
        return t

    async def hook_facts(self, ids: list[str]) -> dict[str, tuple[bool, bool, str | None]]:
        """For each interaction of ``ids``: (its PermissionRequest hook was seen, a hook came from
        its session, its session's harness or None): what decides whether a hook can carry a
        remote answer to it (:meth:`hookd.core.answers.Answers.reachable`). Unknown ids are absent."""
        facts: dict[str, tuple[bool, bool, str | None]] = {}
        for k in range(0, len(ids), 500):  # (SQLite's bound parameters, a few hundred at a time)
            part = ids[k:k + 500]
            rows = await self._all(
                "SELECT i.id, i.permission_seen_at IS NOT NULL,"
                " i.session_id IS NOT NULL AND EXISTS (SELECT 1 FROM hook_events h WHERE h.session_id=i.session_id),"
                f" s.harness FROM interactions i LEFT JOIN sessions s ON s.id=i.session_id"
                f" WHERE i.id IN ({','.join('?' * len(part))})", tuple(part))
            facts.update({r[0]: (bool(r[1]), bool(r[2]), r[3]) for r in rows})
        return facts

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

    async def open_chat_posts(self, channel: str) -> list[ChatPost]:
        """``channel``'s interaction posts not yet edited to show an outcome, oldest first (a
        two-way chat channel's look after each commit: on the reader, no write transaction)."""
        return [chat_post_of(r) for r in await self._all(
            f"SELECT {CHAT_POST_COLS} FROM chat_posts WHERE channel=? AND interaction_id IS NOT NULL AND ended_at IS NULL"
            " ORDER BY id", (channel,))]

    async def last_hold_event(self, interaction_id: str, builder: str) -> str | None:
        """The kind of the newest ``hold_ended`` / ``hold_resumed`` event of ``builder``'s
        interaction ``interaction_id`` (None: neither). Reads the builder's events newest
        first (its index), so a few pending prompts at a start cost a scan of their builders'."""
        rows = await self._all(
            "SELECT kind FROM events WHERE builder=? AND kind IN ('hold_ended', 'hold_resumed')"
            " AND json_extract(data, '$.id')=? ORDER BY seq DESC LIMIT 1", (builder, interaction_id))
        return rows[0][0] if rows else None

    async def session_harness(self, session_id: str) -> str | None:
        """The harness a session was recorded under (``claude-code``), None if unknown."""
        rows = await self._all("SELECT harness FROM sessions WHERE id=?", (session_id,))
        return rows[0][0] if rows else None

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

    async def events_raw_after(self, after: int, limit: int = 500) -> list[tuple[int, str, str | None, str | None, float, str]]:
        """The events with ``seq > after``, oldest first (at most ``limit``), as stored:
        ``(seq, kind, builder, session_id, at, data as JSON text)`` (the hub's shipper sends
        them on without decoding)."""
        rows = await self._all("SELECT seq, kind, builder, session_id, at, data FROM events WHERE seq>? ORDER BY seq LIMIT ?",
                               (after, limit))
        return [(r[0], r[1], r[2], r[3], r[4], bytes(r[5]).decode("utf-8", "replace") if isinstance(r[5], (bytes, memoryview))
                 else str(r[5])) for r in rows]

    async def hub_cursor(self, hub: str) -> tuple[int, str] | None:
        """(the newest event seq ``hub`` confirmed it holds, the home id this home claimed its
        host with there), or None: never connected to that hub."""
        rows = await self._all("SELECT seq, home_id FROM hub_cursor WHERE hub=?", (hub,))
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    async def hub_commands(self, hub: str, cid: str | None = None, unshipped: bool = False) -> list[dict[str, Any]]:
        """The commands of ``hub`` this home applied (:meth:`record_hub_command`): command
        ``cid`` only (None: all), only those whose outcome is not yet on the hub with
        ``unshipped``; each ``id``, ``seq``, ``kind``, ``state``, ``reason``, ``result`` (JSON
        text or None), ``applied_at``, ``shipped_at``; by seq."""
        rows = await self._all(
            "SELECT id, seq, kind, state, reason, result, applied_at, shipped_at FROM hub_commands WHERE hub=?"
            " AND (? IS NULL OR id=?) AND (? = 0 OR shipped_at IS NULL) ORDER BY seq", (hub, cid, cid, int(unshipped)))
        keys = ("id", "seq", "kind", "state", "reason", "result", "applied_at", "shipped_at")
        return [dict(zip(keys, r)) for r in rows]

    async def _small(self, sql: str, args: tuple = ()) -> list[tuple]:
        """The rows of one small read: at once on the event loop's thread where it can be
        (:meth:`_now`), else on the reader connection (:meth:`_all`)."""
        rows = self._now(sql, args)
        return rows if rows is not None else await self._all(sql, args)

    async def last_event_seq(self) -> int:
        """The newest event's ``seq`` (0: none yet): the index's end (a small read,
        :meth:`_small`)."""
        (e,), = await self._small("SELECT COALESCE(MAX(seq), 0) FROM events")
        return int(e)

    async def events_of_kind(self, kind: str | tuple[str, ...], after: int, upto: int,
                             limit: int = 1000) -> list[Event]:
        """The events of ``kind`` (one kind, or a tuple of kinds) with ``after < seq <= upto``,
        oldest first (at most ``limit``): a range of the primary key, so a reader that moves
        ``after`` on reads each row once (a small read, :meth:`_small`: a range of a few new
        events after a commit)."""
        kinds = (kind,) if isinstance(kind, str) else kind
        rows = await self._small(
            "SELECT seq, kind, builder, session_id, at, data FROM events WHERE seq>? AND seq<=?"
            f" AND kind IN ({','.join('?' * len(kinds))}) ORDER BY seq LIMIT ?", (after, upto, *kinds, limit))
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

    async def running_subagents(self) -> list[Subagent]:
        """Every running subagent (:class:`hookd.models.Subagent`), oldest first, with what it
        waits on: its pending interactions (same session and agent id), oldest first."""
        pending: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for sid, agent, iid, kind in await self._all(
                "SELECT session_id, agent_id, id, kind FROM interactions WHERE state='pending' AND agent_id IS NOT NULL"
                " ORDER BY created_at"):
            pending.setdefault((sid, agent), []).append((iid, kind))
        out = []
        for sid, agent, b, agent_type, started in await self._all(
                "SELECT session_id, agent_id, builder, agent_type, started_at FROM subagents WHERE state='running'"
                " ORDER BY started_at"):
            mine = pending.get((sid, agent), [])
            waiting = ("working" if not mine else "waiting_permission" if mine[0][1] in PROMPT_KINDS
                       else "waiting_question")
            out.append(Subagent(builder=b, session_id=sid, agent_id=agent, agent_type=agent_type, state="running",
                                started_at=started, waiting=waiting, pending=tuple(i for i, _ in mine)))
        return out

    async def hooks_changed(self) -> dict[str, dict[str, Any]]:
        """Every builder whose hooks stopped working (:mod:`hookd.core.hookhealth`) -> its
        warning (``since``, UNIX seconds, and what the warning says)."""
        return {b: {**_dec.decode(data), "since": since}
                for b, since, data in await self._all("SELECT builder, since, data FROM hooks_changed")}

    async def newest_transcripts(self, builder: str | None = None) -> dict[str, str]:
        """builder -> the transcript path its newest session reported (of ``builder`` only,
        when given): where that agent's Claude Code keeps its config
        (:func:`hookd.spawn.hooksoff.user_config_dir`)."""
        where, args = ("AND builder=?", (builder,)) if builder is not None else ("", ())
        # (one row per builder: SQLite gives a bare column the values of the MAX's row)
        rows = await self._all("SELECT builder, transcript_path, MAX(started_at) FROM sessions"
                               f" WHERE transcript_path IS NOT NULL {where} GROUP BY builder", args)
        return {b: p for b, p, _ in rows}

    async def builder_known(self, builder: str) -> bool:
        return bool(await self._all("SELECT 1 FROM builders WHERE id=?", (builder,)))

    async def runs(self, builder: str | None = None) -> list[Run]:
        """The newest run (:class:`hookd.models.Run`) of each builder hookd started an agent
        for (or of ``builder`` only), by builder."""
        where, args = ("WHERE builder=?", (builder,)) if builder is not None else ("", ())
        return [run_of(r) for r in await self._all(
            f"SELECT {RUN_COLS} FROM runs WHERE id IN (SELECT MAX(id) FROM runs {where} GROUP BY builder)"
            " ORDER BY builder", args)]

    async def run(self, run_id: int) -> Run | None:
        """Run ``run_id`` (:class:`hookd.models.Run`), or None."""
        rows = await self._all(f"SELECT {RUN_COLS} FROM runs WHERE id=?", (run_id,))
        return run_of(rows[0]) if rows else None

    async def _any(self, sql: str) -> bool:
        """Whether ``sql`` (an indexed look, ``LIMIT 1``) finds a row: on the event loop's
        thread where it can be (:meth:`_now`), so that a periodic pass with nothing to do costs
        no trip to the reader's thread."""
        rows = self._now(sql)
        if rows is None:
            rows = await self._all(sql)
        return bool(rows)

    async def any_pending(self) -> bool:
        """Whether any interaction is pending (index ``interactions_state``)."""
        return await self._any("SELECT 1 FROM interactions WHERE state='pending' LIMIT 1")

    async def any_live_run(self) -> bool:
        """Whether any run is not yet stopped (index ``runs_live``)."""
        return await self._any("SELECT 1 FROM runs WHERE stopped_at IS NULL LIMIT 1")

    async def live_runs(self) -> list[Run]:
        """Every run not yet stopped, oldest first."""
        return [run_of(r) for r in await self._all(f"SELECT {RUN_COLS} FROM runs WHERE stopped_at IS NULL ORDER BY id")]

    async def last_hook(self, builder: str) -> tuple[float, str | None] | None:
        """``builder``'s newest hook: (received at, UNIX seconds; its session id or None), or
        None when none came (index-only: ``hook_events_builder``)."""
        rows = await self._all("SELECT received_at, session_id FROM hook_events WHERE builder=? ORDER BY id DESC LIMIT 1",
                               (builder,))
        return (rows[0][0], rows[0][1]) if rows else None

    async def message_scope(self, builder: str, session_id: str | None, agent_id: str | None) -> dict[str, Any]:
        """What a message for ``builder`` scoped to ``session_id`` / ``agent_id`` waits on:
        ``session`` (:func:`hookd.store.inbox.session_scope`) and ``subagent``
        (:func:`hookd.store.inbox.subagent_scope`), each None when not given or unknown."""
        out: dict[str, Any] = {"session": None, "subagent": None}
        if session_id is not None:
            rows = await self._all(SESSION_SCOPE_SQL, (session_id, builder, builder, session_id))
            out["session"] = session_scope(rows[0] if rows else None)
        if agent_id is not None:
            rows = await self._all(SUBAGENT_SCOPE_SQL, (builder, agent_id, session_id, session_id))
            out["subagent"] = subagent_scope(rows[0] if rows else None)
        return out

    async def last_session(self, builder: str) -> dict[str, Any] | None:
        """``builder``'s newest session (by when it started): ``session_id``, ``harness``,
        ``ended_at``, ``agent_pid``, ``agent_started_at``, ``cwd``; None when it has none."""
        rows = await self._all("SELECT id, harness, ended_at, agent_pid, agent_started_at, cwd FROM sessions WHERE builder=?"
                               " ORDER BY started_at DESC, rowid DESC LIMIT 1", (builder,))
        if not rows:
            return None
        return dict(zip(("session_id", "harness", "ended_at", "agent_pid", "agent_started_at", "cwd"), rows[0]))
