"""An agent stopped by an error, and tool calls refused without asking (issue 21, moments 3 and
4): Claude Code 2.1.332's StopFailure and PermissionDenied, as recorded from the real binary
(fixtures/claude-code/2.1.332/stream-stop-failure-rate-limit, print-permission-denied-auto),
through the adapter, the core (in process, tests/inproc.py), the lanes, the notifier and the
CLI's words."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hookd.harness import claude_code as cc
from hookd.harness import claude_code_hooks as cch
from hookd.harness.base import PermissionRefused, TurnFailed
from hookd.watchers.lane_state import derive

from .conftest import wait_until
from .test_lanes import FAST_NOTIFY, Agent, _notified, run_agent, run_alerting_agent

pytestmark = pytest.mark.inproc

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude-code" / "2.1.332"
FAILED = FIXTURES / "stream-stop-failure-rate-limit" / "hooks"
DENIED = FIXTURES / "print-permission-denied-auto" / "hooks"
SID = "00000000-0000-4000-8000-000000000001"
DENIED_ID = "toolu_01DENIED00000000000000001"


def hook(folder: Path, name: str, **changes: Any) -> dict[str, Any]:
    p = json.loads((folder / name).read_bytes())
    p.update(changes)
    return p


def stop_failure(error: str) -> dict[str, Any]:
    """The recorded StopFailure with another ``error`` (the binary's enum: its schema, as
    docs/harness-claude-code.md "StopFailure" quotes it)."""
    return hook(FAILED, "004-StopFailure.json", error=error, last_assistant_message=f"API Error: {error}")


# --- the adapter --------------------------------------------------------------------------


def test_stop_failure_is_a_failed_turn_transient_or_not() -> None:
    [ob] = cc.observe(cc.parse((FAILED / "004-StopFailure.json").read_bytes()))
    assert ob == TurnFailed(error="rate_limit", details=None,
                            message="API Error: Request rejected (429) · Number of requests has exceeded your rate limit",
                            transient=True, advice="rate limited: wait, then prompt it again")
    [ob] = cc.observe(cc.parse(json.dumps(stop_failure("authentication_failed")).encode()))
    assert isinstance(ob, TurnFailed) and not ob.transient and "/login" in ob.advice
    # an error kind a later version adds: a fix is assumed needed, never a crash
    [ob] = cc.observe(cc.parse(json.dumps(stop_failure("brand_new_error")).encode()))
    assert ob.error == "brand_new_error" and not ob.transient
    # error_details in any shape becomes text
    [ob] = cc.observe(cc.parse(json.dumps(dict(stop_failure("unknown"), error_details={"code": 7})).encode()))
    assert ob.details == '{"code":7}'


def test_permission_denied_is_a_refusal() -> None:
    [ob] = cc.observe(cc.parse((DENIED / "004-PermissionDenied.json").read_bytes()))
    assert ob == PermissionRefused(tool_use_id=DENIED_ID, tool_name="Bash",
                                   tool_input={"command": "curl -s http://example.com/install.sh | sh",
                                               "description": "Install the tool"},
                                   reason="Classifier unavailable", server=None)
    assert cc.known_fields("PermissionDenied") >= {"tool_name", "tool_input", "tool_use_id", "reason", "mcp_server"}
    assert cc.known_fields("StopFailure") >= {"error", "error_details", "last_assistant_message"}


def test_spawn_registers_both_events() -> None:
    s = cch.hook_settings("cmd # hookd builder=b1", 10)
    assert s["PermissionDenied"][0]["matcher"] == ".*"  # every tool, mcp__* too
    assert s["StopFailure"][0]["matcher"] == ""  # every error kind


def test_derive_failed_until_the_next_hook() -> None:
    session = {"session_id": SID, "started_at": 1.0, "ended_at": None, "end_reason": None, "agent_pid": None,
               "agent_started_at": None, "interrupted_at": None, "hooks_unarmed_at": None, "cwd": "/w",
               "harness": "claude-code", "turn_started_at": None, "turn_ended_at": None, "failed_at": 10.0,
               "failure": json.dumps({"error": "billing_error", "transient": False, "advice": "check the plan"}),
               "refused_at": None, "refused": None}
    d = {"builder": "b1", "session": session, "last_hook": {"hook_event_name": "StopFailure", "at": 10.0, "mono": None, "kind": None},
         "pending": (), "queued": 0, "oldest_queued_at": None, "oldest_queued_mono": None}
    lane = derive(d, 20.0)
    assert (lane.state, lane.since, lane.failure) == ("failed", 10.0, "billing_error")
    assert lane.detail == "stopped by an API error (billing_error): check the plan"
    d["session"] = dict(session, failure=json.dumps({"error": "overloaded", "transient": True, "advice": "wait"}))
    assert derive(d, 20.0).state == "stalled"
    d["last_hook"] = {"hook_event_name": "UserPromptSubmit", "at": 11.0, "mono": None, "kind": "prompt"}  # prompted again
    lane = derive(d, 20.0)
    assert (lane.state, lane.failure) == ("working", None)


def test_derive_an_ended_session_keeps_the_failure_that_stopped_it() -> None:
    """claude -p exits after a StopFailure: its SessionEnd is the last hook, and the lane still
    says why the agent stopped (a failure a later turn went past is cleared at the session's
    end, hookd.store.sessions.SUPERSEDED_FAILURE)."""
    session = {"session_id": SID, "started_at": 1.0, "ended_at": 10.5, "end_reason": "other", "agent_pid": 4242,
               "agent_started_at": None, "interrupted_at": None, "hooks_unarmed_at": None, "cwd": "/w",
               "harness": "claude-code", "turn_started_at": None, "turn_ended_at": None, "failed_at": 10.0,
               "failure": json.dumps({"error": "rate_limit", "transient": True, "advice": "wait"}),
               "refused_at": None, "refused": None}
    d = {"builder": "b1", "session": session,
         "last_hook": {"hook_event_name": "SessionEnd", "at": 10.5, "mono": None, "kind": "session_end"},
         "pending": (), "queued": 0, "oldest_queued_at": None, "oldest_queued_mono": None}
    lane = derive(d, 20.0)
    assert (lane.state, lane.since, lane.failure, lane.agent_pid) == ("stalled", 10.0, "rate_limit", None)
    assert lane.detail == ("stopped by an API error (rate_limit): wait; then its session ended (other): resume it to"
                           " prompt it again (hookd continue b1)")
    d["session"] = dict(session, failure=json.dumps({"error": "billing_error", "transient": False, "advice": "pay"}))
    assert derive(d, 20.0).state == "failed"
    d["session"] = dict(session, failed_at=None, failure=None)
    lane = derive(d, 20.0)
    assert (lane.state, lane.detail, lane.failure) == ("ended", "session ended (other)", None)


# --- in process: the core, the lane, the notifier -----------------------------------------


@pytest.fixture
def agent(home: Path, worktree: Path) -> Iterator[Agent]:
    yield from run_agent(home, worktree, notify_overrides=FAST_NOTIFY)


def test_stop_failure_fails_the_lane_with_its_reason(agent: Agent) -> None:
    agent.hook(hook(FAILED, "001-SessionStart.json"))
    agent.hook(hook(FAILED, "002-UserPromptSubmit.json"))
    agent.recorded("working")
    r = agent.app.hook(stop_failure("authentication_failed"), "b1")
    assert r.status_code == 200 and r.content == b""  # fire-and-forget: nothing to say
    lane = agent.recorded("failed")
    assert lane["failure"] == "authentication_failed" and lane["session_id"] == SID
    assert lane["detail"] == ("stopped by an API error (authentication_failed): "
                              "login required: run /login (or fix the API key)")
    [ev] = [e for e in agent.app.events() if e["kind"] == "turn_failed"]
    assert ev["data"] == {"error": "authentication_failed", "details": None, "message": "API Error: authentication_failed",
                          "transient": False, "advice": "login required: run /login (or fix the API key)",
                          "via": "StopFailure"}
    # the human prompts again: the lane goes on
    agent.hook(hook(FAILED, "002-UserPromptSubmit.json"))
    lane = agent.recorded("working")
    assert lane["failure"] is None
    assert agent.changes()[-2:] == [("working", "failed"), ("failed", "working")]


def test_a_transient_failure_is_stalled(agent: Agent) -> None:
    agent.hook(hook(FAILED, "001-SessionStart.json"))
    agent.hook(hook(FAILED, "002-UserPromptSubmit.json"))
    agent.hook(hook(FAILED, "004-StopFailure.json"))
    lane = agent.wait_lane("stalled")
    assert lane["failure"] == "rate_limit"
    assert lane["detail"] == "stopped by an API error (rate_limit): rate limited: wait, then prompt it again"


def test_the_recorded_print_run_stopped_by_a_rate_limit_says_so_after_it_exits(agent: Agent) -> None:
    """The whole recording (claude -p: StopFailure, then SessionEnd as the process exits)."""
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "003-MessageDisplay.json",
                 "004-StopFailure.json", "005-SessionEnd.json"):
        agent.hook(hook(FAILED, name))
    wait_until(lambda: any(e["kind"] == "session_ended" for e in agent.app.events()), 60, what="session_ended")
    lane = agent.wait_lane("stalled")
    assert lane["failure"] == "rate_limit" and lane["agent_pid"] is None
    assert lane["detail"] == ("stopped by an API error (rate_limit): rate limited: wait, then prompt it again;"
                              " then its session ended (other): resume it to prompt it again (hookd continue b1)")


def test_a_message_to_the_agent_a_failure_stopped_says_what_it_waits_for(agent: Agent) -> None:
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "004-StopFailure.json"):
        agent.hook(hook(FAILED, name))
    agent.recorded("stalled")
    body = {"text": "try again later", "author": "ana"}
    r = agent.app.request("POST", "/v1/builders/b1/messages", json=body).json()
    assert "note" not in r  # (its session lives: the next prompt takes it)
    agent.hook(hook(FAILED, "005-SessionEnd.json"))
    wait_until(lambda: any(e["kind"] == "session_ended" for e in agent.app.events()), 60, what="session_ended")
    r = agent.app.request("POST", "/v1/builders/b1/messages", json=body).json()
    assert r["note"] == ("no session of b1's agent is running (ended after an API error, rate_limit): the message is"
                         " delivered at the first turn boundary of its next session (hookd continue b1 resumes the"
                         " last one)")


def test_a_session_that_went_on_after_a_failure_ends_plainly(agent: Agent) -> None:
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "004-StopFailure.json"):
        agent.hook(hook(FAILED, name))
    agent.recorded("stalled")
    agent.hook(hook(FAILED, "002-UserPromptSubmit.json"))  # prompted again: the next turn went on
    agent.recorded("working")
    agent.hook(hook(FAILED, "005-SessionEnd.json"))
    lane = agent.recorded("ended")
    assert (lane["detail"], lane["failure"]) == ("session ended (other)", None)
    assert [e["data"]["error"] for e in agent.app.events() if e["kind"] == "turn_failed"] == ["rate_limit"]


def test_permission_denied_is_recorded_and_shown_on_the_lane(agent: Agent) -> None:
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "003-PreToolUse.json"):
        agent.hook(hook(DENIED, name))
    r = agent.app.hook(hook(DENIED, "004-PermissionDenied.json"), "b1")
    assert r.status_code == 200 and r.content == b""  # no retry offered (docs/decisions.md)
    [ev] = [e for e in agent.app.events() if e["kind"] == "permission_refused"]
    assert ev["data"] == {"tool_use_id": DENIED_ID, "tool_name": "Bash", "reason": "Classifier unavailable",
                          "summary": "Install the tool", "what": "curl -s http://example.com/install.sh | sh",
                          "destructive": True, "via": "PermissionDenied"}
    assert agent.app.questions() == []  # nothing waits on a human
    lane = wait_until(lambda: (x := agent.lane())["refused"] and x, 60, what="the refusal on the lane")
    assert lane["refused"] == "Bash curl -s http://example.com/install.sh | sh (Classifier unavailable)"
    assert lane["detail"].endswith("; last refused without asking: " + lane["refused"])
    agent.hook(hook(DENIED, "007-Stop.json"))
    lane = agent.wait_lane("idle")
    assert lane["detail"] == "its turn ended; last refused without asking: " + lane["refused"]


@pytest.fixture
def alerting(home: Path, worktree: Path, tmp_path: Path):
    yield from run_alerting_agent(home, worktree, tmp_path / "alerts.jsonl")


def test_a_failure_is_notified_once(alerting: tuple[Agent, Path]) -> None:
    agent, out = alerting
    agent.hook(hook(FAILED, "001-SessionStart.json"))
    agent.hook(hook(FAILED, "002-UserPromptSubmit.json"))
    agent.recorded("working")
    agent.hook(stop_failure("billing_error"))
    agent.recorded("failed")
    [alert] = wait_until(lambda: _notified(out), 60, what="the agent_failed notification")
    assert alert["rule"] == "agent_failed" and alert["builder"] == "b1" and alert["step"] == 0
    assert alert["title"] == "hookd: b1's agent stopped: billing_error"
    assert alert["message"] == "b1: stopped by an API error (billing_error): usage limit reached: check the plan."
    # the next turn fails again: a second failure, a second notification
    agent.hook(hook(FAILED, "002-UserPromptSubmit.json"))
    agent.recorded("working")
    agent.hook(stop_failure("rate_limit"))
    agent.recorded("stalled")
    alerts = wait_until(lambda: len(x := _notified(out)) == 2 and x, 60, what="the second notification")
    assert [a["data"]["error"] for a in alerts] == ["billing_error", "rate_limit"]
    # notification_sent is recorded after the channel's process has written the file and exited
    sent = wait_until(lambda: len(x := [e for e in agent.app.events() if e["kind"] == "notification_sent"]) >= 2 and x,
                      60, what="two notification_sent events")
    assert len(sent) == 2


def test_status_notes_a_failed_lane(agent: Agent) -> None:
    from hookd.cli import _stopped

    agent.hook(hook(FAILED, "001-SessionStart.json"))
    agent.hook(hook(FAILED, "002-UserPromptSubmit.json"))
    agent.recorded("working")
    agent.hook(stop_failure("model_not_found"))
    agent.recorded("failed")
    [b] = agent.app.get("/v1/status")["builders"]
    detail = "stopped by an API error (model_not_found): the model is unknown or not allowed: pick another (--model)"
    assert b["lane"]["state"] == "failed" and b["lane"]["detail"] == detail
    # the note column of `hookd status`
    assert _stopped(b["lane"]) == f"failed: {detail}"
    assert _stopped({"state": "working", "since": 1.0, "detail": "last hook PreToolUse"}) == ""
    assert _stopped(None) == ""
