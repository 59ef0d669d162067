"""``hookd watch``: a live terminal view for people who live in tmux: every builder's lane
(state, for how long) and what waits on a human (questions with their options, permission
prompts with their tool_view summary), redrawn when the daemon's event stream
(``GET /v1/events?follow=1``) says something changed, and answerable from the keyboard.

On a terminal it draws with Rich's ``Live`` (imported here only: ``hookd.cli.LAZY_COMMANDS``)
on the alternate screen; ``--once``, or stdout or stdin not a terminal, prints one frame as
plain text (no colour in a pipe or with ``NO_COLOR``) and exits. A frame is made of
``hookd.cli_render``'s pieces (``_interaction``, ``_duration``, ``_lane_state``), so it reads
as ``hookd lanes`` and ``hookd questions`` do.

Keys (:func:`_key`): up/down, ``j``/``k`` or a digit pick an item, Enter opens it; a frame
taller than the terminal is a window that follows the picked item (and, while answering, the
answering panel), PgUp/PgDn and Home/End scroll it (:func:`_window`); then
up/down or a digit pick an option (space or the digit toggles one of a multi-select), Enter
answers (a call asking several questions: each in turn, then all at once); ``deny`` asks for
the message shown to the model (Enter sends, Esc goes back); a question without options asks
for its text. Esc goes back, ``q`` quits (Ctrl-C too). An answer goes out as
``POST /v1/interactions/{id}/answer`` with the revision shown (``surface`` cli, ``actor``
--actor); a refusal is shown on the status line.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from hookd.cli_render import (
    _client, _delivery, _duration, _interaction, _lane_state, _line, _lines, _options, _out, _paint, _questions, _seg, _Shown,
    _subagent_row, _table,
)
from hookd.errors import HookdError
from hookd.vocabulary import os_user

#: Seconds between redraws when nothing happens (the lanes' and the waits' durations tick).
TICK_S = 1.0
#: Seconds between attempts to reach a daemon that went away (stopped, restarting).
RECONNECT_S = 1.0

BROWSE_KEYS = "up/down or 1-9: pick   Enter: answer   PgUp/PgDn: scroll   q: quit"
CHOOSE_KEYS = "up/down or 1-9: option   Enter: answer   Esc: back   PgUp/PgDn: scroll"
MULTI_KEYS = "up/down: option   space or 1-9: toggle   Enter: answer   Esc: back   PgUp/PgDn: scroll"
TEXT_KEYS = "Enter: send   Esc: back"


@dataclass
class _View:
    """What the live view shows and where the keyboard is: ``mode`` browse (``pick``: the
    item), choose (``q``: which question of the item, ``option``: the highlighted option,
    ``toggled``: a multi-select's ticked ones, ``answers``: the questions answered so far) or
    text (``text``: typed so far, for a deny message or a free-text answer). A frame taller
    than the screen shows lines from ``top`` (an index of its body's lines); ``follow``: keep
    the picked item (the answering panel) in sight, until PgUp/PgDn (``scroll``: pages asked
    for, applied at the next draw, which knows the lines' heights)."""

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
    top: int = 0
    follow: bool = True
    scroll: int = 0

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

def _frame(view: _View, now: float, live: bool = True, height: int | None = None,
           rows_of: Callable[[_Shown], int] | None = None, away: str | None = None) -> _Shown:
    """One screen: the lanes table and what waits on a human, each item numbered. ``live``:
    the key and status lines first, the picked item marked; while answering, only that item
    and the answering panel. ``height`` (rows; None: no limit): the lines below the key and
    status lines are a window of that many rows (:func:`_window`); ``rows_of(line)``: the rows
    a line takes on the terminal (wrapped; default 1). ``away``: the daemon cannot be reached,
    said instead of the status line (what is shown is as it was last seen)."""
    rows: list[list[Any]] = []
    for lane in view.lanes:
        rows.append([lane["builder"], _lane_state(lane["state"]), _duration(now - lane["since"]), len(lane["pending"]),
                     lane["queued"], lane["detail"]])
        rows += [_subagent_row(lane["builder"], s, now, session=False) for s in lane.get("subagents") or ()]
    table = _table(rows, ["builder", "lane", "for", "pending", "queued", "detail"]) if rows else _line("no builders")
    out = [*_split(table), _line("")]
    out.append(_paint(f"waiting on a human: {len(view.items)}", bold=True) if view.items
               else _line("nothing waits on a human"))
    item = view.item() if live and view.mode != "browse" else None
    focus = (0, 0)  # the lines of out to keep in sight: [start, end)
    for n, i in enumerate(view.items, 1):
        picked = live and n - 1 == view.pick
        if item is None or i is item:
            out.append(_line(""))
            start = len(out)
            out += _split(_line(_paint(f"{'>' if picked else ' '} [{n}] ", bold=picked), _interaction(i, now)))
            if picked:
                focus = (start, len(out))
    if not live:
        return _lines(out)
    if item is not None:
        out.append(_line(""))
        start = len(out)
        out += _panel(view, item)
        focus = (start, len(out))
    keys = {"browse": BROWSE_KEYS, "text": TEXT_KEYS}.get(view.mode) or (
        MULTI_KEYS if _multi(item, view.q) else CHOOSE_KEYS)
    head = [_paint(keys, dim=True), _paint(away, fg="red", bold=True) if away else _line(view.status)]
    if height is not None:
        out = _window(view, out, focus, height - len(head), rows_of or (lambda line: 1))
    return _lines([*head, *out])


def _split(text: _Shown) -> list[_Shown]:
    """The lines of ``text`` (a ``_Shown`` of several: a table, an interaction), each still shown as it is."""
    return [_Shown(line) for line in text.split("\n")]


def _window(view: _View, lines: list[_Shown], focus: tuple[int, int], height: int,
            rows_of: Callable[[_Shown], int]) -> list[_Shown]:
    """The ``lines`` that fit ``height`` rows: all when they fit; else, from ``view.top``, as
    many whole lines as fit in two rows less, between a line saying how many lines are above
    (PgUp) and one saying how many below (PgDn). ``view.follow``: ``top`` moves so that the
    ``focus`` lines (``[start, end)``: the picked item, the answering panel) are in sight (their
    start when they are taller than the window); ``view.scroll`` pages are applied (then 0)."""
    rows = [max(1, rows_of(line)) for line in lines]
    if sum(rows) <= height:
        view.top, view.scroll = 0, 0
        return lines
    room = max(1, height - 2)

    def fits(top: int) -> int:
        """How many lines from ``top`` fit (at least one)."""
        n, used = 0, 0
        while top + n < len(lines) and used + rows[top + n] <= room:
            used += rows[top + n]
            n += 1
        return max(1, n)

    def back(top: int) -> int:
        """The top whose window ends where the one at ``top`` starts (one page up)."""
        used = 0
        while top > 0 and used + rows[top - 1] <= room:
            used += rows[top - 1]
            top -= 1
        return top

    last = back(len(lines))  # the top that shows the last line at the bottom
    while view.scroll > 0 and view.top < last:
        view.top, view.scroll = min(last, view.top + fits(view.top)), view.scroll - 1
    while view.scroll < 0 and view.top > 0:
        view.top, view.scroll = back(view.top), view.scroll + 1
    view.scroll = 0
    start, end = focus
    if view.follow and end > start:
        if start < view.top:
            view.top = start
        while view.top < start and view.top + fits(view.top) < end:
            view.top += 1  # (the focus's end in sight, its start kept)
    view.top = max(0, min(view.top, last))
    n = fits(view.top)
    above, below = view.top, len(lines) - view.top - n
    return [_paint(f"  ({above} lines above: PgUp)" if above else "", dim=True), *lines[view.top:view.top + n],
            _paint(f"  ({below} lines below: PgDn)" if below else "", dim=True)]


def _choices(item: dict[str, Any], q: int) -> list[tuple[str, str]]:
    """The (label, description) pairs to choose from: a permission prompt's allow and deny, a
    question's options (question ``q`` of the item); a plan's three answers."""
    if item["kind"] == "permission":
        return [("allow", ""), ("deny", "then the message shown to the model")]
    if item["kind"] == "elicitation":  # (accept takes fields: the command `hookd questions` prints)
        return [("decline", ""), ("cancel", "to accept, use the hookd answer command shown with its fields")]
    if item["kind"] == "plan":
        return [("auto", "approve: the agent goes on in auto mode"), ("manual", "approve: each edit asks again"),
                ("deny", "send it back, then what to change")]
    qs = _questions(item)
    return _options(qs[q]) if q < len(qs) else []


def _multi(item: dict[str, Any] | None, q: int) -> bool:
    qs = [] if item is None or item["kind"] in ("permission", "plan", "elicitation") else _questions(item)
    return q < len(qs) and qs[q].get("multiSelect") is True


def _panel(view: _View, item: dict[str, Any]) -> list[_Shown]:
    """The answering panel of ``item``: the question (or the tool) and its choices, the one
    highlighted marked; in text mode what was typed so far."""
    qs = _questions(item)
    if item["kind"] in ("permission", "elicitation"):
        head = f"answer {item['id']} ({item['kind']} from {item['builder']}: {item.get('tool_name') or '?'})"
    elif item["kind"] == "plan":
        head = f"answer {item['id']} (plan from {item['builder']})"
    else:
        number = f" (question {view.q + 1} of {len(qs)})" if len(qs) > 1 else ""
        head = f"answer {item['id']}{number}: {qs[view.q].get('question', '?') if qs else '?'}"
    out = [_paint(head, bold=True)]
    if view.mode == "text":
        what = {"permission": "deny message", "plan": "what to change"}.get(item["kind"], "your answer")
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
        "\x1b": "esc", "\x7f": "backspace", "\x08": "backspace", "\x03": "quit",
        "\x1b[5~": "pgup", "\x1b[6~": "pgdn", "\x1b[H": "home", "\x1bOH": "home", "\x1b[1~": "home",
        "\x1b[7~": "home", "\x1b[F": "end", "\x1bOF": "end", "\x1b[4~": "end", "\x1b[8~": "end"}


#: Keys that scroll a frame taller than the screen, in pages (Home and End: all the way).
SCROLL_KEYS = {"pgup": -1, "pgdn": 1, "home": -10**6, "end": 10**6}


def _key(view: _View, key: str) -> dict[str, Any] | str | None:
    """Apply ``key`` (a name of :data:`KEYS` or one character) to ``view``. Returns ``"quit"``,
    an answer to send (``{"id", "body"}``: the body of ``POST /v1/interactions/{id}/answer``
    without actor and surface) or None. PgUp/PgDn/Home/End scroll (in every mode); any other
    key brings the picked item (the answering panel) back in sight."""
    if key in SCROLL_KEYS:
        view.scroll += SCROLL_KEYS[key]
        view.follow = False
        return None
    view.follow = True
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
        if item["kind"] == "elicitation":
            return _answer(view, item, {"options": [choices[view.option][0]], "text": None})
        if item["kind"] in ("permission", "plan"):
            if choices[view.option][0] == "deny":
                view.mode = "text"
                return None
            return _answer(view, item, {"options": [choices[view.option][0]], "text": None})
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
        if item["kind"] in ("permission", "plan"):
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

def _follow(client: Any, after: int, changed: threading.Event, down: threading.Event) -> None:
    """Set ``changed`` at each event after seq ``after``. When the stream ends (the daemon
    stopped, or restarts), ``down`` is set, and the daemon is asked again every RECONNECT_S
    seconds; once it answers, ``down`` is cleared, the view refetched and the stream followed
    from the last event seen. Runs until the process ends (a daemon thread)."""
    while True:
        try:
            client.get("/v1/status")
            down.clear()
            changed.set()  # (what changed while it was away)
            for e in client.lines("/v1/events", after=after, follow=1):
                if isinstance(e.get("seq"), int):
                    after = max(after, e["seq"])
                changed.set()
        except Exception:  # noqa: BLE001 - not reachable (not running, starting): asked again
            pass
        down.set()
        changed.set()
        time.sleep(RECONNECT_S)


def _send(client: Any, answer: dict[str, Any], actor: str) -> str:
    """POST the answer; the status line saying how it went (a refusal: its sentence)."""

    try:
        r = client.post_json(f"/v1/interactions/{_seg(answer['id'])}/answer",
                             {**answer["body"], "actor": actor, "surface": "cli"})
    except HookdError as e:
        return f"not answered: {e.message}"
    i = r["interaction"]
    if r["delivery"] == "inbox" and i["state"] == "pending":
        return f"{i['id']}: queued as inbox message {r['message_id']} for {i['builder']}"
    return f"answered {i['id']} ({i['kind']}, {i['builder']}); {_delivery(r)}"


def _read_key(fd: int) -> list[str]:
    """The keys in what the terminal sent (an escape sequence is one key; ``quit`` when it
    sent nothing: closed)."""
    data = os.read(fd, 64).decode("utf-8", "replace")
    if not data:  # the terminal went away
        return ["quit"]
    keys, n = [], 0
    while n < len(data):
        seq = None
        if data[n] == "\x1b" and data.startswith("O", n + 1):
            seq = data[n:n + 3]  # SS3: ESC O and one letter
        elif data[n] == "\x1b" and data.startswith("[", n + 1):
            end = n + 2  # CSI: ESC [, parameters (digits, ;), one final character
            while end < len(data) and (data[end].isdigit() or data[end] == ";"):
                end += 1
            seq = data[n:end + 1]
        one = seq or data[n]
        keys.append(KEYS.get(one, one if len(one) == 1 else "other"))  # (another sequence: ignored as a whole)
        n += len(one)
    return keys


def _run(ctx: click.Context, client: Any, actor: str) -> None:
    """The live view until ``q`` or Ctrl-C (exit 0). While the daemon is away (stopped,
    restarting) the view stays, says so with the command that starts it, and comes back
    live when the daemon does."""
    import termios
    import tty

    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from hookd.client import Client

    view, changed, down = _View(), threading.Event(), threading.Event()
    after = client.get("/v1/status")["counts"]["events"]  # append-only: the count is the last seq
    _fetch(client, view)
    follower = Client(client.home)  # its own client: the stream's request stays open beside the others
    threading.Thread(target=_follow, args=(follower, after, changed, down), daemon=True).start()
    home = shlex.quote(str(ctx.find_root().obj.root))
    away = f"the daemon is not running: trying again every {RECONNECT_S:.0f} s (start it: `hookd --home {home} serve`)"
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        console = Console()

        def rows_of(line: _Shown) -> int:  # as Live will wrap it at the terminal's width now
            return len(Text.from_ansi(line).wrap(console, console.width))

        with Live(console=console, screen=True, auto_refresh=False) as live:
            while True:
                frame = _frame(view, time.time(), height=console.height, rows_of=rows_of,
                               away=away if down.is_set() else None)
                live.update(Text.from_ansi(frame), refresh=True)
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
                    with contextlib.suppress(HookdError):  # (away: shown as it was last seen)
                        _fetch(client, view)
    except KeyboardInterrupt:
        return
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
