"""The fixture recorder (``python -m tests.e2e.record``) against the real Claude Code binary.

Records ``print-bash-then-ask`` (the fastest scenario, headless ``-p``) twice into two
temporary fixture roots and checks that the two recordings are byte-identical, carry no
machine specifics, look like the committed 2.1.332 recording of the same scenario (same
hook events, same payload keys) and replay through hookd with the expected events.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SCENARIO = "print-bash-then-ask"
COMMITTED = REPO / "fixtures" / "claude-code" / "2.1.332" / SCENARIO
SESSION = "00000000-0000-4000-8000-000000000001"


def _record(out: Path, claude_bin: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.e2e.record", SCENARIO, "--out", os.fspath(out),
         "--claude-bin", os.fspath(claude_bin), *extra],
        cwd=REPO, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        check=False)


def _hookd(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hookd", "--home", os.fspath(home), *args],
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, check=False)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _hooks(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """``[(event, payload)]`` in file order."""
    return [(p.stem.split("-", 1)[1], json.loads(p.read_text()))
            for p in sorted((folder / "hooks").glob("*.json"))]


def _key_paths(obj: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON value (``tool_response.stdout``, ``tool_calls[].tool_name``)."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            path = f"{prefix}.{k}" if prefix else k
            out.add(path)
            out |= _key_paths(v, path)
    elif isinstance(obj, list):
        for v in obj:
            out |= _key_paths(v, prefix + "[]")
    return out


@pytest.fixture(scope="module")
def recorded(claude_bin, tmp_path_factory) -> tuple[Path, Path, str]:
    """The scenario recorded twice: ``(folder1, folder2, version)``."""
    folders = []
    for n in (1, 2):
        out = tmp_path_factory.mktemp(f"rec{n}")
        r = _record(out, claude_bin)
        assert r.returncode == 0, f"recording {n} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
        (version_dir,) = [d for d in out.iterdir() if d.is_dir()]
        assert f"recorded {SCENARIO} -> {version_dir / SCENARIO}" in r.stdout
        folders.append(version_dir / SCENARIO)
    assert folders[0].parent.name == folders[1].parent.name
    return folders[0], folders[1], folders[0].parent.name


def test_two_recordings_are_byte_identical(recorded):
    a, b, version = recorded
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    fa, fb = _files(a), _files(b)
    assert set(fa) == set(fb)
    assert {"transcript.jsonl", "model-script.json"} <= set(fa)
    assert all(re.fullmatch(r"hooks/\d{3}-[A-Za-z]+\.json", n)
               for n in fa if n not in ("transcript.jsonl", "model-script.json")), sorted(fa)
    differing = [n for n in fa if fa[n] != fb[n]]
    assert not differing, f"recordings differ in {differing}"


def test_no_machine_specifics_left(recorded, tmp_path_factory):
    folder = recorded[0]
    texts = {n: data.decode() for n, data in _files(folder).items()}
    needles = ["hookd-rec-", os.fspath(tmp_path_factory.getbasetemp()),
               tempfile.gettempdir().rstrip("/") + "/", os.uname().release]
    home = os.path.realpath(Path.home())
    for name, text in texts.items():
        for needle in needles:
            assert needle not in text, f"{needle!r} in {name}"
        if home not in ("/", "/home/dev") and not "/home/dev".startswith(home + "/"):
            assert not re.search(re.escape(home) + r"(?![\w.-])", text), f"real HOME {home} in {name}"
        host = socket.gethostname()
        if len(host) >= 2 and host != "localhost":
            assert not re.search(rf"(?<![\w-]){re.escape(host)}(?![\w-])", text), f"hostname in {name}"
        # every absolute home path is the normalised one
        assert set(re.findall(r"/home/[\w.-]+", text)) <= {"/home/dev"}, name
    # paths and ids as in the committed fixtures, ids as deterministic placeholders
    for event, payload in _hooks(folder):
        assert payload["session_id"] == SESSION, event
        assert payload["cwd"] == "/home/dev/proj"
        assert payload["transcript_path"] == f"/home/dev/.claude/projects/-home-dev-proj/{SESSION}.jsonl"
    rows = [json.loads(line) for line in texts["transcript.jsonl"].splitlines()]
    assert {r.get("sessionId") for r in rows if "sessionId" in r} == {SESSION}
    assert all(r["cwd"] == "/home/dev/proj" for r in rows if "cwd" in r)
    assert re.search(r"lorem ipsum dolor sit amet", texts["transcript.jsonl"])  # prompt texts filled
    # tool_use ids are the model script's, untouched
    script = json.loads(texts["model-script.json"])
    script_ids = {b["id"] for t in script["turns"] for b in t["content"] if b.get("type") == "tool_use"}
    hook_ids = {p["tool_use_id"] for _, p in _hooks(folder) if "tool_use_id" in p}
    assert hook_ids and hook_ids <= script_ids
    assert script == json.loads((COMMITTED / "model-script.json").read_text())


def test_hooks_in_a_plausible_order(recorded):
    hooks = _hooks(recorded[0])
    names = [e for e, _ in hooks]
    files = sorted(p.name for p in (recorded[0] / "hooks").glob("*.json"))
    assert [f[:3] for f in files] == [f"{i:03d}" for i in range(1, len(files) + 1)]
    assert names[0] == "SessionStart" and names[-1] == "SessionEnd"
    assert names.count("SessionStart") == names.count("SessionEnd") == 1
    assert names.index("UserPromptSubmit") < names.index("PreToolUse") < names.index("Stop")
    for i, (event, payload) in enumerate(hooks):
        if event == "PostToolUse":
            pre = [j for j, (e, p) in enumerate(hooks)
                   if e == "PreToolUse" and p.get("tool_use_id") == payload["tool_use_id"]]
            assert pre and pre[0] < i, f"PostToolUse {payload['tool_use_id']} before its PreToolUse"
    # AskUserQuestion is not available in -p: no hook carries it except the batch report
    assert not any(p.get("tool_name") == "AskUserQuestion" for _, p in hooks)
    batch = [p for e, p in hooks if e == "PostToolBatch"]
    assert any(c["tool_name"] == "AskUserQuestion" and "No such tool available" in c["tool_response"]
               for p in batch for c in p["tool_calls"])
    assert hooks[-2][0] == "Stop" and hooks[-2][1]["last_assistant_message"].endswith("FINAL-TEXT-789")


def test_same_events_and_keys_as_the_committed_recording(recorded):
    new, old = _hooks(recorded[0]), _hooks(COMMITTED)
    assert [e for e, _ in new] == [e for e, _ in old]
    for (event, a), (_, b) in zip(new, old):
        assert set(a) == set(b), f"{event}: top-level keys {set(a) ^ set(b)}"
        assert _key_paths(a) == _key_paths(b), f"{event}: key paths {_key_paths(a) ^ _key_paths(b)}"
    new_rows = {json.loads(line)["type"] for line in (recorded[0] / "transcript.jsonl").open()}
    old_rows = {json.loads(line)["type"] for line in (COMMITTED / "transcript.jsonl").open()}
    assert new_rows == old_rows


def test_hookd_replays_the_recording(recorded, tmp_path):
    scenario = tmp_path / "fixtures" / recorded[2] / SCENARIO
    shutil.copytree(recorded[0], scenario)
    home = tmp_path / "hookd"
    r = _hookd(home, "replay", os.fspath(scenario), "--update")
    assert r.returncode == 0 and "updated" in r.stdout, r.stdout + r.stderr
    r = _hookd(home, "replay", os.fspath(scenario))
    assert r.returncode == 0 and ": ok (" in r.stdout, r.stdout + r.stderr
    events = [json.loads(line) for line in (scenario / "expected-events.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    # -p: the AskUserQuestion attempt never reaches a hook, so no question at all
    assert "question_pending" not in kinds and "question_resolved" not in kinds
    assert kinds.count("session_started") == 1 and kinds.count("session_ended") == 1
    from hookd.harness.claude_code import REGISTERED_EVENTS

    registered = [f for f in (scenario / "hooks").glob("*.json") if f.stem.split("-", 1)[1] in REGISTERED_EVENTS]
    assert kinds.count("hook_received") == len(registered)  # replay feeds what hookd registers
    assert {e["session_id"] for e in events} == {SESSION}
    assert not [e for e in events if e["kind"] == "hook_invalid"]
    # ... exactly what the committed recording yields, up to its real session id
    old_session = _hooks(COMMITTED)[0][1]["session_id"]
    committed = (COMMITTED / "expected-events.jsonl").read_text().replace(old_session, SESSION)
    assert (scenario / "expected-events.jsonl").read_text() == committed


def test_refuses_to_overwrite_without_force_and_lists_scenarios(recorded, claude_bin):
    folder = recorded[0]
    before = _files(folder)
    r = _record(folder.parent.parent, claude_bin)
    assert r.returncode == 2 and "--force" in r.stderr, r.stdout + r.stderr
    assert _files(folder) == before
    r = subprocess.run([sys.executable, "-m", "tests.e2e.record", "--list"], cwd=REPO,
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0
    listed = {line.split("\t")[0] for line in r.stdout.splitlines()}
    assert {"print-bash-then-ask", "stream-ask-answered-by-host",
            "tui-ask-answered-at-terminal"} <= listed
