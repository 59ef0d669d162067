"""`hookd watch`: the live view of lanes and of what waits on a human. `--once` (what a pipe
gets too) prints one frame as plain text, snapshotted exactly against a real daemon (only what
the clock decides replaced); the keyboard answer is driven once in a pseudo-terminal, the way a
person at a tmux pane answers: pick the item, pick the option, Enter (a deny: type the message)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from hookd.client import Client
from hookd.daemonproc import DaemonProcess

from .conftest import TUI, hookd_cli

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("cli_watch")]

SID2 = "5a1e0c2b-0000-4000-8000-00000000b002"
ASK = "toolu_01ASK0000000000000000001"


def _hook(client: Client, builder: str, name: str, **changes: Any) -> None:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    client.post(f"/v1/hooks/claude-code/{builder}", json.dumps(p).encode(), {"content-type": "application/json"})


def _permission(client: Client, builder: str, sid: str, command: str, description: str) -> None:
    p = json.loads((TUI / "004-PreToolUse.json").read_bytes())
    del p["tool_use_id"]
    p.update(hook_event_name="PermissionRequest", permission_mode="default", session_id=sid,
             tool_input={"command": command, "description": description})
    client.post(f"/v1/hooks/claude-code/{builder}", json.dumps(p).encode(), {"content-type": "application/json"})


@pytest.fixture
def rig(tmp_path: Path):
    """A daemon whose builder b1 asks a question (ASK) and b2 asks permission for a Bash
    command; yields (home, the daemon, the permission prompt's id)."""
    home = tmp_path / "home"
    d = DaemonProcess(home).start()
    try:
        for b in ("b1", "b2"):
            r = hookd_cli(home, "spawn", b, "--settings-file", os.fspath(tmp_path / f"{b}.json"))
            assert r.returncode == 0, r.stderr
        c = d.client()
        _hook(c, "b1", "001-SessionStart.json")
        _hook(c, "b1", "007-PreToolUse.json", tool_use_id=ASK)
        _hook(c, "b2", "001-SessionStart.json", session_id=SID2)
        _permission(c, "b2", SID2, "ls -la", "List files")
        [pr] = [i["id"] for i in c.get("/v1/questions", state="pending") if i["kind"] == "permission"]
        yield home, d, pr
    finally:
        d.stop()
        d.kill()


def _clockless(text: str) -> str:
    """``text`` with each duration (and the table's padding after it, which depends on its
    width) replaced by ``<d>``."""
    return re.sub(r"\b\d+(?:s|m|h\d\dm|d\d\dh)\b( *)", lambda m: "<d> " if m.group(1) else "<d>", text)


def test_once_prints_one_plain_frame(rig: tuple[Path, DaemonProcess, str]) -> None:
    home, _, pr = rig
    r = hookd_cli(home, "watch", "--once")
    assert (r.returncode, r.stderr) == (0, "")
    assert _clockless(r.stdout) == f"""\
builder    lane                for      pending    queued  detail
---------  ------------------  -----  ---------  --------  --------------------------------------------------
b1         waiting_question    <d> 1         0  question {ASK} is pending
b2         waiting_permission  <d> 1         0  permission {pr} is pending

waiting on a human: 2

  [1] {ASK}  question from b1, waiting <d>
  Which color do you prefer?
    Red   The red option
    Blue  The blue option
  answer: hookd answer {ASK} --option Red

  [2] {pr}  permission from b2, waiting <d>
  Bash: List files
    ls -la
  allow: hookd answer {pr} --option allow
  deny:  hookd answer {pr} --option deny --text MESSAGE
"""


def test_once_with_nothing_waiting(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with DaemonProcess(home):
        r = hookd_cli(home, "watch", "--once")
        assert (r.returncode, r.stdout, r.stderr) == (0, "no builders\n\nnothing waits on a human\n", "")
    r = hookd_cli(home, "watch", "--once")
    assert r.returncode == 3 and r.stdout == "" and "hookd is not running" in r.stderr
