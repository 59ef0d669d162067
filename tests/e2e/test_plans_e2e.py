"""Plan approval (issue 21 moment 2) against the real Claude Code 2.1.332 TUI (tmux), offline.

The session starts in plan mode (``--permission-mode plan``); the model writes its plan file
(the fake API fills in the path the request names: ``{plan_file}``), then calls ExitPlanMode.
The desk's dialog ("Ready to code? ... 1. Yes, and use auto mode / 2. Yes, manually approve
edits / 3. Tell Claude what to change") stays open while hookd holds the PermissionRequest
hook; a remote ``hookd answer`` takes effect: the mode the next tool call's PreToolUse reports,
and what reached the model (the fake API's request log). docs/harness-claude-code.md "Plan
approval" has the facts.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

import pytest

from .drivers import TmuxClaude, wait_until
from .test_answers_e2e import held, wait_held
from .test_claude_code_scenarios import (  # noqa: F401  (rig: fixture)
    Rig,
    about,
    bash_turn,
    find_hook,
    rig,
    text_turn,
    tool_turn,
)

pytestmark = pytest.mark.e2e

PLAN = "# Plan\n\n1. build the **thing**\n2. ship it\n"
WRITE_ID = "toolu_01PLANWRITE000000000001"
PLAN_ID = "toolu_01PLANEXIT0000000000001"
AFTER_ID = "toolu_01PLANAFTER000000000001"
DIALOG = "Would you like to proceed?"


def plan_turns() -> list[dict[str, Any]]:
    return [tool_turn(WRITE_ID, "Write", {"file_path": "{plan_file}", "content": PLAN}),
            tool_turn(PLAN_ID, "ExitPlanMode", {}),
            bash_turn(AFTER_ID, "echo after-plan"),
            text_turn("AFTER-PLAN-DONE")]


def pending_plan(r: Rig) -> dict[str, Any]:
    def one() -> dict[str, Any] | None:
        ps = [q for q in r.questions() if q["kind"] == "plan" and q["state"] == "pending"]
        return ps[0] if ps else None
    return wait_until(one, 20, 0.1, "a pending plan in hookd")


def run_plan(r: Rig, tmux_bin: str, said: str, *answer: str) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Drive the TUI to the plan dialog, answer it with ``hookd answer ID ANSWER...`` (which
    prints ``said`` as what was answered), wait
    for the turn to end; returns (the plan as hookd lists it when pending, hookd's events, the
    screen at the end: its footer names the permission mode)."""
    with TmuxClaude(r.project, r.env, extra_args=["--permission-mode", "plan"], claude_bin=r.claude_bin,
                    tmux=tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Make a plan")
        tui.wait_for_screen(DIALOG, timeout=30)
        p = pending_plan(r)
        wait_held(r, p["id"])
        out = r.hookd.cli("answer", p["id"], *answer)  # what a human reads of the receipt
        assert out == f"answered {p['id']} (plan, {r.builder}): {said}; goes to the agent through its hook\n", out
        screen = tui.wait_for_screen(lambda s: "AFTER-PLAN-DONE" in s and " mode on" in s, timeout=30)
        ev = r.wait_events(lambda ev: about(ev, "answer_adopted", p["id"]), "answer_adopted", timeout=20)
    assert held(r) == []
    assert find_hook(ev, "PostToolUse", tool_name="Bash") is not None  # the turn went on after the plan
    return p, ev, screen


@pytest.mark.parametrize(("choice", "footer"), [("auto", "auto mode on"), ("manual", "manual mode on")])
def test_tui_plan_approved_remotely_sets_the_mode(rig, tmux_bin, choice, footer):  # noqa: F811
    """The desk's "Yes, and use auto mode" / "Yes, manually approve edits", from the CLI."""
    r = rig({"turns": plan_turns()}, builder=f"b-plan-{choice}", form="worktree")
    p, ev, screen = run_plan(r, tmux_bin, f"approved ({choice})", "--option", choice)
    assert (p["plan"], p["tool_name"]) == (PLAN, "ExitPlanMode") and p["plan_path"].endswith(".md")
    result = r.api.main_requests()[-2].tool_results()[PLAN_ID]
    assert result.startswith("User has approved your plan.") and "## Approved Plan:\n" + PLAN in result
    [i] = [q for q in r.questions() if q["id"] == p["id"]]
    assert (i["kind"], i["outcome"], i["answers"], i["surface"], i["delivered_via"]) == (
        "plan", "allowed", {"mode": choice}, "cli", "PermissionRequest")
    [adopted] = about(ev, "answer_adopted", p["id"])
    assert adopted["data"]["via"] == "PostToolUse" and i["tool_use_id"] == PLAN_ID
    assert footer in screen, screen


def test_tui_plan_sent_back_with_feedback_reaches_the_model(rig, tmux_bin):  # noqa: F811
    """The desk's "Tell Claude what to change", from the CLI: the feedback is the tool result."""
    r = rig({"turns": plan_turns()}, builder="b-plan-back", form="worktree")
    feedback = "add a rollback step, REMOTE-PLAN-FEEDBACK"
    p, ev, screen = run_plan(r, tmux_bin, f"sent back: {feedback}", "--option", "deny", "--text", feedback)
    block_text = r.api.main_requests()[2].tool_results()[PLAN_ID]
    assert block_text == feedback
    [i] = [q for q in r.questions() if q["id"] == p["id"]]
    assert (i["kind"], i["outcome"], i["message"]) == ("plan", "denied", feedback)
    assert "plan mode on" in screen, screen  # the agent keeps planning


def raw_hook(r: Rig, name: str, tool_use_id: str) -> dict[str, Any]:
    """The payload of ``r``'s hook ``name`` for ``tool_use_id`` as Claude Code sent it (hookd's
    ``hook_events.raw``)."""
    with sqlite3.connect(r.home.db) as db:
        [(raw,)] = db.execute("SELECT raw FROM hook_events WHERE hook_event_name = ? AND tool_use_id = ?",
                              (name, tool_use_id)).fetchall()
    return json.loads(raw)


@pytest.mark.parametrize(("keys", "label", "mode"), [
    ((), "1. Yes, and use auto mode", "auto"),
    (("Down",), "2. Yes, manually approve edits", "default"),
])
def test_tui_plan_approved_at_the_desk_records_the_mode_chosen(rig, tmux_bin, keys, label, mode):  # noqa: F811
    """The desk's own choice (hookd holds the PermissionRequest, a person answers at the
    terminal): the ExitPlanMode PostToolUse's ``permission_mode`` is the mode chosen, and
    hookd records it on the plan (``auto`` / ``manual``)."""
    r = rig({"turns": plan_turns()}, builder=f"b-plan-desk-{mode}", form="worktree")
    with TmuxClaude(r.project, r.env, extra_args=["--permission-mode", "plan"], claude_bin=r.claude_bin,
                    tmux=tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Make a plan")
        tui.wait_for_screen(DIALOG, timeout=30)
        p = pending_plan(r)
        wait_held(r, p["id"])
        for key in keys:
            tui.send_keys(key)
        tui.wait_for_screen("❯ " + re.escape(label), timeout=10)
        tui.press_until("Enter", lambda s: DIALOG not in s, timeout=10)
        tui.wait_for_screen(lambda s: "AFTER-PLAN-DONE" in s, timeout=30)
        r.wait_events(lambda ev: find_hook(ev, "PostToolUse", tool_name="Bash") is not None, "the Bash call after the plan")
    assert raw_hook(r, "PostToolUse", PLAN_ID)["permission_mode"] == mode
    assert raw_hook(r, "PreToolUse", AFTER_ID)["permission_mode"] == mode
    plan_mode = {"auto": "auto", "default": "manual"}[mode]
    [i] = [q for q in r.questions() if q["id"] == p["id"]]
    assert (i["kind"], i["decision"], i["surface"], i["answers"]) == ("plan", "allow", "terminal", {"mode": plan_mode})
    [resolved] = about(r.events(), "permission_resolved", p["id"])
    assert resolved["data"]["mode"] == plan_mode
