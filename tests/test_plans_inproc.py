"""Plan approvals (interaction kind ``plan``, issue 21 moment 2), in process: Claude Code
2.1.332's ExitPlanMode PermissionRequest held by the core and answered remotely with one of the
desk's three choices; the payloads are shaped as 2.1.332 sends them
(docs/harness-claude-code.md "Plan approval": the PermissionRequest carries the plan file's
text, the PostToolUse ``{}`` and the plan in ``tool_response``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import click
import pytest

from hookd.cli_render import _interaction
from hookd.harness import claude_code
from hookd.harness.base import PlanAsked

from .conftest import wait_until
from .inproc import InProc
from .test_answers import BASH_POST, BASH_PRE, STOP, about
from .test_answers_inproc import Rig, finish, refused

pytestmark = pytest.mark.inproc

PLAN = "# Plan\n\n1. build the **thing**\n2. ship it\n"
PLAN_PATH = "/home/dev/.claude/plans/make-a-plan-calm-melody.md"
PLAN_ID = "toolu_01PLAN00000000000000000001"
PLAN_INPUT = {"plan": PLAN, "planFilePath": PLAN_PATH}


def plan_perm(tool_input: dict[str, Any] | None = None) -> dict[str, Any]:
    """ExitPlanMode's PermissionRequest as 2.1.332 sends it in plan mode (no tool_use_id)."""
    p = {k: v for k, v in BASH_PRE.items() if k != "tool_use_id"}
    p.update(hook_event_name="PermissionRequest", permission_mode="plan", tool_name="ExitPlanMode",
             tool_input=PLAN_INPUT if tool_input is None else tool_input)
    return p


def plan_post(mode: str = "auto") -> dict[str, Any]:
    """ExitPlanMode's PostToolUse: ``tool_input`` ``{}``, the plan in ``tool_response``,
    ``permission_mode`` the one the session went on in."""
    p = copy.deepcopy(BASH_POST)
    p.update(tool_name="ExitPlanMode", tool_use_id=PLAN_ID, tool_input={}, permission_mode=mode,
             tool_response={"plan": PLAN, "isAgent": False, "filePath": PLAN_PATH})
    return p


@pytest.fixture
def rig(inproc: InProc, worktree: Path) -> Rig:
    return Rig(inproc, worktree)


def pending_plan(rig: Rig) -> dict[str, Any]:
    def one() -> dict[str, Any] | None:
        ps = [q for q in rig.app.questions("pending") if q["kind"] == "plan"]
        return ps[0] if ps else None
    return wait_until(one, 60, what="a pending plan")


def test_the_adapter_observes_a_plan_apart_from_a_permission_prompt() -> None:
    [ob] = claude_code.observe(claude_code.parse(json.dumps(plan_perm()).encode(), builder="b1", cwd=None))
    assert isinstance(ob, PlanAsked) and (ob.plan, ob.plan_path, ob.permission_mode) == (PLAN, PLAN_PATH, "plan")
    [empty] = claude_code.observe(claude_code.parse(json.dumps(plan_perm({})).encode(), builder="b1", cwd=None))
    assert isinstance(empty, PlanAsked) and (empty.plan, empty.plan_path) == (None, None)


@pytest.mark.parametrize(("choice", "mode"), [("auto", "auto"), ("manual", "default")])
def test_a_remote_approval_sets_the_mode_and_is_adopted_by_the_tool_result(rig: Rig, choice: str, mode: str) -> None:
    held = rig.start_hook(plan_perm())
    p = pending_plan(rig)
    assert (p["plan"], p["plan_path"], p["tool_name"]) == (PLAN, PLAN_PATH, "ExitPlanMode")
    rig.held(p["id"])
    [pending] = about(rig.events(), "permission_pending", p["id"])
    assert (pending["data"]["kind"], pending["data"]["plan"], pending["data"]["plan_path"]) == ("plan", PLAN, PLAN_PATH)
    receipt = rig.answer_json(p["id"], options=[choice])
    assert receipt["delivery"] == "hook"
    status, out = finish(held)
    assert status == 200 and json.loads(out) == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
        "behavior": "allow", "updatedInput": PLAN_INPUT,
        "updatedPermissions": [{"type": "setMode", "mode": mode, "destination": "session"}]}}}
    rig.hook(plan_post("auto" if choice == "auto" else "default"))
    i = rig.interaction(p["id"])
    assert (i["kind"], i["state"], i["outcome"], i["decision"], i["answers"], i["surface"]) == (
        "plan", "answered", "allowed", "allow", {"mode": choice}, "cli")
    assert i["adopted_at"] and i["tool_use_id"] == PLAN_ID
    [adopted] = about(rig.events(), "answer_adopted", p["id"])
    assert adopted["data"]["via"] == "PostToolUse"


def test_sending_a_plan_back_carries_the_feedback_to_the_model(rig: Rig) -> None:
    held = rig.start_hook(plan_perm())
    p = pending_plan(rig)
    rig.held(p["id"])
    assert "needs the feedback" in refused(rig.answer(p["id"], options=["deny"]), 400)
    assert refused(rig.answer(p["id"], options=["maybe"]), 400) == (  # (allow named: a trial took it for undocumented)
        "a plan takes --option auto, --option manual (--option allow is manual too), or --option deny --text FEEDBACK")
    assert "feedback goes with deny" in refused(rig.answer(p["id"], options=["auto"], text="also x"), 400)
    rig.answer_json(p["id"], options=["deny"], text="add a rollback step")
    assert json.loads(finish(held)[1])["hookSpecificOutput"]["decision"] == {
        "behavior": "deny", "message": "add a rollback step"}
    rig.hook(STOP)  # 2.1.332 fires no PostToolUse for a denied call: the turn going on adopts it
    i = rig.interaction(p["id"])
    assert (i["outcome"], i["message"]) == ("denied", "add a rollback step") and i["adopted_at"]


@pytest.mark.parametrize(("permission_mode", "mode"), [("auto", "auto"), ("default", "manual"), ("acceptEdits", None)])
def test_a_desk_approval_resolves_the_plan_at_its_tool_result_with_the_mode_chosen(
        rig: Rig, permission_mode: str, mode: str | None) -> None:
    """The desk's "1. Yes, and use auto mode" / "2. Yes, manually approve edits": the tool's
    PostToolUse carries the mode chosen (``auto`` / ``default``: tests/e2e/test_plans_e2e.py),
    recorded on the plan as a remote approval's is; a mode that is neither records none."""
    held = rig.start_hook(plan_perm())
    p = pending_plan(rig)
    rig.held(p["id"])
    rig.hook(plan_post(permission_mode))
    assert finish(held, timeout=20) == (200, b"")  # the held hook let go
    i = rig.interaction(p["id"])
    assert (i["state"], i["decision"], i["surface"], i["answers"]) == (
        "answered", "allow", "terminal", None if mode is None else {"mode": mode})
    [resolved] = about(rig.events(), "permission_resolved", p["id"])
    assert (resolved["data"]["kind"], resolved["data"].get("mode")) == ("plan", mode)
    shown = click.unstyle(_interaction(i, i["resolved_at"] + 60)).splitlines()
    assert shown[-1] == ("  -> approved" if mode is None else f"  -> approved ({mode})"), shown


def test_the_adapter_reports_the_mode_a_plan_went_on_in() -> None:
    def finished(payload: dict[str, Any]) -> Any:
        [ob] = claude_code.observe(claude_code.parse(json.dumps(payload).encode(), builder="b1", cwd=None))
        return ob.plan_mode
    assert [finished(plan_post(m)) for m in ("auto", "default", "acceptEdits", "plan")] == ["auto", "manual", None, None]
    assert finished({**BASH_POST, "permission_mode": "auto"}) is None  # not a plan


def test_hookd_questions_shows_the_plan_and_its_three_answers() -> None:
    item = {"id": "pr_1", "kind": "plan", "builder": "b1", "state": "pending", "created_at": 100.0,
            "tool_name": "ExitPlanMode", "plan": PLAN, "plan_path": PLAN_PATH, "held": True}
    assert click.unstyle(_interaction(item, 160.0)) == "\n".join([
        "pr_1  plan from b1, waiting 1m",
        "    # Plan",
        "",
        "    1. build the **thing**",
        "    2. ship it",
        f"  plan file: {PLAN_PATH}",
        "  approve, auto mode:     hookd answer pr_1 --option auto",
        "  approve, ask each edit: hookd answer pr_1 --option manual",
        "  send back:              hookd answer pr_1 --option deny --text FEEDBACK",
    ])
    done = {**item, "state": "answered", "decision": "allow", "answers": {"mode": "auto"}, "outcome": "allowed",
            "by": "from the CLI by ana", "resolved_at": 150.0}
    assert click.unstyle(_interaction(done, 160.0)).splitlines()[-1] == "  -> approved (auto)"


def test_hookd_watch_answers_a_plan_from_the_keyboard() -> None:
    """`hookd watch`'s keys (hookd.cli_watch._key) on a plan: Enter on the first choice
    approves it in auto mode; the third asks what to change, then sends it back with that."""
    from hookd.cli_watch import _key, _View

    item = {"id": "pr_1", "kind": "plan", "builder": "b1", "revision": 2, "plan": PLAN, "plan_path": PLAN_PATH}
    view = _View(items=[item])
    assert _key(view, "enter") is None and view.mode == "choose"
    assert _key(view, "enter") == {"id": "pr_1", "body": {"revision": 2, "options": ["auto"], "text": None}}
    view = _View(items=[item])
    assert [_key(view, k) for k in ("enter", "down", "down", "enter", "o", "k")] == [None] * 6
    assert view.mode == "text" and view.text == "ok"
    assert _key(view, "enter") == {"id": "pr_1", "body": {"revision": 2, "options": ["deny"], "text": "ok"}}


def test_a_plan_alert_shows_its_first_lines_and_the_three_answers() -> None:
    from hookd.models import Interaction
    from hookd.watchers.notify_channels import interaction_alert

    long_plan = PLAN + "\n".join(f"{n}. step {n}" for n in range(3, 9))
    i = Interaction(id="pr_1", kind="plan", builder="b1", session_id="s", agent_id=None, tool_name="ExitPlanMode",
                    tool_use_id=None, state="pending", questions=None, answers=None, selections=None, surface=None,
                    warning=None, error=None, created_at=1000.0, resolved_at=None, revision=1,
                    input={"plan": long_plan, "planFilePath": PLAN_PATH})
    a = interaction_alert(i, 1, 3, 1125.0)
    assert (a.rule, a.title) == ("plan_pending", "hookd: b1 asks you to approve its plan")
    assert a.message == "\n".join([
        "b1 has been waiting 2 min 5 s for you to approve its plan (reminder 1 of 2).",
        "  # Plan", "  1. build the **thing**", "  2. ship it", "  3. step 3", "  …",
        'Answer: hookd answer pr_1 --option auto   (or: --option manual; --option deny --text "what to change")'])
    assert (a.data["kind"], a.data["plan"], a.data["plan_path"]) == ("plan", long_plan, PLAN_PATH)


def test_a_lane_waiting_on_a_plan_is_waiting_permission(rig: Rig) -> None:
    held = rig.start_hook(plan_perm())
    p = pending_plan(rig)
    rig.held(p["id"])
    lane = wait_until(lambda: [ln for ln in rig.app.get("/v1/lanes") if ln["builder"] == "b1"
                               and ln["state"] == "waiting_permission"], 60, what="b1 waiting on the plan")[0]
    assert list(lane["pending"]) == [p["id"]]
    rig.answer_json(p["id"], options=["manual"])
    assert finish(held)[0] == 200
