"""Answer from your phone, in process (tests/inproc.py: the daemon's lifespan, so the notifier
and its Telegram relay, on the test's loop thread) against the loopback fake of the Bot API:
a plan approval posted with its choices, approved with a press and sent back with a reply
(the held hook's reply each time). Daemon tests: tests/test_telegram.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_until
from .fake_telegram import FakeTelegram
from .inproc import InProc
from .test_answers_inproc import Rig, finish
from .test_plans_inproc import PLAN_INPUT, pending_plan, plan_perm
from .test_telegram import ALLOWED, current, post_of, write_config

pytestmark = pytest.mark.inproc


@pytest.fixture
def rig(home: Path, worktree: Path):
    fake = FakeTelegram()
    write_config(home, fake)
    app = InProc(home).start()
    try:
        yield Rig(app, worktree), fake
    finally:
        app.stop()
        fake.stop()


def test_a_plan_is_approved_with_a_press(rig: Any) -> None:
    r, fake = rig
    held = r.start_hook(plan_perm())
    p = pending_plan(r)
    r.held(p["id"])
    mid = post_of(fake, "asks you to approve its plan")
    assert fake.messages[mid]["text"] == "\n".join([
        "b1 asks you to approve its plan:", "# Plan", "", "1. build the **thing**", "2. ship it", "",
        "Reply to this message to send it back with what to change."])
    buttons = current(r, fake, p["id"], mid)
    assert list(buttons) == ["Approve (auto)", "Approve (manual)"]
    fake.press(ALLOWED, mid, buttons["Approve (auto)"])
    status, out = finish(held)
    assert status == 200 and json.loads(out)["hookSpecificOutput"]["decision"] == {
        "behavior": "allow", "updatedInput": PLAN_INPUT,
        "updatedPermissions": [{"type": "setMode", "mode": "auto", "destination": "session"}]}
    wait_until(lambda: fake.messages[mid]["text"].endswith(f"— answered: approved (auto) (by telegram:{ALLOWED}, telegram)"),
               60, what=lambda: f"the post edited: {fake.messages[mid]['text']!r}")


def test_a_reply_sends_a_plan_back_with_the_feedback(rig: Any) -> None:
    r, fake = rig
    held = r.start_hook(plan_perm())
    p = pending_plan(r)
    r.held(p["id"])
    mid = post_of(fake, "asks you to approve its plan")
    current(r, fake, p["id"], mid)
    fake.reply(ALLOWED, mid, "add a rollback step")
    status, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "add a rollback step"}
    assert r.interaction(p["id"])["surface"] == "telegram"
