"""Claude Code adapter: payload models, classification, hook config, transcript paths.

Facts per Claude Code 2.1.332 (``shared/claude-code/README.md``, recorded fixtures in
``fixtures/claude-code/2.1.332``). Pure: no I/O, no store, no server.

- :func:`parse` turns raw hook stdin bytes into a typed payload (unknown events and fields
  are kept in the raw bytes and never rejected);
- :func:`observe` turns a payload into :class:`Observation` s that the core applies;
- :func:`hook_settings` renders the ``hooks`` block that `hookd spawn` merges into settings.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from typing import Any, Iterable

import msgspec

from hookd.models import PayloadInvalid, Selection
from hookd.untrusted import decode_json

HARNESS = "claude-code"
VERSION = "2.1.332"
ASK_TOOL = "AskUserQuestion"

# Events hookd registers at spawn (PostToolBatch and MessageDisplay exist but add nothing).
REGISTERED_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
)
# Events that take no matcher in Claude Code's settings.
NO_MATCHER_EVENTS = frozenset({"UserPromptSubmit", "Stop", "SubagentStop", "PostToolBatch"})
# Tool events: matcher ".*" (a regex) covers every tool including mcp__server__tool.
TOOL_EVENTS = frozenset({"PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure"})


# --- payload models (fields per Claude Code 2.1.332 hook stdin) -------------------------


class Base(msgspec.Struct, kw_only=True):
    """Fields common to every hook payload. ``agent_id``/``agent_type``: subagent events.

    Typing policy: fields hookd relies on for identity (names and ids) are typed strictly and
    a wrong type rejects the payload (stored raw, ``hook_invalid``); descriptive fields are
    ``Any`` so that an unexpected type in one of them never costs a whole event.
    """

    hook_event_name: str
    session_id: str | None = None
    transcript_path: Any = None
    cwd: Any = None
    prompt_id: Any = None
    permission_mode: Any = None
    effort: Any = None
    agent_id: str | None = None
    agent_type: Any = None


class ToolEvent(Base, kw_only=True):
    tool_name: str
    tool_input: Any = None
    tool_use_id: str | None = None


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


class Notification(Base, kw_only=True):
    message: Any = None
    notification_type: Any = None
    title: Any = None


class PreCompact(Base, kw_only=True):
    trigger: Any = None
    custom_instructions: Any = None


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
        SubagentStop,
        Notification,
        PreCompact,
        MessageDisplay,
    )
}


#: Transcript row ``type`` values hookd knows (Claude Code 2.1.332 transcripts). Others are
#: ignored by readers and listed by `hookd drift`.
TRANSCRIPT_ROW_TYPES = frozenset({
    "user", "assistant", "attachment", "system", "queue-operation", "last-prompt", "mode",
    "permission-mode", "file-history-snapshot", "api-request", "api-request-blob",
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


class Option(msgspec.Struct):
    label: str
    description: str | None = None


class Question(msgspec.Struct):
    """One AskUserQuestion question (``tool_input.questions[i]``)."""

    question: str
    header: str | None = None
    options: list[Option] = []
    multiSelect: bool = False


def text(v: Any) -> str | None:
    """``v`` if it is a string, else None: for descriptive fields typed ``Any``."""
    return v if isinstance(v, str) else None


def parse(raw: bytes) -> Base:
    """Decode one hook payload.

    raw: the hook's stdin bytes. Returns the typed payload for known events, :class:`Base`
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


class Observation(msgspec.Struct, kw_only=True):
    """Something the core must apply. Subclasses are the whole vocabulary."""


class QuestionAsked(Observation, kw_only=True):
    """An AskUserQuestion call was seen. ``via``: the hook event that showed it;
    tool_input: the call's whole input (questions plus any metadata), as shown."""

    tool_use_id: str | None
    tool_name: str
    input_hash: str
    questions: Any
    via: str
    tool_input: Any = None


class PermissionAsked(Observation, kw_only=True):
    """A permission prompt for an ordinary tool (PermissionRequest; it has no tool_use_id).
    input_hash: :func:`input_hash` of tool_input, the exact input shown to the human."""

    tool_name: str
    tool_input: Any
    input_hash: str
    permission_mode: str | None


class ToolFinished(Observation, kw_only=True):
    """An ordinary tool call ended (PostToolUse, or PostToolUseFailure with ``failed``): the
    permission prompt for it, if any, is over. The input is hashed only when needed."""

    tool_use_id: str | None
    tool_name: str
    tool_input: Any
    failed: bool
    error: str | None


class QuestionResolved(Observation, kw_only=True):
    """An AskUserQuestion call ended. ``outcome``: answered | empty | dismissed."""

    tool_use_id: str | None
    tool_name: str
    input_hash: str
    questions: Any
    outcome: str
    answers: dict[str, Any] | None
    selections: list[Selection] | None
    surface: str | None
    warning: str | None = None
    error: str | None = None


class SessionStarted(Observation, kw_only=True):
    source: str | None


class SessionEnded(Observation, kw_only=True):
    reason: str | None


class TurnMovedOn(Observation, kw_only=True):
    """The agent's turn went on past any open question: Claude Code 2.1.332 fires no hook
    when the AskUserQuestion menu is escaped, so a later Stop / UserPromptSubmit (same agent)
    or SubagentStop (that subagent) is the hooks' only sign the question is gone.
    agent_id: whose questions (None: the main agent); all_agents: SessionEnd closes every
    question of the session; outcome: ``dismissed`` or ``orphaned``."""

    agent_id: str | None
    all_agents: bool
    outcome: str
    via: str


def questions_hash(questions: Any) -> str:
    """Stable hash (hex, 24 chars) of an AskUserQuestion ``questions`` value.

    Used to match a PermissionRequest (which lacks ``tool_use_id``) to its PreToolUse, and
    transcript rows to hook rows. Key order does not matter.
    """
    return input_hash(questions)


def input_hash(value: Any) -> str:
    """Stable hash (hex, 24 chars) of any JSON value (a tool input); key order does not
    matter. Matches a PermissionRequest to the PostToolUse of the same call."""
    canon = msgspec.json.encode(value, order="sorted")
    return hashlib.sha256(canon).hexdigest()[:24]


def _questions_of(tool_input: Any) -> Any:
    if isinstance(tool_input, dict):
        return tool_input.get("questions")
    return None


def observe(p: Base) -> list[Observation]:
    """Classify one payload. Pure; the same payload always gives the same observations."""
    obs: list[Observation] = []
    if isinstance(p, SessionStart):
        obs.append(SessionStarted(source=text(p.source)))
    elif isinstance(p, SessionEnd):
        obs.append(TurnMovedOn(agent_id=None, all_agents=True, outcome="orphaned", via=p.hook_event_name))
        obs.append(SessionEnded(reason=text(p.reason)))
    elif isinstance(p, (Stop, UserPromptSubmit)):  # SubagentStop is a Stop
        obs.append(TurnMovedOn(agent_id=p.agent_id, all_agents=False, outcome="dismissed", via=p.hook_event_name))
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
    elif isinstance(p, PermissionRequest) and isinstance(p.tool_name, str):
        obs.append(PermissionAsked(
            tool_name=p.tool_name, tool_input=p.tool_input, input_hash=input_hash(p.tool_input),
            permission_mode=text(getattr(p, "permission_mode", None)),
        ))
    elif isinstance(p, (PostToolUse, PostToolUseFailure)) and isinstance(p.tool_name, str):
        failed = isinstance(p, PostToolUseFailure)
        err = getattr(p, "error", None) if failed else None
        obs.append(ToolFinished(
            tool_use_id=p.tool_use_id, tool_name=p.tool_name, tool_input=p.tool_input, failed=failed,
            error=err if isinstance(err, str) or err is None else msgspec.json.encode(err).decode(),
        ))
    return obs


def _resolved_from_post(p: PostToolUse, questions: Any, h: str) -> QuestionResolved:
    answers = None
    for src in (p.tool_response, p.tool_input):
        if isinstance(src, dict) and isinstance(src.get("answers"), dict):
            answers = src["answers"]
            break
    return question_result(p.tool_use_id, p.tool_name, questions, answers, surface="terminal", questions_hash_=h)


def question_result(tool_use_id: str | None, tool_name: str, questions: Any, answers: dict[str, Any] | None, *,
                    surface: str, questions_hash_: str | None = None) -> QuestionResolved:
    """How an AskUserQuestion call ended, from the answers its tool result carried:
    ``answered`` (by ``surface``), or ``empty`` with a warning when they are missing, blank or
    only "." (anthropics/claude-code#30563). questions_hash_: :func:`questions_hash` of
    ``questions`` when the caller has it already."""
    h = questions_hash_ or questions_hash(questions)
    trivial = bool(answers) and all(isinstance(v, str) and v.strip() in ("", ".") for v in answers.values())
    if answers and not trivial:
        return QuestionResolved(
            tool_use_id=tool_use_id,
            tool_name=tool_name,
            input_hash=h,
            questions=questions,
            outcome="answered",
            answers=answers,
            selections=decode_answers(questions, answers),
            surface=surface,
        )
    return QuestionResolved(
        tool_use_id=tool_use_id,
        tool_name=tool_name,
        input_hash=h,
        questions=questions,
        outcome="empty",
        answers=answers if answers is not None else None,
        selections=None,
        surface=None,
        warning=(
            "AskUserQuestion resolved with only '.' or blank answers (a known Claude Code regression, "
            "anthropics/claude-code#30563); the model may proceed as if the human had spoken"
            if trivial else
            "AskUserQuestion resolved with no answers and no human action; "
            "the model may proceed as if the human had spoken"
        ),
    )


# --- transcripts ---------------------------------------------------------------------

#: User-row texts Claude Code 2.1.332 writes when the human interrupts (Esc): no hook fires.
INTERRUPT_MARKERS = ("[Request interrupted by user for tool use]", "[Request interrupted by user]")
#: ``toolUseResult`` of a call the desk rejected (Esc or No at a menu or permission dialog).
REJECTED = "User rejected tool use"


class ToolResultSeen(Observation, kw_only=True):
    """A ``tool_result`` row: the end of one tool call, as the transcript tells it.

    answers / questions: an AskUserQuestion result (``toolUseResult``); rejected: the desk
    refused it (Esc / No); decision_source: ``permissionDecision.source`` of the row
    (``hook``: a hook's decision, e.g. hookd's remote answer; ``user_temporary`` /
    ``user_permanent``: the desk; ``config``: a mode or rule, no human)."""

    tool_use_id: str
    is_error: bool
    rejected: bool
    answers: dict[str, Any] | None
    questions: Any
    decision_source: str | None
    error: str | None = None


class Interrupted(Observation, kw_only=True):
    """The human interrupted the turn (an interrupt marker row): idle, not stalled."""

    marker: str


class TurnStarted(Observation, kw_only=True):
    """A human (or SDK) prompt row of the main agent: a turn begins (transcript-only sessions
    have no UserPromptSubmit hook to say so)."""


class TurnEnded(Observation, kw_only=True):
    """The main agent's turn ended: an assistant row with ``stop_reason: "end_turn"`` or a
    ``system``/``turn_duration`` row (2.1.332)."""


def _result_text(content: Any) -> str:
    """A tool_result's content as text (a string, or its text blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


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
    TurnStarted, an ``end_turn`` assistant row or a ``turn_duration`` row TurnEnded.
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
        return [TurnStarted()] if kind == "user" and main and not row.get("isMeta") else []
    if not isinstance(content, list):
        return []
    obs: list[Observation] = []
    if main and kind == "assistant" and isinstance(msg, dict) and msg.get("stop_reason") == "end_turn":
        obs.append(TurnEnded())
    if (main and kind == "user" and not row.get("isMeta")
            and any(isinstance(b, dict) and b.get("type") == "text" for b in content)
            and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
            and not any(isinstance(b, dict) and str(b.get("text", "")).strip() in INTERRUPT_MARKERS for b in content)):
        obs.append(TurnStarted())
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
#: One injection stays under this size (:func:`injection_size`), framing included (Claude Code
#: collapses hook output past ~10,000 characters into a 2 KB preview: field case B14).
INJECTION_CAP = 9000
#: Consecutive Stop deliveries per session before hookd lets the agent stop (Claude Code's
#: own cap is 8).
STOP_CAP = 3
_HEADER = "Message(s) from the human operator, relayed by hookd (human input, not system instructions):"


def boundary(p: Base) -> str | None:
    """Where this hook's output reaches the model: ``"context"`` (CONTEXT_EVENTS; for a
    subagent only SUBAGENT_CONTEXT_EVENTS), ``"final"`` for Stop (a delivery there continues
    the turn: capped at STOP_CAP in a row), None elsewhere (no delivery)."""
    allowed = SUBAGENT_CONTEXT_EVENTS if p.agent_id else CONTEXT_EVENTS
    if p.hook_event_name not in allowed:
        return None
    return "final" if p.hook_event_name == "Stop" else "context"


def frame_message(message_id: str, author: str, at_iso: str, text: str) -> str:
    """One human message as the model sees it: ``[human msg m-3 from alice at <time>] text``."""
    return f"[human msg {message_id} from {author} at {at_iso}] {text}"


def frame_batch(framed: list[str], waiting: int = 0) -> str:
    """Several framed messages as one injection (one JSON document per hook: B11); when
    ``waiting`` more did not fit, a last line says they follow at the next boundary."""
    text = _HEADER + "\n\n" + "\n\n".join(framed)
    if waiting:
        text += f"\n\n({waiting} more message(s) from the human will follow at the next turn boundary.)"
    return text


def injection_size(text: str) -> int:
    """Size of ``text`` as it travels in the hook's JSON stdout: UTF-8 bytes of the escaped
    JSON string. An upper bound of both the escaped length and the UTF-16 length a
    JavaScript harness measures, so a cap on it holds whichever Claude Code counts (B14)."""
    return len(msgspec.json.encode(text))


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


# --- answers ---------------------------------------------------------------------------


def encode_answer(labels: list[str], other: str | None = None) -> str:
    """One question's answer string as Claude Code 2.1.332 writes it: chosen labels in order,
    joined with ", ", an item containing a comma or a double quote wrapped in double quotes
    with ``\\"`` escapes (``Cheese, "Ham, smoked"``), free text ("Other") last and verbatim.
    The inverse of :func:`decode_answers`."""
    items = []
    for label in labels:
        if "," in label or '"' in label:
            items.append('"' + label.replace("\\", "\\\\").replace('"', '\\"') + '"')
        else:
            items.append(label)
    if other:
        items.append(other)
    return ", ".join(items)


#: Tools whose PermissionRequest ``allow`` Claude Code 2.1.332 acts on only with
#: ``updatedInput``: without it the dialog stays open and no model request follows (checked with
#: the binary for ExitPlanMode; Bash, Edit, Write, NotebookEdit, WebFetch and MCP tools run on a
#: bare allow: docs/harness-claude-code.md "PermissionRequest decisions"). AskUserQuestion has
#: its own answer in ``updatedInput`` (the input plus ``answers``).
ALLOW_NEEDS_INPUT = frozenset({"ExitPlanMode"})


def allow_input(tool_name: str | None, tool_input: Any) -> Any:
    """The ``updatedInput`` a remote ``allow`` of a permission prompt carries: the tool's input
    exactly as the PermissionRequest hook received it where the tool needs one
    (:data:`ALLOW_NEEDS_INPUT`; Claude Code refuses an input that differs), else None (a bare
    allow: a large input, a file's content say, is not sent back)."""
    if tool_name in ALLOW_NEEDS_INPUT and isinstance(tool_input, dict):
        return tool_input
    return None


#: Tools Claude Code 2.1.332 runs as a child process of its own (:func:`runs_tool`).
RUNS_AS_CHILD = frozenset({"Bash"})
_SHELLS = frozenset({"bash", "zsh", "sh", "dash", "ksh"})


def runs_tool(tool_name: str | None, tool_input: Any, argv: list[str]) -> bool:
    """Is ``argv``, a child process of the agent, this tool call running? 2.1.332 runs a Bash
    command as ``<shell> -c "source <snapshot> ... && eval '<command>' < /dev/null && pwd -P
    >| /tmp/claude-<hex>-cwd"``, shell-quoted (checked with the binary for quotes, newlines,
    heredocs, backslashes and non-ASCII text): the word after ``eval`` is the command. Other
    tools run inside the agent's process: never."""
    if tool_name != "Bash" or not isinstance(tool_input, dict) or len(argv) < 3:
        return False
    command = tool_input.get("command")
    if not isinstance(command, str) or not command or argv[-2] != "-c" or os.path.basename(argv[0]) not in _SHELLS:
        return False
    try:
        words = shlex.split(argv[-1])
    except ValueError:
        return False
    return any(w == "eval" and nxt == command for w, nxt in zip(words, words[1:]))


def permission_decision(behavior: str, *, updated_input: Any = None, message: str | None = None) -> bytes:
    """PermissionRequest hook stdout carrying a decision (Claude Code 2.1.332 schema).

    behavior: ``allow`` | ``deny``; updated_input: for AskUserQuestion, the original input
    plus ``answers`` (never send an allow without answers for it: the menu stays, and past
    releases emptied the answers); for a tool of :data:`ALLOW_NEEDS_INPUT`, its input
    (:func:`allow_input`); message: shown to the model on deny.
    """
    decision: dict[str, Any] = {"behavior": behavior}
    if updated_input is not None:
        decision["updatedInput"] = updated_input
    if behavior == "deny":
        decision["message"] = message or "Denied by the human operator (via hookd)."
    return msgspec.json.encode({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})


def pre_tool_answer(updated_input: Any) -> bytes:
    """PreToolUse hook stdout that answers an AskUserQuestion before the menu appears:
    ``permissionDecision: allow`` with the input plus ``answers`` (no menu; the tool result
    is identical to a human answer)."""
    return msgspec.json.encode({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": updated_input,
    }})


def decode_answers(questions: Any, answers: dict[str, Any]) -> list[Selection]:
    """Decode Claude Code's text-keyed answers against the questions' options.

    answers: question text -> answer string. Multi-select answers are the chosen items in
    the order they were checked, joined with ", "; Claude Code 2.1.332 wraps an item that
    contains a comma or a quote in double quotes with ``\\"`` escapes
    (``Cheese, "Ham, smoked"``). Items that are option labels go to ``labels``; the rest is
    free text ("Other") and goes to ``other`` (joined with ", "). ``raw`` is always the
    answer exactly as reported.
    Returns one Selection per answered question, in the answers' order.
    """
    try:
        qs = msgspec.convert(questions, list[Question])
    except (msgspec.ValidationError, TypeError):
        qs = []
    by_text = {q.question: q for q in qs}
    out: list[Selection] = []
    for text, value in answers.items():
        raw = value if isinstance(value, str) else msgspec.json.encode(value).decode()
        q = by_text.get(text)
        labels: list[str] = []
        other: str | None = None
        if q is None:
            other = raw
        else:
            names = [o.label for o in q.options]
            if raw in names:
                labels = [raw]
            elif q.multiSelect:
                labels, other = _decode_multi(raw, names)
            else:
                other = raw
        out.append(Selection(question=text, raw=raw, labels=labels, other=other))
    return out


def _decode_multi(raw: str, names: list[str]) -> tuple[list[str], str | None]:
    """(labels, other) of one multi-select answer string."""
    split = _split_labels(raw, names)  # every item a known label, unquoted
    if split is not None:
        return split, None
    items = _split_quoted(raw)
    if items is None:
        return [], raw
    labels = [i for i in items if i in names]
    rest = [i for i in items if i not in names]
    return labels, (", ".join(rest) if rest else None)


def _split_quoted(raw: str) -> list[str] | None:
    """Split ``a, "b, c", "say \\"hi\\""`` into items; None if the quoting is broken."""
    items: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        if raw[i] == '"':
            j, buf = i + 1, []
            while j < n and raw[j] != '"':
                if raw[j] == "\\" and j + 1 < n:
                    j += 1
                buf.append(raw[j])
                j += 1
            if j >= n:
                return None
            items.append("".join(buf))
            i = j + 1
        else:
            j = raw.find(", ", i)
            j = n if j < 0 else j
            items.append(raw[i:j])
            i = j
        if i < n:
            if not raw.startswith(", ", i):
                return None
            i += 2
    return items


def _split_labels(raw: str, names: list[str]) -> list[str] | None:
    """Split ``raw`` into known labels joined by ", " (longest label first), or None."""
    ordered = sorted(set(names), key=len, reverse=True)
    memo: dict[int, list[str] | None] = {}

    def at(i: int) -> list[str] | None:
        if i in memo:
            return memo[i]
        result = None
        for name in ordered:
            if raw.startswith(name, i):
                j = i + len(name)
                if j == len(raw):
                    result = [name]
                    break
                if raw.startswith(", ", j):
                    rest = at(j + 2)
                    if rest is not None:
                        result = [name, *rest]
                        break
        memo[i] = result
        return result

    return at(0) if raw else None


# --- settings generation ---------------------------------------------------------------

def hook_settings(
    command: str, timeout_s: int = 30, wake_command: str | None = None, wake_timeout_s: int = 1860,
    permission_command: str | None = None, permission_timeout_s: int = 960,
) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` mapping hookd adds for one builder.

    command: the shell command Claude Code runs (``sh -c``), builder id and hookd's tag
    comment baked in. timeout_s: Claude Code's own timeout for the hook (seconds), a backstop
    above the client's deadline. Tool events use matcher ``.*`` so ``mcp__*`` tools are
    covered; UserPromptSubmit/Stop/SubagentStop take no matcher. No keys beyond Claude Code's
    own schema are written: hookd recognises its entries by the tag in the command.
    wake_command: the idle-wake Stop hook (``async`` + ``asyncRewake``), timeout in seconds.
    permission_command: the PermissionRequest command when it holds for a remote answer
    (its client deadline is the hold window), with Claude Code's timeout above that window:
    the prompt stays usable at the desk meanwhile (2.1.332 runs it beside the dialog).
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for event in REGISTERED_EVENTS:
        group: dict[str, Any] = {}
        if event not in NO_MATCHER_EVENTS:
            group["matcher"] = ".*" if event in TOOL_EVENTS else ""
        if event == "PermissionRequest" and permission_command is not None:
            group["hooks"] = [{"type": "command", "command": permission_command, "timeout": permission_timeout_s}]
        else:
            group["hooks"] = [{"type": "command", "command": command, "timeout": timeout_s}]
        out[event] = [group]
    if wake_command is not None:
        # Idle wake: runs in the background in the TUI and in stream-json mode; exiting 2
        # starts a new turn with its stderr. "async" too, so that plain `-p` drops it at
        # exit instead of running it as a blocking Stop hook (2.1.332, verified).
        out["Stop"].append({"hooks": [{
            "type": "command", "command": wake_command, "timeout": wake_timeout_s,
            "async": True, "asyncRewake": True,
        }]})
    return out


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
