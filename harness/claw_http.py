"""claw-http adapter: boundary calls of in-process agent loops (iterion's ``claw`` backend
style) over hookd's loopback JSON API (:mod:`hookd.clawhttp`).

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
(``adopted`` via ``ack``), and are offered again when never acked (:data:`ACK_REQUIRED`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from hookd.harness import claude_code as cc
from hookd.harness import claw
from hookd.models import PayloadInvalid
from hookd.untrusted import decode_json

HARNESS = "claw-http"
BOUNDARIES = ("between_tools", "before_final")
CONTEXT_EVENTS = frozenset({"Drain"})
SUBAGENT_CONTEXT_EVENTS: frozenset[str] = frozenset()
NEEDS_CONTEXT = False
#: A loop's own blocking question tool reads its answer itself: no hook can carry a remote one.
DESK_ONLY = True
SEQUENTIAL_QUESTIONS = True
#: Delivered messages count as consumed only when the loop acks them; unacked ones are
#: offered again after a re-register, a daemon restart, or REDELIVER_AFTER_S.
ACK_REQUIRED = True


class Drain(cc.Base, kw_only=True):
    """A loop asks for its queued messages at ``boundary`` (:data:`BOUNDARIES`)."""

    boundary: str


class ToolEvent(cc.Base, kw_only=True):
    tool_name: str
    tool_input: Any = None
    tool_use_id: str | None = None


class PreToolUse(ToolEvent, kw_only=True):
    pass


class PostToolUse(ToolEvent, kw_only=True):
    tool_output: Any = None


class PostToolUseFailure(ToolEvent, kw_only=True):
    error: Any = None


MODELS: dict[str, type[cc.Base]] = {
    "SessionStart": cc.SessionStart, "SessionEnd": cc.SessionEnd, "Drain": Drain,
    "PreToolUse": PreToolUse, "PostToolUse": PostToolUse, "PostToolUseFailure": PostToolUseFailure,
}


def parse(raw: bytes) -> cc.Base:
    """Decode one boundary payload (built by :mod:`hookd.clawhttp`). Raises PayloadInvalid."""
    try:
        obj = decode_json(raw)
    except (msgspec.DecodeError, RecursionError) as e:  # (RecursionError: nested too deeply)
        raise PayloadInvalid(f"payload is not valid JSON: {e}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("hook_event_name"), str):
        raise PayloadInvalid("payload must be a JSON object with a string 'hook_event_name'")
    name = obj["hook_event_name"]
    try:
        p = msgspec.convert(obj, MODELS.get(name, cc.Base))
    except msgspec.ValidationError as e:
        raise PayloadInvalid(f"{name} payload: {e}") from None
    if isinstance(p, Drain) and p.boundary not in BOUNDARIES:
        raise PayloadInvalid(f"boundary must be one of {', '.join(BOUNDARIES)}")
    return p


def observe(p: cc.Base) -> list[cc.Observation]:
    """Classify one boundary call. Pure."""
    name = p.hook_event_name
    if name in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        return claw.tool_observations(p, getattr(p, "tool_use_id", None))
    if name == "SessionStart":
        return [cc.SessionStarted(source=cc.text(getattr(p, "source", None)))]
    if name == "SessionEnd":
        return [cc.TurnMovedOn(agent_id=None, all_agents=True, outcome="orphaned", via="stop"),
                cc.SessionEnded(reason=cc.text(getattr(p, "reason", None)))]
    if isinstance(p, Drain) and p.boundary == "before_final":
        # the loop is about to accept a final answer: a blocking question still open is gone
        return [cc.TurnMovedOn(agent_id=None, all_agents=False, outcome="dismissed", via="drain(before_final)")]
    return []


def boundary(p: cc.Base) -> str | None:
    """``"context"`` for a between-tools drain, ``"final"`` for a before-final drain (the Stop
    analogue: capped at :data:`hookd.harness.claude_code.STOP_CAP` consecutive deliveries),
    else None."""
    if isinstance(p, Drain):
        return "final" if p.boundary == "before_final" else "context"
    return None


def render_context(hook_event_name: str, text: str) -> bytes:
    """A drain's framed text (the route adds the message ids): ``{"text": ...}``."""
    return msgspec.json.encode({"text": text})
