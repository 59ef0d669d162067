"""Answer from your phone, in process (tests/inproc.py: the daemon's lifespan, so the notifier
and its Slack relay, on the test's loop thread) against the loopback fake of Slack's Web API
and Socket Mode: a plan approval posted with its choices, approved with a press and sent back
with a reply in its thread (the held hook's reply each time). Daemon tests: tests/test_slack.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_until
from .fake_slack import FakeSlack
from .inproc import InProc
from .test_answers_inproc import Rig, finish
from .test_plans_inproc import PLAN_INPUT, pending_plan, plan_perm
from .test_slack import ALLOWED, connected, current, post_of, write_config

pytestmark = pytest.mark.inproc


@pytest.fixture
def rig(home: Path, worktree: Path):
    fake = FakeSlack()
    write_config(home, fake)
    app = InProc(home).start()
    try:
        yield Rig(app, worktree), fake
    finally:
        app.stop()
        fake.close()


def test_a_plan_is_approved_with_a_press(rig: Any) -> None:
    r, fake = rig
    held = r.start_hook(plan_perm())
    p = pending_plan(r)
    r.held(p["id"])
    ts = post_of(fake, "asks you to approve its plan")
    assert fake.text(ts) == "\n".join([
        "b1 asks you to approve its plan:", "# Plan", "", "1. build the **thing**", "2. ship it", "",
        "Reply to this message to send it back with what to change."])
    buttons = current(r, fake, p["id"], ts)
    assert list(buttons) == ["Approve (auto)", "Approve (manual)"]
    connected(fake)
    fake.press(ALLOWED, ts, buttons["Approve (auto)"])
    status, out = finish(held)
    assert status == 200 and json.loads(out)["hookSpecificOutput"]["decision"] == {
        "behavior": "allow", "updatedInput": PLAN_INPUT,
        "updatedPermissions": [{"type": "setMode", "mode": "auto", "destination": "session"}]}
    wait_until(lambda: fake.text(ts).endswith(f"— answered: approved (auto) (by slack:{ALLOWED}, slack)"),
               60, what=lambda: f"the post edited: {fake.text(ts)!r}")


def test_a_thread_reply_sends_a_plan_back_with_the_feedback(rig: Any) -> None:
    r, fake = rig
    held = r.start_hook(plan_perm())
    p = pending_plan(r)
    r.held(p["id"])
    ts = post_of(fake, "asks you to approve its plan")
    current(r, fake, p["id"], ts)
    connected(fake)
    fake.reply(ALLOWED, ts, "add a rollback step")
    status, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "add a rollback step"}
    assert r.interaction(p["id"])["surface"] == "slack"
    # a reply in another user's thread is not for hookd: acknowledged and dropped
    env = fake.reply(ALLOWED, "1600000000.000001", "chatting", parent_user="USOMEONE")
    wait_until(lambda: fake.acked(env) == 1, 60, what="the other thread's message acknowledged")
    assert [x for x in fake.replies() if "not one of hookd's" in x] == []
