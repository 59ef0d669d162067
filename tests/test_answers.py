"""Answering from anywhere: remote answers through the held PermissionRequest hook, permission
prompts, idempotent answers, late and expired answers kept as inbox messages, pre-registered
answers, async asks (real daemon; hooks run as Claude Code runs them: ``sh -c "<command>"``)."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess
from hookd.models import HookdError

from .conftest import TUI, events, hookd_cli, questions, run_hook, settings_command, wait_until

SID = "346f6e3a-edc5-468f-856d-23ceddca3ede"
ASK_ID = "toolu_01ASK0000000000000000001"
Q = "Which color do you prefer?"


def payload(name: str, **changes: Any) -> dict[str, Any]:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    return p


AUQ_PRE = payload("007-PreToolUse.json")
AUQ_PERM = payload("008-PermissionRequest.json")
AUQ_POST = payload("010-PostToolUse.json")  # the desk chose Blue
BASH_PRE = payload("004-PreToolUse.json")
BASH_POST = payload("005-PostToolUse.json")
STOP = payload("012-Stop.json")


def auq_post(answer: str) -> dict[str, Any]:
    p = copy.deepcopy(AUQ_POST)
    p["tool_input"]["answers"] = {Q: answer}
    p["tool_response"]["answers"] = {Q: answer}
    return p


def bash_perm(command: str) -> dict[str, Any]:
    """A Bash PermissionRequest as 2.1.332 sends it (no tool_use_id)."""
    p = {k: v for k, v in BASH_PRE.items() if k != "tool_use_id"}
    p.update(hook_event_name="PermissionRequest", permission_mode="default",
             tool_input={"command": command, "description": "x"})
    return p


def bash_post(command: str, tool_use_id: str = "toolu_01PERMBASH0000000000001") -> dict[str, Any]:
    p = copy.deepcopy(BASH_POST)
    p.update(tool_input={"command": command, "description": "x"}, tool_use_id=tool_use_id)
    return p


class Rig:
    """A spawned builder (PermissionRequest held up to ``hold`` s) and its daemon."""

    def __init__(self, home: Path, worktree: Path, hold: int = 30, name: str = "b1"):
        self.home, self.worktree, self.name = home, worktree, name
        r = hookd_cli(home, "spawn", name, "--worktree", str(worktree), "--hold", str(hold))
        assert r.returncode == 0, r.stderr
        self.settings = worktree / ".claude" / "settings.local.json"

    def hook(self, p: dict[str, Any]) -> str:
        r = run_hook(settings_command(self.settings, p["hook_event_name"]), json.dumps(p).encode(), self.worktree)
        assert r.returncode == 0 and r.stderr == b"", r
        return r.stdout.decode()

    def start_hook(self, p: dict[str, Any]) -> subprocess.Popen[bytes]:
        """Start a hook in the background, in its own process group (as Claude Code does)."""
        proc = subprocess.Popen(["sh", "-c", settings_command(self.settings, p["hook_event_name"])],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=self.worktree, start_new_session=True)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(p).encode())
        proc.stdin.close()  # then EOF, as Claude Code does
        proc.stdin = None
        return proc

    def held(self, interaction_id: str) -> None:
        """Wait until the daemon holds a PermissionRequest hook for ``interaction_id``."""
        def holding() -> bool:
            with httpx.Client(transport=httpx.HTTPTransport(uds=str(Home(self.home).socket_path))) as c:
                return interaction_id in c.get("http://hookd/v1/status").json().get("held", [])
        wait_until(holding, 60, what=f"a held hook for {interaction_id}")

    def answer(self, iid: str, *args: str) -> subprocess.CompletedProcess[str]:
        return hookd_cli(self.home, "answer", iid, *args)

    def answer_json(self, iid: str, *args: str) -> dict[str, Any]:
        r = self.answer(iid, *args, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def api(self, method: str, path: str, body: Any = None) -> httpx.Response:
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(Home(self.home).socket_path)), timeout=30) as c:
            return c.request(method, "http://hookd" + path, json=body)

    def interaction(self, iid: str) -> dict[str, Any]:
        r = self.api("GET", f"/v1/interactions/{iid}")
        assert r.status_code == 200, r.text
        return r.json()

    def inbox(self) -> list[dict[str, Any]]:
        r = hookd_cli(self.home, "inbox", self.name, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)


@pytest.fixture
def rig(home: Path, worktree: Path, daemon: DaemonProcess) -> Rig:
    return Rig(home, worktree)


def finish(proc: subprocess.Popen[bytes], timeout: float = 10) -> tuple[int, bytes]:
    out, err = proc.communicate(timeout=timeout)
    assert err == b""
    return proc.returncode, out


def about(evs: list[dict[str, Any]], kind: str, iid: str) -> list[dict[str, Any]]:
    return [e for e in evs if e["kind"] == kind and e["data"].get("id") == iid]


# --- native AskUserQuestion --------------------------------------------------------------

def test_remote_answer_first_is_returned_by_the_held_hook(rig: Rig) -> None:
    assert rig.hook(AUQ_PRE) == ""
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    receipt = rig.answer_json(ASK_ID, "--option", "Red", "--actor", "ana")
    assert receipt["delivery"] == "hook" and receipt["duplicate"] is False
    rc, out = finish(held)
    assert rc == 0
    doc = json.loads(out)
    decision = doc["hookSpecificOutput"]["decision"]
    assert doc["hookSpecificOutput"]["hookEventName"] == "PermissionRequest"
    assert decision["behavior"] == "allow"
    # the original input plus every answer: never a decision without answers
    assert decision["updatedInput"] == {**AUQ_PRE["tool_input"], "answers": {Q: "Red"}}
    # delivered once the daemon has seen the client read the whole reply and close
    i = wait_until(lambda: (x := rig.interaction(ASK_ID))["delivered_at"] and x, 60, what="answer_delivered")
    assert (i["state"], i["surface"], i["actor"], i["answers"]) == ("answered", "cli", "ana", {Q: "Red"})
    assert i["received_at"] and i["delivered_at"] and i["delivered_via"] == "PermissionRequest"
    assert i["adopted_at"] is None
    # Claude Code runs the tool with that answer: PostToolUse proves it was adopted
    assert rig.hook(auq_post("Red")) == ""
    i = rig.interaction(ASK_ID)
    assert i["adopted_at"] >= i["delivered_at"] >= i["received_at"] >= i["created_at"]
    assert (i["state"], i["surface"], i["answers"]) == ("answered", "cli", {Q: "Red"})
    evs = events(rig.home)
    assert len(about(evs, "question_pending", ASK_ID)) == 1
    assert len(about(evs, "question_resolved", ASK_ID)) == 1
    assert [e["data"]["via"] for e in about(evs, "answer_delivered", ASK_ID)] == ["PermissionRequest"]
    assert len(about(evs, "answer_adopted", ASK_ID)) == 1
    assert rig.inbox() == []


def test_desk_first_releases_the_held_hook_at_once(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    assert rig.hook(auq_post("Blue")) == ""
    # released by that PostToolUse, not by the end of its 30 s hold (which ends 1.5 s earlier)
    rc, out = finish(held, timeout=20)
    assert (rc, out) == (0, b"")
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["answers"]) == ("answered", "terminal", {Q: "Blue"})
    # a remote answer now is refused with the reason, and kept for the builder
    r = rig.answer(ASK_ID, "--option", "Red")
    assert r.returncode == 2
    assert "already answered by terminal" in r.stderr and "kept as inbox message m-1" in r.stderr
    [m] = rig.inbox()
    assert m["state"] == "queued"
    assert m["text"] == f"[Late answer to question {ASK_ID} (not used: already answered at the terminal: Blue)]\nQ: {Q}\nA: Red"


def test_esc_at_the_desk_sigterms_the_held_hook_and_dismisses(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    os.killpg(held.pid, signal.SIGTERM)  # Claude Code signals the hook's process group
    rc, out = finish(held)
    assert (rc, out) == (0, b"")
    wait_until(lambda: rig.interaction(ASK_ID)["state"] == "dismissed", 60, what="dismissed")
    i = rig.interaction(ASK_ID)
    assert i["surface"] == "terminal" and i["answers"] is None
    [ev] = about(events(rig.home), "question_resolved", ASK_ID)
    assert ev["data"]["inferred_from"] == "hook cancelled"
    # the next Stop does not resolve it a second time
    rig.hook(STOP)
    assert len(about(events(rig.home), "question_resolved", ASK_ID)) == 1


def test_hold_window_ends_with_no_decision(home: Path, worktree: Path, daemon: DaemonProcess) -> None:
    rig = Rig(home, worktree, hold=5)  # the daemon answers 1.5 s before the client's deadline
    rig.hook(AUQ_PRE)
    t0 = time.monotonic()
    held = rig.start_hook(AUQ_PERM)
    rc, out = finish(held, timeout=10)
    assert (rc, out) == (0, b"") and 3.0 <= time.monotonic() - t0 < 5.0
    assert rig.interaction(ASK_ID)["state"] == "pending"  # still open at the desk


def test_answer_before_the_permission_request_arrives(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    receipt = rig.answer_json(ASK_ID, "--option", "Red")
    assert receipt["delivery"] == "hook"  # the PermissionRequest hook is still to come
    out = rig.hook(AUQ_PERM)  # returns the waiting answer at once
    assert json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Red"}


def test_no_held_hook_queues_the_answer_as_a_message(home: Path, worktree: Path, daemon: DaemonProcess) -> None:
    rig = Rig(home, worktree, hold=0)
    rig.hook(AUQ_PRE)
    assert rig.hook(AUQ_PERM) == ""  # not held
    r = rig.answer(ASK_ID, "--option", "Red")
    assert r.returncode == 0 and "queued as inbox message m-1" in r.stdout
    assert "no hook is holding" in r.stderr
    assert rig.interaction(ASK_ID)["state"] == "pending"  # the menu is still open at the desk
    assert [m["text"] for m in rig.inbox()] == [f"[Answer to question {ASK_ID}]\nQ: {Q}\nA: Red"]


def test_desk_wins_after_the_remote_answer_was_sent(rig: Rig) -> None:
    """The race's other order: the held hook returned Red, but the desk's Blue reached the
    tool (Claude Code ignores a hook answer that comes after the menu closed)."""
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    rig.answer_json(ASK_ID, "--option", "Red")
    finish(held)
    rig.hook(auq_post("Blue"))
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["surface"], i["answers"]) == ("answered", "terminal", {Q: "Blue"})
    assert "kept as inbox message m-1" in i["warning"]
    [m] = rig.inbox()
    assert m["text"].endswith("A: Red")  # no lost text
    evs = events(rig.home)
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
        results["remote"] = rig.answer(ASK_ID, "--option", "Red")

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
    assert r.returncode in (0, 2) and (r.returncode == 0 or "kept as inbox message m-1" in r.stderr)
    assert len(about(events(rig.home), "question_resolved", ASK_ID)) == 1


# --- idempotency and refusals --------------------------------------------------------------

def test_same_response_id_twice_returns_the_first_receipt(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    first = rig.answer_json(ASK_ID, "--option", "Red", "--response-id", "k1")
    again = rig.answer_json(ASK_ID, "--option", "Red", "--response-id", "k1")
    assert again["duplicate"] is True and first["duplicate"] is False
    assert again["interaction"] == first["interaction"] and again["delivery"] == first["delivery"]
    assert len(about(events(rig.home), "interaction_answered", ASK_ID)) == 1
    assert rig.inbox() == []


def test_same_response_id_other_content_is_a_conflict(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    rig.answer_json(ASK_ID, "--option", "Red", "--response-id", "k1")
    r = rig.answer(ASK_ID, "--option", "Blue", "--response-id", "k1")
    assert r.returncode == 2 and "response_id 'k1' was already used for another answer" in r.stderr
    resp = rig.api("POST", f"/v1/interactions/{ASK_ID}/answer", {"options": ["Blue"], "response_id": "k1"})
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "conflict"
    assert rig.interaction(ASK_ID)["answers"] == {Q: "Red"}
    assert rig.inbox() == []  # a retry bug, not a human's second thought: nothing queued


def test_second_answer_is_refused_and_kept(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    rig.answer_json(ASK_ID, "--option", "Red")
    r = rig.answer(ASK_ID, "--text", "Green, actually")
    assert r.returncode == 2 and "already answered by cli" in r.stderr
    assert rig.interaction(ASK_ID)["answers"] == {Q: "Red"}
    [m] = rig.inbox()
    assert m["text"].endswith("A: Green, actually")
    # and its refusal is idempotent too
    r1 = rig.answer(ASK_ID, "--option", "Blue", "--response-id", "late")
    r2 = rig.answer(ASK_ID, "--option", "Blue", "--response-id", "late")
    assert r1.returncode == r2.returncode == 2 and r1.stderr == r2.stderr
    assert len(rig.inbox()) == 2


def test_unknown_interaction_and_bad_answers(rig: Rig) -> None:
    r = rig.answer("toolu_nope", "--option", "Red")
    assert r.returncode == 1 and "no interaction 'toolu_nope'" in r.stderr
    rig.hook(AUQ_PRE)
    r = rig.answer(ASK_ID, "--option", "Purple")
    assert r.returncode == 2 and "'Purple' is not an option" in r.stderr and "'Red', 'Blue'" in r.stderr
    r = rig.answer(ASK_ID, "--option", "Red", "--option", "Blue")
    assert r.returncode == 2 and "one option or free text" in r.stderr
    r = rig.answer(ASK_ID)
    assert r.returncode == 2
    resp = rig.api("POST", f"/v1/interactions/{ASK_ID}/answer", {"options": "Red"})
    assert resp.status_code == 400 and set(resp.json()) == {"error"}
    assert rig.interaction(ASK_ID)["state"] == "pending"


def test_stale_revision_is_refused(rig: Rig) -> None:
    rig.hook(AUQ_PRE)
    seen = rig.interaction(ASK_ID)["revision"]
    rig.hook(AUQ_PRE)  # a repeated PreToolUse changes nothing
    assert rig.interaction(ASK_ID)["revision"] == seen
    r = rig.answer(ASK_ID, "--option", "Red", "--revision", str(seen + 5))
    assert r.returncode == 2 and f"is at revision {seen}, not {seen + 5}" in r.stderr
    assert rig.answer(ASK_ID, "--option", "Red", "--revision", str(seen)).returncode == 0


def test_multi_question_answer_by_cli_groups(rig: Rig) -> None:
    pre = copy.deepcopy(AUQ_PRE)
    pre["tool_use_id"] = "toolu_01MULTI"
    pre["tool_input"]["questions"].append({
        "question": "Which toppings?", "header": "Toppings", "multiSelect": True,
        "options": [{"label": "Cheese"}, {"label": "Ham, smoked"}, {"label": "Olives"}]})
    rig.hook(pre)
    r = rig.answer("toolu_01MULTI", "--option", "Red")
    assert r.returncode == 2 and "asks 2 questions; name one" in r.stderr and "2: 'Which toppings?'" in r.stderr
    r = rig.answer("toolu_01MULTI", "--question", "1", "--option", "Red")
    assert r.returncode == 2 and "missing: 'Which toppings?'" in r.stderr
    got = rig.answer_json("toolu_01MULTI", "--question", "1", "--option", "Red",
                          "--question", "Which toppings?", "--option", "Ham, smoked", "--option", "Cheese",
                          "--text", "extra basil")
    answers = got["interaction"]["answers"]
    assert answers == {Q: "Red", "Which toppings?": '"Ham, smoked", Cheese, extra basil'}
    sel = {s["question"]: s for s in got["interaction"]["selections"]}
    assert sel["Which toppings?"]["labels"] == ["Ham, smoked", "Cheese"]
    assert sel["Which toppings?"]["other"] == "extra basil"


# --- permission prompts --------------------------------------------------------------------

def pending_permission(rig: Rig) -> dict[str, Any]:
    def one() -> dict[str, Any] | None:
        ps = [q for q in questions(rig.home, "pending") if q["kind"] == "permission"]
        return ps[0] if ps else None
    return wait_until(one, 60, what="a pending permission prompt")


def test_permission_prompt_remote_allow(rig: Rig) -> None:
    cmd = "touch perm-probe && echo hello-from-bash"
    held = rig.start_hook(bash_perm(cmd))
    p = pending_permission(rig)
    assert (p["tool_name"], p["input"]) == ("Bash", {"command": cmd, "description": "x"})
    listing = hookd_cli(rig.home, "questions")
    assert "permission" in listing.stdout and "touch perm-probe" in listing.stdout
    rig.held(p["id"])
    rig.answer_json(p["id"], "--option", "allow")
    rc, out = finish(held)
    assert rc == 0 and json.loads(out) == {"hookSpecificOutput": {
        "hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}
    rig.hook(bash_post(cmd))  # the tool ran
    i = rig.interaction(p["id"])
    assert (i["state"], i["decision"], i["surface"]) == ("answered", "allow", "cli")
    assert i["adopted_at"] and i["tool_use_id"] == "toolu_01PERMBASH0000000000001"
    assert len(about(events(rig.home), "permission_resolved", p["id"])) == 1


def test_permission_prompt_remote_deny_with_message(rig: Rig) -> None:
    cmd = "rm -rf build"
    held = rig.start_hook(bash_perm(cmd))
    p = pending_permission(rig)
    rig.held(p["id"])
    rig.answer_json(p["id"], "--option", "deny", "--text", "not now, use ls")
    rc, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "not now, use ls"}
    wait_until(lambda: rig.interaction(p["id"])["delivered_at"], 60, what="the deny delivered")
    # 2.1.332 fires no PostToolUse(Failure) for a hook's deny (the model gets the message as
    # an error tool result): the turn going on without one is the proof
    assert rig.interaction(p["id"])["adopted_at"] is None
    rig.hook(STOP)
    i = rig.interaction(p["id"])
    assert (i["decision"], i["message"], i["surface"]) == ("deny", "not now, use ls", "cli") and i["adopted_at"]
    [ev] = about(events(rig.home), "answer_adopted", p["id"])
    assert ev["data"]["via"] == "Stop"


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
    bad = rig.answer(p["id"], "--option", "maybe")
    assert bad.returncode == 2


def test_permission_desk_allow_releases_the_held_hook(rig: Rig) -> None:
    cmd = "npm test"
    held = rig.start_hook(bash_perm(cmd))
    p = pending_permission(rig)
    rig.held(p["id"])
    rig.hook(bash_post(cmd))
    assert finish(held, timeout=20) == (0, b"")  # released by the PostToolUse, not its 30 s hold
    i = rig.interaction(p["id"])
    assert (i["state"], i["decision"], i["surface"]) == ("answered", "allow", "terminal")


def test_permission_without_held_hook_is_refused(home: Path, worktree: Path, daemon: DaemonProcess) -> None:
    rig = Rig(home, worktree, hold=0)
    rig.hook(bash_perm("ls -la /"))
    p = pending_permission(rig)
    r = rig.answer(p["id"], "--option", "deny", "--text", "no")
    assert r.returncode == 2 and "only be answered at the desk" in r.stderr
    assert [m["text"] for m in rig.inbox()] == [
        f"[Late answer to permission prompt {p['id']} for Bash (not used: no hook was holding the permission prompt)] deny: no"]
    # a bare allow means nothing to the model: refused, not kept
    assert rig.answer(p["id"], "--option", "allow").returncode == 2 and len(rig.inbox()) == 1


# --- pre-registered answers --------------------------------------------------------------------

def test_preregistered_answer_is_returned_from_pretooluse(rig: Rig) -> None:
    r = hookd_cli(rig.home, "preanswer", "b1", "--question", Q, "--option", "Blue")
    assert r.returncode == 0, r.stderr
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

def test_async_ask_answer_reaches_await_and_inbox(rig: Rig) -> None:
    r = hookd_cli(rig.home, "ask", "b1", "Which database?", "--option", "postgres", "--option", "sqlite", "--json")
    assert r.returncode == 0, r.stderr
    iid = json.loads(r.stdout)["interaction"]["id"]
    assert iid.startswith("ask_")
    [ev] = about(events(rig.home), "human_input_requested", iid)
    assert ev["data"]["async"] is True and ev["data"]["options"] == ["postgres", "sqlite"]
    t0 = time.monotonic()
    waited = rig.api("POST", "/v1/interactions/await", {"ids": [iid], "timeout_s": 0.5}).json()
    assert 0.5 <= time.monotonic() - t0 < 5
    assert waited["pending"] == [iid] and waited["timed_out"] is True and waited["answered"] == []
    # a waiter is woken by the answer (event-driven)
    box: dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.update(
        r=rig.api("POST", "/v1/interactions/await", {"ids": [iid], "timeout_s": 20, "collect": False}).json()))
    t.start()
    receipt = rig.answer_json(iid, "--option", "sqlite")
    t.join(10)
    assert box["r"]["answered"][0]["answers"] == {"Which database?": "sqlite"} and box["r"]["pending"] == []
    assert receipt["delivery"] == "inbox" and receipt["message_id"] == "m-1"
    # not collected: the answer reaches the agent at its next turn boundary
    ctx = json.loads(rig.hook(BASH_POST))["hookSpecificOutput"]["additionalContext"]
    assert f"[Answer to question {iid}]" in ctx and "A: sqlite" in ctx
    i = rig.interaction(iid)
    assert i["delivered_via"] == "inbox" and i["delivered_at"]


def test_await_collects_so_the_inbox_copy_is_not_sent_again(rig: Rig) -> None:
    iid = rig.api("POST", "/v1/builders/b1/asks", {"question": "Ship it?"}).json()["interaction"]["id"]
    rig.answer_json(iid, "--text", "yes, ship")
    got = rig.api("POST", "/v1/interactions/await", {"ids": [iid], "timeout_s": 1}).json()
    assert got["answered"][0]["answers"] == {"Ship it?": "yes, ship"}
    assert rig.hook(BASH_POST) == ""  # adopted via await_answers: not injected again
    [m] = rig.inbox()
    assert (m["state"], m["adopted_via"]) == ("adopted", "await_answers")
    assert rig.interaction(iid)["adopted_at"]


def test_answer_after_expiry_is_refused_and_kept(rig: Rig) -> None:
    iid = rig.api("POST", "/v1/builders/b1/asks", {"question": "Deploy today?", "expires_in_s": 0.3}).json()["interaction"]["id"]
    wait_until(lambda: rig.interaction(iid)["state"] == "expired", 60, what="expired")
    [ev] = about(events(rig.home), "question_resolved", iid)
    assert ev["data"]["outcome"] == "expired"
    r = rig.answer(iid, "--text", "yes")
    assert r.returncode == 2 and "is already expired" in r.stderr and "kept as inbox message m-1" in r.stderr
    assert rig.inbox()[0]["text"] == f"[Late answer to question {iid} (not used: the question was already expired)]\nQ: Deploy today?\nA: yes"
    closed = rig.api("POST", "/v1/interactions/await", {"ids": [iid], "timeout_s": 0}).json()
    assert closed["closed"] == [{"id": iid, "state": "expired", "warning": rig.interaction(iid)["warning"]}]


def test_ask_for_unknown_builder_and_bad_await(rig: Rig) -> None:
    assert rig.api("POST", "/v1/builders/nobody/asks", {"question": "?"}).status_code == 404
    assert rig.api("POST", "/v1/interactions/await", {"ids": ["ask_nope"], "timeout_s": 0}).status_code == 404
    assert rig.api("POST", "/v1/interactions/await", {"ids": ["x"], "timeout_s": 601}).status_code == 400
    assert rig.api("POST", "/v1/interactions/await", {"ids": ["x"]}).status_code == 400


def test_daemon_stop_lets_held_hooks_go(home: Path, worktree: Path) -> None:
    """SIGTERM lets a held hook go at once, with ``X-Hookd-Hold: <interaction id>`` (and an
    empty body): its client reconnects to the next daemon (tests/test_faults_client.py)."""
    import socket

    d = DaemonProcess(home).start()
    s = socket.socket(socket.AF_UNIX)
    try:
        rig = Rig(home, worktree)
        rig.hook(AUQ_PRE)
        body = json.dumps(AUQ_PERM).encode()
        s.connect(str(Home.resolve(home).socket_path))
        s.sendall(b"POST /v1/hooks/claude-code/b1/hold HTTP/1.1\r\nHost: hookd\r\nX-Hookd-Delivery: held-1\r\n"
                  b"X-Hookd-Deadline-Ms: 30000\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        rig.held(ASK_ID)
        assert d.stop() == 0
        s.settimeout(10)
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
        head, _, rest = raw.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and rest == b"", raw
        assert b"\r\nx-hookd-hold: %s\r\n" % ASK_ID.lower().encode() in head.lower() + b"\r\n", raw
    finally:
        s.close()
        d.kill()


def test_listing_keeps_the_newest_interactions(rig: Rig, daemon: DaemonProcess) -> None:
    """`GET /v1/questions?limit=N` lists the newest N (oldest first): a long history never
    hides what was asked last."""
    ids = []
    for n in range(3):
        r = hookd_cli(rig.home, "ask", "b1", f"Question {n}?", "--json")
        assert r.returncode == 0, r.stderr
        ids.append(json.loads(r.stdout)["interaction"]["id"])
    c = daemon.client()
    assert [i["id"] for i in c.get("/v1/questions", state="all", limit=2)] == ids[1:]
    assert [i["id"] for i in c.get("/v1/questions", state="all")] == ids
    for bad in ("0", "x", "100001"):
        with pytest.raises(HookdError) as e:
            c.get("/v1/questions", state="all", limit=bad)
        assert e.value.status == 400


def test_another_sessions_transcript_copy_never_re_decides_an_answered_question(rig: Rig, tmp_path: Path) -> None:
    """A later session of the same builder whose transcript holds the same AskUserQuestion
    call (a fork's copy, or a scripted model reusing the id) with another outcome (here the
    harness's refusal, as plain `claude -p` writes it) leaves the question answered remotely in
    the first session as it was: no supersede, no second resolution, no late-answer message."""
    assert rig.hook(AUQ_PRE) == ""
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    rig.answer_json(ASK_ID, "--option", "Red", "--actor", "ana")
    assert finish(held)[0] == 0
    assert rig.hook(auq_post("Red")) == ""
    assert rig.hook(payload("014-SessionEnd.json")) == ""
    before = rig.interaction(ASK_ID)
    assert (before["state"], before["surface"], before["adopted_at"] is not None) == ("answered", "cli", True)
    other = "s-later"
    use = {"type": "assistant", "sessionId": other, "uuid": "u-1", "parentUuid": None,
           "timestamp": "2026-11-30T21:00:00.000Z",
           "message": {"role": "assistant", "content": [
               {"type": "tool_use", "id": ASK_ID, "name": "AskUserQuestion", "input": AUQ_PRE["tool_input"]}]}}
    err = {"type": "user", "sessionId": other, "uuid": "u-2", "parentUuid": "u-1",
           "timestamp": "2026-11-30T21:00:01.000Z",
           "message": {"role": "user", "content": [
               {"type": "tool_result", "tool_use_id": ASK_ID, "is_error": True,
                "content": "<tool_use_error>Error: No such tool available: AskUserQuestion</tool_use_error>"}]}}
    t = tmp_path / f"{other}.jsonl"
    t.write_text(json.dumps(use) + "\n" + json.dumps(err) + "\n")
    assert hookd_cli(rig.home, "tail", str(t), "--builder", rig.name).returncode == 0
    wait_until(lambda: [e for e in events(rig.home) if e["session_id"] == other], 60,
               what="the later session's transcript read")
    after = rig.interaction(ASK_ID)
    assert {k: after[k] for k in ("state", "surface", "answers", "session_id", "revision")} == {
        k: before[k] for k in ("state", "surface", "answers", "session_id", "revision")}
    evs = events(rig.home)
    assert about(evs, "answer_superseded", ASK_ID) == []
    assert len(about(evs, "question_resolved", ASK_ID)) == 1
    assert rig.inbox() == []
