"""hookd's harness-neutral observations and question shape: what an adapter reports and the
core applies (re-exported by :mod:`hookd.harness.base`, where the adapter protocol that
produces them lives; import them from there).

- the observations (:class:`Observation` and its subclasses: the whole vocabulary): what the
  core applies, one transaction per hook or transcript read;
- questions: hookd's question shape (Claude Code's ``AskUserQuestion`` input, which every
  adapter maps its questions to), their hashes (:func:`questions_hash`, :func:`input_hash`),
  their answers as text (:func:`encode_answer`, :func:`decode_answers`) and
  :func:`question_result`.

Pure: no I/O. Depends only on :mod:`hookd.models` and :mod:`hookd.harness.answer_text`.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from hookd.harness.answer_text import decode_multi
from hookd.models import Selection


def text(v: Any) -> str | None:
    """``v`` if it is a string, else None: for descriptive fields typed ``Any``."""
    return v if isinstance(v, str) else None


# --- questions ----------------------------------------------------------------------------


class Option(msgspec.Struct):
    label: str
    description: str | None = None


class Question(msgspec.Struct):
    """One question of hookd's question shape: Claude Code's AskUserQuestion
    ``tool_input.questions[i]``, which every adapter maps its questions to."""

    question: str
    header: str | None = None
    options: list[Option] = []
    multiSelect: bool = False


# --- observations ----------------------------------------------------------------------


class Observation(msgspec.Struct, kw_only=True):
    """Something the core must apply, as an adapter's ``observe`` or
    ``transcript_observations`` reports it. Subclasses are the whole vocabulary."""


class QuestionAsked(Observation, kw_only=True):
    """A question tool call was seen (Claude Code's AskUserQuestion, claw's AskUserQuestion or
    ask_user). ``via``: the hook event that showed it (``transcript``: a transcript row);
    questions: in hookd's question shape (:class:`Question`); tool_input: the call's whole
    input (questions plus any metadata), as shown."""

    tool_use_id: str | None
    tool_name: str
    input_hash: str
    questions: Any
    via: str
    tool_input: Any = None


class PermissionAsked(Observation, kw_only=True):
    """A permission prompt for an ordinary tool (Claude Code's PermissionRequest; it has no
    tool_use_id). input_hash: :func:`input_hash` of tool_input, the exact input shown to the
    human."""

    tool_name: str
    tool_input: Any
    input_hash: str
    permission_mode: str | None


#: How a human approves a plan (:class:`PlanAsked`): ``auto`` the agent goes on in its
#: harness's most autonomous mode that needs no prompt (Claude Code: auto mode), ``manual``
#: every edit asks again (Claude Code: default, "manually approve edits").
PLAN_MODES = ("auto", "manual")


class PlanAsked(PermissionAsked, kw_only=True):
    """A plan waiting on a human's approval before the agent leaves planning (Claude Code's
    ExitPlanMode PermissionRequest): a permission prompt of its own kind, answered by approving
    it in one of :data:`PLAN_MODES` or sending it back with feedback. plan: the plan's text
    (markdown, the agent's own; None when the agent wrote none); plan_path: the file it was
    read from, or None."""

    plan: str | None
    plan_path: str | None


class ToolFinished(Observation, kw_only=True):
    """An ordinary tool call ended (Claude Code's PostToolUse, or PostToolUseFailure with
    ``failed``): the permission prompt for it, if any, is over. The input is hashed only when
    needed."""

    tool_use_id: str | None
    tool_name: str
    tool_input: Any
    failed: bool
    error: str | None
    #: a plan's tool call that ran (approved): the mode of :data:`PLAN_MODES` the agent goes
    #: on in, as the harness reports it; None for other tools, or when it does not say
    plan_mode: str | None = None


class QuestionResolved(Observation, kw_only=True):
    """A question tool call ended. ``outcome``: answered | empty | dismissed;
    ``selections``: :func:`decode_answers` of ``answers``."""

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
    """A session started or restarted. ``source``: startup | resume | clear | compact (Claude
    Code's SessionStart), None when the harness does not say."""

    source: str | None


class SessionEnded(Observation, kw_only=True):
    """The session ended (``reason`` as the harness gives it)."""

    reason: str | None


class TurnMovedOn(Observation, kw_only=True):
    """The agent's turn went on past any open question: Claude Code 2.1.332 fires no hook
    when the AskUserQuestion menu is escaped, so a later Stop / UserPromptSubmit (same agent)
    or SubagentStop (that subagent) is the hooks' only sign the question is gone (claw-http: a
    ``before_final`` drain).
    agent_id: whose questions (None: the main agent); all_agents: SessionEnd closes every
    question of the session; outcome: ``dismissed`` or ``orphaned``."""

    agent_id: str | None
    all_agents: bool
    outcome: str
    via: str


class SubagentStarted(Observation, kw_only=True):
    """A subagent of the session's agent started (Claude Code's SubagentStart: an Agent tool
    call's agent). agent_id: the harness's id of it (its hooks carry the same); agent_type:
    what kind of agent (``general-purpose``, a custom agent's name), None when not given."""

    agent_id: str
    agent_type: str | None


class SubagentStopped(Observation, kw_only=True):
    """A subagent finished its work (Claude Code's SubagentStop). transcript_path: its own
    transcript (2.1.332: ``<session>/subagents/agent-<id>.jsonl``), None when not given."""

    agent_id: str
    agent_type: str | None
    transcript_path: str | None


class TurnFailed(Observation, kw_only=True):
    """The agent's turn ended on an error of the model's API, not a Stop (Claude Code's
    StopFailure: the harness's own retries are over). ``error``: the harness's kind of error
    (Claude Code 2.1.332: ``rate_limit``, ``overloaded``, ``server_error``,
    ``authentication_failed``, ``billing_error``, ``invalid_request``, ``model_not_found``,
    ``max_output_tokens``, ``unknown``, ...), None when it gave none; ``details``: its detail
    text, if any; ``message``: the last assistant message (the error as the agent's screen
    shows it), if any; ``transient``: waiting and prompting again may be enough (a rate limit,
    an overloaded or failing server), else something must be fixed first (a login, billing,
    the model's name); ``advice``: what a human should do, in a few words. The lane is
    ``stalled`` (transient) or ``failed`` with it (:func:`hookd.watchers.lanes.derive`)."""

    error: str | None
    details: str | None
    message: str | None
    transient: bool
    advice: str


class PermissionRefused(Observation, kw_only=True):
    """A tool call was refused without asking a human (Claude Code's PermissionDenied: auto
    mode's safety check). ``reason``: the harness's words; ``server``: the MCP server of an
    MCP tool, if any. Recorded for a human to see; nothing waits on an answer."""

    tool_use_id: str | None
    tool_name: str
    tool_input: Any
    reason: str | None
    server: str | None = None


class DialogAtDesk(Observation, kw_only=True):
    """The harness says a dialog waits on a human where the agent runs, with no hook of its own
    to hold (Claude Code's Notification ``permission_prompt`` or ``agent_needs_input``: auto
    mode's check could not run and the TUI asks instead, with no PermissionRequest). ``kind``:
    the harness's name for it; ``message``: its words (untrusted). The call it is about is the
    agent's open tool call (the core finds it: its ``tool_before`` hook)."""

    kind: str
    message: str | None


class AttentionAsked(Observation, kw_only=True):
    """The agent itself asked for its human's attention through a tool of its harness (Claude
    Code's PushNotification, or SendUserMessage in brief mode), after the call ran. ``message``:
    the agent's text (untrusted); ``urgent``: the adapter's judgement that the agent is
    initiating (a push; a message marked proactive) rather than replying to what was just
    asked; ``status``: the harness's own word for it, if any. Nothing waits on an answer."""

    tool_use_id: str | None
    tool_name: str
    message: str
    urgent: bool
    status: str | None = None


class SettingsChanged(Observation, kw_only=True):
    """A settings file the harness reads changed while the session runs (Claude Code's
    ConfigChange). ``source``: the harness's word for which settings (``local_settings``,
    ...); ``file_path``: the file as the harness reports it. The core never reads that path:
    it checks the file spawn wrote against spawn's own record (:mod:`hookd.core.hookhealth`)."""

    source: str | None
    file_path: str | None


def questions_hash(questions: Any) -> str:
    """Stable hash (hex, 24 chars) of a ``questions`` value (hookd's question shape).

    Used to match a PermissionRequest (which lacks ``tool_use_id``) to its PreToolUse, and
    transcript rows to hook rows. Key order does not matter.
    """
    return input_hash(questions)


def input_hash(value: Any) -> str:
    """Stable hash (hex, 24 chars) of any JSON value (a tool input); key order does not
    matter. Matches a PermissionRequest to the PostToolUse of the same call."""
    canon = msgspec.json.encode(value, order="sorted")
    return hashlib.sha256(canon).hexdigest()[:24]


def question_result(tool_use_id: str | None, tool_name: str, questions: Any, answers: dict[str, Any] | None, *,
                    surface: str, questions_hash_: str | None = None) -> QuestionResolved:
    """How a question tool call ended, from the answers its tool result carried:
    ``answered`` (by ``surface``), or ``empty`` with a warning when they are missing, blank or
    only "." (anthropics/claude-code#30563). questions_hash_: :func:`questions_hash` of
    ``questions`` when the caller has it already."""
    h = questions_hash_ or questions_hash(questions)
    trivial = answers is not None and bool(answers) and all(
        isinstance(v, str) and v.strip() in ("", ".") for v in answers.values())
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


def encode_answer(labels: list[str], other: str | None = None) -> str:
    """One question's answer string (hookd's answers, as Claude Code 2.1.332 writes them):
    chosen labels in order,
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


def decode_answers(questions: Any, answers: dict[str, Any]) -> list[Selection]:
    """Decode text-keyed answers (Claude Code's form, which claw's are mapped to) against the
    questions' options.

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
                labels, other = decode_multi(raw, names)
            else:
                other = raw
        out.append(Selection(question=text, raw=raw, labels=labels, other=other))
    return out


# --- observations of transcripts and tool results ------------------------------------------


class ToolResultSeen(Observation, kw_only=True):
    """A ``tool_result`` row: the end of one tool call, as the transcript tells it.

    answers / questions: a question tool's result (Claude Code's ``toolUseResult``, claw's
    ``{"question", "answer"}`` output); rejected: the desk
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
    #: ``answers`` are keyed by each question's ``id`` in the call's questions (Codex's
    #: ``request_user_input``), not by its text; ``questions`` is then None
    answers_by_id: bool = False


class Interrupted(Observation, kw_only=True):
    """The human interrupted the turn (an interrupt marker row): idle, not stalled."""

    marker: str


class TurnStarted(Observation, kw_only=True):
    """A human (or SDK) prompt row of the main agent: a turn begins (transcript-only sessions
    have no UserPromptSubmit hook to say so). text: what the human wrote (its text blocks
    joined by a line break), None when the row carries none; a queued inbox message with the
    same text reached the model as this prompt (field case B30)."""

    text: str | None = None


class TurnEnded(Observation, kw_only=True):
    """The main agent's turn ended: an assistant row with ``stop_reason: "end_turn"`` or a
    ``system``/``turn_duration`` row (2.1.332)."""


class ElicitationAsked(Observation, kw_only=True):
    """A tool server asks the human for input (an MCP elicitation: Claude Code's Elicitation
    hook). server: the MCP server's name; message: its request text; mode: ``form`` (fill
    ``requested_schema``, a JSON Schema object of flat fields) or ``url`` (open ``url``);
    elicitation_id: the server's id (url mode), None when it gave none."""

    server: str
    message: str | None
    mode: str
    url: str | None
    elicitation_id: str | None
    requested_schema: Any


class ElicitationResolved(Observation, kw_only=True):
    """The human answered an elicitation at the desk (Claude Code's ElicitationResult): action
    ``accept`` (with ``content``: field -> value), ``decline`` or ``cancel``."""

    server: str
    elicitation_id: str | None
    action: str
    content: Any


def elicitation_key(server: str, elicitation_id: str | None) -> str:
    """What the request and its result share (the server and its id, when it gave one): the
    :func:`input_hash` that matches an :class:`ElicitationResolved` to its request."""
    return input_hash({"server": server, "elicitation_id": elicitation_id})


class DeliveredSeen(Observation, kw_only=True):
    """Everything delivered to this session by earlier hooks reached the model: the harness
    appended it to a tool result, and this hook (a new tool call) came after the model read
    it (claw)."""

    via: str


class Compacting(Observation, kw_only=True):
    """The session's context is about to be compacted (Claude Code's PreCompact): what was
    delivered and not yet adopted would reach only the compaction's summariser."""

    via: str
