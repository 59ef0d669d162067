#!/usr/bin/env python3
"""Inbox latency benchmark: `send` to delivery-ready, event-driven (budget: <= 50 ms).

    python bench/inbox.py [--runs 50] [--json]

Starts a real daemon in a temp home, spawns a builder, makes its agent idle (its regular Stop
hook ran) and starts the generated idle-wake Stop hook exactly as Claude Code does (``sh -c``,
the Stop payload on stdin). Then measures, per run, the time from the `send` request (HTTP
over the Unix socket, as the CLI sends it) to the wake hook's exit with the message on its
stderr: the message handed to a waiting hook. Exit 1 if the median exceeds 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))

from hookd.daemonproc import DaemonProcess, wait_until  # noqa: E402

sys.path.insert(0, os.fspath(REPO / "bench"))
from latency import report  # noqa: E402

STOP = json.loads((REPO / "fixtures/claude-code/2.1.332/tui-ask-answered-at-terminal/hooks/012-Stop.json").read_bytes())
BUDGET_MS = 50.0


def commands(settings: Path) -> tuple[str, str]:
    data = json.loads(settings.read_text())
    regular = [h["command"] for g in data["hooks"]["Stop"] for h in g["hooks"] if not h.get("asyncRewake")]
    wake = [h["command"] for g in data["hooks"]["Stop"] for h in g["hooks"] if h.get("asyncRewake")]
    return regular[0], wake[0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hookd-bench-inbox-"))
    daemon = DaemonProcess(tmp / "home")
    samples: list[float] = []
    try:
        daemon.start()
        wt = tmp / "wt"
        wt.mkdir()
        subprocess.run(daemon.cli_args("spawn", "b1", "--worktree", os.fspath(wt), "--wake-wait", "60"), check=True,
                       capture_output=True)
        regular, wake = commands(wt / ".claude" / "settings.local.json")
        client = daemon.client()
        for i in range(args.runs):
            stop = dict(STOP, session_id=f"s-bench-{i}")  # a fresh idle session each run
            raw = json.dumps(stop).encode()
            subprocess.run(["sh", "-c", regular], input=raw, cwd=wt, check=True, capture_output=True)
            p = subprocess.Popen(["sh", "-c", wake], cwd=wt, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)
            p.stdin.write(raw)
            p.stdin.close()
            # the wake request has reached the daemon when its connection is open: wait for
            # the hook to be blocked on its reply (it never exits by itself within 60 s)
            wait_until(lambda: _waiting(p.pid), 5, 0.002, "the wake hook to wait")
            t0 = time.perf_counter()
            client.post_json("/v1/builders/b1/messages", {"text": f"bench {i}", "session_id": stop["session_id"]})
            err = p.stderr.read()
            rc = p.wait(10)
            dt = time.perf_counter() - t0
            if rc != 2 or f"bench {i}".encode() not in err:
                raise SystemExit(f"run {i}: wake hook exited {rc}, stderr {err[:200]!r}")
            samples.append(dt)
        client.close()
    finally:
        daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return report(samples, BUDGET_MS, "send -> waiting hook released with the message", args.json)


def _waiting(pid: int) -> bool:
    """True once the wake hook's client has its connection to the daemon open (its request is
    in flight): the Unix socket for the compiled client, loopback TCP for the bash one."""
    import psutil

    try:
        for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
            if proc.net_connections("all"):
                return True
    except psutil.NoSuchProcess:
        return False
    return False


if __name__ == "__main__":
    sys.exit(main())
