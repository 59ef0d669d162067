"""The inbox against the real Claude Code 2.1.332, offline: `hookd send` while an agent runs.

Every test spawns a builder with ``hookd spawn``, runs ``claude -p`` against the scripted
fake Messages API, sends messages with the ``hookd send`` CLI at a chosen moment of the run,
and asserts both on hookd's record (``hookd inbox --json``, ``hookd events --json``) and on
what reached the model (the fake API's request log).

Synchronisation is never a sleep. A moment inside a run is pinned either by a Bash command
that waits (bounded) for a file the test creates, or by :class:`GatedAPI`, which holds the
response to one scripted model turn until the test releases it: the request has arrived
(so every hook before it has run), the next boundary has not happened yet.

Facts of 2.1.332 these tests pin:

* PostToolUse ``additionalContext`` reaches the next model request, after the tool result,
  as ``PostToolUse:<Tool> hook additional context: X``; it is not repeated in later requests
  (they carry it once, as history).
* Stop ``additionalContext`` continues the turn: one more model request with
  ``Stop hook additional context: X``.
* A message queued before ``claude -p`` starts is carried by SessionStart and reaches the
  very first model request.
* SessionStart ``additionalContext`` (in ``-p``) is a ``role: "system"`` message of the
  first request: ``SessionStart hook additional context: X``.
* A subagent's PostToolUse does not carry a message for the main agent; the main agent's
  PostToolUse of its ``Agent`` call does (``PostToolUse:Agent hook additional context: X``).
* Plain ``-p`` waits for a pending ``async`` Stop hook before it exits, up to about 30 s
  (hookd's idle-wake hook): the boundary tests spawn with ``--wake-wait 0``. An
  ``asyncRewake`` exit 2 while the ``-p`` turn still runs starts a new turn (with a
  UserPromptSubmit hook) whose input is framed "[SYSTEM NOTIFICATION - NOT USER INPUT] ...
  Stop hook blocking error from command ...: X"; after the last turn it is dropped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .drivers import PrintResult, hermetic_env, parse_stream_json, wait_until
from .fake_api import FakeAnthropicAPI, LoggedRequest
from .test_claude_code_hookd import _Hookd
from .test_claude_code_scenarios import (
    BYPASS,
    Rig,
    bash_turn,
    find_hook,
    hooks_of,
    of_kind,
    text_turn,
    tool_turn,
)

pytestmark = pytest.mark.e2e

FRAME = "[human msg {id} from "  # hookd.harness.base.frame_message: "[human msg m-1 from alice at <time>] text"
HEADER = "Message(s) from the human operator, relayed by hookd"
AUTHOR = "e2e-operator"
#: How hookd proves adoption when the Stop's transcript is readable (always here): the
#: transcript shows a request that Claude Code sent with the message's marker in it.
ADOPTED_VIA = "transcript"


# ---------------------------------------------------------------------- the fake API
class Gate:
    """Holds the response to one scripted main turn: ``arrived`` is set when its request
    comes in, the response is sent once ``release()`` is called."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self._open = threading.Event()

    def wait_arrived(self, timeout: float = 30) -> None:
        if not self.arrived.wait(timeout):
            raise TimeoutError(f"the gated model request did not arrive within {timeout}s")

    def release(self) -> None:
        self._open.set()

    def hold(self) -> None:
        self.arrived.set()
        self._open.wait(60)  # released by the test (or at teardown)


class GatedAPI(FakeAnthropicAPI):
    """The scripted fake API, able to hold the response to chosen main turns (by index)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.gates: dict[int, Gate] = {}

    def gate(self, turn: int) -> Gate:
        return self.gates.setdefault(turn, Gate())

    def _answer_for(self, kind: str, agent_id: str | None, side_kind: str | None = None):
        idx, content = super()._answer_for(kind, agent_id, side_kind)
        gate = self.gates.get(idx) if kind == "main" and idx is not None else None
        if gate is not None:
            gate.hold()  # outside the fake's lock: other requests are still served
        return idx, content

    def stop(self) -> None:
        for g in self.gates.values():
            g.release()
        super().stop()


# --------------------------------------------------------------------------- the rig
class PrintRun:
    """``claude -p PROMPT`` (as ``drivers.run_print`` runs it) in the background, so the test
    can act while Claude Code works; ``join`` waits for it, teardown kills it if needed."""

    def __init__(self, r: InboxRig, prompt: str):
        argv = [str(r.claude_bin), "-p", prompt, "--output-format", "stream-json", "--verbose", *BYPASS]
        n = len(r.runs)
        self.out, self.err = r.tmp / f"claude-{n}.out", r.tmp / f"claude-{n}.err"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(argv, cwd=r.project, env=r.env, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err, start_new_session=True)
        self.t0 = time.monotonic()
        r.runs.append(self)

    def join(self, timeout: float = 45) -> PrintResult:
        """Wait for the exit (``subprocess.TimeoutExpired`` after ``timeout`` s); the run must
        have succeeded with a result."""
        rc = self.proc.wait(timeout)
        stdout, stderr = self.out.read_text(), self.err.read_text()
        res = PrintResult(rc, parse_stream_json(stdout), stdout, stderr, time.monotonic() - self.t0)
        assert rc == 0, f"claude -p exited {rc}: {stderr[-2000:]}"
        assert res.result is not None, stdout[-2000:]
        return res

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)


class InboxRig(Rig):
    """A scenario Rig (daemon, fake API, hermetic env, builder) plus the inbox CLI."""

    api: GatedAPI
    runs: list[PrintRun]

    def start(self, prompt: str) -> PrintRun:
        return PrintRun(self, prompt)

    def send(self, text: str) -> dict[str, Any]:
        out = json.loads(self.hookd.cli("send", self.builder, text, "--author", AUTHOR, "--json"))
        assert out["created"] is True, out
        return out["message"]

    def inbox(self) -> dict[str, dict[str, Any]]:
        return {m["id"]: m for m in json.loads(self.hookd.cli("inbox", self.builder, "--json"))}


@pytest.fixture
def inbox_rig(claude_bin: Path, e2e_home: Path, e2e_project: Path, tmp_path: Path):
    """Factory ``inbox_rig(script, builder=, subagent_script=, wake_wait=0)`` -> an InboxRig
    with the builder spawned (``--worktree``) and the daemon running; all stopped after the
    test. ``wake_wait``: ``hookd spawn --wake-wait`` (None: spawn's default idle wake). The
    boundary tests spawn without the idle-wake hook: with it, every plain ``claude -p`` run
    lingers up to 30 s after its last Stop waiting for that async hook."""
    pytest.importorskip("hookd.cli")
    made: list[InboxRig] = []

    def make(script: Any, *, builder: str, subagent_script: Any = None,
             wake_wait: int | None = 0) -> InboxRig:
        api = GatedAPI(script, default_subagent_script=subagent_script).start()
        r = InboxRig(hookd=_Hookd(tmp_path / "hookd"), api=api, env=hermetic_env(e2e_home, api.url),
                     project=e2e_project, claude_bin=claude_bin, tmp=tmp_path)
        r.runs = []
        made.append(r)
        r.spawn(builder, "worktree")
        if wake_wait is not None:  # spawn is idempotent: the same hooks, another wake wait
            m = json.loads(r.hookd.cli("spawn", builder, "--worktree", os.fspath(r.project),
                                       "--wake-wait", str(wake_wait), "--json"))
            assert m["wake_wait_s"] == wake_wait
        r.hookd.start()
        return r

    yield make
    for r in made:
        for run in r.runs:
            run.kill()
        r.close()


def wait_file_cmd(flag: Path, label: str) -> str:
    """A Bash command that waits (at most ~20 s) for ``flag`` to exist, then prints label."""
    return f"for i in $(seq 400); do [ -f '{flag}' ] && break; sleep 0.05; done; echo {label}"


# ----------------------------------------------------------------------- assertions
def injections(requests: list[LoggedRequest], needle: str) -> list[int]:
    """Indices of the requests whose NEW input (everything after the last assistant
    message: tool results, hook context) contains ``needle``."""
    return [i for i, q in enumerate(requests) if needle in q.tail_text()]


def hook_context(request: LoggedRequest, needle: str) -> str:
    """The text block of ``request``'s new input that contains ``needle``."""
    msgs = request.body.get("messages") or []
    last_asst = max((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=-1)
    for m in msgs[last_asst + 1:]:
        content = m.get("content")
        blocks = [content] if isinstance(content, str) else content or []
        for b in blocks:
            t = b if isinstance(b, str) else b.get("text") if isinstance(b, dict) else None
            if isinstance(t, str) and needle in t:
                return t
    raise AssertionError(f"{needle!r} is not in the request's new input: {request.tail_text()[-2000:]}")


def index_with_result(requests: list[LoggedRequest], tool_use_id: str) -> int:
    """Index of the first request carrying the tool_result of ``tool_use_id``."""
    for i, q in enumerate(requests):
        if tool_use_id in q.tool_results():
            return i
    raise AssertionError(f"no request carries the result of {tool_use_id}")


def delivered(ev: list[dict], mid: str) -> list[dict]:
    return [e for e in of_kind(ev, "inbox_delivered") if mid in e["data"]["ids"]]


def adopted(ev: list[dict], mid: str) -> list[dict]:
    return [e for e in of_kind(ev, "inbox_adopted") if mid in e["data"]["ids"]]


def wait_adopted(r: InboxRig, *ids: str) -> list[dict]:
    """Wait until every message of ``ids`` has an ``inbox_adopted`` event (adoption is proven
    from the transcript after the Stop, off the hook path); returns all events."""
    return r.wait_events(lambda ev: all(adopted(ev, i) for i in ids), f"{ids} adopted")


# ======================================== 1. sent while the agent runs a tool: PostToolUse
WAIT_BASH = "toolu_01INBWAITBASH0000000001"
NEXT_BASH = "toolu_01INBNEXTBASH0000000001"
MSG_TOOL = "MSG-TOOL-123"


def test_message_sent_during_a_tool_call_arrives_after_its_result(inbox_rig, tmp_path):
    flag = tmp_path / "GO-1"
    r = inbox_rig({"turns": [bash_turn(WAIT_BASH, wait_file_cmd(flag, "waited-1")),
                             bash_turn(NEXT_BASH, "echo next-1"),
                             text_turn("FINAL-TOOL-1")]}, builder="b-tool")
    run = r.start("Run the waiting command")
    r.wait_hook("PreToolUse", tool_use_id=WAIT_BASH, timeout=30)
    m = r.send(MSG_TOOL)
    assert m["id"] == "m-1" and r.inbox()["m-1"]["state"] == "queued"  # the tool still runs
    flag.touch()
    res = run.join()
    assert res.result["result"] == "FINAL-TOOL-1"

    # The model: the request right after the tool result carries the message, framed, as
    # PostToolUse context; no later request carries it as new input (the next tool's
    # PostToolUse adds nothing); later requests hold it once, as history.
    main = r.api.main_requests()
    assert len(main) == 3, [q.tail_text()[-300:] for q in main]
    after = index_with_result(main, WAIT_BASH)
    assert after == 1 and main[1].tool_results()[WAIT_BASH] == "waited-1"
    assert MSG_TOOL not in main[0].text
    frame = FRAME.format(id="m-1") + AUTHOR
    assert injections(main, frame) == [after]
    ctx = hook_context(main[after], frame)
    assert ctx.index("PostToolUse:Bash hook additional context:") < ctx.index(HEADER) < ctx.index(frame)
    assert ctx.index(frame) < ctx.index(MSG_TOOL)
    assert [q.text.count("[human msg m-1 ") for q in main] == [0, 1, 1]
    assert r.api.messages_requests("subagent") == []

    # hookd: delivered once, by the waiting Bash call's PostToolUse; adopted from the transcript.
    ev = wait_adopted(r, "m-1")
    post = find_hook(ev, "PostToolUse", tool_use_id=WAIT_BASH)
    [d] = of_kind(ev, "inbox_delivered")
    assert d["data"]["ids"] == ["m-1"] and d["data"]["via"] == "PostToolUse"
    assert d["data"]["redelivered"] == [] and d["data"]["waiting"] == 0
    assert d["session_id"] == res.result["session_id"]
    assert post["seq"] < d["seq"] < find_hook(ev, "PreToolUse", tool_use_id=NEXT_BASH)["seq"]
    [a] = of_kind(ev, "inbox_adopted")
    # proven by the transcript: read when the tailer sees the request logged, or at the Stop
    assert a["data"] == {"ids": ["m-1"], "via": ADOPTED_VIA} and a["seq"] > d["seq"]
    msg = r.inbox()["m-1"]
    assert (msg["state"], msg["delivered_via"], msg["deliveries"], msg["adopted_via"]) == (
        "adopted", "PostToolUse", 1, ADOPTED_VIA)
    assert msg["delivered_session_id"] == res.result["session_id"] and msg["author"] == AUTHOR


# ============================================ 2a. queued before the run: the first request
MSG_EARLY = "MSG-BEFORE-START-456"


def test_message_queued_before_the_run_reaches_the_first_request(inbox_rig):
    r = inbox_rig({"turns": [text_turn("FINAL-EARLY-2")]}, builder="b-early")
    r.send(MSG_EARLY)
    res = r.run_print("Say something")
    assert res.result["result"] == "FINAL-EARLY-2"

    ev = wait_adopted(r, "m-1")
    [d] = of_kind(ev, "inbox_delivered")
    # SessionStart is the run's first boundary with a session id: it carries the message.
    assert d["data"]["via"] == "SessionStart" and d["data"]["ids"] == ["m-1"]
    start = find_hook(ev, "SessionStart")
    assert start["seq"] < d["seq"] < find_hook(ev, "UserPromptSubmit")["seq"]
    msg = r.inbox()["m-1"]
    assert (msg["state"], msg["delivered_via"], msg["adopted_via"]) == ("adopted", "SessionStart", ADOPTED_VIA)

    main = r.api.main_requests()
    assert len(main) == 1  # no Stop continuation: nothing was left to deliver
    frame = FRAME.format(id="m-1") + AUTHOR
    assert main[0].text.count("[human msg m-1 ") == 1
    ctx = hook_context(main[0], frame)
    assert ctx.index("SessionStart hook additional context:") < ctx.index(HEADER) < ctx.index(frame)
    assert ctx.index(frame) < ctx.index(MSG_EARLY)


# ================================================= 2b. sent before the turn ends: Stop
STOP_BASH = "toolu_01INBSTOPBASH0000000001"
MSG_STOP = "MSG-AT-STOP-789"


def test_message_sent_after_the_last_tool_continues_the_turn_at_stop(inbox_rig):
    r = inbox_rig({"turns": [bash_turn(STOP_BASH, "echo tool-done"), text_turn("first answer"),
                             text_turn("AFTER-STOP-OK"), text_turn("NEVER-SERVED")]},
                  builder="b-stop")
    gate = r.api.gate(1)  # the "first answer" turn: after the tool, before the Stop
    run = r.start("Run a command, then answer")
    gate.wait_arrived()
    ev = r.wait_hook("PostToolUse", tool_use_id=STOP_BASH)  # ran before the request
    assert of_kind(ev, "inbox_delivered") == []
    r.send(MSG_STOP)
    gate.release()
    res = run.join()
    # Claude Code went on after the Stop that carried the message, then stopped.
    assert res.result["result"] == "AFTER-STOP-OK"

    main = r.api.main_requests()
    assert len(main) == 3 and r.api.turns_served == 3
    frame = FRAME.format(id="m-1") + AUTHOR
    assert injections(main, frame) == [2]
    assert not any(MSG_STOP in q.text for q in main[:2])
    ctx = hook_context(main[2], frame)
    assert ctx.index("Stop hook additional context:") < ctx.index(HEADER) < ctx.index(frame)
    assert ctx.index(frame) < ctx.index(MSG_STOP)
    assert main[2].text.count("[human msg m-1 ") == 1

    ev = wait_adopted(r, "m-1")
    stops = [e for e in hooks_of(ev) if e["data"]["hook_event_name"] == "Stop"]
    assert len(stops) == 2
    [d] = of_kind(ev, "inbox_delivered")
    assert d["data"]["via"] == "Stop" and d["data"]["ids"] == ["m-1"]
    assert stops[0]["seq"] < d["seq"] < stops[1]["seq"]
    [a] = of_kind(ev, "inbox_adopted")
    assert a["data"] == {"ids": ["m-1"], "via": ADOPTED_VIA} and a["seq"] > d["seq"]
    msg = r.inbox()["m-1"]
    assert (msg["state"], msg["delivered_via"], msg["deliveries"], msg["adopted_via"]) == (
        "adopted", "Stop", 1, ADOPTED_VIA)


# ============================================================ 3. while a subagent works
AGENT_CALL = "toolu_01INBAGENTCALL000000001"
SUB_WAIT = "toolu_01INBSUBWAIT0000000001"
MSG_SUB = "MSG-FOR-MAIN-DURING-SUBAGENT-321"


def test_message_sent_during_a_subagent_tool_goes_to_the_main_agent(inbox_rig, tmp_path):
    flag = tmp_path / "GO-3"
    r = inbox_rig({"turns": [
        tool_turn(AGENT_CALL, "Agent", {"description": "Wait for a file",
                                        "prompt": "Run the waiting command and report",
                                        "subagent_type": "general-purpose",
                                        "run_in_background": False}),
        text_turn("FINAL-MAIN-3"),
    ]}, subagent_script={"turns": [bash_turn(SUB_WAIT, wait_file_cmd(flag, "sub-waited")),
                                   text_turn("SUB-REPORT-3")]}, builder="b-sub")
    run = r.start("Delegate the wait")
    ev = r.wait_hook("PreToolUse", tool_use_id=SUB_WAIT, timeout=30)
    agent_id = find_hook(ev, "PreToolUse", tool_use_id=SUB_WAIT)["data"]["agent_id"]
    r.send(MSG_SUB)
    flag.touch()
    res = run.join()
    assert res.result["result"] == "FINAL-MAIN-3"

    frame = FRAME.format(id="m-1") + AUTHOR
    sub = r.api.messages_requests("subagent")
    assert len(sub) == 2 and {q.agent_id for q in sub} == {agent_id}
    s_after = index_with_result(sub, SUB_WAIT)
    assert s_after == 1 and sub[1].tool_results()[SUB_WAIT] == "sub-waited"
    assert not any(MSG_SUB in q.text or "[human msg" in q.text for q in sub)

    main = r.api.main_requests()
    assert len(main) == 2
    after = index_with_result(main, AGENT_CALL)
    assert after == 1 and "SUB-REPORT-3" in main[1].tool_results()[AGENT_CALL]
    assert injections(main, frame) == [after]
    ctx = hook_context(main[after], frame)
    assert ctx.index("PostToolUse:Agent hook additional context:") < ctx.index(frame) < ctx.index(MSG_SUB)
    assert main[after].text.count("[human msg m-1 ") == 1

    ev = wait_adopted(r, "m-1")
    [d] = of_kind(ev, "inbox_delivered")
    assert d["data"]["via"] == "PostToolUse" and d["data"]["ids"] == ["m-1"]
    sub_post = find_hook(ev, "PostToolUse", tool_use_id=SUB_WAIT)
    main_post = find_hook(ev, "PostToolUse", tool_use_id=AGENT_CALL)
    assert sub_post["data"]["agent_id"] == agent_id and "agent_id" not in main_post["data"]
    sub_stop = find_hook(ev, "SubagentStop", agent_id=agent_id)
    assert sub_post["seq"] < sub_stop["seq"] < main_post["seq"] < d["seq"]
    [a] = of_kind(ev, "inbox_adopted")
    # proven by the transcript: read when the tailer sees the request logged, or at the Stop
    assert a["data"] == {"ids": ["m-1"], "via": ADOPTED_VIA} and a["seq"] > d["seq"]
    msg = r.inbox()["m-1"]
    assert (msg["state"], msg["delivered_via"], msg["adopted_via"], msg["agent_id"]) == (
        "adopted", "PostToolUse", ADOPTED_VIA, None)


# ==================================================================== 4. the Stop cap
@pytest.mark.parametrize("wake_wait", [None, 5], ids=["default-spawn", "idle-wake-5s"])
def test_stop_deliveries_are_capped_at_three_then_the_agent_stops(inbox_rig, wake_wait):
    """While the model produces turn i (its response held), m-(i+1) is sent: the Stop after
    turn i is its first boundary. Stops 1-3 deliver and continue the turn; the 4th delivers
    nothing and Claude Code ends the run, m-4 still queued. ``default-spawn`` runs the same
    with spawn's idle-wake hook installed: it must not change any of this."""
    texts = [f"STOP-CAP-TURN-{i}" for i in range(5)]
    r = inbox_rig({"turns": [text_turn(t) for t in texts]}, builder="b-cap", wake_wait=wake_wait)
    gates = [r.api.gate(i) for i in range(5)]
    run = r.start("Answer in several turns")
    for i in range(4):
        gates[i].wait_arrived()
        m = r.send(f"CAP-MSG-{i + 1}")
        assert m["id"] == f"m-{i + 1}"
        gates[i].release()
        if i < 3:
            mid = m["id"]
            ev = r.wait_events(lambda ev, mid=mid: delivered(ev, mid), f"{mid} delivered")
            d = delivered(ev, mid)
            stops = [e for e in hooks_of(ev) if e["data"]["hook_event_name"] == "Stop"]
            assert [(x["data"]["ids"], x["data"]["via"]) for x in d] == [([m["id"]], "Stop")], (
                f"{m['id']} was sent while the agent was still working (the model's turn {i} was "
                f"being produced, after {i} Stop(s) that continued the turn); it must ride on the "
                f"next Stop's additionalContext; hookd delivered it as {d}")
            assert len(stops) == i + 1 and stops[-1]["seq"] < d[0]["seq"]
    # The 4th Stop delivers nothing: Claude Code ends the run instead of asking for turn 4.
    wait_until(lambda: run.proc.poll() is not None or gates[4].arrived.is_set(), 45, 0.02,
               "the run to end, or a 5th model request")
    assert not gates[4].arrived.is_set(), "the agent was sent on after a 4th consecutive Stop delivery"
    res = run.join(5)
    assert res.result["result"] == texts[3]

    main = r.api.main_requests()
    assert len(main) == 4 and r.api.turns_served == 4
    for i in (1, 2, 3):
        frame = FRAME.format(id=f"m-{i}") + AUTHOR
        assert injections(main, frame) == [i]
        ctx = hook_context(main[i], frame)
        assert ctx.index("Stop hook additional context:") < ctx.index(HEADER) < ctx.index(frame)
        assert f"CAP-MSG-{i}" in ctx and f"CAP-MSG-{i + 1}" not in ctx
    assert not any("CAP-MSG-4" in q.text for q in r.api.messages_requests())

    ev = wait_adopted(r, "m-1", "m-2", "m-3")
    stops = [e for e in hooks_of(ev) if e["data"]["hook_event_name"] == "Stop"]
    assert len(stops) == 4
    d = of_kind(ev, "inbox_delivered")
    assert [(e["data"]["ids"], e["data"]["via"]) for e in d] == [
        (["m-1"], "Stop"), (["m-2"], "Stop"), (["m-3"], "Stop")]
    assert [s["seq"] < e["seq"] for s, e in zip(stops, d)] == [True] * 3
    assert d[2]["seq"] < stops[3]["seq"]  # the 4th Stop delivered nothing
    assert find_hook(ev, "UserPromptSubmit")["seq"] < stops[0]["seq"]
    assert len([e for e in hooks_of(ev) if e["data"]["hook_event_name"] == "UserPromptSubmit"]) == 1
    a = of_kind(ev, "inbox_adopted")
    assert sorted(i for x in a for i in x["data"]["ids"]) == ["m-1", "m-2", "m-3"]
    assert {x["data"]["via"] for x in a} == {ADOPTED_VIA}
    box = r.inbox()
    assert [(k, m["state"], m["delivered_via"], m["deliveries"]) for k, m in box.items()] == [
        ("m-1", "adopted", "Stop", 1), ("m-2", "adopted", "Stop", 1), ("m-3", "adopted", "Stop", 1),
        ("m-4", "queued", None, 0)]


# ============================= 5. sent after a -p run's last Stop (default spawn, idle wake)
MSG_LATE = "MSG-AFTER-LAST-STOP-555"


def test_message_sent_after_a_print_runs_last_stop_is_not_lost(inbox_rig):
    """docs/usage.md: in plain ``claude -p`` the idle-wake hook is dropped at exit, "so a message
    sent after a -p run waits for the next run". Whatever hookd does with a message sent
    after the run's final Stop, it may not call it delivered unless the model got it; if
    it did not, the next run's first request carries it."""
    r = inbox_rig({"turns": [text_turn("FIRST-RUN-5"), text_turn("SECOND-RUN-5")]},
                  builder="b-late", wake_wait=None)
    run = r.start("First run")
    r.wait_hook("Stop")
    r.send(MSG_LATE)
    first = run.join()
    n_first = len(r.api.main_requests())
    msg = r.inbox()["m-1"]
    got_it = [q for q in r.api.main_requests() if MSG_LATE in q.text]
    assert msg["state"] == "queued" or got_it, (
        f"hookd says {msg['state']} via {msg['delivered_via']!r}, but no model request of the "
        f"run carried it (the run ended: {first.result['result']!r}, {n_first} request(s))")
    if got_it:  # the run went on with it: hookd must say so
        assert msg["state"] in ("delivered", "adopted"), msg
        return
    second = r.start("Second run").join()
    assert second.result["result"] == "SECOND-RUN-5"
    assert MSG_LATE in r.api.main_requests()[n_first].text
    assert r.inbox()["m-1"]["delivered_via"] == "SessionStart"
