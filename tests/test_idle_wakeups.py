"""An idle daemon is not woken by its own loops: each waits for what it acts on (a commit, a
signal, a due time), not for a clock. Counted in rounds over 200 turns of the event loop with
nothing happening, never timed (docs/decisions.md "A second's sync, and the copy when the
store goes quiet")."""

from __future__ import annotations

import asyncio
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
    from hookd.config import Home
    from hookd.core import Hookd
    from hookd.core import policy
    from hookd.settings import Settings
    from hookd.store import Store

    passes = _passes(monkeypatch, 0.0)

    async def run() -> tuple[int, int, int]:
        home = Home.resolve(tmp_path / "h")
        home.ensure()
        store = await Store(home.db, settings=Settings()).open()
        core = Hookd(home, store, Settings())
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
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await store.close()

    first, idle, total = asyncio.run(run())
    assert first == 1 and idle == 0 and total >= 2


def test_the_default_answers_pass_looks_again_while_something_is_pending(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a question is pending, the loop looks again without a commit: a builder's default
    answer can be set by a spawn that commits nothing (its manifest), and must still reach
    the question (found by a reviewer: with the loop asleep until a commit it never did)."""
    from hookd.config import Home
    from hookd.core import Hookd
    from hookd.core import policy
    from hookd.settings import Settings
    from hookd.store import Store

    from .conftest import TUI

    passes = _passes(monkeypatch, 0.01)

    async def run() -> tuple[int, int]:
        home = Home.resolve(tmp_path / "h")
        home.ensure()
        store = await Store(home.db, settings=Settings()).open()
        core = Hookd(home, store, Settings())
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
    from hookd.config import Home
    from hookd.core import Hookd
    from hookd.models import StorageUnavailable
    from hookd.settings import Settings
    from hookd.store import Store

    passes = _passes(monkeypatch, 0.01)

    async def run() -> bool:
        home = Home.resolve(tmp_path / "h")
        home.ensure()
        store = await Store(home.db, settings=Settings()).open()
        core = Hookd(home, store, Settings())
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
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await store.close()

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
