"""A plan waiting on approval (interaction kind ``plan``) on the operator page, in a real
browser against a real daemon (the rig of tests/test_web_browser.py): the plan's markdown shown
as text, sent back with feedback, then a revised plan approved in auto mode. Screenshots go to
tests/artifacts/web/ (``pending-plan``, ``history-plan``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from hookd.daemonproc import DaemonProcess

from .conftest import questions, wait_until
from .test_answers import Rig as Builder
from .test_web_browser import builder, finish, page, payload, shot  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("browser")]  # (one worker: one Chromium at a time)

PLAN_PATH = "/home/dev/.claude/plans/make-a-plan-calm-melody.md"
PLAN = ("# Context\n\nThe build is slow; make it **fast**.\n\n## Steps\n\n1. cache `node_modules`\n"
        "2. run the tests in parallel\n\n```sh\nmake test -j4\n```\n\n<img src=x onerror=alert(1)>\n")


def plan_permission(plan: str) -> dict[str, Any]:
    """ExitPlanMode's PermissionRequest as Claude Code 2.1.332 sends it in plan mode."""
    p = {k: v for k, v in payload("004-PreToolUse.json").items() if k != "tool_use_id"}
    p.update(hook_event_name="PermissionRequest", permission_mode="plan", tool_name="ExitPlanMode",
             tool_input={"plan": plan, "planFilePath": PLAN_PATH})
    return p


def pending_plan(home: Path) -> str:
    return wait_until(lambda: [q["id"] for q in questions(home, "pending") if q["kind"] == "plan"], 60,
                      what="a pending plan")[0]


def test_a_plan_is_shown_sent_back_and_approved_in_the_browser(page: Page, builder: Builder,  # noqa: F811
                                                               daemon: DaemonProcess, home: Path) -> None:
    assert builder.hook(payload("001-SessionStart.json")) == ""
    held = builder.start_hook(plan_permission(PLAN))
    pid = pending_plan(home)
    builder.held(pid)
    card = page.locator(f'#pending-list article.plan[data-id="{pid}"]')
    expect(card.locator(".kind")).to_have_text("plan")
    expect(card.locator(".plan h3")).to_have_text("Context")
    expect(card.locator(".plan h4")).to_have_text("Steps")
    expect(card.locator(".plan p strong")).to_have_text("fast")
    expect(card.locator(".plan ol li")).to_have_text(["cache node_modules", "run the tests in parallel"])
    expect(card.locator(".plan ol li code")).to_have_text("node_modules")
    expect(card.locator(".plan pre")).to_have_text("make test -j4\n")
    expect(card.locator(".plan p").last).to_have_text("<img src=x onerror=alert(1)>")  # the agent's text, as text
    assert card.locator(".plan img").count() == 0
    expect(card.locator(".plan-path code")).to_have_text(PLAN_PATH)
    card.locator("button.plan-deny").click()  # no feedback yet: refused on the page, nothing sent
    expect(card.locator(".note")).to_have_text("Write what to change first.")
    card.locator("textarea.plan-feedback").fill("also cache pip")
    shot(page, "pending-plan")
    card.locator("button.plan-deny").click()
    expect(page.locator("#toast")).to_have_text("Sent the plan back — see History")
    assert finish(held)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "also cache pip"}
    done = page.locator(f'#history-list article[data-id="{pid}"]')
    expect(done.locator(".badge")).to_have_text("denied")
    expect(done.locator("dd.answer")).to_have_text("also cache pip")

    revised = PLAN.replace("## Steps", "## Steps\n\n0. cache pip")
    held = builder.start_hook(plan_permission(revised))
    pid2 = wait_until(lambda: [i for i in [pending_plan(home)] if i != pid], 60, what="the revised plan")[0]
    builder.held(pid2)
    card = page.locator(f'#pending-list article.plan[data-id="{pid2}"]')
    card.locator("button.plan-auto").click()
    expect(page.locator("#toast")).to_have_text("Approved the plan (auto) — see History")
    decision = finish(held)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "allow" and decision["updatedInput"] == {"plan": revised, "planFilePath": PLAN_PATH}
    assert decision["updatedPermissions"] == [{"type": "setMode", "mode": "auto", "destination": "session"}]
    done = page.locator(f'#history-list article[data-id="{pid2}"]')
    expect(done.locator(".badge")).to_have_text("allowed")
    expect(done).to_have_attribute("data-surface", "web")
    page.locator("#toast a").click()
    shot(page, "history-plan")
    i = json.loads(json.dumps([q for q in questions(home, "all") if q["id"] == pid2][0]))
    assert (i["answers"], i["surface"]) == ({"mode": "auto"}, "web")
