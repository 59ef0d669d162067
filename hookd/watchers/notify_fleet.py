"""The fleet notifier's alerts (docs/fleet.md "One notifier for the fleet"): an interaction
pending on any host of the hub, read from its shipped ``*_pending`` event, told on this
daemon's one-way channels (:meth:`hookd.watchers.notify.Notifier.send_now`) with the host's
name in front. The hub's side (who leads, what is due, the claims) is
:class:`hookd.hub.fleet.FleetLead`, which calls :func:`fleet_sender`'s function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal, cast

import msgspec

from hookd.harness.registry import present_tool
from hookd.models import Interaction
from hookd.watchers.notify_channels import Alert, interaction_alert
from hookd.watchers.notify_config import TWO_WAY_TYPES, NotifyConfig

if TYPE_CHECKING:
    from hookd.watchers.notify import Notifier

_KINDS = {"question_pending": "question", "permission_pending": "permission", "elicitation_pending": "elicitation"}


def one_way(config: NotifyConfig) -> bool:
    """Whether ``config`` has a channel the fleet notifier can send on (one-way: two-way
    chats post their own host's interactions with their buttons)."""
    return any(c.type not in TWO_WAY_TYPES for c in config.channels)


def fleet_alert(row: dict[str, Any], step: int, steps: int, now: float) -> Alert:
    """The alert for step ``step`` (of ``steps``) of the interaction a hub row describes
    (``host_id``, ``kind``: its ``*_pending`` event's, ``builder``, ``session_id``, ``at``,
    ``data``: the event's data, decoded): the host's alert as its own notifier would word it
    (the harness unknown: a tool call as compact JSON), ``[host]`` before the title, ``on
    host H:`` before the message, ``host`` in ``data``, and its ``Answer:`` line through the
    hub: ``hookd --hub <operator URL> answer HOST/ID ...``."""
    data, host = row["data"], str(row["host_id"])
    kind = cast(Literal["question", "permission", "plan", "elicitation"],
                data.get("kind") if data.get("kind") in ("plan", "permission") else _KINDS.get(row["kind"], "question"))
    if row["kind"] == "elicitation_pending":
        shown: Any = {k: data.get(k) for k in ("server", "message", "mode", "url", "elicitation_id", "requested_schema")}
        tool = data.get("server")
    else:
        shown, tool = data.get("tool_input"), data.get("tool_name")
        if kind == "plan":
            shown = {**(shown if isinstance(shown, dict) else {}), "plan": data.get("plan")}
    i = Interaction(id=str(data.get("id")), kind=kind, builder=str(row["builder"] or "-"),
                    session_id=row.get("session_id"), agent_id=data.get("agent_id"), tool_name=tool,
                    tool_use_id=data.get("tool_use_id"), state="pending", questions=data.get("questions"),
                    answers=None, selections=None, surface=None, warning=None, error=None,
                    created_at=float(row["at"]), resolved_at=None, revision=1, input=shown,
                    agent_type=data.get("agent_type"))
    view = present_tool(None, tool, shown) if kind == "permission" else None
    # (answered through the hub: the lead's own `hookd answer` reaches only its own host, and the
    # operator's URL, with its password, is the operator's, not the lead's to know)
    alert = interaction_alert(i, step, steps, now, view, answer=f"hookd --hub <operator URL> answer {host}/{i.id}")
    return msgspec.structs.replace(alert, title=f"[{host}] {alert.title}", message=f"on host {host}: {alert.message}",
                                   data={**alert.data, "host": host})


def fleet_sender(notifier: "Notifier") -> Callable[[dict[str, Any], int, int, float], Awaitable[bool]]:
    """The :data:`hookd.hub.fleet.Send` of this daemon: :func:`fleet_alert` sent on
    ``notifier``'s one-way channels."""
    async def send(row: dict[str, Any], step: int, steps: int, now: float) -> bool:
        return await notifier.send_now(fleet_alert(row, step, steps, now))
    return send
