"""Faults of sessions, lanes and messages across session changes (issue 18, items 7, 11, 13,
14): in process (tests/inproc.py: the core and the app, hooks posted as the generated client
posts them, the agent's pid as ``CLAUDE_PID`` sends it), and, for the clock, the core over a
real SQLite file with an injected clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hookd.settings import Settings

from .conftest import TUI, wait_until
from .inproc import InProc
from .test_inbox_inproc import Builder
from .test_lanes import FAST_NOTIFY, Agent, run_agent

pytestmark = pytest.mark.inproc

SID = "346f6e3a-edc5-468f-856d-23ceddca3ede"
ASK = "toolu_01ASK0000000000000000001"


def payload(name: str, **changes: Any) -> dict[str, Any]:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    return p


#: Claude Code 2.1.332's idle notification, as its TUI sends it once a turn has ended and
#: ``messageIdleNotifThresholdMs`` passed (tests/e2e/test_sessions_e2e.py records it)
IDLE_PROMPT = {"hook_event_name": "Notification", "message": "Claude is waiting for your input",
               "notification_type": "idle_prompt"}


@pytest.fixture
def agent(home: Path, worktree: Path) -> Iterator[Agent]:
    yield from run_agent(home, worktree, notify_overrides=FAST_NOTIFY)


# --- item 11: a Notification is not agent activity ------------------------------------------

def test_idle_prompt_notification_leaves_an_idle_lane_idle_and_it_still_stalls(agent: Agent) -> None:
    """The turn ended (Stop): the idle_prompt Notification that follows must not make the lane
    working, so a queued message the idle agent cannot receive still stalls it."""
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("002-UserPromptSubmit.json"))
    agent.hook(payload("012-Stop.json"))
    agent.wait_lane("idle")
    agent.hook(payload("009-Notification.json", **IDLE_PROMPT))
    assert [e["data"]["hook_event_name"] for e in agent.app.events() if e["kind"] == "hook_received"][-1] == "Notification"
    lane = agent.lane()
    assert lane["state"] == "idle" and lane["detail"] == "its turn ended", lane
    assert agent.app.request("POST", "/v1/builders/b1/messages", json={"text": "are you there?"}).status_code == 201
    lane = agent.wait_lane("stalled")
    assert "queued message" in lane["detail"]
    assert ("idle", "working") not in agent.changes()[1:]


# --- item 14: a transcript whose conversation rows carry no sessionId ------------------------

ROWS = [json.loads(x) for x in (TUI.parent / "transcript.jsonl").read_text().splitlines()]


def spawn_b(app: InProc, builder: str = "b1", **kw: Any) -> None:
    from hookd.config import Home
    from hookd.spawn import spawn

    spawn(Home.resolve(app.home.root), builder, **kw)  # what `hookd spawn` does


def tail(app: InProc, path: Path, builder: str = "b1") -> None:
    """``hookd tail PATH --builder B``'s request."""
    r = app.request("POST", f"/v1/builders/{builder}/transcripts", json={"paths": [str(path)], "session_id": None})
    assert r.status_code == 201, r.text


def _strip(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("sessionId", "session_id")}


@pytest.mark.parametrize("named", ["by its file name", "by another row"])
def test_transcript_rows_without_session_id_take_the_files_session(inproc: InProc, tmp_path: Path, named: str) -> None:
    """Conversation rows with no sessionId: the question they show belongs to the session the
    file's name gives (``<session id>.jsonl``) or that another of its rows names; never null."""
    sid = "0b7c1f9e-3a52-4d8e-9f6a-2c4d8e1a7b30"
    if named == "by its file name":
        t, rows = tmp_path / f"{sid}.jsonl", [_strip(r) for r in ROWS]
    else:  # only a bookkeeping row at the end names the session
        t = tmp_path / "exported.jsonl"
        rows = [_strip(r) for r in ROWS if r.get("type") in ("user", "assistant")] + [{"type": "last-prompt", "sessionId": sid}]
    t.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spawn_b(inproc, settings_file=tmp_path / "b1.json")
    tail(inproc, t)
    q = wait_until(lambda: next((q for q in inproc.questions() if q["id"] == ASK and q["state"] == "answered"), None), 60,
                   what="the question read from the transcript")
    assert q["session_id"] == sid, q
    evs = [e for e in inproc.events() if e["kind"] in ("question_pending", "question_resolved", "session_started")]
    assert evs and all(e["session_id"] == sid for e in evs), evs
    [tailed] = inproc.get("/v1/transcripts")
    assert tailed["session_id"] == sid


# --- item 14: adoption proof that reaches the transcript after the Stop ----------------------

def test_adoption_proof_written_after_the_stop_adopts_and_the_message_is_never_offered_again(
        home: Path, worktree: Path, tmp_path: Path) -> None:
    """The Stop looks for proof in the transcript and finds none yet (Claude Code logs the
    request that carried the message later): when the tailer reads the proof, the message is
    adopted (via transcript) and no later boundary offers it again (redelivery after 1 ms)."""
    app = InProc(home, Settings(redeliver_after_s=0.001)).start()  # HOOKD_REDELIVER_AFTER_S=0.001
    try:
        t = tmp_path / f"{SID}.jsonl"
        t.write_text("")
        b = Builder(app, worktree)
        assert b.hook(payload("001-SessionStart.json", transcript_path=str(t))) == ""
        b.send("prove it later")
        ctx = b.context(payload("005-PostToolUse.json", transcript_path=str(t)))
        assert ctx and "[human msg m-1 " in ctx
        # the Stop's read finds no proof yet (the Stop may offer m-1 again: redelivery after 1 ms)
        b.hook(payload("012-Stop.json", transcript_path=str(t)))
        assert b.inbox()["m-1"]["state"] == "delivered"
        blob = {"type": "api-request-blob", "hash": "h1", "sessionId": SID, "message": {"role": "user", "content": [
            {"type": "text", "text": f"PostToolUse:Bash hook additional context: {ctx}"}]}}
        with t.open("a") as f:
            f.write(json.dumps(blob) + "\n" + json.dumps({"type": "api-request", "sessionId": SID, "tail": ["h1"]}) + "\n")
        m = wait_until(lambda: (m := b.inbox()["m-1"])["state"] == "adopted" and m, 60, what="adoption from the tailer")
        assert m["adopted_via"] == "transcript"
        assert b.hook(payload("005-PostToolUse.json", transcript_path=str(t))) == ""  # never again
        assert b.hook(payload("012-Stop.json", transcript_path=str(t))) == ""
        assert b.inbox()["m-1"]["deliveries"] == m["deliveries"]
    finally:
        app.stop()


# --- item 14: a stale session_id on some hooks of one conversation --------------------------

def test_stale_session_ids_of_one_conversation_make_one_interaction_and_no_ghost_lane(agent: Agent) -> None:
    """Claude Code reports an earlier session id of the same conversation on some hooks
    (anthropics/claude-code#58682). After compaction moved the agent to a new session, the
    AskUserQuestion call's PermissionRequest carries the old (known) id, its PostToolUse an id
    hookd never saw, the Stop the old one again: one interaction, in the current session,
    answered; no reused key, no second prompt; the lane stays on the current session."""
    old, new, ghost = SID, "5d1e2f30-0a1b-4c2d-8e3f-405162738495", "9f8e7d6c-5b4a-4392-8180-7f6e5d4c3b2a"
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("002-UserPromptSubmit.json"))
    agent.hook(payload("002-UserPromptSubmit.json", hook_event_name="PreCompact", trigger="auto", custom_instructions=None))
    agent.hook(payload("001-SessionStart.json", session_id=new, source="compact"))
    agent.hook(payload("002-UserPromptSubmit.json", session_id=new))
    agent.hook(payload("007-PreToolUse.json", session_id=new))
    agent.hook(payload("008-PermissionRequest.json", session_id=old))
    agent.hook(payload("010-PostToolUse.json", session_id=ghost))
    agent.hook(payload("012-Stop.json", session_id=old))
    qs = agent.app.questions()
    assert [(q["id"], q["session_id"], q["state"]) for q in qs] == [(ASK, new, "answered")], qs
    assert qs[0]["answers"] == {"Which color do you prefer?": "Blue"}
    evs = agent.app.events()
    assert not [e for e in evs if e["kind"] == "interaction_id_reused"]
    assert not [e for e in evs if e["session_id"] == ghost]
    stale = [(e["data"]["hook_event_name"], e["data"]["stale_session_id"]) for e in evs
             if e["kind"] == "hook_received" and "stale_session_id" in e["data"]]
    assert stale == [("PermissionRequest", old), ("PostToolUse", ghost), ("Stop", old)]
    lane = agent.wait_lane("idle")
    assert lane["session_id"] == new and lane["detail"] == "its turn ended", lane
    [b1] = [b for b in agent.app.get("/v1/status")["builders"] if b["builder"] == "b1"]
    assert sorted(s["session_id"] for s in b1["sessions"]) == sorted([old, new])


def test_a_hook_with_a_stale_session_id_tells_the_tailer_the_current_session(agent: Agent) -> None:
    """The tailer hears of each live hook under the session it was recorded in: a hook that
    reported an earlier id of the same conversation (anthropics/claude-code#58682) marks the
    current session's transcript, not the stale session's (hookd.watchers.quiet)."""
    old, new = SID, "5d1e2f30-0a1b-4c2d-8e3f-405162738495"
    ingest = agent.app.core.ingest
    heard: list[str] = []
    tailer_hears = ingest.on_hook

    def hears(session_id: str) -> None:
        heard.append(session_id)
        if tailer_hears is not None:
            tailer_hears(session_id)

    ingest.on_hook = hears
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("002-UserPromptSubmit.json"))
    agent.hook(payload("001-SessionStart.json", session_id=new, source="compact"))
    agent.hook(payload("007-PreToolUse.json", session_id=new))
    agent.hook(payload("008-PermissionRequest.json", session_id=old))
    stale = [e["data"]["stale_session_id"] for e in agent.app.events()
             if e["kind"] == "hook_received" and "stale_session_id" in e["data"]]
    assert stale == [old]
    assert heard == [old, old, new, new, new]


# --- item 13: messages across compaction and forks -----------------------------------------

@pytest.fixture
def b1(inproc: InProc, worktree: Path) -> Builder:
    return Builder(inproc, worktree)


@pytest.mark.parametrize("scoped", [False, True], ids=["unscoped", "scoped-to-the-session"])
@pytest.mark.parametrize("new_id", [False, True], ids=["same-id", "new-id"])
def test_a_message_delivered_just_before_compaction_is_delivered_again_after_it(b1, new_id: bool,
                                                                                  scoped: bool) -> None:
    """Delivered at SessionStart(resume), then /compact at once: the context that carried it
    reaches only the compaction's summariser. PreCompact puts it back in the queue and the
    SessionStart(compact) that follows (same id, or a new one linked by the PreCompact)
    delivers it again, with no wait for redelivery."""
    after = "5d1e2f30-0a1b-4c2d-8e3f-405162738495" if new_id else SID
    if scoped:  # (a message for a session hookd never saw is refused: it ran, then ended)
        for name in ("001-SessionStart.json", "014-SessionEnd.json"):
            b1.hook(payload(name))
    b1.send("read this after compaction", session_id=SID if scoped else None)
    first = b1.context(payload("001-SessionStart.json", source="resume"))
    assert first and "[human msg m-1 " in first
    b1.hook(payload("002-UserPromptSubmit.json", hook_event_name="PreCompact", trigger="manual", custom_instructions=""))
    assert b1.inbox()["m-1"]["state"] == "queued"
    [ev] = [e for e in b1.events() if e["kind"] == "inbox_requeued"]
    assert ev["data"]["ids"] == ["m-1"] and ev["session_id"] == SID
    again = b1.context(payload("001-SessionStart.json", session_id=after, source="compact"))
    assert again and "[human msg m-1 " in again and "read this after compaction" in again
    m = b1.inbox()["m-1"]
    assert (m["state"], m["deliveries"], m["delivered_session_id"]) == ("delivered", 2, after)


@pytest.mark.parametrize("between", [False, True], ids=["guessed-right", "guessed-wrong"])
def test_a_message_for_an_ended_session_follows_its_fork(b1, tmp_path: Path, between: bool) -> None:
    """A message scoped to a session that ended is delivered to the session forked from it
    (``--resume ID --fork-session``) once the fork's transcript, which starts with a copy of
    the parent's rows, links the two (whether SessionStart's guess of the parent, the
    builder's latest other session, was right or another session ran in between); never on
    that guess alone."""
    parent_t, fork_t = tmp_path / f"{SID}.jsonl", tmp_path / "fork.jsonl"
    fork = "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d"
    rows = [r for r in ROWS if r.get("type") in ("user", "assistant")]
    parent_t.write_text("".join(json.dumps(r) + "\n" for r in rows))
    b1.hook(payload("001-SessionStart.json", transcript_path=str(parent_t)))
    b1.hook(payload("012-Stop.json", transcript_path=str(parent_t)))
    b1.hook(payload("014-SessionEnd.json", transcript_path=str(parent_t)))
    if between:  # an unrelated session of the builder ran last
        b1.hook(payload("001-SessionStart.json", session_id="u-0001", transcript_path=str(tmp_path / "u.jsonl")))
    b1.send("for the session that ended", session_id=SID)
    fork_t.write_text("")
    assert b1.context(payload("001-SessionStart.json", session_id=fork, source="fork", transcript_path=str(fork_t))) is None
    assert b1.context(payload("002-UserPromptSubmit.json", session_id=fork, transcript_path=str(fork_t))) is None
    with fork_t.open("a") as f:  # the fork's copy of its parent's rows, under its own id
        f.write("".join(json.dumps(dict(r, sessionId=fork)) + "\n" for r in rows))
    wait_until(lambda: [e for e in b1.events() if e["kind"] == "session_linked" and e["session_id"] == fork], 60,
               what="the fork linked to its parent by its transcript")
    ctx = b1.context(payload("005-PostToolUse.json", session_id=fork, transcript_path=str(fork_t)))
    assert ctx and "[human msg m-1 " in ctx and "for the session that ended" in ctx
    assert b1.inbox()["m-1"]["delivered_session_id"] == fork


# --- item 7: windows on hookd's timeline, not the wall clock --------------------------------

class Machine:
    """A machine's clocks for the core (:class:`hookd.clock.Clock` readings): ``step`` moves
    only the wall clock (NTP, ``date -s``); ``advance`` lets time pass."""

    def __init__(self) -> None:
        self.wall, self.boottime, self.boot = 1_800_000_000.0, 5_000.0, "boot-1"

    def clock(self):
        from hookd.clock import Clock

        return Clock(wall=lambda: self.wall, boottime=lambda: self.boottime, boot=lambda: self.boot)

    def step(self, s: float) -> None:
        self.wall += s

    def advance(self, s: float) -> None:
        self.wall += s
        self.boottime += s


async def _core_on(tmp_path: Path, machine: Machine):
    from hookd.config import Home
    from hookd.core import Hookd
    from hookd.store import Store

    home = Home(tmp_path / "h")
    home.ensure()
    return Hookd(home, await Store(home.db, clock=machine.clock()).open())


def _raw(name: str, **changes: Any) -> bytes:
    return json.dumps(payload(name, **changes)).encode()


@pytest.mark.parametrize("step", [300.0, -3600.0])
def test_a_clock_step_between_pretooluse_and_permissionrequest_keeps_one_call(tmp_path: Path, step: float) -> None:
    """The wall clock steps between an AskUserQuestion's PreToolUse and its PermissionRequest:
    still one interaction, the PermissionRequest holds for it, and a remote answer releases
    that hook with the answer; the records keep the wall times as they were read."""
    import asyncio

    from hookd.models import AnswerRequest

    async def run() -> None:
        m = Machine()
        core = await _core_on(tmp_path, m)
        try:
            await core.ingest_hook("claude-code", "b1", _raw("001-SessionStart.json"))
            await core.ingest_hook("claude-code", "b1", _raw("007-PreToolUse.json"))
            m.advance(0.05)
            m.step(step)
            res = await core.ingest_hook("claude-code", "b1", _raw("008-PermissionRequest.json"), hold=True)
            pending = await core.store.interactions("pending")
            assert [i.id for i in pending] == [ASK], [i.id for i in pending]
            assert res.hold is not None and res.hold[0] == ASK
            receipt = await core.answer(ASK, AnswerRequest(answers={"": "Red"}), surface="cli")
            assert receipt["delivery"] == "hook"
            body = await asyncio.wait_for(res.hold[1], 5)
            assert b'"Red"' in body and b'"allow"' in body
            [i] = await core.store.interactions("all")
            assert i.created_at == 1_800_000_000.0  # the wall time it was read at
        finally:
            await core.close()
            await core.store.close()

    asyncio.run(run())


def test_redelivery_and_compaction_links_measure_elapsed_time_across_steps_and_restarts(tmp_path: Path) -> None:
    """A delivered message is offered again REDELIVER_AFTER_S (300 s) after its delivery as
    time elapses, not when the wall clock jumps 301 s ahead; a SessionStart(compact) links to
    the PreCompact's session across a daemon restart (same boot) and a 700 s step, because
    less than COMPACT_LINK_S (600 s) really passed."""
    import asyncio

    new = "5d1e2f30-0a1b-4c2d-8e3f-405162738495"

    async def run() -> None:
        m = Machine()
        core = await _core_on(tmp_path, m)
        try:
            await core.send_message("b1", "hello")
            out = (await core.ingest_hook("claude-code", "b1", _raw("001-SessionStart.json"))).body
            assert b"[human msg m-1 " in out
            m.advance(10)
            m.step(301)
            assert (await core.ingest_hook("claude-code", "b1", _raw("005-PostToolUse.json"))).body == b""
            m.advance(291)
            assert b"[human msg m-1 " in (await core.ingest_hook("claude-code", "b1", _raw("005-PostToolUse.json"))).body
            await core.ingest_hook("claude-code", "b1", _raw("002-UserPromptSubmit.json", hook_event_name="PreCompact",
                                                              trigger="auto", custom_instructions=None))
        finally:
            await core.close()
            await core.store.close()
        m.advance(30)  # the daemon restarts (same boot): a new process, a new clock reading
        m.step(700)
        core = await _core_on(tmp_path, m)
        try:
            await core.ingest_hook("claude-code", "b1", _raw("001-SessionStart.json", session_id=new, source="compact"))
            [started] = [e for e in await core.store.events_after(0, 10000)
                         if e.kind == "session_started" and e.session_id == new]
            assert started.data["parent_session_id"] == SID
        finally:
            await core.close()
            await core.store.close()

    asyncio.run(run())
