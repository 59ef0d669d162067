"""A permission prompt's ``tool_view`` in the API's interaction JSON: the tool call as a
person reads it (:class:`hookd.harness.base.ToolView`), rendered by the adapter of the
harness the interaction's session was recorded under
(:func:`hookd.harness.registry.present_tool`; compact JSON when that harness is unknown).

Computed when read, from the stored input (no file is read); only ``permission``
interactions get the field (questions keep their own shape). An ``elicitation`` gets
``fields`` instead: its requested schema's fields
(:func:`hookd.core.elicitations.schema_fields`); a ``plan`` gets ``plan`` (its markdown text,
None when the agent wrote none) and ``plan_path`` (the file it was read from).
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from hookd.core.elicitations import schema_fields
from hookd.harness.registry import present_tool
from hookd.models import Interaction
from hookd.store import Store


#: Views rendered per turn of the event loop (a view costs ~0.1-0.5 ms: a long list of prompts
#: must not hold every other request up).
CHUNK = 100


async def with_tool_views(store: Store, items: list[Any]) -> list[Any]:
    """``items`` (interactions: :class:`hookd.models.Interaction` or their JSON objects) with
    each permission prompt as a JSON object carrying ``tool_view``; the others unchanged.
    One session lookup per session, whatever the number of prompts; :data:`CHUNK` views per
    turn of the event loop."""
    harness_of: dict[str, str | None] = {}
    out = []
    rendered = 0
    for i in items:
        kind = i.kind if isinstance(i, Interaction) else i.get("kind") if isinstance(i, dict) else None
        if kind == "permission":
            rendered += 1
            if rendered % CHUNK == 0:
                await asyncio.sleep(0)
        out.append(await with_tool_view(store, i, harness_of))
    return out


async def with_tool_view(store: Store, i: Any, harness_of: dict[str, str | None] | None = None) -> Any:
    """One interaction (:class:`hookd.models.Interaction` or its JSON object): a permission
    prompt as a JSON object with ``tool_view`` added, anything else as given. harness_of: a
    cache of session id -> harness name shared across calls."""
    d = msgspec.to_builtins(i) if isinstance(i, Interaction) else i
    if isinstance(d, dict) and d.get("kind") == "elicitation":
        return {**d, "fields": schema_fields(d.get("input"))}
    if isinstance(d, dict) and d.get("kind") == "plan":
        raw = d.get("input")
        inp: dict[str, Any] = raw if isinstance(raw, dict) else {}
        plan, path = inp.get("plan"), inp.get("planFilePath")
        return {**d, "plan": plan if isinstance(plan, str) else None, "plan_path": path if isinstance(path, str) else None}
    if not isinstance(d, dict) or d.get("kind") != "permission":
        return i
    sid = d.get("session_id")
    cache = harness_of if harness_of is not None else {}
    if isinstance(sid, str) and sid not in cache:
        cache[sid] = await store.session_harness(sid)
    harness = cache.get(sid) if isinstance(sid, str) else None
    tool_name = d.get("tool_name")
    return {**d, "tool_view": present_tool(harness, tool_name if isinstance(tool_name, str) else None, d.get("input"))}
