"""What the CLI prints for a human, in process (no daemon): human durations, one line per event
with its kind's key fields, an interaction with its options and the `hookd answer` commands that
answer it, colour only on a terminal (never with NO_COLOR), and the core's one message for an
answer that leaves questions out. The same text from a real daemon through the CLI process:
tests/test_cli_output.py. Expected text is exact: these are goldens, reviewed like code."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import msgspec
import pytest
from click.testing import CliRunner

from hookd.clock import when
from hookd.cli_events import EVENT_SUMMARY, _event_line
from hookd.cli_render import _answer_commands, _duration, _interaction, _lane_state, _line, _out, _paint, _table
from hookd.core.answers import normalize_answer
from hookd.models import AnswerRequest, BadRequest, Interaction

pytestmark = pytest.mark.inproc

REPO = Path(__file__).resolve().parent.parent
AT = 1_790_000_000.0  # the events' and interactions' time; NOW is 185 s later
NOW = AT + 185
WHEN = "2026-09-21 19:43:20 +05:30"  # AT as printed in the zone _zone sets (14:13:20 UTC)


@pytest.fixture(autouse=True)
def _zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The module's tests run in India's zone (+05:30, no summer time): times are printed as
    local time with that offset."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(("tz", "shown"), [
    ("UTC0", "2026-09-21 14:13:20 +00:00"),
    ("EST5EDT,M3.2.0,M11.1.0", "2026-09-21 10:13:20 -04:00"),  # New York, in summer time
    ("IST-5:30", "2026-09-21 19:43:20 +05:30"),
])
def test_times_are_local_with_their_offset(monkeypatch: pytest.MonkeyPatch, tz: str, shown: str) -> None:
    monkeypatch.setenv("TZ", tz)
    time.tzset()
    assert when(AT) == shown and when(None) == "-"


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0s"), (12.9, "12s"), (59, "59s"), (60, "1m"), (3299, "54m"), (3300, "55m"), (3599, "59m"),
    (3600, "1h00m"), (7380, "2h03m"), (86399, "23h59m"), (86400, "1d00h"), (3 * 86400 + 4 * 3600 + 59, "3d04h"),
    (-5, "0s"),
])
def test_durations_are_human(seconds: float, shown: str) -> None:
    assert _duration(seconds) == shown


# --- hookd events: one line per event, the key fields of its kind -----------------------------

def _ev(kind: str, data: dict[str, Any], builder: str | None = "b1", sid: str | None = "s-1") -> dict[str, Any]:
    return {"seq": 42, "kind": kind, "builder": builder, "session_id": sid, "at": AT, "data": data}


Q1 = [{"question": "Which color do you prefer?", "options": [{"label": "Red"}, {"label": "Blue"}]}]

#: one event of each kind, as the daemon records it (the keys of docs/events.md), and its line
#: after the seq, time, kind and builder columns
EVENTS: list[tuple[str, dict[str, Any], str]] = [
    ("hook_received", {"hook_event_name": "PreToolUse", "source": "live", "tool_name": "Bash",
                       "tool_use_id": "toolu_1"}, "PreToolUse Bash toolu_1"),
    ("hook_received", {"hook_event_name": "Stop", "source": "spool", "agent_id": "a-1", "stale_session_id": "s-0"},
     "Stop agent a-1 (from the spool) (sent as session s-0)"),
    ("session_started", {"source": "startup", "parent_session_id": None, "transcript_path": "/t.jsonl", "cwd": "/w"},
     "s-1 (startup)"),
    ("session_started", {"source": "resume", "parent_session_id": "s-0", "transcript_path": None, "cwd": None},
     "s-1 (resume) from s-0"),
    ("session_ended", {"reason": "prompt_input_exit"}, "s-1 (prompt_input_exit)"),
    ("session_ended", {"reason": None}, "s-1 (no reason given)"),
    ("session_linked", {"parent_session_id": "s-0", "via": "transcript", "reason": "its transcript starts with ..."},
     "s-1 from s-0 (via transcript)"),
    ("inbox_queued", {"id": "m-3", "author": "ana", "chars": 12, "agent_id": None, "key": None},
     "m-3 by ana, 12 chars"),
    ("inbox_queued", {"id": "m-4", "author": "ana", "chars": 40, "agent_id": None, "key": None,
                      "late_answer_to": "toolu_1"}, "m-4 by ana, late answer to toolu_1, 40 chars"),
    ("inbox_delivered", {"ids": ["m-3", "m-4"], "via": "Stop", "chars": 300, "redelivered": [], "waiting": 0},
     "m-3,m-4 at Stop"),
    ("inbox_delivered", {"ids": ["m-3"], "via": "PostToolUse", "chars": 9, "redelivered": ["m-3"], "waiting": 2},
     "m-3 at PostToolUse, delivered again: m-3, 2 still queued"),
    ("inbox_adopted", {"ids": ["m-3", "m-4"], "via": "transcript"}, "m-3,m-4 via transcript"),
    ("inbox_requeued", {"ids": ["m-5"], "via": "PreCompact", "reason": "delivered but not adopted ..."},
     "m-5 queued again after PreCompact"),
    ("question_pending", {"id": "toolu_1", "kind": "question", "tool_use_id": "toolu_1", "questions": Q1,
                          "via": "PreToolUse"}, "toolu_1: Which color do you prefer? (seen through its hook)"),
    ("question_pending", {"id": "toolu_2", "kind": "question", "tool_use_id": "toolu_2", "via": "transcript",
                          "questions": Q1 + [{"question": "Which toppings?"}]},
     "toolu_2: Which color do you prefer? (+1 more) (seen in its transcript)"),
    ("question_resolved", {"id": "toolu_1", "kind": "question", "tool_use_id": "toolu_1", "outcome": "answered",
                           "answers": {"Which color do you prefer?": "Blue"}, "selections": [], "surface": "cli",
                           "actor": "ana"}, "toolu_1 answered from the CLI by ana: Blue"),
    ("question_resolved", {"id": "toolu_1", "kind": "question", "tool_use_id": "toolu_1", "outcome": "dismissed",
                           "answers": None, "selections": None, "surface": None, "warning": "...",
                           "inferred_from": "Stop"}, "toolu_1 dismissed (inferred from Stop)"),
    ("permission_resolved", {"id": "pr_5", "kind": "permission", "tool_use_id": None, "outcome": "dismissed",
                             "answers": None, "selections": None, "surface": "cli", "actor": "ana",
                             "reason": "stale: asked before the restart"},
     "pr_5 dismissed from the CLI by ana: stale: asked before the restart"),
    ("permission_pending", {"id": "pr_1", "kind": "permission", "tool_name": "Bash",
                            "tool_input": {"command": "rm -f README.md", "description": "x"}, "input_hash": "h",
                            "permission_mode": "default"}, "pr_1 Bash: rm -f README.md (mode default)"),
    ("permission_pending", {"id": "pr_2", "kind": "permission", "tool_name": "mcp__x__y", "tool_input": {"n": 1},
                            "input_hash": "h", "permission_mode": None}, 'pr_2 mcp__x__y: {"n":1}'),
    ("permission_pending", {"id": "pr_3", "kind": "plan", "tool_name": "ExitPlanMode", "input_hash": "h",
                            "tool_input": {"plan": "# Plan\n\n1. build the parser\n2. test it\n"},
                            "permission_mode": "plan"}, "pr_3 plan: Plan / 1. build the parser (3 lines) (mode plan)"),
    ("permission_pending", {"id": "pr_4", "kind": "plan", "tool_name": "ExitPlanMode", "tool_input": {},
                            "input_hash": "h", "permission_mode": "plan"}, "pr_4 plan: (no plan written) (mode plan)"),
    ("permission_resolved", {"id": "pr_1", "kind": "permission", "tool_name": "Bash", "tool_use_id": None,
                             "outcome": "answered", "decision": "allow", "surface": "terminal",
                             "inferred_from": "tool running"}, "pr_1 allowed at the desk (inferred from tool running)"),
    ("permission_resolved", {"id": "pr_1", "kind": "permission", "tool_use_id": None, "outcome": "answered",
                             "answers": None, "selections": None, "decision": "deny", "message": "not now",
                             "surface": "cli", "actor": "ana"}, "pr_1 denied from the CLI by ana: not now"),
    ("elicitation_pending", {"id": "el_1", "kind": "elicitation", "server": "booker", "message": "Who is it for?",
                             "mode": "form", "url": None, "elicitation_id": None, "requested_schema": {}},
     "el_1 from booker: Who is it for?"),
    ("elicitation_resolved", {"id": "el_1", "kind": "elicitation", "server": "booker", "outcome": "answered",
                              "decision": "accept", "answers": {"name": "Ada", "party": 3}, "surface": "terminal"},
     "el_1 answered at the desk: accept; name = Ada; party = 3"),
    ("elicitation_resolved", {"id": "el_1", "kind": "elicitation", "tool_use_id": None, "outcome": "answered",
                              "answers": None, "selections": None, "decision": "decline", "message": None,
                              "surface": "cli", "actor": "ana"}, "el_1 answered from the CLI by ana: decline"),
    ("human_input_requested", {"id": "ask_1", "kind": "async", "async": True, "question": "Ship it?",
                               "options": ["yes", "no"], "expires_at": None, "author": None},
     "ask_1: Ship it? (yes | no)"),
    ("interaction_answered", {"id": "toolu_1", "kind": "question", "tool_use_id": "toolu_1", "surface": "cli",
                              "actor": "ana", "response_id": None, "answers": {"Which color do you prefer?": "Red"},
                              "decision": None, "message": None, "delivery": "hook"},
     "toolu_1 from the CLI by ana: Red; goes to the agent through its hook"),
    ("interaction_answered", {"id": "toolu_2", "kind": "question", "tool_use_id": "toolu_2", "surface": "hook",
                              "actor": "ana", "response_id": None, "answers": {"Which color do you prefer?": "Red"},
                              "decision": None, "message": None, "delivery": "PreToolUse"},
     "toolu_2 in advance by ana: Red; went to the agent through its hook as it asked"),
    ("answer_delivered", {"id": "pr_1", "kind": "permission", "via": "PermissionRequest"},
     "pr_1 reached the agent through its hook"),
    ("answer_adopted", {"id": "toolu_1", "kind": "question", "via": "PostToolUse", "tool_use_id": "toolu_1"},
     "toolu_1 adopted by the agent (its tool call ended)"),
    ("answer_adopted", {"id": "pr_2", "kind": "permission", "via": "Stop", "tool_use_id": None},
     "pr_2 adopted by the agent (its turn went on)"),
    ("answer_superseded", {"id": "toolu_1", "kind": "question", "outcome": "answered", "answers": {}, "selections": None,
                           "decision": None, "surface": "terminal", "remote": None, "message_id": "m-7",
                           "reason": "the desk answered first"},
     "toolu_1 answered at the desk: the desk answered first; kept as inbox message m-7"),
    ("answer_refused", {"id": "toolu_1", "kind": "question", "reason": "already answered", "message_id": "m-8",
                        "response_id": None}, "toolu_1: already answered; kept as inbox message m-8"),
    # (the reason says it already, as the daemon words it: once)
    ("answer_refused", {"id": "toolu_1", "kind": "question", "message_id": "m-9", "response_id": None,
                        "reason": "already answered; your answer was kept as inbox message m-9 for b1"},
     "toolu_1: already answered; your answer was kept as inbox message m-9 for b1"),
    ("hold_ended", {"id": "pr_2", "kind": "permission", "reason": "deadline"},
     "pr_2: no hook holds it any more (deadline): answer it at the desk"),
    ("hold_resumed", {"id": "pr_2", "kind": "permission"},
     "pr_2: its held hook is back after a restart (answerable from here again)"),
    ("answer_preregistered", {"id": "pre_1", "question": "Which color do you prefer?", "answer": "Blue", "actor": "ana"},
     "pre_1: Which color do you prefer? -> Blue"),
    ("hook_invalid", {"harness": "claude-code", "error": "not a JSON object", "bytes": 3, "source": "live"},
     "claude-code: not a JSON object (3 bytes)"),
    ("notification_sent", {"key": "k", "step": 0, "channel": "desk", "type": "desktop", "rule": "question_pending",
                           "attempts": 1}, "question_pending step 0 to desk (desktop)"),
    ("notification_failed", {"key": "k", "step": 1, "channel": "hook", "type": "webhook", "rule": "question_pending",
                             "attempts": 3, "error": "HTTP 500"},
     "question_pending step 1 to hook (webhook) after 3 attempts: HTTP 500"),
    ("lane_changed", {"from": "working", "to": "waiting_question", "since": AT, "detail": "question toolu_1 open",
                      "pending": ["toolu_1"], "queued": 0}, "working -> waiting_question (question toolu_1 open)"),
    ("lane_changed", {"from": None, "to": "idle", "since": AT, "detail": "", "pending": [], "queued": 0}, "- -> idle"),
    ("hooks_unarmed", {"transcript_path": "/t.jsonl", "advice": "Run /hooks ..."},
     "s-1: no hook from this session yet; following /t.jsonl"),
    ("hooks_armed", {"hook_event_name": "PostToolUse"}, "s-1: hooks arrive again (at PostToolUse)"),
    ("turn_interrupted", {"marker": "[Request interrupted by user]", "via": "transcript"},
     "s-1: [Request interrupted by user]"),
    ("turn_failed", {"error": "rate_limit", "details": None, "message": "API Error: Request rejected (429)",
                     "transient": True, "advice": "rate limited: wait, then prompt it again", "via": "StopFailure"},
     "s-1: rate_limit: rate limited: wait, then prompt it again (API Error: Request rejected (429))"),
    ("permission_refused", {"tool_use_id": "toolu_1", "tool_name": "Bash", "reason": "Classifier unavailable",
                            "summary": "Install", "what": "curl -s http://x/i.sh | sh", "destructive": True,
                            "via": "PermissionDenied"},
     "Bash toolu_1: curl -s http://x/i.sh | sh (refused without asking: Classifier unavailable)"),
    ("agent_notified", {"tool_use_id": "toolu_1", "tool_name": "SendUserMessage", "status": "proactive",
                        "message": "The build is green;\n2 flaky tests need your call.", "urgent": True,
                        "via": "PostToolUse"},
     "SendUserMessage toolu_1 (proactive): The build is green; 2 flaky tests need your call."),
    ("subagent_started", {"agent_id": "a0000000000000001", "agent_type": "general-purpose", "via": "SubagentStart"},
     "general-purpose a0000000000000001 (via SubagentStart)"),
    ("subagent_started", {"agent_id": "a0000000000000001", "agent_type": None, "via": "PreToolUse", "restarted": True},
     "subagent a0000000000000001 again (via PreToolUse)"),
    ("subagent_ended", {"agent_id": "a0000000000000001", "agent_type": "Explore", "reason": "stopped",
                        "via": "SubagentStop", "transcript_path": "/t/agent-a0000000000000001.jsonl"},
     "Explore a0000000000000001: stopped"),
    ("subagent_ended", {"agent_id": "a0000000000000001", "agent_type": "Explore", "reason": "session_ended",
                        "via": "SessionEnd"}, "Explore a0000000000000001: its session ended first"),
    ("transcript_damaged", {"path": "/t.jsonl", "spliced": 1, "nul_padded": 0, "torn": 2, "unknown_rows": 0,
                            "unknown_blocks": 0}, "/t.jsonl: spliced 1, torn 2"),
    ("transcript_unknown_rows", {"path": "/t.jsonl", "unknown_rows": 4, "unknown_blocks": 0},
     "/t.jsonl: unknown rows 4"),
    ("transcript_followed", {"path": "/t.jsonl", "reason": "a file in the session's folder carries its session id"},
     "/t.jsonl (a file in the session's folder carries its session id)"),
    ("transcript_refused", {"path": "/p.jsonl", "reason": "a FIFO, not a regular file"},
     "/p.jsonl: a FIFO, not a regular file"),
    ("storage_recovered", {"error": "disk_full", "message": "database or disk is full", "since": AT, "refused": 3,
                           "after_s": 125.5}, "after 2m: 3 writes refused (disk_full: database or disk is full)"),
    ("inbox_cancelled", {"id": "m-3", "actor": "ana", "surface": "cli"}, "m-3 taken back from the CLI by ana"),
    ("builder_unspawned", {"unspawned_at": AT}, f"hooks removed at {WHEN}"),
    ("builder_started", {"run": 1, "harness": "claude-code", "mode": "interactive", "pid": 42, "tmux_session": "b1",
                         "log_path": None, "worktree": "/w", "session_id": "s-1", "resumes": None},
     "run 1 interactive pid 42 in tmux session b1 session s-1"),
    ("builder_started", {"run": 2, "harness": "claude-code", "mode": "headless", "pid": 43, "tmux_session": None,
                         "log_path": "/h/logs/b1.log", "worktree": "/w", "session_id": None, "resumes": "s-1"},
     "run 2 headless pid 43 resuming s-1"),
    ("builder_stopped", {"run": 1, "pid": 42, "reason": "stopped", "signal": "SIGTERM", "actor": "ana", "sessions": []},
     "run 1 pid 42 stopped on SIGTERM by ana"),
    ("builder_stopped", {"run": 2, "pid": 43, "reason": "exited", "signal": None, "actor": None, "sessions": ["s-1"]},
     "run 2 pid 43 exited"),
    ("builder_stopped", {"run": 3, "pid": 44, "reason": "exited", "signal": None, "actor": None, "sessions": [],
                         "exit_status": 1, "hooks": 0},
     "run 3 pid 44 exited 1 before its first hook"),
    ("hooks_changed", {"signal": "settings", "reason": "hookd's entries for Stop are gone in /w/.claude/settings.local.json",
                       "fix": "hookd --home /h spawn b1 --worktree /w", "missing": ["Stop"], "changed": []},
     "hooks stopped working (settings): hookd's entries for Stop are gone in /w/.claude/settings.local.json; "
     "to restore them: hookd --home /h spawn b1 --worktree /w"),
    ("hooks_restored", {"reason": "a hook arrived again", "via": "Stop", "since": AT}, "hooks work again: a hook arrived again"),
    ("interaction_id_reused", {"id": "toolu_1~0a1b2c3d", "tool_use_id": "toolu_1", "via": "PreToolUse",
                               "first": {"id": "toolu_1", "builder": "b2", "session_id": "s-9"}, "reason": "..."},
     "toolu_1 recorded as toolu_1~0a1b2c3d (already toolu_1 of b2)"),
]


@pytest.mark.parametrize(("kind", "data", "shown"), EVENTS, ids=[f"{k}-{n}" for n, (k, _, _) in enumerate(EVENTS)])
def test_each_event_kind_is_one_line_with_its_key_fields(kind: str, data: dict[str, Any], shown: str) -> None:
    assert click.unstyle(_event_line(_ev(kind, data))) == f"    42 {WHEN} {kind:<21} b1 {shown}"


def test_every_event_kind_hookd_records_has_its_line() -> None:
    """Each kind the daemon appends (a literal ``append_event("kind"`` in hookd's source, and
    notification_sent/failed) has a summary, each summarised kind is in docs/events.md, and the
    tests above show each of them: a new kind fails here until it has its line."""
    source = "\n".join(p.read_text() for p in (REPO / "hookd").rglob("*.py"))
    appended = set(re.findall(r'append_event\(\s*"([a-z_]+)"', source)) | {"notification_sent", "notification_failed"}
    assert len(appended) > 30 and appended - set(EVENT_SUMMARY) == set()
    documented = (REPO / "docs" / "events.md").read_text()
    assert [k for k in EVENT_SUMMARY if f"`{k}`" not in documented] == []
    assert set(EVENT_SUMMARY) == {k for k, _, _ in EVENTS}


def test_an_event_kind_this_cli_does_not_know_shows_its_usual_keys() -> None:
    line = _event_line(_ev("something_new", {"id": "x1", "outcome": "done", "other": 1}, builder=None))
    assert line == f"    42 {WHEN} something_new         - id=x1 outcome=done"


def test_event_text_from_an_agent_cannot_drive_the_terminal() -> None:
    line = _event_line(_ev("session_ended", {"reason": "bye\x1b[2J\nnext"}, sid="s\u202e1"))
    assert line == f"    42 {WHEN} session_ended         b1 s\\u202e1 (bye\\x1b[2J\\nnext)"


# --- hookd questions: options, how long it waited, the command that answers it ---------------

def _question(**changes: Any) -> dict[str, Any]:
    i = {"id": "toolu_01ASK", "kind": "question", "builder": "b1", "state": "pending", "created_at": AT,
         "resolved_at": None, "surface": None, "actor": None, "answers": None, "tool_name": "AskUserQuestion",
         "questions": [{"question": "Which color do you prefer?", "header": "Color", "multiSelect": False,
                        "options": [{"label": "Red", "description": "A warm color"},
                                    {"label": "Blue", "description": "A cool color"}]}]}
    i.update(changes)
    return i


def _permission(**changes: Any) -> dict[str, Any]:
    i = {"id": "pr_3f2a", "kind": "permission", "builder": "b1", "state": "pending", "created_at": AT + 173,
         "resolved_at": None, "surface": None, "actor": None, "tool_name": "Bash", "questions": None,
         "input": {"command": "rm -f README.md", "description": "Remove the readme"}, "decision": None, "message": None}
    i.update(changes)
    return i


MULTI = [
    {"question": "Which color do you prefer?", "multiSelect": False,
     "options": [{"label": "Red", "description": "A warm color"}, {"label": "Blue", "description": "x" * 80}]},
    {"question": "Which toppings?", "multiSelect": True,
     "options": [{"label": "Ham, smoked"}, {"label": "Cheese"}]},
]


@pytest.mark.parametrize(("interaction", "shown"), [
    (_question(), """\
toolu_01ASK  question from b1, waiting 3m
  Which color do you prefer?
    Red   A warm color
    Blue  A cool color
  answer: hookd answer toolu_01ASK --option Red"""),
    (_question(held=False), """\
toolu_01ASK  question from b1, waiting 3m
  Which color do you prefer?
    Red   A warm color
    Blue  A cool color
  answer at the desk: no hook is holding this question
  answer (as a message): hookd answer toolu_01ASK --option Red"""),
    (_question(id="toolu_01MULTI", questions=MULTI), f"""\
toolu_01MULTI  question from b1, waiting 3m
  1. Which color do you prefer?
       Red   A warm color
       Blue  {"x" * 57}...
  2. Which toppings? (multi-select: repeat --option)
       Ham, smoked
       Cheese
  answer: hookd answer toolu_01MULTI --question 1 --option Red --question 2 --option 'Ham, smoked'"""),
    (_question(id="ask_0a1b", kind="async", created_at=AT - 7380, expires_at=NOW + 600,
               questions=[{"question": "Deploy now?", "header": None, "options": [], "multiSelect": False}]), """\
ask_0a1b  async from b1, waiting 2h06m, expires in 10m
  Deploy now?
  answer: hookd answer ask_0a1b --text TEXT"""),
    (_permission(), """\
pr_3f2a  permission from b1, waiting 12s
  Bash: {"command":"rm -f README.md","description":"Remove the readme"}
  allow: hookd answer pr_3f2a --option allow
  deny:  hookd answer pr_3f2a --option deny --text MESSAGE"""),
    (_permission(tool_view={"kind": "command", "summary": "rm -f README.md", "detail": "Remove the readme",
                            "destructive": True}), """\
pr_3f2a  permission from b1, waiting 12s
  Bash: rm -f README.md  [destructive]
    Remove the readme
  deny:  hookd answer pr_3f2a --option deny --text MESSAGE
  allow: hookd answer pr_3f2a --option allow"""),
    (_permission(tool_name="Edit", tool_view={"kind": "diff", "summary": "Edit README.md", "destructive": False,
                                              "detail": "--- a/README.md\n+++ b/README.md\n-old\n+\tnew"}), """\
pr_3f2a  permission from b1, waiting 12s
  Edit README.md
    --- a/README.md
    +++ b/README.md
    -old
    +   new
  allow: hookd answer pr_3f2a --option allow
  deny:  hookd answer pr_3f2a --option deny --text MESSAGE"""),
    (_question(surface="cli", actor="ana", received_at=AT + 60, inbox_message_id="m-3",
               answers={"Which color do you prefer?": "Red"}), """\
toolu_01ASK  question from b1, waiting 3m
  Which color do you prefer?
    Red   A warm color
    Blue  A cool color
  answered from the CLI by ana (as inbox message m-3): Red; the menu is still open at the desk
  answer: hookd answer toolu_01ASK --option Red"""),
    (_question(state="answered", surface="cli", actor="ana", resolved_at=AT + 65,
               answers={"Which color do you prefer?": "Blue"}), """\
toolu_01ASK  question from b1, answered from the CLI by ana, 2m ago
  Which color do you prefer? -> Blue"""),
    (_question(state="answered", surface="hook", actor="ana", resolved_at=AT + 65,
               answers={"Which color do you prefer?": "Blue"}), """\
toolu_01ASK  question from b1, answered in advance by ana, 2m ago
  Which color do you prefer? -> Blue"""),
    (_question(id="toolu_01MULTI", questions=MULTI, state="dismissed", resolved_at=AT), """\
toolu_01MULTI  question from b1, dismissed, 3m ago
  1. Which color do you prefer?
  2. Which toppings?"""),
    (_question(state="empty", resolved_at=AT, warning="resolved with no answers and no human action seen"), """\
toolu_01ASK  question from b1, empty, 3m ago
  Which color do you prefer?
  note: resolved with no answers and no human action seen"""),
    (_permission(held=False), """\
pr_3f2a  permission from b1, waiting 12s
  Bash: {"command":"rm -f README.md","description":"Remove the readme"}
  answer at the desk: no hook is holding this prompt (an answer from here would be kept as a message)"""),
    (_permission(state="orphaned", resolved_at=AT), """\
pr_3f2a  permission from b1, orphaned, 3m ago
  Bash: {"command":"rm -f README.md","description":"Remove the readme"}"""),
    (_permission(state="answered", decision="deny", message="not now", surface="web", actor="ana",
                 resolved_at=AT + 180), """\
pr_3f2a  permission from b1, denied on the page by ana, 5s ago
  Bash: {"command":"rm -f README.md","description":"Remove the readme"}
  -> deny: not now"""),
    (_permission(state="answered", decision="deny", message="not now", surface="web", actor="ana",
                 resolved_at=AT + 180, outcome="denied", by="on the page by ana"), """\
pr_3f2a  permission from b1, denied on the page by ana, 5s ago
  Bash: {"command":"rm -f README.md","description":"Remove the readme"}
  -> deny: not now"""),
], ids=["one-question", "one-question-no-hook", "two-questions-multi-select", "async-free-text", "permission", "permission-destructive",
        "permission-diff", "answered-kept-for-the-inbox", "answered", "answered-in-advance", "dismissed", "empty-with-its-warning", "permission-not-held", "permission-orphaned", "permission-denied", "permission-denied-in-the-api's-words"])
def test_an_interaction_shows_its_options_its_wait_and_the_command(interaction: dict[str, Any], shown: str) -> None:
    assert click.unstyle(_interaction(interaction, NOW)) == shown  # as a pipe shows it


def test_a_long_detail_is_cut_with_a_count() -> None:
    view = {"kind": "diff", "summary": "big.txt", "detail": "\n".join(f"+{n}" for n in range(25)), "destructive": False}
    lines = click.unstyle(_interaction(_permission(tool_view=view), NOW)).split("\n")
    assert lines[2:4] == ["    +0", "    +1"] and lines[21:24] == [
        "    +19", "    ... (5 more lines; --json has all)", "  allow: hookd answer pr_3f2a --option allow"]


def test_the_commands_are_quoted_for_the_shell() -> None:
    i = _question(id="toolu_$(x)", questions=[{"question": "Pick", "options": [{"label": "it's"}]}])
    assert _answer_commands(i) == [("answer", "hookd answer 'toolu_$(x)' --option 'it'\"'\"'s'")]


def test_agent_text_in_an_interaction_cannot_drive_the_terminal() -> None:
    i = _question(questions=[{"question": "Deploy?\x1b[8m hidden", "options": [{"label": "Yes\u202e"}]}])
    assert click.unstyle(_interaction(i, NOW)).split("\n")[1:] == [
        "  Deploy?\\x1b[8m hidden", "    Yes\\u202e", "  answer: hookd answer toolu_01ASK --option 'Yes\\u202e'"]


# --- the core's message for an answer that leaves questions out -------------------------------

def _multi_interaction() -> Interaction:
    return msgspec.convert({
        "id": "toolu_01MULTI", "kind": "question", "builder": "b1", "session_id": "s-1", "agent_id": None,
        "tool_name": "AskUserQuestion", "tool_use_id": "toolu_01MULTI", "state": "pending", "questions": MULTI,
        "answers": None, "selections": None, "surface": None, "warning": None, "error": None, "created_at": AT,
        "resolved_at": None, "revision": 1}, Interaction)


EACH = ("toolu_01MULTI asks 2 questions; answer each question: --question 1 --option LABEL "
        "--question 2 --option LABEL [--option LABEL]... (1: 'Which color do you prefer?', options: Red, Blue; "
        "2: 'Which toppings?', multi-select, options: 'Ham, smoked', Cheese)")


@pytest.mark.parametrize(("request_", "message"), [
    (AnswerRequest(options=["Blue"]), EACH),
    (AnswerRequest(question="1", options=["Blue"]), "this answer leaves out 'Which toppings?': " + EACH),
    (AnswerRequest(answers={"2": ["Cheese"]}), "this answer leaves out 'Which color do you prefer?': " + EACH),
], ids=["none-named", "one-of-two", "the-other-one"])
def test_an_answer_to_one_of_several_questions_says_how_to_answer_each(request_: AnswerRequest, message: str) -> None:
    with pytest.raises(BadRequest) as e:
        normalize_answer(_multi_interaction(), request_)
    assert e.value.message == message


# --- colour: only on a terminal, never with NO_COLOR -----------------------------------------

@click.command()
def _painted() -> None:
    _out(_line("lane ", _lane_state("stalled"), " ", _paint("x\x1b[2J", fg="green")))
    _out(_table([["b1", _lane_state("waiting_question")]], ["builder", "lane"]))


@pytest.mark.parametrize(("tty", "no_color", "coloured"), [
    (False, None, False), (True, None, True), (True, "1", False), (True, "", True),
], ids=["pipe", "terminal", "terminal-NO_COLOR", "terminal-NO_COLOR-empty"])
def test_colour_only_on_a_terminal_without_no_color(tty: bool, no_color: str | None, coloured: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    if no_color is not None:
        monkeypatch.setenv("NO_COLOR", no_color)
    out = CliRunner().invoke(_painted, color=tty).output  # color: what click does on a terminal
    plain = ("lane stalled x\\x1b[2J\n"
             "builder    lane\n"
             "---------  ----------------\n"
             "b1         waiting_question\n")
    if coloured:
        assert "\x1b[31m\x1b[1mstalled\x1b[0m" in out and "\x1b[32mx\\x1b[2J\x1b[0m" in out
        assert click.unstyle(out) == plain
    else:
        assert out == plain


def test_a_kept_lane_detail_counts_its_wait_to_when_it_is_read() -> None:
    """A stalled lane's detail says how long it has waited; a copy read later (the hub's lanes,
    from the host's last ``lane_changed``) says it as of then, not as of the event (a fleet
    operator's trial: "waiting on a human for 5s" a minute later)."""
    from hookd.clock import detail_now
    from hookd.watchers.lane_state import derive

    session = {"session_id": "s1", "started_at": AT - 400, "ended_at": None, "end_reason": None, "agent_pid": None,
               "agent_started_at": None, "interrupted_at": None, "hooks_unarmed_at": None, "cwd": "/w",
               "harness": "claude-code", "turn_started_at": None, "turn_ended_at": None, "failed_at": None,
               "failure": None, "refused_at": AT - 10, "refused": "Bash: rm -rf /"}
    d = {"builder": "b1", "session": session, "last_hook": {"hook_event_name": "PreToolUse", "at": AT - 300, "mono": None,
                                                            "kind": "tool_call"},
         "pending": [{"id": "q-1", "kind": "question", "created_at": AT - 300, "session_id": "s1", "created_mono": None}],
         "queued": 0, "oldest_queued_at": None, "oldest_queued_mono": None}
    lane = derive(d, AT, question_after_s=120)
    assert (lane.state, lane.waiting_since, lane.waited) == ("stalled", AT - 300, "5m")
    assert lane.detail == "question q-1 waiting on a human for 5m; last refused without asking: Bash: rm -rf /"
    assert detail_now(lane.detail, lane.waited, lane.waiting_since, AT + 3600) == (
        "question q-1 waiting on a human for 1h05m; last refused without asking: Bash: rm -rf /")
    # an inbox the agent cannot receive, as long
    d.update(pending=[], queued=2, oldest_queued_at=AT - 900)
    session.update(turn_ended_at=AT - 1000, refused=None, refused_at=None)
    d["last_hook"] = {"hook_event_name": "Stop", "at": AT - 1000, "mono": None, "kind": "turn_end"}
    lane = derive(d, AT, idle_inbox_after_s=60)
    assert (lane.state, lane.waiting_since) == ("stalled", AT - 900)
    assert detail_now(lane.detail, lane.waited, lane.waiting_since, AT + 60) == (
        "idle with 2 queued message(s) it cannot receive for 16m")
    # a lane with no wait in its words, and a detail that does not say the wait, as they are
    working = derive(dict(d, queued=0, oldest_queued_at=None), AT)
    assert (working.waiting_since, working.waited) == (None, None)
    assert detail_now(working.detail, working.waited, working.waiting_since, AT + 60) == working.detail
    assert detail_now("edited by hand", "5m", AT, AT + 60) == "edited by hand"
    assert detail_now(None, None, None, AT) is None
