"""What `hookd send` is told beside its receipt (``note`` in ``POST /v1/builders/{b}/messages``'
reply): when the message just queued is not delivered at the agent's next turn boundary by
itself, what it waits for and the command that brings it about. Only commands that would be
taken: never ``hookd continue`` for a builder with no session to resume.

:func:`send_note` reads the store, the builder's lane and its spawn manifest (in a thread)."""

from __future__ import annotations

import asyncio
from typing import Any

from hookd.clock import when
from hookd.config import Home
from hookd.models import InboxMessage
from hookd.spawn import INSTALLS, read_manifest

#: the ``--wake-wait`` seconds `hookd send`'s note suggests (:func:`idle_note`)
WAKE_WAIT_HINT_S = 1800


async def send_note(core: Any, message: InboxMessage) -> str | None:
    """The note for ``message``, just queued (core: :class:`hookd.core.Hookd`), or None when
    the agent it is for takes it at its next turn boundary by itself.

    A message for a subagent: ``running`` (delivered at its next tool boundary), or finished
    (it waits for that subagent to be resumed; `hookd lanes` does not count it). One for a
    session that has ended: it waits for that session's resume (`hookd continue` only when it
    is the builder's newest). Else the builder's agent as its lane says (:func:`builder_note`)."""
    b, sid, agent = message.builder, message.session_id, message.agent_id
    if sid is None and agent is None:
        return await builder_note(core, b)
    scope = await core.store.message_scope(b, sid, agent)
    lane = await _lane(core, b)
    back = f"hookd inbox cancel {message.id} takes it back"
    if agent is not None:
        sub = scope["subagent"]
        if sub is None:
            return None  # (refused before it was queued; only a race with the store gets here)
        who = f"{b}'s subagent {agent}" + (f" ({sub['agent_type']})" if sub["agent_type"] else "")
        if sub["state"] == "running" and (lane is None or lane.state not in ("ended", "dead")):
            return f"{who} is running: the message is delivered at its next tool boundary (when its current tool call ends)"
        if sub["state"] == "running":  # (its session's agent is gone: no hook of it ended the subagent)
            return (f"{who} is not running ({b}'s agent is {lane.state}: {lane.detail}): the message is delivered"
                    f" only if that subagent is resumed ({back})")
        how = (f"it finished at {when(sub['ended_at'])}" if sub["end_reason"] == "stopped"
               else f"its session ended at {when(sub['ended_at'])}")
        return (f"{who} is not running ({how}): the message is delivered only if that subagent is resumed, and"
                f" hookd lanes does not count it ({back})")
    sess = scope["session"]
    if sess is None or sess["ended_at"] is None:
        if lane is not None and lane.session_id not in (None, sid):
            return None  # another live session of the builder: its own turns take it
        return await builder_note(core, b)
    ended = f"session {sid} of {b} ended at {when(sess['ended_at'])}"
    if sess["newest"]:
        return f"{ended}: the message is delivered when that session is resumed (hookd continue {b} resumes it)"
    return (f"{ended}: the message is delivered only when that session is resumed, and hookd lanes does not count it"
            f" for {b}'s current session (hookd continue {b} resumes its newest session, not this one; {back})")


async def _lane(core: Any, builder: str) -> Any:
    """``builder``'s lane now (:class:`hookd.watchers.lane_state.Lane`), None without the lanes."""
    if core.lanes is None:
        return None
    lanes = await core.lanes.compute([builder])
    return lanes[0] if lanes else None


async def builder_note(core: Any, builder: str) -> str | None:
    """What a message queued for ``builder``'s main agent waits for when no session of its
    agent runs (its lane ``ended`` or ``dead``, stopped by an API error in a session that then
    ended, or its run ended before its first hook): a new session, which `hookd continue`
    starts when there is a session to resume and `hookd run` when there is none; when its
    agent is ``idle`` at its prompt with no idle-wake hook: its next turn (:func:`idle_note`);
    else None."""
    lane = await _lane(core, builder)
    if lane is None:
        return None
    how = lane.state
    # idle at its prompt, or stalled so with messages it cannot receive (no question pending,
    # no API error)
    if (how in ("idle", "stalled") and lane.session_id is not None and lane.failure is None
            and not lane.pending):
        if core.waking(builder):
            return None  # its idle-wake hook waits: the message wakes it
        return await asyncio.to_thread(idle_note, core.home, builder)
    last = await core.store.last_session(builder)
    if how in ("ended", "failed") and lane.session_id is None:
        # its newest run ended before its first hook (hookd.watchers.lane_state): the detail says how
        how = lane.detail
        fix = "fix what stopped it, then " if lane.state == "failed" else ""
    elif how not in ("ended", "dead"):
        if lane.failure is None:
            return None
        # stopped by an API error: its lane says so, also once its session ended (claude -p)
        if last is None or last["session_id"] != lane.session_id or last["ended_at"] is None:
            return None
        how, fix = f"ended after an API error, {lane.failure}", ""
    else:
        fix = ""
    start = (f"{fix}hookd continue {builder} resumes the last one" if last is not None
             else f"it has had no session to resume: {fix}hookd run {builder} starts one")
    return (f"no session of {builder}'s agent is running ({how}): the message is delivered at the"
            f" first turn boundary of its next session ({start})")


def idle_note(home: Home, builder: str) -> str | None:
    """What a message waits for when ``builder``'s agent is idle at its prompt and no idle-wake
    hook of it waits (:meth:`hookd.core.inbox.Inbox.waking`): its next turn, which someone at
    its desk starts; and how to have hookd wake it, where its harness can
    (``HookInstall.wake``): the spawn command with ``--wake-wait`` and the restart that gives
    the running agent that hook, or, spawned with one, why it does not wait. None with no
    manifest. Reads the manifest: call in a thread."""
    from hookd.spawn.check import fix_command

    m = read_manifest(home, builder)
    if m is None:
        return None
    restart = f"hookd stop {builder} && hookd continue {builder}"
    install = INSTALLS.get(str(m.get("harness") or ""))
    if install is None or not install.wake:
        how = ""
    elif m.get("wake_wait_s"):
        how = (f"; its idle-wake hook is not waiting (it waits {m['wake_wait_s']} s after each turn, and an agent"
               f" started before it was spawned has none until restarted: {restart})")
    else:
        how = (f"; to have hookd wake it: {fix_command(home, {**m, 'wake_wait_s': WAKE_WAIT_HINT_S})},"
               f" then restart its agent: {restart}")
    return (f"{builder}'s agent is idle at its prompt: the message is delivered when its next turn begins"
            f" (someone types there){how}")
