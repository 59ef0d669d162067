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
