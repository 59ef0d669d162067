"""The harness registry: which adapter serves each harness name, and which reads each transcript.

The core finds adapters only here (a hook route's ``{harness}``, a spool file's name, a
builder's manifest name one of :data:`ADAPTERS`); it knows them only as
:class:`hookd.harness.base.Adapter` / :class:`hookd.harness.base.TranscriptReader`. Adding a
harness: its module under ``harness/`` plus its line here (``docs/architecture.md``
"Harness adapters").
"""

from __future__ import annotations

from typing import Any

from hookd.harness import claude_code, claw, claw_http, codex, tool_views
from hookd.harness.base import Adapter, ToolView, TranscriptReader

#: harness name -> its adapter (the names of the hook routes ``/v1/hooks/{harness}/...`` and of
#: spooled payloads ``<id>.<harness>.json``; claw-code-go is claw with flat-string settings).
ADAPTERS: dict[str, Adapter] = {
    claude_code.HARNESS: claude_code,
    claw.HARNESS: claw,
    claw.FLAT_HARNESS: claw,
    claw_http.HARNESS: claw_http,
    codex.HARNESS: codex,
}

#: The harness of a spooled payload whose file name names none (``<id>.json``: hook clients
#: older than claw support spooled only Claude Code's hooks).
DEFAULT_HARNESS = claude_code.HARNESS

#: The transcript readers, asked in this order; the last one reads any file the others do not
#: claim (:func:`reader_of`): claw's by its folder, Codex's rollouts by name.
READERS: tuple[TranscriptReader, ...] = (claw, codex, claude_code)


def reader_of(path: str) -> TranscriptReader:
    """The reader of the transcript at ``path``: the first of :data:`READERS` whose
    ``is_transcript`` claims it (claw's by its ``.claw/sessions/<fp>/`` folder), else the last
    (Claude Code's)."""
    return next((r for r in READERS[:-1] if r.is_transcript(path)), READERS[-1])


def present_tool(harness: str | None, tool_name: str | None, tool_input: Any) -> ToolView:
    """A tool call as a person reads it: the ``present_tool`` of ``harness``'s adapter (a
    session's harness name); compact JSON (:func:`hookd.harness.tool_views.json_view`) when
    the harness is unknown or None."""
    adapter = ADAPTERS.get(harness) if harness is not None else None
    return adapter.present_tool(tool_name, tool_input) if adapter is not None else tool_views.json_view(tool_input)


#: harness name -> the version of it whose behaviour the adapter was checked against (its
#: adapter's ``version``; docs/harness-claude-code.md, docs/harness-codex.md): `hookd doctor`
#: compares the installed program's ``--version`` with it. A harness missing here has no
#: pinned version (claw's builds carry none).
KNOWN_VERSIONS: dict[str, str] = {name: a.version for name, a in ADAPTERS.items() if a.version is not None}
