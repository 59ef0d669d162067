"""Codex CLI adapter: classification, delivery at turn boundaries, rollouts (its payload
models in :mod:`hookd.harness.codex_payloads`, its outputs, hook file and trust in
:mod:`hookd.harness.codex_hooks`).

Facts per Codex 0.171.0 (docs/harness-codex.md, recorded fixtures in
``fixtures/codex/0.171.0``). Pure: no I/O, no store, no server. The module is a
:class:`hookd.harness.base.Adapter` and a :class:`hookd.harness.base.TranscriptReader`
(Codex's rollouts, ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``).
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Iterable, Mapping

import msgspec

from hookd.harness import codex_hooks, tool_views
from hookd.harness.base import (
    Compacting,
    HookKind,
    Interrupted,
    Observation,
    Payload,
    PermissionAsked,
    QuestionAsked,
    RemoteAnswers,
    SessionEnded,
    SessionStarted,
    SubagentStarted,
    SubagentStopped,
    ToolFinished,
    ToolResultSeen,
    ToolView,
    TurnEnded,
    TurnMovedOn,
    TurnStarted,
    input_hash,
    known_fields_of,
    question_result,
    questions_hash,
    text,
)
from hookd.harness.codex_hooks import REGISTERED_EVENTS as REGISTERED_EVENTS  # (re-exported)
from hookd.harness.codex_payloads import (
    MODELS,
    Base,
    Interrupt,
    PermissionRequest,
    PostToolUse,
    PreCompact,
    PreToolUse,
    SessionEnd,
    SessionStart,
    Stop,
    SubagentStart,
    SubagentStop,
    ToolEvent,
    UserPromptSubmit,
)
from hookd.harness.install import HookInstall
from hookd.harness.launch import Launcher
from hookd.models import PayloadInvalid
from hookd.untrusted import decode_json

HARNESS = "codex"
VERSION = "0.171.0"

# Traits (hookd.harness.base.Adapter): a permission prompt is answered remotely through a
# held PermissionRequest hook; every tool call has its tool_use_id (the model's call_id) on
# Pre/PostToolUse; a delivery counts as seen when the rollout or a later hook proves it; Codex
# has no asynchronous Stop hook to hold while idle.
desk_only = False
#: ``request_user_input`` goes to Codex's TUI or app-server client, never to a hook (no hook
#: output answers it): a remote answer to it becomes an inbox message, delivered at the next
#: boundary (docs/decisions.md "Codex: request_user_input is a desk question").
questions_at_desk = True
sequential_questions = False
needs_context = False
ack_required = False
idle_wake = False
#: Stop ends every turn.
quiet_idle = False
version: str | None = VERSION
#: How `hookd run` / `hookd continue` start Codex: its TUI with ``--no-daemon``, ``codex exec``,
#: ``codex resume`` / ``codex exec resume`` (:data:`hookd.harness.codex_hooks.LAUNCH`).
launchers: Mapping[str, Launcher] = {HARNESS: codex_hooks.LAUNCH}
#: What its hook events mean to the core. Interrupt ends a turn with no Stop after it (the
#: turn completes ``interrupted``): a ``turn_end``. PreCompact / PostCompact: the
#: ``Compacting`` observation; SubagentStart: ``SubagentStarted``; Pre/PostModelRequest: none
#: (not registered).
hook_kinds: Mapping[str, HookKind] = {
    "SessionStart": "session_start", "SessionEnd": "session_end", "UserPromptSubmit": "prompt",
    "Stop": "turn_end", "Interrupt": "turn_end", "SubagentStop": "subagent_end", "PreToolUse": "tool_before",
    "PermissionRequest": "permission", "PostToolUse": "tool_after",
}
#: A remote answer to a permission prompt reaches Codex through the held hook's output.
remote_answers: RemoteAnswers | None = codex_hooks
#: `hookd spawn --harness codex`: ``<worktree>/.codex/hooks.json`` and its trust.
hook_installs: Mapping[str, HookInstall] = {HARNESS: codex_hooks.INSTALL}


def known_fields(event_name: str) -> frozenset[str] | None:
    """Top-level payload fields hookd's model of ``event_name`` knows, None if the event
    itself is unknown."""
    return known_fields_of(MODELS, event_name)


def call_input(p: Payload) -> Any:
    """A tool event's ``tool_input``; None for any other payload."""
    return p.tool_input if isinstance(p, ToolEvent) else None


def present_tool(tool_name: str | None, tool_input: Any) -> ToolView:
    """A Codex 0.171.0 tool call as a person reads it: ``Bash`` (its shell tool, as its hooks
    name it) a command with its ``description`` (the call's justification, on a
    PermissionRequest); any other tool compact JSON."""
    f = functools.partial(tool_views.field, tool_input)
    if tool_name == "Bash":
        return tool_views.command_view(f("command"), f("description"))
    return tool_views.json_view(tool_input)


def parse(raw: bytes, *, builder: str | None = None, cwd: str | None = None) -> Base:
    """Decode one hook payload.

    raw: the hook's stdin bytes (builder, cwd: unused, the payload names its session).
    Returns the typed payload for known events, :class:`Base` for unknown ones. Raises
    PayloadInvalid when ``raw`` is not one JSON object with a string ``hook_event_name``, or
    a known field has the wrong type (its ``session_id`` attached when it has one).
    """
    try:
        obj = decode_json(raw)
    except (msgspec.DecodeError, RecursionError) as e:
        raise PayloadInvalid(f"payload is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise PayloadInvalid(f"payload must be a JSON object, got {type(obj).__name__}")
    name = obj.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise PayloadInvalid("payload has no string 'hook_event_name'")
    try:
        p = msgspec.convert(obj, MODELS.get(name, Base))
    except msgspec.ValidationError as e:
        err = PayloadInvalid(f"{name} payload: {e}")
        sid = obj.get("session_id")
        err.session_id = sid if isinstance(sid, str) else None
        raise err from None
    if isinstance(p, SubagentStart):
        # its transcript_path is the subagent's own rollout: the session's stays the parent's
        p = msgspec.structs.replace(p, transcript_path=None)
    return p


def match_input(tool_name: str | None, tool_input: Any) -> Any:
    """The part of a PermissionRequest's ``tool_input`` its PostToolUse repeats: for ``Bash``
    without ``description`` (0.171.0 adds the call's justification there only), so the prompt
    and the call that ran hash alike."""
    if tool_name == "Bash" and isinstance(tool_input, dict):
        return {k: v for k, v in tool_input.items() if k != "description"}
    return tool_input


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
    elif isinstance(p, (Stop, UserPromptSubmit, Interrupt)):  # SubagentStop is a Stop
        obs.append(TurnMovedOn(agent_id=p.agent_id, all_agents=False, outcome="dismissed", via=p.hook_event_name))
        if isinstance(p, SubagentStop) and p.agent_id:
            obs.append(SubagentStopped(agent_id=p.agent_id, agent_type=text(p.agent_type),
                                       transcript_path=text(p.agent_transcript_path)))
    elif isinstance(p, PreCompact):
        obs.append(Compacting(via=p.hook_event_name))
    elif isinstance(p, PermissionRequest):
        obs.append(PermissionAsked(
            tool_name=p.tool_name, tool_input=p.tool_input,
            input_hash=input_hash(match_input(p.tool_name, p.tool_input)),
            permission_mode=text(p.permission_mode),
        ))
    elif isinstance(p, (PreToolUse, PostToolUse)) and p.tool_name == ASK_TOOL:
        obs.append(_question_hook(p))
    elif isinstance(p, PostToolUse):
        obs.append(ToolFinished(tool_use_id=p.tool_use_id, tool_name=p.tool_name, tool_input=p.tool_input,
                                failed=False, error=None))
    return obs


# --- questions (request_user_input) ----------------------------------------------------

#: Codex's ask-the-user tool. Its hooks (PreToolUse, PostToolUse) show it; only the TUI or the
#: app-server client answers it (``questions_at_desk``).
ASK_TOOL = "request_user_input"


def questions_of(tool_input: Any) -> list[dict[str, Any]]:
    """``request_user_input``'s ``{"questions": [{"id", "header", "question", "options":
    [{"label", "description"}]}]}`` in hookd's question shape (Claude Code's: ``question``,
    ``header``, ``options``, ``multiSelect`` False: Codex takes one answer per question) plus
    Codex's ``id`` of each (its answers are keyed by it); entries that are not objects with a
    string ``question`` are left out."""
    qs = tool_input.get("questions") if isinstance(tool_input, dict) else None
    out: list[dict[str, Any]] = []
    for q in qs if isinstance(qs, list) else ():
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            continue
        opts = q.get("options")
        opts = opts if isinstance(opts, list) else []
        out.append({"question": q["question"], "header": text(q.get("header")), "multiSelect": False,
                    "options": [{"label": o["label"], "description": text(o.get("description"))}
                                for o in opts if isinstance(o, dict) and isinstance(o.get("label"), str)],
                    "id": text(q.get("id"))})
    return out


def answers_by_id(output: Any) -> dict[str, str] | None:
    """The answers in a ``request_user_input`` call's output, ``{"answers": {"<question id>":
    {"answers": ["Blue"]}}}`` as a JSON string (what the client replied, as the model, the
    rollout and PostToolUse get it): question id -> answer string (the items joined by
    ``", "``: one option label, or free text). None when ``output`` is not that (Codex refused
    the tool: ``exec``'s "request_user_input is unavailable in Default mode")."""
    try:
        obj = decode_json(output.encode()) if isinstance(output, str) else None
    except (msgspec.DecodeError, RecursionError):
        return None
    got = obj.get("answers") if isinstance(obj, dict) else None
    if not isinstance(got, dict):
        return None
    out: dict[str, str] = {}
    for qid, a in got.items():
        items = a.get("answers") if isinstance(a, dict) else None
        if isinstance(items, list):
            out[qid] = ", ".join(i for i in items if isinstance(i, str))
    return out


def by_question_text(questions: Any, answers: dict[str, str]) -> dict[str, str]:
    """``answers`` keyed by question id (:func:`answers_by_id`) keyed by question text instead,
    hookd's answers, against ``questions`` (:func:`questions_of`); ids it has not are left out."""
    texts: dict[Any, Any] = ({q.get("id"): q.get("question") for q in questions if isinstance(q, dict)}
                             if isinstance(questions, list) else {})
    return {texts[k]: v for k, v in answers.items() if isinstance(texts.get(k), str)}


def _question_hook(p: PreToolUse | PostToolUse) -> Observation:
    """PreToolUse of ``request_user_input``: the question is pending (its menu opens at the
    desk next); PostToolUse: answered there, with what the client replied."""
    questions = questions_of(p.tool_input)
    if isinstance(p, PostToolUse):
        got = answers_by_id(p.tool_response)
        answers = by_question_text(questions, got) if got is not None else None
        return question_result(p.tool_use_id, ASK_TOOL, questions, answers, surface="terminal")
    return QuestionAsked(tool_use_id=p.tool_use_id, tool_name=ASK_TOOL, input_hash=questions_hash(questions),
                         questions=questions, via=p.hook_event_name, tool_input=p.tool_input)


# --- delivery (turn boundaries) -------------------------------------------------------

#: Hook events whose ``additionalContext`` 0.171.0 puts into the model's next input, as a
#: ``developer`` message (docs/harness-codex.md "Hook output").
CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PostToolUse"})
#: Subagents receive only what is addressed to them, at their tool results.
SUBAGENT_CONTEXT_EVENTS = frozenset({"PostToolUse"})
#: The turn's end: a delivery there is a Stop block, which continues the same turn.
FINAL_EVENT = "Stop"


def boundary(p: Payload) -> str | None:
    """Where this hook's output reaches the model: ``"context"`` (CONTEXT_EVENTS; for a
    subagent only SUBAGENT_CONTEXT_EVENTS), ``"final"`` for the main agent's Stop (a block
    continues the turn: capped at STOP_CAP in a row), None elsewhere."""
    if p.agent_id:
        return "context" if p.hook_event_name in SUBAGENT_CONTEXT_EVENTS else None
    if p.hook_event_name == FINAL_EVENT:
        return "final"
    return "context" if p.hook_event_name in CONTEXT_EVENTS else None


def render_context(hook_event_name: str, text: str) -> bytes:
    """The hook stdout that puts ``text`` before the model at ``hook_event_name``: on Stop
    ``{"decision": "block", "reason": text}`` (0.171.0 fails a Stop output carrying
    ``additionalContext``; the reason reaches the model as a user message
    ``<hook_prompt ...>text</hook_prompt>`` and the same turn goes on:
    docs/decisions.md "Codex: a message at the end of a turn"), elsewhere
    ``{"hookSpecificOutput": {"hookEventName", "additionalContext": text}}``."""
    if hook_event_name == FINAL_EVENT:
        return msgspec.json.encode({"decision": "block", "reason": text})
    return msgspec.json.encode({"hookSpecificOutput": {"hookEventName": hook_event_name, "additionalContext": text}})


# --- rollouts (TranscriptReader) --------------------------------------------------------

#: Rollout row ``type`` values seen in 0.171.0's rollouts; others are listed by `hookd drift`.
TRANSCRIPT_ROW_TYPES = frozenset({
    "session_meta", "turn_context", "world_state", "response_item", "event_msg", "token_usage_record", "compacted",
})
#: The ``hooks_unarmed`` advice for a Codex session whose rollout moves with no hook from it.
UNARMED_ADVICE = (
    "Codex runs a project's hooks only when the project and each hook are trusted, and skips "
    "untrusted ones (its TUI asks to review them; codex exec says nothing): `hookd status` says which; `hookd spawn B --worktree W "
    "--harness codex --trust` trusts hookd's. Until then hookd follows the session from its rollout."
)
_ROLLOUT = re.compile(r"^rollout-.+-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")


def is_transcript(path: str) -> bool:
    """Is ``path`` a Codex rollout: ``rollout-<time>-<thread id>.jsonl`` under a
    ``sessions`` folder?"""
    return _ROLLOUT.match(os.path.basename(path)) is not None and f"{os.sep}sessions{os.sep}" in path


def transcript_session(builder: str, path: str) -> str | None:
    """The thread id the rollout's name ends with (the hooks' ``session_id``)."""
    m = _ROLLOUT.match(os.path.basename(path))
    return m.group(1) if m else None


def row_session(row: dict[str, Any]) -> str | None:
    """The session a rollout row names: only its first row, ``session_meta``, does."""
    payload = row.get("payload")
    if row.get("type") == "session_meta" and isinstance(payload, dict):
        return text(payload.get("id"))
    return None


def row_root(row: dict[str, Any]) -> str | None:
    """None: forks of a Codex thread are not traced."""
    return None


def transcript_observations(row: dict[str, Any]) -> list[Observation]:
    """What one rollout row tells: an ``event_msg`` ``task_started`` a turn started,
    ``task_complete`` it ended, ``turn_aborted`` it was interrupted; a ``response_item``
    ``function_call`` of ``request_user_input`` a pending question (via ``transcript``), a
    ``function_call_output`` its end (:func:`call_output`). Pure."""
    payload = row.get("payload")
    if row.get("type") == "response_item" and isinstance(payload, dict):
        return _call_row(payload)
    if row.get("type") != "event_msg" or not isinstance(payload, dict):
        return []
    kind = payload.get("type")
    if kind == "task_started":
        return [TurnStarted()]
    if kind == "task_complete":
        return [TurnEnded()]
    if kind == "turn_aborted":
        return [Interrupted(marker=f"turn_aborted: {text(payload.get('reason')) or '-'}")]
    return []


def _call_row(item: dict[str, Any]) -> list[Observation]:
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        return []
    if item.get("type") == "function_call" and item.get("name") == ASK_TOOL:
        try:
            tool_input = decode_json(item["arguments"].encode()) if isinstance(item.get("arguments"), str) else None
        except (msgspec.DecodeError, RecursionError):
            tool_input = None
        questions = questions_of(tool_input)
        return [QuestionAsked(tool_use_id=call_id, tool_name=ASK_TOOL, input_hash=questions_hash(questions),
                              questions=questions, via="transcript", tool_input=tool_input)]
    if item.get("type") == "function_call_output":
        return [call_output(call_id, item.get("output"))]
    return []


def call_output(call_id: str, output: Any) -> ToolResultSeen:
    """A ``function_call_output`` row: the end of call ``call_id`` (the core reads it only for
    a question's call). Answers keyed by question id (``answers_by_id``: the row does not
    repeat the questions; the core keys them by text against the pending question's ids); an
    output that is no answer is Codex refusing the tool (``is_error``, the output as ``error``)."""
    answers = answers_by_id(output)
    return ToolResultSeen(tool_use_id=call_id, is_error=answers is None, rejected=False, answers=answers,
                          questions=None, decision_source=None, answers_by_id=answers is not None,
                          error=(text(output) or "")[:500] if answers is None else None)


def unknown_blocks(row: dict[str, Any]) -> int:
    """0: rollout items are not counted by type."""
    return 0


_MARKER = re.compile(r"\[human msg (m-\d+) ")


def _texts(content: Any) -> Iterable[str]:
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            yield block["text"]


def sent_message_ids(lines: Iterable[bytes]) -> set[str]:
    """Ids of hookd messages a rollout proves are in the conversation the model is sent: a
    ``response_item`` ``message`` row (a ``developer`` message from ``additionalContext``, a
    ``user`` message from a Stop block's reason) whose text carries hookd's marker. Codex
    sends the whole conversation with each request, so an item in it reaches the model's next
    request. Torn or unknown lines are skipped."""
    ids: set[str] = set()
    for line in lines:
        if b"[human msg " not in line or b"response_item" not in line:
            continue
        try:
            row = decode_json(line)
        except (msgspec.DecodeError, RecursionError):
            continue
        payload = row.get("payload") if isinstance(row, dict) else None
        if row.get("type") != "response_item" or not isinstance(payload, dict) or payload.get("type") != "message":
            continue
        for t in _texts(payload.get("content")):
            ids.update(_MARKER.findall(t))
    return ids
