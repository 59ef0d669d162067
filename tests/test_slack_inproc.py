"""Answer from your phone, in process (tests/inproc.py: the daemon's lifespan, so the notifier
and its Slack relay, on the test's loop thread) against the loopback fake of Slack's Web API
and Socket Mode: a plan approval posted with its choices, approved with a press and sent back
with a reply in its thread (the held hook's reply each time); what takes steps (a question
with two parts, one of them multi-select; an elicitation's fields as a form), reminders in a
post's thread, and Block Kit's limits (tests/test_telegram_inproc.py: the same for Telegram).
Daemon tests: tests/test_slack.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_until
from .fake_slack import FakeSlack
from .inproc import InProc
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, Q, bash_perm
from .test_answers_inproc import Rig, finish
from .test_elicitations_inproc import ELICIT, ElicitRig
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
        "Reply in this message's thread to send it back with what to change."])
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


# --- every kind from Slack: several parts, multi-select, an elicitation's fields --------------

TOPPINGS = "Which toppings?"


@pytest.fixture
def fresh(home: Path, worktree: Path):
    """As ``rig``, with reminders at 0.5 s and 4 s after a post (``steps_s``)."""
    fake = FakeSlack()
    write_config(home, fake, notify="steps_s = [0, 0.5, 4]")
    app = InProc(home).start()
    try:
        yield Rig(app, worktree), fake
    finally:
        app.stop()
        fake.close()


def two_part_question(r: Rig) -> Any:
    """The held AskUserQuestion of tests/test_answers.py with a multi-select second part."""
    pre, perm = copy.deepcopy(AUQ_PRE), copy.deepcopy(AUQ_PERM)
    for p in (pre, perm):
        p["tool_input"]["questions"].append({"question": TOPPINGS, "header": "Toppings", "multiSelect": True,
                                             "options": [{"label": "Cheese"}, {"label": "Olives"}, {"label": "Ham"}]})
    assert r.hook(pre) == ""
    held = r.start_hook(perm)
    r.held(ASK_ID)
    return held


def labels(fake: FakeSlack, ts: str) -> list[str]:
    return [label for label, _ in fake.buttons(ts)]


def said(fake: FakeSlack, text: str) -> None:
    """Wait until hookd told the user ``text`` (an ephemeral message: only they see it)."""
    wait_until(lambda: text in fake.replies(), 60, what=lambda: f"{text!r} said: {fake.replies()}")


def test_a_question_with_two_parts_and_a_multi_select_is_answered_step_by_step(rig: Any) -> None:
    r, fake = rig
    held = two_part_question(r)
    ts = post_of(fake, TOPPINGS)
    first = current(r, fake, ASK_ID, ts)
    assert fake.text(ts) == "\n".join([
        "b1 asks:", f"1. {Q}", "  • Red: The red option", "  • Blue: The blue option",
        f"2. {TOPPINGS} (choose any, then Done)", "  • Cheese", "  • Olives", "  • Ham",
        "", "Question 1 of 2: Other: Reply in this message's thread to answer it with text."])
    assert list(first) == ["Red", "Blue"]
    connected(fake)
    fake.press(ALLOWED, ts, first["Red"])
    wait_until(lambda: labels(fake, ts) == ["☐ Cheese", "☐ Olives", "☐ Ham", "Done"], 60,
               what=lambda: f"the second part's buttons: {fake.buttons(ts)}")
    assert fake.text(ts).split("\n")[4:6] == ["  → Red", f"2. {TOPPINGS} (choose any, then Done)"]
    second = dict(fake.buttons(ts))
    fake.press(ALLOWED, ts, first["Red"])  # the first part's button, pressed again: refused
    said(fake, "Not taken: that part is answered already: use the message's buttons for the next one.")
    kind, post, rev, n = second["☐ Cheese"].split(":")  # a step is bound to the revision too
    fake.press(ALLOWED, ts, f"{kind}:{post}:{int(rev) + 1}:{n}")
    said(fake, f"Not answered: this button is stale ({ASK_ID} changed since this message showed it); "
               "use the message's new buttons.")
    fake.press(ALLOWED, ts, second["Done"])  # nothing chosen yet: refused
    said(fake, "Not taken: choose at least one first, or reply with text.")
    for label in ("☐ Cheese", "☐ Ham", "☐ Cheese"):  # Cheese on, Ham on, Cheese off: the blocks redrawn each time
        edits = len(fake.of("chat.update"))
        fake.press(ALLOWED, ts, second[label])
        wait_until(lambda e=edits: len(fake.of("chat.update")) > e, 60, what="the post's blocks updated")
    assert labels(fake, ts) == ["☐ Cheese", "☐ Olives", "☑ Ham", "Done"]
    assert r.interaction(ASK_ID)["state"] == "pending" and not held.done()
    fake.press(ALLOWED, ts, second["Done"])
    status, out = finish(held)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert status == 200 and decision["updatedInput"]["answers"] == {Q: "Red", TOPPINGS: "Ham"}
    i = r.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["actor"]) == ("answered", "slack", f"slack:{ALLOWED}")
    wait_until(lambda: not fake.buttons(ts), 60, what="the post ended")
    assert fake.text(ts).endswith(f"\n\n— answered: Red; Ham (by slack:{ALLOWED}, slack)")


def test_a_part_answered_with_text_by_a_thread_reply(rig: Any) -> None:
    r, fake = rig
    held = two_part_question(r)
    ts = post_of(fake, TOPPINGS)
    current(r, fake, ASK_ID, ts)
    connected(fake)
    fake.reply(ALLOWED, ts, "Green")
    wait_until(lambda: labels(fake, ts)[-1:] == ["Done"], 60, what="the second part")
    fake.reply(ALLOWED, ts, "no toppings & no <b>sauce</b>")  # (Slack sends & < > escaped)
    status, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {
        Q: "Green", TOPPINGS: "no toppings & no <b>sauce</b>"}
    assert fake.replies().count("Noted.") == 1


SCHEMA = {"type": "object", "required": ["name", "party"], "properties": {
    "name": {"type": "string", "title": "Name", "description": "Name on the booking"},
    "party": {"type": "integer", "minimum": 1, "maximum": 12},
    "seating": {"type": "string", "enum": ["inside", "terrace"]},
    "quiet": {"type": "boolean", "description": "A quiet table"}}}


def test_an_elicitation_with_fields_is_a_form_one_field_at_a_time(rig: Any) -> None:
    r, fake = rig
    e = ElicitRig(r.app, r.worktree)
    held = e.start_hook({**ELICIT, "requested_schema": SCHEMA})
    iid = e.pending()["id"]
    e.held(iid)
    ts = post_of(fake, "Who is the table for?")
    current(r, fake, iid, ts)
    head = ["b1's tool server booker asks:", "Who is the table for?", "fields: name, party, seating, quiet"]
    assert fake.text(ts) == "\n".join([*head, "", "Field 1 of 4: name (string, required): Name on the booking",
                                       "Reply in this message's thread with its value."])
    assert labels(fake, ts) == ["Decline", "Cancel"]
    connected(fake)
    fake.reply(ALLOWED, ts, "Ada <ada@example.com>")  # (Slack sends it as a mailto link: its label taken)
    wait_until(lambda: "Field 2 of 4" in fake.text(ts), 60, what="the second field")
    fake.reply(ALLOWED, ts, "20")  # the field's schema says at most 12: refused, asked again
    said(fake, "Not taken: the content does not fit the requested schema: party: 20 is greater than the maximum of 12.")
    fake.reply(ALLOWED, ts, "3")
    wait_until(lambda: "Field 3 of 4" in fake.text(ts), 60, what="the third field")
    assert fake.text(ts) == "\n".join([
        *head, "  name = Ada <ada@example.com>", "  party = 3", "", "Field 3 of 4: seating (string, optional)",
        "one of: inside, terrace", "Reply in this message's thread with its value, or press a button."])
    assert labels(fake, ts) == ["inside", "terrace", "Skip", "Decline", "Cancel"]
    fake.press(ALLOWED, ts, dict(fake.buttons(ts))["Skip"])
    wait_until(lambda: labels(fake, ts) == ["true", "false", "Skip", "Decline", "Cancel"], 60, what="the fourth field")
    assert "  seating: skipped" in fake.text(ts)
    fake.press(ALLOWED, ts, dict(fake.buttons(ts))["true"])
    assert finish(held) == (200, b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept",'
                                 b'"content":{"name":"Ada <ada@example.com>","party":3,"quiet":true}}}')
    i = r.interaction(iid)
    assert (i["decision"], i["surface"], i["actor"]) == ("accept", "slack", f"slack:{ALLOWED}")


@pytest.mark.parametrize("button,action", [("Decline", "decline"), ("Cancel", "cancel")])
def test_an_elicitation_form_declined_or_cancelled_with_its_button(rig: Any, button: str, action: str) -> None:
    r, fake = rig
    e = ElicitRig(r.app, r.worktree)
    held = e.start_hook({**ELICIT, "requested_schema": SCHEMA})
    iid = e.pending()["id"]
    e.held(iid)
    ts = post_of(fake, "Who is the table for?")
    connected(fake)
    fake.reply(ALLOWED, ts, "/srv/ada")  # a value, not a command
    wait_until(lambda: "Field 2 of 4" in fake.text(ts), 60, what="the second field")
    assert "  name = /srv/ada" in fake.text(ts)
    fake.press(ALLOWED, ts, dict(fake.buttons(ts))[button])
    assert finish(held) == (200, b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"'
                                 + action.encode() + b'"}}')


def test_a_pending_post_is_reminded_in_its_thread_and_no_more_once_it_ended(fresh: Any) -> None:
    r, fake = fresh  # reminders 0.5 s and 4 s after a post

    def reminders(ts: str) -> list[str]:
        return [c["text"] for c in fake.of("chat.postMessage") if c.get("thread_ts") == ts]

    held = r.start_hook(plan_perm())
    p = pending_plan(r)
    r.held(p["id"])
    ts = post_of(fake, "asks you to approve its plan")
    wait_until(lambda: reminders(ts), 60, what="the first reminder")
    connected(fake)
    fake.press(ALLOWED, ts, current(r, fake, p["id"], ts)["Approve (manual)"])
    finish(held)
    # a later prompt, reminded at both steps: by its second the first's (due earlier) would be sent
    held = r.start_hook(bash_perm("make release"))
    ts2 = post_of(fake, "make release")
    wait_until(lambda: len(reminders(ts2)) == 2, 60, what=lambda: f"two reminders: {reminders(ts2)}")
    one, two = reminders(ts2)
    assert one.startswith("Reminder 1 of 2: b1 has been waiting ") and one.endswith(" s for an answer to this.")
    assert two.startswith("Reminder 2 of 2: b1 has been waiting ")
    # in the thread, never a post of their own: the channel holds the two prompts' posts only
    assert [c["text"].split("\n")[0] for c in fake.of("chat.postMessage") if "thread_ts" not in c] == [
        "b1 asks you to approve its plan:", "b1 asks permission to run Bash: x"]
    assert len(reminders(ts)) == 1 and reminders(ts)[0].startswith("Reminder 1 of 2: ")
    [pending] = r.app.questions("pending")
    r.answer(pending["id"], options=["deny"])
    finish(held)
