"""Answer from your phone, in process (tests/inproc.py: the daemon's lifespan, so the notifier
and its chat relay, on the test's loop thread), each case once for Telegram and once for Slack
against their loopback fakes (tests/chatrig.py): a plan approval posted with its choices,
approved with a press and sent back with a reply (the held hook's reply each time); what takes
steps (a question with two parts, one of them multi-select; an elicitation's fields as a form);
reminders in a post's thread. What only one channel does: tests/test_telegram_inproc.py,
tests/test_slack_inproc.py; daemon tests: tests/test_chat.py, tests/test_telegram.py,
tests/test_slack.py."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .chatrig import CHANNELS, Chat, chat_of
from .conftest import wait_until
from .inproc import InProc
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, Q, bash_perm
from .test_answers_inproc import Rig, finish
from .test_elicitations_inproc import ELICIT, ElicitRig
from .test_plans_inproc import PLAN_INPUT, pending_plan, plan_perm

pytestmark = pytest.mark.inproc


def _rig(home: Path, worktree: Path, name: str, notify: str = "") -> Iterator[tuple[Rig, Chat]]:
    chat = chat_of(name)
    chat.write_config(home, notify=notify)
    app = InProc(home).start()
    try:
        yield Rig(app, worktree), chat
    finally:
        app.stop()
        chat.close()


@pytest.fixture(params=CHANNELS)
def rig(request: pytest.FixtureRequest, home: Path, worktree: Path) -> Iterator[tuple[Rig, Chat]]:
    """The app with the channel on its fake, and a spawned builder b1."""
    yield from _rig(home, worktree, request.param)


@pytest.fixture(params=CHANNELS)
def fresh(request: pytest.FixtureRequest, home: Path, worktree: Path) -> Iterator[tuple[Rig, Chat]]:
    """As ``rig``, with reminders at 0.5 s and 4 s after a post (``steps_s``)."""
    yield from _rig(home, worktree, request.param, notify="steps_s = [0, 0.5, 4]")


def held_plan(r: Any, chat: Chat) -> tuple[Any, dict[str, Any], Any]:
    """``r``'s builder asks to approve its plan, its PermissionRequest hook held: (the held hook,
    the pending plan, the channel's post of it)."""
    held = r.start_hook(plan_perm())
    p = pending_plan(r)
    r.held(p["id"])
    return held, p, chat.post_of("asks you to approve its plan")


def test_a_plan_is_approved_with_a_press(rig: Any) -> None:
    r, chat = rig
    held, p, post = held_plan(r, chat)
    assert chat.text(post) == "\n".join([
        "b1 asks you to approve its plan:", "# Plan", "", "1. build the **thing**", "2. ship it", "",
        f"{chat.reply_hint} to send it back with what to change."])
    buttons = chat.current(r, p["id"], post)
    assert list(buttons) == ["Approve (auto)", "Approve (manual)"]
    chat.press(post, buttons["Approve (auto)"])
    status, out = finish(held)
    assert status == 200 and json.loads(out)["hookSpecificOutput"]["decision"] == {
        "behavior": "allow", "updatedInput": PLAN_INPUT,
        "updatedPermissions": [{"type": "setMode", "mode": "auto", "destination": "session"}]}
    by = f"{chat.name}:{chat.allowed}"
    wait_until(lambda: chat.text(post).endswith(f"— answered: approved (auto) (by {by}, {chat.name})"),
               60, what=lambda: f"the post edited: {chat.text(post)!r}")


def test_a_reply_sends_a_plan_back_with_the_feedback(rig: Any) -> None:
    r, chat = rig
    held, p, post = held_plan(r, chat)
    chat.current(r, p["id"], post)
    chat.reply(post, "add a rollback step")
    status, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "add a rollback step"}
    assert r.interaction(p["id"])["surface"] == chat.name


# --- every kind from the phone: several parts, multi-select, an elicitation's fields ----------

TOPPINGS = "Which toppings?"


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


def test_a_question_with_two_parts_and_a_multi_select_is_answered_step_by_step(rig: Any) -> None:
    r, chat = rig
    held = two_part_question(r)
    post = chat.post_of(TOPPINGS)
    first = chat.current(r, ASK_ID, post)
    assert chat.text(post) == "\n".join([
        "b1 asks:", f"1. {Q}", "  • Red: The red option", "  • Blue: The blue option",
        f"2. {TOPPINGS} (choose any, then Done)", "  • Cheese", "  • Olives", "  • Ham",
        "", f"Question 1 of 2: Other: {chat.reply_hint} to answer it with text."])
    assert list(first) == ["Red", "Blue"]
    chat.press(post, first["Red"])
    wait_until(lambda: chat.labels(post) == ["☐ Cheese", "☐ Olives", "☐ Ham", "Done"], 60,
               what=lambda: f"the second part's buttons: {chat.buttons(post)}")
    assert chat.text(post).split("\n")[4:6] == ["  → Red", f"2. {TOPPINGS} (choose any, then Done)"]
    second = dict(chat.buttons(post))
    chat.press(post, first["Red"])  # the first part's button, pressed again: refused
    chat.said("Not taken: that part is answered already: use the message's buttons for the next one.")
    kind, p, rev, n = second["☐ Cheese"].split(":")  # a step is bound to the revision too
    chat.press(post, f"{kind}:{p}:{int(rev) + 1}:{n}")
    chat.said(f"Not answered: this button is stale ({ASK_ID} changed since this message showed it); "
              "use the message's new buttons.")
    chat.press(post, second["Done"])  # nothing chosen yet: refused
    chat.said("Not taken: choose at least one first, or reply with text.")
    for label in ("☐ Cheese", "☐ Ham", "☐ Cheese"):  # Cheese on, Ham on, Cheese off: the post redrawn each time
        edits = chat.edits()
        chat.press(post, second[label])
        wait_until(lambda: chat.edits() > edits, 60, what="the post's buttons redrawn")
    wait_until(lambda: chat.labels(post) == ["☐ Cheese", "☐ Olives", "☑ Ham", "Done"], 60,
               what=lambda: f"the toggles shown: {chat.buttons(post)}")
    assert r.interaction(ASK_ID)["state"] == "pending" and not held.done()
    chat.press(post, second["Done"])
    status, out = finish(held)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert status == 200 and decision["updatedInput"]["answers"] == {Q: "Red", TOPPINGS: "Ham"}
    i = r.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["actor"]) == ("answered", chat.name, f"{chat.name}:{chat.allowed}")
    wait_until(lambda: not chat.buttons(post), 60, what="the post ended")
    assert chat.text(post).endswith(f"\n\n— answered: Red; Ham (by {chat.name}:{chat.allowed}, {chat.name})")


def test_a_part_answered_with_text_by_reply(rig: Any) -> None:
    r, chat = rig
    held = two_part_question(r)
    post = chat.post_of(TOPPINGS)
    chat.current(r, ASK_ID, post)
    chat.reply(post, "Green")
    wait_until(lambda: chat.labels(post)[-1:] == ["Done"], 60, what="the second part")
    chat.reply(post, "no toppings & no <b>sauce</b>")  # (Slack sends & < > escaped)
    status, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {
        Q: "Green", TOPPINGS: "no toppings & no <b>sauce</b>"}
    assert chat.replies().count("Noted.") == 1


SCHEMA = {"type": "object", "required": ["name", "party"], "properties": {
    "name": {"type": "string", "title": "Name", "description": "Name on the booking"},
    "party": {"type": "integer", "minimum": 1, "maximum": 12},
    "seating": {"type": "string", "enum": ["inside", "terrace"]},
    "quiet": {"type": "boolean", "description": "A quiet table"}}}


def held_form(r: Any, chat: Chat) -> tuple[Any, str, Any]:
    """``r``'s builder's tool server asks for the form SCHEMA, its Elicitation hook held: (the
    held hook, the elicitation's id, the channel's post of it)."""
    e = ElicitRig(r.app, r.worktree)
    held = e.start_hook({**ELICIT, "requested_schema": SCHEMA})
    iid = e.pending()["id"]
    e.held(iid)
    return held, iid, chat.post_of("Who is the table for?")


def test_an_elicitation_with_fields_is_a_form_one_field_at_a_time(rig: Any) -> None:
    r, chat = rig
    held, iid, post = held_form(r, chat)
    chat.current(r, iid, post)
    head = ["b1's tool server booker asks:", "Who is the table for?", "fields: name, party, seating, quiet"]
    assert chat.text(post) == "\n".join([*head, "", "Field 1 of 4: name (string, required): Name on the booking",
                                         f"{chat.reply_hint} with its value."])
    assert chat.labels(post) == ["Decline", "Cancel"]
    chat.reply(post, "Ada <ada@example.com>")  # (Slack sends it as a mailto link: its label taken)
    wait_until(lambda: "Field 2 of 4" in chat.text(post), 60, what="the second field")
    chat.reply(post, "20")  # the field's schema says at most 12: refused, asked again
    chat.said("Not taken: the content does not fit the requested schema: party: 20 is greater than the maximum of 12.")
    chat.reply(post, "3")
    wait_until(lambda: "Field 3 of 4" in chat.text(post), 60, what="the third field")
    assert chat.text(post) == "\n".join([
        *head, "  name = Ada <ada@example.com>", "  party = 3", "", "Field 3 of 4: seating (string, optional)",
        "one of: inside, terrace", f"{chat.reply_hint} with its value, or press a button."])
    assert chat.labels(post) == ["inside", "terrace", "Skip", "Decline", "Cancel"]
    chat.press(post, dict(chat.buttons(post))["Skip"])
    wait_until(lambda: chat.labels(post) == ["true", "false", "Skip", "Decline", "Cancel"], 60, what="the fourth field")
    assert "  seating: skipped" in chat.text(post)
    chat.press(post, dict(chat.buttons(post))["true"])
    assert finish(held) == (200, b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept",'
                                 b'"content":{"name":"Ada <ada@example.com>","party":3,"quiet":true}}}')
    i = r.interaction(iid)
    assert (i["decision"], i["answers"], i["surface"], i["actor"]) == (
        "accept", {"name": "Ada <ada@example.com>", "party": 3, "quiet": True}, chat.name, f"{chat.name}:{chat.allowed}")


@pytest.mark.parametrize("button,action", [("Decline", "decline"), ("Cancel", "cancel")])
def test_an_elicitation_form_declined_or_cancelled_with_its_button(rig: Any, button: str, action: str) -> None:
    r, chat = rig
    held, iid, post = held_form(r, chat)
    chat.reply(post, "/srv/ada")  # a value, not a command
    wait_until(lambda: "Field 2 of 4" in chat.text(post), 60, what="the second field")
    assert "  name = /srv/ada" in chat.text(post)
    chat.press(post, dict(chat.buttons(post))[button])
    assert finish(held) == (200, b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"'
                                 + action.encode() + b'"}}')


def test_a_pending_post_is_reminded_in_its_thread_and_no_more_once_it_ended(fresh: Any) -> None:
    r, chat = fresh  # reminders 0.5 s and 4 s after a post
    held, p, post = held_plan(r, chat)
    wait_until(lambda: chat.reminders(post), 60, what="the first reminder")
    chat.press(post, chat.current(r, p["id"], post)["Approve (manual)"])
    finish(held)
    # a later prompt, reminded at both steps: by its second the first's (due earlier) would be sent
    held = r.start_hook(bash_perm("make release"))
    post2 = chat.post_of("make release")
    wait_until(lambda: len(chat.reminders(post2)) == 2, 60, what=lambda: f"two reminders: {chat.reminders(post2)}")
    one, two = chat.reminders(post2)
    assert one.startswith("Reminder 1 of 2: b1 has been waiting ") and one.endswith(" s for an answer to this.")
    assert two.startswith("Reminder 2 of 2: b1 has been waiting ")
    # about their posts, never posts of their own: the chat holds the two prompts' posts only
    assert [t.split("\n")[0] for t in chat.posts()] == ["b1 asks you to approve its plan:", "b1 asks permission to run Bash: x"]
    assert len(chat.reminders(post)) == 1 and chat.reminders(post)[0].startswith("Reminder 1 of 2: ")
    [pending] = r.app.questions("pending")
    r.answer(pending["id"], options=["deny"])
    finish(held)
