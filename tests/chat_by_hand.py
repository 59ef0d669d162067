"""Trying the chat channels by hand (docs/testing.md "Trying the chat channels by hand"): a
loopback fake (tests/fake_telegram.py, tests/fake_slack.py) run as a script prints the
``[[notify.channel]]`` table that points hookd at it, then shows each message the bot posts
or edits (its text, its buttons numbered) and what it tells the user, and reads what the
user does from stdin:

- ``p N K``: press button K of message #N;
- ``r N TEXT``: reply to message #N (Slack: in its thread);
- ``s TEXT``: say TEXT in the chat (``/send b1 hi``, ``/lanes``; Slack: ``/hookd lanes``);
- ``q`` (or end of input, Ctrl-C, SIGTERM): stop the fake.

Messages are numbered #1, #2, ... in the order they were posted (the fake's own ids stay
out of sight)."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from hookd.untrusted import visible

#: A message as shown: its text and its buttons, (label, value) each.
Shown = tuple[str, list[tuple[str, str]]]

HELP = "p N K: press button K of #N | r N TEXT: reply to #N | s TEXT: say in the chat | q: quit"


class ByHand:
    """The terminal side of one fake. view: the bot's messages now, by the fake's id, oldest
    first; told: what the bot told the user so far (grows); press(id, value), reply(id, text),
    say(text): the user's acts; stop(): the fake off."""

    def __init__(self, *, view: Callable[[], dict[Any, Shown]], told: Callable[[], list[str]],
                 press: Callable[[Any, str], Any], reply: Callable[[Any, str], Any], say: Callable[[str], Any],
                 stop: Callable[[], Any], out: Any = None) -> None:
        self.view, self.told, self.press, self.reply, self.say, self.stop = view, told, press, reply, say, stop
        self.out = out or sys.stdout
        self.ids: list[Any] = []  # #N is ids[N - 1]
        self._seen: dict[Any, Shown] = {}
        self._told = 0
        self._lock = threading.Lock()
        self._done = threading.Event()

    def _print(self, *lines: str) -> None:
        print("\n".join(lines), file=self.out, flush=True)

    def show_changes(self) -> None:
        """Print each message posted or edited since the last call, and what the bot told."""
        with self._lock:
            for mid, (text, buttons) in self.view().items():
                if self._seen.get(mid) == (text, buttons):
                    continue
                if mid not in self.ids:
                    self.ids.append(mid)
                what = "edited" if mid in self._seen else "posted"
                self._seen[mid] = (text, buttons)
                row = "  ".join(f"[{k}] {visible(label)}" for k, (label, _) in enumerate(buttons, 1))
                self._print(f"--- #{self.ids.index(mid) + 1} {what}", *(visible(x) for x in text.split("\n")),
                            *([row] if row else []))
            told = self.told()
            for t in told[self._told:]:  # (a text of several lines, /lanes': one line each)
                rows = [visible(x) for x in t.split("\n")]
                rows = [f"(hookd tells you: {rows[0]}", *(f"  {x}" for x in rows[1:])]
                rows[-1] += ")"
                self._print(*rows)
            self._told = len(told)

    def act(self, line: str) -> str | None:
        """Do what ``line`` says; what to print back (None: nothing). Raises EOFError on ``q``."""
        word, _, rest = line.strip().partition(" ")
        if word == "q":
            raise EOFError
        if word == "s" and rest:
            self.say(rest)
            return None
        n, _, arg = rest.partition(" ")
        if word not in ("p", "r") or not n.isdigit() or not 0 < int(n) <= len(self.ids) or not arg:
            return HELP
        mid = self.ids[int(n) - 1]
        if word == "r":
            self.reply(mid, arg)
            return None
        buttons = self._seen[mid][1]
        if not arg.isdigit() or not 0 < int(arg) <= len(buttons):
            return f"#{n} has buttons 1 to {len(buttons)}" if buttons else f"#{n} has no buttons"
        self.press(mid, buttons[int(arg) - 1][1])
        return None

    def run(self, config: str) -> int:
        """Print ``config``, show the messages as they come and act on stdin until ``q``,
        end of input, Ctrl-C or SIGTERM; stop the fake; 0."""
        self._print("# Add this to HOOKD_HOME/config.toml, then start hookd serve:", config.strip(), "", HELP)
        signal.signal(signal.SIGTERM, lambda *_: self._done.set())
        threading.Thread(target=self._watch, daemon=True).start()
        reader = threading.Thread(target=self._read, daemon=True)
        reader.start()
        try:
            self._done.wait()
        except KeyboardInterrupt:
            pass
        self._done.set()
        self.stop()
        return 0

    def _watch(self) -> None:
        while not self._done.wait(0.2):
            self.show_changes()

    def _read(self) -> None:
        try:
            for line in sys.stdin:
                if line.strip():
                    said = self.act(line)
                    if said:
                        self._print(said)
        except EOFError:
            pass
        self._done.set()
