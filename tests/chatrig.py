"""One rig over the two chat services' fakes (tests/fake_telegram.py, tests/fake_slack.py), so
that a case both channels share is written once and run against each (tests/test_chat.py,
tests/test_chat_inproc.py); what only one channel does stays in its own modules
(tests/test_telegram*.py, tests/test_slack*.py).

:class:`Chat` is what such a case does with a fake: the channel's config in a home, the bot's
posts (a post: Telegram's message id, Slack's ``ts``), their text and buttons, the allowed
user's press and reply (Telegram: a reply to the message; Slack: a reply in its thread), what
hookd told the user, the post's reminders. ``CHANNELS`` names the two (the ``chat`` fixtures'
parameters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import test_slack, test_telegram
from .conftest import wait_until
from .fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack
from .fake_telegram import TOKEN, FakeTelegram

CHANNELS = ("telegram", "slack")


class Chat:
    """A chat service's fake as the shared cases use it. name: the channel's ``type``, and the
    ``surface`` of what is answered there; allowed: the user in the channel's ``allow``;
    reply_hint: how a post says to answer with text (the words before "to ..."); chat_id: the
    chat the channel posts in; tokens: the channel's secrets (never in the daemon's log)."""

    name: str
    allowed: Any
    reply_hint: str
    chat_id: str
    tokens: tuple[str, ...]
    fake: Any

    def write_config(self, home: Path, notify: str = "") -> None:
        """The channel on this fake in ``home``'s config.toml (``notify``: more [notify] keys)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def post_of(self, needle: str) -> Any:
        """The bot's post whose text holds ``needle`` (waits for it)."""
        raise NotImplementedError

    def text(self, post: Any) -> str:
        """The post's text as it now is."""
        raise NotImplementedError

    def buttons(self, post: Any) -> list[tuple[str, str]]:
        """(label, data) of each of the post's buttons as they now are."""
        return list(self.fake.buttons(post))

    def labels(self, post: Any) -> list[str]:
        return [label for label, _ in self.buttons(post)]

    def current(self, rig: Any, iid: str, post: Any) -> dict[str, str]:
        """The post's buttons (label -> data) once they answer interaction ``iid``'s revision
        now (``rig``: a daemon's or an in-process Rig)."""
        raise NotImplementedError

    def linked(self) -> None:
        """Wait until the daemon can hear the user (Slack: its websocket open)."""

    def press(self, post: Any, data: str) -> Any:
        """The allowed user presses the button with ``data`` on ``post``."""
        self.linked()
        return self.fake.press(self.allowed, post, data)

    def reply(self, post: Any, text: str) -> Any:
        """The allowed user answers ``post`` with ``text`` (Telegram: a reply to it; Slack: in
        its thread)."""
        self.linked()
        return self.fake.reply(self.allowed, post, text)

    def replies(self) -> list[str]:
        """What hookd told the users, oldest first (Telegram: its toasts, then its replies;
        Slack: its ephemeral messages and acknowledgements)."""
        return list(self.fake.replies())

    def said(self, text: str) -> None:
        """Wait until hookd told the user ``text``."""
        wait_until(lambda: text in self.replies(), 60, what=lambda: f"{text!r} said: {self.replies()}")

    def told_in_place(self, text: str) -> bool:
        """Whether hookd told the user ``text`` at least once, and each time next to what the
        user wrote (Telegram: in reply to the user's message; Slack: in the post's thread)."""
        raise NotImplementedError

    def edits(self) -> int:
        """How many times the bot edited a post so far."""
        raise NotImplementedError

    def reminders(self, post: Any) -> list[str]:
        """The reminders the bot posted about ``post`` (in reply to it, or in its thread)."""
        raise NotImplementedError

    def posts(self) -> list[str]:
        """The texts of the bot's posts that are not about another post (no reply, no thread)."""
        raise NotImplementedError

    def in_chat(self) -> list[str]:
        """The texts of everything the bot sent into the chat for all to see (posts, replies,
        reminders; not what it told one user alone)."""
        raise NotImplementedError

    def last_edit(self) -> tuple[str, Any]:
        """The chat and the post of the bot's last edit."""
        raise NotImplementedError


class TelegramChat(Chat):
    name, allowed, reply_hint = "telegram", test_telegram.ALLOWED, "Reply to this message"
    tokens = (TOKEN,)

    def __init__(self) -> None:
        self.fake: FakeTelegram = FakeTelegram()
        self.chat_id = str(self.fake.chat_id)

    def write_config(self, home: Path, notify: str = "") -> None:
        test_telegram.write_config(home, self.fake, notify=notify)

    def close(self) -> None:
        if self.fake.up:
            self.fake.stop()

    def post_of(self, needle: str) -> Any:
        return test_telegram.post_of(self.fake, needle)

    def text(self, post: Any) -> str:
        return str(self.fake.messages[post]["text"])

    def current(self, rig: Any, iid: str, post: Any) -> dict[str, str]:
        return test_telegram.current(rig, self.fake, iid, post)

    def told_in_place(self, text: str) -> bool:
        told = [c for c in self.fake.of("sendMessage") if c["text"] == text]
        return bool(told) and all(c.get("reply_to_message_id") or (c.get("reply_parameters") or {}).get("message_id")
                                  for c in told)

    def edits(self) -> int:
        return len(self.fake.of("editMessageText"))

    def reminders(self, post: Any) -> list[str]:
        return [c["text"] for c in self.fake.of("sendMessage") if c.get("reply_to_message_id") == post
                or (c.get("reply_parameters") or {}).get("message_id") == post]

    def posts(self) -> list[str]:
        return [m["text"] for m in self.fake.sent_to_chat() if "reply_to_message" not in m]

    def in_chat(self) -> list[str]:
        return [c["text"] for c in self.fake.of("sendMessage")]

    def last_edit(self) -> tuple[str, Any]:
        edit = self.fake.of("editMessageText")[-1]
        return str(edit["chat_id"]), edit["message_id"]


class SlackChat(Chat):
    name, allowed, reply_hint = "slack", test_slack.ALLOWED, "Reply in this message's thread"
    tokens = (BOT_TOKEN, APP_TOKEN)

    def __init__(self) -> None:
        self.fake: FakeSlack = FakeSlack()
        self.chat_id = self.fake.channel

    def write_config(self, home: Path, notify: str = "") -> None:
        test_slack.write_config(home, self.fake, notify=notify)

    def close(self) -> None:
        self.fake.close()

    def post_of(self, needle: str) -> Any:
        return test_slack.post_of(self.fake, needle)

    def text(self, post: Any) -> str:
        return self.fake.text(post)

    def current(self, rig: Any, iid: str, post: Any) -> dict[str, str]:
        return test_slack.current(rig, self.fake, iid, post)

    def linked(self) -> None:
        test_slack.connected(self.fake)

    def told_in_place(self, text: str) -> bool:
        told = [c for c in self.fake.of("chat.postEphemeral") if c["text"] == text]
        return bool(told) and all(c.get("thread_ts") for c in told)

    def edits(self) -> int:
        return len(self.fake.of("chat.update"))

    def reminders(self, post: Any) -> list[str]:
        return [c["text"] for c in self.fake.of("chat.postMessage") if c.get("thread_ts") == post]

    def posts(self) -> list[str]:
        return [c["text"] for c in self.fake.of("chat.postMessage") if "thread_ts" not in c]

    def in_chat(self) -> list[str]:
        return [c["text"] for c in self.fake.of("chat.postMessage")]

    def last_edit(self) -> tuple[str, Any]:
        edit = self.fake.of("chat.update")[-1]
        return edit["channel"], edit["ts"]


def chat_of(name: str) -> Chat:
    """A fresh fake of channel ``name`` (one of ``CHANNELS``), started."""
    return {"telegram": TelegramChat, "slack": SlackChat}[name]()
