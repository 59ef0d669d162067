"""When the transcript tailer reads a hooked session's transcript: at one of its hooks, or once they go quiet.

The transcript is the fallback for what hooks do not say (DESIGN.md, "Transcript tailing"):
while a session's hooks keep coming they say, as they happen, what its rows would say (its
tool calls, its questions, its turns). An agent's tool calls change its transcript several
times a second, and each read of a change is a read and a transaction (the cursor saved with
what the rows recorded): about as much of the daemon's CPU as the hooks themselves
(bench/daemon_cpu.py), and more when it wakes the daemon on its own. So while a session's
hooks keep coming its transcript is read in the turn of the event loop of one of its hooks,
after the hook's reply, once the first change left unread is ``max_defer_s`` old; and once its
hooks have been quiet for ``quiet_s`` (defaults 2 s and 2 s:
:attr:`hookd.settings.Settings.tail_quiet_ms`, ``tail_max_defer_ms``). A change that comes
after the hooks went quiet is read at once. Each hook of a session also marks its transcript
(the files followed for the session): the agent's next append is dropped where the watch
reads it, wakes no task and arms the read's timer there; a marked file that does not change is
never read. At a model's pace (a tool call a second) that is one read every other tool call, in
a hook's turn, and no task woken for the transcript between hooks; a pause of 2 s or more after
the last hook still gets its own read.

While hooks keep coming the tailer's watch is held, too (:class:`hookd.watchers.watch.Gate`;
its inotify watch, on Linux): the agent's appends between its hooks do not even wake the
daemon. What the watch saw waits in the kernel's queue and is taken in the turn of the next
hook of any session, or ``quiet_s`` after the last hook, when the watch wakes for every change
again. Each change is judged as it is taken (:meth:`defer`, the tailer's ``ignore``), before
the hook taking it counts: a change of a session that had gone quiet is read at once. A
change's wait (``max_defer_s``) counts from when it is taken. So while some session's hooks
keep coming, a change of a file of no hooked session (``hookd tail``) is read at that
session's next hook: at most ``quiet_s`` later than at once.

What only the transcript tells (an interrupt at the desk, text typed there, the proof that a
queued message reached the model, a fork, damaged rows) is then recorded up to ``quiet_s``
after a hooked session's last hook, or ``max_defer_s`` plus the time to its next hook while
they keep coming; a session without hooks (``hookd tail``, hooks that stopped arriving) is read
at once. Nothing is saved later than before: a file's cursor is still saved in the transaction
that applies its rows, so rows left unread when the daemon dies are read from that cursor at
the next start, once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from hookd.watchers.watch import Gate

log = logging.getLogger("hookd")

#: sessions remembered by :meth:`QuietReads.hook_arrived` before the quiet ones are dropped
HOOKS_AT_MAX = 1024
#: how early (seconds) a deferred read's timer may fire and still read: event loops fire
#: timers a little early (asyncio within its clock's resolution, uvloop in whole
#: milliseconds), and a timer re-armed for what is left would fire again and again (a wake-up
#: each)
TIMER_SLACK_S = 0.002


class QuietReads:
    """Defers the reads of hooked sessions' transcripts until their hooks go quiet, or reads
    them in the turn of one of their hooks.

    ``read(path)``: the read of one followed file (the tailer's ``poll``), handed to
    ``spawn`` (a coroutine to run as a task: :meth:`hookd.core.bus.Tasks.spawn`) when a
    deferred read is due; ``failed()``: called when that read raised (the tailer then catches
    every file up from its cursor). ``quiet_s``: how long a session's hooks must have been
    quiet (seconds); ``max_defer_s``: how long a change waits while they keep coming
    (seconds). ``files_of(session_id)``: the followed files of a session (its transcript),
    marked at each of its hooks (None: nothing is marked, and a change that waits is read
    once the hooks go quiet). ``gate``: the tailer's watch's, held while hooks keep coming
    (None: the watch wakes for every change)."""

    def __init__(self, read: Callable[[str], Awaitable[Any]], spawn: Callable[[Any], Any],
                 failed: Callable[[], None], *, quiet_s: float = 2.0, max_defer_s: float = 2.0,
                 files_of: Callable[[str], Iterable[str]] | None = None, gate: Gate | None = None):
        self.quiet_s = quiet_s
        self.max_defer_s = max_defer_s
        self._read = read
        self._spawn = spawn
        self._failed = failed
        self._files_of = files_of
        #: session id -> the event loop's time (``loop.time()``, the clock its timers keep) of
        #: its last live hook
        self._hooks_at: dict[str, float] = {}
        #: files whose read waits: path -> (the loop's time of the first change left unread,
        #: the session, the timer of the read)
        self._deferred: dict[str, tuple[float, str, asyncio.TimerHandle]] = {}
        #: files a hook of their session marked, no change of them seen since: path -> session
        #: id (no timer: their first change seen makes a deferred read of them, :meth:`waiting`)
        self._marked: dict[str, str] = {}
        #: the tailer's watch, held while hooks keep coming (see :meth:`hook_arrived`)
        self._gate = gate
        #: the timer that releases it ``quiet_s`` after the last hook
        self._release: asyncio.TimerHandle | None = None

    def hook_arrived(self, session_id: str) -> None:
        """A live hook of ``session_id`` has committed (called on the hook path, before its
        reply is written). What the watch queued since the last hook is taken now and the watch
        is held (its ``gate``) until the hooks have been quiet ``quiet_s``. Of the session's
        files (``files_of``), one with a change left unread whose first change is
        ``max_defer_s`` old is read now, in a task that runs in this turn of the event loop,
        after the hook's reply (no wake-up of its own); another with a change left unread is
        read ``quiet_s`` after this hook; the rest are marked: a hook says its transcript has
        changed or is about to, so their next change is dropped where the watch's events are
        taken and wakes no task (:meth:`waiting`). A file read now is marked too."""
        hooks_at = self._hooks_at
        loop = asyncio.get_running_loop()
        gate = self._gate
        if gate is not None:
            # what the watch queued since the last hook is taken in this hook's turn (each
            # change judged against the hooks before this one), and it wakes no one until
            # the hooks go quiet
            self._take(gate.drain)
        # (after the drain: a change it deferred is no later than this hook, whose read may be
        # due now; uvloop's clock can move within a callback)
        now = loop.time()
        if gate is not None:
            gate.hold()
            if self._release is not None:
                self._release.cancel()
            self._release = loop.call_at(now + self.quiet_s, self._released)
        if len(hooks_at) >= HOOKS_AT_MAX and session_id not in hooks_at:
            for sid in [s for s, t in hooks_at.items() if t < now - self.quiet_s]:  # only sessions still hooking matter
                del hooks_at[sid]
            for path in [p for p, s in self._marked.items() if s not in hooks_at]:
                del self._marked[path]
        hooks_at[session_id] = now
        if self._files_of is None:
            return
        due = now + self.quiet_s
        for path in self._files_of(session_id):
            entry = self._deferred.get(path)
            if entry is None:
                self._marked[path] = session_id
                continue
            first, sid, timer = entry
            timer.cancel()
            if now - first >= self.max_defer_s - TIMER_SLACK_S:
                del self._deferred[path]
                self._spawn(self._read_now(path))
                self._marked[path] = session_id  # the agent's appends after this read wake no task either
            else:
                self._deferred[path] = (first, sid, loop.call_at(due, self._due, path))

    def _released(self) -> None:
        """No hook for ``quiet_s``: the watch wakes for every change again (what it queued
        meanwhile is taken now)."""
        self._release = None
        if self._gate is not None:
            self._take(self._gate.release)

    def _take(self, step: Callable[[], None]) -> None:
        """Run ``step``, a take of the held watch's queue (``drain`` or ``release``); a failure
        is logged and the tailer watches again from its cursors (``failed``), never raised
        into a hook's path or a timer."""
        try:
            step()
        except Exception as e:
            log.warning("transcript watch: taking its events failed: %s", e)
            self._failed()

    def defer(self, path: str, session_id: str | None) -> bool:
        """Leave a change of followed ``path`` (``session_id``'s transcript; None: unknown)
        unread for now if that session's last live hook was less than ``quiet_s`` ago, and
        read it when it is due (see the module). Returns whether it was deferred (False: the
        caller reads it now). The tailer's watch calls it as it takes a modification, so the
        change is judged against the hooks before the one taking it."""
        if self.waiting(path):
            return True  # a read of it is due
        return session_id is not None and self._wait_for_quiet(path, session_id)

    def _wait_for_quiet(self, path: str, session_id: str) -> bool:
        """Defer the read of ``path``'s change until ``session_id``'s hooks have been quiet
        ``quiet_s`` (its timer armed), unless they already are (False: read it now)."""
        last = self._hooks_at.get(session_id)
        loop = asyncio.get_running_loop()
        now = loop.time()
        if last is None or now - last >= self.quiet_s - TIMER_SLACK_S:  # (a release's timer fires early)
            return False
        self._deferred[path] = (now, session_id, loop.call_at(last + self.quiet_s, self._due, path))
        return True

    def _due(self, path: str) -> None:
        """The timer of a deferred read: read ``path`` now if its session's hooks have been
        quiet for ``quiet_s``, else look again then (each hook moves the timer itself: this is
        a guard against a timer fired early)."""
        entry = self._deferred.get(path)
        if entry is None:
            return
        first, sid, _ = entry
        loop = asyncio.get_running_loop()
        due = self._hooks_at.get(sid, 0.0) + self.quiet_s
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
        """Whether a change of ``path`` needs nothing more than a read already due (part of
        :meth:`defer`, which the tailer's watch applies as it takes a change: its ``ignore``),
        so that an agent's appends while its hooks keep coming wake no task. A marked file's
        first change seen while its session's hooks keep coming becomes a deferred read here
        (its timer armed); one seen after they went quiet ends the mark and is read at once
        (False)."""
        if path in self._deferred:
            return True
        sid = self._marked.pop(path, None)
        return sid is not None and self._wait_for_quiet(path, sid)

    def pending(self) -> list[str]:
        """The files whose read is deferred."""
        return sorted(self._deferred)

    def cancel(self) -> list[str]:
        """Drop every deferred read (their timers); returns their files, to be read now."""
        if self._release is not None:  # first: what the watch held is taken, among them these
            self._release.cancel()
            self._released()
        paths = self.pending()
        for _, _, timer in self._deferred.values():
            timer.cancel()
        self._deferred.clear()
        self._marked.clear()
        return paths
