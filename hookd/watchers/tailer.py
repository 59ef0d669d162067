"""The daemon's follower of transcripts (DESIGN.md "Transcript tailing"): :class:`Tailer`.

Which files it follows, when it reads them, and what it hands the core. Reading one file's new
rows (the cursor, the salvage of damaged lines) is :mod:`hookd.watchers.jsonl`'s; what rows mean
is the harness adapter's business (:func:`hookd.harness.claude_code.transcript_observations`).
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from hookd.settings import Settings
from hookd.untrusted import NotRegularFile, read_regular
from hookd.watchers.jsonl import Cursor, read_new
from hookd.watchers.quiet import QuietReads
from hookd.watchers.watch import Gate

log = logging.getLogger("hookd")


class Tailer:
    """Follows the transcripts of known sessions for the daemon (watchfiles; no polling).

    Targets: every session's reported ``transcript_path`` (added live through
    ``core.on_transcript``), files registered with :meth:`add` (``hookd tail FILE``) and every
    ``*.jsonl`` (and ``*/subagents/*.jsonl``) in folders registered with :meth:`add_dir`
    (``hookd tail DIR``: a Claude Code projects folder), including files that appear later.
    Another ``*.jsonl`` beside a followed transcript, or in its session's ``subagents/``
    folder, is followed too once its rows carry the id of a session hookd knows
    (:meth:`_peek`; field case B23, a frozen ``transcript_path``; subagents' questions).
    Each file is read from its persisted cursor, so rows written while the daemon was down are
    caught up at start; folder registrations persist in ``HOOKD_HOME/tail-dirs.json``.
    While a session's hooks keep coming (:meth:`hook_arrived`) a change of its transcript is
    read in the turn of one of its hooks or once they go quiet
    (:class:`hookd.watchers.quiet.QuietReads`), not at once; while any hooks keep coming the
    watch is held, its changes taken at the next hook (:class:`hookd.watchers.watch.Gate`).
    core: a :class:`hookd.core.Hookd`. settings: its ``tail_debounce_ms``, ``tail_step_ms``,
    ``watch_backend``, ``tail_quiet_ms`` and ``tail_max_defer_ms`` (default :class:`hookd.settings.Settings`' defaults).
    """

    def __init__(self, core: Any, *, settings: Settings | None = None):
        settings = settings if settings is not None else Settings()
        self.core = core
        #: watchfiles settings: milliseconds to wait for more changes before yielding a batch,
        #: and between checks (transcript append -> event budget: p95 100 ms). Only where the
        #: tailer falls back to watchfiles: on Linux it reads inotify events on the event loop
        #: (:mod:`hookd.watchers.watch`; ``watch_backend``).
        self.debounce_ms = settings.tail_debounce_ms
        self.step_ms = settings.tail_step_ms
        self.watch_backend = settings.watch_backend
        self._targets: dict[str, tuple[str, str | None]] = {}
        #: session id -> the targets followed for it (``_targets``' second field)
        self._of_session: dict[str, set[str]] = {}
        self._dirs: dict[str, str] = self._load_dirs()
        self._cursors: dict[str, Cursor] = {}
        self._locks: dict[str, Any] = {}
        self._changed: Any = None
        #: the watch is set for the followed files as they are and they were caught up: what
        #: changes from here is read as it changes (:attr:`settled`)
        self._watching = False
        #: paths refused this run (not a transcript, not a regular file), with the reason
        #: already logged and recorded for them
        self._refused: dict[str, str] = {}
        #: other ``*.jsonl`` files in the folders of followed transcripts: how far their rows
        #: were checked for a known session id (see :meth:`_peek`)
        self._foreign: dict[str, Cursor] = {}
        #: holds the watch's wake-ups back while hooks keep coming (QuietReads)
        self._gate = Gate()
        self._quiet = QuietReads(self.poll, lambda coro: self.core.tasks.spawn(coro), self._start_over,
                                 quiet_s=settings.tail_quiet_ms / 1000, max_defer_s=settings.tail_max_defer_ms / 1000,
                                 files_of=self._files_of, gate=self._gate)
        #: a live hook of a session has committed (the core calls it on the hook path): its
        #: transcript is read in a hook's turn or once its hooks go quiet (QuietReads)
        self.hook_arrived = self._quiet.hook_arrived

    def _start_over(self) -> None:
        """Set up the watch again, with a catch-up of every file from its cursor."""
        if self._changed is not None:
            self._changed.set()

    def add(self, path: str, builder: str, session_id: str | None = None) -> None:
        """Follow ``path`` for ``builder`` (idempotent): a ``*.jsonl`` file (whatever it turns
        out to be: only a regular file is ever read), or claw's sessions folder
        (``<cwd>/.claw/sessions/<fp>``, which hookd itself reports for claw sessions), followed
        like ``hookd tail DIR``. Any other path a hook reports (``/tmp``, a ``.txt`` file) is
        refused (logged, a ``transcript_refused`` event): it never becomes a watched folder."""
        path = os.path.abspath(path)
        if not path.endswith(".jsonl"):
            if _is_claw_sessions_dir(path):
                self.add_dir(path, builder)
            else:
                self._refuse(path, builder, session_id, "not a .jsonl transcript file: not followed")
            return
        if path in self._targets and (session_id is None or self._targets[path][1] == session_id):
            return
        before = self._targets.get(path, (builder, None))[1]
        self._targets[path] = (builder, session_id or before)
        if session_id and before != session_id:
            if before is not None:
                self._of_session.get(before, set()).discard(path)
            self._of_session.setdefault(session_id, set()).add(path)
        if self._changed is not None:
            self._changed.set()

    def _taken(self, path: str) -> bool:
        """The watch's ``ignore``: a modification of followed ``path`` is judged as the watch
        takes it (in the loop's callback, in a hook's turn, or at the watch's release), against
        the hooks before it: True when its read waits for its session's hooks
        (:meth:`QuietReads.defer`; the consumer is not woken for it), False when it is read
        now. Any other path: False."""
        target = self._targets.get(path)
        return target is not None and self._quiet.defer(path, target[1])

    def targets(self) -> list[str]:
        return sorted(self._targets)

    def _files_of(self, session_id: str) -> Iterable[str]:
        """The files followed for ``session_id``: what a hook of the session marks
        (:class:`QuietReads`)."""
        return self._of_session.get(session_id, ())

    def refusal(self, path: str) -> str | None:
        """Why ``path`` (absolute) is not followed or read in this run (a FIFO, a device, a
        directory, not a ``.jsonl`` file), else None."""
        return self._refused.get(path)

    def _refuse(self, path: str, builder: str | None, session_id: str | None, reason: str) -> None:
        """Log ``path`` as not followed/read for ``reason`` and record a ``transcript_refused``
        event (``{"path", "reason"}``), once per path and reason for this run."""
        if self._refused.get(path) == reason:
            return
        self._refused[path] = reason
        log.warning("transcript %s: %s", path, reason)
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self.core.tasks.add(loop.create_task(self._record_refusal(path, builder, session_id, reason)))

    async def _record_refusal(self, path: str, builder: str | None, session_id: str | None, reason: str) -> None:
        import time

        at = time.time()
        try:
            await self.core.store.write(lambda tx: tx.append_event(
                "transcript_refused", builder, session_id, at, {"path": path, "reason": reason}))
        except Exception as e:  # the store is closing: the log line stays
            log.debug("transcript_refused not recorded: %s", e)
            return
        await self.core.bus.publish()

    def _dirs_file(self) -> str:
        return os.path.join(os.fspath(self.core.home.root), "tail-dirs.json")

    def _load_dirs(self) -> dict[str, str]:
        try:
            data = msgspec.json.decode(read_regular(self._dirs_file(), follow=False))
            return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
        except (OSError, msgspec.DecodeError):
            return {}

    def add_dir(self, path: str, builder: str) -> int:
        """Follow every transcript in folder ``path`` for ``builder``, now and as they appear;
        returns how many files it holds now. Persisted across restarts."""
        from hookd.config import atomic_write

        path = os.path.abspath(path)
        if self._dirs.get(path) != builder:
            self._dirs[path] = builder
            atomic_write(Path(self._dirs_file()), msgspec.json.encode(self._dirs), mode=0o600)
        n = self._scan(path)
        if self._changed is not None:
            self._changed.set()
        return n

    def _scan(self, folder: str) -> int:
        builder = self._dirs[folder]
        found = sorted(glob.glob(os.path.join(glob.escape(folder), "*.jsonl"))
                       + glob.glob(os.path.join(glob.escape(folder), "*", "subagents", "*.jsonl")))
        for f in found:
            if os.path.abspath(f) not in self._targets:
                self.add(f, builder)
        return len(found)

    async def _cursor(self, path: str) -> Cursor:
        c = self._cursors.get(path)
        if c is not None:
            return c
        try:
            st = os.stat(path)
        except OSError:
            return Cursor(path)
        saved, _ = await self.core.store.write(lambda tx: tx.sessions.transcript_cursor(st.st_dev, st.st_ino))
        c = Cursor(path, st.st_dev, st.st_ino, saved[1], saved[4]) if saved else Cursor(path)
        self._cursors[path] = c
        return c

    async def poll(self, path: str) -> int:
        """Read and apply what was appended to ``path``; returns the rows read."""
        import asyncio

        lock = self._locks.setdefault(path, asyncio.Lock())
        total = 0
        async with lock:
            builder, sid = self._targets.get(path, (None, None))
            if builder is None:
                return 0
            while True:
                cur = await self._cursor(path)
                try:
                    # what an agent appended since the last read (a few rows) is read on the
                    # loop: a trip to a thread costs more than the read; a catch-up in a thread
                    r = read_new(cur) if _small_read(cur) else await asyncio.to_thread(read_new, cur)
                except NotRegularFile as e:
                    self._refuse(path, builder, sid, f"{e.strerror}")
                    return total
                except OSError as e:
                    log.warning("cannot read transcript %s: %s", path, e)
                    return total
                self._refused.pop(path, None)
                if r.cursor != cur or r.rows:
                    await self.core.apply_transcript(path, builder, sid, r)
                    self._cursors[path] = r.cursor
                    total += len(r.rows)
                if not r.more:
                    return total

    async def _peek(self, path: str) -> bool:
        """``path`` is a ``*.jsonl`` beside a followed transcript but not itself followed: read
        its new rows' session ids (not their meaning: :func:`_peek_read`); when one belongs to
        a session hookd knows, follow the file for that session's builder from its start and
        return True.
        Field case B23: after compaction the hooks' ``transcript_path`` can freeze while the
        session writes to another file in the same folder; a newest-file guess without a
        session id would pick up a concurrent session's file (B25), so only the id counts."""
        import asyncio

        try:
            cur, sids = await asyncio.to_thread(_peek_read, self._foreign.get(path, Cursor(path)))
        except OSError:
            return False
        self._foreign[path] = cur
        known = await self.core.store.session_builders(sids)
        if not known:
            if sids:  # another session's file: from now on only its new rows are checked
                with contextlib.suppress(OSError):
                    st = os.stat(path)
                    if (st.st_dev, st.st_ino) == (cur.dev, cur.ino):
                        self._foreign[path] = Cursor(path, st.st_dev, st.st_ino, max(st.st_size, cur.offset))
            return False
        sid = next(s for s in sids if s in known)
        del self._foreign[path]
        self.add(path, known[sid], sid)
        await self.core.transcript_followed(path, known[sid], sid)
        await self.poll(path)
        return True

    async def _peek_newer(self, subagents: Iterable[str]) -> None:
        """At each watch set (at start, again after a restart or a failure): check the files
        not followed yet beside each followed transcript that changed no earlier than the
        oldest followed one of their folder, and every file in ``subagents`` (the followed
        sessions' ``subagents`` folders that exist: the daemon may have been down, or its
        watch, when a session moved to another file or started a subagent). A file
        :meth:`_peek` has read to its end is not read again (a ``stat`` each)."""
        folders: dict[str, float] = {}
        for p in list(self._targets):
            try:
                m = os.stat(p).st_mtime
            except OSError:
                continue
            d = os.path.dirname(p)
            folders[d] = min(folders.get(d, m), m)
        beside: list[tuple[str, float | None]] = list(folders.items())
        beside += [(d, None) for d in sorted(subagents)]
        for d, oldest in beside:
            for f in glob.glob(os.path.join(glob.escape(d), "*.jsonl")):
                f = os.path.abspath(f)
                if f in self._targets:
                    continue
                try:
                    st = os.stat(f)
                except OSError:
                    continue
                # (>=: a change within the clock's tick of the oldest is looked at)
                if (oldest is None or st.st_mtime >= oldest) and not self._peeked_to_end(f, st):
                    await self._peek(f)

    def _peeked_to_end(self, path: str, st: os.stat_result) -> bool:
        """Whether :meth:`_peek` has read ``path``, as ``st`` finds it, to its end."""
        cur = self._foreign.get(path)
        return cur is not None and (cur.dev, cur.ino) == (st.st_dev, st.st_ino) and cur.offset == st.st_size

    @property
    def settled(self) -> bool:
        """Whether the watch is set for the files followed now, caught up, and no new watch is
        due (a file newly followed makes one, with a read of every followed file)."""
        return self._watching and self._changed is not None and not self._changed.is_set()

    async def catch_up(self) -> int:
        rows = 0
        for path in list(self._targets):
            rows += await self.poll(path)
        return rows

    async def run(self, stop: Any) -> None:
        """Catch up, then follow changes until ``stop`` (an asyncio.Event) is set."""
        import asyncio

        from watchfiles import Change

        from hookd.watchers.watch import awatch_dirs, ended, started

        self._changed = asyncio.Event()
        for path, builder, sid in await self.core.store.transcript_targets():
            self.add(path, builder, sid)
        while not stop.is_set():
            self._watching = False
            self._changed.clear()
            for folder in list(self._dirs):
                if os.path.isdir(folder):
                    self._scan(folder)
            self._changed.clear()
            exact = {os.path.dirname(p) for p in self._targets if os.path.isdir(os.path.dirname(p))}
            exact |= {d for d in self._dirs if os.path.isdir(d)}
            exact |= {os.path.join(d, e) for d in self._dirs if os.path.isdir(d)
                      for e in os.listdir(d) if os.path.isdir(os.path.join(d, e))}
            # a transcript whose folder does not exist yet: watch its nearest existing ancestor
            # and start over when something appears there
            subagents = _subagents_dirs(self._targets)
            exact |= {d for d in subagents if os.path.isdir(d)}
            missing = ({os.path.dirname(p) for p in self._targets} | subagents | set(self._dirs)) - exact
            ancestors = {m: _existing_ancestor(m) for m in missing}
            standins = {a for a in ancestors.values() if a is not None}
            dirs = sorted(exact | standins)
            restart = asyncio.Event()
            waiter = asyncio.ensure_future(_first(stop, self._changed))
            waiter.add_done_callback(lambda _: restart.set())
            changes_gen: Any = None
            nxt: Any = None
            try:
                if not dirs:
                    await self.catch_up()
                    await restart.wait()
                    continue
                changes_gen = awatch_dirs(
                    *dirs, stop_event=restart, debounce=self.debounce_ms, step=self.step_ms,
                    backend=self.watch_backend, ignore=self._taken, gate=self._gate,
                    rust_timeout=60_000, ignore_permission_denied=True,
                )
                nxt = await started(changes_gen)
                # then list the followed folders again (a file that appeared after the listing
                # above and before the watch gave no event) and catch up, so that nothing
                # written in between is missed
                for folder in list(self._dirs):
                    if os.path.isdir(folder):
                        self._scan(folder)
                await self.catch_up()
                # and the files beside the followed ones, at every watch: one made before this
                # watch covered its folder, or whose event went with the watch before (set up
                # again, or failed), gave this one no event
                await self._peek_newer(subagents & exact)
                beside = {os.path.dirname(p) for p in self._targets} | subagents
                if any(_existing_ancestor(m) != a for m, a in ancestors.items()):
                    # a folder on the way to a transcript appeared before its parent's watch was
                    # set (no event for it): watch again from there
                    self._changed.set()
                self._watching = True
                while True:
                    try:
                        changes = await nxt
                    except StopAsyncIteration:
                        break
                    gone = {os.path.abspath(p) for kind, p in changes if kind == Change.deleted}
                    judged = {os.path.abspath(p) for kind, p in changes if kind == Change.modified}
                    for path in sorted({os.path.abspath(p) for _, p in changes}):
                        if path in gone and path in dirs:
                            # a watched folder went, and its watch with it: what is made there
                            # again gives no event; watch again (from its nearest ancestor)
                            self._changed.set()
                        elif path in self._targets:
                            # a modification was judged as the watch took it (_taken): to read now
                            if path in judged or not self._quiet.defer(path, self._targets[path][1]):
                                await self.poll(path)
                        elif path.endswith(".jsonl") and os.path.dirname(path) in beside:
                            await self._peek(path)
                        elif (path.endswith(".jsonl") or os.path.isdir(path)) and any(
                                path.startswith(d + os.sep) for d in self._dirs):
                            self._changed.set()  # a new transcript (or session folder) in a followed folder
                        elif os.path.dirname(path) in standins and any(
                                m == path or m.startswith(path + os.sep) for m in missing):
                            self._changed.set()  # a folder appeared on the way to a transcript
                    nxt = changes_gen.__anext__()  # (awaited as it is: a task only for the first)
            except Exception:
                log.exception("transcript watch failed; restarting")
                await ended(changes_gen, nxt)  # its inotify fd released now, not when collected
                await asyncio.sleep(WATCH_RETRY_S)  # back off before watching again
            finally:
                waiter.cancel()
        await self._quiet.flush()  # stopping: what waited for its session's hooks to go quiet


#: seconds the tailer waits before watching again after its watch failed
WATCH_RETRY_S = 1.0
#: bytes of a not-followed file checked for session ids per read (its first rows name the session)
PEEK_BYTES = 64 * 1024
#: Most unread bytes of a followed file read on the event loop (:meth:`Tailer.poll`); more
#: (a catch-up, a long tool output's row) is read in a thread.
INLINE_READ_BYTES = 256 * 1024


def _peek_read(cur: Cursor) -> tuple[Cursor, list[str]]:
    """Read a not-followed file on from ``cur`` (in a thread) until a row names a session, or
    up to the size the file had when this began (what is written later brings its own
    change); a first row longer than one read (PEEK_BYTES) is read past. Returns the advanced
    cursor and the session ids the rows read name, sorted. Raises OSError as
    :func:`hookd.watchers.jsonl.read_new` does."""
    try:
        limit = os.stat(cur.path).st_size
    except FileNotFoundError:
        return cur, []
    while True:
        r = read_new(cur, PEEK_BYTES)
        cur = r.cursor
        sids = sorted({s for s in (_row_session(row) for row in r.rows) if s})
        if sids or not r.more or cur.offset >= limit:
            return cur, sids


def _small_read(cur: Cursor) -> bool:
    """The next :func:`read_new` of ``cur`` has at most :data:`INLINE_READ_BYTES` to read, as
    far as a ``stat`` tells (a missing or unreadable file: nothing to read; a file another
    one replaced, or truncated: read from its start)."""
    try:
        st = os.stat(cur.path)
    except OSError:
        return True
    same = (st.st_dev, st.st_ino) == (cur.dev, cur.ino) and st.st_size >= cur.offset
    return st.st_size - (cur.offset if same else 0) <= INLINE_READ_BYTES


def _subagents_dir(transcript: str) -> str | None:
    """Where Claude Code 2.1.332 writes the subagent transcripts of the session whose
    transcript is ``transcript`` (``<folder>/<session id>/subagents/``); None for a file that
    is itself a subagent's."""
    folder, name = os.path.split(transcript)
    if not name.endswith(".jsonl") or os.path.basename(folder) == "subagents":
        return None
    return os.path.join(folder, name[: -len(".jsonl")], "subagents")


def _row_session(row: Any) -> str | None:
    sid = row.get("sessionId") if isinstance(row, dict) else None
    return sid if isinstance(sid, str) else None


def _is_claw_sessions_dir(path: str) -> bool:
    """``path`` has the shape of claw's sessions folder, ``<cwd>/.claw/sessions/<fp>``."""
    sessions = os.path.dirname(path)
    return os.path.basename(sessions) == "sessions" and os.path.basename(os.path.dirname(sessions)) == ".claw"


def _subagents_dirs(transcripts: Iterable[str]) -> set[str]:
    """The subagent folders (:func:`_subagents_dir`) of those of ``transcripts`` that have one."""
    return {d for d in map(_subagents_dir, transcripts) if d is not None}


def _existing_ancestor(path: str) -> str | None:
    while path and not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return path or None


async def _first(*events: Any) -> None:
    """Return when any of ``events`` is set."""
    import asyncio

    tasks = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
