"""Incremental, fault-tolerant reading of JSONL transcripts (DESIGN.md "Transcript tailing").

:func:`read_new` reads what was appended to one file since a :class:`Cursor` and returns the
complete rows. The cursor is the file's identity (device + inode) and a byte offset that only
ever advances past a newline, so a row still being written is read whole on a later call.
Damaged lines are salvaged or skipped, counted in :class:`TailStats`, never fatal:

- NUL padding (what a crash mid-write can leave): runs of NUL bytes split a line into parts;
- spliced rows (``{...}{...}`` on one line, two writers): each object is kept;
- invalid UTF-8 (a 0xFF byte): decoded with replacement characters, then parsed;
- a lone UTF-16 surrogate escape (``"\\ud83d"``: Node's JSON of a string cut mid-emoji):
  read as U+FFFD;
- torn rows (a fragment that is no JSON object): skipped.

Truncation (the file shrank below the offset) restarts at 0; rotation (another inode at the
path) starts the new file at 0. A file rewritten under the same identity (in place, or removed
and made again on an inode number the file system gave out again) is told by the bytes just
before the offset, kept in the cursor from the last read (:attr:`Cursor.tail`): when they
differ the file is read from 0, counted as truncated. Pure I/O over one path; what rows mean
is the harness adapter's business (:func:`hookd.harness.claude_code.transcript_observations`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from hookd.untrusted import decode_json, open_regular, without_lone_surrogates

#: Most bytes read per call (a catch-up reads a big file in several calls).
READ_CHUNK = 8 * 1024 * 1024
#: Bytes before a cursor's offset it keeps (:attr:`Cursor.tail`): a row's end (its uuid and
#: timestamp in a Claude Code transcript) tells one file's bytes from another's.
TAIL_BYTES = 64
_NULS = re.compile(rb"\x00+")
_decoder = json.JSONDecoder()


@dataclass(frozen=True)
class Cursor:
    """Where reading of one file stands: identity (``dev``, ``ino``) and ``offset`` (bytes,
    just past a newline, or 0, or past a line longer than a whole read), and ``tail``: up to
    :data:`TAIL_BYTES` of the bytes just before ``offset`` as the last read found them (empty:
    not known, as for a cursor saved in the store; not compared: two cursors at one place are
    equal)."""

    path: str
    dev: int = 0
    ino: int = 0
    offset: int = 0
    tail: bytes = field(default=b"", compare=False, repr=False)


@dataclass
class TailStats:
    """Counts of what one read met (all ints)."""

    rows: int = 0
    nul_padded: int = 0
    spliced: int = 0
    invalid_utf8: int = 0
    torn: int = 0
    truncated: int = 0
    rotated: int = 0
    bytes: int = 0

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class ReadResult:
    rows: list[dict[str, Any]]
    cursor: Cursor
    stats: TailStats = field(default_factory=TailStats)
    more: bool = False  # READ_CHUNK was hit: call again


def salvage(line: bytes, stats: TailStats) -> list[dict[str, Any]]:
    """The JSON objects in one line (without its newline), salvaging what can be; counts in
    ``stats``."""
    out: list[dict[str, Any]] = []
    parts = [line]
    if b"\x00" in line:
        stats.nul_padded += 1
        parts = [p for p in _NULS.split(line)]
    for part in parts:
        part = part.strip()
        if not part:
            continue
        try:
            obj = decode_json(part)  # a lone surrogate (a string cut mid-emoji) reads as U+FFFD
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            if isinstance(obj, dict):
                out.append(obj)
            else:
                stats.torn += 1
            continue
        part = without_lone_surrogates(part)  # nor may the salvage below keep one
        try:
            text = part.decode("utf-8")
        except UnicodeDecodeError:
            stats.invalid_utf8 += 1
            text = part.decode("utf-8", "replace")
        objs, junk = _split_objects(text)
        if len(objs) > 1:
            stats.spliced += 1
        if junk:
            stats.torn += 1
        out.extend(objs)
    return out


def _split_objects(text: str) -> tuple[list[dict[str, Any]], bool]:
    """Every row object in ``text`` (spliced ``}{`` rows); junk is skipped. Returns
    (objects, whether junk was skipped).

    A row starts at the line's first ``{`` or right after another row. After junk (a torn
    row) the next row is the first ``{`` from which the rest of the line reads as whole rows:
    the objects nested inside a torn row (a message inside a ``progress`` row, a tool_use
    block) are never taken for rows of their own."""
    objs: list[dict[str, Any]] = []
    n = len(text)
    i = text.find("{")
    junk = bool(text[: i if i >= 0 else n].strip())
    if i < 0:
        return objs, junk
    while i < n:
        try:
            obj, end = _decoder.raw_decode(text, i)
        except ValueError:
            junk = True
            i = _restart(text, i + 1)
            continue
        if isinstance(obj, dict):
            objs.append(obj)
        i = _skip_ws(text, end)
        if i < n and text[i] != "{":
            junk = True
            i = _restart(text, i)
    return objs, junk


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _restart(text: str, start: int) -> int:
    """The first ``{`` at or after ``start`` from which the rest of ``text`` decodes as a
    sequence of objects; ``len(text)`` when there is none."""
    n = len(text)
    k = text.find("{", start)
    while k >= 0:
        i = k
        while i < n:
            try:
                _, end = _decoder.raw_decode(text, i)
            except ValueError:
                break
            i = _skip_ws(text, end)
            if i < n and text[i] != "{":
                break
        else:
            return k
        k = text.find("{", k + 1)
    return n


def read_new(cursor: Cursor, max_bytes: int = READ_CHUNK) -> ReadResult:
    """Read the rows appended to ``cursor.path`` since ``cursor``.

    Returns the rows of complete lines, the advanced cursor and the counts. A missing file
    gives no rows and the cursor unchanged; a file rewritten under its identity (the cursor's
    ``tail`` differs) no rows, the cursor at 0 and ``more``. Raises NotRegularFile (an OSError) when the path
    is not a regular file (a FIFO, a device, a directory: opened without blocking, checked on
    the descriptor, never read), OSError for other errors than a missing file (permissions):
    the caller logs and retries later.
    """
    stats = TailStats()
    try:
        fd, st = open_regular(cursor.path)
    except FileNotFoundError:
        return ReadResult([], cursor, stats)
    try:
        offset, tail = cursor.offset, cursor.tail
        if (st.st_dev, st.st_ino) != (cursor.dev, cursor.ino):
            if cursor.dev or cursor.ino:
                stats.rotated += 1
            offset, tail = 0, b""
        elif st.st_size < offset:
            stats.truncated += 1
            offset, tail = 0, b""
        data = b""
        if st.st_size > offset:
            size = min(max_bytes, st.st_size - offset)
            if tail:
                # the bytes before the offset, read with what follows: still the file read so far?
                data = os.pread(fd, len(tail) + size, offset - len(tail))
                if not data.startswith(tail):
                    # rewritten under the same identity: read from its start by the next call
                    # (which its caller sizes as a read from 0: in a thread when it is large)
                    stats.truncated += 1
                    return ReadResult([], Cursor(cursor.path, st.st_dev, st.st_ino, 0), stats, more=True)
                data = data[len(tail):]
            else:
                data = os.pread(fd, size, offset)
    finally:
        os.close(fd)
    end = data.rfind(b"\n")
    if end < 0:
        if len(data) >= max_bytes:
            # one line longer than a whole read: skip it rather than stall behind it
            stats.torn += 1
            return ReadResult([], _past(cursor.path, st, offset, tail, data), stats, more=True)
        return ReadResult([], Cursor(cursor.path, st.st_dev, st.st_ino, offset, tail), stats)
    complete = data[: end + 1]
    rows: list[dict[str, Any]] = []
    for line in complete.split(b"\n"):
        if line.strip(b" \t\r\x00"):
            rows.extend(salvage(line.rstrip(b"\r"), stats))
        elif b"\x00" in line:
            stats.nul_padded += 1
    stats.rows = len(rows)
    stats.bytes = len(complete)
    return ReadResult(rows, _past(cursor.path, st, offset, tail, complete), stats, more=len(data) >= max_bytes)


def _past(path: str, st: os.stat_result, offset: int, tail: bytes, read: bytes) -> Cursor:
    """The cursor past ``read``, the bytes read at ``offset`` (``tail``: those before it)."""
    after = read[-TAIL_BYTES:] if len(read) >= TAIL_BYTES else (tail + read)[-TAIL_BYTES:]
    return Cursor(path, st.st_dev, st.st_ino, offset + len(read), after)
