"""Question policy (issue 21, moment 8) in a real daemon, through the generated hook client and
the CLI: a builder spawned with ``--default-answer-after`` gets its held question answered by
the daemon's own timer; ``hookd dismiss`` lets a held permission prompt go with no decision.
The rules one by one, in process: tests/test_policy_inproc.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hookd.daemonproc import DaemonProcess

from .conftest import hookd_cli, hookd_run, wait_until
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, Q, Rig, about, bash_perm, finish

pytestmark = pytest.mark.daemon


def test_the_daemon_answers_a_held_question_by_default_after_the_deadline(
        home: Path, worktree: Path, daemon: DaemonProcess) -> None:
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--hold", "30",
                  "--default-answer-after", "2", "--default-answer", "Blue")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == ("default answer after 2s unanswered: a question gets Blue (else the first "
                                         "option); a permission prompt or a plan is denied, an elicitation declined")
    rig = Rig.__new__(Rig)  # (spawned above, with the default answer)
    rig.home, rig.worktree, rig.name = home, worktree, "b1"
    rig.settings = worktree / ".claude" / "settings.local.json"
    assert rig.hook(AUQ_PRE) == ""
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    # (what `hookd questions` shows meanwhile, the countdown, is asserted exactly in process:
    # here it may already have fired)
    # the daemon's timer fires (2 s after it was asked): the held hook goes with Blue
    status, out = finish(held, timeout=60)
    assert status == 0
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Blue"}
    wait_until(lambda: rig.interaction(ASK_ID)["state"] == "answered", 60, what="answered by default")
    i = rig.interaction(ASK_ID)
    assert (i["surface"], i["actor"], i["answers"]) == ("default", "hookd", {Q: "Blue"})
    shown = hookd_cli(home, "questions", "--state", "resolved").stdout.splitlines()
    assert shown[0].startswith(f"{ASK_ID}  question from b1, answered as the builder's default answer by hookd, ")
    assert shown[1:] == [f"  {Q} -> Blue"]
    # a human's answer after it: refused (exit 2), kept as an inbox message
    late = rig.answer(ASK_ID, "--option", "Red")
    assert late.returncode == 2 and "kept as inbox message m-1" in late.stderr


def test_hookd_dismiss_lets_a_held_permission_prompt_go_with_no_decision(
        home: Path, worktree: Path, daemon: DaemonProcess) -> None:
    rig = Rig(home, worktree)
    held = rig.start_hook(bash_perm("make deploy"))
    [p] = wait_until(lambda: json.loads(hookd_cli(rig.home, "questions", "--json").stdout), 60, what="a prompt")
    rig.held(p["id"])
    r = hookd_cli(rig.home, "dismiss", p["id"], "--reason", "stale: asked before the restart", "--actor", "ana")
    assert (r.returncode, r.stdout, r.stderr) == (
        0, f"dismissed {p['id']} (permission, b1): stale: asked before the restart\n", "")
    assert finish(held) == (0, b"")  # no decision: the desk decides
    assert hookd_cli(rig.home, "questions").stdout == "no questions\n"
    shown = hookd_cli(rig.home, "questions", "--state", "resolved").stdout.splitlines()
    assert shown[0].startswith(f"{p['id']}  permission from b1, dismissed from the CLI by ana, ")
    assert shown[-1] == "  why: stale: asked before the restart"
    again = hookd_cli(rig.home, "dismiss", p["id"], "--reason", "again")
    assert (again.returncode, again.stdout) == (2, "")
    assert f"{p['id']} is already dismissed from the CLI by ana: nothing to dismiss" in again.stderr
    [ev] = about([json.loads(x) for x in hookd_cli(rig.home, "events", "--json").stdout.splitlines()],
                 "permission_resolved", p["id"])
    assert (ev["data"]["outcome"], ev["data"]["actor"], ev["data"]["reason"]) == (
        "dismissed", "ana", "stale: asked before the restart")
