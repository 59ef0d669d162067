"""Hooks that stopped working (issue 21, moment 6) with the real Claude Code 2.1.332 offline and a
real daemon: a stream-json host keeps one session alive across turns while the test edits the
settings hookd wrote (docs/harness-claude-code.md "ConfigChange").

- hookd's entries removed from ``.claude/settings.local.json`` mid-session: 2.1.332 fires
  ConfigChange (``local_settings``) with the hooks from before the edit, so hookd's own entry
  reports it; the warning shows in `hookd status` and `hookd lanes`; the next turn sends no
  hook; `hookd spawn` again clears the warning and the turn after it sends hooks again.
- every hook turned off by ``disableAllHooks: true`` in the project's local settings or the
  user's: the file hookd wrote is whole, but the ConfigChange check finds the key, and the
  warning names it and its file; `hookd spawn` keeps the key and restores nothing; the key
  removed, the hooks come again with no restart.
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


@pytest.mark.parametrize("scope", ["local", "user"])
def test_hooks_turned_off_by_a_setting_are_named_and_come_back_when_it_goes(
        claude_bin, hookd: _Hookd, e2e_home: Path, e2e_project: Path, scope: str) -> None:
    """A fresh user's trial: ``disableAllHooks: true`` added to the project's local settings
    (or the user's) of a running builder. ConfigChange reports the edit with the hooks still
    on; hookd's entries are whole, yet the warning names the key and the file; `hookd spawn`
    keeps the key, warns, and records no ``hooks_restored``; `hookd doctor` fails; the key
    removed, the agent's hooks come again (no restart) and the warning ends."""
    from ..conftest import hookd_run

    hookd.cli("spawn", BUILDER, "--worktree", os.fspath(e2e_project))
    target = e2e_project / ".claude" / "settings.local.json" if scope == "local" else e2e_home / ".claude" / "settings.json"
    with FakeAnthropicAPI(_turns(2)) as api:
        env = hermetic_env(e2e_home, api.url)
        with StreamJsonHost(e2e_project, env, extra_args=BYPASS, claude_bin=claude_bin) as host:
            host.send_user("Turn one.")
            host.wait_for_result(timeout=90)
            wait_until(lambda: "Stop" in _received(hookd), 30, 0.1, "turn one's Stop hook")
            s = json.loads(target.read_text()) if target.exists() else {}
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, json.dumps({**s, "disableAllHooks": True}, indent=2).encode())
            [ev] = wait_until(lambda: _kinds(hookd, "hooks_changed"), 30, 0.1, "hooks_changed from ConfigChange")
            d = ev["data"]
            assert (d["signal"], d["via"], d["source"], d["missing"], d["changed"]) == (
                "settings", "ConfigChange", f"{scope}_settings", [], [])
            assert (d["disabled"]["settings_file"], d["disabled"]["key"]) == (os.fspath(target), "disableAllHooks")
            assert d["fix"].startswith(f'remove "disableAllHooks" from {target} ')
            assert f"{BUILDER}: to restore its hooks: {d['fix']}" in hookd.cli("lanes")
            # spawn again: the person's key stays, spawn says why its hooks will not run, nothing is restored
            r = hookd_run(hookd.home, "spawn", BUILDER, "--worktree", os.fspath(e2e_project))
            assert r.returncode == 0 and f"hookd: warning: disableAllHooks is true in {target}" in r.stderr, r.stderr
            assert json.loads(target.read_text())["disableAllHooks"] is True
            doctor = hookd_run(hookd.home, "doctor", BUILDER)
            assert doctor.returncode == 1 and f"  fail  hooks_on      disableAllHooks is true in {target}" in doctor.stdout
            before = len(_received(hookd))
            host.send_user("Turn two.")
            host.wait_for_result(count=2, timeout=90)
            assert len(_received(hookd)) == before  # no hook of turn two
            assert _kinds(hookd, "hooks_restored") == []
            # the key removed: 2.1.332 reloads the file about a second later, and no hook tells when
            # (every hook was off, ConfigChange too), so turns are sent, each waited for, until one's
            # hooks come (a turn's hooks are in before its result), for at most 60 s
            atomic_write(target, json.dumps(s, indent=2).encode())
            turns = [2]

            def next_turn_hooked() -> bool:
                turns[0] += 1
                host.send_user(f"Turn {turns[0]}.")
                host.wait_for_result(count=turns[0], timeout=90)
                return len(_received(hookd)) > before

            wait_until(next_turn_hooked, 60, 0.1, "a turn's hooks after the key was removed")
            [restored] = wait_until(lambda: _kinds(hookd, "hooks_restored"), 30, 0.1, "hooks_restored")
            assert restored["data"]["reason"] == f"disableAllHooks no longer turns the hooks off ({target})"
            assert "hooks stopped working" not in hookd.cli("status")
            host.close(timeout=30)
    assert len(_kinds(hookd, "hooks_changed")) == 1
