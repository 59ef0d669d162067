"""Answering from anywhere against the real Claude Code 2.1.332 TUI (tmux), offline.

A builder spawned by ``hookd spawn`` (PermissionRequest held by the daemon, default 900 s)
runs in the TUI; a question menu or a permission dialog is open at the desk while a
"remote human" answers with ``hookd answer``. Asserted on what reached the model (the fake
API's request log), on the screen, on the held hook process itself, and on hookd's record
(``hookd questions/events/inbox --json``, ``GET /v1/status``).

Esc on a question menu with the hook held (``dismissed``, inferred from the hook's SIGTERM)
is covered by ``test_claude_code_scenarios.test_tui_escape_on_question_menu``; Esc on a
permission dialog is covered here.

Facts of 2.1.332 these tests rely on (/tmp/perm-research/FINDINGS.md):

* With no flag the TUI starts in ``auto`` mode and runs Bash without a dialog: the Bash
  tests set ``permissions.defaultMode: "default"`` (inline ``--settings``; the hooks come
  from the worktree's ``settings.local.json``). ``echo`` alone never asks; ``touch`` does.
* PermissionRequest carries no ``tool_use_id``; the hook runs in parallel with the dialog.
* A hook ``deny`` reaches the model as exactly its message with ``is_error: true`` and fires
  no PostToolUse(Failure): hookd adopts it at the turn's Stop.
* A desk answer does not signal the held hook: the daemon releases it on PostToolUse.
  Esc/No at the desk SIGTERMs the hook's process group (~0.3 s after the key) and fires no
  hook at all for the rejected call.
* A desk "Yes" on a Bash dialog is not seen by the hook, the transcript or any other hook until
  the command ends; the command runs at once as a child of the agent, ``<shell> -c "...
  eval '<command>' ..."``: hookd resolves the prompt from that (docs/harness-claude-code.md).
* A bare PermissionRequest ``allow`` runs Bash, Write, Edit, NotebookEdit, WebFetch and MCP
  tools; ExitPlanMode needs ``updatedInput`` (its input as the hook got it: ``{}``), else
  the dialog stays open.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from .drivers import TmuxClaude, wait_until
from .test_claude_code_scenarios import (  # noqa: F401  (rig: fixture)
    Rig,
    about,
    bash_turn,
    find_hook,
    hooks_of,
    option,
    press_once,
    rig,
    text_turn,
    tool_result_block,
    tool_turn,
)

pytestmark = pytest.mark.e2e

Q = "Which color do you prefer?"
MENU = "Enter to select"
DIALOG = "Do you want to proceed?"
PERM_CMD = "touch perm-probe && echo hello-from-bash"  # `echo` alone never asks
MANUAL = {"permissions": {"defaultMode": "default"}}  # 2.1.332 defaults to `auto`: no dialog


def ask_turn(tool_id: str) -> dict:
    return tool_turn(tool_id, "AskUserQuestion", {"questions": [{
        "question": Q, "header": "Color", "multiSelect": False,
        "options": [option("Red"), option("Blue")]}]})


# ----------------------------------------------------------------------------- helpers
def held(r: Rig) -> list[str]:
    """``held`` of the daemon's ``GET /v1/status``: interactions a hook is held for now."""
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(r.home.socket_path)), timeout=10) as c:
        return c.get("http://hookd/v1/status").json()["held"]


def wait_held(r: Rig, iid: str) -> None:
    wait_until(lambda: iid in held(r), 15, 0.05, f"the daemon holding a PermissionRequest hook for {iid}")


def permission_argv(r: Rig) -> list[str]:
    """The argv the builder's PermissionRequest hook execs (``bash -p hook-client
    claude-code B 900000``), read from the settings ``hookd spawn`` wrote."""
    settings = json.loads((r.project / ".claude" / "settings.local.json").read_text())
    [group] = settings["hooks"]["PermissionRequest"]
    [handler] = group["hooks"]
    words = shlex.split(handler["command"], comments=True)
    return words[words.index("exec") + 1:]


def hook_procs(argv: list[str]) -> list[int]:
    """Pids of live processes running exactly ``argv`` (the held hook client)."""
    pids = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["cmdline"] == argv and p.info["status"] != psutil.STATUS_ZOMBIE:
                pids.append(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return pids


def interaction(r: Rig, iid: str) -> dict[str, Any]:
    [i] = [q for q in r.questions() if q["id"] == iid]
    return i


def pending_permission(r: Rig) -> dict[str, Any]:
    def one() -> dict[str, Any] | None:
        # (ExitPlanMode's prompt is a ``plan``, answered with allow/deny as one: test_plans_e2e.py)
        ps = [q for q in r.questions() if q["kind"] in ("permission", "plan") and q["state"] == "pending"]
        return ps[0] if ps else None
    return wait_until(one, 15, 0.1, "a pending permission prompt in hookd")


def answer_raw(r: Rig, *args: str) -> subprocess.CompletedProcess[str]:
    """``hookd answer ARGS`` whatever its exit status."""
    return subprocess.run([sys.executable, "-m", "hookd", "--home", os.fspath(r.hookd.home), "answer", *args],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def manual_tui(r: Rig, tmux_bin: str) -> TmuxClaude:
    """The TUI in manual (``default``) permission mode: Bash asks before it runs."""
    assert r.settings is None  # worktree form: hooks from <project>/.claude/settings.local.json
    return TmuxClaude(r.project, r.env, settings=MANUAL, claude_bin=r.claude_bin, tmux=tmux_bin)


# ====================================================== 1. the remote answer wins
REMOTE_ASK = "toolu_01ANSREMOTEASK0000000001"


def test_tui_remote_answer_wins_and_reaches_the_model(rig, tmux_bin):  # noqa: F811
    r = rig({"turns": [ask_turn(REMOTE_ASK), text_turn("AFTER-REMOTE-RED-1")]},
            builder="b-remote", form="worktree")
    with r.tui(tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Ask me a color")
        tui.wait_for_screen(lambda s: MENU in s and "2. Blue" in s, timeout=30)
        wait_held(r, REMOTE_ASK)
        assert interaction(r, REMOTE_ASK)["state"] == "pending"
        assert len(r.api.main_requests()) == 1  # the model waits for the tool result

        # the desk does nothing; a remote human answers
        receipt = json.loads(r.hookd.cli("answer", REMOTE_ASK, "--option", "Red", "--actor", "ana", "--json"))
        assert receipt["delivery"] == "hook" and receipt["duplicate"] is False
        tui.wait_for_screen(lambda s: MENU not in s, timeout=5)
        tui.wait_for_screen("AFTER-REMOTE-RED-1", timeout=30)
        screen = tui.capture()
        assert f"{Q} → Red" in screen and "Allowed by PermissionRequest hook" in screen, screen
        ev = r.wait_events(lambda ev: about(ev, "answer_adopted", REMOTE_ASK), "answer_adopted")

    # what the model got: the remote label
    main = r.api.main_requests()
    assert len(main) == 2
    block = tool_result_block(main[1], REMOTE_ASK)
    assert block is not None and not block.get("is_error")
    assert f'"{Q}"="Red"' in main[1].tool_results()[REMOTE_ASK]

    # hookd: answered by cli, delivered through the held hook, then adopted at PostToolUse
    i = interaction(r, REMOTE_ASK)
    assert (i["state"], i["surface"], i["actor"], i["answers"]) == ("answered", "cli", "ana", {Q: "Red"})
    assert i["delivered_via"] == "PermissionRequest"
    assert i["adopted_at"] >= i["delivered_at"] >= i["received_at"] >= i["created_at"]
    assert len(about(ev, "question_pending", REMOTE_ASK)) == 1
    [resolved] = about(ev, "question_resolved", REMOTE_ASK)
    assert resolved["data"]["outcome"] == "answered" and resolved["data"]["surface"] == "cli"
    assert [e["data"]["via"] for e in about(ev, "answer_delivered", REMOTE_ASK)] == ["PermissionRequest"]
    [adopted] = about(ev, "answer_adopted", REMOTE_ASK)
    assert adopted["data"]["via"] == "PostToolUse"
    post = find_hook(ev, "PostToolUse", tool_use_id=REMOTE_ASK)
    assert post is not None and adopted["seq"] > post["seq"]
    assert about(ev, "answer_superseded", REMOTE_ASK) == []
    assert held(r) == [] and hook_procs(permission_argv(r)) == []
    assert json.loads(r.hookd.cli("inbox", "--json")) == []


# ============================================ 2. the desk answers while the hook is held
DESK_ASK = "toolu_01ANSDESKASK00000000001"


def test_tui_desk_answer_releases_the_held_hook_at_its_post_tool_use(rig, tmux_bin):  # noqa: F811
    r = rig({"turns": [ask_turn(DESK_ASK), text_turn("AFTER-DESK-BLUE-2")]},
            builder="b-desk", form="worktree")
    argv = permission_argv(r)
    with r.tui(tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Ask me a color")
        tui.wait_for_screen(lambda s: MENU in s and "2. Blue" in s, timeout=30)
        wait_held(r, DESK_ASK)
        assert len(hook_procs(argv)) >= 1  # the held hook client is running

        tui.send_keys("Down")
        tui.wait_for_screen(r"❯ 2\. Blue", timeout=5)
        tui.press_until("Enter", lambda s: MENU not in s, timeout=10)

        def released() -> float | None:
            return time.time() if not held(r) and not hook_procs(argv) else None
        # the hold window is 900 s: a hook gone long before it was released by the daemon
        gone_at = wait_until(released, 120, 0.02, "the held hook released and its process gone")
        tui.wait_for_screen("AFTER-DESK-BLUE-2", timeout=30)
        ev = r.wait_hook("Stop")

    post = find_hook(ev, "PostToolUse", tool_use_id=DESK_ASK)
    assert post is not None
    # released by the desk's PostToolUse (daemon and test read the same clock): after it, and
    # not by the hold window; how soon is measured, not asserted (a loaded machine is slower)
    assert post["at"] <= gone_at < post["at"] + 900, (post["at"], gone_at)
    print(f"desk answer: held hook gone {gone_at - post['at']:.3f} s after its PostToolUse")

    main = r.api.main_requests()
    assert len(main) == 2 and f'"{Q}"="Blue"' in main[1].tool_results()[DESK_ASK]
    i = interaction(r, DESK_ASK)
    assert (i["state"], i["surface"], i["answers"]) == ("answered", "terminal", {Q: "Blue"})
    assert i["received_at"] is None and i["delivered_at"] is None  # nothing remote
    assert len(about(ev, "question_pending", DESK_ASK)) == 1
    [resolved] = about(ev, "question_resolved", DESK_ASK)
    assert resolved["data"]["outcome"] == "answered" and resolved["data"]["surface"] == "terminal"
    assert resolved["data"]["answers"] == {Q: "Blue"}
    assert about(ev, "answer_delivered", DESK_ASK) == []

    # a remote answer now is refused (exit 2) and its text kept for the builder
    late = answer_raw(r, DESK_ASK, "--option", "Red")
    assert late.returncode == 2, late
    assert "already answered at the desk" in late.stderr and "kept as inbox message m-1" in late.stderr
    [m] = json.loads(r.hookd.cli("inbox", "b-desk", "--json"))
    assert (m["id"], m["state"]) == ("m-1", "queued")
    assert m["text"] == f"[Late answer to question {DESK_ASK} (not used: already answered at the desk: Blue)]\nQ: {Q}\nA: Red"
    assert interaction(r, DESK_ASK)["answers"] == {Q: "Blue"}  # unchanged


# ============================================== 3. a remote allow of a Bash command
ALLOW_BASH = "toolu_01ANSALLOWBASH00000000001"


def test_tui_remote_allow_runs_the_bash_command(rig, tmux_bin):  # noqa: F811
    r = rig({"turns": [bash_turn(ALLOW_BASH, PERM_CMD), text_turn("AFTER-ALLOW-3")]},
            builder="b-allow", form="worktree")
    with manual_tui(r, tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Run the probe")
        screen = tui.wait_for_screen(DIALOG, timeout=30)
        assert PERM_CMD in screen
        p = pending_permission(r)
        assert p["id"].startswith("pr_") and p["tool_name"] == "Bash"
        assert p["input"]["command"] == PERM_CMD
        wait_held(r, p["id"])
        assert not (r.project / "perm-probe").exists()

        receipt = json.loads(r.hookd.cli("answer", p["id"], "--option", "allow", "--json"))
        assert receipt["delivery"] == "hook"
        tui.wait_for_screen(lambda s: DIALOG not in s, timeout=5)
        tui.wait_for_screen("AFTER-ALLOW-3", timeout=30)
        assert "Allowed by PermissionRequest hook" in tui.capture()
        ev = r.wait_events(lambda ev: about(ev, "answer_adopted", p["id"]), "answer_adopted")

    main = r.api.main_requests()
    assert len(main) == 2
    block = tool_result_block(main[1], ALLOW_BASH)
    assert block is not None and block["content"] == "hello-from-bash" and block.get("is_error") is False
    assert (r.project / "perm-probe").exists()

    i = interaction(r, p["id"])
    assert (i["state"], i["decision"], i["surface"]) == ("answered", "allow", "cli")
    assert i["tool_use_id"] == ALLOW_BASH and i["delivered_via"] == "PermissionRequest"
    assert i["adopted_at"] >= i["delivered_at"] >= i["received_at"]
    [pending] = about(ev, "permission_pending", p["id"])
    assert pending["data"]["permission_mode"] == "default"
    [resolved] = about(ev, "permission_resolved", p["id"])
    assert (resolved["data"]["decision"], resolved["data"]["surface"]) == ("allow", "cli")
    [adopted] = about(ev, "answer_adopted", p["id"])
    assert adopted["data"]["via"] == "PostToolUse" and adopted["data"]["tool_use_id"] == ALLOW_BASH
    assert held(r) == [] and hook_procs(permission_argv(r)) == []


# =============================================== 4. a remote deny with a message
DENY_BASH = "toolu_01ANSDENYBASH000000000001"
DENY_MSG = "not now, use ls"


def test_tui_remote_deny_returns_the_message_to_the_model(rig, tmux_bin):  # noqa: F811
    r = rig({"turns": [bash_turn(DENY_BASH, PERM_CMD), text_turn("AFTER-DENY-4")]},
            builder="b-deny", form="worktree")
    with manual_tui(r, tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Run the probe")
        tui.wait_for_screen(DIALOG, timeout=30)
        p = pending_permission(r)
        wait_held(r, p["id"])

        r.hookd.cli("answer", p["id"], "--option", "deny", "--text", DENY_MSG)
        tui.wait_for_screen(lambda s: DIALOG not in s, timeout=5)
        tui.wait_for_screen("AFTER-DENY-4", timeout=30)
        assert f"Reason: {DENY_MSG}" in tui.capture()
        ev = r.wait_hook("Stop")
        ev = r.wait_events(lambda ev: about(ev, "answer_adopted", p["id"]), "answer_adopted")

    main = r.api.main_requests()
    assert len(main) == 2
    block = tool_result_block(main[1], DENY_BASH)
    assert block is not None and block["content"] == DENY_MSG and block["is_error"] is True
    assert not (r.project / "perm-probe").exists()

    # 2.1.332 fires no PostToolUse(Failure) for a hook's deny; the turn's Stop adopts it
    names = [e["data"]["hook_event_name"] for e in hooks_of(ev) if e["data"].get("tool_use_id") == DENY_BASH]
    assert names == ["PreToolUse"], names
    i = interaction(r, p["id"])
    assert (i["state"], i["decision"], i["message"], i["surface"]) == ("answered", "deny", DENY_MSG, "cli")
    assert i["delivered_via"] == "PermissionRequest" and i["adopted_at"] >= i["delivered_at"]
    [resolved] = about(ev, "permission_resolved", p["id"])
    assert (resolved["data"]["decision"], resolved["data"]["message"]) == ("deny", DENY_MSG)
    [adopted] = about(ev, "answer_adopted", p["id"])
    stop = find_hook(ev, "Stop")
    assert adopted["data"]["via"] == "Stop" and adopted["seq"] > stop["seq"]
    assert held(r) == [] and hook_procs(permission_argv(r)) == []
    assert json.loads(r.hookd.cli("inbox", "--json")) == []


# ================================== 5. Esc at a permission dialog while the hook is held
ESC_BASH = "toolu_01ANSESCBASH0000000000001"


def test_tui_escape_on_permission_dialog_dismisses(rig, tmux_bin):  # noqa: F811
    r = rig({"turns": [bash_turn(ESC_BASH, PERM_CMD), text_turn("NEVER-SENT-5")]},
            builder="b-escperm", form="worktree")
    argv = permission_argv(r)
    with manual_tui(r, tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Run the probe")
        tui.wait_for_screen(DIALOG, timeout=30)
        p = pending_permission(r)
        wait_held(r, p["id"])
        assert len(hook_procs(argv)) >= 1

        press_once(tui, "Escape", lambda s: DIALOG not in s)
        tui.wait_for_screen("Interrupted", timeout=10)
        # Claude Code SIGTERMs the held hook: the daemon sees it go and dismisses the prompt
        ev = r.wait_events(lambda ev: about(ev, "permission_resolved", p["id"]), "permission_resolved")
        wait_until(lambda: not held(r) and not hook_procs(argv), 10, 0.05, "the held hook gone")

    assert len(r.api.main_requests()) == 1  # nothing more reached the model
    assert not (r.project / "perm-probe").exists()
    i = interaction(r, p["id"])
    assert (i["state"], i["surface"], i["decision"], i["received_at"]) == ("dismissed", "terminal", None, None)
    assert len(about(ev, "permission_pending", p["id"])) == 1
    [resolved] = about(ev, "permission_resolved", p["id"])
    assert resolved["data"]["outcome"] == "dismissed"
    assert resolved["data"]["inferred_from"] == "hook cancelled"
    names = [e["data"]["hook_event_name"] for e in hooks_of(ev) if e["data"].get("tool_use_id") == ESC_BASH]
    assert names == ["PreToolUse"], names  # 2.1.332 sends no hook for the rejected call


# ========================== 6. the desk allows a slow command while the hook is held
SLOW_BASH = "toolu_01ANSSLOWBASH000000000001"
SLOW_CMD = "sleep 12 && touch slow-probe && echo slow-done"
NOTIFY_AFTER_S = 4


def notify_config(r: Rig, alerts: Path) -> None:
    """Notify after NOTIFY_AFTER_S through a command channel that appends each alert to
    ``alerts`` (written before the daemon starts)."""
    script = f"import sys; open({str(alerts)!r}, 'a').write(sys.stdin.read() + '\\n')"
    (r.hookd.home / "config.toml").write_text(
        f"[notify]\nquestion_after_s = {NOTIFY_AFTER_S}\n\n[[notify.channel]]\ntype = \"command\"\nname = \"log\"\n"
        f"command = {json.dumps([sys.executable, '-c', script])}\n")


def test_tui_desk_allow_resolves_at_once_while_the_command_runs(rig, tmux_bin, tmp_path):  # noqa: F811
    """Issue 18 item 10. 2.1.332 does not signal the held hook when the desk allows (nor
    writes a transcript row or fires a hook until the command ends); the command's process,
    a child of the agent, shows at once: the prompt is resolved then, no notification
    follows, the lane works, and a remote answer after that is refused."""
    r = rig({"turns": [bash_turn(SLOW_BASH, SLOW_CMD), text_turn("AFTER-SLOW-6")]},
            builder="b-slow", form="worktree", daemon=False)
    alerts = tmp_path / "alerts.jsonl"
    notify_config(r, alerts)
    r.hookd.start()
    argv = permission_argv(r)
    with manual_tui(r, tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Run the slow probe")
        tui.wait_for_screen(DIALOG, timeout=30)
        p = pending_permission(r)
        wait_held(r, p["id"])
        press_once(tui, "Enter", lambda s: DIALOG not in s)  # "1. Yes" is the default

        i = wait_until(lambda: (x := interaction(r, p["id"]))["state"] != "pending" and x, 10, 0.05,
                       "the prompt resolved once the command runs")
        assert (i["state"], i["decision"], i["surface"], i["received_at"]) == ("answered", "allow", "terminal", None)
        assert not (r.project / "slow-probe").exists()  # the command still runs
        assert find_hook(r.events(), "PostToolUse", tool_use_id=SLOW_BASH) is None
        wait_until(lambda: not held(r) and not hook_procs(argv), 10, 0.05, "the held hook let go")
        lanes = json.loads(r.hookd.cli("lanes", "--json"))
        assert [(x["builder"], x["state"]) for x in lanes] == [("b-slow", "working")]
        late = answer_raw(r, p["id"], "--option", "deny", "--text", "stop it")
        assert late.returncode == 2 and "the desk answered first" in late.stderr, late
        assert not (r.project / "slow-probe").exists()

        tui.wait_for_screen("AFTER-SLOW-6", timeout=40)
        ev = r.wait_events(lambda ev: find_hook(ev, "Stop") is not None, "the turn's Stop")

    main = r.api.main_requests()
    assert len(main) == 2 and main[1].tool_results()[SLOW_BASH] == "slow-done"
    assert (r.project / "slow-probe").exists()
    i = interaction(r, p["id"])
    assert (i["state"], i["decision"], i["tool_use_id"], i["delivered_at"]) == ("answered", "allow", SLOW_BASH, None)
    [resolved] = about(ev, "permission_resolved", p["id"])
    assert resolved["data"]["inferred_from"] == "tool running"
    post = find_hook(ev, "PostToolUse", tool_use_id=SLOW_BASH)
    assert post["at"] - resolved["at"] > NOTIFY_AFTER_S  # pending that long, it would have been notified
    assert about(ev, "answer_delivered", p["id"]) == [] and about(ev, "interaction_answered", p["id"]) == []
    [refused] = about(ev, "answer_refused", p["id"])
    assert "the desk answered first" in refused["data"]["reason"]
    sent = [e for e in ev if e["kind"] in ("notification_sent", "notification_failed")
            and e["data"].get("key") == f"interaction:{p['id']}"]
    if sent:  # only when the desk's Enter came after the alert was due (a busy machine), never after it
        [pending] = about(ev, "permission_pending", p["id"])
        assert pending["at"] + NOTIFY_AFTER_S <= resolved["at"] and [e["data"].get("step") for e in sent] == [0], sent
        assert alerts.exists()
    else:
        assert not alerts.exists(), (alerts.read_text(), [e for e in ev if e["kind"].startswith("notification")])


# ============= 7. every tool a PermissionRequest can hold: a remote allow or deny takes effect
TOOL_DENY = "not this one, REMOTE-DENY-7"
AFTER_TOOLS = "AFTER-TOOL-7"
SHARED = ("Bash", "Write", "Edit", "NotebookEdit", "WebFetch", "MCP")  # one session: default mode
TOOL_GROUPS = [SHARED, ("ExitPlanMode",)]  # plan mode: a session of its own
TOOL_IDS = {
    "Bash": "toolu_01ANSTOOLBASH000000000001", "Write": "toolu_01ANSTOOLWRITE00000000001",
    "Edit": "toolu_01ANSTOOLEDIT000000000001", "NotebookEdit": "toolu_01ANSTOOLNOTEBOOK0000001",
    "WebFetch": "toolu_01ANSTOOLWEBFETCH0000001", "MCP": "toolu_01ANSTOOLMCP0000000000001",
    "ExitPlanMode": "toolu_01ANSTOOLEXITPLAN0000001",
}
READ_IDS = {"Edit": "toolu_01ANSTOOLREADEDIT0000001", "NotebookEdit": "toolu_01ANSTOOLREADNB00000001"}
HOOK_NAMES = {"MCP": "mcp__probe__touch_probe"}  # the tool_name the hooks carry, when not the tool's


def tool_turns(tool: str, project: Path) -> list[dict]:
    """The model's turns calling ``tool`` (Edit and NotebookEdit after a Read of their file):
    each call its own turn and tool_use id; its effect is a file of its own in ``project``."""
    tid = TOOL_IDS[tool]
    if tool == "Bash":
        return [bash_turn(tid, "touch bash-probe && echo BASH-RAN")]
    if tool == "Write":
        return [tool_turn(tid, "Write", {"file_path": str(project / "write-probe"), "content": "WRITTEN\n"})]
    if tool == "Edit":
        return [tool_turn(READ_IDS[tool], "Read", {"file_path": str(project / "existing.txt")}),
                tool_turn(tid, "Edit", {"file_path": str(project / "existing.txt"), "old_string": "old line",
                                        "new_string": "EDITED line"})]
    if tool == "NotebookEdit":
        return [tool_turn(READ_IDS[tool], "Read", {"file_path": str(project / "nb.ipynb")}),
                tool_turn(tid, "NotebookEdit", {"notebook_path": str(project / "nb.ipynb"), "new_source": "print(7)",
                                                "cell_type": "code", "edit_mode": "insert"})]
    if tool == "WebFetch":
        return [tool_turn(tid, "WebFetch", {"url": "http://127.0.0.1:9/x", "prompt": "summarize"})]
    if tool == "MCP":
        return [tool_turn(tid, "mcp__probe__touch_probe", {"name": "mcp-probe"})]
    assert tool == "ExitPlanMode", tool
    return [tool_turn(tid, "ExitPlanMode", {"plan": "1. build\n2. ship"})]


def tool_effect(tool: str, project: Path) -> bool:
    """Did the tool's call take effect (its file written, edited, a cell inserted)? WebFetch
    (nothing listens at its URL) and ExitPlanMode leave nothing to see: False."""
    if tool == "Edit":
        return "EDITED" in (project / "existing.txt").read_text()
    if tool == "NotebookEdit":
        return "print(7)" in (project / "nb.ipynb").read_text()
    probe = {"Bash": "bash-probe", "Write": "write-probe", "MCP": "mcp-probe"}.get(tool)
    return probe is not None and (project / probe).exists()


# Each call's block on the TUI's screen, by its opening line or the input it shows: ``● Write(write-probe)``;
# Bash as ``Running a command`` / ``Ran 1 shell command`` / ``Did not run 1 call`` over ``$ touch bash-probe ...``,
# the MCP tool as ``Calling probe…`` / ``Called probe`` / ``probe - touch_probe (MCP)(...)``. ExitPlanMode has a
# session of its own and, denied, no line of its own: the whole screen is its block.
SCREEN_CALLS = {
    "Bash": r"bash-probe|shell command", "Write": r"Write\(write-probe\)", "Edit": r"Update\(existing\.txt\)",
    "NotebookEdit": r"Edit Notebook\(nb\.ipynb\)", "WebFetch": r"Fetch\(http://127\.0\.0\.1:9/x\)",
    "MCP": r"Call(?:ing|ed) probe|touch_probe \(MCP\)",
}


def screen_blocks(screen: str) -> list[str]:
    """The TUI's screen cut into blocks: a line indented at most two cells (``● Write(...)``,
    ``  Read 1 file``) opens one; ``⎿``/``│`` lines and deeper ones belong to the block above."""
    blocks: list[list[str]] = []
    for line in screen.splitlines():
        body = line.lstrip(" ")
        if body and len(line) - len(body) <= 2 and not body.startswith(("⎿", "│")):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    return ["\n".join(b) for b in blocks]


def shown_under_call(screen: str, tool: str, line: str) -> bool:
    """Is ``line`` (``Allowed by PermissionRequest hook``) on ``screen`` in ``tool``'s call's block?"""
    pattern = SCREEN_CALLS.get(tool)
    if pattern is None:
        return line in screen
    return any(re.search(pattern, b) and line in b for b in screen_blocks(screen))


@contextmanager
def for_tool(tool: str, decision: str) -> Iterator[None]:
    """A failed check, an expired wait or any error inside names the tool and the decision."""
    try:
        yield
    except Exception as exc:
        raise AssertionError(f"{tool}, remote {decision}: {exc}") from exc


@pytest.mark.parametrize("tools", TOOL_GROUPS, ids=",".join)
@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_tui_remote_decision_takes_effect_for_every_tool(rig, tmux_bin, decision, tools):  # noqa: F811
    """Issue 18 item 12: a remote answer through the held PermissionRequest hook, per tool.
    One TUI session per decision runs Bash, Write, Edit, NotebookEdit, WebFetch and the MCP
    probe's tool one after another, each call in its own turn, each answered remotely while
    its hook is held before the next one is asked; ExitPlanMode (plan mode) has a session of
    its own. 2.1.332 acts on a bare allow for every tool here but ExitPlanMode, which needs
    ``updatedInput`` (its dialog stays open otherwise); a deny's message is the tool result.
    Delivered = the hook read it; adopted = the tool's PostToolUse(Failure), or the turn's
    Stop after a deny."""
    r = rig({"turns": []}, builder=f"b-tools-{decision}", form="worktree")
    ready = r.tmp / "mcp-ready"
    (r.project / "existing.txt").write_text("old line\n")
    (r.project / "nb.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    r.api.set_script({"turns": [*(t for tool in tools for t in tool_turns(tool, r.project)), text_turn(AFTER_TOOLS)]})
    settings: dict[str, Any] = {"permissions": {"defaultMode": "plan" if tools == ("ExitPlanMode",) else "default"}}
    args: list[str] = []
    if "MCP" in tools:
        cfg = r.tmp / "mcp-probe.json"
        cfg.write_text(json.dumps({"mcpServers": {"probe": {
            "command": sys.executable, "args": [str(Path(__file__).with_name("mcp_probe.py")), str(ready)]}}}))
        args = ["--mcp-config", str(cfg)]
    marker = {"allow": "Allowed by PermissionRequest hook", "deny": "Denied by PermissionRequest hook"}[decision]
    extra = ["--text", TOOL_DENY] if decision == "deny" else []
    ids: dict[str, str] = {}
    with TmuxClaude(r.project, r.env, settings=settings, extra_args=args, claude_bin=r.claude_bin,
                    tmux=tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        if "MCP" in tools:
            wait_until(ready.exists, 30, 0.05, "Claude Code listing the probe MCP server's tools")
        tui.submit("Use the tools")
        for tool in tools:
            with for_tool(tool, decision):
                p = pending_permission(r)
                assert p["tool_name"] == HOOK_NAMES.get(tool, tool), p
                ids[tool] = p["id"]
                wait_held(r, p["id"])
                assert not tool_effect(tool, r.project)
                assert json.loads(r.hookd.cli("answer", p["id"], "--option", decision, *extra, "--json"))["delivery"] == "hook"
                # acted on: said under this call on screen before the next call is asked (lines scroll away)
                try:
                    tui.wait_for_screen(lambda s, tool=tool: shown_under_call(s, tool, marker), timeout=20)
                except TimeoutError as exc:
                    raise AssertionError(f"{marker!r} not shown under its call: {exc}") from None
        tui.wait_for_screen(AFTER_TOOLS, timeout=20)  # the turn went on after the last one
        ev = r.wait_events(lambda ev: all(about(ev, "answer_adopted", i) for i in ids.values()), "answer_adopted",
                           timeout=20)

    main = r.api.main_requests()
    for tool in tools:
        with for_tool(tool, decision):
            tid = TOOL_IDS[tool]
            # the request that carries this tool's result (later requests repeat it)
            block = next((b for b in (tool_result_block(m, tid) for m in main) if b is not None), None)
            assert block is not None
            i = interaction(r, ids[tool])
            assert (i["state"], i["decision"], i["surface"], i["delivered_via"]) == ("answered", decision, "cli", "PermissionRequest")
            [adopted] = about(ev, "answer_adopted", ids[tool])
            if decision == "allow":
                assert tool_effect(tool, r.project) or tool in ("WebFetch", "ExitPlanMode")
                assert json.dumps(block["content"]) != json.dumps(TOOL_DENY)
                assert adopted["data"]["via"] in ("PostToolUse", "PostToolUseFailure")
                assert adopted["data"]["tool_use_id"] == tid and i["tool_use_id"] == tid
            else:
                assert not tool_effect(tool, r.project)
                assert block["content"] == TOOL_DENY and block["is_error"] is True
                assert adopted["data"]["via"] == "Stop"
            assert i["adopted_at"] >= i["delivered_at"] >= i["received_at"]
    assert held(r) == [] and hook_procs(permission_argv(r)) == []


# ====== 8. an answer kept in the inbox (no hook could carry it), then the desk answers otherwise
INBOX_ASK = "toolu_01ANSINBOXASK00000000001"


def test_tui_inbox_answer_then_another_desk_answer_is_framed_as_not_used(rig, tmux_bin):  # noqa: F811
    """Issue 18 item 13 (part): after a daemon restart no hook holds the open menu, so a remote
    answer is kept as an inbox message; the desk then answers otherwise. The model gets the
    desk's answer as the tool result and the remote one framed as not used."""
    r = rig({"turns": [ask_turn(INBOX_ASK), text_turn("AFTER-INBOX-8")]}, builder="b-inbox", form="worktree",
            daemon=False)
    r.hookd.cli("spawn", "b-inbox", "--worktree", os.fspath(r.project), "--hold", "0")  # nothing held, restart or not
    r.hookd.start()
    with r.tui(tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Ask me a color")
        tui.wait_for_screen(lambda s: MENU in s and "2. Blue" in s, timeout=30)
        r.wait_hook("PermissionRequest", tool_name="AskUserQuestion")
        r.hookd.stop()
        r.hookd.start()
        out = answer_raw(r, INBOX_ASK, "--option", "Red")
        assert out.returncode == 0 and "queued as inbox message m-1" in out.stdout, out
        tui.send_keys("Down")
        tui.wait_for_screen(r"❯ 2\. Blue", timeout=5)
        tui.press_until("Enter", lambda s: MENU not in s, timeout=10)
        tui.wait_for_screen("AFTER-INBOX-8", timeout=30)

    main = r.api.main_requests()
    assert len(main) == 2 and f'"{Q}"="Blue"' in main[1].tool_results()[INBOX_ASK]
    late = f"[Late answer to question {INBOX_ASK} (not used: already answered at the desk: Blue)]"
    assert main[1].contains(late) and not main[1].contains(f"[Answer to question {INBOX_ASK}]")
    [m] = json.loads(r.hookd.cli("inbox", "--json"))
    assert m["text"] == f"{late}\nQ: {Q}\nA: Red"
