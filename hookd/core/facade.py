"""The core's one face: :class:`Hookd` builds the components over one home and store, hands each
its collaborators, and exposes their public methods as the daemon's API.

Built by ``hookd serve`` (hookd.daemon) with the daemon's settings, or in-process by tests and
benchmarks (``Hookd(home, store)``: default settings). The watchers the daemon runs beside it
(the transcript tailer, the lane watch, the notifier) are attached once started; the core only
calls them through the small protocols below and imports none of them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

from hookd.config import Home
from hookd.core.answers import Answers
from hookd.core.asks import Asks
from hookd.core.bus import EventBus, Tasks
from hookd.core.claw import Claw
from hookd.core.hookhealth import HookHealth
from hookd.core.holds import Holds
from hookd.core.inbox import Inbox
from hookd.core.ingest import Ingest
from hookd.core.policy import Policy
from hookd.core.questions import Questions
from hookd.core.runs import Runs
from hookd.core.spool import Spool
from hookd.core.state import HookCache, Waiters
from hookd.core.transcripts import Transcripts
from hookd.models import NotFound
from hookd.settings import Settings
from hookd.store import Store


class Tailer(Protocol):
    """The transcript tailer as the core and the API use it (:class:`hookd.watchers.tailer.Tailer`)."""

    def add(self, path: str, builder: str, session_id: str | None = None) -> None: ...
    def hook_arrived(self, session_id: str) -> None: ...
    def add_dir(self, path: str, builder: str) -> int: ...
    async def poll(self, path: str) -> int: ...
    def targets(self) -> list[str]: ...
    def refusal(self, path: str) -> str | None: ...


class Lanes(Protocol):
    """The lane watch as the API uses it (:class:`hookd.watchers.lanes.LaneWatch`)."""

    async def compute(self, builders: list[str] | None = None, now: float | None = None) -> list[Any]: ...
    async def builders(self) -> list[str]: ...


class Notifier(Protocol):
    """The notifier as the lanes and the API use it (:class:`hookd.watchers.notify.Notifier`)."""

    async def raise_alert(self, alert: Any, *, escalate: bool = True) -> bool: ...
    async def clear(self, key: str) -> None: ...
    async def test(self, only: str | None = None) -> list[dict[str, Any]]: ...


class Hub(Protocol):
    """The hub's shipper as status shows it (:class:`hookd.hub.shipper.Shipper`)."""

    def view(self) -> dict[str, Any]: ...


class Hookd:
    """The daemon's core over ``home`` and ``store``. settings: the daemon's tunables
    (:class:`hookd.settings.Settings`; default: the defaults); tcp_port: the daemon's loopback
    port (None: none, in-process).

    Components (each owns its part; the methods below are theirs): ``ingest`` (the hook path),
    ``questions`` (interactions inside a hook's transaction), ``inbox`` (messages, delivery,
    adoption, idle wake), ``answers`` (a human's answer), ``holds`` (held PermissionRequest
    hooks), ``asks`` (pre-registered answers, async asks, expiry), ``transcripts`` (transcript
    rows), ``spool`` (spooled payloads), ``claw`` (claw-http's calls), ``policy`` (orphaned,
    dismissed, a builder's default answer)."""

    def __init__(self, home: Home, store: Store, settings: Settings | None = None, *,
                 tcp_port: int | None = None):
        self.home = home
        self.store = store
        self.settings = settings if settings is not None else Settings()
        self.tcp_port = tcp_port
        self.bus = EventBus()
        #: background tasks of the core and of what is attached to it, cancelled by :meth:`close`
        self.tasks = Tasks()
        self.started_at = time.time()
        #: when this daemon started, on hookd's timeline (:mod:`hookd.clock`)
        self.started_mono = store.clock.mono()
        #: hooks the server answered on its fast path (hookd.http.fastpath.HttpProtocol), and those
        #: of them that waited for a group commit (finished by a task)
        self.fast_hooks = 0
        self.fast_hooks_resumed = 0
        #: attached by the daemon once started (:meth:`attach_tailer` and the like); None in-process
        self.tailer: Tailer | None = None
        self.lanes: Lanes | None = None
        self.notifier: Notifier | None = None
        #: the hub's shipper (hookd.hub: ``hookd serve --hub``); None: no hub
        self.hub: Hub | None = None

        cache, waiters = HookCache(), Waiters()
        self.asks = Asks(store, self.bus, waiters)
        self.inbox = Inbox(store, self.bus, self.settings, cache, self.tasks, self.started_mono)
        self.questions = Questions(waiters, self.asks)
        self.answers = Answers(store, self.bus, waiters, self.asks)
        self.ingest = Ingest(home, store, self.bus, self.questions, self.inbox, waiters, cache)
        self.transcripts = Transcripts(store, self.bus, self.questions, self.inbox, cache)
        self.health = HookHealth(home, store, self.bus, self.tasks)
        self.ingest.health = self.transcripts.health = self.health
        self.spool = Spool(home, self.ingest)
        self.claw = Claw(store, self.bus, self.ingest, self.inbox, self.asks)
        self.policy = Policy(home, store, self.bus, waiters, self.answers)
        self.runs = Runs(store, self.bus, self.policy.orphan, home.run_dir / "exits")
        self.holds = Holds(store, self.bus, waiters, cache, self.runs.stopping_builder)

        # the API: each name is its component's method
        self.ingest_hook = self.ingest.ingest_hook
        self.ingest_spool = self.spool.ingest_spool
        self.send_message = self.inbox.send_message
        self.cancel_message = self.inbox.cancel_message
        self.builder_unspawned = self.inbox.builder_unspawned
        self.check_hooks = self.health.recheck
        self.wake = self.inbox.wake
        self.waking = self.inbox.waking
        self.apply_transcript = self.transcripts.apply_transcript
        self.transcript_followed = self.transcripts.transcript_followed
        self.answer = self.answers.answer
        self.reachable = self.answers.reachable
        self.preanswer = self.asks.preanswer
        self.ask_async = self.asks.ask_async
        self.await_answers = self.asks.await_answers
        self.run_expiry = self.asks.run_expiry
        self.register_waiter = waiters.register
        self.held = waiters.held
        self.release_all = waiters.release_all
        self.reattach = self.holds.reattach
        self.hold = self.holds.hold
        self.reply_read = self.holds.reply_read
        self.holding = self.holds.holding
        self.unreturned_holds = self.holds.unreturned
        self.claw_ack = self.claw.claw_ack
        self.claw_call = self.claw.claw_call
        self.claw_ask = self.claw.claw_ask
        self.dismiss = self.policy.dismiss
        self.orphan = self.policy.orphan
        self.defaults = self.policy.defaults
        self.run_defaults = self.policy.run_defaults
        self.builder_started = self.runs.started
        self.stop_builder = self.runs.stop

    async def known_builder(self, builder: str) -> None:
        """Raise NotFound unless ``builder`` (an id, checked by the caller) is spawned or the
        store knows it (a session, a message): what queues a message or asks for it first
        checks (REST, a chat's ``/send``), and ``GET /v1/messages?builder=`` when it finds none."""
        from hookd.spawn import read_manifest

        if await asyncio.to_thread(read_manifest, self.home, builder) is None and not await self.store.builder_known(builder):
            raise NotFound(f"builder {builder!r} is not known: spawn it first (or check the name)")

    def attach_tailer(self, tailer: Tailer) -> None:
        """From now on ``tailer`` follows each transcript path a session reports, and hears of
        each live hook of a session (it reads a hooked session's transcript once its hooks go
        quiet)."""
        self.tailer = tailer
        self.ingest.on_transcript = tailer.add
        self.ingest.on_hook = tailer.hook_arrived

    def attach_lanes(self, lanes: Lanes) -> None:
        """The lane watch the API asks for current lanes (``GET /v1/lanes``)."""
        self.lanes = lanes

    def attach_notifier(self, notifier: Notifier) -> None:
        """The notifier lane alerts go through (:func:`hookd.watchers.notify.raise_alert`)."""
        self.notifier = notifier

    async def close(self) -> None:
        """Cancel background work (transcript reads) before the store closes."""
        await self.tasks.close()
