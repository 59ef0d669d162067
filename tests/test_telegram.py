"""Answer from your phone (issue 24): the two-way Telegram channel against a loopback fake of
the Bot API (tests/fake_telegram.py), with a real daemon and real hook clients: a question
posted with its buttons, a press releasing the held PermissionRequest hook with that answer, an
unlisted user ignored, a duplicate update ignored, /send and /lanes, the fake going away and
coming back (resume, nothing lost or doubled), `hookd notify test`, and the token kept out of
logs. The cases Telegram and Slack share (Allow, a reply as "Other" or a denial's reason, a
stale button, the edit after a CLI answer, a reply to the agent's message): tests/test_chat.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from hookd.daemonproc import DaemonProcess
from hookd.models import ConfigError
from hookd.watchers.notify_config import load_config

from .conftest import events, hookd_cli, wait_until
from .fake_telegram import TOKEN, FakeTelegram
from .test_answers import ASK_ID, AUQ_PRE, Q, Rig, bash_perm, finish, held_question, pending_id

pytestmark = pytest.mark.daemon

ALLOWED = 7
STRANGER = 99


@pytest.fixture
def fake():
    f = FakeTelegram()
    yield f
    if f.up:
        f.stop()


def write_config(home: Path, fake: FakeTelegram, extra: str = "", notify: str = "") -> None:
    """The telegram channel on ``fake`` (``extra``: more of its keys; ``notify``: more [notify] keys)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"""
[notify]
question_after_s = 0
retry_initial_s = 0.05
retry_max_s = 0.3
{notify}
[[notify.channel]]
type = "telegram"
name = "phone"
token = "{TOKEN}"
chat_id = "{fake.chat_id}"
allow = [{ALLOWED}]
base_url = "{fake.base_url}"
{extra}""")


@pytest.fixture
def tg(home: Path, worktree: Path, fake: FakeTelegram):
    """A daemon with the telegram channel on ``fake`` and a spawned builder b1 (hold 30 s)."""
    write_config(home, fake)
    d = DaemonProcess(home).start()
    try:
        yield Rig(home, worktree), fake, d
    finally:
        d.stop()
        d.kill()
        assert TOKEN not in d.log.read_text(errors="replace")  # never logged


def post_of(fake: FakeTelegram, needle: str) -> int:
    """The message id of the bot's post whose text holds ``needle`` (waits for it)."""
    def found() -> int | None:
        return next((m["message_id"] for m in fake.sent_to_chat() if needle in m["text"]), None)
    return wait_until(found, 60, what=lambda: f"a post with {needle!r}: {fake.sent_to_chat()}")


def current(rig: Any, fake: FakeTelegram, iid: str, mid: int) -> dict[str, str]:
    """The post's buttons (label -> data) once they answer the interaction's revision now
    (``rig``: a daemon's or an in-process Rig: its ``interaction(id)``)."""
    def fresh() -> dict[str, str] | None:
        rev = rig.interaction(iid)["revision"]
        got = dict(fake.buttons(mid))
        return got if got and all(d.split(":")[2] == str(rev) for d in got.values()) else None
    return wait_until(fresh, 60, what=lambda: f"buttons at the current revision: {fake.buttons(mid)}")


def replies(fake: FakeTelegram) -> list[str]:
    return fake.replies()


def test_a_question_is_posted_with_its_buttons_and_a_press_releases_the_held_hook(tg: Any) -> None:
    rig, fake, _ = tg
    held = held_question(rig)
    mid = post_of(fake, Q)
    buttons = current(rig, fake, ASK_ID, mid)
    assert fake.messages[mid]["text"] == "\n".join([
        "b1 asks:", Q,
        "  • Red: The red option",
        "  • Blue: The blue option",
        "", "Other: Reply to this message to answer with text."])
    assert list(buttons) == ["Red", "Blue"]
    assert "parse_mode" not in fake.of("sendMessage")[0]  # plain text: nothing the agent wrote is markup
    fake.press(ALLOWED, mid, buttons["Red"])
    rc, out = finish(held)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert rc == 0 and decision["behavior"] == "allow"
    assert decision["updatedInput"] == {**AUQ_PRE["tool_input"], "answers": {Q: "Red"}}
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["actor"], i["answers"]) == ("answered", "telegram", f"telegram:{ALLOWED}", {Q: "Red"})
    wait_until(lambda: fake.messages[mid]["text"].endswith(f"— answered: Red (by telegram:{ALLOWED}, telegram)"), 60,
               what=lambda: f"the post edited: {fake.messages[mid]}")
    assert fake.buttons(mid) == [] and "Answered." in replies(fake)


def test_an_unlisted_user_is_ignored_and_logged_and_their_press_answered_with_a_refusal(tg: Any) -> None:
    rig, fake, d = tg
    held = held_question(rig)
    mid = post_of(fake, Q)
    buttons = current(rig, fake, ASK_ID, mid)
    press = fake.press(STRANGER, mid, buttons["Blue"])
    fake.reply(STRANGER, mid, "let me in")
    wait_until(lambda: d.log.read_text().count(f"from user {STRANGER} ignored (not in allow)") == 2, 60,
               what="two ignored updates logged")
    # the press is answered (their client stops waiting) with a refusal; the message is not
    wait_until(lambda: fake.of("answerCallbackQuery"), 60, what="the press answered")
    assert rig.interaction(ASK_ID)["state"] == "pending"
    assert replies(fake) == ["You are not allowed to answer here."]
    assert fake.of("answerCallbackQuery")[0]["callback_query_id"] == press["callback_query"]["id"]
    fake.press(ALLOWED, mid, buttons["Red"])
    rc, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Red"}


def test_a_duplicate_update_is_handled_once_and_send_and_lanes_work(tg: Any) -> None:
    rig, fake, d = tg
    rig.hook(AUQ_PRE)  # (b1 has a lane)
    update = fake.say(ALLOWED, "/send b1 please run the tests")
    wait_until(lambda: len(rig.inbox()) == 1, 60, what="one inbox message")
    fake.redeliver(update)
    wait_until(lambda: f"update {update['update_id']} already handled: ignored" in d.log.read_text(), 60,
               what="the duplicate seen")
    inbox = rig.inbox()
    assert [(m["text"], m["author"]) for m in inbox] == [("please run the tests", f"telegram:{ALLOWED}")]
    assert [r for r in replies(fake) if r.startswith("Queued")] == [f"Queued for b1 ({inbox[0]['id']})."]
    fake.say(ALLOWED, "/lanes")
    wait_until(lambda: any(r.startswith("b1: ") for r in replies(fake)), 60, what=lambda: f"/lanes: {replies(fake)}")


def test_the_fake_going_away_and_back_loses_nothing_and_doubles_nothing(home: Path, worktree: Path,
                                                                        fake: FakeTelegram) -> None:
    write_config(home, fake)
    d = DaemonProcess(home).start()
    try:
        rig = Rig(home, worktree)
        wait_until(lambda: fake.of("getUpdates"), 60, what="polling")
        fake.stop()
        held = rig.start_hook(bash_perm("make deploy"))
        wait_until(lambda: "unreachable" in d.log.read_text(), 60, what="the loss noticed")
        fake.start()
        mid = post_of(fake, "make deploy")
        iid = pending_id(rig.home)
        buttons = current(rig, fake, iid, mid)
        press = fake.press(ALLOWED, mid, buttons["Allow"])
        rc, out = finish(held)
        assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
        # away again while an update waits; back: it is handled once, the post edited once
        fake.stop()
        fake.start()
        wait_until(lambda: not fake.buttons(mid), 60, what="the post ended")
        fake.redeliver(press)
        wait_until(lambda: f"update {press['update_id']} already handled" in d.log.read_text(), 60, what="dup")
        assert [m["text"] for m in fake.sent_to_chat() if "make deploy" in m["text"]] == [fake.messages[mid]["text"]]
        assert rig.interaction(iid)["actor"] == f"telegram:{ALLOWED}"
        # a restart resumes after the newest handled update
        d.stop()
        n = len(fake.of("getUpdates"))
        d = DaemonProcess(home).start()
        wait_until(lambda: len(fake.of("getUpdates")) > n, 60, what="polling again")
        assert fake.of("getUpdates")[n]["offset"] == press["update_id"] + 1
        evs = [e for e in events(home) if e["kind"] == "interaction_answered"]
        assert len(evs) == 1
    finally:
        d.stop()
        d.kill()
    assert TOKEN not in d.log.read_text(errors="replace")


def test_notify_test_posts_on_the_telegram_channel(home: Path, fake: FakeTelegram) -> None:
    write_config(home, fake)
    r = hookd_cli(home, "notify", "test", "--channel", "phone")
    assert (r.returncode, r.stdout, r.stderr) == (0, "phone (telegram): ok\n", "")
    assert fake.of("sendMessage")[0]["text"].startswith("hookd: test notification\n")
    assert int(fake.of("sendMessage")[0]["chat_id"]) == fake.chat_id
    # a token Telegram rejects: said without the token (the library's message holds it)
    (home / "config.toml").write_text((home / "config.toml").read_text().replace(TOKEN, "999:revoked"))
    r = hookd_cli(home, "notify", "test", "--channel", "phone")
    assert (r.returncode, r.stdout) == (1, "phone (telegram): failed: telegram refused it: InvalidToken: "
                                           "The token `<token>` was rejected by the server.\n")
    fake.stop()
    r = hookd_cli(home, "notify", "test", "--channel", "phone")
    assert r.returncode == 1 and r.stdout.startswith("phone (telegram): failed: ") and "999:revoked" not in r.stdout


def test_notify_test_has_the_daemon_send_it_with_the_token_in_its_own_environment(home: Path, fake: FakeTelegram) -> None:
    """README's ``token_env`` with the variable set only where the daemon runs (``hookd service``'s
    unit): ``hookd notify test`` asks the daemon to send it; with no daemon running it reads the
    tokens of the channel it tests only."""
    write_config(home, fake)
    cfg = home / "config.toml"
    cfg.write_text(cfg.read_text().replace(f'token = "{TOKEN}"', 'token_env = "HOOKD_TEST_TG_TOKEN"') + f"""
[[notify.channel]]
type = "command"
name = "pager"
command = ["{sys.executable}", "-c", "pass"]
""")
    assert "HOOKD_TEST_TG_TOKEN" not in os.environ
    r = hookd_cli(home, "notify", "test", "--channel", "pager")  # no daemon: phone's variable not read
    assert (r.returncode, r.stdout, r.stderr) == (0, "pager (command): ok\n", "")
    r = hookd_cli(home, "notify", "test", "--channel", "phone")
    assert r.returncode == 2 and "environment variable HOOKD_TEST_TG_TOKEN is not set" in r.stderr
    d = DaemonProcess(home, env={**os.environ, "HOOKD_TEST_TG_TOKEN": TOKEN}).start()
    try:
        r = hookd_cli(home, "notify", "test", "--channel", "phone")
        assert (r.returncode, r.stdout, r.stderr) == (0, "phone (telegram): ok\n", "")
        assert [m["text"].split("\n")[0] for m in fake.sent_to_chat()] == ["hookd: test notification"]
        fake.reply(ALLOWED, fake.sent_to_chat()[0]["message_id"], "thanks")  # a reply to it: told what it was
        wait_until(lambda: "That was hookd's test notification: this channel works. Reply to a question, or use "
                           "/send BUILDER TEXT." in replies(fake), 60, what=lambda: f"the reply: {replies(fake)}")
        r = hookd_cli(home, "notify", "test", "--channel", "nosuch")
        assert r.returncode == 1 and "no channel 'nosuch'" in r.stderr
        r = hookd_cli(home, "notify", "test")
        assert (r.returncode, r.stdout) == (0, "phone (telegram): ok\npager (command): ok\n")
    finally:
        d.stop()
        d.kill()


@pytest.mark.parametrize(("table", "words"), [
    ('chat_id = "1"\nallow = [1]', "give the bot's token as token or token_env"),
    ('token_env = "NO_SUCH_VAR_HOOKD"\nchat_id = "1"\nallow = [1]', "environment variable NO_SUCH_VAR_HOOKD is not set"),
    ('token = "1:x"\nchat_id = "1"', "allow must be a non-empty list of Telegram user ids"),
    ('token = "1:x"\nallow = [1]', "chat_id must be the chat's id"),
])
def test_invalid_telegram_settings_name_the_key(tmp_path: Path, table: str, words: str) -> None:
    (tmp_path / "config.toml").write_text(f'[[notify.channel]]\ntype = "telegram"\n{table}\n')
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_config(type("H", (), {"root": tmp_path})(), env={})


def test_the_token_may_come_from_the_environment(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[[notify.channel]]\ntype = "telegram"\ntoken_env = "TG"\nchat_id = 5\nallow = [1, 2]\n')
    ch = load_config(type("H", (), {"root": tmp_path})(), env={"TG": "1:abc"}).channels[0]
    assert (ch.token, ch.chat_id, ch.allow, ch.type) == ("1:abc", "5", (1, 2), "telegram")
    assert "1:abc" not in repr(ch)


# --- what a post says (pure) -----------------------------------------------------------------

def _interaction(**kw: Any) -> Any:
    from hookd.models import Interaction

    base: dict[str, Any] = dict(id="x1", kind="question", builder="b1", session_id=None, agent_id=None, tool_name=None,
                                tool_use_id=None, state="pending", questions=None, answers=None, selections=None,
                                surface=None, warning=None, error=None, created_at=0.0, resolved_at=None, revision=1)
    base.update(kw)
    return Interaction(**base)


def test_a_plan_and_an_elicitation_as_posted() -> None:
    from hookd.watchers.chat_posts import interaction_post

    plan = interaction_post(_interaction(kind="plan", tool_name="ExitPlanMode", input={"plan": "# Plan\n1. tests\n2. code"}), None)
    assert plan.text == "\n".join(["b1 asks you to approve its plan:", "# Plan", "1. tests", "2. code", "",
                                   "Reply to this message to send it back with what to change."])
    assert [(b.label, b.answer) for b in plan.buttons] == [("Approve (auto)", {"options": ["auto"]}),
                                                           ("Approve (manual)", {"options": ["manual"]})]
    el = interaction_post(_interaction(kind="elicitation", tool_name="github", input={
        "message": "Pick a repo", "requested_schema": {"type": "object", "properties": {"repo": {"type": "string"}}}}), None)
    assert el.text == "\n".join(["b1's tool server github asks:", "Pick a repo", "fields: repo", "",
                                 "Field 1 of 1: repo (string, optional)", "Reply to this message with its value."])
    assert [b.label for b in el.buttons] == ["Skip", "Decline", "Cancel"]
    bare = interaction_post(_interaction(kind="elicitation", tool_name="github", input={"message": "Go on?"}), None)
    assert [b.label for b in bare.buttons] == ["Accept", "Decline", "Cancel"]


def test_agent_text_is_shown_escaped_and_never_as_markup() -> None:
    from hookd.watchers.chat_posts import interaction_post

    q = [{"question": "Pick\x1b[31m one\u202e", "options": [{"label": "<b>A</b>", "description": "[x](http://e.vil)"}]}]
    post = interaction_post(_interaction(questions=q), None)
    assert post.text.split("\n")[:3] == ["b1 asks:", "Pick\\x1b[31m one\\u202e", "  • <b>A</b>: [x](http://e.vil)"]
    assert [b.answer for b in post.buttons] == [{"options": ["<b>A</b>"]}]
