#!/usr/bin/env python3
"""hookd fleet benchmark: hosts shipping their event logs to a PostgreSQL hub (hookd.hub).

    python bench/fleet.py [--hosts 3] [--builders 50] [--hooks 200] [--rate 20] [--rounds 3] [--questions 20] [--answers 20] [--only PART] [--json]

Starts a private PostgreSQL cluster (tests/pg.py: Debian's server, as its ``postgres`` user
when run as root) and real daemons (bench/load.py's ``Daemon``: in-daemon hook timings on),
each its own host role on the hub (``HOOKD_HUB``). Measured:

1. ingest: ``--hosts`` daemons x ``--builders`` raw builders (bench/load.py's ``run_raw``, back
   to back, ``--hooks`` each) at once; the hub's ingest rate (every host's events over the
   wall time from the start until the hub holds them all) and each event's lag from its local
   commit (``events.at``) to the hub's ``shipped_at`` (one machine, one clock): p50/p99;
2. the hub down changes nothing for the hook path: three daemons, no hub / the hub up / the
   hub stopped (a second private cluster the daemon connected and shipped to, then stopped
   with ``pg_ctl -m immediate``: its shipper is ``down`` and retrying), the same open-loop load
   (``--rate`` hooks/s per builder), interleaved round-robin ``--rounds`` times; daemon-side
   p50/p99 per variant and each one's ratio to no hub, in one run;
3. the fleet's one notifier (docs/fleet.md): ``--hosts`` daemons on a fresh hub, host0 the
   lead (``hookd_notifier``), every host with a webhook channel to this process (a host's own
   alert would show there too); ``--questions`` questions asked one at a time on the other
   hosts: the time from the question's hook answered to the lead's webhook received
   (p50/p99), and how many alerts each question got (1: once, by the lead);
4. the answer from the hub to a held hook's release (``answer_release``): one host daemon with a
   spawned builder (bench/answer.py's: its generated hooks, PermissionRequest held up to 60 s);
   ``--answers`` times each way, interleaved, an AskUserQuestion call's PermissionRequest hook is held, its pending
   event shipped to the hub, then an operator's ``hookd.hub.ops.command(..., "answer", ...)``
   (a new connection, the command queued, no wait: what ``hookd --hub URL answer --no-wait``
   does), or ``hookd.hub.ops.queue`` on a connection kept open (``open_conn``: the hub's and the
   host's part alone), is timed to the held hook's exit with the answer: p50/p99, and the part
   until the call returned (the command queued).

No budget is judged: the figures go to docs/benchmarks.md with their machine and its load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(REPO))
sys.path.insert(0, os.fspath(REPO / "bench"))

import asyncpg  # noqa: E402

from hookd.daemonproc import DaemonProcess, wait_until  # noqa: E402
from hookd.hub import fleet_sql, sql  # noqa: E402
from load import Daemon, pct, run_raw, summary  # noqa: E402
from tests.pg import PgCluster, private_cluster  # noqa: E402


def pg(url: str, fn: Any, *args: Any) -> Any:
    async def go() -> Any:
        conn = await asyncpg.connect(url)
        try:
            return await fn(conn, *args)
        finally:
            await conn.close()
    return asyncio.run(go())


def hub_daemon(home: Path, hub_url: str | None) -> Daemon:
    """bench/load.py's Daemon, shipping to ``hub_url`` (None: no hub)."""
    d = Daemon(home)
    env = {**os.environ, "HOOKD_HOOK_TIMINGS": "1"}
    env.pop("HOOKD_HUB", None)
    if hub_url:
        env["HOOKD_HUB"] = hub_url
    d.d = DaemonProcess(home, env=env)
    return d


def setup_hub(cluster: PgCluster, names: list[str]) -> tuple[str, dict[str, str]]:
    """A hub database with the schema and one host role per name: (admin URL, name -> URL)."""
    pg(cluster.admin_url(), lambda c: c.execute("DROP DATABASE IF EXISTS fleet_bench"))
    pg(cluster.admin_url(), lambda c: c.execute("CREATE DATABASE fleet_bench"))
    admin = cluster.admin_url("fleet_bench")
    pg(admin, sql.install)
    urls = {}
    for n in names:
        pg(admin, sql.add_host, n, f"pw-{n}")
        urls[n] = cluster.url(n, f"pw-{n}", "fleet_bench")
    return admin, urls


def ingest(tmp: Path, cluster: PgCluster, hosts: int, builders: int, hooks: int) -> dict[str, Any]:
    names = [f"host{i}" for i in range(hosts)]
    admin, urls = setup_hub(cluster, names)
    daemons = [hub_daemon(tmp / f"ingest-{n}", urls[n]) for n in names]
    for d in daemons:
        d.__enter__()
    try:
        results: dict[str, Any] = {}
        t0 = time.perf_counter()
        threads = [threading.Thread(target=lambda n=n, d=d: results.__setitem__(n, run_raw(d, builders, hooks, tag="b")))
                   for n, d in zip(names, daemons)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        want = {n: d.counts()["events"] for n, d in zip(names, daemons)}
        deadline = time.monotonic() + 600
        while True:
            have = {r["host_id"]: r["shipped_seq"] for r in pg(admin, sql.hosts)}
            if all(have.get(n, 0) >= want[n] for n in names):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the hub holds {have}, the hosts {want}")
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        lags = pg(admin, lambda c: c.fetch("SELECT extract(epoch FROM shipped_at)::float8 - at FROM hookd.events"))
        lag = [max(0.0, r[0]) for r in lags]
        total = sum(want.values())
        return {"hosts": hosts, "builders_per_host": builders, "hooks": hosts * builders * hooks, "events": total,
                "wall_s": wall, "hub_events_per_s": total / wall, "lag_p50_ms": pct(lag, 0.5), "lag_p99_ms": pct(lag, 0.99),
                "hook_p99_ms_per_host": {n: r["daemon"]["p99_ms"] for n, r in results.items()}}
    finally:
        for d in daemons:
            d.__exit__()


def hub_state(d: Daemon) -> str:
    return str(d.get("/v1/status")[0]["hub"]["state"])


def hub_down(tmp: Path, cluster: PgCluster, gone: PgCluster, builders: int, hooks: int, rate: float,
             rounds: int) -> dict[str, Any]:
    """The hook path with no hub, the hub up (``cluster``) and the hub stopped (``gone``, stopped
    once the daemon shipped to it)."""
    _, urls = setup_hub(cluster, ["up_host"])
    _, gone_urls = setup_hub(gone, ["down_host"])
    variants = {"no hub": None, "hub up": urls["up_host"], "hub down": gone_urls["down_host"]}
    daemons = {v: hub_daemon(tmp / f"latency-{i}", u) for i, (v, u) in enumerate(variants.items())}
    samples: dict[str, list[float]] = {v: [] for v in variants}
    for d in daemons.values():
        d.__enter__()
    try:
        for v in ("hub up", "hub down"):
            wait_until(lambda v=v: hub_state(daemons[v]) == "up", 60, what=f"the {v} daemon's shipper up")
        gone.stop("immediate")
        wait_until(lambda: hub_state(daemons["hub down"]) == "down", 60, what="the stopped hub seen down")
        order = list(variants)
        for r in range(rounds):
            for v in order[r % 3:] + order[:r % 3]:
                d = daemons[v]
                run_raw(d, builders, hooks, tag=f"r{r}b", rate=rate)
                samples[v] += d.last_timings  # type: ignore[attr-defined]
        down_state = hub_state(daemons["hub down"])
    finally:
        for d in daemons.values():
            d.__exit__()
    out = {v: summary(s) for v, s in samples.items()}
    base = out["no hub"]
    return {"builders": builders, "rate_per_builder": rate, "rounds": rounds, "down_state": down_state,
            "variants": out, "ratio_p50": {v: out[v]["p50_ms"] / base["p50_ms"] for v in out},
            "ratio_p99": {v: out[v]["p99_ms"] / base["p99_ms"] for v in out}}


class _Receiver:
    """A webhook on 127.0.0.1 recording when each alert arrived: key -> [(monotonic, alert)]."""

    def __init__(self) -> None:
        import http.server

        self.got: dict[str, list[tuple[float, dict[str, Any]]]] = {}
        me = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - (http.server's name)
                at = time.monotonic()
                alert = json.loads(self.rfile.read(int(self.headers["content-length"])))
                me.got.setdefault(alert["key"], []).append((at, alert))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def _ask(d: Daemon, builder: str, sid: str) -> str:
    """A session of ``builder`` whose agent asks a question (the tui fixture's hooks): its id."""
    import httpx

    from load import TUI

    qid = f"toolu_{sid}"
    with httpx.Client(transport=httpx.HTTPTransport(uds=d.sock), base_url="http://hookd", timeout=60) as c:
        for n, name in enumerate(("001-SessionStart.json", "002-UserPromptSubmit.json", "007-PreToolUse.json")):
            p = json.loads((TUI / name).read_bytes())
            p["session_id"] = sid
            if "tool_use_id" in p:
                p["tool_use_id"] = qid
            c.post(f"/v1/hooks/claude-code/{builder}", content=json.dumps(p).encode(),
                   headers={"content-type": "application/json", "x-hookd-delivery": f"{sid}-{n}"}).raise_for_status()
    return qid


def fleet_notify(tmp: Path, cluster: PgCluster, hosts: int, questions: int) -> dict[str, Any]:
    """The fleet's one notifier: question asked on a host -> the lead's alert received."""
    names = [f"nhost{i}" for i in range(hosts)]
    pg(cluster.admin_url(), lambda c: c.execute("DROP DATABASE IF EXISTS fleet_notify"))
    pg(cluster.admin_url(), lambda c: c.execute("CREATE DATABASE fleet_notify"))
    admin = cluster.admin_url("fleet_notify")
    pg(admin, sql.install)
    rx = _Receiver()
    daemons = []
    for i, n in enumerate(names):
        pg(admin, sql.add_host, n, f"pw-{n}")
        if i == 0:
            pg(admin, fleet_sql.grant_notifier, n)
        home = tmp / f"notify-{n}"
        home.mkdir(parents=True)
        (home / "config.toml").write_text(
            "[hub]\nnotify_grace_s = 30\n\n[notify]\nquestion_after_s = 0\nsteps_s = [0]\n\n"
            f"[[notify.channel]]\ntype = \"webhook\"\nname = \"bench\"\nurl = \"{rx.url}\"\n")
        daemons.append(hub_daemon(home, cluster.url(n, f"pw-{n}", "fleet_notify")))
    for d in daemons:
        d.__enter__()
    lat: list[float] = []
    try:
        wait_until(lambda: hub_state(daemons[0]) == "up" and daemons[0].get("/v1/status")[0]["hub"]["notify"]
                   ["notifier"]["role"] == "lead", 60, what="host0 leading")
        wait_until(lambda: all(d.get("/v1/status")[0]["hub"]["notify"]["lead_present"] for d in daemons), 60,
                   what="every host seeing the lead")
        for k in range(questions):
            d = daemons[1 + k % (hosts - 1)]
            qid = _ask(d, f"q{k}", f"fleetq-{k}-{time.time_ns()}")
            t0 = time.monotonic()
            got = wait_until(lambda: rx.got.get(f"interaction:{qid}"), 60, interval=0.001, what=f"question {k} notified")
            lat.append(got[0][0] - t0)
        # every host has decided by the end of its grace (30 s): a second alert would show by then
        wait_until(lambda: sum(x.get("/v1/status")[0]["hub"]["notify"]["by_fleet"] for x in daemons[1:]) >= questions,
                   90, what="the hosts leaving every question to the lead")
        alerts = [len(v) for v in rx.got.values()]
        by_lead = sum(1 for v in rx.got.values() for _, a in v if a.get("data", {}).get("host"))
    finally:
        for d in daemons:
            d.__exit__()
        rx.server.shutdown()
    return {"hosts": hosts, "questions": questions, "notify_p50_ms": pct(lat, 0.5), "notify_p99_ms": pct(lat, 0.99),
            "notify_max_ms": max(lat) * 1e3, "alerts_per_question": sorted(set(alerts)), "by_lead": by_lead}


def answer_release(tmp: Path, cluster: PgCluster, answers: int) -> dict[str, Any]:
    """hookd.hub.ops.command(answer) on the hub -> the held hook's exit on its host."""
    from answer import armed_builder, held_prompt, released

    from hookd.hub import ops

    pg(cluster.admin_url(), lambda c: c.execute("DROP DATABASE IF EXISTS fleet_answer"))
    pg(cluster.admin_url(), lambda c: c.execute("CREATE DATABASE fleet_answer"))
    admin = cluster.admin_url("fleet_answer")
    pg(admin, sql.install)
    pg(admin, sql.add_host, "ahost", "pw-ahost")
    pg(admin, sql.add_operator, "aop", "pw-aop")
    op = cluster.url("aop", "pw-aop", "fleet_answer")
    env = {**os.environ, "HOOKD_HUB": cluster.url("ahost", "pw-ahost", "fleet_answer")}
    d = DaemonProcess(tmp / "answer-home", env=env)
    lat: list[float] = []
    queued: list[float] = []
    lat_open: list[float] = []
    queued_open: list[float] = []
    try:
        d.start()
        (tmp / "answer").mkdir()
        wt, pre_cmd, perm_cmd = armed_builder(d, tmp / "answer")
        client = d.client()
        wait_until(lambda: (client.get("/v1/status")["hub"]["commands"] or {}).get("state") == "up", 60,
                   what="the host's commands task up")
        conn_loop = asyncio.new_event_loop()
        conn = conn_loop.run_until_complete(asyncpg.connect(op))
        for i in range(2 * answers):
            tid, p = held_prompt(client, wt, pre_cmd, perm_cmd, i)
            # the operator answers what the hub shows: the prompt's pending event shipped
            wait_until(lambda: any(json.loads(r["data"]).get("id") == tid for r in ops.pending(op)), 60, 0.005,
                       what=f"prompt {i} on the hub")
            body = {"options": ["Blue"], "response_id": f"bench-{i}"}
            t0 = time.perf_counter()
            if i % 2 == 0:  # as the CLI: a new connection per command
                ops.command(op, "answer", f"ahost/{tid}", body, 0)
                queued.append(time.perf_counter() - t0)
            else:  # as a long-lived client: the command on an open connection
                conn_loop.run_until_complete(ops.queue(conn, "answer", f"ahost/{tid}", body, 0))
                queued_open.append(time.perf_counter() - t0)
            released(p, i)
            (lat if i % 2 == 0 else lat_open).append(time.perf_counter() - t0)
        conn_loop.run_until_complete(conn.close())
        conn_loop.close()
        client.close()
    finally:
        d.stop()
    return {"answers": answers, "p50_ms": pct(lat, 0.5), "p99_ms": pct(lat, 0.99), "max_ms": max(lat) * 1e3,
            "queued_p50_ms": pct(queued, 0.5), "queued_p99_ms": pct(queued, 0.99),
            "open_conn": {"p50_ms": pct(lat_open, 0.5), "p99_ms": pct(lat_open, 0.99), "max_ms": max(lat_open) * 1e3,
                          "queued_p50_ms": pct(queued_open, 0.5), "queued_p99_ms": pct(queued_open, 0.99)}}


def _keep_timings(d: Daemon) -> None:
    """Record the daemon-side timings run_raw reads (and clears), for the variant's samples."""
    orig = d.timings

    def timings() -> list[float]:
        t = orig()
        d.last_timings = t  # type: ignore[attr-defined]
        return t
    d.timings = timings  # type: ignore[method-assign]


#: The benchmark's parts (``--only``), in the order they run.
PARTS = ("ingest", "hub_down", "fleet_notify", "answer_release")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--builders", type=int, default=50)
    ap.add_argument("--hooks", type=int, default=200, help="hooks per builder in the ingest run")
    ap.add_argument("--rate", type=float, default=20.0, help="hooks/s per builder in the hub-down runs")
    ap.add_argument("--latency-hooks", type=int, default=100, help="hooks per builder per round in the hub-down runs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--questions", type=int, default=20, help="questions asked one at a time in the fleet-notifier run")
    ap.add_argument("--answers", type=int, default=20, help="answers given on the hub each way in the answer-release run")
    ap.add_argument("--only", action="append", choices=PARTS, help="run only this part (repeatable; default: all)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    only = set(args.only or PARTS)
    orig_enter = Daemon.__enter__

    def enter(self: Daemon) -> Daemon:
        _keep_timings(self)
        return orig_enter(self)
    Daemon.__enter__ = enter  # type: ignore[method-assign]

    tmp = Path(tempfile.mkdtemp(prefix="hookd-fleet-"))
    res: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M %Z"),
                           "machine": {"cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0]}}
    try:
        with private_cluster() as cluster, private_cluster() as gone:
            if "ingest" in only:
                res["ingest"] = ingest(tmp, cluster, args.hosts, args.builders, args.hooks)
            if "hub_down" in only:
                res["hub_down"] = hub_down(tmp, cluster, gone, args.builders, args.latency_hooks, args.rate, args.rounds)
            if "fleet_notify" in only:
                res["fleet_notify"] = fleet_notify(tmp, cluster, max(2, args.hosts), args.questions)
            if "answer_release" in only:
                res["answer_release"] = answer_release(tmp, cluster, args.answers)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"{res['date']}, {res['machine']['cpus']} CPUs, load {res['machine']['load_avg_1m']:.1f}")
    if "ingest" in res:
        print_ingest(res["ingest"])
    if "hub_down" in res:
        print_hub_down(res["hub_down"])
    if "fleet_notify" in res:
        f = res["fleet_notify"]
        print(f"fleet notifier, {f['hosts']} hosts, {f['questions']} questions one at a time: question -> the lead's alert "
              f"p50 {f['notify_p50_ms']:.0f} ms, p99 {f['notify_p99_ms']:.0f} ms (max {f['notify_max_ms']:.0f}); alerts per "
              f"question {f['alerts_per_question']}, {f['by_lead']} sent by the lead")
    if "answer_release" in res:
        a = res["answer_release"]
        print(f"answer on the hub -> held PermissionRequest hook released on its host, {a['answers']} answers one at a"
              f" time: p50 {a['p50_ms']:.0f} ms, p99 {a['p99_ms']:.0f} ms (max {a['max_ms']:.0f}); of which the command"
              f" queued (ops.command returned: connect, insert) p50 {a['queued_p50_ms']:.0f} ms,"
              f" p99 {a['queued_p99_ms']:.0f} ms")
        o = a["open_conn"]
        print(f"  the same on an open connection (hookd.hub.ops.queue): p50 {o['p50_ms']:.0f} ms, p99 {o['p99_ms']:.0f} ms"
              f" (max {o['max_ms']:.0f}); queued p50 {o['queued_p50_ms']:.0f} ms, p99 {o['queued_p99_ms']:.0f} ms")
    return 0


def print_ingest(i: dict[str, Any]) -> None:
    print(f"ingest: {i['hosts']} hosts x {i['builders_per_host']} builders, {i['events']} events on the hub in "
          f"{i['wall_s']:.1f} s: {i['hub_events_per_s']:.0f} events/s; lag local commit -> hub p50 "
          f"{i['lag_p50_ms']:.1f} ms, p99 {i['lag_p99_ms']:.1f} ms")


def print_hub_down(h: dict[str, Any]) -> None:
    print(f"hook path (daemon side), {h['builders']} builders at {h['rate_per_builder']:g} hooks/s each, "
          f"{h['rounds']} rounds interleaved (the down hub's shipper: {h['down_state']}):")
    for v, s in h["variants"].items():
        print(f"  {v:9} p50 {s['p50_ms']:.3f} ms ({h['ratio_p50'][v]:.2f}x)  p99 {s['p99_ms']:.3f} ms "
              f"({h['ratio_p99'][v]:.2f}x)  n={s['n']}")


if __name__ == "__main__":
    sys.exit(main())
