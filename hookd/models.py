"""hookd's own record shapes (msgspec structs), shared by core, API and CLI; it re-exports
hookd's errors (:mod:`hookd.errors`) and words (:mod:`hookd.vocabulary`), which load no
msgspec (the CLI's read path imports those alone).

Names follow DESIGN.md: hook events keep the harness's spelling (``PreToolUse``); hookd's
events are snake_case (``question_pending``).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from hookd.errors import AlreadyServing as AlreadyServing
from hookd.errors import BadRequest as BadRequest
from hookd.errors import ConfigError as ConfigError
from hookd.errors import Conflict as Conflict
from hookd.errors import DaemonNotRunning as DaemonNotRunning
from hookd.errors import HubUnavailable as HubUnavailable
from hookd.errors import HookdError as HookdError
from hookd.errors import NotFound as NotFound
from hookd.errors import PayloadInvalid as PayloadInvalid
from hookd.errors import PayloadTooLarge as PayloadTooLarge
from hookd.errors import StorageUnavailable as StorageUnavailable
from hookd.errors import Unauthorized as Unauthorized
from hookd.vocabulary import DECISION_KINDS as DECISION_KINDS
from hookd.vocabulary import OUTCOMES as OUTCOMES
from hookd.vocabulary import PROMPT_KINDS as PROMPT_KINDS
from hookd.vocabulary import SURFACE_TEXT as SURFACE_TEXT
from hookd.vocabulary import TERMINAL_STATES as TERMINAL_STATES
from hookd.vocabulary import InteractionState as InteractionState
from hookd.vocabulary import by_text as by_text
from hookd.vocabulary import os_user as os_user
from hookd.vocabulary import outcome_of as outcome_of
from hookd.vocabulary import resolved_event as resolved_event


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
    :meth:`hookd.store.interactions.InteractionsTx.interaction_head_by_tool_use_id`."""

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
    prompt, Claude Code PermissionRequest), ``plan`` (a plan to approve before the agent
    leaves planning, Claude Code ExitPlanMode: input.plan is the plan; decision ``allow`` with
    answers ``{"mode": "auto" | "manual"}``, or ``deny`` with the feedback as message),
    ``async`` (asked through ``hookd mcp``'s
    ``ask_user_async``: the agent keeps working) or ``elicitation`` (a tool server asks for a
    form or a URL: an MCP elicitation; tool_name is the server's name, input
    ``{"server", "message", "mode", "url", "elicitation_id", "requested_schema"}``, decision
    ``accept`` | ``decline`` | ``cancel`` and answers the accepted content, field -> value).
    id: the harness's ``tool_use_id`` when the first observation carried it, else ``pr_…``
    (first seen through a PermissionRequest), ``ask_…`` (async) or ``el_…`` (elicitation); questions: as asked
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
    #: a subagent's interaction: what kind of agent asked (``general-purpose``; with agent_id)
    agent_type: str | None = None
    #: derived, never stored: :func:`outcome_of` (``allowed`` / ``denied`` for a permission
    #: prompt's decision, else ``state``) and :func:`by_text` (``"from the CLI by ana"``)
    outcome: str | None = None
    by: str | None = None

    def __post_init__(self) -> None:
        self.outcome = outcome_of(self.kind, self.state, self.decision)
        self.by = by_text(self.surface, self.actor)


class Run(msgspec.Struct, frozen=True):
    """An agent hookd started for a builder (`hookd run`, `hookd continue`; issue 23).

    id: the run's number (the daemon's); mode: ``interactive`` (in a tmux session on hookd's
    own tmux server: ``tmux_socket``, ``tmux_session``) or ``headless`` (the harness's print
    mode, its output in ``log_path``); pid and pid_started_at (UNIX seconds): the agent's
    process; session_id: the id hookd gave the new session (None: learnt from its hooks);
    resumes: the session it resumes (`hookd continue`), else None; argv: the command line;
    times in UNIX seconds; stop_reason: ``stopped`` (`hookd stop`) or ``exited`` (hookd saw
    the process gone), stop_signal: the last signal `hookd stop` sent (``SIGTERM``,
    ``SIGKILL``; None: it exited on its own). agent_args: the agent's own arguments (what
    followed ``--``; None: recorded before hookd kept them), which `hookd continue` gives again;
    exit_status: the agent's exit status once it ended (128 + N when signal N ended it; None:
    not known, or still running); hooks: how many hooks its builder sent from its start to its
    end (None: still running; 0: it ended before its first hook). alive: whether the process
    was alive when this was read (filled in by the API, never stored).
    """

    id: int
    builder: str
    harness: str
    mode: Literal["interactive", "headless"]
    pid: int
    pid_started_at: float | None
    tmux_socket: str | None
    tmux_session: str | None
    log_path: str | None
    worktree: str | None
    session_id: str | None
    resumes: str | None
    argv: list[str]
    started_at: float
    stopped_at: float | None = None
    stop_reason: str | None = None
    stop_signal: str | None = None
    agent_args: list[str] | None = None
    exit_status: int | None = None
    hooks: int | None = None
    alive: bool | None = None


class Subagent(msgspec.Struct, frozen=True):
    """A subagent of a builder's agent (Claude Code: an Agent tool call's agent), as hookd
    recorded it from its hooks (issue 21 moment 5).

    agent_id: the harness's id (its hooks carry it; ``hookd send --agent``); agent_type: what
    kind of agent (``general-purpose``), or None; session_id: the session it runs in; state:
    ``running`` or ``ended``; end_reason: ``stopped`` (its own stop hook) or ``session_ended``
    (the session ended first); times in UNIX seconds; transcript_path: its own transcript
    when its stop hook named it. While running: ``waiting`` is ``working``,
    ``waiting_permission`` or ``waiting_question`` (a pending interaction of it; words of the
    lanes) and ``pending`` the ids of its pending interactions, oldest first.
    """

    builder: str
    session_id: str
    agent_id: str
    agent_type: str | None
    state: Literal["running", "ended"]
    started_at: float
    ended_at: float | None = None
    end_reason: str | None = None
    transcript_path: str | None = None
    waiting: str = "working"
    pending: tuple[str, ...] = ()


class InboxMessage(msgspec.Struct, frozen=True):
    """A human-to-agent message queued for one builder (DESIGN.md "Inbox and delivery").

    id: ``m-<n>``; session_id / agent_id: scope (None: the main agent of any session);
    state: ``queued`` -> ``delivered`` (by ``delivered_hook_event_id``, ``delivered_via`` the
    hook event name) -> ``adopted`` (``adopted_via``: the proof) or ``cancelled``;
    deliveries: how often it was delivered (more than 1: redelivered, recognisable by its id in
    the text); times are UNIX seconds; answer_to: the interaction whose human answer hookd kept
    as this message (a late answer, or one the desk's outcome replaced), else None.
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
    answer_to: str | None = None


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
