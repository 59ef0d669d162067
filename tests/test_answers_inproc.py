"""Answering from anywhere, in process (tests/inproc.py): remote answers through the held
PermissionRequest hook, permission prompts, idempotent answers, late and expired answers kept
as inbox messages, pre-registered answers, async asks. Hooks go to the app's hook routes with
the generated client's headers (PermissionRequest to ``/hold`` with the spawn's hold as its
deadline); answers go as ``hookd answer`` sends them (``surface: cli``). What the generated
client, the CLI's rendering and the process add is tests/test_answers.py."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookd.config import Home
from hookd.harness.base import encode_answer
from hookd.models import os_user
from hookd.spawn import spawn

from .conftest import wait_until
from .inproc import WAIT_S, InProc
from .test_answers import (ASK_ID, AUQ_PERM, AUQ_PRE, BASH_POST, Q, STOP, about, auq_post, bash_perm,
                           bash_post, payload)

pytestmark = pytest.mark.inproc


class Rig:
    """A spawned builder (PermissionRequest held up to ``hold`` s) and the in-process app."""

    def __init__(self, app: InProc, worktree: Path, hold: int = 30, name: str = "b1"):
        self.app, self.worktree, self.name, self.hold = app, worktree, name, hold
        spawn(Home.resolve(app.home.root), name, worktree=worktree, hold_s=hold)  # what `hookd spawn` does

    def start_hook(self, p: dict[str, Any]) -> concurrent.futures.Future[httpx.Response]:
        """Post a hook as the spawned command does, in the background."""
        if p["hook_event_name"] == "PermissionRequest" and self.hold:
            return self.app.submit_hook(p, self.name, route="/hold", deadline_ms=self.hold * 1000)
        return self.app.submit_hook(p, self.name)

    def hook(self, p: dict[str, Any]) -> str:
        r = self.start_hook(p).result(WAIT_S)
        assert r.status_code == 200, r.text
        return r.text

    def held(self, interaction_id: str) -> None:
        """Wait until the core holds a PermissionRequest hook for ``interaction_id``."""
        wait_until(lambda: interaction_id in self.app.get("/v1/status").get("held", []), 60,
                   what=f"a held hook for {interaction_id}")

    def answer(self, iid: str, *, options: tuple[str, ...] | list[str] = (), text: str | None = None,
               question: str | None = None, response_id: str | None = None, revision: int | None = None,
               actor: str | None = None) -> httpx.Response:
        """``POST /v1/interactions/{iid}/answer`` with the body ``hookd answer`` sends."""
        return self.api("POST", f"/v1/interactions/{iid}/answer", {
            "response_id": response_id, "actor": actor, "revision": revision, "surface": "cli",
            "question": question, "options": list(options), "text": text})

    def answer_json(self, iid: str, **kw: Any) -> dict[str, Any]:
        r = self.answer(iid, **kw)
        assert r.status_code == 200, r.text
        return r.json()

    def api(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return self.app.request(method, path, json=body)

    def interaction(self, iid: str) -> dict[str, Any]:
        return self.app.interaction(iid)

    def inbox(self) -> list[dict[str, Any]]:
        return self.app.inbox(self.name)

    def events(self) -> list[dict[str, Any]]:
        return self.app.events()


@pytest.fixture
def rig(inproc: InProc, worktree: Path) -> Rig:
    return Rig(inproc, worktree)


def finish(fut: concurrent.futures.Future[httpx.Response], timeout: float = 10) -> tuple[int, bytes]:
    r = fut.result(timeout)
    return r.status_code, r.content


def refused(r: httpx.Response, status: int = 409) -> str:
    """The refusal's message (``hookd answer`` prints it and exits 2)."""
    assert r.status_code == status, r.text
    return r.json()["error"]["message"]


# --- native AskUserQuestion --------------------------------------------------------------

def test_hold_window_ends_with_no_decision(inproc: InProc, worktree: Path) -> None:
    rig = Rig(inproc, worktree, hold=5)  # the daemon answers 1.5 s before the client's deadline
    rig.hook(AUQ_PRE)
    t0 = time.monotonic()
    held = rig.start_hook(AUQ_PERM)
    status, out = finish(held, timeout=10)
    assert (status, out) == (200, b"") and 3.0 <= time.monotonic() - t0 < 5.0
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["held"]) == ("pending", False)  # still open at the desk, and only there answered
    assert [e["data"] for e in rig.events() if e["kind"] == "hold_ended"] == [
        {"id": ASK_ID, "kind": "question", "reason": "deadline"}]


def test_a_question_no_hook_can_carry_an_answer_to_is_listed_for_the_desk(inproc: InProc, worktree: Path) -> None:
    """``held`` of a pending question in ``GET /v1/questions``: True while a hook would carry a
    remote answer (its PermissionRequest hook still to come), False once none can (that hook
    came and was not held: holding off here, or a daemon restarted since): `hookd questions`
    then says the desk answers it, and an answer from here is queued as a message."""
    rig = Rig(inproc, worktree, hold=0)
    rig.hook(AUQ_PRE)
    assert [q.get("held") for q in rig.app.questions("pending") if q["id"] == ASK_ID] == [True]
    rig.hook(AUQ_PERM)  # not held: the menu is open at the desk and no hook waits
    assert [q.get("held") for q in rig.app.questions("pending") if q["id"] == ASK_ID] == [False]
    receipt = rig.answer_json(ASK_ID, options=["Red"])
    assert receipt["delivery"] == "inbox" and "only be answered at the desk" in receipt["warning"]


def test_answer_before_the_permission_request_arrives(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    receipt = rig.answer_json(ASK_ID, options=["Red"])
    assert receipt["delivery"] == "hook"  # the PermissionRequest hook is still to come
    out = rig.hook(AUQ_PERM)  # returns the waiting answer at once
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Red"}


def test_desk_wins_after_the_remote_answer_was_sent(rig: Rig) -> None:
    """The race's other order: the held hook returned Red, but the desk's Blue reached the
    tool (Claude Code ignores a hook answer that comes after the menu closed)."""
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    rig.answer_json(ASK_ID, options=["Red"])
    finish(held)
    rig.hook(auq_post("Blue"))
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["answers"]) == ("answered", "terminal", {Q: "Blue"})
    assert "kept as inbox message m-1" in i["warning"]
    [m] = rig.inbox()
    assert m["text"].endswith("A: Red")  # no lost text
    evs = rig.events()
    [sup] = about(evs, "answer_superseded", ASK_ID)
    assert sup["data"]["remote"]["answers"] == {Q: "Red"} and sup["data"]["answers"] == {Q: "Blue"}
    assert len(about(evs, "question_resolved", ASK_ID)) == 1


def test_desk_and_remote_at_the_same_instant(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    go = threading.Barrier(2)
    results: dict[str, Any] = {}

    def remote() -> None:
        go.wait()
        results["remote"] = rig.answer(ASK_ID, options=["Red"])

    def desk() -> None:
        go.wait()
        results["desk"] = rig.hook(auq_post("Blue"))

    threads = [threading.Thread(target=remote), threading.Thread(target=desk)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    finish(held)
    # whoever came first, the desk's Blue is what the tool got, and the remote Red is kept
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["answers"]) == ("answered", "terminal", {Q: "Blue"})
    [m] = rig.inbox()
    assert m["text"].startswith(f"[Late answer to question {ASK_ID} (not used: ") and m["text"].endswith(f"\nQ: {Q}\nA: Red")
    r = results["remote"]
    assert r.status_code in (200, 409) and (r.status_code == 200 or "kept as inbox message m-1" in refused(r))
    assert len(about(rig.events(), "question_resolved", ASK_ID)) == 1


def test_a_kept_answer_outlives_its_session_and_a_session_message_does_not(rig: Rig) -> None:
    """A human's answer kept as a message goes to the question's session while it lives; once
    that session has ended it is the builder's, and its next session (a new one, not a resume)
    takes it at its first boundary. A fresh user's trial found one queued for good: the
    builder's next `hookd run` began a new session. A message sent for that session
    (`hookd send --session`) stays its own (field case B25)."""
    rig.hook(AUQ_PRE)
    rig.hook(auq_post("Blue"))  # the desk answered first
    assert rig.answer(ASK_ID, options=["Red"]).status_code == 409  # kept as m-1, for the live session
    sid = AUQ_PRE["session_id"]
    r = rig.api("POST", "/v1/builders/b1/messages", {"text": "for that session only", "session_id": sid})
    assert r.status_code in (200, 201), r.text
    second = "toolu_01ASK0000000000000000002"
    rig.hook(dict(AUQ_PRE, tool_use_id=second))  # a second question, open as the session ends
    assert [(m["id"], m["session_id"], m["answer_to"]) for m in rig.inbox()] == [
        ("m-1", sid, ASK_ID), ("m-2", sid, None)]
    rig.hook(payload("014-SessionEnd.json"))
    assert rig.interaction(second)["state"] == "orphaned"
    assert [(m["id"], m["session_id"]) for m in rig.inbox()] == [("m-1", None), ("m-2", sid)]
    # an answer to a question of the ended session: the builder's at once
    assert rig.answer(second, options=["Red"]).status_code == 409
    assert [(m["id"], m["session_id"], m["answer_to"]) for m in rig.inbox()][2] == ("m-3", None, second)
    new = "9d6f2c1e-0000-4000-8000-000000000001"
    out = rig.hook(dict(payload("001-SessionStart.json"), session_id=new, source="startup"))
    assert f"Late answer to question {ASK_ID}" in out and f"Late answer to question {second}" in out
    assert "for that session only" not in out
    states = {m["id"]: (m["state"], m["delivered_session_id"]) for m in rig.inbox()}
    assert states == {"m-1": ("delivered", new), "m-2": ("queued", None), "m-3": ("delivered", new)}


# --- idempotency and refusals --------------------------------------------------------------

def test_same_response_id_twice_returns_the_first_receipt(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    first = rig.answer_json(ASK_ID, options=["Red"], response_id="k1")
    again = rig.answer_json(ASK_ID, options=["Red"], response_id="k1")
    assert again["duplicate"] is True and first["duplicate"] is False
    assert again["interaction"] == first["interaction"] and again["delivery"] == first["delivery"]
    assert len(about(rig.events(), "interaction_answered", ASK_ID)) == 1
    assert rig.inbox() == []


def test_same_response_id_other_content_is_a_conflict(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    rig.answer_json(ASK_ID, options=["Red"], response_id="k1")
    r = rig.answer(ASK_ID, options=["Blue"], response_id="k1")
    assert "response_id 'k1' was already used for another answer" in refused(r)
    resp = rig.api("POST", f"/v1/interactions/{ASK_ID}/answer", {"options": ["Blue"], "response_id": "k1"})
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "conflict"
    assert rig.interaction(ASK_ID)["answers"] == {Q: "Red"}
    assert rig.inbox() == []  # a retry bug, not a human's second thought: nothing queued


def test_a_rest_body_cannot_claim_a_chat_or_the_hubs_surface(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    for surface in ("telegram", "slack", "hub", "terminal"):
        r = rig.api("POST", f"/v1/interactions/{ASK_ID}/answer", {"options": ["Blue"], "surface": surface})
        assert refused(r, 400) == "surface must be one of cli, api, web"
    assert rig.interaction(ASK_ID)["state"] == "pending"


def test_second_answer_is_refused_and_kept(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    rig.answer_json(ASK_ID, options=["Red"])
    r = rig.answer(ASK_ID, text="Green, actually")
    assert f"already answered from the CLI by {os_user()}" in refused(r)
    assert rig.interaction(ASK_ID)["answers"] == {Q: "Red"}
    [m] = rig.inbox()
    assert m["text"].endswith("A: Green, actually")
    # and its refusal is idempotent too
    r1 = rig.answer(ASK_ID, options=["Blue"], response_id="late")
    r2 = rig.answer(ASK_ID, options=["Blue"], response_id="late")
    assert r1.status_code == r2.status_code == 409 and r1.json() == r2.json()
    assert len(rig.inbox()) == 2


def test_stale_revision_is_refused(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    seen = rig.interaction(ASK_ID)["revision"]
    rig.hook(AUQ_PRE)  # a repeated PreToolUse changes nothing
    assert rig.interaction(ASK_ID)["revision"] == seen
    r = rig.answer(ASK_ID, options=["Red"], revision=seen + 5)
    assert f"is at revision {seen}, not {seen + 5}" in refused(r)
    assert rig.answer(ASK_ID, options=["Red"], revision=seen).status_code == 200


# --- permission prompts --------------------------------------------------------------------

def pending_permission(rig: Rig) -> dict[str, Any]:
    def one() -> dict[str, Any] | None:
        ps = [q for q in rig.app.questions("pending") if q["kind"] == "permission"]
        return ps[0] if ps else None
    return wait_until(one, 60, what="a pending permission prompt")


def test_permission_prompt_remote_deny_with_message(rig: Rig) -> None:
    cmd = "rm -rf build"
    held = rig.start_hook(bash_perm(cmd))
    p = pending_permission(rig)
    rig.held(p["id"])
    assert [q["held"] for q in rig.app.questions("pending") if q["id"] == p["id"]] == [True]
    rig.answer_json(p["id"], options=["deny"], text="not now, use ls")
    status, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "not now, use ls"}
    wait_until(lambda: rig.interaction(p["id"])["delivered_at"], 60, what="the deny delivered")
    # 2.1.332 fires no PostToolUse(Failure) for a hook's deny (the model gets the message as
    # an error tool result): the turn going on without one is the proof
    assert rig.interaction(p["id"])["adopted_at"] is None
    rig.hook(STOP)
    i = rig.interaction(p["id"])
    assert (i["decision"], i["message"], i["surface"]) == ("deny", "not now, use ls", "cli") and i["adopted_at"]
    [ev] = about(rig.events(), "answer_adopted", p["id"])
    assert ev["data"]["via"] == "Stop"


def reads_recorded_late(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Hold back the recording of a held hook's read (``core.reply_read``) as a busy daemon
    may: the first event is set once a held hook's reply is out, and the read is recorded once
    the test sets the second. (The ASGI transport's response ends only after that recording.)"""
    replied, read_now = threading.Event(), threading.Event()
    record_read = rig.app.core.reply_read

    async def read_late(iid: str, read: bool | None) -> None:
        replied.set()
        await asyncio.to_thread(read_now.wait, WAIT_S)
        await record_read(iid, read)

    monkeypatch.setattr(rig.app.core, "reply_read", read_late)
    return replied, read_now


def test_a_remote_deny_whose_turn_went_on_before_its_read_was_recorded_is_adopted(
        rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other order: the agent's Stop is taken before the held hook's close (its client read
    the deny), as a busy daemon may take two connections. Adopted once the read is recorded,
    via the Stop; not before (the read could still turn out not to have happened)."""
    replied, read_now = reads_recorded_late(rig, monkeypatch)
    held = rig.start_hook(bash_perm("rm -rf build"))
    p = pending_permission(rig)
    rig.held(p["id"])
    rig.answer_json(p["id"], options=["deny"], text="not now, use ls")
    assert replied.wait(WAIT_S)
    rig.hook(STOP)
    i = rig.interaction(p["id"])
    assert (i["delivered_at"], i["adopted_at"]) == (None, None)
    read_now.set()
    # (the held hook's ASGI cycle ends once the read is recorded)
    assert json.loads(finish(held)[1])["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    i = rig.interaction(p["id"])
    assert i["delivered_at"] and i["adopted_at"]
    ev = rig.events()
    [adopted] = about(ev, "answer_adopted", p["id"])
    assert adopted["data"]["via"] == "Stop"
    kinds = [e["kind"] for e in ev if e["data"].get("id") == p["id"]]
    assert kinds.index("answer_delivered") < kinds.index("answer_adopted")


def test_an_answer_to_a_call_id_that_another_session_reused_names_the_open_one(rig: Rig) -> None:
    """A replayed or scripted session reuses a call id: its question's id gets a suffix
    (``<id>~<8 hex>``). An answer given to the bare id, answered long ago, is refused naming the
    open question, and nothing is kept for the old one's builder."""
    rig.hook(AUQ_PRE)
    rig.hook(auq_post("Blue"))  # answered at the desk
    assert rig.interaction(ASK_ID)["state"] == "answered"
    again = {**AUQ_PRE, "session_id": "0b0b0b0b-1111-2222-3333-444444444444"}
    rig.hook(again)
    [open_q] = [q for q in rig.app.questions("pending") if q["kind"] == "question"]
    assert open_q["id"].startswith(ASK_ID + "~")
    msg = refused(rig.answer(ASK_ID, options=["Red"]))
    assert msg.startswith(f"{ASK_ID} is already answered") and f"open with the same call id: {open_q['id']} (question, b1)" in msg
    assert rig.inbox() == []
    assert rig.answer(open_q["id"], options=["Red"]).status_code == 200


def test_permission_answer_is_bound_to_the_input_shown(rig: Rig) -> None:
    held = rig.start_hook(bash_perm("make deploy"))
    p = pending_permission(rig)
    rig.held(p["id"])
    other = rig.api("POST", f"/v1/interactions/{p['id']}/answer",
                    {"decision": "allow", "input_hash": "0" * 24, "response_id": "r1"})
    assert other.status_code == 409 and "another input" in other.json()["error"]["message"]
    assert rig.interaction(p["id"])["state"] == "pending"
    ok = rig.api("POST", f"/v1/interactions/{p['id']}/answer", {"decision": "allow", "input_hash": p["input_hash"]})
    assert ok.status_code == 200
    assert json.loads(finish(held)[1])["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    bad = rig.answer(p["id"], options=["maybe"])  # over, and a misfit too: that it is over first
    assert bad.status_code == 409 and "is already allowed" in refused(bad)  # (`hookd answer` exits 2)
    assert "the answer did not fit it: a permission prompt takes --option allow or --option deny" in refused(bad)


def test_permission_desk_allow_releases_the_held_hook(rig: Rig) -> None:
    cmd = "npm test"
    held = rig.start_hook(bash_perm(cmd))
    p = pending_permission(rig)
    rig.held(p["id"])
    rig.hook(bash_post(cmd))
    assert finish(held, timeout=20) == (200, b"")  # released by the PostToolUse, not its 30 s hold
    i = rig.interaction(p["id"])
    assert (i["state"], i["decision"], i["surface"]) == ("answered", "allow", "terminal")


def test_permission_without_held_hook_is_refused(inproc: InProc, worktree: Path) -> None:
    rig = Rig(inproc, worktree, hold=0)
    rig.hook(bash_perm("ls -la /"))
    p = pending_permission(rig)
    assert p["held"] is False  # what `hookd questions` shows: answer at the desk
    r = rig.answer(p["id"], options=["deny"], text="no")
    assert "only be answered at the desk" in refused(r)
    assert [m["text"] for m in rig.inbox()] == [
        f"[Late answer to permission prompt {p['id']} for Bash (not used: no hook was holding the permission prompt)] deny: no"]
    # a bare allow means nothing to the model: refused, not kept
    assert rig.answer(p["id"], options=["allow"]).status_code == 409 and len(rig.inbox()) == 1


# --- pre-registered answers --------------------------------------------------------------------

def test_preregistered_answer_is_returned_from_pretooluse(rig: Rig) -> None:
    r = rig.api("POST", "/v1/builders/b1/preanswers", {"question": Q, "answer": encode_answer(["Blue"], None), "actor": None})
    assert r.status_code == 201, r.text
    out = json.loads(rig.hook(AUQ_PRE))
    assert out == {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                          "updatedInput": {**AUQ_PRE["tool_input"], "answers": {Q: "Blue"}}}}
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["delivered_via"]) == ("answered", "hook", "PreToolUse")
    rig.hook(auq_post("Blue"))
    assert rig.interaction(ASK_ID)["adopted_at"]
    # used once: the next call with the same question gets the menu
    again = dict(AUQ_PRE, tool_use_id="toolu_01ASKAGAIN")
    assert rig.hook(again) == ""


# --- async asks and expiry -------------------------------------------------------------------

def ask(rig: Rig, question: str, options: list[str] | None = None) -> str:
    """``hookd ask b1 QUESTION [--option ...]``'s request; the new interaction's id."""
    r = rig.api("POST", f"/v1/builders/{rig.name}/asks", {"question": question, "options": options,
                                                         "expires_in_s": None, "author": None})
    assert r.status_code == 201, r.text
    return r.json()["interaction"]["id"]


def test_async_ask_answer_reaches_await_and_inbox(rig: Rig) -> None:
    iid = ask(rig, "Which database?", ["postgres", "sqlite"])
    assert iid.startswith("ask_")
    [ev] = about(rig.events(), "human_input_requested", iid)
    assert ev["data"]["async"] is True and ev["data"]["options"] == ["postgres", "sqlite"]
    t0 = time.monotonic()
    waited = rig.api("POST", "/v1/interactions/await", {"ids": [iid], "timeout_s": 0.5}).json()
    assert 0.5 <= time.monotonic() - t0 < 5
    assert waited["pending"] == [iid] and waited["timed_out"] is True and waited["answered"] == []
    # a waiter is woken by the answer (event-driven)
    waiting = rig.app.submit("POST", "/v1/interactions/await", json={"ids": [iid], "timeout_s": 20, "collect": False})
    receipt = rig.answer_json(iid, options=["sqlite"])
    got = waiting.result(10).json()
    assert got["answered"][0]["answers"] == {"Which database?": "sqlite"} and got["pending"] == []
    assert receipt["delivery"] == "inbox" and receipt["message_id"] == "m-1"
    # not collected: the answer reaches the agent at its next turn boundary
    ctx = json.loads(rig.hook(BASH_POST))["hookSpecificOutput"]["additionalContext"]
    assert f"[Answer to question {iid}]" in ctx and "A: sqlite" in ctx
    i = rig.interaction(iid)
    assert i["delivered_via"] == "inbox" and i["delivered_at"]


def test_await_collects_so_the_inbox_copy_is_not_sent_again(rig: Rig) -> None:
    iid = rig.api("POST", "/v1/builders/b1/asks", {"question": "Ship it?"}).json()["interaction"]["id"]
    rig.answer_json(iid, text="yes, ship")
    got = rig.api("POST", "/v1/interactions/await", {"ids": [iid], "timeout_s": 1}).json()
    assert got["answered"][0]["answers"] == {"Ship it?": "yes, ship"}
    assert rig.hook(BASH_POST) == ""  # adopted via await_answers: not injected again
    [m] = rig.inbox()
    assert (m["state"], m["adopted_via"]) == ("adopted", "await_answers")
    assert rig.interaction(iid)["adopted_at"]


def test_answer_after_expiry_is_refused_and_kept(rig: Rig) -> None:
    iid = rig.api("POST", "/v1/builders/b1/asks", {"question": "Deploy today?", "expires_in_s": 0.3}).json()["interaction"]["id"]
    wait_until(lambda: rig.interaction(iid)["state"] == "expired", 60, what="expired")
    [ev] = about(rig.events(), "question_resolved", iid)
    assert ev["data"]["outcome"] == "expired"
    r = rig.answer(iid, text="yes")
    message = refused(r)
    assert "is already expired" in message and "kept as inbox message m-1" in message
    assert rig.inbox()[0]["text"] == f"[Late answer to question {iid} (not used: the question was already expired)]\nQ: Deploy today?\nA: yes"
    closed = rig.api("POST", "/v1/interactions/await", {"ids": [iid], "timeout_s": 0}).json()
    assert closed["closed"] == [{"id": iid, "state": "expired", "warning": rig.interaction(iid)["warning"]}]


def test_ask_for_unknown_builder_and_bad_await(rig: Rig) -> None:
    assert rig.api("POST", "/v1/builders/nobody/asks", {"question": "?"}).status_code == 404
    assert rig.api("POST", "/v1/interactions/await", {"ids": ["ask_nope"], "timeout_s": 0}).status_code == 404
    assert rig.api("POST", "/v1/interactions/await", {"ids": ["x"], "timeout_s": 601}).status_code == 400
    assert rig.api("POST", "/v1/interactions/await", {"ids": ["x"]}).status_code == 400


def test_listing_keeps_the_newest_interactions(rig: Rig) -> None:
    """`GET /v1/questions?limit=N` lists the newest N (oldest first): a long history never
    hides what was asked last."""
    ids = [ask(rig, f"Question {n}?") for n in range(3)]
    assert [i["id"] for i in rig.app.get("/v1/questions", state="all", limit=2)] == ids[1:]
    assert [i["id"] for i in rig.app.get("/v1/questions", state="all")] == ids
    for bad in ("0", "x", "100001"):
        assert rig.app.request("GET", "/v1/questions", params={"state": "all", "limit": bad}).status_code == 400
