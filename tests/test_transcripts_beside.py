"""Files beside a followed transcript (field case B23: a session that goes on in another
``*.jsonl`` of its folder; a subagent's transcript under ``SESSION/subagents/``), in process
(tests/inproc.py): the tailer checks such a file's rows for a session id it knows and follows
it. Whatever a watch of the folder missed (the file made before the watch that covers it was
set, its event taken by a watch set up again or closed with a failed one, a first row longer
than one peek), the files beside the followed ones are looked at again each time the watch is
set (``Tailer._peek_newer``)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from hookd.settings import Settings

from .conftest import wait_until
from .inproc import InProc
from .test_transcripts import SID, append, line
from .test_transcripts_inproc import _offset, _queued, _row, hook, spawn_with_transcript, tail

pytestmark = pytest.mark.inproc


def _followed_to_its_end(app: InProc, path: Path) -> None:
    """Wait until the tailer follows ``path`` and has read it to its end."""
    tailer: Any = app.core.tailer  # type: ignore[attr-defined]
    wait_until(lambda: str(path) in tailer.targets(), 60, what=f"{path.name} followed")
    wait_until(lambda: _offset(app, path) == path.stat().st_size, 60, what=f"{path.name}'s rows read")


def _watching(app: InProc, worktree: Path, t: Path) -> Any:
    """Spawn b1 with ``t`` as its transcript (its SessionStart), and wait until the tailer
    follows ``t`` and its watch is set and not held (the hook's ``quiet_s`` passed); the
    watch's :class:`hookd.watchers.watch.Gate`."""
    spawn_with_transcript(app, worktree, t)
    wait_until(lambda: _offset(app, t) == 0, 60, what="t followed")
    gate = app.core.tailer._gate  # type: ignore[attr-defined]  # noqa: SLF001
    wait_until(lambda: gate._bound is not None and not gate.held, 60, what="the watch set, not held")  # noqa: SLF001
    return gate


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch is Linux's")
def test_a_file_beside_the_transcript_made_while_the_watch_failed_is_followed_when_it_is_set_again(
        home: Path, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Field case B23 across a failed watch: the session starts another file beside its
    transcript while the tailer's watch is failing (its consumer raised, the watch and what
    the kernel queued for it closed). When the watch is set again, the files beside the
    followed ones that changed after them are checked for a session id again, as at start:
    the new file is followed (it was left to its next change)."""
    from hookd.watchers import tailer as tailer_mod

    monkeypatch.setattr(tailer_mod, "WATCH_RETRY_S", 0.05)
    folder = tmp_path / "projects"
    folder.mkdir()
    t = folder / f"{SID}.jsonl"
    t.write_bytes(b"")
    beside = folder / "after-compaction.jsonl"
    app = InProc(home, settings=Settings(tail_quiet_ms=50)).start()
    try:
        spawn_with_transcript(app, worktree, t)
        wait_until(lambda: _offset(app, t) == 0, 60, what="t followed")
        tailer: Any = app.core.tailer  # type: ignore[attr-defined]
        quiet = tailer._quiet  # noqa: SLF001
        loop = app._loop  # noqa: SLF001
        wait_until(lambda: loop.time() - quiet._hooks_at[SID] > 0.05, 60, what="SID quiet")  # noqa: SLF001
        real = tailer_mod.Tailer.poll
        failed: list[str] = []

        async def poll(self: Any, path: str) -> int:
            if not failed and path == str(t):  # the watch's read of t's change: fails once
                failed.append(path)
                append(beside, _row("u-after-compaction"))  # made while the watch is failing
                st = t.stat()
                os.utime(beside, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # changed after t
                raise RuntimeError("a read that failed")
            return int(await real(self, path))

        monkeypatch.setattr(tailer_mod.Tailer, "poll", poll)
        append(t, _row("u-before"))
        wait_until(lambda: failed, 60, what="the watch's read failed")
        _followed_to_its_end(app, beside)
        wait_until(lambda: _offset(app, t) == t.stat().st_size, 60, what="t caught up from its cursor")
    finally:
        app.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch is Linux's")
def test_a_subagents_folder_made_with_its_first_transcript_is_followed(home: Path, worktree: Path,
                                                                      tmp_path: Path) -> None:
    """The session's first subagent: Claude Code makes ``<folder>/<SID>/subagents/`` and writes
    the subagent's first row there (mkdir -p, then the file; both before the daemon's loop
    turns). The tailer, which watched ``<folder>`` as the stand-in of the missing subagents
    folder, sees ``<SID>`` appear and watches again, now the subagents folder too. The file
    already in it gave its events to no watch; the new watch looks at the subagents folder as
    it is set, and the subagent's transcript is followed though it does not change again (a
    reviewer found it never followed)."""
    folder = tmp_path / "projects"
    folder.mkdir()
    t = folder / f"{SID}.jsonl"
    t.write_bytes(b"")
    sa = folder / SID / "subagents" / "agent-a1.jsonl"
    app = InProc(home, settings=Settings(tail_quiet_ms=50)).start()
    try:
        gate = _watching(app, worktree, t)
        before = gate._bound[2]  # noqa: SLF001

        async def first_subagent() -> None:  # in one turn of the daemon's loop: mkdir -p, then the first row
            sa.parent.mkdir(parents=True)
            with open(sa, "ab") as f:
                f.write(line({"type": "user", "sessionId": SID, "isSidechain": True, "agentId": "a1",
                              "uuid": "sa-1", "message": {"role": "user", "content": "look around"}}))

        app.call(first_subagent())
        wait_until(lambda: gate._bound is not None and gate._bound[2] is not before, 60,  # noqa: SLF001
                   what="the watch set again, on the subagents folder too")
        _followed_to_its_end(app, sa)
    finally:
        app.stop()


def _row_of(sid: str, uuid: str) -> bytes:
    return line({"type": "user", "sessionId": sid, "uuid": uuid, "message": {"role": "user", "content": uuid}})


class Pause:
    """Pauses one awaited step of the tailer's consumer (a slow read, as on a loaded machine)
    until the test resumes it."""

    def __init__(self) -> None:
        self.armed = False
        self.paused = threading.Event()
        self.resume: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    async def wait(self) -> None:
        self.armed = False
        self.loop = asyncio.get_running_loop()
        self.resume = asyncio.Event()
        self.paused.set()
        await self.resume.wait()

    def go(self) -> None:
        assert self.loop is not None and self.resume is not None
        self.loop.call_soon_threadsafe(self.resume.set)


def _stops(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.Event]:
    """The stop events the tailer gives its watches (the last: the running watch's)."""
    import hookd.watchers.watch as watch

    real = watch.awatch_dirs
    stops: list[asyncio.Event] = []

    def recording(*dirs: str, **kw: Any) -> Any:
        stops.append(kw["stop_event"])
        return real(*dirs, **kw)

    monkeypatch.setattr(watch, "awatch_dirs", recording)
    return stops


def _pause_at(monkeypatch: pytest.MonkeyPatch, method: str, path: Path, pause: Pause) -> None:
    """``Tailer.<method>`` (``poll``, ``_peek``) of ``path`` waits for ``pause`` while it is
    armed: a slow step of the tailer's consumer."""
    from hookd.watchers import tailer as tailer_mod

    real = getattr(tailer_mod.Tailer, method)

    async def paused(self: Any, p: str) -> Any:
        if pause.armed and p == str(path):
            await pause.wait()
        return await real(self, p)

    monkeypatch.setattr(tailer_mod.Tailer, method, paused)


def _projects_and_elsewhere(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(``projects/``, SID's transcript in it, ``elsewhere/v.jsonl``: a file whose ``hookd
    tail`` sets the watch up again), both files empty."""
    folder, elsewhere = tmp_path / "projects", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    t, v = folder / f"{SID}.jsonl", elsewhere / "v.jsonl"
    t.write_bytes(b"")
    v.write_bytes(b"")
    return folder, t, v


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch is Linux's")
def test_a_file_beside_the_transcript_taken_by_a_free_watch_is_followed_across_a_restart(
        home: Path, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SID's hooks have gone quiet (the watch is not held: its fd on the loop). The tailer is
    busy peeking a concurrent session's file beside SID's transcript (a slow read) when SID
    starts its next file there (B23) and ``hookd tail`` adds a file elsewhere. The loop takes
    the new file's events into the watch's batch; the watch is then told to stop before its
    consumer asks for that batch, and returns without it. The new watch looks beside the
    transcript as it is set: the file is followed (a reviewer found it never followed)."""
    stops = _stops(monkeypatch)
    pause = Pause()
    folder, t, v = _projects_and_elsewhere(tmp_path)
    x, b = folder / "concurrent.jsonl", folder / "after-compaction.jsonl"
    _pause_at(monkeypatch, "_peek", x, pause)
    app = InProc(home, settings=Settings(tail_quiet_ms=50)).start()
    try:
        gate = _watching(app, worktree, t)
        fd, stop, n = gate._bound[1], stops[-1], len(stops)  # noqa: SLF001
        pause.armed = True
        append(x, _row_of("s-concurrent", "c-1"))  # a concurrent session (B25) writes beside t
        assert pause.paused.wait(60), "the peek of the concurrent file"
        append(b, _row_of(SID, "u-after-compaction"))  # SID's next file (B23)
        wait_until(lambda: _queued(fd) == 0, 60, what="its events taken by the loop")
        tail(app, v)  # the watch is to be set up again
        wait_until(stop.is_set, 60, what="the watch told to stop")
        pause.go()
        wait_until(lambda: len(stops) > n and gate._bound is not None, 60, what="the watch set again")  # noqa: SLF001
        _followed_to_its_end(app, b)
    finally:
        app.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch is Linux's")
def test_a_file_beside_the_transcript_made_while_a_held_watchs_last_batch_is_read_is_followed(
        home: Path, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hooks keep coming (the watch held). A file of no hooked session (u, ``hookd tail``)
    changed; ``hookd tail`` of a file elsewhere sets the watch up again: the held watch hands
    over what the kernel held (u's change) as its last batch, and while its consumer reads u
    (a slow read) SID starts its next file beside its transcript (B23). That creation is queued
    in the old watch's kernel queue, closed with its fd once the consumer asks for the next
    batch. The new watch looks beside the transcript as it is set: the file is followed (a
    reviewer found it never followed)."""
    stops = _stops(monkeypatch)
    pause = Pause()
    folder, t, v = _projects_and_elsewhere(tmp_path)
    u, b = folder / "other.jsonl", folder / "after-compaction.jsonl"
    u.write_bytes(b"")
    _pause_at(monkeypatch, "poll", u, pause)
    app = InProc(home, settings=Settings(tail_quiet_ms=3_600_000)).start()
    try:
        spawn_with_transcript(app, worktree, t)  # holds the watch for an hour
        tail(app, u)
        wait_until(lambda: _offset(app, t) == 0 and _offset(app, u) == 0, 60, what="t and u followed")
        tailer: Any = app.core.tailer  # type: ignore[attr-defined]
        gate = tailer._gate  # noqa: SLF001
        wait_until(lambda: gate._bound is not None, 60, what="the watch set")  # noqa: SLF001
        assert gate.held
        fd, n = gate._bound[1], len(stops)  # noqa: SLF001
        pause.armed = True
        append(u, _row_of("s-other", "o-1"))  # queued in the kernel (held)
        tail(app, v)  # the watch set up again: u's change is the old watch's last batch
        assert pause.paused.wait(60), "the read of u's change"
        append(b, _row_of(SID, "u-after-compaction"))  # SID's next file (B23), while u is read
        assert _queued(fd) > 0  # in the old watch's queue
        pause.go()
        wait_until(lambda: len(stops) > n and gate._bound is not None, 60, what="the watch set again")  # noqa: SLF001
        hook(app, "004-PreToolUse.json", transcript_path=str(t))  # SID's next hook takes the new watch's queue
        _followed_to_its_end(app, b)
    finally:
        app.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch is Linux's")
def test_a_file_beside_the_transcript_starting_with_a_long_row_is_followed(home: Path, worktree: Path,
                                                                          tmp_path: Path) -> None:
    """B23: SID's next file beside its transcript is written with a long first row (a tool's
    whole output in one row, 100 KiB) and then a short one, in one write, and then nothing (the
    agent waits; the file moved in whole, one change). A peek reads 64 KiB: no whole row in it
    (skipped as torn), so no session id;
    the peek reads on to the short row, and the file is followed (a reviewer found the peek
    stopping at its first 64 KiB, the rest looked at only when the file changed again)."""
    folder = tmp_path / "projects"
    folder.mkdir()
    t, b = folder / f"{SID}.jsonl", folder / "after-compaction.jsonl"
    t.write_bytes(b"")
    app = InProc(home, settings=Settings(tail_quiet_ms=50)).start()
    try:
        _watching(app, worktree, t)
        long = line({"type": "user", "sessionId": SID, "uuid": "u-long", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_X", "content": "x" * 100_000}]}})
        short = line({"type": "user", "sessionId": SID, "uuid": "u-short", "message": {"role": "user", "content": "hi"}})
        staged = tmp_path / "staged.jsonl"  # written whole elsewhere, then moved in: one change
        staged.write_bytes(long + short)
        os.rename(staged, b)
        _followed_to_its_end(app, b)
    finally:
        app.stop()


def test_a_file_beside_the_transcript_read_to_its_end_is_not_read_again_when_the_watch_is_set(
        home: Path, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files beside the followed ones are looked at each time the watch is set: another
    session's file there, already read to its end, costs a ``stat`` then, not a read; once it
    grows, it is read again (its new rows only)."""
    from hookd.watchers import tailer as tailer_mod

    peeked: list[str] = []
    real_peek = tailer_mod.Tailer._peek  # noqa: SLF001

    async def peek(self: Any, path: str) -> bool:
        peeked.append(path)
        return bool(await real_peek(self, path))

    looks: list[int] = []  # each look beside the followed files, once done
    real_newer = tailer_mod.Tailer._peek_newer  # noqa: SLF001

    async def peek_newer(self: Any, *a: Any) -> None:
        await real_newer(self, *a)
        looks.append(1)

    monkeypatch.setattr(tailer_mod.Tailer, "_peek", peek)
    monkeypatch.setattr(tailer_mod.Tailer, "_peek_newer", peek_newer)
    folder = tmp_path / "projects"
    folder.mkdir()
    t, x = folder / f"{SID}.jsonl", folder / "concurrent.jsonl"
    t.write_bytes(b"")
    append(x, _row_of("s-concurrent", "c-1"))
    st = t.stat()
    os.utime(x, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # changed after t
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    app = InProc(home, settings=Settings(tail_quiet_ms=50)).start()
    try:
        spawn_with_transcript(app, worktree, t)  # the watch set again with t followed: x looked at
        wait_until(lambda: str(x) in peeked, 60, what="the concurrent file looked at")
        tailer: Any = app.core.tailer  # type: ignore[attr-defined]
        for n in (1, 2):  # the watch set up again, twice (a file elsewhere tailed each time)
            done = len(looks)
            v = elsewhere / f"v{n}.jsonl"
            v.write_bytes(b"")
            tail(app, v)
            wait_until(lambda: len(looks) > done, 60, what=f"the look beside at the watch set for v{n}")
        assert peeked.count(str(x)) == 1 and str(x) not in tailer.targets()
        append(x, _row_of("s-concurrent", "c-2"))  # it grows: looked at again, at its change
        wait_until(lambda: peeked.count(str(x)) == 2, 60, what="the concurrent file looked at again")
        assert str(x) not in tailer.targets()
    finally:
        app.stop()
