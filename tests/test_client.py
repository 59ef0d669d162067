"""The generated hook clients (compiled and bash: every test runs with each), run exactly as
Claude Code runs them (``sh -c "<command>"``, cwd = worktree, payload on stdin), against a
real `hookd serve` on real sockets.

Covers the acceptance path (question pending, then answered), fail-open and spooling while
the daemon is down (never started, stopped, killed -9 with a stale endpoint file), spool
de-duplication by delivery id, bad input (cases B12, B13, B15), SIGTERM, and concurrency.
Waits are on conditions with deadlines (wait_until); the only sleeps pace test input.
"""

from __future__ import annotations

import http.client
import json
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from hookd.client import Client
from hookd.config import Endpoint, Home, process_start
from hookd.daemonproc import DaemonProcess
from hookd.harness import claude_code as cc

from tests.conftest import TUI, hookd_cli, hookd_run, questions, run_hook, settings_command, wait_until

pytestmark = pytest.mark.daemon

BUILDER = "b-1"
ASK_ID = "toolu_01ASK0000000000000000001"
ASK_PRE = TUI / "007-PreToolUse.json"
ASK_POST = TUI / "010-PostToolUse.json"
#: The recorded TUI scenario's hooks that hookd registers, in the order they ran.
SEQUENCE = [p for p in sorted(TUI.glob("*.json")) if json.loads(p.read_bytes())["hook_event_name"] in cc.REGISTERED_EVENTS]


# --- helpers ------------------------------------------------------------------------------


@pytest.fixture(autouse=True, params=["c", "bash"])
def client_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs with each hook client `hookd spawn` can write."""
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", request.param)
    return request.param


def spawn(home: Path, worktree: Path, *extra: str, builder: str = BUILDER) -> dict[str, str]:
    """`hookd spawn` for ``builder``; returns the generated command per registered event."""
    r = hookd_run(home, "spawn", builder, "--worktree", os.fspath(worktree), *extra)
    assert r.returncode == 0, r.stderr
    settings = worktree / ".claude" / "settings.local.json"
    return {ev: settings_command(settings, ev) for ev in cc.REGISTERED_EVENTS}


def api(home: Path) -> Client:
    return Client(Home.resolve(home), timeout=10)


def all_events(home: Path) -> list[dict[str, Any]]:
    """Every event, oldest first, read over the daemon's socket (fast enough to poll)."""
    c = api(home)
    out: list[dict[str, Any]] = []
    try:
        while True:
            batch = list(c.lines("/v1/events", after=out[-1]["seq"] if out else 0, limit=1000))
            out += batch
            if len(batch) < 1000:
                return out
    finally:
        c.close()


def hooks_received(home: Path) -> list[dict[str, Any]]:
    return [e["data"] for e in all_events(home) if e["kind"] == "hook_received"]


def kinds(home: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in all_events(home) if e["kind"] == kind]


def stored_hooks(home: Path) -> list[tuple[str, bytes]]:
    """(source, raw bytes) of every stored hook event, read straight from the database."""
    db = sqlite3.connect(f"file:{home / 'hookd.db'}?mode=ro", uri=True)
    try:
        return [(src, bytes(raw)) for src, raw in db.execute("SELECT source, raw FROM hook_events ORDER BY id")]
    finally:
        db.close()


def signature(payload: bytes) -> tuple[str, str | None, str | None]:
    obj = json.loads(payload)
    return obj["hook_event_name"], obj.get("tool_name"), obj.get("tool_use_id")


def received_signatures(home: Path) -> list[tuple[str, str | None, str | None]]:
    return [(d["hook_event_name"], d.get("tool_name"), d.get("tool_use_id")) for d in hooks_received(home)]


def spool_files(home: Path, builder: str = BUILDER) -> list[Path]:
    d = home / "spool" / builder
    return sorted(p for p in d.iterdir()) if d.is_dir() else []


def assert_clean_exit(r: subprocess.CompletedProcess[bytes] | tuple[int, bytes, bytes], what: str = "") -> None:
    """B12/B13: exit code 0; stdout empty or exactly one JSON object; stderr empty."""
    rc, out, err = (r.returncode, r.stdout, r.stderr) if isinstance(r, subprocess.CompletedProcess) else r
    assert rc == 0, f"{what}: exit code {rc}, stdout {out[:200]!r}"
    if out.strip():
        assert out.lstrip().startswith(b"{"), f"{what}: plain text on stdout: {out[:200]!r}"
        json.loads(out)  # exactly one valid JSON document (extra data raises)
    assert err == b"", f"{what}: stderr {err[:200]!r}"


def daemon_up(home: Path) -> bool:
    r = hookd_cli(home, "status", "--json")
    return r.returncode == 0 and json.loads(r.stdout)["pid"] > 0


class HeldClient:
    """The generated command with stdin as a pipe we control (written, paced, held open)."""

    def __init__(self, command: str, cwd: Path):
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(["sh", "-c", command], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.elapsed: float | None = None

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the client is gone; its exit is what the test checks

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def wait(self, timeout: float) -> tuple[int, bytes, bytes]:
        """Wait for exit (stdin stays as it is); returns (rc, stdout, stderr)."""
        rc = self.proc.wait(timeout)
        self.elapsed = time.perf_counter() - self.t0
        assert self.proc.stdout is not None and self.proc.stderr is not None
        out, err = self.proc.stdout.read(), self.proc.stderr.read()
        self.close_stdin()
        return rc, out, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                try:
                    f.close()
                except BrokenPipeError:
                    pass


def sigterm_trapped(pid: int) -> bool:
    """The client installed its TERM handler (bit 15 in SigCgt): it is our client running,
    not the ``sh`` that execs it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    cgt = int(next(l for l in status.splitlines() if l.startswith("SigCgt:")).split()[1], 16)
    return bool(cgt & (1 << (signal.SIGTERM - 1)))


@pytest.fixture
def stopped(home: Path):
    """A DaemonProcess on ``home`` that the test starts (and stops, kills) itself."""
    d = DaemonProcess(home)
    yield d
    d.stop()
    d.kill()


# --- acceptance ---------------------------------------------------------------------------


def test_recorded_ask_becomes_pending_then_answered(daemon: DaemonProcess, home: Path, worktree: Path) -> None:
    cmd = spawn(home, worktree)
    r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    pending = questions(home, "pending")
    assert [q["id"] for q in pending] == [ASK_ID]
    assert pending[0]["state"] == "pending"
    assert pending[0]["questions"][0]["question"] == "Which color do you prefer?"
    assert [o["label"] for o in pending[0]["questions"][0]["options"]] == ["Red", "Blue"]

    r = run_hook(cmd["PostToolUse"], ASK_POST.read_bytes(), worktree)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert questions(home, "pending") == []
    [q] = questions(home, "all")
    assert q["id"] == ASK_ID and q["state"] == "answered"
    assert q["answers"] == {"Which color do you prefer?": "Blue"}


# --- daemon down: fail open, spool, ingest exactly once -----------------------------------


def run_timed(command: str, payload: bytes, cwd: Path) -> tuple[subprocess.CompletedProcess[bytes], float]:
    t = time.perf_counter()
    r = run_hook(command, payload, cwd)
    return r, time.perf_counter() - t


@pytest.mark.parametrize("mode", ["never-started", "stopped", "killed-9"])
def test_fail_open_spools_and_daemon_ingests_exactly_once_in_order(
    mode: str, stopped: DaemonProcess, home: Path, worktree: Path
) -> None:
    cmd = spawn(home, worktree)
    payloads = [p.read_bytes() for p in SEQUENCE]
    live = 0
    if mode != "never-started":
        stopped.start()
        r = run_hook(cmd["SessionStart"], payloads[0], worktree)
        assert (r.returncode, r.stdout) == (0, b"")
        live = 1
        assert received_signatures(home) == [signature(payloads[0])]
        if mode == "stopped":
            assert stopped.stop() == 0
            assert not home.joinpath("run", "endpoint").exists()
        else:
            stopped.kill()
            assert home.joinpath("run", "endpoint").exists(), "kill -9 must leave the stale endpoint file"
    assert spool_files(home) == []

    durations = []
    for payload in payloads[live:]:
        event = json.loads(payload)["hook_event_name"]
        r, dt = run_timed(cmd[event], payload, worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b""), event
        durations.append(dt)
    # failing open is not waiting for the 5 s deadline (how fast it is: bench/run.py, fail-open)
    assert max(durations) < 5, f"fail-open took {durations}"
    spooled = spool_files(home)
    assert len(spooled) == len(payloads) - live
    assert sorted(p.read_bytes() for p in spooled) == sorted(payloads[live:])  # whole payloads

    stopped.start()
    expected = [signature(p) for p in payloads]
    wait_until(lambda: len(hooks_received(home)) >= len(expected) and not spool_files(home), 60,
               what="the spool to be ingested")
    assert received_signatures(home) == expected  # exactly once each, in the order they ran
    assert spool_files(home) == []
    assert [e["data"]["id"] for e in kinds(home, "question_pending")] == [ASK_ID]
    [resolved] = kinds(home, "question_resolved")
    assert resolved["data"]["answers"] == {"Which color do you prefer?": "Blue"}
    sources = [d["source"] for d in hooks_received(home)]
    assert sources == ["live"] * live + ["spool"] * (len(payloads) - live)


@pytest.mark.parametrize("stdin", ["chunked-3-bytes", "held-open-after-object"])
def test_daemon_down_spools_the_whole_payload_even_when_stdin_is_slow(
    stdin: str, stopped: DaemonProcess, home: Path, worktree: Path
) -> None:
    """B15 with the daemon down: the spool gets the whole object, never the first slice."""
    # a deadline far past the wait below: a client that waited for EOF would still be running
    cmd = spawn(home, worktree, "--deadline", "60")
    payload = CHUNKED if stdin == "chunked-3-bytes" else ASK_PRE.read_bytes()
    c = HeldClient(cmd["PreToolUse"], worktree)
    writer = None
    try:
        if stdin == "chunked-3-bytes":
            writer = threading.Thread(target=paced_write, args=(c, payload))
            writer.start()
        else:
            c.write(payload)  # and hold stdin open
        rc, out, err = c.wait(timeout=30)  # (half its deadline: it ended on the whole object, not at EOF)
    finally:
        if writer is not None:
            writer.join()
        c.kill()
    assert (rc, out, err) == (0, b"", b"")
    [f] = spool_files(home)
    assert f.read_bytes() == payload
    stopped.start()
    wait_until(lambda: hooks_received(home) and not spool_files(home), 60, what="the spool to be ingested")
    assert received_signatures(home) == [signature(payload)]
    assert kinds(home, "hook_invalid") == []


def test_stale_endpoint_whose_port_another_daemon_took_spools(stopped: DaemonProcess, home: Path, worktree: Path, tmp_path: Path,
                                                            client_kind: str) -> None:
    """killed -9, and the port now belongs to another hookd (another home, another token):
    its 401 means "not stored here", so the payload is spooled, not dropped. (The compiled
    client never reads the endpoint file: it connects to its own home's Unix socket, which
    no other daemon can own; its stale-socket case is in the fail-open test above.)"""
    if client_kind == "c":
        pytest.skip("the TCP endpoint file is the bash client's transport")
    cmd = spawn(home, worktree)
    other = DaemonProcess(tmp_path / "other-home")
    try:
        other.start()
        theirs = other.home.read_endpoint()
        stopped.home.run_dir.mkdir(parents=True, exist_ok=True)
        # as if our daemon had written it and died, and the other daemon got its pid and port:
        # the liveness check passes, and the reply (401, without our proof) decides
        stopped.home.endpoint_file.write_text(
            Endpoint(theirs.port, "not-the-right-token", theirs.pid, theirs.start, "our-proof").line())
        r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        assert [f.read_bytes() for f in spool_files(home)] == [ASK_PRE.read_bytes()]
    finally:
        other.stop()
        other.kill()
    stopped.start()
    wait_until(lambda: not spool_files(home) and hooks_received(home), 60, what="the spool to be ingested")
    assert [q["id"] for q in questions(home, "pending")] == [ASK_ID]


class Impostor:
    """A local process on a loopback port (one a crashed daemon left in its endpoint file):
    it accepts every connection, records what it is sent, and answers each with a 200 that
    would allow the tool call."""

    REPLY = b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'

    def __init__(self, port: int = 0) -> None:
        import socket

        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", port))
        self.srv.listen()
        self.port = self.srv.getsockname()[1]
        self.got: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            c.settimeout(10)
            data = b""
            try:
                while b"0\r\n\r\n" not in data:
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            self.got.append(data)
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                      % len(self.REPLY) + self.REPLY)
            c.close()

    def close(self) -> None:
        import socket

        with __import__("contextlib").suppress(OSError):
            self.srv.shutdown(socket.SHUT_RDWR)
        self.srv.close()
        self.thread.join(10)


def test_stale_endpoint_of_a_dead_daemon_is_never_contacted(stopped: DaemonProcess, home: Path, worktree: Path,
                                                             client_kind: str) -> None:
    """killed -9, and another local process took the port of the endpoint file left behind: the
    bash client sees that the daemon which wrote the file is gone and spools without connecting
    (the payload and the token never reach that process; its "allow" never reaches Claude Code)."""
    if client_kind == "c":
        pytest.skip("the TCP endpoint file is the bash client's transport (the compiled one uses the socket)")
    cmd = spawn(home, worktree)
    stopped.start()
    stale = stopped.home.read_endpoint()
    stopped.kill()
    assert stopped.home.endpoint_file.exists()
    imp = Impostor(stale.port)
    try:
        r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
    finally:
        imp.close()
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert imp.got == []
    assert [f.read_bytes() for f in spool_files(home)] == [ASK_PRE.read_bytes()]
    stopped.start()
    wait_until(lambda: not spool_files(home) and hooks_received(home), 60, what="the spool to be ingested")
    assert [q["id"] for q in questions(home, "pending")] == [ASK_ID]


@pytest.mark.parametrize("case", ["reply-without-proof", "pid-reused"])
def test_endpoint_process_that_is_not_the_daemon_is_not_trusted(case: str, home: Path, worktree: Path,
                                                               client_kind: str) -> None:
    """The endpoint file names a live pid, but the process on its port is not the daemon that
    wrote it. reply-without-proof: the pid and start time match (this test's own process), the
    reply lacks the daemon's proof: its "allow" is not printed, and the payload is spooled.
    pid-reused: the pid is alive but its start time differs from the file's (the daemon's pid
    went to another process): the client does not even connect."""
    if client_kind == "c":
        pytest.skip("the TCP endpoint file is the bash client's transport (the compiled one uses the socket)")
    cmd = spawn(home, worktree)
    h = Home.resolve(home)
    h.run_dir.mkdir(parents=True, exist_ok=True)
    imp = Impostor()
    start = process_start() if case == "reply-without-proof" else str(int(process_start()) + 1)
    h.endpoint_file.write_text(Endpoint(imp.port, "hook-token", os.getpid(), start, "the-daemons-proof").line())
    try:
        r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
    finally:
        imp.close()
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    if case == "reply-without-proof":
        assert len(imp.got) == 1 and b"Authorization: Bearer hook-token\r\n" in imp.got[0]
    else:
        assert imp.got == []
    assert [f.read_bytes() for f in spool_files(home)] == [ASK_PRE.read_bytes()]


def test_serve_brings_an_older_bash_client_up_to_date(stopped: DaemonProcess, home: Path, worktree: Path,
                                                     client_kind: str) -> None:
    """A bash client written by an older hookd (here: one that reads the old ``<port>
    <token>`` endpoint line) is rewritten when the daemon starts, so its builders' hooks are
    delivered live again without a new `hookd spawn`."""
    if client_kind == "c":
        pytest.skip("the compiled client does not read the endpoint file")
    cmd = spawn(home, worktree)
    client = Home.resolve(home).client_script
    current = client.read_bytes()
    client.write_bytes(current.replace(b"read -r port token pid start proof", b"read -r port token"))
    assert client.read_bytes() != current
    stopped.start()
    assert client.read_bytes() == current
    r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
    assert (r.returncode, r.stdout) == (0, b"")
    assert spool_files(home) == [] and [q["id"] for q in questions(home, "pending")] == [ASK_ID]


def endpoint(home: Path) -> tuple[int, str]:
    """The port and the hook token of ``home``'s running daemon."""
    ep = Home.resolve(home).read_endpoint()
    return ep.port, ep.hook_token


def post_hook(home: Path, body: bytes, delivery: str, builder: str = BUILDER) -> tuple[int, bytes]:
    """A direct HTTP POST to the hook route over the loopback TCP port, as a client does."""
    port, token = endpoint(home)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", f"/v1/hooks/claude-code/{builder}", body=body, headers={
            "Authorization": f"Bearer {token}", "X-Hookd-Delivery": delivery,
            "Content-Type": "application/json",
        })
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def drop_spool(home: Path, delivery: str, body: bytes, builder: str = BUILDER) -> Path:
    """Write a spool file the way the client does (temp file + rename)."""
    d = home / "spool" / builder
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{delivery}.tmp"
    tmp.write_bytes(body)
    final = d / f"{delivery}.claude-code.json"
    os.rename(tmp, final)
    return final


def new_delivery_id(n: int = 0) -> str:
    return f"{time.time_ns() // 1000 + n}-{os.getpid()}-{4242 + n}"


@pytest.mark.parametrize("when", ["on-restart", "while-running"])
def test_spooled_copy_of_a_live_delivery_is_stored_once(
    when: str, daemon: DaemonProcess, home: Path, worktree: Path
) -> None:
    spawn(home, worktree)
    ask = ASK_PRE.read_bytes()
    dup_id = new_delivery_id()
    status, body = post_hook(home, ask, dup_id)
    assert (status, body) == (200, b"")
    assert [q["id"] for q in questions(home, "pending")] == [ASK_ID]

    if when == "on-restart":
        assert daemon.stop() == 0
    drop_spool(home, dup_id, ask)                       # same delivery id: a duplicate
    drop_spool(home, new_delivery_id(1), ASK_POST.read_bytes())  # fresh id: must be ingested
    if when == "on-restart":
        daemon.start()
    wait_until(lambda: not spool_files(home) and len(hooks_received(home)) >= 2, 60,
               what="both spool files to be consumed")

    assert received_signatures(home) == [signature(ask), signature(ASK_POST.read_bytes())]
    assert [e["data"]["id"] for e in kinds(home, "question_pending")] == [ASK_ID]
    assert len(kinds(home, "question_resolved")) == 1
    r = hookd_cli(home, "status", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["counts"]["hook_events"] == 2


# --- bad input (B12, B13, B15) ------------------------------------------------------------

STOP = b'{"hook_event_name":"Stop","session_id":"s-bad","stop_hook_active":false}'


def big_payload() -> bytes:
    obj = json.loads((TUI / "005-PostToolUse.json").read_bytes())
    obj["tool_use_id"] = "toolu_BIG6MB"
    obj["tool_response"] = {"stdout": "x" * (6 * 1024 * 1024), "stderr": "", "interrupted": False}
    return json.dumps(obj).encode()


#: stdin written at once then closed: name -> (bytes, what the daemon must have recorded)
#: ("hook": one hook_received; "invalid": one hook_invalid with the raw bytes; None: nothing)
STATIC_INPUTS: dict[str, tuple[Callable[[], bytes], str | None]] = {
    "malformed-json": (lambda: b'{"hook_event_name": "Stop", "session_id": oops}', "invalid"),
    "truncated-json": (lambda: STOP[:30], "invalid"),
    "non-utf8": (lambda: b'{"hook_event_name":"Stop","session_id":"s-\xff\xfe","x":"\xc3\x28"}', "any"),
    "json-array": (lambda: b'[' + STOP + b']', "invalid"),
    "six-mb": (big_payload, "hook"),
    "empty-stdin": (lambda: b"", None),
}


def recorded_kinds(home: Path) -> list[str]:
    return [e["kind"] for e in all_events(home) if e["kind"] in ("hook_received", "hook_invalid")]


@pytest.mark.parametrize("name", list(STATIC_INPUTS))
def test_bad_input_fails_open_and_nothing_is_lost(name: str, daemon: DaemonProcess, home: Path, worktree: Path) -> None:
    # The 6 MB case gets a long deadline: bash's timed `read` costs ~2 syscalls per byte,
    # and this test is about the bytes arriving intact, not about the read speed.
    cmd = spawn(home, worktree, *(["--deadline", "120"] if name == "six-mb" else []))
    make, expect = STATIC_INPUTS[name]
    payload = make()
    r = run_hook(cmd["PreToolUse"], payload, worktree, timeout=60)
    assert_clean_exit(r, name)
    assert daemon_up(home), "the daemon must survive bad input"
    if expect is None:
        assert recorded_kinds(home) == [] and spool_files(home) == []
        return
    got = recorded_kinds(home)
    if expect == "any":
        assert len(got) == 1, got
    else:
        assert got == [f"hook_{'received' if expect == 'hook' else 'invalid'}"], got
    assert spool_files(home) == []
    if expect == "hook":
        assert hooks_received(home)[0]["tool_use_id"] == "toolu_BIG6MB"
        assert stored_hooks(home) == [("live", payload)]  # byte for byte, not via the spool
    if expect == "invalid":
        [ev] = kinds(home, "hook_invalid")
        assert ev["data"]["bytes"] == len(payload)  # raw bytes kept as received


@pytest.mark.parametrize("kib", [64, 300, 1024])
def test_large_payload_on_a_pipe_is_delivered_live_byte_for_byte(
    kib: int, daemon: DaemonProcess, home: Path, worktree: Path
) -> None:
    """A payload that takes longer than one 50 ms read slice (bash reads stdin with a timeout):
    whatever bash had buffered from stdin must not leak into the next read of another fd
    (the endpoint file, the socket); the daemon gets exactly the bytes Claude Code wrote (a
    long deadline: on a loaded machine bash's timed reads of 1 MiB outlast the default 5 s)."""
    cmd = spawn(home, worktree, "--deadline", "120")
    obj = json.loads((TUI / "005-PostToolUse.json").read_bytes())
    obj["tool_use_id"] = f"toolu_LARGE{kib}"
    lines = [f"line {i:06d} " + "abcdefghij" * 6 for i in range(kib * 1024 // 80)]
    obj["tool_response"] = {"stdout": "\n".join(lines), "stderr": "", "interrupted": False}
    payload = json.dumps(obj, indent=2).encode()
    r = run_hook(cmd["PostToolUse"], payload, worktree)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    wait_until(lambda: not spool_files(home) and stored_hooks(home), 60, what="the payload to be stored")
    [(source, raw)] = stored_hooks(home)
    assert len(raw) == len(payload) and raw == payload
    assert source == "live"


def test_payload_over_64k_leaves_nothing_holding_the_harness_stderr(daemon: DaemonProcess, home: Path, worktree: Path) -> None:
    """The harness reads the hook's stderr until EOF: once the client has exited, nothing it
    started (the bash client's >64 KiB watchdog, a `sleep` until the deadline) may keep that
    pipe open, or every such hook would last the whole deadline."""
    cmd = spawn(home, worktree, "--deadline", "30")
    obj = json.loads((TUI / "005-PostToolUse.json").read_bytes())
    obj["tool_use_id"] = "toolu_STDERR100K"
    obj["tool_response"] = {"stdout": "y" * (100 * 1024), "stderr": "", "interrupted": False}
    t = time.perf_counter()
    r = run_hook(cmd["PostToolUse"], json.dumps(obj).encode(), worktree)  # reads stderr to EOF
    elapsed = time.perf_counter() - t
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert elapsed < 15, f"stderr stayed open {elapsed:.1f} s (the deadline is 30 s)"


def test_stdin_held_open_after_complete_object(daemon: DaemonProcess, home: Path, worktree: Path) -> None:
    cmd = spawn(home, worktree, "--deadline", "60")
    c = HeldClient(cmd["PreToolUse"], worktree)
    try:
        c.write(ASK_PRE.read_bytes())  # and never close stdin
        rc, out, err = c.wait(timeout=30)  # half its deadline: it ended on the whole object, not at EOF
    finally:
        c.kill()
    assert_clean_exit((rc, out, err), "held open")
    assert [q["id"] for q in questions(home, "pending")] == [ASK_ID]
    assert daemon_up(home)


def paced_write(c: HeldClient, payload: bytes, size: int = 3, every: float = 0.2) -> None:
    """Input pacing (not synchronisation): ``size``-byte chunks every ``every`` s, then EOF."""
    for i in range(0, len(payload), size):
        c.write(payload[i:i + size])
        time.sleep(every)
    c.close_stdin()


CHUNKED = b'{"hook_event_name":"Stop","session_id":"s-chunked"}'  # 17 chunks: ~3.4 s < 5 s


def test_object_fed_in_3_byte_chunks_every_200ms_is_recorded(daemon: DaemonProcess, home: Path, worktree: Path) -> None:
    cmd = spawn(home, worktree)
    c = HeldClient(cmd["Stop"], worktree)
    writer = threading.Thread(target=paced_write, args=(c, CHUNKED))
    writer.start()
    try:
        rc, out, err = c.wait(timeout=15)
    finally:
        writer.join()
        c.kill()
    assert_clean_exit((rc, out, err), "chunked")
    got = kinds(home, "hook_received")
    assert [(e["data"]["hook_event_name"], e["session_id"]) for e in got] == [("Stop", "s-chunked")]
    assert kinds(home, "hook_invalid") == []
    assert spool_files(home) == []
    assert daemon_up(home)


#: Field case B15(b) against the default 5 s deadline: 3-byte chunks every 200 ms; these 132
#: bytes take about 9 s to arrive (the case's 260 took 17 s: arriving past the deadline is
#: what matters).
TRICKLED = b'{"hook_event_name":"Stop","session_id":"s-trickled","stop_hook_active":false,"pad":"'
TRICKLED += b"x" * (130 - len(TRICKLED)) + b'"}'


def test_payload_trickled_past_the_deadline_releases_the_harness_and_is_recorded_once(
        daemon: DaemonProcess, home: Path, worktree: Path) -> None:
    """B15(b), both promises: the hook (as the harness runs it: its stdout and stderr pipes
    read to their end) is over, exit 0 and nothing printed, while the payload is still
    arriving; a detached reader it left reads on to EOF and spools the whole payload, which the
    daemon records once (the body it was cut off with at the deadline stays raw, a prefix)."""
    assert len(TRICKLED) == 132
    cmd = spawn(home, worktree)  # the default deadline, 5 s
    c = HeldClient(cmd["Stop"], worktree)
    writer = threading.Thread(target=paced_write, args=(c, TRICKLED))
    writer.start()
    try:
        assert c.proc.stdout is not None and c.proc.stderr is not None
        out, err = c.proc.stdout.read(), c.proc.stderr.read()  # to EOF: nothing of the client holds them
        rc = c.proc.wait(30)
        still_arriving = writer.is_alive()
    finally:
        writer.join()
        c.kill()
    assert (rc, out, err) == (0, b"", b"")
    assert still_arriving, "the hook held the harness until the whole payload had arrived"
    got = wait_until(lambda: kinds(home, "hook_received"), 90, what="the trickled payload recorded")
    assert [(e["data"]["hook_event_name"], e["session_id"]) for e in got] == [("Stop", "s-trickled")]
    wait_until(lambda: not spool_files(home), 60, what="the spool ingested")
    stored = stored_hooks(home)
    assert [(src, raw) for src, raw in stored if raw == TRICKLED] == [("spool", TRICKLED)]
    cut = [raw for _, raw in stored if raw != TRICKLED]
    assert len(cut) <= 1 and all(TRICKLED.startswith(raw) for raw in cut), cut  # what the daemon was cut off with
    assert len(kinds(home, "hook_invalid")) == len(cut) and len(kinds(home, "hook_received")) == 1
    assert daemon_up(home)


def test_nothing_written_and_stdin_held_open_exits_at_deadline(daemon: DaemonProcess, home: Path, worktree: Path) -> None:
    cmd = spawn(home, worktree, "--deadline", "1")
    rc, out, err, elapsed = run_held(cmd["Stop"], worktree, b"", timeout=10)  # held well past the deadline
    assert (rc, out, err) == (0, b"", b"")
    assert elapsed >= 0.9, f"exited after {elapsed:.2f} s, before its 1 s deadline"  # (and by itself: stdin held 10 s)
    # the harness wedged stdin: the one trace of that hook is a 0-byte hook_invalid (docs/usage.md)
    invalid = wait_until(lambda: kinds(home, "hook_invalid"), 60, what="the 0-byte hook_invalid")
    assert [e["data"]["bytes"] for e in invalid] == [0]
    assert kinds(home, "hook_received") == [] and spool_files(home) == []
    assert daemon_up(home)


def run_held(command: str, cwd: Path, data: bytes, timeout: float) -> tuple[int, bytes, bytes, float]:
    """Run ``command`` with ``data`` written and stdin then held open until it exits:
    (rc, stdout, stderr, seconds to exit)."""
    c = HeldClient(command, cwd)
    try:
        c.write(data)
        rc, out, err = c.wait(timeout=timeout)
    finally:
        c.kill()
    assert c.elapsed is not None
    return rc, out, err, c.elapsed


def test_half_a_payload_held_open_past_the_deadline_is_stored_once(daemon: DaemonProcess, home: Path,
                                                                   worktree: Path) -> None:
    """Half an object, then stdin held open: at its deadline the client goes, and the reader
    it leaves spools what has arrived once stdin ends (here: when the test lets go of it); the
    daemon stores the body it was cut off with (if it had one) under ``<id>~cut``. The two are
    the same bytes of one invocation: stored once, raw, as one ``hook_invalid``."""
    cmd = spawn(home, worktree, "--deadline", "1")
    half = ASK_PRE.read_bytes()[:300]
    assert run_held(cmd["PreToolUse"], worktree, half, timeout=10)[:3] == (0, b"", b"")
    wait_until(lambda: stored_hooks(home) and not spool_files(home), 60, what="the cut body stored, the spool ingested")
    # (the compiled client streams as it reads: its cut body is stored live; the bash client
    # connects once stdin has ended or the deadline passed: only its spooled copy exists)
    assert [raw for _, raw in stored_hooks(home)] == [half]
    invalid = kinds(home, "hook_invalid")
    assert len(invalid) == 1 and invalid[0]["data"]["bytes"] == len(half)
    assert kinds(home, "hook_received") == []


def test_a_held_hook_whose_body_never_ends_is_stored_and_let_go(home: Path, worktree: Path,
                                                                  client_kind: str) -> None:
    """The PermissionRequest command (``/hold``: a deadline of its hold plus a minute) with
    half a payload and stdin held open: the daemon's body timeout (here 1 s) comes first; it
    stores what arrived, raw, and answers 400, so the client exits 0 with nothing printed and
    nothing spooled (it was 30 s and nothing stored)."""
    cmd = spawn(home, worktree)
    d = DaemonProcess(home, env={**os.environ, "HOOKD_BODY_TIMEOUT_S": "1"}).start()
    try:
        half = ASK_PRE.read_bytes()[:300]
        # let go by the daemon's 1 s body timeout, long before the client's own (its hold plus a
        # minute): how soon is not what is checked
        rc, out, err, elapsed = run_held(cmd["PermissionRequest"], worktree, half, timeout=120)
        assert (rc, out, err) == (0, b"", b"")
        assert 0.9 <= elapsed < 120, elapsed
        assert stored_hooks(home) == [("live", half)] and spool_files(home) == []
        assert [e["data"]["bytes"] for e in kinds(home, "hook_invalid")] == [len(half)]
    finally:
        d.stop()
        d.kill()



@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (to make the reply come as a read's slice ends)")
def test_a_reply_that_comes_as_a_read_slice_ends_is_read(home: Path, worktree: Path, client_kind: str) -> None:
    """The bash client waits on stdin and the socket in turn, in slices of at most 20 ms
    (``read -t``). A byte that arrives as a slice ends is read, and bash's read then returns
    142 (timed out) with that byte: taken for no reply, it was lost, the rest of the reply was
    not understood, and the held hook waited on stdin until its deadline (15 minutes; seen on
    a busy CI machine). Here strace makes every such wait return 40 ms late, so each byte
    comes after its slice has ended: the client must still read the daemon's 400 and go."""
    if client_kind != "bash":
        pytest.skip("the slices are the bash client's (the compiled one polls both)")
    cmd = spawn(home, worktree)
    d = DaemonProcess(home, env={**os.environ, "HOOKD_BODY_TIMEOUT_S": "1"}).start()
    try:
        late = f"exec strace -f -qq -o /dev/null -e trace=pselect6 -e inject=pselect6:delay_exit=40000 sh -c {shlex.quote(cmd['PermissionRequest'])}"
        half = ASK_PRE.read_bytes()[:300]
        rc, out, err, _ = run_held(late, worktree, half, timeout=120)  # (its own deadline: 15 minutes)
        assert (rc, out, err) == (0, b"", b"")
        assert stored_hooks(home) == [("live", half)] and spool_files(home) == []
    finally:
        d.stop()
        d.kill()

# --- B12/B13 matrix: every path x every daemon state --------------------------------------

HELD_INPUTS = ["held-open-after-object", "chunked-3-bytes", "nothing-held-open"]


def run_input(command: str, cwd: Path, name: str) -> tuple[int, bytes, bytes]:
    if name in STATIC_INPUTS:
        r = run_hook(command, STATIC_INPUTS[name][0](), cwd, timeout=60)
        return r.returncode, r.stdout, r.stderr
    c = HeldClient(command, cwd)
    writer = None
    try:
        if name == "held-open-after-object":
            c.write(ASK_PRE.read_bytes())
        elif name == "chunked-3-bytes":
            writer = threading.Thread(target=paced_write, args=(c, CHUNKED))
            writer.start()
        return c.wait(timeout=15)
    finally:
        if writer is not None:
            writer.join()
        c.kill()


@pytest.fixture(scope="module", params=["daemon-up", "never-started", "killed-9-stale-endpoint"])
def matrix_env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("matrix")
    home, worktree = root / "home", root / "wt"
    worktree.mkdir()
    cmd = spawn(home, worktree)["PreToolUse"]
    d = DaemonProcess(home)
    if request.param != "never-started":
        d.start()
    if request.param.startswith("killed"):
        d.kill()
        assert home.joinpath("run", "endpoint").exists()
    yield request.param, home, worktree, cmd, d
    d.stop()
    d.kill()


@pytest.mark.parametrize("name", list(STATIC_INPUTS) + HELD_INPUTS)
def test_exit_code_and_stdout_matrix(name: str, matrix_env: tuple) -> None:
    state, home, worktree, cmd, d = matrix_env
    rc, out, err = run_input(cmd, worktree, name)
    assert rc != 1 and rc != 2, f"{state}/{name}: exit {rc} would be read as an error or a block"
    assert_clean_exit((rc, out, err), f"{state}/{name}")
    if state == "daemon-up":
        assert d.running
        c = api(home)
        try:
            assert c.get("/v1/status")["pid"] == d.proc.pid  # type: ignore[union-attr]
        finally:
            c.close()


# --- SIGTERM (Claude Code's timeout, and Esc) ----------------------------------------------


@pytest.mark.parametrize("where", ["waiting-on-stdin-daemon-up", "waiting-on-stdin-daemon-down", "waiting-on-hung-daemon"])
def test_sigterm_exits_0_silently(where: str, stopped: DaemonProcess, home: Path, worktree: Path) -> None:
    cmd = spawn(home, worktree, "--deadline", "120")  # an exit long before it is the TERM's doing
    if where != "waiting-on-stdin-daemon-down":
        stopped.start()
    payload = ASK_PRE.read_bytes()
    c = HeldClient(cmd["PreToolUse"], worktree)
    hung = False
    try:
        if where == "waiting-on-hung-daemon":
            os.kill(stopped.proc.pid, signal.SIGSTOP)  # type: ignore[union-attr]
            hung = True
            c.write(payload)
            c.close_stdin()
        else:
            c.write(payload[:40])  # half an object: the client keeps waiting for the rest
        pid = c.proc.pid
        wait_until(lambda: sigterm_trapped(pid), 60, interval=0.005, what="the client's TERM trap")
        if where != "waiting-on-stdin-daemon-down":
            # connected (fd 3 is the daemon socket): the client is inside its wait loop
            wait_until(lambda: os.path.exists(f"/proc/{pid}/fd/3"), 60, interval=0.005, what="the client to connect")
        assert c.proc.poll() is None
        c.proc.send_signal(signal.SIGTERM)
        rc, out, err = c.wait(timeout=60)  # ended by the TERM, not by its 120 s deadline
        # read the spool while the daemon is still stopped: once resumed, its spool watcher
        # may ingest (and remove) the file before this test looks
        spooled = [f.read_bytes() for f in spool_files(home)]
    finally:
        if hung:
            os.kill(stopped.proc.pid, signal.SIGCONT)  # type: ignore[union-attr]
        c.kill()
    assert (rc, out, err) == (0, b"", b"")
    if where == "waiting-on-hung-daemon":
        # the whole payload had arrived: it was spooled before the exit (the hung daemon may
        # not have stored it), and stored once in all (the spool copy has the same delivery id)
        assert spooled == [payload]
        wait_until(lambda: not spool_files(home) and hooks_received(home), 60, what="the spool ingested")
        assert len(hooks_received(home)) == 1
    else:
        assert spooled == [] and spool_files(home) == []  # half an object is never spooled
    if where != "waiting-on-stdin-daemon-down":
        assert daemon_up(home)


# --- concurrency --------------------------------------------------------------------------


def test_twenty_concurrent_copies_of_one_ask_make_one_question(daemon: DaemonProcess, home: Path, worktree: Path) -> None:
    cmd = spawn(home, worktree)["PreToolUse"]
    payload = ASK_PRE.read_bytes()
    procs = [subprocess.Popen(["sh", "-c", cmd], cwd=worktree, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(20)]
    results = []
    barrier = threading.Barrier(len(procs))

    def feed(p: subprocess.Popen[bytes]) -> None:
        barrier.wait()
        out, err = p.communicate(payload, timeout=30)
        results.append((p.returncode, out, err))

    threads = [threading.Thread(target=feed, args=(p,)) for p in procs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20
    for r in results:
        assert r == (0, b"", b""), r
    # every invocation is its own delivery (20 hook events), whether live or via the spool
    wait_until(lambda: len(hooks_received(home)) >= 20 and not spool_files(home), 60, what="20 hook events")
    assert len(hooks_received(home)) == 20
    assert [e["data"]["id"] for e in kinds(home, "question_pending")] == [ASK_ID]
    assert [q["id"] for q in questions(home, "pending")] == [ASK_ID]


def test_spool_and_database_are_private(daemon, home, worktree):
    import stat as st_

    r = hookd_cli(home, "spawn", "b-priv", "--worktree", str(worktree))
    assert r.returncode == 0
    h = Home.resolve(home)
    assert st_.S_IMODE(os.stat(h.root).st_mode) == 0o700
    assert st_.S_IMODE(os.stat(h.db).st_mode) & 0o077 == 0
    daemon.stop()
    cmd = settings_command(worktree / ".claude" / "settings.local.json", "PreToolUse")
    assert run_hook(cmd, (TUI / "004-PreToolUse.json").read_bytes(), worktree).returncode == 0
    [f] = list(h.spool_dir("b-priv").glob("*.json"))
    assert st_.S_IMODE(os.stat(f).st_mode) & 0o077 == 0


@pytest.mark.parametrize("body", [b"connected to daemon\n{}", b'{"a":1', b"[1,2]"], ids=["noise", "truncated", "array"])
def test_client_prints_nothing_but_one_json_object(home, worktree, body, client_kind):
    """A misbehaving endpoint's 200 reply that is not one JSON object never reaches stdout (B13).
    The fake endpoint listens where the client connects: the compiled client on the Unix
    socket, the bash client on the TCP port of the endpoint file."""
    import socket
    import threading

    r = hookd_cli(home, "spawn", "b-x", "--worktree", str(worktree))
    assert r.returncode == 0
    h = Home.resolve(home)
    h.run_dir.mkdir(parents=True, exist_ok=True)
    if client_kind == "c":
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(os.fspath(h.socket_path))
    else:
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        # a live pid (this test's) and the proof, so the client gets as far as the body
        h.endpoint_file.write_text(Endpoint(srv.getsockname()[1], "tok", os.getpid(), process_start(), "prf").line())
    srv.listen()
    srv.settimeout(20)
    got: list[bytes] = []

    def answer() -> None:
        c, _ = srv.accept()
        data = b""
        while b"0\r\n\r\n" not in data:
            data += c.recv(65536)
        got.append(data)
        c.sendall(b"HTTP/1.1 200 OK\r\nx-hookd-proof: prf\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
        c.close()

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    cmd = settings_command(worktree / ".claude" / "settings.local.json", "PostToolUse")
    res = run_hook(cmd, (TUI / "005-PostToolUse.json").read_bytes(), worktree)
    t.join(10)
    srv.close()
    assert got and got[0].startswith(b"POST /v1/hooks/claude-code/b-x HTTP/1.1\r\n")  # it talked to the fake
    assert (res.returncode, res.stdout) == (0, b"")
