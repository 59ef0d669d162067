"""The core's claw parts: identity of claw hooks, question matching without tool_use_ids, and
the claw-http boundary calls of in-process agent loops.

:class:`ClawCore` is mixed into :class:`hookd.service.Hookd`. Everything goes through the
same :meth:`~hookd.service.Hookd.ingest_hook` transaction as Claude Code's hooks (raw payload
kept, questions, inbox delivery); this module only adds what claw needs on top:

- a claw hook's session is derived from its builder and cwd (``harness/claw.py``
  :func:`~hookd.harness.claw.session_id`; trait ``needs_context``); a payload with no cwd
  (spooled, or an older client) takes the builder's spawned worktree;
- claw hooks carry no ``tool_use_id``: a question hook is bound to the session's newest open
  question with the same input (:meth:`_bind_sequential`, trait ``sequential_questions``; claw
  runs one tool at a time and a question blocks it), and a transcript's ``tool_use`` to the
  hook-opened one;
- claw-http: messages delivered by a drain stay ``delivered`` until the loop acks them
  (``adopted``, via ``ack``); unacked ones are offered again at the session's next drain after
  it registers again or the daemon restarts (:meth:`_redeliver_before`, trait ``ack_required``).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from hookd.harness.base import Adapter, Payload, QuestionAsked, QuestionResolved
from hookd.models import TERMINAL_STATES, BadRequest, Interaction, NotFound
from hookd.store import Tx

if TYPE_CHECKING:
    from hookd.service import Hookd

#: The harness name of claw-http's boundary calls (:data:`hookd.harness.registry.ADAPTERS`).
CLAW_HTTP = "claw-http"
#: A claw-http session id: what the loop calls its run (1-200 printable characters, no space).
SESSION_ID = re.compile(r"^[!-~]{1,200}$")
#: A hook's question resolution that finds its question already resolved this recently
#: (seconds) is the same call seen twice (the transcript was first).
RESOLVED_BIND_S = 60.0


#: a question observation (:meth:`ClawCore._bind_sequential` returns the kind it is given)
_Q = TypeVar("_Q", bound=QuestionAsked | QuestionResolved)


def check_session_id(sid: str) -> str:
    if not SESSION_ID.match(sid):
        raise BadRequest("session_id must be 1 to 200 printable ASCII characters without spaces")
    return sid


class ClawCore:
    """claw harness support of :class:`hookd.service.Hookd`."""

    # --- claw shell hooks -----------------------------------------------------------------
    def _parse_hook(self: "Hookd", adapter: Adapter, builder: str, raw: bytes,  # type: ignore[misc]
                    cwd: str | None) -> Payload:
        """Parse ``raw`` with ``adapter``; an adapter that ``needs_context`` (claw) gets the
        builder and the hook's cwd (reported by the client, else the builder's spawned
        worktree), the others the reported cwd (unused)."""
        if not adapter.needs_context:
            return adapter.parse(raw, builder=builder, cwd=cwd)
        if cwd is None:
            from hookd.spawn import read_manifest

            m = read_manifest(self.home, builder)
            cwd = (m or {}).get("worktree")
        return adapter.parse(raw, builder=builder, cwd=cwd or None)

    def _bind_sequential(self, tx: Tx, builder: str, p: Payload, ob: _Q, at: float) -> _Q:
        """Bind a question observation of a harness without hook tool_use_ids (claw) to the
        interaction it belongs to; returns the observation to apply (its ``tool_use_id`` set
        to that interaction's tool_use_id or id), or ``ob`` unchanged (a new call).

        - with a tool_use_id (a transcript row) not known yet: the session's newest question
          with the same input that has none (opened by a hook) gets it;
        - without one (a hook): the session's newest pending (or remotely answered) question
          with the same input, whatever its age (one tool at a time; a question blocks claw
          until the desk answers); for a resolution, else one resolved moments ago (the
          transcript's tool_result came first: this hook is its duplicate).
        """
        sid = p.session_id
        if sid is None:
            return ob
        if ob.tool_use_id:
            if tx.interaction_by_tool_use_id(ob.tool_use_id) is None:
                i = tx.interaction_by_hash(builder=builder, session_id=sid, tool_name=ob.tool_name,
                                           input_hash=ob.input_hash, states=("pending", *TERMINAL_STATES),
                                           since=0.0, without_tool_use_id=True)
                if i is not None:
                    tx.set_tool_use_id(i.id, ob.tool_use_id)
            return ob
        i = tx.interaction_by_hash(builder=builder, session_id=sid, tool_name=ob.tool_name,
                                   input_hash=ob.input_hash, states=("pending", "answered"), since=0.0)
        if i is not None and i.state == "answered" and i.received_at is None:
            i = None  # answered at the desk already: not an open call
        if i is None and isinstance(ob, QuestionResolved):
            done = tx.interaction_by_hash(builder=builder, session_id=sid, tool_name=ob.tool_name,
                                          input_hash=ob.input_hash, states=TERMINAL_STATES, since=0.0)
            if done is not None and (done.resolved_at or 0.0) >= at - RESOLVED_BIND_S:
                i = done
        if i is None:
            return ob
        return msgspec.structs.replace(ob, tool_use_id=i.tool_use_id or i.id)

    # --- claw-http --------------------------------------------------------------------------
    def _redeliver_before(self: "Hookd", adapter: Adapter, sid: str, mono: float) -> float:  # type: ignore[misc]
        """Messages delivered before this moment (hookd's timeline, :mod:`hookd.clock`; ``mono``
        is now) and never adopted are offered again (at-least-once). Hooks: REDELIVER_AFTER_S
        after their delivery. claw-http (acks): also everything delivered before this daemon
        started or before the session last registered: the loop may never have got it."""
        from hookd.service import REDELIVER_AFTER_S

        before = mono - REDELIVER_AFTER_S
        if adapter.ack_required:
            before = max(before, self.started_mono, self._registered.get(sid, float("-inf")))
        return before

    async def claw_ack(self: "Hookd", builder: str, sid: str, ids: list[str]) -> list[str]:  # type: ignore[misc]
        """Mark consumed (``adopted``, via ``ack``) the messages ``ids`` that a drain delivered
        to claw-http session ``sid``. Idempotent; unknown or not delivered ids are ignored.
        Returns the ids changed. Event ``inbox_adopted`` (``via: "ack"``)."""
        if not ids:
            return []
        if len(ids) > 1000 or any(not isinstance(i, str) for i in ids):
            raise BadRequest("ack takes at most 1000 message ids")
        at = time.time()

        adopted, _ = await self.store.write(lambda tx: self._adopt(
            tx, builder, sid, via="ack", at=at, up_to_hook_event_id=2**62, only=sorted(set(ids))))
        if adopted:
            await self.bus.publish()
        return adopted

    async def claw_call(self: "Hookd", builder: str, sid: str, payload: dict[str, Any],  # type: ignore[misc]
                        ack: list[str] | None = None) -> dict[str, Any]:
        """One claw-http boundary call of session ``sid``: acks ``ack`` first, then stores and
        applies ``payload`` (``hook_event_name`` per :mod:`hookd.harness.claw_http`) like a
        hook. Returns ``{"acked", "ids", "text", "waiting", "redelivered", "events"}``: the
        messages this call delivered (a drain), framed as the model should read them.
        Raises BadRequest (invalid payload), PayloadInvalid."""
        check_session_id(sid)
        if payload.get("hook_event_name") != "SessionStart":
            known = await self.store.session_builders([sid])
            if known.get(sid) != builder:
                raise NotFound(f"no claw-http session {sid!r} of {builder!r}: register it first"
                               f" (POST /v1/claw/{builder}/sessions)")
        acked = await self.claw_ack(builder, sid, ack or [])
        raw = msgspec.json.encode({**payload, "session_id": sid})
        res = await self.ingest_hook(CLAW_HTTP, builder, raw)
        if payload.get("hook_event_name") == "SessionStart":
            self._registered[sid] = self.store.clock.mono()
        out: dict[str, Any] = {"acked": acked, "ids": [], "text": "", "waiting": 0, "redelivered": [],
                               "events": [e.kind for e in res.events]}
        for e in res.events:
            if e.kind == "inbox_delivered":
                out.update(ids=e.data["ids"], waiting=e.data.get("waiting", 0),
                           redelivered=e.data.get("redelivered", []))
            elif e.kind == "question_pending":
                out["question"] = e.data["id"]
        if res.body:
            out["text"] = msgspec.json.decode(res.body)["text"]
        return out

    async def claw_ask(self: "Hookd", builder: str, sid: str, question: str, options: list[str] | None,  # type: ignore[misc]
                       expires_in_s: float | None, author: str | None) -> Interaction:
        """Ask the humans without blocking the loop (an ``async`` interaction of session
        ``sid``); the answer reaches the loop through a later drain as ``[Answer to question
        <id>] ...``. Raises BadRequest."""
        check_session_id(sid)
        return await self.ask_async(builder, question, options, session_id=sid, expires_in_s=expires_in_s,
                                    author=author)
