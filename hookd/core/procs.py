"""The core's look at processes (psutil and Linux's /proc): an agent's start time (recorded
with its pid, for lane liveness) and its children (a held prompt's tool seen running). Each call
reads the system: never inside a transaction; off the event loop where it may be slow."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
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
    group when it leads one (as every agent hookd starts does: its tools go with it), else to it
    alone. Blocks up to ``timeout`` seconds: run it off the event loop. Returns the last signal
    sent (``SIGTERM``, ``SIGKILL``; None: it was already gone)."""
    if not process_alive(pid, started_at):
        return None
    try:
        os.kill(pid, signal.SIGTERM)
        psutil.Process(pid).wait(timeout)
        return "SIGTERM"
    except (ProcessLookupError, psutil.NoSuchProcess):
        return "SIGTERM"
    except psutil.TimeoutExpired:
        pass
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return "SIGKILL"
