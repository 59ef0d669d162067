"""The inbox: human messages queued per builder and delivered through the generated hooks'
own stdout at turn boundaries (real daemon, hooks run as Claude Code runs them)."""

from __future__ import annotations

import copy
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from hookd.daemonproc import DaemonProcess

from .conftest import TUI, events, hookd_cli, run_hook, settings_command, wait_until

SID = "346f6e3a-edc5-468f-856d-23ceddca3ede"


def payload(name: str, **changes: Any) -> dict[str, Any]:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    return p


BASH_POST = "005-PostToolUse.json"
AUQ_PRE = "007-PreToolUse.json"
AUQ_POST = "010-PostToolUse.json"
STOP = "012-Stop.json"
PROMPT = "002-UserPromptSubmit.json"


class Builder:
    """A spawned builder whose hooks are run like Claude Code runs them."""

    def __init__(self, home: Path, worktree: Path, name: str = "b1"):
        self.home, self.worktree, self.name = home, worktree, name
        r = hookd_cli(home, "spawn", name, "--worktree", str(worktree))
        assert r.returncode == 0, r.stderr
        self.settings = worktree / ".claude" / "settings.local.json"

    def hook(self, p: dict[str, Any]) -> str:
        """Run the hook for ``p``; assert exit 0 and one JSON document or nothing; return stdout."""
        cmd = settings_command(self.settings, p["hook_event_name"])
        r = run_hook(cmd, json.dumps(p).encode(), self.worktree)
        assert r.returncode == 0 and r.stderr == b""
        out = r.stdout.decode()
        if out:
            doc = json.loads(out)
            assert doc["hookSpecificOutput"]["hookEventName"] == p["hook_event_name"]
            assert set(doc) == {"hookSpecificOutput"} and "systemMessage" not in out
        return out

    def context(self, p: dict[str, Any]) -> str | None:
        out = self.hook(p)
        return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else None

    def send(self, text: str, *args: str) -> dict[str, Any]:
        r = hookd_cli(self.home, "send", self.name, text, "--author", "alice", "--json", *args)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def inbox(self) -> dict[str, dict[str, Any]]:
        r = hookd_cli(self.home, "inbox", self.name, "--json")
        assert r.returncode == 0, r.stderr
        return {m["id"]: m for m in json.loads(r.stdout)}


@pytest.fixture
def b1(daemon, home, worktree) -> Builder:
    return Builder(home, worktree)


def test_send_queues_fifo_with_an_event(b1, home):
    first = b1.send("Please also update CHANGELOG")
    second = b1.send("and bump the version")
    assert first["created"] and first["message"]["id"] == "m-1" and second["message"]["id"] == "m-2"
    box = b1.inbox()
    assert [(m["id"], m["state"], m["author"]) for m in box.values()] == [("m-1", "queued", "alice"), ("m-2", "queued", "alice")]
    queued = [e for e in events(home) if e["kind"] == "inbox_queued"]
    assert [e["data"]["id"] for e in queued] == ["m-1", "m-2"] and queued[0]["builder"] == "b1"


def test_send_is_idempotent_by_key(b1, home):
    a = b1.send("ship it", "--id", "k1")
    again = b1.send("ship it", "--id", "k1")
    assert a["created"] and not again["created"] and again["message"]["id"] == a["message"]["id"]
    r = hookd_cli(home, "send", "b1", "do not ship", "--id", "k1")
    assert r.returncode == 2 and "already used for m-1" in r.stderr
    assert list(b1.inbox()) == ["m-1"]


@pytest.mark.parametrize("text, why", [("   ", "empty"), ("x" * 8001, "limit is 8000")], ids=["blank", "too-long"])
def test_bad_messages_are_refused(b1, home, text, why):
    r = hookd_cli(home, "send", "b1", text)
    assert r.returncode == 2 and why in r.stderr
    assert b1.inbox() == {}


def test_post_tool_use_delivers_as_additional_context_once(b1, home):
    b1.send("Please also update CHANGELOG")
    ctx = b1.context(payload(BASH_POST))
    assert ctx.startswith("Message(s) from the human operator, relayed by hookd")
    assert "[human msg m-1 from alice at 20" in ctx and ctx.endswith("] Please also update CHANGELOG")
    m = b1.inbox()["m-1"]
    assert (m["state"], m["delivered_via"], m["deliveries"]) == ("delivered", "PostToolUse", 1)
    assert b1.hook(payload(BASH_POST)) == ""  # not offered twice
    [ev] = [e for e in events(home) if e["kind"] == "inbox_delivered"]
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
    b1.send("for the main agent")
    b1.send("for the helper", "--agent", "agent-7")
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


def test_injection_cap_splits_across_boundaries_in_order(b1, home):  # B14
    for i, n in enumerate((5000, 5000, 4000)):
        b1.send(f"part{i} " + "y" * n)
    got = [b1.context(payload(BASH_POST)) for _ in range(3)]
    assert all(len(c) < 9000 for c in got)
    assert ["part0" in got[0], "part1" in got[1], "part2" in got[2]] == [True, True, True]
    assert "part1" not in got[0] and "part2" not in got[1]
    assert all(m["state"] == "delivered" and m["deliveries"] == 1 for m in b1.inbox().values())
    waiting = [e["data"]["waiting"] for e in events(home) if e["kind"] == "inbox_delivered"]
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


def test_a_later_stop_adopts_what_was_delivered(b1, home):
    b1.send("noted?")
    b1.context(payload(BASH_POST))
    b1.hook(payload(STOP))
    m = b1.inbox()["m-1"]
    assert (m["state"], m["adopted_via"]) == ("adopted", "Stop")
    [ev] = [e for e in events(home) if e["kind"] == "inbox_adopted"]
    assert ev["data"] == {"ids": ["m-1"], "via": "Stop"}


def test_session_scoped_message_goes_only_to_its_session(b1):  # B25
    b1.send("for s-0013 only", "--session", "s-0013")
    assert b1.hook(payload(BASH_POST, session_id="s-0014")) == ""
    assert "for s-0013 only" in b1.context(payload(BASH_POST, session_id="s-0013"))


def test_concurrent_identical_hooks_deliver_once(b1):
    b1.send("exactly once")
    p = payload(BASH_POST)
    outs: list[str] = []
    threads = [threading.Thread(target=lambda: outs.append(b1.hook(copy.deepcopy(p)))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(bool(o) for o in outs) == [False, True]
    assert b1.inbox()["m-1"]["deliveries"] == 1


def test_spooled_hooks_never_deliver(b1, daemon):
    b1.send("not via a spool")
    daemon.stop()
    assert b1.hook(payload(BASH_POST)) == ""  # daemon down: fail open
    daemon.start()
    assert wait_until(lambda: any(e["kind"] == "hook_received" for e in events(b1.home)), 60)
    assert b1.inbox()["m-1"]["state"] == "queued"


def test_kill_9_between_delivery_and_adoption_offers_again(home, worktree):
    env = {**os.environ, "HOOKD_REDELIVER_AFTER_S": "0.2"}
    d = DaemonProcess(home, env=env).start()
    try:
        b = Builder(home, worktree)
        b.send("survive a crash")
        assert "survive a crash" in b.context(payload(BASH_POST))
        d.kill()
        d.start()
        assert b.inbox()["m-1"]["state"] == "delivered"  # nothing lost
        again = wait_until(lambda: b.context(payload(BASH_POST)), 60, interval=0.1, what="redelivery")
        assert "[human msg m-1 " in again  # recognisable as the same message
        assert b.inbox()["m-1"]["deliveries"] == 2
        [ev] = [e for e in events(home) if e["kind"] == "inbox_delivered" and e["data"]["redelivered"]]
        assert ev["data"]["redelivered"] == ["m-1"]
    finally:
        d.stop()


def test_adoption_is_proven_from_the_transcript_when_it_is_readable(b1, home, tmp_path):
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


def test_a_message_the_human_typed_is_not_sent_again(b1, home):  # B30
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


def test_hook_latency_with_a_10k_message_history(home, worktree):  # B08
    """Hooks are pure lookups: with 10,000 old messages the handler stays well under 200 ms
    (a functional bound from the field case; the benchmarks measure speed)."""
    import asyncio
    import time as t

    from hookd.config import Home
    from hookd.core import Hookd
    from hookd.store import Store

    async def fill() -> None:
        h = Home.resolve(home)
        h.ensure()
        store = await Store(h.db).open()
        core = Hookd(h, store)
        for i in range(10_000):
            await core.send_message("b1", f"old message {i}")

        def adopt_all(tx):
            tx._db.execute("UPDATE inbox_messages SET state='adopted'")  # history, not queue

        await store.write(adopt_all)
        await store.close()

    asyncio.run(fill())
    d = DaemonProcess(home).start()
    try:
        b = Builder(home, worktree)
        cmd = settings_command(b.settings, "PostToolUse")
        raw = json.dumps(payload(BASH_POST)).encode()
        times = []
        for _ in range(40):
            t0 = t.perf_counter()
            r = run_hook(cmd, raw, worktree)
            times.append(t.perf_counter() - t0)
            assert r.returncode == 0 and r.stdout == b""
        times.sort()
        assert times[int(0.99 * (len(times) - 1))] < 0.2
        b.send("new")
        assert "new" in b.context(payload(BASH_POST))
    finally:
        d.stop()


def test_interrupted_turn_without_stop_or_session_end_loses_nothing(home, worktree):  # B27
    """Esc mid-tool fires no hook; the process may die without SessionEnd. A message delivered
    in that turn is never adopted (no Stop, no transcript proof) and is offered again, with its
    id, at the next boundary after the redelivery timeout; queued ones stay queued."""
    env = {**os.environ, "HOOKD_REDELIVER_AFTER_S": "0.3"}
    d = DaemonProcess(home, env=env).start()
    try:
        b = Builder(home, worktree)
        b.send("delivered, then interrupted")
        assert "delivered, then interrupted" in b.context(payload(PROMPT, session_id="s-0027"))
        b.hook(payload("004-PreToolUse.json", session_id="s-0027", tool_use_id="toolu_I1"))
        # ... Esc: no PostToolUse, no Stop; the process exits without SessionEnd
        b.send("queued after the interrupt")
        assert b.inbox()["m-1"]["state"] == "delivered" and b.inbox()["m-2"]["state"] == "queued"
        again = wait_until(lambda: b.context(payload(PROMPT, session_id="s-0027b", prompt="go on")), 60, 0.1,
                           "the interrupted message offered again")
        assert "[human msg m-1 " in again and "[human msg m-2 " in again
        assert b.inbox()["m-1"]["deliveries"] == 2
    finally:
        d.stop()


def test_send_to_an_unknown_builder_is_refused(b1, home):
    r = hookd_cli(home, "send", "b-typo", "hello")
    assert r.returncode == 1 and "not known: spawn it first" in r.stderr
    assert b1.inbox() == {}


def test_the_cap_counts_what_travels_not_python_characters(b1, home):  # B14
    emoji = "\U0001F600" * 3000  # 3,000 characters, 12,000 bytes of UTF-8, 6,000 UTF-16 units
    r = hookd_cli(home, "send", "b1", emoji)
    assert r.returncode == 2 and "bytes as sent" in r.stderr
    quotes = '"' * 5000  # 5,000 characters, 10,000 once JSON-escaped
    r = hookd_cli(home, "send", "b1", quotes)
    assert r.returncode == 2
    b1.send("\U0001F600" * 1500)  # 6,000 bytes: fits alone
    b1.send("\U0001F600" * 1500)
    first = b1.hook(payload(BASH_POST))
    assert len(first.encode()) < 9000 and json.loads(first)["hookSpecificOutput"]["additionalContext"].count("[human msg") == 1


def test_inbox_says_when_it_shows_only_the_newest(b1, home):
    for i in range(3):
        b1.send(f"n{i}")
    r = hookd_cli(home, "inbox", "b1", "--limit", "2", "--json")
    assert [m["id"] for m in json.loads(r.stdout)] == ["m-2", "m-3"]
    assert "the newest 2 of 3 messages" in r.stderr
