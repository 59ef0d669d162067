"""The notifier's rule ``agent_notified``: the agent asked for its human's attention itself
(the event ``agent_notified``, :mod:`hookd.core.notices`: Claude Code's PushNotification, or
SendUserMessage in brief mode), sent on every channel once, at once, with no escalation.

Which messages are sent is ``[notify] agent_messages`` (``HOOKD_NOTIFY_AGENT_MESSAGES``):
``"proactive"`` (the default: the ones the adapter marks urgent, a push or a message the agent
initiates), ``"all"`` (every reply of brief mode too) or ``"off"``. Each event is claimed in the
store under its own key before it is sent (at most once per channel, across restarts); at
start the rule looks back :data:`FRESH_S` seconds (what a restart or the spool brought in),
never further.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookd.watchers.notify_channels import Alert

if TYPE_CHECKING:
    from hookd.core import Hookd
    from hookd.models import Event

#: At start, events this many seconds old or newer are still sent (if not sent before).
FRESH_S = 600.0
#: At start, the rule reads back at most this many events of the log.
LOOK_BACK = 5000
#: The title carries the message's first line to this many characters.
TITLE_CHARS = 80


def agent_alert(ev: Event) -> Alert:
    """The alert for one ``agent_notified`` event: the builder and the agent's text, and the
    command that answers it (``hookd send``). Key ``agent:<seq>``; rule ``agent_notified``."""
    d = ev.data
    builder = ev.builder or "-"
    message = str(d.get("message") or "")
    first = message.split("\n", 1)[0]
    first = first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1] + "…"
    who = f"{builder}'s agent" + (f" ({d['agent_id']})" if d.get("agent_id") else "")
    return Alert(key=f"agent:{ev.seq}", rule="agent_notified", builder=ev.builder, session_id=ev.session_id,
                 title=f"hookd: {who}: {first}",
                 message=f"{who} says ({d.get('tool_name')}):\n{message}\nReply: hookd send {builder} \"...\"",
                 data={"message": message, "tool_name": d.get("tool_name"), "tool_use_id": d.get("tool_use_id"),
                       "status": d.get("status"), "urgent": bool(d.get("urgent")), "seq": ev.seq},
                 at=ev.at)


def selected(data: dict[str, Any], agent_messages: str) -> bool:
    """Does ``[notify] agent_messages`` select an ``agent_notified`` event with ``data``?"""
    if agent_messages == "all":
        return True
    return agent_messages == "proactive" and bool(data.get("urgent"))


class AgentNotices:
    """Reads new ``agent_notified`` events on each of the notifier's passes and hands the
    selected ones to ``send`` (the notifier's claim-and-send)."""

    def __init__(self, core: Hookd, agent_messages: str):
        self.core = core
        self.agent_messages = agent_messages
        self._after: int | None = None  # the last event seq read
        self._since = 0.0  # events older than this (UNIX seconds) are not sent

    async def due(self, now: float) -> list[Alert]:
        """The alerts of the events recorded since the last call (the first: since
        :data:`FRESH_S` ago)."""
        if self.agent_messages == "off":
            return []
        upto = await self.core.store.last_event_seq()
        if self._after is None:
            self._after, self._since = max(0, upto - LOOK_BACK), now - FRESH_S
        out: list[Alert] = []
        while self._after < upto:
            evs = await self.core.store.events_of_kind("agent_notified", self._after, upto)
            out += [agent_alert(ev) for ev in evs if ev.at >= self._since and selected(ev.data, self.agent_messages)]
            self._after = evs[-1].seq if len(evs) == 1000 else upto
        return out
