"""The core's look at processes (psutil and Linux's /proc): an agent's start time (recorded
with its pid, for lane liveness) and its children (a held prompt's tool seen running). Each call
reads the system: never inside a transaction; off the event loop where it may be slow."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil


def process_started_at(pid: int) -> float | None:
    """When process ``pid`` started (UNIX seconds), None when it cannot be looked at."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def child_running(pid: int, since: float, before: set[int] | None, tool_name: str | None,
                   tool_input: Any, runs_tool: Callable[[str | None, Any, list[str]], bool],
                   ) -> tuple[list[str] | None, set[int]]:
    """(the argv of a new child process of ``pid`` that runs this tool call (``runs_tool``:
    the harness's :meth:`hookd.harness.base.RemoteAnswers.runs_tool`), or None; the pids of its
    children now). New: not among ``before``
    (the children at an earlier look), or, at the first look (``before`` None), started at or
    after ``since`` (UNIX seconds, less a clock tick). Reads /proc: run it off the event loop."""
    try:
        children = _children(pid)
    except psutil.Error:
        return None, set()
    for child in children:
        try:
            if (child.pid in before) if before is not None else (child.create_time() < since - 0.05):
                continue
            argv = child.cmdline()
        except psutil.Error:
            continue
        if runs_tool(tool_name, tool_input, argv):
            return argv, set()
    return None, {c.pid for c in children}


def _children(pid: int) -> list[psutil.Process]:
    """The child processes of ``pid``: from Linux's /proc/PID/task/TID/children (about 20 us),
    else psutil's scan of every process (milliseconds)."""
    try:
        kids: set[int] = set()
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.update(int(x) for x in f.read().split())
    except OSError:
        return psutil.Process(pid).children()
    out = []
    for k in kids:
        try:
            out.append(psutil.Process(k))
        except psutil.Error:
            continue
    return out


def process_alive(pid: int, started_at: float | None) -> bool:
    """Is process ``pid`` alive and not a zombie? A pid now used by another process (its start
    time more than a second from ``started_at``, UNIX seconds; None: not compared) is not."""
    try:
        p = psutil.Process(pid)
        if started_at is not None and abs(p.create_time() - started_at) > 1.0:
            return False
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def stop_process(pid: int, started_at: float | None, timeout: float) -> str | None:
    """End process ``pid`` (started at ``started_at``, UNIX seconds: a reused pid is left
    alone): SIGTERM, then, if it is still alive after ``timeout`` seconds, SIGKILL to its process
    group when that is not the caller's (every agent hookd starts has one of its own: a tmux
    pane's, or its headless wrapper's; its tools go with it), else to it alone. Blocks up to ``timeout``
    seconds: run it off the event loop. Returns the last signal sent (``SIGTERM``, ``SIGKILL``; None: it was already gone)."""
    if not process_alive(pid, started_at):
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return "SIGTERM"
    # gone once it exited, reaped or not: a process whose parent (a tmux server, the headless
    # wrapper) has not yet collected it is a zombie, and waiting for its pid to vanish
    # (psutil's wait of a process not ours) would wait the whole timeout, then kill a dead agent
    deadline, pause = time.monotonic() + timeout, 0.005
    while process_alive(pid, started_at):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.1)
    else:
        return "SIGTERM"
    try:
        group = os.getpgid(pid)
        if group != os.getpgid(0):
            os.killpg(group, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return "SIGKILL"


def exit_status(run: Any, exits: Path | None, wait_s: float = 2.0, wrapper_wait_s: float = 60.0) -> int | None:
    """The exit status of ``run``'s agent (a :class:`hookd.models.Run` whose process is gone):
    for an interactive run, its tmux pane's (hookd's tmux server keeps a pane whose process
    ended: ``remain-on-exit``, :func:`hookd.runner.start_interactive`), for a headless run the
    file ``exits/<pid>`` its wrapper wrote (read, then removed; ``running <wrapper pid>`` until
    the wrapper wrote the status). 128 + N when signal N ended it; None when not known (no
    such pane or file, or the wrapper gone without writing it). The pane or status may lag
    the process's end: looked for up to ``wait_s`` seconds, and while the headless wrapper
    still runs up to ``wrapper_wait_s`` (on a loaded machine the wrapper can take seconds to
    be scheduled after its agent ended). Blocks: run it off the event loop."""
    start = time.monotonic()
    while True:
        if run.tmux_session and run.tmux_socket:
            status, final = _pane_status(run.tmux_socket, run.tmux_session)
            if status is None:
                status = _zombie_status(run.pid)  # (tmux not told yet: the kernel keeps it meanwhile)
            waiting = False
        else:
            status, final, waiting = _file_status(exits / str(run.pid)) if exits is not None else (None, True, False)
        elapsed = time.monotonic() - start
        if status is not None or final or elapsed >= (wrapper_wait_s if waiting else wait_s):
            return status
        time.sleep(0.05)


def _zombie_status(pid: int) -> int | None:
    """The exit status of process ``pid`` while it is a zombie its parent has not reaped (a
    killed agent whose tmux server was not scheduled yet): field 52 of ``/proc/PID/stat`` (its
    wait status; Linux 3.5 and later), 128 + N when signal N ended it; None when it is not a
    zombie, or not there."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()  # (from field 3: the name may hold spaces)
    if len(fields) < 50 or fields[0] != b"Z":
        return None
    wait = int(fields[49])  # field 52
    return 128 + (wait & 0x7F) if wait & 0x7F else (wait >> 8) & 0xFF


def _pane_status(socket: str, session: str) -> tuple[int | None, bool]:
    """(the pane's exit status once tmux has it, whether looking again is useless: no such
    session or tmux)."""
    tmux = shutil.which("tmux")
    if tmux is None or not os.path.exists(socket):
        return None, True
    r = subprocess.run([tmux, "-S", socket, "display-message", "-p", "-t", f"={session}:",
                        "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}"],
                       capture_output=True, text=True, timeout=10, check=False)
    if r.returncode != 0:
        return None, True
    # (tmux has the status once it reaped the process, and calls the pane dead once its
    # terminal is closed: either may come first, so a dead pane without a status is looked at
    # again; for an agent that exits within milliseconds of its start tmux 3.3 may never have it)
    _, status, sig = (r.stdout.strip().split(":") + ["", "", ""])[:3]
    if sig.isdigit():
        return 128 + int(sig), True
    if status.isdigit():
        return int(status), True
    return None, False


def _file_status(path: Path) -> tuple[int | None, bool, bool]:
    """(the status the wrapper wrote, whether looking again is useless: no such file, or its
    wrapper gone without writing it; whether the wrapper is known to be still running)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None, True, False
    if text.isdigit():
        path.unlink(missing_ok=True)
        return int(text), True, False
    word, _, pid = text.partition(" ")
    if word == "running" and pid.isdigit():  # (an older wrapper's file is empty: no pid to ask)
        if psutil.pid_exists(int(pid)):
            return None, False, True
        try:  # gone: it may have written the status since the read above
            text = path.read_text().strip()
        except OSError:
            return None, True, False
        path.unlink(missing_ok=True)
        return (int(text) if text.isdigit() else None), True, False
    return None, False, False


def close_pane(socket: str | None, session: str | None) -> None:
    """Kill tmux session ``session`` on the server at ``socket`` (a stopped run's pane, kept
    by ``remain-on-exit``); nothing when there is no such session or no tmux."""
    tmux = shutil.which("tmux")
    if tmux is None or not socket or not session or not os.path.exists(socket):
        return
    subprocess.run([tmux, "-S", socket, "kill-session", "-t", f"={session}"], capture_output=True, timeout=10,
                   check=False)
