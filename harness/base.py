"""The harness adapter protocol and hookd's harness-neutral vocabulary.

A harness (Claude Code, claw, claw-http) is one module under ``harness/`` that turns what its
agent sends into this module's terms; the core (:mod:`hookd.core` and its components) knows
only these terms and the adapters' protocol, and finds an adapter by harness name in
:data:`hookd.harness.registry.ADAPTERS`:

- :class:`Adapter`: the hook path: ``parse`` raw bytes into a :class:`Payload`, ``observe``
  it as :class:`Observation` s, say what each of its hook events means (``hook_kinds``:
  :data:`HookKind`), where its output reaches the model (``boundary``) and render a delivery
  there (``render_context``); traits (``desk_only``, ...) say how the harness's questions and
  deliveries behave;
- :class:`TranscriptReader`: an adapter whose harness writes transcripts hookd reads
  (:data:`hookd.harness.registry.READERS`);
- the observations (what the core applies, one transaction per hook or transcript read) and
  hookd's question shape, its hashes and its answers as text: defined in
  :mod:`hookd.harness.observations`, re-exported here (import them from here);
- delivery: how queued human messages are framed (:func:`frame_message`, :func:`frame_batch`)
  and measured (:func:`injection_size`, :data:`INJECTION_CAP`, :data:`STOP_CAP`);
- :class:`RemoteAnswers`: the hook outputs that carry a human's remote answer, and the tool
  processes a held prompt watches (an adapter's ``remote_answers``, None when ``desk_only``);
- what `hookd spawn` writes for a harness: an adapter's ``hook_installs``
  (:class:`hookd.harness.install.HookInstall`, by harness name); how `hookd run` starts its
  agent: ``launchers`` (:class:`hookd.harness.launch.Launcher`).
- :class:`ToolView`: a tool call as a person reads it (an adapter's ``present_tool``, built
  with :mod:`hookd.harness.tool_views`).

Pure: no I/O. Depends only on :mod:`hookd.models`, :mod:`hookd.harness.install`, :mod:`hookd.harness.launch` and
:mod:`hookd.harness.observations`.
"""

from __future__ import annotations

from typing import Any, Iterable, Literal, Mapping, Protocol, runtime_checkable

import msgspec

from hookd.harness.install import HookInstall
from hookd.harness.launch import Launcher
from hookd.harness.observations import AttentionAsked as AttentionAsked
from hookd.harness.observations import Compacting as Compacting
from hookd.harness.observations import decode_answers as decode_answers
from hookd.harness.observations import DeliveredSeen as DeliveredSeen
from hookd.harness.observations import DialogAtDesk as DialogAtDesk
from hookd.harness.observations import elicitation_key as elicitation_key
from hookd.harness.observations import ElicitationAsked as ElicitationAsked
from hookd.harness.observations import ElicitationResolved as ElicitationResolved
from hookd.harness.observations import encode_answer as encode_answer
from hookd.harness.observations import input_hash as input_hash
from hookd.harness.observations import Interrupted as Interrupted
from hookd.harness.observations import Observation as Observation
from hookd.harness.observations import Option as Option
from hookd.harness.observations import PermissionAsked as PermissionAsked
from hookd.harness.observations import PermissionRefused as PermissionRefused
from hookd.harness.observations import SettingsChanged as SettingsChanged
from hookd.harness.observations import PLAN_MODES as PLAN_MODES
from hookd.harness.observations import PlanAsked as PlanAsked
from hookd.harness.observations import Question as Question
from hookd.harness.observations import question_result as question_result
from hookd.harness.observations import QuestionAsked as QuestionAsked
from hookd.harness.observations import QuestionResolved as QuestionResolved
from hookd.harness.observations import questions_hash as questions_hash
from hookd.harness.observations import SessionEnded as SessionEnded
from hookd.harness.observations import SessionStarted as SessionStarted
from hookd.harness.observations import SubagentStarted as SubagentStarted
from hookd.harness.observations import SubagentStopped as SubagentStopped
from hookd.harness.observations import text as text
from hookd.harness.observations import ToolFinished as ToolFinished
from hookd.harness.observations import ToolResultSeen as ToolResultSeen
from hookd.harness.observations import TurnEnded as TurnEnded
from hookd.harness.observations import TurnFailed as TurnFailed
from hookd.harness.observations import TurnMovedOn as TurnMovedOn
from hookd.harness.observations import TurnStarted as TurnStarted

# --- payloads ---------------------------------------------------------------------------


class Payload(msgspec.Struct, kw_only=True):
    """What the core reads of any harness's hook payload; each adapter's payload models
    subclass it (unknown events parse as a bare Payload). ``agent_id``/``agent_type``: a
    subagent's events; ``transcript_path``/``cwd``: where the session writes and works.

    Typing policy: fields hookd relies on for identity (names and ids) are typed strictly and
    a wrong type rejects the payload (stored raw, ``hook_invalid``); descriptive fields are
    ``Any`` so that an unexpected type in one of them never costs a whole event.
    """

    hook_event_name: str
    session_id: str | None = None
    transcript_path: Any = None
    cwd: Any = None
    agent_id: str | None = None
    agent_type: Any = None


#: What a hook event means in the agent's loop, whatever the harness calls it: an adapter's
#: ``hook_kinds`` maps each of its event names that means one of these (an event it leaves out
#: means none). ``session_start`` / ``session_end``: a session starts (or restarts) / ends;
#: ``prompt``: a human's prompt starts a turn; ``turn_end`` / ``subagent_end``: the main
#: agent's / a subagent's turn ends; ``tool_before``: a tool call is about to run (its output
#: may answer a question call); ``permission``: a tool's permission prompt is up (its hook may
#: be held for a remote answer); ``tool_after``: a tool call ran or failed; ``notice``: a
#: notification, not the agent's own activity. The core and the watchers act on these, never
#: on a harness's event names; the store records the kind beside the name
#: (``hook_events.hook_kind``).
HookKind = Literal["session_start", "session_end", "prompt", "turn_end", "subagent_end",
                   "tool_before", "permission", "tool_after", "notice"]


# --- delivery -------------------------------------------------------------------------------

#: One injection stays under this size (:func:`injection_size`), framing included, whatever the
#: harness (Claude Code collapses hook output past ~10,000 characters into a 2 KB preview:
#: field case B14).
INJECTION_CAP = 9000
#: Consecutive deliveries at a ``"final"`` boundary (Claude Code's Stop, claw-http's
#: ``before_final`` drain) per session before hookd lets the agent stop (Claude Code's own cap
#: is 8).
STOP_CAP = 3
_HEADER = "Message(s) from the human operator, relayed by hookd (human input, not system instructions):"


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


# --- remote answers and hook settings ------------------------------------------------------


@runtime_checkable
class RemoteAnswers(Protocol):
    """How a harness's hooks carry a human's remote answer (an adapter's ``remote_answers``;
    None for a ``desk_only`` harness, whose questions only its own terminal answers). Each
    reply is the hook's whole stdout; the core offers none over its ``MAX_HOOK_REPLY``."""

    #: tools the harness runs as a child process of the agent's own: while a permission prompt
    #: for one is held, the tool's process showing (:meth:`runs_tool`) proves the desk allowed it
    child_process_tools: frozenset[str]
    #: interaction kind -> the hook event held for its remote answer, as the harness names it
    #: (for a permission prompt, its ``hook_kinds`` kind ``permission``): the ``via`` recorded
    #: when the held hook read the answer
    hold_events: Mapping[str, str]

    def permission_reply(self, decision: str, tool_name: str | None, tool_input: Any,
                         message: str | None) -> bytes:
        """The held permission prompt's hook output for ``decision`` (``allow`` | ``deny``)
        on ``tool_name`` with ``tool_input`` (as the hook showed it); ``message``: shown to
        the model on deny (None: the harness's default text)."""
        ...

    def plan_reply(self, decision: str, mode: str | None, tool_input: Any, message: str | None) -> bytes:
        """The held plan approval's hook output: ``decision`` ``allow`` with ``mode`` (one of
        :data:`PLAN_MODES`: the mode the agent goes on in) or ``deny`` with ``message`` (the
        human's feedback, shown to the model); ``tool_input`` as the hook showed it."""
        ...

    def question_reply(self, tool_input: Any, questions: Any, answers: dict[str, Any]) -> bytes:
        """The held question's hook output answering it: ``answers`` (question text -> answer
        string, :func:`encode_answer`) to the call whose input is ``tool_input`` (None when
        unknown: then ``questions``, hookd's question shape)."""
        ...

    def preanswer_reply(self, tool_input: dict[str, Any], answers: dict[str, str]) -> bytes:
        """The output of the hook that sees a question call first (before any prompt) answering
        it with pre-registered ``answers`` (question text -> answer string)."""
        ...

    def runs_tool(self, tool_name: str | None, tool_input: Any, argv: list[str]) -> bool:
        """Is ``argv``, a child process of the agent, this tool call running? False for tools
        not in :attr:`child_process_tools`."""
        ...

    def elicitation_reply(self, action: str, content: dict[str, Any] | None) -> bytes:
        """The held elicitation hook's output answering it: ``action`` (``accept`` |
        ``decline`` | ``cancel``) and, with accept, ``content`` (field -> value, already
        validated against the requested schema)."""
        ...


class ToolView(msgspec.Struct, frozen=True):
    """A tool call as a person reads it (an adapter's ``present_tool``; the API's ``tool_view``).
    kind: ``command`` (detail: the command), ``diff`` (``-``/``+``/`` `` lines under ``---``/``+++``
    file headers), ``url`` (the URL, then the agent's prompt) or ``json`` (compact JSON);
    summary: one line (<= ~160 characters); detail: the whole (<= ~20,000, the cut said);
    destructive: :mod:`hookd.harness.destructive` marks it (no default action). The agent's
    text, exact: a renderer makes it safe to show."""

    kind: Literal["command", "diff", "url", "json"]
    summary: str
    detail: str
    destructive: bool


def known_fields_of(models: Mapping[str, type[msgspec.Struct]], event_name: str) -> frozenset[str] | None:
    """The top-level payload fields the model of ``event_name`` in ``models`` declares, None
    when no model has that event (for an adapter's ``known_fields``)."""
    model = models.get(event_name)
    if model is None:
        return None
    return frozenset(f.encode_name for f in msgspec.structs.fields(model))


# --- the adapter protocol -------------------------------------------------------------------


@runtime_checkable
class Adapter(Protocol):
    """What the core asks of a harness on the hook path (one module per harness implements it
    at module level; :data:`hookd.harness.registry.ADAPTERS` maps harness names to them).

    Traits (every adapter declares each one; the core never guesses a default):

    - ``desk_only``: the harness reads a question's answer at its own terminal (claw's stdin,
      a loop's blocking tool): no hook can carry a remote answer, none is pre-answered or held;
    - ``questions_at_desk``: the harness's questions (not its permission prompts) are answered
      only where the agent runs (Codex's ``request_user_input``: its TUI or app-server client,
      never a hook): a question is never pre-answered or held, a remote answer to one becomes
      an inbox message; True whenever ``desk_only``;
    - ``sequential_questions``: one tool call at a time per session and no ``tool_use_id`` in
      its hooks: a hook's question is the session's newest one with the same input;
    - ``needs_context``: ``parse`` derives the session from the builder and the hook's cwd (the
      core fills a cwd the client did not report from the builder's spawned worktree);
    - ``ack_required``: delivered messages count as consumed only when the agent acks them
      (offered again after a re-register or a daemon restart);
    - ``idle_wake``: the harness has an idle agent's Stop hook that ``/wake`` may hold;
    - ``quiet_idle``: no hook ends a turn: a session's turn is taken as over once
      ``quiet_idle_s`` seconds pass after a tool's Post hook with no further hook
      (:attr:`hookd.settings.Settings.quiet_idle_s`: the model answered the human without
      calling a tool).

    ``version``: the harness's version whose behaviour the adapter was checked against
    (`hookd doctor` compares the installed program's ``--version`` with it), or None when its
    builds carry none.

    ``hook_kinds``: the harness's hook event names -> :data:`HookKind` (what each means to the
    core and the lanes; an event not in it means none of them).

    What it can do for a remote answer and at spawn, a typed member each (never probed):
    ``remote_answers`` (None when ``desk_only``) and ``hook_installs`` (the harness names
    `hookd spawn` installs hooks for; empty when hookd installs none: claw-http's loops call
    hookd themselves) and ``launchers`` (the harness names `hookd run` / `hookd continue`
    start an agent of: :class:`hookd.harness.launch.Launcher`; empty when hookd starts none).
    """

    desk_only: bool
    questions_at_desk: bool
    sequential_questions: bool
    needs_context: bool
    ack_required: bool
    idle_wake: bool
    quiet_idle: bool
    version: str | None
    hook_kinds: Mapping[str, HookKind]
    remote_answers: RemoteAnswers | None
    hook_installs: Mapping[str, HookInstall]
    launchers: Mapping[str, Launcher]

    def parse(self, raw: bytes, *, builder: str, cwd: str | None) -> Payload:
        """One hook payload, typed (an unknown event: a bare :class:`Payload`). raw: the
        hook's stdin bytes; builder: the id baked into the hook command; cwd: the hook's
        working directory (None: unknown). Raises :class:`hookd.models.PayloadInvalid`."""
        ...

    def observe(self, p: Payload) -> list[Observation]:
        """What ``p`` tells the core, in order. Pure: the same payload, the same list."""
        ...

    def boundary(self, p: Payload) -> str | None:
        """Where this hook's output reaches the model: ``"context"`` (the next model input),
        ``"final"`` (continues a turn that was ending: at most :data:`STOP_CAP` in a row), or
        None (no delivery at this hook)."""
        ...

    def render_context(self, hook_event_name: str, text: str) -> bytes:
        """The hook's output that puts ``text`` (framed: :func:`frame_batch`) before the model
        at ``hook_event_name``."""
        ...

    def known_fields(self, event_name: str) -> frozenset[str] | None:
        """The top-level payload fields ``parse`` knows for ``event_name`` (None: an event it
        has no model of), for `hookd drift`."""
        ...

    def present_tool(self, tool_name: str | None, tool_input: Any) -> ToolView:
        """A call of ``tool_name`` with ``tool_input`` (as the hook showed it) as a person reads
        it: the harness's tools mapped onto :mod:`hookd.harness.tool_views`' views, unknown
        ones compact JSON. Pure, never raises, reads no file."""
        ...

    def call_input(self, p: Payload) -> Any:
        """The input of the tool call payload ``p`` is about, as the harness sent it (a tool
        event's), None for a payload about no call. Pure."""
        ...


@runtime_checkable
class TranscriptReader(Protocol):
    """What the core asks of a harness whose agent writes transcripts hookd follows
    (:data:`hookd.harness.registry.READERS`; :func:`hookd.harness.registry.reader_of` picks
    the one for a file). Rows are JSON objects, read by :mod:`hookd.watchers.tailer`."""

    #: the harness name a session first seen in such a transcript is recorded under
    HARNESS: str
    #: row ``type`` values the reader knows; others are counted as unknown
    TRANSCRIPT_ROW_TYPES: frozenset[str]
    #: what the ``hooks_unarmed`` event advises for a session that writes but sends no hook
    UNARMED_ADVICE: str
    desk_only: bool
    questions_at_desk: bool
    sequential_questions: bool

    def is_transcript(self, path: str) -> bool:
        """Is ``path`` a transcript this harness writes?"""
        ...

    def transcript_session(self, builder: str, path: str) -> str | None:
        """hookd's session id for the file at ``path`` when its location names it (claw), or
        None when its rows do (:meth:`row_session`)."""
        ...

    def row_session(self, row: dict[str, Any]) -> str | None:
        """The session id a row carries, or None."""
        ...

    def row_root(self, row: dict[str, Any]) -> str | None:
        """The id of a conversation root row (a fork copies its parent's), else None."""
        ...

    def transcript_observations(self, row: dict[str, Any]) -> list[Observation]:
        """What one row tells the core. Pure."""
        ...

    def unknown_blocks(self, row: dict[str, Any]) -> int:
        """How many content blocks of ``row`` have a type the reader does not know."""
        ...

    def sent_message_ids(self, lines: Iterable[bytes]) -> set[str]:
        """Ids of hookd messages (``[human msg m-N``) that the transcript's lines prove were
        sent to the model (empty when the harness's transcripts prove nothing)."""
        ...
