"""The transaction's SQL about the agents hookd started (`hookd run`, `hookd continue`: the
:class:`hookd.store.Tx` part :class:`RunsTx`; issue 23)."""

from __future__ import annotations

from typing import Any

from hookd.models import Run
from hookd.store.base import TxPart
from hookd.store.rows import _dec, _enc

#: The columns of ``runs`` a :class:`hookd.models.Run` is read from, in its fields' order.
RUN_COLS = ("id, builder, harness, mode, pid, pid_started_at, tmux_socket, tmux_session, log_path, worktree,"
            " session_id, resumes, argv, started_at, stopped_at, stop_reason, stop_signal, agent_args, exit_status, hooks")


def run_of(row: tuple) -> Run:
    """A ``runs`` row (:data:`RUN_COLS`) as a :class:`hookd.models.Run`."""
    (id_, builder, harness, mode, pid, pid_started_at, tmux_socket, tmux_session, log_path, worktree, session_id,
     resumes, argv, started_at, stopped_at, stop_reason, stop_signal, agent_args, exit_status, hooks) = row
    return Run(id=id_, builder=builder, harness=harness, mode=mode, pid=pid, pid_started_at=pid_started_at,
               tmux_socket=tmux_socket, tmux_session=tmux_session, log_path=log_path, worktree=worktree,
               session_id=session_id, resumes=resumes, argv=_dec.decode(argv), started_at=started_at,
               stopped_at=stopped_at, stop_reason=stop_reason, stop_signal=stop_signal,
               agent_args=None if agent_args is None else _dec.decode(agent_args), exit_status=exit_status, hooks=hooks)


class RunsTx(TxPart):
    """Runs (table ``runs``, one row per agent hookd started) inside one write transaction.
    Times are UNIX seconds."""

    __slots__ = ()

    def insert_run(self, builder: str, r: dict[str, Any], at: float) -> Run:
        """Record a started agent: ``r`` holds :class:`hookd.models.Run`'s fields from
        ``harness`` to ``argv``, and ``agent_args`` (None: not known). Returns it with its id."""
        args = r.get("agent_args")
        cur = self._db.execute(
            "INSERT INTO runs (builder, harness, mode, pid, pid_started_at, tmux_socket, tmux_session, log_path,"
            " worktree, session_id, resumes, argv, started_at, agent_args) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (builder, r["harness"], r["mode"], r["pid"], r.get("pid_started_at"), r.get("tmux_socket"),
             r.get("tmux_session"), r.get("log_path"), r.get("worktree"), r.get("session_id"), r.get("resumes"),
             _enc.encode(list(r["argv"])), at, None if args is None else _enc.encode(list(args))))
        run = self.run_by_id(int(cur.lastrowid or 0))
        assert run is not None
        return run

    def run_by_id(self, run_id: int) -> Run | None:
        row = self._one(f"SELECT {RUN_COLS} FROM runs WHERE id=?", (run_id,))
        return run_of(row) if row else None

    def live_run(self, builder: str) -> Run | None:
        """``builder``'s run not yet stopped (the newest), or None."""
        row = self._one(f"SELECT {RUN_COLS} FROM runs WHERE builder=? AND stopped_at IS NULL ORDER BY id DESC LIMIT 1",
                        (builder,))
        return run_of(row) if row else None

    def stop_run(self, run_id: int, at: float, reason: str, signal: str | None, exit_status: int | None = None) -> bool:
        """Mark run ``run_id`` stopped (once: False when it already was), with its exit status
        (None: not known) and the number of hooks its builder sent since it started."""
        cur = self._db.execute(
            "UPDATE runs SET stopped_at=?, stop_reason=?, stop_signal=?, exit_status=?,"
            " hooks=(SELECT COUNT(*) FROM hook_events h WHERE h.builder=runs.builder AND h.received_at >= runs.started_at)"
            " WHERE id=? AND stopped_at IS NULL",
            (at, reason, signal, exit_status, run_id))
        return cur.rowcount == 1

    def open_sessions(self, builder: str) -> list[str]:
        """``builder``'s sessions not ended, oldest first."""
        return [r[0] for r in self._db.execute(
            "SELECT id FROM sessions WHERE builder=? AND ended_at IS NULL ORDER BY started_at", (builder,)).fetchall()]
