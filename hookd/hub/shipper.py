"""The shipper: a background task of the daemon that sends its event log to the hub
(:mod:`hookd.hub.sql`), in order, from a cursor kept in the local SQLite.

Nothing on the hook path waits on it: hooks commit to SQLite and publish on the
:class:`hookd.core.bus.EventBus` as always; the shipper wakes on those publishes, reads the
events after its cursor from the store and upserts them to the hub, a batch per transaction.
The hub down (refused, lost, slow) costs the agents nothing: the shipper retries with backoff
(0.1 s doubling to ``retry_max_s``) and, once connected again, goes on from where the hub's
confirmation left off.

The cursor: after each batch the hub confirmed, the newest seq it holds is written to the
store's ``hub_cursor`` (keyed by the hub's URL without its password). On each connect the
shipper starts from the smaller of that and the hub's own ``shipped_seq`` for this host: a hub
restored from an older backup is sent again what it lost; a batch whose confirmation was lost
with the connection is sent again and taken once (rows keyed by ``(host_id, seq)``).

One home per host: at its first connect to a hub a home makes an id for itself there (kept
beside the cursor) and claims its host's row with it; a second home shipping with the same role
(a reinstalled machine whose seqs start at 1 again) is refused (``state`` ``refused``), since its
events would collide with the first home's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any

from hookd import __version__
from hookd.hub import sql
from hookd.hub.config import redact

if TYPE_CHECKING:
    from hookd.core import Hookd
    from hookd.hub.commands import Applier

log = logging.getLogger("hookd.hub")


class Shipper:
    """Ships ``core``'s event log to the hub at ``url`` (module doc).

    heartbeat_s: the heartbeat row's period while nothing ships (seconds); batch: events per
    transaction; retry_max_s: the longest wait between two connection attempts (seconds);
    connect_timeout_s: one attempt's limit; command_timeout_s: one statement's. State for
    status and tests: ``state`` (``connecting``, ``up``, ``down``; ``refused``: another home
    ships as this host, :class:`HostTaken`), ``error`` (the last failure's text), ``cursor`` (the
    newest seq the hub confirmed), ``host_id`` (the hub's name for this host: its role),
    ``inserted`` (rows the hub took as new), ``sent`` (rows sent, resends included)."""

    def __init__(self, core: "Hookd", url: str, *, heartbeat_s: float = 10.0, batch: int = 500,
                 retry_max_s: float = 5.0, connect_timeout_s: float = 10.0, command_timeout_s: float = 30.0):
        self.core = core
        self.url = url
        self.key = redact(url)
        self.heartbeat_s = heartbeat_s
        self.batch = batch
        self.retry_max_s = retry_max_s
        self.connect_timeout_s = connect_timeout_s
        self.command_timeout_s = command_timeout_s
        self.state = "connecting"
        self.error: str | None = None
        self.cursor = 0
        self.host_id: str | None = None
        self.home_id = ""
        self.inserted = 0
        self.sent = 0
        #: the task applying the hub's commands for this host, beside this one (the daemon sets it)
        self.applier: Applier | None = None

    def view(self) -> dict[str, Any]:
        """What status shows: ``url`` (no password), ``state``, ``error``, ``host_id``,
        ``shipped_seq``, ``sent``, ``inserted``, ``commands`` (the hub's commands for this
        host: :meth:`hookd.hub.commands.Applier.view`, None without)."""
        return {"url": self.key, "state": self.state, "error": self.error, "host_id": self.host_id,
                "shipped_seq": self.cursor, "sent": self.sent, "inserted": self.inserted,
                "commands": self.applier.view() if self.applier is not None else None}

    async def claimed_home(self) -> str | None:
        """This home's id on this hub as its cursor keeps it (None before the first connect):
        what the home claims its host with (:func:`hookd.hub.sql.claim`), for the tasks beside
        the shipper that act as the host (:class:`hookd.hub.fleet.FleetLink`)."""
        mine = await self.core.store.hub_cursor(self.key)
        return None if mine is None else mine[1]

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, catch up, follow the bus; on any failure wait and connect again, until
        ``stop`` is set (or the task is cancelled). Until the first connect, ``shipped_seq``
        is what this home's cursor kept (a hub that refuses the login must not read as
        nothing shipped)."""
        saved = await self.core.store.hub_cursor(self.key)
        if saved is not None:
            self.cursor = saved[0]
        await keep_connected(self.url, stop, self._follow, self._failed, lambda: self.state == "up",
                             connect_timeout_s=self.connect_timeout_s, command_timeout_s=self.command_timeout_s,
                             retry_max_s=self.retry_max_s)

    def _failed(self, e: Exception) -> None:
        state = failed_state(e)
        if self.state != state or self.error != why(e):
            log.warning("hub %s: %s; the events wait in the local store and ship once it is back", self.key, why(e))
        self.state, self.error = state, why(e)

    async def _follow(self, conn: Any, stop: asyncio.Event) -> None:
        store, bus = self.core.store, self.core.bus
        self.host_id = await sql.host_id(conn)
        mine = await store.hub_cursor(self.key)
        if mine is None:  # the first connect to this hub: this home's id there, kept with the cursor
            mine = (0, secrets.token_hex(16))
            await store.write(_set_cursor, self.key, 0, time.time(), mine[1])
        local, self.home_id = mine
        if await sql.claim(conn, self.home_id) != self.home_id:
            raise HostTaken(f"another hookd home already ships to this hub as host {self.host_id} (a reinstalled "
                            "machine, or two sharing a role): its events and this home's would share seqs; give "
                            "this home a host role of its own (hookd --hub ADMIN_URL hub add-host NAME), or, if "
                            f"the other home is gone for good, release the host on the hub: UPDATE hookd.hosts SET "
                            f"home_id = NULL WHERE host_id = '{self.host_id}'")
        self.cursor = min(local, await sql.shipped_seq(conn))
        if self.state != "up":
            log.info("hub %s: connected as host %s, shipping after seq %d", self.key, self.host_id, self.cursor)
        self.state, self.error = "up", None
        await sql.heartbeat(conn, self.cursor, __version__)
        beat = time.monotonic()
        while not stop.is_set():
            version = bus.version
            rows = await store.events_raw_after(self.cursor, self.batch)
            if rows:
                self.sent += len(rows)
                self.inserted += await sql.ship(conn, rows, __version__)
                self.cursor = rows[-1][0]
                beat = time.monotonic()
                try:
                    await store.write(_set_cursor, self.key, self.cursor, time.time(), self.home_id)
                except Exception as e:  # (storage refusing writes: the hub's row has it; resent once, taken once)
                    log.warning("hub cursor not saved: %s", e)
                continue
            idle = time.monotonic() - beat
            if idle >= self.heartbeat_s:
                await sql.heartbeat(conn, self.cursor, __version__)
                beat, idle = time.monotonic(), 0.0
            await bus.wait(self.heartbeat_s - idle, since=version)


class NotClaimed(Exception):
    """This home has not claimed its host on the hub yet (the shipper does at its first connect)."""


def failed_state(e: BaseException) -> str:
    """The ``state`` a hub task shows after failure ``e``: ``refused`` (another home is this
    host: HostTaken), ``connecting`` (this home not claimed yet: NotClaimed), else ``down``."""
    return "refused" if isinstance(e, HostTaken) else "connecting" if isinstance(e, NotClaimed) else "down"


async def check_claimed(conn: Any, home_id: str | None, host: str, what: str) -> None:
    """Whether this home (``home_id``, the shipper's claim kept with its cursor; None before its
    first connect: NotClaimed) is the home of ``conn``'s host on the hub, as the tasks beside
    the shipper that act as the host (its commands, its notification link) require; another
    home is: HostTaken, saying it takes ``what`` and this home none."""
    if home_id is None:
        raise NotClaimed("waiting for the shipper's first connect to claim this host")
    if await sql.claim(conn, home_id) != home_id:
        raise HostTaken(f"another hookd home already ships to this hub as host {host}: it takes the host's {what},"
                        " this home none (hookd status's hub line says more)")


class HostTaken(Exception):
    """Another hookd home already ships to the hub as this host (:func:`hookd.hub.sql.claim`)."""


def _set_cursor(tx: Any, hub: str, seq: int, at: float, home_id: str) -> None:
    tx.log.set_hub_cursor(hub, seq, at, home_id)


async def keep_connected(url: str, stop: asyncio.Event, follow: Any, failed: Any, was_up: Any, *,
                         connect_timeout_s: float, command_timeout_s: float, retry_max_s: float) -> None:
    """A hub task's connection loop (the shipper's, the applier's): connect to ``url`` and run
    ``await follow(conn, stop)``; on any failure but cancellation call ``failed(exc)``, close
    the connection, wait (0.1 s, doubling up to ``retry_max_s``; back to 0.1 s after a
    connection on which ``was_up()`` held) and connect again, until ``stop`` is set.
    ``command_timeout_s``: a hub that stops answering mid-statement ends the connection instead
    of stalling the task until TCP gives up."""
    import asyncpg  # (the optional extra hookd[hub]: hookd.daemon checked it is installed)

    delay = 0.1
    while not stop.is_set():
        conn = None
        try:
            conn = await asyncpg.connect(url, timeout=connect_timeout_s, command_timeout=command_timeout_s)
            await follow(conn, stop)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # (the hub refused, went away, timed out: never the daemon's end)
            if was_up():  # (a connection that worked: the backoff starts again; one refused at
                delay = 0.1  # once, HostTaken included, keeps backing off)
            failed(e)
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        delay = min(delay * 2, retry_max_s)


def why(e: BaseException) -> str:
    """``Type: first line of the message`` (or the type alone): a failure as status shows it."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
