"""Held hooks: a PermissionRequest hook waits for a remote answer (its interaction's waiter,
:class:`hookd.core.state.Waiters`), is let go by an answer, the desk, its own end or a
timeout, and comes back after a daemon restart (:meth:`Holds.reattach`).

While a hook is held for a prompt whose tool runs as a child process (a Bash command), the
agent's children are looked at (:mod:`hookd.core.procs`, off the event loop, outside any
transaction): the tool running proves the desk allowed it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from hookd.core.bus import EventBus, write_publish
from hookd.core.outcomes import hook_body, remote_answers, session_remote, supersede
from hookd.core.procs import child_running, process_alive
from hookd.core.state import DaemonStopping, HookCache, Waiters
from hookd.harness.base import RemoteAnswers
from hookd.models import DECISION_KINDS, Interaction, resolved_event
from hookd.store import Store, Tx

log = logging.getLogger("hookd")

#: How often (seconds) the agent's child processes are looked at while a hook is held for a
#: prompt whose tool runs as one (:meth:`Holds._watch_tool_start`).
TOOL_WATCH_S = 0.25


#: Seconds an agent is given to exit after its held hook went away before that is taken for
#: the desk's Esc or No (a desk dismissal shows that much later off the desk)
AGENT_GONE_S = 3.0
#: Seconds between two looks at the agent's process meanwhile
AGENT_GONE_STEP_S = 0.05
#: Seconds a daemon gives the hooks an earlier one held to come back (``X-Hookd-Hold``: the
#: client retries every 100 ms until its deadline) before it says which prompts none came
#: back for (:meth:`Holds.unreturned`)
HOLD_RETURN_S = 5.0


async def _gone_within(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``timeout`` seconds; each look
    (psutil, /proc) off the event loop."""
    deadline = time.monotonic() + timeout
    while await asyncio.to_thread(process_alive, pid, None):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(AGENT_GONE_STEP_S)
    return True


class Holds:
    """Held PermissionRequest hooks over ``store``: ``bus`` publishes their outcomes, ``waiters``
    are the hooks held now, ``cache.pids`` the agents' pids (whose children are watched).
    ``stopping(builder)``: whether `hookd stop` is ending that builder's agent now
    (:meth:`hookd.core.runs.Runs.stopping_builder`): its held hooks go away with it, which
    dismisses nothing (the stop closes what its sessions left pending ``orphaned``)."""

    def __init__(self, store: Store, bus: EventBus, waiters: Waiters, cache: HookCache,
                 stopping: Callable[[str], bool]):
        self.store = store
        self.bus = bus
        self.waiters = waiters
        self.cache = cache
        self.stopping = stopping

    async def reattach(self, iid: str, builder: str) -> tuple[str, asyncio.Future[bytes]] | None:
        """A PermissionRequest hook already stored (its delivery id is known) comes back,
        after the daemon that held it stopped, asking to wait on interaction ``iid`` again
        (header ``X-Hookd-Hold``). Returns (iid, its waiter) for :meth:`hold` when ``iid`` is
        ``builder``'s question or permission prompt and still waits for an answer, or has a
        remote answer no hook returned yet; else None (the hook gets an empty reply)."""
        i = await self.store.interaction(iid)
        if i is None or i.builder != builder or i.kind == "async":
            return None
        if not (i.state == "pending" or (i.state == "answered" and i.received_at is not None and i.delivered_at is None)):
            return None
        log.info("held PermissionRequest hook for %s is back after a restart", iid)
        waiter = self.waiters.register(iid)
        await write_publish(self.store, self.bus, self._hold_tx, iid, "hold_resumed", None, time.time())
        return iid, waiter

    async def hold(self, iid: str, fut: asyncio.Future[bytes], timeout_s: float,
                   disconnected: Awaitable[Any]) -> bytes:
        """Hold a PermissionRequest hook for interaction ``iid`` until a remote answer (returns
        the decision JSON), the desk resolves it (b""), the hook goes away (Esc / No at the
        desk: Claude Code SIGTERMs it; the interaction ends ``dismissed``), or ``timeout_s``
        seconds pass (b"": the prompt stays open at the desk). Event-driven. A decision
        returned is not delivered yet: the caller sends it, then says whether the hook read
        it (:meth:`reply_read`). While it holds, a tool whose run shows before it ends (a Bash
        command: :meth:`_watch_tool_start`) proves the desk allowed it. Raises DaemonStopping
        when the daemon stops meanwhile, or has begun to."""
        disc = asyncio.ensure_future(disconnected)
        watch: asyncio.Future[None] | None = None
        try:
            if self.waiters.stopping:
                raise DaemonStopping(iid)
            i = await self.store.interaction(iid)
            if i is None:
                return b""
            # the session's harness renders the reply and says which tools run as a process
            remote = remote_answers(await self.store.session_harness(i.session_id) if i.session_id else None)
            if remote is None:
                return b""  # (a desk-only harness: none of its hooks is held)
            if i.state == "answered" and i.received_at is not None and i.delivered_at is None:
                body = hook_body(i, remote)  # answered before this hook arrived
            elif i.state != "pending":
                return b""
            else:
                if i.kind == "permission" and i.tool_name in remote.child_process_tools:
                    watch = asyncio.ensure_future(self._watch_tool_start(i, remote))
                done, _ = await asyncio.wait({fut, disc}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
                if fut not in done:
                    if disc in done:
                        self.waiters.discard(iid, fut)  # (no answer goes to a hook that is gone while its agent is watched)
                        await self._hook_gone(iid, i.session_id, time.time())
                    else:  # its hold is over: the prompt stays open at the desk, only there answered
                        self.waiters.discard(iid, fut)  # (before the event: a read it wakes sees held false)
                        await write_publish(self.store, self.bus, self._hold_tx, iid, "hold_ended", "deadline",
                                            time.time())
                    return b""
                body = fut.result()
                if not body:
                    return b""
                if disc.done():
                    await self._hook_gone(iid, i.session_id, time.time())
                    return b""
            return body
        finally:
            self.waiters.discard(iid, fut)
            if fut.done() and not fut.cancelled():
                fut.exception()  # (a DaemonStopping never looked at is not an error)
            disc.cancel()
            if watch is not None:
                watch.cancel()

    async def _watch_tool_start(self, i: Interaction, remote: RemoteAnswers) -> None:
        """Claude Code 2.1.332 does nothing to a held PermissionRequest hook when the desk
        allows the tool (no signal, no transcript row, no other hook until the tool's
        PostToolUse: docs/harness-claude-code.md), and a Bash command may run for minutes.
        What shows at once is the command's process, a child of the agent's
        (``remote.runs_tool``, the session's harness's): seen while the hook is held, the
        desk allowed it. The agent's
        children are looked at every TOOL_WATCH_S seconds (off the event loop) while the hook
        is held; nothing is watched without the agent's pid (``CLAUDE_PID``)."""
        pid = self.cache.pids.get(i.session_id) if i.session_id else None
        if pid is None:
            return
        before: set[int] | None = None  # the agent's children at the first look
        try:
            while True:
                argv, kids = await asyncio.to_thread(child_running, pid, i.created_at, before, i.tool_name, i.input,
                                                     remote.runs_tool)
                if argv is not None:
                    await write_publish(self.store, self.bus, self._desk_allowed_tx, i.id, time.time())
                    return
                if before is None:
                    before = kids
                await asyncio.sleep(TOOL_WATCH_S)
        except Exception:
            log.exception("watching %s's tool process failed; its PostToolUse will resolve it", i.id)

    def _desk_allowed_tx(self, tx: Tx, iid: str, at: float) -> None:
        """The held prompt's tool is running: the desk allowed it. Resolved ``answered`` /
        ``allow`` by ``terminal`` now (its PostToolUse attaches the tool_use_id later), and the
        held hook is let go with no decision (Claude Code no longer reads it)."""
        i = tx.interactions.interaction(iid)
        if i is None or i.state != "pending":
            return
        if not tx.interactions.resolve_interaction(iid, expected_state="pending", state="answered", answers=None,
                                      selections=None, surface="terminal", warning=None, error=None, at=at,
                                      decision="allow"):
            return
        data: dict[str, Any] = {"id": iid, "kind": i.kind, "tool_name": i.tool_name, "tool_use_id": None,
                                "outcome": "answered", "decision": "allow", "surface": "terminal",
                                "inferred_from": "tool running"}
        if i.agent_id:
            data["agent_id"] = i.agent_id
        tx.append_event("permission_resolved", i.builder, i.session_id, at, data)
        self.waiters.release_after(tx, iid)

    async def unreturned(self, started_at: float, return_s: float = HOLD_RETURN_S) -> list[str]:
        """Once ``return_s`` seconds have passed since this daemon began serving: each prompt
        (a decision's kind: permission, plan, elicitation) pending from before ``started_at``
        (UNIX seconds), of a harness whose hooks are held, that no held hook came back for, is
        said to be answered at the desk only (``hold_ended``, reason ``restart``). The daemon
        before stopped without letting its held hooks go (killed, a crash, a power cut): their
        clients ended and the prompts went to the desk, and nothing else would say so to what
        reads only the events (the hub's questions, whose answers the host would refuse).
        A prompt already said so (its last hold event ``hold_ended``) is not said again.
        Returns the ids said so."""
        await asyncio.sleep(return_s)
        said: list[str] = []
        try:
            for i in await self.store.interactions("pending", 100_000):
                if i.kind not in DECISION_KINDS or i.created_at >= started_at or self.holding(i.id):
                    continue
                if remote_answers(await self.store.session_harness(i.session_id) if i.session_id else None) is None:
                    continue  # (a desk-only harness: none of its hooks is ever held)
                if await self.store.last_hold_event(i.id, i.builder) == "hold_ended":
                    continue
                await write_publish(self.store, self.bus, self._hold_tx, i.id, "hold_ended", "restart", time.time())
                said.append(i.id)
        except Exception:  # (the store unavailable: the page and the CLI still read `held` live)
            log.exception("after the restart: saying which prompts no held hook came back for failed")
        if said:
            log.info("%d prompt(s) no held hook came back for after the restart: answered at the desk only", len(said))
        return said

    def holding(self, iid: str) -> bool:
        """Is a held hook waiting for interaction ``iid`` now (a remote answer reaches it)?"""
        return self.waiters.waiting(iid)

    async def reply_read(self, iid: str, read: bool | None) -> None:
        """A held hook was sent the remote answer to ``iid`` (:meth:`hold`): ``read`` True when
        its client read the whole reply and closed (``answer_delivered``, via
        PermissionRequest); False when it went away leaving it unread (Esc or No at the desk
        SIGTERMs it; a reply it cannot take: :meth:`_hook_gone_tx`); None when that is not
        known (the daemon closed first): nothing is recorded, the tool's own hooks settle it."""
        if read:
            await write_publish(self.store, self.bus, self._hook_delivered_tx, iid, time.time())
        elif read is False:
            at = time.time()
            i = await self.store.interaction(iid)
            await self._hook_gone(iid, i.session_id if i is not None else None, at)

    async def _hook_gone(self, iid: str, session_id: str | None, at: float) -> None:
        """The held hook for ``iid`` went away at ``at`` (UNIX seconds) before its prompt
        closed: Esc or No at the desk, which SIGTERMs it (:meth:`_hook_gone_tx`), unless the
        agent goes too. Claude Code 2.1.332 SIGTERMs its held hook as it exits (its terminal
        closed, a SIGTERM: tests/e2e/test_agent_gone_e2e.py), and that is no one's answer: the
        session's agent (its pid, as its hooks told it) is watched up to :data:`AGENT_GONE_S`
        seconds, and gone by then, nothing is recorded here (the agent's end closes the prompt
        ``orphaned``: the lanes' liveness, a run's exit). Without a known pid, at once."""
        pid = self.cache.pids.get(session_id) if session_id else None
        self.waiters.watched.add(iid)
        try:
            if pid is not None and await _gone_within(pid, AGENT_GONE_S):
                log.info("held hook for %s went away with its agent (pid %s): not a dismissal", iid, pid)
                return
            await write_publish(self.store, self.bus, self._hook_gone_tx, iid, at)
        finally:
            self.waiters.watched.discard(iid)

    def _hold_tx(self, tx: Tx, iid: str, kind: str, reason: str | None, at: float) -> None:
        """``hold_resumed`` (a held hook back after a restart) or ``hold_ended`` (its hold is
        over, ``reason`` ``deadline``: the client's deadline less the margin; ``restart``: no
        held hook came back after a restart, :meth:`unreturned`) for a pending
        interaction: whether a remote answer reaches the agent changed (``held`` in
        ``GET /v1/questions``), with no other event to say so."""
        i = tx.interactions.interaction(iid)
        if i is None or i.state != "pending":
            return
        data: dict[str, Any] = {"id": iid, "kind": i.kind}
        if reason is not None:
            data["reason"] = reason
        tx.append_event(kind, i.builder, i.session_id, at, data)

    def _hook_delivered_tx(self, tx: Tx, iid: str, at: float) -> None:
        i = tx.interactions.interaction(iid)
        if i is None:
            return
        if i.adopted_at is not None and i.adopted_at < at:
            # the client read the reply before the tool ran: the tool's own hook adopting the
            # answer was taken first, its client's close seen after (a busy daemon)
            at = i.adopted_at
        # the held hook, as the session's harness names it for this kind of interaction (only a
        # harness with remote answers holds a hook)
        remote = session_remote(tx, i)
        via = remote.hold_events.get(i.kind, "held hook") if remote is not None else "held hook"
        if not tx.interactions.mark_answer_delivered(iid, via=via, at=at):
            return
        tx.append_event("answer_delivered", i.builder, i.session_id, at, {"id": iid, "kind": i.kind, "via": via})
        moved_on = tx.interactions.moved_on(iid) if i.decision == "deny" and i.adopted_at is None else None
        if moved_on is not None and tx.interactions.mark_adopted(iid, at):
            # the turn went on past this deny before its read was recorded (the two hooks'
            # connections taken out of order): that turn's hook is the proof, as when it
            # comes after (hookd.core.questions.Questions.close_open_questions)
            tx.append_event("answer_adopted", i.builder, i.session_id, at, {
                "id": iid, "kind": i.kind, "via": moved_on[1], "tool_use_id": None,
            })

    def _hook_gone_tx(self, tx: Tx, iid: str, at: float) -> None:
        """The held hook went away before the prompt closed: Claude Code SIGTERMs it when the
        desk presses Esc or No. Nothing when `hookd stop` is ending the agent (``stopping``):
        the hook went with it, and the stop closes the prompt ``orphaned``."""
        i = tx.interactions.interaction(iid)
        if i is None or self.stopping(i.builder):
            return
        if i.state == "pending":
            warning = ("the held Elicitation hook was cancelled (its timeout, or the tool call ended)"
                       if i.kind == "elicitation" else
                       "the held PermissionRequest hook was cancelled (SIGTERM): Esc or No at the desk")
            if tx.interactions.resolve_interaction(iid, expected_state="pending", state="dismissed", answers=None,
                                      selections=None, surface="terminal", warning=warning, error=None, at=at):
                tx.append_event(resolved_event(i.kind), i.builder, i.session_id, at, {
                    "id": iid, "kind": i.kind, "tool_use_id": i.tool_use_id, "outcome": "dismissed",
                    "answers": None, "selections": None, "surface": "terminal", "warning": warning,
                    "inferred_from": "hook cancelled",
                })
        elif i.state == "answered" and i.received_at is not None and i.delivered_at is None:
            supersede(tx, i, at, state="dismissed", answers=None, selections=None, decision=None,
                            error=None, reason="the held hook ended without reading the remote answer"
                            " (Esc or No at the desk as it arrived)")
