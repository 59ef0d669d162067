"""Answering from anywhere, through the process: the generated hook client held for a remote
answer and let go (the desk's answer, Esc's SIGTERM, the daemon's SIGTERM), and what ``hookd
answer`` prints and exits with (real daemon; hooks run as Claude Code runs them: ``sh -c
"<command>"``). The core's answers through the API (idempotency, refusals, permission prompts,
pre-registered answers, async asks, expiry) are tests/test_answers_inproc.py, which shares this
module's payloads."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess

from .conftest import TUI, events, hookd_cli, hookd_run, questions, run_hook, settings_command, wait_until

SID = "346f6e3a-edc5-468f-856d-23ceddca3ede"
ASK_ID = "toolu_01ASK0000000000000000001"
Q = "Which color do you prefer?"

pytestmark = pytest.mark.daemon


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
        r = hookd_run(home, "spawn", name, "--worktree", str(worktree), "--hold", str(hold))
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


def held_question(rig: Rig) -> subprocess.Popen[bytes]:
    """``rig``'s builder asks the AskUserQuestion of the fixture (id ASK_ID, question Q): its
    PreToolUse, then its PermissionRequest hook started and held by the daemon (``finish`` it)."""
    assert rig.hook(AUQ_PRE) == ""
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    return held


def pending_id(home: Path) -> str:
    """The id of the one pending interaction of ``home``'s daemon."""
    (i,) = questions(home, "pending")
    return str(i["id"])


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
    assert "already answered at the desk" in r.stderr and "kept as inbox message m-1" in r.stderr
    [m] = rig.inbox()
    assert m["state"] == "queued"
    assert m["text"] == f"[Late answer to question {ASK_ID} (not used: already answered at the desk: Blue)]\nQ: {Q}\nA: Red"


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


def test_hookd_stop_orphans_a_held_prompt_and_dismisses_nothing(rig: Rig, tmp_path: Path) -> None:
    """`hookd stop` SIGTERMs the agent, which SIGTERMs its held hook as it goes (as Esc at the
    desk would): that is the stop's doing, so the question is closed ``orphaned`` by the stop,
    never ``dismissed`` at the terminal (found by a fresh user's trial)."""
    import psutil

    pgid_file = tmp_path / "hook-pgid"
    agent = subprocess.Popen([sys.executable, "-c", (
        "import os, pathlib, signal, sys\n"
        "def term(*_):\n"
        f"    os.killpg(int(pathlib.Path({os.fspath(pgid_file)!r}).read_text()), signal.SIGTERM)\n"
        "    sys.exit(143)\n"
        "signal.signal(signal.SIGTERM, term)\n"
        "signal.pause()\n")], start_new_session=True)
    try:
        r = rig.api("POST", "/v1/builders/b1/started", {
            "harness": "claude-code", "mode": "headless", "pid": agent.pid, "argv": ["claude", "-p"],
            "pid_started_at": psutil.Process(agent.pid).create_time(), "tmux_socket": None, "tmux_session": None,
            "log_path": os.fspath(tmp_path / "b1.log"), "session_id": SID})
        assert r.status_code == 201, r.text
        rig.hook(AUQ_PRE)
        held = rig.start_hook(AUQ_PERM)
        pgid_file.write_text(str(held.pid))
        rig.held(ASK_ID)
        stop = hookd_cli(rig.home, "stop", "b1", "--timeout", "20")
        assert stop.returncode == 0, stop.stderr
        assert finish(held) == (0, b"")
        i = wait_until(lambda: (x := rig.interaction(ASK_ID))["state"] != "pending" and x, 60, what="closed")
        assert i["state"] == "orphaned" and "stopped by hookd stop" in i["warning"], i
        [ev] = about(events(rig.home), "question_resolved", ASK_ID)
        assert ev["data"]["outcome"] == "orphaned" and ev["data"].get("inferred_from") != "hook cancelled", ev
    finally:
        agent.kill()
        agent.wait()


def test_no_held_hook_queues_the_answer_as_a_message(home: Path, worktree: Path, daemon: DaemonProcess) -> None:
    rig = Rig(home, worktree, hold=0)
    rig.hook(AUQ_PRE)
    assert rig.hook(AUQ_PERM) == ""  # not held
    r = rig.answer(ASK_ID, "--option", "Red")
    assert r.returncode == 0 and "queued as inbox message m-1" in r.stdout
    assert "no hook is holding" in r.stderr
    assert rig.interaction(ASK_ID)["state"] == "pending"  # the menu is still open at the desk
    assert [m["text"] for m in rig.inbox()] == [f"[Answer to question {ASK_ID}]\nQ: {Q}\nA: Red"]


# --- what `hookd answer` says ---------------------------------------------------------------

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


def test_multi_question_answer_by_cli_groups(rig: Rig) -> None:
    pre = copy.deepcopy(AUQ_PRE)
    pre["tool_use_id"] = "toolu_01MULTI"
    pre["tool_input"]["questions"].append({
        "question": "Which toppings?", "header": "Toppings", "multiSelect": True,
        "options": [{"label": "Cheese"}, {"label": "Ham, smoked"}, {"label": "Olives"}]})
    rig.hook(pre)
    each = ("toolu_01MULTI asks 2 questions; answer each question: --question 1 --option LABEL --question 2 "
            "--option LABEL [--option LABEL]... (1: 'Which color do you prefer?', options: Red, Blue; "
            "2: 'Which toppings?', multi-select, options: Cheese, 'Ham, smoked', Olives)")
    r = rig.answer("toolu_01MULTI", "--option", "Red")
    assert (r.returncode, r.stderr) == (2, f"hookd: {each}\n")
    r = rig.answer("toolu_01MULTI", "--question", "1", "--option", "Red")
    assert (r.returncode, r.stderr) == (2, f"hookd: this answer leaves out 'Which toppings?': {each}\n")
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
        # the client posts it again to the next daemon, with that header: held again, and said so
        d.start()
        again = socket.socket(socket.AF_UNIX)
        again.connect(str(Home.resolve(home).socket_path))
        again.sendall(b"POST /v1/hooks/claude-code/b1/hold HTTP/1.1\r\nHost: hookd\r\nX-Hookd-Delivery: held-1\r\n"
                      b"X-Hookd-Hold: %s\r\nX-Hookd-Deadline-Ms: 30000\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n%s" % (ASK_ID.encode(), len(body), body))
        try:
            rig.held(ASK_ID)
            resumed = wait_until(lambda: [e["data"] for e in events(home) if e["kind"] == "hold_resumed"], 60,
                                 what="hold_resumed")
            assert resumed == [{"id": ASK_ID, "kind": "question"}]
            assert [q["held"] for q in questions(home) if q["id"] == ASK_ID] == [True]
        finally:
            again.close()
    finally:
        s.close()
        d.kill()


def test_a_prompt_whose_held_hook_a_crash_ended_is_said_to_be_the_desks(home: Path, worktree: Path) -> None:
    """A daemon killed (SIGKILL: no clean stop) while it held a permission prompt's hook: the
    hook's client ends with nothing printed (the prompt is the desk's) and spools what it had.
    The next daemon, once held hooks had their time to come back (HOLD_RETURN_S), says so of
    the prompt none came back for (``hold_ended``, reason ``restart``), once: what reads only
    the events (the hub's questions) then stops offering an answer the host would refuse."""
    d = DaemonProcess(home).start()
    try:
        rig = Rig(home, worktree)
        held = rig.start_hook(bash_perm("make deploy"))
        [pid] = wait_until(lambda: [q["id"] for q in questions(home) if q["kind"] == "permission"], 60,
                           what="the prompt pending")
        rig.held(pid)
        d.kill()
        assert finish(held, timeout=30) == (0, b"")  # its client let go: the desk's
        d.start()
        ended = wait_until(lambda: [e["data"] for e in events(home) if e["kind"] == "hold_ended"], 60,
                           what="hold_ended after the restart")
        assert ended == [{"id": pid, "kind": "permission", "reason": "restart"}]
        assert [q["held"] for q in questions(home) if q["id"] == pid] == [False]
        # another prompt held, another crash: that one is said so after the next start, the
        # first not again (judged before it: the pending ones are looked at oldest first)
        held = rig.start_hook(bash_perm("make release"))
        [pid2] = wait_until(lambda: [q["id"] for q in questions(home) if q["kind"] == "permission" and q["id"] != pid],
                            60, what="the second prompt pending")
        rig.held(pid2)
        d.kill()
        assert finish(held, timeout=30) == (0, b"")
        d.start()
        wait_until(lambda: len([e for e in events(home) if e["kind"] == "hold_ended"]) == 2, 60,
                   what="hold_ended for the second prompt")
        assert [e["data"]["id"] for e in events(home) if e["kind"] == "hold_ended"] == [pid, pid2]
    finally:
        d.kill()


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
