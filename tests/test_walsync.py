"""The WAL's sync thread (hookd.store.walsync) on its own: each commit is synced once, a wake-up
is never lost, and stopping syncs what was not and frees the pipe. Waits are on conditions
with deadlines; the thread's own interval is what the store uses only where a test says so."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from hookd.store import walsync
from hookd.store.walsync import WalSync


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The fds the thread synced, in order (the real fdatasync still runs)."""
    seen: list[int] = []
    real = walsync._datasync  # noqa: SLF001

    def sync(fd: int) -> None:
        seen.append(fd)
        real(fd)

    monkeypatch.setattr(walsync, "_datasync", sync)
    return seen


def _until(cond, what: str, timeout: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.001)


def test_every_commit_is_synced_and_no_wake_up_is_lost(tmp_path: Path, synced: list[int]) -> None:
    """Commits one at a time, each after the previous one's sync: every one wakes the sleeping
    thread (200 rounds, where a lost wake-up would leave one unsynced forever)."""
    wal = tmp_path / "db-wal"
    wal.write_bytes(b"x")
    ws = WalSync(os.fspath(wal), 0.0005)
    ws.start()
    try:
        for n in range(1, 201):
            ws.committed()
            _until(lambda: ws.syncs >= n, f"commit {n} not synced (syncs {ws.syncs})")
        assert ws.syncs == 200
    finally:
        ws.stop(30)


def test_stop_cuts_the_wait_short_syncs_what_was_not_and_closes_the_pipe(tmp_path: Path, synced: list[int]) -> None:
    """A commit waits out the interval (an hour here) for others to ride along; stop() ends
    that wait, syncs it, and closes the thread's pipe."""
    wal = tmp_path / "db-wal"
    wal.write_bytes(b"x")
    ws = WalSync(os.fspath(wal), 3600.0)
    ws.start()
    pipe = ws._wake  # noqa: SLF001
    assert pipe is not None
    ws.committed()
    ws.committed()  # rides along with the first
    ws.stop(30)
    assert not ws._thread.is_alive(), "stop() did not end the hour's wait"  # noqa: SLF001
    assert (ws.syncs, len(synced)) == (1, 1)
    for fd in pipe:
        with pytest.raises(OSError):
            os.fstat(fd)
    ws.committed()  # after stop: nothing to wake, no error
    assert ws.syncs == 1


def test_an_idle_thread_syncs_nothing_and_stops_at_once(tmp_path: Path, synced: list[int]) -> None:
    wal = tmp_path / "db-wal"
    wal.write_bytes(b"x")
    ws = WalSync(os.fspath(wal), 3600.0)
    ws.start()
    _until(lambda: ws._asleep, "the thread did not go to sleep")  # noqa: SLF001
    ws.stop(30)
    assert not ws._thread.is_alive() and ws.syncs == 0 and synced == []  # noqa: SLF001


def test_a_failed_sync_is_not_counted_and_the_thread_goes_on(tmp_path: Path, synced: list[int]) -> None:
    """The WAL gone (its database deleted): the sync fails, is logged, and the next commit,
    once the file is back, is synced."""
    wal = tmp_path / "db-wal"
    ws = WalSync(os.fspath(wal), 0.0005)
    ws.start()
    try:
        ws.committed()
        _until(lambda: ws._asleep and not ws._dirty, "the failed sync did not end")  # noqa: SLF001
        assert ws.syncs == 0
        wal.write_bytes(b"x")
        ws.committed()
        _until(lambda: ws.syncs == 1, "the next commit was not synced")
    finally:
        ws.stop(30)
