"""Answer from your phone, in process (tests/inproc.py: the daemon's lifespan, so the notifier
and its Telegram relay, on the test's loop thread) against the loopback fake of the Bot API:
what only the Telegram channel is tested for (a text reply on a multi-select part, a dismissed
post, /lanes and /send). The cases Telegram and Slack share (a plan approved or sent back, what
takes steps, reminders): tests/test_chat_inproc.py; daemon tests: tests/test_telegram.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_until
from .fake_telegram import FakeTelegram
from .inproc import InProc
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, Q, bash_perm
from .test_answers_inproc import Rig, finish
from .test_chat_inproc import TOPPINGS, two_part_question
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


# --- what takes steps ------------------------------------------------------------------------

def labels(fake: FakeTelegram, mid: int) -> list[str]:
    return [label for label, _ in fake.buttons(mid)]


def said(fake: FakeTelegram, text: str) -> None:
    wait_until(lambda: text in fake.replies(), 60, what=lambda: f"{text!r} said: {fake.replies()}")


def test_a_text_reply_on_a_multi_select_part_keeps_the_toggles_chosen(rig: Any) -> None:
    r, fake = rig
    held = two_part_question(r)
    mid = post_of(fake, TOPPINGS)
    first = current(r, fake, ASK_ID, mid)
    fake.press(ALLOWED, mid, first["Red"])
    wait_until(lambda: labels(fake, mid)[-1:] == ["Done"], 60, what="the second part")
    fake.press(ALLOWED, mid, dict(fake.buttons(mid))["☐ Olives"])
    wait_until(lambda: "☑ Olives" in labels(fake, mid), 60, what=lambda: f"Olives on: {fake.buttons(mid)}")
    fake.reply(ALLOWED, mid, "and pineapple")
    status, out = finish(held)
    answers = json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"]
    assert answers[Q] == "Red" and "Olives" in answers[TOPPINGS] and "and pineapple" in answers[TOPPINGS]


def test_a_dismissed_post_says_why(rig: Any) -> None:
    r, fake = rig
    r.hook(AUQ_PRE)
    r.start_hook(AUQ_PERM)
    r.held(ASK_ID)
    mid = post_of(fake, Q)
    current(r, fake, ASK_ID, mid)
    d = r.api("POST", f"/v1/interactions/{ASK_ID}/dismiss", {"reason": "asked twice", "actor": "ana", "surface": "cli"})
    assert d.status_code == 200, d.text
    wait_until(lambda: fake.messages[mid]["text"].endswith("\n\n— dismissed: asked twice (by ana, cli)"), 60,
               what=lambda: f"the post edited: {fake.messages[mid]['text']!r}")


# --- /lanes and /send as the CLI has them ----------------------------------------------------

def test_lanes_shows_the_lanes_as_they_are_now_not_as_last_recorded(rig: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chat /lanes renders the lanes computed now (as ``hookd lanes``): a stalled permission
    2 minutes later says 2m, where the recorded lane said 0s."""
    r, fake = rig
    r.start_hook(bash_perm("make deploy"))
    (p,) = wait_until(lambda: r.app.get("/v1/questions?state=pending"), 60, what="the pending prompt")
    r.held(p["id"])
    wait_until(lambda: [lane["state"] for lane in r.app.get("/v1/lanes")] == ["stalled"], 60, what="the lane stalled")
    # recorded too: the two readings below are stepped one after the other, and a pass of the
    # lanes watcher between them that first records the lane records it as stalled since then
    # (a full run saw "stalled for 0s"; a pass run there by hand gives the same)
    wait_until(lambda: [e for e in r.events() if e["kind"] == "lane_changed" and e["data"]["to"] == "stalled"], 60,
               what="the stalled lane recorded")
    clock = r.app.store.clock
    wall, boottime = clock._wall, clock._boottime
    monkeypatch.setattr(clock, "_wall", lambda: wall() + 125)  # two minutes pass
    monkeypatch.setattr(clock, "_boottime", lambda: boottime() + 125)
    fake.say(ALLOWED, "/lanes")
    line = wait_until(lambda: next((x for x in fake.replies() if x.startswith("b1: ")), None), 60,
                      what=lambda: f"/lanes: {fake.replies()}")
    assert line == f"b1: stalled for 2m, 1 pending, 0 queued (permission {p['id']} waiting on a human for 2m)"


def test_send_to_a_builder_not_known_is_refused_as_the_cli_refuses_it(rig: Any) -> None:
    r, fake = rig
    fake.say(ALLOWED, "/send nosuch hi")
    said(fake, "builder 'nosuch' is not known: spawn it first (or check the name)")
    fake.say(ALLOWED, "/lanes")
    lanes = wait_until(lambda: next((x for x in fake.replies() if x.startswith("b1: ")), None), 60,
                       what=lambda: f"/lanes: {fake.replies()}")
    assert "nosuch" not in lanes
    assert r.app.get("/v1/messages") == []
