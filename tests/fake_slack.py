"""A loopback fake of Slack's Web API and Socket Mode, enough for slack_sdk's AsyncWebClient
and its aiohttp Socket Mode client: ``auth.test``, ``apps.connections.open`` (the app-level
token; it gives the ws:// URL of the fake's websocket), ``chat.postMessage``, ``chat.update``
and ``chat.postEphemeral`` (the bot token) at ``/api/<method>``, and the websocket at
``/link/``: ``hello`` on connect, then the envelopes the test makes (:meth:`FakeSlack.press`,
:meth:`reply`, :meth:`command`), each sent again on the next connection until it is
acknowledged (as Slack retries). Every Web API call is logged (:attr:`FakeSlack.calls`), every
acknowledgement too (:attr:`acks`). Messages are held to Block Kit's limits (:func:`invalid`:
Slack answers ``invalid_blocks``), and a user's text reaches hookd as Slack sends it
(:func:`as_slack_sends`: ``& < >`` escaped, links and addresses in angle brackets). :meth:`stop` and :meth:`start` take it off the network and
bring it back on the same port (a network loss: the websocket cut, connections refused).

It runs an aiohttp server on a loop of its own, in a thread. Run as a script (``python
tests/fake_slack.py``), it is a Slack to try hookd's channel by hand: tests/chat_by_hand.py."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from aiohttp import WSMsgType, web

if not __package__:  # (run as a file: python tests/fake_slack.py)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BOT_TOKEN = "xoxb-1-test-bot-token-never-logged"
APP_TOKEN = "xapp-1-A1-test-app-token-never-logged"
BOT_USER = "UHOOKDBOT"
CHANNEL = "C0HOOKD"
_JSON_KEYS = {"blocks", "attachments"}
#: Block Kit's limits (api.slack.com/reference/block-kit): blocks in a message, elements in an
#: actions block, a button's label, value and action id, a section's text.
MAX_BLOCKS, MAX_ELEMENTS, MAX_LABEL, MAX_VALUE, MAX_ACTION_ID, MAX_SECTION = 50, 25, 75, 2000, 255, 3000


def invalid(blocks: list[dict[str, Any]]) -> str | None:
    """Why Slack would refuse ``blocks`` (None: it would not)."""
    if len(blocks) > MAX_BLOCKS:
        return f"{len(blocks)} blocks (at most {MAX_BLOCKS})"
    for b in blocks:
        if b["type"] == "section" and not 0 < len(b["text"]["text"]) <= MAX_SECTION:
            return f"a section's text of {len(b['text']['text'])} characters"
        if b["type"] == "actions":
            es = b["elements"]
            ids = [e["action_id"] for e in es]
            if not 0 < len(es) <= MAX_ELEMENTS:
                return f"an actions block with {len(es)} elements (at most {MAX_ELEMENTS})"
            if len(set(ids)) != len(ids):
                return f"action ids not unique in their block: {ids}"
            for e in es:
                if not 0 < len(e["text"]["text"]) <= MAX_LABEL or len(e.get("value", "")) > MAX_VALUE \
                        or len(e["action_id"]) > MAX_ACTION_ID:
                    return f"a button out of bounds: {e}"
    return None


def as_slack_sends(text: str) -> str:
    """``text`` as typed, the way a message event carries it: ``& < >`` escaped, an address
    as ``<mailto:A|A>``, a web address as ``<URL>``."""
    def esc(x: str) -> str:
        return x.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def link(m: re.Match[str]) -> str:
        return f"<{esc(m[0])}>" if m[1] else f"<mailto:{m[0]}|{m[0]}>"

    out, at = [], 0
    for m in _LINK.finditer(text):
        out += [esc(text[at:m.start()]), link(m)]
        at = m.end()
    return "".join([*out, esc(text[at:])])


_LINK = re.compile(r"(https?://[^\s<>]+)|(?<![\w/.])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


class FakeSlack:
    def __init__(self, channel: str = CHANNEL, port: int = 0) -> None:
        self.channel = channel
        self.calls: list[dict[str, Any]] = []  # {"method", "params", "at"}
        self.messages: dict[str, dict[str, Any]] = {}  # ts -> the message as posted (edits applied)
        self.acks: list[dict[str, Any]] = []  # the acknowledgements received, in order
        self._told: list[str] = []  # what the bot told single users, in the order it told it
        self.connections = 0
        self._unacked: dict[str, dict[str, Any]] = {}  # envelope id -> envelope (sent again on connect)
        self._sockets: list[tuple[web.WebSocketResponse, web.Request]] = []
        self._n = itertools.count(1)
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.port = port
        self.up = False
        self._runner: web.AppRunner | None = None
        self.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    # --- the network ----------------------------------------------------------------------
    def start(self) -> None:
        self._run(self._start())

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/link/", self._link)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self.up = True

    def stop(self) -> None:
        """Off the network: the websockets cut (no close frame), the listening socket closed."""
        self._run(self._stop())

    async def _stop(self) -> None:
        self.up = False
        for _ws, req in list(self._sockets):
            if req.transport is not None:
                req.transport.abort()
        assert self._runner is not None
        await self._runner.cleanup()

    def close(self) -> None:
        if self.up:
            self.stop()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self.loop.close()

    # --- the Web API ----------------------------------------------------------------------
    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        raw = await request.read()
        if request.content_type == "application/json":
            params = json.loads(raw or b"{}")
        else:
            params = {k: (json.loads(v[0]) if k in _JSON_KEYS else v[0])
                      for k, v in parse_qs(raw.decode(), keep_blank_values=True).items()}
        auth = request.headers.get("authorization", "")
        want = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        with self.lock:
            self.calls.append({"method": method, "params": params, "at": time.time()})
            if method == "chat.postEphemeral" and isinstance(params.get("text"), str):
                self._told.append(params["text"])
        if auth != f"Bearer {want}":
            return web.json_response({"ok": False, "error": "invalid_auth"})
        return web.json_response(self._call(method, params))

    def _call(self, method: str, p: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            if method == "auth.test":
                return {"ok": True, "user_id": BOT_USER, "bot_id": "BHOOKD", "team_id": "T1", "user": "hookd"}
            if method == "apps.connections.open":
                return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket=t{next(self._n)}"}
            bad = invalid(p.get("blocks") or []) if method in ("chat.postMessage", "chat.update") else None
            if bad is not None:
                return {"ok": False, "error": "invalid_blocks", "errors": [bad]}
            if method == "chat.postMessage":
                n = next(self._n)
                ts = f"{1700000000 + n}.{n:06d}"
                m = {"ts": ts, "channel": p["channel"], "user": BOT_USER, "bot_id": "BHOOKD", "text": p.get("text", ""),
                     "blocks": p.get("blocks") or [], **({"thread_ts": p["thread_ts"]} if p.get("thread_ts") else {})}
                self.messages[ts] = m
                return {"ok": True, "channel": p["channel"], "ts": ts, "message": m}
            if method == "chat.update":
                m = self.messages.get(p.get("ts", ""))
                if m is None or m["channel"] != p.get("channel"):
                    return {"ok": False, "error": "message_not_found"}
                m.update(text=p.get("text", ""), blocks=p.get("blocks") or [], edited=True)
                return {"ok": True, "channel": m["channel"], "ts": m["ts"], "text": m["text"]}
            if method == "chat.postEphemeral":
                return {"ok": True, "message_ts": f"{time.time():.6f}"}
        return {"ok": False, "error": "unknown_method"}

    # --- Socket Mode ----------------------------------------------------------------------
    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1, "debug_info": {"host": "fake"},
                                      "connection_info": {"app_id": "A1"}}))
        with self.lock:
            self.connections += 1
            self._sockets.append((ws, request))
            again = list(self._unacked.values())
        for env in again:
            await ws.send_str(json.dumps(env))
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    doc = json.loads(msg.data)
                    with self.lock:
                        self.acks.append(doc)
                        if isinstance(doc.get("payload"), dict) and "text" in doc["payload"]:
                            self._told.append(doc["payload"]["text"])
                        self._unacked.pop(doc.get("envelope_id"), None)
        finally:
            with self.lock:
                self._sockets = [s for s in self._sockets if s[0] is not ws]
        return ws

    async def _send(self, env: dict[str, Any]) -> None:
        with self.lock:
            self._unacked[env["envelope_id"]] = env
            live = [ws for ws, _ in self._sockets if not ws.closed]
        for ws in live[-1:]:
            try:
                await ws.send_str(json.dumps(env))
            except ConnectionError:
                pass

    def push(self, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Send an envelope (now, or on the next connection); returns it."""
        env = {"envelope_id": f"env-{next(self._n)}", "type": type_, "payload": payload,
               "accepts_response_payload": type_ != "events_api", "retry_attempt": 0, "retry_reason": ""}
        self._run(self._send(env))
        return env

    def refresh(self) -> None:
        """Ask the client to reconnect (Slack's ``disconnect`` message, as it sends before it
        retires a connection)."""
        async def say() -> None:
            with self.lock:
                live = [ws for ws, _ in self._sockets if not ws.closed]
            for ws in live:
                await ws.send_str(json.dumps({"type": "disconnect", "reason": "refresh_requested",
                                              "debug_info": {"host": "fake"}}))
        self._run(say())

    def redeliver(self, env: dict[str, Any]) -> None:
        """Send ``env`` again (Slack retrying a delivery)."""
        self._run(self._send({**env, "retry_attempt": int(env.get("retry_attempt") or 0) + 1, "retry_reason": "timeout"}))

    def press(self, user: str, ts: str, value: str) -> dict[str, Any]:
        """User ``user`` presses the button with ``value`` on message ``ts``."""
        n = next(self._n)
        with self.lock:
            m = dict(self.messages[ts])
        action_id = next((e["action_id"] for b in m["blocks"] if b["type"] == "actions" for e in b["elements"]
                          if e.get("value") == value), value)
        return self.push("interactive", {
            "type": "block_actions", "user": {"id": user, "username": f"user-{user}", "team_id": "T1"},
            "api_app_id": "A1", "trigger_id": f"trig-{n}", "team": {"id": "T1"},
            "container": {"type": "message", "message_ts": ts, "channel_id": m["channel"], "is_ephemeral": False},
            "channel": {"id": m["channel"], "name": "hookd"}, "message": m,
            "actions": [{"type": "button", "action_id": action_id, "value": value, "block_id": "b",
                         "action_ts": f"{time.time():.6f}{n}"}]})

    def reply(self, user: str, ts: str, text: str, parent_user: str = BOT_USER) -> dict[str, Any]:
        """User ``user`` replies ``text`` (as typed: :func:`as_slack_sends`) in the thread of
        message ``ts``."""
        n = next(self._n)
        return self.push("events_api", {
            "type": "event_callback", "event_id": f"Ev{n}", "event_time": int(time.time()), "team_id": "T1",
            "api_app_id": "A1", "event": {"type": "message", "channel": self.channel, "user": user,
                                          "text": as_slack_sends(text),
                                          "ts": f"{1800000000 + n}.{n:06d}", "thread_ts": ts,
                                          "parent_user_id": parent_user, "channel_type": "channel"}})

    def command(self, user: str, text: str, command: str = "/hookd") -> dict[str, Any]:
        """User ``user`` types the slash command ``command text``."""
        n = next(self._n)
        return self.push("slash_commands", {
            "command": command, "text": text, "user_id": user, "user_name": f"user-{user}", "channel_id": self.channel,
            "team_id": "T1", "trigger_id": f"trig-{n}", "response_url": f"http://127.0.0.1:{self.port}/unused"})

    # --- reading ----------------------------------------------------------------------------
    def of(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [c["params"] for c in self.calls if c["method"] == method]

    def text(self, ts: str) -> str:
        """The message's text as shown (its sections' plain text)."""
        with self.lock:
            blocks = self.messages[ts]["blocks"]
        return "".join(b["text"]["text"] for b in blocks if b["type"] == "section")

    def buttons(self, ts: str) -> list[tuple[str, str]]:
        """(label, value) of each button of the message as it now is."""
        with self.lock:
            blocks = self.messages[ts]["blocks"]
        return [(e["text"]["text"], e["value"]) for b in blocks if b["type"] == "actions" for e in b["elements"]]

    def posts(self) -> list[dict[str, Any]]:
        """The bot's messages, oldest first."""
        with self.lock:
            return list(self.messages.values())

    def replies(self) -> list[str]:
        """What the bot told single users, oldest first: its ephemeral messages and its
        acknowledgements' texts (a slash command's reply), in the order they came (a terminal
        shows the new ones by their count: tests/chat_by_hand.py)."""
        with self.lock:
            return list(self._told)

    def acked(self, env: dict[str, Any]) -> int:
        """How many acknowledgements ``env`` got."""
        with self.lock:
            return sum(1 for a in self.acks if a.get("envelope_id") == env["envelope_id"])


def main(argv: list[str] | None = None) -> int:
    """``python tests/fake_slack.py [--port N] [--user ID]``: tests/chat_by_hand.py."""
    import argparse

    from tests.chat_by_hand import ByHand

    ap = argparse.ArgumentParser(prog="python tests/fake_slack.py",
                                 description="A fake Slack to answer hookd's posts by hand "
                                             "(docs/testing.md \"Trying the chat channels by hand\").")
    ap.add_argument("--port", type=int, default=0, help="listen on this port of 127.0.0.1 (default: a free one)")
    ap.add_argument("--user", default="UHAND", help="your member id (the channel's allow)")
    args = ap.parse_args(argv)
    fake = FakeSlack(port=args.port)

    def view() -> dict[Any, tuple[str, list[tuple[str, str]]]]:
        shown: dict[Any, tuple[str, list[tuple[str, str]]]] = {}
        for m in fake.posts():
            text = fake.text(m["ts"]) if m["blocks"] else m["text"]
            if m.get("thread_ts") in shown:  # (a reply in a post's thread: a reminder)
                text = f"(in the thread of #{list(shown).index(m['thread_ts']) + 1}) {text}"
            shown[m["ts"]] = (text, fake.buttons(m["ts"]))
        return shown

    def say(text: str) -> Any:
        word, _, rest = text.partition(" ")
        return fake.command(args.user, rest, command=word) if word.startswith("/") else None

    return ByHand(view=view, told=fake.replies, press=lambda ts, v: fake.press(args.user, ts, v),
                  reply=lambda ts, t: fake.reply(args.user, ts, t), say=say, stop=fake.close).run(f"""
[notify]
question_after_s = 0
[[notify.channel]]
type = "slack"
name = "team"
token = "{BOT_TOKEN}"
app_token = "{APP_TOKEN}"
chat_id = "{fake.channel}"
allow = ["{args.user}"]
base_url = "{fake.base_url}"
""")


if __name__ == "__main__":
    raise SystemExit(main())
