"""The transcript fallback, in process (tests/inproc.py): questions detected from transcript
rows (real files, real recorded rows of Claude Code 2.1.332) by the daemon's own tailer, merged
with hook records by tool_use_id, damaged rows survived, sessions without hooks flagged, forks
linked per builder. Hooks go to the app's hook routes with the generated client's headers;
transcripts are registered as ``hookd tail`` registers them. Catching up across a restart and
``hookd tail``'s output are tests/test_transcripts.py, which shares this module's rows."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home
from hookd.settings import Settings
from hookd.spawn import spawn

from .conftest import TUI, wait_until
from .inproc import WAIT_S, InProc
from .test_transcripts import ASK, ROWS, SID, about, append, ask_rows, line

pytestmark = pytest.mark.inproc


def spawn_b(app: InProc, builder: str = "b1", **kw: Any) -> None:
    spawn(Home.resolve(app.home.root), builder, **kw)  # what `hookd spawn` does


def spawn_with_transcript(app: InProc, worktree: Path, transcript: Path) -> None:
    """Spawn b1 and post its SessionStart hook reporting ``transcript`` (as Claude Code does)."""
    spawn_b(app, worktree=worktree)
    start = json.loads((TUI / "001-SessionStart.json").read_bytes())
    start["transcript_path"] = str(transcript)
    assert app.hook(start).status_code == 200


def tail(app: InProc, path: Path, builder: str = "b1") -> dict[str, Any]:
    """``hookd tail PATH --builder B``'s request; its reply (``files``: what is followed)."""
    r = app.request("POST", f"/v1/builders/{builder}/transcripts",
                    json={"paths": [str(path.absolute())], "session_id": None})
    assert r.status_code == 201, r.text
    return r.json()


def hook(app: InProc, name: str, **changes: Any) -> None:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    assert app.hook(p).status_code == 200


def test_question_from_transcript_then_hooks_make_one_interaction(inproc: InProc, worktree: Path, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    spawn_with_transcript(inproc, worktree, t)
    use, res = ask_rows()
    append(t, line(use))
    q = wait_until(lambda: next((q for q in inproc.questions("pending") if q["id"] == ASK), None), 60,
                   what="the question detected from the transcript")
    assert q["questions"][0]["question"] == "Which color do you prefer?" and q["builder"] == "b1"
    # the hooks for the same call arrive late: no second interaction
    hook(inproc, "007-PreToolUse.json")
    # spawned with the default hold (900 s): the desk's answer (below) releases it
    perm = json.loads((TUI / "008-PermissionRequest.json").read_bytes())
    held = inproc.submit_hook(perm, route="/hold", deadline_ms=900_000)
    append(t, line(res))
    wait_until(lambda: next(q for q in inproc.questions() if q["id"] == ASK)["state"] == "answered", 60,
               what="resolved from the transcript")
    r = held.result(WAIT_S)
    assert (r.status_code, r.content) == (200, b"")  # released
    hook(inproc, "010-PostToolUse.json")
    [q] = [q for q in inproc.questions() if q["id"] == ASK]
    assert (q["answers"], q["surface"]) == ({"Which color do you prefer?": "Blue"}, "terminal")
    evs = inproc.events()
    [pending] = about(evs, "question_pending", ASK)
    [resolved] = about(evs, "question_resolved", ASK)
    assert pending["data"]["via"] == "transcript" and resolved["data"]["via"] == "transcript"
    assert len(inproc.questions()) == 1


def test_chunked_and_damaged_rows_give_each_event_once(inproc: InProc, worktree: Path, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    spawn_with_transcript(inproc, worktree, t)
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
    wait_until(lambda: any(q["id"] == ASK and q["state"] == "answered" for q in inproc.questions()), 60,
               what="the answer from the damaged transcript")
    evs = inproc.events()
    assert len(about(evs, "question_pending", ASK)) == 1 and len(about(evs, "question_resolved", ASK)) == 1
    damaged = [e["data"] for e in evs if e["kind"] == "transcript_damaged"]
    total = {k: sum(d.get(k, 0) for d in damaged) for k in ("spliced", "nul_padded", "invalid_utf8", "torn")}
    assert total["spliced"] >= 1 and total["nul_padded"] == 1 and total["invalid_utf8"] == 1
    unknown = sum(e["data"].get("unknown_rows", 0) for e in evs if e["kind"].startswith("transcript_"))
    assert unknown == 2  # future-row, brand-new-type
    assert sum(e["data"].get("unknown_blocks", 0) for e in evs if e["kind"].startswith("transcript_")) == 1
    assert {e["session_id"] for e in evs if e["kind"].startswith("transcript_")} == {SID}


def test_session_without_hooks_is_flagged_unarmed(inproc: InProc, worktree: Path, tmp_path: Path) -> None:
    spawn_b(inproc, worktree=worktree)
    t = tmp_path / "s-0007.jsonl"
    old = (datetime.now(timezone.utc) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    use, _ = ask_rows()
    rows = [dict(r, sessionId="s-0007", timestamp=old) for r in (use,)]
    t.write_bytes(b"".join(line(r) for r in rows))
    [f] = tail(inproc, t)["files"]
    assert f["path"] == str(t) and not f.get("refused")  # followed
    evs = inproc.events()
    [flag] = [e for e in evs if e["kind"] == "hooks_unarmed"]
    assert flag["session_id"] == "s-0007" and "/hooks" in flag["data"]["advice"]
    assert [q["id"] for q in inproc.questions("pending")] == [ASK]  # handled from the transcript
    # hooks arriving later arm it
    hook(inproc, "002-UserPromptSubmit.json", session_id="s-0007")
    assert [e["session_id"] for e in inproc.events() if e["kind"] == "hooks_armed"] == ["s-0007"]


def test_compact_summary_and_interrupt_rows(inproc: InProc, worktree: Path, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    spawn_with_transcript(inproc, worktree, t)
    use, _ = ask_rows()
    append(t, line(use))
    append(t, line({"type": "system", "subtype": "compact_boundary", "sessionId": SID,
                    "compactMetadata": {"trigger": "auto", "preTokens": 160000}}))
    append(t, line({"type": "user", "isCompactSummary": True, "sessionId": SID, "message": {
        "role": "user", "content": "Summary: the assistant asked \"Which DB?\" via AskUserQuestion and the user picked Postgres"}}))
    append(t, line({"type": "user", "sessionId": SID, "message": {"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]}}))
    wait_until(lambda: any(e["kind"] == "turn_interrupted" for e in inproc.events()), 60, what="the interrupt")
    # the summary text neither opened nor resolved anything; the question is still pending
    assert [(q["id"], q["state"]) for q in inproc.questions()] == [(ASK, "pending")]


def test_headless_refusal_resolves_denied_in_the_same_poll(inproc: InProc, worktree: Path, tmp_path: Path) -> None:
    """B05: in plain `claude -p` the AskUserQuestion call errors at once; no human was asked."""
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    spawn_with_transcript(inproc, worktree, t)
    use, _ = ask_rows()
    refused = {"type": "user", "sessionId": SID, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": ASK, "is_error": True,
         "content": "<tool_use_error>Error: No such tool available: AskUserQuestion</tool_use_error>"}]}}
    append(t, line(use) + line(refused) + line({"type": "assistant", "sessionId": SID, "message": {
        "role": "assistant", "content": [{"type": "text", "text": "You chose Go."}]}}))
    wait_until(lambda: any(q["id"] == ASK and q["state"] == "denied" for q in inproc.questions()), 60, what="denied")
    evs = inproc.events()
    [pending] = about(evs, "question_pending", ASK)
    [resolved] = about(evs, "question_resolved", ASK)
    assert resolved["seq"] == pending["seq"] + 1  # one poll, one transaction: never a phantom stall
    assert resolved["data"]["outcome"] == "denied" and "No such tool available" in resolved["data"]["error"]
    assert resolved["data"]["answers"] is None  # "You chose Go." is not an answer anybody gave


def test_a_result_without_its_answers_still_ends_the_question(inproc: InProc, worktree: Path, tmp_path: Path) -> None:
    """Any tool_result for the call ends it: a row without ``toolUseResult`` (the answers) ends
    the question as empty, with a warning, instead of leaving it pending and the lane stalled."""
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    spawn_with_transcript(inproc, worktree, t)
    use, _ = ask_rows()
    bare = {"type": "user", "sessionId": SID, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": ASK, "content": "User has answered your questions."}]}}
    append(t, line(use) + line(bare))
    q = wait_until(lambda: [q for q in inproc.questions() if q["id"] == ASK and q["state"] != "pending"], 60,
                   what="the question ended")[0]
    assert (q["state"], q["answers"], q["surface"]) == ("empty", None, None)
    assert "without its answers" in q["warning"]
    [resolved] = about(inproc.events(), "question_resolved", ASK)
    assert resolved["data"]["outcome"] == "empty"


def test_transcript_folder_created_after_session_start(inproc: InProc, worktree: Path, tmp_path: Path) -> None:
    t = tmp_path / "later" / "deeper" / "t.jsonl"
    spawn_with_transcript(inproc, worktree, t)  # the folder does not exist yet
    t.parent.mkdir(parents=True)
    use, _ = ask_rows()
    t.write_bytes(line(use))
    wait_until(lambda: any(q["id"] == ASK for q in inproc.questions("pending")), 60, what="the question")


def test_a_transcript_created_while_the_watch_is_set_up_is_read(home: Path, worktree: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that appears in a followed folder after the tailer listed the folder and before
    its new watch is in place (no event for it, then) is found by the listing made once the
    watch is set up: its question is seen with no further change of the file (it was found
    only at its next change; an agent waiting on its question writes none)."""
    import hookd.watchers.watch as watch

    folder = tmp_path / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True)
    use, _ = ask_rows()
    real = watch.awatch_dirs
    armed = [True]

    def created_meanwhile(*dirs: str, **kw: Any) -> Any:
        if str(folder) in dirs and armed:  # the tailer's restart for the folder: listed, not yet watched
            armed.clear()
            (folder / f"{SID}.jsonl").write_bytes(line(use))
        return real(*dirs, **kw)

    monkeypatch.setattr(watch, "awatch_dirs", created_meanwhile)
    app = InProc(home).start()
    try:
        spawn_b(app, worktree=worktree)
        tail(app, folder)
        wait_until(lambda: any(q["id"] == ASK for q in app.questions("pending")), 60, what="the question")
        assert not armed
    finally:
        app.stop()


def _row(uuid: str) -> bytes:
    return line({"type": "user", "sessionId": SID, "uuid": uuid, "message": {"role": "user", "content": uuid}})


def test_a_hook_reads_no_unchanged_file_of_its_session(home: Path, worktree: Path, tmp_path: Path) -> None:
    """A session with a finished subagent's transcript (followed, read to its end): a hook and
    an append to the main transcript read the main transcript only (a reviewer found every
    file of the session read at every quiet spell)."""
    folder = tmp_path / "projects"
    sub = folder / SID / "subagents"
    sub.mkdir(parents=True)
    t, sa = folder / f"{SID}.jsonl", sub / "agent-a1.jsonl"
    t.write_bytes(b"")
    app = InProc(home, settings=Settings(tail_quiet_ms=100, tail_max_defer_ms=3_600_000)).start()
    try:
        spawn_with_transcript(app, worktree, t)
        wait_until(lambda: _offset(app, t) == 0, 60, what="t followed")
        use, _ = ask_rows()
        append(sa, line(dict(use, sessionId=SID, isSidechain=True, agentId="a1")))  # followed for SID
        wait_until(lambda: _offset(app, sa) == sa.stat().st_size, 60, what="the subagent's file followed and read")
        quiet: Any = app.core.tailer._quiet  # type: ignore[attr-defined]  # noqa: SLF001
        tailer: Any = app.core.tailer  # type: ignore[attr-defined]
        # (the subagent's file newly followed sets the watch again, with a read of every
        # followed file: done before the reads are counted; a CI run under load counted it)
        wait_until(lambda: quiet.pending() == [] and tailer.settled, 60, what="nothing waiting, the watch set")
        reads: list[str] = []
        real = tailer.poll

        async def counted(path: str) -> Any:
            reads.append(path)
            return await real(path)

        quiet._read = tailer.poll = counted  # noqa: SLF001  # (a change taken once the hooks went quiet is read at once)
        hook(app, "004-PreToolUse.json", transcript_path=str(t))
        append(t, _row("u-main"))
        wait_until(lambda: _offset(app, t) == t.stat().st_size, 60, what="t's change read once the hooks went quiet")
        wait_until(lambda: quiet.pending() == [], 60, what="nothing waiting")
        assert reads == [str(t)]
    finally:
        app.stop()


def _queued(fd: int) -> int:
    """Bytes of events waiting in inotify instance ``fd``'s queue (``FIONREAD``): not yet read."""
    import fcntl
    import termios

    buf = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return int.from_bytes(buf, sys.byteorder)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch (held) is Linux's")
def test_changes_between_hooks_wait_in_the_kernel_for_the_next_hook(home: Path, worktree: Path, tmp_path: Path) -> None:
    """While hooks keep coming the tailer's watch is held (``hookd.watchers.watch.Gate``): the
    agent's append after a read at a hook, and a change of a file of no hooked session, wait in
    the kernel's queue and wake the daemon for nothing (a request answered meanwhile leaves them
    there). The next hook takes them in its turn: the file of no session is read then; the
    hooked session's append is dropped where it is taken (the hook that read the file marked it
    again: its consumer is not handed it), its read armed for its session's hooks."""
    folder = tmp_path / "projects"
    folder.mkdir()
    t, u = folder / f"{SID}.jsonl", folder / "other.jsonl"
    t.write_bytes(b"")
    u.write_bytes(b"")
    app = InProc(home, settings=Settings(tail_quiet_ms=3_600_000, tail_max_defer_ms=1)).start()
    try:
        spawn_with_transcript(app, worktree, t)
        tail(app, u)
        wait_until(lambda: _offset(app, t) == 0 and _offset(app, u) == 0, 60, what="t and u followed")
        tailer: Any = app.core.tailer  # type: ignore[attr-defined]
        quiet, gate = tailer._quiet, tailer._gate  # noqa: SLF001
        hook(app, "004-PreToolUse.json", transcript_path=str(t))  # marks t; the watch held
        assert gate.held
        append(t, _row("u-1"))
        hook(app, "004-PreToolUse.json", transcript_path=str(t))  # takes t's change; its bound (1 ms) passed: read in this turn
        wait_until(lambda: _offset(app, t) == t.stat().st_size, 60, what="t read at the hook")
        read_to = t.stat().st_size
        polls: list[str] = []
        real = tailer.poll

        async def counted(path: str) -> Any:
            polls.append(path)
            return await real(path)

        tailer.poll = counted  # the watch's consumer reads what it is handed with it
        fd = gate._bound[1]  # noqa: SLF001
        append(t, _row("u-2"))
        append(u, line({"type": "user", "sessionId": "s-other", "uuid": "u-3", "message": {"role": "user", "content": "c"}}))
        assert _queued(fd) > 0  # queued by the writes themselves
        assert _offset(app, u) == 0 and _queued(fd) > 0  # the daemon answered a request and took neither
        _other_sessions_hook(app)  # takes both
        wait_until(lambda: _offset(app, u) == u.stat().st_size, 60, what="u read in that hook's turn")
        assert _queued(fd) == 0 and polls == [str(u)] and quiet.pending() == [str(t)]
        assert _offset(app, t) == read_to
    finally:
        app.stop()


def test_a_folder_on_the_way_to_a_transcript_made_while_the_watch_is_set_up_is_followed(
        home: Path, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The transcript's folder does not exist, so the tailer watches its nearest existing
    ancestor. A folder on the way (``later``) appears after that listing and before the watch
    is in place (no event for it), and the rest (``deeper``, the transcript) once the tailer
    waits for changes: the tailer sees that the nearest ancestor moved and watches again from
    there, and the question is seen (it looked only for the transcript's own folder, and waited
    for good: a CI flake of ``test_transcript_folder_created_after_session_start``)."""
    import asyncio

    import hookd.watchers.watch as watch

    t = tmp_path / "later" / "deeper" / "t.jsonl"
    use, _ = ask_rows()
    real = watch.awatch_dirs
    armed = [True]

    def the_rest() -> None:
        t.parent.mkdir()
        t.write_bytes(line(use))

    def made_meanwhile(*dirs: str, **kw: Any) -> Any:
        gen = real(*dirs, **kw)
        if str(tmp_path) not in dirs or not armed:
            return gen
        armed.clear()
        (tmp_path / "later").mkdir()  # listed before it was there, watched after

        async def then_the_rest() -> Any:
            # queued behind the tailer's catch-up and its look at the folders on the way
            asyncio.get_running_loop().call_soon(the_rest)
            async for batch in gen:
                yield batch

        return then_the_rest()

    monkeypatch.setattr(watch, "awatch_dirs", made_meanwhile)
    app = InProc(home).start()
    try:
        spawn_with_transcript(app, worktree, t)
        wait_until(lambda: any(q["id"] == ASK for q in app.questions("pending")), 60, what="the question")
        assert not armed
    finally:
        app.stop()


@pytest.mark.parametrize("how", ["removed", "moved away"])
def test_a_transcript_folder_removed_and_made_again_is_followed(home: Path, worktree: Path, tmp_path: Path,
                                                                how: str) -> None:
    """The transcript's folder is removed, its watch with it (the kernel's ``IN_IGNORED``), or
    moved away, its watch following it (``IN_MOVE_SELF``), and made again with the transcript
    in it: the tailer watches again and reads the new file (a reviewer found the watch gone for
    good: nothing watched the folder any more; a folder moved away kept its watch there)."""
    import shutil

    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    t = folder / "t.jsonl"
    t.write_bytes(b"")
    app = InProc(home, settings=Settings(tail_quiet_ms=1)).start()  # every change read at once
    try:
        spawn_with_transcript(app, worktree, t)
        # (empty: the new file may get the old one's inode, and a cursor past 0 would then hold)
        wait_until(lambda: _offset(app, t) == 0, 60, what="t followed")
        if how == "removed":
            shutil.rmtree(folder)
        else:
            folder.rename(folder.parent / "moved")
        folder.mkdir()
        use, _ = ask_rows()
        t.write_bytes(line(use))
        wait_until(lambda: any(q["id"] == ASK for q in app.questions("pending")), 60,
                   what="the question in the transcript made again")
    finally:
        app.stop()


def test_answer_to_a_question_seen_only_in_a_transcript_is_queued_not_claimed(inproc: InProc, worktree: Path,
                                                                             tmp_path: Path) -> None:
    """No hook came from the session: no hook can carry a remote answer. The answer says so
    (delivery inbox, a message), the question stays pending, and the desk's answer in the
    transcript resolves it as the desk's."""
    folder = tmp_path / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True)
    use, res = ask_rows()
    spawn_b(inproc, worktree=worktree)
    (folder / f"{SID}.jsonl").write_bytes(line(use))
    tail(inproc, folder)
    wait_until(lambda: any(q["id"] == ASK for q in inproc.questions("pending")), 60, what="the question")
    r = inproc.request("POST", f"/v1/interactions/{ASK}/answer", json={  # `hookd answer ASK --option Red`
        "response_id": None, "actor": None, "revision": None, "surface": "cli", "question": None,
        "options": ["Red"], "text": None})
    assert r.status_code == 200, r.text
    receipt = r.json()
    assert receipt["delivery"] == "inbox" and receipt["message_id"], receipt
    assert "only in a transcript" in receipt["warning"]
    [q] = inproc.questions("pending")
    assert q["id"] == ASK and q["surface"] is None
    append(folder / f"{SID}.jsonl", line(res))
    wait_until(lambda: any(q["id"] == ASK and q["state"] == "answered" for q in inproc.questions("all")), 60,
               what="the desk's answer")
    [q] = inproc.questions("all")
    assert (q["surface"], q["answers"]) == ("terminal", {"Which color do you prefer?": "Blue"})
    evs = inproc.events()
    assert not [e for e in evs if e["kind"] == "interaction_answered"]
    # the queued remote answer is not claimed; it is marked as not used (issue 18 item 13)
    [sup] = [e for e in evs if e["kind"] == "answer_superseded"]
    assert (sup["data"]["message_id"], sup["data"]["remote"]) == (receipt["message_id"], None)
    [m] = inproc.get("/v1/messages", limit=1000)
    assert m["text"].startswith(f"[Late answer to question {ASK} (not used: already answered at the desk: Blue)]")


def test_session_that_stops_writing_is_still_flagged_unarmed(inproc: InProc, worktree: Path, tmp_path: Path) -> None:
    """B19 as it happens: the rows are fresh (no hook may have had time to come) and then the
    transcript stops moving (the agent is blocked on its question): after the grace the session
    is flagged anyway, without another row."""
    spawn_b(inproc, worktree=worktree)
    t = tmp_path / "s-0008.jsonl"
    # the grace (5 s) runs from the row's own time: a row stamped 5 s ahead keeps the checks
    # below (three requests in process; the daemon test stamped 20 s ahead for its CLI calls)
    # inside it on a loaded machine
    now = (datetime.now(timezone.utc) + timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    use, _ = ask_rows()
    t.write_bytes(line(dict(use, sessionId="s-0008", timestamp=now)))
    tail(inproc, t)
    assert [q["id"] for q in inproc.questions("pending")] == [ASK]
    evs = inproc.events()
    assert not [e for e in evs if e["kind"] == "hooks_unarmed"]  # within the grace
    assert [e["kind"] for e in evs if e["kind"] in ("session_started", "question_pending")] == [
        "session_started", "question_pending"]  # the session first, then what it asked
    flag = wait_until(lambda: [e for e in inproc.events() if e["kind"] == "hooks_unarmed"], 60, what="hooks_unarmed")
    assert [e["session_id"] for e in flag] == ["s-0008"]


def test_fork_lineage_is_per_builder(inproc: InProc, tmp_path: Path) -> None:
    """Two sessions whose transcripts start with the same root row are linked (a fork) only
    when they belong to the same builder."""
    root = next(r for r in ROWS if r.get("type") == "user" and r.get("parentUuid") is None)
    for b in ("b1", "b2"):
        spawn_b(inproc, b, settings_file=tmp_path / f"{b}.json")
    files = {"s-a": ("b1", "2026-11-30T20:00:00.000Z"), "s-b": ("b2", "2026-11-30T20:05:00.000Z"),
             "s-c": ("b1", "2026-11-30T20:10:00.000Z")}
    for sid, (b, ts) in files.items():
        d = tmp_path / b / "proj"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{sid}.jsonl").write_bytes(line({"type": "queue-operation", "sessionId": sid, "timestamp": ts})
                                         + line(dict(root, sessionId=sid)))
        tail(inproc, d / f"{sid}.jsonl", b)
    linked = wait_until(lambda: [e for e in inproc.events() if e["kind"] == "session_linked"], 60, what="a link")
    assert [(e["session_id"], e["data"]["parent_session_id"]) for e in linked] == [("s-c", "s-a")]


def _offset(app: InProc, t: Path) -> int:
    """How far the daemon's tailer has read ``t`` (``GET /v1/transcripts``: past whole rows only)."""
    return next((f["offset"] for f in app.get("/v1/transcripts") if f["path"] == str(t)), -1)


def test_a_transcript_rewritten_under_its_identity_is_read_again_from_its_start(inproc: InProc, worktree: Path,
                                                                                 tmp_path: Path) -> None:
    """A followed transcript written again in place (the same device and inode, as when a file
    is removed and made again on an inode number given out again), longer than what was read:
    its rows are read from its start, not from the old offset in the middle of a new row."""
    t = tmp_path / "t.jsonl"
    first = b"".join(line({"type": "mode", "sessionId": SID, "n": n}) for n in range(3))
    t.write_bytes(first)
    spawn_with_transcript(inproc, worktree, t)
    wait_until(lambda: _offset(inproc, t) == len(first), 60, what="the first rows read")
    use, _ = ask_rows()
    again = line(use) + line({"type": "mode", "sessionId": SID})
    assert len(again) > len(first)
    ino = t.stat().st_ino
    with open(t, "r+b") as f:
        f.write(again)
    assert t.stat().st_ino == ino
    wait_until(lambda: any(q["id"] == ASK for q in inproc.questions("pending")), 60,
               what="the question of the rewritten transcript")
    assert _offset(inproc, t) == len(again)
    damaged = [e["data"] for e in inproc.events() if e["kind"] == "transcript_damaged"]
    assert sum(d.get("truncated", 0) for d in damaged) == 1 and not any(d.get("torn") for d in damaged)


def test_b30_text_the_human_typed_seen_only_in_the_transcript_is_not_sent_again(inproc: InProc, worktree: Path,
                                                                                  tmp_path: Path) -> None:
    """Field case B30's trigger: b1 is idle (its Stop came) with "use postgres" queued (m-1), no
    UserPromptSubmit arrives, and the transcript gains Claude Code's queue-operation row and then
    the human's own "use postgres" prompt row, written in chunks (a row torn across writes). m-1 is
    adopted as typed (never sent); m-2, whose text the human also typed but earlier than it was
    queued (a row dated before it), stays queued and is the only one the next boundary sends."""
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    spawn_with_transcript(inproc, worktree, t)
    hook(inproc, "012-Stop.json", transcript_path=str(t))
    send = lambda text: inproc.request("POST", "/v1/builders/b1/messages",  # noqa: E731
                                       json={"text": text, "author": "alice"}).json()["message"]
    m1, m2 = send("use postgres"), send("and keep the tests green")
    prompt = next(r for r in ROWS if r.get("type") == "user" and isinstance(r["message"]["content"], str))
    iso = lambda at: datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")  # noqa: E731
    earlier = dict(prompt, uuid="b30-earlier", timestamp=iso(m2["created_at"] - 3600),
                   message={"role": "user", "content": "and keep the tests green"})
    enqueue = {"type": "queue-operation", "operation": "enqueue", "content": "use postgres", "sessionId": SID,
               "timestamp": iso(m1["created_at"] + 1)}
    typed = dict(prompt, uuid="b30-typed", timestamp=iso(m1["created_at"] + 2),
                 message={"role": "user", "content": [{"type": "text", "text": "use postgres"}]})
    data = line(earlier) + line(enqueue) + line(typed)
    cut1, cut2 = len(line(earlier)) + 20, len(line(earlier) + line(enqueue)) + 30  # mid-row, twice
    append(t, data[:cut1])
    wait_until(lambda: _offset(inproc, t) == len(line(earlier)), 60, what="the first whole row read")
    append(t, data[cut1:cut2])
    wait_until(lambda: _offset(inproc, t) == len(line(earlier) + line(enqueue)), 60, what="the second row read")
    assert inproc.inbox("b1")[0]["state"] == "queued"  # (the prompt row is still torn)
    append(t, data[cut2:])
    wait_until(lambda: inproc.inbox("b1")[0]["state"] != "queued", 60, what="m-1 adopted from the transcript")
    box = {m["id"]: m for m in inproc.inbox("b1")}
    assert [(box[m]["state"], box[m]["delivered_via"], box[m]["adopted_via"]) for m in ("m-1", "m-2")] == [
        ("adopted", "typed", "typed"), ("queued", None, None)]
    # the human's prompt begins a turn: the lane is working, not idle (or stalled) with m-2
    lane = wait_until(lambda: (x := next(x for x in inproc.get("/v1/lanes") if x["builder"] == "b1"))["state"]
                      == "working" and x, 60, what="the lane working on the typed prompt")
    assert lane["detail"] == "a prompt its transcript shows, no hook since"
    [adopted] = [e for e in inproc.events() if e["kind"] == "inbox_adopted"]
    assert (adopted["data"], adopted["session_id"]) == ({"ids": ["m-1"], "via": "typed"}, SID)
    # the next turn boundary carries m-2 only
    post = json.loads((TUI / "005-PostToolUse.json").read_bytes())
    r = inproc.hook(post)
    assert r.status_code == 200 and "and keep the tests green" in r.text and "use postgres" not in r.text, r.text


def _inotify_fds() -> int:
    """inotify instances open in this process (the in-process daemon's among them)."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            continue  # (closed meanwhile)
    return n


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
@pytest.mark.parametrize("backend", ["auto", "watchfiles"])
def test_a_failed_transcript_watch_releases_its_inotify_at_once(
        home: Path, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """The tailer's watch failing after it was set (its catch-up raising): the watch's inotify
    fd is closed before the back-off, not left open until the generator is collected (the
    back-off is made long here, so that no new watch opens meanwhile). With the watchfiles
    fallback too (its watcher holds an inotify of its own)."""
    from hookd.watchers import tailer

    monkeypatch.setattr(tailer, "WATCH_RETRY_S", 600.0)
    real = tailer.Tailer.catch_up
    watching: list[int] = []  # inotify instances open while the failing catch-up ran

    async def catch_up(self: Any, *a: Any, **kw: Any) -> Any:
        if not watching and self._targets:  # the catch-up once the transcript's watch is set
            watching.append(_inotify_fds())
            raise RuntimeError("a catch-up that failed")
        return await real(self, *a, **kw)

    monkeypatch.setattr(tailer.Tailer, "catch_up", catch_up)
    t = tmp_path / "quiet" / "t.jsonl"  # a folder of its own: nothing else changes in the watched one
    t.parent.mkdir()
    t.write_bytes(b"")
    app = InProc(home, settings=Settings(watch_backend=backend)).start()
    try:
        spawn_with_transcript(app, worktree, t)
        wait_until(lambda: watching, WAIT_S, 0.01, "the watch's catch-up never ran")
        wait_until(lambda: _inotify_fds() == watching[0] - 1, WAIT_S, 0.01,
                   lambda: f"the failed watch's inotify is still open during the back-off ({_inotify_fds()} open, "
                           f"{watching[0]} while it watched)")
    finally:
        app.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch (held) is Linux's")
def test_a_hook_is_answered_when_taking_the_watchs_events_fails(home: Path, worktree: Path, tmp_path: Path) -> None:
    """A hook takes what the held watch queued in its turn; when that fails (the watch's fd in
    error) the hook is still answered, and the tailer watches again: a later row is read."""
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    app = InProc(home, settings=Settings(tail_quiet_ms=100)).start()
    try:
        spawn_with_transcript(app, worktree, t)
        wait_until(lambda: _offset(app, t) == 0, 60, what="t followed")
        gate: Any = app.core.tailer._gate  # type: ignore[attr-defined]  # noqa: SLF001
        wait_until(lambda: gate._bound is not None, 60, what="the watch set")  # noqa: SLF001
        failing = gate._bound  # noqa: SLF001

        def broken() -> None:
            raise OSError(5, "Input/output error")

        gate._bound = (failing[0], failing[1], broken)  # noqa: SLF001
        hook(app, "004-PreToolUse.json", transcript_path=str(t))  # answered 200 (asserted there)
        wait_until(lambda: gate._bound is not None and gate._bound[2] is not broken, 60,  # noqa: SLF001
                   what="the watch set again")
        append(t, _row("u-after"))
        wait_until(lambda: _offset(app, t) == t.stat().st_size, 60, what="the row read")
    finally:
        app.stop()


def _other_sessions_hook(app: InProc) -> None:
    """A hook of another session of b1's, reporting no transcript (so no watch is set up again)."""
    other = json.loads((TUI / "004-PreToolUse.json").read_bytes())
    other["session_id"] = "s-other-hooked"
    del other["transcript_path"]
    assert app.hook(other).status_code == 200


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch (held) is Linux's")
def test_a_change_made_while_its_session_was_quiet_is_read_when_its_next_hook_takes_it(
        home: Path, worktree: Path, tmp_path: Path) -> None:
    """Another session's hooks hold the watch while SID has gone quiet; SID's transcript
    changes (text typed at the desk), and SID's next hook takes the change: it is judged as it
    is taken, against the hooks before that one (SID quiet), and read at once, not left for
    SID's hooks to go quiet again (a reviewer found it judged after the hook counted)."""
    t = tmp_path / f"{SID}.jsonl"
    t.write_bytes(b"")
    quiet_s = 1.0
    app = InProc(home, settings=Settings(tail_quiet_ms=int(quiet_s * 1000), tail_max_defer_ms=3_600_000)).start()
    try:
        spawn_with_transcript(app, worktree, t)  # SessionStart: SID's live hook, t marked
        wait_until(lambda: _offset(app, t) == 0, 60, what="t followed")
        tailer: Any = app.core.tailer  # type: ignore[attr-defined]
        quiet = tailer._quiet  # noqa: SLF001
        loop = app._loop  # noqa: SLF001
        wait_until(lambda: loop.time() - quiet._hooks_at[SID] > quiet_s, 60, what="SID quiet")  # noqa: SLF001
        deferred: list[str] = []
        real = quiet._read  # noqa: SLF001

        async def counted(path: str) -> Any:
            deferred.append(path)
            return await real(path)

        quiet._read = counted  # noqa: SLF001  # (the deferred reads: what waited for SID's hooks)
        _other_sessions_hook(app)  # holds the watch
        assert tailer._gate.held  # noqa: SLF001
        append(t, _row("u-typed-at-the-desk"))
        hook(app, "004-PreToolUse.json", transcript_path=str(t))  # SID's: takes the change
        wait_until(lambda: _offset(app, t) == t.stat().st_size, 60, what="t read")
        assert deferred == [] and quiet.pending() == []
    finally:
        app.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch (held) is Linux's")
def test_a_file_beside_the_transcript_made_while_the_watch_is_held_is_followed_across_a_restart(
        home: Path, worktree: Path, tmp_path: Path) -> None:
    """Field case B23 while hooks keep coming: the session writes to another file beside its
    transcript while the watch is held, and the watch is set up again (``hookd tail`` of a file
    elsewhere) before any hook takes the change: what the kernel held is handed over as the old
    watch's last batch, the new file's rows are checked for a session id, and it is followed
    (a reviewer found those events closed with the old inotify fd)."""
    folder = tmp_path / "projects"
    folder.mkdir()
    t = folder / f"{SID}.jsonl"
    t.write_bytes(b"")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    v = elsewhere / "v.jsonl"
    v.write_bytes(b"")
    app = InProc(home, settings=Settings(tail_quiet_ms=3_600_000)).start()
    try:
        spawn_with_transcript(app, worktree, t)  # holds the watch for an hour
        wait_until(lambda: _offset(app, t) == 0, 60, what="t followed")
        tailer: Any = app.core.tailer  # type: ignore[attr-defined]
        assert tailer._gate.held  # noqa: SLF001
        beside = folder / "after-compaction.jsonl"
        append(beside, _row("u-after-compaction"))
        tail(app, v)  # the watch set up again, no hook in between
        wait_until(lambda: str(beside) in tailer.targets(), 60, what="the file beside followed")
        wait_until(lambda: _offset(app, beside) == beside.stat().st_size, 60, what="its rows read")
    finally:
        app.stop()
