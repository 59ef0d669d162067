"""Lanes: derived from hooks, transcript rows and the agent's process (in process,
tests/inproc.py: hooks posted as the generated client posts them, with the agent's pid,
``CLAUDE_PID``, in ``X-Hookd-Agent-Pid``; the agent a real process)."""

from __future__ import annotations

import json
import subprocess
import time
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home
from hookd.settings import Settings
from hookd.spawn import spawn
from hookd.watchers.lane_state import derive

from .conftest import TUI, wait_until
from .inproc import InProc

pytestmark = pytest.mark.inproc

SID = "346f6e3a-edc5-468f-856d-23ceddca3ede"
ASK = "toolu_01ASK0000000000000000001"
# HOOKD_NOTIFY_QUESTION_AFTER_S=1, HOOKD_NOTIFY_IDLE_INBOX_AFTER_S=1, HOOKD_LIVENESS_S=0.2
FAST_NOTIFY = {"question_after_s": 1.0, "idle_inbox_after_s": 1.0}
FAST = Settings(liveness_s=0.2)


def payload(name: str, **changes: Any) -> dict[str, Any]:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    return p


class Agent:
    """A stand-in agent process (its pid is CLAUDE_PID for the hooks) and its builder."""

    def __init__(self, app: InProc, worktree: Path, name: str = "b1"):
        self.app, self.worktree, self.name = app, worktree, name
        spawn(Home.resolve(app.home.root), name, worktree=worktree, hold_s=0)  # what `hookd spawn` does
        # blocks on its stdin (held open by us) until killed: an agent that is simply alive
        self.proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)

    def hook(self, p: dict[str, Any]) -> None:
        r = self.app.hook(p, self.name, headers={"x-hookd-agent-pid": str(self.proc.pid)})
        assert r.status_code == 200, r.text

    def lane(self) -> dict[str, Any]:
        return next(lane for lane in self.app.get("/v1/lanes") if lane["builder"] == self.name)

    def wait_lane(self, *states: str, timeout: float = 60) -> dict[str, Any]:
        """The lane once its state is one of ``states``."""
        return wait_until(lambda: (lane := self.lane())["state"] in states and lane, timeout, what=f"lane {states}")

    def recorded(self, state: str) -> dict[str, Any]:
        """The lane once it is ``state`` and the watcher has recorded the change to it."""
        lane = self.wait_lane(state)
        wait_until(lambda: (c := self.changes()) and c[-1][1] == state, 60, what=lambda: f"lane_changed to {state}: {self.changes()}")
        return lane

    def changes(self) -> list[tuple[str | None, str]]:
        return [(e["data"]["from"], e["data"]["to"]) for e in self.app.events()
                if e["kind"] == "lane_changed" and e["builder"] == self.name]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        if self.proc.stdin:
            self.proc.stdin.close()


def other(agent: Agent, name: str, settings_file: Path, folder: Path) -> Agent:
    """A builder spawned with a settings file whose transcripts in ``folder`` the app follows
    (``hookd spawn NAME --settings-file F`` and ``hookd tail FOLDER --builder NAME``); no agent."""
    spawn(Home.resolve(agent.app.home.root), name, settings_file=settings_file)
    r = agent.app.request("POST", f"/v1/builders/{name}/transcripts", json={"paths": [str(folder)], "session_id": None})
    assert r.status_code == 201, r.text
    b = Agent.__new__(Agent)
    b.app, b.name = agent.app, name
    return b


def run_agent(home: Path, worktree: Path, **inproc: Any) -> Iterator[Agent]:
    """An :class:`Agent` of an in-process hookd on ``home`` (``FAST`` settings; ``inproc``:
    more of :class:`InProc`'s options), closed with it: the body of an ``agent`` fixture."""
    app = InProc(home, FAST, **inproc).start()
    a = Agent(app, worktree)
    yield a
    a.close()
    app.stop()


def run_alerting_agent(home: Path, worktree: Path, out: Path) -> Iterator[tuple[Agent, Path]]:
    """:func:`run_agent` with every notification going to a command channel that appends each
    alert to ``out`` (the real notifier path: the channel's process gets the alert JSON on
    stdin); reminders and stalls an hour away. Yields the agent and ``out``."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[notify]\nquestion_after_s = 3600\nidle_inbox_after_s = 3600\nsteps_s = [0, 3600]\n"
        f'[[notify.channel]]\ntype = "command"\ncommand = ["sh", "-c", "cat >> {out}; echo >> {out}"]\n')
    for a in run_agent(home, worktree):
        yield a, out


@pytest.fixture
def agent(home: Path, worktree: Path) -> Iterator[Agent]:
    yield from run_agent(home, worktree, notify_overrides=FAST_NOTIFY)


def test_lane_follows_the_turn_and_stalls_on_a_question(agent: Agent) -> None:
    # each state recorded before the next hook: in process the hooks follow each other faster
    # than the watcher records (it records the lane it finds when it recomputes)
    agent.hook(payload("001-SessionStart.json"))
    assert agent.recorded("idle")["session_id"] == SID
    agent.hook(payload("002-UserPromptSubmit.json"))
    agent.recorded("working")
    agent.hook(payload("007-PreToolUse.json"))
    # on a busy machine the lane may already have gone on to stalled (the threshold is 1 s
    # here) when it is first read: the recorded changes below prove the order
    lane = agent.wait_lane("waiting_question", "stalled")
    assert lane["pending"] == [ASK] and lane["agent_pid"] == agent.proc.pid
    lane = agent.wait_lane("stalled")  # waited longer than the threshold (1 s here)
    assert ASK in lane["detail"]
    # the lanes route computes lanes live; the watcher records the change at the due time
    wait_until(lambda: agent.changes()[-1] == ("waiting_question", "stalled"), 60, what="lane_changed to stalled")
    agent.hook(payload("010-PostToolUse.json"))  # answered at the desk
    agent.recorded("working")
    agent.hook(payload("012-Stop.json"))
    agent.wait_lane("idle")
    wait_until(lambda: agent.changes()[-1] == ("working", "idle"), 60, what=lambda: f"the last lane_changed: {agent.changes()}")
    assert agent.changes() == [(None, "idle"), ("idle", "working"), ("working", "waiting_question"),
                               ("waiting_question", "stalled"), ("stalled", "working"), ("working", "idle")]


def test_idle_with_queued_messages_stalls(agent: Agent) -> None:
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("012-Stop.json"))
    agent.wait_lane("idle")
    assert agent.app.request("POST", "/v1/builders/b1/messages", json={"text": "are you there?"}).status_code == 201
    lane = agent.wait_lane("stalled")
    assert "1 queued message" in lane["detail"] and lane["queued"] == 1
    # another message to it says why it waits, as to an idle one (no idle-wake hook waits)
    r = agent.app.request("POST", "/v1/builders/b1/messages", json={"text": "hello?"}).json()
    assert r["note"].startswith("b1's agent is idle at its prompt: the message is delivered when its next turn begins")


def test_agent_killed_with_a_pending_question_is_dead(agent: Agent) -> None:
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("007-PreToolUse.json"))
    agent.wait_lane("waiting_question", "stalled")  # (stalled once it waited past the 1 s threshold)
    # recorded before the agent dies (its exit is seen at once: killed before the watch's first
    # refresh, the lane would be recorded dead straight away)
    wait_until(lambda: (c := agent.changes()) and c[-1][1] in ("waiting_question", "stalled"), 60,
               what=lambda: f"lane_changed to waiting_question: {agent.changes()}")
    agent.close()  # SIGKILL: no SessionEnd
    agent.wait_lane("dead")
    wait_until(lambda: (c := agent.changes()) and c[-1][1] == "dead", 60, what="lane_changed to dead")
    [dead] = [e for e in agent.app.events() if e["kind"] == "lane_changed" and e["data"]["to"] == "dead"]
    assert dead["data"]["pending"] == [ASK] and dead["data"]["detail"] == (
        "the agent process is gone without a SessionEnd; 1 question(s) left unanswered, closed as orphaned")
    # what it asked leaves the humans' queue (issue 21, moment 8: hookd.core.policy)
    wait_until(lambda: agent.app.interaction(ASK)["state"] == "orphaned", 60, what="the question orphaned")
    assert agent.app.interaction(ASK)["warning"] == f"the agent's process is gone (pid {agent.proc.pid} is gone) while it was open"
    assert agent.app.questions("pending") == [] and agent.lane()["pending"] == []
    assert agent.lane()["state"] == "dead"
    assert agent.changes()[-1][0] in ("waiting_question", "stalled")
    assert any(to == "waiting_question" for _, to in agent.changes()[:-1])
    first = agent.lane()
    wait_until(lambda: time.time() > first["since"] + 1.0, 60, what="a second to pass")
    assert agent.lane()["since"] == first["since"]  # the time it was found dead, not "now" on each read


def test_answers_kept_for_a_session_whose_agent_died_go_to_the_builders_next_session(agent: Agent) -> None:
    """An agent killed (no SessionEnd) leaves its session never ended: the answers hookd kept
    as messages for it, and any answer to a question it left open, go to the builder's next
    session once its lane is found dead, as at a session's end (a fresh user's trial left a
    kept answer queued for a session nobody resumes)."""
    sid = payload("001-SessionStart.json")["session_id"]
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("007-PreToolUse.json"))
    agent.hook(payload("010-PostToolUse.json"))  # the desk answered first
    r = agent.app.request("POST", f"/v1/interactions/{ASK}/answer", json={"answers": {"Which color do you prefer?": "Red"}})
    assert r.status_code == 409, r.text  # kept as m-1, for the live session
    second = "toolu_01ASK0000000000000000002"
    agent.hook(payload("007-PreToolUse.json", tool_use_id=second))  # open as the agent dies
    assert [(m["id"], m["session_id"]) for m in agent.app.inbox("b1")] == [("m-1", sid)]
    agent.close()  # SIGKILL: no SessionEnd
    agent.wait_lane("dead")
    wait_until(lambda: agent.app.interaction(second)["state"] == "orphaned", 60, what="the open question orphaned")
    wait_until(lambda: [(m["id"], m["session_id"]) for m in agent.app.inbox("b1")] == [("m-1", None)], 60,
               what=lambda: f"m-1 the builder's: {agent.app.inbox('b1')}")
    r = agent.app.request("POST", f"/v1/interactions/{second}/answer", json={"answers": {"Which color do you prefer?": "Red"}})
    assert r.status_code == 409, r.text  # its question orphaned: kept, for the builder's next session
    assert [(m["id"], m["session_id"], m["answer_to"]) for m in agent.app.inbox("b1")] == [
        ("m-1", None, ASK), ("m-2", None, second)]


def test_a_new_state_never_begins_before_the_one_it_replaced(agent: Agent, tmp_path: Path) -> None:
    """A session known only from its transcript: when the desk's answer ends waiting_question,
    the lane is working since then, not since the session started (no hook time to derive it
    from); a session that just started is idle with no prompt yet."""
    agent.hook(payload("001-SessionStart.json"))
    assert agent.wait_lane("idle")["detail"] == "session started, no prompt yet"
    folder = tmp_path / "projects"
    folder.mkdir()
    rows = [json.loads(x) for x in (TUI.parent / "transcript.jsonl").read_text().splitlines()]
    use = next(r for r in rows if r.get("type") == "assistant" and "AskUserQuestion" in json.dumps(r))
    res = next(r for r in rows if r.get("type") == "user" and ASK in json.dumps(r) and "toolUseResult" in r)
    prompt = next(r for r in rows if r.get("type") == "user")
    t = folder / "s-0099.jsonl"
    # written before the folder is followed: a file created while the tailer restarts its watch
    # for a newly followed folder is found only at that file's next change
    t.write_text(json.dumps(dict(prompt, sessionId="s-0099")) + "\n")
    b2 = other(agent, "b2", tmp_path / "unused.json", folder)
    started = b2.wait_lane("working")
    wait_until(lambda: time.time() > started["since"] + 1.0, 60, what="a second to pass")
    with open(t, "a") as f:
        f.write(json.dumps(dict(use, sessionId="s-0099")) + "\n")
    waiting = b2.wait_lane("waiting_question", "stalled")
    # recorded (it may already have gone on to stalled: FAST's question threshold is short)
    wait_until(lambda: any(to == "waiting_question" for _, to in b2.changes()), 60,
               what=lambda: f"lane_changed: {b2.changes()}")
    with open(t, "a") as f:
        f.write(json.dumps(dict(res, sessionId="s-0099")) + "\n")
    working = b2.wait_lane("working")
    assert working["since"] >= waiting["since"], (waiting, working)


def test_session_end_is_ended(agent: Agent) -> None:
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("014-SessionEnd.json"))
    assert agent.wait_lane("ended")["detail"].startswith("session ended")


def test_interrupt_in_the_transcript_is_idle_not_stalled(agent: Agent, tmp_path: Path) -> None:
    """B27: UserPromptSubmit, PreToolUse(Bash), then only an interrupt marker row."""
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"")
    agent.hook(payload("001-SessionStart.json", transcript_path=str(t)))
    agent.hook(payload("002-UserPromptSubmit.json"))
    agent.hook(payload("004-PreToolUse.json"))
    agent.wait_lane("working")
    with open(t, "ab") as f:
        f.write(json.dumps({"type": "user", "sessionId": SID, "message": {"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user for tool use]"}]}}).encode() + b"\n")
    lane = agent.wait_lane("idle")
    assert lane["detail"] == "interrupted"


def _inputs(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"builder": "b1", "queued": 0, "oldest_queued_at": None, "pending": [],
                         "session": {"session_id": "s1", "started_at": 100.0, "ended_at": None, "end_reason": None,
                                     "agent_pid": None, "agent_started_at": None, "interrupted_at": None,
                                     "hooks_unarmed_at": None, "cwd": None, "harness": "claude-code"},
                         "last_hook": {"hook_event_name": "PostToolUse", "kind": "tool_after", "at": 110.0}}
    d.update(over)
    return d


def test_derive_b25_another_sessions_activity_keeps_the_question_stall() -> None:
    """B25: s-0014's PostToolUse is the newest hook; s-0013's question still stalls the lane."""
    d = _inputs(pending=[{"id": "toolu_A", "kind": "question", "created_at": 100.0, "session_id": "s-0013"}])
    d["session"]["session_id"] = "s-0014"
    lane = derive(d, now=200.0, alive=lambda pid, at: None, question_after_s=60)
    assert (lane.state, lane.pending) == ("stalled", ("toolu_A",))
    waiting = derive(d, now=130.0, alive=lambda pid, at: None, question_after_s=60)
    assert waiting.state == "waiting_question"
    # the lane names the session it waits on (the question's), not the builder's newest one
    assert (lane.session_id, waiting.session_id) == ("s-0013", "s-0013")
    d["pending"] = []
    assert derive(d, now=200.0, alive=lambda pid, at: None).session_id == "s-0014"  # no question: the newest


def test_derive_states_and_due_times() -> None:
    assert derive(_inputs(session=None, last_hook=None), now=1.0).state == "idle"
    assert derive(_inputs(), now=120.0, alive=lambda p, a: None).state == "working"
    stop = _inputs(last_hook={"hook_event_name": "Stop", "kind": "turn_end", "at": 110.0}, queued=2, oldest_queued_at=115.0)
    lane = derive(stop, now=120.0, alive=lambda p, a: None, idle_inbox_after_s=120)
    assert (lane.state, lane.due) == ("idle", 235.0)
    assert derive(stop, now=236.0, alive=lambda p, a: None, idle_inbox_after_s=120).state == "stalled"
    gone = _inputs()
    gone["session"]["agent_pid"] = 123
    assert derive(gone, now=120.0, alive=lambda p, a: False).state == "dead"
    perm = _inputs(pending=[{"id": "pr_1", "kind": "permission", "created_at": 110.0, "session_id": "s1"}])
    assert derive(perm, now=111.0, alive=lambda p, a: True).state == "waiting_permission"
    elicit = _inputs(pending=[{"id": "el_1", "kind": "elicitation", "created_at": 110.0, "session_id": "s1"}])
    lane = derive(elicit, now=111.0, alive=lambda p, a: True)
    assert (lane.state, lane.pending, lane.detail) == ("waiting_question", ("el_1",), "elicitation el_1 is pending")
    asynchronous = _inputs(pending=[{"id": "ask_1", "kind": "async", "created_at": 110.0, "session_id": None}])
    assert derive(asynchronous, now=500.0, alive=lambda p, a: True).state == "working"  # async asks never block


def test_derive_a_run_that_ended_before_its_first_hook() -> None:
    """The builder's newest run ended before a hook came: its lane says how (``failed`` with
    an error status, notified once; ``ended`` otherwise), whatever an older session's lane
    was; a run that sent hooks, or one older than the session, leaves the session's lane."""
    run = {"started_at": 150.0, "stopped_at": 151.0, "stop_reason": "exited", "exit_status": 1, "hooks": 0,
           "mode": "headless", "log_path": "/h/logs/b1.log", "pid": 42}
    ended = _inputs(last_hook={"hook_event_name": "SessionEnd", "kind": "session_end", "at": 120.0})
    ended["session"]["ended_at"] = 120.0
    for d in (_inputs(session=None, last_hook=None, run=run), dict(ended, run=run)):
        lane = derive(d, now=160.0, alive=lambda p, a: None)
        assert (lane.state, lane.since, lane.failure, lane.session_id, lane.agent_pid) == (
            "failed", 151.0, "exited 1 before its first hook", None, None)
        assert lane.detail == "its agent (pid 42) exited 1 before its first hook: see /h/logs/b1.log"
    zero = derive(_inputs(session=None, last_hook=None, run=dict(run, exit_status=0, mode="tmux")), now=160.0)
    assert (zero.state, zero.failure, zero.detail) == (
        "ended", None, "its agent (pid 42) exited 0 before its first hook: its last screen is kept (hookd attach b1)")
    stopped = derive(_inputs(session=None, last_hook=None, run=dict(run, stop_reason="stopped", exit_status=None)),
                     now=160.0)
    assert (stopped.state, stopped.detail) == ("ended", "its agent (pid 42) was stopped by hookd stop before its first hook")
    assert derive(dict(ended, run=dict(run, hooks=3)), now=160.0).state == "ended"
    assert derive(dict(ended, run=dict(run, hooks=3)), now=160.0).failure is None
    older = dict(_inputs(), run=dict(run, started_at=90.0, stopped_at=95.0))  # before the session began
    assert derive(older, now=120.0, alive=lambda p, a: None).state == "working"


def _notified(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def alerting(home: Path, worktree: Path, tmp_path: Path):
    """A daemon whose notifications go to a command channel appending each alert to a file."""
    out = tmp_path / "alerts.jsonl"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[notify]\nquestion_after_s = 3600\nidle_inbox_after_s = 1\nsteps_s = [0, 3600]\n"
        f'[[notify.channel]]\ntype = "command"\ncommand = ["sh", "-c", "cat >> {out}; echo >> {out}"]\n')
    app = InProc(home, Settings(liveness_s=0.2)).start()  # HOOKD_LIVENESS_S=0.2
    a = Agent(app, worktree)
    yield a, out
    a.close()
    app.stop()


def test_agent_killed_with_a_question_notifies_at_once(alerting: tuple[Agent, Path]) -> None:
    agent, out = alerting
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("007-PreToolUse.json"))
    agent.wait_lane("waiting_question")
    assert _notified(out) == []  # 3600 s threshold: nothing yet
    agent.close()
    agent.wait_lane("dead")
    [alert] = wait_until(lambda: _notified(out), 60, what="the agent_dead notification")
    assert alert["rule"] == "agent_dead" and alert["builder"] == "b1" and ASK in alert["message"]
    assert alert["data"]["pending"] == [ASK]


def headless_run_ended(agent: Agent, status: str) -> None:
    """``agent``'s process recorded as a headless run hookd started (session ``S1``), which then
    ends with exit ``status`` as its wrapper writes it, before any hook."""
    import psutil

    app = agent.app
    r = app.request("POST", "/v1/builders/b1/started", json={
        "harness": "claude-code", "mode": "headless", "pid": agent.proc.pid, "argv": ["claude", "-p"],
        "pid_started_at": psutil.Process(agent.proc.pid).create_time(), "tmux_socket": None, "tmux_session": None,
        "log_path": "/l/b1.log", "session_id": "S1"})
    assert r.status_code == 201, r.text
    exits = app.home.run_dir / "exits" / str(agent.proc.pid)
    exits.parent.mkdir(parents=True, exist_ok=True)
    exits.write_text(f"{status}\n")  # (what the headless wrapper writes as its agent exits)
    agent.close()


def test_a_run_that_fails_before_its_first_hook_notifies_once(alerting: tuple[Agent, Path]) -> None:
    """An agent hookd started that exits 1 before any hook: the lane turns ``failed`` and an
    ``agent_failed`` notification names why (its headless wrapper's status file says 1). (Once
    per failure: tests/test_failures.py `test_a_failure_is_notified_once`.)"""
    agent, out = alerting
    headless_run_ended(agent, "1")
    lane = agent.recorded("failed")
    assert (lane["failure"], lane["detail"]) == (
        "exited 1 before its first hook", f"its agent (pid {agent.proc.pid}) exited 1 before its first hook: see /l/b1.log")
    [alert] = wait_until(lambda: _notified(out), 60, what="the agent_failed notification")
    assert (alert["rule"], alert["builder"]) == ("agent_failed", "b1")
    assert alert["title"] == "hookd: b1's agent stopped: exited 1 before its first hook"


def test_idle_with_queued_messages_notifies_once(alerting: tuple[Agent, Path]) -> None:
    agent, out = alerting
    agent.hook(payload("001-SessionStart.json"))
    agent.hook(payload("012-Stop.json"))
    agent.wait_lane("idle")
    assert agent.app.request("POST", "/v1/builders/b1/messages", json={"text": "ping"}).status_code == 201
    agent.wait_lane("stalled")
    [alert] = wait_until(lambda: _notified(out), 60, what="the idle_with_messages notification")
    assert alert["rule"] == "idle_with_messages" and alert["step"] == 0
    # the agent takes its next turn: the lane moves on, the subject is cleared
    agent.hook(payload("002-UserPromptSubmit.json"))
    agent.wait_lane("working")
    sent = [e for e in agent.app.events() if e["kind"] == "notification_sent"]
    assert len(sent) == 1


def test_derive_claw_turn_ends_by_silence_after_a_tool() -> None:
    """claw has no Stop hook: QUIET_IDLE_S after a tool's Post hook with nothing further, the
    lane is idle (and queued messages then stall it); a Claude Code lane is not inferred."""
    claw = _inputs(queued=1, oldest_queued_at=105.0)
    claw["session"]["harness"] = "claw"
    lane = derive(claw, now=120.0, alive=lambda p, a: None, quiet_idle_s=30)
    assert (lane.state, lane.due) == ("working", 140.0)
    lane = derive(claw, now=141.0, alive=lambda p, a: None, quiet_idle_s=30, idle_inbox_after_s=120)
    assert (lane.state, lane.since, lane.due) == ("idle", 140.0, 260.0)
    assert "claw has no end-of-turn hook" in lane.detail
    assert derive(claw, now=261.0, alive=lambda p, a: None, quiet_idle_s=30, idle_inbox_after_s=120).state == "stalled"
    claw["last_hook"] = {"hook_event_name": "PreToolUse", "kind": "tool_before", "at": 110.0}  # a tool still running
    assert derive(claw, now=500.0, alive=lambda p, a: None, quiet_idle_s=30).state == "working"
    cc_lane = _inputs()
    assert derive(cc_lane, now=500.0, alive=lambda p, a: None, quiet_idle_s=30).state == "working"


def test_derive_transcript_only_turns() -> None:
    """No hook from the session: the transcript's prompt and end_turn rows move the lane."""
    d = _inputs(last_hook=None)
    d["session"].update(turn_started_at=150.0, turn_ended_at=None)
    lane = derive(d, now=200.0, alive=lambda p, a: None)
    assert (lane.state, lane.since) == ("working", 150.0)
    d["session"]["turn_ended_at"] = 160.0
    lane = derive(d, now=200.0, alive=lambda p, a: None)
    assert (lane.state, lane.since) == ("idle", 160.0) and "transcript" in lane.detail
    d["session"]["turn_started_at"] = 170.0  # the next prompt
    assert derive(d, now=200.0, alive=lambda p, a: None).state == "working"
    hooked = _inputs(last_hook={"hook_event_name": "UserPromptSubmit", "kind": "prompt", "at": 180.0})
    hooked["session"].update(turn_started_at=150.0, turn_ended_at=190.0)
    assert derive(hooked, now=200.0, alive=lambda p, a: None).state == "working"  # hooks decide when they come


def test_transcript_only_session_goes_idle_when_its_turn_ends(agent: Agent, tmp_path: Path) -> None:
    """The recorded TUI transcript replayed with no hook: prompt -> question -> answer -> the
    final end_turn row: the lane ends idle, as the transcript shows."""
    folder = tmp_path / "projects"
    folder.mkdir()
    # written before the folder is followed (see test_a_new_state_never_begins_before_the_one_it_replaced)
    (folder / f"{SID}.jsonl").write_bytes((TUI.parent / "transcript.jsonl").read_bytes())
    b3 = other(agent, "b3", tmp_path / "unused.json", folder)
    # idle with the session (a builder with no session yet is idle too)
    lane = wait_until(lambda: (x := b3.lane())["state"] == "idle" and x["session_id"] == SID and x, 60,
                      what=lambda: f"lane idle for {SID}: {b3.lane()}")
    assert lane["session_id"] == SID and "transcript" in lane["detail"], lane


def test_lanes_waiting_on_a_human_answer_come_first() -> None:
    """``hookd lanes``' order (two fresh users' trials found a failed and a dead lane above one
    waiting on a permission): what waits on a human's answer, then what else needs a human
    (stalled on messages or an error, failed, dead), then idle, working, ended; oldest first."""
    from hookd.watchers.lane_state import Lane
    from hookd.watchers.lane_view import _lane_order

    def lane(b: str, state: str, since: float, pending: tuple[str, ...] = ()) -> Lane:
        return Lane(builder=b, state=state, since=since, session_id=None, detail="", pending=pending, queued=0,
                    agent_pid=None)

    lanes = [lane("work", "working", 1.0), lane("dead", "dead", 1.0, ("q-9",)), lane("fail", "failed", 1.0),
             lane("perm", "waiting_permission", 5.0, ("p-1",)), lane("inbox", "stalled", 1.0),
             lane("ask", "waiting_question", 3.0, ("q-1",)), lane("long", "stalled", 4.0, ("q-2",)),
             lane("idle", "idle", 1.0), lane("end", "ended", 1.0)]
    assert [x.builder for x in sorted(lanes, key=_lane_order)] == [
        "ask", "long", "perm", "inbox", "fail", "dead", "idle", "work", "end"]
