"""Replay every recorded and synthetic Claude Code scenario, and every recorded Codex one,
through a real daemon.

Each scenario folder under ``fixtures/claude-code/<version or synthetic>/`` holds
``hooks/NNN-<Event>.json`` and the golden ``expected-events.jsonl`` (see hookd/devtools/replay.py).
`hookd replay` starts a private daemon per scenario (about 1-2 s each; the 3-byte-chunk
scenario trickles its payload for about 3 s by design).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from hookd.client import Client
from hookd.daemonproc import DaemonProcess
from hookd.spawn import spawn

from .conftest import hookd_run

pytestmark = pytest.mark.daemon

REPO = Path(__file__).resolve().parent.parent
CC_FIXTURES = REPO / "fixtures" / "claude-code"
CODEX_FIXTURES = REPO / "fixtures" / "codex"
#: Claude Code's scenarios and Codex's (these spawned into the replay's worktree: scenario.json)
SCENARIOS = sorted(p.parent for p in (*CC_FIXTURES.glob("*/*/hooks"), *CODEX_FIXTURES.glob("*/*/hooks")) if p.is_dir())
#: A real recorded scenario, used to check the replay tool itself.
REFERENCE = CC_FIXTURES / "2.1.332" / "tui-ask-answered-at-terminal"
GOLDEN = "expected-events.jsonl"


def hookd_replay(scenario: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`hookd replay` in this process (hookd_run: its output and exit code without an
    interpreter's start; its private daemon is a process of its own, as always)."""
    return hookd_run(None, "replay", *args, str(scenario))


def test_scenarios_found() -> None:
    names = {f"{p.parent.name}/{p.name}" for p in SCENARIOS}
    assert "2.1.332/tui-ask-answered-at-terminal" in names
    assert any(n.startswith("synthetic/") for n in names), names
    assert {n for n in names if n.startswith("0.171.0/")} == {
        "0.171.0/app-compact-interrupt", "0.171.0/app-permission-allow-deny-client", "0.171.0/app-request-user-input",
        "0.171.0/app-steer-and-queue", "0.171.0/exec-bash-hooks", "0.171.0/exec-hook-outputs", "0.171.0/exec-subagent"}


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


@contextlib.contextmanager
def replayed(scenario: Path, tmp_path: Path) -> Iterator[Client]:
    """A real daemon that took each of ``scenario``'s recorded hooks through builder b1's
    generated hook command (each printing nothing), and a client of it."""
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
            yield client
        finally:
            client.close()


def test_permission_request_first_interaction_gets_tool_use_id(tmp_path: Path) -> None:
    """b02c: the interaction opened by a PermissionRequest (no tool_use_id) is the one the
    PostToolUse resolves, and it takes the PostToolUse's tool_use_id (the golden file only
    shows events, not the stored interaction)."""
    with replayed(CC_FIXTURES / "synthetic" / "b02c-permission-request-first", tmp_path) as client:
        interactions = client.get("/v1/questions", state="all")
    assert len(interactions) == 1, msgspec.json.encode(interactions).decode()
    (i,) = interactions
    assert i["state"] == "answered"
    assert i["tool_use_id"] == "toolu_A3"
    assert i["answers"] == {"Which DB?": "Postgres"}


def test_b29_a_moved_cwd_is_the_sessions_metadata_not_a_new_identity(tmp_path: Path) -> None:
    """Field case B29: after EnterWorktree the payload ``cwd`` moves while the session stays.
    The golden file shows one ``session_started``; here, what the daemon keeps: one session,
    named by its session_id, its transcript still the start cwd's, and the current cwd shown
    as the session's metadata (``GET /v1/status``), on the lane of the same session."""
    with replayed(CC_FIXTURES / "synthetic" / "b29-cwd-moves", tmp_path) as client:
        [b1] = [b for b in client.get("/v1/status")["builders"] if b["builder"] == "b1"]
        [lane] = [x for x in client.get("/v1/lanes") if x["builder"] == "b1"]
    [session] = b1["sessions"]
    assert session["session_id"] == "s-0016"
    assert session["cwd"] == "/home/dev/proj/.claude/worktrees/feat-x"  # the current cwd, as metadata
    assert session["transcript_path"] == "/home/dev/.claude/projects/-home-dev-proj/s-0016.jsonl"  # the start's
    assert (lane["session_id"], lane["state"]) == ("s-0016", "working")


# --- a tool_use_id reused by another session or builder -------------------------------------
# Claude Code's tool_use ids are random per call: the same id in another session means copied
# payloads or a replayed fixture (the recorded scenarios share toolu_01ASK0000000000000000001).
# It must never alter the first session's interaction.

ASK_ID = "toolu_01ASK0000000000000000001"
TUI_SCENARIO = CC_FIXTURES / "2.1.332" / "tui-ask-answered-at-terminal"
STREAM_SCENARIO = CC_FIXTURES / "2.1.332" / "stream-ask-answered-by-host"


def _session_of(scenario: Path) -> str:
    return msgspec.json.decode((scenario / "hooks" / "001-SessionStart.json").read_bytes())["session_id"]


def _answered(raw: bytes, label: str) -> bytes:
    """An AskUserQuestion PostToolUse payload answered with ``label`` instead."""
    doc = msgspec.json.decode(raw)
    if doc.get("hook_event_name") == "PostToolUse" and doc.get("tool_name") == "AskUserQuestion":
        for part in (doc["tool_input"], doc["tool_response"]):
            part["answers"] = {q: label for q in part["answers"]}
    return msgspec.json.encode(doc)


def _play(command: str, worktree: Path, files: list[Path], edit=lambda raw: raw) -> None:
    """Run each payload through the generated hook command, as Claude Code would (the
    events `hookd replay` feeds; PermissionRequest with the plain command: nothing holds)."""
    for f in files:
        if f.stem.split("-", 1)[-1] in ("MessageDisplay", "PostToolBatch"):
            continue
        r = subprocess.run(["sh", "-c", command], input=edit(f.read_bytes()), cwd=worktree,
                           capture_output=True, timeout=30)
        assert r.returncode == 0, f.name


def _hooks(scenario: Path, *, upto: str | None = None, after: str | None = None) -> list[Path]:
    files = sorted((scenario / "hooks").glob("*.json"))
    return [f for f in files if (upto is None or f.name <= upto) and (after is None or f.name > after)]


def _state(daemon: DaemonProcess) -> tuple[list[dict], list[dict]]:
    client = daemon.client()
    try:
        return client.get("/v1/questions", state="all"), list(client.lines("/v1/events", after=0, limit=100000))
    finally:
        client.close()


def _per_session(events: list[dict], kind: str) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for e in events:
        if e["kind"] == kind:
            out.setdefault((e["builder"], e["session_id"]), []).append(e)
    return out


def test_two_recorded_scenarios_replayed_into_one_daemon_keep_their_own_questions(tmp_path: Path) -> None:
    """The TUI and the stream-json scenarios both ask toolu_01ASK0000000000000000001: played
    one after the other into one daemon, the second session's question is its own interaction
    (answered, not dismissed), the first one is untouched, and the reuse is recorded once."""
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    daemon = DaemonProcess(tmp_path / "home")
    command = spawn(daemon.home, "b1", settings_file=tmp_path / "settings.json")["command"]
    tui_sid, stream_sid = _session_of(TUI_SCENARIO), _session_of(STREAM_SCENARIO)
    with daemon:
        _play(command, worktree, _hooks(TUI_SCENARIO))
        [first_before], _ = _state(daemon)
        _play(command, worktree, _hooks(STREAM_SCENARIO), edit=lambda raw: _answered(raw, "Red"))
        interactions, events = _state(daemon)
        client = daemon.client()
        try:
            by_public_id = client.get(f"/v1/interactions/{ASK_ID}")
        finally:
            client.close()
    dump = msgspec.json.encode(interactions).decode()
    assert len(interactions) == 2, dump
    first, second = interactions
    assert first == first_before, "the first session's interaction changed"
    assert by_public_id == first
    assert (first["id"], first["session_id"], first["answers"]) == (ASK_ID, tui_sid, {"Which color do you prefer?": "Blue"})
    assert second["session_id"] == stream_sid and second["id"] != ASK_ID and second["id"].startswith(ASK_ID)
    assert second["state"] == "answered" and second["answers"] == {"Which color do you prefer?": "Red"}, dump
    pending, resolved = _per_session(events, "question_pending"), _per_session(events, "question_resolved")
    for sid, iid in ((tui_sid, first["id"]), (stream_sid, second["id"])):
        assert [e["data"]["id"] for e in pending[("b1", sid)]] == [iid]
        assert [(e["data"]["id"], e["data"]["outcome"]) for e in resolved[("b1", sid)]] == [(iid, "answered")]
    [reused] = [e for e in events if e["kind"] == "interaction_id_reused"]
    assert (reused["builder"], reused["session_id"]) == ("b1", stream_sid)
    assert reused["data"]["tool_use_id"] == ASK_ID and reused["data"]["id"] == second["id"]
    assert reused["data"]["first"] == {"id": ASK_ID, "builder": "b1", "session_id": tui_sid}


def test_a_reused_tool_use_id_from_another_builder_never_answers_the_first_question(tmp_path: Path) -> None:
    """Builder b1's question is still open when builder b2 (a copy of the payloads) asks and
    answers under the same tool_use_id: b1's question stays pending until b1's own answer."""
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    daemon = DaemonProcess(tmp_path / "home")
    b1 = spawn(daemon.home, "b1", settings_file=tmp_path / "b1.json")["command"]
    b2 = spawn(daemon.home, "b2", settings_file=tmp_path / "b2.json")["command"]
    tui_sid, stream_sid = _session_of(TUI_SCENARIO), _session_of(STREAM_SCENARIO)
    with daemon:
        _play(b1, worktree, _hooks(TUI_SCENARIO, upto="008-PermissionRequest.json"))
        _play(b2, worktree, _hooks(STREAM_SCENARIO), edit=lambda raw: _answered(raw, "Red"))
        mid, _ = _state(daemon)
        _play(b1, worktree, _hooks(TUI_SCENARIO, after="008-PermissionRequest.json"))
        interactions, events = _state(daemon)
    first = next(i for i in mid if i["id"] == ASK_ID)
    assert (first["builder"], first["state"], first["answers"]) == ("b1", "pending", None), msgspec.json.encode(mid)
    by_builder = {i["builder"]: i for i in interactions}
    assert len(interactions) == 2, msgspec.json.encode(interactions)
    assert by_builder["b1"]["id"] == ASK_ID and by_builder["b1"]["answers"] == {"Which color do you prefer?": "Blue"}
    assert by_builder["b2"]["id"] != ASK_ID and by_builder["b2"]["answers"] == {"Which color do you prefer?": "Red"}
    pending, resolved = _per_session(events, "question_pending"), _per_session(events, "question_resolved")
    assert {k: len(v) for k, v in pending.items()} == {("b1", tui_sid): 1, ("b2", stream_sid): 1}
    assert {k: [e["data"]["outcome"] for e in v] for k, v in resolved.items()} == {
        ("b1", tui_sid): ["answered"], ("b2", stream_sid): ["answered"]}
    [reused] = [e for e in events if e["kind"] == "interaction_id_reused"]
    assert (reused["builder"], reused["session_id"]) == ("b2", stream_sid)
    assert reused["data"]["first"] == {"id": ASK_ID, "builder": "b1", "session_id": tui_sid}


def test_a_reused_tool_use_id_on_a_permission_prompt_gets_its_own_key(tmp_path: Path) -> None:
    """b11's Bash permission prompt played in its session and again in a copy of it (another
    session id): the copy's PostToolUse (toolu_B11a again) resolves the copy's own prompt
    (it broke the hook's transaction: the tool_use_id column is unique); the first keeps its id."""
    scenario = CC_FIXTURES / "synthetic" / "b11-every-event-no-output"
    files = [scenario / "hooks" / n for n in ("001-SessionStart.json", "003-PreToolUse.json",
                                              "004-PermissionRequest.json", "005-PostToolUse.json")]
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    daemon = DaemonProcess(tmp_path / "home")
    command = spawn(daemon.home, "b1", settings_file=tmp_path / "settings.json")["command"]
    with daemon:
        _play(command, worktree, files)
        _play(command, worktree, files, edit=lambda raw: raw.replace(b'"s-0011"', b'"s-0011-copy"'))
        interactions, events = _state(daemon)
        client = daemon.client()
        try:
            hooks_stored = client.get("/v1/status")["counts"]["hook_events"]
        finally:
            client.close()
    assert hooks_stored == 8
    dump = msgspec.json.encode(interactions).decode()
    by_session = {i["session_id"]: i for i in interactions}
    assert set(by_session) == {"s-0011", "s-0011-copy"}, dump
    assert by_session["s-0011"]["tool_use_id"] == "toolu_B11a"
    copy = by_session["s-0011-copy"]
    assert copy["tool_use_id"].startswith("toolu_B11a~") and (copy["state"], copy["decision"]) == ("answered", "allow"), dump
    resolved = [(e["session_id"], e["data"]["decision"]) for e in events if e["kind"] == "permission_resolved"]
    assert resolved == [("s-0011", "allow"), ("s-0011-copy", "allow")]
    [reused] = [e for e in events if e["kind"] == "interaction_id_reused"]
    assert reused["session_id"] == "s-0011-copy" and reused["data"]["tool_use_id"] == "toolu_B11a"
    assert reused["data"]["id"] == copy["tool_use_id"]
    assert reused["data"]["first"] == {"id": by_session["s-0011"]["id"], "builder": "b1", "session_id": "s-0011"}


@pytest.mark.parametrize("builder", ["b1", "b2"])
def test_transcript_rows_copied_by_a_fork_are_the_parents_calls_for_its_builder_only(tmp_path: Path, builder: str) -> None:
    """A fork (--fork-session) starts by copying its parent's transcript rows, tool_use ids
    unchanged, under its own session id: for the same builder those rows are the parent's
    calls (no second question, no reuse event); for another builder, its own question."""
    rows = [msgspec.json.decode(line) for line in (TUI_SCENARIO / "transcript.jsonl").read_bytes().splitlines()]
    use = next(r for r in rows if r.get("type") == "assistant" and any(
        isinstance(b, dict) and b.get("id") == ASK_ID for b in r["message"]["content"]))
    res = next(r for r in rows if r.get("type") == "user" and isinstance(r["message"]["content"], list) and any(
        isinstance(b, dict) and b.get("tool_use_id") == ASK_ID for b in r["message"]["content"]))
    fork = tmp_path / "fork-session.jsonl"
    fork.write_bytes(b"".join(msgspec.json.encode(dict(r, sessionId="fork-session")) + b"\n" for r in (use, res)))
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    daemon = DaemonProcess(tmp_path / "home")
    command = spawn(daemon.home, "b1", settings_file=tmp_path / "b1.json")["command"]
    spawn(daemon.home, "b2", settings_file=tmp_path / "b2.json")
    with daemon:
        _play(command, worktree, _hooks(TUI_SCENARIO))
        [parent] = _state(daemon)[0]
        r = subprocess.run([sys.executable, "-m", "hookd", "--home", str(daemon.home.root), "tail", str(fork),
                            "--builder", builder], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "(2 rows read)" in r.stdout, r.stdout + r.stderr
        interactions, events = _state(daemon)
    reused = [e for e in events if e["kind"] == "interaction_id_reused"]
    if builder == "b1":
        assert interactions == [parent] and reused == []
        assert [e["session_id"] for e in events if e["kind"] == "question_pending"] == [parent["session_id"]]
        return
    dump = msgspec.json.encode(interactions).decode()
    assert len(interactions) == 2 and interactions[0] == parent, dump
    mine = interactions[1]
    assert (mine["builder"], mine["session_id"], mine["state"]) == ("b2", "fork-session", "answered"), dump
    assert mine["id"].startswith(ASK_ID + "~")
    [reused] = reused
    assert (reused["builder"], reused["data"]["via"], reused["data"]["first"]["builder"]) == ("b2", "transcript", "b1")


#: What a path of a recording machine's temp tree looks like: pytest's base folders, Python's
#: tempfile names, the Claude Code recorder's private tree (tests/e2e/record.py); each
#: recorder writes its private tree as /home/dev instead (Codex's: codex_drivers.normalise_paths).
#: what a recorder's temporary tree leaves in a path: pytest's and tempfile's folders under this
#: machine's temporary directory, a pytest run's test folder, the recorder's own prefix
MACHINE_PATHS = re.compile(re.escape(tempfile.gettempdir()) + r"/(pytest-of-|tmp[a-z0-9_]{8})|pytest-\d+/test_|hookd-rec-")


def test_no_committed_fixture_holds_a_path_of_the_machine_that_recorded_it() -> None:
    """Every file under fixtures/ (each harness's recordings, synthetic or real): no path of a
    temp tree the recorder ran in (they differ on every machine and every run)."""
    files = [p for p in sorted((REPO / "fixtures").rglob("*")) if p.is_file()]
    assert len(files) > 100 and any("codex" in p.parts for p in files)
    found = {os.fspath(p.relative_to(REPO)): m.group(0) for p in files
             if (m := MACHINE_PATHS.search(p.read_text(errors="replace")))}
    assert found == {}
