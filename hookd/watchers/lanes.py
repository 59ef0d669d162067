"""Lanes kept current: :class:`LaneWatch` recomputes each builder's lane
(:func:`hookd.watchers.lane_state.derive`, where the states are described) after commits and
at due times, records them and emits ``lane_changed``; :class:`LaneAlerts` notifies what a
lane's change calls for (DESIGN.md "Stall detection and notification"; issue 6).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from hookd.config import BUILDER_ID_RE
from hookd.harness.registry import ADAPTERS
from hookd.core.bus import BusFilter
from hookd.models import Event, StorageUnavailable
from hookd.settings import Settings
from hookd.watchers.exits import ExitWatch, agent_alive
from hookd.watchers.lane_state import IDLE_INBOX_AFTER_S, QUESTION_AFTER_S, Lane, derive

log = logging.getLogger("hookd")

#: Longest stretch (seconds) of lane work between two turns of the event loop (10,000 lanes
#: must not hold hooks back: bench/lanes.py) ... and at most this many lanes.
TURN_S = 0.002
TURN_LANES = 200
#: Seconds the watch waits after a commit before it refreshes the lanes it touched (a burst of
#: hooks is one refresh) ...
DEBOUNCE_S = 0.05
#: ... and at least this long after its last refresh: while hooks keep coming a lane changes
#: within a second, whatever their rate (a refresh per hook was about half of the daemon's
#: CPU per hook beside the hook path: bench/daemon_cpu.py, docs/benchmarks.md).
REFRESH_GAP_S = 1.0
#: Most lanes recorded in one transaction.
WRITE_CHUNK = 100
#: The hooks (:data:`hookd.harness.base.HookKind`) that leave a ``working`` lane ``working``
#: (:meth:`LaneWatch.wants`: a commit of nothing else does not wake the watch).
TOOL_KINDS: frozenset[str | None] = frozenset({"tool_before", "tool_after"})
#: A live agent's process is checked in full (start time, zombie) every this many liveness
#: sweeps; in between only that its pid exists (LaneWatch.sweep).
FULL_CHECK_SWEEPS = 5


def _spawned(builders_dir: Any) -> list[str]:
    """The builders with a spawn manifest (``builders/<id>.json``), by file name."""
    try:
        return [e.name[:-5] for e in os.scandir(builders_dir) if e.name.endswith(".json") and BUILDER_ID_RE.match(e.name[:-5])]
    except FileNotFoundError:
        return []


class LaneWatch:
    """Keeps every builder's lane current: recomputes after commits (debounced), when a
    threshold passes and, for live agents, every ``liveness_s`` seconds (psutil); records the
    lane and emits ``lane_changed`` on change; a lane newly found ``dead`` has its session's open
    prompts closed ``orphaned`` (:meth:`hookd.core.policy.Policy.orphan`). ``on_change(old,
    lane)`` is called after the commit (the notifier's hook). core: :class:`hookd.core.Hookd`. settings: its
    ``liveness_s`` and ``quiet_idle_s`` (seconds; default :class:`hookd.settings.Settings`'
    defaults)."""

    def __init__(self, core: Any, on_change: Callable[[str | None, Lane], Any] | None = None, *,
                 question_after_s: float = QUESTION_AFTER_S, idle_inbox_after_s: float = IDLE_INBOX_AFTER_S,
                 settings: Settings | None = None):
        settings = settings if settings is not None else Settings()
        self.core = core
        #: seconds between liveness checks of live agents' processes (psutil; a few pids)
        self.liveness_s = settings.liveness_s
        #: seconds after a tool's Post hook that a lane of a ``quiet_idle`` harness is taken as idle
        self.quiet_idle_s = settings.quiet_idle_s
        self.on_change = on_change
        self.question_after_s = question_after_s
        self.idle_inbox_after_s = idle_inbox_after_s
        self._known: dict[str, tuple[str, str | None]] = {}  # builder -> (state, session) recorded
        self._recorded: dict[str, tuple[str, float]] | None = None  # builder -> (state, since) recorded
        # (pid, start time) -> (alive, time.monotonic() it was last seen so, of the last full
        # check): a lane's agent is checked at most once per liveness_s (the watch's sweep keeps
        # live agents' fresh), not once per lane per request
        self._liveness: dict[tuple[int, float | None], tuple[bool | None, float, float]] = {}
        self._agents: dict[str, tuple[int, float | None]] = {}  # builder -> its current agent's (pid, start)
        self._harness: dict[str, str] = {}  # builder -> its current session's harness (the adapter's name)
        #: a refresh has read the store and not yet recorded what it found: every commit wakes
        #: the watch (what it read may be older than the lanes :meth:`wants` judges by)
        self._busy = False
        #: a refresh the store refused waits to be tried again (after the next commit, any)
        self._retrying = False
        #: live agents' exits, from the kernel (no sweep for them); the builders whose agent
        #: exited since the last refresh; the bus view :meth:`run` waits on (woken by an exit)
        self._exits = ExitWatch(agent_alive, self._exited)
        self._gone: set[str] = set()
        self._view: BusFilter | None = None

    async def builders(self) -> list[str]:
        """Every builder seen (a hook came) or spawned (a manifest: its file name, listed in a
        thread, not read: 10,000 manifests are not decoded for a lane)."""
        names = set(await self.core.store.builders())
        names.update(await asyncio.to_thread(_spawned, self.core.home.builders_dir))
        return sorted(names)

    def _alive(self, pid: int | None, started_at: float | None) -> bool | None:
        """:func:`agent_alive`, as checked within the last ``liveness_s`` seconds, or alive while
        its exit is watched (:class:`ExitWatch`: from when it is found alive, while :meth:`run`)."""
        if not pid:
            return None
        if self.core.runs.stopping_pid(pid):
            return None  # `hookd stop` is ending it: the stop records the end (lane ended), not a death
        key = (pid, started_at)
        if self._exits.watching(key):
            return True
        hit = self._liveness.get(key)
        now = time.monotonic()
        if hit is not None and now - hit[1] < self.liveness_s:
            return hit[0]
        alive = self._exits.check(key, watch=self._view is not None)  # (only while the watch runs)
        self._liveness[key] = (alive, now, now)
        return alive

    def _exited(self, agent: tuple[int, float | None]) -> None:
        """A watched agent's process has exited: its builders' lanes are recomputed now."""
        now = time.monotonic()
        self._liveness[agent] = (False, now, now)
        self._gone.update(b for b, a in self._agents.items() if a == agent)
        if self._view is not None:
            self._view.wake()

    async def sweep(self, builders: list[str]) -> list[str]:
        """Check the agents of ``builders`` (their current sessions' processes) again, a few
        milliseconds of work per turn of the event loop; returns the builders whose agent is
        gone (their lanes to recompute). An agent checked in full (:func:`agent_alive`: the
        process, its start time against pid reuse, not a zombie) within the last
        FULL_CHECK_SWEEPS sweeps is only asked whether its pid still exists (``kill(pid, 0)``,
        a microsecond: 10,000 live agents every ``liveness_s`` cost ~10 ms, not a second)."""
        gone = []
        t = time.perf_counter()
        now = time.monotonic()
        for b in builders:
            agent = self._agents.get(b)
            if agent is None:
                continue
            hit = self._liveness.get(agent)
            if hit is None or not hit[0] or now - hit[2] >= FULL_CHECK_SWEEPS * self.liveness_s:
                self._liveness.pop(agent, None)
                alive = self._alive(*agent)
            else:
                try:
                    os.kill(agent[0], 0)
                    alive = True
                except ProcessLookupError:
                    alive = False
                except OSError:  # (another user's process: it exists)
                    alive = True
                self._liveness[agent] = (alive, now, hit[2] if alive else now)
            if alive is False:
                gone.append(b)
            if time.perf_counter() - t >= TURN_S:
                await asyncio.sleep(0)  # hooks waiting are answered
                t = time.perf_counter()
        horizon = now - 10 * self.liveness_s
        for key in [k for k, hit in self._liveness.items() if hit[1] < horizon]:
            del self._liveness[key]  # (agents long gone: checked again if ever asked)
        return gone

    async def compute(self, builders: list[str] | None = None, now: float | None = None) -> list[Lane]:
        """The current lanes of ``builders`` (None: all), their ``since`` settled against the
        recorded lanes: a lane still in its recorded state keeps the time that state began
        (``dead`` is only known from the check that saw it), and a new state never began
        before the one it replaced (then: now)."""
        clock = self.core.store.clock
        mono = clock.mono() if now is None else None
        now = clock.wall() if now is None else now
        inputs = await self.core.store.lane_inputs(builders if builders is not None else await self.builders())
        if self._recorded is None:
            self._recorded = {b: (st, since) for b, (st, since, _, _) in (await self.core.store.lanes()).items()}
        lanes = []
        t = time.perf_counter()
        for n, d in enumerate(inputs, 1):  # a few milliseconds per turn of the event loop, whatever the fleet's size
            s = d["session"]
            if s is not None and s["agent_pid"]:
                self._agents[d["builder"]] = (s["agent_pid"], s["agent_started_at"])
            else:
                self._agents.pop(d["builder"], None)
            if s is not None and s.get("harness"):
                self._harness[d["builder"]] = s["harness"]
            lane = derive(d, now, self._alive, question_after_s=self.question_after_s,
                          idle_inbox_after_s=self.idle_inbox_after_s, quiet_idle_s=self.quiet_idle_s, mono=mono)
            rec = self._recorded.get(lane.builder)
            if rec is not None:
                if rec[0] == lane.state:
                    lane.since = rec[1]
                elif lane.since < rec[1]:
                    lane.since = now
            lanes.append(lane)
            if n % TURN_LANES == 0 or time.perf_counter() - t >= TURN_S:
                await asyncio.sleep(0)  # hooks waiting are answered
                t = time.perf_counter()
        return lanes

    async def refresh(self, builders: list[str] | None = None) -> list[Lane]:
        """Recompute the lanes of ``builders`` (None: all); record and announce the ones that
        changed. Returns the recomputed lanes."""
        lanes = await self.compute(builders)
        if not self._known:
            self._known = {b: (st, sid) for b, (st, _, sid, _) in (await self.core.store.lanes()).items()}
        changed = [lane for lane in lanes if self._known.get(lane.builder) != (lane.state, lane.session_id)]
        if changed:
            at = time.time()

            def tx_fn(tx: Any, part: list[Lane]) -> list[tuple[str | None, Lane]]:
                out = []
                for lane in part:
                    old = tx.sessions.lane(lane.builder)
                    tx.sessions.save_lane(lane.builder, lane.state, lane.since, lane.session_id, lane.detail)
                    if old is None or old[0] != lane.state:
                        tx.append_event("lane_changed", lane.builder, lane.session_id, at, {
                            "from": old[0] if old else None, "to": lane.state, "since": lane.since,
                            "detail": lane.detail, "pending": lane.pending, "queued": lane.queued,
                            **({"waiting_since": lane.waiting_since, "waited": lane.waited}
                               if lane.waiting_since is not None else {}),
                        })
                    out.append((old[0] if old else None, lane))
                return out

            result, events = [], []
            for i in range(0, len(changed), WRITE_CHUNK):  # short transactions: hooks commit in between
                part = changed[i:i + WRITE_CHUNK]
                r, evs = await self.core.store.write(tx_fn, part)
                result += r
                events += evs
                for lane in part:
                    self._known[lane.builder] = (lane.state, lane.session_id)
                    assert self._recorded is not None
                    self._recorded[lane.builder] = (lane.state, lane.since)
            if events:
                await self.core.bus.publish(events)
            await self.orphan_dead([lane for old, lane in result if old != "dead"])
            if self.on_change is not None:
                for old, lane in result:
                    if old != lane.state:
                        try:
                            r = self.on_change(old, lane)
                            if asyncio.iscoroutine(r):
                                await r
                        except Exception:
                            log.exception("lane change handler failed")
        return lanes

    async def orphan_dead(self, lanes: list[Lane]) -> None:
        """The agent of each ``dead`` lane is gone: what its session asked leaves the humans'
        queue (closed ``orphaned``), and the answers kept for it go to the builder's next
        session (:meth:`hookd.core.policy.Policy.orphan`)."""
        for lane in lanes:
            if lane.state == "dead" and lane.session_id and (lane.pending or lane.queued):
                await self.core.orphan(lane.builder, lane.session_id, f"pid {lane.agent_pid} is gone")

    def wants(self, events: Sequence[Event]) -> bool:
        """Whether a commit that appended ``events`` may change a lane (called in the
        publisher's turn: no I/O): anything but the watch's own ``lane_changed`` and a tool call
        (:data:`TOOL_KINDS`) in the session of a lane recorded ``working`` whose agent pid is
        known (only its ``since`` and detail move; :meth:`compute` gives those fresh). Always: a
        quiet-idle harness's ``tool_after`` (it sets when the lane goes idle), every commit while
        a refresh is between its read and its record, or one the store refused waits."""
        if all(e.kind == "lane_changed" for e in events):
            return False
        if self._busy or self._retrying:
            return True
        for e in events:
            if e.kind == "lane_changed":
                continue
            b = e.builder
            if e.kind != "hook_received" or not b or self._known.get(b) != ("working", e.session_id) or b not in self._agents:
                return True
            adapter = ADAPTERS.get(self._harness.get(b, ""))
            name = e.data.get("hook_event_name") if isinstance(e.data, dict) else None
            kind = adapter.hook_kinds.get(name) if adapter is not None and isinstance(name, str) else None
            if kind not in TOOL_KINDS or (kind == "tool_after" and adapter is not None and adapter.quiet_idle):
                return True
        return False

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: after commits, refresh the builders whose events they added
        (:data:`DEBOUNCE_S` after the commit, :data:`REFRESH_GAP_S` after the last refresh at
        the earliest); at a lane's due time, and every ``liveness_s`` for lanes with a live agent,
        refresh those; otherwise sleep."""
        bus = self._view = self.core.bus.filtered(self.wants)
        try:
            await self._run(stop, bus)
        finally:
            self.core.bus.unfilter(bus)
            self._view = None
            self._exits.close()

    async def _run(self, stop: asyncio.Event, bus: Any) -> None:
        lanes: dict[str, Lane] = {}
        seq: int | None = None  # the last event seen; None until the first refresh of all lanes
        clock = self.core.store.clock
        next_live = clock.wall() + self.liveness_s
        retry: set[str] = set()  # builders whose refresh the store refused
        last = 0.0  # time.monotonic() of the last refresh after a wake
        # the bus's version before the events were last read: a commit after that read wakes the
        # next wait at once (one taken while a refresh wrote is not missed until the next commit)
        version = bus.version
        while not stop.is_set() and not bus.closed:
            if seq is None:
                self._busy = True
                try:
                    version = bus.version
                    first = (await self.core.store.counts())["events"]  # append-only: the count is the last seq
                    lanes = {lane.builder: lane for lane in await self.refresh()}
                    seq = first  # (events committed during that refresh are read again next: harmless)
                    await self.orphan_dead(list(lanes.values()))  # (found dead before a restart)
                except StorageUnavailable:  # (the store says so) again after the next commit
                    pass
                finally:
                    self._busy = False
                    self._retrying = seq is None
                if seq is None:
                    await bus.wait(3600.0, since=bus.version)
                    continue
            now = clock.wall()
            dues = [lane.due for lane in lanes.values() if lane.due is not None]
            # agents whose exit the kernel does not tell, checked every liveness_s (in _agents: its
            # pid may have been read by a GET /v1/lanes since this copy of its lane)
            live = [b for b, lane in lanes.items() if (lane.agent_pid or b in self._agents)
                    and lane.state not in ("ended", "dead") and not self._exits.watching(self._agents.get(b))]
            wake = min([*dues, next_live if live else now + 3600.0])
            await bus.wait(max(0.0, wake - now), since=version)
            if bus.version != version:
                # after a commit, debounce: one refresh for a burst of hooks, and at most one
                # per REFRESH_GAP_S while hooks keep coming (an agent's tool calls back to
                # back); a due time or the liveness sweep is acted on at once (no second wake-up)
                await asyncio.sleep(max(DEBOUNCE_S, last + REFRESH_GAP_S - time.monotonic()))
            last = time.monotonic()
            dirty, retry = retry, set()
            self._busy = True
            try:
                version = bus.version
                seq, touched = await self.core.store.changed_builders(seq)
                dirty |= touched | self._gone
                self._gone = set()
                now = clock.wall()
                dirty.update(b for b, lane in lanes.items() if lane.due is not None and lane.due <= now)
                if live and now >= next_live:
                    dirty.update(await self.sweep(live))  # only lanes whose agent is gone are recomputed
                    next_live = now + self.liveness_s
                if dirty:
                    for lane in await self.refresh(sorted(dirty)):
                        lanes[lane.builder] = lane
                    dirty = set()
            except StorageUnavailable:
                retry = dirty  # (the store logs the outage once) refreshed after the next commit
            except Exception:
                log.exception("lane refresh failed")
            finally:
                self._busy = False
                self._retrying = bool(retry)


class LaneAlerts:
    """Lane rules of detect-and-notify (issue 6): ``agent_failed`` once when an API error
    stopped the agent (issue 21; one step), ``agent_dead`` at once when the agent is gone
    with a question or permission prompt pending (one step: nothing to remind), and
    ``idle_with_messages`` with escalation while an idle lane holds queued messages past the
    threshold. Cleared when the lane leaves that state. Pending questions themselves are the
    notifier's interaction rule. notify: the daemon's :class:`hookd.watchers.notify.Notifier` or None."""

    def __init__(self, notifier: Any):
        self.notifier = notifier
        self._raised: dict[str, str] = {}  # builder -> alert key

    async def __call__(self, old: str | None, lane: Lane) -> None:
        from hookd.watchers.notify_channels import Alert

        if self.notifier is None:
            return
        key = self._raised.pop(lane.builder, None)
        if key is not None:
            await self.notifier.clear(key)
        if lane.failure is not None and lane.state in ("failed", "stalled"):
            key = f"lane:{lane.builder}:agent_failed:{lane.since:.3f}"  # once per failure
            alert = Alert(key=key, rule="agent_failed", builder=lane.builder, session_id=lane.session_id,
                          title=f"hookd: {lane.builder}'s agent stopped: {lane.failure}",
                          message=f"{lane.builder}: {lane.detail}.",
                          data={"error": lane.failure, "state": lane.state, "detail": lane.detail})
            await self.notifier.raise_alert(alert, escalate=False)
        elif lane.state == "dead" and lane.pending:
            key = f"lane:{lane.builder}:agent_dead:{lane.since:.0f}"
            alert = Alert(key=key, rule="agent_dead", builder=lane.builder, session_id=lane.session_id,
                          title=f"hookd: {lane.builder}'s agent is gone with a question open",
                          message=f"{lane.builder}: {lane.detail}. Open: {', '.join(lane.pending)}. "
                                  f"Restart the agent (answers given now wait in its inbox).",
                          data={"pending": lane.pending, "agent_pid": lane.agent_pid, "detail": lane.detail})
            await self.notifier.raise_alert(alert, escalate=False)
        elif lane.state == "stalled" and not lane.pending and lane.queued:
            key = f"lane:{lane.builder}:idle_with_messages:{lane.since:.0f}"
            alert = Alert(key=key, rule="idle_with_messages", builder=lane.builder, session_id=lane.session_id,
                          title=f"hookd: {lane.builder} is idle with {lane.queued} message(s) waiting",
                          message=f"{lane.builder}: {lane.detail}. They reach the agent at its next turn: "
                                  f"prompt it (or spawn with --wake-wait to wake idle agents).",
                          data={"queued": lane.queued, "detail": lane.detail})
            await self.notifier.raise_alert(alert)
        else:
            return
        self._raised[lane.builder] = key
