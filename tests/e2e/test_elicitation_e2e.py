"""An MCP elicitation answered from anywhere, against the real Claude Code 2.1.332, offline.

The builder is spawned with ``hookd spawn`` (its Elicitation hook takes the hold command);
``claude -p`` calls ``book_table`` of a small MCP server of the tests' own written with the
official SDK (tests/e2e/mcp_elicit.py), which elicits a form (a name and a party size). While
Claude Code waits on the held hook, ``hookd answer ID --option accept --field ...`` answers it;
asserted: what the MCP server received (its results file: exactly that content), the tool
result in the next model request, and hookd's record.

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

from .drivers import wait_until
from .test_claude_code_scenarios import rig, text_turn, tool_turn  # noqa: F401  (rig: fixture)

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
