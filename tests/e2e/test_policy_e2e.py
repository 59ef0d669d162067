"""A builder's opt-in default answer (issue 21 moment 8, ``hookd spawn --default-answer-after``)
against the real Claude Code 2.1.332 TUI (tmux), offline: nobody answers the menu or the dialog
at the desk or remotely; after the deadline hookd answers through the held PermissionRequest
hook (actor ``hookd``, surface ``default``) and the answer reaches the model (the fake API's
request log). A question gets the named option; a permission prompt is denied, never allowed.
"""

from __future__ import annotations

import os

import pytest

from .test_answers_e2e import DIALOG, MANUAL, MENU, PERM_CMD, Q, ask_turn, held, interaction, pending_permission, wait_held
from .test_claude_code_scenarios import (  # noqa: F401  (rig: fixture)
    Rig,
    about,
    bash_turn,
    rig,
    text_turn,
    tool_result_block,
)
from .drivers import TmuxClaude, wait_until

pytestmark = pytest.mark.e2e

ASK = "toolu_01POLICYASK0000000000001"
BASH = "toolu_01POLICYBASH000000000001"


def with_default(r: Rig, after: int, *label: str) -> None:
    """Spawn the builder again, opted in (the daemon reads the manifest: no restart)."""
    r.hookd.cli("spawn", r.builder, "--worktree", os.fspath(r.project), "--default-answer-after", str(after), *label)


def test_tui_question_gets_the_default_answer_after_the_deadline(rig, tmux_bin):  # noqa: F811
    r = rig({"turns": [ask_turn(ASK), text_turn("AFTER-DEFAULT-BLUE")]}, builder="b-default-q", form="worktree")
    with_default(r, 3, "--default-answer", "Blue")
    with r.tui(tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Ask me a color")
        tui.wait_for_screen(lambda s: MENU in s and "2. Blue" in s, timeout=30)
        wait_held(r, ASK)
        # nobody answers: 3 s after it was asked, hookd's default closes the menu with Blue
        tui.wait_for_screen("AFTER-DEFAULT-BLUE", timeout=60)
        ev = r.wait_events(lambda ev: about(ev, "answer_adopted", ASK), "answer_adopted")
    main = r.api.main_requests()
    assert len(main) == 2
    block = tool_result_block(main[1], ASK)
    assert block is not None and not block.get("is_error")
    assert f'"{Q}"="Blue"' in main[1].tool_results()[ASK]
    i = interaction(r, ASK)
    assert (i["state"], i["surface"], i["actor"], i["answers"]) == ("answered", "default", "hookd", {Q: "Blue"})
    assert i["delivered_via"] == "PermissionRequest" and i["adopted_at"] >= i["delivered_at"]
    [answered] = about(ev, "interaction_answered", ASK)
    assert (answered["data"]["surface"], answered["data"]["delivery"]) == ("default", "hook")
    assert held(r) == []


def test_tui_permission_prompt_is_denied_by_default_never_allowed(rig, tmux_bin):  # noqa: F811
    r = rig({"turns": [bash_turn(BASH, PERM_CMD), text_turn("AFTER-DEFAULT-DENY")]},
            builder="b-default-p", form="worktree")
    with_default(r, 3)
    with TmuxClaude(r.project, r.env, settings=MANUAL, claude_bin=r.claude_bin, tmux=tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Run the probe")
        tui.wait_for_screen(DIALOG, timeout=30)
        p = pending_permission(r)
        wait_held(r, p["id"])
        tui.wait_for_screen("AFTER-DEFAULT-DENY", timeout=60)
        r.wait_events(lambda ev: about(ev, "answer_adopted", p["id"]), "answer_adopted")
    main = r.api.main_requests()
    assert len(main) == 2
    block = tool_result_block(main[1], BASH)
    assert block is not None and block["is_error"] is True
    assert block["content"].startswith("No one answered this permission prompt within 3s; hookd's default answer")
    assert not (r.project / "perm-probe").exists()  # the command never ran
    i = interaction(r, p["id"])
    assert (i["outcome"], i["surface"], i["actor"]) == ("denied", "default", "hookd")
    assert held(r) == []


DISMISSED_ASK = "toolu_01POLICYDISMISS0000000001"


def test_tui_dismissed_question_stays_at_the_desk_which_then_decides(rig, tmux_bin):  # noqa: F811
    """``hookd dismiss`` lets the held PermissionRequest hook go with no decision: the menu stays
    open at the desk (no answer is invented), and the desk's later choice is what the model gets
    and what hookd records."""
    r = rig({"turns": [ask_turn(DISMISSED_ASK), text_turn("AFTER-DESK-BLUE")]}, builder="b-dismiss", form="worktree")
    with r.tui(tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Ask me a color")
        tui.wait_for_screen(lambda s: MENU in s and "2. Blue" in s, timeout=30)
        wait_held(r, DISMISSED_ASK)
        out = r.hookd.cli("dismiss", DISMISSED_ASK, "--reason", "asked twice")
        assert out == f"dismissed {DISMISSED_ASK} (question, b-dismiss): asked twice\n"
        wait_until(lambda: held(r) == [], 10, 0.05, "the held hook let go")
        assert MENU in tui.capture() and len(r.api.main_requests()) == 1  # still the desk's to answer
        assert interaction(r, DISMISSED_ASK)["state"] == "dismissed"
        tui.send_keys("Down")
        tui.wait_for_screen(r"❯ 2\. Blue", timeout=5)
        tui.press_until("Enter", lambda s: MENU not in s, timeout=10)
        tui.wait_for_screen("AFTER-DESK-BLUE", timeout=30)
        r.wait_events(lambda ev: [e for e in about(ev, "question_resolved", DISMISSED_ASK)
                                  if e["data"]["outcome"] == "answered"], "the desk's answer")
    assert f'"{Q}"="Blue"' in r.api.main_requests()[1].tool_results()[DISMISSED_ASK]
    i = interaction(r, DISMISSED_ASK)
    assert (i["state"], i["surface"], i["answers"]) == ("answered", "terminal", {Q: "Blue"})
    assert i["warning"].startswith("dismissed from the CLI by ") and i["warning"].endswith("(asked twice), then answered at the desk")
