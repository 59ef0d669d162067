"""Issue 18, answers that are really delivered (a real daemon; hooks run as Claude Code runs
them, ``sh -c "<command>"``; the real Claude Code's side is in tests/e2e/test_answers_e2e.py):

* item 3: answers and messages over the limits are refused at the API (one JSON error, CLI
  exit 2); an answer is ``delivered`` only once the hook's client has read the whole reply;
* item 10: a Bash prompt the desk allowed is resolved as soon as its command runs (Claude Code
  2.1.332 runs it as a child of the agent, ``CLAUDE_PID``), not when it ends; a remote answer
  after that is refused, "the desk answered first";
* item 13: an answer kept as an inbox message (no hook could carry it) never reaches the model
  beside a different desk answer unexplained.

A hook reply the client cannot take whole (item 3) and ExitPlanMode's allow (item 12) are
tests/test_faults_answers_inproc.py.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hookd.core.limits import MAX_ANSWER_CHARS
from hookd.config import Home
from hookd.daemonproc import DaemonProcess

from .conftest import events, hookd_cli, settings_command, wait_until
from .test_answers import (
    ASK_ID,
    AUQ_PERM,
    AUQ_PRE,
    Q,
    Rig,
    about,
    auq_post,
    bash_perm,
    bash_post,
    finish,
    pending_permission,
)

pytestmark = pytest.mark.daemon


@pytest.fixture
def rig(home: Path, worktree: Path, daemon: DaemonProcess) -> Rig:
    return Rig(home, worktree)


def error_of(resp: Any) -> dict[str, Any]:
    """The one error shape: ``{"error": {"code", "message"}}`` and nothing else."""
    body = resp.json()
    assert set(body) == {"error"} and {"code", "message"} <= set(body["error"]), body
    return body["error"]


# ============================================================ item 3: limits at the API
def test_answers_and_messages_over_the_limit_are_refused(rig: Rig) -> None:
    held = rig.start_hook(bash_perm("make deploy"))
    p = pending_permission(rig)
    rig.held(p["id"])

    # the CLI: exit 2, the limit named; nothing recorded, the hook still held
    big = "x" * 100_000  # (one argv word can hold 128 KiB)
    r = rig.answer(p["id"], "--option", "deny", "--text", big)
    assert r.returncode == 2 and f"the limit is {MAX_ANSWER_CHARS}" in r.stderr, r
    # the API: one JSON error for a text over the limit (400) and for a body far over it (413)
    resp = rig.api("POST", f"/v1/interactions/{p['id']}/answer",
                   {"decision": "deny", "message": "é" * (MAX_ANSWER_CHARS // 2 + 1)})
    assert resp.status_code == 400 and f"the limit is {MAX_ANSWER_CHARS}" in error_of(resp)["message"]
    resp = rig.api("POST", f"/v1/interactions/{p['id']}/answer", {"decision": "deny", "message": "x" * 2_000_000})
    assert resp.status_code == 413 and error_of(resp)["code"] == "payload_too_large"
    r = rig.answer(p["id"], "--option", "deny", "--actor", "a" * 300)
    assert r.returncode == 2 and "actor is 300 characters" in r.stderr
    assert rig.interaction(p["id"])["state"] == "pending"
    evs = events(rig.home)
    assert about(evs, "interaction_answered", p["id"]) == [] and about(evs, "answer_delivered", p["id"]) == []
    rig.held(p["id"])

    # at the limit it goes through whole, and is delivered
    message = "y" * MAX_ANSWER_CHARS
    assert rig.answer_json(p["id"], "--option", "deny", "--text", message)["delivery"] == "hook"
    rc, out = finish(held)
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": message}
    wait_until(lambda: about(events(rig.home), "answer_delivered", p["id"]), 60, what="answer_delivered")

    # a question's free text, a message, an ask and a pre-registered answer alike
    rig.hook(AUQ_PRE)
    r = rig.answer(ASK_ID, "--text", big)
    assert r.returncode == 2 and f"the limit is {MAX_ANSWER_CHARS}" in r.stderr
    assert rig.interaction(ASK_ID)["state"] == "pending"
    r = hookd_cli(rig.home, "send", "b1", big)
    assert r.returncode == 2 and "the limit is 8000" in r.stderr
    r = hookd_cli(rig.home, "send", "b1", "hi", "--author", "a" * 300)
    assert r.returncode == 2 and "author is 300 characters" in r.stderr
    r = hookd_cli(rig.home, "preanswer", "b1", "--question", Q, "--text", big)
    assert r.returncode == 2 and f"the limit is {MAX_ANSWER_CHARS}" in r.stderr
    r = hookd_cli(rig.home, "ask", "b1", "Which?", "--option", "o" * 300)
    assert r.returncode == 2 and "at most 200 characters" in r.stderr
    resp = rig.api("POST", "/v1/builders/b1/messages", {"text": "x" * 2_000_000})
    assert resp.status_code == 413 and error_of(resp)["code"] == "payload_too_large"
    assert rig.inbox() == []


def _raw_hold(home: Path, payload: dict[str, Any]) -> socket.socket:
    """A held PermissionRequest hook's request, sent over the Unix socket by hand (what the
    compiled client sends), whose reply nobody reads."""
    body = json.dumps(payload).encode()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(Home(home).socket_path))
    s.sendall(b"POST /v1/hooks/claude-code/b1/hold HTTP/1.1\r\nHost: hookd\r\nX-Hookd-Delivery: raw-hold-1\r\n"
              b"X-Hookd-Deadline-Ms: 30000\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
              b"Connection: close\r\n\r\n%s" % (len(body), body))
    return s


def test_an_answer_the_hook_did_not_read_is_not_delivered(rig: Rig) -> None:
    """The reply with the remote answer reaches the hook's socket, but its client goes away
    without reading it (Claude Code SIGTERMs it on Esc / No at the desk as the answer
    arrives): not ``answer_delivered``, the desk's dismissal wins, the text is kept."""
    s = _raw_hold(rig.home, bash_perm("make deploy"))
    p = pending_permission(rig)
    rig.held(p["id"])
    rig.answer_json(p["id"], "--option", "deny", "--text", "use make test")
    assert select.select([s], [], [], 10)[0], "the reply never came"
    s.close()  # unread: the kernel resets the connection
    evs = wait_until(lambda: (e := events(rig.home)) and about(e, "answer_superseded", p["id"]) and e, 60,
                     what="answer_superseded")
    assert about(evs, "answer_delivered", p["id"]) == []
    i = rig.interaction(p["id"])
    assert (i["state"], i["delivered_at"], i["surface"]) == ("dismissed", None, "terminal")
    [m] = rig.inbox()
    assert m["text"].endswith("] deny: use make test") and "not used: the held hook ended without reading" in m["text"]


# ============================================ item 10: the desk allowed, the tool runs
AGENT = r"""
import subprocess, sys
sys.stdin.readline()  # "run the tool": as 2.1.332 runs an allowed Bash command
script = ("source /tmp/snapshot-bash.sh 2>/dev/null || true && eval " + sys.argv[1]
          + " < /dev/null && pwd -P >| /tmp/claude-h3t-cwd")
subprocess.Popen(["/bin/bash", "-c", script]).wait()
"""


def test_desk_allow_is_seen_when_the_command_starts(rig: Rig, tmp_path: Path) -> None:
    """Claude Code 2.1.332 neither signals the held hook nor writes or hooks anything when
    the desk allows a Bash command, until the command ends. Its process, a child of the agent
    (``CLAUDE_PID``), shows at once: the prompt is resolved then (allowed at the desk), the
    held hook let go, and a remote answer after it refused."""
    cmd = "sleep 30; echo \"it's done\""
    flag = tmp_path / "ran"
    import shlex
    agent = subprocess.Popen([sys.executable, "-c", AGENT, shlex.quote(f"touch {flag}; {cmd}")],
                             stdin=subprocess.PIPE, text=True, start_new_session=True)
    try:
        perm = bash_perm(f"touch {flag}; {cmd}")
        held = subprocess.Popen(["sh", "-c", settings_command(rig.settings, "PermissionRequest")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=rig.worktree, start_new_session=True,
                                env={**os.environ, "CLAUDE_PID": str(agent.pid)})
        assert held.stdin is not None
        held.stdin.write(json.dumps(perm).encode())
        held.stdin.close()
        held.stdin = None
        p = pending_permission(rig)
        rig.held(p["id"])
        assert rig.interaction(p["id"])["state"] == "pending"

        assert agent.stdin is not None
        agent.stdin.write("go\n")  # the desk pressed Enter: the command starts
        agent.stdin.flush()
        i = wait_until(lambda: (x := rig.interaction(p["id"]))["state"] != "pending" and x, 60,
                       what="the prompt resolved by the running command")
        assert (i["state"], i["decision"], i["surface"], i["received_at"]) == ("answered", "allow", "terminal", None)
        assert flag.exists()  # the command is running ...
        assert agent.poll() is None  # ... and still is
        rc, out = finish(held)  # the held hook is let go, with nothing to print
        assert (rc, out) == (0, b"")

        r = rig.answer(p["id"], "--option", "deny", "--text", "stop")
        assert r.returncode == 2 and "the desk answered first" in r.stderr, r
        lanes = json.loads(hookd_cli(rig.home, "lanes", "--json").stdout)
        assert [(x["builder"], x["state"]) for x in lanes] == [("b1", "working")]
    finally:
        os.killpg(agent.pid, signal.SIGKILL)
        agent.wait(10)
    rig.hook(bash_post(f"touch {flag}; {cmd}"))  # the tool ended
    i = rig.interaction(p["id"])
    assert i["tool_use_id"] == "toolu_01PERMBASH0000000000001" and i["state"] == "answered"
    evs = events(rig.home)
    [resolved] = about(evs, "permission_resolved", p["id"])
    assert resolved["data"]["inferred_from"] == "tool running"
    assert about(evs, "answer_delivered", p["id"]) == [] and about(evs, "interaction_answered", p["id"]) == []
    [refused] = about(evs, "answer_refused", p["id"])
    assert "the desk answered first" in refused["data"]["reason"]


# ============================ item 13: an inbox answer, then another answer at the desk
def _restart_without_the_held_hook(rig: Rig, daemon: DaemonProcess, held: subprocess.Popen[bytes]) -> None:
    daemon.stop()
    try:
        os.killpg(held.pid, signal.SIGKILL)  # gone with the old daemon: nothing holds the prompt now
    except ProcessLookupError:
        pass
    held.communicate(timeout=10)
    daemon.start()


@pytest.mark.parametrize("desk", ["Blue", "Red"])
def test_an_inbox_answer_never_contradicts_the_desk_unexplained(
        home: Path, worktree: Path, daemon: DaemonProcess, desk: str) -> None:
    rig = Rig(home, worktree)
    rig.hook(AUQ_PRE)
    held = rig.start_hook(AUQ_PERM)
    rig.held(ASK_ID)
    _restart_without_the_held_hook(rig, daemon, held)
    r = rig.answer(ASK_ID, "--option", "Red")  # no hook can carry it now
    assert r.returncode == 0 and "queued as inbox message m-1" in r.stdout, r
    out = rig.hook(auq_post(desk))  # the desk answers; PostToolUse is the next boundary
    [m] = rig.inbox()
    if desk == "Red":  # the same answer: the tool result carried it; nothing more is sent
        assert out == "" and (m["state"], m["adopted_via"]) == ("adopted", "desk")
        # `hookd inbox` says so, as `hookd events` does ("adopted ... via desk")
        row = hookd_cli(home, "inbox").stdout.splitlines()[2].split()
        assert row[:5] == ["m-1", "b1", "adopted", "desk", "0"], row
        return
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    late = f"[Late answer to question {ASK_ID} (not used: already answered at the desk: Blue)]\nQ: {Q}\nA: Red"
    assert late in context and f"[Answer to question {ASK_ID}]" not in context
    assert m["text"] == late and m["state"] == "delivered"
    [sup] = about(events(rig.home), "answer_superseded", ASK_ID)
    assert (sup["data"]["message_id"], sup["data"]["answers"]) == ("m-1", {Q: "Blue"})
