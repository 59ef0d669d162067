"""Subagents as lanes of their own (issue 21 moment 5): Claude Code 2.1.332's SubagentStart and
SubagentStop and a subagent's own hooks, as recorded from the real binary
(fixtures/claude-code/2.1.332/stream-subagent-permission-allowed), through the adapter, the
core (in process, tests/inproc.py), ``GET /v1/lanes`` and the CLI's words (``hookd lanes``,
``hookd questions``, ``hookd events``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from hookd.cli_events import _event_line
from hookd.cli_render import _interaction
from hookd.harness import claude_code as cc
from hookd.harness import claude_code_hooks as cch
from hookd.harness.base import SubagentStarted, SubagentStopped, TurnMovedOn
from hookd.models import Interaction
from hookd.watchers.notify_channels import interaction_alert

from .conftest import hookd_run, wait_until
from .test_lanes import Agent, run_agent

pytestmark = pytest.mark.inproc

HOOKS = Path(__file__).resolve().parent.parent / "fixtures" / "claude-code" / "2.1.332" / \
    "stream-subagent-permission-allowed" / "hooks"
SID = "00000000-0000-4000-8000-000000000001"
AGENT = "a0000000000000001"
SUB_BASH = "toolu_01SUBAGENTBASH0000000001"
TRANSCRIPT = f"/home/dev/.claude/projects/-home-dev-proj/{SID}/subagents/agent-{AGENT}.jsonl"


def hook(name: str, **changes: Any) -> dict[str, Any]:
    p = json.loads((HOOKS / name).read_bytes())
    p.update(changes)
    return p


# --- the adapter --------------------------------------------------------------------------


def test_subagent_start_and_stop_are_observed() -> None:
    assert cc.observe(cc.parse((HOOKS / "005-SubagentStart.json").read_bytes())) == [
        SubagentStarted(agent_id=AGENT, agent_type="general-purpose")]
    assert cc.observe(cc.parse((HOOKS / "011-SubagentStop.json").read_bytes())) == [
        TurnMovedOn(agent_id=AGENT, all_agents=False, outcome="dismissed", via="SubagentStop"),
        SubagentStopped(agent_id=AGENT, agent_type="general-purpose", transcript_path=TRANSCRIPT)]
    # a start with no agent id (not what 2.1.332 sends: its schema requires one) observes nothing
    assert cc.observe(cc.parse(json.dumps(hook("005-SubagentStart.json", agent_id=None)).encode())) == []
    assert "SubagentStart" not in cc.hook_kinds  # no component acts on the hook's kind
    assert cc.known_fields("SubagentStart") >= {"agent_id", "agent_type", "prompt_id"}


def test_spawn_registers_subagent_start() -> None:
    s = cch.hook_settings("cmd # hookd builder=b1", 10)
    assert s["SubagentStart"][0]["matcher"] == ""  # every kind of agent (its matcher: agent_type)
    assert "matcher" not in s["SubagentStop"][0]


# --- in process: the core, the lane, the CLI's words --------------------------------------


@pytest.fixture
def agent(home: Path, worktree: Path) -> Iterator[Agent]:
    yield from run_agent(home, worktree)


def events_of(agent: Agent, *kinds: str) -> list[dict[str, Any]]:
    return [e for e in agent.app.events() if e["kind"] in kinds]


def tail(e: dict[str, Any]) -> str:
    """``hookd events``' line of ``e`` from its kind on (its seq and time left out)."""
    line = click.unstyle(_event_line(e))
    return line[line.index(e["kind"]):]


def subagents(agent: Agent) -> list[dict[str, Any]]:
    return agent.lane()["subagents"]


def start_subagent(agent: Agent) -> None:
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "003-PreToolUse.json",
                 "004-PostToolUse.json", "005-SubagentStart.json", "007-PreToolUse.json"):
        agent.hook(hook(name))


def test_a_subagent_is_listed_on_its_builders_lane_while_it_runs(agent: Agent) -> None:
    start_subagent(agent)
    [s] = subagents(agent)
    assert {k: s[k] for k in ("builder", "session_id", "agent_id", "agent_type", "state", "waiting", "pending")} == {
        "builder": "b1", "session_id": SID, "agent_id": AGENT, "agent_type": "general-purpose", "state": "running",
        "waiting": "working", "pending": []}
    [ev] = events_of(agent, "subagent_started")
    assert ev["data"] == {"agent_id": AGENT, "agent_type": "general-purpose", "via": "SubagentStart"}
    # its hooks are not the main agent's activity: the main agent's lane reads its own
    assert agent.lane()["detail"] == "last hook PostToolUse"
    agent.hook(hook("011-SubagentStop.json"))
    assert subagents(agent) == []
    [ev] = events_of(agent, "subagent_ended")
    assert ev["data"] == {"agent_id": AGENT, "agent_type": "general-purpose", "reason": "stopped",
                          "via": "SubagentStop", "transcript_path": TRANSCRIPT}
    agent.hook(hook("011-SubagentStop.json"))  # a second copy records nothing
    assert len(events_of(agent, "subagent_ended")) == 1


def test_a_subagents_permission_prompt_is_attributed_and_answered(agent: Agent) -> None:
    start_subagent(agent)
    held = agent.app.submit_hook(hook("008-PermissionRequest.json"), "b1", route="/hold", deadline_ms=30_000,
                                 headers={"x-hookd-agent-pid": str(agent.proc.pid)})
    [p] = wait_until(lambda: agent.app.questions("pending"), 30, what="the subagent's permission prompt")
    assert (p["kind"], p["agent_id"], p["agent_type"], p["tool_name"]) == ("permission", AGENT, "general-purpose", "Bash")
    [s] = wait_until(lambda: [s for s in subagents(agent) if s["pending"]], 30, what="the subagent waiting")
    assert (s["waiting"], s["pending"]) == ("waiting_permission", [p["id"]])
    lane = agent.wait_lane("waiting_permission")  # the builder waits on a human too
    assert lane["pending"] == [p["id"]]
    head = click.unstyle(_interaction(p, p["created_at"] + 5)).splitlines()[0]
    assert head == f"{p['id']}  permission from b1's subagent general-purpose ({AGENT}), waiting 5s"
    [ev] = events_of(agent, "permission_pending")
    assert (ev["data"]["agent_id"], ev["data"]["agent_type"]) == (AGENT, "general-purpose")
    # answered exactly as the main agent's: the held hook carries the allow to the subagent
    r = agent.app.request("POST", f"/v1/interactions/{p['id']}/answer",
                          json={"decision": "allow", "input_hash": p["input_hash"], "surface": "cli"})
    assert r.status_code == 200, r.text
    reply = held.result(30)
    assert reply.status_code == 200
    assert json.loads(reply.content)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    agent.hook(hook("009-PostToolUse.json"))
    i = agent.app.interaction(p["id"])
    assert (i["state"], i["decision"], i["surface"]) == ("answered", "allow", "cli") and i["adopted_at"]
    [s] = subagents(agent)
    assert (s["waiting"], s["pending"]) == ("working", [])


def test_a_subagents_prompt_seen_without_its_type_takes_the_type_its_hooks_said(agent: Agent) -> None:
    """What a subagent asks, seen where its kind is not said (a transcript's row; here a hook
    without ``agent_type``), is attributed to the kind its SubagentStart said, not "unknown
    type" (a fresh user's trial)."""
    start_subagent(agent)
    untyped = {k: v for k, v in hook("008-PermissionRequest.json").items() if k != "agent_type"}
    agent.hook(untyped)
    [p] = agent.app.questions("pending")
    assert (p["agent_id"], p["agent_type"]) == (AGENT, "general-purpose")


def test_a_dialog_no_hook_holds_asked_for_a_subagents_call_is_the_subagents(agent: Agent) -> None:
    """A Notification names no agent: a dialog while a subagent's call is open (the main
    agent's Agent call is open too, under it) is the subagent's prompt (docs/harness-claude-code.md
    "A dialog no hook holds")."""
    start_subagent(agent)  # (its last hook: the subagent's PreToolUse of Bash)
    agent.hook({"hook_event_name": "Notification", "session_id": SID, "notification_type": "permission_prompt",
                "message": "Claude needs your permission", "cwd": "/home/dev/proj",
                "transcript_path": f"/home/dev/.claude/projects/-home-dev-proj/{SID}.jsonl"})
    [p] = agent.app.questions("pending")
    assert (p["kind"], p["agent_id"], p["agent_type"], p["tool_name"], p["held"]) == (
        "permission", AGENT, "general-purpose", "Bash", False)
    [s] = wait_until(lambda: [s for s in subagents(agent) if s["pending"]], 30, what="the subagent waiting")
    assert s["pending"] == [p["id"]]


def test_a_subagent_first_seen_by_another_hook_and_closed_by_the_session_end(agent: Agent) -> None:
    """hookd missed its SubagentStart (spawned while it ran): its first hook starts it; the
    session ends without its SubagentStop: it ends with the session."""
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "007-PreToolUse.json"):
        agent.hook(hook(name))
    [ev] = events_of(agent, "subagent_started")
    assert ev["data"] == {"agent_id": AGENT, "agent_type": "general-purpose", "via": "PreToolUse"}
    assert [s["agent_id"] for s in subagents(agent)] == [AGENT]
    agent.hook(hook("017-SessionEnd.json"))
    [ev] = events_of(agent, "subagent_ended")
    assert ev["data"] == {"agent_id": AGENT, "agent_type": "general-purpose", "reason": "session_ended",
                          "via": "SessionEnd"}
    assert agent.wait_lane("ended")["subagents"] == []
    # a hook of it after that (its agent continued): running again
    agent.hook(hook("007-PreToolUse.json"))
    assert [e["data"].get("restarted") for e in events_of(agent, "subagent_started")] == [None, True]


def test_hookd_lanes_and_events_print_the_subagents(agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    import hookd.cli_read as cli_read

    start_subagent(agent)
    agent.app.submit_hook(hook("008-PermissionRequest.json"), "b1", headers={"x-hookd-agent-pid": str(agent.proc.pid)})
    [p] = wait_until(lambda: agent.app.questions("pending"), 30, what="the subagent's permission prompt")
    lanes = wait_until(lambda: (x := agent.app.get("/v1/lanes")) and x[0]["subagents"][0]["pending"] and x, 30,
                       what="the lane with its waiting subagent")
    lane = lanes[0]
    now = lane["subagents"][0]["started_at"] + 75

    class Fixed:  # the daemon's answer, read at a fixed time
        def get(self, path: str, **params: Any) -> Any:
            assert path in ("/v1/lanes", "/v1/runs")
            return [dict(lane, since=now - 12, session_id="s-1")] if path == "/v1/lanes" else []

    monkeypatch.setattr(cli_read, "_client", lambda ctx: Fixed())
    monkeypatch.setattr(cli_read.time, "time", lambda: now)
    out = hookd_run(agent.app.home.root, "lanes")
    assert out.returncode == 0, out.stderr
    pid = p["id"]
    detail = f"permission {pid} is pending"
    assert lane["detail"] == detail
    assert out.stdout == "\n".join([
        "builder            lane                for      pending  queued    session    detail",
        "-----------------  ------------------  -----  ---------  --------  ---------  " + "-" * 67,
        f"b1                 waiting_permission  12s            1  0         s-1        {detail}",
        f"↳ general-purpose  waiting_permission  1m             1  -         -          b1's subagent {AGENT}; waiting on {pid}",
        ""]), out.stdout
    lines = [tail(e) for e in events_of(agent, "subagent_started")]
    assert lines == [f"subagent_started      b1 general-purpose {AGENT} (via SubagentStart)"]
    agent.hook(hook("017-SessionEnd.json"))
    [e] = events_of(agent, "subagent_ended")
    assert tail(e) == (
        f"subagent_ended        b1 general-purpose {AGENT}: its session ended first")


def test_a_subagent_of_a_dead_agent_is_not_listed(agent: Agent) -> None:
    start_subagent(agent)
    assert len(subagents(agent)) == 1
    agent.close()  # the agent's process is gone, no SessionEnd came
    lane = agent.wait_lane("dead")
    assert lane["subagents"] == []


def test_a_subagents_permission_prompt_is_notified_as_the_subagents() -> None:
    p = hook("008-PermissionRequest.json")
    i = Interaction(id="pr_1", kind="permission", builder="b1", session_id=SID, agent_id=AGENT, tool_name="Bash",
                    tool_use_id=None, state="pending", questions=None, answers=None, selections=None, surface=None,
                    warning=None, error=None, created_at=100.0, resolved_at=None, revision=1, input=p["tool_input"],
                    agent_type="general-purpose")
    alert = interaction_alert(i, 0, 2, 190.0, cc.present_tool("Bash", p["tool_input"]))
    assert alert.title == "hookd: b1's subagent general-purpose needs permission for Bash"
    assert alert.message.splitlines()[0] == (
        "b1's subagent general-purpose has been waiting 1 min 30 s for permission to run Bash: Touch a file.")


def test_hookd_watch_shows_a_lanes_subagents() -> None:
    from hookd.cli_watch import _frame, _View

    sub = {"builder": "b1", "session_id": SID, "agent_id": AGENT, "agent_type": "Explore", "state": "running",
           "started_at": 40.0, "waiting": "working", "pending": []}
    lane = {"builder": "b1", "state": "idle", "since": 90.0, "pending": [], "queued": 0, "detail": "its turn ended",
            "subagents": [sub]}
    frame = click.unstyle(_frame(_View(lanes=[lane]), 100.0, live=False))
    assert frame.splitlines()[:4] == [
        "builder    lane     for      pending  queued    detail",
        "---------  -------  -----  ---------  --------  -------------------------------",
        "b1         idle     10s            0  0         its turn ended",
        f"↳ Explore  working  1m             0  -         b1's subagent {AGENT}",
    ]
