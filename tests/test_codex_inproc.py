"""Codex's ``request_user_input`` as a hookd question, in process (the core and app, no daemon):
from its hooks (PreToolUse pending, PostToolUse answered at the desk with the client's reply) and
from a rollout alone (the ``function_call`` row pending, its ``function_call_output`` the answer
or Codex's refusal). Only the desk (Codex's TUI or app-server client) answers it: a remote answer
is kept as an inbox message and says so. Payloads and rows from
``fixtures/codex/0.171.0/app-request-user-input`` (recorded from the real binary)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home
from hookd.spawn import spawn

from .conftest import wait_until
from .inproc import InProc

pytestmark = pytest.mark.inproc

SCENARIO = Path(__file__).resolve().parent.parent / "fixtures" / "codex" / "0.171.0" / "app-request-user-input"
ASK = "call_ASK"
QUESTION = "Which color do you prefer?"


def payload(name: str, **changes: Any) -> dict[str, Any]:
    return {**json.loads((SCENARIO / "hooks" / name).read_text()), "transcript_path": None, **changes}


def answer(app: InProc, *options: str) -> dict[str, Any]:
    """`hookd answer call_ASK --option ...`'s request; its receipt."""
    r = app.request("POST", f"/v1/interactions/{ASK}/answer", json={
        "response_id": None, "actor": None, "revision": None, "surface": "cli", "question": None,
        "options": list(options), "text": None})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_question_from_the_hooks_is_answered_at_the_desk_and_a_remote_answer_becomes_a_message(
        inproc: InProc, worktree: Path) -> None:
    spawn(Home.resolve(inproc.home.root), "b1", worktree=worktree, harness="codex")
    r = inproc.hook(payload("001-PreToolUse.json"), harness="codex")
    assert (r.status_code, r.content) == (200, b"")  # never pre-answered: no hook output answers it
    (q,) = inproc.questions("pending")
    assert (q["id"], q["kind"], q["tool_name"]) == (ASK, "question", "request_user_input")
    assert q["questions"] == [{"question": QUESTION, "header": "Color", "multiSelect": False, "id": "color",
                               "options": [{"label": "Red (Recommended)", "description": "The red one"},
                                           {"label": "Blue", "description": "The blue one"}]}]
    receipt = answer(inproc, "Red (Recommended)")
    assert receipt["delivery"] == "inbox" and receipt["message_id"], receipt
    assert receipt["warning"].startswith(f"codex reads the answer to {ASK} at its own prompt (no hook can carry one),"
                                         " so it can only be answered at the desk; your answer was queued as inbox"
                                         f" message {receipt['message_id']} instead")
    assert [q["id"] for q in inproc.questions("pending")] == [ASK]  # the menu is still open at the desk
    inproc.hook(payload("002-PostToolUse.json"), harness="codex")  # the desk chose Blue
    (q,) = inproc.questions("all")
    assert (q["state"], q["surface"], q["answers"]) == ("answered", "terminal", {QUESTION: "Blue"})
    assert [s["labels"] for s in q["selections"]] == [["Blue"]]
    (m,) = inproc.inbox("b1")
    assert m["id"] == receipt["message_id"]
    assert m["text"].startswith(f"[Late answer to question {ASK} (not used: already answered at the desk: Blue)]")


def rollout_rows() -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """The recorded rollout's lines before the question's call, the call row and its output row."""
    lines = (SCENARIO / "rollout.jsonl").read_text().splitlines()
    (i,) = [n for n, ln in enumerate(lines) if '"name":"request_user_input"' in ln]
    (j,) = [n for n, ln in enumerate(lines) if '"function_call_output"' in ln]
    return lines[:i], json.loads(lines[i]), json.loads(lines[j])


def follow(app: InProc, tmp_path: Path, lines: list[str]) -> Path:
    """Write ``lines`` as a rollout under a ``sessions`` folder and `hookd tail` it for b1."""
    sid = "01a23b42-37d7-72f1-b95a-7604046c6eb7"
    path = tmp_path / "codex" / "sessions" / "2026" / "12" / "03" / f"rollout-2026-12-03T09-35-25-{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(ln + "\n" for ln in lines))
    r = app.request("POST", "/v1/builders/b1/transcripts", json={"paths": [str(path)], "session_id": None})
    assert r.status_code == 201, r.text
    return path


@pytest.mark.parametrize("output, state, answers", [
    ('{"answers":{"color":{"answers":["Blue"]}}}', "answered", {QUESTION: "Blue"}),
    ('{"answers":{"color":{"answers":["Green, if I may"]}}}', "answered", {QUESTION: "Green, if I may"}),
    ("request_user_input is unavailable in Default mode", "denied", None),  # `codex exec`: nobody asked
])
def test_a_question_from_a_rollout_alone(inproc: InProc, worktree: Path, tmp_path: Path, output: str, state: str,
                                         answers: Any) -> None:
    spawn(Home.resolve(inproc.home.root), "b1", worktree=worktree, harness="codex")
    head, ask, done = rollout_rows()
    path = follow(inproc, tmp_path, [*head, json.dumps(ask)])
    wait_until(lambda: [q["id"] for q in inproc.questions("pending")] == [ASK], 60, what="the question")
    done["payload"]["output"] = output
    with path.open("a") as f:
        f.write(json.dumps(done) + "\n")
    wait_until(lambda: inproc.questions("pending") == [], 60, what="the question's end")
    (q,) = inproc.questions("all")
    assert (q["state"], q["answers"]) == (state, answers)
    if state == "answered":
        assert q["surface"] == "terminal"
        (sel,) = q["selections"]
        assert (sel["labels"], sel["other"]) == ((["Blue"], None) if "Blue" in output else ([], "Green, if I may"))
    else:
        assert q["error"] == output and "without asking anyone" in q["warning"]
