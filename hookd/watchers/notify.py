"""Detect-and-notify (docs/usage.md "Notifications").

A human hears about an agent waiting on them within a bounded time, once per escalation step,
on the channels they chose in ``HOOKD_HOME/config.toml`` (read by
``hookd.watchers.notify_config``: thresholds, escalation steps, retries, channels). What an
alert says and one attempt to send it on a channel are ``hookd.watchers.notify_channels``;
this module decides when, retries and records what was sent.

Subjects are keys (``interaction:<id>``, ``lane:<builder>:<rule>...``). Step ``n`` of a subject
is claimed in the store (one transaction) before anything is sent, one row per channel, so a
step goes out at most once per channel, across restarts; a delivery is retried with
exponential backoff (tenacity) in a background task and stops when the subject is cleared.
Interaction rules run here (:meth:`Notifier.run`), and the agent's own messages
(``agent_notified``: :mod:`hookd.watchers.notify_agent`); lanes raise their own alerts with
:func:`raise_alert` and end them with :func:`clear`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from hookd.core.bus import BusFilter
from hookd.core.policy import asks_something
from hookd.harness.registry import present_tool
from hookd.models import DECISION_KINDS
from hookd.watchers.notify_channels import (
    Alert,
    NotifyFailed,
    PermanentFailure,
    deliver,
    duration,
    interaction_alert,
    test_channels,
    two_way_channel,
)
from hookd.watchers.notify_agent import AgentNotices
from hookd.watchers.notify_config import TWO_WAY_TYPES, Channel, NotifyConfig

if TYPE_CHECKING:
    import httpx

    from hookd.watchers.chat import ChatRelay

    from hookd.core import Hookd
    from hookd.store import Tx

log = logging.getLogger("hookd")

#: Fewest seconds between two rule passes woken by commits (bursts of hooks coalesce).
MIN_PASS_GAP_S = 0.05

_enc = msgspec.json.Encoder(order="sorted")


# --- the notifier in the daemon -----------------------------------------------------------

class FleetCover(Protocol):
    """The fleet's say on this host's interaction notifications (:class:`hookd.hub.fleet.FleetLink`)."""

    async def decide(self, interaction_id: str, step: int, due_at: float, now: float) -> tuple[str, float | None]: ...


class Notifier:
    """Rules, escalation and delivery inside ``hookd serve``.

    Interaction rules: a pending ``question`` or ``permission`` older than
    ``question_after_s`` fires step 0; step n follows ``steps_s[n]`` seconds after step 0;
    after downtime only the highest step due is sent. Lane rules are raised by the lanes
    code through :meth:`raise_alert`. Every step is claimed in the store before it is sent.
    """

    def __init__(self, core: Hookd, config: NotifyConfig):
        self.core = core
        self.config = config
        self._tasks: dict[tuple[str, int, str], asyncio.Task[None]] = {}
        self._clearing: set[str] = set()
        self._steps: dict[str, tuple[int, float]] = {}  # key -> (highest step claimed, first at)
        self._lane: dict[str, Alert] = {}  # raised subjects that escalate (key -> step-0 alert)
        self._wake = asyncio.Event()
        self._closed = False
        self._http: httpx.AsyncClient | None = None
        self._agent = AgentNotices(core, config.agent_messages)
        #: the two-way channels' relays (channel name -> relay), started by :meth:`run`
        self.chats: dict[str, ChatRelay] = {}
        self._chat_tasks: list[asyncio.Task[None]] = []
        #: the fleet's link when the daemon has a hub (docs/fleet.md "One notifier for the
        #: fleet"): asked before an interaction's step is sent; None: every step is sent here
        self.fleet: FleetCover | None = None

    async def test(self, only: str | None = None) -> list[dict[str, Any]]:
        """``POST /v1/notify/test``: a test alert on each configured channel (``only``: its
        1-based number or name) with this daemon's settings, environment and relays, one
        attempt each. Returns ``[{"name", "type", "ok", "error"}]`` (error: None or why).
        Raises ConfigError (no channel) or NotFound (no channel ``only``)."""
        results = await test_channels(self.config, only, self.chats)
        return [{"name": ch.name, "type": ch.type, "ok": err is None, "error": err} for ch, err in results]

    # public API (lanes) ----------------------------------------------------------------
    async def raise_alert(self, alert: Alert, *, escalate: bool = True) -> bool:
        """Send ``alert`` (step ``alert.step``) on every channel unless that step (or a higher
        one) of ``alert.key`` was already claimed; True when it is being sent. With
        ``escalate`` the later steps follow at ``steps_s`` offsets (from the subject's first
        step) until :meth:`clear`."""
        sent = await self._claim_and_send(alert)
        if escalate and alert.key not in self._clearing:
            self._lane[alert.key] = msgspec.structs.replace(alert, step=0)
            self._wake.set()
        return sent

    def wake(self) -> None:
        """Evaluate the rules again now (the fleet's link is up: steps held for it are decided)."""
        self._wake.set()

    async def clear(self, key: str) -> None:
        """The subject is resolved: no further steps, pending retries stop (``cleared``)."""
        self._lane.pop(key, None)
        self._steps.pop(key, None)
        self._clearing.add(key)
        try:
            for k, task in list(self._tasks.items()):
                if k[0] == key:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            n, _ = await self.core.store.write(lambda tx: tx.log.clear_notifications(key))
        finally:
            self._clearing.discard(key)
        if n:
            log.info("notifications for %s cleared (%d pending)", key, n)

    async def send_now(self, alert: Alert) -> bool:
        """Send ``alert`` on every one-way channel now, each with the configured retries, and
        wait for the outcome (the fleet notifier's sends: claimed on the hub, not in the
        store); each channel's outcome is a ``notification_sent`` / ``notification_failed``
        event of this host's, with no builder or session (the interaction's host, builder and
        session are in its data: ``host``, ``builder``, ``session_id``). True when a channel took it; never raises but for cancellation."""
        chans = [c for c in self.config.channels if c.type not in TWO_WAY_TYPES]
        if not chans or self._closed:
            return False
        outcomes = await asyncio.gather(*(self._send_one(ch, alert) for ch in chans))
        return any(outcomes)

    async def _send_one(self, ch: Channel, alert: Alert) -> bool:
        cfg = self.config
        attempts, error = 0, None
        from tenacity import AsyncRetrying, retry_if_not_exception_type, stop_after_attempt, wait_exponential

        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(max(1, cfg.retry_attempts)),
                wait=wait_exponential(multiplier=cfg.retry_initial_s, min=cfg.retry_initial_s, max=cfg.retry_max_s),
                retry=retry_if_not_exception_type((PermanentFailure, asyncio.CancelledError)), reraise=True,
            ):
                with attempt:
                    attempts += 1
                    await deliver(ch, alert, self._http, None)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a notifier must never take the daemon down
            error = str(e) or type(e).__name__
        # the interaction is the named host's: its builder and session go in the data, never in
        # this host's builder column (the lanes watcher would take them for a local builder)
        data: dict[str, Any] = {"key": alert.key, "step": alert.step, "channel": ch.name, "type": ch.type,
                                "rule": alert.rule, "attempts": attempts, "host": alert.data.get("host"),
                                "builder": alert.builder, "session_id": alert.session_id}
        if error:
            data["error"] = error
        status = "failed" if error else "sent"
        try:
            await self.core.store.write(lambda tx: tx.append_event(f"notification_{status}", None, None,
                                                                   time.time(), data))
            await self.core.bus.publish()
        except Exception:
            log.exception("recording notification %s step %d on %s failed", alert.key, alert.step, ch.name)
        return error is None

    # delivery --------------------------------------------------------------------------
    async def _claim_and_send(self, alert: Alert) -> bool:
        if not self.config.channels or self._closed:
            return False
        # a two-way channel posts an interaction itself, with its buttons (hookd.watchers.chat)
        two_way = alert.key.startswith("interaction:")
        names = [c.name for c in self.config.channels if not (two_way and c.type in TWO_WAY_TYPES)]
        if not names:
            return False
        blob = _enc.encode(alert)
        (top, first, claimed), _ = await self.core.store.write(
            lambda tx: tx.log.claim_notification(alert.key, alert.step, alert.rule, alert.builder, names, blob, alert.at))
        self._steps[alert.key] = (top, first)
        for ch in self.config.channels:
            if ch.name in claimed:
                self._spawn(ch, alert, 0)
        return bool(claimed)

    def _spawn(self, ch: Channel, alert: Alert, attempts_before: int) -> None:
        k = (alert.key, alert.step, ch.name)
        if k in self._tasks:
            return
        task = asyncio.create_task(self._deliver(ch, alert, attempts_before))
        self._tasks[k] = task
        task.add_done_callback(lambda _t: self._tasks.pop(k, None))

    async def _deliver(self, ch: Channel, alert: Alert, attempts_before: int) -> None:
        cfg = self.config
        attempts = 0
        status, error = "sent", None
        try:
            from tenacity import AsyncRetrying, retry_if_not_exception_type, stop_after_attempt, wait_exponential

            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(max(1, cfg.retry_attempts - attempts_before)),
                wait=wait_exponential(multiplier=cfg.retry_initial_s, min=cfg.retry_initial_s, max=cfg.retry_max_s),
                # tenacity's attempt context swallows BaseException too: without CancelledError
                # here a clear/close that cancels a request in flight would send it again
                retry=retry_if_not_exception_type((PermanentFailure, asyncio.CancelledError)),
                reraise=True,
            ):
                with attempt:
                    attempts += 1
                    try:
                        await deliver(ch, alert, self._http, self.chats.get(ch.name))
                    except NotifyFailed as e:
                        log.warning("notification %s step %d on %s failed (attempt %d): %s",
                                    alert.key, alert.step, ch.name, attempts_before + attempts, e)
                        raise
        except asyncio.CancelledError:
            if alert.key not in self._clearing:
                raise  # shutdown: the row stays pending and is resumed at the next start
            status, error = "cleared", None
        except Exception as e:  # noqa: BLE001 - a notifier must never take the daemon down
            status, error = "failed", str(e) or type(e).__name__
        await self._finish(ch, alert, status, attempts, error)

    async def _finish(self, ch: Channel, alert: Alert, status: str, attempts: int, error: str | None) -> None:
        at = time.time()

        def tx_fn(tx: Tx) -> None:
            if not tx.log.finish_notification(alert.key, alert.step, ch.name, status=status, attempts=attempts,
                                          error=error, at=at):
                return
            if status in ("sent", "failed"):
                data: dict[str, Any] = {"key": alert.key, "step": alert.step, "channel": ch.name, "type": ch.type,
                                        "rule": alert.rule, "attempts": attempts}
                if error:
                    data["error"] = error
                tx.append_event(f"notification_{status}", alert.builder, alert.session_id, at, data)

        try:
            await self.core.store.write(tx_fn)
            await self.core.bus.publish()
        except Exception:
            log.exception("recording notification %s step %d on %s failed", alert.key, alert.step, ch.name)

    # rules -----------------------------------------------------------------------------
    async def run(self) -> None:
        """Resume deliveries a restart interrupted, then evaluate the rules whenever
        something is committed or the next step falls due (no polling); with no channel
        configured, only wait for the bus to close."""
        if any(ch.url for ch in self.config.channels):  # webhooks share one client (httpx loaded only then)
            import httpx

            logging.getLogger("httpx").setLevel(logging.WARNING)  # its INFO lines carry webhook URLs (secrets)
            self._http = httpx.AsyncClient()
        self._start_chats()
        try:
            await self._resume()
            if not self.config.channels:
                # no channel, no rule can fire (raise_alert sends nothing): commits need no
                # look, and a pass per hook would cost every hook a wake-up and two tasks
                await self.core.bus.wait_closed()
                return
            # a commit of nothing but an agent's tool calls or lanes' changes opens, ends and
            # tells nothing the rules act on: no pass for it (the lanes' alerts come through
            # LaneAlerts, not this loop)
            view = self.core.bus.filtered(asks_something)
            try:
                await self._rules(view)
            finally:
                self.core.bus.unfilter(view)
        finally:
            await self.close()

    async def _rules(self, view: BusFilter) -> None:
        """The rules' passes: after the commits ``view`` wakes for, a wake (:meth:`wake`: a
        hub link), or the next step's due time; at most one per MIN_PASS_GAP_S."""
        last = 0.0
        while not view.closed and not self._closed:
            version = view.version
            self._wake.clear()
            try:
                nxt = await self._pass(time.time())
            except Exception:
                log.exception("notification rules pass failed")
                nxt = time.time() + 5
            last = time.monotonic()
            wait = 3600.0 if nxt is None else min(3600.0, max(0.0, nxt - time.time()) + 0.01)
            waker = asyncio.create_task(self._wake.wait())
            bus = asyncio.create_task(view.wait(wait, since=version))
            try:
                await asyncio.wait({waker, bus}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waker.cancel()
                bus.cancel()
            gap = MIN_PASS_GAP_S - (time.monotonic() - last)
            if gap > 0:
                await asyncio.sleep(gap)

    def _start_chats(self) -> None:
        from hookd.watchers.chat import ChatRelay

        cfg = self.config
        for ch in cfg.channels:
            if ch.type in TWO_WAY_TYPES:
                relay = ChatRelay(self.core, two_way_channel(ch), question_after_s=cfg.question_after_s,
                                  retry_initial_s=cfg.retry_initial_s, retry_max_s=cfg.retry_max_s,
                                  steps_s=cfg.steps_s)
                self.chats[ch.name] = relay
                self._chat_tasks.append(asyncio.create_task(relay.run()))

    async def _resume(self) -> None:
        # Read the open interactions first: between reading the pending rows and spawning
        # there must be no await, or a delivery this process started before run() (a lane's
        # raise_alert) could finish in between, leave _tasks, and be spawned (sent) again.
        open_ids = {i.id for i in await self.core.store.interactions("pending", limit=100000)}
        rows, _ = await self.core.store.write(lambda tx: tx.log.pending_notifications())
        channels = {c.name: c for c in self.config.channels}
        closed: set[str] = set()
        removed: list[tuple[str, Alert]] = []
        for key, step, name, blob, attempts in rows:
            alert = msgspec.json.decode(blob, type=Alert)
            ch = channels.get(name)
            if key.startswith("interaction:") and key.split(":", 1)[1] not in open_ids:
                closed.add(key)
            elif ch is None:
                removed.append((name, alert))
            else:
                self._spawn(ch, alert, attempts)
        for key in closed:
            await self.core.store.write(lambda tx, k=key: tx.log.clear_notifications(k))
        for name, alert in removed:
            await self._finish(Channel(type="removed", name=name), alert, "failed", 0, "channel no longer configured")

    async def _pass(self, now: float) -> float | None:
        """Fire what is due; return when the next step falls due (None: nothing scheduled)."""
        cfg = self.config
        if not cfg.channels:
            return None
        nxt: float | None = None
        for alert in await self._agent.due(now):  # the agent's own messages: once, at once
            await self._claim_and_send(alert)
            self._steps.pop(alert.key, None)  # (no escalation to schedule)
        one_way = any(c.type not in TWO_WAY_TYPES for c in cfg.channels)  # (two-way ones post them themselves)
        pending = [i for i in await self.core.store.interactions("pending", limit=100000)
                   if one_way and i.kind in ("question", "permission", "plan", "elicitation")]
        open_keys = {f"interaction:{i.id}" for i in pending}
        for key in [k for k in self._steps if k.startswith("interaction:") and k not in open_keys]:
            await self.clear(key)  # resolved
        unknown = [k for k in open_keys if k not in self._steps]
        if unknown:
            found, _ = await self.core.store.write(lambda tx: tx.log.notification_steps(unknown))
            for k in unknown:
                self._steps[k] = found.get(k, (-1, 0.0))
        for i in pending:
            key = f"interaction:{i.id}"
            fire_at = i.created_at + cfg.question_after_s
            top = self._steps.get(key, (-1, 0.0))[0]
            due = [n for n, off in enumerate(cfg.steps_s) if fire_at + off <= now]
            if due and due[-1] > top and self.fleet is not None:  # (docs/fleet.md "One notifier for the fleet")
                verdict, until = await self.fleet.decide(i.id, due[-1], fire_at + cfg.steps_s[due[-1]], now)
                if verdict == "wait" and until is not None:
                    nxt = until if nxt is None else min(nxt, until)
                    continue
                if verdict == "skip":  # the fleet notifier sent it
                    top = due[-1]
                    self._steps[key] = (top, self._steps.get(key, (-1, now))[1])
            if due and due[-1] > top:
                view = None
                if i.kind == "permission":  # the tool call as its harness's adapter shows it
                    harness = await self.core.store.session_harness(i.session_id) if i.session_id else None
                    view = present_tool(harness, i.tool_name, i.input)
                # the builder's default answer, if it has one (its spawn manifest: read in a thread)
                default = (await asyncio.to_thread(self.core.defaults, [i])).get(i.id)
                held = self.core.holding(i.id) if i.kind in DECISION_KINDS else None
                await self._claim_and_send(interaction_alert(i, due[-1], len(cfg.steps_s), now, view, default,
                                                             held=held))
                top = max(top, due[-1])
            if top + 1 < len(cfg.steps_s):
                t = fire_at + cfg.steps_s[top + 1]
                nxt = t if nxt is None else min(nxt, t)
        for key, base in list(self._lane.items()):
            top, first = self._steps.get(key, (-1, base.at))
            due = [n for n, off in enumerate(cfg.steps_s) if first + off - cfg.steps_s[0] <= now]
            if due and due[-1] > top:
                waited = duration(now - first)
                alert = msgspec.structs.replace(base, step=due[-1], at=now,
                                                message=f"{base.message} (still so after {waited}; reminder {due[-1]} of {len(cfg.steps_s) - 1})")
                await self._claim_and_send(alert)
                top = self._steps.get(key, (top, first))[0]
            if top + 1 < len(cfg.steps_s):
                t = first + cfg.steps_s[top + 1] - cfg.steps_s[0]
                nxt = t if nxt is None else min(nxt, t)
            else:
                self._lane.pop(key, None)
        return nxt

    async def close(self) -> None:
        """Stop: deliveries in flight stay ``pending`` in the store and resume at the next start."""
        self._closed = True
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for t in self._chat_tasks:
            t.cancel()
        if self._chat_tasks:
            await asyncio.gather(*self._chat_tasks, return_exceptions=True)
        self._chat_tasks = []
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def start(core: Hookd, config: NotifyConfig) -> tuple[Notifier, asyncio.Task[None]]:
    """Attach a Notifier to ``core`` (``core.notifier``) and start its rules task."""
    n = Notifier(core, config)
    core.attach_notifier(n)
    return n, asyncio.create_task(n.run())


async def raise_alert(core: Hookd, alert: Alert, *, escalate: bool = True) -> bool:
    """Raise ``alert`` through the daemon's notifier (see :meth:`Notifier.raise_alert`);
    False when none is running (tests, replay) or the step was already sent."""
    n = core.notifier
    return False if n is None else await n.raise_alert(alert, escalate=escalate)


async def clear(core: Hookd, key: str) -> None:
    """End subject ``key`` (see :meth:`Notifier.clear`); nothing when no notifier runs."""
    n = core.notifier
    if n is not None:
        await n.clear(key)
