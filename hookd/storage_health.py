"""Whether the store can commit, and what the daemon does while it cannot.

:class:`StorageHealth` is the store's state as its last write found it: ``ok``, or the error
that refused writes (SQLite's result code: ``SQLITE_FULL``, ``SQLITE_BUSY`` past the lock wait,
``SQLITE_CORRUPT``, ``SQLITE_IOERR``, ``SQLITE_READONLY``, ...; or ``database_deleted`` /
``database_replaced``: the file at the database's path is no longer the one opened) and since
when. Every refused write raises :class:`hookd.models.StorageUnavailable` (HTTP 503,
``storage_unavailable``): a hook's client then spools the payload. The log says so once per
change of state, never once per write. A deleted or replaced file is final for this process
(nothing more is acknowledged: the writes would go into a file no one will open again; a
restart opens the one at the path); every other error is retried by the next write.

:func:`retry_until_back` runs beside the daemon: while writes are refused it tries again with
backoff (never a hot loop), records the outage once storage commits again (a
``storage_recovered`` event) and ingests what hook clients spooled meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from typing import Any

from hookd.models import HookdError, StorageUnavailable

log = logging.getLogger("hookd")

#: SQLite primary result codes that mean "the database cannot take this write now" (not a
#: bug in the statement): the write is refused with 503 and retried later.
STORAGE_CODES = frozenset({
    sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_PERM,
})
#: Errors a database does not recover from by itself (a damaged file): only the writes that
#: were refused, not a probe that may touch other pages, can show them gone.
LASTING = frozenset({"SQLITE_CORRUPT", "SQLITE_CORRUPT_VTAB", "SQLITE_CORRUPT_SEQUENCE", "SQLITE_CORRUPT_INDEX",
                     "SQLITE_NOTADB"})
#: First and longest pause (seconds) between two retries while writes are refused.
RETRY_FIRST_S = 0.25
RETRY_MAX_S = 5.0


def storage_code(e: BaseException) -> str | None:
    """SQLite's result code name (``SQLITE_FULL``, ``SQLITE_IOERR_WRITE``, ...) when ``e`` is
    a storage failure (:data:`STORAGE_CODES`), else None."""
    if not isinstance(e, sqlite3.Error):
        return None
    code = getattr(e, "sqlite_errorcode", None)
    if code is None or code & 0xFF not in STORAGE_CODES:
        return None
    return getattr(e, "sqlite_errorname", None) or f"SQLITE_{code}"


def is_busy(e: BaseException) -> bool:
    """``e`` is SQLITE_BUSY or SQLITE_LOCKED: another connection holds the lock."""
    code = getattr(e, "sqlite_errorcode", None)
    return isinstance(e, sqlite3.Error) and code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class StorageHealth:
    """The store's ability to commit (one per :class:`hookd.store.Store`; used on the event
    loop's thread only). ``error`` None: ok."""

    def __init__(self, path: Any):
        self.path = path
        #: SQLite's result code name, ``database_deleted`` or ``database_replaced``; None: ok
        self.error: str | None = None
        self.message: str | None = None
        #: UNIX seconds the current error began
        self.since: float | None = None
        #: writes refused since then
        self.refused = 0
        #: True once the database file was deleted or replaced: refused until a restart
        self.final = False
        #: the last outage, until a ``storage_recovered`` event records it
        self.unrecorded: dict[str, Any] | None = None
        self._changed = asyncio.Event()

    @property
    def ok(self) -> bool:
        return self.error is None

    def check(self) -> None:
        """Raise StorageUnavailable at once when the database is gone for this process."""
        if self.final:
            self.refused += 1
            raise StorageUnavailable(self._sentence())

    def failed(self, e: BaseException) -> StorageUnavailable:
        """A write was refused because of ``e`` (a storage error, :func:`storage_code`):
        record it and return the error to raise (one per caller)."""
        code = storage_code(e) or type(e).__name__
        message = str(e) or code
        if self.final:
            code, message = self.error or code, self.message or message
        self.refused += 1
        if code != self.error:
            if self.error is None:
                self.since = time.time()
                self.refused = 1
            self.error, self.message = code, message
            self.unrecorded = self._outage()
            self._changed.set()
            log.error("storage unavailable: %s (%s) for %s; hooks are answered 503 storage_unavailable and "
                      "spooled by their clients until it commits again", message, code, self.path)
        return StorageUnavailable(self._sentence())

    def gone(self, how: str) -> StorageUnavailable:
        """The database file at the path is ``deleted`` or ``replaced``: refuse every write
        from now on (this process's writes would reach no one). Returns the error to raise."""
        if not self.final:
            self.final = True
            self.error = f"database_{how}"
            self.message = (f"the database file {self.path} was {how} while hookd ran; nothing more is "
                            f"acknowledged: restart `hookd serve` (hook clients spool meanwhile)")
            self.since, self.refused = time.time(), 0
            self.unrecorded = None  # this database is no one's any more
            self._changed.set()
            log.error("storage unavailable: %s", self.message)
        self.refused += 1
        return StorageUnavailable(self._sentence())

    def succeeded(self) -> None:
        """A write committed: storage is back if it was not."""
        if self.error is None or self.final:
            return
        log.warning("storage is back after %.1f s (%s); %d write(s) were refused meanwhile",
                    time.time() - (self.since or time.time()), self.error, self.refused)
        self.unrecorded = self._outage()
        self.error = self.message = self.since = None
        self.refused = 0
        self._changed.set()

    def _outage(self) -> dict[str, Any]:
        return {"error": self.error, "message": self.message, "since": self.since, "refused": self.refused}

    def outage(self) -> dict[str, Any] | None:
        """The outage going on, else the last one not yet recorded (``storage_recovered``):
        ``{"error", "message", "since", "refused"}``; None when there is none to record."""
        if self.final:
            return None
        return self._outage() if self.error is not None else self.unrecorded

    def recorded(self) -> None:
        """The outage is in the event log (its write committed)."""
        self.unrecorded = None

    def _sentence(self) -> str:
        if self.final:
            return f"storage unavailable: {self.message}; nothing was stored"
        return f"storage unavailable: {self.message} ({self.error}); nothing was stored"

    def status(self) -> dict[str, Any]:
        """``{"state": "ok"}`` or ``{"state": "unavailable", "error", "message", "since"
        (UNIX seconds), "refused" (writes refused since), "final" (a restart is needed)}``."""
        if self.error is None:
            return {"state": "ok"}
        return {"state": "unavailable", "error": self.error, "message": self.message, "since": self.since,
                "refused": self.refused, "final": self.final}

    async def wait_changed(self, timeout: float | None = None) -> None:
        """Return after the next change of state (or after ``timeout`` seconds)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)
        self._changed.clear()


async def retry_until_back(core: Any, stop: asyncio.Event) -> None:
    """Until ``stop``: while the store refuses writes, try again after RETRY_FIRST_S seconds,
    doubling to RETRY_MAX_S (never a hot loop): the spool's payloads when hook clients spooled
    some (the very writes that were refused: a store that commits some writes and not others,
    a corrupt index say, is not taken for healthy), else a write that records the outage. Once
    storage commits again (this write or any other), record the outage once
    (``storage_recovered``) and ingest the spool. A damaged database (:data:`LASTING`) is
    retried with the spool only, a deleted or replaced one not at all.
    core: :class:`hookd.core.Hookd`."""
    store = core.store
    health: StorageHealth = store.health
    delay = RETRY_FIRST_S
    while not stop.is_set():
        if health.final or (health.ok and health.unrecorded is None):
            await _either(health.wait_changed(), stop)
            continue
        try:
            if not health.ok:
                await _either(asyncio.sleep(delay), stop)  # the pause between two tries
                if stop.is_set():
                    return
                delay = min(delay * 2, RETRY_MAX_S)
                if await asyncio.to_thread(_spooled, core.home.spool_root):
                    await core.ingest_spool()  # stops at its first refused file
                    if not health.ok:
                        continue
                elif health.error in LASTING:
                    continue  # no write of ours proves it gone: a hook's (or the spool's) will
            await store.record_recovery()
            delay = RETRY_FIRST_S
            await core.bus.publish()  # (followers and the lane watcher see the record)
            counts = await core.ingest_spool()
            if counts["ingested"] or counts["invalid"]:
                log.info("spool after the storage outage: %s", counts)
        except HookdError:
            continue  # still refused (the health logged it once); the next try after the pause
        except Exception:  # never let a retry take the daemon down
            log.exception("storage retry failed")
            await _either(asyncio.sleep(RETRY_MAX_S), stop)


def _spooled(root: Any) -> bool:
    """Whether any hook payload waits in the spool (``root/<builder>/*.json``)."""
    return any(True for _ in root.glob("*/*.json")) if root.is_dir() else False


async def _either(aw: Any, stop: asyncio.Event) -> None:
    """Wait for ``aw`` or ``stop``, whichever comes first."""
    task = asyncio.ensure_future(aw)
    halt = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, halt}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (task, halt):
            t.cancel()
        await asyncio.gather(task, halt, return_exceptions=True)
