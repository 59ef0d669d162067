"""`hookd send --session` / `--agent`, in process: a scope hookd never saw is refused (it would
never be delivered), a message for a subagent or a session says what it waits for, and one for a
subagent that finished (or a session hookd has no row of) is not counted as its builder's queue:
no ``stalled`` lane, no ``idle_with_messages`` alert for it. And what a message waits for when
its builder's only run ended before its first hook: ``hookd run``, never a ``hookd continue``
that would be refused. (A fresh user's trial with the real Claude Code found each.)"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from hookd.settings import Settings

from .conftest import LOCAL_TIME, wait_until
from .inproc import InProc
from .test_lanes import Agent, _notified, headless_run_ended, run_agent
from .test_subagents import AGENT, SID, hook, start_subagent

pytestmark = pytest.mark.inproc

SUB = f"b1's subagent {AGENT} (general-purpose)"


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
    # an empty one (a script's empty variable) is a bad request, not an unknown one
    r = send(agent, "E", agent_id="")
    assert (r.status_code, r.json()["error"]) == (400, {"code": "bad_request", "message": (
        "the agent to send to is empty: give its id, or leave it out")})
    assert agent.app.inbox("b1") == []
    assert not [e for e in agent.app.events() if e["kind"] == "inbox_queued"]


def test_a_message_for_a_running_subagent_says_its_next_tool_boundary(agent: Agent) -> None:
    """Not the builder's idle note (its main agent's turn ended: the subagent runs on in the
    background): the subagent takes it when its current tool call ends."""
    start_subagent(agent)  # (its Bash call runs)
    agent.hook(hook("013-Stop.json"))  # the main agent's turn ends
    agent.wait_lane("idle")
    r = sent(agent, "also run the linter", agent_id=AGENT)
    assert r["note"] == f"{SUB} is running: the message is delivered at its next tool boundary (when its current tool call ends)"
    assert wait_until(lambda: agent.lane()["queued"] == 1, 60, what=lambda: f"the message counted: {agent.lane()}")
    r = agent.app.hook(hook("009-PostToolUse.json"), "b1", headers={"x-hookd-agent-pid": str(agent.proc.pid)})
    assert "also run the linter" in r.text
    [m] = agent.app.inbox("b1")
    assert (m["state"], m["delivered_via"]) == ("delivered", "PostToolUse")


def test_a_finished_subagents_message_is_not_the_builders_queue(alerting: tuple[Agent, Path]) -> None:
    """Accepted (a subagent may be resumed), said so, and left out of the lane's count: the
    lane stalls and alerts for its main agent's own message only. Nor is a message a daemon
    before this check queued for a session hookd never saw counted."""
    agent, out = alerting
    start_subagent(agent)
    for name in ("009-PostToolUse.json", "011-SubagentStop.json", "013-Stop.json"):
        agent.hook(hook(name))
    agent.wait_lane("idle")
    r = sent(agent, "for the helper", agent_id=AGENT)
    assert re.fullmatch(
        rf"{re.escape(SUB)} is not running \(it finished at {LOCAL_TIME}\): the message is delivered only if that"
        r" subagent is resumed, and hookd lanes does not count it \(hookd inbox cancel m-1 takes it back\)", r["note"])
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


def test_a_message_for_an_ended_session_says_it_waits_for_its_resume(agent: Agent) -> None:
    old, new = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
    for name in ("001-SessionStart.json", "017-SessionEnd.json"):
        agent.hook(hook(name, session_id=old))
    agent.wait_lane("ended")
    r = sent(agent, "for the old session", session_id=old)
    assert re.fullmatch(rf"session {old} of b1 ended at {LOCAL_TIME}: the message is delivered when that session is"
                        r" resumed \(hookd continue b1 resumes it\)", r["note"]), r["note"]
    agent.hook(hook("001-SessionStart.json", session_id=new))
    agent.wait_lane("idle")
    r = sent(agent, "for the old session again", session_id=old)
    assert re.fullmatch(rf"session {old} of b1 ended at {LOCAL_TIME}: the message is delivered only when that session"
                        r" is resumed, and hookd lanes does not count it for b1's current session \(hookd continue b1"
                        r" resumes its newest session, not this one; hookd inbox cancel m-2 takes it back\)", r["note"])
    assert agent.lane()["queued"] == 0


@pytest.mark.parametrize("status", ["1", "0"], ids=["failed", "exited-0"])
def test_a_builder_whose_only_run_ended_before_its_first_hook_is_told_hookd_run(
        alerting: tuple[Agent, Path], status: str) -> None:
    """No session to resume: `hookd continue` would be refused ("has no session to continue")."""
    agent, _ = alerting
    headless_run_ended(agent, status)
    agent.wait_lane("failed" if status == "1" else "ended")
    note = sent(agent, "hello")["note"]
    fix = "fix what stopped it, then " if status == "1" else ""
    assert note == (f"no session of b1's agent is running (its agent (pid {agent.proc.pid}) exited {status} before its"
                    " first hook: see /l/b1.log): the message is delivered at the first turn boundary of its next"
                    f" session (it has had no session to resume: {fix}hookd run b1 starts one)")
