"""A lane's state, derived: what each builder's agent is doing from its hooks, transcript rows,
its newest run and process liveness (DESIGN.md "Stall detection and notification"; issue 6).

States: ``working`` (its turn is running), ``waiting_question`` / ``waiting_permission`` (an
interaction of its session is pending), ``idle`` (its turn ended: a ``turn_end`` hook, or the
human interrupted it: field case B27, ``idle`` with detail ``interrupted``, never ``stalled``
for that), ``stalled`` (waiting longer than ``question_after_s``, or idle with inbox messages
queued longer than ``idle_inbox_after_s``: it cannot receive them; or its turn ended on a
transient API error: a rate limit, an overloaded server), ``failed`` (its turn ended on an API
error that needs a fix first: a login, billing, the model; or the agent hookd started exited
with an error before its first hook; the lane's ``failure`` names it, until the next hook),
``ended`` (a ``session_end`` hook; or hookd's run of it ended before its first hook), ``dead``
(the agent process is gone and no session end came). A hook's meaning is its ``hook_kind`` as
the store recorded it (the adapter's ``hook_kinds``, :data:`hookd.harness.base.HookKind`),
never its harness's name for it. :func:`derive` is pure but for the liveness it is handed;
:class:`hookd.watchers.lanes.LaneWatch` recomputes lanes with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from hookd.clock import span
from hookd.harness.registry import ADAPTERS
from hookd.models import PROMPT_KINDS
from hookd.settings import Settings
from hookd.watchers.exits import agent_alive

LANE_STATES = ("working", "waiting_question", "waiting_permission", "idle", "stalled", "failed", "ended", "dead")
#: Seconds a question or permission may wait before the lane is ``stalled`` (``[notify]
#: question_after_s``).
QUESTION_AFTER_S = 60.0
#: Seconds an idle lane may hold queued inbox messages before it is ``stalled``
#: (``[notify] idle_inbox_after_s``).
IDLE_INBOX_AFTER_S = 120.0
#: Kinds of hook (:data:`hookd.harness.base.HookKind`, as the store recorded them) after which
#: the agent's turn is over (the main agent).
_TURN_OVER = frozenset({"turn_end", "session_start", "session_end"})
#: The tunables' defaults (:class:`hookd.settings.Settings`), for :func:`derive`'s own default.
_DEFAULTS = Settings()

class Lane(msgspec.Struct, gc=False):
    """One builder's lane. since: UNIX seconds the state began (as far as hookd can tell);
    due: when it changes by itself (a threshold passes), or None; detail: why, in words;
    session_id: the session its state comes from (the first pending question's or permission
    prompt's while it waits on one, else the builder's current session), or None.
    (Not tracked by the garbage collector: a lane refers to no lane; 10,000 of them held by
    the watch must not lengthen every full collection, a pause of the hook path.)"""

    builder: str
    state: str
    since: float
    session_id: str | None
    detail: str
    pending: tuple[str, ...]
    queued: int
    agent_pid: int | None
    due: float | None = None
    #: the error that stopped the agent's turn (``failed``, or ``stalled`` for a transient one)
    failure: str | None = None
    #: the session's last tool call refused without asking anyone (auto mode's check), as a
    #: person reads it, and when (UNIX seconds); the detail ends with it
    refused: str | None = None
    refused_at: float | None = None
    #: the first line of the agent's last message to its human (PushNotification, or
    #: SendUserMessage in brief mode), and when (UNIX seconds); the detail ends with it
    notified: str | None = None
    notified_at: float | None = None
    #: the builder's running subagents (:class:`hookd.models.Subagent`: what each waits on),
    #: filled in by ``GET /v1/lanes`` (hookd.http.routes), never by :func:`derive`
    subagents: tuple[Any, ...] = ()
    #: the builder's hooks stopped working (hookd.core.hookhealth's warning: ``signal``,
    #: ``reason``, ``fix``, ``since``, ...), filled in by ``GET /v1/lanes``; None: they work
    hooks_changed: dict[str, Any] | None = None
    #: a wait the detail counts (a stalled question's, a stalled inbox's): when it began (UNIX
    #: seconds) and how long it was as the detail says it (``span``'s words): a copy of the
    #: detail read later (the hub's, from ``lane_changed``) says it as of then
    #: (:func:`detail_now`)
    waiting_since: float | None = None
    waited: str | None = None


def derive(d: dict[str, Any], now: float, alive: Callable[[int | None, float | None], bool | None] = agent_alive,
           question_after_s: float = QUESTION_AFTER_S, idle_inbox_after_s: float = IDLE_INBOX_AFTER_S,
           quiet_idle_s: float = _DEFAULTS.quiet_idle_s, mono: float | None = None) -> Lane:
    """The lane of one builder (:func:`_derive`), with the session's last tool call refused
    without asking anyone, if any (``refused``), and its agent's last message to its human
    (``notified``); the detail ends with each."""
    lane = _derive(d, now, alive, question_after_s, idle_inbox_after_s, quiet_idle_s, mono)
    s = d["session"]
    if s is not None and s.get("refused"):
        lane.refused, lane.refused_at = s["refused"], s["refused_at"]
        lane.detail += f"; last refused without asking: {s['refused']}"
    if s is not None and s.get("notified"):
        lane.notified, lane.notified_at = s["notified"], s["notified_at"]
        lane.detail += f"; the agent said: {s['notified']}"
    return lane


def _derive(d: dict[str, Any], now: float, alive: Callable[[int | None, float | None], bool | None],
            question_after_s: float, idle_inbox_after_s: float, quiet_idle_s: float, mono: float | None) -> Lane:
    """The lane of one builder from :meth:`hookd.store.Store.lane_inputs` data. Pure but for
    ``alive`` (injectable). Times in UNIX seconds; thresholds in seconds. mono: now on hookd's
    timeline (:meth:`hookd.clock.Clock.mono`): the hooks', questions' and messages' own
    timeline stamps then measure every threshold, so a wall-clock step moves only the times
    shown (``since``, ``due``: the wall clock's now less the time elapsed)."""
    failure = _failure(d)  # (wall times, compared before the timeline's shift)
    if mono is not None:
        d = _on_timeline(d, now - mono)
    b, s, hook = d["builder"], d["session"], d["last_hook"]
    sid = s["session_id"] if s else None
    # any session of the builder: a second session's activity never hides a first one's
    # question (field case B25)
    pending = [p for p in d["pending"] if p["kind"] in ("question", "permission", "plan", "elicitation")]
    base = {"builder": b, "session_id": sid, "pending": tuple(p["id"] for p in pending), "queued": d["queued"],
            "agent_pid": s["agent_pid"] if s else None}
    run = d.get("run")
    if (run is not None and run["stopped_at"] is not None and run["hooks"] == 0 and not pending
            and (s is None or run["started_at"] >= s["started_at"])):
        return _before_first_hook(run, base)
    if s is None:
        return Lane(state="idle", since=now, detail="no session yet", **base)
    last_at = hook["at"] if hook else s["started_at"]
    if s["ended_at"] is not None and (hook is None or hook["kind"] == "session_end" or hook["at"] <= s["ended_at"]):
        reason = f" ({s['end_reason']})" if s["end_reason"] else ""
        stopped = _failure(d, any_hook_after=False)
        if stopped is not None:
            # its last turn failed, then the agent exited (claude -p does at once): why it
            # stopped is the failure (a failure a later turn went past is gone at the session's
            # end: hookd.store.sessions.SUPERSEDED_FAILURE); no live agent to watch
            return _failed(stopped, s["failed_at"], f"; then its session ended{reason}: resume it to prompt it again"
                           f" (hookd continue {b})", dict(base, agent_pid=None))
        return Lane(state="ended", since=s["ended_at"], detail=f"session ended{reason}", **base)
    if alive(s["agent_pid"], s["agent_started_at"]) is False:
        why = "the agent process is gone without a SessionEnd"
        if run is not None and run["pid"] == s["agent_pid"] and run["exit_status"] is not None:
            why += f" (hookd run's agent: exited {run['exit_status']})"
        if pending:
            why += f"; {len(pending)} question(s) left unanswered, closed as orphaned"
        return Lane(state="dead", since=now, detail=why, **base)
    if pending:
        first = pending[0]
        kind = "waiting_permission" if first["kind"] in PROMPT_KINDS else "waiting_question"
        # the session the lane waits on is the question's, not the builder's newest one
        base["session_id"] = first.get("session_id") or sid
        waited = now - first["created_at"]
        if waited >= question_after_s:
            return Lane(state="stalled", since=first["created_at"] + question_after_s,
                        detail=f"{first['kind']} {first['id']} waiting on a human for {span(waited)}",
                        waiting_since=first["created_at"], waited=span(waited), **base)
        return Lane(state=kind, since=first["created_at"], detail=f"{first['kind']} {first['id']} is pending",
                    due=first["created_at"] + question_after_s, **base)
    if failure is not None:
        return _failed(failure, s["failed_at"], "", base)
    prompted = s.get("turn_started_at")
    # a human's prompt the transcript shows after the newest hook (no UserPromptSubmit said it:
    # field case B30): the turn it begins is what the lane says, not the hook before it
    unsaid = prompted is not None and hook is not None and prompted > hook["at"]
    if prompted is not None and (hook is None or unsaid):
        last_at = prompted  # the transcript's prompt row tells
    interrupted = s["interrupted_at"] is not None and s["interrupted_at"] >= last_at
    turn_over = interrupted or (hook is not None and not unsaid and hook["kind"] in _TURN_OVER)
    ended = s.get("turn_ended_at")
    seen_end = ((hook is None or unsaid) and not turn_over and ended is not None
                and (prompted is None or ended >= prompted))
    if seen_end:
        turn_over, last_at = True, ended  # no hook: the transcript's end_turn row tells
    adapter = None if turn_over or hook is None or hook["kind"] != "tool_after" else ADAPTERS.get(s.get("harness") or "")
    quiet = adapter is not None and adapter.quiet_idle
    if quiet and now - last_at >= quiet_idle_s:
        turn_over = True  # no end-of-turn hook exists: inferred from the silence after a tool
    if (not turn_over and hook is not None and not unsaid and hook["kind"] in ("permission", "tool_before")
            and d.get("last_prompt") == "dismissed"):
        # dismissed from hookd's queue, its hook let go with no decision: the harness's own
        # dialog (a question's menu) waits at the desk until someone there answers it
        if d.get("last_prompt_kind") == "question":
            return Lane(state="waiting_question", since=last_at,
                        detail="its question's menu is open at the desk (dismissed from hookd's queue: answer it there)",
                        **base)
        if hook["kind"] == "permission":
            return Lane(state="waiting_permission", since=last_at,
                        detail=f"its {hook['hook_event_name']} dialog is open at the desk (dismissed from hookd's queue: "
                               "answer it there)", **base)
    if not turn_over:
        said = ("a prompt its transcript shows, no hook since" if unsaid
                else f"last hook {hook['hook_event_name']}" if hook else "started")
        return Lane(state="working", since=last_at, detail=said, due=last_at + quiet_idle_s if quiet else None, **base)
    idle_since = s["interrupted_at"] if interrupted else last_at + (quiet_idle_s if quiet else 0)
    why = ("interrupted by the human" if interrupted else
           f"no hook for {span(quiet_idle_s)} after its last tool (inferred: {s['harness']} has no end-of-turn hook)"
           if quiet else "session started, no prompt yet" if hook and hook["kind"] == "session_start"
           else "its turn ended (as its transcript shows)" if seen_end else "its turn ended")
    if d["queued"] and d["oldest_queued_at"] is not None:
        waited = now - max(d["oldest_queued_at"], idle_since)
        if waited >= idle_inbox_after_s:
            return Lane(state="stalled", since=max(d["oldest_queued_at"], idle_since) + idle_inbox_after_s,
                        detail=f"idle with {d['queued']} queued message(s) it cannot receive for {span(waited)}",
                        waiting_since=max(d["oldest_queued_at"], idle_since), waited=span(waited), **base)
        return Lane(state="idle", since=idle_since, detail=f"{why}; {d['queued']} message(s) queued",
                    due=max(d["oldest_queued_at"], idle_since) + idle_inbox_after_s, **base)
    return Lane(state="idle", since=idle_since, detail="interrupted" if interrupted else why, **base)


def _before_first_hook(run: dict[str, Any], base: dict[str, Any]) -> Lane:
    """The lane of a builder whose newest run (``hookd run`` / ``continue``) ended before its
    agent sent a hook: ``failed`` when it exited with an error status (``failure`` says so:
    notified once, as an API error is), else ``ended``; the detail says where its error is."""
    b, status = base["builder"], run["exit_status"]
    if run["stop_reason"] == "stopped":
        how, where = "was stopped by hookd stop", ""
    else:
        how = f"exited {status}" if status is not None else "ended"
        where = (f": see {run['log_path']}" if run["mode"] == "headless" and run["log_path"]
                 else f": its last screen is kept (hookd attach {b})")
    failed = run["stop_reason"] != "stopped" and status not in (None, 0)
    return Lane(state="failed" if failed else "ended", since=run["stopped_at"],
                detail=f"its agent (pid {run['pid']}) {how} before its first hook{where}",
                failure=f"{how} before its first hook" if failed else None,
                **dict(base, agent_pid=None, session_id=None))


def _failed(failure: dict[str, Any], at: float, after: str, base: dict[str, Any]) -> Lane:
    """The lane of a session whose last turn an API error stopped at ``at``: ``stalled`` when
    waiting and prompting again is the remedy (``transient``), else ``failed``; ``after`` ends
    the detail."""
    error = failure.get("error") or "unknown"
    return Lane(state="stalled" if failure.get("transient") else "failed", since=at,
                detail=f"stopped by an API error ({error}): {failure.get('advice') or 'see its message'}{after}",
                failure=error, **base)


def _failure(d: dict[str, Any], any_hook_after: bool = True) -> dict[str, Any] | None:
    """The API error that ended the session's last turn (``sessions.failure``), or None when
    none did or (``any_hook_after``) a hook came after it (the human prompted again); an ended
    session's is asked with ``any_hook_after`` False: its SessionEnd came after, and a failure a
    later turn went past was cleared at its end."""
    s, hook = d["session"], d["last_hook"]
    if s is None or s.get("failed_at") is None or (any_hook_after and hook is not None and hook["at"] > s["failed_at"]):
        return None
    try:
        failure = msgspec.json.decode(s.get("failure") or "{}")
    except msgspec.DecodeError:
        failure = None
    return failure if isinstance(failure, dict) else {}


def _on_timeline(d: dict[str, Any], shift: float) -> dict[str, Any]:
    """``d`` with the times that have a timeline stamp replaced by that stamp plus ``shift``
    (the wall clock's lead over the timeline now)."""
    d = dict(d)
    d["pending"] = [dict(p, created_at=p["created_mono"] + shift) if p.get("created_mono") is not None else p
                    for p in d["pending"]]
    hook = d.get("last_hook")
    if hook is not None and hook.get("mono") is not None:
        d["last_hook"] = dict(hook, at=hook["mono"] + shift)
    if d.get("oldest_queued_mono") is not None:
        d["oldest_queued_at"] = d["oldest_queued_mono"] + shift
    return d
