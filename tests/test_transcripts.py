"""The transcript fallback: questions detected from transcript rows (real daemon, real files,
real recorded rows of Claude Code 2.1.332), merged with hook records by tool_use_id, caught up
after the daemon was down, damaged rows survived, sessions without hooks flagged."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hookd.daemonproc import DaemonProcess

from .conftest import FIXTURES, TUI, events, hookd_cli, questions, run_hook, settings_command, wait_until

pytestmark = pytest.mark.daemon

ROWS = [json.loads(line) for line in (FIXTURES / "tui-ask-answered-at-terminal" / "transcript.jsonl").read_text().splitlines()]
SID = "346f6e3a-edc5-468f-856d-23ceddca3ede"
ASK = "toolu_01ASK0000000000000000001"


def ask_rows() -> tuple[dict[str, Any], dict[str, Any]]:
    """The recorded AskUserQuestion tool_use row and its answered tool_result row."""
    use = next(r for r in ROWS if r.get("type") == "assistant"
               and any(b.get("id") == ASK for b in r["message"]["content"] if isinstance(b, dict)))
    res = next(r for r in ROWS if r.get("type") == "user" and isinstance(r["message"]["content"], list)
               and any(b.get("tool_use_id") == ASK for b in r["message"]["content"]))
    return use, res


def line(row: dict[str, Any]) -> bytes:
    return json.dumps(row).encode() + b"\n"


def append(p: Path, data: bytes) -> None:
    with open(p, "ab") as f:
        f.write(data)


def about(evs: list[dict[str, Any]], kind: str, iid: str) -> list[dict[str, Any]]:
    return [e for e in evs if e["kind"] == kind and e["data"].get("id") == iid]


def spawn_with_transcript(home: Path, worktree: Path, transcript: Path) -> Path:
    """Spawn b1 and run its SessionStart hook reporting ``transcript`` (as Claude Code does)."""
    assert hookd_cli(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
    settings = worktree / ".claude" / "settings.local.json"
    start = json.loads((TUI / "001-SessionStart.json").read_bytes())
    start["transcript_path"] = str(transcript)
    r = run_hook(settings_command(settings, "SessionStart"), json.dumps(start).encode(), worktree)
    assert r.returncode == 0
    return settings


def test_question_from_transcript_then_hooks_make_one_interaction(home: Path, worktree: Path, tmp_path: Path,
                                                                   daemon: DaemonProcess) -> None:
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    settings = spawn_with_transcript(home, worktree, t)
    use, res = ask_rows()
    append(t, line(use))
    q = wait_until(lambda: next((q for q in questions(home, "pending") if q["id"] == ASK), None), 60,
                   what="the question detected from the transcript")
    assert q["questions"][0]["question"] == "Which color do you prefer?" and q["builder"] == "b1"
    # the hooks for the same call arrive late: no second interaction
    for name in ("007-PreToolUse.json", "008-PermissionRequest.json"):
        p = json.loads((TUI / name).read_bytes())
        cmd = settings_command(settings, p["hook_event_name"])
        if p["hook_event_name"] == "PermissionRequest":
            # spawned with the default hold: the desk's answer (below) releases it
            held = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=worktree)
            assert held.stdin is not None
            held.stdin.write(json.dumps(p).encode())
            held.stdin.close()
        else:
            assert run_hook(cmd, json.dumps(p).encode(), worktree).returncode == 0
    append(t, line(res))
    wait_until(lambda: next(q for q in questions(home) if q["id"] == ASK)["state"] == "answered", 60,
               what="resolved from the transcript")
    assert held.wait(5) == 0 and held.stdout is not None and held.stdout.read() == b""  # released
    post = json.loads((TUI / "010-PostToolUse.json").read_bytes())
    assert run_hook(settings_command(settings, "PostToolUse"), json.dumps(post).encode(), worktree).returncode == 0
    [q] = [q for q in questions(home) if q["id"] == ASK]
    assert (q["answers"], q["surface"]) == ({"Which color do you prefer?": "Blue"}, "terminal")
    evs = events(home)
    [pending] = about(evs, "question_pending", ASK)
    [resolved] = about(evs, "question_resolved", ASK)
    assert pending["data"]["via"] == "transcript" and resolved["data"]["via"] == "transcript"
    assert len(questions(home)) == 1


def test_chunked_and_damaged_rows_give_each_event_once(home: Path, worktree: Path, tmp_path: Path,
                                                       daemon: DaemonProcess) -> None:
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    spawn_with_transcript(home, worktree, t)
    use, res = ask_rows()
    u = line(use)
    append(t, u[:50])                                       # a row split mid-JSON ...
    wait_until(lambda: t.stat().st_size == 50, 60, what="the first half written")
    append(t, u[50:])                                       # ... across two writes
    append(t, line({"type": "future-row", "sessionId": SID}))  # an unknown row type
    append(t, line({"type": "mode", "sessionId": SID}).rstrip(b"\n") + line({"type": "mode", "sessionId": SID}))  # spliced
    append(t, b"\x00" * 64 + line({"type": "brand-new-type", "sessionId": SID}))  # NUL padding, unknown type
    append(t, b'{"type":"user","sessionId":"' + SID.encode() + b'","message":{"role":"user","content":"caf\xff"}}\n')  # 0xFF
    append(t, line({"type": "assistant", "sessionId": SID, "message": {"role": "assistant", "content": [
        {"type": "hologram", "data": 1}, {"type": "text", "text": "ok"}]}}))  # an unknown content block
    append(t, line(res))
    wait_until(lambda: any(q["id"] == ASK and q["state"] == "answered" for q in questions(home)), 60,
               what="the answer from the damaged transcript")
    evs = events(home)
    assert len(about(evs, "question_pending", ASK)) == 1 and len(about(evs, "question_resolved", ASK)) == 1
    damaged = [e["data"] for e in evs if e["kind"] == "transcript_damaged"]
    total = {k: sum(d.get(k, 0) for d in damaged) for k in ("spliced", "nul_padded", "invalid_utf8", "torn")}
    assert total["spliced"] >= 1 and total["nul_padded"] == 1 and total["invalid_utf8"] == 1
    unknown = sum(e["data"].get("unknown_rows", 0) for e in evs if e["kind"].startswith("transcript_"))
    assert unknown == 2  # future-row, brand-new-type
    assert sum(e["data"].get("unknown_blocks", 0) for e in evs if e["kind"].startswith("transcript_")) == 1
    assert {e["session_id"] for e in evs if e["kind"].startswith("transcript_")} == {SID}


def test_catch_up_after_the_daemon_was_down(home: Path, worktree: Path, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    d = DaemonProcess(home).start()
    try:
        spawn_with_transcript(home, worktree, t)
        wait_until(lambda: any(e["kind"] == "session_started" for e in events(home)), 60, what="session")
    finally:
        d.stop()
    use, _ = ask_rows()
    append(t, line(use))  # asked while hookd was down
    d = DaemonProcess(home).start()
    try:
        q = wait_until(lambda: next((q for q in questions(home, "pending") if q["id"] == ASK), None), 60,
                       what="the question asked while the daemon was down")
        assert q["state"] == "pending"
    finally:
        d.stop()


def test_session_without_hooks_is_flagged_unarmed(home: Path, worktree: Path, tmp_path: Path,
                                                  daemon: DaemonProcess) -> None:
    assert hookd_cli(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
    t = tmp_path / "s-0007.jsonl"
    old = (datetime.now(timezone.utc) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    use, _ = ask_rows()
    rows = [dict(r, sessionId="s-0007", timestamp=old) for r in (use,)]
    t.write_bytes(b"".join(line(r) for r in rows))
    r = hookd_cli(home, "tail", str(t), "--builder", "b1")
    assert r.returncode == 0 and "following" in r.stdout, r.stderr
    evs = events(home)
    [flag] = [e for e in evs if e["kind"] == "hooks_unarmed"]
    assert flag["session_id"] == "s-0007" and "/hooks" in flag["data"]["advice"]
    assert [q["id"] for q in questions(home, "pending")] == [ASK]  # handled from the transcript
    # hooks arriving later arm it
    settings = worktree / ".claude" / "settings.local.json"
    p = json.loads((TUI / "002-UserPromptSubmit.json").read_bytes())
    p["session_id"] = "s-0007"
    assert run_hook(settings_command(settings, "UserPromptSubmit"), json.dumps(p).encode(), worktree).returncode == 0
    assert [e["session_id"] for e in events(home) if e["kind"] == "hooks_armed"] == ["s-0007"]


def test_compact_summary_and_interrupt_rows(home: Path, worktree: Path, tmp_path: Path, daemon: DaemonProcess) -> None:
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    spawn_with_transcript(home, worktree, t)
    use, _ = ask_rows()
    append(t, line(use))
    append(t, line({"type": "system", "subtype": "compact_boundary", "sessionId": SID,
                    "compactMetadata": {"trigger": "auto", "preTokens": 160000}}))
    append(t, line({"type": "user", "isCompactSummary": True, "sessionId": SID, "message": {
        "role": "user", "content": "Summary: the assistant asked \"Which DB?\" via AskUserQuestion and the user picked Postgres"}}))
    append(t, line({"type": "user", "sessionId": SID, "message": {"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]}}))
    wait_until(lambda: any(e["kind"] == "turn_interrupted" for e in events(home)), 60, what="the interrupt")
    # the summary text neither opened nor resolved anything; the question is still pending
    assert [(q["id"], q["state"]) for q in questions(home)] == [(ASK, "pending")]


def test_headless_refusal_resolves_denied_in_the_same_poll(home: Path, worktree: Path, tmp_path: Path,
                                                           daemon: DaemonProcess) -> None:
    """B05: in plain `claude -p` the AskUserQuestion call errors at once; no human was asked."""
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    spawn_with_transcript(home, worktree, t)
    use, _ = ask_rows()
    refused = {"type": "user", "sessionId": SID, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": ASK, "is_error": True,
         "content": "<tool_use_error>Error: No such tool available: AskUserQuestion</tool_use_error>"}]}}
    append(t, line(use) + line(refused) + line({"type": "assistant", "sessionId": SID, "message": {
        "role": "assistant", "content": [{"type": "text", "text": "You chose Go."}]}}))
    wait_until(lambda: any(q["id"] == ASK and q["state"] == "denied" for q in questions(home)), 60, what="denied")
    evs = events(home)
    [pending] = about(evs, "question_pending", ASK)
    [resolved] = about(evs, "question_resolved", ASK)
    assert resolved["seq"] == pending["seq"] + 1  # one poll, one transaction: never a phantom stall
    assert resolved["data"]["outcome"] == "denied" and "No such tool available" in resolved["data"]["error"]
    assert resolved["data"]["answers"] is None  # "You chose Go." is not an answer anybody gave


def test_transcript_folder_created_after_session_start(home: Path, worktree: Path, tmp_path: Path,
                                                       daemon: DaemonProcess) -> None:
    t = tmp_path / "later" / "deeper" / "t.jsonl"
    spawn_with_transcript(home, worktree, t)  # the folder does not exist yet
    t.parent.mkdir(parents=True)
    use, _ = ask_rows()
    t.write_bytes(line(use))
    wait_until(lambda: any(q["id"] == ASK for q in questions(home, "pending")), 60, what="the question")


def test_projects_folder_new_sessions_are_found_also_after_a_restart(home: Path, worktree: Path, tmp_path: Path) -> None:
    """`hookd tail DIR`: a Claude Code projects folder; sessions that appear later (B19: a
    session started before the hooks were installed) are followed and flagged."""
    folder = tmp_path / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True)
    use, _ = ask_rows()
    old = (datetime.now(timezone.utc) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    d = DaemonProcess(home).start()
    try:
        assert hookd_cli(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
        r = hookd_cli(home, "tail", str(folder), "--builder", "b1")
        assert r.returncode == 0 and "0 transcripts now, and new ones" in r.stdout, r.stdout + r.stderr
        (folder / "s-0007.jsonl").write_bytes(line(dict(use, sessionId="s-0007", timestamp=old)))
        wait_until(lambda: any(q["id"] == ASK for q in questions(home, "pending")), 60, what="the new session's question")
        assert [e["session_id"] for e in events(home) if e["kind"] == "hooks_unarmed"] == ["s-0007"]
    finally:
        d.stop()
    other = dict(use, sessionId="s-0008", timestamp=old)
    other["message"] = dict(use["message"], content=[dict(use["message"]["content"][0], id="toolu_01LATER")])
    (folder / "s-0008.jsonl").write_bytes(line(other))  # appeared while hookd was down
    d = DaemonProcess(home).start()
    try:
        wait_until(lambda: any(q["id"] == "toolu_01LATER" for q in questions(home, "pending")), 60,
                   what="the question of a session that appeared while the daemon was down")
    finally:
        d.stop()


def test_frozen_transcript_path_follows_the_file_carrying_the_session_id(home: Path, worktree: Path,
                                                                          tmp_path: Path) -> None:
    """B23: the hooks' transcript_path stops growing while the session writes another file in
    the same folder. The file carrying the session's id is followed; a concurrent session's
    file there (B25: a newest-file guess would take it) is not; a move while the daemon was
    down is found at start."""
    folder = tmp_path / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True)
    frozen = folder / f"{SID}.jsonl"
    frozen.write_bytes(b"")
    use, res = ask_rows()
    other_use = dict(use, sessionId="s-other")
    other_use["message"] = dict(use["message"], content=[dict(use["message"]["content"][0], id="toolu_01OTHER")])
    d = DaemonProcess(home).start()
    try:
        spawn_with_transcript(home, worktree, frozen)
        (folder / "s-other.jsonl").write_bytes(line(other_use))  # a concurrent session, unknown to hookd
        (folder / "moved.jsonl").write_bytes(line(use))  # where the session really writes now
        wait_until(lambda: any(q["id"] == ASK for q in questions(home, "pending")), 60, what="the question")
        [followed] = [e for e in events(home) if e["kind"] == "transcript_followed"]
        assert followed["session_id"] == SID and followed["data"]["path"] == str(folder / "moved.jsonl")
        append(folder / "moved.jsonl", line(res))
        wait_until(lambda: any(q["id"] == ASK and q["state"] == "answered" for q in questions(home, "all")), 60, what="the answer")
    finally:
        d.stop()
    # while the daemon is down the session moves again
    second = dict(use)
    second["message"] = dict(use["message"], content=[dict(use["message"]["content"][0], id="toolu_01SECOND")])
    (folder / "moved-again.jsonl").write_bytes(line(second))
    d = DaemonProcess(home).start()
    try:
        wait_until(lambda: any(q["id"] == "toolu_01SECOND" for q in questions(home, "pending")), 60,
                   what="the question written to a new file while hookd was down")
        assert "toolu_01OTHER" not in {q["id"] for q in questions(home, "all")}
        assert {e["data"]["path"] for e in events(home) if e["kind"] == "transcript_followed"} == {
            str(folder / "moved.jsonl"), str(folder / "moved-again.jsonl")}
    finally:
        d.stop()


def test_answer_to_a_question_seen_only_in_a_transcript_is_queued_not_claimed(home: Path, worktree: Path,
                                                                             tmp_path: Path) -> None:
    """No hook came from the session: no hook can carry a remote answer. `hookd answer` says
    so (delivery inbox, a message), the question stays pending, and the desk's answer in the
    transcript resolves it as the desk's."""
    folder = tmp_path / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True)
    use, res = ask_rows()
    d = DaemonProcess(home).start()
    try:
        assert hookd_cli(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
        assert hookd_cli(home, "tail", str(folder), "--builder", "b1").returncode == 0
        (folder / f"{SID}.jsonl").write_bytes(line(use))
        wait_until(lambda: any(q["id"] == ASK for q in questions(home, "pending")), 60, what="the question")
        r = hookd_cli(home, "answer", ASK, "--option", "Red", "--json")
        assert r.returncode == 0, r.stderr
        receipt = json.loads(r.stdout)
        assert receipt["delivery"] == "inbox" and receipt["message_id"], receipt
        assert "only in a transcript" in receipt["warning"]
        [q] = questions(home, "pending")
        assert q["id"] == ASK and q["surface"] is None
        append(folder / f"{SID}.jsonl", line(res))
        wait_until(lambda: any(q["id"] == ASK and q["state"] == "answered" for q in questions(home, "all")), 60,
                   what="the desk's answer")
        [q] = questions(home, "all")
        assert (q["surface"], q["answers"]) == ("terminal", {"Which color do you prefer?": "Blue"})
        evs = events(home)
        assert not [e for e in evs if e["kind"] == "interaction_answered"]
        # the queued remote answer is not claimed; it is marked as not used (issue 18 item 13)
        [sup] = [e for e in evs if e["kind"] == "answer_superseded"]
        assert (sup["data"]["message_id"], sup["data"]["remote"]) == (receipt["message_id"], None)
        [m] = json.loads(hookd_cli(home, "inbox", "--json").stdout)
        assert m["text"].startswith(f"[Late answer to question {ASK} (not used: already answered at the terminal: Blue)]")
    finally:
        d.stop()


def test_session_that_stops_writing_is_still_flagged_unarmed(home: Path, worktree: Path, tmp_path: Path,
                                                             daemon: DaemonProcess) -> None:
    """B19 as it happens: the rows are fresh (no hook may have had time to come) and then the
    transcript stops moving (the agent is blocked on its question): after the grace the session
    is flagged anyway, without another row."""
    assert hookd_cli(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
    t = tmp_path / "s-0008.jsonl"
    # the grace (5 s) runs from the row's own time: a row stamped 20 s ahead keeps the checks
    # below inside it however slowly a loaded machine runs the CLI
    now = (datetime.now(timezone.utc) + timedelta(seconds=20)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    use, _ = ask_rows()
    t.write_bytes(line(dict(use, sessionId="s-0008", timestamp=now)))
    assert hookd_cli(home, "tail", str(t), "--builder", "b1").returncode == 0
    assert [q["id"] for q in questions(home, "pending")] == [ASK]
    evs = events(home)
    assert not [e for e in evs if e["kind"] == "hooks_unarmed"]  # within the grace
    assert [e["kind"] for e in evs if e["kind"] in ("session_started", "question_pending")] == [
        "session_started", "question_pending"]  # the session first, then what it asked
    flag = wait_until(lambda: [e for e in events(home) if e["kind"] == "hooks_unarmed"], 60, what="hooks_unarmed")
    assert [e["session_id"] for e in flag] == ["s-0008"]


def test_fork_lineage_is_per_builder(home: Path, worktree: Path, tmp_path: Path, daemon: DaemonProcess) -> None:
    """Two sessions whose transcripts start with the same root row are linked (a fork) only
    when they belong to the same builder."""
    root = next(r for r in ROWS if r.get("type") == "user" and r.get("parentUuid") is None)
    for b in ("b1", "b2"):
        assert hookd_cli(home, "spawn", b, "--settings-file", str(tmp_path / f"{b}.json")).returncode == 0
    files = {"s-a": ("b1", "2026-11-30T20:00:00.000Z"), "s-b": ("b2", "2026-11-30T20:05:00.000Z"),
             "s-c": ("b1", "2026-11-30T20:10:00.000Z")}
    for sid, (b, ts) in files.items():
        d = tmp_path / b / "proj"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{sid}.jsonl").write_bytes(line({"type": "queue-operation", "sessionId": sid, "timestamp": ts})
                                         + line(dict(root, sessionId=sid)))
        assert hookd_cli(home, "tail", str(d / f"{sid}.jsonl"), "--builder", b).returncode == 0
    linked = wait_until(lambda: [e for e in events(home) if e["kind"] == "session_linked"], 60, what="a link")
    assert [(e["session_id"], e["data"]["parent_session_id"]) for e in linked] == [("s-c", "s-a")]
