"""The agent asking for attention itself (issue 21, moment 7), with the real Claude Code
2.1.332 offline and a real daemon whose notifier has a ``command`` channel writing each alert
to a file.

- SendUserMessage: offered under ``--brief`` to an entitled account or with
  ``CLAUDE_CODE_BRIEF=1`` (the variable is what makes it available offline); the scripted model
  calls it with ``status`` proactive, the tool returns "Message delivered to user.", hookd
  records ``agent_notified`` and the channel gets the agent's text.
- PushNotification: behind a server-side feature gate 2.1.332 does not enable offline; the
  model's call is refused ("No such tool available") with no PreToolUse or PostToolUse hook,
  so nothing is recorded (docs/harness-claude-code.md "The agent asking for attention").
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from .drivers import hermetic_env, run_print, wait_until
from .fake_api import FakeAnthropicAPI
from .test_claude_code_hookd import _Hookd

pytestmark = pytest.mark.e2e

BUILDER = "b-notice"
MESSAGE_ID = "toolu_01E2EBRIEF00000000000001"
PUSH_ID = "toolu_01E2EPUSH000000000000001"
TEXT = "Tests pass; the migration needs your review before I deploy."


@pytest.fixture
def alerted(tmp_path: Path):
    """A daemon whose notifications go to a command channel appending each alert to a file."""
    home, out = tmp_path / "hookd", tmp_path / "alerts.jsonl"
    home.mkdir()
    script = f"import sys; open({str(out)!r}, 'ab').write(sys.stdin.buffer.read() + b'\\n')"
    (home / "config.toml").write_text(
        "[notify]\nquestion_after_s = 3600\n[[notify.channel]]\ntype = \"command\"\nname = \"log\"\n"
        f"command = {json.dumps([sys.executable, '-c', script])}\n")
    h = _Hookd(home)
    h.start()
    try:
        yield h, out
    finally:
        h.stop()


def _alerts(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in out.read_text().splitlines() if x.strip()] if out.exists() else []


def test_a_message_to_the_user_reaches_the_notifier(claude_bin, alerted, e2e_home, e2e_project):
    hookd, out = alerted
    hookd.cli("spawn", BUILDER, "--worktree", os.fspath(e2e_project))
    script = [[{"type": "tool_use", "id": MESSAGE_ID, "name": "SendUserMessage",
                "input": {"message": TEXT, "status": "proactive"}}], "Sent. FINAL-NOTICE-1"]
    with FakeAnthropicAPI(script) as api:
        env = hermetic_env(e2e_home, api.url, {"CLAUDE_CODE_BRIEF": "1"})
        res = run_print("Tell me when the tests pass.", e2e_project, env, extra_args=("--brief",), timeout=90,
                        claude_bin=claude_bin)
        assert res.returncode == 0, res.stderr[-2000:]
        first = api.main_requests()[0]
        assert "SendUserMessage" in [t.get("name") for t in first.body.get("tools", [])]  # offered
        assert api.main_requests()[1].tool_results()[MESSAGE_ID] == "Message delivered to user."
    [alert] = wait_until(lambda: _alerts(out), 30, 0.1, "the alert on the command channel")
    assert alert["rule"] == "agent_notified" and alert["builder"] == BUILDER
    assert alert["title"] == f"hookd: {BUILDER}'s agent: {TEXT}"
    assert alert["data"]["message"] == TEXT and alert["data"]["tool_use_id"] == MESSAGE_ID
    [ev] = [e for e in hookd.events() if e["kind"] == "agent_notified"]
    assert ev["data"] == {"tool_use_id": MESSAGE_ID, "tool_name": "SendUserMessage", "message": TEXT,
                          "status": "proactive", "urgent": True, "via": "PostToolUse"}
    lane = next(x for x in json.loads(hookd.cli("lanes", "--json")) if x["builder"] == BUILDER)
    assert lane["notified"] == TEXT
    assert not [q for q in hookd.questions() if q["builder"] == BUILDER]  # nothing waits on a human


def test_push_notification_is_not_offered_offline(claude_bin, alerted, e2e_home, e2e_project):
    hookd, out = alerted
    hookd.cli("spawn", BUILDER, "--worktree", os.fspath(e2e_project))
    script = [[{"type": "tool_use", "id": PUSH_ID, "name": "PushNotification",
                "input": {"message": TEXT, "status": "proactive"}}], "Could not push. FINAL-NOTICE-2"]
    with FakeAnthropicAPI(script) as api:
        env = hermetic_env(e2e_home, api.url)
        res = run_print("Notify me.", e2e_project, env, extra_args=("--permission-mode", "bypassPermissions"),
                        timeout=90, claude_bin=claude_bin)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "PushNotification" not in [t.get("name") for t in api.main_requests()[0].body.get("tools", [])]
        assert api.main_requests()[1].tool_results()[PUSH_ID] == (
            "<tool_use_error>Error: No such tool available: PushNotification. PushNotification is disabled "
            "for this session, in subagents as well as here.</tool_use_error>")
    evs = wait_until(lambda: (x := hookd.events()) and any(e["kind"] == "session_ended" for e in x) and x, 30, 0.1,
                     "the session's end")
    assert not [e for e in evs if e["kind"] == "agent_notified"]
    # no tool hook carries the refused call (only PostToolBatch, which hookd does not register)
    assert not [e for e in evs if e["kind"] == "hook_received" and e["data"].get("tool_use_id") == PUSH_ID]
    assert _alerts(out) == []
