"""claw-http adapter: boundary calls of in-process agent loops (iterion's ``claw`` backend
style) over hookd's loopback JSON API (:mod:`hookd.http.claw`).

A loop has no settings file and no shell hooks: it calls hookd at its own boundaries. Each
call becomes one "hook" payload that the core stores and applies like any harness's hook
(raw bytes kept, ``hook_received``, questions, inbox delivery in the same transaction). The
payloads are built by hookd's routes, never by the loop itself:

=====================  ===================  =================================================
route                  ``hook_event_name``  meaning
=====================  ===================  =================================================
``register``           ``SessionStart``     a loop starts (or restarts) a session
``pre_tool``           ``PreToolUse``       before a tool call (a question tool opens a question)
``post_tool``          ``PostToolUse``      after it (a question tool's answer resolves it)
``post_tool_failure``  ``PostToolUseFailure`` after a failed call
``drain``              ``Drain``            ``boundary``: ``between_tools`` (after a tool
                                             round) or ``before_final`` (before accepting a
                                             final answer: the Stop analogue)
``stop``               ``SessionEnd``       the loop ended the session
=====================  ===================  =================================================

Delivery happens only at ``Drain``; messages then wait, ``delivered``, for an explicit ack
(``adopted`` via ``ack``), and are offered again when never acked (trait ``ack_required``).
The module is a :class:`hookd.harness.base.Adapter` (loops write no transcripts hookd reads).
"""

from __future__ import annotations

from typing import Any, Mapping

import msgspec

from hookd.harness import claw
from hookd.harness.base import (
    HookKind,
    Observation,
    Payload,
    RemoteAnswers,
    SessionEnded,
    SessionStarted,
    TurnMovedOn,
    known_fields_of,
    text,
)
from hookd.harness.install import HookInstall
from hookd.harness.launch import Launcher
from hookd.models import PayloadInvalid
from hookd.untrusted import decode_json

HARNESS = "claw-http"
BOUNDARIES = ("between_tools", "before_final")
CONTEXT_EVENTS = frozenset({"Drain"})
SUBAGENT_CONTEXT_EVENTS: frozenset[str] = frozenset()
# Traits (hookd.harness.base.Adapter):
#: The routes put the session id into every payload.
needs_context = False
#: A loop's own blocking question tool reads its answer itself: no hook can carry a remote one.
desk_only = True
#: (so are its questions: ``desk_only`` implies it)
questions_at_desk = True
#: One tool call at a time; a tool call's id is optional.
sequential_questions = True
#: Delivered messages count as consumed only when the loop acks them; unacked ones are
#: offered again after a re-register, a daemon restart, or ``HOOKD_REDELIVER_AFTER_S`` seconds.
ack_required = True
#: No Stop hook: a loop asks for its messages itself (a drain).
idle_wake = False
#: its ``before_final`` drain ends a turn.
quiet_idle = False
#: a protocol of hookd's own (docs/claw-http.openapi.json), not a program with a version.
version: str | None = None
#: What its calls mean (the routes of :mod:`hookd.http.claw` name them): register, stop and the
#: tool calls; a drain (``Drain``) is only a boundary.
hook_kinds: Mapping[str, HookKind] = {
    "SessionStart": "session_start", "SessionEnd": "session_end", "PreToolUse": "tool_before",
    "PostToolUse": "tool_after", "PostToolUseFailure": "tool_after",
}
#: No hook carries a remote answer (``desk_only``).
remote_answers: RemoteAnswers | None = None
#: Nothing to install: a loop calls hookd's claw-http API itself.
hook_installs: Mapping[str, HookInstall] = {}
#: claw-http loops are programs of their own: hookd starts none.
launchers: Mapping[str, Launcher] = {}


class SessionStart(Payload, kw_only=True):
    """``register``: a loop starts (or restarts) a session."""

    source: Any = None
    model: Any = None


class SessionEnd(Payload, kw_only=True):
    """``stop``: the loop ended the session."""

    reason: Any = None


class Drain(Payload, kw_only=True):
    """A loop asks for its queued messages at ``boundary`` (:data:`BOUNDARIES`)."""

    boundary: str


class ToolEvent(Payload, kw_only=True):
    tool_name: str
    tool_input: Any = None
    tool_use_id: str | None = None


class PreToolUse(ToolEvent, kw_only=True):
    pass


class PostToolUse(ToolEvent, kw_only=True):
    tool_output: Any = None


class PostToolUseFailure(ToolEvent, kw_only=True):
    error: Any = None


MODELS: dict[str, type[Payload]] = {
    "SessionStart": SessionStart, "SessionEnd": SessionEnd, "Drain": Drain,
    "PreToolUse": PreToolUse, "PostToolUse": PostToolUse, "PostToolUseFailure": PostToolUseFailure,
}


def known_fields(event_name: str) -> frozenset[str] | None:
    """Top-level payload fields the model of ``event_name`` knows, None if the event is unknown."""
    return known_fields_of(MODELS, event_name)


#: A loop's tools are claw's (claw-http builds on claw's tool events): shown as claw shows them.
present_tool = claw.present_tool
call_input = claw.call_input


def parse(raw: bytes, *, builder: str | None = None, cwd: str | None = None) -> Payload:
    """Decode one boundary payload (built by :mod:`hookd.http.claw`; builder, cwd: unused, the
    payload names its session). Raises PayloadInvalid."""
    try:
        obj = decode_json(raw)
    except (msgspec.DecodeError, RecursionError) as e:  # (RecursionError: nested too deeply)
        raise PayloadInvalid(f"payload is not valid JSON: {e}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("hook_event_name"), str):
        raise PayloadInvalid("payload must be a JSON object with a string 'hook_event_name'")
    name = obj["hook_event_name"]
    try:
        p = msgspec.convert(obj, MODELS.get(name, Payload))
    except msgspec.ValidationError as e:
        raise PayloadInvalid(f"{name} payload: {e}") from None
    if isinstance(p, Drain) and p.boundary not in BOUNDARIES:
        raise PayloadInvalid(f"boundary must be one of {', '.join(BOUNDARIES)}")
    return p


def observe(p: Payload) -> list[Observation]:
    """Classify one boundary call. Pure."""
    name = p.hook_event_name
    if name in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        return claw.tool_observations(p, getattr(p, "tool_use_id", None))
    if name == "SessionStart":
        return [SessionStarted(source=text(getattr(p, "source", None)))]
    if name == "SessionEnd":
        return [TurnMovedOn(agent_id=None, all_agents=True, outcome="orphaned", via="stop"),
                SessionEnded(reason=text(getattr(p, "reason", None)))]
    if isinstance(p, Drain) and p.boundary == "before_final":
        # the loop is about to accept a final answer: a blocking question still open is gone
        return [TurnMovedOn(agent_id=None, all_agents=False, outcome="dismissed", via="drain(before_final)")]
    return []


def boundary(p: Payload) -> str | None:
    """``"context"`` for a between-tools drain, ``"final"`` for a before-final drain (the Stop
    analogue: capped at :data:`hookd.harness.base.STOP_CAP` consecutive deliveries),
    else None."""
    if isinstance(p, Drain):
        return "final" if p.boundary == "before_final" else "context"
    return None


def render_context(hook_event_name: str, text: str) -> bytes:
    """A drain's framed text (the route adds the message ids): ``{"text": ...}``."""
    return msgspec.json.encode({"text": text})
