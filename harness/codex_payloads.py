"""Codex CLI 0.171.0's hook payloads: one msgspec model per hook event it sends (the fields of
each event's stdin, per ``fixtures/codex/0.171.0`` and docs/harness-codex.md "Payloads"), and
:data:`MODELS`, event name -> model. Typing policy: :class:`hookd.harness.base.Payload`'s
(descriptive fields ``Any``; unknown fields and events kept in the raw bytes, never rejected).
Used by :mod:`hookd.harness.codex` (parse, observe, known_fields). Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from hookd.harness.base import Payload


class Base(Payload, kw_only=True):
    """Fields common to Codex's hook payloads: :class:`~hookd.harness.base.Payload`'s (the
    ``session_id`` is the thread id, ``transcript_path`` the rollout, null with ``--ephemeral``)
    and these. ``turn_id``: on every event but SessionStart and SessionEnd; ``permission_mode``:
    on every event but the model-request and compaction ones."""

    turn_id: Any = None
    model: Any = None
    permission_mode: Any = None


class ToolEvent(Base, kw_only=True):
    """``tool_name``: ``Bash`` for the shell tool (``exec_command``; its input ``{"command"}``),
    the tool's own name otherwise (``request_user_input``, ``spawn_agent``)."""

    tool_name: str
    tool_input: Any = None
    tool_use_id: str | None = None  # the model's call_id


class PreToolUse(ToolEvent, kw_only=True):
    pass


class PermissionRequest(ToolEvent, kw_only=True):
    """No ``tool_use_id`` in 0.171.0; ``tool_input`` holds ``command`` and ``description``
    (the call's ``justification``)."""


class PostToolUse(ToolEvent, kw_only=True):
    tool_response: Any = None  # a string: the command's output


class UserPromptSubmit(Base, kw_only=True):
    """A prompt, a ``turn/steer`` (same ``turn_id``) or a queued message (a new turn)."""

    prompt: Any = None


class SessionStart(Base, kw_only=True):
    source: Any = None  # startup | resume


class SessionEnd(Base, kw_only=True):
    reason: Any = None  # "other" (exec's end, the app server's stdin closed)


class Stop(Base, kw_only=True):
    stop_hook_active: Any = False  # true when a Stop block continued this turn
    last_assistant_message: Any = None


class SubagentStart(Base, kw_only=True):
    """A subagent started (``spawn_agent``): its ``agent_id`` and ``agent_type`` (``default``);
    ``session_id`` is the parent's, ``transcript_path`` the subagent's own rollout."""


class SubagentStop(Stop, kw_only=True):
    """A subagent's turn ended (it sends this, not Stop): ``agent_transcript_path`` is its
    own rollout, ``transcript_path`` the parent's."""

    agent_transcript_path: Any = None


class Compact(Base, kw_only=True):
    trigger: Any = None  # "manual" (thread/compact/start); automatic not seen


class PreCompact(Compact, kw_only=True):
    pass


class PostCompact(Compact, kw_only=True):
    pass


class Interrupt(Base, kw_only=True):
    """The turn was interrupted (``turn/interrupt``, the app server's stdin closed): no Stop
    follows; the turn completes as ``interrupted``."""


class ModelRequest(Base, kw_only=True):
    """One model request (``kind: "sampling"``); its pair shares ``request_id``. hookd parses
    these but does not register them (docs/decisions.md "Codex's model-request hooks")."""

    kind: Any = None
    request_id: Any = None
    attempt_number: Any = None
    thread_id: Any = None


class PreModelRequest(ModelRequest, kw_only=True):
    pass


class PostModelRequest(ModelRequest, kw_only=True):
    status: Any = None
    error: Any = None
    token_usage: Any = None
    response_id: Any = None


MODELS: dict[str, type[Base]] = {
    cls.__name__: cls
    for cls in (
        SessionStart, SessionEnd, UserPromptSubmit, PreToolUse, PermissionRequest, PostToolUse,
        PreCompact, PostCompact, SubagentStart, SubagentStop, Stop, Interrupt, PreModelRequest,
        PostModelRequest,
    )
}
