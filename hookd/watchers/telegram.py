"""Telegram as a two-way chat channel (:class:`hookd.watchers.chat.TwoWayChannel`) through
python-telegram-bot's :class:`telegram.Bot`: ``sendMessage`` with an inline keyboard,
``editMessageText``, ``getUpdates`` long polling (works behind NAT: hookd calls out, nothing
calls in) and ``answerCallbackQuery``. Text is sent plain (no ``parse_mode``).

The bot's token is part of every request's URL: it is never logged (httpx's and the
library's request lines are kept at WARNING) and is cut out of every error text."""

from __future__ import annotations

import logging
from typing import Any

from hookd.models import HookdError
from hookd.watchers.chat import ChatUnreachable, Incoming
from hookd.watchers.chat_posts import Post
from hookd.watchers.notify_config import Channel

#: How long one ``getUpdates`` waits on Telegram for an update (seconds).
POLL_S = 25


class ChatRefused(HookdError):
    """Telegram refused the request (a bad token, an unknown chat, a message it cannot edit)."""


def quiet_http_logs() -> None:
    """httpx's INFO lines carry request URLs, which carry the bot's token."""
    for name in ("httpx", "httpcore", "telegram", "telegram.ext"):
        logging.getLogger(name).setLevel(logging.WARNING)


class TelegramChannel:
    """A ``type = "telegram"`` channel (``ch``: its settings). Raises ChatUnreachable for a
    network failure, a timeout or a rate limit (retried), ChatRefused for the rest."""

    type = "telegram"

    def __init__(self, ch: Channel, poll_s: int = POLL_S):
        from telegram import Bot
        from telegram.request import HTTPXRequest

        assert ch.token is not None and ch.chat_id is not None
        quiet_http_logs()
        self.name = ch.name
        self.allow = ch.allow
        self.chat_id = ch.chat_id
        self._token = ch.token
        self.poll_s = poll_s
        t = ch.timeout_s
        self.bot = Bot(ch.token, base_url=ch.base_url or "https://api.telegram.org/bot",
                       request=HTTPXRequest(connect_timeout=t, read_timeout=t, write_timeout=t),
                       get_updates_request=HTTPXRequest(connect_timeout=t, read_timeout=poll_s + t, write_timeout=t))
        self._ready = False

    def _scrub(self, e: BaseException) -> str:
        return (f"{type(e).__name__}: {e}").replace(self._token, "<token>")

    async def _call(self, fn: Any, *args: Any, **kw: Any) -> Any:
        from telegram.error import NetworkError, RetryAfter, TelegramError

        try:
            if not self._ready:
                await self.bot.initialize()  # (getMe)
                self._ready = True
            return await fn(*args, **kw)
        except (NetworkError, RetryAfter) as e:  # (TimedOut is a NetworkError)
            raise ChatUnreachable(self._scrub(e)) from None
        except TelegramError as e:
            raise ChatRefused(f"telegram refused it: {self._scrub(e)}") from None

    @staticmethod
    def _markup(post: Post, data: list[str]) -> Any:
        from telegram import InlineKeyboardButton, InlineKeyboardMarkup

        if not post.buttons:
            return None
        return InlineKeyboardMarkup([[InlineKeyboardButton(b.label[:60], callback_data=d)]
                                     for b, d in zip(post.buttons, data)])

    async def post(self, post: Post, data: list[str]) -> tuple[str, int]:
        m = await self._call(self.bot.send_message, self.chat_id, post.text, reply_markup=self._markup(post, data),
                             disable_web_page_preview=True)
        return str(m.chat_id), int(m.message_id)

    async def edit(self, chat_id: str, message_id: int, post: Post, data: list[str]) -> None:
        try:
            await self._call(self.bot.edit_message_text, post.text, chat_id=chat_id, message_id=message_id,
                             reply_markup=self._markup(post, data), disable_web_page_preview=True)
        except ChatRefused as e:
            if "not modified" not in str(e):  # (the same text and buttons: nothing to do)
                raise

    async def updates(self, offset: int) -> list[Incoming]:
        got = await self._call(self.bot.get_updates, offset=offset, timeout=self.poll_s,
                               allowed_updates=["message", "callback_query"])
        return [x for x in (self._incoming(u) for u in got) if x is not None]

    def _incoming(self, u: Any) -> Incoming | None:
        if u.callback_query is not None:
            q = u.callback_query
            m = q.message
            return Incoming(update_id=u.update_id, user_id=q.from_user.id, user=q.from_user.username,
                            chat_id=str(m.chat_id) if m is not None else self.chat_id,
                            message_id=m.message_id if m is not None else None, data=q.data or "", callback_id=q.id)
        m = u.message
        if m is None or m.from_user is None:
            return Incoming(update_id=u.update_id, user_id=0, chat_id=self.chat_id, text="")
        return Incoming(update_id=u.update_id, user_id=m.from_user.id, user=m.from_user.username,
                        chat_id=str(m.chat_id), message_id=m.message_id, text=m.text or "",
                        reply_to=m.reply_to_message.message_id if m.reply_to_message is not None else None)

    async def reply(self, inc: Incoming, text: str) -> None:
        if inc.callback_id is not None:
            # a toast on the pressed button, to the presser only (as Slack's ephemeral message): a
            # refusal (the loser of a race) is not told to the whole chat
            await self._call(self.bot.answer_callback_query, inc.callback_id, text=text[:190])
            return
        await self._call(self.bot.send_message, inc.chat_id, text, reply_to_message_id=inc.message_id)

    async def remind(self, chat_id: str, message_id: int, text: str) -> None:
        await self._call(self.bot.send_message, chat_id, text, reply_to_message_id=message_id,
                         disable_web_page_preview=True)

    async def send_text(self, text: str) -> None:
        """Post a plain message (``hookd notify test``)."""
        await self._call(self.bot.send_message, self.chat_id, text, disable_web_page_preview=True)

    async def close(self) -> None:
        if self._ready:
            try:
                await self.bot.shutdown()
            except Exception:  # noqa: BLE001
                pass
            self._ready = False
