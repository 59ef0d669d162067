"""The lanes as ``GET /v1/lanes`` serves them (``hookd lanes``) and a chat's ``/lanes`` shows
them: computed now (:meth:`hookd.watchers.lanes.LaneWatch.compute`: live durations, counts),
a builder unspawned shown as ``unspawned``, each lane's running subagents, a builder whose
hooks stopped working with that warning, those waiting on a human first."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import msgspec

from hookd.clock import when
from hookd.models import BadRequest, Subagent
from hookd.spawn import list_unspawned

if TYPE_CHECKING:
    from hookd.core import Hookd

#: The order of lanes by state after those that wait on a human's answer (:func:`_lane_order`):
#: what else needs a human (a stall on messages or an error, a failure, an agent gone), then
#: the rest
_LANE_RANK = {"stalled": 1, "failed": 2, "dead": 3, "idle": 4, "working": 5, "ended": 6, "unspawned": 7}


async def lanes_now(core: Hookd, builders: list[str] | None = None) -> list[Any]:
    """Every builder's lane now, or only ``builders``' (:class:`hookd.watchers.lane_state.Lane`
    items, the module doc's order and additions; a builder hookd does not know has none).
    Raises BadRequest when the daemon watches no lanes."""
    watch = core.lanes
    if watch is None:
        raise BadRequest("lanes are not being watched")
    if builders is not None:
        known = set(await watch.builders())
        builders = [b for b in dict.fromkeys(builders) if b in known]
    lanes = await watch.compute(builders)
    gone = await asyncio.to_thread(list_unspawned, core.home)
    if gone:  # (a lane of a builder unspawned: its agent has no hooks of hookd's any more)
        lanes = [_unspawned(lane, gone[lane.builder]) if lane.builder in gone else lane for lane in lanes]
    lanes = _with_subagents(lanes, await core.store.running_subagents())
    warned = await core.store.hooks_changed()
    if warned:  # (hookd.core.hookhealth: its hooks stopped working)
        lanes = [_hooks_changed(lane, warned[lane.builder]) if lane.builder in warned else lane for lane in lanes]
    return sorted(lanes, key=_lane_order)


def _unspawned(lane: Any, at: float) -> Any:
    """``lane`` of a builder unspawned at ``at``: state ``unspawned``, since then, the lane it
    would have in its detail."""
    return msgspec.structs.replace(lane, state="unspawned", since=at, due=None,
                                   detail=f"unspawned at {when(at)} (was {lane.state}: {lane.detail})")


def _with_subagents(lanes: list[Any], running: list[Subagent]) -> list[Any]:
    """``lanes`` with each builder's running subagents (``subagents``, oldest first), but for a
    lane whose agent is gone (``dead``, ``ended``: its subagents went with it) or no longer
    hooked (``unspawned``: nothing would say that they ended)."""
    if not running:
        return lanes
    by: dict[str, list[Subagent]] = {}
    for s in running:
        by.setdefault(s.builder, []).append(s)
    return [msgspec.structs.replace(lane, subagents=tuple(by[lane.builder]))
            if lane.builder in by and lane.state not in ("dead", "ended", "unspawned") else lane for lane in lanes]


def _hooks_changed(lane: Any, warning: dict[str, Any]) -> Any:
    """``lane`` of a builder whose hooks stopped working: the warning in ``hooks_changed`` and
    first in its detail."""
    return msgspec.structs.replace(lane, hooks_changed=warning,
                                   detail=f"hooks stopped working: {warning.get('reason')}; {lane.detail}")


def _lane_order(lane: Any) -> tuple[int, float]:
    """Lanes waiting on a human's answer first (pending interactions: ``waiting_question``,
    ``waiting_permission``, ``stalled`` on one), then by :data:`_LANE_RANK`; oldest state
    first within each."""
    if lane.pending and lane.state in ("stalled", "waiting_question", "waiting_permission"):
        return (0, lane.since)
    return (_LANE_RANK.get(lane.state, 9), lane.since)
