"""hookd against the real Claude Code 2.1.332 TUI (tmux) and the fake Messages API.

Scenario: a builder made by ``hookd spawn`` runs Bash, then AskUserQuestion;
the human answers at the terminal. hookd must record ``question_pending`` while
the menu is open and ``question_resolved`` (answered with the chosen label)
once the answer is given.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from .drivers import TmuxClaude, hermetic_env, wait_until
from .fake_api import FakeAnthropicAPI

# (one e2e module whose daemons are new interpreters, as a user starts them: the others fork)
pytestmark = [pytest.mark.e2e, pytest.mark.exec_daemon]

BUILDER = "b-e2e"
BASH_ID = "toolu_01HKDBASH000000000000001"
ASK_ID = "toolu_01HKDASK0000000000000001"
QUESTION = "Which color do you prefer?"
SCRIPT = {"turns": [
    {"content": [
        {"type": "text", "text": "I'll run a command."},
        {"type": "tool_use", "id": BASH_ID, "name": "Bash",
         "input": {"command": "echo hi", "description": "Print hi"}}]},
    {"content": [{"type": "tool_use", "id": ASK_ID, "name": "AskUserQuestion", "input": {
        "questions": [{"question": QUESTION, "header": "Color", "multiSelect": False, "options": [
            {"label": "Red", "description": "The red option"},
            {"label": "Blue", "description": "The blue option"}]}]}}]},
    {"content": [{"type": "text", "text": "All done. FINAL-HOOKD-789"}]},
]}


class _Hookd:
    """The daemon (``hookd.daemonproc.DaemonProcess``) plus its CLI for one home."""

    def __init__(self, home: Path):
        from hookd.daemonproc import DaemonProcess

        self.home = home
        self.daemon = DaemonProcess(home)

    def start(self) -> None:
        self.daemon.start()

    def stop(self) -> None:
        self.daemon.stop()
        self.daemon.kill()

    def cli(self, *args: str) -> str:
        """Run ``hookd --home HOME ARGS`` (in this process: tests.conftest.hookd_run); returns
        stdout; fails the test on a non-zero exit."""
        from ..conftest import hookd_run

        proc = hookd_run(self.home, *args)
        assert proc.returncode == 0, f"hookd {' '.join(args)} -> {proc.returncode}: {proc.stderr}"
        return proc.stdout

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.cli("events", "--json").splitlines() if line.strip()]

    def questions(self) -> list[dict[str, Any]]:
        return json.loads(self.cli("questions", "--state", "all", "--json"))


@pytest.fixture
def hookd(tmp_path: Path):
    pytest.importorskip("hookd.cli")
    d = _Hookd(tmp_path / "hookd")
    d.start()
    try:
        yield d
    finally:
        d.stop()


def _call_id(event: dict) -> str | None:
    data = event.get("data") or {}
    return data.get("tool_use_id") or data.get("id")


def _one(events: list[dict], kind: str, tool_use_id: str) -> dict | None:
    """The single event of ``kind`` for ``tool_use_id`` (None if absent; >1 fails)."""
    hits = [e for e in events if e["kind"] == kind and _call_id(e) == tool_use_id]
    assert len(hits) <= 1, f"{kind} recorded {len(hits)} times for {tool_use_id}: {hits}"
    return hits[0] if hits else None


def test_tui_question_pending_then_resolved_with_chosen_label(
        claude_bin, tmux_bin, hookd: _Hookd, e2e_home, e2e_project):
    manifest = json.loads(hookd.cli("spawn", BUILDER, "--worktree", os.fspath(e2e_project), "--json"))
    settings = e2e_project / ".claude" / "settings.local.json"
    assert Path(manifest["settings_file"]) == settings and settings.is_file()
    assert f"builder={BUILDER}" in settings.read_text()

    with FakeAnthropicAPI(SCRIPT) as api:
        env = hermetic_env(e2e_home, api.url)
        with TmuxClaude(e2e_project, env, extra_args=("--permission-mode", "bypassPermissions"),
                        claude_bin=claude_bin, tmux=tmux_bin) as tui:
            tui.wait_ready(timeout=20)
            tui.submit("Run echo hi then ask me a question")
            tui.wait_for_screen(lambda s: "Enter to select" in s and "2. Blue" in s, timeout=30)

            # While the menu is open: pending, keyed by the tool-call id.
            pending = wait_until(lambda: _one(hookd.events(), "question_pending", ASK_ID), 15,
                                 0.1, "question_pending in hookd events")
            assert pending["builder"] == BUILDER
            q = [x for x in hookd.questions() if x["id"] == ASK_ID]
            assert len(q) == 1 and q[0]["state"] == "pending" and q[0]["builder"] == BUILDER
            assert q[0]["questions"][0]["question"] == QUESTION
            assert _one(hookd.events(), "question_resolved", ASK_ID) is None
            assert len(api.main_requests()) == 2  # the model has not been answered yet

            tui.send_keys("Down")
            tui.wait_for_screen(r"❯ 2\. Blue", timeout=5)
            tui.press_until("Enter", lambda s: "Enter to select" not in s, timeout=10)
            tui.wait_for_screen("FINAL-HOOKD-789", timeout=30)

            resolved = wait_until(lambda: _one(hookd.events(), "question_resolved", ASK_ID), 15,
                                  0.1, "question_resolved in hookd events")
        assert api.main_requests()[2].contains(f'"{QUESTION}"="Blue"')

    data = resolved["data"]
    assert data.get("outcome") == "answered", data
    assert data.get("answers") == {QUESTION: "Blue"}, data
    assert resolved["session_id"] == pending["session_id"]
    assert resolved["seq"] > pending["seq"]
    q = [x for x in hookd.questions() if x["id"] == ASK_ID]
    assert q[0]["state"] == "answered" and q[0]["answers"] == {QUESTION: "Blue"}
    assert q[0].get("surface") in (None, "terminal")
    # The Bash call before the question went through the same hooks.
    hooks = [e for e in hookd.events() if e["kind"] == "hook_received"]
    bash = [e for e in hooks if (e.get("data") or {}).get("tool_use_id") == BASH_ID]
    assert {e["data"].get("hook_event_name") for e in bash} >= {"PreToolUse", "PostToolUse"}
    assert all(e["builder"] == BUILDER for e in hooks)
