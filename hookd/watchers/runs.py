"""The agents hookd started, watched (issue 23): each run not yet stopped whose process is gone
is recorded as exited (:meth:`hookd.core.runs.Runs.exited`: ``builder_stopped`` with reason
``exited``, the builder's open sessions ended, its lane ``ended``), when the kernel tells its
exit (:class:`hookd.watchers.exits.ExitWatch`) or, for a run whose exit it cannot tell, at the
next look every ``liveness_s`` seconds."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from hookd.core.procs import process_alive
from hookd.models import StorageUnavailable
from hookd.watchers.exits import ExitWatch

log = logging.getLogger("hookd")


class RunWatch:
    """Watches ``core``'s live runs (:class:`hookd.core.Hookd`); ``liveness_s``: seconds
    between two looks at their processes."""

    def __init__(self, core: Any, liveness_s: float):
        self.core = core
        self.liveness_s = liveness_s
        self._exited = asyncio.Event()  # a watched run's process has exited
        self._exits = ExitWatch(process_alive, lambda _: self._exited.set())
        self._watching = False  # (pidfds only while :meth:`run` runs)
        self.unwatched = 0  # live runs at the last sweep whose exit the kernel does not tell

    async def sweep(self) -> int | None:
        """Record each live run whose process is gone as exited; returns how many were (None:
        there was no live run). A live run is watched from then on where it can be."""
        n = unwatched = 0
        if not await self.core.store.any_live_run():
            self.unwatched = 0
            return None  # no run: nothing more to read (no trip to the reader's thread)
        for run in await self.core.store.live_runs():
            agent = (run.pid, run.pid_started_at)
            if self._exits.watching(agent):
                continue
            if not self._exits.check(agent, watch=self._watching):
                await self.core.runs.exited(run)
                n += 1
            elif not self._exits.watching(agent):
                unwatched += 1
        self.unwatched = unwatched
        return n

    async def run(self, stop: asyncio.Event) -> None:
        """Sweep until ``stop``: when a run is recorded, when a watched run's process exits,
        and every ``liveness_s`` seconds while a live run's exit cannot be watched; with every
        live run watched, or none, no wake-up of the daemon until one of those happens."""
        self._watching = True
        try:
            await self._run(stop)
        finally:
            self._watching = False
            self._exits.close()

    async def _run(self, stop: asyncio.Event) -> None:
        recorded = self.core.runs.run_recorded
        while not stop.is_set():
            recorded.clear()  # (before the look: a run recorded during it wakes the wait below)
            self._exited.clear()
            found: int | None = 0
            failed = True  # (a sweep that failed is tried again liveness_s later)
            try:
                found = await self.sweep()
                failed = False
            except StorageUnavailable:
                pass  # (the store logs the outage) swept again next time
            except Exception:
                log.exception("run sweep failed")
            timeout = self.liveness_s if failed or (found is not None and self.unwatched) else None
            waits = [asyncio.ensure_future(e.wait()) for e in (stop, recorded, self._exited)]
            try:
                await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
