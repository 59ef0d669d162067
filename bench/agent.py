#!/usr/bin/env python3
"""The hook's cost as the agent sees it: the real Claude Code, a scripted session, each hook form.

    python bench/agent.py [--calls 200] [--reps 3] [--warmup 1] [--variants none,true-sh,...] [--debug-hooks] [--json]

One run is ``claude -p go --output-format stream-json --verbose --permission-mode
bypassPermissions`` (the pinned 2.1.332, offline: ``tests/e2e/fake_api.py`` answers with
``--calls`` turns of one Bash ``true`` call each, then a text), in a worktree of its own per
variant, in one private HOME. Variants (interleaved round-robin, ABAB..., so every variant sees
the same machine; ``--warmup`` unmeasured rounds first: a worktree's first session costs more):

- ``none``: no hooks;
- ``true-sh`` / ``true-exec``: a ``/bin/true`` command hook on the same events hookd registers
  (shell form, exec form): the harness's own floor for starting a command hook;
- ``sh``, ``exec``, ``http``: hookd's hooks as ``hookd spawn --hook-transport`` writes them
  (``--no-mcp``; the compiled client where a C compiler builds it), one real daemon
  (``hookd serve`` in a temp home) for all of them.

Reported per variant: the run's wall time (median over ``--reps``, and min/max), per tool call
(the median run over ``--calls``), the overhead per tool call against ``none`` and against
``true-sh`` (medians' difference over ``--calls``), hooks per run (Claude Code's, counted from
the daemon's store for hookd's variants), and the daemon's CPU (user + system, psutil) per hook
over that variant's runs. With ``--debug-hooks`` Claude Code also runs with ``--debug hooks``
and its own per-hook time (``finished with status 0 (N ms)`` lines of its debug log; http hooks
log no duration) is reported as p50 per variant; the debug log costs time of its own, so the
wall figures of such a run are not comparable with one without it. No budget: figures only
(docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))

import psutil  # noqa: E402

from hookd.config import Home  # noqa: E402
from hookd.daemonproc import DaemonProcess  # noqa: E402
from hookd.harness.claude_code_hooks import NO_MATCHER_EVENTS, REGISTERED_EVENTS, TOOL_EVENTS  # noqa: E402
from hookd.spawn import spawn  # noqa: E402
from tests.e2e.drivers import find_claude_bin, hermetic_env, seed_claude_json  # noqa: E402
from tests.e2e.fake_api import FakeAnthropicAPI  # noqa: E402

VARIANTS = ("none", "true-sh", "true-exec", "sh", "exec", "http")
HOOKD_VARIANTS = ("sh", "exec", "http")
DEBUG_MS = re.compile(r"\] finished with status \d+ \((\d+)ms\)")


def script(calls: int) -> dict[str, Any]:
    """The fake model's script: ``calls`` turns of one Bash ``true`` each, then ``done``."""
    turns = [{"content": [{"type": "tool_use", "id": f"toolu_01BENCH{i:014d}", "name": "Bash",
                           "input": {"command": "true", "description": "bench"}}]} for i in range(calls)]
    return {"turns": [*turns, {"content": [{"type": "text", "text": "done"}]}], "fallback_text": "done"}


def true_settings(exec_form: bool) -> dict[str, Any]:
    """A ``/bin/true`` command hook on every event hookd registers, as hookd's groups are."""
    handler: dict[str, Any] = {"type": "command", "command": "/bin/true", "timeout": 10}
    if exec_form:
        handler["args"] = []
    hooks: dict[str, Any] = {}
    for event in REGISTERED_EVENTS:
        group: dict[str, Any] = {"hooks": [handler]}
        if event not in NO_MATCHER_EVENTS:
            group["matcher"] = ".*" if event in TOOL_EVENTS else ""
        hooks[event] = [group]
    return {"hooks": hooks}


def hook_count(home: Home, builder: str) -> int:
    """Hooks the daemon stored for ``builder`` (read-only, beside the daemon)."""
    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=5)
    try:
        return int(con.execute("SELECT count(*) FROM hook_events WHERE builder = ?", (builder,)).fetchone()[0])
    finally:
        con.close()


def cpu_s(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def run_once(claude: Path, cwd: Path, env: dict[str, str], debug: bool) -> tuple[float, int]:
    """One ``claude -p`` run: (wall seconds, tool results seen). Raises on a failed run."""
    argv = [os.fspath(claude), "-p", "go", "--output-format", "stream-json", "--verbose",
            "--permission-mode", "bypassPermissions", *(["--debug", "hooks"] if debug else [])]
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=900, start_new_session=True, check=False)
    wall = time.perf_counter() - t0
    results = p.stdout.count('"type":"tool_result"')
    if p.returncode != 0 or '"subtype":"success"' not in p.stdout:
        raise RuntimeError(f"claude exited {p.returncode}: {p.stderr[-2000:]}")
    return wall, results


def debug_ms(cc_home: Path, since: float) -> list[float]:
    """Claude Code's own per-hook times (ms) from the debug logs written after ``since``: a
    command hook's ``finished with status S (N ms)``; an http hook's, which logs no duration,
    from the timestamps of its ``HTTP hook POST to`` line and the next ``HTTP hook response``."""
    out: list[float] = []
    for f in (cc_home / ".claude" / "debug").glob("*.txt"):
        if f.stat().st_mtime < since:
            continue
        posted: list[datetime] = []
        for line in f.read_text(errors="replace").splitlines():
            m = DEBUG_MS.search(line)
            if m:
                out.append(float(m.group(1)))
            elif "Hooks: HTTP hook POST to" in line:
                posted.append(_stamp(line))
            elif "Hooks: HTTP hook response status" in line and posted:
                out.append((_stamp(line) - posted.pop(0)).total_seconds() * 1000)
    return out


def _stamp(line: str) -> datetime:
    return datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first (each variant once per round)")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--debug-hooks", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    variants = [v for v in a.variants.split(",") if v]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        ap.error(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    claude = find_claude_bin()
    with tempfile.TemporaryDirectory(prefix="hookd-agent-bench-") as tmp:
        root = Path(tmp)
        home = Home.resolve(root / "hookd-home")
        cc_home = root / "cc-home"
        daemon = DaemonProcess(home.root).start()
        api = FakeAnthropicAPI(script(a.calls)).start()
        try:
            env = hermetic_env(cc_home, api.url, extra={"HOOKD_HOOK_TOKEN": home.read_hook_token()})
            trees: dict[str, Path] = {}
            for v in variants:
                wt = root / f"wt-{v}"
                wt.mkdir()
                if not trees:
                    seed_claude_json(cc_home, wt)
                trees[v] = wt
                if v in HOOKD_VARIANTS:
                    spawn(home, f"bench-{v}", worktree=wt, transport=v, mcp=False)
                elif v.startswith("true-"):
                    (wt / ".claude").mkdir()
                    (wt / ".claude" / "settings.local.json").write_text(json.dumps(true_settings(v == "true-exec")))
            # every worktree trusted (seed_claude_json writes one project; add the others)
            cfg = json.loads((cc_home / ".claude.json").read_text())
            first = next(iter(cfg["projects"].values()))
            for wt in trees.values():
                for p in {os.fspath(wt), os.path.realpath(wt)}:
                    cfg["projects"][p] = first
            (cc_home / ".claude.json").write_text(json.dumps(cfg))
            walls: dict[str, list[float]] = {v: [] for v in variants}
            cpu: dict[str, float] = {v: 0.0 for v in variants}
            hooks: dict[str, int] = {v: 0 for v in variants}
            dbg: dict[str, list[float]] = {v: [] for v in variants}
            for rep in range(-a.warmup, a.reps):
                for v in variants:
                    api.set_script(script(a.calls))
                    before = hook_count(home, f"bench-{v}") if v in HOOKD_VARIANTS else 0
                    c0, since = cpu_s(daemon.proc.pid), time.time()  # type: ignore[union-attr]
                    wall, results = run_once(claude, trees[v], env, a.debug_hooks)
                    if results != a.calls:
                        raise RuntimeError(f"{v}: {results} tool results, expected {a.calls}")
                    if rep < 0:  # a warm-up round: the worktree's first session, caches
                        print(f"warm-up {v:9} {wall:7.2f} s", file=sys.stderr, flush=True)
                        continue
                    if v in HOOKD_VARIANTS:
                        # the daemon's work for this run: until its last hook is stored and
                        # the transcript followed (a short settle, then the CPU read)
                        time.sleep(1.0)
                        cpu[v] += cpu_s(daemon.proc.pid) - c0  # type: ignore[union-attr]
                        hooks[v] += hook_count(home, f"bench-{v}") - before
                    walls[v].append(wall)
                    if a.debug_hooks:
                        dbg[v] += debug_ms(cc_home, since)
                    print(f"rep {rep + 1}/{a.reps} {v:9} {wall:7.2f} s", file=sys.stderr, flush=True)
        finally:
            api.stop()
            daemon.stop()
    return report(variants, walls, cpu, hooks, dbg, a)


def report(variants: list[str], walls: dict[str, list[float]], cpu: dict[str, float], hooks: dict[str, int],
           dbg: dict[str, list[float]], a: argparse.Namespace) -> int:
    med = {v: statistics.median(walls[v]) for v in variants}
    rows: list[dict[str, Any]] = []
    for v in variants:
        row: dict[str, Any] = {
            "variant": v, "wall_s": round(med[v], 3), "min_s": round(min(walls[v]), 3), "max_s": round(max(walls[v]), 3),
            "per_call_ms": round(med[v] / a.calls * 1000, 2),
            "vs_none_ms": round((med[v] - med["none"]) / a.calls * 1000, 2) if "none" in med else None,
            "vs_true_sh_ms": round((med[v] - med["true-sh"]) / a.calls * 1000, 2) if "true-sh" in med else None,
        }
        if v in HOOKD_VARIANTS:
            row["hooks_per_run"] = hooks[v] / a.reps
            row["daemon_cpu_ms_per_hook"] = round(cpu[v] / max(hooks[v], 1) * 1000, 3)
        if dbg[v]:
            row["cc_hook_p50_ms"] = round(statistics.median(dbg[v]), 1)
        rows.append(row)
    load = os.getloadavg()
    if a.json:
        print(json.dumps({"calls": a.calls, "reps": a.reps, "load": load, "rows": rows}, indent=2))
        return 0
    print(f"{a.calls} Bash calls per run, {a.reps} runs per variant, interleaved; load {load[0]:.2f} {load[1]:.2f}")
    head = f"{'variant':10} {'wall p50':>9} {'min':>7} {'max':>7} {'per call':>9} {'vs none':>8} {'vs true-sh':>10} {'hooks':>6} {'daemon CPU/hook':>16}"
    print(head)
    for r in rows:
        print(f"{r['variant']:10} {r['wall_s']:8.2f}s {r['min_s']:6.2f}s {r['max_s']:6.2f}s {r['per_call_ms']:7.2f}ms "
              f"{_ms(r['vs_none_ms']):>8} {_ms(r['vs_true_sh_ms']):>10} {r.get('hooks_per_run', ''):>6} "
              f"{_cpu(r.get('daemon_cpu_ms_per_hook')):>16}" + (f"  cc p50 {r['cc_hook_p50_ms']} ms" if "cc_hook_p50_ms" in r else ""))
    return 0


def _ms(x: float | None) -> str:
    return "" if x is None else f"{x:+.2f}ms"


def _cpu(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}ms"


if __name__ == "__main__":
    sys.exit(main())
