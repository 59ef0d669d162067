"""The store's schema: numbered migrations, each applied once, recorded in the same
transaction that applies it (:func:`migrate`, run by :meth:`hookd.store.Store.open`)."""

from __future__ import annotations

import sqlite3
import time

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
        # Notifications (hookd.watchers.notify): one row per (subject key, escalation step, channel);
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
    (
        # What a hook event means (hookd.harness.base.HookKind), written at ingest from the
        # adapter's hook_kinds, so that readers (the lanes) act on the meaning, not on one
        # harness's names. Rows stored before this migration came from the three harnesses of
        # the time (claude-code, claw and claw-code-go, claw-http), which all spell these events
        # as Claude Code does: their kinds are filled in from that spelling, once.
        "0014_hook_kind",
        [
            "ALTER TABLE hook_events ADD COLUMN hook_kind TEXT",
            "UPDATE hook_events SET hook_kind = CASE hook_event_name"
            " WHEN 'SessionStart' THEN 'session_start' WHEN 'SessionEnd' THEN 'session_end'"
            " WHEN 'UserPromptSubmit' THEN 'prompt' WHEN 'Stop' THEN 'turn_end'"
            " WHEN 'SubagentStop' THEN 'subagent_end' WHEN 'PreToolUse' THEN 'tool_before'"
            " WHEN 'PermissionRequest' THEN 'permission' WHEN 'PostToolUse' THEN 'tool_after'"
            " WHEN 'PostToolUseFailure' THEN 'tool_after' WHEN 'Notification' THEN 'notice' END"
            " WHERE hook_event_name IN ('SessionStart', 'SessionEnd', 'UserPromptSubmit', 'Stop',"
            " 'SubagentStop', 'PreToolUse', 'PermissionRequest', 'PostToolUse', 'PostToolUseFailure',"
            " 'Notification')",
        ],
    ),
    (
        # An agent stopped by an error of the model's API (Claude Code's StopFailure): when,
        # and the error as JSON ({"error", "details", "message", "transient", "advice"}); the
        # last tool call refused without asking anyone (PermissionDenied): when, and its line.
        # For the session's lane.
        "0015_turn_failed",
        [
            "ALTER TABLE sessions ADD COLUMN failed_at REAL",
            "ALTER TABLE sessions ADD COLUMN failure TEXT",
            "ALTER TABLE sessions ADD COLUMN refused_at REAL",
            "ALTER TABLE sessions ADD COLUMN refused TEXT",
        ],
    ),
    (
        # The agent's last message to its human (Claude Code's PushNotification, or
        # SendUserMessage in brief mode: hookd.core.notices): when, and its first line. For
        # the session's lane.
        "0016_agent_notified",
        [
            "ALTER TABLE sessions ADD COLUMN notified_at REAL",
            "ALTER TABLE sessions ADD COLUMN notified TEXT",
        ],
    ),
    (
        # Subagents as lanes of their own (issue 21 moment 5): each subagent of a builder's
        # agent from its hooks (running, ended: by its stop hook or its session's end), and
        # the kind of agent that raised an interaction.
        "0017_subagents",
        [
            "CREATE TABLE subagents (session_id TEXT NOT NULL, agent_id TEXT NOT NULL, builder TEXT NOT NULL,"
            " agent_type TEXT, state TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,"
            " transcript_path TEXT, PRIMARY KEY (session_id, agent_id))",
            "CREATE INDEX subagents_running ON subagents (builder) WHERE state = 'running'",
            "ALTER TABLE interactions ADD COLUMN agent_type TEXT",
        ],
    ),
    (
        # a builder whose hooks stopped working (hookd.core.hookhealth): since when, and what
        # the warning says (JSON); one row per builder while it holds, deleted when it clears
        "0018_hooks_changed",
        [
            "CREATE TABLE hooks_changed (builder TEXT PRIMARY KEY, since REAL NOT NULL, data TEXT NOT NULL)",
        ],
    ),
    (
        # agents hookd started (`hookd run`, `hookd continue`: issue 23), one row per start:
        # the process (pid and its start time), its terminal (a tmux session on hookd's own
        # server) or log file, the session it was given or resumes; stopped_at once it was
        # stopped (`hookd stop`) or seen gone (hookd.watchers.runs)
        "0019_runs",
        [
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, builder TEXT NOT NULL, harness TEXT NOT NULL,"
            " mode TEXT NOT NULL, pid INTEGER NOT NULL, pid_started_at REAL, tmux_socket TEXT, tmux_session TEXT,"
            " log_path TEXT, worktree TEXT, session_id TEXT, resumes TEXT, argv TEXT NOT NULL,"
            " started_at REAL NOT NULL, stopped_at REAL, stop_reason TEXT, stop_signal TEXT)",
            "CREATE INDEX runs_builder ON runs (builder, id)",
            "CREATE INDEX runs_live ON runs (builder) WHERE stopped_at IS NULL",
        ],
    ),
    (
        # the hub's cursor (hookd.hub: issue 25): per hub (its URL without the password), the
        # newest event seq the hub confirmed it holds, and the id this home claimed its host's
        # row on that hub with (another home shipping as the same host is refused)
        "0020_hub_cursor",
        [
            "CREATE TABLE hub_cursor (hub TEXT PRIMARY KEY, seq INTEGER NOT NULL, at REAL NOT NULL, home_id TEXT NOT NULL)",
        ],
    ),
    (
        # two-way chat channels (issue 24: hookd.watchers.chat): each message posted in a chat
        # (an interaction with its buttons, or a lane's alert: a reply to it goes to the
        # builder) and the interaction's revision and input hash its buttons were made for,
        # choices the buttons' answers (JSON); every chat update handled, by its id, so a
        # retried delivery is handled once and polling resumes after the newest
        "0021_chat",
        [
            "CREATE TABLE chat_posts (id INTEGER PRIMARY KEY, channel TEXT NOT NULL, chat_id TEXT NOT NULL,"
            " message_id INTEGER NOT NULL, interaction_id TEXT, builder TEXT, revision INTEGER, input_hash TEXT,"
            " choices TEXT, posted_at REAL NOT NULL, ended_at REAL)",
            "CREATE UNIQUE INDEX chat_posts_interaction ON chat_posts (channel, interaction_id)"
            " WHERE interaction_id IS NOT NULL",
            "CREATE INDEX chat_posts_message ON chat_posts (channel, chat_id, message_id)",
            "CREATE TABLE chat_updates (channel TEXT NOT NULL, update_id INTEGER NOT NULL, handled_at REAL NOT NULL,"
            " PRIMARY KEY (channel, update_id))",
        ],
    ),
    (
        # how a run ended and what it was given (findings 2 and 3 of a new user): the agent's
        # arguments after `--` (JSON list; NULL for runs recorded before), its exit status
        # (NULL: not known) and how many hooks it sent before it ended (NULL: still running)
        "0022_run_exit",
        [
            "ALTER TABLE runs ADD COLUMN agent_args TEXT",
            "ALTER TABLE runs ADD COLUMN exit_status INTEGER",
            "ALTER TABLE runs ADD COLUMN hooks INTEGER",
        ],
    ),
    (
        # a chat post's answer in the making (issue 24: a question's parts chosen so far, a
        # multi-select's toggles, an elicitation's fields given: JSON, NULL none; cleared when
        # the interaction's revision changes) and the highest reminder step replied in its
        # thread (0: none), so each reminder goes once, across restarts
        "0023_chat_drafts",
        [
            "ALTER TABLE chat_posts ADD COLUMN draft TEXT",
            "ALTER TABLE chat_posts ADD COLUMN reminded INTEGER NOT NULL DEFAULT 0",
        ],
    ),
    (
        # the hub's commands this home applied (hookd.hub.commands: issue 25, down to hosts):
        # per hub (its URL without the password) and command id, the outcome (applied |
        # refused, why, what the answer or send path returned, JSON) and when it was written
        # back to the hub (NULL: not yet): a command is applied once, across restarts
        "0024_hub_commands",
        [
            "CREATE TABLE hub_commands (hub TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,"
            " state TEXT NOT NULL, reason TEXT, result TEXT, applied_at REAL NOT NULL, shipped_at REAL,"
            " PRIMARY KEY (hub, id))",
        ],
    ),
    (
        # A remote deny handed to a held hook, whose turn went on (a TurnMovedOn) before the
        # hook's client was seen to read it: adopted once that read is recorded
        # (hookd.core.holds.Holds._hook_delivered_tx; hookd.store.interactions).
        "0025_deny_moved_on",
        [
            "ALTER TABLE interactions ADD COLUMN moved_on_at REAL",
            "ALTER TABLE interactions ADD COLUMN moved_on_via TEXT",
        ],
    ),
    (
        # An ended session keeps only the failure that stopped its last turn (its lane says why
        # it stopped); one a later turn went past is forgotten, as SessionsTx.end_session does
        # from now on (its condition, spelled out: a migration's SQL never changes)
        "0026_ended_sessions_last_failure",
        [
            "UPDATE sessions SET failed_at=NULL, failure=NULL WHERE ended_at IS NOT NULL AND failed_at IS NOT NULL"
            " AND EXISTS (SELECT 1 FROM hook_events h WHERE h.session_id=sessions.id AND h.agent_id IS NULL"
            " AND h.received_at>sessions.failed_at AND COALESCE(h.hook_kind, '') NOT IN ('session_end', 'notice'))",
        ],
    ),
    (
        # The bytes just before a tailed file's cursor as the last read found them
        # (hookd.watchers.jsonl.Cursor.tail): a file written again under the same identity while
        # the daemon was down is read from its start, not from the cursor
        "0027_transcript_tail",
        [
            "ALTER TABLE transcripts ADD COLUMN tail BLOB",
        ],
    ),
    (
        # the interaction a message hookd kept a human's answer as belongs to
        # (hookd.core.outcomes.queue_answer): scoped to the question's session while it lives,
        # the builder's once it ended (hookd.store.sessions.Sessions.end_session)
        "0028_inbox_answer_to",
        [
            "ALTER TABLE inbox_messages ADD COLUMN answer_to TEXT",
        ],
    ),
]


def migrate(db: sqlite3.Connection) -> None:
    """Apply the migrations of :data:`MIGRATIONS` not yet recorded in ``db``'s ``migrations``
    table, in order, each in one ``BEGIN IMMEDIATE`` transaction. Raises what SQLite raises
    (that migration rolled back)."""
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
