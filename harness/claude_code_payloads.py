"""Claude Code 2.1.332's hook payloads: one msgspec model per hook event it sends (the fields
of each event's stdin, per ``fixtures/claude-code/2.1.332`` and the binary's own schemas;
docs/harness-claude-code.md), and :data:`MODELS`, event name -> model. Typing policy:
:class:`hookd.harness.base.Payload`'s (descriptive fields ``Any``; unknown fields and events
kept in the raw bytes, never rejected). Used by :mod:`hookd.harness.claude_code` (parse,
observe, known_fields). Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from hookd.harness.base import Payload


class Base(Payload, kw_only=True):
    """Fields common to every Claude Code hook payload: :class:`~hookd.harness.base.Payload`'s
    and these (typing policy there)."""

    prompt_id: Any = None
    permission_mode: Any = None
    effort: Any = None


class ToolEvent(Base, kw_only=True):
    tool_name: str
    tool_input: Any = None
    tool_use_id: str | None = None
    mcp_server: Any = None  # an ``mcp__*`` tool's server: ``{"name", "source"}`` (2.1.332)


class PreToolUse(ToolEvent, kw_only=True):
    pass


class PermissionRequest(ToolEvent, kw_only=True):
    """No ``tool_use_id`` in 2.1.332; matched to its call by (session, tool, input hash)."""

    permission_suggestions: Any = None


class PostToolUse(ToolEvent, kw_only=True):
    tool_response: Any = None
    duration_ms: Any = None


class PostToolUseFailure(ToolEvent, kw_only=True):
    error: Any = None
    is_interrupt: Any = None
    duration_ms: Any = None


class PostToolBatch(Base, kw_only=True):
    tool_calls: list[Any] = []


class UserPromptSubmit(Base, kw_only=True):
    prompt: Any = None
    user_prompt: Any = None  # older spelling seen in reports


class SessionStart(Base, kw_only=True):
    source: Any = None  # startup | resume | clear | compact
    model: Any = None


class SessionEnd(Base, kw_only=True):
    reason: Any = None


class Stop(Base, kw_only=True):
    stop_hook_active: Any = False
    last_assistant_message: Any = None
    background_tasks: Any = None
    session_crons: Any = None


class SubagentStop(Stop, kw_only=True):
    agent_transcript_path: Any = None


class SubagentStart(Base, kw_only=True):
    """A subagent started (an Agent tool call): ``agent_id`` and ``agent_type`` (the common
    fields, here always given), no ``permission_mode``, no tool_use_id (2.1.332:
    docs/harness-claude-code.md "Subagents")."""


class StopFailure(Base, kw_only=True):
    """Fires instead of Stop when an API error ended the turn (its output is ignored: 2.1.332).
    ``error``: one of the binary's enum (docs/harness-claude-code.md "StopFailure")."""

    error: Any = None
    error_details: Any = None
    last_assistant_message: Any = None


class PermissionDenied(ToolEvent, kw_only=True):
    """Auto mode refused a tool call without asking (its safety check; ``reason``). The hook
    may answer ``retry`` (hookd does not: docs/decisions.md "Denials the human did not see")."""

    reason: Any = None
    mcp_server: Any = None


class Notification(Base, kw_only=True):
    message: Any = None
    notification_type: Any = None
    title: Any = None


class PreCompact(Base, kw_only=True):
    trigger: Any = None
    custom_instructions: Any = None


class Elicitation(Base, kw_only=True):
    """An MCP server asks the user for input (2.1.332: the hook runs before the dialog, which
    shows only when no hook answers; docs/harness-claude-code.md "MCP elicitation")."""

    mcp_server_name: str
    message: Any = None
    mode: Any = None  # form | url
    url: Any = None
    elicitation_id: str | None = None
    requested_schema: Any = None


class ElicitationResult(Base, kw_only=True):
    """How the user answered an elicitation at the dialog (not sent when a hook answered)."""

    mcp_server_name: str
    elicitation_id: str | None = None
    mode: Any = None
    action: Any = None  # accept | decline | cancel
    content: Any = None


class ConfigChange(Base, kw_only=True):
    """A settings file changed while the session runs (2.1.332: fired by its settings watcher
    before the change is applied, with the hooks as they were; docs/harness-claude-code.md
    "ConfigChange"). ``source``: ``user_settings`` | ``project_settings`` | ``local_settings``
    | ``policy_settings`` | ``skills``; ``file_path``: the file (absolute)."""

    source: Any = None
    file_path: Any = None


class MessageDisplay(Base, kw_only=True):
    turn_id: Any = None
    message_id: Any = None
    index: Any = None
    final: Any = None
    delta: Any = None


MODELS: dict[str, type[Base]] = {
    cls.__name__: cls
    for cls in (
        PreToolUse,
        PermissionRequest,
        PostToolUse,
        PostToolUseFailure,
        PostToolBatch,
        UserPromptSubmit,
        SessionStart,
        SessionEnd,
        Stop,
        SubagentStart,
        SubagentStop,
        StopFailure,
        PermissionDenied,
        Notification,
        PreCompact,
        MessageDisplay,
        Elicitation,
        ElicitationResult,
        ConfigChange,
    )
}
