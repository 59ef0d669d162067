"""Self-check of the Codex ground against the real Codex CLI 0.171.0, without hookd.

Each test drives the real binary (``codex exec``, or ``codex app-server`` where exec cannot
show the behaviour) against the fake Responses API, offline, in a private home, with hooks
that record their payloads (``codex_drivers.Recorder``), and asserts one fact of
docs/harness-codex.md. The TUI test reuses ``drivers.TmuxClaude`` (its tmux handling is not
Claude-specific; ``seed=False`` skips Claude Code's config). With
``HOOKD_CODEX_RECORD=<folder>`` each scenario also writes what it recorded there
(``codex_drivers.save_fixture``; fixtures/codex/0.171.0 was made so).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from .codex_drivers import (AppServer, Recorder, codex_env, hooks_config, hooks_list,
                            prepare_home, rollouts, run_exec, save_fixture, trust_hash,
                            trust_hooks, write_hooks)
from .drivers import TmuxClaude, wait_until
from .fake_responses import FakeResponsesAPI, LoggedRequest, call, say
from .test_harness_selfcheck import _post, _sse

pytestmark = pytest.mark.e2e

ECHO_ID = "call_SELFCXECHO00000000001"
BYPASS = ("--dangerously-bypass-hook-trust",)
#: a word about hooks or trust in Codex's log (the tmp path, which names the test, replaced first)
SAYS_HOOK = re.compile(r"\bhooks?\b|\btrust", re.I)
LIFECYCLE = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
             "SessionEnd"]


@pytest.fixture
def fake():
    with FakeResponsesAPI() as api:
        yield api


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


@pytest.fixture
def env(home: Path, fake: FakeResponsesAPI) -> dict[str, str]:
    prepare_home(home, fake)
    return codex_env(home)


@pytest.fixture
def rec(tmp_path: Path) -> Recorder:
    return Recorder(tmp_path / "rec")


def echo_script(final: str) -> dict:
    return {"turns": [[call("exec_command", {"cmd": "echo hi"}, ECHO_ID)], [say(final)]]}


def texts_of(req: LoggedRequest, role: str) -> list[str]:
    """The text of each input message of ``role`` in ``req``."""
    return ["".join(part.get("text", "") for part in item.get("content") or [])
            for item in req.input_items() if item.get("role") == role]


def escalated(cmd: str, call_id: str) -> dict:
    """An ``exec_command`` call asking to run outside the sandbox (needs approval)."""
    return call("exec_command", {"cmd": cmd, "sandbox_permissions": "require_escalated",
                                 "justification": "Needs to write outside the workspace"}, call_id)


# ------------------------------------------------------------ the fake API itself
def test_fake_responses_scripting_routing_and_log():
    body = {"model": "m", "stream": True, "tools": [{"type": "function", "name": "exec_command"}],
            "input": [{"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "go"}]}]}
    script = {"turns": [[call("exec_command", {"cmd": "ls"}, "call_1")], "T2"]}
    with FakeResponsesAPI(script, subagent_script={"turns": ["SUB-1"]}) as api:
        url = api.url + "/responses"
        status, ctype, text = _post(url, body)
        assert status == 200 and ctype == "text/event-stream"
        events = _sse(text)
        assert [e for e, _ in events] == [
            "response.created", "response.output_item.added",
            "response.function_call_arguments.delta", "response.output_item.done",
            "response.completed"]
        assert all(data["type"] == name for name, data in events)
        done = events[3][1]["item"]
        assert (done["type"], done["name"], done["call_id"]) == ("function_call", "exec_command", "call_1")
        assert events[2][1]["delta"] == json.dumps({"cmd": "ls"}) == done["arguments"]
        assert events[-1][1]["response"]["output"] == [done]
        # a tool-free request is a side request and consumes no turn
        _post(url, dict(body, tools=[]))
        # a subagent's request (x-openai-subagent) has its own script
        _, _, text = _post(url, body, {"x-openai-subagent": "collab_spawn", "thread-id": "t-sub"})
        assert _sse(text)[2][0] == "response.output_text.delta"
        assert _sse(text)[2][1]["delta"] == "SUB-1"
        _, _, text = _post(url, body)
        assert _sse(text)[-1][1]["response"]["output"][0]["content"][0]["text"] == "T2"
        _, _, text = _post(url, dict(body, stream=False))
        assert json.loads(text)["output"][0]["content"][0]["text"] == "done"
        assert _post(api.url + "/models", {})[0] == 404
        assert [(r.kind, r.agent, r.turn) for r in api.requests] == [
            ("main", None, 0), ("side", None, None), ("subagent", "t-sub", 0), ("main", None, 1),
            ("main", None, None), ("unknown", None, None)]
        assert api.requests[0].user_texts() == ["go"]
        assert api.requests_containing("go") == api.main_requests()


# ------------------------------------------------------------ exec, offline
def test_exec_runs_offline_and_the_tool_output_reaches_the_model(codex_bin, fake, env, home, proj):
    fake.set_script(echo_script("FINAL-CX-A"))
    res = run_exec(codex_bin, "Run echo hi", proj, env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip() == "FINAL-CX-A"
    # every request Codex made reached the fake, and only the two model requests were made
    assert [(r.method, r.path, r.kind, r.turn) for r in fake.requests] == [
        ("POST", "/v1/responses", "main", 0), ("POST", "/v1/responses", "main", 1)]
    first, second = fake.main_requests()
    assert first.user_texts()[-1] == "Run echo hi"
    assert {"exec_command", "request_user_input"} <= set(first.tool_names())
    assert second.function_outputs()[ECHO_ID].endswith("Process exited with code 0\n"
                                                       "Original token count: 1\nOutput:\nhi\n")
    # the session's rollout: one JSONL file under CODEX_HOME/sessions/YYYY/MM/DD/
    (rollout,) = rollouts(home / ".codex")
    rows = [json.loads(line) for line in rollout.read_text().splitlines()]
    assert rows[0]["type"] == "session_meta"
    assert {"session_meta", "event_msg", "response_item", "turn_context"} <= {r["type"] for r in rows}
    calls = [r["payload"] for r in rows if r["type"] == "response_item"
             and r["payload"].get("type") == "function_call"]
    assert [c["call_id"] for c in calls] == [ECHO_ID]
    assert rows[-1]["type"] == "event_msg" and rows[-1]["payload"]["type"] == "task_complete"


def test_hooks_fire_with_the_documented_fields(codex_bin, fake, env, home, proj, rec):
    write_hooks(home / ".codex" / "hooks.json", hooks_config(rec.command))  # every event
    script = echo_script("FINAL-CX-B")
    fake.set_script(script)
    res = run_exec(codex_bin, "Run echo hi", proj, env, BYPASS)
    assert res.returncode == 0, res.stderr[-3000:]
    save_fixture("exec-bash-hooks", rec, fake, home / ".codex", script)
    # PostModelRequest may finish after the PreToolUse that follows it: compare apart
    assert [e for e in rec.events() if "ModelRequest" not in e] == LIFECYCLE
    start, prompt, pre, post, stop, end = [p for p in rec.payloads()
                                           if "ModelRequest" not in p["hook_event_name"]]
    (rollout,) = rollouts(home / ".codex")
    for p in rec.payloads():
        assert p["session_id"] == start["session_id"]
        assert p["transcript_path"] == str(rollout)
        assert p["cwd"] == str(proj)
    assert start["session_id"] in rollout.name
    assert "turn_id" not in start and "turn_id" not in end
    assert len({p["turn_id"] for p in rec.payloads()
                if p["hook_event_name"] not in ("SessionStart", "SessionEnd")}) == 1
    assert start["source"] == "startup" and end["reason"] == "other"
    assert prompt["prompt"] == "Run echo hi"
    # the tool is named as Claude Code names it, and carries the model's call id
    assert (pre["tool_name"], pre["tool_input"], pre["tool_use_id"]) == ("Bash", {"command": "echo hi"}, ECHO_ID)
    assert (post["tool_name"], post["tool_response"], post["tool_use_id"]) == ("Bash", "hi\n", ECHO_ID)
    assert (stop["stop_hook_active"], stop["last_assistant_message"]) == (False, "FINAL-CX-B")
    assert {p["permission_mode"] for p in (start, prompt, pre, post, stop)} == {"bypassPermissions"}
    # one Pre/PostModelRequest pair per model request, with the response's id and usage
    before, after = rec.payloads("PreModelRequest"), rec.payloads("PostModelRequest")
    assert len(before) == len(after) == len(fake.main_requests()) == 2
    assert [b["request_id"] for b in before] == [a["request_id"] for a in after]
    assert {(a["kind"], a["attempt_number"], a["status"], a["error"]) for a in after} == {
        ("sampling", 1, "completed", None)}
    assert [a["token_usage"]["input_tokens"] for a in after] == [100, 100]
    assert all(a["response_id"].startswith("resp_") for a in after)
    assert fake.main_requests()[0].user_texts()[-1] == prompt["prompt"]


def test_untrusted_hooks_are_skipped_silently_until_trusted(codex_bin, fake, env, home, proj, rec):
    hooks_file = write_hooks(home / ".codex" / "hooks.json",
                             hooks_config(rec.command, ["PreToolUse", "Stop"]))
    listed = hooks_list(codex_bin, env, proj)
    assert [(h["eventName"], h["trustStatus"], h["source"], h["sourcePath"]) for h in listed] == [
        ("preToolUse", "untrusted", "user", str(hooks_file)),
        ("stop", "untrusted", "user", str(hooks_file))]
    assert listed[0]["key"] == f"{hooks_file}:pre_tool_use:0:0"
    fake.set_script(echo_script("FINAL-CX-C"))
    res = run_exec(codex_bin, "Run echo hi", proj, env)
    assert res.returncode == 0 and res.stdout.strip() == "FINAL-CX-C", res.stderr[-3000:]
    assert rec.payloads() == []
    assert not SAYS_HOOK.search(res.stderr.replace(str(home.parent), "<tmp>")), res.stderr
    # trusted as Codex's own review does it: hooks.state in config.toml, by hash
    trust_hooks(codex_bin, env, proj)
    assert {h["trustStatus"] for h in hooks_list(codex_bin, env, proj)} == {"trusted"}
    config = (home / ".codex" / "config.toml").read_text()
    assert f'[hooks.state."{hooks_file}:pre_tool_use:0:0"]' in config
    assert f'trusted_hash = "{listed[0]["currentHash"]}"' in config
    fake.set_script(echo_script("FINAL-CX-C"))
    run_exec(codex_bin, "Run echo hi", proj, env)
    assert rec.events() == ["PreToolUse", "Stop"]
    # a changed command is "modified": skipped again, as silently
    write_hooks(hooks_file, hooks_config(lambda e: rec.command(e) + " changed",
                                         ["PreToolUse", "Stop"]))
    assert {h["trustStatus"] for h in hooks_list(codex_bin, env, proj)} == {"modified"}
    fake.set_script(echo_script("FINAL-CX-C"))
    res = run_exec(codex_bin, "Run echo hi", proj, env)
    assert res.returncode == 0 and rec.events() == ["PreToolUse", "Stop"]
    assert not SAYS_HOOK.search(res.stderr.replace(str(home.parent), "<tmp>")), res.stderr


def test_the_trust_hash_is_computable_without_codex(codex_bin, fake, env, home, proj, rec):
    """trusted_hash written into config.toml by hand (codex_drivers.trust_hash) is what Codex
    computes (hooks/list's currentHash), for handlers with and without matcher, timeout,
    async and statusMessage; with it, Codex runs the hooks."""
    pre_command = rec.command("PreToolUse") + " 'é \"q\"'"
    config = {"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": pre_command, "timeout": 7}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "true", "async": True, "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": rec.command("Stop"),
                             "statusMessage": "checking"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "true", "timeout": 30}]}]}}
    hooks_file = write_hooks(home / ".codex" / "hooks.json", config)
    listed = {h["eventName"]: h for h in hooks_list(codex_bin, env, proj)}
    # what Codex applies: no timeout is 600 s, SessionEnd's is clamped to 3 s
    assert {e: h["timeoutSec"] for e, h in listed.items()} == {
        "preToolUse": 7, "postToolUse": 5, "stop": 600, "sessionEnd": 3}
    mine = {"preToolUse": trust_hash("pre_tool_use", pre_command, 7, "Bash"),
            "postToolUse": trust_hash("post_tool_use", "true", 5, "*", is_async=True),
            "stop": trust_hash("stop", rec.command("Stop"), 600, status_message="checking"),
            "sessionEnd": trust_hash("session_end", "true", 3)}
    assert {e: h["currentHash"] for e, h in listed.items()} == mine
    keys = {e: f"{hooks_file}:{k}:0:0" for e, k in (("preToolUse", "pre_tool_use"),
            ("postToolUse", "post_tool_use"), ("stop", "stop"), ("sessionEnd", "session_end"))}
    assert {e: h["key"] for e, h in listed.items()} == keys
    with (home / ".codex" / "config.toml").open("a") as f:
        f.writelines(f'\n[hooks.state."{keys[e]}"]\ntrusted_hash = "{mine[e]}"\n' for e in mine)
    assert {h["trustStatus"] for h in hooks_list(codex_bin, env, proj)} == {"trusted"}
    fake.set_script(echo_script("FINAL-CX-H"))
    res = run_exec(codex_bin, "Run echo hi", proj, env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert rec.events() == ["PreToolUse", "Stop"]


def test_project_hooks_need_a_trusted_project(codex_bin, fake, env, home, proj, rec):
    hooks_file = write_hooks(proj / ".codex" / "hooks.json", hooks_config(rec.command, ["Stop"]))
    fake.set_script({"turns": ["FINAL-CX-D"]})
    res = run_exec(codex_bin, "hello", proj, env, BYPASS)
    assert res.returncode == 0 and rec.payloads() == []
    assert "Untrusted project-local configuration is disabled" in res.stderr
    with (home / ".codex" / "config.toml").open("a") as f:
        f.write(f'\n[projects."{proj}"]\ntrust_level = "trusted"\n')
    assert [(h["source"], h["sourcePath"]) for h in hooks_list(codex_bin, env, proj)] == [
        ("project", str(hooks_file))]
    fake.set_script({"turns": ["FINAL-CX-D"]})
    res = run_exec(codex_bin, "hello", proj, env, BYPASS)
    assert res.returncode == 0 and rec.events() == ["Stop"]


def test_hook_outputs_reach_the_model(codex_bin, fake, env, home, proj, rec):
    write_hooks(home / ".codex" / "hooks.json", hooks_config(rec.command, LIFECYCLE))
    for event, text in (("SessionStart", "CTX-START"), ("UserPromptSubmit", "CTX-PROMPT"),
                        ("PostToolUse", "CTX-POSTTOOL")):
        rec.respond(event, {"hookSpecificOutput": {"hookEventName": event,
                                                   "additionalContext": text}})
    rec.respond("Stop", {"decision": "block", "reason": "STOP-REASON-1"})
    script = {"turns": [[call("exec_command", {"cmd": "echo hi"}, ECHO_ID)], "FIRST-STOP",
                        "SECOND-STOP"]}
    fake.set_script(script)
    res = run_exec(codex_bin, "Run echo hi", proj, env, BYPASS)
    assert res.returncode == 0, res.stderr[-3000:]
    save_fixture("exec-hook-outputs", rec, fake, home / ".codex", script)
    assert res.stdout.strip() == "SECOND-STOP"
    first, second, third = fake.main_requests()
    # additionalContext becomes a developer message: SessionStart's before the prompt,
    # UserPromptSubmit's after it, PostToolUse's next to the tool output
    assert texts_of(first, "developer")[-2:] == ["CTX-START", "CTX-PROMPT"]
    assert texts_of(first, "user")[-1] == "Run echo hi"
    assert "CTX-POSTTOOL" not in first.text
    assert texts_of(second, "developer")[-1] == "CTX-POSTTOOL"
    assert second.function_outputs()[ECHO_ID].endswith("hi\n")
    # Stop's block continues the same turn with the reason as a user message
    hook_prompt = texts_of(third, "user")[-1]
    assert hook_prompt.startswith('<hook_prompt hook_run_id="stop:') and hook_prompt.endswith(
        ">STOP-REASON-1</hook_prompt>")
    stops = rec.payloads("Stop")
    assert [s["stop_hook_active"] for s in stops] == [False, True]
    assert [s["last_assistant_message"] for s in stops] == ["FIRST-STOP", "SECOND-STOP"]
    assert len({s["turn_id"] for s in stops}) == 1


# ------------------------------------------------------------ app-server
def test_permission_request_hook_allows_denies_or_leaves_it_to_the_client(
        codex_bin, fake, env, home, proj, rec, tmp_path):
    write_hooks(home / ".codex" / "hooks.json",
                hooks_config(rec.command, ["PreToolUse", "PermissionRequest", "PostToolUse"]))
    trust_hooks(codex_bin, env, proj)
    rec.respond("PermissionRequest",
                {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                        "decision": {"behavior": "allow"}}},
                {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                        "decision": {"behavior": "deny",
                                                     "message": "DENY-CX-42 use ls instead"}}})
    made = {k: tmp_path / f"made-{k}" for k in "ABC"}
    script = {"turns": [[escalated(f"touch {made['A']}", "call_ESC_A")], "DONE-A",
                        [escalated(f"touch {made['B']}", "call_ESC_B")], "DONE-B",
                        [escalated(f"touch {made['C']}", "call_ESC_C")], "DONE-C"]}
    fake.set_script(script)
    approve = {"item/commandExecution/requestApproval": {"decision": "accept"}}
    with AppServer(codex_bin, proj, env, answers=approve) as srv:
        thread = srv.start_thread(proj, approvalPolicy="on-request", sandbox="read-only")
        for key in "ABC":
            srv.run_turn(thread, f"make file {key}")
    save_fixture("app-permission-allow-deny-client", rec, fake, home / ".codex", script, srv)
    # allowed by the hook: no prompt to the client; denied: the message reaches the model;
    # no decision: the client is asked, after the hook finished
    assert made["A"].exists() and not made["B"].exists() and made["C"].exists()
    assert [r["params"]["itemId"] for r in srv.server_requests] == ["call_ESC_C"]
    denied = fake.requests_containing("call_ESC_B")[-1].function_outputs()["call_ESC_B"]
    assert denied == 'exec_command failed: CreateProcess { message: "Rejected(\\"DENY-CX-42 use ls instead\\")" }'
    asks = rec.payloads("PermissionRequest")
    assert [a["tool_input"]["command"] for a in asks] == [f"touch {made[k]}" for k in "ABC"]
    assert {a["tool_input"]["description"] for a in asks} == {"Needs to write outside the workspace"}
    assert all("tool_use_id" not in a and a["turn_id"] and a["tool_name"] == "Bash" for a in asks)
    assert {a["permission_mode"] for a in asks} == {"default"}
    assert [p["tool_use_id"] for p in rec.payloads("PostToolUse")] == ["call_ESC_A", "call_ESC_C"]
    started = [n["params"]["run"]["id"] for n in srv.notifications("hook/started")
               if n["params"]["run"]["eventName"] == "permissionRequest"]
    assert [run.rsplit(":", 1)[-1] for run in started] == ["call_ESC_A", "call_ESC_B", "call_ESC_C"]


QUESTION = {"id": "color", "header": "Color", "question": "Which color do you prefer?",
            "options": [{"label": "Red (Recommended)", "description": "The red one"},
                        {"label": "Blue", "description": "The blue one"}]}


def test_request_user_input_is_refused_in_exec(codex_bin, fake, env, proj):
    fake.set_script({"turns": [[call("request_user_input", {"questions": [QUESTION]}, "call_ASK")],
                               "FINAL-ASK"]})
    res = run_exec(codex_bin, "ask me", proj, env)
    assert res.returncode == 0 and res.stdout.strip() == "FINAL-ASK", res.stderr[-3000:]
    out = fake.main_requests()[1].function_outputs()["call_ASK"]
    assert out == "request_user_input is unavailable in Default mode"


@pytest.mark.parametrize("mode", ["default+feature", "plan"])
def test_request_user_input_reaches_an_app_server_client(codex_bin, fake, env, home, proj, rec,
                                                         mode):
    """In Default mode only with the feature ``default_mode_request_user_input``; in Plan mode
    (the turn's ``collaborationMode``, an experimental field) as it is."""
    write_hooks(home / ".codex" / "hooks.json",
                hooks_config(rec.command, ["PreToolUse", "PostToolUse"]))
    trust_hooks(codex_bin, env, proj)
    script = {"turns": [[call("request_user_input", {"questions": [QUESTION]}, "call_ASK")],
                        "FINAL-ASK"]}
    fake.set_script(script)
    answer = {"answers": {"color": {"answers": ["Blue"]}}}
    plan = mode == "plan"
    args = () if plan else ("--enable", "default_mode_request_user_input")
    with AppServer(codex_bin, proj, env, answers={"item/tool/requestUserInput": answer},
                   args=args) as srv:
        thread = srv.start_thread(proj)
        extra = {"collaborationMode": {"mode": "plan", "settings": {"model": fake.model}}} if plan else {}
        turn = srv.request("turn/start", {"threadId": thread, "input": [
            {"type": "text", "text": "ask me"}], **extra})["turn"]
        srv.wait_turn(turn["id"])
    if not plan:
        save_fixture("app-request-user-input", rec, fake, home / ".codex", script, srv)
    assert ("# Plan Mode" in fake.main_requests()[0].text) is plan
    (req,) = srv.server_requests
    assert req["method"] == "item/tool/requestUserInput"
    params = req["params"]
    assert params["itemId"] == "call_ASK" and params["threadId"] == thread
    # blocking in Plan mode only (the field replaces autoResolutionMs)
    assert params["turnId"] == turn["id"] and params["isBlocking"] is plan
    assert params["questions"] == [dict(QUESTION, isOther=True, isSecret=False)]
    assert json.loads(fake.main_requests()[1].function_outputs()["call_ASK"]) == answer
    pre, post = rec.payloads()
    assert pre["tool_name"] == post["tool_name"] == "request_user_input"
    assert pre["tool_use_id"] == post["tool_use_id"] == "call_ASK"
    assert json.loads(post["tool_response"]) == answer


def test_steer_reaches_the_next_request_and_queue_starts_a_turn(codex_bin, fake, env, home, proj,
                                                                rec, tmp_path):
    write_hooks(home / ".codex" / "hooks.json",
                hooks_config(rec.command, ["UserPromptSubmit", "Stop"]))
    trust_hooks(codex_bin, env, proj)
    gate = tmp_path / "gate"
    script = {"turns": [[call("exec_command", {"cmd": f"until [ -e {gate} ]; do sleep 0.05; done; echo open",
                                               "yield_time_ms": 30000}, "call_GATE")],
                        "FINAL-1", "FINAL-2"]}
    fake.set_script(script)
    with AppServer(codex_bin, proj, env) as srv:
        thread = srv.start_thread(proj)
        turn = srv.request("turn/start", {"threadId": thread, "input": [
            {"type": "text", "text": "wait for the gate"}]})["turn"]
        srv.wait_for(lambda s: [n for n in s.notifications("item/started")
                                if n["params"]["item"]["type"] == "commandExecution"])
        srv.request("turn/steer", {"threadId": thread, "expectedTurnId": turn["id"],
                                   "input": [{"type": "text", "text": "STEER-CX"}]})
        queued = subprocess.run([str(codex_bin), "queue", "--thread", thread, "--message", "QUEUE-CX"],
                                cwd=proj, env=env, capture_output=True, text=True, timeout=60)
        assert queued.returncode == 0 and f"for thread {thread}" in queued.stdout, queued.stderr
        gate.touch()
        srv.wait_turn(turn["id"])
        second = srv.wait_for(lambda s: [n["params"]["turn"] for n in s.notifications("turn/completed")
                                         if n["params"]["turn"]["id"] != turn["id"]])[0]
    save_fixture("app-steer-and-queue", rec, fake, home / ".codex", script, srv)
    # the steer joins the running turn at its next model request; the queued message waits
    # for the turn to end and starts a turn of its own
    after_tool, queued_turn = fake.main_requests()[1:]
    assert texts_of(after_tool, "user")[-1] == "STEER-CX"
    assert after_tool.function_outputs()["call_GATE"].endswith("open\n")
    assert not after_tool.contains("QUEUE-CX")
    assert texts_of(queued_turn, "user")[-1] == "QUEUE-CX"
    prompts = [(p["prompt"], p["turn_id"]) for p in rec.payloads("UserPromptSubmit")]
    assert prompts == [("wait for the gate", turn["id"]), ("STEER-CX", turn["id"]),
                       ("QUEUE-CX", second["id"])]
    assert [s["last_assistant_message"] for s in rec.payloads("Stop")] == ["FINAL-1", "FINAL-2"]


def test_interrupt_and_compact_hooks(codex_bin, fake, env, home, proj, rec, tmp_path):
    write_hooks(home / ".codex" / "hooks.json", hooks_config(
        rec.command, ["PreToolUse", "Stop", "Interrupt", "PreCompact", "PostCompact"]))
    trust_hooks(codex_bin, env, proj)
    gate = tmp_path / "gate"
    script = {"turns": ["FIRST", [call("exec_command", {
        "cmd": f"until [ -e {gate} ]; do sleep 0.05; done", "yield_time_ms": 30000}, "call_GATE")]]}
    fake.set_script(script)
    with AppServer(codex_bin, proj, env) as srv:
        thread = srv.start_thread(proj)
        srv.run_turn(thread, "say something")
        srv.request("thread/compact/start", {"threadId": thread})
        # compaction is a turn of its own (a turn/start meanwhile fails: "ActiveTurnNotSteerable
        # { turn_kind: Compact }"): wait for it to complete
        srv.wait_for(lambda s: len(s.notifications("turn/completed")) == 2)
        turn = srv.request("turn/start", {"threadId": thread, "input": [
            {"type": "text", "text": "wait"}]})["turn"]
        srv.wait_for(lambda s: rec.payloads("PreToolUse"))
        srv.request("turn/interrupt", {"threadId": thread, "turnId": turn["id"]})
        done = srv.wait_turn(turn["id"])
        gate.touch()
    save_fixture("app-compact-interrupt", rec, fake, home / ".codex", script, srv)
    assert done["status"] == "interrupted"
    assert rec.events() == ["Stop", "PreCompact", "PostCompact", "PreToolUse", "Interrupt"]
    assert [p["trigger"] for p in rec.payloads() if "Compact" in p["hook_event_name"]] == ["manual", "manual"]
    assert rec.payloads("Interrupt")[0]["turn_id"] == turn["id"]
    (summary,) = [r for r in fake.requests if r.kind == "side"]
    assert "CONTEXT CHECKPOINT COMPACTION" in summary.text
    (rollout,) = rollouts(home / ".codex")
    aborted = [json.loads(line)["payload"] for line in rollout.read_text().splitlines()
               if '"turn_aborted"' in line]
    assert [(a["turn_id"], a["reason"]) for a in aborted] == [(turn["id"], "interrupted")]


def test_subagent_hooks_carry_its_agent_id(codex_bin, fake, env, home, proj, rec):
    write_hooks(home / ".codex" / "hooks.json", hooks_config(rec.command, [
        "PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop", "Stop"]))
    # the parent waits (a shell loop, no fixed time) until the subagent's SubagentStop ran and
    # its task completed (a rollout has task_complete: the parent's own turn is still running);
    # the brackets keep the command's own payloads from matching
    rollout_glob = home / ".codex" / "sessions" / "*" / "*" / "*" / "rollout-*.jsonl"
    wait = (f"until grep -q 'Subagent[S]top' {rec.log} && cat {rollout_glob} | "
            f"grep -q 'task_comp[l]ete'; do sleep 0.05; done")
    script = {"turns": [[call("spawn_agent", {"message": "SUBTASK: run echo sub"}, "call_SPAWN",
                              "multi_agent_v1")],
                        [call("exec_command", {"cmd": wait, "yield_time_ms": 30000}, "call_WAIT")],
                        "PARENT-DONE"],
              "subagent": {"turns": [[call("exec_command", {"cmd": "echo sub"}, "call_SUBECHO")],
                                     "SUB-DONE"]}}
    fake.set_script(script)
    res = run_exec(codex_bin, "spawn a helper", proj, env, BYPASS)
    assert res.returncode == 0 and res.stdout.strip() == "PARENT-DONE", res.stderr[-3000:]
    save_fixture("exec-subagent", rec, fake, home / ".codex", script)
    (spawn,) = [p for p in rec.payloads("PostToolUse") if p["tool_use_id"] == "call_SPAWN"]
    assert spawn["tool_name"] == "spawn_agent"
    spawned = json.loads(spawn["tool_response"])
    agent = spawned["agent_id"]
    (start,) = rec.payloads("SubagentStart")
    (stop,) = rec.payloads("SubagentStop")
    assert (start["agent_id"], start["agent_type"]) == (agent, "default")
    assert (stop["agent_id"], stop["last_assistant_message"]) == (agent, "SUB-DONE")
    parent_rollout, sub_rollout = rollouts(home / ".codex")
    assert stop["agent_transcript_path"] == str(sub_rollout) and agent in sub_rollout.name
    assert stop["transcript_path"] == str(parent_rollout)
    sub_pre = [p for p in rec.payloads("PreToolUse") if p.get("agent_id") == agent]
    assert [p["tool_use_id"] for p in sub_pre] == ["call_SUBECHO"]
    assert sub_pre[0]["session_id"] == start["session_id"] == rec.payloads("Stop")[0]["session_id"]
    assert [p.get("agent_id") for p in rec.payloads("Stop")] == [None]
    assert {r.agent for r in fake.requests if r.kind == "subagent"} == {agent}
    assert any("<subagent_notification>" in t and "SUB-DONE" in t
               for r in fake.main_requests() for t in texts_of(r, "user"))


def test_stop_takes_no_context_and_injected_items_wait_for_the_next_turn(codex_bin, fake, env,
                                                                         home, proj, rec):
    write_hooks(home / ".codex" / "hooks.json", hooks_config(rec.command, ["Stop"]))
    trust_hooks(codex_bin, env, proj)
    rec.respond("Stop", {"hookSpecificOutput": {"hookEventName": "Stop",
                                                "additionalContext": "STOP-CTX-9"}})
    fake.set_script({"turns": ["ONE", "TWO"]})
    injected = {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "INJECTED-CX"}]}
    with AppServer(codex_bin, proj, env) as srv:
        thread = srv.start_thread(proj)
        first = srv.run_turn(thread, "first")
        assert srv.request("thread/inject_items", {"threadId": thread, "items": [injected]}) == {}
        srv.run_turn(thread, "second")
    (stop_run,) = [n["params"]["run"] for n in srv.notifications("hook/completed")
                   if n["params"]["turnId"] == first["id"]]
    assert (stop_run["status"], stop_run["entries"]) == (
        "failed", [{"kind": "error", "text": "hook returned invalid stop hook JSON output"}])
    assert not any(r.contains("STOP-CTX-9") for r in fake.requests)
    # the injected item started no turn; the next turn's request has it before the prompt
    assert len(fake.main_requests()) == 2
    assert fake.main_requests()[1].user_texts()[-3:] == ["first", "INJECTED-CX", "second"]


def test_tui_asks_to_review_untrusted_hooks(codex_bin, tmux_bin, fake, env, home, proj, rec):
    write_hooks(home / ".codex" / "hooks.json", hooks_config(rec.command, ["PreToolUse", "Stop"]))
    fake.set_script(echo_script("FINAL-CX-TUI"))
    # --no-daemon: the TUI would otherwise start a shared app-server daemon that outlives it
    with TmuxClaude(proj, env, extra_args=("--no-daemon", "--no-alt-screen"), claude_bin=codex_bin,
                    seed=False, tmux=tmux_bin) as tui:
        review = tui.wait_for_screen("Continue without trusting", timeout=30)
        assert "Hooks need review" in review and "2 hooks are new or changed." in review
        assert "2. Trust all and continue" in review
        # "2" puts the cursor on option 2 (it does not confirm); keys sent as the dialog opens
        # can be lost, and a repeated "2" changes nothing, so it is sent until it shows
        tui.press_until("2", r"› 2\. Trust all and continue", timeout=10)
        tui.press_until("Enter", lambda s: "Continue without trusting" not in s, timeout=10)
        # the TUI writes hooks.state into config.toml itself (when the dialog has closed)
        wait_until(lambda: {h["trustStatus"] for h in hooks_list(codex_bin, env, proj)} == {"trusted"},
                   20, message="the TUI's trust in config.toml")
        tui.wait_for_screen("Ask Codex to do anything", timeout=20)
        tui.submit("Run echo hi")
        tui.wait_for_screen("FINAL-CX-TUI", timeout=30)
        fake.wait_for(lambda a: len(a.main_requests()) == 2)
        wait_until(lambda: rec.payloads("Stop"), 10, message="the Stop hook")
    assert rec.events() == ["PreToolUse", "Stop"]
    assert rec.payloads("PreToolUse")[0]["permission_mode"] == "default"
