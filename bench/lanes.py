#!/usr/bin/env python3
"""hookd lanes benchmark: ``GET /v1/lanes`` at fleet size, and what it does to hooks meanwhile.

    python bench/lanes.py [--builders 1000,10000] [--sessions 3] [--requests 5] [--json]

For each fleet size N: a home pre-populated in-process (the core and the store, no HTTP:
``Hookd.ingest_hook``) with N builders, each with ``--sessions`` sessions (SessionStart,
UserPromptSubmit, a Bash PreToolUse/PostToolUse pair; the last session of every 10th builder
left on an open AskUserQuestion, of every 4th idle after a Stop, the rest working; no
``transcript_path``: following 30,000 transcripts is the tailer's cost, not the lanes'), every
7th builder with a queued message, every agent with a live process (``CLAUDE_PID``: one
``sleep`` child of this script, so every lane's liveness is checked), and a spawn manifest per
builder (copied from one real ``spawn``, the builder renamed: what ``spawn`` writes, without
10,000 spawns' minutes). Then a real daemon (hookd.daemonproc.DaemonProcess) on that home,
waited for until its lane watcher has recorded every lane, and measured:

1. ``/v1/lanes``: ``--requests`` requests one after the other, client-observed seconds (the
   whole reply read), median and max;
2. hooks while ``/v1/lanes`` runs: this process posts hooks back to back the way the compiled
   client does (a new Unix-socket connection, ``Connection: close``; a Bash PreToolUse of a
   builder of the fleet) while a child process runs the lanes requests; the hooks' round trips (p50,
   p99, max) during the lanes requests, and the same hooks' round trips with no lanes request
   (the baseline, measured first).

Reported per N: lanes median/max (s), hook p50/p99/max during lanes and baseline (ms). The
worst hook during lanes is what the issue asked about ("a hook stalled 1.4 s while it ran").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))

from hookd.config import Home  # noqa: E402
from hookd.daemonproc import DaemonProcess, wait_until  # noqa: E402

TUI = REPO / "fixtures" / "claude-code" / "2.1.332" / "tui-ask-answered-at-terminal" / "hooks"
T = {name: json.loads((TUI / f).read_bytes()) for name, f in (
    ("SessionStart", "001-SessionStart.json"), ("UserPromptSubmit", "002-UserPromptSubmit.json"),
    ("PreToolUse", "004-PreToolUse.json"), ("PostToolUse", "005-PostToolUse.json"),
    ("AskPre", "007-PreToolUse.json"), ("Stop", "012-Stop.json"))}


def session_hooks(builder: str, s: int, last: bool, i: int) -> list[bytes]:
    sid = f"lanes-{builder}-{s}"
    names = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"]
    if last and i % 10 == 0:
        names.append("AskPre")
    elif not last or i % 4 == 0:
        names.append("Stop")
    out = []
    for k, name in enumerate(names):
        d = dict(T[name], session_id=sid)
        d.pop("transcript_path", None)  # (30,000 transcripts to follow are the tailer's cost, not the lanes')
        if "tool_use_id" in d:
            d["tool_use_id"] = f"toolu_{builder}_{s}_{k - k % 2}"
        out.append(json.dumps(d).encode())
    return out


def prepopulate(home: Path, n: int, sessions: int, pid: int) -> float:
    """Fill ``home`` with ``n`` builders (see the module doc). Returns seconds taken."""
    from hookd.core import Hookd
    from hookd.spawn import spawn
    from hookd.store import Store

    h = Home.resolve(home)
    h.ensure()
    t0 = time.perf_counter()
    first = spawn(h, "lanes0", settings_file=home.parent / "lanes0.json", mcp=False, hold_s=0)
    text = json.dumps(first)
    for i in range(1, n):
        b = f"lanes{i}"
        (h.builders_dir / f"{b}.json").write_text(text.replace('"lanes0', f'"{b}').replace("/lanes0.json", f"/{b}.json"))

    async def main() -> None:
        store = await Store(h.db).open()
        core = Hookd(h, store)
        k = 0
        try:
            for i in range(n):
                b = f"lanes{i}"
                for s in range(sessions):
                    for body in session_hooks(b, s, s == sessions - 1, i):
                        await core.ingest_hook("claude-code", b, body, delivery_id=f"pre-{k}", agent_pid=pid)
                        k += 1
                if i % 7 == 0:
                    await core.send_message(b, f"note for {b}")
                if i % 500 == 499:
                    await asyncio.sleep(0)  # (the store's checkpoint task runs)
        finally:
            await core.close()
            await store.close()

    asyncio.run(main())
    return time.perf_counter() - t0


def hook_round_trip(home: Home, body: bytes, delivery: str) -> float:
    """One hook as the compiled client sends it; seconds to the end of the reply."""
    req = (b"POST /v1/hooks/claude-code/lanes1 HTTP/1.1\r\nHost: hookd\r\nX-Hookd-Delivery: %s\r\n"
           b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (delivery.encode(), len(body), body))
    t0 = time.perf_counter()
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(os.fspath(home.socket_path))
    s.sendall(req)
    out = b""
    while chunk := s.recv(65536):
        out += chunk
    s.close()
    dt = time.perf_counter() - t0
    assert out.startswith(b"HTTP/1.1 200 "), out[:200]
    return dt


def lanes_request(home: Home) -> tuple[float, int]:
    from hookd.client import Client

    c = Client(home, timeout=600)
    try:
        t0 = time.perf_counter()
        lanes = c.get("/v1/lanes")
        return time.perf_counter() - t0, len(lanes)
    finally:
        c.close()


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))] * 1e3 if s else float("nan")


def hooks_while(home: Home, busy: threading.Event | None, n_min: int, tag: str) -> list[float]:
    """Post hooks back to back until ``busy`` clears (or ``n_min`` hooks when None)."""
    out = []
    i = 0
    while (busy is not None and (busy.is_set() or i < 1)) or (busy is None and i < n_min):
        d = dict(T["PreToolUse"], session_id="lanes-lanes1-0", tool_use_id=f"toolu_bench_{tag}_{i}")
        out.append(hook_round_trip(home, json.dumps(d).encode(), f"{tag}-{i}"))
        i += 1
    return out


def run(n: int, sessions: int, requests: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"hookd-lanes-{n}-"))
    agent = subprocess.Popen(["sleep", "100000"])
    try:
        fill_s = prepopulate(tmp / "home", n, sessions, agent.pid)
        d = DaemonProcess(tmp / "home").start(timeout=600)
        try:
            home = d.home
            wait_until(lambda: _recorded(home) >= n, 900, interval=0.5, what="the lane watcher to record every lane")
            baseline = hooks_while(home, None, 200, "base")
            # the lanes requests from another process: decoding their replies must not hold
            # this process's GIL while it times hooks
            child = subprocess.Popen([sys.executable, __file__, "--lanes-of", os.fspath(home.root),
                                      "--requests", str(requests)], stdout=subprocess.PIPE)
            busy = threading.Event()
            busy.set()
            threading.Thread(target=lambda: (child.wait(), busy.clear()), daemon=True).start()
            during = hooks_while(home, busy, 0, "during")
            out, _ = child.communicate()
            assert child.returncode == 0
            lanes_s, counts = json.loads(out)
            assert all(c == n for c in counts), counts
            return {
                "builders": n, "sessions": n * sessions, "prepopulate_s": round(fill_s, 1),
                "lanes_median_s": round(statistics.median(lanes_s), 3), "lanes_max_s": round(max(lanes_s), 3),
                "hooks_during": len(during),
                "hook_during_p50_ms": round(pct(during, 0.5), 2), "hook_during_p99_ms": round(pct(during, 0.99), 2),
                "hook_during_max_ms": round(max(during) * 1e3, 2),
                "hook_base_p50_ms": round(pct(baseline, 0.5), 2), "hook_base_p99_ms": round(pct(baseline, 0.99), 2),
                "hook_base_max_ms": round(max(baseline) * 1e3, 2),
            }
        finally:
            d.stop(timeout=60)
            d.kill()
    finally:
        agent.kill()
        agent.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def _recorded(home: Home) -> int:
    import sqlite3

    db = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
    try:
        return db.execute("SELECT COUNT(*) FROM lanes").fetchone()[0]
    finally:
        db.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builders", default="1000,10000", help="fleet sizes, comma-separated")
    ap.add_argument("--sessions", type=int, default=3, help="sessions per builder")
    ap.add_argument("--requests", type=int, default=5, help="/v1/lanes requests per fleet size")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--lanes-of", help=argparse.SUPPRESS)  # (the child: lanes requests to this home)
    args = ap.parse_args()
    if args.lanes_of:
        got = [lanes_request(Home.resolve(args.lanes_of)) for _ in range(args.requests)]
        print(json.dumps([[t for t, _ in got], [c for _, c in got]]))
        return 0
    results = []
    for n in (int(x) for x in args.builders.split(",")):
        r = run(n, args.sessions, args.requests)
        results.append(r)
        if not args.json:
            print(f"{n} builders ({r['sessions']} sessions; filled in {r['prepopulate_s']} s): /v1/lanes median "
                  f"{r['lanes_median_s']} s, max {r['lanes_max_s']} s; hooks during it ({r['hooks_during']}): p50 "
                  f"{r['hook_during_p50_ms']} ms, p99 {r['hook_during_p99_ms']} ms, max {r['hook_during_max_ms']} ms "
                  f"(without: p50 {r['hook_base_p50_ms']}, p99 {r['hook_base_p99_ms']}, max {r['hook_base_max_ms']} ms)",
                  flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
