"""The harness registry: which adapter serves each harness name, and which reads each transcript.

The core finds adapters only here (a hook route's ``{harness}``, a spool file's name, a
builder's manifest name one of :data:`ADAPTERS`); it knows them only as
:class:`hookd.harness.base.Adapter` / :class:`hookd.harness.base.TranscriptReader`. Adding a
harness: its module under ``harness/`` plus its line here (``docs/architecture.md``
"Harness adapters").
"""

from __future__ import annotations

from hookd.harness import claude_code, claw, claw_http
from hookd.harness.base import Adapter, TranscriptReader

#: harness name -> its adapter (the names of the hook routes ``/v1/hooks/{harness}/...`` and of
#: spooled payloads ``<id>.<harness>.json``; claw-code-go is claw with flat-string settings).
ADAPTERS: dict[str, Adapter] = {
    claude_code.HARNESS: claude_code,
    claw.HARNESS: claw,
    claw.FLAT_HARNESS: claw,
    claw_http.HARNESS: claw_http,
}

#: The harness of a spooled payload whose file name names none (``<id>.json``: hook clients
#: older than claw support spooled only Claude Code's hooks).
DEFAULT_HARNESS = claude_code.HARNESS

#: The transcript readers, asked in this order; the last one reads any file the others do not
#: claim (:func:`reader_of`).
READERS: tuple[TranscriptReader, ...] = (claw, claude_code)


def reader_of(path: str) -> TranscriptReader:
    """The reader of the transcript at ``path``: the first of :data:`READERS` whose
    ``is_transcript`` claims it (claw's by its ``.claw/sessions/<fp>/`` folder), else the last
    (Claude Code's)."""
    return next((r for r in READERS[:-1] if r.is_transcript(path)), READERS[-1])
