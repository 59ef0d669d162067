"""When the transcript tailer reads a hooked session's transcript: once its hooks go quiet.

The transcript is the fallback for what hooks do not say (DESIGN.md, "Transcript tailing"):
while a session's hooks keep coming they say, as they happen, what its rows would say (its
tool calls, its questions, its turns). An agent's tool calls back to back change its transcript
several times a second, and each read of a change is a read and a transaction (the cursor
saved with what the rows recorded): about as much of the daemon's CPU as the hooks themselves
(bench/daemon_cpu.py). So a change of a followed file whose session had a live hook less than
``quiet_s`` ago is read once the session's hooks have been quiet for ``quiet_s``, or
``max_defer_s`` after the first change left unread, whichever comes first: one read and one
transaction for what a burst of tool calls appended (defaults 0.5 s and 2 s:
:attr:`hookd.settings.Settings.tail_quiet_ms`, ``tail_max_defer_ms``). What only the
transcript tells (an interrupt at the desk, text typed there, the proof that a queued message
reached the model, a fork, damaged rows) is then recorded up to that much later for a hooked
session; a session without hooks (``hookd tail``, hooks that stopped arriving) is read at once.
Nothing is saved later than before: a file's cursor is still saved in the transaction that
applies its rows, so rows left unread when the daemon dies are read from that cursor at the
next start, once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("hookd")

#: sessions remembered by :meth:`QuietReads.hook_arrived` before the quiet ones are dropped
HOOKS_AT_MAX = 1024
#: how early (seconds) a deferred read's timer may fire and still read: event loops fire
#: timers a little early (asyncio within its clock's resolution, uvloop in whole
#: milliseconds), and a timer re-armed for what is left would fire again and again (a wake-up
#: each)
TIMER_SLACK_S = 0.002


class QuietReads:
    """Defers the reads of hooked sessions' transcripts until their hooks go quiet.

    ``read(path)``: the read of one followed file (the tailer's ``poll``), handed to
    ``spawn`` (a coroutine to run as a task: :meth:`hookd.core.bus.Tasks.spawn`) when a
    deferred read is due; ``failed()``: called when that read raised (the tailer then catches
    every file up from its cursor). ``quiet_s``: how long a session's hooks must have been
    quiet (seconds); ``max_defer_s``: the longest a change waits (seconds)."""

    def __init__(self, read: Callable[[str], Awaitable[Any]], spawn: Callable[[Any], Any],
                 failed: Callable[[], None], *, quiet_s: float = 0.5, max_defer_s: float = 2.0):
        self.quiet_s = quiet_s
        self.max_defer_s = max_defer_s
        self._read = read
        self._spawn = spawn
        self._failed = failed
        #: session id -> the event loop's time (``loop.time()``, the clock its timers keep) of
        #: its last live hook
        self._hooks_at: dict[str, float] = {}
        #: files whose change waits: path -> (the loop's time of the first change left unread,
        #: the session, the timer of the read)
        self._deferred: dict[str, tuple[float, str, asyncio.TimerHandle]] = {}

    def hook_arrived(self, session_id: str) -> None:
        """A live hook of ``session_id`` has committed. Cheap: called on the hook path."""
        hooks_at = self._hooks_at
        now = asyncio.get_running_loop().time()
        if len(hooks_at) >= HOOKS_AT_MAX and session_id not in hooks_at:
            for sid in [s for s, t in hooks_at.items() if t < now - self.quiet_s]:  # only sessions still hooking matter
                del hooks_at[sid]
        hooks_at[session_id] = now

    def defer(self, path: str, session_id: str | None) -> bool:
        """Leave a change of followed ``path`` (``session_id``'s transcript; None: unknown)
        unread for now if that session's last live hook was less than ``quiet_s`` ago, and
        read it when it is due (see the module). Returns whether it was deferred (False: the
        caller reads it now)."""
        if path in self._deferred:
            return True  # a read of it is already due
        last = self._hooks_at.get(session_id) if session_id else None
        loop = asyncio.get_running_loop()
        now = loop.time()
        if session_id is None or last is None or now - last >= self.quiet_s:
            return False
        due = min(last + self.quiet_s, now + self.max_defer_s)
        timer = loop.call_at(due, self._due, path)
        self._deferred[path] = (now, session_id, timer)
        return True

    def _due(self, path: str) -> None:
        """The timer of a deferred read: read ``path`` now if its session's hooks have been quiet
        for ``quiet_s`` or it has waited ``max_defer_s``, else look again then."""
        entry = self._deferred.get(path)
        if entry is None:
            return
        first, sid, _ = entry
        loop = asyncio.get_running_loop()
        due = min(self._hooks_at.get(sid, 0.0) + self.quiet_s, first + self.max_defer_s)
        if loop.time() < due - TIMER_SLACK_S:  # a hook came since: later
            self._deferred[path] = (first, sid, loop.call_at(due, self._due, path))
            return
        del self._deferred[path]
        self._spawn(self._read_now(path))

    async def _read_now(self, path: str) -> None:
        try:
            await self._read(path)
        except Exception as e:  # the store refused it (StorageUnavailable): the cursor did not move
            log.warning("transcript %s: deferred read failed: %s", path, e)
            self._failed()

    async def flush(self) -> None:
        """Read every deferred file now (the tailer is stopping); one that fails is read from
        its cursor at the next start."""
        for path in self.cancel():
            try:
                await self._read(path)
            except Exception as e:
                log.warning("transcript %s: not read before stopping: %s", path, e)

    def waiting(self, path: str) -> bool:
        """Whether a read of ``path`` is already due (a change of it needs nothing more: the
        tailer's watch drops it where it is read, :func:`hookd.watchers.watch.awatch_dirs`'s
        ``ignore``, so an agent's appends while its hooks keep coming wake no task)."""
        return path in self._deferred

    def pending(self) -> list[str]:
        """The files whose read is deferred."""
        return sorted(self._deferred)

    def cancel(self) -> list[str]:
        """Drop every deferred read (their timers); returns their files, to be read now."""
        paths = self.pending()
        for _, _, timer in self._deferred.values():
            timer.cancel()
        self._deferred.clear()
        return paths
