"""Session lineage against the real Claude Code 2.1.332 (``claude -p``, offline).

``claude -p --resume ID --fork-session`` starts a new session whose transcript begins with a
copy of the parent's rows (same ``uuid`` values, its own ``sessionId``: verified by this run).
Its SessionStart hook names no parent, so hookd first guesses the builder's most recent other
session; the fork's transcript then names the true parent. An unrelated session run in between
makes the guess wrong, so the test can tell the two apart. A second daemon that received no
hook at all links the fork from the transcripts alone (``hookd tail`` on the projects folder).

The three sessions run once for the module (``runs``: Claude Code with hookd's hooks, the first
daemon up); each test asserts its own facts on them (docs/testing.md "Fewer Claude Code
sessions"). The module is one ``xdist_group`` so that one worker runs them once.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from .drivers import hermetic_env, run_print, wait_until
from .fake_api import FakeAnthropicAPI
from .test_claude_code_hookd import _Hookd
from .test_claude_code_scenarios import BYPASS

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("lineage_e2e")]


def projects_folder(home: Path, cwd: Path) -> Path:
    return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", os.path.realpath(cwd))


def three_runs(claude_bin: Path, home: Path, project: Path) -> tuple[str, str, str]:
    """Session A, an unrelated session U, then a fork of A; returns their session ids."""
    api = FakeAnthropicAPI()
    api.start()
    try:
        api.set_script(["first answer", "unrelated answer", "forked answer"])
        env = hermetic_env(home, api.url)
        ids = []
        for prompt, extra in (("hello A", ()), ("hello U", ()), ("hello fork", ("--resume", "A", "--fork-session"))):
            extra = tuple(ids[0] if x == "A" else x for x in extra)
            r = run_print(prompt, project, env, extra_args=(*BYPASS, *extra), claude_bin=claude_bin)
            assert r.returncode == 0 and r.result is not None, r.stderr[-2000:]
            ids.append(r.result["session_id"])
    finally:
        api.stop()
    a, u, fork = ids
    assert len({a, u, fork}) == 3
    return a, u, fork


def linked(h: _Hookd, sid: str) -> list[dict[str, Any]]:
    return [e for e in h.events() if e["kind"] == "session_linked" and e["session_id"] == sid]


@dataclass
class Runs:
    """The module's three sessions: ``h`` the daemon that got their hooks (builder b1 spawned
    into ``project``), ``home`` Claude Code's HOME, and the sessions' ids."""

    h: _Hookd
    home: Path
    project: Path
    a: str
    u: str
    fork: str


@pytest.fixture(scope="module")
def runs(claude_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    tmp = tmp_path_factory.mktemp("lineage")
    home, project = tmp / "home", tmp / "proj"
    home.mkdir()
    project.mkdir()
    h = _Hookd(tmp / "hookd")
    h.cli("spawn", "b1", "--worktree", os.fspath(project), "--no-mcp")
    h.start()
    try:
        yield Runs(h, home, project, *three_runs(claude_bin, home, project))
    finally:
        h.stop()


def test_fork_is_linked_to_its_parent_by_its_transcript(runs: Runs) -> None:
    h, a, u, fork = runs.h, runs.a, runs.u, runs.fork
    started = {e["session_id"]: e["data"] for e in h.events() if e["kind"] == "session_started"}
    # SessionStart of a fork says source "fork" (2.1.332) and names no parent: the hook path alone can
    # only guess, and the unrelated session ran last
    assert started[fork]["source"] == "fork" and started[fork]["parent_session_id"] == u
    wait_until(lambda: linked(h, fork), 10, message="the fork linked by its transcript")
    [ev] = linked(h, fork)
    assert ev["data"]["parent_session_id"] == a and ev["data"]["via"] == "transcript"
    assert not linked(h, a) and not linked(h, u)
    [b1] = [b for b in json.loads(h.cli("status", "--json"))["builders"] if b["builder"] == "b1"]
    sessions = {s["session_id"]: s for s in b1["sessions"]}
    assert (sessions[fork]["parent_session_id"], sessions[fork]["parent_via"]) == (a, "transcript")
    assert sessions[a]["parent_session_id"] is None and sessions[u]["parent_session_id"] is None


def test_fork_is_linked_from_transcripts_alone(runs: Runs, tmp_path: Path) -> None:
    h = _Hookd(tmp_path / "hookd")  # a daemon of its own: no hook reached it
    h.cli("spawn", "b1", "--settings-file", os.fspath(tmp_path / "unused-settings.json"), "--no-mcp")
    h.start()  # caught up from the files, in whatever order the folder lists them
    try:
        h.cli("tail", os.fspath(projects_folder(runs.home, runs.project)), "--builder", "b1")
        wait_until(lambda: linked(h, runs.fork), 10, message="the fork linked by its transcript")
        [ev] = linked(h, runs.fork)
        assert ev["data"]["parent_session_id"] == runs.a
        assert not linked(h, runs.a) and not linked(h, runs.u)
        assert not any(e["kind"] == "hook_received" for e in h.events())
    finally:
        h.stop()
