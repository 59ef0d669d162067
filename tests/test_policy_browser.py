"""Question policy on the operator page (issue 21, moment 8), in a real browser against a real
daemon (the rig of tests/test_web_browser.py): a builder's default answer shown on the card with
its countdown, and a stale permission prompt dismissed with its reason (the held hook let go with
no decision). Screenshots: tests/artifacts/web/ (``pending-default-answer``, ``history-dismissed``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from hookd.daemonproc import DaemonProcess

from .conftest import hookd_run, questions, wait_until
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, Rig, bash_perm, finish
from .test_web_browser import page, shot  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("browser")]  # (one worker: one Chromium at a time)


def test_the_countdown_of_a_default_answer_and_a_dismissal_on_the_page(
        page: Page, daemon: DaemonProcess, home: Path, worktree: Path) -> None:  # noqa: F811
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--hold", "900",
                  "--default-answer-after", "600", "--default-answer", "Blue")
    assert r.returncode == 0, r.stderr
    b = Rig.__new__(Rig)  # (spawned above, with the default answer)
    b.home, b.worktree, b.name = home, worktree, "b1"
    b.settings = worktree / ".claude" / "settings.local.json"
    assert b.hook(AUQ_PRE) == ""
    ask = b.start_hook(AUQ_PERM)
    b.held(ASK_ID)
    perm = b.start_hook(bash_perm("make deploy"))
    pid = wait_until(lambda: [q["id"] for q in questions(home, "pending") if q["kind"] == "permission"], 60,
                     what="a pending permission prompt")[0]
    b.held(pid)
    card = page.locator(f'#pending-list article.question[data-id="{ASK_ID}"]')
    expect(card.locator(".default-answer")).to_have_text(re.compile(r"^answers Blue in (10|9) min unless you answer$"))
    prompt = page.locator(f'#pending-list article.permission[data-id="{pid}"]')
    expect(prompt.locator(".default-answer")).to_have_text(re.compile(r"^denies in (10|9) min unless you answer$"))
    # due, before the daemon's next pass gives it: "now", not "in 0 s"
    assert page.evaluate("countdown('denies', String(Date.now() / 1000))") == "denies now unless you answer"
    prompt.locator(".dismiss-row summary").click()
    prompt.locator("button.dismiss").click()  # no reason yet: refused on the page, nothing sent
    expect(prompt.locator(".dismiss-note")).to_have_text("Say why it is dismissed: it is recorded.")
    prompt.locator("input.dismiss-reason").fill("stale: asked before the restart")
    expect(prompt.locator(".dismiss-note")).to_have_text("")
    shot(page, "pending-default-answer")
    prompt.locator("button.dismiss").click()
    assert finish(perm) == (0, b"")  # no decision: the desk's dialog decides
    done = page.locator(f'#history-list article[data-id="{pid}"]')
    expect(done.locator(".badge")).to_have_text("dismissed")
    expect(done.locator(".by")).to_contain_text("on the page by ")
    expect(done.locator("dd.answer")).to_have_text("stale: asked before the restart")
    expect(page.locator(f'#pending-list article[data-id="{pid}"]')).to_have_count(0)
    page.locator('#tabs button[data-view="history"]').click()
    expect(done).to_be_visible()
    shot(page, "history-dismissed")
    [q] = questions(home, "pending")
    assert q["id"] == ASK_ID and q["default_answer"]["answer"] == "answers Blue"
    ask.kill()
    ask.wait()
