"""``hookd watch``: a live terminal view for people who live in tmux: every builder's lane
(state, for how long) and what waits on a human (questions with their options, permission
prompts with their tool_view summary), redrawn when the daemon's event stream
(``GET /v1/events?follow=1``) says something changed, and answerable from the keyboard.

On a terminal it draws with Rich's ``Live`` (imported here only: ``hookd.cli.LAZY_COMMANDS``)
on the alternate screen; ``--once``, or stdout or stdin not a terminal, prints one frame as
plain text (no colour in a pipe or with ``NO_COLOR``) and exits. A frame is made of
``hookd.cli_render``'s pieces (``_interaction``, ``_duration``, ``_lane_state``), so it reads
as ``hookd lanes`` and ``hookd questions`` do.

Keys (:func:`_key`): up/down, ``j``/``k`` or a digit pick an item, Enter opens it; then
up/down or a digit pick an option (space or the digit toggles one of a multi-select), Enter
answers (a call asking several questions: each in turn, then all at once); ``deny`` asks for
the message shown to the model (Enter sends, Esc goes back); a question without options asks
for its text. Esc goes back, ``q`` quits (Ctrl-C too). An answer goes out as
``POST /v1/interactions/{id}/answer`` with the revision shown (``surface`` cli, ``actor``
--actor); a refusal is shown on the status line.
"""

from __future__ import annotations

import os
import select
import shlex
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import click

from hookd.cli_render import (
    _client, _duration, _interaction, _lane_state, _line, _lines, _options, _out, _paint, _questions, _seg, _Shown,
    _table,
)
from hookd.errors import DaemonNotRunning
from hookd.vocabulary import os_user

#: Seconds between redraws when nothing happens (the lanes' and the waits' durations tick).
TICK_S = 1.0

BROWSE_KEYS = "up/down or 1-9: pick   Enter: answer   q: quit"
CHOOSE_KEYS = "up/down or 1-9: option   Enter: answer   Esc: back"
MULTI_KEYS = "up/down: option   space or 1-9: toggle   Enter: answer   Esc: back"
TEXT_KEYS = "Enter: send   Esc: back"


@dataclass
class _View:
    """What the live view shows and where the keyboard is: ``mode`` browse (``pick``: the
    item), choose (``q``: which question of the item, ``option``: the highlighted option,
    ``toggled``: a multi-select's ticked ones, ``answers``: the questions answered so far) or
    text (``text``: typed so far, for a deny message or a free-text answer)."""

    lanes: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    pick: int = 0
    mode: str = "browse"
    item_id: str | None = None
    q: int = 0
    option: int = 0
    toggled: set[int] = field(default_factory=set)
    answers: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    status: str = ""

    def item(self) -> dict[str, Any] | None:
        return next((i for i in self.items if i["id"] == self.item_id), None)

    def back(self, status: str = "") -> None:
        self.mode, self.item_id, self.q, self.option, self.text = "browse", None, 0, 0, ""
        self.toggled, self.answers = set(), {}
        self.status = status


@click.command()
@click.option("--once", is_flag=True, help="Print one frame and exit (also when stdout or stdin is not a terminal).")
@click.option("--actor", default=os_user, show_default="your user name", metavar="NAME",
              help="Who answers from the keyboard (recorded).")
@click.pass_context
def watch(ctx: click.Context, once: bool, actor: str) -> None:
    """A live view of the lanes and of what waits on a human (questions with their options,
    permission prompts), redrawn as the daemon's events come, answerable from the keyboard:
    pick an item, pick an option, Enter (a deny asks for the message)."""
    client = _client(ctx)
    if once or not sys.stdout.isatty() or not sys.stdin.isatty():
        view = _View()
        _fetch(client, view)
        _out(_frame(view, time.time(), live=False))
        return
    _run(ctx, client, actor)


def _fetch(client: Any, view: _View) -> None:
    """The daemon's lanes (unspawned ones left out, as ``hookd lanes`` does) and pending
    interactions into ``view``; an item being answered that is no longer pending ends the
    answering, saying so."""
    view.lanes = [lane for lane in client.get("/v1/lanes") if lane["state"] != "unspawned"]
    view.items = client.get("/v1/questions", state="pending")
    view.pick = min(view.pick, max(0, len(view.items) - 1))
    if view.mode != "browse" and view.item() is None:
        view.back(f"{view.item_id} is no longer pending (answered or ended elsewhere)")


# --- drawing ----------------------------------------------------------------------------------

def _frame(view: _View, now: float, live: bool = True) -> _Shown:
    """One screen: the lanes table and what waits on a human, each item numbered. ``live``:
    the key and status lines first (a long list is cut at the screen's bottom, they are not),
    the picked item marked; while answering, only that item and the answering panel."""
    rows = [[lane["builder"], _lane_state(lane["state"]), _duration(now - lane["since"]), len(lane["pending"]),
             lane["queued"], lane["detail"]] for lane in view.lanes]
    out = [_table(rows, ["builder", "lane", "for", "pending", "queued", "detail"]) if rows else _line("no builders"),
           _line("")]
    out.append(_paint(f"waiting on a human: {len(view.items)}", bold=True) if view.items
               else _line("nothing waits on a human"))
    item = view.item() if live and view.mode != "browse" else None
    for n, i in enumerate(view.items, 1):
        picked = live and n - 1 == view.pick
        if item is None or i is item:
            out += [_line(""), _line(_paint(f"{'>' if picked else ' '} [{n}] ", bold=picked), _interaction(i, now))]
    if not live:
        return _lines(out)
    if item is not None:
        out += [_line(""), *_panel(view, item)]
    keys = {"browse": BROWSE_KEYS, "text": TEXT_KEYS}.get(view.mode) or (
        MULTI_KEYS if _multi(item, view.q) else CHOOSE_KEYS)
    return _lines([_paint(keys, dim=True), _line(view.status), *out])


def _choices(item: dict[str, Any], q: int) -> list[tuple[str, str]]:
    """The (label, description) pairs to choose from: a permission prompt's allow and deny, a
    question's options (question ``q`` of the item)."""
    if item["kind"] == "permission":
        return [("allow", ""), ("deny", "then the message shown to the model")]
    qs = _questions(item)
    return _options(qs[q]) if q < len(qs) else []


def _multi(item: dict[str, Any] | None, q: int) -> bool:
    qs = [] if item is None or item["kind"] == "permission" else _questions(item)
    return q < len(qs) and qs[q].get("multiSelect") is True


def _panel(view: _View, item: dict[str, Any]) -> list[_Shown]:
    """The answering panel of ``item``: the question (or the tool) and its choices, the one
    highlighted marked; in text mode what was typed so far."""
    qs = _questions(item)
    if item["kind"] == "permission":
        head = f"answer {item['id']} (permission from {item['builder']}: {item.get('tool_name') or '?'})"
    else:
        number = f" (question {view.q + 1} of {len(qs)})" if len(qs) > 1 else ""
        head = f"answer {item['id']}{number}: {qs[view.q].get('question', '?') if qs else '?'}"
    out = [_paint(head, bold=True)]
    if view.mode == "text":
        what = "deny message" if item["kind"] == "permission" else "your answer"
        return [*out, _line(f"  {what}: ", view.text, _paint("_", dim=True))]
    multi = _multi(item, view.q)
    for n, (label, desc) in enumerate(_choices(item, view.q), 1):
        box = ("[x] " if n - 1 in view.toggled else "[ ] ") if multi else ""
        here = n - 1 == view.option
        out.append(_line(_paint(f"{'>' if here else ' '} {n}. ", bold=here), box, _paint(label, bold=here),
                         _paint(f"  {desc}", dim=True) if desc else ""))
    return out


# --- the keyboard -----------------------------------------------------------------------------

#: Key names of the escape sequences and control bytes a terminal sends.
KEYS = {"\x1b[A": "up", "\x1bOA": "up", "\x1b[B": "down", "\x1bOB": "down", "\r": "enter", "\n": "enter",
        "\x1b": "esc", "\x7f": "backspace", "\x08": "backspace", "\x03": "quit"}


def _key(view: _View, key: str) -> dict[str, Any] | str | None:
    """Apply ``key`` (a name of :data:`KEYS` or one character) to ``view``. Returns ``"quit"``,
    an answer to send (``{"id", "body"}``: the body of ``POST /v1/interactions/{id}/answer``
    without actor and surface) or None."""
    if view.mode == "text":
        return _text_key(view, key)
    if view.mode == "choose":
        return _choose_key(view, key)
    if key in ("q", "quit"):
        return "quit"
    if key in ("up", "k"):
        view.pick = max(0, view.pick - 1)
    elif key in ("down", "j"):
        view.pick = min(max(0, len(view.items) - 1), view.pick + 1)
    elif key.isdigit() and 0 < int(key) <= len(view.items):
        view.pick = int(key) - 1
    elif key == "enter" and view.items:
        item = view.items[view.pick]
        view.back()
        view.mode, view.item_id = "choose", item["id"]
        if not _choices(item, 0):
            view.mode = "text"
    return None


def _choose_key(view: _View, key: str) -> dict[str, Any] | str | None:
    item = view.item()
    if item is None or key == "quit":
        return "quit" if key == "quit" else None
    choices, multi = _choices(item, view.q), _multi(item, view.q)
    if key == "esc":
        view.back()
    elif key in ("up", "k"):
        view.option = max(0, view.option - 1)
    elif key in ("down", "j"):
        view.option = min(len(choices) - 1, view.option + 1)
    elif key.isdigit() and 0 < int(key) <= len(choices):
        view.option = int(key) - 1
        if multi:
            view.toggled ^= {view.option}
    elif key == " " and multi:
        view.toggled ^= {view.option}
    elif key == "enter":
        if item["kind"] == "permission":
            if choices[view.option][0] == "deny":
                view.mode = "text"
                return None
            return _answer(view, item, {"options": ["allow"], "text": None})
        picked = sorted(view.toggled) if multi else [view.option]
        return _next_question(view, item, [choices[n][0] for n in picked])
    return None


def _next_question(view: _View, item: dict[str, Any], labels: list[str] | None, text: str | None = None
                   ) -> dict[str, Any] | None:
    """Record the answer to the current question; the answer to send once it was the last."""
    qs = _questions(item)
    if len(qs) <= 1:
        return _answer(view, item, {"options": labels or [], "text": text})
    view.answers[str(qs[view.q].get("question"))] = {"options": labels or [], "text": text}
    if view.q + 1 < len(qs):
        view.q, view.option, view.toggled = view.q + 1, 0, set()
        view.mode = "choose" if _choices(item, view.q) else "text"
        return None
    return _answer(view, item, {"answers": dict(view.answers)})


def _text_key(view: _View, key: str) -> dict[str, Any] | str | None:
    item = view.item()
    if item is None or key == "quit":
        return "quit" if key == "quit" else None
    if key == "esc":
        view.text = ""
        view.mode = "choose" if _choices(item, view.q) else "browse"
        if view.mode == "browse":
            view.back()
    elif key == "backspace":
        view.text = view.text[:-1]
    elif key == "enter":
        text = view.text or None
        if item["kind"] == "permission":
            return _answer(view, item, {"options": ["deny"], "text": text})
        return _next_question(view, item, None, text)
    elif len(key) == 1 and key.isprintable():
        view.text += key
    return None


def _answer(view: _View, item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The answer to send for ``item`` (at the revision shown); the view back to browsing."""
    view.back(f"answering {item['id']}...")
    return {"id": item["id"], "body": {**body, "revision": item.get("revision")}}


# --- the loop ---------------------------------------------------------------------------------

def _follow(client: Any, after: int, changed: threading.Event, ended: threading.Event) -> None:
    """Set ``changed`` at each event after seq ``after``; ``ended`` when the stream ends."""
    try:
        for _ in client.lines("/v1/events", after=after, follow=1):
            changed.set()
    except Exception:  # noqa: BLE001 - the daemon gone: the loop says so and exits
        pass
    ended.set()
    changed.set()


def _send(client: Any, answer: dict[str, Any], actor: str) -> str:
    """POST the answer; the status line saying how it went (a refusal: its sentence)."""
    from hookd.errors import HookdError

    try:
        r = client.post_json(f"/v1/interactions/{_seg(answer['id'])}/answer",
                             {**answer["body"], "actor": actor, "surface": "cli"})
    except HookdError as e:
        return f"not answered: {e.message}"
    i = r["interaction"]
    if r["delivery"] == "inbox" and i["state"] == "pending":
        return f"{i['id']}: queued as inbox message {r['message_id']} for {i['builder']}"
    return f"answered {i['id']} ({i['kind']}, {i['builder']}); delivery: {r['delivery']}"


def _read_key(fd: int) -> list[str]:
    """The keys in what the terminal sent (an escape sequence is one key; ``quit`` when it
    sent nothing: closed)."""
    data = os.read(fd, 64).decode("utf-8", "replace")
    if not data:  # the terminal went away
        return ["quit"]
    keys, n = [], 0
    while n < len(data):
        seq = next((s for s in ("\x1b[A", "\x1b[B", "\x1bOA", "\x1bOB") if data.startswith(s, n)), None)
        if seq is None and data[n] == "\x1b" and n + 1 < len(data) and data[n + 1] in "[O":
            seq = data[n:n + 3]  # another sequence (left, right...): ignored as a whole
        one = seq or data[n]
        keys.append(KEYS.get(one, one))
        n += len(one)
    return keys


def _run(ctx: click.Context, client: Any, actor: str) -> None:
    """The live view until ``q`` or Ctrl-C (exit 0), or the daemon's stream ends (exit 3)."""
    import termios
    import tty

    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from hookd.client import Client

    view, changed, ended = _View(), threading.Event(), threading.Event()
    after = client.get("/v1/status")["counts"]["events"]  # append-only: the count is the last seq
    _fetch(client, view)
    follower = Client(client.home)  # its own client: the stream's request stays open beside the others
    threading.Thread(target=_follow, args=(follower, after, changed, ended), daemon=True).start()
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        with Live(console=Console(), screen=True, auto_refresh=False) as live:
            while not ended.is_set():
                live.update(Text.from_ansi(_frame(view, time.time())), refresh=True)
                ready, _, _ = select.select([fd], [], [], TICK_S)
                for key in _read_key(fd) if ready else []:
                    what = _key(view, key)
                    if what == "quit":
                        return
                    if isinstance(what, dict):
                        view.status = _send(client, what, actor)
                        changed.set()
                if changed.is_set():
                    changed.clear()
                    _fetch(client, view)
    except KeyboardInterrupt:
        return
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    home = shlex.quote(str(ctx.find_root().obj.root))
    raise DaemonNotRunning(f"the daemon stopped (its event stream ended); start it again with `hookd --home {home} serve`")
