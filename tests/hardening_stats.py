"""How many inputs the hardening suites tried (issue 8: docs/guarantees.md cites the figure).

The bad-input suite counts every input per route; the total is printed at the end of the
pytest run (``bad-input examples tried: N``, from tests/conftest.py) and written to
``bench/results/bad-input.json`` (gitignored) with the date.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results" / "bad-input.json"
_counts: Counter[str] = Counter()


def tried(what: str, n: int = 1) -> None:
    _counts[what] += n


def counts() -> dict[str, int]:
    return dict(_counts)


def write() -> Path:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    data = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "total": sum(_counts.values()),
            "by_route": dict(sorted(_counts.items())), "cpus": os.cpu_count()}
    RESULTS.write_text(json.dumps(data, indent=2) + "\n")
    return RESULTS
