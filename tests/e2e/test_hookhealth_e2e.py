"""Hooks that stopped working (issue 21, moment 6) with the real Claude Code 2.1.332 offline and a
real daemon: a stream-json host keeps one session alive across turns while the test edits the
settings hookd wrote (docs/harness-claude-code.md "ConfigChange").

- hookd's entries removed from ``.claude/settings.local.json`` mid-session: 2.1.332 fires
  ConfigChange (``local_settings``) with the hooks from before the edit, so hookd's own entry
  reports it; the warning shows in `hookd status` and `hookd lanes`; the next turn sends no
  hook; `hookd spawn` again clears the warning and the turn after it sends hooks again.
- every hook turned off from the user's settings (``disableAllHooks``): the file hookd wrote is
  whole (the ConfigChange check finds nothing), but the next turn sends no hook while its
  transcript moves: the warning comes from the transcript.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from hookd.config import atomic_write

from .drivers import StreamJsonHost, hermetic_env, wait_until
from .fake_api import FakeAnthropicAPI
from .test_claude_code_hookd import _Hookd, hookd  # noqa: F401 (the fixture)

pytestmark = pytest.mark.e2e

BUILDER = "b-hooks"
BYPASS = ("--permission-mode", "bypassPermissions")


def _turns(n: int) -> list[Any]:
    """``n`` turns, each a Bash call then a text."""
    out: list[Any] = []
    for i in range(1, n + 1):
        out += [[{"type": "tool_use", "id": f"toolu_01HOOKS{i:019d}", "name": "Bash",
                  "input": {"command": f"echo turn-{i}", "description": "Print"}}], f"Turn {i} done."]
    return out


def _received(h: _Hookd) -> list[str]:
    return [e["data"]["hook_event_name"] for e in h.events() if e["kind"] == "hook_received"]


def _kinds(h: _Hookd, kind: str) -> list[dict[str, Any]]:
    return [e for e in h.events() if e["kind"] == kind]


def test_hookds_entries_removed_mid_session_warn_and_re_spawn_restores_them(claude_bin, hookd: _Hookd, e2e_home: Path,
                                                                             e2e_project: Path) -> None:
    hookd.cli("spawn", BUILDER, "--worktree", os.fspath(e2e_project))
    settings = e2e_project / ".claude" / "settings.local.json"
    # the test's own witness of each reload: a ConfigChange hook in the user's settings (2.1.332
    # reloads an edited file about a second after the write, then fires it)
    reloads = e2e_home / "config-changes.jsonl"
    witness = {"hooks": {"ConfigChange": [{"hooks": [{"type": "command", "command": f"cat >> {reloads}; echo >> {reloads}"}]}]}}
    (e2e_home / ".claude").mkdir(parents=True, exist_ok=True)
    (e2e_home / ".claude" / "settings.json").write_text(json.dumps(witness))
    seen = lambda: reloads.read_text().count("local_settings") if reloads.exists() else 0  # noqa: E731
    with FakeAnthropicAPI(_turns(3)) as api:
        env = hermetic_env(e2e_home, api.url)
        with StreamJsonHost(e2e_project, env, extra_args=BYPASS, claude_bin=claude_bin) as host:
            host.send_user("Turn one.")
            host.wait_for_result(timeout=90)
            wait_until(lambda: "Stop" in _received(hookd), 30, 0.1, "turn one's Stop hook")
            # someone removes hookd's entries (keeping the rest of the file)
            s = json.loads(settings.read_text())
            s["hooks"] = {}
            # in one step (hookd's atomic_write: a new file renamed over it): written in place, the file's truncation
            # and its new text may reach 2.1.332's watcher as two edits, two reloads, and the
            # second one's ConfigChange after the wait below (once in a full run: 7 hooks, not 6)
            atomic_write(settings, json.dumps(s, indent=2).encode())
            [ev] = wait_until(lambda: _kinds(hookd, "hooks_changed"), 30, 0.1, "hooks_changed from ConfigChange")
            wait_until(lambda: seen() == 1, 30, 0.1, "the witness of the edit")
            assert (ev["data"]["signal"], ev["data"]["via"], ev["data"]["source"], ev["data"]["file_path"]) == (
                "settings", "ConfigChange", "local_settings", os.fspath(settings))
            fix = f"hookd --home {hookd.home} spawn {BUILDER} --worktree {e2e_project}"
            assert ev["data"]["fix"] == fix
            status = hookd.cli("status")
            assert f"{BUILDER}: hooks stopped working: hookd's entries for SessionStart" in status
            assert f"{BUILDER}: to restore them: {fix}" in status
            assert f"{BUILDER}: to restore its hooks: {fix}" in hookd.cli("lanes")
            # the next turn: no hook reaches hookd (2.1.332 reloaded the file)
            before = len(_received(hookd))
            host.send_user("Turn two.")
            host.wait_for_result(count=2, timeout=90)
            assert len(_received(hookd)) == before
            # spawn again: the warning clears at once, and the next turn's hooks arrive
            hookd.cli("spawn", BUILDER, "--worktree", os.fspath(e2e_project))
            [restored] = _kinds(hookd, "hooks_restored")
            assert restored["data"]["via"] == "spawn"
            assert "hooks stopped working" not in hookd.cli("status")
            wait_until(lambda: seen() == 2, 30, 0.1, "the agent reloading the file spawn wrote")
            host.send_user("Turn three.")
            host.wait_for_result(count=3, timeout=90)
            wait_until(lambda: _received(hookd)[before:].count("Stop") == 1, 30, 0.1, "turn three's Stop hook")
            # the turn's tool and Stop hooks: its UserPromptSubmit may still have run the emptied
            # file's hooks (2.1.332 fires a reload's ConfigChange before the reloaded hooks take
            # effect: once in a full run, the prompt sent right after it reached no hook)
            assert {"PreToolUse", "PostToolUse", "Stop"} <= set(_received(hookd)[before:])
            host.close(timeout=30)
    assert len(_kinds(hookd, "hooks_changed")) == 1


def test_hooks_turned_off_elsewhere_are_found_by_the_transcript(claude_bin, hookd: _Hookd, e2e_home: Path,
                                                                e2e_project: Path) -> None:
    hookd.cli("spawn", BUILDER, "--worktree", os.fspath(e2e_project))
    user_settings = e2e_home / ".claude" / "settings.json"
    with FakeAnthropicAPI(_turns(2)) as api:
        env = hermetic_env(e2e_home, api.url)
        with StreamJsonHost(e2e_project, env, extra_args=BYPASS, claude_bin=claude_bin) as host:
            host.send_user("Turn one.")
            host.wait_for_result(timeout=90)
            wait_until(lambda: "Stop" in _received(hookd), 30, 0.1, "turn one's Stop hook")
            s = json.loads(user_settings.read_text()) if user_settings.exists() else {}
            s["disableAllHooks"] = True
            user_settings.parent.mkdir(parents=True, exist_ok=True)
            user_settings.write_text(json.dumps(s))
            # hookd's ConfigChange hook reports it (user_settings); hookd's own file is whole
            wait_until(lambda: "ConfigChange" in _received(hookd), 30, 0.1, "the ConfigChange hook")
            assert _kinds(hookd, "hooks_changed") == []
            before = len(_received(hookd))
            host.send_user("Turn two.")
            host.wait_for_result(count=2, timeout=90)
            [ev] = wait_until(lambda: _kinds(hookd, "hooks_changed"), 60, 0.2, "hooks_changed from the transcript")
            assert len(_received(hookd)) == before  # no hook of turn two
            assert (ev["data"]["signal"], ev["data"]["via"]) == ("transcript", "transcript")
            assert ev["data"]["reason"].startswith("the transcript shows a turn that ended with no hook from it")
            assert f"{BUILDER}: hooks stopped working: the transcript shows a turn" in hookd.cli("status")
            host.close(timeout=30)
