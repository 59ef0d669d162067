"""`hookd spawn --hook-transport exec|http`: the entries written (goldens), unspawn in both forms,
the exec form's "home moved" guard inside each client, and an http hook's payload taken by the
real daemon like a command hook's.

The exec form is what Claude Code 2.1.332 spawns directly (``command`` + ``args``, no shell:
docs/harness-claude-code.md "Exec-form and http hooks"); an http hook is its POST of the
payload with ``Content-Length``, the ``Authorization`` header interpolated from the agent's
environment, no delivery id.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hookd.client import Client
from hookd.config import Home
from hookd.daemonproc import DaemonProcess
from hookd.spawn.client import BASH_GUARD, bash_path, build_c_client, tag
from hookd.spawn.files import is_tagged

from tests.conftest import TUI, hookd_run, wait_until

pytestmark = pytest.mark.daemon

PRE = TUI / "004-PreToolUse.json"
POST = TUI / "005-PostToolUse.json"


def settings_of(worktree: Path) -> dict[str, Any]:
    return json.loads((worktree / ".claude" / "settings.local.json").read_text())


def spawn_ok(home: Path, builder: str, worktree: Path, *args: str) -> dict[str, Any]:
    r = hookd_run(home, "spawn", builder, "--worktree", os.fspath(worktree), "--no-mcp", "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(params=["c", "bash"])
def client_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", request.param)
    return request.param


def exec_argv(handler: dict[str, Any]) -> list[str]:
    """What Claude Code spawns for an exec-form entry."""
    assert handler["type"] == "command" and isinstance(handler["args"], list)
    return [handler["command"], *handler["args"]]


def handler(settings: dict[str, Any], event: str) -> dict[str, Any]:
    (group,) = settings["hooks"][event]
    (h,) = group["hooks"]
    return h


# --- the entries (goldens) ------------------------------------------------------------------


def test_exec_form_entries_golden(home: Path, worktree: Path, client_kind: str) -> None:
    m = spawn_ok(home, "b-1", worktree, "--hook-transport", "exec")
    s = settings_of(worktree)
    root = os.fspath(Home.resolve(home).root)
    if client_kind == "c":
        first = [os.fspath(build_c_client()), "--home", root]
    else:
        first = [bash_path(), "-p", "-c", BASH_GUARD, os.fspath(Home.resolve(home).client_script)]
    assert handler(s, "PreToolUse") == {"type": "command", "command": first[0],
                                        "args": [*first[1:], "claude-code", "b-1", "5000", "hook", "# hookd builder=b-1"],
                                        "timeout": 10}
    assert s["hooks"]["PreToolUse"][0]["matcher"] == ".*"
    assert handler(s, "PermissionRequest") == {"type": "command", "command": first[0],
                                               "args": [*first[1:], "claude-code", "b-1", "900000", "hold", "# hookd builder=b-1"],
                                               "timeout": 960}
    assert all("args" in handler(s, e) and "sh -c" not in json.dumps(handler(s, e)) for e in s["hooks"])
    assert m["transport"] == "exec" and m["argv"] == exec_argv(handler(s, "Stop"))
    assert "command" in m  # the shell form's command, as before (status, benches)


def test_http_entries_golden(home: Path, worktree: Path) -> None:
    (home / "web-port").parent.mkdir(parents=True)
    (home / "web-port").write_text("43210\n")
    m = spawn_ok(home, "b-1", worktree, "--hook-transport", "http")
    s = settings_of(worktree)
    http_hook = {"type": "http", "url": "http://127.0.0.1:43210/v1/hooks/claude-code/b-1", "timeout": 10,
                 "headers": {"Authorization": "Bearer $HOOKD_HOOK_TOKEN", "X-Hookd-Tag": "# hookd builder=b-1"},
                 "allowedEnvVars": ["HOOKD_HOOK_TOKEN"]}
    assert {e for e in s["hooks"] if handler(s, e)["type"] == "http"} == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    for e in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        assert handler(s, e) == http_hook
    # what must spool, or is held for a remote answer, stays a command hook (exec form)
    for e in ("SessionStart", "UserPromptSubmit", "PermissionRequest", "Stop", "Elicitation", "SessionEnd"):
        assert handler(s, e)["type"] == "command" and handler(s, e)["args"][-1] == "# hookd builder=b-1"
    token_file = Home.resolve(home).hook_token_file
    assert m["http"] == {"url": http_hook["url"], "token_env": "HOOKD_HOOK_TOKEN", "token_file": os.fspath(token_file)}
    assert oct(token_file.stat().st_mode & 0o777) == "0o600"
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree), "--no-mcp", "--hook-transport", "http")
    assert r.stdout.splitlines()[1] == (f"http hooks post to {http_hook['url']}: start the agent with "
                                        f"HOOKD_HOOK_TOKEN=\"$(cat {token_file})\"")


def test_http_needs_a_daemon_port_and_claw_takes_only_sh(home: Path, worktree: Path) -> None:
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree), "--hook-transport", "http")
    assert r.returncode != 0 and "start `hookd serve` once in this home" in r.stderr
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree), "--harness", "claw", "--hook-transport", "exec")
    assert r.returncode != 0 and "claw takes --hook-transport sh, not 'exec'" in r.stderr
    assert not (worktree / ".claude").exists() and not (worktree / ".claw").exists()


@pytest.mark.parametrize("transport", ["exec", "http"])
def test_unspawn_removes_exactly_hookds_entries_in_each_form(home: Path, worktree: Path, transport: str) -> None:
    (home / "web-port").parent.mkdir(parents=True)
    (home / "web-port").write_text("43210\n")
    settings = worktree / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    mine = {"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/bin/guard", "args": ["x"]}]}],
        "PostToolUse": [{"matcher": ".*", "hooks": [{"type": "http", "url": "http://127.0.0.1:9/mine",
                                                      "headers": {"X-Mine": "# hookd is mentioned, not a tag"}}]}]}}
    original = json.dumps(mine, indent=1) + "\n"
    settings.write_text(original)
    spawn_ok(home, "b-1", worktree, "--hook-transport", transport)
    armed = settings.read_bytes()
    # another builder in the same file is refused (one builder per hook file), nothing written
    r = hookd_run(home, "spawn", "b-2", "--worktree", os.fspath(worktree))
    assert r.returncode == 2 and "already holds the hooks of builder b-1" in r.stderr
    assert settings.read_bytes() == armed
    s = settings_of(worktree)
    assert len(s["hooks"]["PreToolUse"]) == 2 and sum(is_tagged(h, tag("b-1")) for g in s["hooks"]["PreToolUse"] for h in g["hooks"]) == 1
    ours = sum(is_tagged(h, tag("b-1")) for groups in s["hooks"].values() for g in groups for h in g["hooks"])
    r = hookd_run(home, "unspawn", "b-1", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["removed"] == ours > 10
    assert json.loads(settings.read_text()) == mine


# --- the exec form runs, and keeps the "home moved" guard inside the client -----------------


def run_exec(argv: list[str], payload: bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """An exec-form hook run as Claude Code 2.1.332 runs it: spawned directly, payload on stdin."""
    return subprocess.run(argv, input=payload, cwd=cwd, capture_output=True, timeout=30)


def test_exec_form_hook_is_recorded_live(home: Path, worktree: Path, client_kind: str) -> None:
    spawn_ok(home, "b-1", worktree, "--hook-transport", "exec")
    argv = exec_argv(handler(settings_of(worktree), "PreToolUse"))
    with DaemonProcess(home):
        r = run_exec(argv, PRE.read_bytes(), worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        c = Client(Home.resolve(home))
        try:
            got = [e for e in c.lines("/v1/events") if e["kind"] == "hook_received"]
        finally:
            c.close()
    assert [(e["builder"], e["data"]["hook_event_name"], e["data"]["source"]) for e in got] == [("b-1", "PreToolUse", "live")]


def test_status_names_a_hook_transport_other_than_sh(home: Path, worktree: Path, tmp_path: Path) -> None:
    """`hookd status` says how each builder's hooks run when it is not the default `sh`
    (`compiled, exec`; `transport` in --json), and leaves the default unsaid."""
    spawn_ok(home, "b-exec", worktree, "--hook-transport", "exec")
    other = tmp_path / "other"
    other.mkdir()
    spawn_ok(home, "b-sh", other)
    with DaemonProcess(home):
        got = {b["builder"]: (b["client"], b["transport"]) for b in json.loads(hookd_run(home, "status", "--json").stdout)["builders"]}
        lines = hookd_run(home, "status").stdout.splitlines()
    assert {b: t for b, (_, t) in got.items()} == {"b-exec": "exec", "b-sh": "sh"}
    words = {"c": "compiled", "bash": "bash script"}
    cells = {line.split()[0]: re.split(r"\s{2,}", line)[2] for line in lines if line.startswith(("b-exec ", "b-sh "))}
    assert cells == {"b-exec": f"{words[got['b-exec'][0]]}, exec", "b-sh": words[got["b-sh"][0]]}, lines


def test_exec_form_is_a_silent_no_op_when_the_home_is_gone(tmp_path: Path, home: Path, worktree: Path,
                                                          client_kind: str) -> None:
    spawn_ok(home, "b-1", worktree, "--hook-transport", "exec")
    argv = exec_argv(handler(settings_of(worktree), "PreToolUse"))
    home.rename(tmp_path / "moved-home")  # the home was moved (or deleted)
    outside = tmp_path / "xdg"
    outside.mkdir(mode=0o700)
    r = subprocess.run(argv, input=PRE.read_bytes(), cwd=worktree, capture_output=True, timeout=30,
                       env={**os.environ, "XDG_RUNTIME_DIR": os.fspath(outside)})
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert not home.exists() and list(outside.iterdir()) == []  # nothing spooled anywhere for it


# --- an http hook, as Claude Code posts it, against the real daemon -------------------------


def post_hook(port: int, path: str, body: bytes, token: str) -> tuple[int, bytes]:
    """POST as Claude Code 2.1.332's http hook does (axios: Content-Length, JSON, keep-alive)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path, body=body, headers={
            "Accept": "application/json, text/plain, */*", "Content-Type": "application/json",
            "Authorization": f"Bearer {token}", "User-Agent": "axios/1.15.2", "Connection": "keep-alive"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_an_http_hooks_payload_is_taken_like_a_command_hooks(home: Path, worktree: Path) -> None:
    with DaemonProcess(home):
        spawn_ok(home, "b-http", worktree, "--hook-transport", "http")
        spawn_ok(home, "b-cmd", worktree.parent)  # the shell form, for comparison
        h = Home.resolve(home)
        url = settings_of(worktree)["hooks"]["PreToolUse"][0]["hooks"][0]["url"]
        port = int(url.split(":")[2].split("/")[0])
        assert port == int((home / "web-port").read_text())
        token = h.read_hook_token()
        path = "/v1/hooks/claude-code/b-http"
        assert post_hook(port, path, PRE.read_bytes(), token) == (200, b"")
        assert post_hook(port, path, POST.read_bytes(), token)[0] == 200
        # the hook-token admits the hook route only, and no other token is taken
        assert post_hook(port, path, PRE.read_bytes(), "not-the-token")[0] == 401
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/v1/questions", headers={"Authorization": f"Bearer {token}"})
        assert conn.getresponse().status == 401
        conn.close()
        cmd = handler(settings_of(worktree.parent), "PreToolUse")["command"]
        r = subprocess.run(["sh", "-c", cmd], input=PRE.read_bytes(), cwd=worktree.parent, capture_output=True, timeout=30)
        assert r.returncode == 0
        c = Client(h)
        try:
            got = wait_until(lambda: (lambda g: len(g) >= 3 and g)(
                [e for e in c.lines("/v1/events") if e["kind"] == "hook_received"]), 30, what="three hooks")
        finally:
            c.close()
    by = {(e["builder"], e["data"]["hook_event_name"]): e["data"] for e in got}
    assert set(by) == {("b-http", "PreToolUse"), ("b-http", "PostToolUse"), ("b-cmd", "PreToolUse")}
    a, b = by[("b-http", "PreToolUse")], by[("b-cmd", "PreToolUse")]
    same = {k for k in a if k not in ("id", "delivery_id", "hook_event_id", "source")}
    assert {k: a[k] for k in same} == {k: b[k] for k in same} and a["source"] == b["source"] == "live"


@pytest.mark.parametrize("transport", ["exec", "http"])
def test_hookd_feed_plays_a_scenario_through_each_form(home: Path, worktree: Path, transport: str) -> None:
    """`hookd feed` runs a spawned builder's hooks as the harness would: the exec form's argv
    (quoted for ``sh -c``), and for an http hook the builder's shell-form command (the same
    payload to the same daemon)."""
    from hookd.devtools.feed import feed

    scenario = TUI.parent
    with DaemonProcess(home):
        spawn_ok(home, "b-1", worktree, "--hook-transport", transport, "--hold", "0")
        steps = list(feed(Home.resolve(home), scenario, "b-1"))
        c = Client(Home.resolve(home))
        try:
            got = wait_until(lambda: (lambda g: len(g) >= len(steps) and g)(
                [e for e in c.lines("/v1/events") if e["kind"] == "hook_received"]), 30, what="every fed hook")
        finally:
            c.close()
    assert [s.event for s in steps] == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreToolUse",
                                        "PermissionRequest", "Notification", "PostToolUse", "Stop", "SessionEnd"]
    assert all(s.returncode == 0 for s in steps)
    assert [e["data"]["hook_event_name"] for e in got] == [s.event for s in steps]
