"""Answer from your phone, in process (tests/inproc.py: the daemon's lifespan, so the notifier
and its Telegram relay, on the test's loop thread) against the loopback fake of the Bot API:
a plan approval posted with its choices, approved with a press and sent back with a reply
(the held hook's reply each time); what takes steps (a question with two parts, one of them
multi-select; an elicitation's fields as a form), and reminders in a post's thread. Daemon
tests: tests/test_telegram.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_until
from .fake_telegram import FakeTelegram
from .inproc import InProc
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, Q, bash_perm
from .test_answers_inproc import Rig, finish
from .test_elicitations_inproc import ELICIT, ElicitRig
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


# --- every kind from the phone: several parts, multi-select, an elicitation's fields ----------

TOPPINGS = "Which toppings?"


@pytest.fixture
def fresh(home: Path, worktree: Path):
    """As ``rig``, with reminders at 0.5 s and 4 s after a post (``steps_s``)."""
    fake = FakeTelegram()
    write_config(home, fake, notify="steps_s = [0, 0.5, 4]")
    app = InProc(home).start()
    try:
        yield Rig(app, worktree), fake
    finally:
        app.stop()
        fake.stop()


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


def labels(fake: FakeTelegram, mid: int) -> list[str]:
    return [label for label, _ in fake.buttons(mid)]


def said(fake: FakeTelegram, text: str) -> None:
    wait_until(lambda: text in fake.replies(), 60, what=lambda: f"{text!r} said: {fake.replies()}")


def test_a_question_with_two_parts_and_a_multi_select_is_answered_step_by_step(rig: Any) -> None:
    r, fake = rig
    held = two_part_question(r)
    mid = post_of(fake, TOPPINGS)
    first = current(r, fake, ASK_ID, mid)
    assert fake.messages[mid]["text"] == "\n".join([
        "b1 asks:", f"1. {Q}", "  • Red: The red option", "  • Blue: The blue option",
        f"2. {TOPPINGS} (choose any, then Done)", "  • Cheese", "  • Olives", "  • Ham",
        "", "Question 1 of 2: Other: Reply to this message to answer it with text."])
    assert list(first) == ["Red", "Blue"]
    fake.press(ALLOWED, mid, first["Red"])
    wait_until(lambda: labels(fake, mid) == ["☐ Cheese", "☐ Olives", "☐ Ham", "Done"], 60,
               what=lambda: f"the second part's buttons: {fake.buttons(mid)}")
    assert fake.messages[mid]["text"].split("\n")[4:6] == ["  → Red", f"2. {TOPPINGS} (choose any, then Done)"]
    second = dict(fake.buttons(mid))
    fake.press(ALLOWED, mid, first["Red"])  # the first part's button, pressed again: refused
    said(fake, "Not taken: that part is answered already: use the message's buttons for the next one.")
    kind, post, rev, n = second["☐ Cheese"].split(":")  # a step is bound to the revision too
    fake.press(ALLOWED, mid, f"{kind}:{post}:{int(rev) + 1}:{n}")
    said(fake, f"Not answered: this button is stale ({ASK_ID} changed since this message showed it); "
               "use the message's new buttons.")
    fake.press(ALLOWED, mid, second["Done"])  # nothing chosen yet: refused
    said(fake, "Not taken: choose at least one first, or reply with text.")
    for label in ("☐ Cheese", "☐ Ham", "☐ Cheese"):  # Cheese on, Ham on, Cheese off
        fake.press(ALLOWED, mid, second[label])
    wait_until(lambda: labels(fake, mid) == ["☐ Cheese", "☐ Olives", "☑ Ham", "Done"], 60,
               what=lambda: f"the toggles shown: {fake.buttons(mid)}")
    assert r.interaction(ASK_ID)["state"] == "pending" and not held.done()
    fake.press(ALLOWED, mid, second["Done"])
    status, out = finish(held)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert status == 200 and decision["updatedInput"]["answers"] == {Q: "Red", TOPPINGS: "Ham"}
    i = r.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["actor"]) == ("answered", "telegram", f"telegram:{ALLOWED}")
    wait_until(lambda: not fake.buttons(mid), 60, what="the post ended")
    assert fake.messages[mid]["text"].endswith(f"\n\n— answered: Red; Ham (by telegram:{ALLOWED}, telegram)")


def test_a_part_answered_with_text_by_reply(rig: Any) -> None:
    r, fake = rig
    held = two_part_question(r)
    mid = post_of(fake, TOPPINGS)
    current(r, fake, ASK_ID, mid)
    fake.reply(ALLOWED, mid, "Green")
    wait_until(lambda: labels(fake, mid)[-1:] == ["Done"], 60, what="the second part")
    fake.reply(ALLOWED, mid, "no toppings at all")
    status, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {
        Q: "Green", TOPPINGS: "no toppings at all"}
    assert fake.replies().count("Noted.") == 1


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
    mid = post_of(fake, "Who is the table for?")
    current(r, fake, iid, mid)
    head = ["b1's tool server booker asks:", "Who is the table for?", "fields: name, party, seating, quiet"]
    assert fake.messages[mid]["text"] == "\n".join([*head, "", "Field 1 of 4: name (string, required): Name on the booking",
                                                    "Reply to this message with its value."])
    assert labels(fake, mid) == ["Decline", "Cancel"]
    fake.reply(ALLOWED, mid, "Ada")
    wait_until(lambda: "Field 2 of 4" in fake.messages[mid]["text"], 60, what="the second field")
    fake.reply(ALLOWED, mid, "20")  # the field's schema says at most 12: refused, asked again
    said(fake, "Not taken: the content does not fit the requested schema: party: 20 is greater than the maximum of 12.")
    fake.reply(ALLOWED, mid, "3")
    wait_until(lambda: "Field 3 of 4" in fake.messages[mid]["text"], 60, what="the third field")
    assert fake.messages[mid]["text"] == "\n".join([
        *head, '  name = Ada', '  party = 3', "", "Field 3 of 4: seating (string, optional)", "one of: inside, terrace",
        "Reply to this message with its value, or press a button."])
    assert labels(fake, mid) == ["inside", "terrace", "Skip", "Decline", "Cancel"]
    fake.press(ALLOWED, mid, dict(fake.buttons(mid))["Skip"])
    wait_until(lambda: labels(fake, mid) == ["true", "false", "Skip", "Decline", "Cancel"], 60, what="the fourth field")
    assert "  seating: skipped" in fake.messages[mid]["text"]
    fake.press(ALLOWED, mid, dict(fake.buttons(mid))["true"])
    assert finish(held) == (200, b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept",'
                                 b'"content":{"name":"Ada","party":3,"quiet":true}}}')
    i = r.interaction(iid)
    assert (i["decision"], i["answers"], i["surface"]) == ("accept", {"name": "Ada", "party": 3, "quiet": True}, "telegram")


def test_an_elicitation_form_declined_with_its_button(rig: Any) -> None:
    r, fake = rig
    e = ElicitRig(r.app, r.worktree)
    held = e.start_hook({**ELICIT, "requested_schema": SCHEMA})
    iid = e.pending()["id"]
    e.held(iid)
    mid = post_of(fake, "Who is the table for?")
    fake.reply(ALLOWED, mid, "/srv/ada")  # a value, not a command
    wait_until(lambda: "Field 2 of 4" in fake.messages[mid]["text"], 60, what="the second field")
    assert "  name = /srv/ada" in fake.messages[mid]["text"]
    fake.press(ALLOWED, mid, dict(fake.buttons(mid))["Decline"])
    assert finish(held) == (200, b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"decline"}}')


def test_a_pending_post_is_reminded_in_its_thread_and_no_more_once_it_ended(fresh: Any) -> None:
    r, fake = fresh  # reminders 0.5 s and 4 s after a post

    def reminders(to: int) -> list[str]:
        return [c["text"] for c in fake.of("sendMessage") if c.get("reply_to_message_id") == to
                or (c.get("reply_parameters") or {}).get("message_id") == to]

    held = r.start_hook(plan_perm())
    p = pending_plan(r)
    r.held(p["id"])
    mid = post_of(fake, "asks you to approve its plan")
    wait_until(lambda: reminders(mid), 60, what="the first reminder")
    fake.press(ALLOWED, mid, current(r, fake, p["id"], mid)["Approve (manual)"])
    finish(held)
    # a later prompt, reminded at both steps: by its second the first's (due earlier) would be sent
    held = r.start_hook(bash_perm("make release"))
    mid2 = post_of(fake, "make release")
    wait_until(lambda: len(reminders(mid2)) == 2, 60, what=lambda: f"two reminders: {reminders(mid2)}")
    one, two = reminders(mid2)
    assert one.startswith("Reminder 1 of 2: b1 has been waiting ") and one.endswith(" s for an answer to this.")
    assert two.startswith("Reminder 2 of 2: b1 has been waiting ")
    assert [m["text"] for m in fake.sent_to_chat() if "make release" in m["text"]] == [fake.messages[mid2]["text"]]
    assert len(reminders(mid)) == 1 and reminders(mid)[0].startswith("Reminder 1 of 2: ")
    [pending] = r.app.questions("pending")
    r.answer(pending["id"], options=["deny"])
    finish(held)


# --- /lanes and /send as the CLI has them ----------------------------------------------------

def test_lanes_shows_the_lanes_as_they_are_now_not_as_last_recorded(rig: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chat /lanes renders the lanes computed now (as ``hookd lanes``): a stalled permission
    2 minutes later says 2m, where the recorded lane said 0s."""
    r, fake = rig
    r.start_hook(bash_perm("make deploy"))
    (p,) = r.app.get("/v1/questions?state=pending")
    r.held(p["id"])
    wait_until(lambda: [lane["state"] for lane in r.app.get("/v1/lanes")] == ["stalled"], 60, what="the lane stalled")
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
