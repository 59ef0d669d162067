"""Faults of sessions, lanes and messages across session changes (issue 18, items 7, 11, 13,
14): a real daemon on a real socket, hooks run as Claude Code runs them (``sh -c "<command>"``,
``CLAUDE_PID`` in their environment), and, for the clock, the core over a real SQLite file
with an injected clock."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from hookd.daemonproc import DaemonProcess

from .conftest import TUI, events, hookd_cli, questions, wait_until
from .test_lanes import FAST, Agent

SID = "346f6e3a-edc5-468f-856d-23ceddca3ede"
ASK = "toolu_01ASK0000000000000000001"


def payload(name: str, **changes: Any) -> dict[str, Any]:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    return p


#: Claude Code 2.1.332's idle notification, as its TUI sends it once a turn has ended and
#: ``messageIdleNotifThresholdMs`` passed (tests/e2e/test_sessions_e2e.py records it)
IDLE_PROMPT = {"hook_event_name": "Notification", "message": "Claude is waiting for your input",
               "notification_type": "idle_prompt"}


@pytest.fixture
def agent(home: Path, worktree: Path):
    d = DaemonProcess(home, env={**os.environ, **FAST}).start()
    a = Agent(home, worktree)
    yield a
    a.close()
    d.stop()
    d.kill()


# --- item 11: a Notification is not agent activity ------------------------------------------

def test_idle_prompt_notification_leaves_an_idle_lane_idle_and_it_still_stalls(agent: Agent) -> None:
    """The turn ended (Stop): the idle_prompt Notification that follows must not make the lane
    working, so a queued message the idle agent cannot receive still stalls it."""
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("002-UserPromptSubmit.json"))
    agent.hook(payload("012-Stop.json"))
    agent.wait_lane("idle")
    agent.hook(payload("009-Notification.json", **IDLE_PROMPT))
    assert [e["data"]["hook_event_name"] for e in events(agent.home) if e["kind"] == "hook_received"][-1] == "Notification"
    lane = agent.lane()
    assert lane["state"] == "idle" and lane["detail"] == "its turn ended", lane
    assert hookd_cli(agent.home, "send", "b1", "are you there?").returncode == 0
    lane = agent.wait_lane("stalled")
    assert "queued message" in lane["detail"]
    assert ("idle", "working") not in agent.changes()[1:]


# --- item 14: a transcript whose conversation rows carry no sessionId ------------------------

ROWS = [json.loads(x) for x in (TUI.parent / "transcript.jsonl").read_text().splitlines()]


def _strip(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("sessionId", "session_id")}


@pytest.mark.parametrize("named", ["by its file name", "by another row"])
def test_transcript_rows_without_session_id_take_the_files_session(home: Path, tmp_path: Path,
                                                                  daemon: DaemonProcess, named: str) -> None:
    """Conversation rows with no sessionId: the question they show belongs to the session the
    file's name gives (``<session id>.jsonl``) or that another of its rows names; never null."""
    sid = "0b7c1f9e-3a52-4d8e-9f6a-2c4d8e1a7b30"
    if named == "by its file name":
        t, rows = tmp_path / f"{sid}.jsonl", [_strip(r) for r in ROWS]
    else:  # only a bookkeeping row at the end names the session
        t = tmp_path / "exported.jsonl"
        rows = [_strip(r) for r in ROWS if r.get("type") in ("user", "assistant")] + [{"type": "last-prompt", "sessionId": sid}]
    t.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert hookd_cli(home, "spawn", "b1", "--settings-file", str(tmp_path / "b1.json")).returncode == 0
    r = hookd_cli(home, "tail", str(t), "--builder", "b1")
    assert r.returncode == 0, r.stderr
    q = wait_until(lambda: next((q for q in questions(home) if q["id"] == ASK and q["state"] == "answered"), None), 10,
                   what="the question read from the transcript")
    assert q["session_id"] == sid, q
    evs = [e for e in events(home) if e["kind"] in ("question_pending", "question_resolved", "session_started")]
    assert evs and all(e["session_id"] == sid for e in evs), evs
    client = daemon.client()
    try:
        [tailed] = client.get("/v1/transcripts")
    finally:
        client.close()
    assert tailed["session_id"] == sid


# --- item 14: adoption proof that reaches the transcript after the Stop ----------------------

def test_adoption_proof_written_after_the_stop_adopts_and_the_message_is_never_offered_again(
        home: Path, worktree: Path, tmp_path: Path) -> None:
    """The Stop looks for proof in the transcript and finds none yet (Claude Code logs the
    request that carried the message later): when the tailer reads the proof, the message is
    adopted (via transcript) and no later boundary offers it again (redelivery after 1 ms)."""
    from .test_inbox import Builder

    d = DaemonProcess(home, env={**os.environ, "HOOKD_REDELIVER_AFTER_S": "0.001"}).start()
    try:
        t = tmp_path / f"{SID}.jsonl"
        t.write_text("")
        b = Builder(home, worktree)
        assert b.hook(payload("001-SessionStart.json", transcript_path=str(t))) == ""
        b.send("prove it later")
        ctx = b.context(payload("005-PostToolUse.json", transcript_path=str(t)))
        assert ctx and "[human msg m-1 " in ctx
        # the Stop's read finds no proof yet (the Stop may offer m-1 again: redelivery after 1 ms)
        b.hook(payload("012-Stop.json", transcript_path=str(t)))
        assert b.inbox()["m-1"]["state"] == "delivered"
        blob = {"type": "api-request-blob", "hash": "h1", "sessionId": SID, "message": {"role": "user", "content": [
            {"type": "text", "text": f"PostToolUse:Bash hook additional context: {ctx}"}]}}
        with t.open("a") as f:
            f.write(json.dumps(blob) + "\n" + json.dumps({"type": "api-request", "sessionId": SID, "tail": ["h1"]}) + "\n")
        m = wait_until(lambda: (m := b.inbox()["m-1"])["state"] == "adopted" and m, 10, what="adoption from the tailer")
        assert m["adopted_via"] == "transcript"
        assert b.hook(payload("005-PostToolUse.json", transcript_path=str(t))) == ""  # never again
        assert b.hook(payload("012-Stop.json", transcript_path=str(t))) == ""
        assert b.inbox()["m-1"]["deliveries"] == m["deliveries"]
    finally:
        d.stop()
