#!/usr/bin/env python3
"""hookd load benchmark: many builders hooking at once, measured inside the daemon.

    python bench/load.py [--builders 50] [--hooks 200] [--scale-builders 1,10,50,100,200]
                         [--scale-events 1000,10000,100000] [--million] [--explain] [--json]

Starts real daemons (hookd.daemonproc.DaemonProcess) in temp homes with
``HOOKD_HOOK_TIMINGS=1``, so each hook request's handling time is recorded by the daemon
itself (from its arrival in the app to the reply handed to the transport; read back at
``GET /v1/debug/hook-timings``). Every builder is one simulated agent: its own session, a
SessionStart, a UserPromptSubmit, then Bash PreToolUse/PostToolUse pairs with fresh
tool_use_ids (the PostToolUse is a turn boundary: the inbox is checked), a Stop every 20
hooks. Measured:

1. raw HTTP: N builders (default 50) each on its own keep-alive connection over the Unix
   socket, all at once: daemon-side p50/p99, the client's p50/p99, durable hooks/s and
   events/s (rows committed per second of wall time, from ``/v1/status`` counts), RSS;
2. the generated clients: N builders spawned with ``hookd spawn``, each running its own
   generated command as Claude Code does (``sh -c "<command>"``, payload on stdin), all at
   once: daemon-side p50/p99, round trip p50/p99, hooks/s;
3. how the cost grows with the builders (raw, 1 to 200, a fresh daemon each) and with the
   stored events (1k to 100k; 1M with --million): a home pre-populated in-process through
   the core and the store (``Hookd.ingest_hook``, no HTTP), then 50 raw builders; plus the
   client-observed time of the hot reads (status, lanes, questions, events);
4. --explain: the SQL one hook of each kind runs (sqlite3 trace of the writer connection)
   and each statement's EXPLAIN QUERY PLAN; statements that SCAN a table are flagged.

Budget (exit 1 when missed, in part 1): daemon-side p50 < 0.5 ms and p99 < 2 ms with 50
builders, >= 5,000 durable hook events/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sqlite3
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

import psutil  # noqa: E402

from hookd.config import Home  # noqa: E402
from hookd.daemonproc import DaemonProcess  # noqa: E402
from hookd.spawn import spawn  # noqa: E402

HOOKS = REPO / "fixtures" / "claude-code" / "2.1.332" / "print-bash-then-ask" / "hooks"
TUI = REPO / "fixtures" / "claude-code" / "2.1.332" / "tui-ask-answered-at-terminal" / "hooks"
TEMPLATES = {name: json.loads((HOOKS / f).read_bytes()) for name, f in (
    ("SessionStart", "001-SessionStart.json"), ("UserPromptSubmit", "002-UserPromptSubmit.json"),
    ("PreToolUse", "004-PreToolUse.json"), ("PostToolUse", "005-PostToolUse.json"), ("Stop", "009-Stop.json"),
)}
TEMPLATES["AskPre"] = json.loads((TUI / "007-PreToolUse.json").read_bytes())
TEMPLATES["AskPost"] = json.loads((TUI / "010-PostToolUse.json").read_bytes())
P50_MS, P99_MS, MIN_RATE = 0.5, 2.0, 5000.0
#: Where the last run's figures go (gitignored): results/load.json.
RESULTS = Path(__file__).resolve().parent / "results"


def payloads(builder: str, n: int, offset: int = 0) -> list[bytes]:
    """The hooks of one simulated agent: SessionStart, UserPromptSubmit, then Bash
    PreToolUse/PostToolUse pairs (fresh tool_use_ids), an AskUserQuestion asked and answered
    every 50 hooks (an interaction), a Stop every 20 hooks."""
    sid = f"load-{builder}-{offset}"
    out = []
    for k in range(n):
        if k == 0:
            name = "SessionStart"
        elif k == 1:
            name = "UserPromptSubmit"
        elif k % 20 == 19:
            name = "Stop"
        elif k % 50 in (10, 11):
            name = "AskPre" if k % 2 == 0 else "AskPost"
        else:
            name = "PreToolUse" if k % 2 == 0 else "PostToolUse"
        d = dict(TEMPLATES[name], session_id=sid, transcript_path=f"/nonexistent/{sid}.jsonl")
        if "tool_use_id" in d:
            d["tool_use_id"] = f"toolu_{builder}_{offset}_{k - k % 2}"
        out.append(json.dumps(d).encode())
    return out


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))] * 1e3 if s else float("nan")


def summary(samples: list[float]) -> dict[str, float]:
    return {"n": len(samples), "p50_ms": pct(samples, 0.50), "p90_ms": pct(samples, 0.90), "p99_ms": pct(samples, 0.99),
            "max_ms": max(samples) * 1e3 if samples else float("nan")}


class Daemon:
    """A daemon with in-daemon hook timings on."""

    def __init__(self, home: Path):
        self.home = home
        self.d = DaemonProcess(home, env={**os.environ, "HOOKD_HOOK_TIMINGS": "1"})

    def __enter__(self) -> "Daemon":
        self.d.start(timeout=600)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.d.stop()
        self.d.kill()

    @property
    def sock(self) -> str:
        return os.fspath(Home.resolve(self.home).socket_path)

    def get(self, path: str) -> tuple[Any, float]:
        import httpx

        with httpx.Client(transport=httpx.HTTPTransport(uds=self.sock), base_url="http://hookd", timeout=600) as c:
            t0 = time.perf_counter()
            r = c.get(path)
            dt = time.perf_counter() - t0
            r.raise_for_status()
            ct = r.headers.get("content-type", "")
            return (r.json() if ct.startswith("application/json") else r.content), dt

    def timings(self) -> list[float]:
        return self.get("/v1/debug/hook-timings")[0]

    def counts(self) -> dict[str, int]:
        return self.get("/v1/status")[0]["counts"]

    def rss_mb(self) -> float:
        assert self.d.proc is not None
        return psutil.Process(self.d.proc.pid).memory_info().rss / 2**20


# --- raw HTTP ------------------------------------------------------------------------------


async def _raw_builder(sock: str, builder: str, bodies: list[bytes], lat: list[float], start: asyncio.Event,
                       rate: float = 0.0) -> None:
    """One agent on its own keep-alive connection: back to back (rate 0), or ``rate`` hooks/s
    (open loop: at fixed times from a random phase, whatever the replies take)."""
    import random

    r, w = await asyncio.open_unix_connection(sock)
    await start.wait()
    loop = asyncio.get_running_loop()
    t_next = loop.time() + (random.random() / rate if rate else 0.0)
    for k, body in enumerate(bodies):
        if rate:
            await asyncio.sleep(max(0.0, t_next - loop.time()))
            t_next += 1.0 / rate
        req = (b"POST /v1/hooks/claude-code/%s HTTP/1.1\r\nHost: hookd\r\nContent-Type: application/json\r\n"
               b"X-Hookd-Delivery: %s-%d-%d\r\nContent-Length: %d\r\n\r\n" % (
                   builder.encode(), builder.encode(), os.getpid(), k, len(body))) + body
        t0 = time.perf_counter()
        w.write(req)
        head = await r.readuntil(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                n = int(line[15:])
        if n:
            await r.readexactly(n)
        lat.append(time.perf_counter() - t0)
        if not head.startswith(b"HTTP/1.1 200 "):
            raise RuntimeError(f"{builder}: {head[:60]!r}")
    w.close()


def run_raw(daemon: Daemon, builders: int, hooks: int, tag: str = "b", rate: float = 0.0) -> dict[str, Any]:
    """``builders`` agents at once over raw keep-alive HTTP; ``hooks`` each, back to back
    (rate 0: saturating, for throughput) or ``rate`` hooks/s each (for latency)."""
    names = [f"{tag}{i}" for i in range(builders)]
    bodies = {b: payloads(b, hooks, offset=int(time.time() * 1000)) for b in names}
    before = daemon.counts()
    daemon.timings()  # clear
    lat: list[float] = []

    async def main() -> float:
        start = asyncio.Event()
        tasks = [asyncio.create_task(_raw_builder(daemon.sock, b, bodies[b], lat, start, rate)) for b in names]
        await asyncio.sleep(0.05)
        t0 = time.perf_counter()
        start.set()
        await asyncio.gather(*tasks)
        return time.perf_counter() - t0

    wall = asyncio.run(main())
    after = daemon.counts()
    server = daemon.timings()
    stored = after["hook_events"] - before["hook_events"]
    if stored != builders * hooks:
        raise RuntimeError(f"stored {stored} hooks, sent {builders * hooks}")
    return {"builders": builders, "hooks": builders * hooks, "rate_per_builder": rate, "wall_s": wall,
            "hooks_per_s": stored / wall, "events_per_s": (after["events"] - before["events"]) / wall,
            "daemon": summary(server), "client": summary(lat), "rss_mb": daemon.rss_mb()}


# --- generated clients ------------------------------------------------------------------


def run_generated(tmp: Path, daemon: Daemon, builders: int, hooks: int) -> dict[str, Any]:
    """``builders`` agents at once, each running its generated command (``sh -c``)."""
    home = Home.resolve(daemon.home)
    commands = {}
    for i in range(builders):
        b = f"g{i}"
        commands[b] = spawn(home, b, settings_file=tmp / f"{b}.json", hold_s=0, mcp=False)["command"]
    sh = shutil.which("sh") or "/bin/sh"
    before = daemon.counts()
    daemon.timings()
    lat: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(builders + 1)
    errors: list[str] = []

    def agent(b: str) -> None:
        bodies = payloads(b, hooks, offset=int(time.time() * 1000))
        barrier.wait()
        for body in bodies:
            t0 = time.perf_counter()
            r = subprocess.run([sh, "-c", commands[b]], input=body, capture_output=True, cwd=tmp)
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
                if r.returncode != 0:
                    errors.append(f"{b}: exit {r.returncode}")

    threads = [threading.Thread(target=agent, args=(b,)) for b in commands]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    after = daemon.counts()
    if errors:
        raise RuntimeError(errors[:5])
    stored = after["hook_events"] - before["hook_events"]
    if stored != builders * hooks or after["spooled"]:
        raise RuntimeError(f"stored {stored} of {builders * hooks} hooks, {after['spooled']} spooled")
    return {"builders": builders, "hooks": builders * hooks, "wall_s": wall, "hooks_per_s": stored / wall,
            "daemon": summary(daemon.timings()), "round_trip": summary(lat), "rss_mb": daemon.rss_mb()}


# --- stored events ------------------------------------------------------------------------


def prepopulate(home: Path, n: int, builders: int = 50) -> float:
    """Store ``n`` hooks in ``home`` in-process (the core and the store, no HTTP): builders'
    agents as in :func:`payloads`. Returns seconds taken."""
    from hookd.core import Hookd
    from hookd.store import Store

    h = Home.resolve(home)
    h.ensure()

    async def main() -> None:
        store = await Store(h.db).open()
        core = Hookd(h, store)
        checkpoint = sqlite3.connect(h.db)
        per = max(1, n // builders)
        k = 0
        try:
            for i in range(builders):
                b = f"old{i}"
                for j in range(0, per, 1000):
                    for m, body in enumerate(payloads(b, min(1000, per - j), offset=j)):
                        if m % 50 == 5:  # a message for the agent, delivered at its next PostToolUse
                            await core.send_message(b, f"note {k}: also update the changelog")
                        await core.ingest_hook("claude-code", b, body, delivery_id=f"pre-{k}")
                        k += 1
                    # this loop never yields to the store's checkpoint task: keep the WAL
                    # from growing by ~24 KB per hook (it reached 13 GB on the way to 1M)
                    checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            checkpoint.close()
            await core.close()
            await store.close()

    t0 = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - t0


def hot_reads(daemon: Daemon) -> dict[str, float]:
    out = {}
    last = daemon.counts()["events"]
    for path in ("/v1/status", "/v1/lanes", "/v1/questions?state=all", f"/v1/events?after={max(0, last - 100)}",
                 "/v1/messages"):
        times = [daemon.get(path)[1] for _ in range(5)]
        out[path] = statistics.median(times) * 1e3
    return out


# --- EXPLAIN QUERY PLAN -------------------------------------------------------------------


def explain(tmp: Path) -> list[dict[str, Any]]:
    """The statements one hook of each kind runs on the writer, with their query plans."""
    from hookd.core import Hookd
    from hookd.store import Store

    h = Home.resolve(tmp / "explain")
    h.ensure()
    seen: dict[str, None] = {}

    async def main() -> None:
        store = await Store(h.db).open()
        core = Hookd(h, store)
        try:
            for body in payloads("warm", 60):  # some history first
                await core.ingest_hook("claude-code", "warm", body)
            store._w.set_trace_callback(lambda sql: seen.setdefault(" ".join(sql.split()), None))  # type: ignore[union-attr]  # noqa: E501
            for body in payloads("x", 40):
                await core.ingest_hook("claude-code", "x", body)
            store._w.set_trace_callback(None)  # type: ignore[union-attr]
        finally:
            await core.close()
            await store.close()

    asyncio.run(main())
    db = sqlite3.connect(h.db)
    out = []
    shapes: set[str] = set()
    for sql in seen:  # (the trace gives statements with their values bound)
        if sql.split()[0].upper() not in ("SELECT", "UPDATE", "DELETE", "INSERT"):
            continue
        shape = re.sub(r"x'[0-9a-f]*'|'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b", "?", sql)
        if shape in shapes:
            continue
        shapes.add(shape)
        try:
            plan = [r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql)]
        except sqlite3.Error as e:
            plan = [f"(not explained: {e})"]
        if plan or not sql.upper().startswith("INSERT"):
            out.append({"sql": shape, "plan": plan,
                        "scan": any(p.startswith("SCAN") and "COVERING" not in p for p in plan)})
    return out


# --- main ---------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builders", type=int, default=50)
    ap.add_argument("--rate", type=float, default=20.0,
                    help="hooks/s per builder in the latency runs (default 20: 1,000/s with 50 builders)")
    ap.add_argument("--hooks", type=int, default=200, help="hooks per builder (default 200)")
    ap.add_argument("--generated-hooks", type=int, default=10, help="hooks per builder, generated clients")
    ap.add_argument("--scale-builders", default="1,10,50,100,200")
    ap.add_argument("--scale-events", default="1000,10000,100000")
    ap.add_argument("--million", action="store_true", help="also 1,000,000 stored events (several minutes)")
    ap.add_argument("--explain", action="store_true", help="print the hook path's query plans")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: raw,generated,builders,events")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    skip = set(args.skip.split(",")) - {""}

    tmp = Path(tempfile.mkdtemp(prefix="hookd-load-"))
    res: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0], "python": sys.version.split()[0]},
    }
    total_rate = args.builders * args.rate
    try:
        if "raw" not in skip:
            with Daemon(tmp / "raw") as d:
                run_raw(d, args.builders, 20, tag="warm")  # warm-up
                res["latency"] = run_raw(d, args.builders, args.hooks, tag="lat", rate=args.rate)
                res["throughput"] = run_raw(d, args.builders, args.hooks, tag="thr")
        if "generated" not in skip:
            with Daemon(tmp / "gen") as d:
                res["generated"] = run_generated(tmp, d, args.builders, args.generated_hooks)
        if "builders" not in skip:
            res["scale_builders"] = []
            for n in [int(x) for x in args.scale_builders.split(",") if x]:
                with Daemon(tmp / f"sb{n}") as d:
                    run_raw(d, n, 10, tag="warm")
                    per = max(20, int(5 * total_rate) // n)  # ~5 s at the total rate
                    lat = run_raw(d, n, per, tag="lat", rate=total_rate / n)
                    thr = run_raw(d, n, max(20, 4000 // n), tag="thr")
                    res["scale_builders"].append({**lat, "throughput_hooks_per_s": thr["hooks_per_s"],
                                                  "throughput_daemon": thr["daemon"]})
        if "events" not in skip:
            res["scale_events"] = []
            sizes = [int(x) for x in args.scale_events.split(",") if x] + ([1_000_000] if args.million else [])
            for n in sizes:
                home = tmp / f"se{n}"
                took = prepopulate(home, n)
                with Daemon(home) as d:
                    stored = d.counts()
                    lat = run_raw(d, args.builders, 100, tag="lat", rate=args.rate)
                    thr = run_raw(d, args.builders, 100, tag="thr")
                    lat.update({"stored_hooks": stored["hook_events"], "stored_events": stored["events"],
                                "prepopulate_s": took, "reads_ms": hot_reads(d),
                                "db_mb": Home.resolve(home).db.stat().st_size / 2**20,
                                "throughput_hooks_per_s": thr["hooks_per_s"]})
                    res["scale_events"].append(lat)
        if args.explain:
            res["explain"] = explain(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ok = True
    if "latency" in res:
        lat, thr = res["latency"], res["throughput"]
        res["budget"] = [
            {"check": f"daemon-side p50, {lat['builders']} builders at {total_rate:.0f} hooks/s (ms)",
             "value": lat["daemon"]["p50_ms"], "limit": P50_MS, "ok": lat["daemon"]["p50_ms"] < P50_MS},
            {"check": f"daemon-side p99, {lat['builders']} builders at {total_rate:.0f} hooks/s (ms)",
             "value": lat["daemon"]["p99_ms"], "limit": P99_MS, "ok": lat["daemon"]["p99_ms"] < P99_MS},
            {"check": f"durable hook events/s, {thr['builders']} builders back to back", "value": thr["hooks_per_s"],
             "limit": MIN_RATE, "ok": thr["hooks_per_s"] >= MIN_RATE},
        ]
        ok = all(b["ok"] for b in res["budget"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "load.json").write_text(json.dumps(res, indent=2) + "\n")
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        report(res)
    return 0 if ok else 1


def _line(label: str, r: dict[str, Any], extra: str = "") -> str:
    d = r["daemon"]
    return (f"{label:<34} daemon p50 {d['p50_ms']:6.3f}  p99 {d['p99_ms']:6.3f} ms | {r['hooks_per_s']:7.0f} hooks/s"
            f" | RSS {r['rss_mb']:5.1f} MB{extra}")


def report(res: dict[str, Any]) -> None:
    m = res["machine"]
    print(f"hookd load bench, {res['date']}: {m['cpus']} CPUs, load average {m['load_avg_1m']:.2f}, python {m['python']}")
    if "latency" in res:
        r = res["latency"]
        c = r["client"]
        print(_line(f"raw, {r['builders']} builders at {r['rate_per_builder']:.0f}/s each", r,
                    f" | client p50 {c['p50_ms']:.2f} p99 {c['p99_ms']:.2f} ms"))
        r = res["throughput"]
        c = r["client"]
        print(_line(f"raw, {r['builders']} builders back to back", r,
                    f" | {r['events_per_s']:.0f} events/s | client p50 {c['p50_ms']:.2f} p99 {c['p99_ms']:.2f} ms"))
    if "generated" in res:
        r = res["generated"]
        rt = r["round_trip"]
        print(_line(f"generated sh -c, {r['builders']} builders", r,
                    f" | round trip p50 {rt['p50_ms']:.1f} p99 {rt['p99_ms']:.1f} ms"))
    for r in res.get("scale_builders", []):
        print(_line(f"raw, {r['builders']} builders, {r['builders'] * r['rate_per_builder']:.0f}/s in all", r,
                    f" | back to back {r['throughput_hooks_per_s']:.0f} hooks/s"))
    for r in res.get("scale_events", []):
        reads = ", ".join(f"{k.split('?')[0].split('/')[-1]} {v:.1f}" for k, v in r["reads_ms"].items())
        print(_line(f"raw, {r['stored_events']} stored events", r,
                    f" | back to back {r['throughput_hooks_per_s']:.0f} hooks/s | db {r['db_mb']:.0f} MB"
                    f" | reads ms: {reads}"))
    for b in res.get("budget", []):
        print(f"  {'ok  ' if b['ok'] else 'MISS'} {b['check']}: {b['value']:.3f} (limit {b['limit']})")
    for e in res.get("explain", []):
        flag = "SCAN " if e["scan"] else "     "
        print(f"{flag}{e['sql'][:150]}\n        {' | '.join(e['plan'])}")


if __name__ == "__main__":
    sys.exit(main())
