"""Lanes at fleet size (issue 18, item 9): computing every lane never holds the hook path, and
an agent's process is not examined once per lane per request. Real store and core on a real
SQLite file; the figures at 1,000 and 10,000 builders are bench/lanes.py's, not a test's."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import psutil
import pytest

from hookd.config import Home
from hookd.watchers.lanes import LaneWatch
from hookd.core import Hookd
from hookd.store import Store

from .conftest import TUI

pytestmark = pytest.mark.inproc

START = json.loads((TUI / "001-SessionStart.json").read_bytes())
BASH = json.loads((TUI / "004-PreToolUse.json").read_bytes())


async def _fleet(tmp_path: Path, n: int) -> tuple[Store, Hookd]:
    """``n`` builders, each with a session whose agent is this process (alive)."""
    home = Home.resolve(tmp_path / "home")
    home.ensure()
    st = await Store(home.db).open()
    core = Hookd(home, st)
    for i in range(n):
        await core.ingest_hook("claude-code", f"b{i}", json.dumps(dict(START, session_id=f"s{i}")).encode(),
                               agent_pid=os.getpid())
    return st, core


def test_a_hook_arriving_while_lanes_are_computed_is_answered_before_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hook submitted at a deterministic point inside the computation of 600 lanes (the
    first check of an agent's process, as a /v1/lanes request makes it) is committed and
    answered before the computation ends: the lanes are derived a bounded slice per turn of
    the event loop, never the whole fleet in one."""
    async def run() -> None:
        st, core = await _fleet(tmp_path, 600)
        order: list[str] = []
        late: list[asyncio.Future[Any]] = []
        real = psutil.Process

        def process(pid: int) -> Any:
            if not late:  # inside the lanes' computation: the hook arrives now
                hook = dict(BASH, session_id="s-late", tool_use_id="toolu_late")
                late.append(asyncio.ensure_future(core.ingest_hook("claude-code", "late", json.dumps(hook).encode())))
                late[0].add_done_callback(lambda _: order.append("hook answered"))
            return real(pid)

        monkeypatch.setattr(psutil, "Process", process)
        try:
            lanes = await LaneWatch(core).compute([f"b{i}" for i in range(600)])
            order.append("lanes computed")
            assert late and (await late[0]).hook_event_id is not None
            assert len(lanes) == 600 and {lane.state for lane in lanes} == {"idle"}
            assert order == ["hook answered", "lanes computed"]
        finally:
            await core.close()
            await st.close()

    asyncio.run(run())


def test_an_agents_process_is_checked_once_per_request_not_once_per_lane(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """300 lanes whose sessions share one agent process: computing them examines it once
    (psutil); a second computation right after reuses that check."""
    async def run() -> None:
        st, core = await _fleet(tmp_path, 300)
        calls: list[int] = []
        real = psutil.Process

        def process(pid: int) -> Any:
            calls.append(pid)
            return real(pid)

        monkeypatch.setattr(psutil, "Process", process)
        try:
            watch = LaneWatch(core)
            assert len(await watch.compute()) == 300
            assert len(await watch.compute()) == 300
            assert calls == [os.getpid()]
        finally:
            await core.close()
            await st.close()

    asyncio.run(run())
