"""hookd's own record shapes and errors (msgspec structs), shared by core, API and CLI.

Names follow DESIGN.md: hook events keep the harness's spelling (``PreToolUse``); hookd's
events are snake_case (``question_pending``).
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import msgspec

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
    "hook": "pre-answered",
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


class Event(msgspec.Struct, frozen=True):
    """One row of hookd's append-only event log.

    seq: monotonic integer, assigned at commit; at: UNIX time (seconds, float);
    kind: snake_case event name; data: kind-specific JSON object.
    """

    seq: int
    kind: str
    builder: str | None
    session_id: str | None
    at: float
    data: dict[str, Any]


class Selection(msgspec.Struct, frozen=True):
    """One question's answer, decoded against its options.

    labels: option labels chosen, in answer order; other: free text that matched no option
    ("Other"), verbatim; raw: the answer string exactly as the harness reported it.
    """

    question: str
    raw: str
    labels: list[str]
    other: str | None


class InteractionHead(msgspec.Struct, frozen=True):
    """The columns of an :class:`Interaction` the hook path decides on (whose call it is and
    where it stands) without reading its questions, input and answers: see
    :meth:`hookd.store.Tx.interaction_head_by_tool_use_id`."""

    id: str
    kind: str
    builder: str
    session_id: str | None
    tool_use_id: str | None
    state: str
    received_at: float | None


class Interaction(msgspec.Struct):
    """Something a human must answer (DESIGN.md "Interactions").

    kind: ``question`` (a native AskUserQuestion call), ``permission`` (a tool permission
    prompt, Claude Code PermissionRequest), ``async`` (asked through ``hookd mcp``'s
    ``ask_user_async``: the agent keeps working) or ``elicitation`` (a tool server asks for a
    form or a URL: an MCP elicitation; tool_name is the server's name, input
    ``{"server", "message", "mode", "url", "elicitation_id", "requested_schema"}``, decision
    ``accept`` | ``decline`` | ``cancel`` and answers the accepted content, field -> value).
    id: the harness's ``tool_use_id`` when the first observation carried it, else ``pr_…``
    (first seen through a PermissionRequest) or ``ask_…`` (async); questions: as asked
    (Claude Code ``tool_input.questions`` shape); answers: question text -> answer string
    exactly as the harness reports it (multi-select labels joined with ", "), or None.
    input: the tool input as shown to the human (permission and question); decision /
    message: a permission's ``allow`` | ``deny`` and the deny message.
    Four timestamps (UNIX seconds): created_at (requested), received_at (a remote answer
    accepted), delivered_at (a hook returned it, or its inbox message was delivered),
    adopted_at (proof the agent got it: the tool result carried it). delivered_via:
    ``PermissionRequest`` | ``PreToolUse`` | ``inbox``. revision: +1 on every change; an
    answer may name the revision it was made against.
    """

    id: str
    kind: Literal["question", "async", "permission", "plan", "elicitation"]
    builder: str
    session_id: str | None
    agent_id: str | None
    tool_name: str | None
    tool_use_id: str | None
    state: InteractionState
    questions: Any
    answers: dict[str, Any] | None
    selections: list[Selection] | None
    surface: str | None
    warning: str | None
    error: str | None
    created_at: float
    resolved_at: float | None
    revision: int
    input: Any = None
    input_hash: str | None = None
    decision: str | None = None
    message: str | None = None
    actor: str | None = None
    response_id: str | None = None
    expires_at: float | None = None
    received_at: float | None = None
    delivered_at: float | None = None
    delivered_via: str | None = None
    adopted_at: float | None = None
    inbox_message_id: str | None = None
    #: derived, never stored: :func:`outcome_of` (``allowed`` / ``denied`` for a permission
    #: prompt's decision, else ``state``) and :func:`by_text` (``"from the CLI by ana"``)
    outcome: str | None = None
    by: str | None = None

    def __post_init__(self) -> None:
        self.outcome = outcome_of(self.kind, self.state, self.decision)
        self.by = by_text(self.surface, self.actor)


class InboxMessage(msgspec.Struct, frozen=True):
    """A human-to-agent message queued for one builder (DESIGN.md "Inbox and delivery").

    id: ``m-<n>``; session_id / agent_id: scope (None: the main agent of any session);
    state: ``queued`` -> ``delivered`` (by ``delivered_hook_event_id``, ``delivered_via`` the
    hook event name) -> ``adopted`` (``adopted_via``: the proof) or ``cancelled``;
    deliveries: how often it was delivered (more than 1: redelivered, recognisable by its id in
    the text); times are UNIX seconds.
    """

    id: str
    builder: str
    session_id: str | None
    agent_id: str | None
    author: str
    text: str
    state: str
    created_at: float
    delivered_at: float | None
    delivered_hook_event_id: int | None
    delivered_session_id: str | None
    delivered_via: str | None
    deliveries: int
    adopted_at: float | None
    adopted_via: str | None
    cancelled_at: float | None
    idem_key: str | None


class AnswerPart(msgspec.Struct, forbid_unknown_fields=True):
    """One question's answer: option labels (in order) and/or free text ("Other")."""

    options: list[str] = []
    text: str | None = None


class AnswerRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/interactions/{id}/answer`` (and what ``hookd answer`` sends).

    answers: question text (or 1-based number, or "" for the only question) -> an option
    label or free text (string), labels (list), or :class:`AnswerPart`; or, for one question,
    question/options/text like the CLI flags. Permission prompts: decision ``allow`` | ``deny``
    (or one option) and message (or text) for deny. Elicitations: decision (or one option)
    ``accept`` | ``decline`` | ``cancel`` and, with accept, content (field -> value, checked
    against the requested schema). response_id: idempotency key; actor: who
    answers (free text, e.g. a user name); revision / input_hash: what the human saw (a
    mismatch is refused with 409); surface: ``cli`` | ``api`` | ``web``.
    """

    answers: dict[str, str | list[str] | AnswerPart] | None = None
    question: str | None = None
    options: list[str] = []
    text: str | None = None
    decision: str | None = None
    message: str | None = None
    content: dict[str, Any] | None = None
    response_id: str | None = None
    actor: str | None = None
    revision: int | None = None
    input_hash: str | None = None
    surface: str = "api"


class ErrorBody(msgspec.Struct, frozen=True, omit_defaults=True):
    code: str
    message: str
    #: the hook event id under which a refused hook's raw bytes were committed (a 4xx with
    #: header ``X-Hookd-Stored``: its client must not spool it); absent otherwise
    stored: int | None = None


class ErrorResponse(msgspec.Struct, frozen=True):
    """The one JSON error shape of every API route: ``{"error": {"code", "message"}}``."""

    error: ErrorBody


class HookdError(Exception):
    """Base error. ``code`` is machine-readable, ``status`` the HTTP status, ``exit_code``
    the CLI exit status."""

    code = "error"
    status = 500
    exit_code = 1
    #: the hook event id its raw bytes were stored under, when a hook was refused after
    #: they were committed (``ErrorBody.stored``)
    stored: int | None = None

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class PayloadInvalid(HookdError):
    """A hook payload that is not one JSON object of the expected shape. ``session_id``:
    the payload's session id when it could still be read."""

    code = "payload_invalid"
    status = 422
    session_id: str | None = None


class PayloadTooLarge(HookdError):
    code = "payload_too_large"
    status = 413
    exit_code = 2


class NotFound(HookdError):
    code = "not_found"
    status = 404


class Conflict(HookdError):
    code = "conflict"
    status = 409
    exit_code = 2


class Unauthorized(HookdError):
    code = "unauthorized"
    status = 401


class BadRequest(HookdError):
    code = "bad_request"
    status = 400
    exit_code = 2


class ConfigError(HookdError):
    """Bad local configuration: a settings file that is not strict JSON, a bad builder id."""

    code = "config_error"
    status = 400
    exit_code = 2


class StorageUnavailable(HookdError):
    """The database cannot commit (disk full, locked past the wait, corrupt, I/O error,
    read-only, or its file deleted or replaced while the daemon runs): nothing was stored."""

    code = "storage_unavailable"
    status = 503


class DaemonNotRunning(HookdError):
    code = "daemon_not_running"
    status = 503
    exit_code = 3


class AlreadyServing(HookdError):
    code = "already_serving"
    status = 409
    exit_code = 4
