"""Issue 18, the hook clients' side, against the real Claude Code 2.1.332 (fake API, offline).

1. What the large-spool writer relies on (hooks/client.c ``spool``): Claude Code waits for a
   command hook's process and its stdout/stderr, not for a child the hook detached (its own
   session, stdio on /dev/null), and does not kill that child when the hook ends or when it
   exits itself. Checked without hookd: a hook whose detached child waits on a FIFO that
   the test opens only after Claude Code's run is over.
2. A held PermissionRequest hook outlives a daemon restart: the TUI's permission dialog is
   open, its PermissionRequest hook held by hookd; the daemon is stopped (SIGTERM) and
   started again; the same hook process is held by the new daemon, and a remote allow given
   to it closes the dialog and runs the command.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path

import pytest

from .drivers import run_print, wait_until
from .test_answers_e2e import (  # noqa: F401  (rig: fixture)
    DIALOG,
    PERM_CMD,
    about,
    bash_turn,
    held,
    hook_procs,
    interaction,
    manual_tui,
    pending_permission,
    permission_argv,
    rig,
    text_turn,
    tool_result_block,
    wait_held,
)

pytestmark = pytest.mark.e2e


def test_claude_code_neither_waits_for_nor_kills_a_hooks_detached_child(claude_bin, fake_api, e2e_env, e2e_project,
                                                                       tmp_path: Path) -> None:
    gate, marker, started = tmp_path / "gate", tmp_path / "child-done", tmp_path / "child-started"
    os.mkfifo(gate)
    hook = tmp_path / "hook.sh"
    # the child: its own session, stdio on /dev/null, blocked on the FIFO until the test opens it
    hook.write_text("#!/bin/sh\ncat >/dev/null\n"
                    f"setsid sh -c 'exec </dev/null >/dev/null 2>&1; echo $$ > {shlex.quote(str(started))}; "
                    f"read x < {shlex.quote(str(gate))}; touch {shlex.quote(str(marker))}' &\nexit 0\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    fake_api.set_script({"turns": [text_turn("DETACHED-CHILD-OK")]})
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": str(hook), "timeout": 30}]}]}}
    res = run_print("hello", e2e_project, e2e_env, settings=settings, claude_bin=claude_bin, timeout=60)
    # Claude Code's run is over (it exited, its output closed) while the child still waits
    assert res.returncode == 0 and res.result is not None and "DETACHED-CHILD-OK" in res.result.get("result", "")
    pid = int(wait_until(lambda: started.exists() and started.read_text().strip(), 10, 0.05, "the child's pid"))
    assert not marker.exists()
    os.kill(pid, 0)  # alive: neither the hook's end nor Claude Code's exit killed it
    with open(gate, "w") as g:  # let it go
        g.write("go\n")
    wait_until(marker.exists, 10, 0.05, "the detached child to finish")


RESTART_BASH = "toolu_01ANSRESTARTBASH0000000001"


def test_tui_held_permission_prompt_survives_a_daemon_restart(rig, tmux_bin):  # noqa: F811
    r = rig({"turns": [bash_turn(RESTART_BASH, PERM_CMD), text_turn("AFTER-RESTART-7")]},
            builder="b-restart", form="worktree")
    argv = permission_argv(r)
    with manual_tui(r, tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Run the probe")
        tui.wait_for_screen(DIALOG, timeout=30)
        p = pending_permission(r)
        wait_held(r, p["id"])
        [hook_pid] = hook_procs(argv)

        r.hookd.daemon.stop()  # SIGTERM: an upgrade, say
        r.hookd.start()
        wait_held(r, p["id"])  # the same hook, held again by the new daemon
        assert hook_procs(argv) == [hook_pid]
        assert DIALOG in tui.capture() and not (r.project / "perm-probe").exists()

        receipt = json.loads(r.hookd.cli("answer", p["id"], "--option", "allow", "--json"))
        assert receipt["delivery"] == "hook"
        tui.wait_for_screen(lambda s: DIALOG not in s, timeout=5)
        tui.wait_for_screen("AFTER-RESTART-7", timeout=30)
        assert "Allowed by PermissionRequest hook" in tui.capture()
        ev = r.wait_events(lambda ev: about(ev, "answer_adopted", p["id"]), "answer_adopted")

    main = r.api.main_requests()
    block = tool_result_block(main[1], RESTART_BASH)
    assert block is not None and block["content"] == "hello-from-bash" and block.get("is_error") is False
    assert (r.project / "perm-probe").exists()
    i = interaction(r, p["id"])
    assert (i["state"], i["decision"], i["delivered_via"]) == ("answered", "allow", "PermissionRequest")
    assert len(about(ev, "permission_pending", p["id"])) == 1 and len(about(ev, "answer_delivered", p["id"])) == 1
    assert [e["data"]["hook_event_name"] for e in ev if e["kind"] == "hook_received"].count("PermissionRequest") == 1
    assert held(r) == [] and hook_procs(argv) == []
