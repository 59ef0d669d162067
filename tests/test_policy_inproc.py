"""Question policy (issue 21, moment 8), in process: what closes a question, permission prompt,
plan or elicitation nobody answered. A session's end or its agent's death closes them
``orphaned``; a human dismisses a stale one (who, where, why; a held hook let go with no
decision); a builder's opt-in default answer after a deadline goes through the answer path
(actor ``hookd``, surface ``default``); a late human answer after any of these is kept as an
inbox message. The default answer firing in a real daemon: tests/test_policy.py; with the real
Claude Code: tests/e2e/test_policy_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest

from hookd.cli_render import _interaction
from hookd.config import ConfigError, Home
from hookd.spawn import spawn

from .conftest import wait_until
from .inproc import InProc
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, Q, SID, about, auq_post, bash_perm, payload
from .test_answers_inproc import Rig, finish, refused
from .test_plans_inproc import plan_perm

pytestmark = pytest.mark.inproc

SESSION_END = payload("014-SessionEnd.json")


class PolicyRig(Rig):
    """A spawned builder, optionally with a default answer after ``after`` seconds."""

    def __init__(self, app: InProc, worktree: Path, *, after: int | None = None, label: str | None = None):
        super().__init__(app, worktree, hold=30)
        if after is not None:  # what `hookd spawn b1 --default-answer-after S [--default-answer L]` does
            spawn(Home.resolve(app.home.root), self.name, worktree=worktree, hold_s=30,
                  default_answer_after_s=after, default_answer=label)

    def pending(self, kind: str) -> dict[str, Any]:
        def one() -> dict[str, Any] | None:
            ps = [q for q in self.app.questions("pending") if q["kind"] == kind]
            return ps[0] if ps else None
        return wait_until(one, 60, what=f"a pending {kind}")

    def dismiss(self, iid: str, reason: str = "stale: the agent was restarted", actor: str = "ana",
                surface: str = "cli") -> Any:
        return self.api("POST", f"/v1/interactions/{iid}/dismiss", {"reason": reason, "actor": actor, "surface": surface})

    def pending_ids(self) -> list[str]:
        return [q["id"] for q in self.app.questions("pending")]


@pytest.fixture
def rig(inproc: InProc, worktree: Path) -> PolicyRig:
    return PolicyRig(inproc, worktree)


def plain(shown: Any) -> str:
    return click.unstyle(str(shown))


# --- orphaned ----------------------------------------------------------------------------

def test_session_end_orphans_a_held_question_and_a_held_permission_prompt(rig: PolicyRig) -> None:
    rig.hook(AUQ_PRE)
    ask = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    perm = rig.start_hook(bash_perm("make deploy"))
    p = rig.pending("permission")
    rig.held(p["id"])
    rig.hook(SESSION_END)
    assert finish(ask) == (200, b"") and finish(perm) == (200, b"")  # let go: the desk is gone anyway
    for iid, event in ((ASK_ID, "question_resolved"), (p["id"], "permission_resolved")):
        i = rig.interaction(iid)
        assert (i["state"], i["outcome"], i["surface"], i["decision"]) == ("orphaned", "orphaned", None, None)
        [ev] = about(rig.events(), event, iid)
        assert (ev["data"]["outcome"], ev["data"]["inferred_from"]) == ("orphaned", "SessionEnd")
    assert rig.pending_ids() == []  # the human's queue is empty


def test_a_dead_agent_orphans_what_it_asked_and_leaves_async_asks_open(rig: PolicyRig) -> None:
    """The lanes' liveness check saw the agent's process gone (tests/test_lanes.py kills a real
    one): :meth:`hookd.core.policy.Policy.orphan` closes the session's open prompts."""
    rig.hook(AUQ_PRE)
    ask = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    a = rig.api("POST", "/v1/builders/b1/asks", {"question": "deploy on friday?", "session_id": SID}).json()["interaction"]
    closed = rig.app.call(rig.app.core.orphan("b1", SID, "pid 4242 is gone"))
    assert closed == [ASK_ID] and finish(ask) == (200, b"")
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["warning"]) == ("orphaned", "the agent's process is gone (pid 4242 is gone) while it was open")
    [ev] = about(rig.events(), "question_resolved", ASK_ID)
    assert (ev["data"]["outcome"], ev["data"]["inferred_from"]) == ("orphaned", "liveness")
    assert rig.pending_ids() == [a["id"]]  # an async ask reaches the next session through the inbox


# --- dismissed ---------------------------------------------------------------------------

def test_dismissing_a_held_permission_prompt_lets_its_hook_go_with_no_decision(rig: PolicyRig) -> None:
    held = rig.start_hook(bash_perm("make deploy"))
    p = rig.pending("permission")
    rig.held(p["id"])
    r = rig.dismiss(p["id"])
    assert r.status_code == 200, r.text
    assert finish(held) == (200, b"")  # no decision: the desk's dialog decides, never a fake answer
    i = rig.interaction(p["id"])
    assert (i["state"], i["outcome"], i["surface"], i["actor"], i["message"], i["decision"], i["by"]) == (
        "dismissed", "dismissed", "cli", "ana", "stale: the agent was restarted", None, "from the CLI by ana")
    [ev] = about(rig.events(), "permission_resolved", p["id"])
    assert {k: ev["data"][k] for k in ("outcome", "surface", "actor", "reason")} == {
        "outcome": "dismissed", "surface": "cli", "actor": "ana", "reason": "stale: the agent was restarted"}
    assert rig.pending_ids() == []
    # the desk's dialog waits for someone there: the lane says so, not "working" (a fresh user's trial)
    lane = wait_until(lambda: (x := next(lane for lane in rig.app.get("/v1/lanes") if lane["builder"] == "b1"))
                      ["state"] == "waiting_permission" and x, 60, what="the lane waiting at the desk")
    assert (lane["detail"], lane["pending"]) == (
        "its PermissionRequest dialog is open at the desk (dismissed from hookd's queue: answer it there)", [])
    assert "is already dismissed from the CLI by ana" in refused(rig.dismiss(p["id"]), 409)
    # a late deny with a message is kept for the agent; a bare allow means nothing to it
    late = refused(rig.answer(p["id"], options=["deny"], text="use the staging target"))
    assert "already dismissed" in late and "kept as inbox message m-1" in late
    [m] = rig.inbox()
    assert m["text"] == (f"[Late answer to permission prompt {p['id']} for Bash (not used: the permission prompt was already"
                         " dismissed)] deny: use the staging target")


def test_a_dismissal_needs_a_reason_and_a_known_surface(rig: PolicyRig) -> None:
    rig.hook(AUQ_PRE)
    assert "say why it is dismissed" in refused(rig.dismiss(ASK_ID, reason="  "), 400)
    assert "surface must be one of cli, api, web" in refused(rig.dismiss(ASK_ID, surface="default"), 400)
    assert "no interaction 'nope'" in refused(rig.dismiss("nope"), 404)
    assert rig.interaction(ASK_ID)["state"] == "pending"


def test_a_late_answer_to_a_dismissed_question_is_kept_as_a_message(rig: PolicyRig) -> None:
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    assert rig.dismiss(ASK_ID, actor="bo", surface="web").status_code == 200
    assert finish(held) == (200, b"")
    # its menu waits at the desk: the lane says so, not "working" (a fresh user's trial)
    lane = wait_until(lambda: (x := next(lane for lane in rig.app.get("/v1/lanes") if lane["builder"] == "b1"))
                      ["state"] == "waiting_question" and x, 60, what="the lane waiting at the desk")
    assert (lane["detail"], lane["pending"]) == (
        "its question's menu is open at the desk (dismissed from hookd's queue: answer it there)", [])
    late = refused(rig.answer(ASK_ID, options=["Red"]))
    assert "already dismissed on the page by bo" in late and "kept as inbox message m-1" in late
    [m] = rig.inbox()
    assert m["text"].endswith(f"\nQ: {Q}\nA: Red") and "the question was already dismissed" in m["text"]


def test_a_late_answer_to_an_orphaned_question_is_kept_as_a_message(rig: PolicyRig) -> None:
    rig.hook(AUQ_PRE)
    rig.hook(SESSION_END)
    late = refused(rig.answer(ASK_ID, options=["Blue"]))
    assert f"{ASK_ID} is already orphaned" in late and "kept as inbox message m-1" in late
    [m] = rig.inbox()
    assert "the question was already orphaned" in m["text"] and m["text"].endswith("A: Blue")


# --- the default answer ------------------------------------------------------------------

def test_a_default_answer_reaches_the_held_question_through_the_answer_path(inproc: InProc, worktree: Path) -> None:
    rig = PolicyRig(inproc, worktree, after=2, label="Blue")
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    status, out = finish(held, timeout=60)  # the default fires: the held hook goes with Blue
    assert status == 200
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Blue"}
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["answers"], i["surface"], i["actor"], i["by"]) == (
        "answered", {Q: "Blue"}, "default", "hookd", "as the builder's default answer by hookd")
    [ev] = about(rig.events(), "interaction_answered", ASK_ID)
    assert (ev["data"]["surface"], ev["data"]["actor"], ev["data"]["delivery"]) == ("default", "hookd", "hook")
    # a human who answers later is told so, and the text is kept for the agent
    late = refused(rig.answer(ASK_ID, options=["Red"]))
    assert "already answered as the builder's default answer by hookd" in late and "inbox message m-1" in late
    assert rig.inbox()[0]["text"].endswith("A: Red")


def test_the_default_answer_of_a_permission_prompt_denies_it(inproc: InProc, worktree: Path) -> None:
    rig = PolicyRig(inproc, worktree, after=1)
    held = rig.start_hook(bash_perm("make deploy"))
    status, out = finish(held, timeout=60)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and decision["message"].startswith(
        "No one answered this permission prompt within 1s; hookd's default answer for this builder denies it.")
    [p] = rig.app.questions("resolved")
    assert (p["outcome"], p["surface"], p["actor"]) == ("denied", "default", "hookd")


def test_the_default_answer_of_a_plan_sends_it_back(inproc: InProc, worktree: Path) -> None:
    rig = PolicyRig(inproc, worktree, after=1)
    held = rig.start_hook(plan_perm())
    status, out = finish(held, timeout=60)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and "sends it back" in decision["message"]


def test_a_human_first_means_no_default_answer(inproc: InProc, worktree: Path) -> None:
    rig = PolicyRig(inproc, worktree, after=3)
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    [q] = rig.app.questions("pending")
    assert q["default_answer"]["answer"] == "answers Red"  # no label: the first option
    rig.answer_json(ASK_ID, options=["Blue"])
    assert json.loads(finish(held)[1])["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Blue"}
    # the pass that would have fired finds it answered (compare-and-set): nothing more happens
    assert rig.app.call(rig.app.core.policy.defaults_pass(q["default_answer"]["at"] + 1)) is None
    i = rig.interaction(ASK_ID)
    assert (i["surface"], i["answers"]) == ("cli", {Q: "Blue"})
    assert len(about(rig.events(), "interaction_answered", ASK_ID)) == 1


def test_no_default_answer_unless_the_builder_opted_in(rig: PolicyRig) -> None:
    rig.hook(AUQ_PRE)
    [q] = rig.app.questions("pending")
    assert "default_answer" not in q and "default_answer" not in rig.interaction(ASK_ID)
    assert rig.app.call(rig.app.core.policy.defaults_pass(q["created_at"] + 86400)) is None
    assert rig.interaction(ASK_ID)["state"] == "pending"


def test_hookd_questions_shows_the_countdown(inproc: InProc, worktree: Path) -> None:
    rig = PolicyRig(inproc, worktree, after=25, label="Blue")
    rig.hook(AUQ_PRE)
    [q] = rig.app.questions("pending")
    assert q["default_answer"] == {"answer": "answers Blue", "at": q["created_at"] + 25}
    assert rig.interaction(ASK_ID)["default_answer"] == q["default_answer"]
    shown = plain(_interaction(q, q["created_at"] + 10)).splitlines()
    assert shown[0] == f"{ASK_ID}  question from b1, waiting 10s, answers Blue in 15s unless you answer"
    # due, before the daemon's next pass gives it: "now", not "in 0s"
    shown = plain(_interaction(q, q["created_at"] + 27)).splitlines()
    assert shown[0] == f"{ASK_ID}  question from b1, waiting 27s, answers Blue now unless you answer"


def test_hookd_questions_shows_why_it_was_dismissed(rig: PolicyRig) -> None:
    rig.hook(AUQ_PRE)
    rig.dismiss(ASK_ID, reason="asked twice; see toolu_2")
    [q] = rig.app.questions("resolved")
    assert plain(_interaction(q, q["resolved_at"] + 180)) == (
        f"{ASK_ID}  question from b1, dismissed from the CLI by ana, 3m ago\n"
        f"  {Q}\n"
        "  why: asked twice; see toolu_2")


def test_spawn_refuses_a_default_answer_no_hook_could_carry(home: Path, worktree: Path) -> None:
    h = Home.resolve(home)
    with pytest.raises(ConfigError, match="goes with --default-answer-after"):
        spawn(h, "b1", worktree=worktree, default_answer="Blue")
    with pytest.raises(ConfigError, match="between 1 and 29 seconds"):
        spawn(h, "b1", worktree=worktree, hold_s=30, default_answer_after_s=30)
    with pytest.raises(ConfigError, match="--hold 0 has none"):
        spawn(h, "b1", worktree=worktree, hold_s=0, default_answer_after_s=10)
    m = spawn(h, "b1", worktree=worktree)
    assert m["default_answer"] is None  # never on by default


def test_the_desks_answer_after_a_dismissal_is_recorded(rig: PolicyRig) -> None:
    """A dismissal lets the held hook go with no decision: the desk's menu stays open, and what
    the desk then answers is what the agent got, so it is recorded (the dismissal in the warning)."""
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    assert rig.dismiss(ASK_ID, reason="looked stale").status_code == 200
    assert finish(held) == (200, b"")
    rig.hook(auq_post("Red"))
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["answers"], i["surface"], i["actor"], i["message"], i["warning"]) == (
        "answered", {Q: "Red"}, "terminal", None, None,
        "dismissed from the CLI by ana (looked stale), then answered at the desk")
    assert [e["data"]["outcome"] for e in rig.events() if e["kind"] == "question_resolved"] == ["dismissed", "answered"]


def test_the_default_answer_of_an_elicitation_declines_it(inproc: InProc, worktree: Path) -> None:
    from .test_elicitations_inproc import ELICIT, ElicitRig

    rig = ElicitRig(inproc, worktree)  # (its Elicitation hook takes the hold route, as spawned)
    spawn(Home.resolve(inproc.home.root), "b1", worktree=worktree, hold_s=30, default_answer_after_s=1)
    held = rig.start_hook(ELICIT)
    status, out = finish(held, timeout=60)
    assert (status, out) == (200, b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"decline"}}')
    [i] = rig.app.questions("resolved")
    assert (i["kind"], i["decision"], i["surface"], i["actor"]) == ("elicitation", "decline", "default", "hookd")
