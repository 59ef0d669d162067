"""The operator page shows a lane whose hooks stopped working (issue 21, moment 6): a banner
under the lane with why and the command that restores them, gone once `hookd spawn` wrote them
again; in a real browser against a real daemon (tests/test_web_browser.py: its fixtures, the
generated hook commands run as Claude Code runs them). Screenshot:
tests/artifacts/web/lane-hooks-changed.png."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import hookd_cli, run_hook, settings_command
from .test_hookhealth_inproc import RECORDED
from .test_web_browser import Builder, builder, page, payload, shot  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("browser")]  # (one worker: one Chromium at a time)


def test_a_lane_whose_hooks_were_removed_shows_a_banner_with_the_fix(page: Page, builder: Builder, home: Path,
                                                                      worktree: Path) -> None:
    builder.hook(payload("001-SessionStart.json"))
    page.locator('#tabs button[data-view="lanes"]').click()
    lane = page.locator('#lanes tr.lane[data-builder="b1"]')
    expect(lane).to_have_attribute("data-state", "idle")
    settings = worktree / ".claude" / "settings.local.json"
    config_change = settings_command(settings, "ConfigChange")  # hookd's entry, as the agent loaded it
    s = json.loads(settings.read_text())
    more = len(s["hooks"]) - 3  # the events spawn registered, past the three the banner names
    s["hooks"] = {}  # someone removes hookd's entries
    settings.write_text(json.dumps(s, indent=2))
    # 2.1.332 runs the ConfigChange hooks from before the edit (the recorded payload, this worktree's file)
    p = json.loads(RECORDED.read_bytes())
    p.update(session_id=payload("001-SessionStart.json")["session_id"], cwd=str(worktree), file_path=str(settings))
    r = run_hook(config_change, json.dumps(p).encode(), worktree)
    assert r.returncode == 0 and r.stdout == b""
    banner = page.locator('#lanes tr.hooks-changed[data-builder="b1"] .banner')
    expect(banner).to_be_visible()
    expect(banner).to_have_attribute("role", "alert")
    expect(banner.locator("strong")).to_have_text("b1's hooks stopped working: ")
    expect(banner).to_contain_text(f"hookd's entries for SessionStart, UserPromptSubmit, PreToolUse and {more} more are gone in {settings}")
    fix = f"hookd --home {home.resolve()} spawn b1 --worktree {worktree.resolve()} --hold 60"  # (as it was spawned)
    expect(banner.locator("code.fix")).to_have_text(fix)
    expect(lane.locator(".detail")).to_have_text("session started, no prompt yet")  # the why is the banner's
    expect(lane.locator(".lane-state")).to_have_attribute("title", re.compile("^hooks stopped working: hookd's entries"))
    shot(page, "lane-hooks-changed")
    # the fix, run as printed: the banner goes
    r2 = hookd_cli(home, *fix.split()[3:])
    assert r2.returncode == 0, r2.stderr
    expect(banner).to_have_count(0)
    expect(lane.locator(".lane-state")).to_have_attribute("title", "session started, no prompt yet")
