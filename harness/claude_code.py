"""Claude Code adapter: classification, hook config, transcript paths (its payload models in
:mod:`hookd.harness.claude_code_payloads`).

Facts per Claude Code 2.1.332 (``shared/claude-code/README.md``, recorded fixtures in
``fixtures/claude-code/2.1.332``). Pure: no I/O, no store, no server. The module is a
:class:`hookd.harness.base.Adapter` and a :class:`hookd.harness.base.TranscriptReader`:

- :func:`parse` turns raw hook stdin bytes into a typed payload (unknown events and fields
  are kept in the raw bytes and never rejected);
- :func:`observe` turns a payload into :class:`~hookd.harness.base.Observation` s that the
  core applies; :func:`transcript_observations` does the same for a transcript row;
- :func:`boundary` and :func:`render_context`: where and how queued messages reach the model;
- :func:`present_tool`: a tool call on a permission prompt as a person reads it;
- :mod:`hookd.harness.claude_code_hooks` (its ``remote_answers`` and ``hook_installs``): the
  remote-answer outputs, the tools a held prompt watches, and the ``hooks`` block that
  `hookd spawn` merges into settings (its ``hook_settings``).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable, Mapping

import msgspec

from hookd.harness.base import (
    AttentionAsked,
    Compacting,
    DialogAtDesk,
    HookKind,
    Interrupted,
    Observation,
    Payload,
    ElicitationAsked,
    ElicitationResolved,
    PermissionAsked,
    PermissionRefused,
    PlanAsked,
    QuestionAsked,
    QuestionResolved,
    RemoteAnswers,
    SessionEnded,
    SessionStarted,
    SubagentStarted,
    SubagentStopped,
    SettingsChanged,
    ToolFinished,
    ToolResultSeen,
    ToolView,
    TurnEnded,
    TurnFailed,
    TurnMovedOn,
    TurnStarted,
    input_hash,
    question_result,
    questions_hash,
    text,
)
from hookd.harness import claude_code_hooks, tool_views
from hookd.harness.claude_code_hooks import REGISTERED_EVENTS as REGISTERED_EVENTS  # (re-exported)
from hookd.harness.claude_code_payloads import (
    Base,
    ConfigChange,
    Elicitation,
    ElicitationResult,
    MODELS,
    Notification,
    PermissionDenied,
    PermissionRequest,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    PreToolUse,
    SessionEnd,
    SessionStart,
    Stop,
    StopFailure,
    SubagentStart,
    SubagentStop,
    ToolEvent,
    UserPromptSubmit,
)
from hookd.harness.install import HookInstall
from hookd.harness.launch import Launcher
from hookd.models import PayloadInvalid
from hookd.untrusted import decode_json

HARNESS = "claude-code"
VERSION = "2.1.332"
ASK_TOOL = "AskUserQuestion"

# Traits (hookd.harness.base.Adapter): questions are answered remotely through hook output
# (PreToolUse, a held PermissionRequest), every tool call has its tool_use_id, a delivery
# counts as seen when the transcript or a later hook proves it, and the async Stop hook is an
# idle wake.
desk_only = False
questions_at_desk = False
sequential_questions = False
needs_context = False
ack_required = False
idle_wake = True
#: Stop ends every turn.
quiet_idle = False
version: str | None = VERSION
#: What its hook events mean to the core (PreCompact, PostToolBatch, MessageDisplay: none of
#: these; a compaction is the ``Compacting`` observation). Notification reports on the agent
#: without being its activity (its ``idle_prompt`` comes ~60 s after a turn ended, its
#: ``permission_prompt`` while a dialog waits): a ``notice``, which never moves a lane.
hook_kinds: Mapping[str, HookKind] = {
    "SessionStart": "session_start", "SessionEnd": "session_end", "UserPromptSubmit": "prompt",
    "Stop": "turn_end", "SubagentStop": "subagent_end", "PreToolUse": "tool_before",
    "PermissionRequest": "permission", "PostToolUse": "tool_after", "PostToolUseFailure": "tool_after",
    "Notification": "notice", "ConfigChange": "notice",  # (a settings edit is not the agent's activity)
}
#: A remote answer reaches the agent through hook output (:mod:`hookd.harness.claude_code_hooks`).
remote_answers: RemoteAnswers | None = claude_code_hooks
#: `hookd spawn --harness claude-code`: ``.claude/settings.local.json`` or a standalone file.
hook_installs: Mapping[str, HookInstall] = {HARNESS: claude_code_hooks.INSTALL}
#: `hookd run` / `hookd continue --harness claude-code`: ``claude``, ``claude -p``, ``claude --resume``.
launchers: Mapping[str, Launcher] = {HARNESS: claude_code_hooks.LAUNCH}


#: Transcript row ``type`` values hookd knows (Claude Code 2.1.332 transcripts). Others are
#: ignored by readers and listed by `hookd drift`.
TRANSCRIPT_ROW_TYPES = frozenset({
    "user", "assistant", "attachment", "system", "queue-operation", "last-prompt", "mode",
    "permission-mode", "file-history-snapshot", "file-history-delta", "api-request", "api-request-blob",
    "api-request-shape", "cost-state", "tools-used", "atis-latch", "summary",
})


#: Content block types of user/assistant rows (the Messages API's, as 2.1.332 writes them);
#: others are counted as unknown and ignored.
CONTENT_BLOCK_TYPES = frozenset({
    "text", "thinking", "redacted_thinking", "tool_use", "tool_result", "image", "document",
    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "mcp_tool_use", "mcp_tool_result", "container_upload", "search_result", "tool_reference",
})


def unknown_blocks(row: dict[str, Any]) -> int:
    """How many content blocks of a user/assistant transcript row have a type hookd does not
    know (CONTENT_BLOCK_TYPES)."""
    msg = row.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if row.get("type") not in ("user", "assistant") or not isinstance(content, list):
        return 0
    return sum(1 for b in content if not (isinstance(b, dict) and b.get("type") in CONTENT_BLOCK_TYPES))


def known_fields(event_name: str) -> frozenset[str] | None:
    """Top-level payload fields hookd's model of ``event_name`` knows, None if the event
    itself is unknown."""
    model = MODELS.get(event_name)
    if model is None:
        return None
    return frozenset(f.encode_name for f in msgspec.structs.fields(model))


def call_input(p: Payload) -> Any:
    """A tool event's ``tool_input``; None for any other payload."""
    return p.tool_input if isinstance(p, ToolEvent) else None


def present_tool(tool_name: str | None, tool_input: Any) -> ToolView:
    """A Claude Code 2.1.332 tool call as a person reads it: ``Bash`` a command with its
    ``description``; ``Edit`` / ``Write`` a diff of ``file_path``; ``WebFetch`` its ``url`` and
    ``prompt``; any other tool (``mcp__*`` too) compact JSON. ``MultiEdit`` (``file_path``,
    ``edits``: earlier versions' tool; the tool list in 2.1.332's recorded transcripts,
    ``fixtures/claude-code/2.1.332/*/transcript.jsonl``, has none) is a diff per edit."""
    f = functools.partial(tool_views.field, tool_input)
    if tool_name == "Bash":
        return tool_views.command_view(f("command"), f("description"))
    if tool_name == "Edit":
        return tool_views.edit_view(f("file_path"), f("old_string"), f("new_string"), f("replace_all"))
    if tool_name == "MultiEdit":
        return tool_views.multi_edit_view(f("file_path"), f("edits"))
    if tool_name == "Write":
        return tool_views.write_view(f("file_path"), f("content"))
    if tool_name == "WebFetch":
        return tool_views.url_view(f("url"), f("prompt"))
    return tool_views.json_view(tool_input)


def parse(raw: bytes, *, builder: str | None = None, cwd: str | None = None) -> Base:
    """Decode one hook payload.

    raw: the hook's stdin bytes (builder, cwd: unused, the payload names its session).
    Returns the typed payload for known events, :class:`Base`
    for unknown ones. Raises PayloadInvalid when ``raw`` is not one JSON object with a string
    ``hook_event_name``, or a known field has the wrong type.
    """
    try:
        obj = decode_json(raw)  # a lone surrogate (a string cut mid-emoji) decodes as U+FFFD
    except (msgspec.DecodeError, RecursionError) as e:  # (RecursionError: nested too deeply)
        raise PayloadInvalid(f"payload is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise PayloadInvalid(f"payload must be a JSON object, got {type(obj).__name__}")
    name = obj.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise PayloadInvalid("payload has no string 'hook_event_name'")
    model = MODELS.get(name, Base)
    try:
        return msgspec.convert(obj, model)
    except msgspec.ValidationError as e:
        err = PayloadInvalid(f"{name} payload: {e}")
        sid = obj.get("session_id")
        err.session_id = sid if isinstance(sid, str) else None
        raise err from None


# --- observations ----------------------------------------------------------------------


def _questions_of(tool_input: Any) -> Any:
    if isinstance(tool_input, dict):
        return tool_input.get("questions")
    return None


def observe(p: Payload) -> list[Observation]:
    """Classify one payload. Pure; the same payload always gives the same observations."""
    obs: list[Observation] = []
    if isinstance(p, SessionStart):
        obs.append(SessionStarted(source=text(p.source)))
    elif isinstance(p, SessionEnd):
        obs.append(TurnMovedOn(agent_id=None, all_agents=True, outcome="orphaned", via=p.hook_event_name))
        obs.append(SessionEnded(reason=text(p.reason)))
    elif isinstance(p, SubagentStart) and p.agent_id:
        obs.append(SubagentStarted(agent_id=p.agent_id, agent_type=text(p.agent_type)))
    elif isinstance(p, (Stop, UserPromptSubmit)):  # SubagentStop is a Stop
        obs.append(TurnMovedOn(agent_id=p.agent_id, all_agents=False, outcome="dismissed", via=p.hook_event_name))
        if isinstance(p, SubagentStop) and p.agent_id:
            obs.append(SubagentStopped(agent_id=p.agent_id, agent_type=text(p.agent_type),
                                       transcript_path=text(p.agent_transcript_path)))
    elif isinstance(p, PreCompact):
        obs.append(Compacting(via=p.hook_event_name))
    elif isinstance(p, Elicitation):
        obs.append(ElicitationAsked(
            server=p.mcp_server_name, message=text(p.message), mode=text(p.mode) or "form",
            url=text(p.url), elicitation_id=p.elicitation_id, requested_schema=p.requested_schema,
        ))
    elif isinstance(p, ElicitationResult):
        action = text(p.action)
        obs.append(ElicitationResolved(
            server=p.mcp_server_name, elicitation_id=p.elicitation_id,
            action=action if action in ("accept", "decline", "cancel") else "cancel",
            content=p.content if isinstance(p.content, dict) else None,
        ))
    elif isinstance(p, StopFailure):
        error = text(p.error)
        transient, advice = FAILURES.get(error or "", (False, "an API error: see its message"))
        obs.append(TurnFailed(error=error, details=_detail_text(p.error_details),
                              message=text(p.last_assistant_message), transient=transient, advice=advice))
    elif isinstance(p, ConfigChange):
        obs.append(SettingsChanged(source=text(p.source), file_path=text(p.file_path)))
    elif isinstance(p, Notification) and text(p.notification_type) in DESK_DIALOGS:
        obs.append(DialogAtDesk(kind=text(p.notification_type) or "", message=text(p.message)))
    elif isinstance(p, PermissionDenied):
        obs.append(PermissionRefused(tool_use_id=p.tool_use_id, tool_name=p.tool_name, tool_input=p.tool_input,
                                     reason=text(p.reason), server=text(p.mcp_server)))
    elif isinstance(p, ToolEvent) and p.tool_name == ASK_TOOL:
        questions = _questions_of(p.tool_input)
        h = questions_hash(questions)
        if isinstance(p, (PreToolUse, PermissionRequest)):
            obs.append(
                QuestionAsked(
                    tool_use_id=p.tool_use_id,
                    tool_name=p.tool_name,
                    input_hash=h,
                    questions=questions,
                    via=p.hook_event_name,
                    tool_input=p.tool_input,
                )
            )
        elif isinstance(p, PostToolUse):
            obs.append(_resolved_from_post(p, questions, h))
        elif isinstance(p, PostToolUseFailure):
            obs.append(
                QuestionResolved(
                    tool_use_id=p.tool_use_id,
                    tool_name=p.tool_name,
                    input_hash=h,
                    questions=questions,
                    outcome="dismissed",
                    answers=None,
                    selections=None,
                    surface="terminal",
                    error=p.error if isinstance(p.error, str) else msgspec.json.encode(p.error).decode(),
                )
            )
    elif isinstance(p, PermissionRequest) and p.tool_name == PLAN_TOOL:
        obs.append(_plan_asked(p))
    elif isinstance(p, PermissionRequest) and isinstance(p.tool_name, str):
        obs.append(PermissionAsked(
            tool_name=p.tool_name, tool_input=p.tool_input, input_hash=input_hash(p.tool_input),
            permission_mode=text(getattr(p, "permission_mode", None)),
        ))
    elif isinstance(p, (PostToolUse, PostToolUseFailure)) and isinstance(p.tool_name, str):
        failed = isinstance(p, PostToolUseFailure)
        err = getattr(p, "error", None) if failed else None
        obs.append(ToolFinished(
            tool_use_id=p.tool_use_id, tool_name=p.tool_name, tool_input=_finished_input(p), failed=failed,
            error=err if isinstance(err, str) or err is None else msgspec.json.encode(err).decode(),
            plan_mode=_PLAN_MODE_OF.get(text(getattr(p, "permission_mode", None)) or "") if (
                p.tool_name == PLAN_TOOL and not failed) else None,
        ))
        if not failed and p.tool_name in ATTENTION_TOOLS:
            attention = _attention_asked(p)
            if attention is not None:
                obs.append(attention)
    return obs


#: Notification types that say a dialog waits at the desk (docs/harness-claude-code.md "A dialog
#: no hook holds"): a permission dialog, or auto mode's chooser when its check cannot run.
DESK_DIALOGS = frozenset({"permission_prompt", "agent_needs_input"})

#: The tools with which 2.1.332's model addresses its human itself (docs/harness-claude-code.md
#: "The agent asking for attention"): PushNotification (a push: always urgent) and
#: SendUserMessage (brief mode's channel for every reply: urgent when ``status`` is "proactive").
PUSH_TOOL = "PushNotification"
MESSAGE_TOOL = "SendUserMessage"
ATTENTION_TOOLS = frozenset({PUSH_TOOL, MESSAGE_TOOL})


def _attention_asked(p: PostToolUse | PostToolUseFailure) -> AttentionAsked | None:
    """The call's ``message`` as an :class:`AttentionAsked` once the tool ran (its PostToolUse;
    the PreToolUse of the same call is not observed, so a call is recorded once); None without
    a message (the tools' schemas require one)."""
    ti = p.tool_input if isinstance(p.tool_input, dict) else {}
    message = text(ti.get("message"))
    if not message:
        return None
    status = text(ti.get("status"))
    return AttentionAsked(tool_use_id=p.tool_use_id, tool_name=p.tool_name, message=message, status=status,
                          urgent=p.tool_name == PUSH_TOOL or status == "proactive")


#: StopFailure's ``error`` kinds (2.1.332's enum) -> (transient, what a human should do): the
#: binary's own words for each where it has them (its "needs" texts), transient where waiting
#: and prompting again is the remedy (docs/decisions.md "An agent stopped by an error").
FAILURES: dict[str, tuple[bool, str]] = {
    "rate_limit": (True, "rate limited: wait, then prompt it again"),
    "overloaded": (True, "API overloaded: wait, then prompt it again"),
    "server_error": (True, "API unavailable: prompt it again"),
    "max_output_tokens": (True, "the reply hit its output limit: prompt it to go on"),
    "authentication_failed": (False, "login required: run /login (or fix the API key)"),
    "oauth_org_not_allowed": (False, "the organisation disabled this sign-in: use an API key or ask an admin"),
    "account_on_hold": (False, "account on hold: see the message"),
    "verification_required": (False, "account verification required: see the message"),
    "billing_error": (False, "usage limit reached: check the plan"),
    "cloud_credential_error": (False, "cloud credentials unavailable: check or refresh them"),
    "invalid_request": (False, "invalid API request: see the message (too long: /compact)"),
    "model_not_found": (False, "the model is unknown or not allowed: pick another (--model)"),
    "unknown": (False, "an API error: see its message"),
}


def _detail_text(v: Any) -> str | None:
    """StopFailure's ``error_details`` as text (a string in 2.1.332's schema; anything else as
    compact JSON), None when absent."""
    if v is None or isinstance(v, str):
        return v
    return msgspec.json.encode(v).decode()


#: The tool that asks the human to approve a plan (its PermissionRequest is a :class:`PlanAsked`).
PLAN_TOOL = "ExitPlanMode"
#: The plan mode (:data:`PLAN_MODES`) of each ``permission_mode`` an approved ExitPlanMode's
#: PostToolUse carries: the desk's "1. Yes, and use auto mode" gives ``auto``, "2. Yes,
#: manually approve edits" ``default`` (2.1.332; tests/e2e/test_plans_e2e.py). Other modes
#: (``acceptEdits``, ``bypassPermissions``: the desk's labels where auto mode is unavailable)
#: are neither: no mode is recorded for them.
_PLAN_MODE_OF = {setting: mode for mode, setting in claude_code_hooks.PLAN_MODE_SETTINGS.items()}


def _plan_asked(p: PermissionRequest) -> PlanAsked:
    """ExitPlanMode's PermissionRequest as a plan approval. 2.1.332 reads the plan from the
    session's plan file: the hook's ``tool_input`` is ``{"plan": <the file's text>,
    "planFilePath": <its path>}``, or ``{}`` when the model wrote no plan file (the model's own
    ``plan`` input is dropped; docs/harness-claude-code.md "Plan approval")."""
    ti = p.tool_input if isinstance(p.tool_input, dict) else {}
    return PlanAsked(
        tool_name=PLAN_TOOL, tool_input=p.tool_input, input_hash=input_hash(p.tool_input),
        permission_mode=text(getattr(p, "permission_mode", None)),
        plan=text(ti.get("plan")), plan_path=text(ti.get("planFilePath")),
    )


def _finished_input(p: PostToolUse | PostToolUseFailure) -> Any:
    """The input a tool call's PermissionRequest showed, as far as its PostToolUse tells it:
    the payload's ``tool_input``, except for ExitPlanMode, whose PostToolUse carries ``{}`` and
    the plan in ``tool_response`` (``{"plan", "filePath", ...}``) while its PermissionRequest
    showed ``{"plan", "planFilePath"}`` (2.1.332)."""
    resp = getattr(p, "tool_response", None)
    if p.tool_name != PLAN_TOOL or p.tool_input != {} or not isinstance(resp, dict) or not isinstance(resp.get("plan"), str):
        return p.tool_input  # (no plan file: the PermissionRequest showed ``{}`` too)
    return {"plan": resp.get("plan"), "planFilePath": resp.get("filePath")}


def _resolved_from_post(p: PostToolUse, questions: Any, h: str) -> QuestionResolved:
    answers = None
    for src in (p.tool_response, p.tool_input):
        if isinstance(src, dict) and isinstance(src.get("answers"), dict):
            answers = src["answers"]
            break
    return question_result(p.tool_use_id, p.tool_name, questions, answers, surface="terminal", questions_hash_=h)


# --- transcripts ---------------------------------------------------------------------

#: User-row texts Claude Code 2.1.332 writes when the human interrupts (Esc): no hook fires.
INTERRUPT_MARKERS = ("[Request interrupted by user for tool use]", "[Request interrupted by user]")
#: ``toolUseResult`` of a call the desk rejected (Esc or No at a menu or permission dialog).
REJECTED = "User rejected tool use"


def _result_text(content: Any) -> str:
    """A tool_result's content as text (a string, or its text blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


#: The ``hooks_unarmed`` advice for a session whose transcript moves with no hook from it.
UNARMED_ADVICE = (
    "Claude Code reads hooks when a session starts: this session started before hookd's hooks "
    "were installed (or its settings were not loaded). Run /hooks in it, or restart it, to arm them; "
    "until then hookd follows it from its transcript."
)


def is_transcript(path: str) -> bool:
    """Is ``path`` a transcript Claude Code writes: any ``*.jsonl`` file (the files of other
    harnesses are recognised by their own readers first: :func:`hookd.harness.registry.reader_of`)."""
    return path.endswith(".jsonl")


def transcript_session(builder: str, path: str) -> str | None:
    """None: Claude Code's rows name their session (:func:`row_session`)."""
    return None


def row_session(row: dict[str, Any]) -> str | None:
    """A transcript row's session id (``sessionId``; 2.1.332 also writes ``session_id``)."""
    return text(row.get("sessionId")) or text(row.get("session_id"))


def row_root(row: dict[str, Any]) -> str | None:
    """The ``uuid`` of a conversation root row (``user``/``assistant``, ``parentUuid`` null,
    not a sidechain), else None. A forked session (``--fork-session``) starts by copying its
    parent's rows, uuids unchanged, under its own ``sessionId`` (2.1.332, verified): the same
    root uuid in two sessions is the fork's lineage link."""
    if row.get("type") not in ("user", "assistant") or row.get("isSidechain") or "parentUuid" not in row:
        return None
    if row.get("parentUuid") is not None or row.get("isCompactSummary"):
        return None
    return text(row.get("uuid"))


def transcript_observations(row: dict[str, Any]) -> list[Observation]:
    """Classify one transcript row (Claude Code 2.1.332). Pure. An AskUserQuestion
    ``tool_use`` gives QuestionAsked (``via: "transcript"``); a ``tool_result`` gives
    ToolResultSeen; an interrupt marker gives Interrupted; a main-agent prompt row gives
    TurnStarted (with the human's text), an ``end_turn`` assistant row or a ``turn_duration``
    row TurnEnded.
    Compaction summaries (``isCompactSummary``) never give anything: their text only tells
    about questions."""
    kind = row.get("type")
    main = not row.get("isSidechain")
    if kind == "system" and row.get("subtype") == "turn_duration" and main:
        return [TurnEnded()]
    if kind not in ("assistant", "user") or row.get("isCompactSummary"):
        return []
    msg = row.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        if kind == "user" and content.strip() in INTERRUPT_MARKERS:
            return [Interrupted(marker=content)]
        return [TurnStarted(text=content)] if kind == "user" and main and not row.get("isMeta") else []
    if not isinstance(content, list):
        return []
    obs: list[Observation] = []
    if main and kind == "assistant" and isinstance(msg, dict) and msg.get("stop_reason") == "end_turn":
        obs.append(TurnEnded())
    if (main and kind == "user" and not row.get("isMeta")
            and any(isinstance(b, dict) and b.get("type") == "text" for b in content)
            and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
            and not any(isinstance(b, dict) and str(b.get("text", "")).strip() in INTERRUPT_MARKERS for b in content)):
        obs.append(TurnStarted(text="\n".join(str(b.get("text", "")) for b in content
                                              if isinstance(b, dict) and b.get("type") == "text")))
    for block in content:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if kind == "assistant" and btype == "tool_use" and block.get("name") == ASK_TOOL and isinstance(block.get("id"), str):
            tool_input = block.get("input")
            questions = _questions_of(tool_input)
            obs.append(QuestionAsked(tool_use_id=block["id"], tool_name=ASK_TOOL, input_hash=questions_hash(questions),
                                     questions=questions, via="transcript", tool_input=tool_input))
        elif kind == "user" and btype == "tool_result" and isinstance(block.get("tool_use_id"), str):
            result = row.get("toolUseResult")
            decision = row.get("permissionDecision")
            obs.append(ToolResultSeen(
                tool_use_id=block["tool_use_id"], is_error=block.get("is_error") is True,
                rejected=result == REJECTED,
                answers=result.get("answers") if isinstance(result, dict) and isinstance(result.get("answers"), dict) else None,
                questions=result.get("questions") if isinstance(result, dict) else None,
                decision_source=text(decision.get("source")) if isinstance(decision, dict) else None,
                error=_result_text(block.get("content"))[:500] if block.get("is_error") is True else None,
            ))
        elif kind == "user" and btype == "text" and isinstance(block.get("text"), str) and block["text"].strip() in INTERRUPT_MARKERS:
            obs.append(Interrupted(marker=block["text"].strip()))
    return obs


# --- delivery (turn boundaries) -------------------------------------------------------

#: Hook events whose ``additionalContext`` Claude Code 2.1.332 puts into the model's next
#: input (verified in the next model request; shared/claude-code/README.md "Turn boundaries").
CONTEXT_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionStart", "Stop"})
#: Subagents receive only what is addressed to them, at their tool results.
SUBAGENT_CONTEXT_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure"})


def boundary(p: Payload) -> str | None:
    """Where this hook's output reaches the model: ``"context"`` (CONTEXT_EVENTS; for a
    subagent only SUBAGENT_CONTEXT_EVENTS), ``"final"`` for Stop (a delivery there continues
    the turn: capped at STOP_CAP in a row), None elsewhere (no delivery)."""
    allowed = SUBAGENT_CONTEXT_EVENTS if p.agent_id else CONTEXT_EVENTS
    if p.hook_event_name not in allowed:
        return None
    return "final" if p.hook_event_name == "Stop" else "context"


def render_context(hook_event_name: str, text: str) -> bytes:
    """The hook stdout that adds ``text`` to the model's next input at ``hook_event_name``:
    ``{"hookSpecificOutput": {"hookEventName": <the input's event>, "additionalContext":
    text}}``. On Stop this continues the turn with the text as a plain reminder (2.1.332);
    ``decision: block`` is not used because Claude Code wraps its reason in a disclaimer that
    it carries no message from the user. Never ``systemMessage`` or plain stdout (B10)."""
    return msgspec.json.encode({"hookSpecificOutput": {"hookEventName": hook_event_name, "additionalContext": text}})


_MARKER = re.compile(r"\[human msg (m-\d+) ")


def sent_message_ids(lines: "Iterable[bytes]") -> set[str]:
    """Ids of hookd messages a transcript proves were sent to the model.

    Proof per Claude Code 2.1.332 transcripts: an ``api-request`` row's ``tail`` names the
    hashes of ``api-request-blob`` rows it sent; a blob whose text carries hookd's marker
    ``[human msg m-N `` was in that request. Row order is not time order, so blobs and
    requests are joined after reading every line; torn or unknown lines are skipped.
    """
    blobs: dict[str, set[str]] = {}
    sent_hashes: set[str] = set()
    for line in lines:
        if b"api-request" not in line:
            continue
        try:
            row = decode_json(line)
        except (msgspec.DecodeError, RecursionError):
            continue
        if not isinstance(row, dict):
            continue
        kind = row.get("type")
        if kind == "api-request-blob" and isinstance(row.get("hash"), str):
            ids = set(_MARKER.findall(msgspec.json.encode(row.get("message")).decode()))
            if ids:
                blobs[row["hash"]] = ids
        elif kind == "api-request" and isinstance(row.get("tail"), list):
            sent_hashes.update(h for h in row["tail"] if isinstance(h, str))
    return set().union(*(ids for h, ids in blobs.items() if h in sent_hashes)) if blobs else set()


# --- transcript paths ------------------------------------------------------------------

_LONG_PREFIX = re.compile(r"^(\\\\\?\\|//\?/)")


def project_slug(cwd: str) -> str:
    """Claude Code's projects-folder name for ``cwd``: every non-alphanumeric character
    becomes ``-`` (``D:\\Development\\Feature3`` -> ``D--Development-Feature3``). Claude
    Code adds a hash suffix past 200 characters; prefer the hook's ``transcript_path``."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def normalize_path(path: str) -> str:
    """Comparable form of a path from any OS: strips the ``\\\\?\\`` long-path prefix,
    uses forward slashes, lowercases drive letters and Windows paths (case-insensitive)."""
    p = _LONG_PREFIX.sub("", path)
    windows = bool(re.match(r"^[A-Za-z]:[\\/]", p)) or p.startswith("\\\\") or "\\" in p
    p = p.replace("\\", "/")
    if windows:
        p = p.lower()
    return p
