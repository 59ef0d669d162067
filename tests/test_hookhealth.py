"""Hooks that stopped working (issue 21, moment 6) against a real daemon, with real files: `hookd
spawn` writes the worktree's settings file, the generated hook client sends the hooks (run as
Claude Code runs them), the file is edited under the spawned builder, and the CLI prints the
warning with its fix (`hookd status`, `hookd lanes`, `hookd events`: exact text, the clock's
parts replaced); `hookd spawn` again clears it at once. The in-process tests of the same:
tests/test_hookhealth_inproc.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess, wait_until

from .conftest import events, hookd_cli, run_hook
from .test_hookhealth_inproc import SID, config_change, drop_hookd_entries, prompt, session_start, settings_of

pytestmark = pytest.mark.daemon


def _hook(home: Path, worktree: Path, payload: dict) -> None:
    """One hook through the command spawn wrote for its event (the generated client)."""
    manifest = json.loads((home / "builders" / "b1.json").read_text())
    groups = manifest["entries"][payload["hook_event_name"]]
    r = run_hook(groups[0]["hooks"][0]["command"], json.dumps(payload).encode(), worktree)
    assert r.returncode == 0 and r.stdout == b"", r


def _plain(text: str, home: Path, worktree: Path) -> str:
    """``text`` with the test's paths named and the clock's parts (times, durations) replaced."""
    text = text.replace(str(Home.resolve(home).root), "HOME").replace(str(worktree), "W")
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d", "TIME", text)
    text = re.sub(r"\b\d+(\.\d+)?(ms|s|m|h)\b", "DUR", text)
    text = text.replace("compiled", "bash    ")  # the hook client spawn could build (the same width)
    return re.sub(r"[ \t]+\n", "\n", text)


def test_an_edit_of_the_settings_file_warns_in_status_and_lanes_and_re_spawn_clears_it(
        daemon: DaemonProcess, home: Path, worktree: Path, tmp_path: Path) -> None:
    r = hookd_cli(home, "spawn", "b1", "--worktree", str(worktree))
    assert r.returncode == 0, r.stderr
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    _hook(home, worktree, session_start(worktree, transcript))
    _hook(home, worktree, prompt(worktree, transcript))
    # someone edits the file: hookd's entries gone, another hook of theirs kept
    s = json.loads(settings_of(worktree).read_text())
    more = len(s["hooks"]) - 3  # the events spawn registered, past the three named
    s["hooks"] = {"Stop": [{"hooks": [{"type": "command", "command": "echo theirs"}]}]}
    settings_of(worktree).write_text(json.dumps(s, indent=2))
    # Claude Code 2.1.332 runs the ConfigChange hook as it was before the edit: hookd's own
    _hook(home, worktree, config_change(worktree))
    wait_until(lambda: any(e["kind"] == "hooks_changed" for e in events(home)), 30, 0.05, "hooks_changed")
    fix = "hookd --home HOME spawn b1 --worktree W"
    st = hookd_cli(home, "status")
    assert st.returncode == 0, st.stderr
    lines = _plain(st.stdout, home, worktree).splitlines()
    assert lines[-5:] == [
        "builder    harness      hook client      hooks    pending  last hook                   note",
        "---------  -----------  -------------  -------  ---------  --------------------------  -----------------------------",
        "b1         claude-code  bash                 3          0  TIME  hooks stopped working (below)",
        f"b1: hooks stopped working: hookd's entries for SessionStart, UserPromptSubmit, PreToolUse and {more} more "
        "are gone in W/.claude/settings.local.json",
        f"b1: to restore them: {fix}",
    ]
    lanes = _plain(hookd_cli(home, "lanes").stdout, home, worktree).splitlines()
    assert lanes[-1] == f"b1: to restore its hooks: {fix}"
    assert "hooks stopped working: hookd's entries for SessionStart" in lanes[2]
    ev = [line for line in _plain(hookd_cli(home, "events").stdout, home, worktree).splitlines() if "hooks_changed" in line]
    assert len(ev) == 1 and ev[0].endswith(
        f"hooks_changed         b1 hooks stopped working (settings): hookd's entries for SessionStart, UserPromptSubmit, "
        f"PreToolUse and {more} more are gone in W/.claude/settings.local.json; to restore them: {fix}")
    # `hookd spawn` again: the daemon is told, the warning ends at once; their hook is kept
    r = hookd_cli(home, "spawn", "b1", "--worktree", str(worktree))
    assert r.returncode == 0, r.stderr
    assert any(e["kind"] == "hooks_restored" and e["data"]["via"] == "spawn" for e in events(home))
    assert "hooks stopped working" not in hookd_cli(home, "status").stdout
    assert json.loads(settings_of(worktree).read_text())["hooks"]["Stop"][0]["hooks"][0]["command"] == "echo theirs"
    assert SID in {e["session_id"] for e in events(home) if e["kind"] == "hooks_changed"}


def test_an_edit_made_while_the_daemon_was_down_is_reported_by_status(home: Path, worktree: Path) -> None:
    r = hookd_cli(home, "spawn", "b1", "--worktree", str(worktree))
    assert r.returncode == 0, r.stderr
    drop_hookd_entries(worktree)  # no daemon, no hook: nobody told
    d = DaemonProcess(home).start()
    try:
        out = _plain(hookd_cli(home, "status").stdout, home, worktree)
        assert "b1: hooks stopped working: hookd's entries for SessionStart" in out
        assert "b1: to restore them: hookd --home HOME spawn b1 --worktree W" in out
        [ev] = [e for e in events(home) if e["kind"] == "hooks_changed"]
        assert ev["data"]["via"] == "status"
    finally:
        d.stop()
