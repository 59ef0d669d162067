"""The agent asking for its human's attention itself (issue 21, moment 7): an
:class:`~hookd.harness.base.AttentionAsked` (Claude Code's PushNotification, or SendUserMessage in
brief mode) recorded in the hook's transaction as the event ``agent_notified``, and as the
session's last message from its agent (its lane shows it). Nothing waits on an answer and
nothing is held: the hook returns at once, and the notifier sends the event on (its rule
``agent_notified``, :mod:`hookd.watchers.notify_agent`) after the commit.
"""

from __future__ import annotations

from typing import Any

from hookd.harness.base import AttentionAsked, Payload
from hookd.store import Tx

#: The agent's text is kept (event, lane) to this many characters; longer ends with "…".
NOTICE_CHARS = 2000
#: The lane shows the first line of the last message, to this many characters.
LANE_CHARS = 120


def clip(message: str, limit: int) -> str:
    """``message`` cut to ``limit`` characters (the last one "…" when cut)."""
    return message if len(message) <= limit else message[: limit - 1] + "…"


def agent_notified(tx: Tx, builder: str, sid: str | None, p: Payload, ob: AttentionAsked, at: float) -> None:
    """Record ``ob``: the event ``agent_notified`` (``tool_use_id``, ``tool_name``, ``message``,
    ``status``, ``urgent``, ``via``, a subagent's ``agent_id``) and, for the main agent, the
    session's last message (its lane's ``notified``)."""
    message = clip(ob.message, NOTICE_CHARS)
    data: dict[str, Any] = {"tool_use_id": ob.tool_use_id, "tool_name": ob.tool_name, "message": message,
                            "status": ob.status, "urgent": ob.urgent, "via": p.hook_event_name}
    if ob.message != message:
        data["chars"] = len(ob.message)
    if p.agent_id is not None:
        data["agent_id"] = p.agent_id
    if sid and p.agent_id is None:
        tx.sessions.mark_notified(sid, at, clip(message.split("\n", 1)[0], LANE_CHARS))
    tx.append_event("agent_notified", builder, sid, at, data)
