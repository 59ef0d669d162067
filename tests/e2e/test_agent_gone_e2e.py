"""A held permission prompt whose agent goes away with the real Claude Code 2.1.332 offline:
its terminal closed (SIGHUP) or a SIGTERM. Claude Code cancels the held hook as it exits (as it
does on Esc at the desk), then sends SessionEnd: hookd closes the prompt ``orphaned``, never
``dismissed`` at the terminal (hookd.core.holds.Holds._hook_gone watches the agent a moment
before it takes a cancelled hook for the desk's Esc). Found by a fresh user's trial (for
`hookd stop`), measured here: the agent exits ~0.14 s after the signal on a quiet machine."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from .drivers import wait_until
from .test_claude_code_scenarios import bash_turn, text_turn
from .test_run_e2e import MANUAL, hookd, run_rig, tmux, wait_screen

pytestmark = pytest.mark.e2e

PERM_CMD = "touch gone-probe && echo hello-gone"
BASH_ID = "toolu_01GONEBASH000000000000001"


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_an_agent_gone_with_a_held_prompt_is_not_a_desk_dismissal(claude_bin: Path, tmux_bin: str, e2e_home: Path,
                                                                   e2e_project: Path, tmp_path: Path, sig) -> None:
    api, h, env = run_rig(claude_bin, e2e_home, e2e_project, tmp_path, [bash_turn(BASH_ID, PERM_CMD),
                                                                       text_turn("NEVER")], "b1")
    try:
        hookd(h, env, "run", "b1", "--prompt", "Run the probe", "--", "--settings", MANUAL)
        run = json.loads(hookd(h, env, "ls", "--json").stdout)[0]["run"]
        wait_screen(h, "b1", "Do you want to proceed?")
        p = wait_until(lambda: [q for q in json.loads(h.cli("questions", "--json")) if q["kind"] == "permission"
                                and q.get("held")], 15, 0.1, "a held permission prompt")[0]
        os.kill(run["pid"], sig)
        i = wait_until(lambda: (x := json.loads(h.cli("questions", "--state", "all", "--json")))
                       and [q for q in x if q["id"] == p["id"] and q["state"] != "pending"], 30, 0.1, "closed")[0]
        [ev] = [e["data"] for e in h.events() if e["kind"] == "permission_resolved"]
        assert (i["state"], ev["outcome"]) == ("orphaned", "orphaned"), (i, ev)
        assert ev.get("inferred_from") != "hook cancelled" and ev["surface"] is None, ev
    finally:
        tmux(h, "kill-server")
        h.stop()
        api.stop()
