"""claw adapter: the Rust ``claw`` (ultraworkers/claw-code) and the claw-code-go CLI's shell hooks.

Facts: ``shared/claw/README.md`` (Rust claw ``rust/crates/runtime/src/{config,hooks,
conversation,session,session_control}.rs``). Pure: no store, no server; the only file-system
touch is :func:`canonical_cwd` (``realpath``, as claw canonicalises its own cwd). The module is
a :class:`hookd.harness.base.Adapter` (both harness names) and a
:class:`hookd.harness.base.TranscriptReader`.

What claw gives a hook, and what hookd makes of it:

- Only ``PreToolUse``, ``PostToolUse``, ``PostToolUseFailure`` exist (``Stop``,
  ``UserPromptSubmit``, ``Notification`` are rejected by claw): there is no end-of-turn hook,
  so queued messages reach the model only in a tool result.
- The payload (stdin) is ``{"hook_event_name", "tool_name", "tool_input", "tool_input_json",
  "tool_output" | "tool_error", "tool_result_is_error"}``: **no** session id, cwd, transcript
  path or tool_use_id. Identity is the builder id baked into the command plus the hook's cwd
  (claw runs hooks in its own cwd and reads ``<cwd>/.claw/settings.local.json`` only there):
  :func:`session_id` derives hookd's session id from both (trait ``needs_context``).
- Output: every message field of the hook's stdout JSON, and any JSON without one (even
  ``{}``), is appended to the tool result as ``Hook feedback:``; empty stdout is the only
  no-op. hookd answers empty stdout unless it delivers, and delivers only as
  ``hookSpecificOutput.additionalContext`` on PostToolUse / PostToolUseFailure
  (:func:`render_context`).
- Exit codes: 0 allows; 2 denies; any other code fails the hook and refuses the tool. The
  client always exits 0.
- Questions: ``AskUserQuestion {"question", "options"?: [str]}`` (claw-code-go: ``ask_user
  {"question", "options"?: [{"id", "label"}], "allow_free_text"?}``). claw reads the answer
  from its own stdin: only the desk can answer it (a remote ``hookd answer`` is kept as an
  inbox message: trait ``desk_only``). PostToolUse's ``tool_output`` ``{"question", "answer", "status"}``
  resolves it.
- Transcripts: ``<cwd>/.claw/sessions/<fnv1a64(cwd)>/<session>.jsonl``, rows
  ``{"type": "message", "message": {"role", "blocks": [...]}}`` with ``tool_use{id, name,
  input: <JSON string>}`` and ``tool_result{tool_use_id, tool_name, output, is_error}``
  blocks (:func:`transcript_observations`).
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, Iterable, Mapping

import msgspec

from hookd.harness.base import (
    DeliveredSeen,
    HookKind,
    Observation,
    Payload,
    QuestionAsked,
    RemoteAnswers,
    QuestionResolved,
    ToolResultSeen,
    ToolView,
    known_fields_of,
    question_result,
    questions_hash,
)
from hookd.harness import tool_views
from hookd.harness.install import HookCommands, HookInstall, HookTrust
from hookd.harness.launch import Launcher
from hookd.models import ConfigError, PayloadInvalid
from hookd.untrusted import decode_json, text_without_lone_surrogates

HARNESS = "claw"
#: The claw-code-go CLI: the same payloads and output rules, flat-string settings in
#: ``.claude/settings*.json`` (opt-in at spawn).
FLAT_HARNESS = "claw-code-go"
HARNESSES = (HARNESS, FLAT_HARNESS)
#: Question tools: the Rust claw's and claw-code-go's.
ASK_TOOLS = frozenset({"AskUserQuestion", "ask_user"})
#: The only hook events claw has; hookd registers all three.
REGISTERED_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
#: Hook events whose output reaches the model (appended to the tool result).
CONTEXT_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure"})
SUBAGENT_CONTEXT_EVENTS: frozenset[str] = frozenset()
# Traits (hookd.harness.base.Adapter):
#: ``parse`` needs the builder and the hook's cwd (claw sends no session id).
needs_context = True
#: Questions are answered only at claw's own terminal (it reads its stdin): no hook can carry
#: a remote answer, none is pre-answered, none is held.
desk_only = True
#: (so are its questions: ``desk_only`` implies it)
questions_at_desk = True
#: One tool call at a time per session and no tool_use_id in hooks: a hook's question is the
#: session's newest one with the same input (see ``docs/decisions.md`` "claw").
sequential_questions = True
#: A delivery is adopted when the next tool call's hook shows the model read it (no ack).
ack_required = False
#: No Stop hook: nothing to hold for an idle wake.
idle_wake = False
#: ... nor to end a turn: a turn answered without a tool is over once the hooks go quiet.
quiet_idle = True
#: claw's builds carry no version.
version: str | None = None
#: Only tool hooks exist: no session, prompt or end-of-turn hook.
hook_kinds: Mapping[str, HookKind] = {"PreToolUse": "tool_before", "PostToolUse": "tool_after",
                                      "PostToolUseFailure": "tool_after"}
#: No hook carries a remote answer (``desk_only``).
remote_answers: RemoteAnswers | None = None
#: Tool events use this matcher: claw matches case-insensitive names, ``*`` is every tool.
MATCHER = "*"
#: Transcript row types of claw's session files.
TRANSCRIPT_ROW_TYPES = frozenset({"session_meta", "message", "compaction", "prompt_history"})
#: The ``hooks_unarmed`` advice for a session whose file moves with no hook from it.
UNARMED_ADVICE = (
    "no hook came from this claw session: claw reads .claw/settings*.json when it starts, so "
    "run `hookd spawn BUILDER --harness claw --worktree DIR` and restart claw there; until then "
    "hookd follows it from its session file."
)


# --- payloads ---------------------------------------------------------------------------


class ToolEvent(Payload, kw_only=True):
    """A claw hook payload. ``session_id`` / ``cwd`` / ``transcript_path`` are not in it:
    :func:`parse` fills them from the builder and the hook's cwd."""

    tool_name: str
    tool_input: Any = None
    tool_input_json: Any = None
    tool_result_is_error: Any = None
    tool_use_id: str | None = None


class PreToolUse(ToolEvent, kw_only=True):
    pass


class PostToolUse(ToolEvent, kw_only=True):
    tool_output: Any = None


class PostToolUseFailure(ToolEvent, kw_only=True):
    tool_error: Any = None


MODELS: dict[str, type[ToolEvent]] = {c.__name__: c for c in (PreToolUse, PostToolUse, PostToolUseFailure)}


def fingerprint(path: str) -> str:
    """claw's workspace fingerprint: FNV-1a 64 of the path's UTF-8 bytes, 16 hex digits
    (``session_control.rs`` ``workspace_fingerprint``; undecodable bytes as U+FFFD, like
    Rust's ``to_string_lossy``)."""
    h = 0xCBF29CE484222325
    for b in os.fsencode(path).decode("utf-8", "replace").encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def canonical_cwd(cwd: str) -> str:
    """The cwd as claw fingerprints it (``fs::canonicalize``, falling back to the path)."""
    try:
        return os.path.realpath(cwd, strict=True)
    except OSError:
        return os.path.abspath(cwd)


def session_id(builder: str, cwd: str | None) -> str:
    """hookd's session id for ``builder``'s claw in ``cwd`` (canonical):
    ``claw:<builder>:<fingerprint(cwd)>``, or ``claw:<builder>`` when the cwd is unknown.
    Every claw session of one builder in one worktree is one hookd session: hooks cannot tell
    claw's sessions apart."""
    return f"claw:{builder}:{fingerprint(cwd)}" if cwd else f"claw:{builder}"


def sessions_dir(cwd: str) -> str:
    """Where claw writes the sessions of ``cwd`` (canonical): ``<cwd>/.claw/sessions/<fp>``."""
    return os.path.join(cwd, ".claw", "sessions", fingerprint(cwd))


def transcript_session(builder: str, path: str) -> str | None:
    """hookd's session id for a claw transcript file (``<cwd>/.claw/sessions/<fp>/x.jsonl``),
    or None when ``path`` is not one."""
    folder = os.path.dirname(os.path.abspath(path))
    sessions = os.path.dirname(folder)
    if os.path.basename(sessions) != "sessions" or os.path.basename(os.path.dirname(sessions)) != ".claw":
        return None
    cwd = os.path.dirname(os.path.dirname(sessions))
    if fingerprint(cwd) != os.path.basename(folder):
        return f"claw:{builder}:{os.path.basename(folder)}"
    return session_id(builder, cwd)


def is_transcript(path: str) -> bool:
    """Is ``path`` a claw session file (under a ``.claw/sessions/<fp>/`` folder)?"""
    parts = os.path.abspath(path).split(os.sep)
    return len(parts) >= 4 and parts[-4] == ".claw" and parts[-3] == "sessions"


def parse(raw: bytes, *, builder: str, cwd: str | None) -> Payload:
    """Decode one claw hook payload and give it hookd's identity.

    raw: the hook's stdin bytes; builder: the id baked into the command; cwd: the hook's cwd
    (None: unknown), made canonical here (:func:`canonical_cwd`). Returns the typed payload
    with ``session_id`` (:func:`session_id`), ``cwd`` and ``transcript_path`` (the sessions
    folder) set; unknown events become a bare :class:`hookd.harness.base.Payload`. Raises
    PayloadInvalid when ``raw`` is not one JSON object with a string ``hook_event_name``, or a
    known field has the wrong type.
    """
    cwd = canonical_cwd(cwd) if cwd else None
    try:
        obj = decode_json(raw)  # a lone surrogate (a string cut mid-emoji) decodes as U+FFFD
    except (msgspec.DecodeError, RecursionError) as e:  # (RecursionError: nested too deeply)
        raise PayloadInvalid(f"payload is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise PayloadInvalid(f"payload must be a JSON object, got {type(obj).__name__}")
    name = obj.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise PayloadInvalid("payload has no string 'hook_event_name'")
    sid = session_id(builder, cwd)
    for key in ("session_id", "cwd", "transcript_path", "tool_use_id"):
        obj.pop(key, None)  # claw sends none of them: hookd's own identity only
    try:
        p = msgspec.convert(obj, MODELS.get(name, Payload))
    except msgspec.ValidationError as e:
        err = PayloadInvalid(f"{name} payload: {e}")
        err.session_id = sid
        raise err from None
    p.session_id = sid
    p.cwd = cwd
    p.transcript_path = sessions_dir(cwd) if cwd else None
    return p


# --- observations -----------------------------------------------------------------------


def questions_of(tool_input: Any) -> list[dict[str, Any]] | None:
    """A claw question's input in Claude Code's ``questions`` shape (one question, its
    options as labels, single choice), so answers, listings and ``hookd answer`` treat both
    harnesses alike. ``{"question", "options"?: [str | {"label"}]}`` -> ``[{"question",
    "header": None, "options": [{"label"}], "multiSelect": False}]``; None when there is no
    string ``question``. A Claude Code ``{"questions": [...]}`` input is returned as is."""
    if not isinstance(tool_input, dict):
        return None
    if isinstance(tool_input.get("questions"), list):
        return tool_input["questions"]
    q = tool_input.get("question")
    if not isinstance(q, str):
        return None
    labels = []
    for o in tool_input.get("options") or []:
        label = o if isinstance(o, str) else (o.get("label") if isinstance(o, dict) else None)
        if isinstance(label, str):
            labels.append(label)
    return [{"question": q, "header": None, "options": [{"label": lb} for lb in labels], "multiSelect": False}]


_decoder = json.JSONDecoder()


def _output_obj(output: Any) -> Any:
    """A tool output that is JSON, decoded; also a JSON object followed by claw's appended
    ``Hook feedback:`` text. Anything else as it is."""
    if isinstance(output, str):
        try:
            return decode_json(output)
        except (msgspec.DecodeError, RecursionError):
            pass
        if output.lstrip().startswith("{"):
            try:
                return _decoder.raw_decode(text_without_lone_surrogates(output.lstrip()))[0]
            except ValueError:
                pass
    return output


def answers_of(questions: list[dict[str, Any]] | None, output: Any) -> dict[str, Any] | None:
    """The answers a question tool's output carries, keyed by question text: claw's
    ``{"question", "answer", "status"}`` (a JSON string or object), Claude Code's
    ``{"answers": {...}}``; a plain non-JSON string is the answer itself. None: no answer."""
    obj = _output_obj(output)
    if isinstance(obj, dict):
        if isinstance(obj.get("answers"), dict):
            return obj["answers"]
        answer = obj.get("answer")
        if answer is None:
            return None
        q = obj.get("question") if isinstance(obj.get("question"), str) else None
        if q is None and questions:
            q = questions[0].get("question")
        return {q or "": answer if isinstance(answer, str) else msgspec.json.encode(answer).decode()}
    if isinstance(obj, str) and obj.strip() and questions:
        return {questions[0].get("question") or "": obj}
    return None


def _text(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    return msgspec.json.encode(v).decode()


def tool_observations(p: Payload, tool_use_id: str | None = None) -> list[Observation]:
    """What a tool event (PreToolUse / PostToolUse / PostToolUseFailure) of a claw-style
    harness says about questions. ``tool_use_id``: the call's id where the harness gives one
    (claw-http); claw's hooks have none."""
    name, tool = p.hook_event_name, getattr(p, "tool_name", None)
    if tool not in ASK_TOOLS:
        return []
    tool_input = getattr(p, "tool_input", None)
    questions = questions_of(tool_input)
    h = questions_hash(questions)
    if name == "PreToolUse":
        return [QuestionAsked(tool_use_id=tool_use_id, tool_name=tool, input_hash=h, questions=questions,
                              via=name, tool_input=tool_input)]
    if name == "PostToolUse":
        answers = answers_of(questions, getattr(p, "tool_output", None))
        return [question_result(tool_use_id, tool, questions, answers, surface="terminal")]
    if name == "PostToolUseFailure":
        err = getattr(p, "tool_error", None)
        if err is None:
            err = getattr(p, "error", None)
        return [QuestionResolved(tool_use_id=tool_use_id, tool_name=tool, input_hash=h, questions=questions,
                                 outcome="dismissed", answers=None, selections=None, surface="terminal",
                                 error=_text(err))]
    return []


def observe(p: Payload) -> list[Observation]:
    """Classify one claw hook payload. Pure."""
    obs = tool_observations(p)
    if p.hook_event_name == "PreToolUse":
        # a new tool call: the model read every earlier tool result, hook feedback included
        obs.append(DeliveredSeen(via="PreToolUse"))
    return obs


def boundary(p: Payload) -> str | None:
    """Where hook output reaches the model: ``"context"`` (PostToolUse, PostToolUseFailure:
    the tool result), else None. claw has no final boundary (no Stop hook)."""
    return "context" if p.hook_event_name in CONTEXT_EVENTS else None


def render_context(hook_event_name: str, text: str) -> bytes:
    """The hook stdout that appends ``text`` to the tool result: ``{"hookSpecificOutput":
    {"hookEventName": <the input's event>, "additionalContext": text}}`` (claw reads Claude
    Code's output shape; any other message field, or JSON without one, would be appended as
    ``Hook feedback:`` too)."""
    return msgspec.json.encode({"hookSpecificOutput": {"hookEventName": hook_event_name, "additionalContext": text}})


# --- transcripts ------------------------------------------------------------------------


def row_session(row: dict[str, Any]) -> str | None:
    """claw rows carry no hookd session id (the file's folder names it:
    :func:`transcript_session`)."""
    return None


def row_root(row: dict[str, Any]) -> str | None:
    """None: claw's rows name no conversation root (a fork is not told apart)."""
    return None


def unknown_blocks(row: dict[str, Any]) -> int:
    """0: blocks of claw's rows are not counted."""
    return 0


def sent_message_ids(lines: Iterable[bytes]) -> set[str]:
    """Nothing: claw's session files record no model requests (a delivery is adopted by the
    next tool call's hook: :class:`~hookd.harness.base.DeliveredSeen`)."""
    return set()


def transcript_observations(row: dict[str, Any]) -> list[Observation]:
    """What one claw transcript row tells about questions: an assistant ``tool_use`` of a
    question tool (input: a JSON string) is :class:`QuestionAsked` (via ``transcript``); a
    ``tool_result`` of one (output ``{"question", "answer", "status"}``) is
    :class:`ToolResultSeen` with the answers, or an error result. A ``tool_use`` with no
    ``tool_result`` is a pending question."""
    if row.get("type") != "message":
        return []
    msg = row.get("message")
    blocks = msg.get("blocks") if isinstance(msg, dict) else None
    if not isinstance(blocks, list):
        return []
    role = msg.get("role") if isinstance(msg, dict) else None
    obs: list[Observation] = []
    for b in blocks:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if role == "assistant" and kind == "tool_use" and b.get("name") in ASK_TOOLS and isinstance(b.get("id"), str):
            tool_input = _output_obj(b.get("input"))
            if isinstance(tool_input, str):
                tool_input = {"raw": tool_input}
            questions = questions_of(tool_input)
            obs.append(QuestionAsked(tool_use_id=b["id"], tool_name=b["name"],
                                     input_hash=questions_hash(questions), questions=questions,
                                     via="transcript", tool_input=tool_input))
        elif kind == "tool_result" and b.get("tool_name") in ASK_TOOLS and isinstance(b.get("tool_use_id"), str):
            is_error = b.get("is_error") is True
            out = _output_obj(b.get("output"))
            question = out.get("question") if isinstance(out, dict) and isinstance(out.get("question"), str) else None
            answers = None if is_error else answers_of(None, out)
            if answers is not None and question is None:
                answers = None  # no question text to key the answer by: left to the hooks
            obs.append(ToolResultSeen(
                tool_use_id=b["tool_use_id"], is_error=is_error, rejected=False, answers=answers,
                questions=questions_of({"question": question}) if question is not None else None,
                decision_source=None, error=(_text(b.get("output")) or "")[:500] if is_error and b.get("output") is not None else None,
            ))
    return obs


# --- settings generation ------------------------------------------------------------------


def known_fields(event_name: str) -> frozenset[str] | None:
    """Top-level payload fields claw's model of ``event_name`` knows, None if the event itself
    is unknown."""
    return known_fields_of(MODELS, event_name)


def call_input(p: Payload) -> Any:
    """A tool event's ``tool_input``; None for any other payload."""
    return p.tool_input if isinstance(p, ToolEvent) else None


def present_tool(tool_name: str | None, tool_input: Any) -> ToolView:
    """A claw tool call as a person reads it (``shared/claw/README.md``: snake-case names for
    its own tools, Claude-style names for the rest): ``bash`` a command (with its
    ``description`` if any); ``edit_file`` / ``write_file`` (``path``) and Claude-style
    ``Edit`` / ``MultiEdit`` / ``Write`` (``file_path``) a diff; ``WebFetch`` its ``url`` and
    ``prompt``; anything else compact JSON."""
    f = functools.partial(tool_views.field, tool_input)
    if tool_name in ("bash", "Bash"):
        return tool_views.command_view(f("command"), f("description"))
    if tool_name in ("edit_file", "Edit"):
        return tool_views.edit_view(f("path", "file_path"), f("old_string"), f("new_string"), f("replace_all"))
    if tool_name == "MultiEdit":
        return tool_views.multi_edit_view(f("file_path", "path"), f("edits"))
    if tool_name in ("write_file", "Write"):
        return tool_views.write_view(f("path", "file_path"), f("content"))
    if tool_name == "WebFetch":
        return tool_views.url_view(f("url"), f("prompt"))
    return tool_views.json_view(tool_input)


def hook_settings(command: str, *, flat: bool = False) -> dict[str, list[Any]]:
    """The ``hooks`` mapping hookd adds for one builder: Claude Code's object form with matcher
    ``*`` (Rust claw), or claw-code-go's flat strings (``flat``). No ``timeout`` key: claw has
    no hook timeout (the client's own deadline bounds it)."""
    if flat:
        return {event: [command] for event in REGISTERED_EVENTS}
    return {event: [{"matcher": MATCHER, "hooks": [{"type": "command", "command": command}]}]
            for event in REGISTERED_EVENTS}


FLAT_WARNING = (
    "claw-code-go reads hooks only as flat strings in .claude/settings*.json, a file Claude Code "
    "shares: Claude Code rejects the flat form, and claw-code-go silently skips a file in Claude "
    "Code's object form. Do not run Claude Code in this worktree while these hooks are installed "
    "(hookd unspawn removes them)."
)


class _Install:
    """`hookd spawn --harness claw` (object form in ``.claw/settings.local.json``) or
    ``claw-code-go`` (``flat``: flat strings in ``.claude/settings.local.json``): the three
    tool events only, no standalone file, no MCP, no idle wake, no hold (claw has neither
    PermissionRequest nor Stop). A :class:`hookd.harness.install.HookInstall`."""

    settings_name = "settings.local.json"
    trust: HookTrust | None = None  # (it runs its hooks with no trust step)
    standalone = False
    mcp = False
    wake = False
    hold = False
    held_prompt: str | None = None  # (no held hook)
    events: tuple[str, ...] = REGISTERED_EVENTS
    transports: tuple[str, ...] = ("sh",)  # claw's hooks are shell strings only

    def __init__(self, *, flat: bool):
        self.flat = flat
        self.settings_dir = ".claude" if flat else ".claw"
        self.warning: str | None = FLAT_WARNING if flat else None
        self.summary = ("flat strings in .claude/settings.local.json, which then no longer serves "
                        "Claude Code" if flat else "the Rust claw: .claw/settings.local.json")

    def hook_settings(self, cmds: HookCommands) -> dict[str, list[Any]]:
        return hook_settings(cmds.command, flat=self.flat)

    def check_settings(self, path: str, settings: dict[str, Any]) -> None:
        """claw-code-go skips a whole settings file that holds any object-form hook entry: refuse
        (nothing written) rather than install hooks that never run."""
        if not self.flat:
            return
        hooks = settings.get("hooks") or {}
        for event, entries in hooks.items():
            if isinstance(entries, list) and any(not isinstance(e, str) for e in entries):
                raise ConfigError(
                    f"{path} holds object-form hooks ({event}: Claude Code's format), and claw-code-go skips such a file "
                    "entirely: the flat-string hooks would never run; left it untouched — move those hooks elsewhere "
                    "or spawn this builder with --harness claw (the Rust claw, .claw/settings.local.json)")


#: `hookd spawn`'s two claw harnesses (:class:`_Install`).
hook_installs: Mapping[str, HookInstall] = {HARNESS: _Install(flat=False), FLAT_HARNESS: _Install(flat=True)}
#: `hookd run` does not start claw yet: it is spawned and started by hand.
launchers: Mapping[str, Launcher] = {}
