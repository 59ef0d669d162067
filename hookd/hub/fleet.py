"""One notifier for the fleet (docs/fleet.md "One notifier for the fleet"): hosts sharing a
hub have a question notified once, not once per host.

Two background tasks of a hub-connected daemon, each on a dedicated connection, neither on
the hook path:

- :class:`FleetLink` (every host): links the host for notifications (``[hub] notify``:
  ``fleet`` or ``local``; :mod:`hookd.hub.fleet_sql`'s ``links``, held live by an advisory
  lock of its session) and answers the local notifier's question "do I notify this step?"
  (:meth:`FleetLink.decide`): with ``fleet``, a step due while the link is up and a fleet
  notifier holds the lead is left to the fleet for ``grace_s``; else, or once the grace is
  over, the host claims the step on the hub and notifies it itself unless the fleet already
  has; the hub out of reach, it notifies locally (and records the claim once it is back). Just
  started, it sends nothing before its link was up once (the hub's claims read) or ``grace_s``
  passed without it.
- :class:`FleetLead` (a host that may lead: a member of ``hookd_notifier``, ``notify =
  "fleet"``, a one-way channel configured): takes the lead's advisory lock when free (a
  standby tries again every ``poll_s``); leading, it reads the linked hosts' pending
  interactions from their shipped events (woken by the shippers' NOTIFY) and notifies each
  due step through its own channels (``send``), the step's claim inserted in a transaction
  committed only once it is sent. Its connection lost (the daemon killed, the network
  gone), PostgreSQL ends its session: the lock is free for a standby, and the claims not
  committed are gone with it, so the next lead notifies them: nothing lost, nothing twice
  (but a send the channel took in the instant before the commit was lost: docs/decisions.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from typing import Any, Awaitable, Callable, Sequence

from hookd.hub import fleet_sql, sql
from hookd.hub.config import redact
from hookd.hub.shipper import check_claimed, failed_state
from hookd.hub.shipper import why as _why

log = logging.getLogger("hookd.hub")

#: ``send(row, step, steps, now)``: notify step ``step`` (of ``steps``) of the interaction in
#: ``row`` (:func:`hookd.hub.fleet_sql.fleet_pending`'s, ``data`` decoded) on this daemon's
#: channels, retries included; True when a channel took it. Never raises.
#: How long the lead leaves a step no channel took before trying it again (seconds; its host
#: claims it itself once its grace is over).
UNSENT_RETRY_S = 60.0
#: How often a host whose role may not lead (not in ``hookd_notifier``) looks again (seconds).
NOT_ALLOWED_RECHECK_S = 60.0

Send = Callable[[dict[str, Any], int, int, float], Awaitable[bool]]


class _Conn:
    """A dedicated connection with a retry loop: ``state`` (``connecting``, ``up``, ``down``;
    ``refused``: another home is this host, :class:`hookd.hub.shipper.HostTaken`), ``error``
    (the last failure's text), backoff 0.1 s doubling to ``retry_max_s``."""

    def __init__(self, url: str, what: str, retry_max_s: float, connect_timeout_s: float, command_timeout_s: float):
        self.url, self.key, self.what = url, redact(url), what
        self.retry_max_s = retry_max_s
        self.connect_timeout_s = connect_timeout_s
        self.command_timeout_s = command_timeout_s
        self.state = "connecting"
        self.error: str | None = None

    async def loop(self, stop: asyncio.Event, body: Callable[[Any], Awaitable[float | None]]) -> None:
        """Connect and run ``body(conn)`` until ``stop``, again after each failure (backoff) or
        return (``body``'s return: seconds to wait before connecting again; None: the backoff's)."""
        import asyncpg

        delay = 0.1
        while not stop.is_set():
            conn, pause = None, None
            try:
                conn = await asyncpg.connect(self.url, timeout=self.connect_timeout_s,
                                             command_timeout=self.command_timeout_s)
                delay = 0.1
                pause = await body(conn)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # (the hub refused, went away, timed out: never the daemon's end)
                why = _why(e)
                state = failed_state(e)
                if state != "connecting" and (self.state != state or self.error != why):
                    log.warning("hub %s: %s: %s", self.key, self.what, why)
                self.state, self.error = state, why
            finally:
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay if pause is None else pause)
            delay = min(delay * 2, self.retry_max_s)


class FleetLink(_Conn):
    """This host's link for notifications (module doc). notify: ``fleet`` or ``local``;
    grace_s: how long a step due while the fleet covers it is left to the fleet notifier
    before the host claims it itself (seconds); poll_s: how often the link looks whether a
    lead is present (seconds); claim_timeout_s: one claim's limit (then: notified locally).
    home_id(): this home's id on the hub (the shipper's claim, kept with its cursor; None until
    its first connect): the link is made only by the home that claimed its host, as the
    applier's commands are taken (:mod:`hookd.hub.commands`); another home with the same role
    is ``refused`` and links nothing (None: no such check, for tests)."""

    def __init__(self, url: str, notify: str = "fleet", *, grace_s: float = 10.0, poll_s: float = 1.0,
                 retry_max_s: float = 5.0, connect_timeout_s: float = 10.0, claim_timeout_s: float = 5.0,
                 home_id: Callable[[], Awaitable[str | None]] | None = None):
        super().__init__(url, "notification link", retry_max_s, connect_timeout_s, claim_timeout_s)
        self.notify = notify
        self.home_id = home_id
        self.grace_s = grace_s
        self.poll_s = poll_s
        self.host_id: str | None = None
        #: when the live link began (this host's clock; None: not linked)
        self.linked_at: float | None = None
        #: whether a fleet notifier held the lead at the last look
        self.lead_present = False
        self._conn: Any = None
        self._lock = asyncio.Lock()  # (one statement at a time on the connection)
        self._unrecorded: list[tuple[str, int, str]] = []  # steps notified here unclaimed, and why
        self.by_fleet = 0
        self.here = 0
        #: when this link started (this host's clock): until it has linked once or ``grace_s``
        #: has passed since, no step is sent here (the hub's claims are not known yet)
        self.started_at = time.time()
        self._checked = False  # whether the link was up once since the start
        #: called once the link is up (the daemon wakes its notifier: steps held for it)
        self.on_linked: Callable[[], None] | None = None

    def view(self) -> dict[str, Any]:
        """``notify``, ``link`` (``connecting``, ``up``, ``down``), ``lead_present``,
        ``error``, ``by_fleet`` (steps of this host's interactions this host left to the
        fleet notifier, which had sent them), ``here`` (steps it decided to send itself; with
        ``notify = "local"``, every one)."""
        return {"notify": self.notify, "link": self.state, "lead_present": self.lead_present, "error": self.error,
                "by_fleet": self.by_fleet, "here": self.here}

    async def run(self, stop: asyncio.Event) -> None:
        """Link, look for the lead every ``poll_s``; relink after any failure; until ``stop``."""
        await self.loop(stop, lambda conn: self._linked(conn, stop))

    async def _linked(self, conn: Any, stop: asyncio.Event) -> None:  # (returns only when stopped)
        try:
            async with self._lock:
                self.host_id = await sql.host_id(conn)
                if self.home_id is not None:
                    await check_claimed(conn, await self.home_id(), self.host_id, "notification link")
                await self._record(conn)
                linked_at = time.time()
                await fleet_sql.link(conn, self.notify, 1 + secrets.randbelow(2**31 - 2), linked_at)
                self.lead_present = await fleet_sql.lead_present(conn)
            self._conn, self.linked_at, self._checked = conn, linked_at, True
            if self.on_linked is not None:
                self.on_linked()
            if self.state != "up":
                log.info("hub %s: linked for notifications (%s) as host %s", self.key, self.notify, self.host_id)
            self.state, self.error = "up", None
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.poll_s)
                async with self._lock:
                    self.lead_present = await fleet_sql.lead_present(conn)
        finally:
            self._conn, self.linked_at, self.lead_present = None, None, False

    async def _record(self, conn: Any) -> None:
        """Claim on the hub what this host notified while it was away (a duplicate is logged)."""
        while self._unrecorded:
            iid, step, why = self._unrecorded[0]
            if not await fleet_sql.claim(conn, iid, step, None):
                log.warning("interaction %s step %d was notified here and by the fleet notifier (sent here "
                            "unclaimed: %s)", iid, step, why)
            self._unrecorded.pop(0)

    async def decide(self, interaction_id: str, step: int, due_at: float, now: float) -> tuple[str, float | None]:
        """Whether this host notifies step ``step`` of its interaction, due at ``due_at``:
        ``("send", None)``, ``("skip", None)`` (the fleet notifier did) or ``("wait", t)``
        (left to the fleet until ``t``; ask again then). Never raises."""
        if self.notify != "fleet":
            self.here += 1
            return "send", None
        linked = self.linked_at
        if linked is not None and due_at >= linked and self.lead_present and now < due_at + self.grace_s:
            return "wait", due_at + self.grace_s
        conn = self._conn
        if conn is None and not self._checked and now < self.started_at + self.grace_s:
            return "wait", self.started_at + self.grace_s  # (just started: the hub's claims unread yet)
        why = (f"the hub was out of reach: {self.error}" if self.state == "down"
               else f"this host's link to the hub was {self.state}")
        if conn is not None:
            try:
                async with self._lock:
                    mine = await asyncio.wait_for(fleet_sql.claim(conn, interaction_id, step, None),
                                                  self.command_timeout_s)
                if not mine:
                    self.by_fleet += 1
                    return "skip", None
                self.here += 1
                return "send", None
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - the hub away: notified here, recorded later
                why = f"claiming it on the hub failed: {_why(e)}"
                log.warning("hub %s: claiming %s step %d failed (%s); notified locally", self.key, interaction_id,
                            step, _why(e))
        self._unrecorded.append((interaction_id, step, why))
        self.here += 1
        return "send", None


class FleetLead(_Conn):
    """The fleet notifier's candidate on this host (module doc). send: the daemon's
    :data:`Send`; question_after_s, steps_s: when a pending interaction's steps fall due
    (this daemon's ``[notify]``, from the interaction's ``at``); poll_s: a standby's period
    between two tries for the lock, and the lead's longest wait between two reads (seconds)."""

    def __init__(self, url: str, send: Send, question_after_s: float, steps_s: Sequence[float], *,
                 poll_s: float = 1.0, read_every_s: float = 5.0, retry_max_s: float = 5.0,
                 connect_timeout_s: float = 10.0, command_timeout_s: float = 30.0):
        super().__init__(url, "fleet notifier", retry_max_s, connect_timeout_s, command_timeout_s)
        self.send = send
        self.question_after_s = question_after_s
        self.steps_s = tuple(steps_s)
        self.poll_s = poll_s
        self.read_every_s = read_every_s
        #: ``standby``, ``lead``, ``not_allowed`` (the role is not in hookd_notifier: no
        #: connection is held then, ``state`` ``idle``; looked at again every ``recheck_s``)
        self.role = "standby"
        self.recheck_s = NOT_ALLOWED_RECHECK_S
        self.notified = 0
        self._unsent: dict[tuple[str, str, int], float] = {}  # a step no channel took -> when to try again

    def view(self) -> dict[str, Any]:
        """``role`` (``standby``, ``lead``, ``not_allowed``), ``state`` (the connection's;
        ``idle``: not allowed, no connection held),
        ``notified`` (steps this host notified for the fleet since it started)."""
        return {"role": self.role, "state": self.state, "notified": self.notified}

    async def run(self, stop: asyncio.Event) -> None:
        """Stand by, lead when the lock is free, until ``stop``."""
        await self.loop(stop, lambda conn: self._stand_by(conn, stop))

    async def _stand_by(self, conn: Any, stop: asyncio.Event) -> float | None:
        self.state, self.error = "up", None
        try:
            while not stop.is_set():
                if not await fleet_sql.may_lead(conn):
                    # (its connection closed: a host that may not lead holds none of the hub's
                    # connections for it; a later `hub add-host --notifier` is seen at the next look)
                    self.role, self.state = "not_allowed", "idle"
                    return self.recheck_s
                if await fleet_sql.try_lead(conn):
                    await self._lead(conn, stop)
                    return None
                self.role = "standby"
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.poll_s)
            return None
        finally:
            if self.role == "lead":
                self.role = "standby"

    async def _lead(self, conn: Any, stop: asyncio.Event) -> None:
        self.role = "lead"
        log.info("hub %s: this host is the fleet's notifier", self.key)
        wake = asyncio.Event()
        await conn.add_listener(sql.CHANNEL, lambda *_: wake.set())
        while not stop.is_set():
            wake.clear()
            nxt = await self._pass(conn, time.time())
            wait = self.read_every_s if nxt is None else min(self.read_every_s, max(0.0, nxt - time.time()) + 0.01)
            stopping = asyncio.create_task(stop.wait())
            woken = asyncio.create_task(wake.wait())
            try:
                await asyncio.wait({stopping, woken}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
                woken.cancel()
            if not conn.is_closed():
                await conn.execute("SELECT 1")  # (a lost connection ends the lead here, not at the next send)

    async def _pass(self, conn: Any, now: float) -> float | None:
        """Notify what is due; return when the next step falls due (None: nothing scheduled)."""
        nxt: float | None = None
        self._unsent = {k: t for k, t in self._unsent.items() if t > now}
        for row in await fleet_sql.fleet_pending(conn):
            fire_at = float(row["at"]) + self.question_after_s
            top = -1 if row["top"] is None else int(row["top"])
            due = [n for n, off in enumerate(self.steps_s) if fire_at + off <= now]
            if due and due[-1] > top:
                step = due[-1]
                # (a step due before the host linked is the host's own: it notified it then)
                if fire_at + self.steps_s[step] >= float(row["linked_at"]):
                    await self._notify(conn, {**row, "data": json.loads(row["data"])}, step, now)
                top = step
            if top + 1 < len(self.steps_s):
                t = fire_at + self.steps_s[top + 1]
                nxt = t if nxt is None else min(nxt, t)
        return nxt

    async def _notify(self, conn: Any, row: dict[str, Any], step: int, now: float) -> None:
        iid = str(row["data"].get("id"))
        key = (str(row["host_id"]), iid, step)
        if self._unsent.get(key, 0.0) > now:
            return
        # the claim commits once sent; this connection lost, or no channel took it: rolled back
        # (the host's own claim, once its grace is over, then finds the step free)
        with contextlib.suppress(_Unsent):
            async with conn.transaction():
                if await fleet_sql.claim_new(conn, row["host_id"], iid, step, row["seq"]):
                    if not await self.send(row, step, len(self.steps_s), now):
                        self._unsent[key] = time.time() + UNSENT_RETRY_S
                        raise _Unsent
                    self.notified += 1


class _Unsent(Exception):
    """No channel took the fleet's notification: its claim is rolled back."""
