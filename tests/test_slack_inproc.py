"""Answer from your phone, in process (tests/inproc.py: the daemon's lifespan, so the notifier
and its Slack relay, on the test's loop thread) against the loopback fake of Slack's Web API
and Socket Mode: what only the Slack channel is tested for (a reply in a thread that is not
hookd's). The cases Slack and Telegram share (a plan approved or sent back, what takes steps,
reminders in a post's thread): tests/test_chat_inproc.py; daemon tests: tests/test_slack.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_until
from .fake_slack import FakeSlack
from .inproc import InProc
from .test_answers_inproc import Rig
from .test_slack import ALLOWED, connected, write_config

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


def test_a_reply_in_another_users_thread_is_acknowledged_and_dropped(rig: Any) -> None:
    """A message in a thread whose parent is not the bot's is not for hookd: acknowledged
    (Slack would send it again otherwise), nothing queued, nothing said."""
    r, fake = rig
    connected(fake)
    env = fake.reply(ALLOWED, "1600000000.000001", "chatting", parent_user="USOMEONE")
    wait_until(lambda: fake.acked(env) == 1, 60, what="the other thread's message acknowledged")
    assert [x for x in fake.replies() if "not one of hookd's" in x] == []
    assert fake.replies() == [] and r.app.get("/v1/messages") == []
