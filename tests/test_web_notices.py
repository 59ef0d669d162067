"""The operator page shows the agent's own message to its human (issue 21, moment 7: Claude
Code's SendUserMessage in brief mode, as recorded in
fixtures/claude-code/2.1.332/print-brief-send-user-message) on its lane, live, in a real
browser against a real daemon (tests/test_web_browser.py: its fixtures, the generated hook
commands run as Claude Code runs them). Screenshot: tests/artifacts/web/lane-agent-said.png."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .test_notices_inproc import TEXT, hook, push_post
from .test_web_browser import Builder, builder, page, shot  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("browser")]  # (one worker: one Chromium at a time)


def test_the_agents_message_on_its_lane(page: Page, builder: Builder) -> None:
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "003-PreToolUse.json"):
        builder.hook(hook(name))
    page.locator('#tabs button[data-view="lanes"]').click()
    lane = page.locator('#lanes tr.lane[data-builder="b1"]')
    expect(lane).to_have_attribute("data-state", "working")
    expect(lane.locator(".agent-said")).to_have_count(0)
    assert builder.hook(hook("004-PostToolUse.json")) == ""  # fire and forget
    said = lane.locator(".agent-said")
    expect(said.locator(".said-text")).to_have_text(TEXT)  # live: no reload
    expect(said).to_contain_text("the agent says: ")
    expect(said.locator(".since")).to_have_text("0 s ago")
    # the detail does not say it twice
    expect(lane.locator(".detail")).to_have_text("last hook PostToolUse")
    shot(page, "lane-agent-said")
    # the next message replaces it; a message is text, never markup
    builder.hook(push_post("<b>deploy</b> failed"))
    expect(said.locator(".said-text")).to_have_text("<b>deploy</b> failed")
    expect(said.locator("b")).to_have_count(0)
