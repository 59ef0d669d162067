"""Issue 18, hostile input, in process (tests/inproc.py; the files and processes that need a
daemon are tests/test_faults_input.py): a transcript path that is no ``.jsonl`` file is never
a watched folder; transcript rows, claw payloads and API bodies with lone UTF-16 surrogates are
read with U+FFFD in their place."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hookd.config import Home
from hookd.spawn import spawn

from .conftest import TUI, wait_until
from .inproc import InProc

pytestmark = pytest.mark.inproc


def _session_start(app: InProc, session_id: str, transcript: str) -> None:
    p = json.loads((TUI / "001-SessionStart.json").read_bytes())
    p["session_id"], p["transcript_path"] = session_id, transcript
    r = app.hook(p)
    assert r.status_code == 200 and r.content == b"", r


def _refused(app: InProc) -> dict[str, str]:
    """The ``transcript_refused`` events so far: path -> reason."""
    return {e["data"]["path"]: e["data"]["reason"] for e in app.events() if e["kind"] == "transcript_refused"}


def test_a_transcript_path_that_is_no_jsonl_file_is_never_watched(inproc: InProc, worktree: Path, tmp_path: Path) -> None:
    spawn(Home.resolve(inproc.home.root), "b1", worktree=worktree)  # what `hookd spawn` does
    folder = tmp_path / "like-tmp"
    (folder / "sub").mkdir(parents=True)
    _session_start(inproc, "s-folder", str(folder))
    _session_start(inproc, "s-text", str(tmp_path / "notes.txt"))
    refused = wait_until(lambda: r if len(r := _refused(inproc)) >= 2 else None, 30, what="both paths refused")
    tail_dirs = inproc.home.root / "tail-dirs.json"
    assert not tail_dirs.exists() or json.loads(tail_dirs.read_text()) == {}
    assert set(refused) == {str(folder), str(tmp_path / "notes.txt")}
    assert all("not a .jsonl transcript" in r for r in refused.values())


def test_transcript_rows_claw_payloads_and_api_bodies_with_lone_surrogates(inproc: InProc, tmp_path: Path) -> None:
    from hookd.harness import claw
    from hookd.watchers.jsonl import Cursor, read_new

    t = tmp_path / "t.jsonl"
    t.write_bytes(b'{"type":"user","uuid":"u1","text":"cut \\ud83d"}\n'
                  b'{"type":"user","uuid":"u2","text":"pair \\ud83d\\ude00, escaped \\\\ud83d"}\n'
                  b'{"type":"user","uuid":"u3","text":"spliced \\udc00"}{"type":"user","uuid":"u4"}\n')
    r = read_new(Cursor(os.fspath(t)))
    assert [x["text"] for x in r.rows[:3]] == ["cut \ufffd", "pair \U0001F600, escaped \\ud83d", "spliced \ufffd"]
    assert r.rows[3]["uuid"] == "u4" and r.stats.torn == 0
    p = claw.parse(b'{"hook_event_name":"PreToolUse","tool_name":"bash","tool_input":{"command":"echo \\ud83d"}}',
                   builder="b1", cwd=os.fspath(tmp_path))
    assert p.tool_input == {"command": "echo \ufffd"}  # type: ignore[attr-defined]
    # an API body (the page or a script sends a cut string): accepted, stored replaced
    spawn(Home.resolve(inproc.home.root), "b1", settings_file=tmp_path / "s.json")
    m = inproc.request("POST", "/v1/builders/b1/messages", content=b'{"text":"hi \\ud83d","author":"me"}',
                       headers={"content-type": "application/json"})
    assert m.status_code == 201, m.text
    assert m.json()["message"]["text"] == "hi \ufffd"
