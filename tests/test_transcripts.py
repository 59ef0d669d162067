"""The transcript fallback across the daemon's restarts: rows written while it was down caught
up, a projects folder's new sessions found again, a session's moved file followed (real daemon,
real files, real recorded rows of Claude Code 2.1.332). Questions from rows, merged with hooks,
damaged rows, unarmed sessions and forks are tests/test_transcripts_inproc.py, which shares this
module's rows."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess

from .conftest import FIXTURES, TUI, events, hookd_cli, hookd_run, questions, run_hook, settings_command, wait_until

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
    assert hookd_run(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
    settings = worktree / ".claude" / "settings.local.json"
    start = json.loads((TUI / "001-SessionStart.json").read_bytes())
    start["transcript_path"] = str(transcript)
    r = run_hook(settings_command(settings, "SessionStart"), json.dumps(start).encode(), worktree)
    assert r.returncode == 0
    return settings


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


def test_a_transcript_rewritten_in_place_while_the_daemon_was_down_is_read_from_its_start(
        home: Path, worktree: Path, tmp_path: Path) -> None:
    """The cursor's bytes before its offset are saved with it (migration 0027): a transcript
    written again under the same identity while hookd was down, longer than what was read, is
    read from its start at the next start, not from the saved offset mid-row."""
    t = tmp_path / "t.jsonl"
    first = b"".join(line({"type": "mode", "sessionId": SID, "n": n}) for n in range(3))
    t.write_bytes(first)
    d = DaemonProcess(home).start()
    try:
        spawn_with_transcript(home, worktree, t)
        wait_until(lambda: (_transcript(home, t) or {}).get("offset") == len(first), 60, what="the first rows read")
    finally:
        d.stop()
    use, _ = ask_rows()
    again = line(use) + line({"type": "mode", "sessionId": SID})
    assert len(again) > len(first)
    ino = t.stat().st_ino
    with open(t, "r+b") as f:  # written again in place while hookd was down
        f.write(again)
    assert t.stat().st_ino == ino
    d = DaemonProcess(home).start()
    try:
        wait_until(lambda: any(q["id"] == ASK for q in questions(home, "pending")), 60,
                   what="the question of the transcript rewritten while the daemon was down")
        damaged = [e["data"] for e in events(home) if e["kind"] == "transcript_damaged"]
        assert sum(x.get("truncated", 0) for x in damaged) == 1 and not any(x.get("torn") for x in damaged)
    finally:
        d.stop()


def test_projects_folder_new_sessions_are_found_also_after_a_restart(home: Path, worktree: Path, tmp_path: Path) -> None:
    """`hookd tail DIR`: a Claude Code projects folder; sessions that appear later (B19: a
    session started before the hooks were installed) are followed and flagged."""
    folder = tmp_path / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True)
    use, _ = ask_rows()
    old = (datetime.now(timezone.utc) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    d = DaemonProcess(home).start()
    try:
        assert hookd_run(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
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




def _transcript(home: Path, path: Path) -> dict[str, Any] | None:
    from hookd.client import Client

    return next((r for r in Client(Home.resolve(home)).get("/v1/transcripts") if r["path"] == str(path)), None)


def _interrupt_left_unread(home: Path, worktree: Path, tmp_path: Path, waits: dict[str, str]) -> tuple[
        DaemonProcess, Path, Path]:
    """Start a daemon with ``waits`` (the tailer's quiet and bound), spawn b1 with a session
    (SID, a SessionStart: a live hook) reporting transcript ``t``, and follow ``u`` for no
    session; append an interrupt at the desk to ``t``, then a row to ``u``: while hooks keep
    coming the watch wakes for neither, and a hook of another session takes both changes in its
    turn. Returns the daemon, its hooks' settings file and ``t`` once ``u`` is read (then: no
    hooked session) and ``t`` is left unread (its change waits for SID's hooks) with no
    ``turn_interrupted``."""
    folder = tmp_path / "projects"
    folder.mkdir()
    t, u = folder / f"{SID}.jsonl", folder / "other.jsonl"
    t.write_bytes(b"")
    u.write_bytes(b"")
    d = DaemonProcess(home, env={**os.environ, **waits}).start()
    try:
        settings = spawn_with_transcript(home, worktree, t)  # SessionStart: a live hook of SID, reporting t
        assert hookd_cli(home, "tail", str(u), "--builder", "b1").returncode == 0  # no session: read at once
        wait_until(lambda: _transcript(home, t) and _transcript(home, u), 60, what="both files followed")
        use, _ = ask_rows()
        interrupt = {"type": "user", "sessionId": SID, "uuid": "u-interrupt", "timestamp": use["timestamp"],
                     "message": {"role": "user", "content": "[Request interrupted by user]"}}
        append(t, line(interrupt))
        append(u, line(dict(use, sessionId="s-other")))  # written after t's row
        other = json.loads((TUI / "004-PreToolUse.json").read_bytes())
        other["session_id"] = "s-other-hooked"
        del other["transcript_path"]  # (a transcript to follow would start the watch over, reading both)
        assert run_hook(settings_command(settings, "PreToolUse"), json.dumps(other).encode(), worktree).returncode == 0
        wait_until(lambda: (_transcript(home, u) or {}).get("offset") == u.stat().st_size, 60,
                   what="the file of no hooked session read in that hook's turn")
        # t's change came before u's: the tailer saw it, and left it for SID's hooks
        assert _transcript(home, t)["offset"] == 0  # type: ignore[index]
        assert not [e for e in events(home) if e["kind"] == "turn_interrupted"]
    except BaseException:
        d.kill()
        raise
    return d, settings, t


def _interrupted_once(home: Path) -> bool:
    return [e["data"]["marker"] for e in events(home) if e["kind"] == "turn_interrupted"] == [
        "[Request interrupted by user]"]


def test_a_hooked_sessions_rows_are_read_in_the_turn_of_its_next_hook(
        home: Path, worktree: Path, tmp_path: Path) -> None:
    """While a session's hooks keep coming, its transcript's change waits for one of its hooks
    (here the first after it was seen: a bound of 1 ms), and that hook reads it: no timer, no
    read of its own (hookd.watchers.quiet). A file of no hooked session, changed after it, is
    read once a hook took its change."""
    # the hooks are never quiet for an hour; a change is read at the first hook after it
    d, settings, t = _interrupt_left_unread(
        home, worktree, tmp_path, {"HOOKD_TAIL_QUIET_MS": "3600000", "HOOKD_TAIL_MAX_DEFER_MS": "1"})
    try:
        pre = json.loads((TUI / "004-PreToolUse.json").read_bytes())
        pre["transcript_path"] = str(t)
        assert run_hook(settings_command(settings, "PreToolUse"), json.dumps(pre).encode(), worktree).returncode == 0
        wait_until(lambda: (_transcript(home, t) or {}).get("offset") == t.stat().st_size, 60,
                   what="the row read in the hook's turn")
        assert _interrupted_once(home)
    finally:
        d.stop()


def test_a_hooked_sessions_rows_wait_for_its_hooks_and_are_applied_once_across_kill_9(
        home: Path, worktree: Path, tmp_path: Path) -> None:
    """While a session's hooks keep coming, a change of its transcript is read once they go
    quiet (hookd.watchers.quiet), not at once; a file of no hooked session is read as soon as
    a hook takes its change.
    Rows left unread when the daemon is killed (SIGKILL) are read at the next start from the
    cursor saved with what was applied, once: an interrupt at the desk (a ``turn_interrupted``
    event per read of its row, nothing keyed) is recorded exactly once across two kills."""
    # the hooks are never quiet for an hour, and no bound: a change of t waits until the daemon dies
    d, _, t = _interrupt_left_unread(
        home, worktree, tmp_path, {"HOOKD_TAIL_QUIET_MS": "3600000", "HOOKD_TAIL_MAX_DEFER_MS": "3600000"})
    d.kill()  # SIGKILL with t's row unread
    for _ in range(2):  # read at the start (no hook of SID yet), then killed again after that read
        d = DaemonProcess(home).start()
        try:
            wait_until(lambda: (_transcript(home, t) or {}).get("offset") == t.stat().st_size, 60,
                       what="the row left unread caught up at the start")
            assert _interrupted_once(home)
        finally:
            d.kill()
