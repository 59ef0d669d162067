"""The operator page's data over the hub (``hookd --hub URL hub serve``, docs/fleet.md "The page
over the hub"): what the page reads from a daemon's API (``/v1/questions``, ``/v1/lanes``,
``/v1/status``, ``/v1/messages``, ``/v1/events/sse``), read from the hub for every host, and its
answers and messages queued as the hub's commands (:func:`hookd.hub.ops.queue`).

Names: one host's interaction ``ID`` is ``HOST/ID`` on this page, its builder ``B`` is
``HOST/B`` (the CLI's ``--hub`` targets: the same id may wait on several hosts), each item also
has ``host``. Freshness: every item has ``heartbeat_age_s`` (seconds since its host's heartbeat,
the hub's clock), ``/v1/status``'s ``hosts`` each host's ``seen_at`` (this machine's clock:
now minus that age, so the page's "ago" does not depend on the hub's clock).

Each call takes a new connection (the page reads on a change, not per event); the stream holds
one for its life. Raises :class:`hookd.errors.HubUnavailable` for an unreachable hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any, AsyncIterator, Callable

from hookd.clock import detail_now
from hookd.errors import BadRequest, Conflict, HubUnavailable, NotFound
from hookd.hub import ops, sql
from hookd.hub.config import redact
from hookd.vocabulary import by_text, outcome_of

#: Seconds between looks at the hosts' heartbeats while no NOTIFY comes (a heartbeat alone
#: notifies nobody: the page's freshness is refreshed this often).
HEARTBEAT_LOOK_S = 2.0
#: Events read per host per look.
BATCH = 500


def split(qualified: str, what: str) -> tuple[str, str]:
    """(host, name) of ``HOST/NAME``; raises NotFound for a name without its host."""
    host, slash, name = qualified.partition("/")
    if not slash or not host or not name:
        raise NotFound(f"no {what} {qualified!r} on the hub page: its names are HOST/NAME")
    return host, name


def _interaction(r: dict[str, Any]) -> dict[str, Any]:
    """The page's interaction (as a daemon's ``GET /v1/interactions/{id}``, the fields the hub
    knows) of a row of :func:`hookd.hub.sql.pending` / :func:`hookd.hub.sql.resolved`."""
    d = json.loads(r["data"])
    host = r["host_id"]
    res = json.loads(r["resolution"]) if r.get("resolution") else None
    kind = d.get("kind") or r["kind"].split("_")[0]
    tool_input = d.get("tool_input") if "tool_input" in d else d.get("input")
    if kind == "plan":
        tool_input = {**(tool_input if isinstance(tool_input, dict) else {}), "plan": d.get("plan"),
                      "planFilePath": d.get("plan_path")}
    out = {"id": f"{host}/{d.get('id')}", "host": host, "local_id": d.get("id"), "kind": kind,
           "builder": f"{host}/{r['builder']}", "agent_id": d.get("agent_id"), "agent_type": d.get("agent_type"),
           "tool_name": d.get("tool_name"), "tool_use_id": d.get("tool_use_id"), "questions": d.get("questions"),
           "input": tool_input, "input_hash": d.get("input_hash"), "state": "pending", "revision": None,
           "created_at": r["at"], "resolved_at": None, "heartbeat_age_s": r["heartbeat_age_s"]}
    for k in ("server", "message", "mode", "requested_schema"):
        if k in d:
            out[k] = d[k]
    if r["kind"] == "human_input_requested":  # an agent's async ask: its one question, as a daemon shows it
        out["questions"] = [{"question": d.get("question"), "header": None, "multiSelect": False,
                             "options": [{"label": o} for o in d.get("options") or []]}]
        out["expires_at"], out["author"] = d.get("expires_at"), d.get("author")
    if kind == "elicitation" and out["input"] is None:
        out["input"] = d.get("requested_schema")
    if res is None and r.get("held") is not None:  # (a pending decision's: whether its host takes an answer)
        out["held"] = r["held"]
    if res is not None:
        state = res.get("outcome") or "answered"
        out.update(state=state, outcome=outcome_of(kind, state, res.get("decision")), decision=res.get("decision"),
                   resolved_at=r["resolved_at"], answers=res.get("answers"), surface=res.get("surface"),
                   actor=res.get("actor"), by=by_text(res.get("surface"), res.get("actor")))
    return out


def _lane(r: dict[str, Any], sends_queued: int) -> dict[str, Any]:
    d = json.loads(r["data"])
    host = r["host_id"]
    return {"builder": f"{host}/{r['builder']}", "host": host, "local_builder": r["builder"], "state": d.get("to"),
            "since": d.get("since"), "detail": detail_now(d.get("detail"), d.get("waited"), d.get("waiting_since"), time.time()),
            "pending": [f"{host}/{p}" for p in d.get("pending") or []],
            "queued": r["inbox_queued"] + sends_queued, "sends_queued": sends_queued,
            "heartbeat_age_s": r["heartbeat_age_s"]}


def _message(c: dict[str, Any]) -> dict[str, Any]:
    """A send command (:func:`hookd.hub.ops.view`) as the page's inbox message: its state is
    the command's (``queued`` on the hub, ``applied`` or ``refused`` by its host)."""
    host = c["host_id"]
    return {"id": c["id"], "builder": f"{host}/{c['builder']}", "host": host, "state": c["state"],
            "text": c["payload"].get("text"), "author": c["operator"], "created_at": c["created_at"],
            "delivered_via": None, "adopted_via": None, "reason": c["reason"], "applied_at": c["applied_at"],
            "heartbeat_age_s": c["heartbeat_age_s"]}


def _qualify_event(e: dict[str, Any]) -> dict[str, Any]:
    """A host's event as the page's stream sends it: its ``id`` and builder qualified."""
    host = e["host_id"]
    d = json.loads(e["data"])
    if isinstance(d, dict) and isinstance(d.get("id"), str):
        d = {**d, "id": f"{host}/{d['id']}"}
    return {"host": host, "host_seq": e["seq"], "kind": e["kind"],
            "builder": f"{host}/{e['builder']}" if e["builder"] else None, "session_id": e["session_id"],
            "at": e["at"], "data": d}


class HubSource:
    """The page's reads and writes over the hub at ``url`` (an operator's role: it reads every
    host's rows). wait_s: how long an answer or message waits for its host's outcome."""

    def __init__(self, url: str, wait_s: float = 10.0):
        self.url = url
        self.wait_s = wait_s

    async def _with(self, fn: Callable[..., Any], *args: Any) -> Any:
        import asyncpg

        try:
            conn = await asyncpg.connect(self.url, timeout=10)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise HubUnavailable(f"hub {redact(self.url)}: {str(e).strip() or type(e).__name__}") from None
        try:
            return await fn(conn, *args)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise HubUnavailable(f"hub {redact(self.url)}: {str(e).strip() or type(e).__name__}") from None
        finally:
            await conn.close()

    async def questions(self, state: str = "pending", limit: int = 100) -> list[dict[str, Any]]:
        """Every host's pending interactions (``state`` ``pending``, oldest first) or the
        newest ``limit`` resolved ones (``resolved``), as :func:`_interaction` gives each."""
        if state == "pending":
            return [_interaction(r) for r in await self._with(sql.pending)]
        if state == "resolved":
            return [_interaction(r) for r in await self._with(sql.resolved, limit)]
        raise BadRequest("state must be pending or resolved on the hub page")

    async def interaction(self, qualified: str) -> dict[str, Any]:
        """Interaction ``HOST/ID``; raises NotFound."""
        host, iid = split(qualified, "interaction")
        r = await self._with(sql.interaction, host, iid)
        if r is None:
            raise NotFound(f"no interaction {qualified!r} on the hub")
        return _interaction(r)

    async def lanes(self) -> list[dict[str, Any]]:
        """Every host's lanes (their last ``lane_changed``), ``queued`` counting the messages
        queued on the hub for the builder too."""
        async def go(conn: Any) -> list[dict[str, Any]]:
            queued = await sql.queued_counts(conn)
            return [_lane(r, queued.get((r["host_id"], "send", r["builder"]), 0)) for r in await sql.lanes(conn)]
        return list(await self._with(go))

    async def status(self) -> dict[str, Any]:
        """``{"hub": url without its password, "builders": [], "hosts": [{"host", "shipped_seq",
        "version", "heartbeat_age_s", "seen_at"}]}`` (``seen_at``: UNIX seconds, this clock)."""
        now = time.time()
        rows = await self._with(sql.hosts)
        return {"hub": redact(self.url), "builders": [],
                "hosts": [{"host": h["host_id"], "shipped_seq": h["shipped_seq"], "version": h["version"],
                           "heartbeat_age_s": h["age_s"], "seen_at": now - max(0.0, h["age_s"])} for h in rows]}

    async def messages(self, limit: int = 200) -> list[dict[str, Any]]:
        """The newest ``limit`` messages sent through the hub (send commands), oldest first."""
        rows = await self._with(sql.list_commands, None, 4 * limit)
        return [_message(ops.view(c)) for c in rows if c["kind"] == "send"][-limit:]

    async def answer(self, qualified: str, body: dict[str, Any]) -> dict[str, Any]:
        """Queue an answer to ``HOST/ID`` and wait up to ``wait_s`` for its host: ``{"command",
        "interaction", "warning"}`` (warning: while it is still queued). Raises Conflict with the
        host's reason when refused, NotFound, HubUnavailable."""
        host, iid = split(qualified, "interaction")
        body = {k: v for k, v in body.items() if k not in ("surface", "actor")}
        c = await self._with(ops.queue, "answer", f"{host}/{iid}", body, self.wait_s)
        if c["state"] == "refused":
            raise Conflict(f"{host}: {ops.on_host(host, c['reason'])}")
        warning = None if c["state"] == "applied" else _queued_words(c)
        return {"command": c, "interaction": await self.interaction(qualified), "warning": warning,
                "duplicate": not c["created"]}

    async def send(self, qualified: str, body: dict[str, Any]) -> dict[str, Any]:
        """Queue a message for builder ``HOST/B`` (``text``, ``id``: its key) and wait up to
        ``wait_s``: ``{"message"}`` (:func:`_message`). Raises Conflict when refused."""
        host, builder = split(qualified, "builder")
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise BadRequest("text: a message needs words")
        c = await self._with(ops.queue, "send", f"{host}/{builder}", {"text": text, "id": body.get("id")}, self.wait_s)
        if c["state"] == "refused":
            raise Conflict(f"{host}: {ops.on_host(host, c['reason'])}")
        return {"message": _message(c), "command": c}

    async def stream(self, should_exit: Callable[[], bool]) -> AsyncIterator[dict[str, Any]]:
        """Every event the hosts ship from now on (:func:`_qualify_event`), woken by the
        shippers' NOTIFY; and ``hub_changed`` items (``data``: ``{"host", "what"}``, what
        ``host_seen``: a heartbeat, each host's first at once: its freshness; ``host_new``: a
        host that first shipped since the stream began, whose events so far are not sent;
        ``command``: a command's outcome, with its ``id``) that tell the page what to read again. Ends when ``should_exit()`` or the connection is lost (raises
        HubUnavailable)."""
        import asyncpg

        try:
            conn = await asyncpg.connect(self.url, timeout=10)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise HubUnavailable(f"hub {redact(self.url)}: {str(e).strip() or type(e).__name__}") from None
        woken = asyncio.Event()
        outcomes: list[str] = []

        def wake(_c: Any, _pid: int, channel: str, payload: str) -> None:
            if channel == sql.OUTCOMES:
                outcomes.append(payload)
            woken.set()
        try:
            await conn.add_listener(sql.CHANNEL, wake)
            await conn.add_listener(sql.OUTCOMES, wake)
            cursor = {h["host_id"]: h["shipped_seq"] for h in await sql.hosts(conn)}
            seen: dict[str, Any] = {}  # host -> its heartbeat_at last told (each host's first: at once)
            while not should_exit():
                woken.clear()
                for cid in outcomes:
                    yield {"kind": "hub_changed", "data": {"what": "command", "id": cid}}
                outcomes.clear()
                for h in await sql.hosts(conn):
                    host = h["host_id"]
                    if host not in cursor:  # a new host: the page reads everything again
                        cursor[host] = h["shipped_seq"]
                        yield {"kind": "hub_changed", "data": {"what": "host_new", "host": host}}
                    while cursor[host] < h["shipped_seq"]:
                        evs = await sql.events(conn, host, cursor[host], BATCH)
                        if not evs:
                            break
                        cursor[host] = evs[-1]["seq"]
                        for ev in evs:
                            yield _qualify_event(ev)
                    if seen.get(host) != h["heartbeat_at"]:
                        seen[host] = h["heartbeat_at"]
                        yield {"kind": "hub_changed", "data": {"what": "host_seen", "host": host}}
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), HEARTBEAT_LOOK_S)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise HubUnavailable(f"hub {redact(self.url)}: {str(e).strip() or type(e).__name__}") from None
        finally:
            with contextlib.suppress(Exception):
                await conn.close()


def _queued_words(c: dict[str, Any]) -> str:
    age = c.get("heartbeat_age_s")
    seen = "never seen" if age is None else f"seen {int(max(0.0, age))} s ago"
    return f"queued on the hub for {c['host_id']} (host {seen}): it is applied when the host takes it"
