"""hookd's hooks as a Claude Code plugin (issue 23, item 6) with the real Claude Code 2.1.332
offline and a real daemon: `hookd spawn B --plugin-dir DIR` makes a directory that
`claude plugin validate` accepts and whose hooks `claude -p --plugin-dir DIR` runs (nothing
written into the worktree); `hookd doctor` finds the session armed and the version known;
`hookd unspawn` removes the directory it made."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .drivers import hermetic_env, run_print
from .fake_api import FakeAnthropicAPI
from .test_claude_code_hookd import _Hookd, hookd  # noqa: F401 (the fixture)

pytestmark = pytest.mark.e2e

BUILDER = "b-plugin"


def test_the_plugin_directory_runs_hookds_hooks(claude_bin, hookd: _Hookd, e2e_home: Path, e2e_project: Path,
                                                 tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    hookd.cli("spawn", BUILDER, "--plugin-dir", os.fspath(plugin), "--worktree", os.fspath(e2e_project))
    assert sorted(p.relative_to(plugin).as_posix() for p in plugin.rglob("*") if p.is_file()) == [
        ".claude-plugin/plugin.json", "hooks/hooks.json"]
    assert not (e2e_project / ".claude").exists() and not (e2e_project / ".mcp.json").exists()
    api = FakeAnthropicAPI(script=[
        [{"type": "tool_use", "id": "toolu_01PLUGIN00000000000000001", "name": "Bash",
          "input": {"command": "echo from-the-plugin", "description": "Print"}}], "Done."])
    api.start()
    try:
        env = hermetic_env(e2e_home, api.url)
        v = subprocess.run([os.fspath(claude_bin), "plugin", "validate", os.fspath(plugin)], capture_output=True,
                           text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
        assert v.returncode == 0, v.stdout + v.stderr
        r = run_print("say hi", e2e_project, env, claude_bin=claude_bin,
                      extra_args=("--plugin-dir", os.fspath(plugin), "--permission-mode", "bypassPermissions"))
        assert r.returncode == 0, r.stderr[-2000:]
    finally:
        api.stop()
    received = [e["data"]["hook_event_name"] for e in hookd.events() if e["kind"] == "hook_received"]
    for name in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"):
        assert name in received, received

    env = {**os.environ, "HOOKD_CLAUDE_BIN": os.fspath(claude_bin), "HOME": os.fspath(e2e_home)}
    from ..conftest import hookd_cli

    doc = json.loads(subprocess.run(
        [os.sys.executable, "-m", "hookd", "--home", os.fspath(hookd.home), "doctor", BUILDER, "--json"],
        capture_output=True, text=True, env=env, timeout=120).stdout)
    states = {c["check"]: c["state"] for c in doc["checks"] if c["builder"] == BUILDER}
    assert (states["settings"], states["entries"], states["version"]) == ("ok", "ok", "ok"), doc
    assert states["armed"] == "skip"  # (its one session ended: -p)
    assert hookd_cli(hookd.home, "unspawn", BUILDER).returncode == 0
    assert not plugin.exists()
