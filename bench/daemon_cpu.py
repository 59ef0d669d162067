#!/usr/bin/env python3
"""The daemon's own CPU per hook in a real Claude Code session (issue 21, "The hook's own cost").

    python bench/daemon_cpu.py [--calls 200] [--think-s 0] [--profile cprofile|pyspy] [--json]

One run: a real daemon in a temp home (this checkout's `hookd serve`, with
``HOOKD_HOOK_TIMINGS=1``), one builder made by ``hookd spawn`` (its generated hooks, as a user
gets them), and the real Claude Code 2.1.332 offline (``claude -p``, bypassPermissions) against
the tests' scripted Messages API (``tests/e2e/fake_api.py``): ``--calls`` turns of one Bash
``true`` call each, then a text answer, each answered at once or, with ``--think-s S``, after
S seconds (a model's pace: hooks seconds apart, the daemon idle between them). Claude Code runs hookd's hooks for every call
(PreToolUse, PostToolUse) and for the session (SessionStart, UserPromptSubmit, Stop,
SessionEnd): 404 hooks for 200 calls.

Reported:

- the daemon's CPU (every thread: schedstat's ns on Linux, else psutil's user + system) from
  just before ``claude`` starts to the moment its work for the run is done (the transcript
  followed to its end, read from the store's file, and the look at the session
  ``UNARMED_GRACE_S`` after its newest row passed), in ms per hook; and the same less the
  daemon's idle rate (measured over ``--idle-s`` s before the run) over that window;
- the hook path's own CPU: a fresh daemon is sent the same hooks' raw payloads over its Unix
  socket (a new connection each, as the compiled client), their ``transcript_path`` pointed at
  a file that does not exist (so no transcript is followed): its CPU per hook, back to back
  (the warm hook path, ~0.3 ms) and, in another fresh daemon, at the session's own pace (each
  hook at its offset in the session, then the same wait: the hook path as a session pays it,
  caches cold after each idle gap, with the lanes, checkpoints and idle ticks of that time).
  The session's figure less the paced one is what following the session's transcript costs.
  The paced one split: the event loop's CPU in each hook's window (from before its connection
  to 5 ms after its reply; median and mean), the loop's between the hooks, and the other
  threads' (the WAL's sync);
- the daemon's own handling time per hook (``GET /v1/debug/hook-timings``: from the whole body
  read to the reply handed over, wall time) and the run's wall time.

``--python-floor`` adds the floor any Python daemon of this shape pays on this machine: a
minimal uvloop server on a Unix socket (no HTTP parsing beyond the chunked body's end, a fixed
reply), alone and with one SQLite ``INSERT`` + ``COMMIT`` per request (WAL,
``synchronous=NORMAL``, as hookd's store), sent the same payloads back to back and at the
session's pace: its CPU per request.

``--profile cprofile`` runs the measured daemon under cProfile (the figures are then inflated by
it) and prints its top entries by own time and by cumulative time; ``--profile pyspy`` samples it
with py-spy (``py-spy`` on PATH, not a dependency of hookd) and prints the top frames. No budget
and no exit status from the figures: the budget (1 ms of CPU per hook, the issue's) is judged on
the figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile  # noqa: F401 (documented: the --profile mode runs it through -m)
import json
import os
import pstats
import shutil
import statistics
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))

import psutil  # noqa: E402

from hookd.config import Home  # noqa: E402
from hookd.core.transcripts import UNARMED_GRACE_S  # noqa: E402
from hookd.daemonproc import DaemonProcess, wait_until  # noqa: E402
from tests.e2e.drivers import find_claude_bin, hermetic_env, run_print  # noqa: E402
from tests.e2e.fake_api import FakeAnthropicAPI  # noqa: E402

BUILDER = "b-cpu"


def script(calls: int) -> list[Any]:
    """The model's turns: ``calls`` turns of one Bash ``true`` each, then a final text."""
    turns: list[Any] = [[{"type": "tool_use", "id": f"toolu_01CPU{i:021d}", "name": "Bash",
                          "input": {"command": "true", "description": f"Step {i}"}}] for i in range(calls)]
    return [*turns, "All steps done. FINAL-CPU"]


def _schedstat_s(proc: psutil.Process) -> dict[int, float] | None:
    """Each live thread's CPU seconds from ``/proc/PID/task/TID/schedstat`` (its first field: ns
    on a CPU, user and system); None where the kernel has no such files. psutil's times come in
    clock ticks (10 ms), too coarse for the few ms a slow-paced run adds per hook."""
    out: dict[int, float] = {}
    try:
        tids = os.listdir(f"/proc/{proc.pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{proc.pid}/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue  # (a thread that ended meanwhile)
    return out or None


def cpu_s(proc: psutil.Process) -> float:
    """CPU seconds of one process, every thread: schedstat's nanoseconds where Linux has them,
    else psutil's user + system."""
    per = _schedstat_s(proc)
    if per is not None:
        return sum(per.values())
    t = proc.cpu_times()
    return t.user + t.system


def sys_s(proc: psutil.Process) -> float:
    """System (kernel) CPU seconds of one process."""
    return proc.cpu_times().system


def thread_cpu(proc: psutil.Process) -> dict[str, float]:
    """User + system CPU seconds of the event loop's thread (``loop``, the main thread) and of
    each other thread (``thread-TID``: SQLite's writer and readers, ``asyncio.to_thread``'s
    pool)."""
    per = _schedstat_s(proc)
    if per is None:
        per = {t.id: t.user_time + t.system_time for t in proc.threads()}
    return {"loop" if tid == proc.pid else f"thread-{tid}": s for tid, s in per.items()}


class ProfiledDaemon(DaemonProcess):
    """`hookd serve` under cProfile (writing ``out`` when it exits on SIGTERM) or py-spy."""

    def __init__(self, home: Path, env: dict[str, str], mode: str, out: Path):
        super().__init__(home, env=env)
        self.mode, self.out = mode, out

    def cli_args(self, *args: str) -> list[str]:
        base = super().cli_args(*args)
        if self.mode == "cprofile" and args and args[0] == "serve":
            return [base[0], "-P", "-m", "cProfile", "-o", os.fspath(self.out), *base[2:]]
        return base


def hook_count(home: Path) -> int:
    with contextlib.closing(sqlite3.connect(Home.resolve(home).db)) as db:
        return db.execute("SELECT count(*) FROM hook_events WHERE builder = ?", (BUILDER,)).fetchone()[0]


def raw_hooks(home: Path) -> list[tuple[float, bytes]]:
    """(seconds after the first hook it was received, raw payload) of every hook of the run."""
    with contextlib.closing(sqlite3.connect(Home.resolve(home).db)) as db:
        rows = [(r[0], bytes(r[1])) for r in db.execute(
            "SELECT received_at, raw FROM hook_events WHERE builder = ? ORDER BY id", (BUILDER,))]
    return [(at - rows[0][0], raw) for at, raw in rows]


def transcripts_done(home: Path) -> bool:
    """Every followed transcript's cursor at its file's end, read from the store's file (as
    :func:`hook_count`): asking the daemon (``GET /v1/transcripts``) every 50 ms would add its
    own CPU to the run's."""
    with contextlib.closing(sqlite3.connect(Home.resolve(home).db)) as db:
        rows = db.execute("SELECT path, offset FROM transcripts").fetchall()
    return bool(rows) and all(Path(p).exists() and offset >= Path(p).stat().st_size for p, offset in rows)


def post_raw(home: Path, payloads: list[bytes], offsets: list[float] | None = None,
             loop_of: psutil.Process | None = None) -> list[float]:
    """Each payload as the compiled client sends it: a new Unix connection, one chunked POST
    with the agent's pid (``X-Hookd-Agent-Pid``: this process's, alive throughout, as Claude
    Code is for its hooks; without one the lanes watch looks at the lane at every tool call);
    back to back, or each at its offset (seconds after the first) when ``offsets`` is given.
    ``loop_of`` (the daemon, with ``offsets``): returns the CPU seconds of its event loop's
    thread in each hook's window, from before its connection to 5 ms after its reply (the
    connection's close is handled then); else an empty list."""
    per_hook: list[float] = []
    h = Home.resolve(home)
    token, sock_path = h.read_endpoint().hook_token, os.fspath(h.socket_path)
    t0 = time.monotonic()
    for i, payload in enumerate(payloads):
        if offsets is not None and (pause := t0 + offsets[i] - time.monotonic()) > 0:
            time.sleep(pause)  # the session's pace
        before = _loop_s(loop_of) if loop_of is not None and offsets is not None else None
        head = (f"POST /v1/hooks/claude-code/{BUILDER} HTTP/1.1\r\nHost: hookd\r\n"
                f"Authorization: Bearer {token}\r\nX-Hookd-Delivery: {time.time_ns() // 1000}-{os.getpid()}-r{i}\r\n"
                f"X-Hookd-Agent-Pid: {os.getpid()}\r\n"
                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(sock_path)
            sock.sendall(head.encode() + b"%x\r\n" % len(payload) + payload + b"\r\n0\r\n\r\n")
            resp = b""
            while chunk := sock.recv(65536):
                resp += chunk
        if not resp.startswith(b"HTTP/1.1 200 "):
            raise RuntimeError(f"daemon answered {resp[:80]!r}")
        if before is not None and loop_of is not None:
            time.sleep(0.005)
            per_hook.append(_loop_s(loop_of) - before)
    return per_hook


def _loop_s(proc: psutil.Process) -> float:
    """CPU seconds of ``proc``'s event loop thread (its main thread)."""
    per = _schedstat_s(proc)
    if per is not None and proc.pid in per:
        return per[proc.pid]
    return next((t.user_time + t.system_time for t in proc.threads() if t.id == proc.pid), 0.0)


def spawn_builder(daemon: DaemonProcess, worktree: Path) -> None:
    subprocess.run(daemon.cli_args("spawn", BUILDER, "--worktree", os.fspath(worktree), "--no-mcp"),
                   check=True, capture_output=True)


def session_run(tmp: Path, calls: int, idle_s: float, profile: str | None, think_s: float = 0.0) -> dict[str, Any]:
    """The real session against a real daemon; the daemon's CPU over it. think_s: seconds the
    fake model takes before each of its answers (0: at once)."""
    home, proj, cc_home = tmp / "hookd", tmp / "proj", tmp / "cc-home"
    proj.mkdir()
    env = {**os.environ, "HOOKD_HOOK_TIMINGS": "1"}
    prof_out = tmp / "serve.prof"
    daemon: DaemonProcess = (ProfiledDaemon(home, env, profile, prof_out) if profile == "cprofile"
                             else DaemonProcess(home, env=env))
    daemon.start(timeout=60)
    assert daemon.proc is not None
    proc = psutil.Process(daemon.proc.pid)
    spyer: subprocess.Popen[bytes] | None = None
    try:
        spawn_builder(daemon, proj)
        # idle rate over a quiet window with the builder known
        c0, t0 = cpu_s(proc), time.monotonic()
        time.sleep(idle_s)
        idle_rate = (cpu_s(proc) - c0) / (time.monotonic() - t0)
        if profile == "pyspy":
            spyer = subprocess.Popen(["py-spy", "record", "--pid", str(proc.pid), "--format", "raw",
                                      "--output", os.fspath(tmp / "pyspy.txt"), "--rate", "250",
                                      "--threads"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if profile == "strace":
            spyer = subprocess.Popen(["strace", "-c", "-f", "-p", str(proc.pid), "-o", os.fspath(tmp / "strace.txt")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with FakeAnthropicAPI(script(calls)) as api:
            if think_s > 0:
                api.main_gate = lambda _n: time.sleep(think_s)  # the model's time per turn (its server thread)
            c0, t0, th0, s0 = cpu_s(proc), time.monotonic(), thread_cpu(proc), sys_s(proc)
            res = run_print("Run the steps.", proj, hermetic_env(cc_home, api.url),
                            extra_args=("--permission-mode", "bypassPermissions"), timeout=600,
                            claude_bin=find_claude_bin())
            t_claude = time.monotonic() - t0
            if res.returncode != 0 or "FINAL-CPU" not in res.stdout:
                raise RuntimeError(f"claude -p failed ({res.returncode}): {res.stderr[-2000:]}")
        expected = 2 * calls + 4
        wait_until(lambda: hook_count(home) >= expected, 60, 0.05, f"{expected} hooks recorded")
        wait_until(lambda: transcripts_done(home), 60, 0.05, "the transcript followed to its end")
        # the look at the session UNARMED_GRACE_S after its newest row (a timer): let it pass
        time.sleep(UNARMED_GRACE_S + 1.0)
        cpu, window = cpu_s(proc) - c0, time.monotonic() - t0
        th1, system = thread_cpu(proc), sys_s(proc) - s0
        threads = {k: v - th0.get(k, 0.0) for k, v in th1.items()}
        timings = daemon.client().get("/v1/debug/hook-timings")
        hooks = hook_count(home)
        raws = raw_hooks(home)
    finally:
        if spyer is not None:
            spyer.send_signal(2)
            spyer.wait(timeout=60)
        daemon.stop(timeout=60)
        daemon.kill()
    out: dict[str, Any] = {
        "calls": calls, "think_s": think_s, "hooks": hooks, "claude_wall_s": t_claude, "window_s": window,
        "daemon_cpu_s": cpu, "daemon_system_s": system, "idle_ms_per_s": idle_rate * 1e3,
        "cpu_ms_per_hook": cpu / hooks * 1e3,
        "cpu_less_idle_ms_per_hook": (cpu - idle_rate * window) / hooks * 1e3,
        "handling_ms_per_hook": sum(timings) / max(1, len(timings)) * 1e3,
        "threads_ms": {k: round(v * 1e3, 1) for k, v in sorted(threads.items(), key=lambda kv: -kv[1])},
        "raws": raws,
    }
    if profile == "cprofile":
        out["profile"] = prof_out
    if profile == "pyspy":
        out["pyspy"] = tmp / "pyspy.txt"
    if profile == "strace":
        out["strace"] = tmp / "strace.txt"
    return out


def hook_path_floor(tmp: Path, hooks: list[tuple[float, bytes]], paced: bool) -> dict[str, Any]:
    """The same hooks posted to a fresh daemon, with no transcript to follow (their
    ``transcript_path`` names a file that does not exist): back to back, or ``paced`` at the
    session's own pace (the daemon idle between hooks as in the session). Its CPU per hook."""
    name = "paced" if paced else "floor"
    home, proj = tmp / f"{name}-hookd", tmp / f"{name}-proj"
    proj.mkdir()
    missing = os.fspath(tmp / "no-such-transcript.jsonl")
    payloads = []
    for _, raw in hooks:
        obj = json.loads(raw)
        if "transcript_path" in obj:
            obj["transcript_path"] = missing
        payloads.append(json.dumps(obj).encode())
    daemon = DaemonProcess(home)
    daemon.start(timeout=60)
    assert daemon.proc is not None
    proc = psutil.Process(daemon.proc.pid)
    try:
        spawn_builder(daemon, proj)
        c0, t0, th0 = cpu_s(proc), time.monotonic(), thread_cpu(proc)
        per_hook = post_raw(home, payloads, [at for at, _ in hooks] if paced else None, loop_of=proc)
        if paced:
            time.sleep(UNARMED_GRACE_S + 1.0)  # the same window as the session's
        cpu, wall = cpu_s(proc) - c0, time.monotonic() - t0
        loop = thread_cpu(proc).get("loop", 0.0) - th0.get("loop", 0.0)
    finally:
        daemon.stop(timeout=60)
        daemon.kill()
    out = {f"{name}_hooks": len(payloads), f"{name}_cpu_s": cpu, f"{name}_wall_s": wall,
           f"{name}_cpu_ms_per_hook": cpu / len(payloads) * 1e3}
    if per_hook:
        # the split: the loop inside the hooks' windows (median: the usual hook; mean), the loop
        # between them (timers, the window's end), and the other threads (the WAL's sync)
        out.update({f"{name}_hook_median_ms": statistics.median(per_hook) * 1e3,
                    f"{name}_hook_mean_ms": statistics.mean(per_hook) * 1e3,
                    f"{name}_loop_between_ms_per_hook": (loop - sum(per_hook)) / len(payloads) * 1e3,
                    f"{name}_threads_ms_per_hook": (cpu - loop) / len(payloads) * 1e3})
    return out


def _floor_server(path: str, with_sqlite: bool) -> None:
    """A minimal uvloop server (run in a process of its own): each connection's chunked POST
    read to its end, then one fixed reply; ``with_sqlite``: the body inserted and committed
    first, in a WAL database beside the socket."""
    import asyncio

    import uvloop

    db = None
    if with_sqlite:
        db = sqlite3.connect(path + ".db", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, raw BLOB)")

    class Proto(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.t, self.buf = transport, b""

        def data_received(self, data: bytes) -> None:
            self.buf += data
            if self.buf.endswith(b"0\r\n\r\n"):
                if db is not None:
                    db.execute("BEGIN")
                    db.execute("INSERT INTO t (raw) VALUES (?)", (self.buf,))
                    db.execute("COMMIT")
                self.t.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                self.t.close()

    async def main() -> None:
        await asyncio.get_running_loop().create_unix_server(Proto, path)
        await asyncio.Event().wait()

    uvloop.run(main())


def python_floor(tmp: Path, hooks: list[tuple[float, bytes]]) -> dict[str, Any]:
    """CPU per request of :func:`_floor_server`, bare and with SQLite, back to back and at the
    session's pace (the hooks' offsets), the same payloads as the hooks."""
    import multiprocessing

    out: dict[str, Any] = {}
    for name, with_sqlite in (("bare", False), ("sqlite", True)):
        path = os.fspath(tmp / f"floor-{name}.sock")
        server = multiprocessing.get_context("spawn").Process(target=_floor_server, args=(path, with_sqlite))
        server.start()
        try:
            wait_until(lambda: os.path.exists(path), 60, 0.01, "the floor server's socket")
            proc = psutil.Process(server.pid)
            for paced in (False, True):
                c0, t0 = cpu_s(proc), time.monotonic()
                for at, raw in hooks:
                    if paced and (pause := t0 + at - time.monotonic()) > 0:
                        time.sleep(pause)  # the session's pace
                    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                        sock.connect(path)
                        sock.sendall(b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n" % len(raw)
                                     + raw + b"\r\n0\r\n\r\n")
                        while sock.recv(65536):
                            pass
                out[f"python_floor_{name}_{'paced' if paced else 'floor'}_ms_per_request"] = \
                    (cpu_s(proc) - c0) / len(hooks) * 1e3
        finally:
            server.kill()
            server.join(10)
    return out


def print_profile(path: Path, top: int) -> None:
    st = pstats.Stats(os.fspath(path))
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)


def print_pyspy(path: Path, top: int) -> None:
    """py-spy's raw (collapsed stacks) output: the top leaf frames and the top frames anywhere."""
    leaves: dict[str, int] = {}
    anywhere: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        count = int(n)
        frames = stack.split(";")
        if any("select" in f or "epoll" in f for f in frames[-1:]):
            continue  # waiting
        total += count
        leaves[frames[-1]] = leaves.get(frames[-1], 0) + count
        for f in set(frames):
            anywhere[f] = anywhere.get(f, 0) + count
    print(f"py-spy: {total} busy samples")
    for title, table in (("leaf", leaves), ("anywhere in the stack", anywhere)):
        print(f"-- top {top} frames, {title}")
        for f, n in sorted(table.items(), key=lambda kv: -kv[1])[:top]:
            print(f"{n / max(1, total) * 100:6.1f}%  {f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=200, help="Bash tool calls in the session")
    ap.add_argument("--think-s", type=float, default=0.0,
                    help="seconds the fake model takes before each answer (a model's pace; default 0: at once)")
    ap.add_argument("--idle-s", type=float, default=5.0, help="seconds of idle measured before the run")
    ap.add_argument("--profile", choices=("cprofile", "pyspy", "strace"), help="profile the measured daemon")
    ap.add_argument("--python-floor", action="store_true",
                    help="also measure a minimal uvloop server (bare, and with one SQLite commit) at the same pace")
    ap.add_argument("--top", type=int, default=30, help="profile entries shown")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (homes, profile) and print its path")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    load = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="hookd-cpu-"))
    try:
        run = session_run(tmp, args.calls, args.idle_s, args.profile, args.think_s)
        hooks = run.pop("raws")
        floor = hook_path_floor(tmp, hooks, paced=False)
        paced = hook_path_floor(tmp, hooks, paced=True)
        extra = python_floor(tmp, hooks) if args.python_floor else {}
        result = {**run, **floor, **paced, **extra, "load_before": load[0], "load_after": os.getloadavg()[0]}
        result["ratio_to_floor"] = result["cpu_ms_per_hook"] / max(1e-9, result["floor_cpu_ms_per_hook"])
        result["ratio_to_paced"] = result["cpu_ms_per_hook"] / max(1e-9, result["paced_cpu_ms_per_hook"])
        prof, spy, trace = result.pop("profile", None), result.pop("pyspy", None), result.pop("strace", None)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            think = f", the model {args.think_s:g} s a turn" if args.think_s else ""
            print(f"claude -p, {args.calls} Bash calls{think}: {result['hooks']} hooks, claude {result['claude_wall_s']:.1f} s, "
                  f"window {result['window_s']:.1f} s (load {load[0]:.2f} -> {result['load_after']:.2f})")
            print(f"daemon CPU: {result['daemon_cpu_s'] * 1e3:.0f} ms = {result['cpu_ms_per_hook']:.2f} ms per hook "
                  f"(system {result['daemon_system_s'] * 1e3:.0f} ms); "
                  f"less idle ({result['idle_ms_per_s']:.1f} ms/s): {result['cpu_less_idle_ms_per_hook']:.2f} ms per hook")
            print(f"hook path alone (the same {result['floor_hooks']} payloads to a fresh daemon, no transcript): "
                  f"back to back {result['floor_cpu_ms_per_hook']:.2f} ms CPU per hook (the session: "
                  f"{result['ratio_to_floor']:.1f}x); at the session's pace {result['paced_cpu_ms_per_hook']:.2f} ms "
                  f"(the session: {result['ratio_to_paced']:.1f}x)")
            if "paced_hook_median_ms" in result:
                print(f"  at the session's pace, split: the loop in each hook's window median "
                      f"{result['paced_hook_median_ms']:.3f} ms (mean {result['paced_hook_mean_ms']:.3f}), the loop "
                      f"between hooks {result['paced_loop_between_ms_per_hook']:.3f} and other threads (the WAL's sync) "
                      f"{result['paced_threads_ms_per_hook']:.3f} ms per hook")
            print("daemon CPU by thread (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in result["threads_ms"].items()))
            print(f"daemon handling time per hook (wall, body read to reply): {result['handling_ms_per_hook']:.3f} ms")
            if extra:
                print("a minimal uvloop server, ms CPU per request (back to back / at the session's pace): bare "
                      f"{extra['python_floor_bare_floor_ms_per_request']:.3f} / {extra['python_floor_bare_paced_ms_per_request']:.3f}, "
                      f"with one SQLite commit {extra['python_floor_sqlite_floor_ms_per_request']:.3f} / "
                      f"{extra['python_floor_sqlite_paced_ms_per_request']:.3f}")
        if prof is not None:
            print_profile(prof, args.top)
        if spy is not None and spy.exists():
            print_pyspy(spy, args.top)
        if trace is not None and trace.exists():
            print("\n".join(trace.read_text().splitlines()[: args.top + 3]))
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
