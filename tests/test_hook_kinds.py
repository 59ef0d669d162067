"""A harness whose hook events are spelled otherwise needs no change in the core or the lanes:
its adapter's ``hook_kinds`` says what each event means (harness/base.py ``HookKind``), the
store records the kind beside the name as the harness spelled it, and the core and the lanes act
on the kind (in process, tests/inproc.py; an adapter registered for the test only)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from hookd.config import Home
from hookd.harness import base, claude_code
from hookd.harness.registry import ADAPTERS
from hookd.spawn import spawn

from .conftest import TUI, wait_until
from .inproc import InProc

pytestmark = pytest.mark.inproc

#: Gemini CLI's spelling of the events the fixture's Claude Code session sent
GEMINI = {"SessionStart": "SessionStart", "UserPromptSubmit": "BeforeAgent", "PreToolUse": "BeforeTool",
          "PostToolUse": "AfterTool", "Stop": "AfterAgent", "Notification": "Notification",
          "SessionEnd": "SessionEnd"}
CLAUDE = {g: c for c, g in GEMINI.items()}


class Renamed:
    """Claude Code's adapter under other event names (Gemini CLI's): every member of the
    protocol, each event translated to Claude Code's name and back. Not a Gemini CLI adapter
    (its payloads differ): only the names are what the core must not know."""

    desk_only = claude_code.desk_only
    questions_at_desk = claude_code.questions_at_desk
    sequential_questions = claude_code.sequential_questions
    needs_context = claude_code.needs_context
    ack_required = claude_code.ack_required
    idle_wake = False
    quiet_idle = claude_code.quiet_idle
    version = None
    hook_kinds = {g: claude_code.hook_kinds[c] for c, g in GEMINI.items()}
    remote_answers = claude_code.remote_answers
    hook_installs: dict[str, Any] = {}
    launchers: dict[str, Any] = {}
    present_tool = staticmethod(claude_code.present_tool)
    call_input = staticmethod(claude_code.call_input)

    @staticmethod
    def _claude(p: base.Payload) -> base.Payload:
        return msgspec.structs.replace(p, hook_event_name=CLAUDE.get(p.hook_event_name, p.hook_event_name))

    def parse(self, raw: bytes, *, builder: str, cwd: str | None) -> base.Payload:
        obj = json.loads(raw)
        name = obj["hook_event_name"]
        p = claude_code.parse(json.dumps({**obj, "hook_event_name": CLAUDE.get(name, name)}).encode(),
                              builder=builder, cwd=cwd)
        return msgspec.structs.replace(p, hook_event_name=name)

    def observe(self, p: base.Payload) -> list[base.Observation]:
        return claude_code.observe(self._claude(p))

    def boundary(self, p: base.Payload) -> str | None:
        return claude_code.boundary(self._claude(p))

    def render_context(self, hook_event_name: str, text: str) -> bytes:
        return claude_code.render_context(CLAUDE.get(hook_event_name, hook_event_name), text)

    def known_fields(self, event_name: str) -> frozenset[str] | None:
        return claude_code.known_fields(CLAUDE.get(event_name, event_name))


def _payload(name: str) -> dict[str, Any]:
    """The fixture's Claude Code hook ``name`` (file ``NNN-<name>.json``, the first), respelled."""
    p = json.loads(next(TUI.glob(f"*-{name}.json")).read_bytes())
    p["hook_event_name"] = GEMINI[name]
    return p


@pytest.fixture
def renamed(monkeypatch: pytest.MonkeyPatch) -> Renamed:
    adapter = Renamed()
    assert isinstance(adapter, base.Adapter)
    monkeypatch.setitem(ADAPTERS, "renamed", adapter)
    return adapter


def test_a_harness_spelled_otherwise_moves_the_lane_by_what_its_hooks_mean(home: Path, tmp_path: Path,
                                                                           renamed: Renamed) -> None:
    """BeforeAgent starts a turn, BeforeTool/AfterTool are a tool call, AfterAgent ends the
    turn (idle), a Notification after it is no activity, SessionEnd ends the lane; the rows
    keep Gemini CLI's names with the kinds beside them, and a message queued while the turn
    ran reaches the model at AfterTool (a boundary) under the harness's own name."""
    app = InProc(home).start()
    worktree = tmp_path / "wt"
    worktree.mkdir()
    spawn(Home.resolve(app.home.root), "g1", worktree=worktree, hold_s=0)
    agent = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        def hook(name: str) -> bytes:
            r = app.hook(_payload(name), "g1", harness="renamed", headers={"x-hookd-agent-pid": str(agent.pid)})
            assert r.status_code == 200, r.text
            return r.content

        def lane() -> dict[str, Any]:
            return next(x for x in app.get("/v1/lanes") if x["builder"] == "g1")

        def wait_lane(state: str, detail: str) -> dict[str, Any]:
            return wait_until(lambda: (x := lane())["state"] == state and x["detail"] == detail and x, 60,
                              what=lambda: f"lane {state} ({detail}): {lane()}")

        hook("SessionStart")
        wait_lane("idle", "session started, no prompt yet")
        hook("UserPromptSubmit")
        wait_lane("working", "last hook BeforeAgent")
        hook("PreToolUse")
        assert app.request("POST", "/v1/builders/g1/messages", json={"text": "also the changelog"}).status_code == 201
        body = hook("PostToolUse")
        assert json.loads(body)["hookSpecificOutput"]["hookEventName"] == "PostToolUse"  # Claude Code's render
        assert "also the changelog" in body.decode()
        wait_lane("working", "last hook AfterTool")
        hook("Stop")
        wait_lane("idle", "its turn ended")
        hook("Notification")
        wait_lane("idle", "its turn ended")
        hook("SessionEnd")
        ended = wait_lane("ended", "session ended (prompt_input_exit)")
        assert ended["builder"] == "g1"
        db = sqlite3.connect(Home.resolve(home).db)
        try:
            rows = db.execute("SELECT hook_event_name, hook_kind FROM hook_events WHERE builder='g1' ORDER BY id").fetchall()
        finally:
            db.close()
        assert rows == [
            ("SessionStart", "session_start"), ("BeforeAgent", "prompt"), ("BeforeTool", "tool_before"),
            ("AfterTool", "tool_after"), ("AfterAgent", "turn_end"), ("Notification", "notice"),
            ("SessionEnd", "session_end")]
        delivered = [e["data"] for e in app.events() if e["kind"] == "inbox_delivered"]
        assert [d["via"] for d in delivered] == ["AfterTool"]
    finally:
        agent.kill()
        agent.wait()
        if agent.stdin:
            agent.stdin.close()
        app.stop()
