"""The inbox, in process (tests/inproc.py): human messages queued per builder and delivered in
the hooks' replies at turn boundaries, capped, scoped, adopted. Hooks go to the app's hook route
with the generated client's headers; messages are sent as ``hookd send`` sends them. What the
process adds (the spool, a crash, the generated client's speed, the CLI's output) is
tests/test_inbox.py, which shares this module's payloads."""

from __future__ import annotations

import concurrent.futures
import copy
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookd.config import Home
from hookd.settings import Settings
from hookd.spawn import spawn

from .conftest import wait_until
from .inproc import WAIT_S, InProc
from .test_inbox import AUQ_POST, AUQ_PRE, BASH_POST, PROMPT, STOP, context_of, one_hook_output, payload

pytestmark = pytest.mark.inproc


class Builder:
    """A spawned builder whose hooks are posted as its generated commands post them."""

    def __init__(self, app: InProc, worktree: Path, name: str = "b1"):
        self.app, self.worktree, self.name = app, worktree, name
        spawn(Home.resolve(app.home.root), name, worktree=worktree)  # what `hookd spawn` does

    def hook(self, p: dict[str, Any]) -> str:
        """Post the hook for ``p``; assert a 200 with one JSON document or nothing; return the body."""
        r = self.app.hook(p, self.name)
        assert r.status_code == 200, r.text
        return one_hook_output(r.text, p["hook_event_name"])

    def context(self, p: dict[str, Any]) -> str | None:
        return context_of(self.hook(p))

    def post(self, text: str, *, key: str | None = None, session_id: str | None = None,
             agent_id: str | None = None, builder: str | None = None) -> httpx.Response:
        """``hookd send BUILDER TEXT --author alice``'s request."""
        body = {"text": text, "id": key, "session_id": session_id, "agent_id": agent_id, "author": "alice"}
        return self.app.request("POST", f"/v1/builders/{builder or self.name}/messages", json=body)

    def send(self, text: str, **kw: Any) -> dict[str, Any]:
        r = self.post(text, **kw)
        assert r.status_code in (200, 201), r.text
        return r.json()

    def inbox(self) -> dict[str, dict[str, Any]]:
        return {m["id"]: m for m in self.app.inbox(self.name)}

    def events(self) -> list[dict[str, Any]]:
        return self.app.events()


@pytest.fixture
def b1(inproc, worktree) -> Builder:
    return Builder(inproc, worktree)


def test_send_queues_fifo_with_an_event(b1):
    first = b1.send("Please also update CHANGELOG")
    second = b1.send("and bump the version")
    assert first["created"] and first["message"]["id"] == "m-1" and second["message"]["id"] == "m-2"
    box = b1.inbox()
    assert [(m["id"], m["state"], m["author"]) for m in box.values()] == [("m-1", "queued", "alice"), ("m-2", "queued", "alice")]
    queued = [e for e in b1.events() if e["kind"] == "inbox_queued"]
    assert [e["data"]["id"] for e in queued] == ["m-1", "m-2"] and queued[0]["builder"] == "b1"


def _lane(b: Builder) -> dict[str, Any]:
    [lane] = [x for x in b.app.get("/v1/lanes") if x["builder"] == b.name]
    return lane


def test_a_message_to_a_builder_with_no_running_session_says_what_it_waits_for(b1):
    assert "note" not in b1.send("before any session")  # (its first session delivers it: nothing to say)
    for name in ("001-SessionStart.json", PROMPT):
        b1.hook(payload(name))
    wait_until(lambda: _lane(b1)["state"] == "working", WAIT_S, what="the lane working")
    assert "note" not in b1.send("while it runs")
    b1.hook(payload(STOP))
    wait_until(lambda: _lane(b1)["state"] == "idle", WAIT_S, what="the lane idle at its prompt")
    note = b1.send("while it is idle")["note"]
    head, _, how = note.partition("; to have hookd wake it: hookd --home ")
    assert head == "b1's agent is idle at its prompt: the message is delivered when its next turn begins (someone types there)"
    assert f" spawn b1 --worktree {b1.worktree} " in how and " --wake-wait 1800" in how
    assert how.endswith(", then restart its agent: hookd stop b1 && hookd continue b1"), note
    b1.hook(payload("014-SessionEnd.json"))
    wait_until(lambda: _lane(b1)["state"] == "ended", WAIT_S, what="the lane ended")
    r = b1.send("after it ended")
    assert r["note"] == ("no session of b1's agent is running (ended): the message is delivered at the first turn"
                         " boundary of its next session (hookd continue b1 resumes the last one)")
    assert b1.send("after it ended", key=None)["note"]  # (each new message says it)


def test_an_idle_agent_whose_wake_hook_waits_gets_no_note(inproc: InProc, worktree: Path) -> None:
    """Spawned with idle wake: while its wake hook waits, a message wakes the agent and `send`
    says nothing more; while none waits (the agent started before that spawn, or its wait is
    over), `send` says so, and how to restart the agent with it."""
    spawn(Home.resolve(inproc.home.root), "b1", worktree=worktree, wake_wait_s=60)
    for name in ("001-SessionStart.json", PROMPT, STOP):
        assert inproc.hook(payload(name)).status_code == 200
    wait_until(lambda: [x["state"] for x in inproc.get("/v1/lanes")] == ["idle"], WAIT_S, what="the lane idle")
    before = inproc.request("POST", "/v1/builders/b1/messages", json={"text": "no wake hook waits yet"}).json()
    assert before["note"] == ("b1's agent is idle at its prompt: the message is delivered when its next turn begins"
                              " (someone types there); its idle-wake hook is not waiting (it waits 60 s after each"
                              " turn, and an agent started before it was spawned has none until restarted: hookd"
                              " stop b1 && hookd continue b1)")
    mid = before["message"]["id"]  # (taken back: the wake hook below would take it at once)
    assert inproc.request("POST", f"/v1/messages/{mid}/cancel", json={}).json()["cancelled"] is True
    wake = inproc.submit_hook(payload(STOP), route="/wake", deadline_ms=60_000)
    wait_until(lambda: inproc.core.waking("b1"), WAIT_S, what="the wake hook waiting")
    r = inproc.request("POST", "/v1/builders/b1/messages", json={"text": "wake up, please"}).json()
    assert r["created"] and "note" not in r
    woke = wake.result(WAIT_S)
    assert "wake up, please" in woke.text
    wait_until(lambda: not inproc.core.waking("b1"), WAIT_S, what="the wake hook gone")


def test_a_message_for_an_ended_session_is_not_counted_against_the_next_one(b1):
    """A message scoped to a session (a late answer is kept so, or `hookd send --session`) waits
    for that session; once it ended and another began, the new session's lane does not count it
    (it cannot receive it: it would stall, "idle with 1 queued message(s) it cannot receive").
    The message stays queued for the old session's resume."""
    old, new = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
    for name in ("001-SessionStart.json", PROMPT, STOP):
        b1.hook(payload(name, session_id=old))
    kept = b1.send("for the old session only", session_id=old)["message"]["id"]  # (idle: not delivered)
    b1.hook(payload("014-SessionEnd.json", session_id=old))
    wait_until(lambda: _lane(b1)["state"] == "ended" and _lane(b1)["queued"] == 1, WAIT_S,
               what=lambda: f"the ended lane with its session's message: {_lane(b1)}")
    for name in ("001-SessionStart.json", PROMPT, STOP):
        b1.hook(payload(name, session_id=new))
    lane = wait_until(lambda: (x := _lane(b1))["session_id"] == new and x["state"] == "idle" and x, WAIT_S,
                      what="the new session's lane idle")
    assert (lane["queued"], lane["detail"]) == (0, "its turn ended")
    assert b1.inbox()[kept]["state"] == "queued"  # (kept for the old session's resume)


def test_send_is_idempotent_by_key(b1):
    a = b1.send("ship it", key="k1")
    again = b1.send("ship it", key="k1")
    assert a["created"] and not again["created"] and again["message"]["id"] == a["message"]["id"]
    r = b1.post("do not ship", key="k1")
    assert r.status_code == 409 and "already used for m-1" in r.json()["error"]["message"]
    assert list(b1.inbox()) == ["m-1"]


@pytest.mark.parametrize("text, why", [("   ", "empty"), ("x" * 8001, "limit is 8000")], ids=["blank", "too-long"])
def test_bad_messages_are_refused(b1, text, why):
    r = b1.post(text)
    assert r.status_code == 400 and why in r.json()["error"]["message"]
    assert b1.inbox() == {}


def test_post_tool_use_delivers_as_additional_context_once(b1):
    b1.send("Please also update CHANGELOG")
    ctx = b1.context(payload(BASH_POST))
    assert ctx.startswith("Message(s) from the human operator, relayed by hookd")
    assert "[human msg m-1 from alice at 20" in ctx and ctx.endswith("] Please also update CHANGELOG")
    m = b1.inbox()["m-1"]
    assert (m["state"], m["delivered_via"], m["deliveries"]) == ("delivered", "PostToolUse", 1)
    assert b1.hook(payload(BASH_POST)) == ""  # not offered twice
    [ev] = [e for e in b1.events() if e["kind"] == "inbox_delivered"]
    assert ev["data"]["ids"] == ["m-1"] and ev["data"]["via"] == "PostToolUse"


def test_mcp_tool_and_failure_boundaries_deliver(b1):
    b1.send("first")
    mcp = payload(BASH_POST, tool_name="mcp__tracker__create_item", tool_use_id="toolu_MCP1")
    assert "first" in b1.context(mcp)  # B10
    b1.send("second")
    fail = payload(BASH_POST, hook_event_name="PostToolUseFailure", tool_use_id="toolu_F1", error="Exit code 3")
    del fail["tool_response"]
    assert "second" in b1.context(fail)  # B28


def test_subagent_events_never_carry_main_agent_messages(b1):
    helper = payload(BASH_POST, agent_id="agent-7", agent_type="general-purpose")
    assert b1.hook(helper) == ""  # (hookd knows the subagent from its first hook)
    b1.send("for the main agent")
    b1.send("for the helper", agent_id="agent-7")
    sub = payload(BASH_POST, agent_id="agent-9", agent_type="general-purpose")
    assert b1.hook(sub) == ""
    mine = b1.context(payload(BASH_POST, agent_id="agent-7", agent_type="general-purpose"))
    assert "for the helper" in mine and "for the main agent" not in mine
    main = b1.context(payload(BASH_POST))
    assert "for the main agent" in main and "for the helper" not in main


def test_never_delivered_into_an_open_question_then_after_it(b1):
    b1.hook(payload(AUQ_PRE))
    b1.send("while the menu is open")
    # another boundary of the same agent while the question is open: nothing. (A
    # UserPromptSubmit or Stop would mean the menu was escaped: the question is then closed.)
    assert b1.hook(payload(BASH_POST)) == ""
    assert b1.inbox()["m-1"]["state"] == "queued"
    # the answer's PostToolUse resolves the question first, then the message rides along
    assert "while the menu is open" in b1.context(payload(AUQ_POST))


def test_injection_cap_splits_across_boundaries_in_order(b1):  # B14
    for i, n in enumerate((5000, 5000, 4000)):
        b1.send(f"part{i} " + "y" * n)
    got = [b1.context(payload(BASH_POST)) for _ in range(3)]
    assert all(len(c) < 9000 for c in got)
    assert ["part0" in got[0], "part1" in got[1], "part2" in got[2]] == [True, True, True]
    assert "part1" not in got[0] and "part2" not in got[1]
    assert all(m["state"] == "delivered" and m["deliveries"] == 1 for m in b1.inbox().values())
    waiting = [e["data"]["waiting"] for e in b1.events() if e["kind"] == "inbox_delivered"]
    assert waiting == [2, 1, 0]
    # the model is told that more follows
    assert "(2 more message(s) from the human will follow" in got[0] and "will follow" not in got[2]
    b1.send("small one")
    b1.send("another small one")
    both = b1.context(payload(BASH_POST))  # several messages fit one injection (B11)
    assert both.index("small one") < both.index("another small one")


def test_stop_delivers_and_respects_the_cap(b1):
    out = []
    for i in range(4):
        b1.send(f"stop message {i}")
        p = payload(STOP, stop_hook_active=i > 0)
        out.append(b1.context(p))
    assert all(o and f"stop message {i}" in o for i, o in enumerate(out[:3]))
    assert out[3] is None  # a 4th consecutive Stop delivery would exceed the cap of 3
    assert b1.inbox()["m-4"]["state"] == "queued"
    # a new human turn resets the count; the message waits no longer
    assert "stop message 3" in b1.context(payload(PROMPT))


def test_a_resumed_session_counts_its_stop_deliveries_from_zero(b1):
    """`hookd continue` resumes the session id whose Stop deliveries reached the cap: the new
    agent process's SessionStart starts the count over, so its first Stop delivers again."""
    for i in range(3):
        b1.send(f"stop message {i}")
        assert f"stop message {i}" in (b1.context(payload(STOP, stop_hook_active=i > 0)) or "")
    b1.send("after the resume")
    assert b1.context(payload(STOP, stop_hook_active=True)) is None  # (the cap)
    b1.hook(payload("001-SessionStart.json", source="resume"))  # a new process (its context carries m-4)
    b1.send("at the resumed session's first Stop")
    assert "at the resumed session's first Stop" in (b1.context(payload(STOP)) or "")


def test_a_later_stop_adopts_what_was_delivered(b1):
    b1.send("noted?")
    b1.context(payload(BASH_POST))
    b1.hook(payload(STOP))
    m = b1.inbox()["m-1"]
    assert (m["state"], m["adopted_via"]) == ("adopted", "Stop")
    [ev] = [e for e in b1.events() if e["kind"] == "inbox_adopted"]
    assert ev["data"] == {"ids": ["m-1"], "via": "Stop"}


def test_session_scoped_message_goes_only_to_its_session(b1):  # B25
    b1.hook(payload("001-SessionStart.json", session_id="s-0013"))  # (a session hookd knows)
    b1.send("for s-0013 only", session_id="s-0013")
    assert b1.hook(payload(BASH_POST, session_id="s-0014")) == ""
    assert "for s-0013 only" in b1.context(payload(BASH_POST, session_id="s-0013"))


def test_concurrent_identical_hooks_deliver_once(b1):
    b1.send("exactly once")
    p = payload(BASH_POST)
    both = [b1.app.submit_hook(copy.deepcopy(p), b1.name) for _ in range(2)]
    outs = [r.text for r in concurrent.futures.wait(both, WAIT_S).done for r in [r.result()]]
    assert len(outs) == 2
    assert sorted(bool(o) for o in outs) == [False, True]
    assert b1.inbox()["m-1"]["deliveries"] == 1


def test_adoption_is_proven_from_the_transcript_when_it_is_readable(b1, tmp_path):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("")
    b1.send("prove it")
    b1.send("unproven")
    b1.context(payload(BASH_POST, transcript_path=str(transcript)))
    m1, m2 = b1.inbox()["m-1"], b1.inbox()["m-2"]
    assert m1["state"] == m2["state"] == "delivered"
    blob = {"type": "api-request-blob", "hash": "abc", "message": {"role": "user", "content": [
        {"type": "text", "text": "PostToolUse:Bash hook additional context: [human msg m-1 from alice at T] prove it"}]}}
    with transcript.open("a") as f:
        f.write(json.dumps(blob) + "\n" + json.dumps({"type": "api-request", "tail": ["abc"]}) + "\n")
    b1.hook(payload(STOP, transcript_path=str(transcript)))
    wait_until(lambda: b1.inbox()["m-1"]["state"] == "adopted", 60, 0.05, "adoption from the transcript")
    assert b1.inbox()["m-1"]["adopted_via"] == "transcript"
    assert b1.inbox()["m-2"]["state"] == "delivered"  # not in any sent request: not adopted


def test_a_message_the_human_typed_is_not_sent_again(b1):  # B30
    b1.send("use postgres")
    b1.send("and keep the tests green")
    ctx = b1.context(payload(PROMPT, prompt="  use postgres\n"))
    assert ctx and "and keep the tests green" in ctx and "use postgres" not in ctx
    m = b1.inbox()["m-1"]
    assert (m["state"], m["delivered_via"], m["adopted_via"]) == ("adopted", "typed", "typed")
    old = payload(PROMPT)
    del old["prompt"]
    b1.send("third")
    assert b1.context({**old, "user_prompt": "third"}) is None  # older field name honoured
    assert b1.inbox()["m-3"]["state"] == "adopted"


def test_interrupted_turn_without_stop_or_session_end_loses_nothing(home, worktree):  # B27
    """Esc mid-tool fires no hook; the process may die without SessionEnd. A message delivered
    in that turn is never adopted (no Stop, no transcript proof) and is offered again, with its
    id, at the next boundary after the redelivery timeout; queued ones stay queued."""
    app = InProc(home, Settings(redeliver_after_s=0.3)).start()  # HOOKD_REDELIVER_AFTER_S=0.3
    try:
        b = Builder(app, worktree)
        b.send("delivered, then interrupted")
        assert "delivered, then interrupted" in b.context(payload(PROMPT, session_id="s-0027"))
        delivered = time.monotonic()  # (the delivery was made before its hook's reply)
        b.hook(payload("004-PreToolUse.json", session_id="s-0027", tool_use_id="toolu_I1"))
        # ... Esc: no PostToolUse, no Stop; the process exits without SessionEnd
        b.send("queued after the interrupt")
        assert b.inbox()["m-1"]["state"] == "delivered" and b.inbox()["m-2"]["state"] == "queued"
        # the next boundary comes after the redelivery timeout (in process, the steps above
        # take less than its 0.3 s)
        wait_until(lambda: time.monotonic() - delivered > 0.3, 60, what="the redelivery timeout to pass")
        again = wait_until(lambda: b.context(payload(PROMPT, session_id="s-0027b", prompt="go on")), 60, 0.1,
                           "the interrupted message offered again")
        assert "[human msg m-1 " in again and "[human msg m-2 " in again
        assert b.inbox()["m-1"]["deliveries"] == 2
    finally:
        app.stop()


def test_the_cap_counts_what_travels_not_python_characters(b1):  # B14
    emoji = "\U0001F600" * 3000  # 3,000 characters, 12,000 bytes of UTF-8, 6,000 UTF-16 units
    r = b1.post(emoji)
    assert r.status_code == 400 and "bytes as sent" in r.json()["error"]["message"]
    quotes = '"' * 5000  # 5,000 characters, 10,000 once JSON-escaped
    assert b1.post(quotes).status_code == 400
    b1.send("\U0001F600" * 1500)  # 6,000 bytes: fits alone
    b1.send("\U0001F600" * 1500)
    first = b1.hook(payload(BASH_POST))
    assert len(first.encode()) < 9000 and json.loads(first)["hookSpecificOutput"]["additionalContext"].count("[human msg") == 1


def test_the_messages_of_an_unknown_builder_are_not_found(b1):
    """``GET /v1/messages?builder=`` refuses a builder neither spawned nor known to the store
    with the reply ``POST /v1/builders/{builder}/messages`` gives it (404, ``not_found``, the
    same sentence; `hookd inbox nosuch` prints it); a bad id is a 400 as on every builder route;
    a spawned builder with no messages, or one the store knows from its hooks alone, is an
    empty list."""
    refusal = {"error": {"code": "not_found",
                         "message": "builder 'nosuch' is not known: spawn it first (or check the name)"}}
    r = b1.app.request("GET", "/v1/messages", params={"builder": "nosuch"})
    assert (r.status_code, r.json()) == (404, refusal)
    r = b1.post("hello", builder="nosuch")
    assert (r.status_code, r.json()) == (404, refusal)
    bad = b1.app.request("GET", "/v1/messages", params={"builder": "no such"})
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "config_error")
    assert b1.app.request("POST", "/v1/builders/no%20such/messages", json={"text": "hi"}).json() == bad.json()
    assert b1.inbox() == {}  # spawned, no message yet
    b1.app.hook(payload(PROMPT), "b2")  # never spawned: known from its hook
    assert b1.app.inbox("b2") == []


def test_a_message_delivered_at_the_start_of_a_session_that_ends_before_any_turn_is_offered_again(b1):
    """`hookd continue B` with no prompt, then `hookd stop B`: SessionStart delivered the message
    to a session no model request ever ran in; its end puts it back in the queue (a fresh
    user's trial found it `delivered` for good, the next turn without it). A message a turn used
    (a prompt after its delivery) stays delivered."""
    b1.send("LOSTPROBE-42")
    assert "LOSTPROBE-42" in (b1.context(payload("001-SessionStart.json", source="resume")) or "")
    assert b1.inbox()["m-1"]["state"] == "delivered"
    b1.hook(payload("014-SessionEnd.json"))
    assert b1.inbox()["m-1"]["state"] == "queued"
    [ev] = [e for e in b1.events() if e["kind"] == "inbox_requeued"]
    assert ev["data"] == {"ids": ["m-1"], "via": "SessionEnd",
                          "reason": "delivered, but its session ended before any turn: offered again"}
    # the next session's start carries it again; its prompt is a turn: it stays delivered then
    assert "LOSTPROBE-42" in (b1.context(payload("001-SessionStart.json", source="resume")) or "")
    b1.hook(payload(PROMPT))
    b1.hook(payload("014-SessionEnd.json"))
    assert b1.inbox()["m-1"]["state"] in ("delivered", "adopted")
    assert len([e for e in b1.events() if e["kind"] == "inbox_requeued"]) == 1
