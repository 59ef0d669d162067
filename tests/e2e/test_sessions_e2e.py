"""Lanes and messages across session changes against the real Claude Code 2.1.332, offline
(issue 18 items 11 and 13): the TUI's idle notification, ``/compact`` right after a resume,
and a fork of a session that ended.

Facts of 2.1.332 these tests pin (found in the binary and checked by running it):

* The TUI sends a Notification hook ``{"notification_type": "idle_prompt", "message": "Claude
  is waiting for your input"}`` once a turn has ended and the global config's
  ``messageIdleNotifThresholdMs`` (default 60000, in ``~/.claude.json``) passed with no input.
* ``/compact`` at the TUI prompt runs PreCompact, the summariser's request (no tools), then
  SessionStart ``source: "compact"``; the next prompt's request carries SessionStart's
  ``additionalContext``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from hookd.daemonproc import DaemonProcess

from .drivers import TmuxClaude, hermetic_env, run_print, seed_claude_json, wait_until
from .fake_api import FakeAnthropicAPI
from .test_claude_code_hookd import _Hookd
from .test_claude_code_scenarios import BYPASS, bash_turn, text_turn

pytestmark = pytest.mark.e2e

MARK = "[human msg m-1 "


def _hookd(tmp_path: Path, **env: str) -> _Hookd:
    h = _Hookd(tmp_path / "hookd")
    h.daemon = DaemonProcess(h.home, env={**os.environ, **env})
    return h


def _lane(h: _Hookd, builder: str = "b1") -> dict[str, Any]:
    return next(lane for lane in json.loads(h.cli("lanes", "--json")) if lane["builder"] == builder)


def _raw_hooks(h: _Hookd, name: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(f"file:{h.home / 'hookd.db'}?mode=ro", uri=True)
    try:
        return [json.loads(r[0]) for r in db.execute(
            "SELECT raw FROM hook_events WHERE hook_event_name=? ORDER BY id", (name,))]
    finally:
        db.close()


def _inbox(h: _Hookd) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for m in json.loads(h.cli("inbox", "b1", "--json"))}


def test_idle_prompt_notification_leaves_the_lane_idle(claude_bin: Path, tmux_bin: str, e2e_home: Path,
                                                       e2e_project: Path, tmp_path: Path) -> None:
    """Item 11: the turn ends (Stop: idle); Claude Code's idle_prompt Notification follows
    (threshold 1 s here instead of 60 s); the lane stays idle, and a message queued for the
    idle agent then stalls it (idle_inbox_after_s 1 s)."""
    h = _hookd(tmp_path, HOOKD_NOTIFY_IDLE_INBOX_AFTER_S="1")
    h.cli("spawn", "b1", "--worktree", os.fspath(e2e_project), "--no-mcp")
    h.start()
    try:
        with FakeAnthropicAPI([text_turn("IDLE-TURN-DONE")]) as api:
            env = hermetic_env(e2e_home, api.url)
            seed_claude_json(env["HOME"], e2e_project, env["ANTHROPIC_API_KEY"],
                             extra={"messageIdleNotifThresholdMs": 1000})
            with TmuxClaude(e2e_project, env, extra_args=BYPASS, claude_bin=claude_bin, tmux=tmux_bin,
                            seed=False) as tui:
                tui.wait_ready()
                tui.submit("say something")
                tui.wait_for_screen("IDLE-TURN-DONE", timeout=30)
                wait_until(lambda: _lane(h)["state"] == "idle", 15, 0.1, "the lane idle after Stop")
                [note] = wait_until(lambda: _raw_hooks(h, "Notification"), 30, 0.2, "the idle Notification hook")
                assert (note["notification_type"], note["message"]) == ("idle_prompt", "Claude is waiting for your input")
                lane = _lane(h)
                assert lane["state"] == "idle" and lane["detail"] == "its turn ended", lane
                h.cli("send", "b1", "are you there?")
                lane = wait_until(lambda: (x := _lane(h))["state"] == "stalled" and x, 15, 0.1, "the lane stalled")
                assert "queued message" in lane["detail"]
        changes = [(e["data"]["from"], e["data"]["to"]) for e in h.events() if e["kind"] == "lane_changed"]
        # from the turn's idle on: the first idle after its working (a turn shorter than the
        # lanes' 1 s refresh gap may record no working, then the first idle)
        worked = next((n for n, (_, to) in enumerate(changes) if to == "working"), -1)
        first_idle = next(n for n, (_, to) in enumerate(changes) if to == "idle" and n > worked)
        assert ("idle", "working") not in changes[first_idle:], changes
    finally:
        h.stop()


def test_compact_right_after_resume_delivers_the_message_to_the_working_model(
        claude_bin: Path, tmux_bin: str, e2e_home: Path, e2e_project: Path, tmp_path: Path) -> None:
    """Item 13: a message queued while no session runs is delivered at SessionStart(resume);
    the human runs /compact at once, so only the summariser's request carries it. PreCompact
    puts it back in the queue, SessionStart(compact) delivers it again, and the working
    model's next request has it."""
    h = _hookd(tmp_path)
    h.cli("spawn", "b1", "--worktree", os.fspath(e2e_project), "--no-mcp")
    h.start()
    try:
        with FakeAnthropicAPI([text_turn("FIRST-DONE"), text_turn("AFTER-COMPACT-DONE")]) as api:
            env = hermetic_env(e2e_home, api.url)
            first = run_print("hello", e2e_project, env, extra_args=BYPASS, claude_bin=claude_bin)
            assert first.returncode == 0 and first.result is not None, first.stderr[-2000:]
            sid = first.result["session_id"]
            h.cli("send", "b1", "MSG-ACROSS-COMPACT")
            with TmuxClaude(e2e_project, env, extra_args=(*BYPASS, "--resume", sid), claude_bin=claude_bin,
                            tmux=tmux_bin) as tui:
                tui.wait_ready()
                wait_until(lambda: _inbox(h)["m-1"]["state"] == "delivered", 15, 0.1, "m-1 delivered at SessionStart")
                assert _inbox(h)["m-1"]["delivered_via"] == "SessionStart"
                tui.submit("/compact")
                [compacted] = wait_until(lambda: [e for e in h.events() if e["kind"] == "session_started"
                                                  and e["data"]["source"] == "compact"], 30, 0.2,
                                         "SessionStart(compact)")
                assert compacted["session_id"] == sid  # 2.1.332 keeps the id through /compact
                summarised = api.messages_requests("side")
                assert any(r.contains("MSG-ACROSS-COMPACT") for r in summarised)  # the summariser saw it
                tui.wait_ready()
                tui.submit("go on")
                tui.wait_for_screen("AFTER-COMPACT-DONE", timeout=30)
        last = api.main_requests()[-1]
        assert last.contains(MARK) and last.contains("MSG-ACROSS-COMPACT"), "the working model never got the message"
        requeued = [e for e in h.events() if e["kind"] == "inbox_requeued"]
        assert [e["data"]["ids"] for e in requeued] == [["m-1"]]
        assert _inbox(h)["m-1"]["deliveries"] == 2
    finally:
        h.stop()


def test_a_message_for_a_session_that_ended_reaches_its_fork(claude_bin: Path, e2e_home: Path, e2e_project: Path,
                                                            tmp_path: Path) -> None:
    """Item 13: a message scoped to session A, sent after A's run ended, reaches the session
    forked from A (``claude -p --resume A --fork-session``) once its transcript links the two:
    the fork's Bash call waits (bounded) until hookd recorded the link, and that call's
    PostToolUse delivers the message to the fork's model."""
    h = _hookd(tmp_path)
    h.cli("spawn", "b1", "--worktree", os.fspath(e2e_project), "--no-mcp")
    h.start()
    gate = tmp_path / "linked"
    wait_cmd = f"for i in $(seq 600); do [ -f {gate} ] && break; sleep 0.05; done; echo gate"
    try:
        with FakeAnthropicAPI([text_turn("A-DONE"), bash_turn("toolu_01FORKWAIT000000000000001", wait_cmd),
                               text_turn("FORK-DONE")]) as api:
            env = hermetic_env(e2e_home, api.url)
            first = run_print("hello A", e2e_project, env, extra_args=BYPASS, claude_bin=claude_bin)
            assert first.returncode == 0 and first.result is not None, first.stderr[-2000:]
            a = first.result["session_id"]
            wait_until(lambda: [e for e in h.events() if e["kind"] == "session_ended" and e["session_id"] == a],
                       15, 0.1, "A's SessionEnd")
            h.cli("send", "b1", "MSG-FOR-A", "--session", a)
            out: dict[str, Any] = {}
            run = threading.Thread(target=lambda: out.setdefault("r", run_print(
                "hello fork", e2e_project, env, extra_args=(*BYPASS, "--resume", a, "--fork-session"),
                claude_bin=claude_bin)))
            run.start()
            try:
                ev = wait_until(lambda: [e for e in h.events() if e["kind"] == "session_linked"
                                         and e["data"]["parent_session_id"] == a], 30, 0.1, "the fork linked to A")
            finally:
                gate.touch()
                run.join(60)
            fork = ev[0]["session_id"]
            r = out["r"]
            assert r.returncode == 0 and r.result is not None and r.result["session_id"] == fork, r.stderr[-2000:]
        got = [q for q in api.main_requests() if q.contains(MARK) and q.contains("MSG-FOR-A")]
        assert got, "the fork's model never got the message"
        m = _inbox(h)["m-1"]
        assert m["delivered_session_id"] == fork and m["delivered_via"] == "PostToolUse", m
    finally:
        h.stop()
