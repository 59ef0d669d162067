"""The agents hookd starts (`hookd run`, `hookd continue`; issue 23): the CLI starts the
process (a tmux session on hookd's own tmux server, or the harness's print mode) and tells the
daemon here, which records it (table ``runs``, event ``builder_started``), refuses a second live
session of a builder, and records its end (``builder_stopped``: `hookd stop`, which the daemon carries out, or the
process seen gone by :mod:`hookd.watchers.runs`), ending the builder's open sessions so its lane is
``ended``.

Events: ``builder_started`` ``{run, harness, mode, pid, tmux_session, log_path, worktree,
session_id, resumes}``; ``builder_stopped`` ``{run, pid, reason, signal, actor, sessions,
exit_status, hooks}`` (reason ``stopped`` or ``exited``; sessions: those it ended; exit_status:
the agent's, None when not known (:func:`hookd.core.procs.exit_status`); hooks: how many its
builder sent during the run, 0 when it ended before its first hook)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec

from hookd.core import subagents
from hookd.core.bus import EventBus
from hookd.core.procs import close_pane, exit_status, process_alive, stop_process
from hookd.models import Conflict, NotFound, Run
from hookd.store import Store, Tx


class Runs:
    """Started agents over ``store`` (``bus``: wakes the lanes and followers after each change).
    ``orphan(builder, session_id, why)``: closes what a session whose agent is gone left pending
    (:meth:`hookd.core.policy.Policy.orphan`), called for the builder's sessions once its run
    stopped or exited. ``exits``: the folder where a headless agent's wrapper leaves its exit
    status (:func:`hookd.runner.start_headless`); None: not looked for."""

    def __init__(self, store: Store, bus: EventBus, orphan: Callable[[str, str, str], Awaitable[Any]],
                 exits: Path | None = None):
        self.store = store
        self.bus = bus
        self.orphan = orphan
        self.exits = exits
        #: the runs `hookd stop` is stopping now, by id (:meth:`stopping_pid`,
        #: :meth:`stopping_builder`: the stop records their end)
        self._stopping: dict[int, Run] = {}
        #: a run's exit being recorded now (by id): a second look that finds it gone meanwhile
        #: (the run watch, `hookd ls`) waits for that record instead of reading the exit status
        #: again (the headless wrapper's file is removed once read: a second reader got None)
        self._ending: dict[int, asyncio.Future[Run | None]] = {}
        #: set once a run is recorded (:meth:`started`): the run watch, with no live run to
        #: look at, waits for it (:class:`hookd.watchers.runs.RunWatch`)
        self.run_recorded = asyncio.Event()

    async def _alive(self, pid: int | None, started_at: float | None) -> bool:
        return bool(pid) and await asyncio.to_thread(process_alive, pid or 0, started_at)

    async def live(self, builder: str) -> dict[str, Any] | None:
        """What makes ``builder`` live: its run whose process is alive (``{"run", "pid",
        "session_id"}``), else its newest session not ended whose agent process is alive (an
        agent started by hand: ``run`` None), else None. A run whose process is gone is
        recorded as exited on the way (:meth:`exited`)."""
        runs = await self.store.runs(builder)
        run = runs[0] if runs else None
        if run is not None and run.stopped_at is None:
            if await self._alive(run.pid, run.pid_started_at):
                return {"run": msgspec.structs.replace(run, alive=True), "pid": run.pid, "session_id": run.session_id}
            await self.exited(run)
        s = await self.store.last_session(builder)
        if s is not None and s["ended_at"] is None and await self._alive(s["agent_pid"], s["agent_started_at"]):
            return {"run": None, "pid": s["agent_pid"], "session_id": s["session_id"]}
        return None

    async def view(self, builder: str) -> dict[str, Any]:
        """``builder``'s newest run (``alive`` filled in) or None, what makes it live
        (:meth:`live`), its last session (:meth:`hookd.store.Store.last_session`) and
        ``refusal``: why another session would be refused (None: it would not), for
        ``GET /v1/builders/{builder}/run``."""
        live = await self.live(builder)
        runs = await self.store.runs(builder)
        run = runs[0] if runs else None
        if run is not None:
            run = msgspec.structs.replace(run, alive=run.stopped_at is None and await self._alive(run.pid, run.pid_started_at))
        return {"builder": builder, "run": run, "live": live, "last_session": await self.store.last_session(builder),
                "refusal": _live_text(builder, live) if live is not None else None}

    async def all(self) -> list[Run]:
        """Every builder's newest run, ``alive`` filled in (a process seen gone is recorded)."""
        out = []
        for run in await self.store.runs():
            alive = run.stopped_at is None and await self._alive(run.pid, run.pid_started_at)
            if run.stopped_at is None and not alive:
                run = await self.exited(run) or run
            out.append(msgspec.structs.replace(run, alive=alive))
        return out

    async def started(self, builder: str, r: dict[str, Any]) -> Run:
        """Record the agent the CLI started for ``builder`` (``r``: :class:`hookd.models.Run`'s
        fields from ``harness`` to ``argv``): event ``builder_started``; the run returned has
        ``alive`` filled in, as :meth:`all`'s. Raises Conflict when
        the builder is already live (:meth:`live`; the CLI then ends the process it started)."""
        live = await self.live(builder)
        if live is not None and live["pid"] != r["pid"]:
            raise Conflict(_live_text(builder, live))

        def tx_fn(tx: Tx) -> Run:
            other = tx.runs.live_run(builder)
            if other is not None and other.pid != r["pid"]:
                raise Conflict(_live_text(builder, {"run": other, "pid": other.pid, "session_id": other.session_id}))
            at = time.time()
            run = tx.runs.insert_run(builder, r, at)
            tx.append_event("builder_started", builder, run.session_id or run.resumes, at, {
                "run": run.id, "harness": run.harness, "mode": run.mode, "pid": run.pid,
                "tmux_session": run.tmux_session, "log_path": run.log_path, "worktree": run.worktree,
                "session_id": run.session_id, "resumes": run.resumes})
            return run

        run, _ = await self.store.write(tx_fn)
        self.run_recorded.set()
        await self.bus.publish()
        return msgspec.structs.replace(run, alive=await self._alive(run.pid, run.pid_started_at))

    async def stop(self, builder: str, *, timeout_s: float, actor: str) -> Run:
        """`hookd stop`: end ``builder``'s running agent (SIGTERM, then SIGKILL after
        ``timeout_s`` seconds: :func:`hookd.core.procs.stop_process`, off the loop), then record
        it ``stopped`` with the signal and ``actor``, the builder's open sessions ended (lane
        ``ended``), event ``builder_stopped``, then its tmux session closed (an agent that
        exits on its own keeps its last screen there instead, for `hookd attach`). The run watch
        leaves it alone meanwhile (it would record ``exited``). Raises NotFound when hookd never started it or it is not running."""
        runs = await self.store.runs(builder)
        run = runs[0] if runs else None
        if run is None:
            raise NotFound(f"{builder} was not started by hookd (hookd run {builder} starts it)")
        if run.stopped_at is not None or run.id in self._stopping:
            raise NotFound(f"{builder} is not running (hookd continue {builder} resumes it)")
        self._stopping[run.id] = run
        try:
            sig = await asyncio.to_thread(stop_process, run.pid, run.pid_started_at, timeout_s)
            ended = await self._end(builder, run.id, "stopped", sig, actor)
            await asyncio.to_thread(close_pane, run.tmux_socket, run.tmux_session)
        finally:
            self._stopping.pop(run.id, None)
        assert ended is not None
        return ended

    def stopping_builder(self, builder: str) -> bool:
        """Whether `hookd stop` is stopping ``builder``'s agent now (its held hooks going away
        are the stop's doing, not the desk's: :class:`hookd.core.holds.Holds`)."""
        return any(r.builder == builder for r in self._stopping.values())

    def stopping_pid(self, pid: int) -> bool:
        """Whether `hookd stop` is ending the agent ``pid`` now (the lanes watch does not take
        its exit for its death: the stop records it)."""
        return any(r.pid == pid for r in self._stopping.values())

    async def exited(self, run: Run) -> Run | None:
        """Run ``run``'s process is gone without `hookd stop`: recorded ``exited``, event
        ``builder_stopped`` (nothing while `hookd stop` is stopping it: that records it). Its
        builder's sessions still open (no SessionEnd came) are ended when it exited 0; an
        agent killed or failed (an error status, 128 + N for signal N), or whose status is not
        known (a killed agent's tmux pane can say nothing for seconds), leaves them to the
        lanes, which find its agent gone: ``dead``, what they asked closed ``orphaned`` and
        ``agent_dead`` notified, as for an agent hookd did not start."""
        if run.id in self._stopping:
            return None
        ending = self._ending.get(run.id)
        if ending is None:
            ending = self._ending[run.id] = asyncio.ensure_future(self._end(run.builder, run.id, "exited", None, None))
            ending.add_done_callback(lambda _: self._ending.pop(run.id, None))
        return await asyncio.shield(ending)

    async def _end(self, builder: str, run_id: int, reason: str, signal: str | None, actor: str | None) -> Run | None:
        known = await self.store.run(run_id)
        if known is not None and known.stopped_at is not None:
            return known  # (recorded already: its exit status was read then)
        status = None if known is None else await asyncio.to_thread(exit_status, known, self.exits)

        def tx_fn(tx: Tx) -> Run | None:
            run = tx.runs.run_by_id(run_id)
            if run is None or run.builder != builder:
                return None
            at = time.time()
            if not tx.runs.stop_run(run_id, at, reason, signal, status):
                return tx.runs.run_by_id(run_id)  # (already recorded)
            run = tx.runs.run_by_id(run_id)
            assert run is not None
            ended = []
            died = reason == "exited" and status != 0
            for sid in () if died else tx.runs.open_sessions(builder):
                if tx.sessions.end_session(sid, at, reason):
                    tx.append_event("session_ended", builder, sid, at, {"reason": reason, "via": "hookd"})
                    subagents.session_ended(tx, builder, sid, "hookd", at)
                    ended.append(sid)
            tx.append_event("builder_stopped", builder, run.session_id or run.resumes, at, {
                "run": run_id, "pid": run.pid, "reason": reason, "signal": signal, "actor": actor, "sessions": ended,
                "exit_status": run.exit_status, "hooks": run.hooks})
            return run

        run, events = await self.store.write(tx_fn)
        if events:
            await self.bus.publish()
            if reason == "exited" and status != 0:
                return run  # (the lanes find it dead: they close what it asked, and notify)
            # what its sessions left waiting on a human can no longer be answered: the agent is gone
            # (the session may have ended by its own SessionEnd hook as it exited)
            why = f"pid {run.pid} {'was stopped by hookd stop' if reason == 'stopped' else 'exited'}" if run else ""
            for sid in dict.fromkeys(i.session_id for i in await self.store.interactions("pending", 100_000)
                                     if i.builder == builder and i.session_id):
                await self.orphan(builder, sid, why)
        return run


def _live_text(builder: str, live: dict[str, Any]) -> str:
    """The refusal of a second live session of ``builder``: what is live, and what to do (only
    what works for it: `hookd attach` only reaches an interactive run, `hookd stop` only a run
    hookd started)."""
    run, pid = live.get("run"), live["pid"]
    head = f"{builder} already has a live session: pid {pid}"
    if run is None:
        return (f"{head} (started outside hookd, so hookd attach and hookd stop do not reach it); "
                f"end it yourself (exit the agent at its terminal, or kill {pid}), then run this again")
    if run.tmux_session:
        return (f"{head} in tmux session {run.tmux_session}; "
                f"attach to it (hookd attach {builder}) or stop it first (hookd stop {builder})")
    return f"{head} (headless, its output: {run.log_path}); stop it first (hookd stop {builder})"
