#!/usr/bin/env python3
"""hookd hook round-trip benchmark: one command, one run, ratios within that run.

    python bench/run.py [--runs 300] [--warmup 30] [--gap-ms 0] [--json] [--profile]

Starts a real daemon in a temp home (hookd.daemonproc.DaemonProcess), spawns one builder with
the compiled hook client (when a C compiler builds it) and one with the bash client, and times,
interleaved round-robin so every command sees the same machine conditions:

- floors: a no-op C program built like the compiled client (``int main(void) { return 0; }``,
  same compiler and flags: the bare start of a compiled client), ``bash -c true`` (the bare
  start of the bash client's interpreter), each raw and via ``sh -c "exec ..."`` (a harness
  runs every command hook via ``sh -c``, and the generated command execs its client);
- each client's full round trip (spawn to exit), raw and via ``sh -c "<command>"``, with the
  recorded 521-byte Bash PreToolUse and the 1.4 KB AskUserQuestion PostToolUse on a pipe;
- fail-open: each client's command for a builder whose daemon is not running (it spools);
- Codex's hook command (``hookd spawn --harness codex``: the same client, Codex's route), raw
  and via ``bash -c "<command>"`` (Codex 0.171.0 runs its command hooks with bash), with the
  recorded 494-byte Bash PreToolUse and the 904-byte request_user_input PostToolUse, against
  the judged client's bare start (raw, and ``bash -c "exec ..."``).

Then the daemon side alone: a Python client posting the PreToolUse payload sequentially over
one keep-alive TCP connection, and with a new connection per hook over the Unix socket (as
the compiled client does) and over TCP (as the bash client does). Every live hook must be
stored and every fail-open hook spooled.

Budget (exit 1 when missed), for the client spawn writes by default (the compiled one; the
bash one when no compiler builds it), for both payloads: round trip median <= 2x the median of
its own floor, raw (client vs its bare start) and via sh -c (``sh -c "<command>"`` vs
``sh -c "exec <floor>"``); and fail-open median <= 50 ms for both clients. Reported beside
it, not judged: the other client's ratios, the compiled client against ``bash -c true``, and
Codex's command's ratios (the same client as the judged one: docs/benchmarks.md).
With --gap-ms N, every measured run starts after N ms of idle (floors and clients alike): the
daemon and the CPUs are cold, as between an agent's tool calls. The default (0) runs back to
back, the daemon as warm as it gets. With --profile (or when the budget is missed): strace -c and a -ttt milestone timeline of
one run of the judged client, and, for the bash client, the median time of each segment of
its script (an EPOCHREALTIME-instrumented copy).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))

from hookd.config import Home  # noqa: E402
from hookd.daemonproc import DaemonProcess  # noqa: E402
from hookd.spawn import build_program, bash_path, c_compiler, client_argv, spawn  # noqa: E402

HOOKS = REPO / "fixtures" / "claude-code" / "2.1.332" / "tui-ask-answered-at-terminal" / "hooks"
BASH_PRE = HOOKS / "004-PreToolUse.json"   # 521 B, Bash
AUQ_POST = HOOKS / "010-PostToolUse.json"  # 1.4 KB, AskUserQuestion answered
CODEX = REPO / "fixtures" / "codex" / "0.171.0"
CX_PRE = CODEX / "exec-bash-hooks" / "hooks" / "005-PreToolUse.json"  # 494 B, Bash
CX_POST = CODEX / "app-request-user-input" / "hooks" / "002-PostToolUse.json"  # 904 B, request_user_input answered
ROUND_TRIP_FACTOR = 2.0
FAIL_OPEN_MS = 50.0
DEVNULL = os.open(os.devnull, os.O_WRONLY)


def run_once(argv: list[str], payload: bytes, cwd: str) -> tuple[float, int, bytes]:
    """Spawn ``argv`` with ``payload`` on a pipe (then EOF), wait for exit. Returns (seconds
    from spawn to exit, exit status, stdout). Same mechanics for every measured command."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, DEVNULL, 2),
        (os.POSIX_SPAWN_CLOSE, in_w), (os.POSIX_SPAWN_CLOSE, out_r),
    ]
    old = os.getcwd()
    os.chdir(cwd)
    try:
        t0 = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    finally:
        os.chdir(old)
    os.close(in_r)
    os.close(out_w)
    try:
        os.write(in_w, payload)  # < 64 KiB: fits the pipe, never blocks
    except BrokenPipeError:
        pass  # `bash -c true` does not read its stdin
    os.close(in_w)
    _, status = os.waitpid(pid, 0)
    t1 = time.perf_counter()
    out = b""
    while chunk := os.read(out_r, 65536):
        out += chunk
    os.close(out_r)
    return t1 - t0, os.waitstatus_to_exitcode(status), out


def stats(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    q = statistics.quantiles(s, n=100, method="inclusive")
    return {"n": len(s), "median_ms": statistics.median(s) * 1e3, "p90_ms": q[89] * 1e3,
            "p99_ms": q[98] * 1e3, "min_ms": s[0] * 1e3}


def daemon_side(home: Path, payload: bytes, n: int) -> dict[str, Any]:
    """Per-request latency of the hook route seen by an in-process HTTP client over one
    keep-alive loopback connection (no process spawn, no bash): the daemon's handling time
    plus loopback and HTTP parsing."""
    ep = Home.resolve(home).read_endpoint()
    port, token = ep.port, ep.hook_token
    conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    samples = []
    t_all = time.perf_counter()
    for i in range(n):
        headers["X-Hookd-Delivery"] = f"{time.time_ns() // 1000}-{os.getpid()}-bench{i}"
        t0 = time.perf_counter()
        conn.request("POST", "/v1/hooks/claude-code/bench-daemon", body=payload, headers=headers)
        r = conn.getresponse()
        r.read()
        samples.append(time.perf_counter() - t0)
        if r.status != 200:
            raise RuntimeError(f"daemon answered {r.status}")
    total = time.perf_counter() - t_all
    conn.close()
    return {**stats(samples), "hooks_per_s": n / total}


def daemon_side_fresh(home: Path, payload: bytes, n: int, unix: bool) -> dict[str, Any]:
    """Like a hook client: a new connection per hook (the Unix socket, as the compiled client;
    loopback TCP, as the bash client), the same chunked request bytes in one write, read
    until the daemon closes. No process spawn."""
    ep = Home.resolve(home).read_endpoint()
    port, token = ep.port, ep.hook_token
    sock_path = os.fspath(Home.resolve(home).socket_path)
    samples = []
    for i in range(n):
        head = (f"POST /v1/hooks/claude-code/bench-daemon HTTP/1.1\r\nHost: hookd\r\n"
                f"Authorization: Bearer {token}\r\nX-Hookd-Delivery: {time.time_ns() // 1000}-{os.getpid()}-fresh{unix}{i}\r\n"
                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        req = head.encode() + b"%x\r\n" % len(payload) + payload + b"\r\n0\r\n\r\n"
        t0 = time.perf_counter()
        if unix:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(sock_path)
        else:
            sock = socket.create_connection(("127.0.0.1", int(port)))
        with sock:
            sock.sendall(req)
            resp = b""
            while chunk := sock.recv(65536):
                resp += chunk
        samples.append(time.perf_counter() - t0)
        if not resp.startswith(b"HTTP/1.1 200 "):
            raise RuntimeError(f"daemon answered {resp[:60]!r}")
    return stats(samples)


def strace_profile(argv: list[str], payload: bytes, cwd: str) -> dict[str, Any]:
    """strace -c -f (syscall summary) and a -f -ttt -T timeline of one run, reduced to
    milestones: exec of the client, connect to the daemon, first reply byte, exit."""
    if not shutil.which("strace"):
        return {"error": "strace not installed"}
    out: dict[str, Any] = {}
    r = subprocess.run(["strace", "-c", "-f", "-o", "/dev/stdout", *argv], input=payload, cwd=cwd,
                       capture_output=True, timeout=60)
    out["summary"] = r.stdout.decode(errors="replace")
    r = subprocess.run(["strace", "-f", "-ttt", "-T", "-o", "/dev/stdout", *argv], input=payload, cwd=cwd,
                       capture_output=True, timeout=60)
    lines = r.stdout.decode(errors="replace").splitlines()
    t = [float(line.split()[1]) for line in lines if len(line.split()) > 1 and line.split()[1][:1].isdigit()]
    t0 = t[0] if t else 0.0
    marks: dict[str, float] = {}
    for line in lines:
        parts = line.split(None, 2)
        if len(parts) < 3 or not parts[1][:1].isdigit():
            continue
        at, call = (float(parts[1]) - t0) * 1e3, parts[2]
        if call.startswith("execve(") and ("bash" in call or "hook-client" in call) and "exec client" not in marks:
            marks["exec client"] = at
        elif call.startswith("openat(") and "hook-client" in call and "script opened" not in marks:
            marks["script opened"] = at
        elif call.startswith("connect(") and "connect" not in marks:
            marks["connect"] = at
        elif ("\"POST" in call) and call.startswith(("write(", "writev(")) and "request written" not in marks:
            marks["request written"] = at
        elif "HTTP/1.1" in call and call.startswith("read(") and "reply read" not in marks:
            marks["reply read"] = at
        elif call.startswith("exit_group("):
            marks["exit_group"] = at
    out["timeline_ms_under_strace"] = marks
    out["syscalls_in_run"] = len(lines)
    return out


#: Where an instrumented copy of the client records EPOCHREALTIME (before the line that
#: starts with the prefix). Markers whose line is not found are left out.
SEGMENTS = [
    ("preamble", "harness=$1"), ("arg check", "t0="), ("setup, function defs", "eof=0"),
    ("stdin read", "read -r port token"), ("endpoint read", "exec 3<>"), ("connect", "if (( ${#buf} > 65536"),
    ("request built and written", "resp="), ("daemon reply", "head="),
]


def segment_profile(client: Path, argv_tail: list[str], payload: bytes, cwd: str, n: int) -> dict[str, float]:
    """Median microseconds per segment of the client's own run (after bash has started),
    from a copy of the client that appends EPOCHREALTIME marks to a file."""
    out = client.parent / "segments.log"
    lines = client.read_text().splitlines()
    instr = [lines[0], 'T0=${EPOCHREALTIME/./}; TR=; tr() { TR+="$1=$(( ${EPOCHREALTIME/./} - T0 )) "; }']
    names: list[str] = []
    for line in lines[1:]:
        for name, prefix in SEGMENTS:
            if line.startswith(prefix) and name not in names:
                names.append(name)
                instr.append(f"tr {len(names) - 1}")
        if line == "exit 0":
            instr.append(f'tr {len(SEGMENTS)}; printf "%s\\n" "$TR" >> {shlex.quote(os.fspath(out))}')
        instr.append(line)
    names.append("reply parsed, exit")
    copy = client.parent / "hook-client.segments"
    copy.write_text("\n".join(instr) + "\n")
    for _ in range(n):
        run_once([bash_path(), os.fspath(copy), *argv_tail], payload, cwd)
    rows = []
    for line in out.read_text().splitlines():
        row = {}
        for kv in line.split():
            k, _, v = kv.partition("=")
            row[names[min(int(k), len(names) - 1)]] = int(v)
        rows.append(row)
    medians: dict[str, float] = {}
    prev = 0.0
    for name in names:
        vals = [r[name] for r in rows if name in r]
        if not vals:
            continue
        m = statistics.median(vals)
        medians[name] = m - prev
        prev = m
    medians["total inside the script"] = prev
    return medians


PAYLOADS = ("521 B", "1.4 KB")
CX_PAYLOADS = ("494 B", "904 B")


def build_noop(tmp: Path) -> list[str] | None:
    """A no-op C program built exactly as spawn builds the compiled client (same compiler,
    same flags tried in the same order: the bare start of a compiled client); None without
    a compiler."""
    compiler = c_compiler()
    if not compiler:
        return None
    built = build_program(tmp / "noop-build", compiler, "int main(void) { return 0; }\n", tmp / "noop")
    return [os.fspath(built)] if isinstance(built, Path) else None


def spawn_with(home: Path, builder: str, settings: Path | None, kind: str, **kw: Any) -> dict[str, Any]:
    """`hookd spawn` with HOOKD_HOOK_CLIENT=kind (``kw``: spawn's other arguments)."""
    old = os.environ.get("HOOKD_HOOK_CLIENT")
    os.environ["HOOKD_HOOK_CLIENT"] = kind
    try:
        return spawn(Home.resolve(home), builder, settings_file=settings, **kw)
    finally:
        if old is None:
            del os.environ["HOOKD_HOOK_CLIENT"]
        else:
            os.environ["HOOKD_HOOK_CLIENT"] = old


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=300, help="measured runs per command (default 300)")
    ap.add_argument("--warmup", type=int, default=30, help="unmeasured runs per command first (default 30)")
    ap.add_argument("--daemon-requests", type=int, default=3000, help="requests for the daemon-side figure")
    ap.add_argument("--gap-ms", type=float, default=0.0,
                    help="idle milliseconds before each measured run (default 0: back to back)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    ap.add_argument("--profile", action="store_true", help="always print strace profiles of the client")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="hookd-bench-"))
    home, down_home, wt = tmp / "home", tmp / "home-down", tmp / "worktree"
    wt.mkdir()
    bash = bash_path()
    sh = shutil.which("sh") or "/bin/sh"
    pre, post = BASH_PRE.read_bytes(), AUQ_POST.read_bytes()
    cwd = os.fspath(wt)
    noop = build_noop(tmp)

    # the default client (what `hookd spawn` writes here), then the bash client
    default = spawn_with(home, "bench", tmp / "settings.json", "auto")
    judged = "compiled" if default["client"] == "c" else "bash"
    commands = {judged: default["command"]}
    down = {judged: spawn_with(down_home, "bench", tmp / "settings-down.json", "auto")["command"]}
    if judged == "compiled":
        commands["bash"] = spawn_with(home, "bench-bash", tmp / "settings-bash.json", "bash")["command"]
        down["bash"] = spawn_with(down_home, "bench-bash", tmp / "settings-down-bash.json", "bash")["command"]
    codex_command = spawn_with(home, "bench-codex", None, "auto", worktree=wt, harness="codex")["command"]
    floors = {"bash": [bash, "-c", "true"]}
    if noop:
        floors["compiled"] = noop

    cases: dict[str, tuple[list[str], bytes]] = {}
    for kind, argv in floors.items():
        cases[f"floor {kind}: {' '.join(shlex.quote(a) for a in argv)}"] = (argv, pre)
        cases[f'floor {kind}: sh -c "exec ..."'] = ([sh, "-c", "exec " + " ".join(shlex.quote(a) for a in argv)], pre)
    for kind, command in commands.items():
        for payload_name, payload in zip(PAYLOADS, (pre, post)):
            cases[f"{kind} client raw, {payload_name}"] = (client_argv(command), payload)
            cases[f"{kind} client sh -c, {payload_name}"] = ([sh, "-c", command], payload)
    for kind, command in down.items():
        cases[f"{kind} fail-open sh -c (no daemon)"] = ([sh, "-c", command], pre)
    # Codex's command: the judged client on Codex's route, run by Codex with bash -c
    cases[f'floor {judged}: bash -c "exec ..."'] = ([bash, "-c", "exec " + " ".join(shlex.quote(a) for a in floors[judged])], pre)
    for payload_name, payload in zip(CX_PAYLOADS, (CX_PRE.read_bytes(), CX_POST.read_bytes())):
        cases[f"codex {judged} client raw, {payload_name}"] = (client_argv(codex_command), payload)
        cases[f"codex {judged} client bash -c, {payload_name}"] = ([bash, "-c", codex_command], payload)

    samples: dict[str, list[float]] = {k: [] for k in cases}
    daemon = DaemonProcess(home)
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "bash": bash, "sh": os.path.realpath(sh),
                    "uname": " ".join(os.uname()[i] for i in (0, 2, 4)), "cc": " ".join(c_compiler() or ["none"])},
        "runs": args.runs, "warmup": args.warmup, "gap_ms": args.gap_ms, "payload_bytes": {"pre": len(pre), "post": len(post)},
        "judged": judged, "commands_spawned": commands, "codex_command": codex_command,
    }
    try:
        daemon.start()
        names = list(cases)
        for rnd in range(args.warmup + args.runs):
            k = rnd % len(names)
            for name in names[k:] + names[:k]:  # round-robin, rotated each round
                argv, payload = cases[name]
                if args.gap_ms and rnd >= args.warmup:
                    time.sleep(args.gap_ms / 1000)
                dt, rc, out = run_once(argv, payload, cwd)
                if rc != 0 or out:
                    raise SystemExit(f"{name}: exit {rc}, stdout {out[:200]!r}")
                if rnd >= args.warmup:
                    samples[name].append(dt)
        expected = args.warmup + args.runs
        for builder in ("bench", "bench-bash")[:len(down)]:
            spooled = len(list((down_home / "spool" / builder).glob("*.json")))
            if spooled != expected:
                raise SystemExit(f"fail-open {builder}: {spooled} payloads spooled, expected {expected}")
        result["commands"] = {name: stats(s) for name, s in samples.items()}
        result["daemon_side"] = daemon_side(home, pre, args.daemon_requests)
        result["daemon_side_fresh_unix"] = daemon_side_fresh(home, pre, args.daemon_requests, unix=True)
        result["daemon_side_fresh_unix_post"] = daemon_side_fresh(home, post, args.daemon_requests, unix=True)
        result["daemon_side_fresh_tcp"] = daemon_side_fresh(home, pre, args.daemon_requests, unix=False)
        # every live run was stored: 4 client cases per client per round, plus the daemon-side requests
        st = daemon.client().get("/v1/status")
        result["hook_events_stored"] = st["counts"]["hook_events"]
        want = 4 * (len(commands) + 1) * (args.warmup + args.runs) + 4 * args.daemon_requests  # (+1: Codex's)
        if st["counts"]["hook_events"] != want or st["counts"]["spooled"]:
            raise SystemExit(f"daemon stored {st['counts']} hook events, expected {want} and nothing spooled")
        budget, ok = evaluate(result, floors)
        if not ok or args.profile:
            result["profile"] = strace_profile([sh, "-c", commands[judged]], pre, cwd)
            if "bash" in commands and (args.profile or judged == "bash"):
                raw_argv = client_argv(commands["bash"])
                client = Home.resolve(home).client_script
                client_args = raw_argv[raw_argv.index(os.fspath(client)) + 1:]  # after bash [-p] client
                result["profile"]["segments_us"] = segment_profile(client, client_args, pre, cwd, 200)
    finally:
        daemon.stop()
        daemon.kill()
        shutil.rmtree(tmp, ignore_errors=True)

    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0 if ok else 1


def evaluate(result: dict[str, Any], floors: dict[str, list[str]]) -> tuple[list[dict[str, Any]], bool]:
    """The budget checks (judged client) and the reported ratios (the rest)."""
    med = {k: v["median_ms"] for k, v in result["commands"].items()}
    floor_raw = {kind: f"floor {kind}: {' '.join(shlex.quote(a) for a in argv)}" for kind, argv in floors.items()}
    floor_sh = {kind: f'floor {kind}: sh -c "exec ..."' for kind in floors}
    budget, info = [], {}
    for kind in ("compiled", "bash"):
        if f"{kind} client raw, {PAYLOADS[0]}" not in med or kind not in floors:
            continue
        for payload_name in PAYLOADS:
            pairs = [(f"{kind} raw / its bare start", f"{kind} client raw, {payload_name}", floor_raw[kind]),
                     (f"{kind} sh -c / sh -c exec its bare start", f"{kind} client sh -c, {payload_name}", floor_sh[kind])]
            if kind == "compiled":
                pairs.append(("compiled raw / bash -c true", f"{kind} client raw, {payload_name}", floor_raw["bash"]))
            for label, num, den in pairs:
                ratio = med[num] / med[den]
                name = f"{label} [{payload_name}]"
                if kind == result["judged"] and "bash -c true" not in label:
                    budget.append({"check": name, "ratio": ratio, "limit": ROUND_TRIP_FACTOR, "ok": ratio <= ROUND_TRIP_FACTOR})
                else:
                    info[name] = ratio
    judged = result["judged"]
    for payload_name in CX_PAYLOADS:
        for label, num, den in (
                (f"codex {judged} raw / its bare start", f"codex {judged} client raw, {payload_name}", floor_raw[judged]),
                (f"codex {judged} bash -c / bash -c exec its bare start", f"codex {judged} client bash -c, {payload_name}",
                 f'floor {judged}: bash -c "exec ..."')):
            if num in med and den in med:
                info[f"{label} [{payload_name}]"] = med[num] / med[den]
    for name in med:
        if "fail-open" in name:
            budget.append({"check": f"{name} median ms", "value": med[name], "limit": FAIL_OPEN_MS, "ok": med[name] <= FAIL_OPEN_MS})
    result["budget"] = budget
    result["info_ratios"] = info
    return budget, all(b["ok"] for b in budget)


def print_table(r: dict[str, Any]) -> None:
    m = r["machine"]
    print(f"hookd bench: {m['cpus']} CPUs, {m['uname']}, bash {m['bash']}, sh {m['sh']}, cc {m['cc']}, python {m['python']}")
    gap = f", {r['gap_ms']:g} ms idle before each" if r.get("gap_ms") else ""
    print(f"{r['runs']} runs per command after {r['warmup']} warm-up, interleaved round-robin{gap}; spawn to exit")
    for kind, command in r["commands_spawned"].items():
        print(f"{kind} client command: {command}")
    print(f"codex hook command: {r['codex_command']}")
    print()
    w = max(len(k) for k in r["commands"])
    print(f"{'command':<{w}}  {'median':>8} {'p90':>8} {'p99':>8} {'min':>8}  (ms)")
    for name, s in r["commands"].items():
        print(f"{name:<{w}}  {s['median_ms']:8.2f} {s['p90_ms']:8.2f} {s['p99_ms']:8.2f} {s['min_ms']:8.2f}")
    for key, label in (("daemon_side", "daemon side: TCP keep-alive"),
                       ("daemon_side_fresh_unix", "daemon side: new Unix connection"),
                       ("daemon_side_fresh_unix_post", "daemon side: new Unix connection, 1.4 KB"),
                       ("daemon_side_fresh_tcp", "daemon side: new TCP connection")):
        d = r[key]
        rate = f"  {d['hooks_per_s']:.0f} hooks/s sequential" if "hooks_per_s" in d else ""
        print(f"{label + ' (n=' + str(d['n']) + ')':<{w}}  {d['median_ms']:8.2f} {d['p90_ms']:8.2f} "
              f"{d['p99_ms']:8.2f} {d['min_ms']:8.2f}{rate}")
    print(f"\nbudget (medians; judged: the {r['judged']} client):")
    for b in r["budget"]:
        val = f"{b['ratio']:.2f}x (limit {b['limit']:.1f}x)" if "ratio" in b else f"{b['value']:.2f} ms (limit {b['limit']:.0f} ms)"
        print(f"  {'ok  ' if b['ok'] else 'FAIL'} {b['check']}: {val}")
    for k, v in r["info_ratios"].items():
        print(f"  info {k}: {v:.2f}x")
    if "profile" in r:
        p = r["profile"]
        if "error" in p:
            print(f"\nprofile: {p['error']}")
            return
        print(f"\nprofile of one sh -c <command> run of the {r['judged']} client (PreToolUse), strace -c -f (top 8 by calls):")
        rows = [l for l in p["summary"].splitlines() if l.strip() and l.split()[0][0].isdigit()]
        body = [l for l in rows if not l.rstrip().endswith("total")]
        body.sort(key=lambda l: -int(l.split()[3]))
        head = [l for l in p["summary"].splitlines() if l.startswith("% time")]
        print("\n".join(head + body[:8] + [l for l in rows if l.rstrip().endswith("total")]))
        marks = ", ".join(f"{k} {v:.2f}" for k, v in p["timeline_ms_under_strace"].items())
        print(f"milestones under strace -f -ttt (ms from the first syscall; strace inflates them): {marks}")
        if "segments_us" in p:
            print("\nwhere the bash client's own time goes (instrumented copy, EPOCHREALTIME, median of 200 runs, us):")
            for k, v in p["segments_us"].items():
                print(f"  {k:<28} {v:8.0f}")


if __name__ == "__main__":
    sys.exit(main())
