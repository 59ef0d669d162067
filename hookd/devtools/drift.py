"""`hookd drift`: what a newly recorded Claude Code version sends that hookd does not know.

Reads the newest version folder under ``fixtures/claude-code/`` (or the one given) and
reports hook events without a model, payload fields a model does not declare, transcript
row types hookd does not know, payloads that fail to parse, and golden mismatches (each
scenario replayed through a private daemon). Parse failures and golden mismatches make the
report fail; unknown events, fields and row types are reported for a human to judge.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from hookd.harness.base import Adapter, TranscriptReader
from hookd.harness.registry import ADAPTERS, DEFAULT_HARNESS, READERS
from hookd.models import PayloadInvalid
from hookd.untrusted import visible


@dataclass
class DriftReport:
    version_dir: Path
    unknown_events: dict[str, list[str]] = field(default_factory=dict)  # event -> files
    unknown_fields: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # event -> field -> files
    unknown_row_types: dict[str, int] = field(default_factory=dict)  # type -> rows
    parse_failures: list[str] = field(default_factory=list)
    golden_mismatches: dict[str, str] = field(default_factory=dict)  # scenario -> diff
    replayed: bool = True

    @property
    def failed(self) -> bool:
        return bool(self.parse_failures or self.golden_mismatches)


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", name)) or (-1,)


def newest_version_dir(root: Path) -> Path:
    """The highest version folder (``2.1.332`` > ``2.1.99``) under ``root``; raises
    FileNotFoundError when there is none."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root} does not exist here: run hookd drift in a hookd checkout (its recordings are"
                                " fixtures/HARNESS there), or give a version folder or --fixtures DIR")
    dirs = [d for d in root.iterdir() if d.is_dir() and re.fullmatch(r"\d+(\.\d+)*", d.name)]
    if not dirs:
        raise FileNotFoundError(f"no version folders under {root}")
    return max(dirs, key=lambda d: _version_key(d.name))


def _harness(name: str) -> tuple[Adapter, TranscriptReader]:
    """The adapter and the transcript reader of harness ``name`` (the registry's). Raises
    ValueError when the registry has no adapter or no transcript reader of that name."""
    reader = next((r for r in READERS if r.HARNESS == name), None)
    if name not in ADAPTERS or reader is None:
        raise ValueError(f"harness {name!r} has no adapter and transcript reader to check recordings with")
    return ADAPTERS[name], reader


def drift(version_dir: Path, replay_goldens: bool = True, harness: str = DEFAULT_HARNESS) -> DriftReport:
    """Build the report for one version folder of recorded scenarios of ``harness`` (default:
    the registry's :data:`~hookd.harness.registry.DEFAULT_HARNESS`, Claude Code, whose
    recordings are under ``fixtures/claude-code/``), read with its adapter and transcript
    reader from :mod:`hookd.harness.registry`. Raises ValueError for a harness without both."""
    rep = DriftReport(version_dir, replayed=replay_goldens)
    adapter, reader = _harness(harness)
    events: dict[str, list[str]] = defaultdict(list)
    fields: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    rows: dict[str, int] = defaultdict(int)
    scenarios = sorted(d for d in version_dir.iterdir() if (d / "hooks").is_dir())
    for sc in scenarios:
        for f in sorted((sc / "hooks").glob("*.json")):
            rel = f"{sc.name}/{f.name}"
            raw = f.read_bytes()
            try:
                adapter.parse(raw, builder="drift", cwd=None)
            except PayloadInvalid as e:
                rep.parse_failures.append(f"{rel}: {e.message}")
                continue
            obj = msgspec.json.decode(raw)
            name = obj["hook_event_name"]
            known = adapter.known_fields(name)
            if known is None:
                events[name].append(rel)
                continue
            for key in obj:
                if key not in known:
                    fields[name][key].append(rel)
        t = sc / "transcript.jsonl"
        if t.exists():
            for n, line in enumerate(t.read_bytes().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    row = msgspec.json.decode(line)
                except msgspec.DecodeError as e:
                    rep.parse_failures.append(f"{sc.name}/transcript.jsonl:{n}: {e}")
                    continue
                kind = row.get("type") if isinstance(row, dict) else None
                if kind not in reader.TRANSCRIPT_ROW_TYPES:
                    rows[str(kind)] += 1
        if replay_goldens:
            from hookd.devtools.replay import replay

            result = replay(sc)
            if result.diff:
                rep.golden_mismatches[sc.name] = result.diff
    rep.unknown_events = dict(events)
    rep.unknown_fields = {k: dict(v) for k, v in fields.items()}
    rep.unknown_row_types = dict(rows)
    return rep


def render(rep: DriftReport) -> str:
    """A human-readable report."""
    out = [f"drift report for {rep.version_dir}"]

    def section(title: str, lines: list[str]) -> None:
        out.append(f"\n{title}: {len(lines) or 'none'}")
        out.extend(f"  {line}" for line in lines)

    v = visible  # names and values from recorded payloads: one line each, nothing a terminal acts on
    section("hook events without a model", [f"{v(e)} ({len(fs)}x, e.g. {v(fs[0])})" for e, fs in sorted(rep.unknown_events.items())])
    section("payload fields the models do not declare",
            [f"{v(e)}.{v(k)} ({len(fs)}x, e.g. {v(fs[0])})" for e, ks in sorted(rep.unknown_fields.items()) for k, fs in sorted(ks.items())])
    section("transcript row types hookd does not know", [f"{v(t)} ({n} rows)" for t, n in sorted(rep.unknown_row_types.items())])
    section("parse failures", [v(f) for f in rep.parse_failures])
    if rep.replayed:
        section("golden mismatches", [f"{s}:\n{d}" for s, d in sorted(rep.golden_mismatches.items())])
    else:
        out.append("\ngolden mismatches: not checked (--no-replay)")
    out.append("\nresult: " + ("FAIL" if rep.failed else "ok"))
    return "\n".join(out) + "\n"
