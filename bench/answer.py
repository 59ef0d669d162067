#!/usr/bin/env python3
"""Answer latency benchmark: remote answer to held hook released, event-driven (budget: <= 50 ms).

    python bench/answer.py [--runs 50] [--json]

Starts a real daemon in a temp home and spawns a builder. Per run: its generated PreToolUse
hook records a fresh AskUserQuestion call, then its generated PermissionRequest hook is
started exactly as Claude Code starts it (``sh -c``, the payload on stdin) and held by the
daemon. Measured: from the answer request (``POST /v1/interactions/{id}/answer`` over the
Unix socket, as ``hookd answer`` sends it) to the held hook's exit with the decision (allow,
the original questions plus the answers) on its stdout. Exit 1 if the median exceeds 50 ms.
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
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))

from hookd.daemonproc import DaemonProcess, wait_until  # noqa: E402

sys.path.insert(0, os.fspath(REPO / "bench"))
from latency import report  # noqa: E402

HOOKS = REPO / "fixtures/claude-code/2.1.332/tui-ask-answered-at-terminal/hooks"
PRE = json.loads((HOOKS / "007-PreToolUse.json").read_bytes())
PERM = json.loads((HOOKS / "008-PermissionRequest.json").read_bytes())
Q = PRE["tool_input"]["questions"][0]["question"]
BUDGET_MS = 50.0


def command(settings: Path, event: str) -> str:
    data = json.loads(settings.read_text())
    return next(h["command"] for g in data["hooks"][event] for h in g["hooks"] if "# hookd builder=" in h["command"])


def armed_builder(daemon: DaemonProcess, tmp: Path) -> tuple[Path, str, str]:
    """Spawn builder b1 into ``tmp/wt`` (its PermissionRequest held up to 60 s); returns the
    worktree and its generated PreToolUse and PermissionRequest commands."""
    wt = tmp / "wt"
    wt.mkdir()
    subprocess.run(daemon.cli_args("spawn", "b1", "--worktree", os.fspath(wt), "--hold", "60"), check=True,
                   capture_output=True)
    settings = wt / ".claude" / "settings.local.json"
    return wt, command(settings, "PreToolUse"), command(settings, "PermissionRequest")


def held_prompt(client: Any, wt: Path, pre_cmd: str, perm_cmd: str, i: int) -> tuple[str, subprocess.Popen[bytes]]:
    """Run ``i``'s: the PreToolUse hook of a fresh AskUserQuestion call, then its
    PermissionRequest hook as Claude Code starts it (``sh -c``, the payload on stdin), until
    the daemon holds it. Returns the call's id and the held hook's process."""
    tid = f"toolu_bench_{i:04d}"
    pre = dict(PRE, tool_use_id=tid, session_id=f"s-bench-{i}")
    perm = dict(PERM, session_id=f"s-bench-{i}")
    subprocess.run(["sh", "-c", pre_cmd], input=json.dumps(pre).encode(), cwd=wt, check=True, capture_output=True)
    p = subprocess.Popen(["sh", "-c", perm_cmd], cwd=wt, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(json.dumps(perm).encode())
    p.stdin.close()
    wait_until(lambda: tid in client.get("/v1/status")["held"], 10, 0.002, "the hook to be held")
    return tid, p


def released(p: subprocess.Popen[bytes], i: int) -> None:
    """Wait for held hook ``p``'s exit; SystemExit unless it allowed with the answer Blue."""
    assert p.stdout is not None
    out = p.stdout.read()
    rc = p.wait(10)
    decision = json.loads(out)["hookSpecificOutput"]["decision"] if out else None
    if rc != 0 or not decision or decision["updatedInput"]["answers"] != {Q: "Blue"}:
        raise SystemExit(f"run {i}: held hook exited {rc} with {out[:200]!r}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hookd-bench-answer-"))
    daemon = DaemonProcess(tmp / "home")
    samples: list[float] = []
    try:
        daemon.start()
        wt, pre_cmd, perm_cmd = armed_builder(daemon, tmp)
        client = daemon.client()
        for i in range(args.runs):
            tid, p = held_prompt(client, wt, pre_cmd, perm_cmd, i)
            t0 = time.perf_counter()
            client.post_json(f"/v1/interactions/{tid}/answer", {"options": ["Blue"], "surface": "cli"})
            released(p, i)
            dt = time.perf_counter() - t0
            samples.append(dt)
        client.close()
    finally:
        daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return report(samples, BUDGET_MS, "answer -> held PermissionRequest hook released with the decision", args.json)


if __name__ == "__main__":
    sys.exit(main())
