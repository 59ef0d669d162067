"""What ``hookd events`` prints of an event: one line each (``_event_line``), the key fields
of each event kind in words (``EVENT_SUMMARY``, docs/events.md), every string through
:func:`hookd.untrusted.visible` (``hookd.cli_render``'s ``_line``). Underscored names belong
to the CLI's modules, not to hookd's API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookd.cli_render import (
    _Shown, _answered, _clip, _delivery, _duration, _given, _json_text, _lane_state, _line, _when, _who,
)


def _ids(v: Any) -> str:
    return ",".join(str(x) for x in v) if isinstance(v, list) and v else "-"


def _tool_input(tool: Any, value: Any) -> str:
    """A tool input in a few words: its command, file path or URL, else its JSON (clipped)."""
    if isinstance(value, dict):
        for key in ("command", "file_path", "url", "path", "pattern"):
            if isinstance(value.get(key), str):
                return f"{tool}: {_clip(value[key], 80)}"
    return f"{tool}: {_clip(_json_text(value), 80)}"


def _plan_line(value: Any) -> str:
    """A plan to approve in a few words: its first lines (Markdown headings' marks dropped) and
    how many lines it has; ``plan: (no plan written)`` for an empty input (a model that wrote
    no plan file: hookd.core.plans)."""
    plan = value.get("plan") if isinstance(value, dict) else None
    lines = [ln.strip().lstrip("#").strip() for ln in plan.splitlines() if ln.strip()] if isinstance(plan, str) else []
    if not lines:
        return "plan: (no plan written)"
    more = f" ({len(lines)} lines)" if len(lines) > 2 else ""
    return f"plan: {_clip(' / '.join(lines[:2]), 80)}{more}"


def _first_question(d: dict[str, Any]) -> str:
    qs = d.get("questions")
    texts = [str(q.get("question", "?")) for q in qs if isinstance(q, dict)] if isinstance(qs, list) else []
    if not texts:
        return "-"
    return _clip(texts[0], 80) + (f" (+{len(texts) - 1} more)" if len(texts) > 1 else "")


def _resolved(d: dict[str, Any]) -> str:
    from hookd.vocabulary import outcome_of

    outcome, got = d.get("outcome"), _answered(d)
    if d.get("kind") in ("permission", "plan") and isinstance(outcome, str) and d.get("decision") in ("allow", "deny"):
        # the words the API's ``outcome`` and the page use: allowed / denied (and the deny's message)
        outcome = outcome_of(str(d["kind"]), outcome, str(d["decision"]))
        got = _clip(d["message"], 60) if outcome == "denied" and _given(d.get("message")) else ""
    if d.get("kind") == "elicitation" and isinstance(d.get("answers"), dict):
        got = _clip(f"{d.get('decision')}" + "".join(f"; {k} = {v}" for k, v in d["answers"].items()), 80)
    if outcome == "dismissed" and _given(d.get("reason")):  # why, as the human who dismissed it said
        got = _clip(d["reason"], 80)
    return (f"{d.get('id')} {outcome}{_who(d)}" + (f": {got}" if got else "")
            + (f" (inferred from {d['inferred_from']})" if _given(d.get("inferred_from")) else ""))


def _hook(d: dict[str, Any]) -> str:
    words = " ".join(str(d[k]) for k in ("hook_event_name", "tool_name", "tool_use_id") if _given(d.get(k)))
    if _given(d.get("agent_id")):
        words += f" agent {d['agent_id']}"
    if _given(d.get("source")) and d["source"] != "live":
        words += f" (from the {d['source']})"
    if _given(d.get("stale_session_id")):
        words += f" (sent as session {d['stale_session_id']})"
    return words


def _damaged(d: dict[str, Any]) -> str:
    counts = [f"{k.replace('_', ' ')} {d[k]}" for k in ("spliced", "nul_padded", "invalid_utf8", "torn", "truncated",
                                                          "rotated", "unknown_rows") if d.get(k)]
    return f"{d.get('path')}: {', '.join(counts) or 'damaged'}"


def _notification(d: dict[str, Any]) -> str:
    failed = f": {_clip(d['error'], 80)}" if _given(d.get("error")) else ""
    tries = f" after {d['attempts']} attempts" if isinstance(d.get("attempts"), int) and d["attempts"] > 1 else ""
    about = f" for {d['host']}/{d.get('builder') or '-'}" if _given(d.get("host")) else ""  # (the fleet's)
    return f"{d.get('rule')} step {d.get('step')}{about} to {d.get('channel')} ({d.get('type')}){tries}{failed}"


def _lane(d: dict[str, Any]) -> _Shown:
    why = f" ({d['detail']})" if _given(d.get("detail")) else ""
    return _line(_lane_state(d.get("from")), " -> ", _lane_state(d.get("to")), why)


def _queued(d: dict[str, Any]) -> str:
    words = f"{d.get('id')} by {d.get('author')}"
    if _given(d.get("answer_to")):
        words += f", answer to {d['answer_to']}"
    if _given(d.get("late_answer_to")):
        words += f", late answer to {d['late_answer_to']}"
    if _given(d.get("agent_id")):
        words += f", for agent {d['agent_id']}"
    return words + (f", {d['chars']} chars" if isinstance(d.get("chars"), int) else "")


def _delivered(d: dict[str, Any]) -> str:
    words = f"{_ids(d.get('ids'))} at {d.get('via')}"
    if _given(d.get("redelivered")):
        words += f", delivered again: {_ids(d['redelivered'])}"
    return words + (f", {d['waiting']} still queued" if d.get("waiting") else "")


def _handed(d: dict[str, Any]) -> str:
    """``answer_delivered``: a hook holding the prompt (``via`` PermissionRequest) or asking
    the question (PreToolUse) handed the answer over; ``--json`` keeps ``via``."""
    how = "through its hook" if d.get("via") in ("PermissionRequest", "PreToolUse") else f"({d.get('via')})"
    return f"{d.get('id')} reached the agent {how}"


def _adopted(d: dict[str, Any]) -> str:
    """``answer_adopted``: the answered tool call's own hook (``via`` PostToolUse or
    PostToolUseFailure) came back, or the turn went on past it (a denied call: Stop...)."""
    after = "its tool call ended" if str(d.get("via")).startswith("PostToolUse") else "its turn went on"
    return f"{d.get('id')} adopted by the agent ({after})"


def _seen(d: dict[str, Any]) -> str:
    """How hookd saw a question asked: through the agent's hook, or only in its transcript."""
    return "seen in its transcript" if d.get("via") == "transcript" else "seen through its hook"


def _kept(d: dict[str, Any]) -> str:
    """"; kept as inbox message m-3", unless the reason beside it says so already."""
    if not _given(d.get("message_id")) or f"inbox message {d['message_id']}" in str(d.get("reason") or ""):
        return ""
    return f"; kept as inbox message {d['message_id']}"


#: Each event kind's key fields in words (docs/events.md): ``(data, session_id) -> text``.
EVENT_SUMMARY: dict[str, Callable[[dict[str, Any], str], Any]] = {
    "hook_received": lambda d, s: _hook(d),
    "session_started": lambda d, s: s + (f" ({d['source']})" if _given(d.get("source")) else "")
    + (f" from {d['parent_session_id']}" if _given(d.get("parent_session_id")) else ""),
    "session_ended": lambda d, s: f"{s} ({d.get('reason') or 'no reason given'})",
    "session_linked": lambda d, s: f"{s} from {d.get('parent_session_id')} (via {d.get('via')})",
    "inbox_queued": lambda d, s: _queued(d),
    "inbox_delivered": lambda d, s: _delivered(d),
    "inbox_adopted": lambda d, s: f"{_ids(d.get('ids'))} via {d.get('via')}",
    "inbox_requeued": lambda d, s: f"{_ids(d.get('ids'))} queued again after {d.get('via')}",
    "question_pending": lambda d, s: f"{d.get('id')}: {_first_question(d)} ({_seen(d)})",
    "question_resolved": lambda d, s: _resolved(d),
    "permission_pending": lambda d, s: f"{d.get('id')} "
    + (_plan_line(d.get("tool_input")) if d.get("kind") == "plan" else _tool_input(d.get("tool_name"), d.get("tool_input")))
    + (f" (mode {d['permission_mode']})" if _given(d.get("permission_mode")) else ""),
    "permission_resolved": lambda d, s: _resolved(d),
    "elicitation_pending": lambda d, s: f"{d.get('id')} from {d.get('server')}: {_clip(d.get('message'), 80)}"
    + (f" (open {d['url']})" if _given(d.get("url")) else ""),
    "elicitation_resolved": lambda d, s: _resolved(d),
    "human_input_requested": lambda d, s: f"{d.get('id')}: {_clip(d.get('question'), 80)}"
    + (f" ({' | '.join(str(o) for o in d['options'])})" if _given(d.get("options")) else ""),
    "interaction_answered": lambda d, s: f"{d.get('id')}{_who(d)}: {_answered(d) or '-'}; {_delivery(d)}",
    "answer_delivered": lambda d, s: _handed(d),
    "answer_adopted": lambda d, s: _adopted(d),
    "answer_superseded": lambda d, s: f"{d.get('id')} {d.get('outcome')} at the desk: {d.get('reason')}{_kept(d)}",
    "answer_refused": lambda d, s: f"{d.get('id')}: {d.get('reason')}{_kept(d)}",
    "hold_ended": lambda d, s: f"{d.get('id')}: no hook holds it any more ({d.get('reason')}): answer it at the desk",
    "hold_resumed": lambda d, s: f"{d.get('id')}: its held hook is back after a restart (answerable from here again)",
    "answer_preregistered": lambda d, s: f"{d.get('id')}: {_clip(d.get('question'), 60)} -> {_clip(d.get('answer'), 60)}",
    "hook_invalid": lambda d, s: f"{d.get('harness')}: {_clip(d.get('error'), 100)} ({d.get('bytes')} bytes)",
    "notification_sent": lambda d, s: _notification(d),
    "notification_failed": lambda d, s: _notification(d),
    "lane_changed": lambda d, s: _lane(d),
    "hooks_unarmed": lambda d, s: f"{s}: no hook from this session yet; following {d.get('transcript_path')}",
    "hooks_armed": lambda d, s: f"{s}: hooks arrive again (at {d.get('hook_event_name')})",
    "subagent_started": lambda d, s: f"{d.get('agent_type') or 'subagent'} {d.get('agent_id')}"
    + (" again" if d.get("restarted") else "") + f" (via {d.get('via')})",
    "subagent_ended": lambda d, s: f"{d.get('agent_type') or 'subagent'} {d.get('agent_id')}: "
    + ("stopped" if d.get("reason") == "stopped" else "its session ended first"),
    "hooks_changed": lambda d, s: f"hooks stopped working ({d.get('signal')}): {_clip(d.get('reason'), 1000)}; "
    + f"to restore them: {d.get('fix')}",
    "hooks_restored": lambda d, s: f"hooks work again: {d.get('reason')}",
    "turn_interrupted": lambda d, s: f"{s}: {d.get('marker')}",
    "turn_failed": lambda d, s: f"{s}: {d.get('error') or 'unknown'}: {d.get('advice')}"
    + (f" ({_clip(d['message'], 100)})" if _given(d.get("message")) else ""),
    "permission_refused": lambda d, s: f"{d.get('tool_name')} {d.get('tool_use_id') or '-'}: "
    + f"{_clip(d.get('what') or d.get('summary'), 80)} (refused without asking: {d.get('reason') or 'no reason given'})",
    "agent_notified": lambda d, s: f"{d.get('tool_name')} {d.get('tool_use_id') or '-'}"
    + (f" ({d['status']})" if _given(d.get("status")) else "") + f": {_clip(' '.join(str(d.get('message')).split()), 100)}",
    "transcript_damaged": lambda d, s: _damaged(d),
    "transcript_unknown_rows": lambda d, s: _damaged(d),
    "transcript_followed": lambda d, s: f"{d.get('path')} ({d.get('reason')})",
    "transcript_refused": lambda d, s: f"{d.get('path')}: {d.get('reason')}",
    "storage_recovered": lambda d, s: f"after {_duration(d.get('after_s') or 0)}: {d.get('refused')} writes refused"
    + f" ({d.get('error')}: {_clip(d.get('message'), 80)})",
    "inbox_cancelled": lambda d, s: f"{d.get('id')} taken back{_who(d)}",
    "builder_unspawned": lambda d, s: f"hooks removed at {_when(d.get('unspawned_at'))}",
    "builder_started": lambda d, s: f"run {d.get('run')} {d.get('mode')} pid {d.get('pid')}"
    + (f" in tmux session {d.get('tmux_session')}" if d.get("tmux_session") else "")
    + (f" resuming {d.get('resumes')}" if d.get("resumes") else f" session {d.get('session_id') or '-'}"),
    "builder_stopped": lambda d, s: f"run {d.get('run')} pid {d.get('pid')} {d.get('reason')}"
    + (f" {d['exit_status']}" if d.get("reason") == "exited" and d.get("exit_status") is not None else "")
    + (f" on {d.get('signal')}" if d.get("signal") else "")
    + (" before its first hook" if d.get("reason") == "exited" and d.get("hooks") == 0 else "") + _who(d),
    "interaction_id_reused": lambda d, s: f"{d.get('tool_use_id')} recorded as {d.get('id')} "
    + f"(already {(d.get('first') or {}).get('id')} of {(d.get('first') or {}).get('builder')})",
}


def _event_summary(e: dict[str, Any]) -> Any:
    d = e["data"] if isinstance(e.get("data"), dict) else {}
    summary = EVENT_SUMMARY.get(e["kind"])
    if summary is not None:
        return summary(d, e.get("session_id") or "-")
    # a kind this CLI does not know (a newer daemon): its data's usual keys
    return " ".join(f"{k}={d[k]}" for k in ("hook_event_name", "tool_name", "id", "outcome", "source") if _given(d.get(k)))


def _event_line(e: dict[str, Any]) -> _Shown:
    """What ``hookd events`` prints of event ``e`` (a line of ``GET /v1/events``): seq, local
    time, kind, builder, then the key fields of its kind in words (EVENT_SUMMARY), e.g.
    ``lane_changed b1 working -> waiting_question (...)``, ``inbox_delivered b1 m-3,m-4 at
    Stop``, ``session_ended b1 s-1 (prompt_input_exit)``."""
    return _line(f"{e['seq']:>6} {_when(e['at'])} {e['kind']:<21} {e['builder'] or '-'} ", _event_summary(e))
