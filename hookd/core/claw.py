"""The core's claw parts: the claw-http boundary calls of in-process agent loops.

Everything goes through the same :meth:`hookd.core.ingest.Ingest.ingest_hook` transaction as
Claude Code's hooks (raw payload kept, questions, inbox delivery). What claw's shell hooks need
besides lives with the hook path: a claw hook's session is derived from its builder and cwd
(``harness/claw.py`` :func:`~hookd.harness.claw.session_id`; trait ``needs_context``; a
payload with no cwd takes the builder's spawned worktree: :meth:`hookd.core.ingest.Ingest`);
its questions carry no ``tool_use_id`` and bind to the session's newest open one
(:meth:`hookd.core.questions.Questions.bind_sequential`, trait ``sequential_questions``).

claw-http: messages delivered by a drain stay ``delivered`` until the loop acks them
(``adopted``, via ``ack``); unacked ones are offered again at the session's next drain after it
registers again or the daemon restarts (:meth:`hookd.core.inbox.Inbox.redeliver_before`, trait
``ack_required``).
"""

from __future__ import annotations

import re
import time
from typing import Any

import msgspec

from hookd.core.asks import Asks
from hookd.core.bus import EventBus
from hookd.core.inbox import Inbox
from hookd.core.ingest import Ingest
from hookd.harness.registry import ADAPTERS
from hookd.models import BadRequest, Interaction, NotFound
from hookd.store import Store

#: The harness name of claw-http's boundary calls (:data:`hookd.harness.registry.ADAPTERS`).
CLAW_HTTP = "claw-http"
#: A claw-http session id: what the loop calls its run (1-200 printable characters, no space).
SESSION_ID = re.compile(r"^[!-~]{1,200}$")


def check_session_id(sid: str) -> str:
    """``sid`` when it is a claw-http session id (:data:`SESSION_ID`); raises BadRequest."""
    if not SESSION_ID.match(sid):
        raise BadRequest("session_id must be 1 to 200 printable ASCII characters without spaces")
    return sid


class Claw:
    """claw-http's calls over ``store`` (``bus``: publishes; ``ingest``: each call is a hook;
    ``inbox``: acks and registrations; ``asks``: a loop's async questions)."""

    def __init__(self, store: Store, bus: EventBus, ingest: Ingest, inbox: Inbox, asks: Asks):
        self.store = store
        self.bus = bus
        self.ingest = ingest
        self.inbox = inbox
        self.asks = asks

    async def claw_ack(self, builder: str, sid: str, ids: list[str]) -> list[str]:
        """Mark consumed (``adopted``, via ``ack``) the messages ``ids`` that a drain delivered
        to claw-http session ``sid``. Idempotent; unknown or not delivered ids are ignored.
        Returns the ids changed. Event ``inbox_adopted`` (``via: "ack"``)."""
        if not ids:
            return []
        if len(ids) > 1000 or any(not isinstance(i, str) for i in ids):
            raise BadRequest("ack takes at most 1000 message ids")
        at = time.time()

        adopted, _ = await self.store.write(lambda tx: self.inbox.adopt(
            tx, builder, sid, via="ack", at=at, up_to_hook_event_id=2**62, only=sorted(set(ids))))
        if adopted:
            await self.bus.publish()
        return adopted

    async def claw_call(self, builder: str, sid: str, payload: dict[str, Any],
                        ack: list[str] | None = None) -> dict[str, Any]:
        """One claw-http boundary call of session ``sid``: acks ``ack`` first, then stores and
        applies ``payload`` (``hook_event_name`` per :mod:`hookd.harness.claw_http`) like a
        hook. Returns ``{"acked", "ids", "text", "waiting", "redelivered", "events"}``: the
        messages this call delivered (a drain), framed as the model should read them.
        Raises BadRequest (invalid payload), PayloadInvalid."""
        check_session_id(sid)
        register = ADAPTERS[CLAW_HTTP].hook_kinds.get(payload.get("hook_event_name", "")) == "session_start"
        if not register:
            known = await self.store.session_builders([sid])
            if known.get(sid) != builder:
                raise NotFound(f"no claw-http session {sid!r} of {builder!r}: register it first"
                               f" (POST /v1/claw/{builder}/sessions)")
        acked = await self.claw_ack(builder, sid, ack or [])
        raw = msgspec.json.encode({**payload, "session_id": sid})
        res = await self.ingest.ingest_hook(CLAW_HTTP, builder, raw)
        if register:
            self.inbox.registered(sid)
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

    async def claw_ask(self, builder: str, sid: str, question: str, options: list[str] | None,
                       expires_in_s: float | None, author: str | None) -> Interaction:
        """Ask the humans without blocking the loop (an ``async`` interaction of session
        ``sid``); the answer reaches the loop through a later drain as ``[Answer to question
        <id>] ...``. Raises BadRequest."""
        check_session_id(sid)
        return await self.asks.ask_async(builder, question, options, session_id=sid, expires_in_s=expires_in_s,
                                    author=author)
