"""The notification of hooks that stopped working (issue 21, moment 6): once per warning.

:class:`HookAlerts` follows the event log from the daemon's start: a ``hooks_changed`` event
(:mod:`hookd.core.hookhealth`) raises one alert (rule ``hooks_changed``, no escalation: the
warning stays in `hookd status`, `hookd lanes` and the page until it clears), with the reason
and the command that restores the hooks; ``hooks_restored`` clears it. The step is claimed in
the store (:class:`hookd.watchers.notify.Notifier`), so a warning is sent once per channel.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from hookd.core.bus import BusFilter
from hookd.models import StorageUnavailable

log = logging.getLogger("hookd")

#: The event kinds this watcher acts on.
KINDS = ("hooks_changed", "hooks_restored")


def alert_key(builder: str, since: float) -> str:
    """The subject of one warning: the builder and when it began."""
    return f"lane:{builder}:hooks_changed:{since:.3f}"


class HookAlerts:
    """Alerts for ``core``'s ``hooks_changed`` events through ``notifier`` (the daemon's
    :class:`hookd.watchers.notify.Notifier`, or None: nothing is sent)."""

    def __init__(self, core: Any, notifier: Any):
        self.core = core
        self.notifier = notifier
        self._raised: dict[str, str] = {}  # builder -> its alert's key
        self._refused = False  # the store refused the last read of the log

    async def handle(self, kind: str, builder: str, session_id: str | None, at: float, data: dict[str, Any]) -> None:
        """Act on one event of :data:`KINDS`."""
        from hookd.watchers.notify_channels import Alert

        if self.notifier is None:
            return
        old = self._raised.get(builder)
        if old is not None:
            await self.notifier.clear(old)
            del self._raised[builder]  # (once cleared: a refused clear is tried again with the event)
        if kind != "hooks_changed":
            return
        key = alert_key(builder, at)
        fix = data.get("fix") or "spawn it again"
        alert = Alert(key=key, rule="hooks_changed", builder=builder, session_id=session_id,
                      title=f"hookd: {builder}'s hooks stopped working",
                      message=f"{builder}: {data.get('reason')}. hookd sees none of its questions, permission "
                              f"prompts or turns until they are back. To restore them: {fix}",
                      data={k: data.get(k) for k in ("signal", "reason", "fix", "settings_file", "missing", "changed")})
        await self.notifier.raise_alert(alert, escalate=False)
        self._raised[builder] = key

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: after each commit, the new events of :data:`KINDS` (from the log's end
        at start: a warning raised before a restart was notified then). With no notifier, or one
        with no channel (the default), nothing can be sent: it only waits for ``stop`` (a read of
        the log after every commit cost each hook two trips to the reader's thread for nothing;
        bench/daemon_cpu.py)."""
        if self.notifier is None or not self.notifier.config.channels:
            await stop.wait()
            return
        store = self.core.store
        # woken only by the commits that appended one of KINDS (or did not say what they
        # appended), and by any commit while a read the store refused waits to be tried again
        bus = self.core.bus.filtered(lambda events: self._refused or any(e.kind in KINDS for e in events))
        try:
            await self._follow(stop, store, bus)
        finally:
            self.core.bus.unfilter(bus)

    async def _follow(self, stop: asyncio.Event, store: Any, bus: BusFilter) -> None:
        seq: int | None = None
        while not stop.is_set() and not bus.closed:
            version = bus.version
            self._refused = False
            try:
                upto = await store.last_event_seq()  # one small read on the loop's thread
                if seq is None:
                    seq = upto
                while seq < upto:
                    evs = await store.events_of_kind(KINDS, seq, upto)
                    for e in evs:
                        if e.builder:
                            try:
                                await self.handle(e.kind, e.builder, e.session_id, e.at,
                                                  e.data if isinstance(e.data, dict) else {})
                            except StorageUnavailable:
                                raise  # its alert's write was refused: the cursor stays before it
                            except Exception:
                                log.exception("hooks_changed alert for %s failed", e.builder)  # not tried again
                        seq = e.seq
                    if len(evs) < 1000:
                        seq = upto
            except StorageUnavailable:
                self._refused = True  # (the store logs the outage) read again after the next commit
            except Exception:
                log.exception("hooks_changed alerts failed")
            await bus.wait(3600.0, since=version)
