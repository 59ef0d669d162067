"""Access (issue 8): private socket and files, loopback TCP, the bearer token on every route,
tokens never logged or stored, generated commands safe against hostile names.

Routes are enumerated from the app at test time (tests/apiroutes.py): a route added later is
covered without editing this file.
"""

from __future__ import annotations

import ast
import http.client
import inspect
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import textwrap
import urllib.parse
from pathlib import Path

import httpx
import psutil
import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess

from .apiroutes import all_routes, harnesses, public_paths
from .conftest import TUI, hookd_cli, hookd_run, run_hook, settings_command

pytestmark = pytest.mark.daemon

UNAUTHORIZED = {"error": {"code": "unauthorized", "message": "missing or wrong bearer token"}}
ROUTES = all_routes()
PUBLIC = public_paths()


def _endpoint(home: Path) -> tuple[int, str]:
    """The running daemon's TCP port and the home's API token (HOOKD_HOME/token)."""
    h = Home.resolve(home)
    return h.read_endpoint().port, h.read_token()


class DebugDaemon(DaemonProcess):
    """`hookd serve --log-level debug`: the most the daemon ever logs."""

    def cli_args(self, *args: str) -> list[str]:
        argv = super().cli_args(*args)
        return argv + ["--log-level", "debug"] if args and args[0] == "serve" else argv


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def _as_nobody(code: str) -> subprocess.CompletedProcess[str]:
    """Run Python ``code`` as the unprivileged user ``nobody`` (needs root)."""
    return subprocess.run(["python3", "-c", code], capture_output=True, text=True, timeout=30,
                          user=65534, group=65534, extra_groups=[], cwd="/")


# --- the socket, its directory, the token files ---------------------------------------


@pytest.mark.parametrize("long_home", [False, True], ids=["socket-in-home", "socket-in-tmp"])
def test_socket_dir_0700_socket_0600_token_files_0600(long_home: bool) -> None:
    # a world-traversable parent, so that only hookd's own modes keep others out
    base = Path(tempfile.mkdtemp(prefix="hookd-access-", dir="/tmp"))
    os.chmod(base, 0o755)
    home = base / ("h" * 90 if long_home else "home")
    d = DaemonProcess(home).start()
    try:
        h = Home.resolve(home)
        assert (h.socket_path.parent == h.run_dir) is (not long_home)
        st = os.lstat(h.socket_path)
        assert stat.S_ISSOCK(st.st_mode) and _mode(h.socket_path) == 0o600 and st.st_uid == os.getuid()
        for dpath in (h.socket_path.parent, h.run_dir, h.root):
            assert _mode(dpath) == 0o700, dpath
            assert os.lstat(dpath).st_uid == os.getuid()
        for f in (h.token_file, h.hook_token_file, h.endpoint_file, h.db):
            assert _mode(f) == 0o600, f
        if os.geteuid() == 0:  # prove it as another user, not only by the mode bits
            probe = textwrap.dedent(f"""
                import socket
                out = []
                for p in ({os.fspath(h.token_file)!r}, {os.fspath(h.endpoint_file)!r}):
                    try:
                        open(p).read(); out.append("read " + p)
                    except PermissionError:
                        pass
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect({os.fspath(h.socket_path)!r}); out.append("connected")
                except PermissionError:
                    pass
                print(out)
            """)
            r = _as_nobody(probe)
            assert r.returncode == 0 and r.stdout.strip() == "[]", (r.stdout, r.stderr)
    finally:
        d.stop()
        d.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_tcp_listens_on_loopback_only(daemon: DaemonProcess, home: Path) -> None:
    port, _ = _endpoint(home)
    listening = [c for c in psutil.Process(daemon.proc.pid).net_connections("inet") if c.status == psutil.CONN_LISTEN]
    assert [(c.laddr.ip, c.laddr.port) for c in listening] == [("127.0.0.1", port)]
    # and nothing answers on the machine's other addresses
    others = {a.address for addrs in psutil.net_if_addrs().values() for a in addrs
              if a.family == socket.AF_INET and not a.address.startswith("127.")}
    for ip in others:
        with pytest.raises(OSError):
            socket.create_connection((ip, port), timeout=2).close()


# --- the token on every route ---------------------------------------------------------


def _route_cases() -> list[tuple[str, str]]:
    """(method, path) of every route but the public ones, then 6 unknown ones."""
    out = []
    for r in ROUTES:
        for h in (harnesses() if "harness" in r.params() else ["-"]):
            path = r.path(harness=h) if h != "-" else r.path()
            if path not in PUBLIC:
                out.append((r.method, path))
    # auth comes before routing: unknown paths and methods are refused the same way
    out += [("GET", "/"), ("GET", "/v1/nope"), ("DELETE", "/v1/status"), ("POST", "/v1/hooks/nosuch/b1"),
            ("POST", "/v1/hooks/claude-code/b1/unknown-mode"), ("GET", "/v1/hooks/claude-code/b1")]
    return out


@pytest.mark.parametrize("bad", [
    None, "", "Bearer", "Bearer ", "Bearer wrong", "bearer {token}", "Bearer  {token}", "Bearer {token}x",
    "Bearer {token_prefix}", "{token}", "Basic {token}", "Bearer {token}\t",
], ids=lambda b: repr(b))
def test_every_route_refuses_a_missing_or_wrong_token(daemon: DaemonProcess, home: Path, bad: str | None) -> None:
    port, token = _endpoint(home)
    cases = _route_cases()
    assert len(cases) >= len(ROUTES) >= 16
    headers = {} if bad is None else {"Authorization": bad.format(token=token, token_prefix=token[:-1])}
    # http.client sends header values as given (httpx refuses some of these)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for method, path in cases:
            conn.request(method, path, body=b'{"hook_event_name": "Stop"}', headers=headers)
            r = conn.getresponse()
            body = r.read()
            assert r.status == 401, (method, path, r.status, body)
            err = json.loads(body)
            if path.startswith("/v1/hooks/") or not PUBLIC:
                assert err == UNAUTHORIZED, (method, path)
            else:  # the operator page's session cookie also admits: its own wording
                assert set(err) == {"error"} and set(err["error"]) == {"code", "message"}
                assert err["error"]["code"] == "unauthorized" and "token" in err["error"]["message"]
    finally:
        conn.close()
    # refused before anything was stored or changed
    st = daemon.client().get("/v1/status")
    assert st["counts"]["hook_events"] == 0 and st["builders"] == []


def test_every_route_is_reachable_with_the_token(daemon: DaemonProcess, home: Path) -> None:
    """The other half: the right token passes on every route (whatever the route then says),
    so the 401s above are the token check and not a missing route."""
    port, token = _endpoint(home)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, headers={"Authorization": f"Bearer {token}"}) as c:
        for method, path in _route_cases()[:-6]:
            with c.stream(method, path, content=b"{}") as r:  # (event streams never end)
                assert r.status_code != 401 and r.status_code < 500, (method, path, r.status_code)


def test_public_paths_are_only_the_sign_in_page() -> None:
    """What the operator page serves without the token: its sign-in page, its assets and the
    code exchange; never an API path."""
    assert all(not p.startswith("/v1/") for p in PUBLIC), PUBLIC
    assert len(PUBLIC) <= 6


def test_the_token_is_compared_in_constant_time() -> None:
    """HookdASGI compares the Authorization header with hmac.compare_digest (no ``==``/``in``
    on the secret, no early exit on the first differing byte)."""
    from hookd.http import app

    src = textwrap.dedent(inspect.getsource(app.HookdASGI.__call__))
    tree = ast.parse(src)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "compare_digest" and isinstance(n.func.value, ast.Name) and n.func.value.id == "hmac"]
    # one for the API token, one for the endpoint's hook token, one for the home's hook-token
    # (Claude Code's http hooks)
    compared = sorted(a.attr for c in calls for a in c.args if isinstance(a, ast.Attribute))
    assert compared == ["_expected", "_hook_expected", "_http_hook_expected"]
    # the expected values are never compared any other way (only `is not None` for the hook token)
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            names = {x.attr for x in ast.walk(n) if isinstance(x, ast.Attribute)}
            assert "_expected" not in names, ast.unparse(n)
            if "_hook_expected" in names:
                assert ast.unparse(n) == "self._hook_expected is not None", ast.unparse(n)
            if "_http_hook_expected" in names:
                assert ast.unparse(n) == "self._http_hook_expected is not None", ast.unparse(n)
    src_all = inspect.getsource(app)
    assert len(re.findall(r"\._expected\b", src_all)) == 2  # set once in __init__, read once by compare_digest
    assert len(re.findall(r"\._hook_expected\b", src_all)) == 3  # set, tested for None, compare_digest
    assert len(re.findall(r"\._http_hook_expected\b", src_all)) == 3


# --- tokens never logged, stored or echoed --------------------------------------------


def _files_under(*roots: Path) -> list[Path]:
    out = []
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            out += [Path(dirpath) / f for f in files if stat.S_ISREG(os.lstat(Path(dirpath) / f).st_mode)]
    return out


def _first_bytes(r: httpx.Response) -> bytes:
    """The whole body, or the first chunk of an endless stream (an event stream)."""
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        return next(r.iter_raw(), b"")
    return r.read()


def test_tokens_are_never_logged_stored_or_echoed(home: Path, worktree: Path, tmp_path: Path) -> None:
    d = DebugDaemon(home).start()
    bodies: list[bytes] = []
    wrong = "Wr0ngT0ken-" + "z" * 30
    try:
        port, token = _endpoint(home)
        ep = Home.resolve(home).read_endpoint()
        hook_token, proof = ep.hook_token, ep.proof
        assert hookd_run(home, "spawn", "b1", "--worktree", os.fspath(worktree)).returncode == 0
        command = settings_command(worktree / ".claude" / "settings.local.json", "PreToolUse")
        for name in ("001-SessionStart.json", "004-PreToolUse.json", "007-PreToolUse.json", "012-Stop.json"):
            r = run_hook(command, (TUI / name).read_bytes(), worktree)
            assert r.returncode == 0
            bodies.append(r.stdout)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as c:
            for method, path in _route_cases():
                for auth in (f"Bearer {wrong}", f"Bearer {token}", f"Bearer {hook_token}", wrong, token, hook_token):
                    with c.stream(method, path, headers={"Authorization": auth}, content=b'{"bad": ') as r:
                        bodies.append(_first_bytes(r))
                        bodies.append(json.dumps(dict(r.headers)).encode())
            # a token inside a payload or a message is the user's data; in headers it is a secret
            r = c.post("/v1/hooks/claude-code/b1", headers={"Authorization": f"Bearer {token}", "X-Hookd-Delivery": wrong},
                       content=(TUI / "002-UserPromptSubmit.json").read_bytes())
            assert r.status_code == 200
        assert hookd_cli(home, "status", "--json").returncode == 0
    finally:
        d.stop()
        d.kill()
    # daemon down: the client spools; the spool holds the payload only
    r = run_hook(command, (TUI / "009-Notification.json").read_bytes(), worktree)
    assert r.returncode == 0 and list(Home.resolve(home).spool_dir("b1").glob("*.json"))
    log = d.log.read_bytes()
    assert b"serving" in log and b"hookd stopped" in log  # the log was written
    for secret in (token, hook_token, wrong):
        s = secret.encode()
        assert s not in log, f"{secret[:6]}... in the daemon's log"
        for b in bodies:
            assert s not in b
    # the proof goes back in hook replies' headers over TCP (that is its job), never in a log
    # line or on a hook's stdout
    assert proof.encode() not in log and not any(proof.encode() in b for b in bodies[:4])
    # stored: nowhere but the token file and the endpoint file (removed at stop)
    holders = sorted(str(p.relative_to(tmp_path)) for p in _files_under(tmp_path) if token.encode() in p.read_bytes())
    assert holders == ["home/token"], holders
    assert not [p for p in _files_under(tmp_path) for x in (hook_token, proof) if x.encode() in p.read_bytes()]
    # the wrong token reached the store only as the delivery id (an X-Hookd-Delivery header
    # is not a secret) and nowhere else
    assert not any(wrong.encode() in p.read_bytes() for p in _files_under(tmp_path)
                   if p.name not in ("hookd.db", "hookd.db-wal", "serve.log"))


def test_generated_files_that_embed_the_token_are_private(daemon: DaemonProcess, home: Path, worktree: Path,
                                                          tmp_path: Path) -> None:
    settings = tmp_path / "standalone.json"
    w3, w4 = tmp_path / "w3", tmp_path / "w4"  # (one builder per hook file)
    w3.mkdir()
    w4.mkdir()
    for args in (["b1", "--worktree", os.fspath(worktree)], ["b2", "--settings-file", os.fspath(settings)],
                 ["b3", "--worktree", os.fspath(w3), "--wake-wait", "60"],
                 ["b4", "--worktree", os.fspath(w4), "--hook-transport", "http"]):
        assert hookd_run(home, "spawn", *args).returncode == 0
    _, token = _endpoint(home)
    h = Home.resolve(home)
    ep = h.read_endpoint()
    files = _files_under(tmp_path)
    assert len(files) >= 8
    # the API token only in its file; the hook token and the proof only in the endpoint file
    # the http hooks' token only in its file: the settings name the variable, not the token
    for secret, where in ((token, [h.token_file]), (ep.hook_token, [h.endpoint_file]), (ep.proof, [h.endpoint_file]),
                          (h.read_hook_token(), [h.hook_token_file])):
        holders = [p for p in files if secret.encode() in p.read_bytes()]
        assert sorted(holders) == sorted(where)
        for p in holders:
            assert _mode(p) & 0o077 == 0, (p, oct(_mode(p)))
            assert _mode(p.parent) & 0o077 == 0, (p.parent, oct(_mode(p.parent)))
    # what the agent's side reads carries no secret: settings, the client, .mcp.json, manifests
    for p in (worktree / ".claude" / "settings.local.json", settings, worktree / ".mcp.json", h.client_script,
              *h.builders_dir.glob("*.json")):
        assert p.exists() and token.encode() not in p.read_bytes(), p
        assert ep.hook_token.encode() not in p.read_bytes() and ep.proof.encode() not in p.read_bytes(), p


def test_the_endpoint_hook_token_admits_only_the_harness_routes(daemon: DaemonProcess, home: Path) -> None:
    """run/endpoint (read by the bash hook client and claw-http loops, and left behind by a
    crash) holds a token made at each start that opens the hook and claw routes only: every
    other route refuses it, and the next start makes a new one."""
    h = Home.resolve(home)
    ep = h.read_endpoint()
    assert h.read_token() not in h.endpoint_file.read_text()
    harness_cases = other_cases = 0
    with httpx.Client(base_url=f"http://127.0.0.1:{ep.port}", timeout=10,
                      headers={"Authorization": f"Bearer {ep.hook_token}"}) as c:
        for method, path in _route_cases()[:-6]:
            with c.stream(method, path, content=b"{}") as r:
                if path.startswith(("/v1/hooks/", "/v1/claw/")):
                    harness_cases += 1
                    assert r.status_code != 401 and r.status_code < 500, (method, path, r.status_code)
                    if path.startswith("/v1/hooks/"):
                        assert r.headers["x-hookd-proof"] == ep.proof
                else:
                    other_cases += 1
                    assert r.status_code == 401, (method, path, r.status_code)
                    assert "x-hookd-proof" not in r.headers
    assert harness_cases >= 4 and other_cases >= 12
    # over the Unix socket (the compiled client) no proof is sent: the socket's mode is the proof
    assert daemon.stop() == 0
    assert not h.endpoint_file.exists()
    daemon.start()
    again = h.read_endpoint()
    assert again.hook_token != ep.hook_token and again.proof != ep.proof and again.pid != ep.pid
    r = httpx.post(f"http://127.0.0.1:{again.port}/v1/hooks/claude-code/b1", content=b'{"hook_event_name": "Stop"}',
                   headers={"Authorization": f"Bearer {ep.hook_token}"})
    assert r.status_code == 401


# --- hostile names in generated commands ------------------------------------------------

HOSTILE = {
    "dollar-paren": "w$(touch PWNED)",
    "backticks": "w`touch PWNED`",
    "single-quote": "w'; touch PWNED; '",
    "double-quote": 'w"; touch PWNED; "',
    "newline": "w\ntouch PWNED\n",
    "semicolon": "w;touch PWNED",
    "spaces-and-vars": "w $HOME ${IFS}touch PWNED",
    "glob-and-redirect": "w*?[x] >PWNED <x |touch PWNED &",
    "backslashes": "w\\$(touch PWNED)\\",
    "non-ascii": "wörk-trée ☃ 木",
}


def _pwned(*roots: Path) -> list[Path]:
    return [p for p in _files_under(*roots) if "PWNED" in p.name]


@pytest.mark.parametrize("name", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_worktree_and_home_names_cannot_inject(name: str, tmp_path: Path) -> None:
    """The worktree's name and HOOKD_HOME's path (baked into the command and the client)
    are hostile; the generated command, run as Claude Code runs it (``sh -c``), creates no
    canary file anywhere and its hook reaches the daemon."""
    home = tmp_path / f"home-{name}"
    worktree = tmp_path / name
    worktree.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    d = DaemonProcess(home).start()
    try:
        r = hookd_run(home, "spawn", "b1", "--worktree", os.fspath(worktree))
        assert r.returncode == 0, r.stderr
        settings = worktree / ".claude" / "settings.local.json"
        # (the PermissionRequest after the PostToolUse: the desk answered, nothing to hold)
        for event, fixture in (("SessionStart", "001-SessionStart.json"), ("PreToolUse", "007-PreToolUse.json"),
                               ("PostToolUse", "010-PostToolUse.json"),
                               ("PermissionRequest", "008-PermissionRequest.json")):
            command = settings_command(settings, event)
            for where in (cwd, worktree):
                res = run_hook(command, (TUI / fixture).read_bytes(), where)
                assert res.returncode == 0 and res.stderr == b"", (event, res.stderr)
        assert _pwned(tmp_path, Path.cwd()) == []
        ev = d.client().get("/v1/status")
        assert ev["counts"]["hook_events"] == 8 and ev["counts"]["spooled"] == 0
        assert [q["state"] for q in d.client().get("/v1/questions", state="all")] == ["answered"]
        # the MCP server entry is an argv list (no shell), with the exact home path
        mcp = json.loads((worktree / ".mcp.json").read_text())["mcpServers"]["hookd"]
        assert mcp["args"][mcp["args"].index("--home") + 1] == os.fspath(home)
    finally:
        d.stop()
        d.kill()
    # daemon down: the spool path under the hostile home is used, still no injection
    res = run_hook(settings_command(settings, "Stop"), (TUI / "012-Stop.json").read_bytes(), cwd)
    assert res.returncode == 0 and res.stdout == b""
    assert len(list(Home.resolve(home).spool_dir("b1").glob("*.json"))) == 1
    assert _pwned(tmp_path) == []


@pytest.mark.parametrize("builder", [
    "$(touch PWNED)", "`touch PWNED`", "b1;touch PWNED", "b1 x", "b1\ntouch PWNED", "b'1", 'b"1', "-b1", ".b1",
    "bö", "../b1", "b/1", "", "b" * 65,
], ids=repr)
def test_hostile_builder_ids_are_refused_with_a_clear_error(builder: str, daemon: DaemonProcess, home: Path,
                                                           worktree: Path, tmp_path: Path) -> None:
    r = hookd_run(home, "spawn", "--worktree", os.fspath(worktree), "--", builder)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "invalid builder id" in r.stderr and "letters, digits" in r.stderr
    assert not (worktree / ".claude").exists() and not (worktree / ".mcp.json").exists()
    assert not list(Home.resolve(home).builders_dir.glob("*.json"))
    # the API refuses it too, with the one error shape
    port, token = _endpoint(home)
    resp = httpx.post(f"http://127.0.0.1:{port}/v1/hooks/claude-code/{urllib.parse.quote(builder, safe='')}",
                      headers={"Authorization": f"Bearer {token}"},
                      content=(TUI / "001-SessionStart.json").read_bytes())
    assert resp.status_code in (400, 404), resp.text
    assert set(resp.json()) == {"error"} and resp.json()["error"]["message"]
    # and the client itself, handed such an id, exits 0 silently without calling anyone
    assert hookd_run(home, "spawn", "ok", "--worktree", os.fspath(worktree)).returncode == 0
    client = Home.resolve(home).client_script
    res = subprocess.run(["bash", "-p", os.fspath(client), "claude-code", builder, "5000"], cwd=tmp_path,
                         input=(TUI / "001-SessionStart.json").read_bytes(), capture_output=True, timeout=30)
    assert (res.returncode, res.stdout) == (0, b"")
    assert _pwned(tmp_path) == []
    assert daemon.client().get("/v1/status")["counts"]["hook_events"] == 0
