"""What every component of the core is handed besides the store: the event bus that wakes
waiters after commits, the set of background tasks, and the write-then-publish step.

Persisted, then published: events reach :class:`EventBus` followers only after their
transaction commits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from hookd.store import Store

T = TypeVar("T")


class EventBus:
    """Wakes waiters after commits. ``version`` counts publishes, so a waiter that checked the
    store at version v and then waits with ``since=v`` never misses a publish in between;
    followers re-read the store from their last seq, so nothing is missed or doubled."""

    def __init__(self) -> None:
        # one Event per version, replaced at each publish: publishing never waits for a lock
        # (with a Condition, a hook's publish queued behind the woken waiters re-taking its
        # lock: bench/load.py saw 13 ms per hook with 50 builders back to back)
        self._event = asyncio.Event()
        self._closed = asyncio.Event()
        self.version = 0
        self.closed = False

    async def publish(self) -> None:
        self.version += 1
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait(self, timeout: float, since: int | None = None) -> None:
        """Return after the next publish (or at once if one happened since ``since``), or
        after ``timeout`` seconds."""
        if since is not None and self.version != since:
            return
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except TimeoutError:
            pass

    async def wait_closed(self) -> None:
        """Return once :meth:`close` was called (no wake-up at the publishes before)."""
        await self._closed.wait()

    async def close(self) -> None:
        self.closed = True
        self._closed.set()
        await self.publish()


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
        await bus.publish()
    return result
