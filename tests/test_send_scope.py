"""`hookd send --session` / `--agent`, in process: a scope hookd never saw is refused (it would
never be delivered). (A fresh user's trial with the real Claude Code found it.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from .test_lanes import Agent, run_agent
from .test_subagents import AGENT, SID, hook, start_subagent

pytestmark = pytest.mark.inproc


@pytest.fixture
def agent(home: Path, worktree: Path) -> Iterator[Agent]:
    yield from run_agent(home, worktree)


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
