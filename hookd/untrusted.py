"""Bytes, text and files hookd did not make: decoded, shown and opened without harm.

- :func:`decode_json`: JSON that Node's ``JSON.stringify`` wrote. A string cut mid-emoji
  (the model's tool input, Claude Code 2.1.332 passes it on: docs/harness-claude-code.md)
  is serialised with a lone UTF-16 surrogate escape (``"... \\ud83d"``), which msgspec
  refuses; such an escape decodes as U+FFFD instead of failing the whole document.
- :func:`visible`: text for a human's terminal (or a desktop notification). C0 and C1
  control characters, DEL and the bidirectional overrides and isolates are shown as escapes
  (``\\x1b``, ``\\u202e``), so agent-written text cannot clear the screen, set a window title,
  hide words or reorder a line.
- :func:`open_regular` / :func:`read_regular`: open a path that someone else may have
  placed (a transcript, a spool file, a settings file, config.toml) without blocking (a FIFO
  is never waited on: ``O_NONBLOCK``), optionally without following a symlink
  (``O_NOFOLLOW``), and refuse anything but a regular file, checked on the descriptor
  (:class:`NotRegularFile`).

Pure helpers (no environment, no logging): usable from the harness adapters.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import Any

# --- JSON with lone surrogates ----------------------------------------------------------------

#: A backslash escape in a JSON string: a surrogate pair, a lone surrogate, or any other
#: escape (consumed whole, so that ``\\\\ud83d``, an escaped backslash, is never taken for one).
_ESCAPE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a pair: kept
    rb"|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})"  # a lone surrogate (group 1): replaced
    rb"|\\.", re.DOTALL)


_ESCAPE_STR = re.compile(_ESCAPE.pattern.decode(), re.DOTALL)


def _fix(m: re.Match[bytes]) -> bytes:
    return b"\\ufffd" if m.group(1) else m.group(0)


def _fix_str(m: re.Match[str]) -> str:
    return "\\ufffd" if m.group(1) else m.group(0)


def without_lone_surrogates(raw: bytes) -> bytes:
    """``raw`` (JSON text) with every lone UTF-16 surrogate escape replaced by ``\\ufffd``;
    surrogate pairs, escaped backslashes and every other byte unchanged."""
    return _ESCAPE.sub(_fix, raw)


def text_without_lone_surrogates(text: str) -> str:
    """:func:`without_lone_surrogates` for JSON text held in a ``str``."""
    return _ESCAPE_STR.sub(_fix_str, text) if "\\u" in text else text


def has_surrogate_escape(raw: bytes | bytearray) -> bool:
    return b"\\ud" in raw or b"\\uD" in raw


def decode_json(raw: bytes | bytearray | memoryview | str, type: Any = Any) -> Any:
    """``msgspec.json.decode(raw, type=type)``, except that a lone surrogate escape decodes
    as U+FFFD. Raises msgspec.DecodeError / ValidationError (and RecursionError) exactly as
    msgspec does for anything else."""
    import msgspec  # here: the CLI's output helpers (visible) need no JSON decoder

    try:
        return msgspec.json.decode(raw, type=type)
    except msgspec.DecodeError:
        data = raw.encode("utf-8", "replace") if isinstance(raw, str) else bytes(raw)
        if not has_surrogate_escape(data):
            raise
        fixed = without_lone_surrogates(data)
        if fixed == data:
            raise
    return msgspec.json.decode(fixed, type=type)


# --- text for a terminal ------------------------------------------------------------------

#: Bidirectional embeddings, overrides and isolates (U+202A-202E, U+2066-2069) and the marks
#: (U+061C, U+200E, U+200F): they reorder what a reader sees.
BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x061C, 0x200E, 0x200F)
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
_VISIBLE: dict[int, str] = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))},
    **_NAMED,
    **{c: f"\\u{c:04x}" for c in BIDI},
}
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


_JSON_RAW = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), *BIDI)}


def json_escape_visible(json_text: str) -> str:
    """Encoded JSON with the characters JSON leaves raw but a terminal may act on (DEL, C1,
    bidi controls: C0 is escaped by every encoder) as ``\\uXXXX`` escapes: it decodes to
    exactly the same values. (Those characters occur only inside JSON strings.)"""
    return json_text.translate(_JSON_RAW)


def visible(text: Any) -> str:
    """``str(text)`` safe to print to a terminal: control characters (C0, DEL, C1: ESC
    sequences, BEL, backspace, newlines and tabs too), bidi controls and lone surrogates are
    written as visible escapes (``\\x1b``, ``\\n``, ``\\u202e``, ``\\udc80``); every other
    character is kept. Idempotent. None is ``"None"``: callers render their own ``-``."""
    s = text if isinstance(text, str) else str(text)
    if not _UNSAFE.search(s):
        return s
    s = s.translate(_VISIBLE)
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", s)


# --- files ------------------------------------------------------------------------------------

class NotRegularFile(OSError):
    """The path names something other than a regular file (a FIFO, a device, a socket, a
    directory, or a symlink where none is followed). ``kind``: what it is, in words."""

    def __init__(self, path: Any, kind: str):
        super().__init__(errno.EINVAL, f"{kind}, not a regular file; not read", os.fspath(path))
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.filename} is {self.strerror}"


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words (``a FIFO``, ``a character device``, ...)."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "a special file"


def open_regular(path: str | os.PathLike[str], *, follow: bool = True) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only without blocking and return ``(fd, fstat of fd)``; the caller
    closes the fd. follow: False adds ``O_NOFOLLOW`` (a symlink is refused). Raises
    NotRegularFile (an OSError) for anything but a regular file, FileNotFoundError and other
    OSErrors as ``os.open`` does. Never waits for a FIFO's writer or a device."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    if not follow:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if not follow and e.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW met a symlink (EMLINK: FreeBSD)
            raise NotRegularFile(path, "a symlink") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, file_kind(st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular(path: str | os.PathLike[str], *, follow: bool = True, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit`` of them, from its start),
    opened with :func:`open_regular` (same errors). Blocks only on the disk: call it off the
    event loop for files that may be large."""
    fd, st = open_regular(path, follow=follow)
    try:
        want = st.st_size if limit is None else min(st.st_size, limit)
        chunks = []
        while True:
            chunk = os.read(fd, max(want, 64 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            if limit is not None and sum(map(len, chunks)) >= limit:
                break
        data = b"".join(chunks)
        return data if limit is None else data[:limit]
    finally:
        os.close(fd)
