"""`hookd replay`: feed a recorded scenario through a private daemon, as the harness would.

A scenario directory holds ``hooks/NNN-<Event>.json`` (one hook's stdin each, in order),
``expected-events.jsonl`` (the golden file) and optionally ``scenario.json``::

    {"harness": "claude-code",    # or "codex", ... (a harness without a standalone settings
                                  # file is spawned into the replay's worktree)
     "feed_unregistered": false,   # true: also feed events hookd does not register
     "steps": {"004-PreToolUse.json": {"repeat": 2,              # run N copies concurrently
                                       "stdin": "held-open",      # or "chunks"
                                       "chunk_bytes": 3, "chunk_interval_s": 0.2,
                                       "daemon": "down"}}}        # stop the daemon first

Payloads of events the generated settings do not register (MessageDisplay, PostToolBatch)
are skipped, as the harness would not run hookd's hook for them. Each payload runs through
the generated command exactly as Claude Code runs it: ``sh -c
"<command>"`` in the worktree, payload on stdin. The daemon's events are compared with the
golden file after normalisation (no ``seq``, ``at`` or other timestamps; no events that
background timers derive, whose place in the log depends on timing: ``lane_changed``,
``notification_*``). Every hook must exit
0 with empty stdout or one JSON object whose ``hookEventName`` (if any) matches its event;
non-empty outputs are part of the comparison as ``hook_stdout`` lines.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from hookd.daemonproc import DaemonProcess, wait_until
from hookd.models import ConfigError, NotFound
from hookd.spawn import INSTALLS, spawn

BUILDER = "b1"
GOLDEN = "expected-events.jsonl"
#: Events a background task derives on its own schedule (debounced, timers): not compared.
TIMED_EVENTS = frozenset({"lane_changed", "notification_sent", "notification_failed"})
#: How a step's payload reaches the hook's stdin (scenario.json ``"stdin"``).
STDIN_MODES = ("normal", "held-open", "chunks")


@dataclass
class ReplayResult:
    steps: int
    events: list[dict[str, Any]]
    diff: str
    problems: list[str] = field(default_factory=list)


def normalize(event: dict[str, Any], synthetic_ids: dict[str, str] | None = None) -> dict[str, Any]:
    """An event without what changes between runs: seq, time, ``*_at`` data fields, and
    synthetic interaction ids (``pr_<hash>`` -> ``pr_1``, ``pr_2`` ... in order of first
    appearance, tracked in ``synthetic_ids``)."""
    ids = synthetic_ids if synthetic_ids is not None else {}
    data = {k: v for k, v in event["data"].items() if not k.endswith("_at")}
    iid = data.get("id")
    if isinstance(iid, str) and iid.startswith("pr_"):
        data["id"] = ids.setdefault(iid, f"pr_{len(ids) + 1}")
    return {"kind": event["kind"], "builder": event["builder"], "session_id": event["session_id"], "data": data}


def _dumps(obj: Any) -> str:
    return msgspec.json.encode(obj, order="sorted").decode()


def _run_hook(command: str, cwd: Path, payload: bytes, opts: dict[str, Any]) -> tuple[int, bytes]:
    """Run one hook like Claude Code: ``sh -c command``, payload on stdin."""
    mode = opts.get("stdin", "normal")
    p = subprocess.Popen(["sh", "-c", command], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdin is not None and p.stdout is not None
    if mode == "normal":
        out, _ = p.communicate(payload, timeout=60)
        return p.returncode, out
    if mode == "held-open":
        p.stdin.write(payload)
        p.stdin.flush()
        out = p.stdout.read()  # the client must finish with stdin still open
        rc = p.wait(timeout=60)
        p.stdin.close()
        return rc, out
    if mode == "chunks":
        size = int(opts.get("chunk_bytes", 3))
        interval = float(opts.get("chunk_interval_s", 0.2))
        outbuf: list[bytes] = []
        stdout = p.stdout
        reader = threading.Thread(target=lambda: outbuf.append(stdout.read()))
        reader.start()
        for i in range(0, len(payload), size):
            try:
                p.stdin.write(payload[i : i + size])
                p.stdin.flush()
            except BrokenPipeError:
                break
            time.sleep(interval)  # the scenario's input pacing, not a synchronisation
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
        rc = p.wait(timeout=60)
        reader.join()
        return rc, outbuf[0] if outbuf else b""
    raise ValueError(f"unknown stdin mode {mode!r}")


def _check_stdout(step: str, event_name: str, rc: int, out: bytes) -> tuple[list[str], Any]:
    problems = []
    parsed = None
    if rc != 0:
        problems.append(f"{step}: hook exited {rc}, must always exit 0")
    if out.strip():
        try:
            parsed = msgspec.json.decode(out)
        except msgspec.DecodeError:
            problems.append(f"{step}: stdout is not one JSON document: {out[:200]!r}")
        else:
            hso = parsed.get("hookSpecificOutput") if isinstance(parsed, dict) else None
            if isinstance(hso, dict) and hso.get("hookEventName") != event_name:
                problems.append(f"{step}: hookEventName {hso.get('hookEventName')!r} != {event_name!r}")
    return problems, parsed


def check_scenario(scenario: Path, *, golden: bool = True) -> None:
    """Check, before any daemon starts, that ``scenario`` can be replayed: ConfigError as
    :func:`replay` raises it; with ``golden`` (a plain replay, not ``--update``), NotFound when
    it has no golden file to compare with."""
    _load_scenario(scenario.absolute())
    golden_file = scenario.absolute() / GOLDEN
    if golden and not golden_file.is_file():
        raise NotFound(f"{golden_file} does not exist: run `hookd replay {scenario} --update` to record it, then review it")


def _load_scenario(scenario: Path) -> tuple[list[Path], dict[str, Any]]:
    """(the hook payload files in order, the scenario.json settings). Raises ConfigError when
    there are no payloads or scenario.json is not a JSON object of the documented shape."""
    if not scenario.is_dir():
        raise ConfigError(f"{scenario} is not a directory")
    hook_files = sorted((scenario / "hooks").glob("*.json"))
    if not hook_files:
        raise ConfigError(f"{scenario}/hooks has no *.json payloads: not a recorded scenario")
    cfg_file = scenario / "scenario.json"
    cfg: Any = {}
    if cfg_file.exists():
        try:
            cfg = msgspec.json.decode(cfg_file.read_bytes())
        except (msgspec.DecodeError, OSError) as e:
            raise ConfigError(f"{cfg_file} cannot be read as JSON: {e}") from None
    steps = cfg.get("steps", {}) if isinstance(cfg, dict) else None
    if not isinstance(steps, dict) or not all(isinstance(v, dict) for v in steps.values()):
        raise ConfigError(f"{cfg_file} must be a JSON object whose \"steps\" maps file names to objects")
    for name, opts in steps.items():
        repeat, mode = opts.get("repeat", 1), opts.get("stdin", "normal")
        if type(repeat) is not int or repeat < 1 or mode not in STDIN_MODES:
            raise ConfigError(f"{cfg_file}: step {name}: \"repeat\" must be a whole number >= 1 and \"stdin\" one of "
                              f"{', '.join(STDIN_MODES)}")
    return hook_files, cfg


def replay(scenario: Path, update: bool = False, keep: bool = False) -> ReplayResult:
    """Replay ``scenario`` (see module doc). Returns the normalised events, the unified diff
    against the golden file ('' when equal, or after ``update`` rewrote it; a missing golden
    file is a diff that says so) and problems. Raises ConfigError when the directory holds no
    ``hooks/*.json`` or its scenario.json is malformed."""
    scenario = scenario.absolute()
    hook_files, cfg = _load_scenario(scenario)
    steps_cfg: dict[str, dict[str, Any]] = cfg.get("steps", {})
    tmp = Path(tempfile.mkdtemp(prefix="hookd-replay-"))
    daemon = DaemonProcess(tmp / "home")
    outputs: list[dict[str, Any]] = []
    problems: list[str] = []
    skipped = 0
    try:
        worktree = tmp / "worktree"
        worktree.mkdir()
        harness = cfg.get("harness", "claude-code")
        install = INSTALLS.get(harness)
        if install is not None and not install.standalone:  # (Codex: its worktree's .codex/hooks.json)
            manifest = spawn(daemon.home, BUILDER, worktree=worktree, harness=harness)
        else:
            manifest = spawn(daemon.home, BUILDER, settings_file=tmp / "settings.json", harness=harness)
        command = manifest["command"]
        registered = set(manifest["events"])
        daemon.start()
        for f in hook_files:
            opts = steps_cfg.get(f.name, {})
            if opts.get("daemon") == "down":
                daemon.stop()
            elif not daemon.running:
                daemon.start()
            payload = f.read_bytes()
            event_name = f.stem.split("-", 1)[-1]
            if event_name not in registered and not cfg.get("feed_unregistered"):
                skipped += 1  # the harness would not run hookd's hook for it
                continue
            n = int(opts.get("repeat", 1))
            results: list[tuple[int, bytes]] = []
            threads = [threading.Thread(target=lambda: results.append(_run_hook(command, worktree, payload, opts))) for _ in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for rc, out in results:
                p, parsed = _check_stdout(f.name, event_name, rc, out)
                problems += p
                if parsed is not None:
                    outputs.append({"kind": "hook_stdout", "step": f.name, "stdout": parsed})
        if not daemon.running:
            daemon.start()
        client = daemon.client()
        wait_until(lambda: client.get("/v1/status")["counts"]["spooled"] == 0, 15, what="the spool to drain")
        events = list(client.lines("/v1/events", after=0, limit=100000))
        client.close()
    finally:
        daemon.stop()
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    synthetic: dict[str, str] = {}
    normalized = [normalize(e, synthetic) for e in events if e["kind"] not in TIMED_EVENTS] + outputs
    lines = [_dumps(e) + "\n" for e in normalized]
    golden = scenario / GOLDEN
    diff = ""
    if update:
        golden.write_text("".join(lines))
    else:
        expected = golden.read_text().splitlines(keepends=True) if golden.exists() else []
        if expected != lines:
            diff = "".join(difflib.unified_diff(expected, lines, fromfile=f"{golden} (expected)", tofile="replayed"))
            if not golden.exists():
                diff = f"{golden} does not exist; run with --update to create it\n" + diff
    if problems:
        diff += "".join(f"problem: {p}\n" for p in problems)
    return ReplayResult(steps=len(hook_files) - skipped, events=normalized, diff=diff, problems=problems)
