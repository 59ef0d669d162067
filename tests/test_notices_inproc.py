"""The agent asking for attention itself (issue 21, moment 7): Claude Code 2.1.332's
SendUserMessage (brief mode, as recorded from the real binary:
fixtures/claude-code/2.1.332/print-brief-send-user-message) and PushNotification (not offered
offline: payloads built from the binary's schema, docs/harness-claude-code.md "The agent asking
for attention"), through the adapter, the core (in process, tests/inproc.py), the lane, the
notifier's rule ``agent_notified`` and its setting, and the CLI's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hookd.harness import claude_code as cc
from hookd.harness.base import AttentionAsked, ToolFinished
from hookd.models import ConfigError, Event
from hookd.watchers.notify_agent import agent_alert, selected
from hookd.watchers.notify_config import load_config

from .conftest import wait_until
from .test_lanes import Agent, _notified, run_alerting_agent

pytestmark = pytest.mark.inproc

BRIEF = Path(__file__).resolve().parent.parent / "fixtures" / "claude-code" / "2.1.332" / "print-brief-send-user-message" / "hooks"
SID = "00000000-0000-4000-8000-000000000001"
BRIEF_ID = "toolu_01BRIEF000000000000000001"
TEXT = "The build is green; 2 flaky tests need your call before I merge."
PUSH_ID = "toolu_01PUSH0000000000000000001"
PUSH_TEXT = "Deploy finished: 3 tests failing on main"


def hook(name: str, **changes: Any) -> dict[str, Any]:
    p = json.loads((BRIEF / name).read_bytes())
    p.update(changes)
    return p


def push_post(message: str = PUSH_TEXT, **changes: Any) -> dict[str, Any]:
    """A PushNotification PostToolUse as 2.1.332 would send it: the recorded SendUserMessage
    PostToolUse with the tool's name, its input schema (``message``, ``status`` "proactive"
    optional) and its output schema (``message``, ``pushSent``, ``localSent``,
    ``disabledReason``, ``sentAt``), as ``strings`` on the binary shows them."""
    p = hook("004-PostToolUse.json", tool_name="PushNotification", tool_use_id=PUSH_ID,
             tool_input={"message": message, "status": "proactive"},
             tool_response={"message": message, "pushSent": False, "localSent": True,
                            "disabledReason": "no_transport", "sentAt": "2000-01-01T00:00:01.000Z"})
    p.update(changes)
    return p


# --- the adapter --------------------------------------------------------------------------


def test_a_message_to_the_user_is_observed_once_after_it_ran() -> None:
    post = cc.observe(cc.parse((BRIEF / "004-PostToolUse.json").read_bytes()))
    assert post == [ToolFinished(tool_use_id=BRIEF_ID, tool_name="SendUserMessage",
                                 tool_input={"message": TEXT, "status": "proactive"}, failed=False, error=None),
                    AttentionAsked(tool_use_id=BRIEF_ID, tool_name="SendUserMessage", message=TEXT,
                                   status="proactive", urgent=True)]
    # its PreToolUse is not (one call, one record)
    assert cc.observe(cc.parse((BRIEF / "003-PreToolUse.json").read_bytes())) == []


def test_a_reply_a_push_and_a_call_without_text() -> None:
    normal = hook("004-PostToolUse.json", tool_input={"message": "Done: see the diff.", "status": "normal"})
    [_, ob] = cc.observe(cc.parse(json.dumps(normal).encode()))
    assert isinstance(ob, AttentionAsked) and ob.status == "normal" and not ob.urgent
    [_, ob] = cc.observe(cc.parse(json.dumps(push_post()).encode()))
    assert ob == AttentionAsked(tool_use_id=PUSH_ID, tool_name="PushNotification", message=PUSH_TEXT,
                                status="proactive", urgent=True)
    # a push without status is still a push (the field is optional in its schema)
    [_, ob] = cc.observe(cc.parse(json.dumps(push_post(tool_input={"message": "hi"})).encode()))
    assert isinstance(ob, AttentionAsked) and ob.status is None and ob.urgent
    # no message (the schema requires one): nothing to tell anyone
    [only] = cc.observe(cc.parse(json.dumps(push_post(tool_input={"message": ""})).encode()))
    assert isinstance(only, ToolFinished)
    # the call refused: 2.1.332 offline ("No such tool available") gives no PostToolUse; a
    # PostToolUseFailure is not a message that reached anyone
    failed = dict(push_post(), hook_event_name="PostToolUseFailure", error="boom")
    assert [type(o) for o in cc.observe(cc.parse(json.dumps(failed).encode()))] == [ToolFinished]


# --- the notifier's setting ----------------------------------------------------------------


def test_agent_messages_setting(tmp_path: Path) -> None:
    home = type("H", (), {"root": str(tmp_path)})()
    assert load_config(home, env={}).agent_messages == "proactive"
    (tmp_path / "config.toml").write_text('[notify]\nagent_messages = "all"\n')
    assert load_config(home, env={}).agent_messages == "all"
    assert load_config(home, env={"HOOKD_NOTIFY_AGENT_MESSAGES": "off"}).agent_messages == "off"
    (tmp_path / "config.toml").write_text('[notify]\nagent_messages = "loud"\n')
    with pytest.raises(ConfigError, match=r"notify.agent_messages must be one of proactive, all, off \(got 'loud'\)"):
        load_config(home, env={})
    with pytest.raises(ConfigError, match="HOOKD_NOTIFY_AGENT_MESSAGES"):
        load_config(type("H", (), {"root": str(tmp_path / "none")})(), env={"HOOKD_NOTIFY_AGENT_MESSAGES": "yes"})
    assert selected({"urgent": True}, "proactive") and not selected({"urgent": False}, "proactive")
    assert selected({"urgent": False}, "all") and not selected({"urgent": True}, "off")


def test_the_alert_reads_as_the_agents_words() -> None:
    ev = Event(seq=7, kind="agent_notified", builder="b1", session_id=SID, at=1000.0,
               data={"tool_use_id": PUSH_ID, "tool_name": "PushNotification", "message": "line one\nline two\x1b[31m",
                     "status": "proactive", "urgent": True, "via": "PostToolUse"})
    a = agent_alert(ev)
    assert (a.key, a.rule, a.builder, a.step, a.at) == ("agent:7", "agent_notified", "b1", 0, 1000.0)
    assert a.title == "hookd: b1's agent: line one"
    # each line shown safe (no escape reaches a terminal or a pager), the exact text in data
    assert a.message == "b1's agent says (PushNotification):\nline one\nline two\\x1b[31m\nReply: hookd send b1 \"...\""
    assert a.data["message"] == "line one\nline two\x1b[31m" and a.data["urgent"] is True


# --- in process: the core, the lane, the notifier -----------------------------------------


@pytest.fixture
def alerting(home: Path, worktree: Path, tmp_path: Path):
    yield from run_alerting_agent(home, worktree, tmp_path / "alerts.jsonl")


def test_a_message_is_recorded_shown_on_the_lane_and_notified_once(alerting: tuple[Agent, Path]) -> None:
    agent, out = alerting
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "003-PreToolUse.json"):
        agent.hook(hook(name))
    r = agent.app.hook(hook("004-PostToolUse.json"), "b1")
    assert r.status_code == 200 and r.content == b""  # fire and forget: the agent goes on at once
    [ev] = [e for e in agent.app.events() if e["kind"] == "agent_notified"]
    assert ev["builder"] == "b1" and ev["session_id"] == SID
    assert ev["data"] == {"tool_use_id": BRIEF_ID, "tool_name": "SendUserMessage", "message": TEXT,
                          "status": "proactive", "urgent": True, "via": "PostToolUse"}
    [alert] = wait_until(lambda: _notified(out), 60, what="the agent_notified notification")
    assert alert["rule"] == "agent_notified" and alert["key"] == f"agent:{ev['seq']}" and alert["step"] == 0
    assert alert["title"] == f"hookd: b1's agent: {TEXT}"
    assert alert["message"] == f"b1's agent says (SendUserMessage):\n{TEXT}\nReply: hookd send b1 \"...\""
    lane = wait_until(lambda: (x := agent.lane())["notified"] and x, 60, what="the message on the lane")
    assert lane["notified"] == TEXT
    assert lane["detail"].endswith(f"; the agent said: {TEXT}")
    assert agent.app.questions() == []  # nothing waits on a human
    # the same hook again (a retry of the same delivery is a duplicate), then the turn ends
    for name in ("005-PostToolBatch.json", "007-Stop.json"):
        agent.hook(hook(name))
    agent.wait_lane("idle")
    sent = wait_until(lambda: [e for e in agent.app.events() if e["kind"] == "notification_sent"], 60,
                      what="the notification_sent event")
    assert [(e["data"]["rule"], e["data"]["key"]) for e in sent] == [("agent_notified", f"agent:{ev['seq']}")]
    assert len(_notified(out)) == 1


def test_a_reply_is_recorded_but_not_notified_by_default(alerting: tuple[Agent, Path]) -> None:
    agent, out = alerting
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json"):
        agent.hook(hook(name))
    agent.hook(hook("004-PostToolUse.json", tool_use_id="toolu_01REPLY", tool_input={"message": "ok, done", "status": "normal"}))
    agent.hook(push_post())  # a push: always notified
    alerts = wait_until(lambda: _notified(out), 60, what="the push's notification")
    assert [a["data"]["tool_name"] for a in alerts] == ["PushNotification"]
    notified = [e["data"]["message"] for e in agent.app.events() if e["kind"] == "agent_notified"]
    assert notified == ["ok, done", PUSH_TEXT]  # both recorded
    lane = wait_until(lambda: (x := agent.lane())["notified"] == PUSH_TEXT and x, 60, what="the last message on the lane")
    assert lane["notified_at"] is not None


def test_a_subagents_message_names_it(alerting: tuple[Agent, Path]) -> None:
    agent, out = alerting
    agent.hook(hook("001-SessionStart.json"))
    agent.hook(push_post(agent_id="a1b2c3", agent_type="general-purpose"))
    [alert] = wait_until(lambda: _notified(out), 60, what="the subagent's notification")
    assert alert["title"] == f"hookd: b1's agent (a1b2c3): {PUSH_TEXT}"
    [ev] = [e for e in agent.app.events() if e["kind"] == "agent_notified"]
    assert ev["data"]["agent_id"] == "a1b2c3"
    assert agent.lane()["notified"] is None  # the lane is the main agent's


def test_events_line() -> None:
    from hookd.cli_events import EVENT_SUMMARY

    line = EVENT_SUMMARY["agent_notified"]
    assert line({"tool_name": "PushNotification", "tool_use_id": PUSH_ID, "message": PUSH_TEXT, "status": "proactive"},
                SID) == f"PushNotification {PUSH_ID} (proactive): {PUSH_TEXT}"
    assert line({"tool_name": "SendUserMessage", "tool_use_id": None, "message": "x" * 150, "status": None},
                SID) == "SendUserMessage -: " + "x" * 97 + "..."
    # one line per event: the message's lines joined
    assert line({"tool_name": "SendUserMessage", "message": "a\n\n  b", "status": "normal"}, SID) == \
        "SendUserMessage - (normal): a b"
