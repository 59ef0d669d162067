#!/usr/bin/env python3
"""Answer from your phone: a chat service's button press to the held hook's exit (budget: p50
and p99 <= 100 ms on the fake's loopback).

    python bench/chat.py --channel telegram|slack [--runs 50] [--json]

Starts the channel's loopback fake (telegram: tests/fake_telegram.py, the Bot API; slack:
tests/fake_slack.py, the Web API and Socket Mode), a real daemon in a temp home with that
channel on it (``question_after_s = 0``) and a spawned builder.
Per run: its generated PreToolUse hook records a fresh AskUserQuestion call, its generated
PermissionRequest hook is started as Claude Code starts it and held; once the question's post
has buttons for its current revision (slack: and the daemon's websocket is open), measured:
from the press (telegram: the update made available to the daemon's long poll; slack: the
envelope sent on the fake's websocket) to the held hook's exit with the decision on its stdout.
Exit 1 if p50 or p99 exceeds 100 ms. ``--json``: ``channel``, ``runs``, ``p50_ms``, ``p99_ms``,
``max_ms``, ``budget_ms``, ``ok``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))

from hookd.daemonproc import DaemonProcess, wait_until  # noqa: E402

sys.path.insert(0, os.fspath(REPO / "bench"))
from answer import armed_builder, held_prompt, released  # noqa: E402

BUDGET_MS = 100.0


class Telegram:
    """tests/fake_telegram.py as this bench uses it: a post is its message id."""

    user = 7

    def __init__(self) -> None:
        from tests.fake_telegram import TOKEN, FakeTelegram

        self.fake = FakeTelegram()
        self.config = (f'[notify]\nquestion_after_s = 0\n[[notify.channel]]\ntype = "telegram"\ntoken = "{TOKEN}"\n'
                       f'chat_id = "{self.fake.chat_id}"\nallow = [{self.user}]\nbase_url = "{self.fake.base_url}"\n')

    def posts(self) -> list[Any]:
        """The bot's posts, oldest first (none until the daemon can be pressed at)."""
        return [m["message_id"] for m in self.fake.sent_to_chat()]

    def buttons(self, post: Any) -> dict[str, str]:
        return dict(self.fake.buttons(post))

    def press(self, post: Any, data: str) -> None:
        self.fake.press(self.user, post, data)

    def close(self) -> None:
        self.fake.stop()


class Slack:
    """tests/fake_slack.py as this bench uses it: a post is its ``ts``."""

    user = "UBENCH"

    def __init__(self) -> None:
        from tests.fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack

        self.fake = FakeSlack()
        self.config = (f'[notify]\nquestion_after_s = 0\n[[notify.channel]]\ntype = "slack"\ntoken = "{BOT_TOKEN}"\n'
                       f'app_token = "{APP_TOKEN}"\nchat_id = "{self.fake.channel}"\nallow = ["{self.user}"]\n'
                       f'base_url = "{self.fake.base_url}"\n')

    def posts(self) -> list[Any]:
        """The bot's posts, oldest first; none while the daemon's websocket is not open (a
        press goes on it)."""
        return [m["ts"] for m in self.fake.posts()] if self.fake.connections else []

    def buttons(self, post: Any) -> dict[str, str]:
        return dict(self.fake.buttons(post))

    def press(self, post: Any, data: str) -> None:
        self.fake.press(self.user, post, data)

    def close(self) -> None:
        self.fake.close()


CHANNELS: dict[str, type[Telegram] | type[Slack]] = {"telegram": Telegram, "slack": Slack}


def measure(chat: Telegram | Slack, runs: int) -> list[float]:
    """``runs`` presses' times (seconds) against a daemon with ``chat``'s channel on it."""
    tmp = Path(tempfile.mkdtemp(prefix="hookd-bench-chat-"))
    home = tmp / "home"
    home.mkdir()
    (home / "config.toml").write_text(chat.config)
    daemon = DaemonProcess(home)
    samples: list[float] = []
    try:
        daemon.start()
        wt, pre_cmd, perm_cmd = armed_builder(daemon, tmp)
        client = daemon.client()
        for i in range(runs):
            tid, p = held_prompt(client, wt, pre_cmd, perm_cmd, i)
            rev = client.get(f"/v1/interactions/{tid}")["revision"]

            def ready() -> tuple[Any, str] | None:
                for post in chat.posts():
                    b = chat.buttons(post)
                    if "Blue" in b and b["Blue"].split(":")[2] == str(rev):
                        return post, b["Blue"]
                return None
            post, data = wait_until(ready, 10, 0.002, "the post with buttons for the current revision")
            t0 = time.perf_counter()
            chat.press(post, data)
            released(p, i)
            samples.append(time.perf_counter() - t0)
            wait_until(lambda: not chat.buttons(post), 10, 0.002, "the post ended")
        client.close()
    finally:
        daemon.stop()
        chat.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return samples


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--channel", required=True, choices=sorted(CHANNELS))
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    s = sorted(measure(CHANNELS[args.channel](), args.runs))
    res: dict[str, Any] = {"channel": args.channel, "runs": len(s), "p50_ms": statistics.median(s) * 1e3,
                           "p99_ms": s[min(len(s) - 1, int(0.99 * len(s)))] * 1e3, "max_ms": s[-1] * 1e3,
                           "budget_ms": BUDGET_MS}
    res["ok"] = res["p50_ms"] <= BUDGET_MS and res["p99_ms"] <= BUDGET_MS
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"{args.channel} press -> held PermissionRequest hook released: p50 {res['p50_ms']:.1f} ms,"
              f" p99 {res['p99_ms']:.1f} ms, max {res['max_ms']:.1f} ms over {res['runs']} runs"
              f" (budget p50, p99 <= {BUDGET_MS:.0f} ms): {'ok' if res['ok'] else 'FAIL'}")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
