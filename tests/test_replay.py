"""Replay every recorded and synthetic Claude Code scenario through a real daemon.

Each scenario folder under ``fixtures/claude-code/<version or synthetic>/`` holds
``hooks/NNN-<Event>.json`` and the golden ``expected-events.jsonl`` (see hookd/replay.py).
`hookd replay` starts a private daemon per scenario (about 1-2 s each; the 3-byte-chunk
scenario trickles its payload for about 3 s by design).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from hookd.daemonproc import DaemonProcess
from hookd.spawn import spawn

REPO = Path(__file__).resolve().parent.parent
CC_FIXTURES = REPO / "fixtures" / "claude-code"
SCENARIOS = sorted(p.parent for p in CC_FIXTURES.glob("*/*/hooks") if p.is_dir())
#: A real recorded scenario, used to check the replay tool itself.
REFERENCE = CC_FIXTURES / "2.1.332" / "tui-ask-answered-at-terminal"
GOLDEN = "expected-events.jsonl"


def hookd_replay(scenario: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookd", "replay", *args, str(scenario)],
        capture_output=True, text=True, timeout=180, cwd=REPO,
    )


def test_scenarios_found() -> None:
    names = {f"{p.parent.name}/{p.name}" for p in SCENARIOS}
    assert "2.1.332/tui-ask-answered-at-terminal" in names
    assert any(n.startswith("synthetic/") for n in names), names


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[f"{p.parent.name}/{p.name}" for p in SCENARIOS])
def test_replay_matches_golden(scenario: Path) -> None:
    assert (scenario / GOLDEN).is_file(), f"{scenario} has no {GOLDEN}"
    r = hookd_replay(scenario)
    assert r.returncode == 0, f"replay of {scenario.name} failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}"
    assert "ok" in r.stdout


def _copy(scenario: Path, tmp_path: Path) -> Path:
    dst = tmp_path / scenario.name
    shutil.copytree(scenario, dst)
    return dst


def test_replay_reports_changed_field(tmp_path: Path) -> None:
    scenario = _copy(REFERENCE, tmp_path)
    golden = scenario / GOLDEN
    lines = golden.read_text().splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if '"outcome":"answered"' in line]
    assert len(hits) == 1, "the reference golden should resolve exactly one question"
    lines[hits[0]] = lines[hits[0]].replace('"outcome":"answered"', '"outcome":"dismissed"')
    golden.write_text("".join(lines))

    r = hookd_replay(scenario)

    assert r.returncode == 1, r.stdout + r.stderr
    assert "MISMATCH" in r.stderr
    removed = [ln for ln in r.stdout.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln for ln in r.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert len(removed) == 1 and len(added) == 1, r.stdout
    assert '"outcome":"dismissed"' in removed[0] and '"kind":"question_resolved"' in removed[0]
    assert '"outcome":"answered"' in added[0] and '"kind":"question_resolved"' in added[0]
    # the file itself was not touched by a plain replay
    assert golden.read_text() == "".join(lines)


def test_replay_update_rewrites_same_golden(tmp_path: Path) -> None:
    scenario = _copy(REFERENCE, tmp_path)
    golden = scenario / GOLDEN
    original = (REFERENCE / GOLDEN).read_bytes()
    golden.write_bytes(original.splitlines(keepends=True)[0])  # stale: one line left

    r = hookd_replay(scenario, "--update")

    assert r.returncode == 0, r.stdout + r.stderr
    assert "updated" in r.stdout
    assert golden.read_bytes() == original


def test_permission_request_first_interaction_gets_tool_use_id(tmp_path: Path) -> None:
    """b02c: the interaction opened by a PermissionRequest (no tool_use_id) is the one the
    PostToolUse resolves, and it takes the PostToolUse's tool_use_id (the golden file only
    shows events, not the stored interaction)."""
    scenario = CC_FIXTURES / "synthetic" / "b02c-permission-request-first"
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    daemon = DaemonProcess(tmp_path / "home")
    command = spawn(daemon.home, "b1", settings_file=tmp_path / "settings.json")["command"]
    with daemon:
        for f in sorted((scenario / "hooks").glob("*.json")):
            r = subprocess.run(["sh", "-c", command], input=f.read_bytes(), cwd=worktree, capture_output=True, timeout=30)
            assert (r.returncode, r.stdout) == (0, b""), f.name
        client = daemon.client()
        try:
            interactions = client.get("/v1/questions", state="all")
        finally:
            client.close()
    assert len(interactions) == 1, msgspec.json.encode(interactions).decode()
    (i,) = interactions
    assert i["state"] == "answered"
    assert i["tool_use_id"] == "toolu_A3"
    assert i["answers"] == {"Which DB?": "Postgres"}
