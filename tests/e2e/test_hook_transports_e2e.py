"""`hookd spawn --hook-transport exec|http` with the real Claude Code 2.1.332 offline and a real
daemon (issue 21, "The hook's own cost").

- exec: every hook of a `claude -p` session reaches hookd with no shell; with the home moved
  away the same session runs with no hook error (the client's own guard: exit 0).
- http: the tool calls' hooks reach hookd as Claude Code's http hooks (token from the agent's
  environment), a queued message rides an http hook's reply into the model's next request,
  and the session's other hooks stay command hooks.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest

from .drivers import hermetic_env, run_print, wait_until
from .fake_api import FakeAnthropicAPI
from .test_claude_code_hookd import _Hookd, hookd  # noqa: F401 (the fixture)

pytestmark = pytest.mark.e2e

IDS = ("toolu_01E2EXPORT00000000000001", "toolu_01E2EXPORT00000000000002")
SCRIPT = {"turns": [
    *({"content": [{"type": "tool_use", "id": i, "name": "Bash", "input": {"command": "true", "description": "t"}}]}
      for i in IDS),
    {"content": [{"type": "text", "text": "done. FINAL-TRANSPORT"}]},
]}
EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreToolUse", "PostToolUse", "Stop",
          "SessionEnd"]


def _received(h: _Hookd, builder: str) -> list[dict]:
    return [e for e in h.events() if e["kind"] == "hook_received" and e["builder"] == builder]


def _run(claude_bin: Path, cwd: Path, env: dict[str, str], debug: bool = False):
    with FakeAnthropicAPI(SCRIPT) as api:
        r = run_print("go", cwd, {**env, "ANTHROPIC_BASE_URL": api.url},
                      extra_args=("--permission-mode", "bypassPermissions", *(("--debug", "hooks") if debug else ())),
                      timeout=120, claude_bin=claude_bin)
        requests = [q.text for q in api.main_requests()]
    assert r.returncode == 0 and r.result and r.result.get("subtype") == "success", r.stderr
    assert [m["message"]["content"][0]["tool_use_id"] for m in r.of_type("user")
            if isinstance(m["message"]["content"], list)] == list(IDS)
    return r, requests


def test_exec_form_hooks_reach_hookd_and_a_moved_home_is_silent(claude_bin, hookd: _Hookd, e2e_home: Path,
                                                                e2e_project: Path, tmp_path: Path):
    hookd.cli("spawn", "b-exec", "--worktree", os.fspath(e2e_project), "--no-mcp", "--hook-transport", "exec")
    settings = json.loads((e2e_project / ".claude" / "settings.local.json").read_text())
    assert all(h["type"] == "command" and "args" in h for gs in settings["hooks"].values() for g in gs for h in g["hooks"])
    env = hermetic_env(e2e_home, "http://127.0.0.1:9")
    _run(claude_bin, e2e_project, env)
    got = wait_until(lambda: (x := _received(hookd, "b-exec")) and len(x) >= len(EVENTS) and x, 30, 0.1, "every hook")
    assert [e["data"]["hook_event_name"] for e in got] == EVENTS
    assert {e["data"]["source"] for e in got} == {"live"}

    hookd.stop()
    hookd.home.rename(tmp_path / "moved-away")  # the home was moved: the settings still name it
    r, _ = _run(claude_bin, e2e_project, env, debug=True)
    log = "\n".join(p.read_text() for p in (e2e_home / ".claude" / "debug").glob("*.txt"))
    ours = re.findall(r"Hooks: (\w+)(?::\w+)? \[[^\]]*hook-client[^\]]*\] finished with status (\d+)", log)
    assert len(ours) == len(EVENTS) - 1 and {s for _, s in ours} == {"0"}, ours  # (SessionEnd: -p exits first)
    assert "failed to start" not in log and "hook error" not in r.stdout and "hook problem" not in r.stdout


def test_http_hooks_reach_hookd_and_carry_a_delivery(claude_bin, hookd: _Hookd, e2e_home: Path, e2e_project: Path):
    m = json.loads(hookd.cli("spawn", "b-http", "--worktree", os.fspath(e2e_project), "--no-mcp",
                             "--hook-transport", "http", "--json"))
    token = Path(m["http"]["token_file"]).read_text().strip()
    env = hermetic_env(e2e_home, "http://127.0.0.1:9", {"HOOKD_HOOK_TOKEN": token})
    script = json.loads(json.dumps(SCRIPT))
    script["turns"][0]["content"][0]["input"]["command"] = "sleep 3"  # time to queue a message
    with FakeAnthropicAPI(script) as api:
        out: dict = {}
        t = threading.Thread(target=lambda: out.update(r=run_print(
            "go", e2e_project, {**env, "ANTHROPIC_BASE_URL": api.url},
            extra_args=("--permission-mode", "bypassPermissions"), timeout=120, claude_bin=claude_bin)))
        t.start()
        try:
            wait_until(lambda: any(e["data"]["hook_event_name"] == "PreToolUse" for e in _received(hookd, "b-http")),
                       60, 0.1, "the first PreToolUse (an http hook)")
            hookd.cli("send", "b-http", "HTTP-DELIVERED-NOTE")
        finally:
            t.join(130)
        requests = [q.text for q in api.main_requests()]
    r = out["r"]
    assert r.returncode == 0 and r.result and r.result.get("subtype") == "success", r.stderr
    got = wait_until(lambda: (x := _received(hookd, "b-http")) and len(x) >= len(EVENTS) and x, 30, 0.1, "every hook")
    assert sorted(e["data"]["hook_event_name"] for e in got) == sorted(EVENTS)
    assert {e["data"]["source"] for e in got} == {"live"}
    # the first PostToolUse (an http hook) took the message; its reply put it in the model's next request
    [delivered] = [e for e in hookd.events() if e["kind"] == "inbox_delivered"]
    assert delivered["data"]["via"] == "PostToolUse"
    assert "HTTP-DELIVERED-NOTE" not in requests[0] and "HTTP-DELIVERED-NOTE" in requests[1]


def test_http_hooks_while_the_daemon_is_down_are_lost_and_the_command_hooks_spool(
        claude_bin, hookd: _Hookd, e2e_home: Path, e2e_project: Path):
    """What `--hook-transport http` gives up (docs/decisions.md "Hook transports"): with the daemon
    down the agent goes on, the tool calls' http hooks are gone (refused connections), and every
    other hook, a command hook, is spooled and recorded once the daemon is back."""
    m = json.loads(hookd.cli("spawn", "b-down", "--worktree", os.fspath(e2e_project), "--no-mcp",
                             "--hook-transport", "http", "--json"))
    env = hermetic_env(e2e_home, "http://127.0.0.1:9",
                       {"HOOKD_HOOK_TOKEN": Path(m["http"]["token_file"]).read_text().strip()})
    hookd.stop()
    r, _ = _run(claude_bin, e2e_project, env, debug=True)
    log = "\n".join(p.read_text() for p in (e2e_home / ".claude" / "debug").glob("*.txt"))
    assert log.count("HTTP hook error: connect ECONNREFUSED") == 4  # PreToolUse, PostToolUse, twice
    hookd.start()
    got = wait_until(lambda: (x := _received(hookd, "b-down")) and len(x) >= 4 and x, 30, 0.1, "the spooled hooks")
    assert [e["data"]["hook_event_name"] for e in got] == ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]
    assert {e["data"]["source"] for e in got} == {"spool"}
