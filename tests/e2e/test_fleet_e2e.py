"""The fleet's hub against the real Claude Code 2.1.332 TUI (tmux), offline: an operator's answer
given on the hub (``hookd --hub URL answer HOST/ID``, a real PostgreSQL: tests/pg.py) is applied
by the host's daemon (``hookd serve`` with ``HOOKD_HUB``), releases the PermissionRequest hook
held for the agent's Bash call, and the model's next request carries it (the fake API's request
log): the operator's deny message as the tool's error result. docs/fleet.md "Down to hosts"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hookd.daemonproc import DaemonProcess

from ..conftest import hookd_cli
from ..hubrig import Hub, cluster_fixture, fresh_hub, role
from ..pg import PgCluster
from .test_answers_e2e import DIALOG, PERM_CMD, held, manual_tui, pending_permission, wait_held
from .test_claude_code_scenarios import (  # noqa: F401  (rig: fixture)
    about,
    bash_turn,
    rig,
    text_turn,
    tool_result_block,
)

pytestmark = [pytest.mark.e2e]  # (its module-scoped cluster keeps its tests on one worker: tests/conftest.py)

cluster = pytest.fixture(scope="module")(cluster_fixture)

HUB_BASH = "toolu_01FLEETHUBDENY00000000001"
HUB_MSG = "not on this machine: ask in the channel first"


def test_tui_an_answer_from_the_hub_releases_the_held_hook_and_reaches_the_model(
        rig, tmux_bin: str, cluster: PgCluster, tmp_path: Path) -> None:  # noqa: F811
    hub: Hub = fresh_hub(cluster)
    host_url, op = hub.host("laptop"), hub.operator()
    host = role(host_url)
    r = rig({"turns": [bash_turn(HUB_BASH, PERM_CMD), text_turn("AFTER-HUB-DENY")]},
            builder="b-fleet", form="worktree", daemon=False)
    r.hookd.daemon = DaemonProcess(r.hookd.home, env={"HOOKD_HUB": host_url})
    r.hookd.start()
    with manual_tui(r, tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Run the probe")
        tui.wait_for_screen(DIALOG, timeout=30)
        p = pending_permission(r)
        wait_held(r, p["id"])

        out = hookd_cli(tmp_path / "operator", "--hub", op, "answer", f"{host}/{p['id']}",
                        "--option", "deny", "--text", HUB_MSG)
        assert (out.returncode, out.stdout, out.stderr) == (
            0, f"{host}: answered {p['id']} (permission, b-fleet): deny: {HUB_MSG};"
               " goes to the agent through its hook\n", "")
        tui.wait_for_screen(lambda s: DIALOG not in s, timeout=5)
        tui.wait_for_screen("AFTER-HUB-DENY", timeout=30)
        ev = r.wait_events(lambda ev: about(ev, "answer_adopted", p["id"]), "answer_adopted")

    main = r.api.main_requests()
    assert len(main) == 2
    block = tool_result_block(main[1], HUB_BASH)  # the model's next request carries the hub's answer
    assert block is not None and block["content"] == HUB_MSG and block["is_error"] is True
    assert not (r.project / "perm-probe").exists()
    [resolved] = about(ev, "permission_resolved", p["id"])
    assert (resolved["data"]["decision"], resolved["data"]["surface"], resolved["data"]["actor"]) == (
        "deny", "hub", role(op))
    assert held(r) == []
    c = json.loads(hookd_cli(tmp_path / "operator", "--hub", op, "inbox", "--json").stdout)
    assert [(x["host_id"], x["interaction_id"], x["state"], x["operator"]) for x in c] == [
        (host, p["id"], "applied", role(op))]
