"""The transaction's SQL about the inbox: messages queued, delivered at a boundary,
adopted (the :class:`hookd.store.Tx` part :class:`InboxTx`)."""

from __future__ import annotations

from typing import Any

from hookd.models import InboxMessage
from hookd.store.base import TxPart
from hookd.store.rows import _MESSAGE_COLS, _message


#: A session of a builder as a message's scope (:func:`session_scope`): its end (None: it
#: runs, or hookd only gave that id to an agent it started), whether it is the builder's newest.
SESSION_SCOPE_SQL = (
    "SELECT s.ended_at, s.id=(SELECT n.id FROM sessions n WHERE n.builder=s.builder"
    " ORDER BY n.started_at DESC, n.rowid DESC LIMIT 1) FROM sessions s WHERE s.id=? AND s.builder=?"
    " UNION ALL SELECT NULL, 0 FROM runs WHERE builder=? AND session_id=? LIMIT 1")
#: A subagent of a builder as a message's scope (:func:`subagent_scope`): its newest row (in
#: session ``?`` when that is not NULL).
SUBAGENT_SCOPE_SQL = (
    "SELECT session_id, agent_type, state, end_reason, ended_at FROM subagents WHERE builder=? AND agent_id=?"
    " AND (? IS NULL OR session_id=?) ORDER BY started_at DESC LIMIT 1")
_SUBAGENT_KEYS = ("session_id", "agent_type", "state", "end_reason", "ended_at")


def session_scope(row: tuple | None) -> dict[str, Any] | None:
    """:data:`SESSION_SCOPE_SQL`'s first row as ``{"ended_at": UNIX seconds | None, "newest":
    bool}``; None: hookd never saw that session of the builder (no hook, transcript or run)."""
    return None if row is None else {"ended_at": row[0], "newest": bool(row[1])}


def subagent_scope(row: tuple | None) -> dict[str, Any] | None:
    """:data:`SUBAGENT_SCOPE_SQL`'s row as ``session_id``, ``agent_type``, ``state``
    (``running`` | ``ended``), ``end_reason`` (``stopped`` | ``session_ended`` | None) and
    ``ended_at``; None: no hook of that subagent reached hookd."""
    return None if row is None else dict(zip(_SUBAGENT_KEYS, row))


class InboxTx(TxPart):
    """Inbox messages, inside one write transaction."""

    __slots__ = ()

    def scope_refusal(self, builder: str, session_id: str | None, agent_id: str | None) -> str | None:
        """Why a message for ``builder`` scoped to ``session_id`` / ``agent_id`` could never be
        delivered, or None when it can: a session hookd never saw for that builder (no hook,
        transcript or run of it named it), or a subagent no hook of that builder (in that
        session, when one is given) came from. The words of a NotFound."""
        if session_id is not None and session_scope(self._one(
                SESSION_SCOPE_SQL, (session_id, builder, builder, session_id))) is None:
            newest = self._one("SELECT id FROM sessions WHERE builder=? ORDER BY started_at DESC, rowid DESC LIMIT 1",
                               (builder,))
            known = f"its newest session is {newest[0]}" if newest else f"{builder} has had no session yet: send without --session"
            return (f"{builder} has no session {session_id!r} that hookd knows (no hook, transcript or run of"
                    f" {builder} named it), so the message would never be delivered; {known}")
        if agent_id is not None and subagent_scope(self._one(
                SUBAGENT_SCOPE_SQL, (builder, agent_id, session_id, session_id))) is None:
            rows = self._db.execute(
                "SELECT agent_id, agent_type FROM subagents WHERE builder=? AND state='running'"
                " AND (? IS NULL OR session_id=?) ORDER BY started_at LIMIT 6", (builder, session_id, session_id)).fetchall()
            names = ", ".join(a + (f" ({t})" if t else "") for a, t in rows[:5]) + (", ..." if len(rows) > 5 else "")
            running = f"its running subagents: {names}" if rows else f"no subagent of {builder} runs now"
            where = f" in session {session_id}" if session_id is not None else ""
            return (f"{builder} has no subagent {agent_id!r}{where} that hookd knows (no hook of {builder}'s came"
                    f" from it), so the message would never be delivered; {running} (hookd lanes --json lists them)")
        return None

    # inbox ---------------------------------------------------------------------------
    def message_by_key(self, builder: str, key: str) -> InboxMessage | None:
        row = self._one(f"SELECT {_MESSAGE_COLS} FROM inbox_messages WHERE builder=? AND idem_key=?", (builder, key))
        return _message(row) if row else None

    def message(self, message_id: str) -> InboxMessage | None:
        row = self._one(f"SELECT {_MESSAGE_COLS} FROM inbox_messages WHERE id=?", (message_id,))
        return _message(row) if row else None

    def cancel_message(self, message_id: str, at: float) -> bool:
        """Take back a still queued message (``cancelled``, ``cancelled_at``): no delivery,
        redelivery or wake query selects it again. False when it is not queued."""
        cur = self._db.execute("UPDATE inbox_messages SET state='cancelled', cancelled_at=? WHERE id=? AND state='queued'",
                               (at, message_id))
        return cur.rowcount == 1

    def insert_message(
        self, *, builder: str, session_id: str | None, agent_id: str | None, author: str,
        text: str, key: str | None, at: float, answer_to: str | None = None,
    ) -> InboxMessage:
        """Queue a message; its id is ``m-<n>``, n counting every message of this store.
        ``answer_to``: the interaction whose answer it keeps (hookd made it of a human's answer)."""
        cur = self._db.execute(
            "INSERT INTO inbox_messages (id, builder, session_id, agent_id, author, text, idem_key, state, created_at,"
            " created_mono, answer_to)"
            " VALUES ('m-' || (SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox_messages), ?,?,?,?,?,?,'queued',?,?,?)",
            (builder, session_id, agent_id, author, text, key, at, self._tx.mono, answer_to),
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
            self._inbox.drained(self._tx, builder)  # none live at all, in any scope
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

    def requeue_never_used(self, session_id: str) -> list[str]:
        """Put back in the queue the messages delivered to ``session_id``, not adopted, after
        whose delivery the session did nothing more of its agent's (no hook of a prompt, a tool
        or a turn's end): the context that carried them never reached a model request (a
        SessionStart's, in a session that ends before any turn). Returns their ids, FIFO."""
        ids = [r[0] for r in self._db.execute(
            "SELECT m.id FROM inbox_messages m WHERE m.state='delivered' AND m.delivered_session_id=?"
            " AND NOT EXISTS (SELECT 1 FROM hook_events h WHERE h.session_id=? AND h.received_at>=m.delivered_at"
            "  AND h.hook_kind IN ('prompt', 'tool_before', 'permission', 'tool_after', 'turn_end', 'subagent_end'))"
            " ORDER BY m.seq", (session_id, session_id)).fetchall()]
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
            [(at, self._tx.mono, hook_event_id, session_id, via, i) for i in ids],
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
