"""Two-way chat channels (issue 24, docs/usage.md "Answer from your phone"): hookd posts each
pending interaction in a chat with its buttons, takes a button press or a reply as the same
answer ``hookd answer`` gives, edits the message when the interaction ends anywhere, and
takes ``/send B text``, ``/lanes`` and replies to a lane's alert as inbox messages.

A chat service is one :class:`TwoWayChannel` (Telegram: :mod:`hookd.watchers.telegram`, Slack:
:mod:`hookd.watchers.slack`); this
module is the part every service shares, :class:`ChatRelay`:

- posting: a pending interaction older than ``question_after_s`` is posted once (the post
  recorded in the store: ``chat_posts``), edited with new buttons when its revision changes,
  and edited to show its outcome once it ends (desk, CLI, page, or the chat itself);
- updates: polled from the newest handled one on (``chat_updates``, so a restart resumes
  there), each handled once by its id (a retried delivery is ignored); a press answers with
  ``surface`` the channel's type and actor ``<type>:<user id>``, bound to the revision and
  input hash its message showed (a stale button is refused with a reply saying so); an update
  from a user not in ``allow`` is ignored and logged (their press is answered with
  :data:`NOT_ALLOWED`, so their client stops waiting on it; a message gets no reply);
- steps: what takes more than one press (a question's parts, a multi-select, an
  elicitation's fields) is answered on the same post step by step, its draft stored with it
  (:func:`hookd.watchers.chat_posts.advance`), the message edited after each step;
- reminders: a post still pending is reminded at the notifiers' escalation steps
  (``steps_s`` after ``question_after_s``: docs/usage.md "Notifications"), each once, as a
  reply in the post's thread, never a new post; after downtime only the highest step due;
- network loss: polling and posting retry with exponential backoff (tenacity), nothing is
  answered twice (the update ids, and the answer's ``response_id`` ``<channel>:<update id>``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from hookd.clock import span
from hookd.config import check_builder_id
from hookd.harness.registry import present_tool
from hookd.models import AnswerRequest, BadRequest, Conflict, HookdError, Interaction, NotFound
from hookd.untrusted import visible
from hookd.watchers.chat_posts import (
    KINDS,
    STEPS,
    Post,
    advance,
    ended_post,
    interaction_choices,
    interaction_post,
    stepwise,
)
from hookd.watchers.lane_view import lanes_now
from hookd.watchers.notify_channels import duration

if TYPE_CHECKING:
    from hookd.core import Hookd
    from hookd.store.chat import ChatPost
    from hookd.watchers.notify_channels import Alert

log = logging.getLogger("hookd")

#: Seconds between two posting passes woken by commits (bursts of hooks coalesce).
MIN_PASS_GAP_S = 0.05

HELP = ("Answer with the buttons, or reply to a message with text. /send BUILDER TEXT queues a message for "
        "an agent (or reply to a lane's message); /lanes lists the lanes.")


#: The chat commands (a reply starting with another word is a reply).
COMMANDS = ("/send", "/lanes")
#: What a press by a user not in ``allow`` is told (nothing else happens).
NOT_ALLOWED = "You are not allowed to answer here."


class ChatUnreachable(Exception):
    """The chat service could not be reached (network, timeout, rate limit): retried."""


class Incoming(msgspec.Struct, frozen=True, kw_only=True):
    """One update from the chat: a button press (``data``: the button's, ``callback_id``) or
    a text message (``text``; ``reply_to``: the message id it replies to). ``user_id`` /
    ``user``: who sent it (id and name as the service gives them); ``message_id``: the
    message pressed or the one sent."""

    update_id: int
    user_id: int | str
    user: str | None = None
    chat_id: str
    message_id: int | None = None
    data: str | None = None
    callback_id: str | None = None
    text: str | None = None
    reply_to: int | None = None


class TwoWayChannel(Protocol):
    """A chat service hookd posts to and polls (one module per service)."""

    name: str
    type: str
    allow: tuple[int | str, ...]

    async def post(self, post: Post, data: list[str]) -> tuple[str, int]:
        """Post ``post`` with one button per ``data`` (the button's callback data, in order);
        returns (chat id, message id). Raises ChatUnreachable (retry) or HookdError."""
        ...

    async def edit(self, chat_id: str, message_id: int, post: Post, data: list[str]) -> None:
        """Replace a posted message's text and buttons. Raises as :meth:`post`."""
        ...

    async def updates(self, offset: int) -> list[Incoming]:
        """Updates from ``offset`` on (a long poll; an empty list after its timeout)."""
        ...

    async def reply(self, inc: Incoming, text: str) -> None:
        """Tell the update's sender ``text`` (a press: the button's toast; a message: a reply)."""
        ...

    async def remind(self, chat_id: str, message_id: int, text: str) -> None:
        """Post ``text`` in the thread of a posted message (a reply to it). Raises as :meth:`post`."""
        ...

    async def close(self) -> None:
        ...


def button_data(post_id: int, revision: int, n: int) -> str:
    """A button's callback data: ``a:<post id>:<revision>:<choice>`` (under Telegram's 64 bytes)."""
    return f"a:{post_id}:{revision}:{n}"


def _data(post_id: int, revision: int, post: Post, choices: list[dict[str, Any]]) -> list[str]:
    """Each of ``post``'s buttons' callback data: its answer's index in ``choices``."""
    return [button_data(post_id, revision, choices.index(b.answer)) for b in post.buttons]


class ChatRelay:
    """One two-way channel inside ``hookd serve`` (see the module's docstring).

    retry_initial_s / retry_max_s: the backoff's first and longest wait (seconds); steps_s:
    the escalation steps (seconds after a post is due; step 0 is the post, each later one a
    reminder: the notifiers' ``steps_s``)."""

    def __init__(self, core: Hookd, channel: TwoWayChannel, *, question_after_s: float,
                 retry_initial_s: float, retry_max_s: float, steps_s: tuple[float, ...] = ()):
        self.core = core
        self.ch = channel
        self.question_after_s = question_after_s
        self.steps_s = steps_s
        self.retry_initial_s = max(0.01, retry_initial_s)
        self.retry_max_s = max(self.retry_initial_s, retry_max_s)
        self._closed = False
        # held from sending a message until its id is in the store, and while an update is
        # acted on: a reply to a message just sent always finds it (never "not one of hookd's")
        self._placing = asyncio.Lock()

    # --- running ------------------------------------------------------------------------
    async def run(self) -> None:
        """Post and poll until cancelled (or the bus closes)."""
        tasks = [asyncio.create_task(self._posting()), asyncio.create_task(self._polling())]
        try:
            await asyncio.gather(*tasks)
        finally:
            self._closed = True
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.ch.close()

    def _retrying(self, refused: bool = False) -> Any:
        """tenacity's exponential backoff, forever, on ChatUnreachable (and, with ``refused``,
        on the service's refusals: a revoked token, another poller on the same bot)."""
        from tenacity import AsyncRetrying, retry_if_exception_type, wait_exponential

        def said(state: Any) -> None:
            e = state.outcome.exception() if state.outcome else None
            log.log(logging.WARNING if isinstance(e, ChatUnreachable) else logging.ERROR,
                    "chat channel %s %s (attempt %d): %s", self.ch.name,
                    "unreachable" if isinstance(e, ChatUnreachable) else "refused", state.attempt_number, e)

        kinds: tuple[type[Exception], ...] = (ChatUnreachable, HookdError) if refused else (ChatUnreachable,)
        return AsyncRetrying(wait=wait_exponential(multiplier=self.retry_initial_s, min=self.retry_initial_s,
                                                   max=self.retry_max_s),
                             retry=retry_if_exception_type(kinds), before_sleep=said, reraise=True)

    async def _posting(self) -> None:
        bus = self.core.bus
        while not bus.closed and not self._closed:
            version = bus.version
            nxt: float | None = None
            try:
                async for attempt in self._retrying():  # (unreachable: the whole pass again, after a backoff)
                    with attempt:
                        nxt = await self._post_pass(time.time())
            except Exception:  # noqa: BLE001 - a channel must never take the daemon down
                log.exception("chat channel %s: posting failed", self.ch.name)
                nxt = time.time() + self.retry_max_s
            wait = 3600.0 if nxt is None else min(3600.0, max(0.0, nxt - time.time()) + 0.01)
            await bus.wait(wait, since=version)
            await asyncio.sleep(MIN_PASS_GAP_S)  # a burst of commits is one pass

    async def _polling(self) -> None:
        offset, _ = await self.core.store.write(lambda tx: tx.chat.chat_offset(self.ch.name))
        while not self._closed:
            batch: list[Incoming] = []
            async for attempt in self._retrying(refused=True):
                with attempt:
                    batch = await self.ch.updates(offset)
            for inc in batch:
                try:
                    await self.handle(inc)
                except Exception:  # noqa: BLE001
                    log.exception("chat channel %s: update %d failed", self.ch.name, inc.update_id)
                offset = max(offset, inc.update_id + 1)

    # --- posting ------------------------------------------------------------------------
    async def _view(self, i: Interaction) -> Any:
        if i.kind != "permission":
            return None
        harness = await self.core.store.session_harness(i.session_id) if i.session_id else None
        return present_tool(harness, i.tool_name, i.input)

    async def _post_pass(self, now: float) -> float | None:
        """Post what is due, revise what changed, end what ended; when the next post is due."""
        name = self.ch.name
        posts = await self.core.store.open_chat_posts(name)
        by_id = {p.interaction_id: p for p in posts}
        pending = [i for i in await self.core.store.interactions("pending", limit=100000) if i.kind in KINDS]
        open_ids = {i.id for i in pending}
        nxt: float | None = None
        for ended in posts:
            if ended.interaction_id not in open_ids:
                try:
                    await self._end(ended, now)
                except HookdError as e:  # (refused: a message deleted in the chat, too old to edit)
                    log.warning("chat channel %s: could not edit the post of %s: %s", name, ended.interaction_id, e)
                    await self.core.store.write(lambda tx, pid=ended.id: tx.chat.end_chat_post(pid, now))
        for i in pending:
            post = by_id.get(i.id)
            due = i.created_at + self.question_after_s
            if post is None and due > now:
                nxt = due if nxt is None else min(nxt, due)
            elif post is None or not post.message_id or post.revision != i.revision:
                try:
                    await self._show(i, post, now)
                except HookdError as e:  # refused (tried again at the next pass)
                    log.warning("chat channel %s: could not post %s: %s", name, i.id, e)
            elif i.kind != "async":  # (an async ask is not notified: the agent keeps working)
                await self._remind(i, post, now)
            later = [t for t in self._reminders(i) if t > now] if i.kind != "async" else []
            if later and (post is not None or due <= now):
                nxt = later[0] if nxt is None else min(nxt, later[0])
        return nxt

    def _reminders(self, i: Interaction) -> list[float]:
        """When ``i``'s reminders fall due (UNIX seconds; ``steps_s`` after its post is due)."""
        return [i.created_at + self.question_after_s + off for off in self.steps_s[1:]]

    async def _remind(self, i: Interaction, p: ChatPost, now: float) -> None:
        """Reply in the post's thread with the highest reminder step due not yet sent (claimed
        in the store first: once per step)."""
        due = [n for n, t in enumerate(self._reminders(i), 1) if t <= now]
        if due and due[-1] > p.reminded:
            step = due[-1]
            claimed, _ = await self.core.store.write(lambda tx: tx.chat.chat_reminded(p.id, step))
            if claimed:
                text = (f"Reminder {step} of {len(self.steps_s) - 1}: {i.builder} has been waiting "
                        f"{duration(now - i.created_at)} for an answer to this.")
                try:
                    await self.ch.remind(p.chat_id, p.message_id, visible(text))
                    log.info("chat channel %s: reminded %s (step %d)", self.ch.name, i.id, step)
                except HookdError as e:  # (refused: not tried again, as a notifier's refused step)
                    log.warning("chat channel %s: could not remind %s: %s", self.ch.name, i.id, e)
                except ChatUnreachable:  # (the claim undone: tried again after the backoff)
                    await self.core.store.write(lambda tx: tx.chat.unclaim_chat_reminder(p.id, p.reminded))
                    raise

    async def _show(self, i: Interaction, p: ChatPost | None, now: float) -> None:
        view = await self._view(i)
        post = interaction_post(i, view)
        choices = interaction_choices(i, view)
        if p is None or not p.message_id:
            # the row first (its id goes in the buttons), then the message, then its id (a row
            # left without one, by a stop in between, is replaced: the message is sent again)
            row, _ = await self.core.store.write(lambda tx: tx.chat.add_chat_post(
                self.ch.name, "", 0, interaction_id=i.id, builder=i.builder, revision=i.revision,
                input_hash=i.input_hash, choices=choices, at=now))
            data = _data(row.id, i.revision, post, choices)
            async with self._placing:
                try:
                    chat_id, message_id = await self.ch.post(post, data)
                except Exception:  # (not sent: tried again; a stop here leaves the row, replaced at the next start)
                    await self.core.store.write(lambda tx: tx.chat.delete_chat_post(row.id))
                    raise
                await self.core.store.write(lambda tx: tx.chat.place_chat_post(row.id, chat_id, message_id))
            log.info("chat channel %s: posted %s (revision %d)", self.ch.name, i.id, i.revision)
        else:
            data = _data(p.id, i.revision, post, choices)
            await self.ch.edit(p.chat_id, p.message_id, post, data)
            await self.core.store.write(lambda tx: tx.chat.revise_chat_post(p.id, i.revision, i.input_hash, choices))

    async def _end(self, p: ChatPost, now: float) -> None:
        assert p.interaction_id is not None
        i = await self.core.store.interaction(p.interaction_id)
        if i is not None and p.message_id:
            await self.ch.edit(p.chat_id, p.message_id, ended_post(i, await self._view(i)), [])
        await self.core.store.write(lambda tx: tx.chat.end_chat_post(p.id, now))

    async def post_alert(self, alert: Alert) -> None:
        """Post a one-way alert (a lane's, the agent's own message, ``hookd notify test``'s); a
        reply to it queues an inbox message for its builder (to the test's: says what it was).
        Raises ChatUnreachable or HookdError."""
        async with self._placing:
            chat_id, message_id = await self.ch.post(Post(f"{alert.title}\n{alert.message}"), [])
            if alert.builder or alert.rule == "test":  # (a reply to the test: told what it was)
                await self.core.store.write(lambda tx: tx.chat.add_chat_post(
                    self.ch.name, chat_id, message_id, interaction_id=None, builder=alert.builder or None, revision=None,
                    input_hash=None, choices=[], at=time.time()))

    # --- updates ------------------------------------------------------------------------
    async def handle(self, inc: Incoming) -> None:
        """Handle one update once (see the module's docstring)."""
        name = self.ch.name
        seen, _ = await self.core.store.write(lambda tx: tx.chat.chat_update_handled(name, inc.update_id))
        if seen:
            log.info("chat channel %s: update %d already handled: ignored", name, inc.update_id)
            return
        said = ""
        if inc.user_id not in self.ch.allow:
            log.warning("chat channel %s: update %d from user %s ignored (not in allow)", name, inc.update_id, inc.user_id)
            if inc.callback_id is not None:
                said = NOT_ALLOWED
        else:
            try:
                async with self._placing:
                    said = await self._act(inc)
            except HookdError as e:
                said = str(e)
        await self.core.store.write(lambda tx: tx.chat.record_chat_update(name, inc.update_id, time.time()))
        if said:
            try:
                await self.ch.reply(inc, said)
            except (ChatUnreachable, HookdError) as e:  # (the update is handled all the same)
                log.warning("chat channel %s: could not reply to update %d: %s", name, inc.update_id, e)

    async def _act(self, inc: Incoming) -> str:
        if inc.data is not None:
            return await self._press(inc)
        text = (inc.text or "").strip()
        word, _, rest = text.partition(" ")
        word = word.split("@", 1)[0]
        if inc.reply_to is not None and word not in COMMANDS:  # (a value may start with "/": a path)
            return await self._reply(inc, text)
        if word == "/lanes":
            return await self._lanes()
        if word == "/send":
            builder, _, msg = rest.strip().partition(" ")
            if not builder or not msg.strip():
                return "usage: /send BUILDER TEXT"
            return await self._send(inc, builder, msg)
        return str(getattr(self.ch, "help", HELP))  # (a service whose commands are written otherwise)

    def _actor(self, inc: Incoming) -> str:
        return f"{self.ch.type}:{inc.user_id}"

    @staticmethod
    def _refusal(p: ChatPost, i: Interaction | None, revision: int) -> str | None:
        """Why a press or reply on ``p`` for ``revision`` cannot be taken (None: it can)."""
        if i is None:
            return "That interaction is gone."
        if i.state != "pending":
            return f"Not answered: {p.interaction_id} has already ended ({i.state})."
        if i.revision != revision:
            return (f"Not answered: this button is stale ({p.interaction_id} changed since this message showed it); "
                    "use the message's new buttons.")
        return None

    async def _answer(self, inc: Incoming, p: ChatPost, revision: int, body: dict[str, Any]) -> str:
        assert p.interaction_id is not None
        i = await self.core.store.interaction(p.interaction_id)
        refused = self._refusal(p, i, revision)
        if refused is not None or i is None:
            return refused or ""
        req = msgspec.convert({**body, "actor": self._actor(inc), "revision": revision,
                               "input_hash": p.input_hash, "response_id": f"{self.ch.name}:{inc.update_id}"},
                              AnswerRequest)
        try:
            await self.core.answer(i.id, req, surface=self.ch.type)
        except Conflict as e:
            return f"Not answered: {e}"
        except (BadRequest, NotFound) as e:
            return f"Not answered: {e}"
        return "Answered."

    async def _press(self, inc: Incoming) -> str:
        parts = (inc.data or "").split(":")
        if len(parts) != 4 or parts[0] != "a" or not all(x.isdigit() for x in parts[1:]):
            return "Unknown button."
        post_id, revision, n = map(int, parts[1:])
        p, _ = await self.core.store.write(lambda tx: tx.chat.chat_post(post_id))
        if p is None or p.interaction_id is None or n >= len(p.choices):
            return "Not answered: this button belongs to a message hookd no longer knows."
        if any(k in p.choices[n] for k in STEPS):
            return await self._step(inc, p, revision, p.choices[n])
        return await self._answer(inc, p, revision, p.choices[n])

    async def _step(self, inc: Incoming, p: ChatPost, revision: int, step: dict[str, Any]) -> str:
        """One step of a step-by-step answer (module docstring); the whole answer once complete."""
        assert p.interaction_id is not None
        i = await self.core.store.interaction(p.interaction_id)
        refused = self._refusal(p, i, revision)
        if refused is not None or i is None:
            return refused or ""
        try:
            draft, body = advance(i, p.draft, step)
        except BadRequest as e:
            return f"Not taken: {e}."
        if body is None:
            await self.core.store.write(lambda tx: tx.chat.set_chat_draft(p.id, draft))
            await self._redraw(i, p, draft)
            return "Noted."
        said = await self._answer(inc, p, revision, body)
        if said.startswith("Not answered") and (await self.core.store.interaction(i.id) or i).state == "pending":
            # (the whole refused, e.g. by the requested schema: the form starts again)
            await self.core.store.write(lambda tx: tx.chat.set_chat_draft(p.id, None))
            await self._redraw(i, p, None)
            said += " Start again from the message's first step."
        return said

    async def _redraw(self, i: Interaction, p: ChatPost, draft: dict[str, Any] | None) -> None:
        post = interaction_post(i, await self._view(i), draft)
        await self.ch.edit(p.chat_id, p.message_id, post, _data(p.id, p.revision or 0, post, p.choices))

    async def _reply(self, inc: Incoming, text: str) -> str:
        p, _ = await self.core.store.write(lambda tx: tx.chat.chat_post_of_message(self.ch.name, inc.chat_id, inc.reply_to or 0))
        if p is None:
            return "That message is not one of hookd's: reply to a question, or use /send BUILDER TEXT."
        if p.interaction_id is None and p.builder is None:  # (hookd notify test's post)
            return ("That was hookd's test notification: this channel works. Reply to a question, or use "
                    "/send BUILDER TEXT.")
        if p.interaction_id is None:
            assert p.builder is not None
            return await self._send(inc, p.builder, text)
        i = await self.core.store.interaction(p.interaction_id)
        kind = i.kind if i is not None else "question"
        if i is not None and stepwise(i):
            return await self._step(inc, p, p.revision or 0, {"text": text})
        if kind == "permission":
            body: dict[str, Any] = {"decision": "deny", "message": text}
        elif kind == "plan":
            body = {"options": ["deny"], "text": text}
        elif kind == "elicitation":
            return "This elicitation asks for no fields: answer it with its buttons."
        else:
            body = {"text": text}
        return await self._answer(inc, p, p.revision or 0, body)

    async def _send(self, inc: Incoming, builder: str, text: str) -> str:
        await self.core.known_builder(check_builder_id(builder))  # (as REST's send: no message for a typo)
        msg, created = await self.core.send_message(builder, text, key=f"{self.ch.name}:{inc.update_id}",
                                                    author=self._actor(inc))
        return f"Queued for {builder} ({msg.id})." if created else f"Already queued for {builder} ({msg.id})."

    async def _lanes(self) -> str:
        """Every lane as ``hookd lanes`` shows it now (:func:`hookd.watchers.lane_view.lanes_now`):
        a line per lane (state, for how long, pending, queued, detail), one per running subagent
        under it; unspawned builders counted, not shown."""
        lanes, now = await lanes_now(self.core), self.core.store.clock.wall()
        shown = [lane for lane in lanes if lane.state != "unspawned"]
        lines = []
        for lane in shown:
            lines.append(f"{lane.builder}: {lane.state} for {span(now - lane.since)}, {len(lane.pending)} pending, "
                         f"{lane.queued} queued" + (f" ({lane.detail})" if lane.detail else ""))
            lines += [f"  ↳ {s.agent_type or 'subagent'}: {s.waiting} for {span(now - s.started_at)}"
                      + (f", waiting on {', '.join(s.pending)}" if s.pending else "") for s in lane.subagents or ()]
        if hidden := len(lanes) - len(shown):
            lines.append(f"({hidden} unspawned builder{'s' if hidden > 1 else ''} not shown)")
        return "\n".join(lines) if lines else "No lanes."
