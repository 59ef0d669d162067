"""The agents hookd started, watched (issue 23): every ``liveness_s`` seconds, each run not yet
stopped whose process is gone is recorded as exited (:meth:`hookd.core.runs.Runs.exited`:
``builder_stopped`` with reason ``exited``, the builder's open sessions ended, its lane
``ended``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from hookd.core.procs import process_alive
from hookd.models import StorageUnavailable

log = logging.getLogger("hookd")


class RunWatch:
    """Watches ``core``'s live runs (:class:`hookd.core.Hookd`); ``liveness_s``: seconds
    between two looks at their processes."""

    def __init__(self, core: Any, liveness_s: float):
        self.core = core
        self.liveness_s = liveness_s

    async def sweep(self) -> int | None:
        """Record each live run whose process is gone as exited; returns how many were (None:
        there was no live run)."""
        n = 0
        if not await self.core.store.any_live_run():
            return None  # no run: nothing more to read (no trip to the reader's thread)
        for run in await self.core.store.live_runs():
            if not await asyncio.to_thread(process_alive, run.pid, run.pid_started_at):
                await self.core.runs.exited(run)
                n += 1
        return n

    async def run(self, stop: asyncio.Event) -> None:
        """Sweep every ``liveness_s`` seconds until ``stop``; with no live run, sleep until one
        is recorded (``core.runs.run_recorded``: no wake-up of an idle daemon)."""
        recorded = self.core.runs.run_recorded
        while not stop.is_set():
            recorded.clear()  # (before the look: a run recorded during it wakes the wait below)
            found: int | None = 0
            try:
                found = await self.sweep()
            except StorageUnavailable:
                pass  # (the store logs the outage) swept again next time
            except Exception:
                log.exception("run sweep failed")
            if found is None:
                stopping = asyncio.ensure_future(stop.wait())
                started = asyncio.ensure_future(recorded.wait())
                try:
                    await asyncio.wait((stopping, started), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopping.cancel()
                    started.cancel()
                continue
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.liveness_s)
