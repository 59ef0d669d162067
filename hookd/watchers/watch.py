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
import logging
import os
import sys
from typing import Any, AsyncIterator

log = logging.getLogger("hookd")

#: bytes asked for per read of the inotify fd, in full-size events (16 + 256 bytes): ~64 KiB
_CACHE_EVENTS = 240


class _Inotify:
    """An ``asyncinotify.Inotify`` watching some folders, their changes as watchfiles reports them."""

    def __init__(self, recursive: bool = False) -> None:
        from asyncinotify import InitFlags, Inotify, Mask

        self.recursive = recursive
        self.M = Mask
        self.mask = (Mask.MODIFY | Mask.ATTRIB | Mask.CLOSE_WRITE | Mask.MOVED_FROM | Mask.MOVED_TO
                     | Mask.CREATE | Mask.DELETE | Mask.ONLYDIR)
        # O_NONBLOCK spelled out: asyncinotify 4.4.4's InitFlags.NONBLOCK is os.O_CLOEXEC, so its
        # default fd blocks (harmless as it reads only when the fd is readable; a safety net).
        # sync_timeout=0: sync_get() is None when nothing is queued.
        self.ino = Inotify(flags=InitFlags(os.O_CLOEXEC | os.O_NONBLOCK), cache_size=_CACHE_EVENTS, sync_timeout=0)
        self.dirs: dict[int, str] = {}  # watch descriptor -> the folder as given (event paths keep its spelling)

    def add(self, path: str) -> None:
        self.dirs[self.ino.add_watch(path, self.mask).wd] = path
        if self.recursive:
            for e in os.scandir(path):
                if e.is_dir(follow_symlinks=False):
                    self.add(e.path)

    async def read(self) -> set[tuple[Any, str]]:
        """Waits for the next event, then takes every event queued by then."""
        out: set[tuple[Any, str]] = set()
        ev: Any = await self.ino.get()
        while ev is not None:
            self._take(ev, out)
            ev = self.ino.sync_get()
        return out

    def _take(self, ev: Any, out: set[tuple[Any, str]]) -> None:
        from watchfiles import Change

        M = self.M
        if ev.mask & M.Q_OVERFLOW:
            out |= self._everything()
            return
        watch = ev.watch
        folder = None if watch is None else self.dirs.get(watch.wd)
        if folder is None:
            return
        if ev.mask & M.IGNORED:  # the folder is gone (or unmounted): its watch went with it
            del self.dirs[watch.wd]
            return
        if ev.name is None:
            return
        kind = (Change.added if ev.mask & (M.CREATE | M.MOVED_TO)
                else Change.deleted if ev.mask & (M.DELETE | M.MOVED_FROM) else Change.modified)
        path = os.path.join(folder, os.fspath(ev.name))
        out.add((kind, path))
        if self.recursive and kind == Change.added and ev.mask & M.ISDIR:
            try:
                self.add(path)  # what was written in it before this is reported by the folder's creation
            except OSError as e:
                log.warning("inotify cannot watch %s: %s", path, e)

    def _everything(self) -> set[tuple[Any, str]]:
        from watchfiles import Change

        out = set()
        for folder in self.dirs.values():
            try:
                out |= {(Change.modified, os.path.join(folder, e)) for e in os.listdir(folder)}
            except OSError:
                continue
        return out

    def close(self) -> None:
        self.ino.close()


def _inotify(dirs: tuple[str, ...], recursive: bool, backend: str) -> _Inotify | None:
    """An inotify instance watching ``dirs`` (unreadable ones skipped), or None when inotify
    cannot be used here or ``backend`` is ``watchfiles``."""
    if not sys.platform.startswith("linux") or backend == "watchfiles":
        return None
    try:
        ino = _Inotify(recursive)
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
                      backend: str = "auto", **watchfiles_kw: Any) -> AsyncIterator[set[tuple[Any, str]]]:
    """Changes of the entries of ``dirs`` (and of their sub-folders, also new ones, when
    ``recursive``) until ``stop_event`` is set. ``backend``: ``watchfiles`` forces the
    watchfiles fallback, anything else takes inotify where it can be used. ``debounce``,
    ``step`` (milliseconds) and ``watchfiles_kw`` apply to the watchfiles fallback only."""
    ino = _inotify(dirs, recursive, backend)
    if ino is None:
        import watchfiles

        async for changes in watchfiles.awatch(*dirs, stop_event=stop_event, debounce=debounce, step=step,
                                               recursive=recursive, **watchfiles_kw):
            yield changes
        return
    stopper = asyncio.ensure_future(stop_event.wait())
    reader: asyncio.Future[set[tuple[Any, str]]] | None = None
    try:
        while True:
            reader = asyncio.ensure_future(ino.read())
            await asyncio.wait((reader, stopper), return_when=asyncio.FIRST_COMPLETED)
            if stop_event.is_set():
                return
            changes = reader.result()
            reader = None
            if changes:
                yield changes
    finally:
        stopper.cancel()
        if reader is not None and not reader.done():
            reader.cancel()  # let it remove its fd reader before the fd is closed (the number may be reused)
            await asyncio.gather(reader, return_exceptions=True)
        ino.close()
