#!/usr/bin/env python3
"""hookd fleet benchmark: hosts shipping their event logs to a PostgreSQL hub (hookd.hub).

    python bench/fleet.py [--hosts 3] [--builders 50] [--hooks 200] [--rate 20] [--rounds 3] [--json]

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
3. the answer from the hub to a held hook's release: a slot (``answer_release``: null) until
   the hub's ``commands`` (answers down to hosts, issue 25's later stage) are on main.

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
from hookd.hub import sql  # noqa: E402
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


def _keep_timings(d: Daemon) -> None:
    """Record the daemon-side timings run_raw reads (and clears), for the variant's samples."""
    orig = d.timings

    def timings() -> list[float]:
        t = orig()
        d.last_timings = t  # type: ignore[attr-defined]
        return t
    d.timings = timings  # type: ignore[method-assign]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--builders", type=int, default=50)
    ap.add_argument("--hooks", type=int, default=200, help="hooks per builder in the ingest run")
    ap.add_argument("--rate", type=float, default=20.0, help="hooks/s per builder in the hub-down runs")
    ap.add_argument("--latency-hooks", type=int, default=100, help="hooks per builder per round in the hub-down runs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
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
            res["ingest"] = ingest(tmp, cluster, args.hosts, args.builders, args.hooks)
            res["hub_down"] = hub_down(tmp, cluster, gone, args.builders, args.latency_hooks, args.rate, args.rounds)
        # (the answer given on the hub -> the held hook released, p50/p99: measured once the
        # hub's commands carry answers down to hosts)
        res["answer_release"] = None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    i, h = res["ingest"], res["hub_down"]
    print(f"{res['date']}, {res['machine']['cpus']} CPUs, load {res['machine']['load_avg_1m']:.1f}")
    print(f"ingest: {i['hosts']} hosts x {i['builders_per_host']} builders, {i['events']} events on the hub in "
          f"{i['wall_s']:.1f} s: {i['hub_events_per_s']:.0f} events/s; lag local commit -> hub p50 "
          f"{i['lag_p50_ms']:.1f} ms, p99 {i['lag_p99_ms']:.1f} ms")
    print(f"hook path (daemon side), {h['builders']} builders at {h['rate_per_builder']:g} hooks/s each, "
          f"{h['rounds']} rounds interleaved (the down hub's shipper: {h['down_state']}):")
    for v, s in h["variants"].items():
        print(f"  {v:9} p50 {s['p50_ms']:.3f} ms ({h['ratio_p50'][v]:.2f}x)  p99 {s['p99_ms']:.3f} ms "
              f"({h['ratio_p99'][v]:.2f}x)  n={s['n']}")
    print("answer on the hub -> held hook released: not measured yet (needs the hub's commands: answers down to hosts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
