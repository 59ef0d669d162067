#!/usr/bin/env python3
"""CLI start-up benchmark: how long a person (or Claude Code) waits on `hookd` itself.

    python bench/cli.py [--runs 30] [--warmup 5] [--hookd PATH] [--json]

Starts a real daemon in a temp home with one builder (spawned with ``--settings-file``) and one
pending question (an async ask), and times, interleaved round-robin (every round runs each
command once, in a rotated order, so all see the same machine), spawn to exit:

- the floors: ``python -c pass`` (the interpreter's bare start, with ``site``) and
  ``python -S -c pass`` (without ``site``), with the interpreter hookd runs under;
- ``hookd --version``, ``hookd questions`` (one pending question), ``hookd status``
  with the daemon up, and with no daemon (exit 3, one sentence): without ``--home``, as a user
  runs them, the daemon's home being the default one (``XDG_DATA_HOME`` set to a temp dir: Linux);
- ``hookd mcp``, with the exact command ``hookd spawn`` writes into ``.mcp.json``: spawn to
  the ``tools/list`` reply (``initialize``, ``notifications/initialized``, ``tools/list``
  written at once, as a client does), i.e. ready for Claude Code's first model request;
- ``hookd serve`` in a fresh home, to its socket answering (what every daemon test waits for;
  CPU: the daemon's own by then, from ``/proc``).

``hookd`` is what a user runs: a regular install of this checkout (not the editable install a
developer's venv has, whose import finder runs at every start, ``python -c pass`` included),
made once per run in a temp dir: ``pip wheel`` builds the wheel (as ``pip install .`` does,
build isolation included), a fresh ``python -m venv`` (with pip, as the README's) installs it
with ``--no-deps``, and a ``.pth`` file there puts this interpreter's site-packages after its
own, for the dependencies (no download of them; the wheel's build may fetch setuptools). The
floors run with that venv's interpreter; the daemon, ``spawn`` and ``hookd mcp`` are that
install's too. ``--hookd PATH`` times another console script instead (``--hookd "$(command -v
hookd)"``: your venv's), with the interpreter its ``#!`` line names. Prints median, p90
and min per command, its median CPU (user + system, from the kernel's accounting of the waited
child) and each median's ratio to ``python -c pass``; exit 1 when a budget is
missed: ``hookd --version`` and ``hookd questions`` median <= 150 ms, ``hookd mcp`` ready <=
400 ms. The budgets are for an idle machine: the 1-minute load average is printed before and
after (figures taken on a busy machine say so).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))

from hookd.daemonproc import DaemonProcess  # noqa: E402

BUDGETS_MS = {"hookd --version": 150.0, "hookd questions": 150.0, "hookd mcp (to tools/list)": 400.0}
DEVNULL = os.open(os.devnull, os.O_RDWR)
MCP_HELLO = b"".join(json.dumps(m).encode() + b"\n" for m in (
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
))


def run_once(argv: list[str], expect_rc: int, env: dict[str, str]) -> float:
    """Spawn ``argv`` (stdin and stdout /dev/null, stderr /dev/null), wait for its exit.
    Returns seconds from spawn to exit; raises SystemExit on another exit code."""
    actions = [(os.POSIX_SPAWN_DUP2, DEVNULL, 0), (os.POSIX_SPAWN_DUP2, DEVNULL, 1), (os.POSIX_SPAWN_DUP2, DEVNULL, 2)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    t1 = time.perf_counter()
    rc = os.waitstatus_to_exitcode(status)
    if rc != expect_rc:
        raise SystemExit(f"{' '.join(argv)}: exit {rc}, expected {expect_rc}")
    return t1 - t0


def mcp_ready(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    """Spawn the MCP server, write the handshake and ``tools/list``; seconds from spawn to the
    ``tools/list`` reply (which must list hookd's three tools). The server is then closed
    (stdin EOF) and waited for, untimed."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(MCP_HELLO)
    p.stdin.flush()
    try:
        while True:
            line = p.stdout.readline()
            if not line:
                raise SystemExit(f"hookd mcp exited before its tools/list reply (exit {p.wait()})")
            msg = json.loads(line)
            if msg.get("id") == 2:
                t1 = time.perf_counter()
                tools = {t["name"] for t in msg["result"]["tools"]}
                if tools != {"ask_user_async", "await_answers", "check_answers"}:
                    raise SystemExit(f"hookd mcp listed {sorted(tools)}")
                return t1 - t0
    finally:
        p.stdin.close()
        if p.wait(30) != 0:
            raise SystemExit(f"hookd mcp exited {p.returncode} at stdin's end")


class Daemon(DaemonProcess):
    """hookd.daemonproc.DaemonProcess run by the console script under test (``hookd``: a list,
    the script or an interpreter and ``-m hookd``)."""

    def __init__(self, hookd: list[str], home: Path, env: dict[str, str]):
        super().__init__(home, env=env)
        self.hookd = hookd

    def cli_args(self, *args: str) -> list[str]:
        return [*self.hookd, "--home", os.fspath(self.home.root), *args]


def install(tmp: Path) -> list[str]:
    """A regular install of this checkout in a fresh venv under ``tmp`` (module docstring);
    returns ``[its hookd]``. Raises CalledProcessError when pip or venv fails."""
    quiet = {"stdout": subprocess.DEVNULL, "check": True}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", os.fspath(tmp / "dist"),
                    os.fspath(REPO)], **quiet)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", os.fspath(venv)], **quiet)
    py = os.fspath(venv / "bin" / "python")
    wheel = next((tmp / "dist").glob("hookd-*.whl"))
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", os.fspath(wheel)], **quiet)
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    deps = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))
    Path(site, "zz-hookd-bench-deps.pth").write_text("".join(f"{d}\n" for d in deps))
    return [os.fspath(venv / "bin" / "hookd")]


def interpreter_of(script: str) -> str:
    """The interpreter a console script's ``#!`` line names (this one's when it has none)."""
    with open(script, "rb") as f:
        first = f.readline()
    return first[2:].decode().split()[0] if first.startswith(b"#!") else sys.executable


def serve_ready(hookd: list[str], root: Path, n: list[int], env: dict[str, str]) -> tuple[float, float]:
    """``hookd serve`` in a fresh home (:class:`Daemon`): seconds from spawn to its socket
    answering ``/v1/status``, and the daemon's CPU seconds by then (``/proc``). It is then
    stopped (SIGTERM), untimed."""
    n[0] += 1
    d = Daemon(hookd, root / f"serve-{n[0]}", env)
    t0 = time.perf_counter()
    d.start()
    t1 = time.perf_counter()
    assert d.proc is not None
    fields = Path(f"/proc/{d.proc.pid}/stat").read_text().rpartition(") ")[2].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    d.stop()
    return t1 - t0, cpu


def children_cpu() -> float:
    """User + system CPU seconds of this process's children that have been waited for."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def stats(samples: list[float], cpu: list[float]) -> dict[str, float]:
    s = sorted(samples)
    q = statistics.quantiles(s, n=10, method="inclusive")
    return {"n": len(s), "median_ms": statistics.median(s) * 1e3, "p90_ms": q[8] * 1e3, "min_ms": s[0] * 1e3,
            "cpu_median_ms": statistics.median(cpu) * 1e3}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30, help="measured runs per command (default 30)")
    ap.add_argument("--warmup", type=int, default=5, help="unmeasured rounds first (default 5)")
    ap.add_argument("--hookd", metavar="PATH",
                    help="time this hookd console script (default: a regular install of this checkout, made now)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="hookd-bench-cli-"))
    # the CLI is run as a user runs it, without --home: its home is the default one, in the
    # per-user data directory (XDG_DATA_HOME, here a temp dir)
    home, down, wt = tmp / "data" / "hookd", tmp / "data-down" / "hookd", tmp / "wt"
    wt.mkdir()
    # as installed: bytecode cached (the warm-up rounds write what is missing or stale)
    env = {k: v for k, v in os.environ.items() if k not in ("HOOKD_HOME", "PYTHONDONTWRITEBYTECODE")}
    try:
        hookd = [shutil.which(args.hookd) or os.path.abspath(args.hookd)] if args.hookd else install(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    py = interpreter_of(hookd[0])
    daemon = Daemon(hookd, home, env)
    result: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                                          "uname": " ".join(os.uname()[i] for i in (0, 2, 4))},
                              "runs": args.runs, "warmup": args.warmup,
                              "hookd": args.hookd or "a regular install of this checkout (pip wheel, fresh venv)",
                              "python": py, "load_before": os.getloadavg()[0]}
    try:
        daemon.start()
        manifest = subprocess.run(daemon.cli_args("spawn", "bench", "--settings-file", os.fspath(tmp / "settings.json"),
                                                  "--json"), capture_output=True, env=env, check=True).stdout
        mcp_argv = json.loads(Path(json.loads(manifest)["mcp"]["file"]).read_text())["mcpServers"]["hookd"]
        mcp_argv = [mcp_argv["command"], *mcp_argv["args"]]
        daemon.client().post_json("/v1/builders/bench/asks", {"question": "Which database?",
                                                              "options": ["postgres", "sqlite"]})
        up_env = {**env, "XDG_DATA_HOME": os.fspath(home.parent)}
        down_env = {**env, "XDG_DATA_HOME": os.fspath(down.parent)}
        cases: dict[str, Callable[[], float | tuple[float, float]]] = {
            "python -c pass": lambda: run_once([py, "-c", "pass"], 0, env),
            "python -S -c pass": lambda: run_once([py, "-S", "-c", "pass"], 0, env),
            "hookd --version": lambda: run_once([*hookd, "--version"], 0, env),
            "hookd questions": lambda: run_once([*hookd, "questions"], 0, up_env),
            "hookd status (daemon up)": lambda: run_once([*hookd, "status"], 0, up_env),
            "hookd status (daemon down)": lambda: run_once([*hookd, "status"], 3, down_env),
            "hookd mcp (to tools/list)": lambda: mcp_ready(mcp_argv, os.fspath(wt), env),
            "hookd serve (to ready)": lambda: serve_ready(hookd, tmp, served, env),
        }
        served = [0]
        samples: dict[str, list[float]] = {k: [] for k in cases}
        cpu: dict[str, list[float]] = {k: [] for k in cases}
        names = list(cases)
        for rnd in range(args.warmup + args.runs):
            k = rnd % len(names)
            for name in names[k:] + names[:k]:
                c0 = children_cpu()
                got = cases[name]()
                dt, used = got if isinstance(got, tuple) else (got, children_cpu() - c0)
                if rnd >= args.warmup:
                    samples[name].append(dt)
                    cpu[name].append(used)
    finally:
        daemon.stop()
        daemon.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    result["load_after"] = os.getloadavg()[0]
    result["commands"] = {name: stats(s, cpu[name]) for name, s in samples.items()}
    floor = result["commands"]["python -c pass"]["median_ms"]
    for s in result["commands"].values():
        s["ratio"] = s["median_ms"] / floor
    result["budget"] = [{"check": name, "median_ms": result["commands"][name]["median_ms"], "limit_ms": limit,
                         "ok": result["commands"][name]["median_ms"] <= limit} for name, limit in BUDGETS_MS.items()]
    ok = all(b["ok"] for b in result["budget"])
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0 if ok else 1


def print_table(r: dict[str, Any]) -> None:
    m = r["machine"]
    print(f"hookd CLI start: {m['cpus']} CPUs, {m['uname']}, python {m['python']}; {r['hookd']} ({r['python']})")
    print(f"{r['runs']} runs per command after {r['warmup']} warm-up rounds, interleaved round-robin; spawn to exit "
          f"(mcp: to its tools/list reply); load average {r['load_before']:.2f} before, {r['load_after']:.2f} after")
    w = max(len(k) for k in r["commands"])
    print(f"\n{'command':<{w}}  {'median':>8} {'p90':>8} {'min':>8} {'CPU':>8}  {'x python -c pass':>16}  (ms)")
    for name, s in r["commands"].items():
        print(f"{name:<{w}}  {s['median_ms']:8.1f} {s['p90_ms']:8.1f} {s['min_ms']:8.1f} {s['cpu_median_ms']:8.1f}"
              f"  {s['ratio']:15.2f}x")
    busy = r["load_before"] > (m["cpus"] or 1) / 2
    print("\nbudget (medians, idle machine" + ("; this one was busy: load above half its CPUs" if busy else "") + "):")
    for b in r["budget"]:
        print(f"  {'ok  ' if b['ok'] else 'FAIL'} {b['check']}: {b['median_ms']:.1f} ms (limit {b['limit_ms']:.0f} ms)")


if __name__ == "__main__":
    sys.exit(main())
