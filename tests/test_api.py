"""`hookd.api` (issue 23, item 3) against a real daemon: spawn, a question waited for and
answered, a message sent, the event log read and followed, an agent run headless and stopped,
and the errors an orchestrator gets."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from hookd.api import Hookd
from hookd.errors import Conflict, DaemonNotRunning, NotFound

from .conftest import TUI, run_hook, settings_command

pytestmark = pytest.mark.daemon


def _hook(settings: Path, w: Path, name: str, **changes: Any) -> None:
    p = json.loads((TUI / name).read_bytes())
    p.update(cwd=os.fspath(w), **changes)
    r = run_hook(settings_command(settings, p["hook_event_name"]), json.dumps(p).encode(), w)
    assert r.returncode == 0, r.stderr


def test_a_question_waited_for_answered_and_followed(home: Path, daemon: Any, worktree: Path) -> None:
    hd = Hookd(home)
    m = hd.spawn("b1", worktree=worktree, mcp=False)
    assert m["builder"] == "b1" and m["settings_file"] == os.fspath(worktree / ".claude" / "settings.local.json")
    settings = Path(m["settings_file"])
    _hook(settings, worktree, "001-SessionStart.json")
    assert hd.wait_for_interaction("b1", timeout_s=0.2) is None  # nothing asked yet

    asked = threading.Thread(target=_hook, args=(settings, worktree, "007-PreToolUse.json"))
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(hd.wait_for_interaction("b1", kinds={"question"})))
    waiter.start()
    asked.start()
    asked.join()
    waiter.join(timeout=30)
    [i] = got
    assert i["kind"] == "question" and i["state"] == "pending" and i["builder"] == "b1"
    assert hd.wait_for_interaction("b1") == i  # (one already pending: at once)
    label = i["questions"][0]["options"][0]["label"]
    receipt = hd.answer(i["id"], options=[label], actor="orchestrator")
    assert receipt["interaction"]["id"] == i["id"] and receipt["duplicate"] is False
    with pytest.raises(Conflict):
        hd.answer(i["id"], options=[label], response_id="another")
    assert hd.questions(builder="b1") == [] and hd.interaction(i["id"])["state"] != "pending"

    sent = hd.send("b1", "also update the changelog", key="k1")
    assert sent["created"] is True and sent["message"]["state"] == "queued"
    assert hd.send("b1", "also update the changelog", key="k1")["created"] is False

    kinds = [e["kind"] for e in hd.events(builder="b1")]
    assert {"question_pending", "interaction_answered", "inbox_queued"} <= set(kinds)
    # (the refused second answer was kept as a message for the builder, then the one sent)
    assert [e["kind"] for e in hd.events(kinds={"inbox_queued"})] == ["inbox_queued", "inbox_queued"]
    last = max(e["seq"] for e in hd.events())
    follow = hd.events(after=last, follow=True, kinds={"inbox_queued"})
    hd.send("b1", "one more")
    e = next(follow)
    follow.close()
    assert (e["kind"], e["builder"], e["seq"] > last) == ("inbox_queued", "b1", True)
    assert [b["builder"] for b in hd.lanes()] == ["b1"]


def test_an_agent_run_headless_and_stopped(home: Path, daemon: Any, worktree: Path, tmp_path: Path) -> None:
    exe = tmp_path / "claude"
    exe.write_text("#!/bin/sh\nexec sleep 60\n")
    exe.chmod(0o755)
    env = {**os.environ, "HOOKD_CLAUDE_BIN": os.fspath(exe)}
    hd = Hookd(home)
    run = hd.run("b2", worktree=worktree, headless=True, prompt="fix the tests", env=env)
    assert (run["builder"], run["mode"], run["stopped_at"]) == ("b2", "headless", None)
    assert run["argv"] == [os.fspath(exe), "-p", "--session-id", run["session_id"], "--", "fix the tests"]
    with pytest.raises(Conflict):
        hd.run("b2", worktree=worktree, headless=True, prompt="again", env=env)
    assert [r["builder"] for r in hd.runs()] == ["b2"]
    stopped = hd.stop("b2", timeout_s=5)
    assert (stopped["stop_signal"], stopped["stop_reason"]) == ("SIGTERM", "stopped")
    with pytest.raises(NotFound):
        hd.stop("b2")


def test_errors_without_a_daemon(home: Path, worktree: Path) -> None:
    hd = Hookd(home)
    with pytest.raises(DaemonNotRunning):
        hd.questions()
    assert hd.spawn("b1", worktree=worktree)["builder"] == "b1"  # (spawn needs no daemon)
    assert hd.unspawn("b1")["removed"] > 0
