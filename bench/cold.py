#!/usr/bin/env python3
"""A hook's parts, warm and cold: the core's ingest in-process and its SQL alone, each hook
back to back and after an idle gap (issue 21, "The hook's own cost").

    python bench/cold.py [--hooks 400] [--gap-ms 20] [--rounds 2] [--json]

A hook finds the daemon idle: each one runs with the CPU's caches cold, and costs several
times what the same work costs back to back (bench/daemon_cpu.py). This splits that cost
without a daemon, a socket or HTTP, in this process, on a fresh store in a temp folder. The
payloads: Claude Code 2.1.332's recorded Bash PreToolUse and PostToolUse
(``fixtures/claude-code/2.1.332/print-bash-then-ask/hooks``), in pairs, each pair a new
``tool_use_id``. Three parts, each measured back to back and with ``--gap-ms`` of sleep
before every hook, ``--rounds`` times interleaved:

- ``ingest``: :meth:`hookd.core.Hookd.ingest_hook` (the adapter's parse, the core's
  transaction through the store, the events published): everything but the connection;
- ``store``: :meth:`hookd.store.Store.write` of the hook's two rows alone (its raw bytes in
  ``hook_events``, its ``hook_received`` event) through hookd's transaction;
- ``sqlite``: the same two inserts between ``BEGIN IMMEDIATE`` and ``COMMIT`` on a bare
  ``sqlite3`` connection with the store's pragmas, each statement timed on its own.

Reported: the thread's CPU per hook (``time.thread_time``: the process does nothing else),
median over the hooks after the first 20 of each run, in microseconds; for ``sqlite`` also
per statement. No budget: the figures are in docs/decisions.md "A paced hook's parts".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))

from hookd.config import Home  # noqa: E402
from hookd.core import Hookd  # noqa: E402
from hookd.store import Store, Tx  # noqa: E402

FIXTURE = REPO / "fixtures" / "claude-code" / "2.1.332" / "print-bash-then-ask" / "hooks"
#: hooks of each run left out of its median (the first ones warm the process up)
WARM_UP = 20
#: the statements of the ``sqlite`` part, in order
STATEMENTS = ("begin", "hook_events", "hook_received", "commit")


def payloads(n: int) -> list[bytes]:
    """``n`` payloads: the recorded Bash PreToolUse and PostToolUse in turn, each pair with a
    tool_use_id of its own."""
    pre = (FIXTURE / "004-PreToolUse.json").read_bytes()
    post = (FIXTURE / "005-PostToolUse.json").read_bytes()
    tool_use_id = json.loads(pre)["tool_use_id"].encode()
    out = []
    for i in range(n):
        new = b"toolu_bench%014d" % (i // 2)
        out.append((pre if i % 2 == 0 else post).replace(tool_use_id, new))
    return out


def _median_us(per: list[float]) -> float:
    return round(statistics.median(per[WARM_UP:]) * 1e6, 1)


async def _paced(step: Callable[[int, bytes], Awaitable[Any]], raws: list[bytes], gap_s: float) -> float:
    """``step(i, raw)`` for each payload, ``gap_s`` of sleep before each: its median CPU (us)."""
    per = []
    for i, raw in enumerate(raws):
        if gap_s:
            await asyncio.sleep(gap_s)
        t0 = time.thread_time()
        await step(i, raw)
        per.append(time.thread_time() - t0)
    return _median_us(per)


async def run_ingest(folder: Path, raws: list[bytes], gap_s: float) -> float:
    home = Home.resolve(folder / "home")
    home.db.parent.mkdir(parents=True, exist_ok=True)
    store = await Store(home.db).open()
    core = Hookd(home, store)
    try:
        return await _paced(lambda i, raw: core.ingest_hook("claude-code", "b1", raw, delivery_id=f"d{i}",
                                                            agent_pid=os.getpid()), raws, gap_s)
    finally:
        await store.close()


def _rows(tx: Tx, i: int, raw: bytes) -> None:
    tx.sessions.insert_hook_event(
        delivery_id=f"d{i}", builder="b1", harness="claude-code", source="live", received_at=time.time(),
        raw=raw, hook_event_name="PreToolUse", session_id="s1", tool_name="Bash",
        tool_use_id=f"t{i}", agent_id=None, error=None, hook_kind="tool_before")
    tx.append_event("hook_received", "b1", "s1", time.time(), {"hook_event_name": "PreToolUse", "source": "live"})


async def run_store(folder: Path, raws: list[bytes], gap_s: float) -> float:
    store = await Store(folder / "store.db").open()
    try:
        return await _paced(lambda i, raw: store.write(_rows, i, raw), raws, gap_s)
    finally:
        await store.close()


def run_sqlite(folder: Path, raws: list[bytes], gap_s: float) -> dict[str, float]:
    """The two inserts on a bare connection to a store's schema (made by :class:`Store`)."""
    path = folder / "bare.db"
    asyncio.run(_make_schema(path))
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "wal_autocheckpoint=0"):
        db.execute(f"PRAGMA {pragma}")
    steps: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    total = []
    data = json.dumps({"hook_event_name": "PreToolUse", "source": "live"}).encode()
    for i, raw in enumerate(raws):
        if gap_s:
            time.sleep(gap_s)
        t = [time.thread_time()]
        db.execute("BEGIN IMMEDIATE")
        t.append(time.thread_time())
        db.execute("INSERT INTO hook_events (delivery_id, builder, harness, source, received_at, raw,"
                   " hook_event_name, session_id, tool_name, tool_use_id, agent_id, error, received_mono, hook_kind)"
                   " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(delivery_id) DO NOTHING",
                   (f"d{i}", "b1", "claude-code", "live", time.time(), raw, "PreToolUse", "s1", "Bash",
                    f"t{i}", None, None, 0.0, "tool_before"))
        t.append(time.thread_time())
        db.execute("INSERT INTO events (kind, builder, session_id, at, data) VALUES (?,?,?,?,?)",
                   ("hook_received", "b1", "s1", time.time(), data))
        t.append(time.thread_time())
        db.execute("COMMIT")
        t.append(time.thread_time())
        for k, name in enumerate(STATEMENTS):
            steps[name].append(t[k + 1] - t[k])
        total.append(t[-1] - t[0])
    db.close()
    return {"total": _median_us(total), **{name: _median_us(v) for name, v in steps.items()}}


async def _make_schema(path: Path) -> None:
    await (await Store(path).open()).close()


def measure(part: str, raws: list[bytes], gap_s: float) -> Any:
    with tempfile.TemporaryDirectory(prefix="hookd-cold-") as tmp:
        folder = Path(tmp)
        if part == "sqlite":
            return run_sqlite(folder, raws, gap_s)
        runner: Callable[..., Any] = run_ingest if part == "ingest" else run_store
        return asyncio.run(runner(folder, raws, gap_s))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hooks", type=int, default=400, help="hooks per run")
    ap.add_argument("--gap-ms", type=float, default=20.0, help="idle before each hook of a paced run (ms)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each part and pace, interleaved")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    raws = payloads(args.hooks)
    results: dict[str, list[Any]] = {}
    for _ in range(args.rounds):
        for part in ("ingest", "store", "sqlite"):
            for gap_ms in (0.0, args.gap_ms):
                key = f"{part} {'back to back' if not gap_ms else f'{gap_ms:g} ms apart'}"
                results.setdefault(key, []).append(measure(part, raws, gap_ms / 1000))
    if args.json:
        print(json.dumps({"load": os.getloadavg(), "us_per_hook": results}, indent=2))
        return 0
    print(f"{args.hooks} hooks per run, {args.rounds} runs each; thread CPU per hook, medians (us); "
          f"load {os.getloadavg()[0]:.2f}")
    for key, runs in results.items():
        if isinstance(runs[0], dict):
            print(f"  {key:>24}: " + ", ".join(str(r["total"]) for r in runs))
            for name in STATEMENTS:
                print(f"  {'':>24}    {name}: " + ", ".join(str(r[name]) for r in runs))
        else:
            print(f"  {key:>24}: " + ", ".join(str(r) for r in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
