"""The store's connections and writer: :class:`Store` opens the database, runs every write
(group commit), moves checkpoints off the write path and closes.

One writer: every write is a function run by :meth:`Store.write` inside one
``BEGIN IMMEDIATE`` transaction on the writer connection (datasette's ``execute_write_fn``
pattern), so a hook's raw payload, its derived events and the interaction changes commit
together or not at all. The writer runs on the event loop's thread: a hook's transaction
takes ~0.09 ms, less than the ~0.14 ms a hop to a writer thread (or aiosqlite's) costs, and
its commit never fsyncs (WAL, ``synchronous=NORMAL``: durable across a process crash at once)
because syncs and checkpoints are moved off the write path (``wal_autocheckpoint=0``): a
thread of its own syncs the WAL a second after commits (then they survive a power cut too,
:mod:`hookd.store.walsync`), and the WAL is copied into the database, in a thread, when the
store goes quiet or every CHECKPOINT_COMMITS commits; after a copy of everything the writer
connection, lent to a thread meanwhile, records it in ``checkpoints``: that restarts the WAL,
so the restart's fsync is never a hook's. Reads go through aiosqlite on a second
connection (WAL readers never block the writer); the few small ones the event loop needs
after each commit (the lanes' refresh of the builders it touched) run at once on the writer
connection (:meth:`Store._now`). Migrations are numbered and recorded in
the same transaction that applies them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

import aiosqlite

from hookd.clock import Clock
from hookd.models import Event, StorageUnavailable
from hookd.settings import Settings
from hookd.storage_health import StorageHealth, is_busy, storage_code
from hookd.store import timeline
from hookd.store.base import InboxLive
from hookd.store.migrations import migrate
from hookd.store.reads import Reads
from hookd.store.tx import Tx
from hookd.store.walsync import WalSync

log = logging.getLogger("hookd")

T = TypeVar("T")


async def _finish(job: "asyncio.Future[T]") -> T:
    """``job``'s result (a thread's: ``asyncio.ensure_future(asyncio.to_thread(...))``);
    cancelled, this still waits for ``job`` to end before raising ``CancelledError``:
    cancelling ``to_thread`` does not stop the thread, and nothing it uses (a connection) may
    be closed under it. Raises what ``job`` raises."""
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        await asyncio.wait((job,))
        if not job.cancelled():
            job.exception()  # retrieved: the cancellation is what the caller gets
        raise


#: First and longest pause (seconds) between two tries of a write on a database another
#: connection has locked (doubling; :meth:`Store.write`).
_LOCK_PAUSE_S = (0.002, 0.05)


class _Locked(Exception):
    """BEGIN IMMEDIATE found the database locked by another connection (``error``)."""

    def __init__(self, error: sqlite3.Error):
        super().__init__(str(error))
        self.error = error


def _rollback(db: sqlite3.Connection) -> None:
    """End a failed transaction, if SQLite has not already (a failed COMMIT may leave it
    open: the writer would refuse every later BEGIN)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


def _fail(futures: list[asyncio.Future[Any]], e: BaseException) -> None:
    """Hand ``e`` to every waiting write (a StorageUnavailable: a fresh one each)."""
    for fut in futures:
        if not fut.done():
            fut.set_exception(StorageUnavailable(e.message) if isinstance(e, StorageUnavailable) else e)


class Store(Reads):
    """The database of one hookd home. ``open`` applies pending migrations; the reads are
    :class:`hookd.store.reads.Reads`'s, on the reader connection this class opens and closes."""

    #: seconds between a commit and the WAL's sync that makes it survive a power cut
    #: (:class:`hookd.store.walsync.WalSync`); also the pause before a copy refused is tried again
    CHECKPOINT_INTERVAL_S = 1.0
    #: commits after the last copy of the WAL into the database that make the next one, on a
    #: store that never goes quiet (~7 WAL frames a hook: ~900 frames, about SQLite's own
    #: default of 1000 pages)
    CHECKPOINT_COMMITS = 128

    def __init__(self, path: Path, clock: Clock | None = None, *, settings: Settings | None = None):
        """``path``: the database file (created by :meth:`open` if missing); ``clock``: the
        daemon's (default a new :class:`hookd.clock.Clock`); ``settings``: its ``group_commit``
        and ``busy_wait_s`` (default :class:`hookd.settings.Settings`' defaults)."""
        settings = settings if settings is not None else Settings()
        self.path = path
        #: wall time and hookd's timeline (:mod:`hookd.clock`); each transaction's
        #: :attr:`Tx.mono` is read from it
        self.clock = clock if clock is not None else Clock()
        self._w: sqlite3.Connection | None = None
        self._r: aiosqlite.Connection | None = None
        self._checkpointer: asyncio.Task[None] | None = None
        # writes waiting for the next group commit: (fn, args, future, loop time past which a
        # database locked by another connection refuses it)
        self._batch: list[tuple[Callable[..., Any], tuple, asyncio.Future[Any], float]] = []
        self._flushing: asyncio.Handle | None = None  # the scheduled _flush of the batch
        self._lock_pause = _LOCK_PAUSE_S[0]  # the pause before the next try on a locked database
        self._busy = False  # a write committed in this turn of the event loop
        #: whether the store can commit (hookd.storage_health); status shows it
        self.health = StorageHealth(path)
        #: how long a write waits for a database another connection has locked (seconds;
        #: ``HOOKD_BUSY_WAIT_S``), in pauses that never block the event loop; then it is
        #: refused (StorageUnavailable): a hook's client spools it well within its deadline
        self.busy_wait_s = settings.busy_wait_s
        #: commit the writes of one event-loop turn together (:meth:`write`;
        #: ``HOOKD_GROUP_COMMIT=0`` turns it off)
        self.group_commit = settings.group_commit
        #: seconds without a commit after which the WAL is copied into the database
        #: (``HOOKD_CHECKPOINT_QUIET_S``; :meth:`_checkpoint_loop`)
        self.checkpoint_quiet_s = settings.checkpoint_quiet_s
        self._ident: tuple[int, int] | None = None  # (device, inode) of the database opened
        #: write transactions committed by this store (the checkpoint loop's clock)
        self.commits = 0
        #: the checkpoint loop's wait for the next commit while it has nothing to copy (None:
        #: it is not waiting; a commit then only checks this attribute)
        self._next_commit: asyncio.Future[None] | None = None
        self._wake_at = 0  # the commits that wake the checkpoint loop (:meth:`_commit_within`)
        #: syncs the WAL a second after commits (started by :meth:`open`)
        self._wal_sync = WalSync(f"{path}-wal", self.CHECKPOINT_INTERVAL_S)
        #: the writer connection's WAL restart, running in a thread (:meth:`_restart_wal`)
        self._restarting: asyncio.Future[None] | None = None
        #: builders that may have live inbox messages (filled by :meth:`open`)
        self._inbox = InboxLive(set())

    async def open(self) -> "Store":
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=5000",
                       "foreign_keys=ON", "wal_autocheckpoint=0"):
            db.execute(f"PRAGMA {pragma}")
        self._w = db
        migrate(db)
        timeline.attach(self.clock, db)
        timeline.record(self.clock, db)
        # from here on a locked database is waited for off the event loop (write, _flush)
        db.execute("PRAGMA busy_timeout=0")
        st = os.stat(self.path)
        self._ident = (st.st_dev, st.st_ino)
        self._inbox.builders.update(r[0] for r in db.execute(
            "SELECT DISTINCT builder FROM inbox_messages WHERE state IN ('queued', 'delivered')"))
        self._r = await aiosqlite.connect(self.path, isolation_level=None)
        await self._r.execute("PRAGMA busy_timeout=5000")
        self._checkpointer = asyncio.create_task(self._checkpoint_loop())
        self._wal_sync.start()
        return self

    async def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.cancel()
            try:
                await self._checkpointer
            except asyncio.CancelledError:
                pass
            self._checkpointer = None
        await asyncio.to_thread(self._wal_sync.stop)  # (what it had not synced: synced first)
        if self._flushing is not None:  # writes waiting for a locked database: refused
            self._flushing.cancel()
            self._flushing = None
            batch, self._batch = self._batch, []
            for _, _, fut, _ in batch:
                if not fut.done():
                    fut.set_exception(StorageUnavailable("storage unavailable: the daemon is stopping; nothing was stored"))
        if self._r is not None:
            await self._r.close()
            self._r = None
        if self._w is not None:
            try:
                timeline.record(self.clock, self._w)
            except sqlite3.Error as e:  # the next boot's floor is then an earlier record
                log.warning("recording the timeline: %s", e)
            with contextlib.suppress(sqlite3.Error):  # disk full, deleted: nothing more to save
                self._w.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._w.close()
            self._w = None

    def _committed(self) -> None:
        """A commit counted, while the checkpoint loop waits: wakes it once :attr:`commits`
        reaches what it waits for."""
        waiting = self._next_commit
        if waiting is not None and self.commits >= self._wake_at and not waiting.done():
            waiting.set_result(None)

    async def _checkpoint_loop(self) -> None:
        """Copies the WAL into the database (a passive checkpoint, on a connection of its own,
        in a thread: it never blocks the writer) once the store has had no commit for
        ``checkpoint_quiet_s`` (:attr:`hookd.settings.Settings.checkpoint_quiet_s`), or
        CHECKPOINT_COMMITS commits after the last copy if it never goes quiet; when everything
        was copied, restarts the WAL (:meth:`_restart_wal`); with everything copied, sleeps
        until the next commit. Each copy syncs the WAL and the database (two fsyncs) and the
        restart commits: about 1 ms of CPU whatever it copies. That commits survive a power
        cut within a second is :class:`hookd.store.walsync.WalSync`'s work, not this loop's.

        Cancelled (:meth:`close`), it still waits for the thread it has started (:func:`_finish`)
        before closing that thread's connection, or before the writer's connection is closed:
        closing a connection a thread is using is a segfault in ``sqlite3`` (CI, stop 16)."""
        conn = await _finish(asyncio.ensure_future(asyncio.to_thread(
            sqlite3.connect, self.path, check_same_thread=False, isolation_level=None)))
        copied = -1  # commits at the last complete copy (-1: the WAL as found at open)
        again = False  # the last try was refused: try again a pause later, not a window later
        logged: str | None = None
        try:
            while True:
                if not again:
                    if self.commits == copied:
                        # everything copied and the WAL restarted: an idle daemon is not woken
                        # again before the next commit
                        await self._commit_within(None, self.commits + 1)
                    seen = self.commits
                    # a window of checkpoint_quiet_s with no commit, or the commits' budget
                    if (not await self._commit_within(self.checkpoint_quiet_s, max(copied, 0) + self.CHECKPOINT_COMMITS)
                            and self.commits != seen):
                        continue  # commits came: not quiet yet
                again = True
                seen = self.commits
                try:
                    busy, frames, done = await _finish(asyncio.ensure_future(
                        asyncio.to_thread(self._passive_checkpoint, conn)))
                    # not all copied (a reader's snapshot), or writes queued for the writer
                    if not (busy or frames < 0 or done != frames or (frames > 0 and self._batch)):
                        if frames > 0:
                            self._restarting = asyncio.ensure_future(asyncio.to_thread(self._restart_wal, frames))
                            try:
                                await _finish(self._restarting)
                            finally:
                                self._restarting = None  # the writer is back from its thread
                        copied, again = seen, False
                except sqlite3.Error as e:  # disk full, say: tried again a pause later
                    if str(e) != logged:  # once per change: the store's health says the rest
                        log.warning("WAL checkpoint: %s", e)
                        logged = str(e)
                else:
                    logged = None
                if again:
                    await asyncio.sleep(self.CHECKPOINT_INTERVAL_S)
        finally:
            conn.close()

    async def _commit_within(self, timeout: float | None, at: int) -> bool:
        """Wait until :attr:`commits` reaches ``at``, at most ``timeout`` seconds (None: no
        limit); whether it did (a commit checks one attribute unless this waits)."""
        if self.commits >= at:
            return True
        self._wake_at = at
        self._next_commit = waiting = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait((waiting,), timeout=timeout)
        finally:
            self._next_commit = None
        return waiting.done()

    @staticmethod
    def _passive_checkpoint(conn: sqlite3.Connection) -> tuple[int, int, int]:
        """``PRAGMA wal_checkpoint(PASSIVE)`` on ``conn``: (busy, WAL frames, frames copied)."""
        return conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()

    def _restart_wal(self, frames: int) -> None:
        """Record the checkpoint that just copied ``frames`` WAL frames (the ``checkpoints``
        row) on the writer connection, in a thread, while :meth:`write` holds new writes back.

        Why: the first commit after a complete checkpoint starts the WAL over, and SQLite
        writes and fsyncs a new WAL header for that even at ``synchronous=NORMAL`` (0.3 ms
        here; milliseconds on many disks). Agents' hooks come seconds apart, after the
        checkpoint has copied everything, so each one's commit was that one. Now this record
        is; the hooks after it append to a WAL that has already restarted. It is the writer's
        own connection (never the loop's and this thread's at once) because a commit by any
        other connection would make the writer drop its whole page cache and read it back
        from the file at the next hook."""
        # not counted in ``commits``: the next round, with nothing else committed, has nothing to do
        try:
            self._transaction(lambda tx, at, n: tx.sessions.record_checkpoint(at, n), (time.time(), frames), counted=False)
        except _Locked as e:  # another connection holds the lock: the next round
            raise e.error from None

    async def write(self, fn: Callable[..., T], *args: Any) -> tuple[T, list[Event]]:
        """Run ``fn(tx, *args)`` in one write transaction.

        Commits when ``fn`` returns, rolls back (and re-raises) when it raises. Returns
        ``fn``'s result and the events it appended, to be published after the commit.
        ``fn`` is synchronous and must be quick: it runs on the event loop's thread.

        Group commit: the first write of a turn of the event loop commits at once; the
        writes requested after it in that turn (hooks of many builders arriving together)
        run in submission order in one transaction, each in its own savepoint (a raising
        ``fn`` undoes only its own changes), and one COMMIT makes them all durable before any
        of them returns. :attr:`group_commit` off (``HOOKD_GROUP_COMMIT=0``): one transaction per write.

        Raises StorageUnavailable when the database cannot commit (:mod:`hookd.storage_health`):
        a storage error (disk full, I/O error, corrupt, read-only, ...) in any write of a
        group fails the whole group (rolled back: none of it is acknowledged; the next write
        tries again); a database another connection has locked is waited for, in pauses that
        never block the event loop, up to ``busy_wait_s``; a database file deleted or replaced
        since :meth:`open` refuses every write from then on. ``tx.after_commit`` callbacks
        run only for a write that is acknowledged.
        """
        if self._restarting is not None and not self._restarting.done():
            await asyncio.wait((self._restarting,))  # the writer is restarting the WAL in its thread
        self.health.check()
        loop = asyncio.get_running_loop()
        if not self.group_commit:
            return await self._solo(fn, args, loop.time() + self.busy_wait_s)
        if not self._busy and not self._batch:
            # the first write of this turn commits at once: no added latency when quiet
            self._busy = True
            loop.call_soon(self._turn_over)
            try:
                return self._transaction(fn, args)
            except _Locked:
                pass  # another connection holds the write lock: wait in line (_flush)
        fut: asyncio.Future[tuple[T, list[Event]]] = loop.create_future()
        self._batch.append((fn, args, fut, loop.time() + self.busy_wait_s))
        if self._flushing is None:
            self._flushing = loop.call_soon(self._flush)
        return await fut

    async def _solo(self, fn: Callable[..., T], args: tuple, until: float) -> tuple[T, list[Event]]:
        """One transaction for one write (no group commit); a locked database is retried
        until the loop time ``until``."""
        pause = _LOCK_PAUSE_S[0]
        while True:
            try:
                return self._transaction(fn, args)
            except _Locked as e:
                if asyncio.get_running_loop().time() >= until:
                    raise self.health.failed(e.error) from e.error
                await asyncio.sleep(pause)
                pause = min(pause * 2, _LOCK_PAUSE_S[1])

    def _turn_over(self) -> None:
        self._busy = False

    def _flush(self) -> None:
        self._flushing = None
        db = self._w
        loop = asyncio.get_running_loop()
        try:
            assert db is not None, "the store is closed"
            self._begin(db)
        except _Locked as e:
            # another connection holds the write lock: refuse the writes that waited long
            # enough, try the others again after a pause (the event loop runs meanwhile)
            now = loop.time()
            late = [w for w in self._batch if w[3] <= now]
            if late:
                self._batch = [w for w in self._batch if w[3] > now]
                _fail([w[2] for w in late], self.health.failed(e.error))
            if self._batch:
                self._flushing = loop.call_later(self._lock_pause, self._flush)
                self._lock_pause = min(self._lock_pause * 2, _LOCK_PAUSE_S[1])
            return
        except BaseException as e:  # noqa: BLE001 - nothing of the batch was committed
            batch, self._batch = self._batch, []
            _fail([w[2] for w in batch], self._refusal(e))
            return
        self._lock_pause = _LOCK_PAUSE_S[0]
        batch, self._batch = self._batch, []
        done: list[tuple[asyncio.Future[Any], BaseException | None, Any]] = []
        try:
            try:
                for fn, args, fut, _ in batch:
                    db.execute("SAVEPOINT w")
                    tx = Tx(db, self._inbox, self.clock.mono())
                    try:
                        result = fn(tx, *args)
                    except BaseException as e:  # noqa: BLE001 - handed to its caller
                        if storage_code(e) is not None:
                            raise  # the database failed, not this write: the whole group fails
                        db.execute("ROLLBACK TO w")
                        db.execute("RELEASE w")
                        done.append((fut, e, None))
                        continue
                    db.execute("RELEASE w")
                    done.append((fut, None, (result, tx)))
                db.execute("COMMIT")
                self.commits += 1
                self._wal_sync.committed()
                if self._next_commit is not None:  # (the hot path reads one attribute)
                    self._committed()
            except BaseException:
                _rollback(db)
                raise
            self._check_file()
        except BaseException as e:  # noqa: BLE001 - nothing of the batch is acknowledged
            _fail([w[2] for w in batch], self._refusal(e))
            return
        self.health.succeeded()
        for fut, err, ok in done:
            if err is not None:
                if not fut.done():
                    fut.set_exception(err)
                continue
            result, tx = ok
            for fn_after in tx.after_commit:
                try:
                    fn_after()
                except Exception:
                    log.exception("after-commit callback failed")
            if not fut.done():
                fut.set_result((result, tx.events))

    def _begin(self, db: sqlite3.Connection) -> None:
        """BEGIN IMMEDIATE; raises _Locked when another connection holds the write lock."""
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            if is_busy(e):
                raise _Locked(e) from e
            raise

    def _refusal(self, e: BaseException) -> BaseException:
        """What a write that failed with ``e`` raises: StorageUnavailable for a storage
        error (recorded in :attr:`health`), ``e`` itself otherwise."""
        if isinstance(e, StorageUnavailable):
            return e
        if storage_code(e) is not None:
            return self.health.failed(e)
        return e

    def _check_file(self) -> None:
        """Raise StorageUnavailable when the file at the database's path is no longer the
        one opened (deleted, moved away or replaced): what was just committed went into a
        file no one will open again. One stat per commit (~2 us), not per hook."""
        try:
            st = os.stat(self.path)
            ident: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            ident = None
        except OSError:
            return  # cannot tell (a permission change): the commits themselves will say
        if ident != self._ident:
            raise self.health.gone("deleted" if ident is None else "replaced")

    def _transaction(self, fn: Callable[..., T], args: tuple, counted: bool = True) -> tuple[T, list[Event]]:
        """One write transaction on the writer connection. ``counted``: a write of the
        event loop's (health recorded, file checked, :attr:`commits` counted), not the WAL
        restart's in its thread. Raises _Locked (nothing done) when the database is locked."""
        db = self._w
        assert db is not None
        try:
            self._begin(db)
        except sqlite3.Error as e:
            raise self._refusal(e) if counted else e
        tx = Tx(db, self._inbox, self.clock.mono())
        try:
            result = fn(tx, *args)
            db.execute("COMMIT")
        except BaseException as e:
            _rollback(db)
            refusal = self._refusal(e) if counted else e
            if refusal is e:
                raise
            raise refusal from e
        if counted:
            self.commits += 1
            self._wal_sync.committed()
            if self._next_commit is not None:
                self._committed()
            self._check_file()
            self.health.succeeded()
        for fn_after in tx.after_commit:
            fn_after()
        return result, tx.events

    def _now(self, sql: str, args: tuple = ()) -> list[tuple] | None:
        """One small read on the writer connection, at once on the event loop's thread (its
        page cache is the one the hooks' commits keep warm, and no thread hop: the lanes'
        refresh after a commit); None while the connection is lent to the WAL restart's thread
        or the store is closed (the read then goes to the reader connection). Outside any
        transaction: writes run whole within one call on this thread, so it reads only what
        was committed. Raises StorageUnavailable for a storage error, as :meth:`_all`."""
        db = self._w
        if db is None or db.in_transaction or (self._restarting is not None and not self._restarting.done()):
            return None
        try:
            return db.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            if storage_code(e) is None:
                raise
            raise StorageUnavailable(f"storage unavailable: cannot read the database: {e} ({storage_code(e)})") from e

    def storage(self) -> dict[str, Any]:
        """:attr:`health`'s status, and ``waiting``: writes waiting for their commit (for more
        than a turn of the event loop only while another connection has the database locked)."""
        return {**self.health.status(), "waiting": len(self._batch)}

    async def record_recovery(self) -> None:
        """Write the ``storage_recovered`` event of the current or last outage (error,
        message, since, refused, after_s), if there is one not yet recorded: the write that
        tells whether storage commits again (hookd.storage_health.retry_until_back). Raises
        StorageUnavailable while it does not."""
        health = self.health

        def tx_fn(tx: Tx) -> None:
            outage = health.outage()
            if outage is None:
                return
            at = time.time()
            tx.append_event("storage_recovered", None, None, at,
                            {**outage, "after_s": round(at - (outage["since"] or at), 3)})
            tx.after_commit.append(health.recorded)

        await self.write(tx_fn)
