"""Subagents as lanes of their own (issue 21 moment 5) against the real Claude Code 2.1.332 TUI
(tmux), offline.

The main agent calls the Agent tool; 2.1.332 runs the subagent in the background (the main
agent's turn ends while it works) with its own model requests (header
``x-claude-code-agent-id``: the fake API gives it its own script). The subagent's Bash call asks
for permission (manual mode); hookd holds that PermissionRequest hook, which carries the
subagent's ``agent_id`` and ``agent_type``. While it waits, ``hookd lanes`` lists the subagent
under its builder and ``hookd questions`` says it asked; ``hookd answer`` allows it; the
subagent's next model request carries the command's output. docs/harness-claude-code.md
"Subagents" has the facts.
"""

from __future__ import annotations

import json

import pytest

from .drivers import wait_until
from .test_answers_e2e import held, manual_tui, pending_permission, wait_held
from .test_claude_code_scenarios import (  # noqa: F401  (rig: fixture)
    about,
    bash_turn,
    rig,
    text_turn,
    tool_turn,
)

pytestmark = pytest.mark.e2e

AGENT_CALL = "toolu_01SUBE2EAGENT0000000001"
SUB_BASH = "toolu_01SUBE2EBASH00000000001"
SUB_CMD = "touch sub-probe && echo sub-touched-e2e"


def test_tui_subagent_permission_answered_remotely_reaches_the_subagent(rig, tmux_bin):  # noqa: F811
    r = rig({"turns": [tool_turn(AGENT_CALL, "Agent", {"description": "Touch a file", "prompt": "Touch it",
                                                       "subagent_type": "general-purpose"}),
                       text_turn("MAIN-HANDED-OFF")]},
            subagent_script={"turns": [bash_turn(SUB_BASH, SUB_CMD), text_turn("SUB-REPORT-E2E")]},
            builder="b-sub", form="worktree")
    with manual_tui(r, tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Delegate a touch")
        p = pending_permission(r)
        wait_held(r, p["id"])
        [sub_req] = r.api.messages_requests("subagent")
        agent_id = sub_req.agent_id
        assert (p["kind"], p["agent_id"], p["agent_type"], p["tool_name"]) == (
            "permission", agent_id, "general-purpose", "Bash")
        # the lane shows the subagent and what it waits on while it runs
        [lane] = json.loads(r.hookd.cli("lanes", "--json"))
        [s] = lane["subagents"]
        assert (s["agent_id"], s["agent_type"], s["state"], s["waiting"], s["pending"]) == (
            agent_id, "general-purpose", "running", "waiting_permission", [p["id"]])
        table = r.hookd.cli("lanes")
        assert "↳ general-purpose  waiting_permission" in table and f"b-sub's subagent {agent_id}; waiting on {p['id']}" in table
        shown = r.hookd.cli("questions")
        assert shown.splitlines()[0].startswith(f"{p['id']}  permission from b-sub's subagent general-purpose ({agent_id}), waiting ")
        out = r.hookd.cli("answer", p["id"], "--option", "allow")
        assert out == f"answered {p['id']} (permission, b-sub): allow; goes to the agent through its hook\n", out
        # the held hook's allow reached the subagent: the command ran, its output is in the
        # subagent's next model request
        nxt = wait_until(lambda: [q for q in r.api.messages_requests("subagent") if SUB_BASH in q.tool_results()], 30, 0.1,
                         "the subagent's request after its Bash call")
        assert nxt[0].tool_results()[SUB_BASH] == "sub-touched-e2e" and nxt[0].agent_id == agent_id
        assert (r.project / "sub-probe").exists()
        ev = r.wait_events(lambda ev: any(e["kind"] == "subagent_ended" for e in ev), "subagent_ended", timeout=30)
    assert held(r) == []
    [started] = [e for e in ev if e["kind"] == "subagent_started"]
    assert started["data"] == {"agent_id": agent_id, "agent_type": "general-purpose", "via": "SubagentStart"}
    [ended] = [e for e in ev if e["kind"] == "subagent_ended"]
    assert (ended["data"]["reason"], ended["data"]["via"]) == ("stopped", "SubagentStop")
    assert ended["data"]["transcript_path"].endswith(f"/subagents/agent-{agent_id}.jsonl")
    [i] = [q for q in r.questions() if q["id"] == p["id"]]
    assert (i["outcome"], i["surface"], i["delivered_via"]) == ("allowed", "cli", "PermissionRequest")
    [adopted] = about(ev, "answer_adopted", p["id"])
    assert adopted["data"]["via"] == "PostToolUse"
    assert json.loads(r.hookd.cli("lanes", "--json"))[0]["subagents"] == []
