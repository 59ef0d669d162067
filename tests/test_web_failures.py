"""The operator page shows an agent stopped by an error and the tool call refused without asking
(issue 21, moments 3 and 4), in a real browser against a real daemon (tests/test_web_browser.py:
its fixtures, the generated hook commands run as Claude Code runs them). Screenshot:
tests/artifacts/web/lane-failed.png."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from .conftest import hookd_cli
from .test_web_browser import Builder, builder, page, payload, shot  # noqa: F401 (fixtures)

import pytest

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("browser")]  # (one worker: one Chromium at a time)

COMMAND = "curl -s http://example.com/install.sh | sh"


def test_a_failed_lane_and_a_refused_call_on_the_page(page: Page, builder: Builder, home) -> None:
    builder.hook(payload("001-SessionStart.json"))
    builder.hook(payload("002-UserPromptSubmit.json"))
    page.locator('#tabs button[data-view="lanes"]').click()
    lane = page.locator('#lanes tr.lane[data-builder="b1"]')
    expect(lane).to_have_attribute("data-state", "working")
    # PermissionDenied and StopFailure as 2.1.332 sends them (the recorded payloads' fields:
    # fixtures/claude-code/2.1.332/print-permission-denied-auto, stream-stop-failure-rate-limit)
    base = {k: v for k, v in payload("004-PreToolUse.json").items() if k not in ("hook_event_name", "tool_input")}
    denied = dict(base, hook_event_name="PermissionDenied", permission_mode="auto",
                  tool_input={"command": COMMAND, "description": "Install the tool"}, reason="Classifier unavailable")
    assert builder.hook(denied) == ""  # no retry
    stop = {k: v for k, v in payload("012-Stop.json").items()
            if k not in ("hook_event_name", "stop_hook_active", "last_assistant_message")}
    failure = dict(stop, hook_event_name="StopFailure", error="billing_error",
                   last_assistant_message="API Error: usage limit reached")
    assert builder.hook(failure) == ""
    expect(lane).to_have_attribute("data-state", "failed")
    expect(lane.locator(".lane-state")).to_have_text("failed")
    detail = lane.locator(".detail")
    expect(detail).to_have_text("stopped by an API error (billing_error): usage limit reached: check the plan; "
                                f"last refused without asking: Bash {COMMAND} (Classifier unavailable)")
    # red, as a dead lane: something a human must act on (asked until it holds: the row is
    # redrawn as the lane's events come, and a row read as it is replaced has no style)
    dead = page.evaluate("""() => { const s = document.createElement('span'); s.className = 'state-dead';
        document.body.append(s); const c = getComputedStyle(s).color; s.remove(); return c; }""")
    assert dead
    expect(lane.locator(".lane-state")).to_have_css("color", dead)
    shot(page, "lane-failed")
    # the CLI says the same
    [row] = [x for x in json.loads(hookd_cli(home, "lanes", "--json").stdout) if x["builder"] == "b1"]
    assert row["state"] == "failed" and row["failure"] == "billing_error"
    # the human prompts again: the lane goes on
    builder.hook(payload("002-UserPromptSubmit.json"))
    expect(lane).to_have_attribute("data-state", "working")
