"""Slack as a two-way chat channel (:class:`hookd.watchers.chat.TwoWayChannel`) through the
official slack_sdk: its :class:`~slack_sdk.web.async_client.AsyncWebClient` posts
(``chat.postMessage`` with Block Kit buttons), edits (``chat.update``) and tells one user a
reply (``chat.postEphemeral``); its aiohttp Socket Mode client
(:mod:`slack_sdk.socket_mode.aiohttp`) keeps a websocket open from hookd to Slack, so nothing
calls in (no public URL). Why this client: docs/decisions.md "Slack".

What Slack sends over the socket becomes :class:`~hookd.watchers.chat.Incoming`:

- a button press (an ``interactive`` envelope, ``block_actions``): ``data`` is the button's value;
- a reply in a post's thread (an ``events_api`` envelope, a ``message`` event with
  ``thread_ts``): the free-text "Other" (``reply_to``: the post);
- the slash command ``/hookd send B TEXT`` or ``/hookd lanes`` (a ``slash_commands``
  envelope; a command registered as ``/send`` or ``/lanes`` works too): the text ``/send B
  TEXT`` or ``/lanes``; its reply is the envelope's acknowledgement, shown to that user only.

A reply's or command's text is taken as its author typed it (:func:`unescape`: Slack sends
``& < >`` escaped and links in angle brackets).

Every other envelope (hookd's own messages coming back, edits, other events) is acknowledged
and dropped. An envelope handed to the relay is acknowledged once it was handled (at the next
:meth:`SlackChannel.updates`): one Slack delivers again because hookd stopped first is
handled then, and a retried one is known by its update id (from the event id, the press's
``action_ts``, the command's ``trigger_id``; :func:`update_id`) and handled once.

A message's ``ts`` (``"1700000000.000100"``) is kept as the integer ``1700000000000100``
(:func:`ts_id`, :func:`ts_of`): the relay's message ids are integers.

The tokens (``xoxb-`` bot token, ``xapp-`` app-level token) travel in request headers: never
logged (slack_sdk's and aiohttp's loggers are kept at WARNING) and cut out of every error."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from typing import Any

import msgspec

from hookd.models import HookdError
from hookd.watchers.chat import NOT_ALLOWED, ChatUnreachable, Incoming
from hookd.watchers.chat_posts import REPLY, Post
from hookd.watchers.notify_config import Channel

log = logging.getLogger("hookd")

#: How long one :meth:`SlackChannel.updates` waits for an envelope before it looks at the
#: websocket again (seconds; a lost socket is reopened at the next call).
POLL_S = 1.0
#: Slack's limits: a plain_text section's text, a button's label, an actions block's buttons
#: (more buttons go in another actions block).
SECTION_CHARS = 3000
LABEL_CHARS = 75
MAX_BUTTONS = 25
#: The reply to ``/hookd`` with no known word (the relay's help, as Slack's commands are written).
HELP = ("Answer with the buttons, or reply in a message's thread with text. /hookd send BUILDER TEXT queues a "
        "message for an agent (or reply in a lane message's thread); /hookd lanes lists the lanes.")


class ChatRefused(HookdError):
    """Slack refused the request (a bad token, an unknown channel, a message it cannot edit)."""


def ts_id(ts: str) -> int:
    """A Slack message ``ts`` (``"1700000000.000100"``) as an integer (``1700000000000100``)."""
    sec, _, frac = str(ts).partition(".")
    return int(sec) * 1_000_000 + int((frac + "000000")[:6])


def ts_of(n: int) -> str:
    """The ``ts`` of :func:`ts_id`'s integer."""
    return f"{n // 1_000_000}.{n % 1_000_000:06d}"


def update_id(key: str) -> int:
    """The relay's update id of an envelope known by ``key`` (63 bits of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") >> 1


def escape(text: str) -> str:
    """Slack's control characters in a message's ``text`` (so no mention or link an agent wrote
    is rendered as one)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def threaded(post: Post) -> Post:
    """``post`` as Slack shows it: a reply to it is one in its thread ("Reply in this message's
    thread" where the post says :data:`hookd.watchers.chat_posts.REPLY`)."""
    return msgspec.structs.replace(post, text=post.text.replace(REPLY, "Reply in this message's thread"))


def blocks(post: Post, data: list[str]) -> list[dict[str, Any]]:
    """``post`` as Block Kit: its text in plain_text sections (never markup), then one button per
    ``data`` (the button's value), :data:`MAX_BUTTONS` to an actions block. A button's action id
    is its value and its place (``a:1:0:2#3``): unique in its block even where two buttons give
    the same answer (Slack refuses a message whose block repeats one)."""
    text = post.text or "-"
    out: list[dict[str, Any]] = [{"type": "section", "text": {"type": "plain_text", "text": text[i:i + SECTION_CHARS],
                                                                "emoji": False}}
                                 for i in range(0, len(text), SECTION_CHARS)]
    shown = [{"type": "button", "text": {"type": "plain_text", "text": label(b.label), "emoji": False},
              "action_id": f"{d}#{k}", "value": d} for k, (b, d) in enumerate(zip(post.buttons, data))]
    out += [{"type": "actions", "elements": shown[i:i + MAX_BUTTONS]} for i in range(0, len(shown), MAX_BUTTONS)]
    return out


def label(text: str) -> str:
    """A button's label within Slack's :data:`LABEL_CHARS` (cut with "…"; "-" for none)."""
    return (text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…") or "-"


_LINK = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")


def unescape(text: str) -> str:
    """A message event's text as its author typed it: a link, address or mention in angle
    brackets as its label (else its target, ``mailto:`` dropped), then ``&lt; &gt; &amp;``
    as ``< > &``."""
    def shown(m: re.Match[str]) -> str:
        return m[2] if m[2] else m[1].removeprefix("mailto:")
    text = _LINK.sub(shown, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def quiet_sdk_logs() -> None:
    """slack_sdk's and aiohttp's INFO/DEBUG lines (request lines, websocket frames) stay out."""
    for name in ("slack_sdk", "aiohttp"):
        logging.getLogger(name).setLevel(logging.WARNING)


class SlackChannel:
    """A ``type = "slack"`` channel (``ch``: its settings). Raises ChatUnreachable for a network
    failure, a timeout, a rate limit or a server error (retried), ChatRefused for the rest.
    poll_s: :data:`POLL_S`."""

    type = "slack"
    help = HELP

    def __init__(self, ch: Channel, poll_s: float = POLL_S):
        assert ch.token is not None and ch.app_token is not None and ch.chat_id is not None
        quiet_sdk_logs()
        self.name = ch.name
        self.allow = ch.allow
        self.chat_id = ch.chat_id
        self.poll_s = poll_s
        self._secrets = (ch.token, ch.app_token)
        self._base = ch.base_url or "https://slack.com/api/"
        self._timeout = ch.timeout_s
        self._web: Any = None
        self._socket: Any = None
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._unacked: list[str] = []  # envelopes handed to the relay: acknowledged at the next updates()
        self._slash: dict[int, str] = {}  # a slash command's update id -> its envelope (its reply is the ack)
        self._bot_user: str | None = None

    def _scrub(self, e: BaseException) -> str:
        text = f"{type(e).__name__}: {e}"
        for s in self._secrets:
            text = text.replace(s, "<token>")
        return text

    def _client(self) -> Any:
        if self._web is None:
            from slack_sdk.web.async_client import AsyncWebClient

            self._web = AsyncWebClient(token=self._secrets[0], base_url=self._base, timeout=max(1, int(self._timeout)))
        return self._web

    async def _call(self, method: str, **kw: Any) -> Any:
        """Web API ``method`` (slack_sdk's method name, e.g. ``chat_postMessage``) with ``kw``."""
        import aiohttp
        from slack_sdk.errors import SlackApiError, SlackClientError

        try:
            return await getattr(self._client(), method)(**{k: v for k, v in kw.items() if v is not None})
        except SlackApiError as e:
            status = getattr(e.response, "status_code", 200)
            error = e.response.get("error") if e.response is not None else None
            if status == 429 or status >= 500 or error in ("ratelimited", "service_unavailable"):
                raise ChatUnreachable(f"slack: {error or status}") from None
            raise ChatRefused(f"slack refused it: {error or self._scrub(e)}") from None
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, SlackClientError) as e:
            raise ChatUnreachable(self._scrub(e)) from None

    # --- posting ------------------------------------------------------------------------
    async def post(self, post: Post, data: list[str]) -> tuple[str, int]:
        post = threaded(post)
        r = await self._call("chat_postMessage", channel=self.chat_id, text=escape(post.text), blocks=blocks(post, data),
                             mrkdwn=False, unfurl_links=False, unfurl_media=False)
        return str(r["channel"]), ts_id(r["ts"])

    async def edit(self, chat_id: str, message_id: int, post: Post, data: list[str]) -> None:
        post = threaded(post)
        await self._call("chat_update", channel=chat_id, ts=ts_of(message_id), text=escape(post.text),
                         blocks=blocks(post, data))

    async def remind(self, chat_id: str, message_id: int, text: str) -> None:
        await self._call("chat_postMessage", channel=chat_id, thread_ts=ts_of(message_id), text=escape(text),
                         mrkdwn=False, unfurl_links=False, unfurl_media=False)

    async def send_text(self, text: str) -> None:
        """Post a plain message (``hookd notify test``)."""
        await self._call("chat_postMessage", channel=self.chat_id, text=escape(text), mrkdwn=False,
                         unfurl_links=False, unfurl_media=False)

    async def reply(self, inc: Incoming, text: str) -> None:
        envelope = self._slash.pop(inc.update_id, None)
        if envelope is not None and envelope in self._unacked:
            await self._ack(envelope, {"text": escape(text), "response_type": "ephemeral"})
            return
        await self._call("chat_postEphemeral", channel=inc.chat_id, user=str(inc.user_id), text=escape(text),
                         thread_ts=ts_of(inc.reply_to) if inc.reply_to else None)

    # --- the socket -----------------------------------------------------------------------
    async def _connect(self) -> None:
        """Open the websocket (``apps.connections.open``, then the URL it gives) if it is not
        open. Raises ChatUnreachable or ChatRefused."""
        from slack_sdk.errors import SlackApiError
        from slack_sdk.socket_mode.aiohttp import SocketModeClient
        from slack_sdk.web.async_client import AsyncWebClient

        if self._socket is not None and await self._socket.is_connected():
            return
        if self._bot_user is None:
            self._bot_user = str((await self._call("auth_test")).get("user_id") or "")
        if self._socket is None:
            web = AsyncWebClient(base_url=self._base, timeout=max(1, int(self._timeout)))
            self._socket = SocketModeClient(app_token=self._secrets[1], web_client=web, auto_reconnect_enabled=False)
            self._socket.socket_mode_request_listeners.append(self._received)
        try:
            self._socket.wss_uri = await self._socket.issue_new_wss_url()
            await asyncio.wait_for(self._socket.connect(), self._timeout)
        except SlackApiError as e:
            error = e.response.get("error") if e.response is not None else None
            if getattr(e.response, "status_code", 200) >= 429:
                raise ChatUnreachable(f"slack: {error}") from None
            raise ChatRefused(f"slack refused the app-level token's connection: {error}") from None
        except Exception as e:  # noqa: BLE001 - aiohttp's, the timeout's: the network
            raise ChatUnreachable(self._scrub(e)) from None
        log.info("chat channel %s: Socket Mode connected", self.name)

    async def _received(self, _client: Any, req: Any) -> None:
        await self._queue.put(req)

    async def _ack(self, envelope: str, payload: dict[str, Any] | None = None) -> None:
        if envelope in self._unacked:
            self._unacked.remove(envelope)
        try:
            await self._socket.send_socket_mode_response({"envelope_id": envelope, **({"payload": payload} if payload else {})})
        except Exception as e:  # noqa: BLE001 - the socket is gone: Slack delivers it again (handled once)
            log.warning("chat channel %s: could not acknowledge envelope %s: %s", self.name, envelope, self._scrub(e))

    async def updates(self, offset: int) -> list[Incoming]:
        """The envelopes Slack sent (waits up to ``poll_s`` for one; ``offset`` is not used:
        Slack delivers again what was not acknowledged)."""
        for envelope in list(self._unacked):
            await self._ack(envelope)
        await self._connect()
        try:
            got = [await asyncio.wait_for(self._queue.get(), self.poll_s)]
        except asyncio.TimeoutError:
            return []
        while not self._queue.empty():
            got.append(self._queue.get_nowait())
        out: list[Incoming] = []
        for req in got:
            inc = self._incoming(req)
            if inc is None:
                await self._ack(req.envelope_id)
                continue
            self._unacked.append(req.envelope_id)
            if inc.user_id not in self.allow and inc.callback_id is None:  # (a press: the relay answers it)
                await self._tell_stranger(inc)
            out.append(inc)
        return out

    async def _tell_stranger(self, inc: Incoming) -> None:
        try:
            await self.reply(inc, NOT_ALLOWED)
        except (ChatUnreachable, HookdError) as e:
            log.warning("chat channel %s: could not tell user %s: %s", self.name, inc.user_id, e)

    def _incoming(self, req: Any) -> Incoming | None:
        """An envelope as the relay's update (None: nothing for it)."""
        p: dict[str, Any] = req.payload if isinstance(req.payload, dict) else {}
        if req.type == "interactive" and p.get("type") == "block_actions":
            action = (p.get("actions") or [{}])[0]
            user = (p.get("user") or {}).get("id")
            box = p.get("container") or {}
            ts = box.get("message_ts") or (p.get("message") or {}).get("ts")
            if not user:
                return None
            key = f"action:{user}:{action.get('action_ts') or req.envelope_id}:{action.get('action_id')}"
            return Incoming(update_id=update_id(key), user_id=str(user), user=(p.get("user") or {}).get("username"),
                            chat_id=str(box.get("channel_id") or (p.get("channel") or {}).get("id") or self.chat_id),
                            message_id=ts_id(ts) if ts else None, data=str(action.get("value") or action.get("action_id") or ""),
                            callback_id=str(p.get("trigger_id") or req.envelope_id))
        if req.type == "slash_commands":
            cmd, text = str(p.get("command") or ""), unescape(str(p.get("text") or "")).strip()
            line = f"{cmd} {text}".strip() if cmd in ("/send", "/lanes") else "/" + text
            n = update_id(f"command:{p.get('trigger_id') or req.envelope_id}")
            self._slash[n] = req.envelope_id
            return Incoming(update_id=n, user_id=str(p.get("user_id") or ""), user=p.get("user_name"),
                            chat_id=str(p.get("channel_id") or self.chat_id), text=line)
        if req.type == "events_api":
            ev = p.get("event") or {}
            thread = ev.get("thread_ts")
            if (ev.get("type") != "message" or ev.get("subtype") or ev.get("bot_id") or not ev.get("user")
                    or not thread or thread == ev.get("ts") or ev.get("channel") != self.chat_id
                    or (self._bot_user and ev.get("parent_user_id") not in (None, self._bot_user))):
                return None  # (only replies in the threads of hookd's posts)
            return Incoming(update_id=update_id(f"event:{p.get('event_id') or req.envelope_id}"), user_id=str(ev["user"]),
                            chat_id=str(ev["channel"]), message_id=ts_id(ev["ts"]), text=unescape(str(ev.get("text") or "")),
                            reply_to=ts_id(thread))
        return None

    async def close(self) -> None:
        socket, self._socket = self._socket, None
        web, self._web = self._web, None
        for closing in ((socket.close() if socket is not None else None),
                        (web.session.close() if web is not None and web.session is not None else None)):
            if closing is not None:
                try:
                    await closing
                except Exception:  # noqa: BLE001
                    pass
