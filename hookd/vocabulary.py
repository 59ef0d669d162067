"""hookd's words for how things stand, shared by the core, the API, the page and the CLI:
interaction states and outcomes (DESIGN.md "Interactions", docs/events.md "One vocabulary"),
where an answer came from, and who answers by default (the OS user).

Plain Python (no msgspec): the CLI's read path (``hookd questions``) renders with these
without loading the record shapes of :mod:`hookd.models`, which re-exports every name here.
"""

from __future__ import annotations

import functools
from typing import Literal

# Interaction lifecycle (DESIGN.md "Interactions"): pending -> one terminal state.
InteractionState = Literal[
    "pending", "answered", "dismissed", "denied", "empty", "expired", "superseded", "orphaned"
]
TERMINAL_STATES = ("answered", "dismissed", "denied", "empty", "expired", "superseded", "orphaned")


#: How an interaction stands, in the words the CLI, the API (``outcome``), the page and the
#: docs use (docs/events.md "One vocabulary"): the stored ``state``, except that a permission
#: prompt answered (stored ``answered`` with ``decision``) is ``allowed`` or ``denied``.
OUTCOMES = ("pending", "answered", "allowed", "denied", "dismissed", "empty", "expired", "superseded", "orphaned")

#: Where an answer came from (the stored ``surface``) -> the words shown for it.
SURFACE_TEXT = {
    "terminal": "at the desk",
    "cli": "from the CLI",
    "web": "on the page",
    "api": "through the API",
    "hook": "in advance",  # ("answered in advance by ana"; "already answered in advance")
    "default": "as the builder's default answer",
    "hub": "from the fleet's hub",  # (an operator's answer applied by hookd.hub.commands; actor: the hub role)
}


#: Interaction kinds answered with a decision (``allow`` | ``deny``) through a held permission
#: prompt's hook: a tool's ``permission`` and a ``plan`` approval (hookd.core.plans).
PROMPT_KINDS = ("permission", "plan")
#: Interaction kinds answered with a decision, not with answers to questions: the
#: :data:`PROMPT_KINDS` and an MCP ``elicitation`` (``accept`` | ``decline`` | ``cancel``, with
#: its form's content; hookd.core.elicitations).
DECISION_KINDS = (*PROMPT_KINDS, "elicitation")


def outcome_of(kind: str, state: str, decision: str | None) -> str:
    """The word for how an interaction stands (one of :data:`OUTCOMES`): ``allowed`` /
    ``denied`` for a permission prompt's (or a plan's) decision, else its ``state``."""
    if kind in PROMPT_KINDS and state == "answered" and decision in ("allow", "deny"):
        return "allowed" if decision == "allow" else "denied"
    return state


def by_text(surface: str | None, actor: str | None) -> str | None:
    """Who answered, where, in words: ``"from the CLI by ana"``, ``"at the desk"``, ``"by
    ana"``; None when neither is known. An unknown surface is ``"via <surface>"``."""
    where = (SURFACE_TEXT.get(surface) or f"via {surface}") if surface else None
    words = [w for w in (where, f"by {actor}" if actor else None) if w]
    return " ".join(words) or None


@functools.cache
def os_user() -> str:
    """The name of the user this process runs as (the password database's entry for the uid,
    else ``getpass.getuser()``, else ``uid <n>``): the default actor and author of what a
    human sends through the CLI, the API and the page (the daemon and its CLI run as one user).
    Looked up once per process."""
    import os

    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        pass
    try:
        import getpass

        return getpass.getuser()
    except Exception:  # (no LOGNAME/USER and no passwd entry)
        return f"uid {os.getuid()}"


def resolved_event(kind: str) -> str:
    """The event that ends an interaction of ``kind``: ``permission_resolved`` (a permission
    prompt or a plan), ``elicitation_resolved`` or ``question_resolved``."""
    if kind == "elicitation":
        return "elicitation_resolved"
    return "permission_resolved" if kind in PROMPT_KINDS else "question_resolved"
