"""Asking without blocking, against the real Claude Code 2.1.332, offline: `hookd mcp`.

Every test spawns the builder with ``hookd spawn`` (so the ``.mcp.json`` entry and the
settings keys are the ones hookd generates, and Claude Code loads them from the worktree or
from ``--mcp-config``), runs ``claude -p`` against the scripted fake Messages API and asserts
on hookd's record and on what reached the model.

Facts of 2.1.332 these tests pin (see docs/decisions.md "Asking without blocking"):

* ``.mcp.json`` in the session's cwd plus ``enabledMcpjsonServers: ["hookd"]`` loads the
  server (``init.mcp_servers``: ``{"name": "hookd", "status": "connected", "source":
  "project"}``, or ``"pending"`` when the init message is written before the server's
  handshake ends, as on a loaded machine; the tool calls after it work either way);
  ``--mcp-config`` loads it as ``source: "dynamic"``.
* MCP tools are deferred behind ToolSearch: the first request names
  ``mcp__hookd__ask_user_async`` only in its text, not in ``tools``; a ``tool_use`` by that
  name is still executed (a real model would call ToolSearch first; nothing else is needed).
* ``permissions.allow: ["mcp__hookd"]`` is what lets ``-p`` in default permission mode call
  the tools (no denial, no PermissionRequest).
* A tool result with ``structured_output=False`` reaches the model as the plain text.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from .drivers import run_print
from .test_claude_code_scenarios import bash_turn, find_hook, hooks_of, of_kind, text_turn, tool_turn
from .test_inbox_e2e import hook_context, index_with_result, inbox_rig, injections, wait_file_cmd  # noqa: F401

pytestmark = pytest.mark.e2e

ASK = "mcp__hookd__ask_user_async"
AWAIT = "mcp__hookd__await_answers"
ASK_ID = re.compile(r"\bask_[0-9a-f]{12}\b")
QUESTION = "Which database should the prototype use?"
ANSWER = "sqlite: it is a prototype, MCP-ANSWER-5150"


def ask_turn(tool_id: str, question: str, options: list[str] | None = None) -> dict:
    return tool_turn(tool_id, ASK, {"question": question, **({"options": options} if options else {})})


def init_message(messages: list[dict]) -> dict:
    return next(m for m in messages if m.get("type") == "system" and m.get("subtype") == "init")


def assert_hookd_loaded(messages: list[dict], source: str) -> None:
    """Claude Code's init message lists hookd's MCP server from ``source``, connected or
    still connecting (``pending``: the init message does not wait for the handshake; whether
    it then connected is what the test's MCP tool calls show), never ``failed``."""
    entries = [e for e in init_message(messages)["mcp_servers"] if e.get("name") == "hookd"]
    assert [(e["source"], e["status"] in ("connected", "pending")) for e in entries] == [(source, True)], entries


def hookd_status(messages: list[dict]) -> str:
    """hookd's MCP server's status in Claude Code's init message (``connected``, ``pending``)."""
    [status] = [e["status"] for e in init_message(messages)["mcp_servers"] if e.get("name") == "hookd"]
    return status


def async_asks(r: Any) -> list[dict[str, Any]]:
    return [q for q in r.questions() if q["kind"] == "async"]


# ====================== 1. ask, keep working, the CLI answer arrives after the next tool call
ASK_1 = "toolu_01MCPASK00000000000000001"
WAIT_1 = "toolu_01MCPWAITBASH00000000001"
STEP_2 = "toolu_01MCPSTEP2BASH0000000001"


def test_agent_asks_over_mcp_keeps_working_and_the_cli_answer_reaches_the_model(inbox_rig, tmp_path):
    flag = tmp_path / "ANSWERED"
    r = inbox_rig({"turns": [ask_turn(ASK_1, QUESTION, ["postgres", "sqlite"]),
                             bash_turn(WAIT_1, wait_file_cmd(flag, "step-1")),
                             bash_turn(STEP_2, "echo step-2"),
                             text_turn("FINAL-MCP-1")]}, builder="b-mcp")
    mcp_entry = json.loads((r.project / ".mcp.json").read_text())["mcpServers"]["hookd"]
    assert mcp_entry["args"][-3:] == ["mcp", "--builder", "b-mcp"]
    run = r.start("Ask the human which database to use, then keep working")

    # The agent went on after asking: its next tool (a Bash that waits for the test) runs.
    r.wait_hook("PreToolUse", tool_use_id=WAIT_1, timeout=60)
    [q] = async_asks(r)
    iid = q["id"]
    assert q["state"] == "pending" and q["builder"] == "b-mcp"
    assert [x["question"] for x in q["questions"]] == [QUESTION]
    out = r.hookd.cli("answer", iid, "--text", ANSWER)
    assert iid in out
    flag.touch()
    res = run.join(timeout=90)
    assert res.result["result"] == "FINAL-MCP-1"
    sid = res.result["session_id"]

    assert_hookd_loaded(res.messages, "project")
    assert res.result["permission_denials"] == []

    main = r.api.main_requests()
    assert len(main) == 4, [m.tail_text()[-300:] for m in main]
    # hookd's tools are deferred (named to the model, never in a request's own tool list); the
    # first request names them when the server had connected by then (on a busy machine the
    # init message may still say pending: the ask's call below is then the proof)
    assert all(ASK not in [t.get("name") for t in m.body.get("tools", [])] for m in main)
    if hookd_status(res.messages) == "connected":
        assert ASK in main[0].text
    # the ask's result: the id at once, and the instruction to keep working
    ask_result = main[index_with_result(main, ASK_1)].tool_results()[ASK_1]
    assert set(ASK_ID.findall(ask_result)) == {iid}
    assert "keep working" in ask_result
    # the answer: in the request right after the next tool call, once, as that tool's context
    after = index_with_result(main, WAIT_1)
    assert after == 2 and main[after].tool_results()[WAIT_1] == "step-1"
    marker = f"[Answer to question {iid}]"
    assert injections(main, marker) == [after]
    ctx = hook_context(main[after], marker)
    assert "PostToolUse:Bash hook additional context:" in ctx
    assert ctx.index(marker) < ctx.index(QUESTION) < ctx.index(ANSWER)
    assert [m.text.count(marker) for m in main] == [0, 0, 1, 1]

    # hookd: the ask carries the session (CLAUDE_CODE_SESSION_ID), answered from the CLI;
    # the answer's inbox copy was delivered by that PostToolUse
    ev = r.events()
    [asked] = of_kind(ev, "human_input_requested")
    assert asked["data"]["id"] == iid and asked["data"]["async"] is True and asked["session_id"] == sid
    pre_ask = find_hook(ev, "PreToolUse", tool_use_id=ASK_1)
    assert pre_ask["data"]["tool_name"] == ASK and pre_ask["seq"] < asked["seq"]
    [answered] = [e for e in of_kind(ev, "interaction_answered") if e["data"]["id"] == iid]
    assert answered["data"]["surface"] == "cli"
    [d] = [e for e in of_kind(ev, "inbox_delivered") if e["data"]["via"] == "PostToolUse"]
    post = find_hook(ev, "PostToolUse", tool_use_id=WAIT_1)
    assert post["seq"] < d["seq"] < find_hook(ev, "PreToolUse", tool_use_id=STEP_2)["seq"]
    assert [x["state"] for x in async_asks(r)] == ["answered"]


# ================== 2. await_answers on a question nobody answers, in default permission mode
ASK_2 = "toolu_01MCPASK00000000000000002"
AWAIT_2 = "toolu_01MCPAWAIT0000000000000002"


def test_await_answers_with_nothing_answered_names_the_pending_id_in_default_mode(inbox_rig):
    r = inbox_rig({"turns": [ask_turn(ASK_2, "Nobody will answer this, right?"),
                             tool_turn(AWAIT_2, AWAIT, {"timeout_s": 2}),
                             text_turn("FINAL-MCP-2")]}, builder="b-await")
    # default permission mode: only the spawned allow rule lets -p call hookd's tools
    res = run_print("Ask, then wait briefly for the answer", r.project, r.env,
                    extra_args=("--permission-mode", "default"), timeout=90, claude_bin=r.claude_bin)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.result is not None and res.result["result"] == "FINAL-MCP-2"
    assert res.result["permission_denials"] == []

    [q] = async_asks(r)
    iid = q["id"]
    assert q["state"] == "pending" and q["session_id"] == res.result["session_id"]
    main = r.api.main_requests()
    assert len(main) == 3
    waited = main[2].tool_results()[AWAIT_2]
    assert waited.startswith(f"Still pending after waiting 2 s: {iid}."), waited
    assert json.loads(waited.splitlines()[-1]) == {"answered": [], "closed": [], "pending": [iid], "timed_out": True}

    # it waited its timeout and then returned without an answer (which never comes): at least
    # 2 s, and far less than the tool's 600 s ceiling (hook times are the daemon's clock)
    ev = r.events()
    pre, post = (find_hook(ev, name, tool_use_id=AWAIT_2) for name in ("PreToolUse", "PostToolUse"))
    assert 2 <= post["at"] - pre["at"] < 2 + 60, (pre["at"], post["at"])
    assert not [e for e in hooks_of(ev) if e["data"]["hook_event_name"] == "PermissionRequest"]


# ========================================= 3. the --settings-file form: claude --mcp-config
ASK_3 = "toolu_01MCPASK00000000000000003"


def test_settings_file_form_loads_the_standalone_mcp_config(inbox_rig, tmp_path):
    r = inbox_rig({"turns": [ask_turn(ASK_3, "Standalone config works?", ["yes", "no"]),
                             text_turn("FINAL-MCP-3")]}, builder="b-standalone")
    r.hookd.cli("unspawn", "b-standalone")
    assert not (r.project / ".mcp.json").exists()
    settings = tmp_path / "settings" / "b-standalone.json"
    m = json.loads(r.hookd.cli("spawn", "b-standalone", "--settings-file", os.fspath(settings), "--json"))
    claude_args = m["mcp"]["claude_args"]
    assert claude_args[0] == "--mcp-config" and Path(claude_args[1]).is_file()
    res = run_print("Ask one thing", r.project, r.env, settings=settings,
                    extra_args=("--permission-mode", "default", *claude_args), timeout=90,
                    claude_bin=r.claude_bin)
    assert res.returncode == 0 and res.result["result"] == "FINAL-MCP-3", res.stderr[-2000:]
    assert_hookd_loaded(res.messages, "dynamic")
    assert res.result["permission_denials"] == []
    [q] = async_asks(r)
    assert q["builder"] == "b-standalone" and q["state"] == "pending"
    assert q["id"] in r.api.main_requests()[1].tool_results()[ASK_3]
