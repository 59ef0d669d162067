"""A loopback fake of the Telegram Bot API, enough for python-telegram-bot's ``Bot``:
``getMe``, ``getUpdates`` (long polling from an offset), ``sendMessage``,
``editMessageText`` and ``answerCallbackQuery``, at ``/bot<token>/<method>``. Every call is
logged (:attr:`FakeTelegram.calls`); updates are made by the test (:meth:`press`,
:meth:`reply`, :meth:`say`); :meth:`stop` and :meth:`start` take it off the network and
bring it back on the same port (a network loss: connections refused, a long poll cut).

Run as a script (``python tests/fake_telegram.py``), it is a Telegram to try hookd's channel
by hand: tests/chat_by_hand.py."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

if not __package__:  # (run as a file: python tests/fake_telegram.py)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TOKEN = "123456:TEST-token-never-logged"
BOT = {"id": 123456, "is_bot": True, "first_name": "hookd", "username": "hookd_test_bot"}
_JSON_KEYS = {"reply_markup", "allowed_updates", "reply_parameters"}
_INT_KEYS = {"offset", "timeout", "limit", "message_id", "reply_to_message_id"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-request (hookd stopped during a long poll): nothing to report;
        anything else as the standard server reports it (a traceback on stderr)."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class FakeTelegram:
    """first_update: the first update's id (the next ones count up from it); Telegram's own
    only grow, and hookd resumes after the newest it handled: a fake run again for the same
    home starts above the last run's (:func:`main`: from the time)."""

    def __init__(self, chat_id: int = 4242, port: int = 0, first_update: int = 100) -> None:
        self.chat_id = chat_id
        self.calls: list[dict[str, Any]] = []  # {"method", "params", "at"}
        self.messages: dict[int, dict[str, Any]] = {}  # message_id -> the message as sent (edits applied)
        self.updates: list[dict[str, Any]] = []
        self._forced: list[dict[str, Any]] = []  # delivered again whatever the offset (a retried delivery)
        self._next_update = first_update
        self._next_message = 1
        self.cond = threading.Condition()
        self.port = port
        self.server: _Server | None = None
        self.up = False
        self.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    # --- the network ----------------------------------------------------------------------
    def start(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                prefix = f"/bot{TOKEN}/"
                if not self.path.startswith(prefix):
                    return self._send(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
                method = self.path[len(prefix):]
                params = outer._params(self.headers.get("content-type", ""), body)
                with outer.cond:
                    outer.calls.append({"method": method, "params": params, "at": time.time()})
                    outer.cond.notify_all()
                result = outer._call(method, params)
                if result is _CUT:
                    self.close_connection = True
                    return None
                self._send(200, {"ok": True, "result": result})
                return None

            def _send(self, status: int, doc: Any) -> None:
                raw = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *a: Any) -> None:
                pass

        self.server = _Server(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        self.up = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Off the network: the listening socket closed, a long poll in flight cut."""
        with self.cond:
            self.up = False
            self.cond.notify_all()
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    # --- the API --------------------------------------------------------------------------
    @staticmethod
    def _params(ctype: str, body: bytes) -> dict[str, Any]:
        if ctype.startswith("application/json"):
            return json.loads(body or b"{}")
        out: dict[str, Any] = {}
        for k, v in parse_qs(body.decode(), keep_blank_values=True).items():
            out[k] = json.loads(v[0]) if k in _JSON_KEYS else int(v[0]) if k in _INT_KEYS else v[0]
        return out

    def _message(self, text: str, reply_markup: Any = None, user: dict[str, Any] | None = None,
                 reply_to: int | None = None) -> dict[str, Any]:
        m: dict[str, Any] = {"message_id": self._next_message, "date": int(time.time()), "text": text,
                             "chat": {"id": self.chat_id, "type": "private"}, "from": user or BOT}
        if reply_markup:
            m["reply_markup"] = reply_markup
        if reply_to is not None and reply_to in self.messages:
            m["reply_to_message"] = self.messages[reply_to]
        self._next_message += 1
        return m

    def _call(self, method: str, p: dict[str, Any]) -> Any:
        with self.cond:
            if method == "getMe":
                return BOT
            if method == "sendMessage":
                to = (p.get("reply_parameters") or {}).get("message_id", p.get("reply_to_message_id"))
                m = self._message(p["text"], p.get("reply_markup"), reply_to=to)
                self.messages[m["message_id"]] = m
                return m
            if method == "editMessageText":
                m = self.messages[int(p["message_id"])]
                m["text"] = p["text"]
                if p.get("reply_markup"):
                    m["reply_markup"] = p["reply_markup"]
                else:
                    m.pop("reply_markup", None)
                m["edit_date"] = int(time.time())
                return m
            if method == "answerCallbackQuery":
                return True
            if method == "getUpdates":
                deadline = time.monotonic() + min(float(p.get("timeout", 0)), 5.0)
                while True:
                    if not self.up:
                        return _CUT
                    got = self._forced + [u for u in self.updates if u["update_id"] >= int(p.get("offset", 0))]
                    if got or time.monotonic() >= deadline:
                        self._forced = []
                        return got
                    self.cond.wait(deadline - time.monotonic())
            raise AssertionError(f"the fake does not know {method}")

    # --- the test's side --------------------------------------------------------------------
    def _push(self, update: dict[str, Any]) -> dict[str, Any]:
        with self.cond:
            update["update_id"] = self._next_update
            self._next_update += 1
            self.updates.append(update)
            self.cond.notify_all()
        return update

    def redeliver(self, update: dict[str, Any]) -> None:
        """Deliver ``update`` again, whatever offset the bot asks from (a retried delivery)."""
        with self.cond:
            self._forced.append(update)
            self.cond.notify_all()

    @staticmethod
    def user(uid: int) -> dict[str, Any]:
        return {"id": uid, "is_bot": False, "first_name": f"user{uid}", "username": f"user{uid}"}

    def press(self, uid: int, message_id: int, data: str) -> dict[str, Any]:
        """User ``uid`` presses the button with callback ``data`` on message ``message_id``."""
        with self.cond:
            msg = dict(self.messages[message_id])
        return self._push({"callback_query": {"id": f"cq{self._next_update}", "from": self.user(uid),
                                              "chat_instance": "ci", "data": data, "message": msg}})

    def reply(self, uid: int, message_id: int, text: str) -> dict[str, Any]:
        with self.cond:
            m = self._message(text, user=self.user(uid), reply_to=message_id)
        return self._push({"message": m})

    def say(self, uid: int, text: str) -> dict[str, Any]:
        with self.cond:
            m = self._message(text, user=self.user(uid))
        return self._push({"message": m})

    # --- reading ----------------------------------------------------------------------------
    def of(self, method: str) -> list[dict[str, Any]]:
        with self.cond:
            return [c["params"] for c in self.calls if c["method"] == method]

    def buttons(self, message_id: int) -> list[tuple[str, str]]:
        """(label, callback data) of each button of the message as it now is."""
        with self.cond:
            rows = self.messages[message_id].get("reply_markup", {}).get("inline_keyboard", [])
        return [(b["text"], b["callback_data"]) for row in rows for b in row]

    def replies(self) -> list[str]:
        """What the bot told the users: its toasts on pressed buttons, then its replies."""
        with self.cond:
            return [c["params"]["text"] for c in self.calls if c["method"] == "answerCallbackQuery"] + [
                c["params"]["text"] for c in self.calls if c["method"] == "sendMessage"
                and (c["params"].get("reply_parameters") or c["params"].get("reply_to_message_id"))]

    def sent_to_chat(self) -> list[dict[str, Any]]:
        """The bot's messages (not the test users'), oldest first."""
        with self.cond:
            return [m for m in self.messages.values() if m["from"] is BOT]


_CUT = object()


def main(argv: list[str] | None = None) -> int:
    """``python tests/fake_telegram.py [--port N] [--user ID]``: tests/chat_by_hand.py."""
    import argparse

    from tests.chat_by_hand import ByHand

    ap = argparse.ArgumentParser(prog="python tests/fake_telegram.py",
                                 description="A fake Telegram to answer hookd's posts by hand "
                                             "(docs/testing.md \"Trying the chat channels by hand\").")
    ap.add_argument("--port", type=int, default=0, help="listen on this port of 127.0.0.1 (default: a free one)")
    ap.add_argument("--user", type=int, default=1001, help="your user id (the channel's allow)")
    ap.add_argument("--first-update", type=int, default=None,
                    help="the first update's id (default: the time in milliseconds, above any earlier run's, "
                         "which hookd resumes after)")
    args = ap.parse_args(argv)
    first = args.first_update if args.first_update is not None else int(time.time() * 1000)
    fake = FakeTelegram(port=args.port, first_update=first)

    def view() -> dict[Any, tuple[str, list[tuple[str, str]]]]:
        shown: dict[Any, tuple[str, list[tuple[str, str]]]] = {}
        for m in fake.sent_to_chat():
            to = (m.get("reply_to_message") or {}).get("message_id")
            text = (f"(in reply to #{list(shown).index(to) + 1}) " if to in shown else "") + str(m["text"])
            shown[m["message_id"]] = (text, fake.buttons(m["message_id"]))
        return shown

    def told() -> list[str]:  # (the toasts: a reply to a message is a message of its own)
        return [c["text"] for c in fake.of("answerCallbackQuery") if c.get("text")]

    return ByHand(view=view, told=told, press=lambda i, v: fake.press(args.user, i, v),
                  reply=lambda i, t: fake.reply(args.user, i, t), say=lambda t: fake.say(args.user, t),
                  stop=fake.stop).run(f"""
[notify]
question_after_s = 0
[[notify.channel]]
type = "telegram"
name = "phone"
token = "{TOKEN}"
chat_id = "{fake.chat_id}"
allow = [{args.user}]
base_url = "{fake.base_url}"
""")


if __name__ == "__main__":
    raise SystemExit(main())
