"""The Codex adapter (harness/codex.py): every recorded payload of fixtures/codex/0.171.0
parsed with no field unknown, what each event tells the core, where and how a message is
delivered, and the rollout read as proof of delivery. Pure functions: no daemon."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from hookd.harness import base, codex, codex_hooks
from hookd.harness.codex_payloads import MODELS, Base
from hookd.models import PayloadInvalid

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "codex" / "0.171.0"
PAYLOADS = sorted(FIXTURES.glob("*/hooks/*.json"))


def _load(scenario: str, name: str) -> base.Payload:
    return codex.parse((FIXTURES / scenario / "hooks" / name).read_bytes())


def test_every_event_of_the_recordings_has_a_model_that_knows_all_its_fields():
    seen: set[str] = set()
    for f in PAYLOADS:
        obj = json.loads(f.read_bytes())
        p = codex.parse(f.read_bytes())
        assert type(p) is MODELS[obj["hook_event_name"]], f.name
        assert set(obj) <= codex.known_fields(obj["hook_event_name"]), (f.name, set(obj) - codex.known_fields(obj["hook_event_name"]))
        seen.add(obj["hook_event_name"])
    assert seen == set(MODELS) and len(MODELS) == 14  # all 14 events of 0.171.0 were recorded


def test_parse_keeps_unknown_events_and_fields_and_refuses_bad_identity():
    p = codex.parse(b'{"hook_event_name": "FutureEvent", "session_id": "s", "new": 1}')
    assert type(p) is Base
    assert codex.parse(b'{"hook_event_name": "Stop", "session_id": "s", "brand_new": [1]}').session_id == "s"
    with pytest.raises(PayloadInvalid) as e:
        codex.parse(b'{"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": 5}')
    assert e.value.session_id == "s"
    with pytest.raises(PayloadInvalid):
        codex.parse(b'[]')


def test_what_each_event_tells_the_core():
    obs = codex.observe(_load("exec-bash-hooks", "001-SessionStart.json"))
    assert obs == [base.SessionStarted(source="startup")]
    end = codex.observe(_load("exec-bash-hooks", "010-SessionEnd.json"))
    assert [type(o) for o in end] == [base.TurnMovedOn, base.SessionEnded] and end[1].reason == "other"
    (finished,) = codex.observe(_load("exec-bash-hooks", "006-PostToolUse.json"))
    assert finished == base.ToolFinished(tool_use_id="call_SELFCXECHO00000000001", tool_name="Bash",
                                         tool_input={"command": "echo hi"}, failed=False, error=None)
    assert codex.observe(_load("exec-bash-hooks", "003-PreModelRequest.json")) == []
    (stop,) = codex.observe(_load("exec-bash-hooks", "009-Stop.json"))
    assert (stop.outcome, stop.via, stop.agent_id) == ("dismissed", "Stop", None)
    (interrupted,) = codex.observe(_load("app-compact-interrupt", "005-Interrupt.json"))
    assert interrupted.via == "Interrupt"
    assert codex.observe(_load("app-compact-interrupt", "002-PreCompact.json")) == [base.Compacting(via="PreCompact")]


def test_a_permission_prompt_hashes_like_the_call_that_ran():
    """0.171.0's PermissionRequest adds the call's ``description``; its PostToolUse does not:
    the prompt's hash leaves it out, so the PostToolUse resolves the prompt."""
    (asked,) = codex.observe(_load("app-permission-allow-deny-client", "002-PermissionRequest.json"))
    (ran,) = codex.observe(_load("app-permission-allow-deny-client", "003-PostToolUse.json"))
    assert isinstance(asked, base.PermissionAsked) and asked.permission_mode == "default"
    assert asked.tool_input["description"] == "Needs to write outside the workspace"  # shown to the human
    assert asked.input_hash == base.input_hash(ran.tool_input)
    view = codex.present_tool(asked.tool_name, asked.tool_input)
    assert (view.kind, view.detail) == ("command", "touch /home/dev/work/made-A")


def test_subagents_are_attributed():
    start = _load("exec-subagent", "003-SubagentStart.json")
    assert start.transcript_path is None  # its own rollout, not the session's
    assert codex.observe(start) == [base.SubagentStarted(agent_id="01a23b42-431f-7821-8b04-6aae3b446c93",
                                                         agent_type="default")]
    stop = codex.observe(_load("exec-subagent", "007-SubagentStop.json"))
    assert [type(o) for o in stop] == [base.TurnMovedOn, base.SubagentStopped]
    assert stop[1].transcript_path.endswith("01a23b42-431f-7821-8b04-6aae3b446c93.jsonl")
    sub_post = _load("exec-subagent", "006-PostToolUse.json")
    assert sub_post.agent_id and codex.boundary(sub_post) == "context"
    assert codex.boundary(_load("exec-subagent", "004-PreToolUse.json")) is None


@pytest.mark.parametrize("name, expected", [
    ("001-SessionStart.json", "context"), ("002-UserPromptSubmit.json", "context"), ("003-PreToolUse.json", None),
    ("004-PostToolUse.json", "context"), ("005-Stop.json", "final"), ("007-SessionEnd.json", None),
])
def test_boundaries(name, expected):
    assert codex.boundary(_load("exec-hook-outputs", name)) == expected


def test_render_context_is_what_codex_reads():
    assert msgspec.json.decode(codex.render_context("PostToolUse", "T")) == {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "T"}}
    # Stop takes no additionalContext (0.171.0 fails the hook): a block whose reason goes on the turn
    assert msgspec.json.decode(codex.render_context("Stop", "T")) == {"decision": "block", "reason": "T"}


def test_remote_answers_render_codex_decisions():
    assert msgspec.json.decode(codex_hooks.permission_reply("allow", "Bash", {"command": "x"}, None)) == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}
    assert msgspec.json.decode(codex_hooks.permission_reply("deny", "Bash", {"command": "x"}, "not now")) == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest",
                               "decision": {"behavior": "deny", "message": "not now"}}}
    assert codex_hooks.question_reply(None, [], {}) == b"" == codex_hooks.preanswer_reply({}, {})


def test_the_rollout_proves_what_reached_the_model():
    lines = (FIXTURES / "exec-hook-outputs" / "rollout.jsonl").read_bytes().splitlines()
    assert codex.sent_message_ids(lines) == set()
    row = {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": '<hook_prompt hook_run_id="stop:0:x">[human msg m-7 from a at t] go</hook_prompt>'}]}}
    other = {"type": "event_msg", "payload": {"type": "agent_message", "message": "[human msg m-8 from a at t] x"}}
    assert codex.sent_message_ids([json.dumps(row).encode(), json.dumps(other).encode(), b'{"torn']) == {"m-7"}


def test_rollout_rows():
    rows = [json.loads(line) for line in (FIXTURES / "app-compact-interrupt" / "rollout.jsonl").read_text().splitlines()]
    assert {r["type"] for r in rows} <= codex.TRANSCRIPT_ROW_TYPES
    assert codex.row_session(rows[0]) == "01a23b42-402c-7f91-aea8-ad8792ccd63f"
    kinds = [type(o).__name__ for r in rows for o in codex.transcript_observations(r)]
    assert kinds.count("TurnStarted") >= 2 and "TurnEnded" in kinds and kinds[-1] == "Interrupted"


def test_trust_hashes_match_what_codex_computed():
    """The hashes of docs/harness-codex.md's probe (hooks/list's currentHash for these
    handlers, 0.171.0), computed by the adapter without Codex."""
    assert codex_hooks.trust_hash("PermissionRequest", {"matcher": ""}, {"command": "echo a # x", "timeout": 960}) == \
        "sha256:cc32a1e9e3c5eed70378d1a24cb007ae602fe74faeb4d85e6c5700e3bcb841bc"
    assert codex_hooks.trust_hash("PreToolUse", {"matcher": ".*"}, {"command": "echo b # x", "timeout": 3600}) == \
        "sha256:4e1e569b6d300cfd38bb41e7d48d185b6feed7829fc1431949b113e574f71fa1"
    assert codex_hooks.trust_hash("Stop", {}, {"command": "echo c # x", "timeout": 30}) == \
        "sha256:3b230b83884412f7b45db19a0df4067016b42fed15e7643d54196265c47c2f85"
    assert codex_hooks.event_key("UserPromptSubmit") == "user_prompt_submit"


def test_request_user_input_is_a_question_from_its_hooks_and_its_rollout():
    (asked,) = codex.observe(_load("app-request-user-input", "001-PreToolUse.json"))
    assert isinstance(asked, base.QuestionAsked)
    assert (asked.tool_use_id, asked.tool_name, asked.via) == ("call_ASK", "request_user_input", "PreToolUse")
    assert [(q["id"], q["question"], [o["label"] for o in q["options"]]) for q in asked.questions] == [
        ("color", "Which color do you prefer?", ["Red (Recommended)", "Blue"])]
    (done,) = codex.observe(_load("app-request-user-input", "002-PostToolUse.json"))
    assert (done.outcome, done.answers, done.surface) == ("answered", {"Which color do you prefer?": "Blue"}, "terminal")
    rows = [json.loads(line) for line in (FIXTURES / "app-request-user-input" / "rollout.jsonl").read_text().splitlines()]
    seen = [o for r in rows for o in codex.transcript_observations(r) if isinstance(o, (base.QuestionAsked, base.ToolResultSeen))]
    assert seen == [msgspec.structs.replace(asked, via="transcript"),
                    base.ToolResultSeen(tool_use_id="call_ASK", is_error=False, rejected=False, answers={"color": "Blue"},
                                        questions=None, decision_source=None, answers_by_id=True)]
    # exec refuses the tool: no answer, an error
    refused = codex.call_output("call_X", "request_user_input is unavailable in Default mode")
    assert (refused.is_error, refused.answers, refused.error) == (
        True, None, "request_user_input is unavailable in Default mode")
    assert codex.answers_by_id('{"answers": {"a": {"answers": ["x", "y"]}, "b": 3}}') == {"a": "x, y"}
