"""`hookd send --session` / `--agent`, in process: a scope hookd never saw is refused (it would
never be delivered), and a message for a subagent that finished (or for a session hookd has no
record of) is not counted as its builder's queue: no ``stalled`` lane, no ``idle_with_messages``
alert for it. (A fresh user's trial with the real Claude Code found each.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from hookd.settings import Settings

from .conftest import wait_until
from .inproc import InProc
from .test_lanes import Agent, _notified, run_agent
from .test_subagents import AGENT, SID, hook, start_subagent

pytestmark = pytest.mark.inproc


@pytest.fixture
def agent(home: Path, worktree: Path) -> Iterator[Agent]:
    yield from run_agent(home, worktree)


@pytest.fixture
def alerting(home: Path, worktree: Path, tmp_path: Path) -> Iterator[tuple[Agent, Path]]:
    """A daemon that stalls an idle lane holding a queued message after 1 s and notifies a
    command channel appending each alert to a file (tests/test_lanes.py's ``alerting``)."""
    out = tmp_path / "alerts.jsonl"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[notify]\nquestion_after_s = 3600\nidle_inbox_after_s = 1\nsteps_s = [0, 3600]\n"
        f'[[notify.channel]]\ntype = "command"\ncommand = ["sh", "-c", "cat >> {out}; echo >> {out}"]\n')
    app = InProc(home, Settings(liveness_s=0.2)).start()
    a = Agent(app, worktree)
    yield a, out
    a.close()
    app.stop()


def send(agent: Agent, text: str, **scope: str) -> Any:
    """``hookd send b1 TEXT [--session SID] [--agent AID]``'s request; the response."""
    return agent.app.request("POST", "/v1/builders/b1/messages", json={"text": text, **scope})


def sent(agent: Agent, text: str, **scope: str) -> dict[str, Any]:
    r = send(agent, text, **scope)
    assert r.status_code == 201, r.text
    return r.json()


def test_a_session_or_subagent_hookd_never_saw_is_refused(agent: Agent) -> None:
    """Exit 1 in the API's one error shape (not_found), nothing queued: a message for them would
    wait forever, counted on the builder's lane as if its agent could take it."""
    start_subagent(agent)
    r = send(agent, "X", agent_id="a0000bogus")
    assert (r.status_code, r.json()) == (404, {"error": {"code": "not_found", "message": (
        "b1 has no subagent 'a0000bogus' that hookd knows (no hook of b1's came from it), so the message would never"
        f" be delivered; its running subagents: {AGENT} (general-purpose) (hookd lanes --json lists them)")}})
    r = send(agent, "Y", session_id="nosuchsession")
    assert (r.status_code, r.json()["error"]) == (404, {"code": "not_found", "message": (
        "b1 has no session 'nosuchsession' that hookd knows (no hook, transcript or run of b1 named it), so the"
        f" message would never be delivered; its newest session is {SID}")})
    # a subagent hookd knows, but not in that session
    agent.hook(hook("001-SessionStart.json", session_id="s-other"))
    r = send(agent, "Z", session_id="s-other", agent_id=AGENT)
    assert r.status_code == 404 and r.json()["error"]["message"].startswith(
        f"b1 has no subagent '{AGENT}' in session s-other that hookd knows")
    assert agent.app.inbox("b1") == []
    assert not [e for e in agent.app.events() if e["kind"] == "inbox_queued"]


def test_a_finished_subagents_message_is_not_the_builders_queue(alerting: tuple[Agent, Path]) -> None:
    """Accepted (a subagent may be resumed), and left out of the lane's count: the
    lane stalls and alerts for its main agent's own message only. Nor is a message a daemon
    before this check queued for a session hookd never saw counted."""
    agent, out = alerting
    start_subagent(agent)
    for name in ("009-PostToolUse.json", "011-SubagentStop.json", "013-Stop.json"):
        agent.hook(hook(name))
    agent.wait_lane("idle")
    sent(agent, "for the helper", agent_id=AGENT)
    at = time.time()
    agent.app.call(agent.app.core.store.write(lambda tx: tx.inbox.insert_message(
        builder="b1", session_id="nosuchsession", agent_id=None, author="alice", text="for no session", key=None, at=at)))
    sent(agent, "for the main agent")  # (its idle note)
    [alert] = wait_until(lambda: _notified(out), 60, what="the idle_with_messages alert")
    assert (alert["rule"], alert["data"]["queued"]) == ("idle_with_messages", 1)
    assert alert["title"] == "hookd: b1 is idle with 1 message(s) waiting"
    lane = agent.lane()
    assert (lane["state"], lane["queued"]) == ("stalled", 1)
    assert [m["state"] for m in agent.app.inbox("b1")] == ["queued"] * 3
