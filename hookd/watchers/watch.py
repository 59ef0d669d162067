"""Event-driven watching of folders for the transcript tailer and the spool.

watchfiles' watch loop wakes every ``step`` ms (sleep, take the GIL, check the stop event)
even when nothing changes: at the tailer's 10 ms step that is 100 wake-ups a second, about
5-10 ms of CPU per second on an idle daemon (``bench/tail.py``), and a larger step adds its
length to every append -> event latency (two steps: 50 ms gives ~100 ms). On Linux,
:func:`awatch_dirs` therefore reads inotify events on the event loop itself with
`asyncinotify <https://asyncinotify.readthedocs.io/>`_ (``loop.add_reader``): no thread, no
wake-up while nothing changes, the change handled as soon as the kernel reports it.
Elsewhere, or when inotify cannot be used (asyncinotify missing, no more instances or
watches: ``fs.inotify.max_user_*``), or with the ``watchfiles`` backend asked for
(``backend``: :attr:`hookd.settings.Settings.watch_backend`, ``HOOKD_WATCH_BACKEND``), it is
``watchfiles.awatch``.

Yields sets of ``(watchfiles.Change, path)`` like ``watchfiles.awatch``. The watches are set
up in the generator's first step, before its first await. When the kernel's queue overflowed
(events lost), every entry of every watched folder is reported as modified.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import struct
import sys
from collections.abc import AsyncGenerator, Callable
from typing import Any, AsyncIterator

log = logging.getLogger("hookd")

#: bytes asked for per read of the inotify fd, in full-size events (16 + 256 bytes): ~64 KiB
_CACHE_EVENTS = 240
_READ_BYTES = _CACHE_EVENTS * (16 + 256)
#: ``struct inotify_event`` without its name: wd, mask, cookie, len
_EVENT = struct.Struct("iIII")
#: the mask bits of inotify(7)
_MODIFY, _ATTRIB, _MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x2, 0x4, 0x40, 0x80, 0x100, 0x200
_MOVE_SELF, _Q_OVERFLOW, _IGNORED, _ONLYDIR, _ISDIR = 0x800, 0x4000, 0x8000, 0x01000000, 0x40000000


class _Inotify:
    """An ``asyncinotify.Inotify`` watching some folders (asyncinotify adds the watches; the
    events are read by :meth:`take_queued`), their changes as watchfiles reports them."""

    def __init__(self, recursive: bool = False, ignore: Callable[[str], bool] | None = None) -> None:
        from asyncinotify import InitFlags, Inotify, Mask

        self.recursive = recursive
        #: a modification of a path for which this is true is dropped as it is read (no wake-up)
        self.ignore = ignore
        # no CLOSE_WRITE: every write (and a truncation) is a MODIFY already, and an append by
        # open-write-close (Claude Code's) gave two events, often two wake-ups
        self.mask = Mask(_MODIFY | _ATTRIB | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE | _MOVE_SELF | _ONLYDIR)
        # O_NONBLOCK spelled out: asyncinotify 4.4.4's InitFlags.NONBLOCK is os.O_CLOEXEC, so its
        # default fd blocks; :meth:`take_queued` reads it until it would block
        self.ino = Inotify(flags=InitFlags(os.O_CLOEXEC | os.O_NONBLOCK), cache_size=_CACHE_EVENTS, sync_timeout=0)
        self.dirs: dict[int, str] = {}  # watch descriptor -> the folder as given (event paths keep its spelling)
        self._ids: dict[int, tuple[int, int]] = {}  # watch descriptor -> the folder's (st_dev, st_ino)

    def add(self, path: str) -> None:
        wd = self.ino.add_watch(path, self.mask).wd
        self.dirs[wd] = path
        st = os.stat(path)
        self._ids[wd] = (st.st_dev, st.st_ino)
        if self.recursive:
            for e in os.scandir(path):
                if e.is_dir(follow_symlinks=False):
                    self.add(e.path)

    def take_queued(self, out: set[tuple[Any, str]], wake: asyncio.Event) -> None:
        """Add every event queued now to ``out`` and set ``wake`` if there is any (the loop's
        callback when the fd is readable). The events are read from the fd and unpacked here
        (``struct inotify_event``): asyncinotify's own reading builds a ``Path``, flag enums
        and a ctypes copy per event, the most of a change's cost at an agent's pace."""
        fd = self.ino.fd
        while True:
            try:
                data = os.read(fd, _READ_BYTES)
            except BlockingIOError:
                break
            i, n = 0, len(data)
            while i + _EVENT.size <= n:
                wd, mask, _cookie, length = _EVENT.unpack_from(data, i)
                i += _EVENT.size
                name = data[i:i + length].split(b"\0", 1)[0]
                i += length
                self._take(wd, mask, name, out)
            if not data:
                break
        if out:
            wake.set()

    def _take(self, wd: int, mask: int, name: bytes, out: set[tuple[Any, str]]) -> None:
        from watchfiles import Change

        if mask & _Q_OVERFLOW:
            out |= self._everything()
            return
        folder = self.dirs.get(wd)
        if folder is None:
            return
        if mask & (_IGNORED | _MOVE_SELF):
            # the folder is gone (or unmounted): its watch went with it; or it was moved away,
            # its watch with it (its events from there on are dropped: no longer in dirs)
            self._gone(wd, out)
            return
        if not name:
            return
        kind = (Change.added if mask & (_CREATE | _MOVED_TO)
                else Change.deleted if mask & (_DELETE | _MOVED_FROM) else Change.modified)
        path = os.path.join(folder, os.fsdecode(name))
        if kind == Change.modified and self.ignore is not None and self.ignore(path):
            return
        out.add((kind, path))
        if self.recursive and kind == Change.added and mask & _ISDIR:
            try:
                self.add(path)  # what was written in it before this is reported by the folder's creation
            except OSError as e:
                log.warning("inotify cannot watch %s: %s", path, e)

    def _everything(self) -> set[tuple[Any, str]]:
        """What an overflowed queue may have lost: every entry of every watched folder as
        modified, and a watched folder that is gone, or is another folder now (made again at
        its path), as deleted (its ``IN_IGNORED`` may have been among the events lost), as
        :meth:`_take` reports a folder's end."""
        from watchfiles import Change

        out: set[tuple[Any, str]] = set()
        for wd, folder in list(self.dirs.items()):
            try:
                st = os.stat(folder)
                if (st.st_dev, st.st_ino) == self._ids.get(wd):
                    out |= {(Change.modified, os.path.join(folder, e)) for e in os.listdir(folder)}
                    continue
            except (FileNotFoundError, NotADirectoryError):
                pass
            except OSError:  # unreadable now: its entries are not listed, its watch is kept
                continue
            self._gone(wd, out)  # gone, or another folder is at its path now
        return out

    def _gone(self, wd: int, out: set[tuple[Any, str]]) -> None:
        """The folder of watch ``wd`` is gone, or moved away: forgotten, and reported deleted
        (its consumer may watch again from higher up)."""
        from watchfiles import Change

        folder = self.dirs.pop(wd)
        self._ids.pop(wd, None)
        out.add((Change.deleted, folder))

    def close(self) -> None:
        self.ino.close()


class Gate:
    """Holds back the wake-ups of an :func:`awatch_dirs` watch while its owner knows it will look
    soon anyway (the tailer, while hooks keep coming: :class:`hookd.watchers.quiet.QuietReads`).

    Held, the watch's inotify fd is off the event loop: its events wait in the kernel's queue
    (a queue that overflows is reported as every entry modified) until :meth:`drain` takes
    them, in the turn of whoever calls it, or :meth:`release` does and puts the fd back; a held
    watch that stops (its ``stop_event``) yields what the kernel still holds as its last batch.
    A gate outlives the watches given it (the tailer watches again when its folders change):
    one made while it is held starts held. With the watchfiles fallback it holds nothing (that
    watch wakes as before)."""

    def __init__(self) -> None:
        self._held = False
        #: the running watch: (its loop, its inotify fd, the callback taking its queued events)
        self._bound: tuple[asyncio.AbstractEventLoop, int, Callable[[], None]] | None = None

    @property
    def held(self) -> bool:
        return self._held

    def hold(self) -> None:
        """Stop waking for the watch's events (idempotent)."""
        if self._held:
            return
        self._held = True
        if self._bound is not None:
            loop, fd, _ = self._bound
            loop.remove_reader(fd)

    def release(self) -> None:
        """Take what waits now and wake for every event again (idempotent)."""
        if not self._held:
            return
        self._held = False
        if self._bound is not None:
            loop, fd, take = self._bound
            loop.add_reader(fd, take)  # first: a failed take below leaves the watch awake
            take()

    def drain(self) -> None:
        """Take the events queued now, held or not (none: a read that would block, no more)."""
        if self._bound is not None:
            self._bound[2]()

    def _bind(self, loop: asyncio.AbstractEventLoop, fd: int, take: Callable[[], None]) -> None:
        if self._bound is not None:
            self._unbind(self._bound[2])
        self._bound = (loop, fd, take)
        if not self._held:
            loop.add_reader(fd, take)

    def _unbind(self, take: Callable[[], None]) -> None:
        """The watch whose callback is ``take`` ends: off the loop, before its fd is closed (its
        number may be reused). A watch the gate no longer holds (another was bound since) is
        left alone."""
        if self._bound is not None and self._bound[2] is take:
            loop, fd, _ = self._bound
            self._bound = None
            if not self._held:
                loop.remove_reader(fd)


def _inotify(dirs: tuple[str, ...], recursive: bool, backend: str,
             ignore: Callable[[str], bool] | None = None) -> _Inotify | None:
    """An inotify instance watching ``dirs`` (unreadable ones skipped), or None when inotify
    cannot be used here or ``backend`` is ``watchfiles``."""
    if not sys.platform.startswith("linux") or backend == "watchfiles":
        return None
    try:
        ino = _Inotify(recursive, ignore)
    except (ImportError, OSError, RuntimeError, AttributeError) as e:  # asyncinotify raises RuntimeError without libc inotify
        log.info("inotify unavailable (%s); watching with watchfiles", e)
        return None
    for d in dirs:
        try:
            ino.add(d)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.ENOENT, errno.ENOTDIR):
                continue  # as watchfiles' ignore_permission_denied; a folder gone meanwhile
            log.warning("inotify cannot watch %s (%s); watching with watchfiles", d, e)
            ino.close()
            return None
    return ino


async def awatch_dirs(*dirs: str, stop_event: asyncio.Event, debounce: int, step: int, recursive: bool = False,
                      backend: str = "auto", ignore: Callable[[str], bool] | None = None,
                      gate: Gate | None = None,
                      **watchfiles_kw: Any) -> AsyncGenerator[set[tuple[Any, str]], None]:
    """Changes of the entries of ``dirs`` (and of their sub-folders, also new ones, when
    ``recursive``) until ``stop_event`` is set. ``backend``: ``watchfiles`` forces the
    watchfiles fallback, anything else takes inotify where it can be used. ``debounce``,
    ``step`` (milliseconds) and ``watchfiles_kw`` apply to the watchfiles fallback only.
    ``ignore(path)`` true: a modification of that path is not reported (with inotify, dropped
    where it is read, in the loop's callback: the consumer is not woken for it); additions,
    deletions and moves always are. ``gate``: holds the inotify watch's wake-ups back while
    its owner says so (:class:`Gate`)."""
    ino = _inotify(dirs, recursive, backend, ignore)
    if ino is None:
        import watchfiles

        inner = watchfiles.awatch(*dirs, stop_event=stop_event, debounce=debounce, step=step,
                                  recursive=recursive, **watchfiles_kw)
        try:
            async for batch in inner:
                if ignore is not None:
                    batch = {c for c in batch if c[0] != watchfiles.Change.modified or not ignore(c[1])}
                if batch:
                    yield batch
        finally:
            await inner.aclose()  # closed with this one (its watcher released), not when collected
        return
    # the fd stays registered with the loop while the watch lasts and its gate is not held,
    # its events taken in the loop's callback (asyncinotify's ``get`` registers and unregisters
    # it, and a task waits, at every change: an agent's transcript changes several times a second)
    fd = ino.ino.fd
    changes: set[tuple[Any, str]] = set()
    wake = asyncio.Event()
    loop = asyncio.get_running_loop()
    gate = gate if gate is not None else Gate()
    take = functools.partial(ino.take_queued, changes, wake)
    gate._bind(loop, fd, take)
    stopper = asyncio.ensure_future(stop_event.wait())
    stopper.add_done_callback(lambda _: wake.set())
    try:
        while True:
            await wake.wait()
            wake.clear()
            if stop_event.is_set():
                if gate.held:  # what the kernel still holds is the consumer's last batch
                    take()
                    if changes:
                        yield set(changes)
                return
            if changes:
                out = set(changes)
                changes.clear()
                yield out
    finally:
        stopper.cancel()
        gate._unbind(take)  # before the fd is closed
        ino.close()


async def started(changes: AsyncIterator[Any]) -> "asyncio.Future[Any]":
    """Start ``changes`` (an :func:`awatch_dirs` generator) and let its first step run: with
    inotify its watches are then in place, so a listing made after this misses nothing that
    gives no event (with the watchfiles fallback they are set in its thread soon after).
    Returns the future of its first batch (raises StopAsyncIteration when it ends first)."""
    first = asyncio.ensure_future(changes.__anext__())
    await asyncio.sleep(0)
    return first


async def ended(changes: AsyncGenerator[Any, None] | None, step: Any = None) -> None:
    """End ``changes`` (an :func:`awatch_dirs` generator; None: none was made) left mid-way by a
    consumer that failed or stopped: ``step``, its pending ``__anext__`` (the future
    :func:`started` gave, or a coroutine not yet awaited), is cancelled, then the generator is
    closed, so that its watch (the inotify fd, or the watchfiles fallback's watcher) is released
    now and not when the generator is collected. A generator that already ended is left as it
    is; an error while closing is logged, never raised (its consumer is already failing)."""
    if isinstance(step, asyncio.Future):
        step.cancel()
        await asyncio.gather(step, return_exceptions=True)
    elif asyncio.iscoroutine(step):
        step.close()
    if changes is not None:
        try:
            await changes.aclose()
        except Exception as e:
            log.warning("closing a watch: %s", e)
