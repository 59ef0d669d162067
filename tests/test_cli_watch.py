"""`hookd watch`: the live view of lanes and of what waits on a human. `--once` (what a pipe
gets too) prints one frame as plain text, snapshotted exactly against a real daemon (only what
the clock decides replaced); the keyboard answer is driven once in a pseudo-terminal, the way a
person at a tmux pane answers: pick the item, pick the option, Enter (a deny: type the message);
the keys' state machine on a call asking several questions, in this process."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hookd.client import Client
from hookd.daemonproc import DaemonProcess, wait_until

from .conftest import TUI, hookd_cli, hookd_run, questions, settings_command

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("cli_watch")]

SID2 = "5a1e0c2b-0000-4000-8000-00000000b002"
ASK = "toolu_01ASK0000000000000000001"


def _hook(client: Client, builder: str, name: str, **changes: Any) -> None:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    client.post(f"/v1/hooks/claude-code/{builder}", json.dumps(p).encode(), {"content-type": "application/json"})


def _held_permission(settings: Path, sid: str, command: str, description: str, cwd: Path) -> subprocess.Popen[bytes]:
    """A Bash PermissionRequest (as 2.1.332 sends it: no tool_use_id) through the hook command
    hookd generated, left running: the daemon holds it for a remote answer."""
    p = json.loads((TUI / "004-PreToolUse.json").read_bytes())
    del p["tool_use_id"]
    p.update(hook_event_name="PermissionRequest", permission_mode="default", session_id=sid,
             tool_input={"command": command, "description": description})
    proc = subprocess.Popen(["sh", "-c", settings_command(settings, "PermissionRequest")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, start_new_session=True)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(p).encode())
    proc.stdin.close()
    proc.stdin = None
    return proc


@pytest.fixture
def rig(tmp_path: Path):
    """A daemon whose builder b1 asks a question (ASK) and b2 asks permission for a Bash
    command (its PermissionRequest hook held); yields (home, the held hook, the permission
    prompt's id)."""
    home = tmp_path / "home"
    d = DaemonProcess(home).start()
    held = None
    try:
        for b in ("b1", "b2"):
            r = hookd_run(home, "spawn", b, "--settings-file", os.fspath(tmp_path / f"{b}.json"))
            assert r.returncode == 0, r.stderr
        c = d.client()
        _hook(c, "b1", "001-SessionStart.json")
        _hook(c, "b1", "007-PreToolUse.json", tool_use_id=ASK)
        _hook(c, "b2", "001-SessionStart.json", session_id=SID2)
        held = _held_permission(tmp_path / "b2.json", SID2, "ls -la", "List files", tmp_path)
        pr = wait_until(lambda: [i["id"] for i in c.get("/v1/questions", state="pending") if i["kind"] == "permission"],
                        60, what="the permission prompt")[0]
        wait_until(lambda: pr in c.get("/v1/status").get("held", []), 60, what="its hook held")
        yield home, held, pr
    finally:
        d.stop()
        d.kill()
        if held is not None and held.poll() is None:
            held.kill()
        if held is not None:
            held.communicate(timeout=30)


def _clockless(text: str) -> str:
    """``text`` with each duration (and the table's padding after it, which depends on its
    width) replaced by ``<d>``."""
    return re.sub(r"\b\d+(?:s|m|h\d\dm|d\d\dh)\b( *)", lambda m: "<d> " if m.group(1) else "<d>", text)


def test_once_prints_one_plain_frame(rig: tuple[Path, subprocess.Popen[bytes], str]) -> None:
    home, _, pr = rig
    r = hookd_cli(home, "watch", "--once")
    assert (r.returncode, r.stderr) == (0, "")
    assert _clockless(r.stdout) == f"""\
builder    lane                for      pending    queued  detail
---------  ------------------  -----  ---------  --------  --------------------------------------------------
b1         waiting_question    <d> 1         0  question {ASK} is pending
b2         waiting_permission  <d> 1         0  permission {pr} is pending

waiting on a human: 2

  [1] {ASK}  question from b1, waiting <d>
  Which color do you prefer?
    Red   The red option
    Blue  The blue option
  answer: hookd answer {ASK} --option Red

  [2] {pr}  permission from b2, waiting <d>
  Bash: List files
    ls -la
  allow: hookd answer {pr} --option allow
  deny:  hookd answer {pr} --option deny --text MESSAGE
"""


def test_once_loads_no_rich(rig: tuple[Path, subprocess.Popen[bytes], str], tmp_path: Path) -> None:
    """Rich is for the live view: a frame in a pipe does without it, and `hookd --version`
    loads neither it nor `hookd.cli_watch` (tests/test_cli_startup.py's harness)."""
    from .test_cli_startup import imported

    home, _, _ = rig
    mods, out = imported(tmp_path, "--home", os.fspath(home), "watch", "--once")
    assert "waiting on a human: 2" in out
    assert "hookd.cli_watch" in mods and "rich" not in mods
    mods, _ = imported(tmp_path, "--version")
    assert not {"hookd.cli_watch", "rich"} & mods


def test_once_with_nothing_waiting(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with DaemonProcess(home):
        r = hookd_cli(home, "watch", "--once")
        assert (r.returncode, r.stdout, r.stderr) == (0, "no builders\n\nnothing waits on a human\n", "")
    r = hookd_cli(home, "watch", "--once")
    assert r.returncode == 3 and r.stdout == "" and "the daemon is not running" in r.stderr


class Pty:
    """`hookd watch` on a pseudo-terminal (120x40 unless told), its screen output collected by a thread."""

    def __init__(self, home: Path, rows: int = 40, cols: int = 120):
        import fcntl
        import pty
        import struct
        import sys
        import termios
        import threading

        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)}
        env.pop("NO_COLOR", None)
        self.proc = subprocess.Popen([sys.executable, "-P", "-m", "hookd", "--home", os.fspath(home), "watch",
                                      "--actor", "ana"], stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.out = b""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.out += data

    def mark(self) -> int:
        return len(self.out)

    def shows(self, text: str, since: int = 0) -> bool:
        plain = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", self.out[since:]).decode("utf-8", "replace")
        return text in plain

    def screen(self) -> str:
        """The last 3,000 characters of output, escape sequences left out (for a failure)."""
        return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", self.out[-3000:]).decode("utf-8", "replace")

    def keys(self, *keys: str) -> None:
        for k in keys:
            os.write(self.master, k.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        os.close(self.master)


def test_answered_from_the_keyboard(rig: tuple[Path, subprocess.Popen[bytes], str]) -> None:
    home, held, pr = rig
    term = Pty(home)
    try:
        wait_until(lambda: term.shows("waiting on a human: 2"), 30, what=lambda: term.out.decode("utf-8", "replace"))
        since = term.mark()
        term.keys("1", "\r")  # the question: its options
        wait_until(lambda: term.shows(f"answer {ASK}: Which color do you prefer?", since), 30, what="the panel")
        since = term.mark()
        term.keys("2", "\r")  # Blue, Enter
        wait_until(lambda: [i for i in questions(home) if i["id"] == ASK and i["state"] != "pending"], 30,
                   what="the question answered")
        wait_until(lambda: term.shows("waiting on a human: 1", since), 30, what="the view redrawn")
        [done] = [i for i in questions(home) if i["id"] == ASK]
        assert (done["answers"], done["surface"], done["actor"]) == ({"Which color do you prefer?": "Blue"}, "cli", "ana")
        since = term.mark()
        term.keys("\r", "\x1b[B", "\r")  # the permission prompt, down to deny, Enter: the message
        wait_until(lambda: term.shows("deny message:", since), 30, what="the deny message prompt")
        term.keys("not now, use ls", "\r")
        wait_until(lambda: [i for i in questions(home) if i["id"] == pr and i["state"] != "pending"], 30,
                   what=lambda: f"the permission prompt denied; screen: {term.screen()}")
        [denied] = [i for i in questions(home) if i["id"] == pr]
        assert (denied["decision"], denied["message"], denied["actor"]) == ("deny", "not now, use ls", "ana")
        out, _ = held.communicate(timeout=30)  # the held hook returned the denial to Claude Code
        decision = json.loads(out)["hookSpecificOutput"]["decision"]
        assert (decision["behavior"], decision["message"]) == ("deny", "not now, use ls")
        wait_until(lambda: term.shows("nothing waits on a human", since), 30, what="the view redrawn")
        term.keys("q")
        assert term.proc.wait(30) == 0
    finally:
        term.close()


def test_keys_answer_every_question_of_a_call_then_send_them_at_once() -> None:
    """The keyboard's state machine (hookd.cli_watch._key) on a call asking two questions, the
    second a multi-select: each is answered in turn, then one answer carries both; Esc goes
    back and answers nothing."""
    from hookd.cli_watch import _key, _View

    call = {"id": "toolu_01MULTI", "kind": "question", "builder": "b1", "revision": 3, "questions": [
        {"question": "Which color?", "options": [{"label": "Red"}, {"label": "Blue"}]},
        {"question": "Which toppings?", "multiSelect": True,
         "options": [{"label": "Cheese"}, {"label": "Ham"}, {"label": "Olives"}]},
    ]}
    other = {"id": "toolu_01OTHER", "kind": "question", "builder": "b2", "revision": 1,
             "questions": [{"question": "Go?", "options": [{"label": "yes"}]}]}
    view = _View(items=[other, call])
    assert [_key(view, k) for k in ("down", "enter", "esc")] == [None, None, None]
    assert (view.mode, view.pick) == ("browse", 1)
    assert [_key(view, k) for k in ("enter", "down", "enter", "1", "down", "down", " ", "2", "2")] == [None] * 9
    assert (view.mode, view.q, sorted(view.toggled)) == ("choose", 1, [0, 2])
    assert _key(view, "enter") == {"id": "toolu_01MULTI", "body": {"revision": 3, "answers": {
        "Which color?": {"options": ["Blue"], "text": None},
        "Which toppings?": {"options": ["Cheese", "Olives"], "text": None},
    }}}
    assert (view.mode, view.status) == ("browse", "answering toolu_01MULTI...")
    assert _key(view, "q") == "quit"


def test_keys_decline_an_elicitation_whose_accept_needs_the_printed_command() -> None:
    """An elicitation offers decline and cancel from the keyboard (accepting takes its fields:
    `hookd answer ... --field`, the command the view prints with it)."""
    from hookd.cli_watch import _choices, _key, _View

    el = {"id": "el_1", "kind": "elicitation", "builder": "b1", "revision": 1, "tool_name": "booker",
          "input": {"server": "booker", "message": "Who?"}, "fields": [{"name": "name", "type": "string"}]}
    assert [label for label, _ in _choices(el, 0)] == ["decline", "cancel"]
    view = _View(items=[el])
    assert _key(view, "enter") is None and view.mode == "choose"
    assert _key(view, "enter") == {"id": "el_1", "body": {"revision": 1, "options": ["decline"], "text": None}}


def _asks(n: int) -> list[dict[str, Any]]:
    """``n`` pending questions as ``GET /v1/questions`` lists them, 4 lines each in a frame."""
    return [{"id": f"toolu_{k:02d}", "kind": "question", "builder": f"b{k}", "state": "pending", "revision": 1,
             "created_at": 100.0, "questions": [{"question": f"Question {k}?", "options": [{"label": "yes"}]}]}
            for k in range(1, n + 1)]


def test_a_list_taller_than_the_screen_follows_the_pick_and_scrolls() -> None:
    """12 questions (about 60 lines) in 16 rows: each pick brings its item into sight, the lines
    above and below are counted, PgDn/PgUp/Home/End move the window, a key after scrolling
    brings the pick back, and every line is under 16 rows whatever the wrapping."""
    from hookd.cli_watch import _frame, _key, _View

    view = _View(items=_asks(12))
    plain = lambda **kw: __import__("click").unstyle(_frame(view, 200.0, height=16, **kw)).split("\n")  # noqa: E731
    first = plain()
    assert len(first) <= 16 and "> [1] toolu_01  question from b1, waiting 1m" in first, first
    assert first[-1].startswith("  (") and first[-1].endswith(" lines below: PgDn)"), first
    for k in range(2, 13):
        _key(view, "down")
        shown = plain()
        assert len(shown) <= 16 and f"> [{k}] toolu_{k:02d}  question from b{k}, waiting 1m" in shown, (k, shown)
        assert f"  answer: hookd answer toolu_{k:02d} --option yes" in shown, (k, shown)  # the whole item
    assert plain()[-1] == "" and re.fullmatch(r"  \(\d+ lines above: PgUp\)", plain()[2])  # the end: nothing below
    _key(view, "home")
    top = plain()
    assert top[2:6] == ["", "no builders", "", "waiting on a human: 12"], top  # nothing above
    _key(view, "pgdn")
    paged = plain()
    assert re.fullmatch(r"  \(\d+ lines above: PgUp\)", paged[2]) and "> [12] toolu_12" not in "\n".join(paged)
    _key(view, "pgup")
    assert plain() == top
    _key(view, "up")  # the pick (now 11) is brought back into sight
    assert any(line.startswith("> [11] toolu_11") for line in plain())
    # lines that wrap take more rows: still in sight, never more rows than the screen
    wrapped = plain(rows_of=lambda line: 1 + len(__import__("click").unstyle(line)) // 30)
    assert any(line.startswith("> [11] toolu_11") for line in wrapped)
    assert sum(1 + len(line) // 30 for line in wrapped[2:]) <= 14
    # answering: the item and its panel, in sight while its option is picked
    _key(view, "enter")
    assert "> 1. yes" in plain() and _key(view, "enter") == {"id": "toolu_11", "body": {
        "options": ["yes"], "text": None, "revision": 1}}


def test_the_keys_a_terminal_sends_for_scrolling() -> None:
    from hookd.cli_watch import _read_key

    r, w = os.pipe()
    try:
        os.write(w, b"\x1b[5~\x1b[6~\x1b[H\x1b[F\x1bOH\x1b[1~\x1b[4~\x1b[Bj\x1b[1;5Cq")
        assert _read_key(r) == ["pgup", "pgdn", "home", "end", "home", "home", "end", "down", "j", "other", "q"]
    finally:
        os.close(r)
        os.close(w)


@pytest.fixture
def many(tmp_path: Path):
    """A daemon with 12 questions pending, from b1..b12 (more than a 16-row terminal shows)."""
    home = tmp_path / "home"
    d = DaemonProcess(home).start()
    try:
        c = d.client()
        for k in range(1, 13):
            r = hookd_run(home, "spawn", f"b{k}", "--settings-file", os.fspath(tmp_path / f"b{k}.json"))
            assert r.returncode == 0, r.stderr
            sid = f"5a1e0c2b-0000-4000-8000-0000000000{k:02d}"
            _hook(c, f"b{k}", "001-SessionStart.json", session_id=sid)
            _hook(c, f"b{k}", "007-PreToolUse.json", session_id=sid, tool_use_id=f"toolu_01MANY{k:02d}")
        wait_until(lambda: len(c.get("/v1/questions", state="pending")) == 12, 60, what="12 questions")
        yield home
    finally:
        d.stop()
        d.kill()


def test_every_item_of_a_long_list_is_reached_and_answered_on_a_small_terminal(many: Path) -> None:
    """80x16: the twelfth question is far below the screen's bottom; down arrows bring it into
    sight (its head line and its options are drawn), and it is answered from there."""
    home = many
    term = Pty(home, rows=16, cols=80)
    try:
        wait_until(lambda: term.shows("waiting on a human: 12"), 30, what=lambda: term.screen())
        assert not term.shows("[12]")  # below the screen
        since = term.mark()
        term.keys(*["\x1b[B"] * 11)
        wait_until(lambda: term.shows("> [12] toolu_01MANY12", since), 30, what=lambda: term.screen())
        wait_until(lambda: term.shows("answer: hookd answer toolu_01MANY12 --option Red", since), 30,
                   what=lambda: term.screen())
        since = term.mark()
        term.keys("\r")
        wait_until(lambda: term.shows("answer toolu_01MANY12: Which color do you prefer?", since), 30,
                   what=lambda: term.screen())
        term.keys("2", "\r")  # Blue
        wait_until(lambda: [i for i in questions(home) if i["id"] == "toolu_01MANY12" and i["state"] != "pending"], 30,
                   what=lambda: f"the twelfth question answered; screen: {term.screen()}")
        [done] = [i for i in questions(home) if i["id"] == "toolu_01MANY12"]
        assert (done["answers"], done["actor"]) == ({"Which color do you prefer?": "Blue"}, "ana")
        term.keys("q")
        assert term.proc.wait(30) == 0
    finally:
        term.close()


def test_the_view_stays_while_the_daemon_restarts_and_comes_back_live(tmp_path: Path) -> None:
    """The daemon stopped under a live view: the view stays (it used to exit 3), says the
    daemon is not running with the command that starts it, and once the daemon is back it is
    live again: a question asked after the restart shows, and `q` exits 0."""
    home = tmp_path / "home"
    assert hookd_run(home, "spawn", "b1", "--settings-file", os.fspath(tmp_path / "b1.json")).returncode == 0
    d = DaemonProcess(home).start()
    term = Pty(home)
    try:
        wait_until(lambda: term.shows("nothing waits on a human"), 30, what=lambda: term.screen())
        d.stop()
        since = term.mark()
        wait_until(lambda: term.shows("the daemon is not running", since), 30, what=lambda: term.screen())
        assert term.proc.poll() is None, term.screen()
        d = DaemonProcess(home).start()
        _hook(d.client(), "b1", "001-SessionStart.json")
        _hook(d.client(), "b1", "007-PreToolUse.json", tool_use_id=ASK)
        since = term.mark()
        wait_until(lambda: term.shows("waiting on a human: 1", since), 30, what=lambda: term.screen())
        term.keys("q")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
        d.stop()
        d.kill()
