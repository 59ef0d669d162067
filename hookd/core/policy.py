"""Question policy (issue 21, moment 8): what closes an interaction nobody answered.

- ``orphaned``: the agent's process is gone (the lanes' liveness check saw it: :meth:`Policy.orphan`);
  a session's end (SessionEnd) closes its open ones in :mod:`hookd.core.questions`.
- ``dismissed`` by a human (:meth:`Policy.dismiss`): who (actor), from where (surface) and
  why (the reason, kept as the interaction's ``message``); a held hook is let go with no
  decision, so the desk decides.
- A builder's opt-in default answer (``hookd spawn B --default-answer-after S [--default-answer
  LABEL]``, the spawn manifest's ``default_answer``): once an interaction has waited ``after_s``
  seconds, :meth:`Policy.run_defaults` answers it through the answer path (actor ``hookd``,
  surface ``default``, compare-and-set on the revision seen). A question gets LABEL where it is
  one of its options, else its first option; a permission prompt is denied, a plan sent back,
  an elicitation declined: never an allow by default (docs/decisions.md "Question policy").

A late human answer to any of these is refused and kept as an inbox message
(:meth:`hookd.core.answers.Answers.answer`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from hookd.clock import span
from hookd.config import Home
from hookd.core.answers import Answers
from hookd.core.bus import BusFilter, EventBus, write_publish
from hookd.core.limits import MAX_ANSWER_CHARS, check_name
from hookd.core.outcomes import close_unanswered, inbox_answers_after, questions_of
from hookd.core.state import Waiters
from hookd.models import AnswerRequest, BadRequest, Conflict, Event, Interaction, NotFound, resolved_event
from hookd.store import Store, Tx

log = logging.getLogger("hookd.policy")

#: Where a dismissal comes from (the ``surface`` recorded with it).
DISMISS_SURFACES = ("cli", "api", "web")
#: Who gives a default answer (its surface is ``default``: :meth:`Answers.answer_by_default`).
DEFAULT_ACTOR = "hookd"
#: Interaction kinds that wait on a human and get a builder's default answer (an async ask
#: does not block its agent: it never gets one).
DEFAULTED_KINDS = ("question", "permission", "plan", "elicitation")
#: The least seconds between two passes of the default answers (one query of the pending
#: interactions, and the manifests of the builders they belong to) while commits come:
#: a default answer comes at most this late.
POLL_S = 1.0
#: Events a commit can append without asking anything (no interaction opens with them alone:
#: each that opens appends its ``*_pending`` or ``human_input_requested`` event)
ASKS_NOTHING = frozenset({"hook_received", "lane_changed"})


def asks_something(events: Sequence[Event]) -> bool:
    """Whether a commit that appended ``events`` may have opened an interaction: any event not
    in :data:`ASKS_NOTHING`."""
    return any(e.kind not in ASKS_NOTHING for e in events)


class DefaultAnswer(msgspec.Struct, frozen=True):
    """A builder's default answer: ``after_s`` seconds after an interaction was asked, and for
    a question the option ``label`` (None: each question's first option)."""

    after_s: float
    label: str | None = None


def default_of(home: Home, builder: str) -> DefaultAnswer | None:
    """``builder``'s default answer as its spawn manifest records it (None: none, the default).
    Reads one small file."""
    from hookd.spawn import read_manifest

    try:
        m = read_manifest(home, builder)
    except (OSError, msgspec.DecodeError):
        return None
    d = (m or {}).get("default_answer")
    if not isinstance(d, dict) or not isinstance(d.get("after_s"), (int, float)) or d["after_s"] <= 0:
        return None
    label = d.get("label")
    return DefaultAnswer(after_s=float(d["after_s"]), label=label if isinstance(label, str) else None)


def default_request(i: Interaction, d: DefaultAnswer) -> tuple[AnswerRequest, str] | None:
    """The answer ``d`` gives ``i`` and its words for a human (``"answers Blue"``, ``"denies"``,
    ``"sends it back"``, ``"declines"``); None when it gives none (an async ask, a question
    without options)."""
    waited = span(d.after_s)
    if i.kind == "permission":
        return AnswerRequest(decision="deny", message=(
            f"No one answered this permission prompt within {waited}; hookd's default answer for this"
            " builder denies it. Do not retry it: wait for a human, or do the work another way."),
            actor=DEFAULT_ACTOR, revision=i.revision), "denies"
    if i.kind == "plan":
        return AnswerRequest(decision="deny", message=(
            f"No one approved this plan within {waited}; hookd's default answer for this builder sends it back."
            " Stay in plan mode and wait for a human's approval."), actor=DEFAULT_ACTOR, revision=i.revision), "sends it back"
    if i.kind == "elicitation":
        return AnswerRequest(decision="decline", actor=DEFAULT_ACTOR, revision=i.revision), "declines"
    if i.kind != "question":
        return None
    qs = questions_of(i)
    if not qs or any(not q.options for q in qs):
        return None
    answers: dict[str, Any] = {}
    for q in qs:
        labels = [o.label for o in q.options]
        answers[q.question] = [d.label if d.label in labels else labels[0]]
    words = ", ".join(str(v[0]) for v in answers.values())
    return AnswerRequest(answers=answers, actor=DEFAULT_ACTOR, revision=i.revision), f"answers {words}"


class Policy:
    """Orphaning, dismissal and default answers over ``store`` (``home``: the spawn manifests;
    ``bus``: publishes after a write; ``waiters``: the held hooks;
    ``answers``: the answer path a default answer takes)."""

    def __init__(self, home: Home, store: Store, bus: EventBus, waiters: Waiters, answers: Answers):
        self.home = home
        self.store = store
        self.bus = bus
        self.waiters = waiters
        self.answers = answers

    # --- orphaned ------------------------------------------------------------------------
    async def orphan(self, builder: str, session_id: str, why: str) -> list[str]:
        """Close every interaction still pending in ``builder``'s session ``session_id`` as
        ``orphaned`` (its agent's process is gone: ``why``, e.g. ``"pid 4242 is gone"``);
        async asks stay open (they reach the next session through the inbox), and the answers
        kept as messages for the session become the builder's, as at its end
        (:meth:`hookd.store.sessions.SessionsTx.release_kept_answers`). Returns the ids
        closed."""
        return await write_publish(self.store, self.bus, self._orphan_tx, builder, session_id, why, time.time())

    def _orphan_tx(self, tx: Tx, builder: str, sid: str, why: str, at: float) -> list[str]:
        closed = []
        for i in tx.sessions.pending_in_session(builder, sid, agent_id=None, all_agents=True):
            if i.kind == "async":
                continue
            warning = f"the agent's process is gone ({why}) while it was open"
            if close_unanswered(tx, self.waiters, builder, sid, i, "orphaned", warning, "liveness", at):
                closed.append(i.id)
        tx.sessions.release_kept_answers(sid)
        return closed

    # --- dismissed -----------------------------------------------------------------------
    async def dismiss(self, interaction_id: str, *, reason: str, actor: str | None = None,
                      surface: str = "api") -> Interaction:
        """A human closes pending ``interaction_id`` (its id or tool_use_id) unanswered:
        ``dismissed``, with ``actor`` (default: the daemon's user), ``surface`` (``cli`` |
        ``api`` | ``web``) and ``reason`` (1 to MAX_ANSWER_CHARS characters, kept as its
        ``message``). A hook held for it is let go with no decision (the desk decides). Returns
        the interaction as it now stands. Raises NotFound, BadRequest (no reason, a bad
        surface), Conflict (it is no longer pending: how it ended)."""
        from hookd.models import os_user

        reason = reason.strip()
        if not reason:
            raise BadRequest("say why it is dismissed (--reason TEXT): it is recorded")
        if len(reason) > MAX_ANSWER_CHARS:
            raise BadRequest(f"the reason is {len(reason)} characters; the limit is {MAX_ANSWER_CHARS}")
        if surface not in DISMISS_SURFACES:
            raise BadRequest(f"surface must be one of {', '.join(DISMISS_SURFACES)}")
        check_name("actor", actor)
        return await write_publish(self.store, self.bus, self._dismiss_tx, interaction_id, reason,
                                   actor or os_user(), surface, time.time())

    def _dismiss_tx(self, tx: Tx, iid: str, reason: str, actor: str, surface: str, at: float) -> Interaction:
        i = tx.interactions.interaction(iid)
        if i is None:
            raise NotFound(f"no interaction {iid!r}")
        if i.state != "pending" or not tx.interactions.resolve_interaction(
                i.id, expected_state="pending", state="dismissed", answers=None, selections=None, surface=surface,
                warning=None, error=None, at=at, actor=actor, message=reason):
            by = f" {i.by}" if i.by else ""
            raise Conflict(f"{i.id} is already {i.outcome}{by}: nothing to dismiss")
        tx.append_event(resolved_event(i.kind), i.builder, i.session_id, at, {
            "id": i.id, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": "dismissed", "answers": None,
            "selections": None, "surface": surface, "actor": actor, "reason": reason,
            **({"agent_id": i.agent_id} if i.agent_id else {}),
        })
        self.waiters.release_after(tx, i.id)  # no decision: the desk's menu decides
        inbox_answers_after(tx, i, at, outcome="dismissed", answers=None, surface=surface)
        done = tx.interactions.interaction(i.id)
        assert done is not None
        return done

    # --- default answers -----------------------------------------------------------------
    def _planned(self, pending: list[Interaction]) -> list[tuple[Interaction, float, AnswerRequest, str]]:
        """(interaction, when it is due, its default answer, that answer in words) for each of
        ``pending`` whose builder has a default answer for it. Reads each builder's manifest once."""
        specs: dict[str, DefaultAnswer | None] = {}
        out = []
        for i in pending:
            if i.state != "pending" or i.kind not in DEFAULTED_KINDS:
                continue
            if i.builder not in specs:
                specs[i.builder] = default_of(self.home, i.builder)
            d = specs[i.builder]
            planned = default_request(i, d) if d is not None else None
            if d is not None and planned is not None:
                out.append((i, i.created_at + d.after_s, *planned))
        return out

    def defaults(self, pending: list[Interaction]) -> dict[str, dict[str, Any]]:
        """The default answer each of ``pending`` will get, by id: ``{"answer": words (``"answers
        Blue"``, ``"denies"``), "at": when (UNIX seconds)}``; interactions without one are left out."""
        return {i.id: {"answer": words, "at": at} for i, at, _, words in self._planned(pending)}

    async def run_defaults(self) -> None:
        """Until the bus closes: answer each pending interaction whose builder has a default
        answer once it is due. While something is pending, a pass every POLL_S (or when the
        next default is due, if sooner), as a builder's default may change with no commit (a
        spawn rewrites its manifest); with nothing pending, a pass only after a commit (which
        may have asked something): an idle daemon is not woken for it. At most one pass per
        POLL_S; one after a commit runs at once when POLL_S has passed since the last: in the
        same turn of the event loop as the commit, not a wake-up of its own. A commit that
        appended only :data:`ASKS_NOTHING` events (an agent's tool call, a lane's change)
        cannot have asked anything and wakes no pass (:meth:`EventBus.filtered`)."""
        bus = self.bus.filtered(asks_something)
        try:
            await self._run_defaults(bus)
        finally:
            self.bus.unfilter(bus)

    async def _run_defaults(self, bus: BusFilter) -> None:
        while not bus.closed:
            version = bus.version
            last = time.monotonic()
            try:
                nxt, pending = await self._pass(time.time())
            except Exception:  # (the store refused a read, say: tried again in POLL_S)
                log.exception("default answers' pass failed")
                nxt, pending = None, True
            if nxt is not None:
                wait = min(POLL_S, max(0.0, nxt - time.time()))
            else:
                # something pending: look again each POLL_S (a builder's default can be set by a
                # spawn that commits nothing, a default that failed is tried again); nothing
                # pending: only a commit can ask something
                wait = POLL_S if pending else 3600.0
            await bus.wait(wait, since=version)  # that, or a commit that may have asked something
            await asyncio.sleep(max(0.0, last + POLL_S - time.monotonic()))

    async def defaults_pass(self, now: float) -> float | None:
        """Apply the default answers due at ``now``; returns when the next one falls due
        (None: none scheduled)."""
        return (await self._pass(now))[0]

    async def _pass(self, now: float) -> tuple[float | None, bool]:
        """:meth:`defaults_pass`, and whether anything was pending."""
        nxt: float | None = None
        if not await self.store.any_pending():
            return None, False  # nothing pending: nothing more to read (no trip to the reader's thread)
        for i, at, req, _ in self._planned(await self.store.interactions("pending", limit=100000)):
            if at > now:
                nxt = at if nxt is None else min(nxt, at)
                continue
            try:
                await self.answers.answer_by_default(i.id, req)
            except Exception:  # (one that cannot be defaulted never stops the others)
                log.exception("default answer to %s failed", i.id)
        return nxt, True
