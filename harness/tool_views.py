"""A tool call as a person reads it: harness-neutral views (:class:`hookd.harness.base.ToolView`)
and the rules that mark a shell command as destructive-looking.

Adapters map their own tool names and input fields onto these builders (an adapter's
``present_tool``): a shell command (:func:`command_view`), a change to a file as a diff
(:func:`edit_view`, :func:`multi_edit_view`, :func:`write_view`), a URL (:func:`url_view`), and
anything else as compact JSON (:func:`json_view`). Every view is built from the tool input
alone: no file is read (a Write's view shows the new content, not a diff against the file on
disk; ``docs/decisions.md`` "A permission prompt as a person reads it").

A command is marked destructive by the rules of :mod:`hookd.harness.destructive`.

Pure: no I/O. Depends only on :mod:`hookd.harness.base` and :mod:`hookd.harness.destructive`.
"""

from __future__ import annotations

import difflib
from typing import Any

import msgspec

from hookd.harness import destructive
from hookd.harness.base import ToolView

#: Most characters of a view's ``detail`` (the rest is cut, the cut said on a last line).
DETAIL_MAX = 20_000
#: Most characters of a view's ``summary`` (one line).
SUMMARY_MAX = 160
#: Most lines of either side that are aligned into a diff (past it, every old line is shown
#: removed and every new line added: aligning is quadratic, and the event loop must not wait).
DIFF_LINES_MAX = 400

_enc = msgspec.json.Encoder(order="deterministic")

# --- views ------------------------------------------------------------------------------------

def one_line(text: str, limit: int = SUMMARY_MAX) -> str:
    """The first non-blank line of ``text``, stripped, cut to ``limit`` characters (``…``),
    with `` (+N lines)`` when more lines follow."""
    lines = [x.strip() for x in text.splitlines()]
    nonblank = [x for x in lines if x]
    if not nonblank:
        return ""
    first = nonblank[0]
    more = len(nonblank) - 1
    tail = f" (+{more} line{'s' if more != 1 else ''})" if more else ""
    if len(first) + len(tail) > limit:
        first = first[:max(1, limit - len(tail) - 1)] + "…"
    return first + tail


def _cut(detail: str) -> str:
    if len(detail) <= DETAIL_MAX:
        return detail
    rest = detail[DETAIL_MAX:]
    return detail[:DETAIL_MAX] + f"\n… ({len(rest)} more characters, {rest.count(chr(10))} more lines not shown)"


def json_view(tool_input: Any) -> ToolView:
    """Any tool: its input as compact JSON (keys in a stable order); never destructive."""
    try:
        compact = _enc.encode(tool_input).decode()
    except (TypeError, ValueError, OverflowError):
        compact = repr(tool_input)
    return ToolView(kind="json", summary=one_line(compact), detail=_cut(compact), destructive=False)


def command_view(command: Any, description: Any = None) -> ToolView:
    """A shell command: summary its ``description`` (when the agent gave one) or its first
    line; detail the whole command; destructive when a rule matches
    (:func:`hookd.harness.destructive.reasons`). A command that is not a string: :func:`json_view`-like
    text of it, marked destructive (nobody can read what it does)."""
    if not isinstance(command, str):
        v = json_view(command)
        return ToolView(kind="command", summary=v.summary, detail=v.detail, destructive=True)
    desc = one_line(description) if isinstance(description, str) else ""
    return ToolView(kind="command", summary=desc or one_line(command), detail=_cut(command),
                    destructive=destructive.is_destructive(command))


def _hunk(old: str, new: str) -> list[str]:
    """The body of a diff from ``old`` to ``new`` (``-``, ``+`` and `` `` lines; no headers,
    no line numbers: the strings are parts of a file, not the file)."""
    a, b = old.splitlines(), new.splitlines()
    if len(a) > DIFF_LINES_MAX or len(b) > DIFF_LINES_MAX:
        return ["-" + x for x in a] + ["+" + x for x in b]
    out = []
    for line in difflib.unified_diff(a, b, n=max(len(a), len(b)), lineterm=""):
        if line.startswith(("---", "+++", "@@")):
            continue
        out.append(line)
    return out or [" " + x for x in a]  # the same text: nothing changes


def _path(path: Any) -> str:
    return path if isinstance(path, str) and path else "(no file named)"


def edit_view(path: Any, old: Any, new: Any, replace_all: Any = False) -> ToolView:
    """A replacement of ``old`` by ``new`` in the file at ``path``: a diff of the two strings
    under ``--- path`` / ``+++ path`` headers (no line numbers: where in the file is not in
    the input). Non-string fields: :func:`json_view` of them all."""
    if not isinstance(old, str) or not isinstance(new, str):
        return json_view({"file_path": path, "old_string": old, "new_string": new})
    p = _path(path)
    every = " (every occurrence)" if replace_all is True else ""
    return ToolView(kind="diff", summary=one_line(f"Edit {p}{every}"),
                    detail=_cut("\n".join([f"--- {p}", f"+++ {p}", *_hunk(old, new)])), destructive=False)


def multi_edit_view(path: Any, edits: Any) -> ToolView:
    """Several replacements in one file, applied in order: each one's diff after an
    ``@@ edit k of n @@`` line (``(every occurrence)`` when it replaces all). Edits that are
    not ``{"old_string", "new_string"}`` objects: :func:`json_view`."""
    if not isinstance(edits, list) or not edits or not all(
            isinstance(e, dict) and isinstance(e.get("old_string"), str) and isinstance(e.get("new_string"), str)
            for e in edits):
        return json_view({"file_path": path, "edits": edits})
    p = _path(path)
    lines = [f"--- {p}", f"+++ {p}"]
    for k, e in enumerate(edits, 1):
        lines.append(f"@@ edit {k} of {len(edits)}{' (every occurrence)' if e.get('replace_all') is True else ''} @@")
        lines += _hunk(e["old_string"], e["new_string"])
    n = len(edits)
    return ToolView(kind="diff", summary=one_line(f"Edit {p} ({n} edit{'s' if n != 1 else ''})"),
                    detail=_cut("\n".join(lines)), destructive=False)


def write_view(path: Any, content: Any) -> ToolView:
    """The whole new content of the file at ``path``, every line added (``+++ path``); the
    summary says that it replaces the file if there is one (the file on disk is not read)."""
    if not isinstance(content, str):
        return json_view({"file_path": path, "content": content})
    p = _path(path)
    n = len(content.splitlines())
    summary = f"Write {p} ({n} line{'s' if n != 1 else ''}; replaces the file if it exists)"
    return ToolView(kind="diff", summary=one_line(summary),
                    detail=_cut("\n".join([f"+++ {p}", *("+" + x for x in content.splitlines())])),
                    destructive=False)


def url_view(url: Any, prompt: Any = None) -> ToolView:
    """A URL the agent would fetch: summary the URL; detail the URL on its first line, then
    the agent's ``prompt`` about it (if any) after a blank line. A URL that is not a string:
    :func:`json_view`."""
    if not isinstance(url, str):
        return json_view({"url": url, "prompt": prompt})
    detail = url + (f"\n\n{prompt}" if isinstance(prompt, str) and prompt else "")
    return ToolView(kind="url", summary=one_line(url), detail=_cut(detail), destructive=False)


def field(tool_input: Any, *names: str) -> Any:
    """The first of ``names`` present in ``tool_input`` (a dict), else None."""
    if isinstance(tool_input, dict):
        for n in names:
            if n in tool_input:
                return tool_input[n]
    return None
