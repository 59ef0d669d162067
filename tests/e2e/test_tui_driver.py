"""The TUI driver itself (tests/e2e/drivers.py ``TmuxClaude``), against a small prompt program of
this module's own under the same private tmux server, so that a fault the real Claude Code shows
only now and then happens every time: here, keys lost while the TUI redraws."""

from __future__ import annotations

import sys
from pathlib import Path

from .drivers import TmuxClaude

# A prompt line as 2.1.332 draws it ("❯" + NO-BREAK SPACE + the input, between two rules) that
# loses the first key typed, as the real TUI did after its question menu closed ("❯ arry on" for
# "carry on"); Enter writes the input to the file named by its first argument.
PROMPT = r'''
import sys, termios, tty
out = sys.argv[1]
fd = sys.stdin.fileno()
tty.setraw(fd)
buf, dropped = "", False
def draw():
    sys.stdout.write("\x1b[2J\x1b[H" + "─" * 40 + "\r\n❯\xa0" + buf + "\r\n" + "─" * 40 + "\r\n")
    sys.stdout.flush()
draw()
while True:
    ch = sys.stdin.read(1)
    if not dropped:
        dropped = True
        continue
    if ch in ("\r", "\n"):
        open(out, "w").write(buf)
        buf = ""
    elif ch in ("\x7f", "\x08"):
        buf = buf[:-1]
    else:
        buf += ch
    draw()
'''


def test_submit_types_again_what_the_tui_lost(tmp_path: Path, tmux_bin: str) -> None:
    """A one-line input shown without its first keys is erased and typed again, then sent."""
    program = tmp_path / "prompt.py"
    program.write_text(PROMPT)
    submitted = tmp_path / "submitted"
    wrapper = tmp_path / "prompt"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {program} {submitted}\n")
    wrapper.chmod(0o755)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    with TmuxClaude(tmp_path, env, claude_bin=wrapper, seed=False, tmux=tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("carry on", timeout=20)
        tui.wait_for_screen(lambda s: submitted.exists(), timeout=20)
    assert submitted.read_text() == "carry on"


def test_a_start_that_fails_leaves_no_tmux_server_behind(tmp_path: Path, tmux_bin: str, monkeypatch) -> None:  # noqa: ANN001
    """tmux started its server and the pane's program, then its client timed out (as under load):
    start() raises, and neither the private server nor the program is left running."""
    import subprocess

    import psutil

    program = tmp_path / "prompt.py"
    program.write_text(PROMPT)
    wrapper = tmp_path / "prompt"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {program} {tmp_path / 'submitted'}\n")
    wrapper.chmod(0o755)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    tui = TmuxClaude(tmp_path, env, claude_bin=wrapper, seed=False, tmux=tmux_bin)
    real = TmuxClaude._tmux
    calls: list[tuple[str, ...]] = []

    def slow_client(self: TmuxClaude, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        calls.append(args)
        if args == ("kill-server",):
            raise subprocess.TimeoutExpired(["tmux", *args], 10)  # tmux never answered it
        done = real(self, *args, check=check)
        if "new-session" in args:
            raise subprocess.TimeoutExpired(["tmux", *args], 10)  # after the server did it
        return done

    monkeypatch.setattr(TmuxClaude, "_tmux", slow_client)

    def ours() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["cmdline"])
                if tui.socket in (p.info["cmdline"] or []) or str(program) in (p.info["cmdline"] or [])]

    try:
        tui.start()
    except subprocess.TimeoutExpired:
        pass
    else:
        raise AssertionError("start() did not raise the client's timeout")
    assert ("kill-server",) in calls  # tried first; it timed out, so the processes were killed
    psutil.wait_procs(ours(), timeout=10)
    assert ours() == []
