"""Trying the chat channels by hand (docs/testing.md "Trying the chat channels by hand"): each
fake run as a script (a real process, stdin and stdout piped as a person's terminal) prints
the channel's table; hookd (in process) with that table posts a held question there, the
script shows it with its buttons numbered, ``p 1 1`` presses the first and the held hook gets
that answer, and the post is shown again, edited with the outcome."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_until
from .inproc import InProc
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, Q
from .test_answers_inproc import Rig, finish

pytestmark = pytest.mark.inproc

ROOT = Path(__file__).resolve().parents[1]


class Script:
    """``python tests/<name>.py`` with its stdout read line by line on a thread."""

    def __init__(self, name: str, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / f"{name}.py"), *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def until(self, line: str) -> int:
        """Wait for ``line`` in the output; its index."""
        wait_until(lambda: line in self.lines, 60, what=lambda: f"{line!r} printed: {self.lines}")
        return self.lines.index(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def quit(self) -> int:
        if self.proc.poll() is None:
            self.send("q")
        return self.proc.wait(30)


@pytest.mark.parametrize(("name", "by", "reply"), [
    ("fake_telegram", "telegram:1001, telegram", "Reply to this message"),
    ("fake_slack", "slack:UHAND, slack", "Reply in this message's thread")])
def test_a_fake_run_by_hand_shows_a_question_and_presses_its_button(home: Path, worktree: Path, name: str,
                                                                   by: str, reply: str) -> None:
    script = Script(name)
    try:
        script.until("# Add this to HOOKD_HOME/config.toml, then start hookd serve:")
        end = script.until("")
        home.mkdir(parents=True)
        (home / "config.toml").write_text("\n".join(script.lines[1:end]) + "\n")
        app = InProc(home).start()
        try:
            r = Rig(app, worktree)
            assert r.hook(AUQ_PRE) == ""
            held: Any = r.start_hook(AUQ_PERM)
            r.held(ASK_ID)
            at = script.until("--- #1 posted")
            assert script.lines[at + 1:at + 7] == [
                "b1 asks:", Q, "  • Red: The red option", "  • Blue: The blue option", "",
                f"Other: {reply} to answer with text."]
            script.until("[1] Red  [2] Blue")
            script.send("p 1 9")
            script.until("#1 has buttons 1 to 2")
            script.send("p 1 1")
            status, out = finish(held)
            assert status == 200 and json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {
                Q: "Red"}
            at = script.until("--- #1 edited")
            script.until(f"— answered: Red (by {by})")
        finally:
            app.stop()
    finally:
        assert script.quit() == 0


def test_the_slack_fake_by_hand_tells_each_reply_once_in_the_order_hookd_gave_them(home: Path, worktree: Path) -> None:
    """A slash command's reply (an acknowledgement) and then a thread reply's (an ephemeral
    message): each printed once, as it came."""
    script = Script("fake_slack")
    try:
        script.until("# Add this to HOOKD_HOME/config.toml, then start hookd serve:")
        end = script.until("")
        home.mkdir(parents=True)
        (home / "config.toml").write_text("\n".join(script.lines[1:end]) + "\n")
        app = InProc(home).start()
        try:
            r = Rig(app, worktree)
            assert r.hook(AUQ_PRE) == ""
            held: Any = r.start_hook(AUQ_PERM)
            r.held(ASK_ID)
            script.until("[1] Red  [2] Blue")
            script.send("s /hookd lanes")
            wait_until(lambda: any(x.startswith("(hookd tells you: b1: ") for x in script.lines), 60,
                       what=lambda: f"the lanes told: {script.lines}")
            script.send("r 1 Green")
            status, out = finish(held)
            assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Green"}
            script.until("(hookd tells you: Answered.)")
            assert sum(1 for x in script.lines if x.startswith("(hookd tells you: ")) == 2
        finally:
            app.stop()
    finally:
        assert script.quit() == 0


def test_the_telegram_fake_run_again_on_its_port_still_reaches_hookd(home: Path, worktree: Path) -> None:
    """hookd resumes polling after the newest update it handled: the fake run a second time
    (same port, same home) numbers its updates above the first run's, so what is typed there
    is handled too."""
    first = Script("fake_telegram")
    try:
        first.until("# Add this to HOOKD_HOME/config.toml, then start hookd serve:")
        end = first.until("")
        table = "\n".join(first.lines[1:end]).replace("[notify]", "[notify]\nretry_initial_s = 0.05\nretry_max_s = 0.3")
        port = table.split("127.0.0.1:", 1)[1].split("/", 1)[0]
        home.mkdir(parents=True)
        (home / "config.toml").write_text(table + "\n")
        app = InProc(home).start()
        try:
            Rig(app, worktree)
            first.send("s /lanes")
            wait_until(lambda: any(x.startswith("b1: idle for ") for x in first.lines), 60,
                       what=lambda: f"/lanes answered: {first.lines}")
            assert first.quit() == 0
            again = Script("fake_telegram", "--port", port)
            try:
                again.until("# Add this to HOOKD_HOME/config.toml, then start hookd serve:")
                again.send("s /lanes")
                wait_until(lambda: any(x.startswith("b1: idle for ") for x in again.lines), 60,
                           what=lambda: f"/lanes answered in the second run: {again.lines}")
            finally:
                assert again.quit() == 0
        finally:
            app.stop()
    finally:
        first.quit()


def test_what_hookd_tells_in_several_lines_is_printed_as_lines() -> None:
    import io

    from .chat_by_hand import ByHand

    out = io.StringIO()
    told = ["b1: idle for 3s\nb2: working for 1m", "Answered."]
    ByHand(view=dict, told=lambda: told, press=print, reply=print, say=print, stop=print, out=out).show_changes()
    assert out.getvalue() == "(hookd tells you: b1: idle for 3s\n  b2: working for 1m)\n(hookd tells you: Answered.)\n"


def test_the_telegram_fake_says_nothing_of_a_client_gone_mid_poll(capsys: pytest.CaptureFixture[str]) -> None:
    """hookd stopped during a long poll: the fake's reply finds the connection gone; no
    traceback for that (other errors keep theirs)."""
    from .fake_telegram import FakeTelegram

    fake = FakeTelegram()
    try:
        assert fake.server is not None
        try:
            raise BrokenPipeError(32, "Broken pipe")
        except BrokenPipeError:
            fake.server.handle_error(None, ("127.0.0.1", 1))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a bug of the fake's")
        except ValueError:
            fake.server.handle_error(None, ("127.0.0.1", 1))
        assert "ValueError: a bug of the fake's" in capsys.readouterr().err
    finally:
        fake.stop()
