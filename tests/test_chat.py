"""Answer from your phone (issue 24) with a real daemon and real hook clients, each case once for
Telegram and once for Slack against their loopback fakes (tests/chatrig.py): Allow releasing a
held permission prompt, a reply as the free-text "Other" and as a permission's denial with its
reason (answered next to it), a stale button refused, the edit after a CLI answer, a reply to the
agent's own message queued for its builder; the channel's tokens never in the daemon's log.
What only one channel does: tests/test_telegram.py, tests/test_slack.py; in process:
tests/test_chat_inproc.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hookd.daemonproc import DaemonProcess

from .chatrig import CHANNELS, Chat, chat_of
from .conftest import wait_until
from .test_answers import ASK_ID, Q, Rig, bash_perm, finish, held_question, pending_id

pytestmark = pytest.mark.daemon


@pytest.fixture(params=CHANNELS)
def rig(request: pytest.FixtureRequest, home: Path, worktree: Path) -> Iterator[tuple[Rig, Chat, DaemonProcess]]:
    """A daemon with the channel on its fake and a spawned builder b1 (hold 30 s)."""
    chat = chat_of(request.param)
    chat.write_config(home)
    d = DaemonProcess(home).start()
    try:
        yield Rig(home, worktree), chat, d
    finally:
        d.stop()
        d.kill()
        chat.close()
        log = d.log.read_text(errors="replace")
        assert [t for t in chat.tokens if t in log] == []  # never logged


def test_allow_releases_a_held_permission_prompt(rig: Any) -> None:
    r, chat, _ = rig
    held = r.start_hook(bash_perm("ls /tmp"))
    post = chat.post_of("ls /tmp")
    assert chat.text(post) == "\n".join([
        "b1 asks permission to run Bash: x", "  ls /tmp", "", f"{chat.reply_hint} to deny with a reason."])
    iid = pending_id(r.home)
    buttons = chat.current(r, iid, post)
    assert list(buttons) == ["Allow", "Deny"]
    chat.press(post, buttons["Allow"])
    rc, out = finish(held)
    assert rc == 0 and json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


def test_a_reply_is_the_free_text_other_and_denies_a_permission_with_its_reason(rig: Any) -> None:
    r, chat, _ = rig
    held = held_question(r)
    post = chat.post_of(Q)
    chat.current(r, ASK_ID, post)
    chat.reply(post, "Green, please")
    rc, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Green, please"}
    held = r.start_hook(bash_perm("rm -rf build"))
    post = chat.post_of("rm -rf build")
    iid = pending_id(r.home)
    chat.current(r, iid, post)
    chat.reply(post, "not now")
    rc, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "not now"}
    assert r.interaction(iid)["actor"] == f"{chat.name}:{chat.allowed}"
    wait_until(lambda: chat.told_in_place("Answered."), 60, what=lambda: f"'Answered.' next to the reply: {chat.replies()}")


def test_a_stale_button_is_refused_with_a_clear_reply(rig: Any) -> None:
    r, chat, _ = rig
    held = held_question(r)
    post = chat.post_of(Q)
    buttons = chat.current(r, ASK_ID, post)
    kind, p, rev, n = buttons["Red"].split(":")
    # a button made for another revision than the interaction's (a revision changes while it
    # is pending only in rare paths; its data is what the relay checks, so it is made here)
    chat.press(post, f"{kind}:{p}:{int(rev) + 1}:{n}")
    stale = (f"Not answered: this button is stale ({ASK_ID} changed since this message showed it); "
             "use the message's new buttons.")
    wait_until(lambda: stale in chat.replies(), 60, what=lambda: f"the refusal: {chat.replies()}")
    assert [t for t in chat.in_chat() if t.startswith("Not answered")] == []  # (told the user alone)
    assert r.interaction(ASK_ID)["state"] == "pending"
    chat.press(post, buttons["Blue"])
    rc, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Blue"}
    chat.press(post, buttons["Red"])  # after it ended
    wait_until(lambda: f"Not answered: {ASK_ID} has already ended (answered)." in chat.replies(), 60, what="ended")
    assert r.interaction(ASK_ID)["answers"] == {Q: "Blue"}


def test_a_cli_answer_edits_the_post_to_show_it(rig: Any) -> None:
    r, chat, _ = rig
    held = held_question(r)
    post = chat.post_of(Q)
    chat.current(r, ASK_ID, post)
    a = r.answer(ASK_ID, "--option", "Blue", "--actor", "ana")
    assert a.returncode == 0, a.stderr
    finish(held)
    wait_until(lambda: not chat.buttons(post), 60, what="the buttons gone")
    assert chat.text(post) == "\n".join([
        "b1 asks:", Q, "  • Red: The red option", "  • Blue: The blue option", "", "— answered: Blue (by ana, cli)"])
    assert chat.last_edit() == (chat.chat_id, post)


def test_a_reply_to_a_lane_message_queues_it_for_the_builder(rig: Any) -> None:
    """The agent's own message (rule agent_notified) is posted plainly; a reply to it (Slack:
    in its thread) is an inbox message for its builder."""
    from .test_notices_inproc import TEXT, hook

    r, chat, _ = rig
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "003-PreToolUse.json", "004-PostToolUse.json"):
        r.hook(hook(name))
    post = chat.post_of(TEXT)
    assert chat.text(post).startswith(f"hookd: b1's agent: {TEXT}\n") and chat.buttons(post) == []
    chat.reply(post, "merge it, the flaky ones are known")
    wait_until(lambda: [m["text"] for m in r.inbox()] == ["merge it, the flaky ones are known"], 60,
               what=lambda: f"the reply in b1's inbox: {r.inbox()}")
    assert r.inbox()[0]["author"] == f"{chat.name}:{chat.allowed}"
