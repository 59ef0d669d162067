"""Answer from your phone (issue 24): the two-way Slack channel against a loopback fake of
Slack's Web API and Socket Mode (tests/fake_slack.py), with a real daemon and real hook
clients: a question posted with its Block Kit buttons, a press releasing the held
PermissionRequest hook with that answer, an unlisted user ignored (and told so), a duplicate
envelope ignored, the slash command (send, lanes), the fake going away and coming back (resume,
nothing lost or doubled), `hookd notify test`, and the tokens kept out of logs. The cases Slack
and Telegram share (Allow, a reply in the post's thread as "Other" or a denial's reason, a stale
button, the edit after a CLI answer, a reply in the agent's message's thread):
tests/test_chat.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hookd.daemonproc import DaemonProcess
from hookd.models import ConfigError
from hookd.watchers.notify_config import load_config
from hookd.watchers.slack import ts_id, update_id

from .conftest import events, hookd_cli, wait_until
from .fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack, as_slack_sends, invalid
from .test_answers import ASK_ID, AUQ_PRE, Q, Rig, bash_perm, finish, held_question, pending_id

pytestmark = pytest.mark.daemon

ALLOWED = "UANA"
STRANGER = "UMALLORY"


@pytest.fixture
def fake():
    f = FakeSlack()
    yield f
    f.close()


def write_config(home: Path, fake: FakeSlack, extra: str = "", notify: str = "") -> None:
    """The slack channel on ``fake`` (``extra``: more of its keys; ``notify``: more [notify] keys)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"""
[notify]
question_after_s = 0
retry_initial_s = 0.05
retry_max_s = 0.3
{notify}
[[notify.channel]]
type = "slack"
name = "team"
token = "{BOT_TOKEN}"
app_token = "{APP_TOKEN}"
chat_id = "{fake.channel}"
allow = ["{ALLOWED}"]
base_url = "{fake.base_url}"
{extra}""")


def no_tokens(text: str) -> None:
    assert BOT_TOKEN not in text and APP_TOKEN not in text


@pytest.fixture
def sl(home: Path, worktree: Path, fake: FakeSlack):
    """A daemon with the slack channel on ``fake`` and a spawned builder b1 (hold 30 s)."""
    write_config(home, fake)
    d = DaemonProcess(home).start()
    try:
        yield Rig(home, worktree), fake, d
    finally:
        d.stop()
        d.kill()
        no_tokens(d.log.read_text(errors="replace"))  # never logged


def post_of(fake: FakeSlack, needle: str) -> str:
    """The ts of the bot's post whose text holds ``needle`` (waits for it)."""
    def found() -> str | None:
        return next((m["ts"] for m in fake.posts() if needle in fake.text(m["ts"])), None)
    return wait_until(found, 60, what=lambda: f"a post with {needle!r}: {fake.posts()}")


def current(rig: Any, fake: FakeSlack, iid: str, ts: str) -> dict[str, str]:
    """The post's buttons (label -> value) once they answer the interaction's revision now
    (``rig``: a daemon's or an in-process Rig: its ``interaction(id)``)."""
    def fresh() -> dict[str, str] | None:
        rev = rig.interaction(iid)["revision"]
        got = dict(fake.buttons(ts))
        return got if got and all(d.split(":")[2] == str(rev) for d in got.values()) else None
    return wait_until(fresh, 60, what=lambda: f"buttons at the current revision: {fake.buttons(ts)}")


def connected(fake: FakeSlack, n: int = 1) -> None:
    wait_until(lambda: fake.connections >= n, 60, what=lambda: f"{n} Socket Mode connection(s): {fake.connections}")


def test_a_question_is_posted_with_its_buttons_and_a_press_releases_the_held_hook(sl: Any) -> None:
    rig, fake, _ = sl
    held = held_question(rig)
    ts = post_of(fake, Q)
    buttons = current(rig, fake, ASK_ID, ts)
    assert fake.text(ts) == "\n".join([
        "b1 asks:", Q,
        "  • Red: The red option",
        "  • Blue: The blue option",
        "", "Other: Reply in this message's thread to answer with text."])
    assert list(buttons) == ["Red", "Blue"]
    sent = fake.of("chat.postMessage")[0]
    assert sent["channel"] == fake.channel and sent["mrkdwn"] is False
    assert {b["type"] for b in sent["blocks"]} == {"section", "actions"}
    assert all(b["text"]["type"] == "plain_text" for b in sent["blocks"] if b["type"] == "section")  # never markup
    connected(fake)
    press = fake.press(ALLOWED, ts, buttons["Red"])
    rc, out = finish(held)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert rc == 0 and decision["behavior"] == "allow"
    assert decision["updatedInput"] == {**AUQ_PRE["tool_input"], "answers": {Q: "Red"}}
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["actor"], i["answers"]) == ("answered", "slack", f"slack:{ALLOWED}", {Q: "Red"})
    wait_until(lambda: fake.text(ts).endswith(f"— answered: Red (by slack:{ALLOWED}, slack)"), 60,
               what=lambda: f"the post edited: {fake.messages[ts]}")
    assert fake.buttons(ts) == [] and "Answered." in fake.replies()
    wait_until(lambda: fake.acked(press) == 1, 60, what="the press acknowledged")
    ephemeral = next(p for p in fake.of("chat.postEphemeral") if p["text"] == "Answered.")
    assert (ephemeral["channel"], ephemeral["user"]) == (fake.channel, ALLOWED)


def test_an_unlisted_user_is_ignored_logged_and_told(sl: Any) -> None:
    rig, fake, d = sl
    held = held_question(rig)
    ts = post_of(fake, Q)
    buttons = current(rig, fake, ASK_ID, ts)
    connected(fake)
    fake.press(STRANGER, ts, buttons["Blue"])
    fake.reply(STRANGER, ts, "let me in")
    wait_until(lambda: d.log.read_text().count(f"from user {STRANGER} ignored (not in allow)") == 2, 60,
               what="two ignored updates logged")
    assert rig.interaction(ASK_ID)["state"] == "pending"
    told = [p for p in fake.of("chat.postEphemeral") if p["user"] == STRANGER]
    assert [p["text"] for p in told] == ["You are not allowed to answer here."] * 2
    env = fake.command(STRANGER, "send b1 let me in")  # (told in the command's acknowledgement)
    wait_until(lambda: fake.acked(env) == 1, 60, what="the command acknowledged")
    assert [a.get("payload") for a in fake.acks if a["envelope_id"] == env["envelope_id"]] == [
        {"text": "You are not allowed to answer here.", "response_type": "ephemeral"}]
    assert rig.inbox() == []
    fake.press(ALLOWED, ts, buttons["Red"])
    rc, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Red"}


def test_a_duplicate_envelope_is_handled_once_and_the_slash_command_works(sl: Any) -> None:
    rig, fake, d = sl
    rig.hook(AUQ_PRE)  # (b1 has a lane)
    connected(fake)
    env = fake.command(ALLOWED, "send b1 please run the tests")
    wait_until(lambda: len(rig.inbox()) == 1, 60, what="one inbox message")
    fake.redeliver(env)
    n = update_id(f"command:{env['payload']['trigger_id']}")
    wait_until(lambda: f"update {n} already handled: ignored" in d.log.read_text(), 60, what="the duplicate seen")
    wait_until(lambda: fake.acked(env) == 2, 60, what="both deliveries acknowledged")
    inbox = rig.inbox()
    assert [(m["text"], m["author"]) for m in inbox] == [("please run the tests", f"slack:{ALLOWED}")]
    assert [r for r in fake.replies() if r.startswith("Queued")] == [f"Queued for b1 ({inbox[0]['id']})."]
    fake.command(ALLOWED, "lanes")
    wait_until(lambda: any(r.startswith("b1: ") for r in fake.replies()), 60, what=lambda: f"lanes: {fake.replies()}")
    fake.command(ALLOWED, "b1 and a registered /send", command="/send")
    wait_until(lambda: len(rig.inbox()) == 2, 60, what="the /send command's message")
    fake.command(ALLOWED, "")
    wait_until(lambda: any(r.startswith("Answer with the buttons, or reply in a message's thread") for r in fake.replies()),
               60, what=lambda: f"the help: {fake.replies()}")


def test_the_fake_going_away_and_back_loses_nothing_and_doubles_nothing(home: Path, worktree: Path,
                                                                        fake: FakeSlack) -> None:
    write_config(home, fake)
    d = DaemonProcess(home).start()
    try:
        rig = Rig(home, worktree)
        connected(fake)
        fake.stop()
        held = rig.start_hook(bash_perm("make deploy"))
        wait_until(lambda: "unreachable" in d.log.read_text(), 60, what="the loss noticed")
        fake.start()
        ts = post_of(fake, "make deploy")
        iid = pending_id(rig.home)
        buttons = current(rig, fake, iid, ts)
        connected(fake, 2)
        # away again: the press waits at Slack and is delivered on the next connection
        fake.stop()
        press = fake.press(ALLOWED, ts, buttons["Allow"])
        fake.start()
        rc, out = finish(held)
        assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
        wait_until(lambda: not fake.buttons(ts), 60, what="the post ended")
        wait_until(lambda: fake.acked(press) == 1, 60, what="the press acknowledged")
        fake.redeliver(press)
        action = press["payload"]["actions"][0]
        n = update_id(f"action:{ALLOWED}:{action['action_ts']}:{action['action_id']}")
        wait_until(lambda: f"update {n} already handled" in d.log.read_text(), 60, what="dup")
        assert [m["ts"] for m in fake.posts() if "make deploy" in fake.text(m["ts"])] == [ts]
        assert rig.interaction(iid)["actor"] == f"slack:{ALLOWED}"
        # hookd stopped while a press is sent: delivered to the next daemon, handled once
        d.stop()
        again = fake.press(ALLOWED, ts, buttons["Allow"])
        d = DaemonProcess(home).start()
        wait_until(lambda: fake.acked(again) == 1, 60, what="the press delivered to the restarted daemon")
        wait_until(lambda: "has already ended (answered)" in " ".join(fake.replies()), 60, what="told it ended")
        evs = [e for e in events(home) if e["kind"] == "interaction_answered"]
        assert len(evs) == 1
    finally:
        d.stop()
        d.kill()
    no_tokens(d.log.read_text(errors="replace"))


def test_a_refresh_request_reconnects_and_presses_still_answer(sl: Any) -> None:
    rig, fake, _ = sl
    held = rig.start_hook(bash_perm("make lint"))
    ts = post_of(fake, "make lint")
    buttons = current(rig, fake, pending_id(rig.home), ts)
    connected(fake)
    fake.refresh()
    connected(fake, 2)
    press = fake.press(ALLOWED, ts, buttons["Deny"])
    rc, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    wait_until(lambda: fake.acked(press) == 1, 60, what="the press acknowledged once")


def test_notify_test_posts_on_the_slack_channel(home: Path, fake: FakeSlack) -> None:
    write_config(home, fake)
    r = hookd_cli(home, "notify", "test", "--channel", "team")
    assert (r.returncode, r.stdout, r.stderr) == (0, "team (slack): ok\n", "")
    sent = fake.of("chat.postMessage")[0]
    assert sent["text"].startswith("hookd: test notification\n") and sent["channel"] == fake.channel
    # a token Slack rejects: said without the token
    (home / "config.toml").write_text((home / "config.toml").read_text().replace(BOT_TOKEN, "xoxb-revoked"))
    r = hookd_cli(home, "notify", "test", "--channel", "team")
    assert (r.returncode, r.stdout) == (1, "team (slack): failed: slack refused it: invalid_auth\n")
    fake.stop()
    r = hookd_cli(home, "notify", "test", "--channel", "team")
    assert r.returncode == 1 and r.stdout.startswith("team (slack): failed: ") and "xoxb-revoked" not in r.stdout


@pytest.mark.parametrize(("table", "words"), [
    ('app_token = "xapp-1"\nchat_id = "C1"\nallow = ["U1"]', "give the bot token (xoxb-...) as token or token_env"),
    ('token = "xoxb-1"\nchat_id = "C1"\nallow = ["U1"]', "give the app-level token (xapp-..., Socket Mode) as app_token"),
    ('token = "xapp-1"\napp_token = "xapp-1"\nchat_id = "C1"\nallow = ["U1"]', "the token is not a Slack bot token"),
    ('token = "xoxb-1"\napp_token = "xoxb-1"\nchat_id = "C1"\nallow = ["U1"]', "the app_token is not a Slack app-level"),
    ('token = "xoxb-1"\napp_token_env = "NO_SUCH_VAR_HOOKD"\nchat_id = "C1"\nallow = ["U1"]',
     "environment variable NO_SUCH_VAR_HOOKD is not set"),
    ('token = "xoxb-1"\napp_token = "xapp-1"\nchat_id = "C1"\nallow = [1]', "allow must be a non-empty list of Slack user ids"),
    ('token = "xoxb-1"\napp_token = "xapp-1"\nallow = ["U1"]', "chat_id must be the Slack channel's id"),
])
def test_invalid_slack_settings_name_the_key(tmp_path: Path, table: str, words: str) -> None:
    (tmp_path / "config.toml").write_text(f'[[notify.channel]]\ntype = "slack"\n{table}\n')
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        load_config(type("H", (), {"root": tmp_path})(), env={})


def test_the_tokens_may_come_from_the_environment(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[[notify.channel]]\ntype = "slack"\ntoken_env = "SB"\napp_token_env = "SA"\n'
                                          'chat_id = "C5"\nallow = ["U1", "U2"]\n')
    ch = load_config(type("H", (), {"root": tmp_path})(), env={"SB": "xoxb-abc", "SA": "xapp-def"}).channels[0]
    assert (ch.token, ch.app_token, ch.chat_id, ch.allow, ch.type) == ("xoxb-abc", "xapp-def", "C5", ("U1", "U2"), "slack")
    assert "xoxb-abc" not in repr(ch) and "xapp-def" not in repr(ch)


def test_a_message_ts_round_trips_as_an_integer() -> None:
    from hookd.watchers.slack import ts_of

    assert ts_id("1700000000.000100") == 1700000000000100 and ts_of(1700000000000100) == "1700000000.000100"
    assert ts_of(ts_id("1712345678.123456")) == "1712345678.123456"


def test_block_kit_limits_hold_for_many_buttons_repeated_answers_and_long_labels() -> None:
    """30 buttons (Slack takes 25 to an actions block), two giving the same answer (action ids
    must be unique in their block), a label past 75 characters: a message Slack takes
    (tests/fake_slack.py ``invalid``), every button on it in order."""
    from hookd.watchers.chat_posts import Button, Post
    from hookd.watchers.slack import blocks

    names = [f"option {k}" for k in range(29)] + ["x" * 100]
    post = Post("pick one", [Button(n, {"options": [n]}) for n in names])
    data = [f"a:1:0:{k}" for k in range(29)] + ["a:1:0:3"]  # the last gives the answer of the fourth
    got = blocks(post, data)
    assert invalid(got) is None
    assert [b["type"] for b in got] == ["section", "actions", "actions"]
    shown = [e for b in got if b["type"] == "actions" for e in b["elements"]]
    assert [e["value"] for e in shown] == data
    assert [e["text"]["text"] for e in shown] == names[:29] + ["x" * 74 + "…"]
    assert invalid([{"type": "actions", "elements": [{**e, "action_id": e["value"]} for e in shown[:25]]}]) is None
    assert "not unique" in (invalid([{"type": "actions", "elements": [{**e, "action_id": e["value"]} for e in
                                                                      [shown[3], shown[29]]]}]) or "")
    assert "26 elements" in (invalid([{"type": "actions", "elements": shown[:26]}]) or "")


def test_a_reply_is_taken_as_typed() -> None:
    """Slack sends a message's ``& < >`` escaped and its links and addresses in angle brackets:
    hookd takes the text its author typed (tests/fake_slack.py ``as_slack_sends``)."""
    from hookd.watchers.slack import unescape

    for typed in ("a < b && c > d", "Ada <ada@example.com>", "see https://x.io/a?b=1&c=2 now", "/srv/ada", "&lt;"):
        assert unescape(as_slack_sends(typed)) == typed
    assert unescape("<http://example.com|example.com> and <@U1> in <#C1|general>") == "example.com and @U1 in general"
