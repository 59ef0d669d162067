"""Subagents as lanes of their own (issue 21 moment 5): what the core records of each
subagent of a builder's agent, inside the hook's transaction. Functions over a ``Tx``, no
state; called by :class:`hookd.core.ingest.Ingest`.

A subagent runs from its start hook (Claude Code's SubagentStart: the ``SubagentStarted``
observation) or, when hookd missed that (spawned while it ran, a spooled hook lost), from the
first hook that carries its ``agent_id``; it ends at its stop hook (``SubagentStopped``) or,
when none came, at its session's end. Each change is an event: ``subagent_started``
``{agent_id, agent_type, via, restarted?}`` and ``subagent_ended`` ``{agent_id, agent_type,
reason: "stopped" | "session_ended", via, transcript_path?}``. What one waits on is read, not
stored: its pending interactions (:meth:`hookd.store.Store.running_subagents`).
"""

from __future__ import annotations

from typing import Any

from hookd.harness.base import Payload, SubagentStopped, text
from hookd.store import Tx


def running(tx: Tx, builder: str, sid: str, agent_id: str, agent_type: str | None, via: str, at: float) -> None:
    """A hook of subagent ``agent_id`` came (``via``: its name): it runs; ``subagent_started``
    when hookd did not know it running (``restarted``: it had ended, and was continued)."""
    change = tx.subagents.subagent_running(builder, sid, agent_id, agent_type, at)
    if change is None:
        return
    data: dict[str, Any] = {"agent_id": agent_id, "agent_type": agent_type, "via": via}
    if change == "restarted":
        data["restarted"] = True
    tx.append_event("subagent_started", builder, sid, at, data)


def seen(tx: Tx, builder: str, sid: str, p: Payload, at: float) -> None:
    """Any hook of a subagent (``p.agent_id`` set) but its stop: it runs (:func:`running`)."""
    if p.agent_id:
        running(tx, builder, sid, p.agent_id, text(p.agent_type), p.hook_event_name, at)


def stopped(tx: Tx, builder: str, sid: str, ob: SubagentStopped, via: str, at: float) -> None:
    """Its stop hook came: ended, ``stopped`` (once: a second copy records nothing)."""
    if tx.subagents.subagent_stopped(builder, sid, ob.agent_id, ob.agent_type, ob.transcript_path, at):
        data: dict[str, Any] = {"agent_id": ob.agent_id, "agent_type": ob.agent_type, "reason": "stopped", "via": via}
        if ob.transcript_path:
            data["transcript_path"] = ob.transcript_path
        tx.append_event("subagent_ended", builder, sid, at, data)


def session_ended(tx: Tx, builder: str, sid: str, via: str, at: float) -> None:
    """The session ended: each of its subagents still running ends, ``session_ended``."""
    for agent_id, agent_type in tx.subagents.end_subagents(sid, at):
        tx.append_event("subagent_ended", builder, sid, at,
                        {"agent_id": agent_id, "agent_type": agent_type, "reason": "session_ended", "via": via})
