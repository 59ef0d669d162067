"""The Claude Code adapter on real recorded payloads and on the answer shapes of the field."""

from __future__ import annotations

import json

import pytest

from hookd.harness import base
from hookd.harness import claude_code as cc
from hookd.harness import claude_code_hooks as cch
from hookd.models import PayloadInvalid

from .conftest import FIXTURES, TUI

pytestmark = pytest.mark.inproc


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*/hooks/*.json")), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_recorded_payload_parses_to_its_model(path):
    p = cc.parse(path.read_bytes())
    name = json.loads(path.read_bytes())["hook_event_name"]
    assert p.hook_event_name == name
    assert type(p) is cc.MODELS[name], f"{name} has no model"
    assert p.session_id


def test_ask_pre_tool_use_is_a_question_with_its_tool_use_id():
    [ob] = cc.observe(cc.parse((TUI / "007-PreToolUse.json").read_bytes()))
    assert isinstance(ob, base.QuestionAsked)
    assert ob.tool_use_id == "toolu_01ASK0000000000000000001"
    assert ob.questions[0]["question"] == "Which color do you prefer?"


def test_permission_request_hash_matches_pre_tool_use_and_post_tool_use():
    pre = cc.observe(cc.parse((TUI / "007-PreToolUse.json").read_bytes()))[0]
    perm = cc.observe(cc.parse((TUI / "008-PermissionRequest.json").read_bytes()))[0]
    post = cc.observe(cc.parse((TUI / "010-PostToolUse.json").read_bytes()))[0]
    assert perm.tool_use_id is None
    assert pre.input_hash == perm.input_hash == post.input_hash


def test_post_tool_use_resolves_answered_with_text_keyed_answers():
    [ob] = cc.observe(cc.parse((TUI / "010-PostToolUse.json").read_bytes()))
    assert ob.outcome == "answered"
    assert ob.answers == {"Which color do you prefer?": "Blue"}
    assert ob.selections[0].labels == ["Blue"] and ob.selections[0].other is None


def _q(text, labels, multi=False):
    return {"question": text, "header": "H", "multiSelect": multi,
            "options": [{"label": lab, "description": "d"} for lab in labels]}


def test_multiselect_labels_containing_commas_are_split_on_known_labels():
    qs = [_q("Colors?", ["Red, dark", "Blue", "Red"], multi=True)]
    [s] = base.decode_answers(qs, {"Colors?": "Red, dark, Blue"})
    assert s.labels == ["Red, dark", "Blue"]
    assert s.other is None and s.raw == "Red, dark, Blue"


def test_free_text_other_is_kept_verbatim():
    qs = [_q("DB?", ["Postgres", "SQLite"]), _q("Colors?", ["Red", "Blue"], multi=True)]
    got = base.decode_answers(qs, {"DB?": "MySQL, with replicas,  please", "Colors?": "Red, green-ish"})
    assert got[0].labels == [] and got[0].other == "MySQL, with replicas,  please"
    # multi-select items are decoded one by one: known labels, then the free text
    assert got[1].labels == ["Red"] and got[1].other == "green-ish"
    assert got[1].raw == "Red, green-ish"


@pytest.mark.parametrize("raw, labels, other", [
    # Claude Code 2.1.332 quotes items containing a comma or a quote, in checked order
    ('Cheese, "Ham, smoked"', ["Cheese", "Ham, smoked"], None),
    ('"Ham, smoked", Olives', ["Ham, smoked", "Olives"], None),
    ('"Say \\"hi\\"", " anchovies, lots"', ['Say "hi"'], " anchovies, lots"),
    ("Cheese, anchovies", ["Cheese"], "anchovies"),
    ('"unterminated, Cheese', [], '"unterminated, Cheese'),
])
def test_multiselect_quoted_items(raw, labels, other):
    qs = [_q("Toppings?", ["Olives", "Cheese", "Ham, smoked", 'Say "hi"'], multi=True)]
    [s] = base.decode_answers(qs, {"Toppings?": raw})
    assert (s.labels, s.other, s.raw) == (labels, other, raw)


def test_answer_for_unknown_question_is_kept():
    [s] = base.decode_answers([_q("A?", ["x", "y"])], {"B?": "x"})
    assert s.question == "B?" and s.other == "x"


def test_empty_answers_resolve_as_empty_with_a_warning():
    raw = json.loads((TUI / "010-PostToolUse.json").read_bytes())
    raw["tool_response"]["answers"] = {}
    raw["tool_input"]["answers"] = {}
    [ob] = cc.observe(cc.parse(json.dumps(raw).encode()))
    assert ob.outcome == "empty" and ob.warning and ob.surface is None


def test_post_tool_use_failure_is_dismissed():
    raw = json.loads((TUI / "007-PreToolUse.json").read_bytes())
    raw.update(hook_event_name="PostToolUseFailure", error="The user doesn't want to proceed", is_interrupt=True)
    [ob] = cc.observe(cc.parse(json.dumps(raw).encode()))
    assert ob.outcome == "dismissed" and "doesn't want" in ob.error


@pytest.mark.parametrize("raw, why", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "JSON object"),
    (b'{"session_id": "s"}', "hook_event_name"),
    (b'{"hook_event_name": "PreToolUse", "tool_name": 5}', "PreToolUse payload"),
    (b'{"hook_event_name": "Stop", "session_id": "s", "x": "\xff"}', "not valid JSON"),
])
def test_bad_payloads_raise_payload_invalid_with_a_reason(raw, why):
    with pytest.raises(PayloadInvalid, match=why):
        cc.parse(raw)


def test_unknown_event_and_fields_are_accepted():
    p = cc.parse(b'{"hook_event_name": "FutureEvent", "session_id": "s", "brand_new": {"x": 1}}')
    assert type(p) is cc.Base and p.hook_event_name == "FutureEvent"
    assert cc.observe(p) == []


def test_generated_settings_cover_every_event_and_mcp_tools():
    import re

    s = cch.hook_settings("cmd # hookd builder=b1", 10)
    assert set(s) == set(cc.REGISTERED_EVENTS)
    for event, [group] in s.items():
        if event in cch.TOOL_EVENTS:
            assert re.fullmatch(group["matcher"], "mcp__tracker__create_item")
        elif event in cch.NO_MATCHER_EVENTS:
            assert "matcher" not in group
        assert group["hooks"] == [{"type": "command", "command": "cmd # hookd builder=b1", "timeout": 10}]


def test_dot_answers_are_empty_not_answered():
    raw = json.loads((TUI / "010-PostToolUse.json").read_bytes())
    raw["tool_response"]["answers"] = {"Which color do you prefer?": "."}
    [ob] = cc.observe(cc.parse(json.dumps(raw).encode()))
    assert ob.outcome == "empty" and "30563" in ob.warning
    assert ob.answers == {"Which color do you prefer?": "."}  # kept as reported


def _tx_rows(marker_hash="h1", tail=("h1",), text="[human msg m-3 from alice at T] hi"):
    return [
        json.dumps({"type": "api-request-blob", "hash": marker_hash,
                    "message": {"role": "user", "content": [{"type": "text", "text": f"PostToolUse:Bash hook additional context: {text}"}]}}).encode(),
        json.dumps({"type": "api-request-blob", "hash": "h2", "message": {"role": "user", "content": "[human msg m-9 from x at T] never sent"}}).encode(),
        b'{"type": "api-request", "tail": ["torn',
        json.dumps({"type": "api-request", "tail": list(tail)}).encode(),
    ]


def test_transcript_proof_needs_the_blob_in_a_sent_request():
    assert cc.sent_message_ids(_tx_rows()) == {"m-3"}
    assert cc.sent_message_ids(_tx_rows(tail=("other",))) == set()  # written, never sent
    assert cc.sent_message_ids(list(reversed(_tx_rows()))) == {"m-3"}  # row order is not time order
