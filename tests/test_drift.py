"""`hookd drift` on the recorded version and on a doctored copy of it (in this process:
hookd_run; the replays' daemons are processes of their own)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES, hookd_run

pytestmark = pytest.mark.daemon


def test_recorded_version_has_no_drift(tmp_path):
    r = hookd_run(tmp_path / "h", "drift", str(FIXTURES), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(r.stdout)
    assert rep["unknown_events"] == {} and rep["unknown_fields"] == {} and rep["unknown_row_types"] == {}
    assert rep["parse_failures"] == [] and rep["golden_mismatches"] == {}


def _copy(tmp_path):
    root = tmp_path / "fixtures" / "claude-code"
    for v in ("2.1.99", "2.1.332"):
        (root / v).mkdir(parents=True)
    sc = root / "2.1.332" / "tui"
    shutil.copytree(FIXTURES / "tui-ask-answered-at-terminal", sc)
    return root, sc


def test_unknown_events_fields_and_row_types_are_listed(tmp_path):
    root, sc = _copy(tmp_path)
    pre = json.loads((sc / "hooks" / "004-PreToolUse.json").read_text())
    pre["shiny_new_field"] = 1
    (sc / "hooks" / "004-PreToolUse.json").write_text(json.dumps(pre))
    (sc / "hooks" / "015-FutureEvent.json").write_text(json.dumps({"hook_event_name": "FutureEvent", "session_id": "s"}))
    with open(sc / "transcript.jsonl", "a") as f:
        f.write(json.dumps({"type": "hologram", "sessionId": "s"}) + "\n")
    # newest version folder is picked by version order, not by name order
    r = hookd_run(tmp_path / "h", "drift", "--fixtures", str(root), "--no-replay", "--json")
    rep = json.loads(r.stdout)
    assert rep["version_dir"].endswith("2.1.332")
    assert rep["unknown_events"] == {"FutureEvent": ["tui/015-FutureEvent.json"]}
    assert rep["unknown_fields"] == {"PreToolUse": {"shiny_new_field": ["tui/004-PreToolUse.json"]}}
    assert rep["unknown_row_types"] == {"hologram": 1}
    assert r.returncode == 0  # reported for a human; not a failure by itself


def test_parse_failure_fails_the_report(tmp_path):
    root, sc = _copy(tmp_path)
    (sc / "hooks" / "004-PreToolUse.json").write_text('{"hook_event_name": "PreToolUse", "tool_name": 7}')
    r = hookd_run(tmp_path / "h", "drift", "--fixtures", str(root), "--no-replay")
    assert r.returncode == 1
    assert "tui/004-PreToolUse.json: PreToolUse payload" in r.stdout and "result: FAIL" in r.stdout


def test_golden_mismatch_fails_the_report(tmp_path):
    root, sc = _copy(tmp_path)
    golden = sc / "expected-events.jsonl"
    golden.write_text(golden.read_text().replace('"Blue"}', '"Red"}'))
    r = hookd_run(tmp_path / "h", "drift", "--fixtures", str(root))
    assert r.returncode == 1
    assert "golden mismatches: 1" in r.stdout and '"Red"' in r.stdout


def test_no_replay_says_goldens_were_not_checked(tmp_path):
    r = hookd_run(tmp_path / "h", "drift", str(FIXTURES), "--no-replay")
    assert r.returncode == 0 and "golden mismatches: not checked (--no-replay)" in r.stdout


def test_missing_fixtures_folder_is_a_clear_error(tmp_path):
    r = hookd_run(tmp_path / "h", "drift", "--fixtures", str(tmp_path / "nope"))
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr


def test_codex_recordings_are_read_with_codex_adapter(tmp_path):
    """`--harness codex`: fixtures/codex's newest version, read with the Codex adapter and its
    rollout reader (with Claude Code's, Codex's `turn_id` and `model` would be unknown fields),
    its goldens replayed."""
    codex = FIXTURES.parent.parent / "codex"
    r = hookd_run(tmp_path / "h", "drift", "--harness", "codex", "--fixtures", str(codex), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(r.stdout)
    assert rep["version_dir"] == str(codex / "0.171.0")
    assert rep["unknown_events"] == {} and rep["unknown_fields"] == {} and rep["unknown_row_types"] == {}
    assert rep["parse_failures"] == [] and rep["golden_mismatches"] == {}
    r = hookd_run(tmp_path / "h", "drift", str(codex / "0.171.0"), "--no-replay", "--json")
    assert json.loads(r.stdout)["unknown_fields"], "Claude Code's models do not know Codex's fields"


def test_drift_with_no_recordings_here_says_where_they_are(tmp_path: Path) -> None:
    """Run outside a checkout (no fixtures/ in the current directory): exit 2, naming where
    the recordings are and the two ways to give them."""
    r = subprocess.run([sys.executable, "-m", "hookd", "--home", str(tmp_path / "h"), "drift"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == ("hookd: fixtures/claude-code does not exist here: run hookd drift in a hookd checkout (its"
                        " recordings are fixtures/HARNESS there), or give a version folder or --fixtures DIR\n")
