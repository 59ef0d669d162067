"""The core's in-memory state shared by its components: what the store already holds (caches on
the hook path) and the hooks held for a remote answer.

Both are ephemeral: a restart empties them (the store stays the source of truth; a held hook's
client comes back to the next daemon: :meth:`hookd.core.holds.Holds.reattach`).
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field

from hookd.store import Tx


def fingerprint(raw: bytes) -> bytes:
    """16 bytes identifying a hook payload (an idle wake compares its Stop's with the stored one)."""
    return hashlib.blake2b(raw, digest_size=16).digest()


@dataclass
class HookCache:
    """Caches of what the store already holds, to skip redundant reads and writes on the hook
    path. Touched only after the commit that made them true (``tx.after_commit``)."""

    #: builders already recorded
    builders: set[str] = field(default_factory=set)
    #: session -> (transcript path, cwd) as recorded
    sessions: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    #: builder -> session of its newest hook (no stale check needed for it)
    latest: dict[str, str] = field(default_factory=dict)
    #: session -> agent pid already recorded
    pids: dict[str, int] = field(default_factory=dict)
    #: session -> its last hook (hook event id, payload fingerprint; only a Stop's is kept):
    #: what an idle wake waits on
    activity: dict[str, tuple[int, bytes]] = field(default_factory=dict)


class DaemonStopping(Exception):
    """A held hook let go because the daemon is stopping (SIGTERM: a restart, an upgrade): its
    payload is stored, and its client may come back to the next daemon and wait on the same
    interaction (:meth:`hookd.core.holds.Holds.reattach`)."""


class Waiters:
    """Held PermissionRequest hooks, by interaction id: the futures an answer resolves."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Future[bytes]]] = {}
        #: the daemon is stopping: no hook is held from here on (:meth:`release_all`)
        self.stopping = False
        #: interactions whose held hook went away while its agent is watched (is it exiting, or
        #: was it the desk?: :meth:`hookd.core.holds.Holds._hook_gone`); their hook's fate
        #: settles them, nothing else
        self.watched: set[str] = set()

    def register(self, iid: str) -> asyncio.Future[bytes]:
        """A new waiter for ``iid``. Called inside the hook's own transaction, so an answer
        committed right after it already finds the waiting hook."""
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(iid, set()).add(fut)
        return fut

    def waiting(self, iid: str) -> bool:
        """Is a waiter registered for ``iid`` (done or not)?"""
        return iid in self._waiters

    def discard(self, iid: str, fut: asyncio.Future[bytes]) -> None:
        """Forget ``fut`` (its hook is answered or gone)."""
        ws = self._waiters.get(iid)
        if ws is not None:
            ws.discard(fut)
            if not ws:
                del self._waiters[iid]

    def release(self, iid: str, body: bytes = b"") -> None:
        """Let every hook held for ``iid`` go with ``body`` (its stdout; b"": nothing to say)."""
        for fut in self._waiters.get(iid, ()):
            if not fut.done():
                fut.set_result(body)

    def release_after(self, tx: Tx, iid: str, body: bytes = b"") -> None:
        """:meth:`release` once ``tx`` commits (nothing when no hook is held for ``iid``)."""
        if iid in self._waiters:
            tx.after_commit.append(lambda: self.release(iid, body))

    def held(self) -> list[str]:
        """Ids of the interactions a hook is being held for right now."""
        return sorted(iid for iid, ws in self._waiters.items() if any(not f.done() for f in ws))

    def release_all(self) -> None:
        """Shutdown: let every held hook go, and hold none from here on. Each one's hold raises
        DaemonStopping (its client reconnects to the next daemon and waits on); the desk can
        answer meanwhile."""
        self.stopping = True
        for iid in list(self._waiters):
            for fut in self._waiters[iid]:
                if not fut.done():
                    fut.set_exception(DaemonStopping(iid))
