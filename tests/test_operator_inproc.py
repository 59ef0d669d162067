"""The operator's words and second thoughts, in process (tests/inproc.py; issue 20 items 4, 6,
7): one vocabulary for how an interaction ended, where and by whom (``outcome``, ``by``, the
actor defaulting to the daemon's user); a queued message taken back (``POST
/v1/messages/{id}/cancel``), never delivered by any path; an unspawned builder's lane and the
refused send. The CLI's own output for these is tests/test_operator.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home
from hookd.models import OUTCOMES, SURFACE_TEXT, by_text, os_user, outcome_of
from hookd.spawn import spawn, unspawn

from .conftest import LOCAL_TIME
from .inproc import InProc
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, BASH_POST, Q, STOP, auq_post, bash_perm
from .test_answers_inproc import Rig, pending_permission, refused

pytestmark = pytest.mark.inproc


@pytest.fixture
def rig(inproc: InProc, worktree: Path) -> Rig:
    return Rig(inproc, worktree)


def kinds(rig: Rig, kind: str) -> list[dict[str, Any]]:
    return [e for e in rig.events() if e["kind"] == kind]


# --- item 4: one vocabulary ------------------------------------------------------------------

def test_the_vocabulary_maps_each_stored_value_once() -> None:
    assert [outcome_of("permission", "answered", d) for d in ("allow", "deny")] == ["allowed", "denied"]
    assert [outcome_of("question", s, None) for s in ("pending", "answered", "dismissed")] == [
        "pending", "answered", "dismissed"]
    assert outcome_of("permission", "pending", None) == "pending"
    assert set(OUTCOMES) >= {"allowed", "denied", "answered", "pending", "superseded"}
    assert by_text("cli", "ana") == "from the CLI by ana" and by_text("terminal", None) == "at the desk"
    assert by_text("web", "ana") == "on the page by ana" and by_text(None, None) is None
    assert set(SURFACE_TEXT) == {"terminal", "cli", "web", "api", "hook", "default", "hub"}
    assert by_text("hub", "op_ana") == "from the fleet's hub by op_ana"  # (issue 25: an operator's answer)
    assert by_text("default", "hookd") == "as the builder's default answer by hookd"  # (issue 21 moment 8)


def test_the_page_maps_no_word_of_its_own() -> None:
    """The page shows the API's ``outcome`` and ``by`` (the words the CLI prints): it holds no
    table of surfaces or outcomes that could drift from :data:`hookd.models.SURFACE_TEXT`."""
    js = "\n".join(line for line in (Path(__file__).parents[1] / "hookd" / "static" / "app.js").read_text().splitlines()
                   if not line.lstrip().startswith("//"))
    assert "return i.outcome || i.state;" in js and 'return i.by || "";' in js
    for words in SURFACE_TEXT.values():
        assert f'"{words}"' not in js


def test_a_deny_from_the_cli_is_denied_by_the_os_user(rig: Rig) -> None:
    """No --actor: the daemon records its own user (the CLI sends the same name by default),
    never null; the API says ``denied``/``from the CLI by <user>`` as the page does."""
    fut = rig.start_hook(bash_perm("rm -f README.md"))
    p = pending_permission(rig)
    rig.held(p["id"])
    rig.answer_json(p["id"], options=["deny"], text="not that file")
    fut.result(30)
    i = rig.interaction(p["id"])
    me = os_user()
    assert (i["state"], i["decision"], i["outcome"], i["actor"], i["by"]) == (
        "answered", "deny", "denied", me, f"from the CLI by {me}")
    [answered] = kinds(rig, "interaction_answered")
    assert answered["data"]["actor"] == me


def test_a_late_answer_says_where_the_first_came_from_in_words(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    rig.hook(auq_post("Blue"))  # the desk answers first
    message = refused(rig.answer(ASK_ID, options=["Red"], actor="ana"))
    assert f"{ASK_ID} is already answered at the desk at " in message
    assert message.endswith("; your answer was kept as inbox message m-1 for b1; take it back: hookd inbox cancel m-1")
    [m] = rig.inbox()
    assert m["author"] == "ana"
    assert m["text"] == f"[Late answer to question {ASK_ID} (not used: already answered at the desk: Blue)]\nQ: {Q}\nA: Red"


# --- item 6: take back a queued message -----------------------------------------------------------

def test_a_refused_late_answer_taken_back_is_never_delivered(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    rig.hook(auq_post("Blue"))
    refused(rig.answer(ASK_ID, options=["Red"]))
    r = rig.api("POST", "/v1/messages/m-1/cancel", {"actor": "ana", "surface": "cli"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["cancelled"] is True and body["message"]["state"] == "cancelled" and body["message"]["cancelled_at"]
    [ev] = kinds(rig, "inbox_cancelled")
    assert (ev["builder"], ev["data"]) == ("b1", {"id": "m-1", "actor": "ana", "surface": "cli"})
    # every boundary after it: a tool result, then the Stop (which would block the agent)
    assert rig.hook(BASH_POST) == "" and rig.hook(STOP) == ""
    [m] = rig.inbox()
    assert (m["state"], m["deliveries"], m["delivered_at"]) == ("cancelled", 0, None)
    assert not kinds(rig, "inbox_delivered")
    assert [lane["queued"] for lane in rig.app.get("/v1/lanes")] == [0]
    # again: the same message, not cancelled twice
    again = rig.api("POST", "/v1/messages/m-1/cancel", {})
    assert again.status_code == 200 and again.json()["cancelled"] is False
    assert len(kinds(rig, "inbox_cancelled")) == 1


def test_a_delivered_message_cannot_be_taken_back(rig: Rig) -> None:
    rig.api("POST", "/v1/builders/b1/messages", {"text": "also update the changelog"})
    assert "also update the changelog" in rig.hook(BASH_POST)  # delivered in the tool result
    r = rig.api("POST", "/v1/messages/m-1/cancel", {"surface": "cli"})
    assert r.status_code == 409
    err = r.json()["error"]
    assert err["code"] == "conflict"
    assert err["message"].startswith("m-1 was already delivered by PostToolUse at ")
    assert err["message"].endswith(", so it cannot be taken back (the agent may have read it); send b1 a correction instead")
    assert rig.api("POST", "/v1/messages/m-9/cancel", {}).json()["error"] == {
        "code": "not_found", "message": "no inbox message 'm-9'"}
    assert rig.api("POST", "/v1/messages/m-1/cancel", {"surface": "desk"}).status_code == 400
    # once its proof came (the next Stop, no transcript here), the refusal names both: the hook
    # that delivered it and the proof, each by its own name (a fresh user's trial read "adopted
    # by PostToolUse" where the proof was the transcript)
    rig.hook(STOP)
    assert rig.inbox()[0]["state"] == "adopted"
    err = rig.api("POST", "/v1/messages/m-1/cancel", {}).json()["error"]
    assert re.fullmatch(rf"m-1 was already delivered by PostToolUse at {LOCAL_TIME}, adopted \(its proof: Stop\), so it cannot"
                        r" be taken back \(the agent may have read it\); send b1 a correction instead", err["message"]), err


def test_a_cancelled_message_is_not_drained_by_claw_http(inproc: InProc, worktree: Path) -> None:
    """claw-http's drains (between tools, before the final answer) take from the same query
    as the hooks (``tx.inbox.deliverable``): nothing of a cancelled message."""
    reg = inproc.request("POST", "/v1/claw/c1/sessions", json={"session_id": "run-1"})
    assert reg.status_code in (200, 201), reg.text
    sent = inproc.request("POST", "/v1/builders/c1/messages", json={"text": "stop after this step"}).json()
    assert inproc.request("POST", f"/v1/messages/{sent['message']['id']}/cancel", json={}).status_code == 200
    for boundary in ("between_tools", "before_final"):
        d = inproc.request("POST", "/v1/claw/c1/sessions/run-1/drain", json={"boundary": boundary})
        assert d.status_code == 200, d.text
        assert (d.json()["ids"], d.json()["text"], d.json()["continue"]) == ([], "", False)


def test_an_idle_wake_skips_a_cancelled_message(inproc: InProc, worktree: Path) -> None:
    """The idle wake (an async Stop hook held until a message comes) takes from the same query:
    a message taken back before the agent stopped never wakes it; the next one does, alone."""
    spawn(Home.resolve(inproc.home.root), "b1", worktree=worktree, wake_wait_s=60)
    assert inproc.hook(BASH_POST).status_code == 200
    inproc.request("POST", "/v1/builders/b1/messages", json={"text": "never mind"})
    assert inproc.request("POST", "/v1/messages/m-1/cancel", json={}).json()["cancelled"] is True
    assert inproc.hook(STOP).text == ""  # the regular Stop hook: nothing to block with
    wake = inproc.submit_hook(STOP, route="/wake", deadline_ms=60_000)
    inproc.request("POST", "/v1/builders/b1/messages", json={"text": "wake up, please"})
    r = wake.result(60)
    assert "[human msg m-2 " in r.text and "wake up, please" in r.text and "never mind" not in r.text
    assert [m["state"] for m in inproc.inbox("b1")] == ["cancelled", "delivered"]


def test_an_answer_queued_instead_says_how_to_take_it_back(inproc: InProc, worktree: Path) -> None:
    """No hook holds the question (holding off): the answer is queued as a message, and the
    receipt says how to take it back; taken back, the next boundary carries nothing."""
    rig = Rig(inproc, worktree, hold=0)
    rig.hook(AUQ_PRE)
    rig.hook(AUQ_PERM)
    receipt = rig.answer_json(ASK_ID, options=["Red"])
    assert receipt["delivery"] == "inbox" and receipt["message_id"] == "m-1"
    assert receipt["warning"].endswith("; your answer was queued as inbox message m-1 instead"
                                       " (take it back: hookd inbox cancel m-1)")
    assert rig.api("POST", "/v1/messages/m-1/cancel", {}).json()["cancelled"] is True
    rig.hook(auq_post("Blue"))  # the desk answers; the turn goes on
    assert rig.hook(BASH_POST) == "" and rig.hook(STOP) == ""
    assert [m["state"] for m in rig.inbox()] == ["cancelled"]


# --- item 7: an unspawned builder ------------------------------------------------------------------

def test_an_unspawned_builder_is_shown_so_and_a_send_to_it_refused(rig: Rig) -> None:
    rig.hook(BASH_POST)  # seen: it has a lane (working)
    assert [(lane["builder"], lane["state"]) for lane in rig.app.get("/v1/lanes")] == [("b1", "working")]
    home = Home.resolve(rig.app.home.root)
    assert rig.api("POST", "/v1/builders/b1/unspawned", {}).status_code == 404  # not unspawned
    unspawn(home, "b1")
    told = rig.api("POST", "/v1/builders/b1/unspawned", {})  # what `hookd unspawn` sends next
    assert told.status_code == 200 and told.json()["builder"] == "b1"
    [ev] = kinds(rig, "builder_unspawned")
    assert (ev["builder"], ev["data"]) == ("b1", {"unspawned_at": told.json()["unspawned_at"]})
    [lane] = rig.app.get("/v1/lanes")
    assert lane["state"] == "unspawned" and lane["detail"].startswith("unspawned at ")
    assert lane["detail"].endswith("(was working: last hook PostToolUse)")
    [b] = rig.app.get("/v1/status")["builders"]
    assert b["spawned"] is False and b["unspawned_at"] == pytest.approx(lane["since"])
    r = rig.api("POST", "/v1/builders/b1/messages", {"text": "are you there?"})
    assert r.status_code == 409
    assert r.json()["error"]["message"].startswith("b1 was unspawned at ")
    assert r.json()["error"]["message"].endswith(
        ": no session of its agent still runs hookd's hooks, so the message would wait forever; spawn it again,"
        " or send with --force to queue it anyway")
    assert rig.inbox() == []
    # its running session still sends hooks (Claude Code keeps the hooks it started with): said so
    rig.hook(BASH_POST)
    r = rig.api("POST", "/v1/builders/b1/messages", {"text": "are you there?"})
    assert r.status_code == 409
    msg = r.json()["error"]["message"]
    assert re.fullmatch(r"b1 was unspawned at [^,]+, but its running session (\S+) \(still sending hooks, last hook at "
                        r"[^)]+\) keeps the hooks it started with until it ends: send with --force to queue the "
                        r"message for that session, or spawn b1 again for its next sessions", msg), msg
    assert re.search(r"session (\S+) ", msg)[1] == BASH_POST["session_id"]
    assert rig.inbox() == []
    forced = rig.api("POST", "/v1/builders/b1/messages", {"text": "are you there?", "force": True})
    assert forced.status_code == 201 and forced.json()["message"]["state"] == "queued"
    # spawned again: a lane like any other, sends accepted
    spawn(home, "b1", worktree=rig.worktree)
    assert [lane["state"] for lane in rig.app.get("/v1/lanes")] == ["working"]
    assert rig.app.get("/v1/status")["builders"][0]["unspawned_at"] is None
    assert rig.api("POST", "/v1/builders/b1/messages", {"text": "welcome back"}).status_code == 201
    assert json.loads(json.dumps(rig.inbox()))[-1]["text"] == "welcome back"
