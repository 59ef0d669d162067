"""A dialog no hook holds (docs/harness-claude-code.md "A dialog no hook holds"): Claude Code
2.1.332 in auto mode whose check cannot run (a gateway, offline) asks at the desk with no
PermissionRequest hook, and says so only in Notification hooks (``agent_needs_input`` for auto
mode's chooser, then ``permission_prompt``). hookd makes the agent's open tool call a
permission prompt only the desk answers: listed, on the lane, notified; its tool's end or the
turn going on settles it. Payloads are the recorded ones of two fresh users' trials (their
Notification texts) on the recorded Bash call, in process (tests/inproc.py)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from .conftest import wait_until
from .inproc import InProc
from .test_answers import BASH_POST, BASH_PRE, STOP, bash_perm, bash_post, payload
from .test_answers_inproc import Rig

pytestmark = pytest.mark.inproc

CHOOSER = payload("009-Notification.json", notification_type="agent_needs_input",
                  message="Auto mode can't check actions in this session and needs your choice")
PROMPT = payload("009-Notification.json")  # "Claude needs your permission", permission_prompt
IDLE = payload("009-Notification.json", notification_type="idle_prompt", message="Claude is waiting for your input")
CALL = BASH_PRE["tool_use_id"]


@pytest.fixture
def rig(inproc: InProc, worktree: Path) -> Rig:
    return Rig(inproc, worktree)


def _lane(rig: Rig) -> dict:
    return next(lane for lane in rig.app.get("/v1/lanes") if lane["builder"] == rig.name)


def test_a_dialog_said_only_by_notifications_is_a_prompt_the_desk_answers(rig: Rig) -> None:
    rig.hook(payload("001-SessionStart.json"))
    rig.hook(payload("002-UserPromptSubmit.json"))
    rig.hook(BASH_PRE)
    assert rig.app.questions("pending") == []
    rig.hook(CHOOSER)
    [i] = rig.app.questions("pending")
    assert (i["kind"], i["tool_name"], i["tool_use_id"], i["input"]) == (
        "permission", "Bash", CALL, BASH_PRE["tool_input"])
    assert i["held"] is False  # no hook holds it: only the desk answers it
    assert i["warning"] == ("asked at the desk with no hook to hold (Auto mode can't check actions in this session"
                            " and needs your choice), its harness's agent_needs_input: only the desk answers it")
    [pending] = [e for e in rig.events() if e["kind"] == "permission_pending"]
    assert pending["data"]["held"] is False and pending["data"]["id"] == i["id"]
    assert wait_until(lambda: (lane := _lane(rig))["state"] in ("waiting_permission", "stalled") and lane, 60,
                      what="the lane waiting on the prompt")["pending"] == [i["id"]]
    # an answer from here: refused, saying why (no hook came for it), not "holding is off"
    r = rig.answer(i["id"], options=["allow"])
    assert r.status_code == 409 and (
        f"{i['id']} was asked at the desk with no hook of its own (its harness fired none for this dialog)"
        in r.json()["error"]["message"]), r.text
    rig.hook(PROMPT)  # the permission dialog after the chooser: the same prompt, not a second
    assert [q["id"] for q in rig.app.questions("pending")] == [i["id"]]
    rig.hook(BASH_POST)  # the desk said Yes: the tool ran
    done = rig.interaction(i["id"])
    assert (done["state"], done["decision"], done["surface"]) == ("answered", "allow", "terminal")
    assert rig.app.questions("pending") == []


def test_a_notification_with_a_prompt_already_pending_or_no_call_open_adds_nothing(rig: Rig) -> None:
    rig.hook(payload("001-SessionStart.json"))
    rig.hook(IDLE)  # not a dialog
    rig.hook(PROMPT)  # no tool call open
    assert rig.app.questions("pending") == []
    rig.hook(BASH_PRE)
    held = rig.start_hook(bash_perm(BASH_PRE["tool_input"]["command"]))  # its own hook: held
    [i] = wait_until(lambda: rig.app.questions("pending"), 60, what="the PermissionRequest's prompt")
    rig.held(i["id"])
    rig.hook(PROMPT)  # ~6 s after its dialog opened: the same prompt
    assert [q["id"] for q in rig.app.questions("pending")] == [i["id"]]
    assert rig.app.questions("pending")[0]["held"] is True
    rig.hook(bash_post(BASH_PRE["tool_input"]["command"], CALL))  # the desk's Yes: its hook let go
    assert held.result(30).status_code == 200
    assert rig.interaction(i["id"])["state"] == "answered"


def test_a_desk_dialog_the_turn_went_past_is_dismissed(rig: Rig) -> None:
    """No at the desk fires no hook; the turn's Stop settles the prompt, as a question's."""
    rig.hook(payload("001-SessionStart.json"))
    rig.hook(BASH_PRE)
    rig.hook(PROMPT)
    [i] = rig.app.questions("pending")
    rig.hook(STOP)
    assert rig.interaction(i["id"])["state"] == "dismissed"


def _interrupt(t: Path, at: float) -> None:
    """The transcript's interrupt row (Esc or No at a dialog), written at ``at`` (UNIX seconds)."""
    stamp = datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    with open(t, "ab") as f:
        f.write(json.dumps({"type": "user", "sessionId": BASH_PRE["session_id"], "timestamp": stamp, "message": {
            "role": "user", "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]}}).encode()
            + b"\n")


def test_an_interrupt_closes_the_prompts_no_hook_holds_and_asked_before_it(inproc: InProc, worktree: Path,
                                                                          tmp_path: Path) -> None:
    """Esc or No at a dialog no hook holds (a builder spawned ``--hold 0``, a dialog only a
    Notification said) fires no hook: the transcript's interrupt row closes it ``dismissed``.
    A prompt asked after the row was written (read late) stays, and so does one a hook holds
    (its hook's going settles it). A fresh user's trial left one pending, the lane stalled."""
    rig = Rig(inproc, worktree, hold=0)
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    rig.hook(payload("001-SessionStart.json", transcript_path=str(t)))
    rig.hook(payload("002-UserPromptSubmit.json"))
    rig.hook(BASH_PRE)
    rig.hook(bash_perm("make deploy"))  # (held for none: --hold 0)
    [i] = rig.app.questions("pending")
    assert i["held"] is False
    _interrupt(t, time.time())
    wait_until(lambda: rig.interaction(i["id"])["state"] == "dismissed", 60, what="the prompt dismissed")
    assert rig.interaction(i["id"])["warning"] == (
        "the desk interrupted the turn while it was open (its transcript: [Request interrupted by user for tool use])")
    [resolved] = [e for e in rig.events() if e["kind"] == "permission_resolved"]
    assert resolved["data"]["inferred_from"] == "transcript interrupt"
    # a row written before the next prompt was asked, read after it: that prompt stays
    before = time.time() - 1
    rig.hook(payload("002-UserPromptSubmit.json"))
    rig.hook(bash_perm("make release"))
    [j] = rig.app.questions("pending")
    _interrupt(t, before)
    wait_until(lambda: len([e for e in rig.events() if e["kind"] == "turn_interrupted"]) == 2, 60,
               what="the second interrupt read")
    assert rig.interaction(j["id"])["state"] == "pending"


def test_an_interrupt_leaves_a_held_prompt_to_its_hook(rig: Rig, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    rig.hook(payload("001-SessionStart.json", transcript_path=str(t)))
    rig.hook(BASH_PRE)
    held = rig.start_hook(bash_perm("make deploy"))
    [i] = wait_until(lambda: rig.app.questions("pending"), 60, what="the prompt")
    rig.held(i["id"])
    _interrupt(t, time.time())
    wait_until(lambda: [e for e in rig.events() if e["kind"] == "turn_interrupted"], 60, what="the interrupt read")
    assert rig.interaction(i["id"])["state"] == "pending" and not held.done()
    rig.hook(bash_post("make deploy", CALL))
    assert held.result(30).status_code == 200
