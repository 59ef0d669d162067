"""The transcript reader: byte offsets past newlines only, damaged lines salvaged or skipped and
counted, truncation and rotation (real files, written the way a crashing writer leaves them)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from hookd.watchers.jsonl import Cursor, TailStats, read_new, salvage

pytestmark = pytest.mark.inproc


def row(n: int, **extra: object) -> bytes:
    return json.dumps({"type": "user", "uuid": f"u{n}", **extra}).encode()


def append(p: Path, data: bytes) -> None:
    with open(p, "ab") as f:
        f.write(data)


def test_a_row_split_across_two_writes_is_read_once_whole(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    whole = row(1, text="hello") + b"\n"
    append(p, row(0) + b"\n" + whole[:17])
    r = read_new(Cursor(os.fspath(p)))
    assert [x["uuid"] for x in r.rows] == ["u0"]
    assert r.cursor.offset == len(row(0)) + 1  # only past the newline
    append(p, whole[17:])
    r2 = read_new(r.cursor)
    assert [x["uuid"] for x in r2.rows] == ["u1"] and r2.rows[0]["text"] == "hello"
    assert read_new(r2.cursor).rows == []  # nothing twice
    assert r2.stats.torn == 0


def test_spliced_nul_padded_invalid_utf8_and_torn_lines(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    append(p, row(1) + row(2) + b"\n")                         # spliced: two writers
    append(p, b"\x00" * 40 + row(3) + b"\n")                    # NUL padding before a row
    append(p, b'{"type":"user","uuid":"u4","text":"\xffcaf\xc3\xa9"}\n')  # a 0xFF byte
    append(p, b'{"type":"user","uuid":"u5","mess\n')           # torn: the writer died mid-row
    append(p, row(6) + b"\n")
    append(p, b"\x00\x00\x00\n")                                # only padding
    r = read_new(Cursor(os.fspath(p)))
    assert [x["uuid"] for x in r.rows] == ["u1", "u2", "u3", "u4", "u6"]
    assert r.rows[3]["text"] == "\ufffdcafé"
    s = r.stats
    assert (s.spliced, s.nul_padded, s.invalid_utf8, s.torn, s.rows) == (1, 2, 1, 1, 5)
    assert r.cursor.offset == p.stat().st_size


def test_truncation_and_rotation_restart_at_zero(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    append(p, row(1) + b"\n" + row(2) + b"\n")
    r = read_new(Cursor(os.fspath(p)))
    p.write_bytes(row(9) + b"\n")  # truncated and rewritten in place (same inode)
    r2 = read_new(r.cursor)
    assert [x["uuid"] for x in r2.rows] == ["u9"] and r2.stats.truncated == 1
    q = tmp_path / "new.jsonl"
    q.write_bytes(row(7) + b"\n" + row(8) + b"\n")
    os.replace(q, p)  # rotated: another file at the path
    r3 = read_new(r2.cursor)
    assert [x["uuid"] for x in r3.rows] == ["u7", "u8"] and r3.stats.rotated == 1


@pytest.mark.parametrize("how", ["in place", "made again"])
def test_a_file_rewritten_under_its_identity_and_longer_is_read_from_its_start(tmp_path: Path, how: str) -> None:
    """Rewritten to past the cursor before the next read, with the same device and inode: in
    place, or removed and made again where the file system gives the inode number out again
    (written here through a second link, which keeps the inode, as its reuse would)."""
    p = tmp_path / "t.jsonl"
    append(p, row(1) + b"\n" + row(2) + b"\n")
    r = read_new(Cursor(os.fspath(p)))
    assert [x["uuid"] for x in r.rows] == ["u1", "u2"]
    again = b"".join(row(n, text="another session's rows") + b"\n" for n in (7, 8, 9))
    assert len(again) > r.cursor.offset
    if how == "in place":
        with open(p, "r+b") as f:
            f.write(again)
    else:
        keep = tmp_path / "inode"
        os.link(p, keep)
        p.unlink()
        with open(keep, "r+b") as f:
            f.truncate(0)
            f.write(again)
        os.link(keep, p)
    assert (p.stat().st_dev, p.stat().st_ino) == (r.cursor.dev, r.cursor.ino)
    r2 = read_new(r.cursor)  # (told apart first; read from the start by the next call)
    assert (r2.rows, r2.stats.truncated, r2.cursor.offset, r2.more) == ([], 1, 0, True)
    r3 = read_new(r2.cursor)
    assert [x["uuid"] for x in r3.rows] == ["u7", "u8", "u9"] and r3.stats.torn == 0
    assert r3.cursor.offset == len(again) and not r3.more


def test_a_cursor_keeps_the_bytes_before_it_through_partial_torn_and_chunked_reads(tmp_path: Path) -> None:
    """Appends after every kind of read are read on, never taken for a rewrite: a partial row,
    a line longer than a whole read (skipped), reads in chunks, rows shorter than the tail."""
    p = tmp_path / "t.jsonl"
    append(p, b"{}\n")  # a row shorter than the bytes a cursor keeps
    c = read_new(Cursor(os.fspath(p))).cursor
    append(p, b'{"type":"user","uuid":"u1"')  # a row being written
    r = read_new(c)
    assert r.rows == [] and r.cursor == c
    append(p, b"}\n" + b'{"junk":"' + b"y" * 300)  # then a line longer than a read
    r = read_new(r.cursor, max_bytes=200)
    assert [x["uuid"] for x in r.rows] == ["u1"] and r.more
    r = read_new(r.cursor, max_bytes=200)
    assert r.rows == [] and r.stats.torn == 1 and r.more
    append(p, b'"}\n' + b"".join(row(i, pad="x" * 50) + b"\n" for i in range(2, 12)))
    seen, c = [], r.cursor
    while True:
        r = read_new(c, max_bytes=200)
        assert r.stats.truncated == 0
        seen += [x["uuid"] for x in r.rows]
        c = r.cursor
        if not r.more:
            break
    assert seen == [f"u{i}" for i in range(2, 12)]


def test_missing_file_and_partial_only(tmp_path: Path) -> None:
    c = Cursor(os.fspath(tmp_path / "none.jsonl"))
    assert read_new(c).rows == [] and read_new(c).cursor == c
    p = tmp_path / "t.jsonl"
    append(p, b'{"type":"us')
    r = read_new(Cursor(os.fspath(p)))
    assert r.rows == [] and r.cursor.offset == 0


def test_big_catch_up_reads_in_chunks(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    append(p, b"".join(row(i, pad="x" * 100) + b"\n" for i in range(1000)))
    c, seen = Cursor(os.fspath(p)), []
    while True:
        r = read_new(c, max_bytes=10_000)
        seen += [x["uuid"] for x in r.rows]
        c = r.cursor
        if not r.more:
            break
    assert seen == [f"u{i}" for i in range(1000)]


def test_salvage_counts_non_object_json_as_torn() -> None:
    s = TailStats()
    assert salvage(b"[1, 2]", s) == [] and s.torn == 1
    assert salvage(b'junk {"a": 1} more', s) == [{"a": 1}] and s.torn == 2


def test_objects_nested_in_a_torn_row_are_not_rows(tmp_path: Path) -> None:
    """A torn row followed by a whole one on the same line: only the whole one is a row, never
    the objects nested inside the torn one (a progress row carrying an assistant message with
    an AskUserQuestion tool_use must not open a phantom question)."""
    nested = {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_PHANTOM", "name": "AskUserQuestion", "input": {"questions": []}}]}}
    progress = json.dumps({"type": "progress", "uuid": "p1", "data": {"message": nested, "more": 1}}).encode()
    p = tmp_path / "t.jsonl"
    append(p, progress[: len(progress) - 12] + row(2) + b"\n")     # torn inside "data", then a row
    append(p, row(3) + b"garbage" + row(4) + b"\n")                 # a whole row, junk, a whole row
    append(p, b'{"type":"user","uuid":"u5","x":{"a":1},"y":' + row(6) + b"\n")  # torn after a nested object
    r = read_new(Cursor(os.fspath(p)))
    assert [x.get("uuid") for x in r.rows] == ["u2", "u3", "u4", "u6"]
    assert not any(x.get("type") == "assistant" or "toolu_PHANTOM" in json.dumps(x) for x in r.rows)
    assert r.stats.torn == 3


# --- when a hooked session's transcript is read (hookd.watchers.quiet) -----------------------


class _Reads:
    """What a QuietReads under test read, and when it said a read failed."""

    def __init__(self, fail: bool = False) -> None:
        import asyncio

        self.paths: list[str] = []
        self.failed = 0
        self.fail = fail
        self.done = asyncio.Event()

    async def read(self, path: str) -> None:
        self.paths.append(path)
        self.done.set()
        if self.fail:
            raise OSError("the store refused it")

    def quiet(self, quiet_s: float, max_defer_s: float, files: tuple[str, ...] = (), gate: Any = None) -> Any:
        """A QuietReads over these reads; session ``s1``'s followed files are ``files``; ``gate``:
        its watch's (None: none)."""
        import asyncio

        from hookd.watchers.quiet import QuietReads

        def spawn(coro: Any) -> None:
            asyncio.get_running_loop().create_task(coro)

        def failed() -> None:
            self.failed += 1

        return QuietReads(self.read, spawn, failed, quiet_s=quiet_s, max_defer_s=max_defer_s,
                          files_of=lambda sid: files if sid == "s1" else (), gate=gate)


def test_a_change_waits_only_while_its_sessions_hooks_are_coming() -> None:
    import asyncio

    async def main() -> None:
        r = _Reads()
        q = r.quiet(quiet_s=3600, max_defer_s=3600)  # hooks that never go quiet, no bound
        assert not q.defer("/t/a.jsonl", "s1")  # no hook from s1 yet: read now
        assert not q.defer("/t/b.jsonl", None)  # a file of no known session: read now
        q.hook_arrived("s1")
        assert q.defer("/t/a.jsonl", "s1") and q.defer("/t/a.jsonl", "s1")  # one deferred read
        assert not q.defer("/t/c.jsonl", "s2")  # another session's file: read now
        assert q.pending() == ["/t/a.jsonl"]
        await q.flush()  # the tailer stops: what waited is read now
        assert r.paths == ["/t/a.jsonl"] and q.pending() == []

    asyncio.run(main())


def test_a_deferred_read_comes_when_the_hooks_go_quiet() -> None:
    import asyncio

    async def main() -> None:
        r = _Reads()
        q = r.quiet(quiet_s=0.05, max_defer_s=3600)
        q.hook_arrived("s1")
        assert q.defer("/t/a.jsonl", "s1")
        await asyncio.wait_for(r.done.wait(), 30)
        assert r.paths == ["/t/a.jsonl"] and q.pending() == [] and r.failed == 0

    asyncio.run(main())


def test_a_deferred_read_comes_at_a_hook_once_it_waited_its_bound() -> None:
    """While the hooks keep coming, a change that waited ``max_defer_s`` is read at the next
    hook, in a task started in that hook's turn of the loop (no timer of its own); a failed
    read is reported to the tailer."""
    import asyncio

    async def main() -> None:
        r = _Reads(fail=True)
        q = r.quiet(quiet_s=3600, max_defer_s=0, files=("/t/a.jsonl",))  # the hooks are never quiet for an hour
        q.hook_arrived("s1")
        assert q.defer("/t/a.jsonl", "s1")
        await asyncio.sleep(0)
        assert r.paths == []  # not before a hook
        q.hook_arrived("s1")
        assert q.pending() == []  # handed to its read in the hook's turn
        await asyncio.wait_for(r.done.wait(), 30)
        while not r.failed:  # the read failed: the tailer is told (it catches every file up)
            await asyncio.sleep(0)
        assert r.paths == ["/t/a.jsonl"]

    asyncio.run(main())


def test_a_hook_marks_its_sessions_files_and_only_a_change_of_them_is_read() -> None:
    """``files_of``: a session's hook marks its transcript (no timer, no read); the first change
    seen of it while the hooks keep coming is dropped by the watch (:meth:`QuietReads.waiting`
    is true) and makes a deferred read, read at a later hook once it waited ``max_defer_s``;
    the file is marked again after that read. A marked file that never changes is never read,
    and another session's hook leaves the mark be."""
    import asyncio

    async def main() -> None:
        r = _Reads()
        q = r.quiet(quiet_s=3600, max_defer_s=3600, files=("/t/a.jsonl", "/t/b.jsonl"))
        q.hook_arrived("s2")
        assert not q.waiting("/t/a.jsonl")
        q.hook_arrived("s1")
        assert q.pending() == []  # marked: nothing to read
        assert q.waiting("/t/a.jsonl") and q.pending() == ["/t/a.jsonl"]  # its change: a read waits
        q.max_defer_s = 0
        q.hook_arrived("s2")
        assert q.pending() == ["/t/a.jsonl"]  # another session's hook: still waiting
        q.hook_arrived("s1")
        assert q.pending() == []
        await asyncio.wait_for(r.done.wait(), 30)
        assert r.paths == ["/t/a.jsonl"]  # not b, which never changed
        assert q.waiting("/t/a.jsonl")  # marked again: the agent's next append starts no task
        assert q.cancel() == ["/t/a.jsonl"]

    asyncio.run(main())


def test_a_marked_file_with_no_change_is_not_read_when_the_hooks_go_quiet() -> None:
    """A hook marks a.jsonl, whose change is never seen, and b.jsonl's change waits: once the
    hooks go quiet only b.jsonl is read (a reviewer found every marked file read)."""
    import asyncio

    async def main() -> list[str]:
        r = _Reads()
        q = r.quiet(quiet_s=0.05, max_defer_s=3600, files=("/t/a.jsonl",))
        q.hook_arrived("s1")
        assert q.defer("/t/b.jsonl", "s1")
        await asyncio.wait_for(r.done.wait(), 30)
        assert q.pending() == []
        return r.paths

    assert asyncio.run(main()) == ["/t/b.jsonl"]


def test_a_marked_file_changed_after_the_hooks_went_quiet_is_read_at_once() -> None:
    """The mark of a session whose hooks have gone quiet does not hold its next change: the
    watch reports it (:meth:`QuietReads.waiting` false) and the tailer reads it at once."""
    import asyncio

    async def main() -> None:
        r = _Reads()
        q = r.quiet(quiet_s=0.0, max_defer_s=3600, files=("/t/a.jsonl",))  # hooks are quiet as soon as they came
        q.hook_arrived("s1")
        assert not q.waiting("/t/a.jsonl") and not q.defer("/t/a.jsonl", "s1") and q.pending() == []

    asyncio.run(main())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux only")
def test_the_watch_drops_modifications_of_ignored_paths_where_it_reads_them(tmp_path: Path) -> None:
    """``awatch_dirs(ignore=...)``: an append to a file whose read is already due (the tailer's
    deferred transcripts) is dropped in the inotify callback, so it wakes nobody; an append to
    another file, and the ignored file's deletion, are reported."""
    import asyncio

    from watchfiles import Change

    from hookd.watchers.watch import awatch_dirs

    waiting, other = os.fspath(tmp_path / "waiting.jsonl"), os.fspath(tmp_path / "other.jsonl")
    for p in (waiting, other):
        Path(p).write_bytes(b"")

    async def run() -> list[set[tuple[Any, str]]]:
        stop = asyncio.Event()
        gen = awatch_dirs(os.fspath(tmp_path), stop_event=stop, debounce=0, step=10, ignore=lambda p: p == waiting)
        first = asyncio.ensure_future(gen.__anext__())
        await asyncio.sleep(0)  # the watch is set up in the generator's first step
        append(Path(waiting), row(0) + b"\n")
        append(Path(other), row(1) + b"\n")
        got = [await asyncio.wait_for(first, 10)]
        append(Path(waiting), row(2) + b"\n")
        os.unlink(waiting)
        got.append(await asyncio.wait_for(gen.__anext__(), 10))
        stop.set()
        await gen.aclose()
        return got

    batches = asyncio.run(run())
    assert batches[0] == {(Change.modified, other)}
    assert batches[1] == {(Change.deleted, waiting)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_an_overflowed_queue_reports_a_watched_folder_that_is_gone_as_deleted(tmp_path: Path) -> None:
    """The kernel's queue overflowed (events lost): every entry of every watched folder is
    reported as modified, and a watched folder that went meanwhile, or is another folder now
    (the watch is on the one that went), as deleted, as its own ``IN_IGNORED`` would have
    (which may have been among the events lost): the tailer then watches again from its
    nearest ancestor instead of keeping a watch on nothing."""
    from watchfiles import Change

    from hookd.watchers import watch

    kept, gone, again = tmp_path / "kept", tmp_path / "gone", tmp_path / "again"
    for d in (kept, gone, again):
        d.mkdir()
    (kept / "t.jsonl").write_bytes(b"")
    ino = watch._Inotify()  # noqa: SLF001
    try:
        for d in (kept, gone, again):
            ino.add(os.fspath(d))
        gone.rmdir()  # its IN_IGNORED is queued, and taken for lost below
        again.rename(tmp_path / "moved")  # (kept: the folder made next cannot be given its inode)
        again.mkdir()  # another folder at the watched one's path: the watch is on the one moved
        out: set[tuple[Any, str]] = set()
        ino._take(-1, watch._Q_OVERFLOW, b"", out)  # noqa: SLF001
        assert out == {(Change.modified, os.fspath(kept / "t.jsonl")), (Change.deleted, os.fspath(gone)),
                       (Change.deleted, os.fspath(again))}
        assert list(ino.dirs.values()) == [os.fspath(kept)]
    finally:
        ino.close()


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_a_deferred_read_s_timer_fires_once_though_a_hook_moved_it(loop_kind: str) -> None:
    """The timer of a deferred read fires once, when the read is due: a hook that came
    meanwhile moves the timer itself (no early fire to look again), and no fire comes for want
    of a fraction of a millisecond (with ``time.monotonic()`` against uvloop's millisecond
    timers about a third of the fires came early, each one more wake-up of the daemon, seen in
    a session at a model's pace); ten deferred reads here, each moved once by a hook."""
    import asyncio

    from hookd.watchers.quiet import QuietReads

    fires: list[str] = []
    real = QuietReads._due  # noqa: SLF001

    def due(self: QuietReads, path: str) -> None:
        fires.append(path)
        real(self, path)

    async def main() -> list[str]:
        r = _Reads()
        # (a stall of the loop under 0.2 s changes nothing)
        q = r.quiet(quiet_s=0.2, max_defer_s=3600, files=tuple(f"/t/{i}.jsonl" for i in range(10)))
        q._due = due.__get__(q)  # type: ignore[method-assign]  # noqa: SLF001
        for i in range(10):
            r.done.clear()
            q.hook_arrived("s1")
            assert q.defer(f"/t/{i}.jsonl", "s1")
            await asyncio.sleep(0.01)
            q.hook_arrived("s1")  # a hook after the change: the read moves to 0.2 s after it
            await asyncio.wait_for(r.done.wait(), 30)
        return r.paths

    if loop_kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            paths = runner.run(main())
    else:
        paths = asyncio.run(main())
    assert paths == [f"/t/{i}.jsonl" for i in range(10)]
    assert fires == paths, fires


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
@pytest.mark.parametrize("backend", ["auto", "watchfiles"])
@pytest.mark.parametrize("at", ["first step pending", "after a batch"])
def test_a_watch_ended_mid_way_releases_its_watcher(tmp_path: Path, backend: str, at: str) -> None:
    """``watch.ended`` on a watch its consumer left: while the first step (the future
    ``started`` gave) is pending, or after a batch with the next step made but not awaited (as
    the tailer and the spool watcher leave it): its inotify is closed when it returns (the
    watchfiles fallback's watcher closes its own in a thread of its own, soon after: waited
    for), and a second ``ended`` is harmless."""
    import asyncio

    from hookd.watchers.watch import awatch_dirs, ended, started

    from .test_transcripts_inproc import _inotify_fds

    async def run() -> tuple[int, int, int]:
        before = _inotify_fds()
        changes = awatch_dirs(str(tmp_path), stop_event=asyncio.Event(), debounce=10, step=10, backend=backend,
                              rust_timeout=60_000)
        step: Any = await started(changes)
        if at == "after a batch":
            (tmp_path / "t.jsonl").write_bytes(b"{}\n")
            await asyncio.wait_for(step, 30)
            step = changes.__anext__()
        watching = _inotify_fds()
        await ended(changes, step)
        if backend == "watchfiles":
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while _inotify_fds() != before and loop.time() < deadline:
                await asyncio.sleep(0.01)
        after = _inotify_fds()
        await ended(changes, None)
        return before, watching, after

    before, watching, after = asyncio.run(run())
    assert watching == before + 1 and after == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch (held) is Linux's")
def test_a_held_watch_wakes_for_nothing_until_drained_or_released(tmp_path: Path) -> None:
    """``watch.Gate``: a watch on the loop, held, wakes for nothing more; one made while its
    gate is held starts held; a change then waits in the kernel's queue while the loop turns
    (delivering nothing); ``drain`` delivers it; ``release`` delivers what waited and the watch
    wakes for later changes again; the watch, ended, leaves the gate."""
    import asyncio

    from hookd.watchers.watch import Gate, awatch_dirs, ended, started

    from .test_transcripts_inproc import _queued

    def names(batch: set[tuple[Any, str]]) -> set[str]:
        return {os.path.basename(p) for _, p in batch}

    async def turns() -> None:
        for _ in range(20):  # each a turn of the loop, which polls its fds
            await asyncio.sleep(0)

    async def run() -> None:
        gate = Gate()
        first = awatch_dirs(str(tmp_path), stop_event=asyncio.Event(), debounce=10, step=10, gate=gate)
        step: Any = await started(first)
        (tmp_path / "z.jsonl").write_bytes(b"{}\n")  # not held: the change wakes the watch
        assert names(await asyncio.wait_for(step, 30)) == {"z.jsonl"}
        step = asyncio.ensure_future(first.__anext__())
        gate.hold()  # a watch on the loop taken off it
        (tmp_path / "y.jsonl").write_bytes(b"{}\n")
        await turns()
        assert not step.done()
        await ended(first, step)
        assert gate._bound is None  # noqa: SLF001
        changes = awatch_dirs(str(tmp_path), stop_event=asyncio.Event(), debounce=10, step=10, gate=gate)
        step = await started(changes)
        assert gate._bound is not None  # noqa: SLF001
        fd = gate._bound[1]  # noqa: SLF001
        (tmp_path / "a.jsonl").write_bytes(b"{}\n")
        await turns()
        assert not step.done() and _queued(fd) > 0
        gate.drain()
        assert names(await asyncio.wait_for(step, 30)) == {"a.jsonl"} and _queued(fd) == 0
        step = asyncio.ensure_future(changes.__anext__())
        (tmp_path / "b.jsonl").write_bytes(b"{}\n")
        await turns()
        assert not step.done()
        gate.release()
        assert names(await asyncio.wait_for(step, 30)) == {"b.jsonl"}
        step = asyncio.ensure_future(changes.__anext__())
        await turns()
        (tmp_path / "c.jsonl").write_bytes(b"{}\n")  # released: this change wakes the watch itself
        assert names(await asyncio.wait_for(step, 30)) == {"c.jsonl"}
        await ended(changes, None)
        assert gate._bound is None and not gate.held  # noqa: SLF001

    asyncio.run(run())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the inotify watch (held) is Linux's")
def test_a_held_watch_stopped_yields_what_the_kernel_held_as_its_last_batch(tmp_path: Path) -> None:
    """A held watch told to stop (the tailer watching again, or stopping) hands over what waited
    in the kernel's queue as its last batch instead of closing the fd with it; a watch not held
    just ends."""
    import asyncio

    from hookd.watchers.watch import Gate, awatch_dirs, started

    async def last_batches(held: bool) -> list[set[str]]:
        gate, stop = Gate(), asyncio.Event()
        if held:
            gate.hold()
        changes = awatch_dirs(str(tmp_path / ("held" if held else "free")), stop_event=stop, debounce=10,
                              step=10, gate=gate)
        step: Any = await started(changes)
        if held:
            (tmp_path / "held" / "b.jsonl").write_bytes(b"{}\n")
        stop.set()
        out = []
        try:
            while True:
                out.append({os.path.basename(p) for _, p in await asyncio.wait_for(step, 30)})
                step = asyncio.ensure_future(changes.__anext__())
        except StopAsyncIteration:
            return out

    (tmp_path / "held").mkdir()
    (tmp_path / "free").mkdir()
    assert asyncio.run(last_batches(True)) == [{"b.jsonl"}]
    assert asyncio.run(last_batches(False)) == []


def test_stopping_takes_what_the_held_watch_queued_before_the_deferred_reads() -> None:
    """``QuietReads.cancel`` (the tailer stopping) releases the held watch first: a change it
    takes then (a marked file's) is among the files read before stopping, not dropped."""
    import asyncio

    class Held:
        """A held watch with one change queued: the tailer's ignore (``defer``) runs on it when
        it is taken."""

        def __init__(self) -> None:
            self.queued: list[str] = []
            self.held = False
            self.q: Any = None

        def drain(self) -> None:
            for path in self.queued:
                self.q.defer(path, "s1")
            self.queued.clear()

        def hold(self) -> None:
            self.held = True

        def release(self) -> None:
            self.held = False
            self.drain()

    async def main() -> list[str]:
        gate = Held()
        q = _Reads().quiet(quiet_s=3600, max_defer_s=3600, files=("/t/a.jsonl",), gate=gate)
        gate.q = q
        q.hook_arrived("s1")  # marks a.jsonl; the watch held
        gate.queued.append("/t/a.jsonl")  # the agent's append, in the kernel's queue
        return q.cancel()

    assert asyncio.run(main()) == ["/t/a.jsonl"]


def test_a_release_whose_take_fails_leaves_the_watch_awake() -> None:
    """``Gate.release`` puts the watch's fd back on the loop before it takes what waited: a take
    that raises (the caller logs it and watches again) leaves the watch waking for changes,
    not deaf."""
    import asyncio

    from hookd.watchers.watch import Gate

    def broken() -> None:
        raise OSError(5, "Input/output error")

    async def main() -> bool:
        r, w = os.pipe()
        try:
            loop = asyncio.get_running_loop()
            gate = Gate()
            gate.hold()
            gate._bind(loop, r, broken)  # noqa: SLF001
            with pytest.raises(OSError):
                gate.release()
            return loop.remove_reader(r)  # True: it was on the loop
        finally:
            os.close(r)
            os.close(w)

    assert asyncio.run(main())


def test_a_release_timer_whose_take_fails_tells_the_tailer(caplog: pytest.LogCaptureFixture) -> None:
    """The timer that releases the held watch ``quiet_s`` after the last hook: a take that
    raises there is logged and reported (``failed``: the tailer watches again from its
    cursors), not raised into the event loop's timer, and the next hook holds the watch and
    arms the release again."""
    import asyncio

    class Broken:
        def __init__(self) -> None:
            self.held = False
            self.releases = 0
            self.released = asyncio.Event()

        def drain(self) -> None:
            pass

        def hold(self) -> None:
            self.held = True

        def release(self) -> None:
            self.held = False
            self.releases += 1
            self.released.set()
            raise OSError(5, "Input/output error")

    async def main() -> tuple[int, int, bool, list[Any]]:
        loop = asyncio.get_running_loop()
        escaped: list[Any] = []
        loop.set_exception_handler(lambda _, ctx: escaped.append(ctx))
        r = _Reads()
        gate = Broken()
        q = r.quiet(quiet_s=0.02, max_defer_s=3600, gate=gate)
        q.hook_arrived("s1")
        assert gate.held
        await asyncio.wait_for(gate.released.wait(), 30)
        gate.released.clear()
        q.hook_arrived("s1")  # the next hook: held again, released again after quiet_s
        assert gate.held
        await asyncio.wait_for(gate.released.wait(), 30)
        return gate.releases, r.failed, gate.held, escaped

    with caplog.at_level("WARNING", logger="hookd"):
        assert asyncio.run(main()) == (2, 2, False, [])
    assert [m for m in caplog.messages if "taking its events failed" in m] == [
        "transcript watch: taking its events failed: [Errno 5] Input/output error"] * 2


def test_a_peek_reads_on_past_a_long_first_row_up_to_the_size_it_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``_peek_read`` (a file beside a followed transcript, checked for a session id): a first
    row longer than one read is read past to the row that names a session; a file whose rows
    name none is read up to the size it had when the peek began, though a writer keeps
    appending (what comes later brings its own change): it never reads on and on."""
    from hookd.watchers import tailer
    from hookd.watchers.jsonl import Cursor

    long = json.dumps({"type": "user", "message": {"content": "x" * (3 * tailer.PEEK_BYTES)}}).encode() + b"\n"
    named = json.dumps({"type": "user", "sessionId": "s-1"}).encode() + b"\n"
    f = tmp_path / "beside.jsonl"
    f.write_bytes(long + named + named)
    cur, sids = tailer._peek_read(Cursor(str(f)))  # noqa: SLF001
    assert sids == ["s-1"] and cur.offset == f.stat().st_size

    g = tmp_path / "busy.jsonl"
    nameless = json.dumps({"type": "user", "message": {"content": "y" * 200}}).encode() + b"\n"
    g.write_bytes(nameless * (tailer.PEEK_BYTES // len(nameless) * 3))
    limit = g.stat().st_size
    real = tailer.read_new
    reads: list[int] = []

    def read_new(c: Any, n: int) -> Any:  # a writer appending a read's worth before each read
        reads.append(1)
        if len(reads) > 50:
            raise AssertionError("the peek read on and on")
        append(g, nameless * (tailer.PEEK_BYTES // len(nameless) + 1))
        return real(c, n)

    monkeypatch.setattr(tailer, "read_new", read_new)
    cur, sids = tailer._peek_read(Cursor(str(g)))  # noqa: SLF001
    assert sids == [] and limit <= cur.offset < limit + tailer.PEEK_BYTES and len(reads) <= 4


def test_a_file_beside_the_transcript_truncated_and_written_again_is_not_taken_for_read(tmp_path: Path) -> None:
    """``Tailer._peeked_to_end``: a file the peek read to its end is skipped at the next watch
    set only while its size is where the peek left it; truncated and written again to another
    size (the same inode), it is looked at again."""
    from types import SimpleNamespace

    from hookd.watchers.jsonl import Cursor
    from hookd.watchers.tailer import Tailer

    f = tmp_path / "beside.jsonl"
    f.write_bytes(b'{"sessionId": "s-other"}\n' * 4)
    st = f.stat()
    peeked = SimpleNamespace(_foreign={str(f): Cursor(str(f), st.st_dev, st.st_ino, st.st_size)})
    assert Tailer._peeked_to_end(peeked, str(f), st)  # type: ignore[arg-type]  # noqa: SLF001
    with open(f, "r+b") as h:  # truncated and written again, shorter
        h.truncate(0)
        h.write(b'{"sessionId": "s-1"}\n')
    assert f.stat().st_ino == st.st_ino
    assert not Tailer._peeked_to_end(peeked, str(f), f.stat())  # type: ignore[arg-type]  # noqa: SLF001
