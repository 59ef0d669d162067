"""WAL syncs and checkpoints stay off the hook path (hookd.store.Store._checkpoint_loop).

The first commit after a complete checkpoint restarts the WAL: a new header (checkpoint
sequence number + 1, new salts) and an fsync, even at synchronous=NORMAL. Agents' hooks
come seconds apart, after the background checkpoint has copied everything, so each hook's
commit used to be that one. The checkpoint loop now restarts the WAL itself; a hook after a
quiet spell appends to it. Observed on the real daemon's files: the WAL header (bytes 12-24:
checkpoint sequence, salt-1, salt-2) is not rewritten by a hook.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from hookd.daemonproc import DaemonProcess

from .conftest import TUI, hookd_cli, run_hook, settings_command, wait_until

pytestmark = pytest.mark.daemon


def wal_header(db: Path) -> bytes:
    """Checkpoint sequence number, salt-1 and salt-2 of the WAL's header (sqlite.org/fileformat2.html#walformat)."""
    with open(f"{db}-wal", "rb") as f:
        return f.read(24)[12:24]


def last_checkpoint(db: Path) -> float:
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = c.execute("SELECT at FROM checkpoints WHERE id = 1").fetchone()
        return row[0] if row else 0.0
    finally:
        c.close()


@pytest.fixture
def daemon(home: Path):
    """A running `hookd serve` whose store copies its WAL after 0.5 s without a commit."""
    import os

    d = DaemonProcess(home, env={**os.environ, "HOOKD_CHECKPOINT_QUIET_S": "0.5"}).start()
    yield d
    d.stop()
    d.kill()


def quick(db: Path, **kw: object) -> object:
    """A Store on ``db`` that copies its WAL 0.05 s after its last commit."""
    from hookd.settings import Settings
    from hookd.store import Store

    return Store(db, settings=Settings(checkpoint_quiet_s=0.05), **kw)


def test_a_hook_after_a_quiet_spell_does_not_restart_the_wal(daemon: DaemonProcess, worktree: Path) -> None:
    """Three times: a hook, the checkpoint after it, then another hook, which must leave the
    WAL's header as it was (a round where the checkpoint loop itself ran again in between
    says nothing and is not counted)."""
    assert hookd_cli(daemon.home.root, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
    command = settings_command(worktree / ".claude" / "settings.local.json", "PreToolUse")
    db = daemon.home.db
    conclusive = 0
    for _ in range(10):
        stored_at = time.time()
        r = run_hook(command, (TUI / "004-PreToolUse.json").read_bytes(), worktree)
        assert r.returncode == 0 and r.stdout == b""
        # the checkpoint loop copies that commit into the database and restarts the WAL
        checkpoint = wait_until(lambda: (at := last_checkpoint(db)) > stored_at and at, 60,
                                what="a checkpoint after the hook")
        before = wal_header(db)
        r = run_hook(command, (TUI / "005-PostToolUse.json").read_bytes(), worktree)
        assert r.returncode == 0
        after = wal_header(db)
        if last_checkpoint(db) != checkpoint:
            continue  # the loop ran again meanwhile (a lane change committed): says nothing
        assert after == before, "the hook's commit restarted the WAL"
        conclusive += 1
        if conclusive == 3:
            break
    assert conclusive == 3


def _reads(tid: int) -> int:
    """Read syscalls (read, pread, ...) made so far by thread ``tid`` of this process."""
    for line in Path(f"/proc/self/task/{tid}/io").read_text().splitlines():
        if line.startswith("syscr:"):
            return int(line.split()[1])
    raise AssertionError("no syscr in /proc/self/task/<tid>/io")


def test_the_writer_keeps_its_page_cache_across_the_wal_restart(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The WAL restart is a commit on the writer's own connection: a commit by any other
    connection would make the writer drop its page cache and read the pages it needs back
    from the file at the next hook (11 reads per hook after each quiet second, seen with
    strace before this). After the checkpoint and the restart, a write reads nothing."""
    import asyncio
    import threading

    from hookd.store import Store

    monkeypatch.setattr(Store, "CHECKPOINT_INTERVAL_S", 0.05)
    db = tmp_path / "hookd.db"

    def append(tx, i: int) -> None:  # noqa: ANN001
        tx.append_event("probe", "b1", "s1", float(i), {"i": i, "pad": "x" * 600})

    async def run() -> list[int]:
        st = await quick(db).open()
        tid = threading.get_native_id()
        deltas = []
        try:
            for i in range(200):  # a few pages' worth, so that a dropped cache would show
                await st.write(append, i)
            for round_ in range(3):
                wrote = time.time()
                await st.write(append, 1000 + round_)
                deadline = time.monotonic() + 10
                while last_checkpoint(db) <= wrote:  # the loop checkpointed and restarted the WAL
                    assert time.monotonic() < deadline, "no checkpoint"
                    await asyncio.sleep(0.01)
                while st._restarting is not None:  # noqa: SLF001 - the writer back from its thread
                    await asyncio.sleep(0.001)
                before = _reads(tid)
                idle = _reads(tid) - before  # what reading the counter itself costs
                before = _reads(tid)
                await st.write(append, 2000 + round_)
                deltas.append(_reads(tid) - before - idle)
        finally:
            await st.close()
        return deltas

    assert asyncio.run(run()) == [0, 0, 0]


def test_close_waits_for_a_checkpoint_in_its_thread(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Store.close cancels the checkpoint loop; a passive checkpoint already running in a
    thread is not stopped by that, and closing its connection under it was a segfault in
    CI (stop 16: ``Fatal Python error: Segmentation fault`` in the checkpoint's thread).
    Here the checkpoint is held in its thread while close runs; when let go it must still
    find its connection open, and close must have waited for it."""
    import asyncio
    import threading

    from hookd.store import Store

    monkeypatch.setattr(Store, "CHECKPOINT_INTERVAL_S", 0.01)
    entered, release = threading.Event(), threading.Event()
    outcome: list[object] = []
    real = Store._passive_checkpoint  # noqa: SLF001

    def held(conn: sqlite3.Connection) -> tuple[int, int, int]:
        entered.set()
        release.wait(30)
        try:
            r = real(conn)
        except sqlite3.ProgrammingError as e:  # "Cannot operate on a closed database."
            outcome.append(e)
            raise
        outcome.append(r)
        return r

    monkeypatch.setattr(Store, "_passive_checkpoint", staticmethod(held))

    async def run() -> bool:
        st = await quick(tmp_path / "hookd.db").open()
        await st.write(lambda tx: tx.append_event("probe", "b1", "s1", 1.0, {}))
        assert await asyncio.to_thread(entered.wait, 10), "no checkpoint started"
        closing = asyncio.ensure_future(st.close())
        # close either waits for the thread (right) or closes its connection now (the fault)
        done, _ = await asyncio.wait((closing,), timeout=1.0)
        release.set()
        await closing
        return bool(done)

    closed_early = asyncio.run(run())
    assert len(outcome) == 1 and isinstance(outcome[0], tuple), outcome
    assert not closed_early, "close returned while the checkpoint's thread still had its connection"


def test_an_idle_store_does_not_wake_its_checkpoint_loop(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """With everything copied, the checkpoint loop sleeps until the next commit instead of
    looking again and again (an idle daemon's wake-ups). Its rounds are counted by its waits
    (``_commit_within``): none while 200 turns of the event loop commit nothing, and the
    next commit starts one."""
    import asyncio

    from hookd.store import Store

    rounds: list[int | None] = []
    real = Store._commit_within  # noqa: SLF001

    async def counted(self: Store, timeout: float | None, at: int) -> bool:
        rounds.append(at)
        return await real(self, timeout, at)

    monkeypatch.setattr(Store, "_commit_within", counted)
    db = tmp_path / "hookd.db"

    async def checkpointed_after(st: Store, at: float) -> None:
        deadline = time.monotonic() + 10
        while last_checkpoint(db) <= at or st._restarting is not None:  # noqa: SLF001
            assert time.monotonic() < deadline, "no checkpoint"
            await asyncio.sleep(0.01)

    async def run() -> tuple[int, int]:
        st = await quick(db).open()
        try:
            wrote = time.time()
            await st.write(lambda tx: tx.append_event("probe", "b1", "s1", 1.0, {}))
            await checkpointed_after(st, wrote)
            for _ in range(100):  # the loop back from the copy, waiting for the next commit
                if st._next_commit is not None:  # noqa: SLF001
                    break
                await asyncio.sleep(0.01)
            before = len(rounds)
            for _ in range(200):  # 200 turns of the event loop with nothing committed
                await asyncio.sleep(0)
            idle = len(rounds) - before
            wrote = time.time()
            await st.write(lambda tx: tx.append_event("probe", "b1", "s1", 2.0, {}))  # a commit wakes it
            await checkpointed_after(st, wrote)
            return idle, len(rounds) - before - idle
        finally:
            await st.close()

    idle, after_commit = asyncio.run(run())
    assert idle == 0
    assert after_commit >= 1


def _logged(monkeypatch) -> list[str]:  # noqa: ANN001
    """What the store's threads do, in order: ``sync`` (the WAL's fdatasync,
    hookd.store.walsync) and ``copy`` (a passive checkpoint)."""
    from hookd.store import Store
    from hookd.store import walsync

    log: list[str] = []
    real_sync, real_copy = walsync._datasync, Store._passive_checkpoint  # noqa: SLF001

    def sync(fd: int) -> None:
        log.append("sync")
        real_sync(fd)

    def copy(conn: sqlite3.Connection) -> tuple[int, int, int]:
        log.append("copy")
        return real_copy(conn)

    monkeypatch.setattr(walsync, "_datasync", sync)
    monkeypatch.setattr(Store, "_passive_checkpoint", staticmethod(copy))
    return log


def _copied_after_one_commit(db: Path, quiet_s: float, log: list[str], copies: int = 1) -> list[str]:
    """A Store on ``db`` (quiet time ``quiet_s``) commits once; ``log`` (:func:`_logged`) once it
    holds ``copies`` copies and the WAL's restart is recorded."""
    import asyncio

    from hookd.settings import Settings
    from hookd.store import Store

    async def run() -> list[str]:
        st = await Store(db, settings=Settings(checkpoint_quiet_s=quiet_s)).open()
        try:
            await st.write(lambda tx: tx.append_event("probe", "b1", "s1", 1.0, {}))
            deadline = time.monotonic() + 30
            while log.count("copy") < copies or st._restarting is not None or last_checkpoint(db) == 0:  # noqa: SLF001
                assert time.monotonic() < deadline, f"not {copies} copies: {log}"
                await asyncio.sleep(0.01)
            return list(log)
        finally:
            await st.close()

    return asyncio.run(run())


def test_commits_are_synced_first_and_copied_once_the_store_is_quiet(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """A commit is made to survive a power cut by the WAL's sync a round after it; the copy
    into the database (two fsyncs and the WAL's restart) waits until no commit came for the
    store's quiet time, then happens once."""
    from hookd.store import Store

    monkeypatch.setattr(Store, "CHECKPOINT_INTERVAL_S", 0.01)
    log = _logged(monkeypatch)
    seen = _copied_after_one_commit(tmp_path / "hookd.db", 0.3, log)
    assert seen[0] == "sync" and seen.count("copy") == 1, seen


def test_a_store_that_never_goes_quiet_is_copied_every_checkpoint_commits(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Commits that keep coming (never a quiet time: an hour here) are still copied into the
    database once CHECKPOINT_COMMITS of them are not, so the WAL does not grow without end;
    each is synced before that."""
    import asyncio

    from hookd.settings import Settings
    from hookd.store import Store

    monkeypatch.setattr(Store, "CHECKPOINT_INTERVAL_S", 0.01)
    monkeypatch.setattr(Store, "CHECKPOINT_COMMITS", 3)
    log = _logged(monkeypatch)

    async def run() -> int:
        st = await Store(tmp_path / "hookd.db", settings=Settings(checkpoint_quiet_s=3600)).open()
        try:
            deadline = time.monotonic() + 30
            while "copy" not in log:
                syncs = log.count("sync")
                await st.write(lambda tx: tx.append_event("probe", "b1", "s1", 1.0, {}))
                while log.count("sync") == syncs and "copy" not in log:  # synced before the next
                    assert time.monotonic() < deadline, f"no sync: {log}"
                    await asyncio.sleep(0.005)
            return st.commits
        finally:
            await st.close()

    commits = asyncio.run(run())
    # (the copy itself syncs the WAL: the third commit's own sync may come before or after it)
    assert commits == 3 and log[:2] == ["sync"] * 2 and "copy" in log[2:], (commits, log)


def test_an_idle_store_syncs_nothing(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """With nothing committed the WAL's sync thread sleeps: commits are synced (one sync for
    several close together), and after them nothing more, however long the store stays open."""
    import asyncio

    from hookd.store import Store

    monkeypatch.setattr(Store, "CHECKPOINT_INTERVAL_S", 0.05)
    log = _logged(monkeypatch)

    async def run() -> tuple[int, int]:
        st = await quick(tmp_path / "hookd.db").open()
        try:
            for i in range(5):
                await st.write(lambda tx: tx.append_event("probe", "b1", "s1", 1.0, {}))
            deadline = time.monotonic() + 30
            while st._wal_sync.syncs < 1:  # noqa: SLF001
                assert time.monotonic() < deadline, "no sync"
                await asyncio.sleep(0.01)
            after = st._wal_sync.syncs  # noqa: SLF001
            # the thread is asleep for want of a commit: it will not sync again without one
            while not st._wal_sync._asleep:  # noqa: SLF001
                assert time.monotonic() < deadline, "the sync thread never slept"
                await asyncio.sleep(0.01)
            return after, st._wal_sync.syncs  # noqa: SLF001
        finally:
            await st.close()

    after, later = asyncio.run(run())
    assert after == 1 and later == 1 and log.count("sync") == 1, log


def test_a_refused_copy_is_tried_again_after_a_pause_not_another_quiet_window(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """A copy a reader's snapshot kept from finishing (busy) is tried again a pause later,
    with no commit needed and no second quiet window waited for (a reviewer saw 31 s)."""
    from hookd.store import Store

    monkeypatch.setattr(Store, "CHECKPOINT_INTERVAL_S", 0.01)
    log = _logged(monkeypatch)
    copy = Store._passive_checkpoint  # noqa: SLF001 - (_logged's, which logs "copy")

    def first_busy(conn: sqlite3.Connection) -> tuple[int, int, int]:
        r = copy(conn)
        return (1, r[1], 0) if log.count("copy") == 1 else r

    monkeypatch.setattr(Store, "_passive_checkpoint", staticmethod(first_busy))
    real_wait = Store._commit_within  # noqa: SLF001

    async def wait(self: Store, timeout: float | None, at: int) -> bool:
        log.append("wait")
        return await real_wait(self, timeout, at)

    monkeypatch.setattr(Store, "_commit_within", wait)
    seen = [e for e in _copied_after_one_commit(tmp_path / "hookd.db", 0.05, log, copies=2) if e != "sync"]
    first = seen.index("copy")
    assert seen[first + 1] == "copy", seen  # no wait between the refused copy and the next
