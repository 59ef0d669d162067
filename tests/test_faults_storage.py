"""Storage faults (issue 18, item 2): a daemon whose database cannot commit never acknowledges
what it did not store, keeps serving, says so once (status and log), and loses nothing once
storage is back.

The reply contract (hook client <-> daemon): a 2xx means the payload is committed; a 4xx
with ``X-Hookd-Stored: <id>`` means its raw bytes were committed under that hook event id;
anything else (here: 503 ``storage_unavailable``) means "not stored": the client spools it.

Each fault for real, with a real daemon: the database's filesystem full (a 2 MB tmpfs, when
this process may mount one; and, everywhere, the daemon's own file-size limit lowered below
the database's size with prlimit(2): SQLite then fails its writes with SQLITE_IOERR/FULL),
the database locked by another connection holding ``BEGIN EXCLUSIVE``, the database file
corrupted on disk, and deleted or replaced while the daemon runs. For each: 503s while it
is broken (never a 2xx without a commit), ``storage`` in status, one log line per change of
state, and after recovery every acknowledged hook is there and what was refused, spooled as
the client spools it, is ingested by the daemon (nothing missing).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import resource
import shutil
import socket
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess, wait_until
from hookd.core import Hookd
from hookd.store import Store

from .conftest import TUI, events, hookd_cli, hookd_run, run_hook, settings_command

pytestmark = pytest.mark.daemon

BASH = json.loads((TUI / "004-PreToolUse.json").read_bytes())


# --- helpers ---------------------------------------------------------------------------

def payload(i: int, size: int = 0) -> bytes:
    """A Bash PreToolUse of its own call (``toolu_fault_<i>``), padded by ``size`` bytes."""
    return json.dumps(dict(BASH, tool_use_id=f"toolu_fault_{i}",
                           tool_input={"command": "echo " + "x" * size})).encode()


def post(home: Home, body: bytes, delivery: str, *, fast: bool = True, end: bool = True,
         timeout: float = 60, harness: str = "claude-code") -> tuple[int, dict[str, str], dict[str, Any] | None]:
    """POST one hook over the Unix socket: on the fast path (``Connection: close``, as the
    compiled client sends it) or the ASGI path (keep-alive). ``end=False``: chunked, the body
    never ended (stdin held open). Returns (status, headers, error or None)."""
    head = (b"POST /v1/hooks/%s/b1 HTTP/1.1\r\nHost: hookd\r\nX-Hookd-Delivery: %s\r\n"
            b"X-Hookd-Deadline-Ms: 5000\r\n" % (harness.encode(), delivery.encode()))
    if end:
        req = head + b"Content-Length: %d\r\n%s\r\n%s" % (len(body), b"Connection: close\r\n" if fast else b"", body)
    else:
        req = (head + b"Transfer-Encoding: chunked\r\n%s\r\n" % (b"Connection: close\r\n" if fast else b"")
               + b"%x\r\n%s\r\n" % (len(body), body))
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(os.fspath(home.socket_path))
    try:
        s.sendall(req)
        out = b""
        while b"\r\n\r\n" not in out or len(out.partition(b"\r\n\r\n")[2]) < _length(out):
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    finally:
        s.close()
    head_, _, rest = out.partition(b"\r\n\r\n")
    lines = head_.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    status = int(lines[0].split()[1])
    return status, headers, (json.loads(rest)["error"] if status >= 400 else None)


def _length(out: bytes) -> int:
    for line in out.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def stored(home: Home) -> dict[str, bytes]:
    """delivery id -> raw bytes of every stored hook event (read-only, beside the daemon)."""
    db = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
    try:
        return {d: bytes(r) for d, r in db.execute("SELECT delivery_id, raw FROM hook_events")}
    finally:
        db.close()


def status(home: Home) -> dict[str, Any]:
    r = hookd_cli(home.root, "status", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def spool(home: Home, delivery: str, body: bytes, builder: str = "b1") -> Path:
    """Spool ``body`` as a hook client does on a reply that is not a proof of storage (temp
    file, then rename): ``spool/<builder>/<delivery>.claude-code.json``."""
    d = home.spool_root / builder
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{delivery}.tmp"
    tmp.write_bytes(body)
    final = d / f"{delivery}.claude-code.json"
    tmp.rename(final)
    return final


def log_lines(d: DaemonProcess, needle: str) -> int:
    return sum(needle in line for line in d.log.read_text().splitlines())


class Outage:
    """Hooks posted while storage is broken, and what each was answered."""

    def __init__(self, home: Home, tag: str):
        self.home, self.tag = home, tag
        self.sent: dict[str, bytes] = {}     # delivery id -> payload
        self.acked: set[str] = set()         # answered 2xx
        self.refused: set[str] = set()       # answered 503 storage_unavailable
        self.n = 0

    def post(self, size: int = 0, fast: bool = True) -> int:
        self.n += 1
        delivery = f"{time.time_ns() // 1000}-{os.getpid()}-{self.tag}{self.n}"
        body = payload(self.n, size)
        self.sent[delivery] = body
        st, headers, err = post(self.home, body, delivery, fast=fast)
        if st == 200:
            self.acked.add(delivery)
        else:
            assert st == 503 and err is not None and err["code"] == "storage_unavailable", (st, err)
            assert "stored" not in err and "x-hookd-stored" not in headers, (headers, err)
            self.refused.add(delivery)
        return st

    def spool_refused(self) -> None:
        for delivery in self.refused:
            spool(self.home, delivery, self.sent[delivery])

    def check_nothing_missing(self, timeout: float = 30) -> None:
        """Every hook sent is stored, byte for byte, once, and the spool is empty."""
        def done() -> bool:
            rows = stored(self.home)
            return all(rows.get(d) == b for d, b in self.sent.items()) and not list(self.home.spool_root.glob("*/*.json"))
        wait_until(done, timeout, what=lambda: f"every hook of the outage stored: missing "
                                               f"{sorted(set(self.sent) - set(stored(self.home)))}")


def check_refusal_state(home: Home, error_prefix: str) -> dict[str, Any]:
    st = status(home)["storage"]
    assert st["state"] == "unavailable" and st["error"].startswith(error_prefix), st
    assert st["refused"] >= 1 and st["since"] is not None, st
    human = hookd_cli(home.root, "status")
    assert human.returncode == 0 and "storage UNAVAILABLE" in human.stdout, human.stdout
    return st


# --- filling the database's filesystem ------------------------------------------------------

@contextlib.contextmanager
def small_tmpfs(path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs at ``path`` (root only; skips where mount is not permitted)."""
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", os.fspath(path)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.decode().strip()}): the rlimit variant covers it")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", os.fspath(path)], check=False)


class Filler:
    """Makes the daemon's database writes fail for lack of room, then gives the room back.
    ``tmpfs``: the database lives on a 2 MB tmpfs (``home/hookd.db`` is a link to it); a
    ballast file takes every free byte. ``rlimit``: the daemon's RLIMIT_FSIZE is lowered to
    the database's and its WAL's size (prlimit(2) on the running daemon): no file grows."""

    def __init__(self, how: str, tmp: Path, stack: contextlib.ExitStack):
        self.how = how
        self.home_dir = tmp / "home"
        self.home_dir.mkdir()
        if how == "tmpfs":
            small = stack.enter_context(small_tmpfs(tmp / "small"))
            (self.home_dir / "hookd.db").symlink_to(small / "hookd.db")
            self.ballast = small / "ballast"
        self.daemon: DaemonProcess | None = None

    def fill(self) -> None:
        assert self.daemon is not None and self.daemon.proc is not None
        if self.how == "tmpfs":
            fd = os.open(self.ballast, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while True:
                    os.write(fd, b"\0" * 4096)
            except OSError:
                pass
            finally:
                os.close(fd)
        else:
            home = Home.resolve(self.home_dir)
            wal = Path(f"{home.db}-wal")
            limit = max(home.db.stat().st_size, wal.stat().st_size if wal.exists() else 0)
            resource.prlimit(self.daemon.proc.pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    def free(self) -> None:
        assert self.daemon is not None and self.daemon.proc is not None
        if self.how == "tmpfs":
            self.ballast.unlink()
        else:
            resource.prlimit(self.daemon.proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


@pytest.mark.parametrize("how", ["tmpfs", "rlimit"])
def test_disk_full_refuses_with_503_keeps_serving_and_loses_nothing(tmp_path: Path, how: str) -> None:
    """While the database cannot grow, every hook is answered 200 (committed) or 503
    ``storage_unavailable`` (not stored: its client spools it), never anything else; status
    and one log line say so; a payload spooled meanwhile stays in the spool (the watcher's
    tries fail, backing off, not in a hot loop); once there is room again storage is back by
    itself (a retry, no hook needed), the outage is recorded (``storage_recovered``) and the
    spool is ingested: every hook of the outage is stored, once."""
    with contextlib.ExitStack() as stack:
        f = Filler(how, tmp_path, stack)
        d = DaemonProcess(f.home_dir).start()
        stack.callback(d.kill)
        f.daemon = d
        home = d.home
        out = Outage(home, "full")
        for _ in range(3):
            assert out.post() == 200
        f.fill()
        for i in range(30):  # what room is left (WAL frames being reused) fills; then 503s
            out.post(fast=i % 2 == 0)
        assert len(out.refused) >= (6 if how == "tmpfs" else 1), "the filled disk never refused a write"
        # the daemon keeps serving: reads, and other requests, are answered
        assert hookd_cli(home.root, "questions", "--json").returncode == 0
        # nothing half-stored: checked before the refused payloads are spooled (under the file-size
        # limit the spool watcher may then ingest them at once: writes there can pass again)
        assert not any(k in stored(home) for k in out.refused)
        out.spool_refused()
        retries = 0
        if how == "tmpfs":  # (under the file-size limit, the WAL's own room is reused: writes may pass)
            st = check_refusal_state(home, "SQLITE_FULL")
            # a payload spooled now stays: its ingestion fails like the hooks did
            wait_until(lambda: status(home)["storage"]["refused"] >= st["refused"] + 2, 30,
                       what="the spool watcher's and the retry's tries")
            assert len(list(home.spool_root.glob("*/*.json"))) == len(out.refused)
            retries = status(home)["storage"]["refused"] - len(out.refused)
            assert retries < 100, "storage retried in a hot loop"
            assert log_lines(d, "storage unavailable:") == 1
        if how == "tmpfs":
            assert not any(k in stored(home) for k in out.refused)  # the spooled ones still waiting
        f.free()
        t0 = time.monotonic()
        wait_until(lambda: status(home)["storage"]["state"] == "ok", 30, what="storage back without a hook")
        out.check_nothing_missing()
        back_s = time.monotonic() - t0
        assert out.post() == 200  # and it goes on: the writer was not wedged
        assert log_lines(d, "Traceback") == 0, d.log.read_text()[-3000:]
        # the outage is recorded by the retry task's next write, after the write that found
        # storage back (hookd.storage_health.retry_until_back): waited for, not assumed done
        rec = wait_until(lambda: [e for e in _events(home) if e["kind"] == "storage_recovered"], 30,
                         what="the storage_recovered event")
        assert rec[0]["data"]["error"].startswith("SQLITE_"), rec
        if how == "tmpfs":
            assert log_lines(d, "storage is back") == 1 and len(rec) == 1, rec
            assert rec[0]["data"]["refused"] >= len(out.refused)
        print(f"\ndisk full [{how}]: {len(out.acked)} hooks answered 200 (all stored), {len(out.refused)} answered "
              f"503 {rec[0]['data']['error']} (none stored; spooled, all ingested {back_s:.1f} s after the room came "
              f"back), {retries} retries while full")
        d.stop()


def _events(home: Home) -> list[dict[str, Any]]:
    return events(home.root)


# --- a lock held by another connection ----------------------------------------------------

def _lock(home: Home) -> sqlite3.Connection:
    """Another connection holding the write lock (``BEGIN EXCLUSIVE``) until closed."""
    other = sqlite3.connect(home.db, isolation_level=None, timeout=30)
    other.execute("BEGIN EXCLUSIVE")
    other.execute("INSERT INTO checkpoints (id, at, frames) VALUES (1, 0, 0) ON CONFLICT(id) DO UPDATE SET at=at")
    return other


def test_locked_database_waits_off_the_loop_then_refuses_with_503_and_loses_nothing(tmp_path: Path) -> None:
    """A database locked by another connection: a hook waits for it without stalling the
    daemon (status is answered while the hook waits), commits when the lock is released in
    time, and past the wait (``HOOKD_BUSY_WAIT_S``) is refused with 503 (SQLITE_BUSY); what
    was spooled meanwhile is ingested once the lock is gone."""
    home_dir = tmp_path / "home"
    env = {**os.environ, "HOOKD_BUSY_WAIT_S": "60"}
    d = DaemonProcess(home_dir, env=env).start()
    try:
        home = d.home
        out = Outage(home, "lockwait")
        assert out.post() == 200
        # a pending question: `hookd questions` reads whether a hook can carry its answer
        assert post(home, (TUI / "007-PreToolUse.json").read_bytes(), "9-0-question")[0] == 200
        other = _lock(home)
        try:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                waiting = pool.submit(post, home, payload(900), "9-1-waits")
                # the hook waits for the lock in the daemon, which meanwhile answers the rest
                wait_until(lambda: status(home)["storage"]["waiting"] >= 1 or waiting.done(), 30,
                           what="the hook to wait for the lock")
                assert not waiting.done()
                r = hookd_cli(home.root, "questions", "--json")  # read without waiting for the lock
                assert r.returncode == 0 and [q["held"] for q in json.loads(r.stdout)] == [True], r.stdout + r.stderr
                assert not waiting.done()
                other.execute("COMMIT")
                assert waiting.result(timeout=60)[0] == 200  # it committed once the lock went
        finally:
            other.close()
        assert "9-1-waits" in stored(home)
        assert status(home)["storage"] == {"state": "ok", "waiting": 0}
    finally:
        d.stop()
    d = DaemonProcess(home_dir, env={**os.environ, "HOOKD_BUSY_WAIT_S": "0.3"}).start()
    try:
        home = d.home
        out = Outage(home, "locked")
        other = _lock(home)
        try:
            for i in range(4):
                assert out.post(fast=i % 2 == 0) == 503
            check_refusal_state(home, "SQLITE_BUSY")
            out.spool_refused()
            n = status(home)["storage"]["refused"]
            wait_until(lambda: status(home)["storage"]["refused"] >= n + 1, 30, what="a retry while locked")
            assert len(list(home.spool_root.glob("*/*.json"))) == len(out.refused)
            assert log_lines(d, "storage unavailable:") == 1
        finally:
            other.rollback()
            other.close()
        wait_until(lambda: status(home)["storage"]["state"] == "ok", 30, what="storage back")
        out.check_nothing_missing()
        assert log_lines(d, "Traceback") == 0, d.log.read_text()[-3000:]
        print(f"\nlocked: a hook waiting for the lock while status was answered, committed once it went; "
              f"{len(out.refused)} refused 503 SQLITE_BUSY past 0.3 s, spooled, all ingested once unlocked")
    finally:
        d.stop()


# --- corrupted on disk ------------------------------------------------------------------------

def test_corrupt_database_refuses_with_503_and_nothing_is_missing_once_repaired(tmp_path: Path) -> None:
    """The database's hook_events index corrupted on disk (its root page overwritten): the
    daemon starts and serves (status says why it cannot read everything), every hook is
    refused 503 (SQLITE_CORRUPT), none half-stored; the spooled payloads stay in the spool
    (no hot loop); with the page restored (a backup) and the daemon restarted, all are stored."""
    home_dir = tmp_path / "home"
    d = DaemonProcess(home_dir).start()
    home = d.home
    before = Outage(home, "pre")
    for _ in range(3):
        assert before.post() == 200
    d.stop()
    db = sqlite3.connect(home.db, isolation_level=None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (root,), = db.execute("SELECT rootpage FROM sqlite_master WHERE name='hook_events_builder'")
    (size,), = db.execute("PRAGMA page_size")
    db.close()
    with open(home.db, "r+b") as f:
        f.seek((root - 1) * size)
        good = f.read(size)
        f.seek((root - 1) * size)
        f.write(b"\xff" * size)
    d = DaemonProcess(home_dir).start()
    try:
        out = Outage(home, "corrupt")
        for i in range(4):
            assert out.post(fast=i % 2 == 0) == 503
        check_refusal_state(home, "SQLITE_CORRUPT")
        out.spool_refused()
        n = status(home)["storage"]["refused"]
        wait_until(lambda: status(home)["storage"]["refused"] >= n + 2, 30, what="retries of the spool")
        assert len(list(home.spool_root.glob("*/*.json"))) == len(out.refused)
        assert status(home)["storage"]["refused"] < 100, "retried in a hot loop"
        assert log_lines(d, "storage unavailable:") == 1
    finally:
        d.stop()
    with open(home.db, "r+b") as f:  # the repair: the page from a backup
        f.seek((root - 1) * size)
        f.write(good)
    d = DaemonProcess(home_dir).start()
    try:
        out.check_nothing_missing()
        assert all(stored(home).get(k) == v for k, v in before.sent.items())
        assert Outage(home, "after").post() == 200
        assert status(home)["storage"]["state"] == "ok"
        print(f"\ncorrupt: {len(out.refused)} hooks refused 503 SQLITE_CORRUPT (none stored), spooled, "
              f"all ingested after the repair and a restart")
    finally:
        d.stop()


# --- deleted or replaced while running ------------------------------------------------------

@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_database_deleted_or_replaced_while_running_stops_acknowledging(tmp_path: Path, how: str) -> None:
    """The database file deleted (or another file renamed over it) while the daemon runs:
    the next commit is not acknowledged (503), nor is any after it, though SQLite would go on
    writing into the unlinked file; status and one log line say so and that a restart is
    needed; after the restart the payloads spooled meanwhile are stored in the database at
    the path."""
    home_dir = tmp_path / "home"
    d = DaemonProcess(home_dir).start()
    try:
        home = d.home
        assert Outage(home, "pre").post() == 200
        if how == "deleted":
            home.db.unlink()
        else:
            shutil.copyfile(home.db, tmp_path / "backup.db")
            os.rename(tmp_path / "backup.db", home.db)
        out = Outage(home, how)
        for i in range(4):
            assert out.post(fast=i % 2 == 0) == 503
        st = check_refusal_state(home, f"database_{how}")
        assert st["final"] is True and "restart" in st["message"], st
        out.spool_refused()
        assert log_lines(d, "storage unavailable:") == 1
        assert r_send(home).returncode != 0  # the API refuses writes too
    finally:
        d.stop()
    d = DaemonProcess(home_dir).start()
    try:
        out.check_nothing_missing()
        assert status(d.home)["storage"]["state"] == "ok"
        print(f"\ndatabase {how}: {len(out.refused)} hooks refused 503 database_{how} (the first one's commit "
              f"into the old file included), spooled, all stored after the restart")
    finally:
        d.stop()


def r_send(home: Home) -> subprocess.CompletedProcess[str]:
    r = hookd_cli(home.root, "send", "b1", "are you there?")
    assert "storage unavailable" in r.stderr, r.stderr
    return r


# --- 4xx replies that name what they stored -----------------------------------------------

@pytest.fixture
def slow_body_daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    d = DaemonProcess(tmp_path / "home", env={**os.environ, "HOOKD_BODY_TIMEOUT_S": "0.5"}).start()
    yield d
    d.stop()
    d.kill()


@pytest.mark.parametrize("fast", [True, False], ids=["fast_path", "asgi"])
def test_a_refused_hook_whose_bytes_were_stored_names_them(slow_body_daemon: DaemonProcess, fast: bool) -> None:
    """A 4xx whose raw bytes were committed (payload_invalid 422; a body that came too late,
    400) carries ``X-Hookd-Stored: <hook event id>`` and ``"stored": <id>`` in the error, on
    both paths, and that hook event holds exactly those bytes; no other reply carries it."""
    home = slow_body_daemon.home
    bad = b'{"hook_event_name": "PreToolUse", "session_id": "s1", "tool_na'
    for body, end, code, status_ in ((bad + b"\n", True, "payload_invalid", 422), (bad, False, "bad_request", 400)):
        delivery = f"{time.time_ns() // 1000}-{os.getpid()}-{int(fast)}{int(end)}"
        st, headers, err = post(home, body, delivery, fast=fast, end=end)
        assert (st, err["code"]) == (status_, code), (st, err)
        assert isinstance(err["stored"], int) and headers["x-hookd-stored"] == str(err["stored"]), (headers, err)
        db = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
        try:
            (raw,), = db.execute("SELECT raw FROM hook_events WHERE id=?", (err["stored"],))
        finally:
            db.close()
        assert bytes(raw) == body
    st, headers, err = post(home, payload(2), "x", fast=fast, harness="nope")  # refused, nothing stored
    assert st >= 400 and "x-hookd-stored" not in headers and "stored" not in err, (st, headers, err)
    st, headers, _ = post(home, payload(1), "ok-1", fast=fast)
    assert st == 200 and "x-hookd-stored" not in headers


# --- the store itself: group commit, locks, caches --------------------------------------------

def _limit_growth(st: Store) -> None:
    """Leave ~10 free pages in the database and forbid it to grow: a small write fits, a big
    one fails with SQLITE_FULL (a real limit of SQLite's, ``max_page_count``)."""
    w = st._w
    assert w is not None
    w.execute("CREATE TABLE pad (x BLOB)")
    w.execute("INSERT INTO pad VALUES (zeroblob(40000))")
    w.execute("DROP TABLE pad")
    (pages,), = w.execute("PRAGMA page_count")
    w.execute(f"PRAGMA max_page_count={pages}")


def _allow_growth(st: Store) -> None:
    assert st._w is not None
    st._w.execute("PRAGMA max_page_count=4294967294")


def test_a_storage_error_in_a_group_commit_fails_the_whole_group_and_the_store_recovers(tmp_path: Path) -> None:
    """Writes committed together fail together when the database fails (none acknowledged,
    none of their after-commit callbacks run, nothing of them stored); a lone write that
    fails is refused the same way; the next write after the fault commits."""
    from hookd.models import HookdError

    async def run() -> None:
        st = await Store(tmp_path / "h.db").open()
        try:
            calls: list[str] = []

            def ok(tx: Any, name: str) -> str:
                tx.append_event("probe", name, None, 1.0, {"n": name})
                tx.after_commit.append(lambda: calls.append(name))
                return name

            def big(tx: Any) -> None:
                tx.append_event("probe", "big", None, 1.0, {"blob": "x" * 200_000})

            _limit_growth(st)
            results = await asyncio.gather(st.write(ok, "a"), st.write(ok, "b"), st.write(big), st.write(ok, "c"),
                                           return_exceptions=True)
            assert results[0][0] == "a"  # the first of its turn: committed alone, before the group
            for r in results[1:]:
                assert isinstance(r, HookdError) and r.code == "storage_unavailable" and r.status == 503, r
            assert calls == ["a"]
            with pytest.raises(HookdError) as lone:
                await st.write(big)
            assert lone.value.code == "storage_unavailable"
            assert st.storage()["state"] == "unavailable" and st.storage()["error"] == "SQLITE_FULL"
            assert [e.builder for e in await st.events_after(0, 100) if e.kind == "probe"] == ["a"]
            _allow_growth(st)
            assert (await st.write(ok, "d"))[0] == "d" and calls == ["a", "d"]
            assert st.storage() == {"state": "ok", "waiting": 0}
            assert [e.builder for e in await st.events_after(0, 100) if e.kind == "probe"] == ["a", "d"]
        finally:
            await st.close()

    asyncio.run(run())


def test_a_locked_database_is_waited_for_without_blocking_the_event_loop(tmp_path: Path) -> None:
    """While another connection holds the write lock, a write waits in pauses of the event
    loop: a coroutine releasing the lock runs meanwhile and the write then commits; past the
    wait the write is refused (StorageUnavailable, SQLITE_BUSY), not a raw sqlite3 error."""
    from hookd.models import HookdError

    async def run() -> None:
        st = await Store(tmp_path / "h.db").open()
        other = sqlite3.connect(tmp_path / "h.db", isolation_level=None)
        try:
            def ok(tx: Any, name: str) -> str:
                tx.append_event("probe", name, None, 1.0, {})
                return name

            other.execute("BEGIN EXCLUSIVE")
            st.busy_wait_s = 60.0

            write = asyncio.ensure_future(st.write(ok, "waited"))
            await asyncio.sleep(0)  # the write has started (and found the lock taken) ...
            other.execute("COMMIT")  # ... and the loop is free: the lock goes while it waits
            assert (await write)[0] == "waited"
            other.execute("BEGIN EXCLUSIVE")
            st.busy_wait_s = 0.05
            with pytest.raises(HookdError) as refused:
                await st.write(ok, "refused")
            assert refused.value.code == "storage_unavailable" and st.storage()["error"] == "SQLITE_BUSY"
            other.execute("ROLLBACK")
            assert (await st.write(ok, "after"))[0] == "after" and st.storage()["state"] == "ok"
        finally:
            other.close()
            await st.close()

    asyncio.run(run())


def test_a_failed_commit_fills_no_cache(tmp_path: Path) -> None:
    """A hook whose transaction failed leaves the daemon's caches as they were: after the
    fault, the builder it would have recorded is recorded by its next hook."""
    from hookd.models import HookdError

    async def run() -> None:
        st = await Store(tmp_path / "home" / "h.db").open() if (tmp_path / "home").mkdir() is None else None
        assert st is not None
        core = Hookd(Home.resolve(tmp_path / "home"), st)
        try:
            _limit_growth(st)
            with pytest.raises(HookdError):
                await core.ingest_hook("claude-code", "b-new", payload(1, 100_000), delivery_id="d1")
            assert not await st.builder_known("b-new")
            _allow_growth(st)
            await core.ingest_hook("claude-code", "b-new", payload(2), delivery_id="d2")
            assert await st.builder_known("b-new")
        finally:
            await core.close()
            await st.close()

    asyncio.run(run())


# --- end to end: hooks through the generated client -------------------------------------------

@pytest.mark.parametrize("fault", ["locked", "rlimit"])
def test_hooks_through_the_client_while_storage_is_broken_nothing_missing(tmp_path: Path, worktree: Path, fault: str) -> None:
    """N hooks run as Claude Code runs them (``sh -c "<command>"``) while the database cannot
    commit: each exits 0; once storage is back every one of them is stored, exactly once."""
    home_dir = tmp_path / "home"
    d = DaemonProcess(home_dir, env={**os.environ, "HOOKD_BUSY_WAIT_S": "0.3"}).start()
    try:
        home = d.home
        settings = tmp_path / "b1.json"
        assert hookd_run(home_dir, "spawn", "b1", "--settings-file", str(settings)).returncode == 0
        command = settings_command(settings, "PreToolUse")
        other = _lock(home) if fault == "locked" else None
        if fault == "rlimit":
            assert d.proc is not None
            resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (home.db.stat().st_size, resource.RLIM_INFINITY))
        ids = []
        for i in range(10):
            r = run_hook(command, payload(100 + i, 3000), worktree)
            assert r.returncode == 0 and r.stdout == b""
            ids.append(f"toolu_fault_{100 + i}")
        assert status(home)["storage"]["state"] == "unavailable"
        if other is not None:
            other.rollback()
            other.close()
        else:
            resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

        def all_there() -> bool:
            db = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
            try:
                got = [t for (t,) in db.execute("SELECT tool_use_id FROM hook_events WHERE tool_use_id LIKE 'toolu_fault_%'")]
            finally:
                db.close()
            return sorted(got) == sorted(ids)
        wait_until(all_there, 30, what="every hook of the outage stored once")
    finally:
        d.stop()
