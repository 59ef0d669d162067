"""An idle daemon is not woken by its own loops: each waits for what it acts on (a commit, a
signal, a due time), not for a clock. Counted in rounds over 200 turns of the event loop with
nothing happening, never timed (docs/decisions.md "A second's sync, and the copy when the
store goes quiet")."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import pytest


async def _turns(n: int = 200) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def _until(cond, what: str, timeout: float = 10.0) -> None:  # noqa: ANN001
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        assert loop.time() < deadline, what
        await asyncio.sleep(0.005)


async def _ended(task: asyncio.Task, store, stop: asyncio.Event | None = None) -> None:  # noqa: ANN001
    """A test's follower ended (``stop`` set, its task cancelled and awaited), then its store closed."""
    if stop is not None:
        stop.set()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await store.close()


async def _opened(tmp_path: Path, settings=None):  # noqa: ANN001, ANN202
    """A store in a fresh home under ``tmp_path`` and the core over it (``settings``: the
    daemon's tunables; None: the defaults)."""
    from hookd.config import Home
    from hookd.core import Hookd
    from hookd.settings import Settings
    from hookd.store import Store

    settings = settings or Settings()
    home = Home.resolve(tmp_path / "h")
    home.ensure()
    store = await Store(home.db, settings=settings).open()
    return store, Hookd(home, store, settings)


def _sweeps(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The lanes watch's liveness sweeps, counted (the builders of each)."""
    from hookd.watchers import lanes as lanes_mod

    sweeps: list[list[str]] = []
    real = lanes_mod.LaneWatch.sweep

    async def counted(self: lanes_mod.LaneWatch, builders: list[str]) -> list[str]:
        sweeps.append(builders)
        return await real(self, builders)

    monkeypatch.setattr(lanes_mod.LaneWatch, "sweep", counted)
    return sweeps


def _passes(monkeypatch: pytest.MonkeyPatch, poll_s: float) -> list[float]:
    """The default answers' passes, counted (the ``now`` of each), with POLL_S made ``poll_s``."""
    from hookd.core import policy

    monkeypatch.setattr(policy, "POLL_S", poll_s)
    passes: list[float] = []
    real = policy.Policy._pass  # noqa: SLF001

    async def counted(self: policy.Policy, now: float) -> tuple[float | None, bool]:
        passes.append(now)
        return await real(self, now)

    monkeypatch.setattr(policy.Policy, "_pass", counted)
    return passes


def test_the_default_answers_pass_waits_for_a_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing pending, the default answers' loop makes no pass until something is
    committed (it used to look every second); a commit brings the next pass. Its least gap
    (POLL_S) is made 0 here, so a loop that kept looking would pass at every turn."""

    passes = _passes(monkeypatch, 0.0)

    async def run() -> tuple[int, int, int]:
        store, core = await _opened(tmp_path)
        task = asyncio.create_task(core.policy.run_defaults())
        try:
            await _until(lambda: passes, "no first pass")
            first = len(passes)
            await _turns()
            idle = len(passes) - first
            await core.bus.publish()  # a commit's publish
            await _until(lambda: len(passes) > first + idle, "no pass after a commit")
            return first, idle, len(passes)
        finally:
            await _ended(task, store)

    first, idle, total = asyncio.run(run())
    assert first == 1 and idle == 0 and total >= 2


def test_the_default_answers_pass_looks_again_while_something_is_pending(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a question is pending, the loop looks again without a commit: a builder's default
    answer can be set by a spawn that commits nothing (its manifest), and must still reach
    the question (found by a reviewer: with the loop asleep until a commit it never did)."""

    from .conftest import TUI

    passes = _passes(monkeypatch, 0.01)

    async def run() -> tuple[int, int]:
        store, core = await _opened(tmp_path)
        task: asyncio.Task[None] | None = None
        try:
            for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "007-PreToolUse.json"):
                await core.ingest_hook("claude-code", "b1", (TUI / name).read_bytes(), delivery_id=name)
            assert await store.any_pending()  # the AskUserQuestion
            task = asyncio.create_task(core.policy.run_defaults())
            await _until(lambda: passes, "no first pass")
            first, version = len(passes), core.bus.version
            await _until(lambda: len(passes) >= first + 3, "no pass again while a question is pending")
            return first, core.bus.version - version
        finally:
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            await store.close()

    first, commits = asyncio.run(run())
    assert first == 1 and commits == 0  # three more passes, and no commit to wake them


def test_the_default_answers_loop_outlives_a_store_that_refuses_a_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store refusing the loop's look (StorageUnavailable: disk full, say) is logged and
    looked at again POLL_S later; the loop does not end."""
    from hookd.models import StorageUnavailable

    passes = _passes(monkeypatch, 0.01)

    async def run() -> bool:
        store, core = await _opened(tmp_path)
        refused: list[int] = []
        real = store.any_pending

        async def any_pending() -> bool:
            if len(refused) < 2:
                refused.append(1)
                raise StorageUnavailable("storage unavailable: disk full")
            return await real()

        store.any_pending = any_pending  # type: ignore[method-assign]
        task = asyncio.create_task(core.policy.run_defaults())
        try:
            await _until(lambda: len(passes) >= 3, "the loop ended after a refused read")
            return task.done()
        finally:
            await _ended(task, store)

    assert asyncio.run(run()) is False


def test_the_server_loop_ticks_only_to_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """hookd's uvicorn server loop looks at ``should_exit`` once, then sleeps, with no timer
    set, until a signal's handler wakes it (uvicorn's own loop ticks every 0.1 s; hookd's used
    to every second: a timer of the event loop's, counted here)."""
    import uvicorn

    from hookd.http.fastpath import Server

    async def app(scope, receive, send) -> None:  # noqa: ANN001
        raise AssertionError("no request here")

    server = Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    ticks: list[int] = []
    real = server.on_tick

    async def counted(counter: int) -> bool:
        ticks.append(counter)
        return await real(counter)

    monkeypatch.setattr(server, "on_tick", counted)

    async def run() -> tuple[int, int, list[float]]:
        loop = asyncio.get_running_loop()
        timers: list[float] = []
        real_at = loop.call_at

        def call_at(when: float, *args: object, **kw: object) -> asyncio.TimerHandle:
            timers.append(when - loop.time())
            return real_at(when, *args, **kw)  # type: ignore[arg-type]

        loop.call_at = call_at  # type: ignore[method-assign]  # (call_later goes through it)
        loop_task = asyncio.create_task(server.main_loop())
        await _until(lambda: ticks, "no first tick")
        await _turns()
        loop.call_at = real_at  # type: ignore[method-assign]
        idle = len(ticks)
        server.handle_exit(signal.SIGTERM, None)
        await asyncio.wait_for(loop_task, 10)
        return idle, len(ticks), timers

    idle, total, timers = asyncio.run(run())
    assert idle == 1 and total == 2
    assert [t for t in timers if t > 0.1] == []  # (_until's own 5 ms pauses aside)


PRINT = Path(__file__).resolve().parent.parent / "fixtures" / "claude-code" / "2.1.332" / "print-bash-then-ask" / "hooks"


async def _session_starts(core, agent_pid: int | None = None) -> None:  # noqa: ANN001
    """The recorded session's SessionStart and UserPromptSubmit, as builder b1's."""
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json"):
        await core.ingest_hook("claude-code", "b1", (PRINT / name).read_bytes(), delivery_id=name, agent_pid=agent_pid)


async def _tool_calls(core, calls: int = 5) -> None:  # noqa: ANN001
    """``calls`` tool calls of b1 (two hooks each), with the loop's turns after each hook."""
    for n in range(calls):
        for raw in _tool_call(n):
            await core.ingest_hook("claude-code", "b1", raw)
            await _turns()


async def _counted_through_tool_calls(core, counted: list, then=None) -> tuple[int, int]:  # noqa: ANN001
    """b1's session starts; once ``counted`` (a follower's passes) has one, five tool calls;
    then ``then()`` (default: an AskUserQuestion is asked) and a pass after it. Returns the
    passes before the tool calls and during them."""
    from .conftest import TUI

    await _session_starts(core)
    await _until(lambda: counted, "no first pass")
    await _turns()
    before = len(counted)
    await _tool_calls(core)
    during = len(counted) - before
    if then is None:
        await core.ingest_hook("claude-code", "b1", (TUI / "007-PreToolUse.json").read_bytes(), delivery_id="ask")
    else:
        await then()
    await _until(lambda: len(counted) > before + during, "no pass after a commit it acts on")
    return before, during


def _tool_call(n: int) -> list[bytes]:
    """The recorded Bash call's PreToolUse and PostToolUse, as the ``n``-th tool call."""
    import json

    out = []
    for name in ("004-PreToolUse.json", "005-PostToolUse.json"):
        hook = json.loads((PRINT / name).read_bytes())
        hook["tool_use_id"] = f"toolu_01BASH{n:018d}"
        out.append(json.dumps(hook).encode())
    return out


def test_an_agents_tool_calls_wake_no_default_answers_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit of an agent's tool call opens no interaction: the default answers' loop is not
    woken for it (it was, at most once a second: at a model's pace, once per tool call). A
    commit that asks something (the AskUserQuestion) still brings a pass. POLL_S is made 0:
    a loop woken by the tool calls would pass within the turns counted."""

    passes = _passes(monkeypatch, 0.0)

    async def run() -> tuple[int, int, bool]:
        store, core = await _opened(tmp_path)
        task = asyncio.create_task(core.policy.run_defaults())
        try:
            before, during = await _counted_through_tool_calls(core, passes)
            return before, during, await store.any_pending()
        finally:
            await _ended(task, store)

    before, during, pending = asyncio.run(run())
    assert before >= 1 and during == 0 and pending


def test_a_working_lanes_tool_calls_wake_no_refresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lanes watch is not woken by the tool calls of a lane it recorded ``working`` (its
    agent's process known: the hooks carry its pid): they leave it working (it refreshed after
    each burst of them, at a model's pace once per tool call). What may change a lane still
    does, in order: the turn's end (``idle``), a tool call after it (``working`` again), a
    question (``waiting_question``). The watch's debounce and gap are made 0: woken, it would
    refresh within the turns counted."""
    import os

    from hookd.watchers import lanes as lanes_mod

    from .conftest import TUI

    monkeypatch.setattr(lanes_mod, "DEBOUNCE_S", 0.0)
    monkeypatch.setattr(lanes_mod, "REFRESH_GAP_S", 0.0)
    refreshed: list[list[str] | None] = []
    real = lanes_mod.LaneWatch.refresh

    async def counted(self: lanes_mod.LaneWatch, builders: list[str] | None = None) -> list[lanes_mod.Lane]:
        refreshed.append(builders)
        return await real(self, builders)

    monkeypatch.setattr(lanes_mod.LaneWatch, "refresh", counted)

    async def run() -> tuple[int, list[str]]:
        store, core = await _opened(tmp_path)
        watch = lanes_mod.LaneWatch(core)
        stop = asyncio.Event()
        task = asyncio.create_task(watch.run(stop))
        states: list[str] = []

        async def recorded() -> str | None:
            row = (await store.lanes()).get("b1")
            return None if row is None else row[0]

        async def until_state(state: str) -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while await recorded() != state:
                assert loop.time() < deadline, f"the lane never became {state}"
                await asyncio.sleep(0.005)
            states.append(state)

        try:
            await _session_starts(core, os.getpid())
            await until_state("working")
            await _turns()
            before = len(refreshed)
            await _tool_calls(core)
            during = len(refreshed) - before
            await core.ingest_hook("claude-code", "b1", (PRINT / "009-Stop.json").read_bytes(), delivery_id="stop")
            await until_state("idle")
            await core.ingest_hook("claude-code", "b1", _tool_call(9)[0])
            await until_state("working")
            await core.ingest_hook("claude-code", "b1", (TUI / "007-PreToolUse.json").read_bytes(), delivery_id="ask")
            await until_state("waiting_question")
            return during, states
        finally:
            await _ended(task, store, stop)

    during, states = asyncio.run(run())
    assert during == 0
    assert states == ["working", "idle", "working", "waiting_question"]


def test_the_lanes_liveness_sweep_is_one_wake_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live agent whose exit the kernel does not tell (no pidfd: made so here) is checked
    every ``liveness_s`` when the watch's wait times out: the sweep runs then, not after a
    second timer (the debounce after a commit, which it used to wait out as well). The debounce
    is given a length of its own here, to be told apart among the timers set while three
    sweeps run."""
    import os

    from hookd.settings import Settings
    from hookd.watchers import exits
    from hookd.watchers import lanes as lanes_mod

    monkeypatch.setattr(exits, "MAX_WATCHES", 0)
    debounce = 0.0123
    monkeypatch.setattr(lanes_mod, "DEBOUNCE_S", debounce)
    monkeypatch.setattr(lanes_mod, "REFRESH_GAP_S", 0.0)
    sweeps = _sweeps(monkeypatch)

    async def run() -> list[float]:
        loop = asyncio.get_running_loop()
        settings = Settings(liveness_s=0.05)
        store, core = await _opened(tmp_path, settings)
        await _session_starts(core, os.getpid())
        watch = lanes_mod.LaneWatch(core, settings=settings)
        stop = asyncio.Event()
        task = asyncio.create_task(watch.run(stop))
        timers: list[float] = []
        real_at = loop.call_at

        def call_at(when: float, *args: object, **kw: object) -> asyncio.TimerHandle:
            timers.append(when - loop.time())
            return real_at(when, *args, **kw)  # type: ignore[arg-type]

        try:
            await _until(lambda: sweeps, "no first sweep")
            loop.call_at = call_at  # type: ignore[method-assign]  # (call_later goes through it)
            first = len(sweeps)
            await _until(lambda: len(sweeps) >= first + 3, "no more sweeps")
            return timers
        finally:
            loop.call_at = real_at  # type: ignore[method-assign]
            await _ended(task, store, stop)

    timers = asyncio.run(run())
    assert timers  # (the sweeps' own waits)
    assert [t for t in timers if abs(t - debounce) < 0.002] == []


def test_a_bus_filter_wakes_for_what_its_follower_wants() -> None:
    """A filtered view of the bus counts the publishes its ``wants`` accepts; a publish that
    does not say its events, one whose ``wants`` raises, and the bus's close wake it too."""
    from hookd.core.bus import EventBus
    from hookd.models import Event

    def ev(kind: str) -> Event:
        return Event(seq=1, kind=kind, builder="b1", session_id=None, at=0.0, data={})

    async def run() -> list[int]:
        bus = EventBus()
        seen: list[int] = []

        def wants(events: object) -> bool:
            kinds = [e.kind for e in events]  # type: ignore[attr-defined]
            if "boom" in kinds:
                raise ValueError("a broken filter")
            return "question_pending" in kinds

        view = bus.filtered(wants)
        for events in ([ev("hook_received")], [ev("question_pending")], None, [ev("boom")], []):
            await bus.publish(events)
            seen.append(view.version)
        version = view.version
        waiter = asyncio.create_task(view.wait(3600.0, since=version))
        await _turns(5)
        assert not waiter.done()
        await bus.close()
        await asyncio.wait_for(waiter, 10)
        seen.append(view.version)
        bus.unfilter(view)
        await bus.publish(None)
        seen.append(view.version)
        return seen

    assert asyncio.run(run()) == [0, 1, 2, 3, 3, 4, 4]


def test_an_agents_exit_is_seen_at_once_with_no_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live agent's exit is told by the kernel (a pidfd the event loop watches): its lane is
    recorded ``dead`` once the process is killed, with the liveness sweep an hour away and
    never run (it used to be the only way: a wake-up every ``liveness_s`` for as long as the
    agent lived)."""
    import subprocess
    import sys

    from hookd.settings import Settings
    from hookd.watchers import exits
    from hookd.watchers import lanes as lanes_mod

    if not hasattr(exits.os, "pidfd_open"):
        pytest.skip("no pidfd on this platform: the sweep is what sees an exit")
    sweeps = _sweeps(monkeypatch)
    agent = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])

    async def run() -> list[str]:
        settings = Settings(liveness_s=3600.0)
        store, core = await _opened(tmp_path, settings)
        await _session_starts(core, agent.pid)
        watch = lanes_mod.LaneWatch(core, settings=settings)
        stop = asyncio.Event()
        task = asyncio.create_task(watch.run(stop))
        states: list[str] = []

        async def until_state(state: str) -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while ((await store.lanes()).get("b1") or ("",))[0] != state:
                assert loop.time() < deadline, f"the lane never became {state}"
                await asyncio.sleep(0.005)
            states.append(state)

        try:
            await until_state("working")
            agent.kill()
            agent.wait()
            await until_state("dead")
            return states
        finally:
            await _ended(task, store, stop)

    try:
        assert asyncio.run(run()) == ["working", "dead"]
    finally:
        agent.kill()
        agent.wait()
    assert sweeps == []


async def _watched(tmp_path: Path, settings):  # noqa: ANN001, ANN202
    """A store, a core and a running lanes watch over them, after its first refresh; the
    watch's reads of the event log counted (one per refresh). The callers make the watch's
    debounce and gap 0: a refresh it is woken for runs within a few turns of the loop."""
    from hookd.watchers import lanes as lanes_mod

    store, core = await _opened(tmp_path, settings)
    watch = lanes_mod.LaneWatch(core, settings=settings)
    reads: list[int] = []
    real = store.changed_builders

    async def counted(after: int) -> tuple[int, set[str]]:
        reads.append(after)
        return await real(after)

    store.changed_builders = counted  # type: ignore[method-assign]
    task = asyncio.create_task(watch.run(asyncio.Event()))
    await _until(lambda: watch._recorded is not None and not watch._busy, "no first refresh")  # noqa: SLF001
    return core, store, watch, reads, task


async def _state_within(store, want: str, timeout: float) -> str | None:  # noqa: ANN001
    """The lane of b1 as recorded, once it is ``want`` or ``timeout`` seconds have passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        row = (await store.lanes()).get("b1")
        if (row and row[0]) == want or loop.time() >= deadline:
            return row and row[0]
        await asyncio.sleep(0.01)


def test_a_claw_lane_seen_working_mid_tool_goes_idle_by_silence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """claw has no end-of-turn hook: its lane goes idle a while after a tool's PostToolUse
    (``quiet_idle_s``). A lane recorded ``working`` while the tool ran (no time to go idle
    yet) is still woken by the PostToolUse, which sets that time (a reviewer found the first
    version skip it: the lane stayed ``working`` for good)."""
    import json

    from hookd.settings import Settings
    from hookd.watchers import lanes as lanes_mod

    monkeypatch.setattr(lanes_mod, "DEBOUNCE_S", 0.0)
    monkeypatch.setattr(lanes_mod, "REFRESH_GAP_S", 0.0)

    def claw(name: str) -> bytes:
        return json.dumps({"hook_event_name": name, "tool_name": "bash", "tool_input": {"command": "make"},
                           "tool_input_json": '{"command": "make"}', "tool_output": None if name == "PreToolUse"
                           else "ok", "tool_result_is_error": False}).encode()

    async def run() -> str | None:
        core, store, watch, reads, task = await _watched(tmp_path, Settings(quiet_idle_s=0.3))
        try:
            k = len(reads)
            await core.ingest_hook("claw", "b1", claw("PreToolUse"), cwd="/w/x")
            assert await _state_within(store, "working", 10) == "working"
            # the refresh that recorded it is over (and any its own commit woke): the tool runs on
            await _until(lambda: len(reads) >= k + 1 and not watch._busy, "no refresh")  # noqa: SLF001
            await _turns()  # (and any refresh that one's own commit woke)
            await core.ingest_hook("claw", "b1", claw("PostToolUse"), cwd="/w/x")
            return await _state_within(store, "idle", 10)
        finally:
            await _ended(task, store)

    assert asyncio.run(run()) == "idle"


def test_an_agent_pid_first_seen_at_a_tool_call_is_watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session whose first hooks carried no agent pid (spooled while the daemon was down: a
    spooled hook's pid is not taken) learns it at a tool call: that tool call wakes the lanes
    watch, which then sees the agent's exit (a reviewer found the first version skip it: the
    lane stayed ``working``, never ``dead``)."""
    import subprocess
    import sys

    from hookd.settings import Settings
    from hookd.watchers import lanes as lanes_mod

    monkeypatch.setattr(lanes_mod, "DEBOUNCE_S", 0.0)
    monkeypatch.setattr(lanes_mod, "REFRESH_GAP_S", 0.0)

    async def run() -> str | None:
        core, store, watch, reads, task = await _watched(tmp_path, Settings(liveness_s=0.05))
        agent = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
        try:
            k = len(reads)
            await _session_starts(core)  # (as if spooled: no pid)
            assert await _state_within(store, "working", 10) == "working"
            await _until(lambda: len(reads) >= k + 1 and not watch._busy, "no refresh")  # noqa: SLF001
            await _turns()  # (and any refresh that one's own commit woke)
            for raw in _tool_call(1):
                await core.ingest_hook("claude-code", "b1", raw, agent_pid=agent.pid)
            assert (await store.last_session("b1") or {}).get("agent_pid") == agent.pid
            agent.kill()
            agent.wait()
            return await _state_within(store, "dead", 10)
        finally:
            agent.kill()
            agent.wait()
            await _ended(task, store)

    assert asyncio.run(run()) == "dead"


def test_lanes_computed_outside_the_watch_leave_no_exit_watched(tmp_path: Path) -> None:
    """A LaneWatch that only computes lanes (no run: a test, a tool) checks a live agent's
    process but watches no exit: a pidfd opened then would stay open on whatever loop ran it
    (a reviewer found one left per computation)."""
    import os

    from hookd.watchers import lanes as lanes_mod

    async def run() -> tuple[str, bool]:
        store, core = await _opened(tmp_path)
        try:
            await core.ingest_hook("claude-code", "b1", (PRINT / "001-SessionStart.json").read_bytes(),
                                   agent_pid=os.getpid())
            watch = lanes_mod.LaneWatch(core)
            [lane] = await watch.compute(["b1"])
            return lane.state, any(watch._exits.watching(a) for a in watch._agents.values())  # noqa: SLF001
        finally:
            await store.close()

    assert asyncio.run(run()) == ("idle", False)


def test_an_agents_tool_calls_wake_no_notification_rules_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a channel configured, the notifier's rules look after commits; a commit of an
    agent's tool call opens, ends and tells nothing they act on, and wakes no pass (it did,
    at most every 50 ms: at a model's pace once per tool call). An AskUserQuestion still
    brings one. The rules' least gap is made 0: a loop woken by the tool calls would pass
    within the turns counted."""
    from hookd.watchers import notify
    from hookd.watchers.notify_config import Channel, NotifyConfig


    monkeypatch.setattr(notify, "MIN_PASS_GAP_S", 0.0)
    passes: list[float] = []
    real = notify.Notifier._pass  # noqa: SLF001

    async def counted(self: notify.Notifier, now: float) -> float | None:
        passes.append(now)
        return await real(self, now)

    monkeypatch.setattr(notify.Notifier, "_pass", counted)

    async def run() -> tuple[int, int]:
        store, core = await _opened(tmp_path)
        n = notify.Notifier(core, NotifyConfig(channels=(Channel(type="command", name="c", command=["true"]),)))
        task = asyncio.create_task(n.run())
        try:
            return await _counted_through_tool_calls(core, passes)
        finally:
            await n.close()
            await _ended(task, store)

    before, during = asyncio.run(run())
    assert before >= 1 and during == 0


def test_an_agents_tool_calls_wake_no_hooks_changed_alerts_read(tmp_path: Path) -> None:
    """With a channel configured, the ``hooks_changed`` alerts read the event log after the
    commits that appended a ``hooks_changed`` / ``hooks_restored`` event (or did not say what
    they appended), not after each of an agent's tool calls (it read the log's end after every
    commit). Counted: its reads of the log's end."""
    from types import SimpleNamespace

    from hookd.watchers.hookalerts import HookAlerts
    from hookd.watchers.notify_config import Channel, NotifyConfig

    async def run() -> tuple[int, int, int]:
        store, core = await _opened(tmp_path)
        reads: list[int] = []
        real = store.last_event_seq

        async def counted() -> int:
            reads.append(1)
            return await real()

        store.last_event_seq = counted  # type: ignore[method-assign]
        notifier = SimpleNamespace(config=NotifyConfig(channels=(Channel(type="command", name="c", command=["true"]),)))
        stop = asyncio.Event()
        task = asyncio.create_task(HookAlerts(core, notifier).run(stop))
        try:
            before, during = await _counted_through_tool_calls(core, reads, core.bus.publish)  # (not saying what it appended)
            return before, during, len(reads)
        finally:
            await _ended(task, store, stop)

    before, during, total = asyncio.run(run())
    assert before >= 1 and during == 0 and total > before


def _alerts(core, raise_alert):  # noqa: ANN001, ANN202
    """``HookAlerts(core, ...).run`` started (its task, its stop event) over a stand-in
    notifier with one channel configured: ``raise_alert`` as given, ``clear`` a no-op."""
    from types import SimpleNamespace

    from hookd.watchers.hookalerts import HookAlerts
    from hookd.watchers.notify_config import Channel, NotifyConfig

    async def clear(key):  # noqa: ANN001, ANN202
        pass

    notifier = SimpleNamespace(config=NotifyConfig(channels=(Channel(type="command", name="c", command=["true"]),)),
                               raise_alert=raise_alert, clear=clear)
    stop = asyncio.Event()
    return asyncio.create_task(HookAlerts(core, notifier).run(stop)), stop


@contextlib.asynccontextmanager
async def _first_alert_failed(tmp_path: Path, error: Exception):  # noqa: ANN202
    """A core whose ``HookAlerts`` follower runs over a notifier whose first ``raise_alert``
    raises ``error``, b1's session started and its hooks_changed recorded, that first alert
    tried: yields (the core, the keys given to ``raise_alert``, the keys it raised)."""
    tried: list[str] = []
    raised: list[str] = []

    async def raise_alert(alert, escalate=True):  # noqa: ANN001, ANN202
        tried.append(alert.key)
        if len(tried) == 1:
            raise error
        raised.append(alert.key)
        return True

    store, core = await _opened(tmp_path)
    task, stop = _alerts(core, raise_alert)
    try:
        await _session_starts(core)  # b1
        await _turns()
        await _hooks_changed(core)
        await _until(lambda: tried, "the alert was not tried")
        yield core, tried, raised
    finally:
        await _ended(task, store, stop)


async def _hooks_changed(core, missing: str = "Stop") -> None:  # noqa: ANN001
    """b1's settings file found without hookd's ``missing`` entry (a hooks_changed, via status)."""
    await core.health.record("b1", None, {"missing": [missing], "changed": [], "reason": "entries removed"},
                             via="status")


def test_a_hooks_changed_alert_whose_read_was_refused_is_read_again_at_the_next_commit(tmp_path: Path) -> None:
    """The store refusing the ``hooks_changed`` alerts' read of the log right after a
    ``hooks_changed`` commit: the next commit, whatever it appended (another builder's tool
    calls here), brings the read again and the alert (a reviewer found it left for the next
    ``hooks_changed`` or an hour)."""
    import json

    from hookd.models import StorageUnavailable

    def as_b2(name: str, n: int = 0) -> bytes:
        hook = json.loads((PRINT / name).read_bytes())
        hook["session_id"] = "00000000-0000-4000-8000-0000000000b2"
        if "tool_use_id" in hook:
            hook["tool_use_id"] = f"toolu_01B2{n:020d}"
        return json.dumps(hook).encode()

    async def run() -> list[str]:
        store, core = await _opened(tmp_path)
        raised: list[str] = []
        refuse = {"next": False, "refused": 0}
        real = store.last_event_seq

        async def flaky() -> int:
            if refuse["next"]:
                refuse["next"] = False
                refuse["refused"] += 1
                raise StorageUnavailable("storage unavailable: cannot read the database: disk I/O error")
            return await real()

        store.last_event_seq = flaky  # type: ignore[method-assign]

        async def raise_alert(alert, escalate=True):  # noqa: ANN001, ANN202
            raised.append(alert.key)
            return True

        task, stop = _alerts(core, raise_alert)
        try:
            await _session_starts(core)  # b1
            for name in ("001-SessionStart.json", "002-UserPromptSubmit.json"):
                await core.ingest_hook("claude-code", "b2", as_b2(name), delivery_id=f"b2-{name}")
            await _turns()
            refuse["next"] = True
            await _hooks_changed(core)
            await _until(lambda: refuse["refused"] == 1, "the read after hooks_changed was not tried")
            for n in range(3):  # b2's agent goes on working
                for name in ("004-PreToolUse.json", "005-PostToolUse.json"):
                    await core.ingest_hook("claude-code", "b2", as_b2(name, n))
            await _until(lambda: raised, "b1's hooks_changed alert never raised after the refused read")
            return raised
        finally:
            await _ended(task, store, stop)

    assert [k.split(":")[1] for k in asyncio.run(run())] == ["b1"]


def test_a_hooks_changed_alert_whose_claim_was_refused_is_raised_at_the_next_commit(tmp_path: Path) -> None:
    """The store refusing the alert's own write (the notifier's claim of its step, in
    ``raise_alert``) after the log was read: the log's cursor stays before that event, so the
    next commit brings it again and the alert is raised once (the cursor moved past it before
    the alert was raised, and it was lost)."""

    from hookd.models import StorageUnavailable

    async def run() -> tuple[list[str], list[str]]:
        refusal = StorageUnavailable("storage unavailable: cannot write the database: disk I/O error")
        async with _first_alert_failed(tmp_path, refusal) as (core, tried, raised):
            await _tool_calls(core, 1)  # the agent goes on working: a commit
            await _until(lambda: raised, "b1's hooks_changed alert never raised after its refused claim")
            await _tool_calls(core, 1)
            await _turns()
            return tried, raised

    tried, raised = asyncio.run(run())
    assert len(tried) == 2 and tried[0] == tried[1] and [k.split(":")[1] for k in raised] == ["b1"]


def test_a_hooks_changed_alert_that_fails_otherwise_is_logged_not_tried_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An alert failing with something other than a storage refusal (a channel's bug): logged,
    that event not tried again (a bug cannot loop on it), and the follower goes on: the
    builder's next ``hooks_changed`` is raised."""
    import logging

    async def run() -> tuple[list[str], list[str]]:
        async with _first_alert_failed(tmp_path, RuntimeError("a channel's bug")) as (core, tried, raised):
            await _tool_calls(core, 2)  # the agent goes on working: commits
            await core.health.record("b1", None, None, via="spawn")  # hooks_restored
            await _hooks_changed(core, "PreToolUse")
            await _until(lambda: raised, "the builder's next hooks_changed alert never raised")
            await _tool_calls(core, 1)
            await _turns()
            return tried, raised

    with caplog.at_level(logging.ERROR, logger="hookd"):
        tried, raised = asyncio.run(run())
    assert len(tried) == 2 and tried[0] != tried[1] and raised == tried[1:]
    assert "hooks_changed alert for b1 failed" in caplog.text
