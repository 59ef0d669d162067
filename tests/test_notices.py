"""The agent asking for attention itself, through a real daemon (issue 21, moment 7): the
recorded brief-mode hooks sent by the generated hook client, the notifier's ``command`` channel
(a real process getting the alert JSON on stdin, writing it to a file), nothing sent twice
across a restart, and what `hookd events` and `hookd lanes` print. In-process tests of the
adapter, the rule and its setting: tests/test_notices_inproc.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hookd.daemonproc import DaemonProcess

from .conftest import events, hookd_run, wait_until
from .test_answers import Rig
from .test_notices_inproc import BRIEF_ID, PUSH_TEXT, TEXT, hook, push_post
from .test_notify import _command_channel, _lines, write_config

pytestmark = pytest.mark.daemon


def test_the_agents_message_reaches_a_command_channel_once(home: Path, worktree: Path, tmp_path: Path) -> None:
    out = tmp_path / "alerts.jsonl"
    write_config(home, "[notify]\nquestion_after_s = 3600\n" + _command_channel(out))
    d = DaemonProcess(home).start()
    try:
        rig = Rig(home, worktree, hold=0)
        for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "003-PreToolUse.json"):
            rig.hook(hook(name))
        assert rig.hook(hook("004-PostToolUse.json")) == ""  # nothing for the agent to read: it goes on
        [alert] = wait_until(lambda: _lines(out), 60, what="the alert on the command channel")
        assert alert["rule"] == "agent_notified" and alert["builder"] == "b1"
        assert alert["title"] == f"hookd: b1's agent: {TEXT}"
        assert alert["data"]["message"] == TEXT and alert["data"]["tool_use_id"] == BRIEF_ID
        wait_until(lambda: any(e["kind"] == "notification_sent" for e in events(home)), 60, what="notification_sent")
        # `hookd events` and `hookd lanes`, as printed
        r = hookd_run(home, "events")
        [line] = [x for x in r.stdout.splitlines() if "+00:00 agent_notified " in x]
        assert line.split(" +00:00 ", 1)[1] == f"agent_notified        b1 SendUserMessage {BRIEF_ID} (proactive): {TEXT}"
        lanes = json.loads(hookd_run(home, "lanes", "--json").stdout)
        assert lanes[0]["notified"] == TEXT and lanes[0]["detail"].endswith(f"; the agent said: {TEXT}")
        # a restart resends nothing; the next message (a push) is sent
        d.stop()
        d = DaemonProcess(home).start()
        rig.hook(push_post())
        alerts = wait_until(lambda: len(x := _lines(out)) == 2 and x, 60, what="the push's alert")
        assert [a["data"]["message"] for a in alerts] == [TEXT, PUSH_TEXT]
        sent = wait_until(lambda: len(x := [e for e in events(home) if e["kind"] == "notification_sent"]) == 2 and x,
                          60, what="two notification_sent")
        assert {e["data"]["rule"] for e in sent} == {"agent_notified"}
    finally:
        d.stop()


def test_muted_messages_are_recorded_not_sent(home: Path, worktree: Path, tmp_path: Path) -> None:
    out = tmp_path / "alerts.jsonl"
    write_config(home, "[notify]\nquestion_after_s = 0.1\nagent_messages = \"off\"\n" + _command_channel(out))
    d = DaemonProcess(home).start()
    try:
        rig = Rig(home, worktree, hold=0)
        rig.hook(hook("001-SessionStart.json"))
        rig.hook(push_post())
        # a marker: a question's alert proves the rules ran after the push was recorded
        rig.hook(hook("003-PreToolUse.json", tool_name="AskUserQuestion", tool_use_id="toolu_01MARK",
                      tool_input={"questions": [{"question": "Go?", "header": "Go", "multiSelect": False,
                                                 "options": [{"label": "Yes", "description": "y"},
                                                             {"label": "No", "description": "n"}]}]}))
        alerts = wait_until(lambda: _lines(out), 60, what="the marker's alert")
        assert [a["rule"] for a in alerts] == ["question_pending"]
        assert [e["data"]["message"] for e in events(home) if e["kind"] == "agent_notified"] == [PUSH_TEXT]
    finally:
        d.stop()
