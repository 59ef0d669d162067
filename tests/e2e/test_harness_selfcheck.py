"""Self-check of the e2e harness against the real Claude Code 2.1.332, without hookd.

Each test drives the real binary against the fake Messages API and asserts on
concrete content that only a working harness produces.
"""

from __future__ import annotations

import json
import stat
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .drivers import StreamJsonHost, TmuxClaude, hermetic_env, run_print, write_settings
from .fake_api import FakeAnthropicAPI

pytestmark = pytest.mark.e2e

def _fixtures_dir() -> Path:
    """The recorded 2.1.332 scenarios, as copied into this repository."""
    return Path(__file__).resolve().parents[2] / "fixtures" / "claude-code" / "2.1.332"


FIXTURES = _fixtures_dir()
BASH_ID = "toolu_01SELFBASH0000000000001"
ASK_ID = "toolu_01SELFASK00000000000001"
QUESTION = "Which color do you prefer?"


def bash_turn(command: str = "echo hi", tool_id: str = BASH_ID) -> dict:
    return {"content": [
        {"type": "text", "text": "I'll run a command."},
        {"type": "tool_use", "id": tool_id, "name": "Bash",
         "input": {"command": command, "description": "Run a command"}},
    ]}


def text_turn(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}]}


def ask_turn() -> dict:
    return {"content": [{"type": "tool_use", "id": ASK_ID, "name": "AskUserQuestion", "input": {
        "questions": [{"question": QUESTION, "header": "Color", "multiSelect": False, "options": [
            {"label": "Red", "description": "The red option"},
            {"label": "Blue", "description": "The blue option"}]}]}}]}


def tui_script() -> dict:
    """The recorded TUI scenario's script (Bash, AskUserQuestion, text)."""
    path = FIXTURES / "tui-ask-answered-at-terminal" / "model-script.json"
    if path.exists():
        return json.loads(path.read_text())
    return {"turns": [bash_turn(), ask_turn(), text_turn("All done. FINAL-TEXT-789")]}


def write_script(path: Path, body: str) -> Path:
    """Write an executable ``sh`` script and return its path."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def recorder_hook(tmp_path: Path) -> tuple[Path, Path]:
    """A command hook that appends its stdin (one JSON object) plus a newline
    to ``hooks.jsonl``. Returns ``(script, log)``."""
    log = tmp_path / "hooks.jsonl"
    script = write_script(tmp_path / "record.sh", f"""\
tmp=$(mktemp '{tmp_path}/.hook.XXXXXX')
cat > "$tmp"
printf '\\n' >> "$tmp"
cat "$tmp" >> '{log}'
rm -f "$tmp"
""")
    return script, log


def read_payloads(log: Path) -> list[dict]:
    """All JSON objects in ``log`` (one per hook invocation)."""
    if not log.exists():
        return []
    dec, text, pos, out = json.JSONDecoder(), log.read_text(), 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out
        obj, pos = dec.raw_decode(text, pos)
        out.append(obj)


def hooks_settings(command: str, events: list[str]) -> dict:
    return {"hooks": {ev: [{"matcher": "*", "hooks": [{"type": "command", "command": command,
                                                      "timeout": 30}]}]
                      if ev not in ("Stop", "UserPromptSubmit") else
                      [{"hooks": [{"type": "command", "command": command, "timeout": 30}]}]
                      for ev in events}}


BYPASS = ("--permission-mode", "bypassPermissions")


# ------------------------------------------------------- the fake API itself
def _post(url: str, body: dict, headers: dict | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.headers.get("content-type", ""), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), exc.read().decode()


def _sse(text: str) -> list[tuple[str, dict]]:
    events = []
    for chunk in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_fake_api_scripting_routing_and_log():
    main_body = {"model": "m", "max_tokens": 100, "stream": True, "tools": [{"name": "Bash"}],
                 "messages": [{"role": "user", "content": "go"}]}
    side_body = {"model": "m", "max_tokens": 100, "stream": False,
                 "system": [{"type": "text", "text": "Generate a short kebab-case name"}],
                 "messages": [{"role": "user", "content": "<conversation>x</conversation>"}]}
    btw_body = dict(main_body, messages=[{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>This is a side question from the user. ..."},
        {"type": "text", "text": "what?"}]}])
    with FakeAnthropicAPI({"turns": [bash_turn(), text_turn("T2")]},
                          default_subagent_script={"turns": [text_turn("SUB-1")]}) as api:
        url = api.url + "/v1/messages?beta=true"
        # side requests (tool-free helper, conversation fork) consume no turn
        status, ctype, body = _post(url, side_body)
        assert status == 200 and ctype == "application/json"
        assert json.loads(body)["content"] == [{"type": "text", "text": "fake-session-name"}]
        status, _, body = _post(url, btw_body)
        assert status == 200 and "SIDE" not in body and api.turns_served == 0
        # main turn 0: streamed tool_use
        status, ctype, body = _post(url, main_body)
        assert status == 200 and ctype == "text/event-stream"
        events = _sse(body)
        assert [e for e, _ in events] == [
            "message_start", "content_block_start", "content_block_delta", "content_block_stop",
            "content_block_start", "content_block_delta", "content_block_stop",
            "message_delta", "message_stop"]
        assert events[5][1]["delta"] == {"type": "input_json_delta", "partial_json": json.dumps(
            {"command": "echo hi", "description": "Run a command"})}
        assert events[7][1]["delta"]["stop_reason"] == "tool_use"
        # a subagent gets its own script
        status, _, body = _post(url, dict(main_body, stream=False),
                                {"x-claude-code-agent-id": "a1"})
        assert json.loads(body)["content"][0]["text"] == "SUB-1"
        # main turn 1, then the fallback
        _, _, body = _post(url, dict(main_body, stream=False))
        assert json.loads(body)["content"][0]["text"] == "T2"
        assert json.loads(body)["stop_reason"] == "end_turn"
        _, _, body = _post(url, dict(main_body, stream=False))
        assert json.loads(body)["content"][0]["text"] == "done"
        status, _, _ = _post(api.url + "/v1/unknown", {"a": 1})
        assert status == 404
        kinds = [(r.kind, r.side_kind, r.turn) for r in api.requests]
        assert kinds == [("side", "rename", None), ("side", "btw", None), ("main", None, 0),
                         ("subagent", None, 0), ("main", None, 1), ("main", None, None),
                         ("unknown", None, None)]
        assert api.requests[-1].path == "/v1/unknown" and api.requests[-1].status == 404
        assert [r.agent_id for r in api.messages_requests("subagent")] == ["a1"]
        assert len(api.requests_containing("what?", kind="side")) == 1
        assert api.requests_containing("what?") == []  # default: main requests only


# ----------------------------------------------------------------------- (a)
def test_headless_bash_tool_result_reaches_model(claude_bin, fake_api: FakeAnthropicAPI,
                                                 e2e_env, e2e_project):
    fake_api.set_script({"turns": [bash_turn("echo hi"), text_turn("FINAL-SELF-A")]})
    res = run_print("Run echo hi", e2e_project, e2e_env, extra_args=BYPASS, timeout=60,
                    claude_bin=claude_bin)
    assert res.returncode == 0, res.stderr
    assert res.result is not None and res.result.get("result") == "FINAL-SELF-A", res.stdout[-2000:]
    main = fake_api.main_requests()
    assert len(main) == 2, [r.last_user_text()[-200:] for r in main]
    assert "Run echo hi" in main[0].last_user_text()
    assert main[1].tool_results().get(BASH_ID) == "hi"
    assert fake_api.requests_containing("FINAL-SELF-A") == []  # our text is never sent back
    # stream-json carried the tool result too
    users = [m for m in res.of_type("user")
             if any(b.get("tool_use_id") == BASH_ID for b in m["message"]["content"]
                    if isinstance(b, dict))]
    assert users, "no tool_result for the Bash call in the stream-json output"


# ----------------------------------------------------------------------- (b)
def test_command_hooks_fire_with_payloads(claude_bin, fake_api, e2e_env, e2e_project, tmp_path):
    script, log = recorder_hook(tmp_path)
    settings = write_settings(tmp_path / "settings.json", hooks_settings(
        f"sh {script}", ["PreToolUse", "PostToolUse", "Stop"]))
    fake_api.set_script({"turns": [bash_turn("echo hi"), text_turn("FINAL-SELF-B")]})
    res = run_print("Run echo hi", e2e_project, e2e_env, settings=settings, extra_args=BYPASS,
                    claude_bin=claude_bin)
    assert res.returncode == 0, res.stderr
    payloads = read_payloads(log)
    by_event: dict[str, list[dict]] = {}
    for p in payloads:
        by_event.setdefault(p.get("hook_event_name"), []).append(p)
    assert set(by_event) == {"PreToolUse", "PostToolUse", "Stop"}, list(by_event)
    pre = [p for p in by_event["PreToolUse"] if p.get("tool_use_id") == BASH_ID]
    post = [p for p in by_event["PostToolUse"] if p.get("tool_use_id") == BASH_ID]
    assert len(pre) == 1 and len(post) == 1, payloads
    assert pre[0]["tool_name"] == "Bash" and pre[0]["tool_input"]["command"] == "echo hi"
    assert post[0]["tool_response"]["stdout"] == "hi"
    stop = by_event["Stop"]
    assert len(stop) == 1 and stop[0]["stop_hook_active"] is False
    assert "FINAL-SELF-B" in stop[0]["last_assistant_message"]
    sessions = {p["session_id"] for p in payloads}
    assert sessions == {res.result["session_id"]}
    assert Path(pre[0]["cwd"]).resolve() == e2e_project.resolve()
    assert Path(stop[0]["transcript_path"]).is_file()


# ----------------------------------------------------------------------- (c)
def test_posttooluse_additional_context_reaches_model(claude_bin, fake_api, e2e_env, e2e_project,
                                                      tmp_path):
    out = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "MARK-123"}}
    script = write_script(tmp_path / "inject.sh",
                          f"cat >/dev/null\nprintf '%s\\n' '{json.dumps(out)}'\n")
    settings = write_settings(tmp_path / "settings.json", {"hooks": {"PostToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": f"sh {script}"}]}]}})
    fake_api.set_script({"turns": [bash_turn("echo hi"), text_turn("FINAL-SELF-C")]})
    res = run_print("Run echo hi", e2e_project, e2e_env, settings=settings, extra_args=BYPASS,
                    claude_bin=claude_bin)
    assert res.returncode == 0, res.stderr
    main = fake_api.main_requests()
    assert len(main) == 2
    assert not main[0].contains("MARK-123")
    assert main[1].contains("MARK-123")
    # 2.1.332 sends it as a role "system" message right after the tool_result.
    assert "PostToolUse:Bash hook additional context: MARK-123" in main[1].tail_text()
    assert main[1].tool_results() == {BASH_ID: "hi"}


# ----------------------------------------------------------------------- (d)
def test_tui_ask_user_question_answered_with_keys(claude_bin, tmux_bin, fake_api, e2e_env,
                                                  e2e_project):
    fake_api.set_script(tui_script())
    with TmuxClaude(e2e_project, e2e_env, extra_args=BYPASS, claude_bin=claude_bin,
                    tmux=tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Run echo hi then ask me a question")
        menu = tui.wait_for_screen(
            lambda s: "Enter to select" in s and "2. Blue" in s, timeout=20)
        assert QUESTION in menu and "1. Red" in menu
        assert len(fake_api.main_requests()) == 2  # the answer has not been sent yet
        tui.send_keys("Down")
        tui.wait_for_screen(r"❯ 2\. Blue", timeout=5)
        # Enter is ignored for ~0.1 s after the menu appears: retry until it closes.
        tui.press_until("Enter", lambda s: "Enter to select" not in s, timeout=10)
        fake_api.wait_for(lambda a: a.requests_containing('="Blue"'), timeout=20)
        done = tui.wait_for_screen("FINAL-TEXT-789", timeout=20)
        assert f"{QUESTION} → Blue" in done
    main = fake_api.main_requests()
    assert len(main) == 3
    answered = main[2].last_user_text()
    assert f'"{QUESTION}"="Blue"' in answered and '"Red"' not in answered


# ----------------------------------------------------------------------- (e)
def test_stream_json_host_answers_ask_user_question(claude_bin, fake_api, e2e_env, e2e_project):
    fake_api.set_script({"turns": [ask_turn(), text_turn("FINAL-SELF-E")]})
    with StreamJsonHost(e2e_project, e2e_env, claude_bin=claude_bin,
                        ask_choose={QUESTION: "Blue"}) as host:
        host.send_user("Ask me a question")
        result = host.wait_for_result(timeout=30)
        assert result.get("result") == "FINAL-SELF-E"
        asks = [c for c in host.control_requests
                if c["request"].get("subtype") == "can_use_tool"
                and c["request"].get("tool_name") == "AskUserQuestion"]
        assert len(asks) == 1
        assert asks[0]["request"]["tool_use_id"] == ASK_ID
        assert asks[0]["request"]["input"]["questions"][0]["question"] == QUESTION
    assert host.close() == 0
    main = fake_api.main_requests()
    assert len(main) == 2
    assert f'"{QUESTION}"="Blue"' in main[1].tool_results()[ASK_ID]


# ------------------------------------------------------------------------ (f)
def test_tui_side_requests_do_not_consume_turns(claude_bin, tmux_bin, e2e_home, e2e_project):
    script = {"turns": [text_turn("MAIN-ONE"), text_turn("MAIN-TWO")]}
    with FakeAnthropicAPI(script, side_text="SIDE-OK-77") as api:
        env = hermetic_env(e2e_home, api.url)
        with TmuxClaude(e2e_project, env, extra_args=BYPASS, claude_bin=claude_bin,
                        tmux=tmux_bin) as tui:
            tui.wait_ready(timeout=20)
            tui.submit("first prompt")
            tui.wait_for_screen("MAIN-ONE", timeout=20)
            tui.submit("/btw what is up")  # a fork of the conversation, with tools
            tui.wait_for_screen("SIDE-OK-77", timeout=20)
            tui.press_until("Escape", lambda s: "Esc to close" not in s, timeout=10)
            tui.submit("second prompt")
            tui.wait_for_screen("MAIN-TWO", timeout=20)
        kinds = [(r.kind, r.side_kind, r.turn) for r in api.messages_requests()]
        assert kinds == [("main", None, 0), ("side", "btw", None), ("main", None, 1)], kinds
        assert "second prompt" in api.main_requests()[1].tail_text()


# ------------------------------------------------------------------------ (g)
def test_the_binary_reads_the_tests_jit_setting(claude_bin, e2e_env):
    """The tests' environment (tests/e2e/conftest.py ``_runtime_env``) turns JavaScriptCore's
    DFG tier off, and 2.1.332, a Bun executable, takes it: its option dump says so."""
    assert e2e_env["BUN_JSC_useDFGJIT"] == "0"
    r = subprocess.run([str(claude_bin), "--version"], env={**e2e_env, "BUN_JSC_dumpOptions": "2"},
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "useDFGJIT=false (default: true)" in out
    assert "2.1.332 (Claude Code)" in r.stdout
