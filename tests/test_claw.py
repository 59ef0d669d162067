"""claw as a harness: the adapter, spawn into .claw/settings.local.json, and hookd's generated
hooks run by a faithful fake of claw's hook runner (tests/fake_claw.py) against a real daemon."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from hookd.daemonproc import DaemonProcess
from hookd.harness import base, claw
from hookd.models import PayloadInvalid, os_user

from .conftest import events, hookd_cli, hookd_run, questions, wait_until
from .fake_claw import FakeClaw, fingerprint, merge_hook_feedback, parse_output

pytestmark = pytest.mark.daemon

# --- the adapter (pure) -------------------------------------------------------------------


def test_fingerprint_is_claws_fnv1a64():
    # FNV-1a 64 reference vectors; the fake claw and the adapter agree on real paths
    assert claw.fingerprint("") == "cbf29ce484222325"
    assert claw.fingerprint("a") == "af63dc4c8601ec8c"
    assert claw.fingerprint("/home/me/src/proj") == fingerprint("/home/me/src/proj")


def test_parse_gives_identity_from_builder_and_cwd():
    raw = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "bash", "tool_input": {"command": "ls"},
                      "tool_input_json": "{\"command\":\"ls\"}", "tool_output": None,
                      "tool_result_is_error": False}).encode()
    p = claw.parse(raw, builder="b1", cwd="/w/x")
    assert p.session_id == f"claw:b1:{claw.fingerprint('/w/x')}"
    assert p.cwd == "/w/x" and p.transcript_path == f"/w/x/.claw/sessions/{claw.fingerprint('/w/x')}"
    assert claw.parse(raw, builder="b1", cwd=None).session_id == "claw:b1"
    # a forged session id in the payload is ignored: the builder and the cwd are the identity
    forged = json.dumps({**json.loads(raw), "session_id": "someone-else"}).encode()
    assert claw.parse(forged, builder="b1", cwd="/w/x").session_id == p.session_id
    with pytest.raises(PayloadInvalid):
        claw.parse(b'{"tool_name": "bash"}', builder="b1", cwd="/w/x")


def test_question_observations():
    pre = claw.parse(json.dumps({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion",
                                 "tool_input": {"question": "Which DB?", "options": ["Postgres", "SQLite"]}}).encode(),
                     builder="b1", cwd="/w")
    asked, seen = claw.observe(pre)
    assert isinstance(asked, base.QuestionAsked) and asked.tool_use_id is None and asked.via == "PreToolUse"
    assert asked.questions == [{"question": "Which DB?", "header": None, "multiSelect": False,
                                "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]
    assert isinstance(seen, base.DeliveredSeen)
    out = json.dumps({"question": "Which DB?", "answer": "SQLite", "status": "answered"})
    post = claw.parse(json.dumps({"hook_event_name": "PostToolUse", "tool_name": "AskUserQuestion",
                                  "tool_input": {"question": "Which DB?", "options": ["Postgres", "SQLite"]},
                                  "tool_output": out}).encode(), builder="b1", cwd="/w")
    [res] = claw.observe(post)
    assert res.outcome == "answered" and res.answers == {"Which DB?": "SQLite"}
    assert res.selections[0].labels == ["SQLite"] and res.input_hash == asked.input_hash
    # claw-code-go's ask_user: options are {id, label}
    assert claw.questions_of({"question": "Q", "options": [{"id": "a", "label": "A"}]})[0]["options"] == [{"label": "A"}]
    # a tool result with hook feedback appended still yields its answer (transcript rows)
    row = {"type": "message", "message": {"role": "tool", "blocks": [{
        "type": "tool_result", "tool_use_id": "toolu_9", "tool_name": "AskUserQuestion",
        "output": merge_hook_feedback(["[human msg m-1 from x at t] hi"], out, False), "is_error": False}]}}
    [seen_result] = claw.transcript_observations(row)
    assert seen_result.answers == {"Which DB?": "SQLite"} and seen_result.tool_use_id == "toolu_9"


def test_fake_runner_output_rules():
    """The fake's parsing is claw's: empty is a no-op, any JSON without a message field is
    itself feedback, messages are appended as Hook feedback."""
    assert parse_output("PostToolUse", "bash", "c", "", "") == ([], False)
    assert parse_output("PostToolUse", "bash", "c", "{}", "") == (["{}"], False)
    assert parse_output("PostToolUse", "bash", "c", '{"hookSpecificOutput":{"additionalContext":"x"}}', "") == (["x"], False)
    assert parse_output("PostToolUse", "bash", "c", "{broken", "")[0][0].startswith("hook_invalid_json:")
    assert merge_hook_feedback([], "out", False) == "out"
    assert merge_hook_feedback(["a", "b"], "out", False) == "out\n\nHook feedback:\na\nb"


# --- spawn --------------------------------------------------------------------------------


def claw_settings(worktree: Path) -> dict[str, Any]:
    return json.loads((worktree / ".claw" / "settings.local.json").read_text())


def test_spawn_claw_merges_object_form_hooks_and_unspawn_restores(home: Path, worktree: Path):
    target = worktree / ".claw" / "settings.local.json"
    target.parent.mkdir()
    original = '{\n  "model": "x",\n  "hooks": {"PostToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "echo mine"}]}]}\n}\n'
    target.write_text(original)
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--harness", "claw", "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["settings_file"] == str(target) and m["events"] == ["PreToolUse", "PostToolUse", "PostToolUseFailure"]
    assert m["mcp"] is None and not (worktree / ".mcp.json").exists()
    s = claw_settings(worktree)
    assert s["model"] == "x" and set(s["hooks"]) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    assert s["hooks"]["PostToolUse"][0] == {"matcher": "bash", "hooks": [{"type": "command", "command": "echo mine"}]}
    for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        group = s["hooks"][event][-1]
        assert group["matcher"] == "*" and len(group["hooks"]) == 1
        h = group["hooks"][0]
        assert set(h) == {"type", "command"}  # claw has no hook timeout
        assert h["command"].endswith("# hookd builder=b1") and " claw b1 " in h["command"]
    assert not (worktree / ".claude").exists()  # claw does not read .claude/
    # idempotent
    assert hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--harness", "claw").returncode == 0
    assert claw_settings(worktree) == s
    r = hookd_cli(home, "unspawn", "b1", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["removed"] == 3
    assert target.read_text() == original


def test_spawn_claw_refusals(home: Path, worktree: Path, tmp_path: Path):
    r = hookd_run(home, "spawn", "b1", "--settings-file", str(tmp_path / "s.json"), "--harness", "claw")
    assert r.returncode == 2 and "--worktree" in r.stderr
    bad = worktree / ".claw" / "settings.local.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--harness", "claw")
    assert r.returncode == 2 and "not strict JSON" in r.stderr and bad.read_text() == "{not json"


def test_spawn_claw_code_go_flat_strings_with_warning(home: Path, worktree: Path):
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--harness", "claw-code-go")
    assert r.returncode == 0, r.stderr
    assert "warning" in r.stderr and "Claude Code rejects the flat form" in r.stderr
    s = json.loads((worktree / ".claude" / "settings.local.json").read_text())
    assert set(s["hooks"]) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    for entries in s["hooks"].values():
        assert len(entries) == 1 and isinstance(entries[0], str) and " claw-code-go b1 " in entries[0]
    assert hookd_cli(home, "unspawn", "b1").returncode == 0
    assert not (worktree / ".claude" / "settings.local.json").exists()
    # a file with Claude Code's object form would be skipped whole by claw-code-go: refused
    (worktree / ".claude").mkdir(exist_ok=True)
    (worktree / ".claude" / "settings.local.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}))
    before = (worktree / ".claude" / "settings.local.json").read_text()
    r = hookd_run(home, "spawn", "b2", "--worktree", str(worktree), "--harness", "claw-code-go")
    assert r.returncode == 2 and "object-form" in r.stderr
    assert (worktree / ".claude" / "settings.local.json").read_text() == before


# --- the fake claw against a real daemon ----------------------------------------------------


def claw_env(tmp_path: Path) -> dict[str, str]:
    h = tmp_path / "user-home"
    h.mkdir(exist_ok=True)
    return {"HOME": str(h), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


@pytest.fixture
def spawned(home: Path, worktree: Path) -> Path:
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--harness", "claw")
    assert r.returncode == 0, r.stderr
    return worktree


def sid_of(worktree: Path, builder: str = "b1") -> str:
    return claw.session_id(builder, os.path.realpath(worktree))


def kinds(home: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in events(home) if e["kind"] == kind]


def assert_clean(res) -> None:
    """Every hook hookd generated exited 0 with empty stderr and empty-or-one-JSON stdout."""
    for run in [*res.pre.runs, *(res.post.runs if res.post else [])]:
        cmd, code, out, err = run
        assert code == 0 and err == b"", run
        if out:
            json.loads(out)


def test_fake_claw_ask_is_detected_and_resolved(daemon: DaemonProcess, home: Path, spawned: Path, tmp_path: Path):
    fc = FakeClaw(spawned, claw_env(tmp_path))
    assert fc.hooks("PreToolUse", "AskUserQuestion") and not fc.invalid
    sid = sid_of(spawned)
    seen_pending: list[dict[str, Any]] = []

    def at_the_desk() -> str:
        # claw blocks on its own stdin: meanwhile hookd shows the question pending
        wait_until(lambda: questions(home, "pending"), 60)
        seen_pending.extend(questions(home, "pending"))
        return "SQLite"

    res = fc.ask("Which DB?", ["Postgres", "SQLite"], at_the_desk)
    assert_clean(res)
    assert res.output == res.raw_output  # nothing queued: the result is unchanged
    [q] = seen_pending
    assert q["kind"] == "question" and q["session_id"] == sid and q["builder"] == "b1"
    assert q["questions"][0]["question"] == "Which DB?" and q["tool_name"] == "AskUserQuestion"
    wait_until(lambda: kinds(home, "question_resolved"), 60)
    [done] = questions(home, "all")
    assert done["id"] == q["id"] and done["state"] == "answered" and done["answers"] == {"Which DB?": "SQLite"}
    assert done["selections"][0]["labels"] == ["SQLite"] and done["surface"] == "terminal"
    # the transcript (followed from the sessions folder the hooks named) merged into the same
    # call: one interaction, one pending, one resolved, and the claw tool_use id attached
    wait_until(lambda: questions(home, "all")[0]["tool_use_id"] == "toolu_0001", 60)
    assert len(questions(home, "all")) == 1
    assert len(kinds(home, "question_pending")) == 1 and len(kinds(home, "question_resolved")) == 1
    started = kinds(home, "session_started")
    assert [e["session_id"] for e in started] == [sid]
    assert started[0]["data"]["transcript_path"] == str(fc.session_file.parent)


def test_fake_claw_message_reaches_next_tool_result_once(daemon: DaemonProcess, home: Path, spawned: Path, tmp_path: Path):
    fc = FakeClaw(spawned, claw_env(tmp_path))
    first = fc.bash("echo one")
    assert_clean(first)
    assert first.output == "one\n"  # nothing queued: unchanged, no "Hook feedback"
    r = hookd_cli(home, "send", "b1", "also update the changelog", "--json")
    assert r.returncode == 0, r.stderr
    mid = json.loads(r.stdout)["message"]["id"]
    second = fc.bash("echo two")
    assert_clean(second)
    assert second.output.startswith("two\n\n\nHook feedback:\n" + base._HEADER)
    assert f"[human msg {mid} from {os_user()} at " in second.output and second.output.endswith("also update the changelog")
    assert second.output.count("also update the changelog") == 1
    third = fc.bash("echo three")
    assert third.output == "three\n"  # exactly once
    # the next tool call proves the model read it: adopted
    inbox = json.loads(hookd_cli(home, "inbox", "b1", "--json").stdout)
    assert [(m["id"], m["state"]) for m in inbox] == [(mid, "adopted")]
    [adopted] = kinds(home, "inbox_adopted")
    assert adopted["data"] == {"ids": [mid], "via": "PreToolUse"}
    # never into the output of a tool whose hook is PreToolUse, never systemMessage
    assert all(b"systemMessage" not in run[2] for run in second.post.runs)


def test_fake_claw_failure_result_carries_message(daemon: DaemonProcess, home: Path, spawned: Path, tmp_path: Path):
    fc = FakeClaw(spawned, claw_env(tmp_path))
    assert hookd_cli(home, "send", "b1", "look at the error").returncode == 0
    res = fc.bash("echo oops >&2; exit 3")
    assert_clean(res)
    assert res.is_error and res.post is not None
    assert res.output.startswith("oops\n\n\nHook feedback (error):\n") and "look at the error" in res.output


def test_fake_claw_daemon_down_tools_still_run(home: Path, spawned: Path, tmp_path: Path):
    fc = FakeClaw(spawned, claw_env(tmp_path))
    res = fc.bash("echo fine")
    assert not res.is_error and res.output == "fine\n"
    for cmd, code, out, err in [*res.pre.runs, *res.post.runs]:
        assert code == 0 and out == b"" and err == b""
    asked = fc.ask("Go on?", ["yes", "no"], lambda: "yes")
    assert asked.output == asked.raw_output and not asked.is_error
    spooled = sorted((home / "spool" / "b1").glob("*.json"))
    assert len(spooled) == 4 and all(f.name.endswith(".claw.json") for f in spooled)
    # the daemon ingests them at start under the same session (cwd: the spawned worktree)
    with DaemonProcess(home):
        wait_until(lambda: kinds(home, "question_resolved"), 60)
        [q] = questions(home, "all")
        assert q["session_id"] == sid_of(spawned) and q["state"] == "answered" and q["answers"] == {"Go on?": "yes"}


@pytest.mark.parametrize("client", ["c", "bash"])
def test_fake_claw_cwd_with_odd_characters(client: str, daemon: DaemonProcess, home: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", client)  # each client percent-encodes X-Hookd-Cwd
    w = tmp_path / "my wörk%tree 'x'"
    w.mkdir()
    assert hookd_run(home, "spawn", "b2", "--worktree", str(w), "--harness", "claw").returncode == 0
    fc = FakeClaw(w, claw_env(tmp_path))
    assert_clean(fc.bash("true"))
    wait_until(lambda: kinds(home, "session_started"), 60)
    [started] = kinds(home, "session_started")
    assert started["session_id"] == sid_of(w, "b2") and started["data"]["cwd"] == os.path.realpath(w)


def test_remote_answer_to_a_claw_question_goes_to_the_inbox(daemon: DaemonProcess, home: Path, spawned: Path,
                                                            tmp_path: Path):
    """claw reads the answer at its own terminal: a remote answer cannot reach the tool, so it
    is kept as a message that follows the desk's answer into the next tool result."""
    fc = FakeClaw(spawned, claw_env(tmp_path))
    receipt: dict[str, Any] = {}

    def desk() -> str:
        wait_until(lambda: questions(home, "pending"), 60)
        [q] = questions(home, "pending")
        r = hookd_cli(home, "answer", q["id"], "--option", "Postgres", "--json")
        assert r.returncode == 0, r.stderr
        receipt.update(json.loads(r.stdout))
        assert questions(home, "pending")  # still open: only the desk can close it
        return "SQLite"

    res = fc.ask("Which DB?", ["Postgres", "SQLite"], desk)
    assert receipt["delivery"] == "inbox" and "only be answered at the desk" in receipt["warning"]
    assert "claw reads the answer" in receipt["warning"] and "holding is off" not in receipt["warning"]
    [q] = questions(home, "all")
    assert q["state"] == "answered" and q["answers"] == {"Which DB?": "SQLite"} and q["surface"] == "terminal"
    # the remote answer reaches the model in this very tool result, after the desk's answer
    assert "Hook feedback:" in res.output and "Postgres" in res.output.split("Hook feedback:")[1]


def test_fake_claw_hook_never_blocks_past_its_deadline_on_held_stdin(daemon: DaemonProcess, home: Path,
                                                                      spawned: Path, tmp_path: Path):
    """claw has no hook timeout: the client's own deadline is the only bound (exit 0)."""
    import subprocess
    import time

    cmd = FakeClaw(spawned, claw_env(tmp_path)).hooks("PostToolUse", "bash")[0]
    p = subprocess.Popen(["sh", "-lc", cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=spawned, env=claw_env(tmp_path))
    t0 = time.monotonic()
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(b'{"hook_event_name":"PostToolUse","tool_name":"ba')  # never completed, never closed
    p.stdin.flush()
    try:
        assert p.wait(timeout=30) == 0
        assert time.monotonic() - t0 < 15 and p.stdout.read() == b""
    finally:
        p.stdin.close()
        p.kill()
        p.wait()


def test_claw_session_file_without_hooks_is_a_claw_session(daemon: DaemonProcess, home: Path, worktree: Path,
                                                           tmp_path: Path):
    """No hooks (the builder is known, claw has no hookd settings): a question in claw's
    session file, followed with `hookd tail FOLDER`, opens a question of a session recorded
    as claw's (not Claude Code's)."""
    assert hookd_run(home, "spawn", "b1", "--settings-file", str(tmp_path / "unused.json"), "--no-mcp").returncode == 0
    fc = FakeClaw(worktree, claw_env(tmp_path))
    assert fc.settings_files() == [] or not fc.hooks("PreToolUse", "AskUserQuestion")
    r = hookd_cli(home, "tail", str(fc.session_file.parent), "--builder", "b1")
    assert r.returncode == 0, r.stderr
    seen: list[dict[str, Any]] = []

    def at_the_desk() -> str:
        seen.extend(wait_until(lambda: questions(home, "pending"), 60))
        return "SQLite"

    fc.ask("Which DB?", ["Postgres", "SQLite"], at_the_desk)
    [q] = seen
    assert q["questions"][0]["question"] == "Which DB?" and q["session_id"] == sid_of(worktree)
    wait_until(lambda: questions(home, "all")[0]["state"] == "answered", 60)
    r = hookd_cli(home, "status", "--json")
    [b1] = [b for b in json.loads(r.stdout)["builders"] if b["builder"] == "b1"]
    assert [(s["session_id"], s["harness"], s["source"]) for s in b1["sessions"]] == [(sid_of(worktree), "claw", "transcript")]


def test_claw_sessions_folder_made_after_the_first_hook_is_followed(daemon: DaemonProcess, home: Path, spawned: Path,
                                                                     tmp_path: Path):
    """The first hook names the sessions folder before it exists (a fresh worktree): the
    tailer follows it once it appears, without a restart."""
    import shutil

    import httpx

    from hookd.config import Home

    fc = FakeClaw(spawned, claw_env(tmp_path))
    shutil.rmtree(spawned / ".claw" / "sessions")
    run = fc.run_hooks("PreToolUse", "bash", json.dumps({"command": "true"}), None, False)
    assert all(code == 0 for _, code, _, _ in run.runs)
    wait_until(lambda: kinds(home, "session_started"), 60)
    fc.session_file.parent.mkdir(parents=True)
    fc.ask("Which DB?", ["Postgres", "SQLite"], lambda: "SQLite")

    def tailed() -> list[str]:
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(Home.resolve(home).socket_path)), timeout=10) as c:
            return [t["path"] for t in c.get("http://hookd/v1/transcripts").json()]

    wait_until(lambda: str(fc.session_file) in tailed(), 60)
    wait_until(lambda: questions(home, "all") and questions(home, "all")[0]["tool_use_id"] == "toolu_0001", 60)
