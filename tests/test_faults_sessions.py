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
