"""hookd's two clocks: wall time for what is displayed, an elapsed timeline for windows.

Every record keeps the wall time (UNIX seconds) it happened at: that is what people read, and
it follows the system clock, steps included. Windows ("a PermissionRequest within 120 s of its
PreToolUse", "redeliver 300 s after delivery", a lane's thresholds) are measured on
:meth:`Clock.mono` instead: seconds on a timeline that a clock step (NTP, a manual ``date``, a
VM resumed with a stale clock) never moves.

The timeline is ``CLOCK_BOOTTIME`` (monotonic, counting suspend, so a laptop asleep for an hour
has waited an hour) plus an offset recorded per boot in the database (``clock_boots``, keyed by
the kernel's boot id; :mod:`hookd.store.timeline`): daemon restarts within one boot continue the same timeline, so windows
stored in SQLite cross restarts unchanged. The first start of a boot anchors its offset so
that the timeline reads the wall time then (never less than the newest stamp of an earlier
boot: the timeline never runs backwards); across a reboot, the wall clock is the only evidence
of the time that passed. Stamps written before the timeline existed are their wall times.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def span(seconds: float) -> str:
    """A span of ``seconds`` for a human, rounded down to its two largest units: ``12s``,
    ``55m``, ``2h03m``, ``3d04h`` (under a minute in seconds, under an hour in minutes; a
    negative span, a clock step, is ``0s``). The one formatter of the durations hookd shows
    (the CLI, the lanes' details)."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    m = s // 60
    if m < 60:
        return f"{m}m"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def detail_now(detail: str | None, waited: str | None, waiting_since: float | None, now: float) -> str | None:
    """A lane's ``detail`` read at ``now`` (UNIX seconds) rather than when it was made: its
    wait (``waited``, the :func:`span` it says, counted from ``waiting_since``) said again as
    of ``now``. A detail with no wait, or whose wait it does not say, is returned as it is.
    For copies of a detail kept and read later (the hub's lanes, from ``lane_changed``)."""
    if detail is None or waited is None or waiting_since is None:
        return detail
    said = f" for {waited}"
    head, found, tail = detail.partition(said)
    return f"{head} for {span(now - waiting_since)}{tail}" if found else detail


def when(ts: float | None) -> str:
    """UNIX seconds ``ts`` as local date and time with the zone's offset from UTC, to the
    second: ``2026-12-02 19:40:01 +01:00`` (``+00:00`` on a machine set to UTC), ``-`` for None.
    The one formatter of the times hookd shows a person (the CLI, the lanes' details);
    ``--json`` and the API keep UNIX seconds."""
    if ts is None:
        return "-"
    t = time.localtime(ts)
    off = t.tm_gmtoff or 0
    sign = "-" if off < 0 else "+"
    h, m = divmod(abs(off) // 60, 60)
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', t)} {sign}{h:02d}:{m:02d}"


def boottime() -> float:
    """Seconds since boot, counting suspend (``CLOCK_BOOTTIME``; ``time.monotonic`` where the
    platform has none)."""
    clock = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(clock) if clock is not None else time.monotonic()


def boot_id() -> str:
    """The kernel's id of this boot (Linux); elsewhere an id of this process (windows then
    restart with the daemon, measured on the wall clock across a restart)."""
    try:
        with open(_BOOT_ID, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return _PROCESS_BOOT


_PROCESS_BOOT = f"process-{uuid.uuid4()}"


class Clock:
    """Wall time (:meth:`wall`) and the elapsed timeline (:meth:`mono`), both in seconds.

    wall, boottime, boot: where the readings come from (injectable: tests step the wall clock
    or move the timeline without touching the system's). :attr:`offset` is this boot's, read or
    recorded in the database by :func:`hookd.store.timeline.attach`; until then the timeline is
    anchored to the wall clock of this process's first reading."""

    def __init__(self, wall: Callable[[], float] = time.time, boottime: Callable[[], float] = boottime,
                 boot: Callable[[], str] = boot_id):
        self._wall, self._boottime, self._boot = wall, boottime, boot
        self.offset = self._wall() - self._boottime()

    def wall(self) -> float:
        """UNIX seconds, as the system clock says now (displayed times)."""
        return self._wall()

    def mono(self) -> float:
        """Seconds on hookd's timeline (windows): unaffected by clock steps."""
        return self._boottime() + self.offset

    def stamp(self, at: float) -> float:
        """The timeline value of a moment reported as wall time ``at`` (a spooled hook's
        receipt): now less the wall time since then, never later than now."""
        return self.mono() - max(0.0, self._wall() - at)

    def boot(self) -> str:
        """The id of the boot this timeline belongs to (:func:`boot_id`)."""
        return self._boot()

    def since_boot(self) -> float:
        """Seconds since boot (:func:`boottime`), the timeline less its :attr:`offset`."""
        return self._boottime()
