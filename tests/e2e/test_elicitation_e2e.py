"""An MCP elicitation answered from anywhere, against the real Claude Code 2.1.332, offline.

The builder is spawned with ``hookd spawn`` (its Elicitation hook takes the hold command);
``claude -p`` calls ``book_table`` of a small MCP server of the tests' own written with the
official SDK (tests/e2e/mcp_elicit.py), which elicits a form (a name and a party size). While
Claude Code waits on the held hook, ``hookd answer ID --option accept --field ...`` answers it;
asserted: what the MCP server received (its results file: exactly that content), the tool
result in the next model request, and hookd's record. In the TUI with a short hold window, the
desk's dialog opens when the window ends and the desk's answer resolves the interaction.

Facts of 2.1.332 these tests rely on (docs/harness-claude-code.md "MCP elicitation"): the
Elicitation hook runs before any dialog and its ``hookSpecificOutput`` ``action``/``content``
is the server's answer; no ElicitationResult hook fires when a hook answered; in ``-p`` with
no hook answer the elicitation is cancelled.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import sys
from pathlib import Path

import pytest

from .drivers import TmuxClaude, wait_until
from .test_claude_code_scenarios import BYPASS, rig, text_turn, tool_turn  # noqa: F401  (rig: fixture)

pytestmark = pytest.mark.e2e

SERVER = Path(__file__).with_name("mcp_elicit.py")
TOOL = "mcp__booker__book_table"


def mcp_config(tmp: Path, results: Path) -> Path:
    cfg = tmp / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"booker": {
        "command": sys.executable, "args": [os.fspath(SERVER), os.fspath(results)]}}}))
    return cfg


@pytest.mark.parametrize(("answer", "server_got", "tool_result"), [
    (["--option", "accept", "--field", "name=Ada", "--field", "party=3"],
     {"action": "accept", "data": {"name": "Ada", "party": 3}}, 'BOOKING-accept-{"name": "Ada", "party": 3}'),
    (["--option", "decline"], {"action": "decline", "data": None}, "BOOKING-decline-null"),
])
def test_a_remote_answer_reaches_the_mcp_server_and_the_model(rig, tmp_path, answer, server_got,  # noqa: F811
                                                             tool_result):
    r = rig([tool_turn("toolu_el1", TOOL, {}), text_turn("FINAL-EL")], builder="b-el", form="worktree")
    results = tmp_path / "results.jsonl"
    cfg = mcp_config(tmp_path, results)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        run = pool.submit(r.run_print, "book a table", "--mcp-config", os.fspath(cfg), timeout=120)
        [i] = wait_until(lambda: [q for q in r.questions() if q["kind"] == "elicitation" and q.get("held")]
                         or (run.done() and run.result() and []), 60, message="a held elicitation")
        assert (i["tool_name"], i["input"]["message"], i["input"]["mode"]) == ("booker", "Who is the table for?", "form")
        assert [f["name"] for f in i["fields"]] == ["name", "party"]
        receipt = json.loads(r.hookd.cli("answer", i["id"], *answer, "--json"))
        assert receipt["delivery"] == "hook"
        res = run.result(120)
    assert res.result["result"] == "FINAL-EL"
    assert [json.loads(line) for line in results.read_text().splitlines()] == [server_got]
    [after] = [q for q in r.api.main_requests() if "toolu_el1" in q.tool_results()]
    # (the SDK returns the tool's text as structured output: {"result": ...})
    assert json.loads(after.tool_results()["toolu_el1"]) == {"result": tool_result}
    done = [q for q in r.questions() if q["id"] == i["id"]][0]
    assert (done["state"], done["decision"], done["surface"]) == ("answered", answer[1], "cli")
    assert done["delivered_at"] is not None
    # a hook answered: Claude Code fires no ElicitationResult
    assert "ElicitationResult" not in {h["hook_event_name"] for h in r.stored_hooks()}


def test_tui_the_dialog_opens_when_the_hold_ends_and_the_desks_answer_resolves_it(
        rig, tmp_path, tmux_bin):  # noqa: F811
    """The TUI with holding on a short window (``--hold 5``): while hookd holds the Elicitation
    hook the desk shows no form ("running Elicitation hook"); when the window ends the hook
    returns nothing, the dialog opens, the desk fills it and accepts; ElicitationResult
    resolves the interaction at the desk, and the server receives the desk's content."""
    r = rig([tool_turn("toolu_el2", TOOL, {}), text_turn("FINAL-EL-DESK")], builder="b-el", form="worktree")
    r.hookd.cli("spawn", "b-el", "--worktree", os.fspath(r.project), "--hold", "5")
    results = tmp_path / "results.jsonl"
    cfg = mcp_config(tmp_path, results)
    with TmuxClaude(r.project, r.env, extra_args=(*BYPASS, "--mcp-config", os.fspath(cfg)),
                    claude_bin=r.claude_bin, tmux=tmux_bin) as tui:
        tui.wait_ready(timeout=30)
        tui.submit("book a table")
        [i] = wait_until(lambda: [q for q in r.questions() if q["kind"] == "elicitation" and q.get("held")], 60,
                         message="a held elicitation")
        screen = tui.wait_for_screen("running Elicitation hook", timeout=20)
        assert "requests your input" not in screen
        tui.wait_for_screen("requests your input", timeout=30)  # the hold ended: the dialog
        assert [q for q in r.questions() if q["id"] == i["id"]][0]["held"] is False
        tui.send_text("Bo")
        tui.send_keys("Tab")
        tui.send_text("2")
        tui.wait_for_screen(lambda s: "Bo" in s and "Party: 2" in s, timeout=10)
        tui.press_until("Enter", lambda s: "Accept" in s and "❯ Accept" in s, timeout=10)  # to the buttons
        tui.press_until("Enter", lambda s: "requests your input" not in s, timeout=10)
        tui.wait_for_screen("FINAL-EL-DESK", timeout=30)
    assert [json.loads(line) for line in results.read_text().splitlines()] == [
        {"action": "accept", "data": {"name": "Bo", "party": 2}}]
    done = wait_until(lambda: [q for q in r.questions() if q["id"] == i["id"] and q["state"] != "pending"], 30,
                      message="the elicitation resolved")[0]
    assert (done["state"], done["decision"], done["answers"], done["surface"]) == (
        "answered", "accept", {"name": "Bo", "party": 2}, "terminal")
