"""The transaction's SQL about subagents: each subagent of a builder's agent, running or
ended (the :class:`hookd.store.Tx` part :class:`SubagentsTx`; issue 21 moment 5)."""

from __future__ import annotations

from hookd.store.base import TxPart


class SubagentsTx(TxPart):
    """Subagents (table ``subagents``, one row per session and agent id), inside one write
    transaction. Times are UNIX seconds."""

    __slots__ = ()

    def agent_type(self, session_id: str, agent_id: str) -> str | None:
        """What kind of agent subagent ``agent_id`` of the session is, as its hooks said
        (``general-purpose``); None when not known."""
        row = self._one("SELECT agent_type FROM subagents WHERE session_id=? AND agent_id=?", (session_id, agent_id))
        return row[0] if row else None

    def subagent_running(self, builder: str, session_id: str, agent_id: str, agent_type: str | None,
                         at: float) -> str | None:
        """A hook of subagent ``agent_id`` came: it runs. Returns ``"started"`` when hookd
        did not know it, ``"restarted"`` when it had ended (its agent was continued), None when
        it was already running (its ``agent_type`` filled in if it was not known)."""
        row = self._one("SELECT state, agent_type FROM subagents WHERE session_id=? AND agent_id=?",
                        (session_id, agent_id))
        if row is None:
            self._db.execute(
                "INSERT INTO subagents (session_id, agent_id, builder, agent_type, state, started_at)"
                " VALUES (?, ?, ?, ?, 'running', ?)", (session_id, agent_id, builder, agent_type, at))
            return "started"
        if row[0] == "running":
            if row[1] is None and agent_type is not None:
                self._db.execute("UPDATE subagents SET agent_type=? WHERE session_id=? AND agent_id=?",
                                 (agent_type, session_id, agent_id))
            return None
        self._db.execute(
            "UPDATE subagents SET state='running', started_at=?, ended_at=NULL, end_reason=NULL,"
            " agent_type=COALESCE(?, agent_type) WHERE session_id=? AND agent_id=?",
            (at, agent_type, session_id, agent_id))
        return "restarted"

    def subagent_stopped(self, builder: str, session_id: str, agent_id: str, agent_type: str | None,
                         transcript_path: str | None, at: float) -> bool:
        """Subagent ``agent_id`` stopped (its stop hook): ended, ``stopped``. A subagent hookd
        did not know is recorded as started then. Returns False when it had already ended (a
        second copy of the hook)."""
        self._db.execute(
            "INSERT INTO subagents (session_id, agent_id, builder, agent_type, state, started_at)"
            " VALUES (?, ?, ?, ?, 'running', ?) ON CONFLICT DO NOTHING", (session_id, agent_id, builder, agent_type, at))
        cur = self._db.execute(
            "UPDATE subagents SET state='ended', ended_at=?, end_reason='stopped',"
            " transcript_path=COALESCE(?, transcript_path) WHERE session_id=? AND agent_id=? AND state='running'",
            (at, transcript_path, session_id, agent_id))
        return cur.rowcount > 0

    def end_subagents(self, session_id: str, at: float) -> list[tuple[str, str | None]]:
        """The session ended: its subagents still running end too (``session_ended``: no stop
        hook of theirs came). Returns their (agent_id, agent_type), in the order they started."""
        rows = self._db.execute(
            "SELECT agent_id, agent_type FROM subagents WHERE session_id=? AND state='running' ORDER BY started_at",
            (session_id,)).fetchall()
        if rows:
            self._db.execute(
                "UPDATE subagents SET state='ended', ended_at=?, end_reason='session_ended'"
                " WHERE session_id=? AND state='running'", (at, session_id))
        return [(r[0], r[1]) for r in rows]
