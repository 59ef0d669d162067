"""Event-driven watching of folders for the transcript tailer and the spool.

watchfiles' watch loop wakes every ``step`` ms (sleep, take the GIL, check the stop event)
even when nothing changes: at the tailer's 10 ms step that is 100 wake-ups a second, about
5-10 ms of CPU per second on an idle daemon (``bench/tail.py``), and a larger step adds its
length to every append -> event latency (two steps: 50 ms gives ~100 ms). On Linux,
:func:`awatch_dirs` therefore reads inotify events on the event loop itself
(``loop.add_reader``): no thread, no wake-up while nothing changes, the change handled as soon
as the kernel reports it. Elsewhere, or when inotify cannot be used (no more instances or
watches: ``fs.inotify.max_user_*``), or with ``HOOKD_WATCH_BACKEND=watchfiles``, it is
``watchfiles.awatch``.

Yields sets of ``(watchfiles.Change, path)`` like ``watchfiles.awatch``. The watches are set
up in the generator's first step, before its first await. When the kernel's queue overflowed
(events lost), every entry of every watched folder is reported as modified.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import errno
import logging
import os
import struct
import sys
from typing import Any, AsyncIterator

log = logging.getLogger("hookd")

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_Q_OVERFLOW, IN_ONLYDIR, IN_ISDIR = 0x4000, 0x01000000, 0x40000000
IN_NONBLOCK = IN_CLOEXEC = 0
if sys.platform.startswith("linux"):
    IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_HEADER = struct.Struct("iIII")

_libc: Any = None


def _lib() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    return _libc


class _Inotify:
    """One inotify instance watching some folders."""

    def __init__(self, recursive: bool = False) -> None:
        self.recursive = recursive
        fd = _lib().inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        self.fd = fd
        self.dirs: dict[int, str] = {}

    def add(self, path: str) -> None:
        wd = _lib().inotify_add_watch(self.fd, os.fsencode(path), MASK | IN_ONLYDIR)
        if wd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
        self.dirs[wd] = path
        if self.recursive:
            for e in os.scandir(path):
                if e.is_dir(follow_symlinks=False):
                    self.add(e.path)

    def read(self) -> set[tuple[Any, str]]:
        from watchfiles import Change

        out: set[tuple[Any, str]] = set()
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            i = 0
            while i + _HEADER.size <= len(buf):
                wd, mask, _cookie, n = _HEADER.unpack_from(buf, i)
                name = buf[i + _HEADER.size:i + _HEADER.size + n].rstrip(b"\0")
                i += _HEADER.size + n
                if mask & IN_Q_OVERFLOW:
                    out |= self._everything()
                    continue
                folder = self.dirs.get(wd)
                if folder is None or not name:
                    continue
                kind = (Change.added if mask & (IN_CREATE | IN_MOVED_TO)
                        else Change.deleted if mask & (IN_DELETE | IN_MOVED_FROM) else Change.modified)
                path = os.path.join(folder, os.fsdecode(name))
                out.add((kind, path))
                if self.recursive and kind == Change.added and mask & IN_ISDIR:
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
        os.close(self.fd)


def _inotify(dirs: tuple[str, ...], recursive: bool) -> _Inotify | None:
    """An inotify instance watching ``dirs`` (unreadable ones skipped), or None when inotify
    cannot be used here."""
    if not sys.platform.startswith("linux") or os.environ.get("HOOKD_WATCH_BACKEND", "") == "watchfiles":
        return None
    try:
        ino = _Inotify(recursive)
    except (OSError, AttributeError) as e:
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
                      **watchfiles_kw: Any) -> AsyncIterator[set[tuple[Any, str]]]:
    """Changes of the entries of ``dirs`` (and of their sub-folders, also new ones, when
    ``recursive``) until ``stop_event`` is set. ``debounce``, ``step`` and ``watchfiles_kw``
    apply to the watchfiles fallback only."""
    ino = _inotify(dirs, recursive)
    if ino is None:
        import watchfiles

        async for changes in watchfiles.awatch(*dirs, stop_event=stop_event, debounce=debounce, step=step,
                                               recursive=recursive, **watchfiles_kw):
            yield changes
        return
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()
    loop.add_reader(ino.fd, wake.set)
    stopper = asyncio.ensure_future(stop_event.wait())
    stopper.add_done_callback(lambda _: wake.set())
    try:
        while True:
            await wake.wait()
            if stop_event.is_set():
                return
            wake.clear()
            changes = ino.read()
            if changes:
                yield changes
    finally:
        stopper.cancel()
        loop.remove_reader(ino.fd)
        ino.close()
