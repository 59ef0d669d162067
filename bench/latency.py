"""Shared report of the event-driven latency benchmarks (``inbox.py``, ``answer.py``)."""

from __future__ import annotations

import json
import statistics


def report(samples_s: list[float], budget_ms: float, what: str, as_json: bool) -> int:
    """Print median / p90 / max of ``samples_s`` (seconds) against a median budget (ms), as
    text or JSON; returns the exit status (1 when the median misses the budget)."""
    s = sorted(samples_s)
    res = {"runs": len(s), "median_ms": statistics.median(s) * 1e3, "p90_ms": s[int(0.9 * (len(s) - 1))] * 1e3,
           "max_ms": s[-1] * 1e3, "budget_ms": budget_ms}
    res["ok"] = res["median_ms"] <= budget_ms
    if as_json:
        print(json.dumps(res, indent=2))
    else:
        print(f"{what}: median {res['median_ms']:.1f} ms, p90 {res['p90_ms']:.1f} ms, max {res['max_ms']:.1f} ms "
              f"over {res['runs']} runs (budget median <= {budget_ms:.0f} ms): {'ok' if res['ok'] else 'FAIL'}")
    return 0 if res["ok"] else 1
