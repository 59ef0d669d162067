"""The WAL's sync: a thread of its own makes every commit survive a power cut within a second.

At ``synchronous=NORMAL`` (the writer's) a WAL commit survives a process crash at once and a
power cut only once the WAL file is on disk. :class:`WalSync` ``fdatasync``\\ s the WAL file
``interval_s`` after the first commit it has not synced (later commits ride along): what
``synchronous=FULL`` does at every commit, at most once per interval, off the event loop.

It is a plain thread sleeping on a pipe, not a task handing work to a thread pool: the event
loop is never woken for it (a pool's round trip woke the loop twice per sync, about as much CPU
as an agent's hook itself: docs/decisions.md "A second's sync, and the copy when the store goes
quiet"). The loop's side, :meth:`WalSync.committed`, sets a flag, and writes one byte to the
pipe only when the thread sleeps for want of a commit. The thread's waits are a ``read`` and a
``select`` on that pipe, not a ``threading.Condition``: its lock objects and their Python cost
half the thread's own CPU per sync besides the ``fdatasync`` (docs/decisions.md "The WAL's sync
on a pipe").
"""

from __future__ import annotations

import logging
import os
import select
import threading

log = logging.getLogger("hookd")

#: syncs a file's data (and the size that reads it back): ``fdatasync`` where the platform has it
_datasync = os.fdatasync if hasattr(os, "fdatasync") else os.fsync


class WalSync:
    """Syncs ``wal`` (the WAL file's path) ``interval_s`` seconds after a commit it has not
    synced; asleep while nothing is committed. :meth:`start` once, :meth:`stop` at close.
    Holds a pipe (two fds) from :meth:`start` to :meth:`stop`."""

    def __init__(self, wal: str, interval_s: float):
        self.wal = wal
        self.interval_s = interval_s
        #: syncs done (a failed one is not counted)
        self.syncs = 0
        self._dirty = False  # commits since the last sync began
        self._asleep = False  # the thread waits for a commit, with no deadline
        self._stopping = False
        self._wake: tuple[int, int] | None = None  # the pipe: (read end, write end)
        self._thread = threading.Thread(target=self._run, name="hookd-wal-sync", daemon=True)

    def start(self) -> None:
        self._wake = os.pipe()
        self._thread.start()

    def committed(self) -> None:
        """A commit (the writer's, on the event loop): synced within ``interval_s``. A flag,
        and one byte to the pipe only to wake a thread that sleeps for want of one."""
        self._dirty = True
        if self._asleep:
            self._asleep = False  # (one byte per sleep)
            self._poke()

    def stop(self, timeout: float = 5.0) -> None:
        """End the thread (it syncs what it has not, first); waits ``timeout`` seconds at most
        for a sync in progress (a daemon thread: it never holds the process). The pipe is
        closed once the thread has ended (still in a sync past ``timeout``: left open)."""
        self._stopping = True
        if self._wake is None:
            return
        self._poke()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if not self._thread.is_alive():
            wake, self._wake = self._wake, None
            for fd in wake:
                os.close(fd)

    def _poke(self) -> None:
        wake = self._wake
        if wake is not None:
            os.write(wake[1], b"x")

    def _run(self) -> None:
        logged: str | None = None
        r = self._wake[0]  # type: ignore[index]  # (set by start; closed by stop once this ends)
        while True:
            # _asleep is set before _dirty is read, and committed() sets _dirty before it reads
            # _asleep: one of the two sees the other's write (no lost wake-up; at worst a byte
            # for a commit already seen here, which ends one wait early)
            self._asleep = True
            if not self._dirty and not self._stopping:
                os.read(r, 64)
            self._asleep = False
            # later commits ride along; stop() cuts the wait short with its byte
            if not self._stopping and select.select([r], [], [], self.interval_s)[0]:
                os.read(r, 64)
            stopping = self._stopping
            if self._dirty:
                self._dirty = False  # before the sync: a commit from here on is the next one's
                try:
                    self._sync()
                    self.syncs += 1
                    logged = None
                except OSError as e:  # the WAL gone with its database, an I/O error: once per change
                    if str(e) != logged:
                        log.warning("WAL sync: %s", e)
                        logged = str(e)
            if stopping:
                return

    def _sync(self) -> None:
        fd = os.open(self.wal, os.O_RDONLY | os.O_CLOEXEC)
        try:
            _datasync(fd)
        finally:
            os.close(fd)
