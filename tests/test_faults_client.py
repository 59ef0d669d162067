"""Issue 18, the hook clients' side (compiled and bash: every test runs with each): nobody else
speaks for hookd, and nothing the daemon did not prove durable is dropped.

- socket takeover: a socket directory another user created first (``/tmp/hookd-<uid>``, here
  under a private stand-in for /tmp given as TMPDIR, so that other suites' daemons are not
  disturbed), a listener that is not this user, an endpoint file or daemon pid that is not
  this user's: the client spools and never talks to it; ``serve`` starts anyway, elsewhere;
- the reply contract: only a 2xx, or a 4xx with ``X-Hookd-Stored``, ends a client without a
  spool (a 5xx, a 4xx without it, a torn or missing reply: spooled);
- a full disk: the daemon cannot commit and the home's spool cannot be written; the payload
  goes to the private spool outside the home and is ingested once space returns;
- the deadline: a large payload's spool write (made slow on purpose, with strace delaying its
  rename) never keeps the hook past its deadline, and still completes;
- a held PermissionRequest hook outlives a daemon restart: the same hook process prints the
  remote answer given to the next daemon.

Attacks are real: as root, the planted directory, socket and listener belong to user
``nobody`` (uid 65534). Waits are on conditions with deadlines.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path
from typing import Iterator

import pytest

from hookd.config import Endpoint, Home, process_start
from hookd.daemonproc import DaemonProcess

from tests.conftest import TUI, hookd_cli, hookd_run, run_hook, settings_command, wait_until
from tests.test_answers import bash_perm
from tests.test_client import (
    ASK_ID,
    ASK_PRE,
    HeldClient,
    hooks_received,
    received_signatures,
    signature,
    spawn,
    spool_files,
)

pytestmark = pytest.mark.daemon

NOBODY = 65534
#: A Python the other user can run (the test's own may live in a private directory)
OTHER_PYTHON = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin") or sys.executable
ALLOW = b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (another user, a mount)")


@pytest.fixture(autouse=True, params=["c", "bash"])
def client_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs with each hook client `hookd spawn` can write; none inherits a
    runtime or temp directory from the machine (each test gives its own where it needs one)."""
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", request.param)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("TMPDIR", raising=False)
    return request.param


def private_dir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    os.chmod(p, 0o700)
    return p


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A stand-in for /tmp, world-writable and sticky like it, that other users can reach
    (pytest's own temp dirs are 0700)."""
    t = Path(tempfile.mkdtemp(prefix="hookd-faults-", dir="/tmp"))
    os.chmod(t, 0o1777)
    try:
        yield t
    finally:
        shutil.rmtree(t, ignore_errors=True)


def long_home(tmp_path: Path) -> Path:
    """A home whose run/hookd.sock is too long to bind: its socket lives elsewhere."""
    return tmp_path / ("h" * 90)


def all_spooled(home: Path, *outside: Path) -> list[Path]:
    """Every spooled payload (renamed into place: ``*.json``, not a ``.tmp``): the home's spool
    and the outside ones given."""
    return [f for d in (home / "spool", *outside) if d.is_dir() for f in d.rglob("[!.]*.json")]


def outside_spool(base: Path, home: Path) -> Path:
    """A home's spool under ``base`` (XDG_RUNTIME_DIR/hookd, /dev/shm/hookd-<uid>, ...):
    ``spool-`` + the FNV-1a 64 hash of the home's path (computed here, not taken from hookd)."""
    h = 0xCBF29CE484222325
    for b in os.fsencode(Home.resolve(home).root):
        h = ((h ^ b) * 0x100000001B3) % 2**64
    return base / f"spool-{h:016x}"


class Impostor:
    """What another local user runs: a listener (a Unix socket at ``path``, or TCP) that
    accepts every connection, records what it is sent, and answers each with ``reply``.
    ``user``: run it as that uid (a child process; needs root)."""

    CODE = textwrap.dedent("""
        import os, socket, sys
        path, reply, log = sys.argv[1], bytes.fromhex(sys.argv[2]), sys.argv[3]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.chmod(os.path.dirname(path), 0o777)
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        os.chmod(path, 0o777)
        s.listen()
        print("ready", flush=True)
        while True:
            c, _ = s.accept()
            data = b""
            while b"0\\r\\n\\r\\n" not in data:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
            with open(log, "ab") as f:
                f.write(data)
            c.sendall(reply)
            c.close()
    """)

    def __init__(self, path: Path, reply: bytes, log: Path, user: int = NOBODY):
        self.log = log
        log.touch()
        os.chmod(log, 0o666)
        self.proc = subprocess.Popen([OTHER_PYTHON, "-c", self.CODE, os.fspath(path), reply.hex(), os.fspath(log)],
                                     stdout=subprocess.PIPE, user=user, group=user, extra_groups=[], cwd="/")
        assert self.proc.stdout is not None and self.proc.stdout.readline() == b"ready\n"

    def got(self) -> bytes:
        return self.log.read_bytes()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def http_reply(status: str, body: bytes, *headers: str) -> bytes:
    head = "".join(h + "\r\n" for h in headers)
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n{head}\r\n"
            ).encode() + body


# --- 1. socket takeover ------------------------------------------------------------------


@root_only
def test_socket_planted_directory_is_not_trusted_and_serve_recovers(tmp_path: Path, public_tmp: Path, client_kind: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user creates the predictable ``<tmp>/hookd-<uid>/`` first, binds the socket
    named in bin/socket-path and answers "allow" to everything. The compiled client sees the
    directory is not this user's and spools (the impostor gets nothing, its "allow" reaches
    no one); ``serve`` starts anyway in a fresh private directory, says what to remove,
    records it for the clients and the CLI, and ingests what was spooled."""
    tmp = public_tmp
    monkeypatch.setenv("TMPDIR", os.fspath(tmp))
    home, worktree = long_home(tmp_path), tmp_path / "wt"
    worktree.mkdir()
    cmd = spawn(home, worktree)
    h = Home.resolve(home)
    predictable = h.socket_path
    assert predictable.parent == tmp / f"hookd-{os.geteuid()}"
    if client_kind == "c":
        assert h.socket_path_file.read_bytes() == os.fsencode(predictable)
    imp = Impostor(predictable, http_reply("200 OK", ALLOW), tmp / "impostor.log")
    d = DaemonProcess(home, env=dict(os.environ))
    try:
        assert os.stat(predictable.parent).st_uid == NOBODY
        r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        assert imp.got() == b""
        assert [f.read_bytes() for f in spool_files(home)] == [ASK_PRE.read_bytes()]
        st = hookd_cli(home, "status", "--json")  # nor does the CLI talk to it
        assert st.returncode == 1 and f"owned by nobody (uid {NOBODY}), not by you" in st.stderr, st
        assert imp.got() == b""

        d.start()
        log = d.log.read_text()
        assert f"not binding the socket in {predictable.parent}" in log and f"owned by nobody (uid {NOBODY})" in log
        assert f"Remove {predictable.parent}" in log
        moved = Home.resolve(home).socket_path
        assert moved != predictable and moved.parent.parent == tmp
        assert stat.S_IMODE(os.stat(moved.parent).st_mode) == 0o700 and os.stat(moved.parent).st_uid == os.geteuid()
        wait_until(lambda: not spool_files(home) and hooks_received(home), 60, what="the spool to be ingested")
        post = (TUI / "010-PostToolUse.json").read_bytes()
        r = run_hook(cmd["PostToolUse"], post, worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        assert received_signatures(home) == [signature(ASK_PRE.read_bytes()), signature(post)]
        assert spool_files(home) == [] and imp.got() == b""
        status = hookd_cli(home, "status", "--json")
        assert status.returncode == 0 and json.loads(status.stdout)["socket"] == os.fspath(moved)
    finally:
        d.stop()
        d.kill()
        imp.close()
    assert not moved.parent.exists()  # the fresh directory goes with the daemon


@root_only
def test_socket_listener_that_is_not_this_user_is_not_trusted(tmp_path: Path, public_tmp: Path,
                                                             client_kind: str) -> None:
    """The socket's directory is this user's (0700) but the process listening on it is not
    (here: this user bound the socket, another user's process listens on it): the compiled
    client checks the peer's credentials (SO_PEERCRED) and spools."""
    if client_kind == "bash":
        pytest.skip("the Unix socket is the compiled client's transport (bash: see the endpoint tests)")
    home, worktree = tmp_path / "home", tmp_path / "wt"
    worktree.mkdir()
    cmd = spawn(home, worktree)
    h = Home.resolve(home)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(os.fspath(h.socket_path))
    log = public_tmp / "peer.log"
    log.touch()
    os.chmod(log, 0o666)
    code = textwrap.dedent(f"""
        import socket, sys
        s = socket.socket(fileno=int(sys.argv[1]))
        s.listen()
        print("ready", flush=True)
        c, _ = s.accept()
        data = c.recv(65536)
        open({os.fspath(log)!r}, "ab").write(data)
        c.sendall({http_reply("200 OK", ALLOW)!r})
        c.close()
    """)
    listener = subprocess.Popen([OTHER_PYTHON, "-c", code, str(srv.fileno())], stdout=subprocess.PIPE,
                                pass_fds=(srv.fileno(),), user=NOBODY, group=NOBODY, extra_groups=[], cwd="/")
    try:
        assert listener.stdout is not None and listener.stdout.readline() == b"ready\n"
        r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        assert [f.read_bytes() for f in spool_files(home)] == [ASK_PRE.read_bytes()]
        assert log.read_bytes() == b""  # connected at most; never sent the payload
    finally:
        listener.kill()
        listener.wait()
        assert listener.stdout is not None
        listener.stdout.close()
        srv.close()


@pytest.mark.parametrize("case", ["bin-not-private", "socket-path-not-ours"])
def test_socket_path_file_that_is_not_private_is_not_trusted(case: str, tmp_path: Path, client_kind: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``bin/socket-path`` (where a long home's compiled client finds its socket) counts only
    in a private bin/ and when the file is this user's and private: otherwise the client
    spools, whatever the file says."""
    if client_kind == "bash":
        pytest.skip("bin/socket-path is the compiled client's")
    monkeypatch.setenv("TMPDIR", os.fspath(private_dir(tmp_path / "t")))
    home, worktree = long_home(tmp_path), tmp_path / "wt"
    worktree.mkdir()
    cmd = spawn(home, worktree)
    d = DaemonProcess(home, env=dict(os.environ)).start()
    try:
        h = Home.resolve(home)
        if case == "bin-not-private":
            os.chmod(h.root / "bin", 0o755)
        else:
            if os.geteuid() != 0:
                pytest.skip("needs root to give the file to another user")
            os.chown(h.socket_path_file, NOBODY, NOBODY)
        r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        [got] = wait_until(lambda: hooks_received(home), 60, what="the payload to be stored")
        assert got["source"] == "spool"  # not sent live: spooled, then ingested
    finally:
        d.stop()
        d.kill()


def test_socket_goes_to_xdg_runtime_dir_and_the_cli_finds_it_without_it(tmp_path: Path, client_kind: str) -> None:
    """A long home's socket goes into ``$XDG_RUNTIME_DIR/hookd/`` when that is a private
    directory of this user's (no other user can create anything there); it is recorded in
    bin/socket-path, so hooks and a CLI whose environment lacks XDG_RUNTIME_DIR find it."""
    # a short runtime dir, as a real one is (/run/user/<uid>): a pytest-xdist worker's tmp_path
    # is long enough that <tmp_path>/xdg/hookd/<hash>.sock would not fit a socket's 108 bytes
    xdg = private_dir(Path(tempfile.mkdtemp(prefix="x", dir="/tmp")) / "r")
    home, worktree = long_home(tmp_path), tmp_path / "wt"
    worktree.mkdir()
    env = {**os.environ, "XDG_RUNTIME_DIR": os.fspath(xdg)}
    d = DaemonProcess(home, env=env).start()
    try:
        sock = Path(os.fsdecode(Home.resolve(home).socket_path_file.read_bytes()))
        assert sock.parent == xdg / "hookd" and stat.S_ISSOCK(os.stat(sock).st_mode)
        assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
        cmd = spawn(home, worktree)  # (no XDG_RUNTIME_DIR here)
        r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        assert spool_files(home) == [] and received_signatures(home) == [signature(ASK_PRE.read_bytes())]
        st = hookd_cli(home, "status", "--json")
        assert st.returncode == 0 and json.loads(st.stdout)["socket"] == os.fspath(sock)
    finally:
        d.stop()
        d.kill()
    assert not sock.exists()
    shutil.rmtree(xdg.parent)


@root_only
@pytest.mark.parametrize("case", ["endpoint-file-not-ours", "daemon-pid-not-ours"])
def test_endpoint_not_this_users_is_not_trusted(case: str, tmp_path: Path, public_tmp: Path, client_kind: str) -> None:
    """The bash client's transport is ``run/endpoint`` (loopback TCP, a token, a proof). It
    trusts the file only when it (and run/) are this user's, not symlinks, and talks only to a
    daemon pid that is this user's: an endpoint file another user placed (with its own port,
    pid and proof) or one naming another user's process gets no connection and no payload."""
    if client_kind == "c":
        pytest.skip("run/endpoint is the bash client's transport (the compiled one: the socket tests)")
    home, worktree = tmp_path / "home", tmp_path / "wt"
    worktree.mkdir()
    cmd = spawn(home, worktree)
    h = Home.resolve(home)
    h.run_dir.mkdir(parents=True, exist_ok=True)
    log = public_tmp / "tcp.log"
    log.touch()
    os.chmod(log, 0o666)
    # another user's TCP listener that knows the proof it wrote (or was given) and says "allow"
    code = textwrap.dedent(f"""
        import os, socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen()
        print(s.getsockname()[1], os.getpid(), flush=True)
        while True:
            c, _ = s.accept()
            data = b""
            while b"0\\r\\n\\r\\n" not in data:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
            open({os.fspath(log)!r}, "ab").write(data)
            c.sendall({http_reply("200 OK", ALLOW, "x-hookd-proof: prf")!r})
            c.close()
    """)
    other = subprocess.Popen([OTHER_PYTHON, "-c", code], stdout=subprocess.PIPE, user=NOBODY, group=NOBODY,
                             extra_groups=[], cwd="/")
    try:
        assert other.stdout is not None
        port, pid = map(int, other.stdout.readline().split())
        if case == "endpoint-file-not-ours":
            pid = os.getpid()  # a live pid of this user's; the file itself is the other user's
        h.endpoint_file.write_text(Endpoint(port, "tok", pid, process_start(pid), "prf").line())
        if case == "endpoint-file-not-ours":
            os.chown(h.endpoint_file, NOBODY, NOBODY)
        r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        assert log.read_bytes() == b""
        assert [f.read_bytes() for f in spool_files(home)] == [ASK_PRE.read_bytes()]
    finally:
        other.kill()
        other.wait()
        assert other.stdout is not None
        other.stdout.close()


# --- 2. the reply contract ------------------------------------------------------------------

REPLIES = {
    # name: (reply, spooled?, printed)
    "500": (http_reply("500 Internal Server Error", b'{"error":{"code":"internal","message":"disk full"}}'), True, b""),
    "503": (http_reply("503 Service Unavailable",
                       b'{"error":{"code":"storage_unavailable","message":"database is locked"}}'), True, b""),
    "4xx-without-stored": (http_reply("404 Not Found", b'{"error":{"code":"not_found","message":"no"}}'), True, b""),
    "4xx-with-stored": (http_reply("422 Unprocessable Entity",
                                   b'{"error":{"code":"payload_invalid","message":"x","stored":7}}',
                                   "x-hookd-stored: 7"), False, b""),
    "2xx-torn": (http_reply("200 OK", b'{"a":1}')[:-3], True, b""),
    "no-reply": (b"", True, b""),
    "2xx": (http_reply("200 OK", b'{"a":1}'), False, b'{"a":1}'),
}


class FakeDaemon:
    """Where the client connects (the compiled one: the home's socket; bash: a TCP port named
    in an endpoint file of this user's, with the proof), answering every request with ``reply``
    (empty: close without a reply; None: never) after reading it whole."""

    def __init__(self, home: Path, kind: str, reply: bytes | None):
        h = Home.resolve(home)
        h.run_dir.mkdir(parents=True, exist_ok=True)
        if kind == "c":
            self.srv = socket.socket(socket.AF_UNIX)
            self.srv.bind(os.fspath(h.socket_path))
        else:
            self.srv = socket.socket()
            self.srv.bind(("127.0.0.1", 0))
            h.endpoint_file.write_text(Endpoint(self.srv.getsockname()[1], "tok", os.getpid(), process_start(),
                                                "prf").line())
            if reply:
                head, _, body = reply.partition(b"\r\n\r\n")
                reply = head + b"\r\nx-hookd-proof: prf\r\n\r\n" + body
        self.srv.listen()
        self.reply = reply
        self.got: list[bytes] = []
        self.hung: list[socket.socket] = []  # connections never answered (reply None)
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
            with contextlib.suppress(OSError):
                while b"0\r\n\r\n" not in data:
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            self.got.append(data)
            if self.reply is None:
                self.hung.append(c)
                continue
            with contextlib.suppress(OSError):
                c.sendall(self.reply)
            c.close()

    def close(self) -> None:
        for c in self.hung:
            c.close()
        with contextlib.suppress(OSError):
            self.srv.shutdown(socket.SHUT_RDWR)
        self.srv.close()
        self.thread.join(10)


@pytest.mark.parametrize("name", list(REPLIES))
def test_client_spools_unless_the_reply_proves_the_payload_durable(name: str, home: Path, worktree: Path,
                                                                   client_kind: str) -> None:
    """Reply contract: a 2xx (its body printed) or a 4xx with ``X-Hookd-Stored`` ends the
    client without a spool; a 5xx (the daemon could not commit: disk full, database locked or
    corrupt), a 4xx without the header, a torn reply or none at all means not stored: the
    payload is spooled, whole. Always exit 0, nothing on stderr."""
    reply, spooled, printed = REPLIES[name]
    cmd = spawn(home, worktree)
    fake = FakeDaemon(home, client_kind, reply)
    try:
        r = run_hook(cmd["PreToolUse"], ASK_PRE.read_bytes(), worktree)
    finally:
        fake.close()
    assert len(fake.got) == 1 and fake.got[0].startswith(b"POST /v1/hooks/claude-code/b-1 HTTP/1.1\r\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, printed, b"")
    assert [f.read_bytes() for f in spool_files(home)] == ([ASK_PRE.read_bytes()] if spooled else [])


# --- 2. a full disk: nothing lost ----------------------------------------------------------


@contextlib.contextmanager
def small_disk(where: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (root only), unmounted afterwards."""
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", os.fspath(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", os.fspath(where)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the disk is full; returns it (remove it to give the space back)."""
    f = disk / "filler"
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return f


def post_tool_use(n: int) -> bytes:
    obj = json.loads((TUI / "005-PostToolUse.json").read_bytes())
    obj["tool_use_id"] = f"toolu_FULL{n:04d}"
    obj["tool_response"] = {"stdout": f"{n} " + "y" * 20_000, "stderr": "", "interrupted": False}
    return json.dumps(obj).encode()


@root_only
@pytest.mark.parametrize("daemon_state", ["daemon-up", "daemon-down"])
def test_client_full_disk_spools_outside_the_home_and_nothing_is_lost(daemon_state: str, tmp_path: Path,
                                                                      client_kind: str) -> None:
    """The home's disk is full. Daemon up: it cannot commit (a 5xx), so the client spools;
    daemon down: the client spools at once. Either way the home's spool cannot be written
    either (ENOSPC): the payload goes to the private spool outside the home (here under
    XDG_RUNTIME_DIR, on another filesystem). Once space returns, the daemon ingests every
    payload exactly once; none was lost (the issue: 24 of 50 on a full 2 MB filesystem)."""
    xdg = private_dir(tmp_path / "xdg")
    env = {**os.environ, "XDG_RUNTIME_DIR": os.fspath(xdg)}
    n = 12
    with small_disk(tmp_path / "disk") as disk:
        home, worktree = disk / "home", tmp_path / "wt"
        worktree.mkdir()
        cmd = spawn(home, worktree)["PostToolUse"]
        d = DaemonProcess(home, env=env)
        try:
            if daemon_state == "daemon-up":
                d.start()
            filler = fill(disk)
            payloads = [post_tool_use(i) for i in range(n)]
            for p in payloads:
                r = subprocess.run(["sh", "-c", cmd], input=p, cwd=worktree, capture_output=True, timeout=30, env=env)
                assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
            outside = outside_spool(xdg / "hookd", home) / "b-1"
            spooled = sorted(f.read_bytes() for f in outside.glob("*.json"))
            assert spooled, "the full disk made no payload go outside the home"
            assert stat.S_IMODE(os.stat(outside).st_mode) == 0o700
            d.stop()
            d.kill()
            filler.unlink()  # space returns
            d.start()
            want = sorted(signature(p) for p in payloads)
            wait_until(lambda: sorted(received_signatures(home)) == want and not all_spooled(home, xdg), 30,
                       what=lambda: f"{n} payloads ingested, got {len(hooks_received(home))}, "
                                    f"{len(all_spooled(home, xdg))} still spooled")
            assert len(hooks_received(home)) == n  # exactly once each
        finally:
            d.stop()
            d.kill()
    print(f"full disk ({daemon_state}, {client_kind} client): {n} hooks, {len(spooled)} spooled outside the home, "
          f"{n} stored once after space returned, 0 lost")


@root_only
def test_client_full_disk_without_a_runtime_dir_spools_to_shared_memory(tmp_path: Path, client_kind: str) -> None:
    """No XDG_RUNTIME_DIR (a cron job, a container): the next place outside the home is
    ``/dev/shm/hookd-<uid>/spool-<key>/<builder>/``, private; the daemon finds it at start."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    with small_disk(tmp_path / "disk") as disk:
        home, worktree = disk / "home", tmp_path / "wt"
        worktree.mkdir()
        cmd = spawn(home, worktree)["PostToolUse"]
        shm = outside_spool(Path(f"/dev/shm/hookd-{os.geteuid()}"), home)
        d = DaemonProcess(home)
        try:
            filler = fill(disk)
            payload = post_tool_use(1)
            r = run_hook(cmd, payload, worktree)
            assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
            assert [f.read_bytes() for f in (shm / "b-1").glob("*.json")] == [payload]
            for level in (shm.parent, shm, shm / "b-1"):
                assert stat.S_IMODE(os.lstat(level).st_mode) == 0o700 and os.lstat(level).st_uid == os.geteuid()
            filler.unlink()
            d.start()
            wait_until(lambda: received_signatures(home) == [signature(payload)] and not all_spooled(home, shm), 30,
                       what="the payload spooled to /dev/shm to be ingested")
        finally:
            d.stop()
            d.kill()
            shutil.rmtree(shm, ignore_errors=True)


# --- 9. the deadline with a large payload ----------------------------------------------------


def traced(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return any(line.startswith("TracerPid:") and line.split()[1] != "0" for line in status.splitlines())


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (to make the spool write slow)")
def test_client_large_spool_write_never_keeps_the_hook_past_its_deadline(tmp_path: Path, home: Path, worktree: Path,
                                                                        client_kind: str) -> None:
    """A daemon that never answers, a 1.5 MB payload (over the 1 MiB a client writes
    itself): at its deadline the client spools. The spool's last step is held on purpose
    (strace stops every rename of the client and of what it starts until the test lets
    strace go), standing in for a write that takes longer than the deadline leaves (6 x 60 MB
    at once: ~1 s). The hook must be over (exited, stdout and stderr closed, as the harness
    waits for) before that spool file exists, and the file must then appear, whole: the write
    happens in a detached writer the hook does not wait for past its deadline. (Order, not
    time: an implementation that writes before it exits cannot end before its own rename,
    which comes only once strace is gone.)"""
    # long enough that strace attaches before the deadline on a busy machine (the bash client
    # reads ~1 MB/s when idle; at load 6 3 MB took it most of 8 s, and strace attaches only
    # once the request is sent: traced, bash's reading is far slower): the test is about
    # order, the deadline only has to come after that
    deadline_s = 20 if client_kind == "bash" else 5
    cmd = spawn(home, worktree, "--deadline", str(deadline_s))["PostToolUse"]
    obj = json.loads((TUI / "005-PostToolUse.json").read_bytes())
    obj["tool_response"] = {"stdout": "z" * (1536 * 1024), "stderr": "", "interrupted": False}
    payload = json.dumps(obj).encode()
    fake = FakeDaemon(home, client_kind, None)  # reads the request, then never answers
    c = HeldClient(cmd, worktree)
    strace = None
    try:
        c.write(payload)
        c.close_stdin()
        pid = c.proc.pid
        wait_until(lambda: fake.got, 30, what="the client to send its request")
        strace = subprocess.Popen(["strace", "-f", "-qq", "-tt", "-o", "/dev/null", "-p", str(pid),
                                   "-e", "trace=rename,renameat,renameat2",
                                   "-e", "inject=rename,renameat,renameat2:delay_enter=600s"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: traced(pid), 60,
                   what=lambda: f"strace to attach (the client's exit status: {c.proc.poll()})")
        assert c.proc.stdout is not None and c.proc.stderr is not None
        out = c.proc.stdout.read()  # until the hook's stdout closes ...
        err = c.proc.stderr.read()
        rc = c.proc.wait(timeout=60)
        spooled_when_done = all_spooled(home)  # ... and then look
        assert (rc, out, err) == (0, b"", b"")
        assert spooled_when_done == [], "the hook waited for its spool write past its deadline"
        strace.kill()  # (it detaches: the held rename goes on)
        strace.wait()
        [f] = wait_until(lambda: all_spooled(home), 60, what="the detached writer's spool file")
        assert f.read_bytes() == payload
    finally:
        if strace is not None:
            strace.kill()
            strace.wait()
        c.kill()
        fake.close()


# --- 13. a held PermissionRequest hook outlives a daemon restart ------------------------------


def held_ids(home: Path) -> list[str]:
    r = hookd_cli(home, "status", "--json")
    return json.loads(r.stdout)["held"] if r.returncode == 0 else []


def test_hold_survives_a_daemon_restart_and_prints_the_remote_answer(home: Path, worktree: Path,
                                                                    client_kind: str) -> None:
    """A PermissionRequest hook held for a remote answer; the daemon is stopped (SIGTERM, as
    for an upgrade) and started again on the same home. The same hook process reconnects,
    posts its payload again (same delivery id) and is held again for the same interaction;
    the remote answer given to the new daemon is what it prints. One interaction, one
    PermissionRequest stored, the answer delivered once."""
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree), "--hold", "60")
    assert r.returncode == 0, r.stderr
    command = settings_command(worktree / ".claude" / "settings.local.json", "PermissionRequest")
    d = DaemonProcess(home).start()
    proc = subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=worktree, start_new_session=True)
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(bash_perm("make deploy")).encode())
        proc.stdin.close()
        proc.stdin = None
        [iid] = wait_until(lambda: held_ids(home), 60, what="the hook to be held")
        assert d.stop() == 0
        d.start()
        wait_until(lambda: held_ids(home) == [iid], 60, what="the same hook held again by the new daemon")
        assert proc.poll() is None
        a = hookd_cli(home, "answer", iid, "--option", "allow", "--json")
        assert a.returncode == 0, a.stderr
        assert json.loads(a.stdout)["delivery"] == "hook"
        out, err = proc.communicate(timeout=15)
        assert (proc.returncode, err) == (0, b"")
        assert json.loads(out) == {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                                          "decision": {"behavior": "allow"}}}
        evs = [json.loads(line) for line in hookd_cli(home, "events", "--json").stdout.splitlines()]
        assert [e["data"]["hook_event_name"] for e in evs if e["kind"] == "hook_received"] == ["PermissionRequest"]
        assert [e["kind"] for e in evs if e["kind"] in ("permission_pending", "answer_delivered")] == [
            "permission_pending", "answer_delivered"]
        assert spool_files(home) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        d.stop()
        d.kill()


def test_hold_without_a_next_daemon_exits_at_its_deadline(home: Path, worktree: Path, client_kind: str) -> None:
    """The daemon stops for good: the released hook keeps trying to reach a next daemon until
    its deadline, then exits 0 with nothing printed and nothing spooled (its payload is stored)."""
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree), "--hold", "5")
    assert r.returncode == 0, r.stderr
    command = settings_command(worktree / ".claude" / "settings.local.json", "PermissionRequest")
    d = DaemonProcess(home).start()
    try:
        c = HeldClient(command, worktree)
        c.write(json.dumps(bash_perm("make deploy")).encode())
        c.close_stdin()
        wait_until(lambda: held_ids(home), 60, what="the hook to be held")
        assert d.stop() == 0
        rc, out, err = c.wait(timeout=30)
        c.kill()
        assert (rc, out, err) == (0, b"", b"")
        assert spool_files(home) == []
        d.start()
        evs = [json.loads(line) for line in hookd_cli(home, "events", "--json").stdout.splitlines()]
        assert [e["data"]["hook_event_name"] for e in evs if e["kind"] == "hook_received"] == ["PermissionRequest"]
    finally:
        d.stop()
        d.kill()
