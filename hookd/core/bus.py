"""What every component of the core is handed besides the store: the event bus that wakes
waiters after commits, the set of background tasks, and the write-then-publish step.

Persisted, then published: events reach :class:`EventBus` followers only after their
transaction commits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from hookd.models import Event
from hookd.store import Store

T = TypeVar("T")

log = logging.getLogger("hookd")


class _Signal:
    """A version counter and the wake-up of the waiters on it. One Event per version, replaced
    at each bump: bumping never waits for a lock (with a Condition, a hook's publish queued
    behind the woken waiters re-taking its lock: bench/load.py saw 13 ms per hook with 50
    builders back to back)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.version = 0

    def bump(self) -> None:
        self.version += 1
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait(self, timeout: float, since: int | None) -> None:
        if since is not None and self.version != since:
            return
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except TimeoutError:
            pass


class EventBus:
    """Wakes waiters after commits. ``version`` counts publishes, so a waiter that checked the
    store at version v and then waits with ``since=v`` never misses a publish in between;
    followers re-read the store from their last seq, so nothing is missed or doubled.
    :meth:`filtered` gives a follower a view that wakes only for the commits it acts on."""

    def __init__(self) -> None:
        self._signal = _Signal()
        self._closed = asyncio.Event()
        self._filters: list[BusFilter] = []
        self.closed = False

    @property
    def version(self) -> int:
        """Publishes so far."""
        return self._signal.version

    async def publish(self, events: Sequence[Event] | None = None) -> None:
        """Wake the waiters: a commit was made. ``events``: what it appended to the event log
        (None: not said; every filtered view then wakes too)."""
        self._signal.bump()
        for f in self._filters:
            f.offer(events)

    async def wait(self, timeout: float, since: int | None = None) -> None:
        """Return after the next publish (or at once if one happened since ``since``), or
        after ``timeout`` seconds."""
        await self._signal.wait(timeout, since)

    def filtered(self, wants: Callable[[Sequence[Event]], bool]) -> BusFilter:
        """A view of the bus whose waiters wake only for publishes whose events ``wants``
        (called in the publisher's turn, before any waiter runs: no wake-up for the others),
        for publishes that do not say their events, and at :meth:`close`. Until
        :meth:`unfilter` is called with it."""
        f = BusFilter(self, wants)
        self._filters.append(f)
        return f

    def unfilter(self, f: BusFilter) -> None:
        """Stop offering publishes to ``f``."""
        if f in self._filters:
            self._filters.remove(f)

    async def wait_closed(self) -> None:
        """Return once :meth:`close` was called (no wake-up at the publishes before)."""
        await self._closed.wait()

    async def close(self) -> None:
        self.closed = True
        self._closed.set()
        await self.publish()


class BusFilter:
    """A follower's view of an :class:`EventBus` (:meth:`EventBus.filtered`): ``version``,
    ``wait`` and ``closed`` as the bus's, counting only the publishes it wakes for."""

    def __init__(self, bus: EventBus, wants: Callable[[Sequence[Event]], bool]):
        self._bus = bus
        self._wants = wants
        self._signal = _Signal()

    @property
    def version(self) -> int:
        """Publishes this view woke for so far."""
        return self._signal.version

    @property
    def closed(self) -> bool:
        return self._bus.closed

    def offer(self, events: Sequence[Event] | None) -> None:
        """One publish (``events``: what its commit appended; None: not said): a wake-up if the
        follower wants it, if it does not say, or if ``wants`` raised (logged)."""
        try:
            wanted = events is None or self._bus.closed or self._wants(events)
        except Exception:
            log.exception("a bus filter failed: its follower is woken")
            wanted = True
        if wanted:
            self._signal.bump()

    def wake(self) -> None:
        """Wake this view's waiters for a reason of its follower's own (an agent's exit)."""
        self._signal.bump()

    async def wait(self, timeout: float, since: int | None = None) -> None:
        """Return after the next publish this view wakes for (or at once if one happened since
        ``since``), or after ``timeout`` seconds."""
        await self._signal.wait(timeout, since)


class Tasks:
    """The core's background tasks (transcript reads for adoption, the tailer's records),
    cancelled by :meth:`close` before the store closes."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def add(self, task: asyncio.Task[Any]) -> None:
        """Keep ``task`` until it is done (a reference, so it is not collected meanwhile)."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` as a task of the running loop, kept by :meth:`add`."""
        self.add(asyncio.get_running_loop().create_task(coro))

    async def close(self) -> None:
        """Cancel every task and wait for them to end."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


async def write_publish(store: Store, bus: EventBus, fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(tx, *args)`` in one write transaction (:meth:`hookd.store.Store.write`) and
    publish when it appended events. Returns ``fn``'s result; raises what the write raises."""
    result, events = await store.write(fn, *args)
    if events:
        await bus.publish(events)
    return result
