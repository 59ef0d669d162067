"""The inbox: messages queued for a builder's agent, delivered at the hooks where the model reads
hook output (the adapter's ``boundary``), framed and capped to one injection, and adopted once
a later hook or the transcript proves the model read them; unadopted ones are offered again
after ``settings.redeliver_after_s`` (docs/decisions.md "Inbox and delivery"). Also the idle
wake: an idle agent's Stop hook held until a message for it arrives.

:class:`Inbox` delivers inside the hook's own transaction (:meth:`Inbox.deliver`); the
transcript that proves adoption is read after the commit, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from datetime import datetime, timezone

from hookd.clock import when
from hookd.core.bus import EventBus, Tasks
from hookd.core.limits import MAX_MESSAGE_CHARS, check_name
from hookd.core.state import HookCache, fingerprint
from hookd.harness.base import (
    INJECTION_CAP,
    STOP_CAP,
    Adapter,
    HookKind,
    Payload,
    frame_batch,
    frame_message,
    injection_size,
)
from hookd.harness.base import text as as_text
from hookd.harness.registry import ADAPTERS, reader_of
from hookd.models import BadRequest, Conflict, InboxMessage, NotFound
from hookd.settings import Settings
from hookd.store import Store, Tx
from hookd.untrusted import open_regular

log = logging.getLogger("hookd")

#: Longest an idle wake waits (seconds); the hook's own deadline may be shorter.
WAKE_MAX_S = 3600.0
#: How long a wake waits for the regular Stop hook of the same Stop to be stored (seconds).
WAKE_STOP_GRACE_S = 10.0
#: How much of a transcript's end is read for adoption proof (bytes).
TRANSCRIPT_TAIL_BYTES = 16 * 1024 * 1024


class Inbox:
    """Messages over ``store`` (``bus``: publishes; ``settings``: ``redeliver_after_s``;
    ``cache``: each session's last hook, what an idle wake waits on; ``tasks``: transcript
    reads for adoption). ``started_mono``: when the daemon started, on hookd's timeline
    (:mod:`hookd.clock`): an ack-requiring harness may never have got what was delivered
    before it."""

    def __init__(self, store: Store, bus: EventBus, settings: Settings, cache: HookCache, tasks: Tasks,
                 started_mono: float):
        self.store = store
        self.bus = bus
        self.settings = settings
        self.cache = cache
        self.tasks = tasks
        self.started_mono = started_mono
        self._registered: dict[str, float] = {}  # ack-requiring session -> when it last registered
        self._waking: dict[str, int] = {}  # builder -> its idle-wake hooks waiting now (:meth:`wake`)

    def waking(self, builder: str) -> bool:
        """Whether an idle-wake hook of ``builder``'s agent waits now (:meth:`wake`): a message
        sent to it while idle wakes it."""
        return self._waking.get(builder, 0) > 0

    def registered(self, sid: str) -> None:
        """Session ``sid`` of an ack-requiring harness (claw-http) registered (again) now: what
        was delivered to it before is offered again (:meth:`redeliver_before`)."""
        self._registered[sid] = self.store.clock.mono()

    async def send_message(
        self, builder: str, text: str, *, key: str | None = None, session_id: str | None = None,
        agent_id: str | None = None, author: str = "human",
    ) -> tuple[InboxMessage, bool]:
        """Queue ``text`` for ``builder``'s agent. Returns (message, created).

        key: idempotency key: the same key with the same text and scope returns the first
        message (created False); with other content raises Conflict. Raises BadRequest for
        empty text or text over MAX_MESSAGE_CHARS (split it: one injection stays under
        Claude Code's limit), and for an empty ``session_id`` or ``agent_id``. Raises NotFound
        for a scope that would never take it: a
        ``session_id`` hookd never saw for ``builder``, an ``agent_id`` no subagent of
        ``builder`` (of that session, when one is given) sent a hook as
        (:meth:`hookd.store.inbox.InboxTx.scope_refusal`).
        """
        if not text.strip():
            raise BadRequest("message text is empty")
        size = injection_size(text)
        if size > MAX_MESSAGE_CHARS:
            raise BadRequest(
                f"message is {size} bytes as sent (JSON-escaped UTF-8); the limit is {MAX_MESSAGE_CHARS} (split it)"
            )
        if not author.strip():
            raise BadRequest("author is empty")
        check_name("author", author)
        for what, value in (("session", session_id), ("agent", agent_id)):
            if value is not None and not value.strip():  # (a scope named by nothing: a script's empty variable)
                raise BadRequest(f"the {what} to send to is empty: give its id, or leave it out")

        def tx_fn(tx: Tx) -> tuple[InboxMessage, bool]:
            if key is not None:
                old = tx.inbox.message_by_key(builder, key)
                if old is not None:
                    if (old.text, old.session_id, old.agent_id) != (text, session_id, agent_id):
                        raise Conflict(f"message key {key!r} was already used for {old.id} with other content")
                    return old, False
            if (why := tx.inbox.scope_refusal(builder, session_id, agent_id)) is not None:
                raise NotFound(why)
            at = time.time()
            m = tx.inbox.insert_message(builder=builder, session_id=session_id, agent_id=agent_id,
                                  author=author, text=text, key=key, at=at)
            tx.append_event("inbox_queued", builder, session_id, at, {
                "id": m.id, "author": author, "chars": len(text), "agent_id": agent_id, "key": key,
            })
            return m, True

        (message, created), _ = await self.store.write(tx_fn)
        if created:
            await self.bus.publish()
        return message, created

    async def builder_unspawned(self, builder: str, at: float) -> None:
        """Record that `hookd unspawn` removed ``builder``'s hooks at ``at`` (epoch seconds; the
        CLI tells a running daemon): event ``builder_unspawned``, so lanes and the page learn it now
        and a send to it is refused."""

        def tx_fn(tx: Tx) -> None:
            tx.append_event("builder_unspawned", builder, None, time.time(), {"unspawned_at": at})

        await self.store.write(tx_fn)
        await self.bus.publish()

    async def cancel_message(self, message_id: str, *, actor: str, surface: str = "api") -> tuple[InboxMessage, bool]:
        """Take back queued message ``message_id`` (a human's, or an answer kept as one): it
        is never delivered. Returns (message, cancelled): cancelled False when it already was
        (idempotent). ``actor``: who took it back; ``surface``: ``cli`` | ``api`` | ``web``.
        Raises NotFound (no such message) or Conflict (delivered or adopted: the agent may
        have read it, so it cannot be taken back)."""
        check_name("actor", actor)

        def tx_fn(tx: Tx) -> tuple[InboxMessage, bool]:
            m = tx.inbox.message(message_id)
            if m is None:
                raise NotFound(f"no inbox message {message_id!r}")
            if m.state == "cancelled":
                return m, False
            if not tx.inbox.cancel_message(message_id, time.time()):
                how = f" by {m.delivered_via}" if m.delivered_via else ""
                at_ = f" at {when(m.delivered_at)}" if m.delivered_at is not None else ""
                if m.state == "adopted":  # delivered, then proven read: both, each with its own word
                    proof = f", adopted (its proof: {m.adopted_via})" if m.adopted_via else ", adopted"
                    what = f"delivered{how}{at_}{proof}"
                else:
                    what = f"{m.state}{how}{at_}"
                raise Conflict(f"{message_id} was already {what}, so it cannot be taken back"
                               f" (the agent may have read it); send {m.builder} a correction instead")
            done = tx.inbox.message(message_id)
            assert done is not None
            tx.append_event("inbox_cancelled", done.builder, done.session_id, done.cancelled_at or time.time(), {
                "id": done.id, "actor": actor, "surface": surface,
            })
            return done, True

        (message, cancelled), _ = await self.store.write(tx_fn)
        if cancelled:
            await self.bus.publish()
        return message, cancelled

    def deliver(self, tx: Tx, builder: str, p: Payload, at: float, adapter: Adapter,
                hook_kind: HookKind | None) -> bytes:
        """Claim the builder's deliverable messages for this hook and render them as its
        stdout, in the hook's own transaction (DESIGN.md "Inbox and delivery"). Where and how
        is the adapter's: ``adapter.boundary(p)`` (None: no delivery here; ``"final"``: the
        Stop kind, capped at STOP_CAP in a row) and ``adapter.render_context``. hook_kind: what
        the hook means (the adapter's ``hook_kinds``): a ``prompt`` starts a new human turn."""
        sid, agent, name = p.session_id, p.agent_id, p.hook_event_name
        assert sid is not None
        kind = adapter.boundary(p)
        if kind is None:
            return b""
        messages = tx.inbox.deliverable(builder, sid, agent, redeliver_before=self.redeliver_before(adapter, sid, tx.mono))
        if hook_kind in ("prompt", "session_start"):
            # a new human turn, or the session (re)started by a new agent process (`hookd
            # continue` resumes the same session id): the Stop cap counts again from 0
            tx.inbox.set_stop_deliveries(sid, 0)
        if hook_kind == "prompt" and messages:
            messages = self._drop_typed(tx, builder, p, messages, at)
        if not messages:
            if kind == "final":
                tx.inbox.set_stop_deliveries(sid, 0)
            return b""
        if tx.inbox.has_open_question(sid, agent):
            return b""  # never into a turn sitting on an open AskUserQuestion
        if kind == "final":
            n = tx.inbox.stop_deliveries(sid)
            if n >= STOP_CAP:
                return b""  # let the agent stop; the messages wait for the next boundary
            tx.inbox.set_stop_deliveries(sid, n + 1)
        text = self._claim(tx, builder, sid, messages, hook_event_id=tx.hook_event_id, via=name, at=at)
        return adapter.render_context(name, text)

    def _drop_typed(self, tx: Tx, builder: str, p: Payload, messages: list[InboxMessage], at: float) -> list[InboxMessage]:
        """B30: a queued message the human typed verbatim reached the model as the prompt:
        adopt it (``typed``) instead of sending it again. Returns the rest."""
        prompt = as_text(getattr(p, "prompt", None)) or as_text(getattr(p, "user_prompt", None))
        if not prompt:
            return messages
        assert p.session_id is not None
        typed = self._typed(tx, builder, p.session_id, prompt, messages, at)
        return [m for m in messages if m.id not in typed]

    def typed_in_transcript(self, tx: Tx, builder: str, sid: str, text: str, typed_at: float, at: float) -> None:
        """B30 without a UserPromptSubmit: the human's own prompt ``text`` seen in session
        ``sid``'s transcript (a row written at ``typed_at``, UNIX seconds). Main-agent messages
        queued for that session before then with the same text reached the model as that
        prompt: adopted (``typed``), never sent. One written earlier than the message was
        queued (a transcript read from its start) proves nothing about it."""
        if not text.strip():
            return
        messages = [m for m in tx.inbox.deliverable(builder, sid, None, redeliver_before=0.0) if m.created_at <= typed_at]
        self._typed(tx, builder, sid, text, messages, at)

    def _typed(self, tx: Tx, builder: str, sid: str, prompt: str, messages: list[InboxMessage], at: float) -> list[str]:
        """The ids of the queued ``messages`` whose text is ``prompt`` (spaces around either
        ignored), adopted as ``typed`` (``inbox_adopted``)."""
        typed = [m.id for m in messages if m.state == "queued" and m.text.strip() == prompt.strip()]
        if typed:
            tx.inbox.adopt_typed(typed, sid, at)
            tx.append_event("inbox_adopted", builder, sid, at, {"ids": typed, "via": "typed"})
        return typed

    def _claim(self, tx: Tx, builder: str, sid: str, messages: list[InboxMessage], *,
               hook_event_id: int | None, via: str, at: float) -> str:
        """Take messages FIFO while the injection stays under the cap, mark them delivered,
        and return the framed text (the rest waits for the next boundary, in order: B14)."""
        framed: list[str] = []
        chosen: list[InboxMessage] = []
        # room for the header and the "N more will follow" line
        size = injection_size(frame_batch([], waiting=len(messages)))
        for m in messages:
            line = frame_message(m.id, m.author, _iso(m.created_at), m.text)
            grow = injection_size(line) + 2
            if chosen and size + grow > INJECTION_CAP:
                break
            framed.append(line)
            chosen.append(m)
            size += grow
        ids = [m.id for m in chosen]
        tx.inbox.mark_delivered(ids, hook_event_id=hook_event_id, session_id=sid, via=via, at=at)
        framed_text = frame_batch(framed, waiting=len(messages) - len(chosen))
        tx.append_event("inbox_delivered", builder, sid, at, {
            "ids": ids, "via": via, "chars": len(framed_text),
            "redelivered": [m.id for m in chosen if m.state == "delivered"],
            "waiting": len(messages) - len(chosen),
        })
        return framed_text

    def adopt_earlier(self, tx: Tx, builder: str, p: Payload, via: str, at: float) -> None:
        """Adopt what earlier hooks of ``p``'s session (and agent) delivered: this hook proves
        the agent went on after reading it."""
        assert p.session_id is not None
        self.adopt(tx, builder, p.session_id, via=via, at=at, up_to_hook_event_id=(tx.hook_event_id or 0) - 1,
                    agent_id=p.agent_id)

    @staticmethod
    def adopt(tx: Tx, builder: str, sid: str, *, via: str, at: float, up_to_hook_event_id: int,
               agent_id: str | None = None, only: list[str] | None = None) -> list[str]:
        """Mark delivered messages adopted (:meth:`hookd.store.inbox.InboxTx.adopt`) and record
        ``inbox_adopted``. Returns the ids changed."""
        adopted = tx.inbox.adopt(sid, up_to_hook_event_id=up_to_hook_event_id, via=via, at=at, agent_id=agent_id, only=only)
        if adopted:
            tx.append_event("inbox_adopted", builder, sid, at, {"ids": adopted, "via": via})
        return adopted

    # --- adoption from the transcript ------------------------------------------------------
    def adopt_from_transcript_later(self, builder: str, sid: str, path: str, before_hook_id: int) -> None:
        """Once the caller's transaction commits: read ``path`` for proof that what was delivered
        to ``sid`` (by hooks before ``before_hook_id``) reached the model (a background task)."""
        self.tasks.spawn(self._adopt_from_transcript(builder, sid, path, before_hook_id))

    async def _adopt_from_transcript(self, builder: str, sid: str, path: str, before_hook_id: int) -> None:
        """Mark adopted the messages delivered to ``sid`` that its transcript proves were
        sent to the model (``via: "transcript"``). Unproven ones stay delivered and are
        offered again ``settings.redeliver_after_s`` seconds after their delivery."""
        try:
            ids = await asyncio.to_thread(_sent_ids_in, path)
        except OSError as e:
            log.warning("cannot read transcript %s: %s", path, e)
            return
        if not ids:
            return
        at = time.time()

        adopted, _ = await self.store.write(lambda tx: self.adopt(
            tx, builder, sid, via="transcript", at=at, up_to_hook_event_id=before_hook_id, only=sorted(ids)))
        if adopted:
            await self.bus.publish()

    # --- idle wake -------------------------------------------------------------------------
    async def wake(self, harness: str, builder: str, raw: bytes, max_wait_s: float = WAKE_MAX_S) -> bytes:
        """Hold an idle agent's async Stop hook until a message for it arrives.

        raw: the Stop payload (the same bytes the regular Stop hook sent). Returns the framed
        messages (the hook prints them to stderr and exits 2, which starts a new turn), or
        b"" when the agent becomes active again (any newer hook of the session), the Stop
        itself never reaches hookd, or ``max_wait_s`` seconds pass. Event-driven: woken by
        every commit. Respects the open-question guard and the Stop cap. Raises
        PayloadInvalid / BadRequest for anything but a Stop payload with a session id.
        """
        adapter = ADAPTERS.get(harness)
        if adapter is None:
            raise NotFound(f"unknown harness {harness!r}")
        if not adapter.idle_wake:
            raise BadRequest(f"idle wake is a Claude Code Stop hook; harness {harness!r} has none")
        p = adapter.parse(raw, builder=builder, cwd=None)
        if adapter.hook_kinds.get(p.hook_event_name) != "turn_end" or not p.session_id:
            raise BadRequest("wake takes the main agent's Stop payload")
        self._waking[builder] = self._waking.get(builder, 0) + 1
        try:
            return await self._wake(builder, p.session_id, fingerprint(raw), max_wait_s)
        finally:
            if self._waking[builder] > 1:
                self._waking[builder] -= 1
            else:
                del self._waking[builder]

    async def _wake(self, builder: str, sid: str, fp: bytes, max_wait_s: float) -> bytes:
        """:meth:`wake`'s wait, for session ``sid`` whose Stop payload's fingerprint is ``fp``."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + min(max_wait_s, WAKE_MAX_S)
        baseline: int | None = None
        while not self.bus.closed:
            version = self.bus.version
            act = self.cache.activity.get(sid)
            if baseline is None:
                if act is not None and act[1] == fp:
                    baseline = act[0]  # the regular Stop hook of this very Stop is stored
                elif loop.time() - start > WAKE_STOP_GRACE_S:
                    return b""
            elif act is not None and act[0] > baseline:
                return b""  # the agent is working again: this wake is stale
            if baseline is not None:
                (text, release), _events = await self.store.write(self._wake_tx, builder, sid, baseline, time.time())
                if release:
                    return b""
                if text:
                    await self.bus.publish()
                    return text.encode()
            remaining = deadline - loop.time()
            if remaining <= 0:
                return b""
            await self.bus.wait(min(remaining, 5.0), since=version)
        return b""

    def _wake_tx(self, tx: Tx, builder: str, sid: str, baseline: int, at: float) -> tuple[str, bool]:
        """(text to wake with, release). Releases when the regular hook of this very Stop
        delivered messages: the turn goes on (with no hook while the model writes), so the
        agent is not idle and a wake now would bypass the Stop cap."""
        if tx.inbox.delivered_by_hook(baseline):
            return "", True
        if tx.inbox.has_open_question(sid, None):
            return "", False
        n = tx.inbox.stop_deliveries(sid)
        if n >= STOP_CAP:
            return "", False  # the human's next prompt resets the count
        messages = tx.inbox.deliverable(builder, sid, None, redeliver_before=tx.mono - self.settings.redeliver_after_s)
        if not messages:
            return "", False
        tx.inbox.set_stop_deliveries(sid, n + 1)
        return self._claim(tx, builder, sid, messages, hook_event_id=baseline, via="Stop (asyncRewake)", at=at), False

    # --- redelivery ----------------------------------------------------------------------
    def redeliver_before(self, adapter: Adapter, sid: str, mono: float) -> float:
        """Messages delivered before this moment (hookd's timeline, :mod:`hookd.clock`; ``mono``
        is now) and never adopted are offered again (at-least-once). Hooks:
        ``settings.redeliver_after_s`` seconds after their delivery. claw-http (acks): also everything delivered before this daemon
        started or before the session last registered: the loop may never have got it."""
        before = mono - self.settings.redeliver_after_s
        if adapter.ack_required:
            before = max(before, self.started_mono, self._registered.get(sid, float("-inf")))
        return before


def _sent_ids_in(path: str) -> set[str]:
    """Message ids the transcript at ``path`` proves were sent (its last 16 MiB, read by its
    harness's reader: :func:`hookd.harness.registry.reader_of`). Raises OSError
    (NotRegularFile for a FIFO or device: never waited on)."""
    fd, st = open_regular(path)
    try:
        start = max(0, st.st_size - TRANSCRIPT_TAIL_BYTES)
        data = os.pread(fd, st.st_size - start, start)
    finally:
        os.close(fd)
    return reader_of(path).sent_message_ids(data.splitlines())


def _iso(ts: float) -> str:
    """UNIX seconds ``ts`` in the frame a message reaches the model in: ISO 8601 in UTC, to
    the second (``2026-12-02T18:40:01Z``)."""
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
