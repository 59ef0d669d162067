"""A builder's subagents on the operator page (issue 21 moment 5), in a real browser against a
real daemon (the rig of tests/test_web_browser.py), with the hooks Claude Code 2.1.332 sent in
fixtures/claude-code/2.1.332/stream-subagent-permission-allowed: the lane lists the running
subagent and what it waits on, the permission card says the subagent asked, Allow on the page
reaches its held hook, and the subagent leaves the lane at its SubagentStop. Screenshots:
tests/artifacts/web/lane-subagents.png, pending-subagent.png."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from hookd.daemonproc import DaemonProcess

from .conftest import questions, wait_until
from .test_answers import Rig as Builder
from .test_web_browser import builder, finish, page, shot  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("browser")]  # (one worker: one Chromium at a time)

HOOKS = Path(__file__).resolve().parent.parent / "fixtures" / "claude-code" / "2.1.332" / \
    "stream-subagent-permission-allowed" / "hooks"
AGENT = "a0000000000000001"


def hook(name: str) -> dict[str, Any]:
    return json.loads((HOOKS / name).read_bytes())


def test_a_lanes_subagents_and_a_subagents_prompt_in_the_browser(page: Page, builder: Builder,  # noqa: F811
                                                                 daemon: DaemonProcess, home: Path) -> None:
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "003-PreToolUse.json",
                 "004-PostToolUse.json", "005-SubagentStart.json", "007-PreToolUse.json"):
        assert builder.hook(hook(name)) == ""
    sub = page.locator(f'#lanes tr.lane[data-builder="b1"] ul.subagents li[data-agent-id="{AGENT}"]')
    expect(sub).to_have_attribute("data-state", "working")
    held = builder.start_hook(hook("008-PermissionRequest.json"))
    pid = wait_until(lambda: [q["id"] for q in questions(home, "pending")], 60, what="the subagent's prompt")[0]
    builder.held(pid)
    expect(sub).to_have_attribute("data-state", "waiting_permission")
    expect(sub).to_contain_text(f"↳ subagent general-purpose {AGENT} waiting_permission on {pid}")
    expect(page.locator('#lanes tr.lane[data-builder="b1"]')).to_have_attribute("data-state", "waiting_permission")
    card = page.locator(f'#pending-list article[data-id="{pid}"]')
    expect(card.locator(".card-head .subagent")).to_have_text(f"subagent general-purpose ({AGENT})")
    shot(page, "pending-subagent")
    page.locator('#tabs button[data-view="lanes"]').click()
    expect(sub).to_be_visible()
    shot(page, "lane-subagents")
    page.locator('#tabs button[data-view="pending"]').click()
    card.locator("button.allow").click()
    assert finish(held)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    assert builder.hook(hook("009-PostToolUse.json")) == ""
    expect(sub).to_have_attribute("data-state", "working")
    assert builder.hook(hook("011-SubagentStop.json")) == ""
    expect(page.locator('#lanes tr.lane[data-builder="b1"] ul.subagents')).to_have_count(0)
