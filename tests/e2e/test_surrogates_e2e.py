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

import os
import sqlite3
from pathlib import Path

import pytest

from .drivers import hermetic_env, run_print
from .fake_api import FakeAnthropicAPI
from .test_claude_code_hookd import _Hookd
from .test_claude_code_scenarios import BYPASS, option, text_turn, tool_turn
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
        q = next(x for x in hookd.questions() if x["id"] == ASK_ID)
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
