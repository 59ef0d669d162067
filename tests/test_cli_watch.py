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
    assert r.returncode == 3 and r.stdout == "" and "hookd is not running" in r.stderr


class Pty:
    """`hookd watch` on a pseudo-terminal (120x40), its screen output collected by a thread."""

    def __init__(self, home: Path):
        import fcntl
        import pty
        import struct
        import sys
        import termios
        import threading

        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
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
