"""Lone surrogates from the real Claude Code 2.1.332 (issue 18 item 5), offline.

A model's tool input or text cut mid-emoji holds a lone UTF-16 surrogate; Claude Code keeps
it and its hooks carry it as ``JSON.stringify`` writes it, ``"\\ud83d"`` (as do its transcript
rows). The fake API sends such strings (a Bash ``description``, an AskUserQuestion's question
and option label, the final text); hookd, spawned the usual way, must store every hook as a
parsed hook (never ``hook_invalid``) with its raw bytes as received, and read the transcript
without damage: the question (``claude -p`` refuses AskUserQuestion before any hook, so only
the transcript has it) with U+FFFD for the cut character.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from .drivers import hermetic_env, run_print, wait_until
from .fake_api import FakeAnthropicAPI
from .test_claude_code_hookd import _Hookd
from .test_claude_code_scenarios import BYPASS, option, rig, text_turn, tool_turn  # noqa: F401  (rig: fixture)
from .test_transcript_e2e import read_to_end, transcript_path

pytestmark = pytest.mark.e2e

CUT = "\ud83d"  # the first half of U+1F600: what is left of an emoji cut in two
BASH_ID = "toolu_01SURRBASH00000000000001"
ASK_ID = "toolu_01SURRASK000000000000001"
QUESTION = "Pick one " + CUT


def test_hooks_and_transcript_rows_with_lone_surrogates_are_parsed(claude_bin, e2e_home, e2e_project, tmp_path):
    hookd = _Hookd(tmp_path / "hookd")
    hookd.cli("spawn", "b1", "--worktree", os.fspath(e2e_project), "--no-mcp", "--hold", "0")
    hookd.start()
    try:
        script = {"turns": [
            tool_turn(BASH_ID, "Bash", {"command": "printf 'x\\n'", "description": "cut " + CUT}),
            tool_turn(ASK_ID, "AskUserQuestion", {"questions": [{
                "question": QUESTION, "header": "Cut", "multiSelect": False,
                "options": [option("Red"), option("Blue " + CUT)]}]}),
            text_turn("done " + CUT + " FINAL-SURR-1"),
        ]}
        with FakeAnthropicAPI(script) as api:
            res = run_print("go", e2e_project, hermetic_env(e2e_home, api.url), extra_args=BYPASS, timeout=120,
                            claude_bin=claude_bin)
        assert res.returncode == 0, res.stderr[-2000:]
        events = hookd.events()
        assert [e for e in events if e["kind"] == "hook_invalid"] == []
        seen = {(e["data"]["hook_event_name"], e["data"].get("tool_name")) for e in events if e["kind"] == "hook_received"}
        assert {("PreToolUse", "Bash"), ("PostToolUse", "Bash"), ("Stop", None)} <= seen
        # claude -p refuses AskUserQuestion before any hook: the question comes from the transcript
        # (read when the session's hooks went quiet: up to 2 s after the row, hookd/watchers/quiet.py)
        q = wait_until(lambda: next((x for x in hookd.questions() if x["id"] == ASK_ID), None), 30,
                       message="the question read from the transcript")
        assert q["questions"][0]["question"] == "Pick one \ufffd"
        assert q["questions"][0]["options"][1]["label"] == "Blue \ufffd"
        # Claude Code did send lone surrogates, and hookd kept those bytes as they came
        con = sqlite3.connect(hookd.home / "hookd.db")
        try:
            raws = [bytes(r[0]) for r in con.execute("SELECT raw FROM hook_events")]
        finally:
            con.close()
        assert any(b'"description":"cut \\ud83d"' in r for r in raws)
        assert any(b'"last_assistant_message":"done \\ud83d FINAL-SURR-1"' in r for r in raws)
        # the transcript (its rows carry the same escapes) is read to its end, nothing damaged
        sid = next(e["session_id"] for e in events if e["kind"] == "session_started")
        path = transcript_path(e2e_home, e2e_project, sid)
        assert b'"question":"Pick one \\ud83d"' in Path(path).read_bytes()
        row = read_to_end(hookd.home, path)
        assert row["damaged"] == 0
    finally:
        hookd.stop()


REMOTE_ASK = "toolu_01SURRREMOTE0000000001"


def test_tui_remote_answer_to_a_question_cut_mid_emoji_reaches_the_model(rig, tmux_bin):  # noqa: F811
    """The held PermissionRequest of a question whose text holds a lone surrogate: hookd's
    allow carries the question and the answer key with U+FFFD (consistent with each other);
    Claude Code takes it, closes the menu and sends the answer to the model."""
    from .test_answers_e2e import MENU, wait_held
    from .test_claude_code_scenarios import about, text_turn as text

    r = rig({"turns": [tool_turn(REMOTE_ASK, "AskUserQuestion", {"questions": [{
        "question": QUESTION, "header": "Cut", "multiSelect": False,
        "options": [option("Red"), option("Blue")]}]}), text("AFTER-SURR-RED-1")]},
        builder="b-surr", form="worktree")
    with r.tui(tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Ask me a color")
        tui.wait_for_screen(lambda s: MENU in s and "2. Blue" in s, timeout=30)
        wait_held(r, REMOTE_ASK)
        receipt = json.loads(r.hookd.cli("answer", REMOTE_ASK, "--option", "Red", "--json"))
        assert receipt["delivery"] == "hook"
        tui.wait_for_screen(lambda s: MENU not in s, timeout=10)
        tui.wait_for_screen("AFTER-SURR-RED-1", timeout=30)
        ev = r.wait_events(lambda ev: about(ev, "answer_adopted", REMOTE_ASK), "answer_adopted")
    assert [e for e in ev if e["kind"] == "hook_invalid"] == []
    main = r.api.main_requests()
    assert len(main) == 2 and "Red" in main[1].tool_results()[REMOTE_ASK]
    [i] = [q for q in r.questions() if q["id"] == REMOTE_ASK]
    assert (i["state"], i["answers"]) == ("answered", {"Pick one \ufffd": "Red"})
