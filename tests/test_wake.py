"""Idle wake: the async + asyncRewake Stop hook waits for a message to an idle agent and
exits 2 with it (Claude Code then starts a new turn); released when the agent works again."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home

from .conftest import TUI, events, hookd_cli, hookd_run, run_hook, wait_until

pytestmark = pytest.mark.daemon

STOP = json.loads((TUI / "012-Stop.json").read_bytes())
PROMPT = json.loads((TUI / "002-UserPromptSubmit.json").read_bytes())


def handlers(worktree: Path) -> tuple[str, str]:
    """(regular Stop command, idle-wake Stop command) as spawn wrote them."""
    data = json.loads((worktree / ".claude" / "settings.local.json").read_text())
    regular = wake = None
    for group in data["hooks"]["Stop"]:
        for h in group["hooks"]:
            if "# hookd builder=" in h["command"]:
                if h.get("asyncRewake"):
                    assert h["async"] is True and h["timeout"] > 60
                    wake = h["command"]
                else:
                    regular = h["command"]
    assert regular and wake
    return regular, wake


@pytest.fixture
def idle(daemon, home, worktree) -> dict[str, Any]:
    """A builder whose agent just stopped (its regular Stop hook ran, nothing queued)."""
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--wake-wait", "60")
    assert r.returncode == 0, r.stderr
    regular, wake = handlers(worktree)
    assert run_hook(regular, json.dumps(STOP).encode(), worktree).stdout == b""
    return {"wake": wake, "regular": regular}


def start_wake(command: str, worktree: Path) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(["sh", "-c", command], cwd=worktree, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdin is not None
    p.stdin.write(json.dumps(STOP).encode())
    p.stdin.close()
    return p


def test_a_message_wakes_the_idle_agent(idle, home, worktree):
    p = start_wake(idle["wake"], worktree)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(0.5)  # nothing queued: it waits
        sent = time.monotonic()
        assert hookd_cli(home, "send", "b1", "wake up, please", "--author", "alice").returncode == 0
        rc = p.wait(55)  # the wake window is 60 s: ending inside it with rc 2 is the wake
        latency = time.monotonic() - sent
        out, err = p.stdout.read(), p.stderr.read().decode()
    finally:
        p.kill()
    assert rc == 2 and out == b""
    assert "[human msg m-1 from alice at " in err and "wake up, please" in err
    assert latency < 60  # inside the wake window; how soon is measured, not asserted
    print(f"idle wake: hook exit {latency:.3f} s after send")
    [m] = json.loads(hookd_cli(home, "inbox", "--json").stdout)
    assert (m["state"], m["delivered_via"]) == ("delivered", "Stop (asyncRewake)")
    # the woken turn's Stop adopts it
    run_hook(idle["regular"], json.dumps(STOP).encode(), worktree)
    [m] = json.loads(hookd_cli(home, "inbox", "--json").stdout)
    assert m["state"] == "adopted"


def test_activity_releases_the_wait_and_the_message_goes_the_normal_way(idle, home, worktree):
    p = start_wake(idle["wake"], worktree)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(0.3)
        # the human typed a new prompt: the agent is no longer idle
        prompt = run_hook(idle["regular"], json.dumps(PROMPT).encode(), worktree)
        assert prompt.returncode == 0
        rc = p.wait(55)  # released by the prompt, inside the 60 s wake window
    finally:
        p.kill()
    assert rc == 0 and p.stderr.read() == b""
    assert hookd_cli(home, "send", "b1", "after the prompt").returncode == 0
    [m] = json.loads(hookd_cli(home, "inbox", "--json").stdout)
    assert m["state"] == "queued"  # no stale wake took it


def test_no_wake_past_the_stop_cap(idle, home, worktree):
    for i in range(3):  # three consecutive Stop deliveries reach the cap
        hookd_cli(home, "send", "b1", f"m{i}")
        out = run_hook(idle["regular"], json.dumps({**STOP, "stop_hook_active": i > 0}).encode(), worktree).stdout
        assert out, i
    p = start_wake(idle["wake"], worktree)
    try:
        hookd_cli(home, "send", "b1", "over the cap")
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(1.0)  # must not wake: the cap holds until the human's next prompt
    finally:
        p.kill()
        p.wait()
    box = {m["text"]: m["state"] for m in json.loads(hookd_cli(home, "inbox", "--json").stdout)}
    assert box["over the cap"] == "queued"


def test_wake_with_the_daemon_down_exits_0_and_spools_nothing(idle, home, worktree, daemon):
    daemon.stop()
    p = start_wake(idle["wake"], worktree)
    rc = p.wait(5)
    assert rc == 0 and p.stdout.read() == b"" and p.stderr.read() == b""
    assert not list(Home.resolve(home).spool_dir("b1").glob("*.json"))


def test_idle_wake_is_opt_in(daemon, home, worktree):
    assert hookd_run(home, "spawn", "b2", "--worktree", str(worktree)).returncode == 0
    data = json.loads((worktree / ".claude" / "settings.local.json").read_text())
    assert not [h for g in data["hooks"]["Stop"] for h in g["hooks"] if h.get("asyncRewake")]


def test_a_stop_that_delivered_releases_its_own_wake(idle, home, worktree):
    """The regular Stop hook delivered: the turn goes on with no hook while the model writes,
    so the wake of that Stop must not take the next message (that would bypass the Stop cap)."""
    hookd_cli(home, "send", "b1", "first")
    stop2 = {**STOP, "stop_hook_active": True}
    assert run_hook(idle["regular"], json.dumps(stop2).encode(), worktree).stdout  # delivered at Stop
    p = subprocess.Popen(["sh", "-c", idle["wake"]], cwd=worktree, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(json.dumps(stop2).encode())
    p.stdin.close()
    rc = p.wait(10)
    assert rc == 0 and p.stderr.read() == b""
    hookd_cli(home, "send", "b1", "second")
    box = {m["text"]: m["state"] for m in json.loads(hookd_cli(home, "inbox", "--json").stdout)}
    assert box == {"first": "delivered", "second": "queued"}
