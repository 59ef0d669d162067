"""What a hook's stdout may be, per Claude Code 2.1.332's output rules (cases B11, B13 and
../shared/claude-code/README.md "Process contract"): nothing, or exactly one JSON object
whose ``hookSpecificOutput.hookEventName`` equals the input's event, with only the fields
that event accepts. Used by the bad-input suite on every hook response."""

from __future__ import annotations

import json
from typing import Any

#: Top-level keys Claude Code reads from a command hook's JSON stdout.
TOP_LEVEL = {"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason", "hookSpecificOutput"}
#: hookSpecificOutput keys accepted per event (an event not listed takes none).
SPECIFIC: dict[str, set[str]] = {
    "PreToolUse": {"hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext"},
    "PermissionRequest": {"hookEventName", "decision"},
    "PostToolUse": {"hookEventName", "additionalContext"},
    "PostToolUseFailure": {"hookEventName", "additionalContext"},
    "UserPromptSubmit": {"hookEventName", "additionalContext"},
    "SessionStart": {"hookEventName", "additionalContext"},
    "Stop": {"hookEventName", "additionalContext"},
    "SubagentStop": {"hookEventName", "additionalContext"},
}
#: Longest additionalContext hookd may send (characters; Claude Code cuts at ~50k, hookd
#: keeps each injection under 9,000 bytes).
MAX_CONTEXT = 9000


def check_hook_output(event: Any, body: bytes) -> None:
    """Raise AssertionError unless ``body`` is a valid stdout for a hook of ``event`` (the
    input's ``hook_event_name``; anything when the input had none)."""
    if body == b"":
        return
    text = body.decode("utf-8")  # raises on invalid UTF-8
    assert text.strip() == text and text.startswith("{"), f"not one bare JSON object: {text[:80]!r}"
    obj = json.loads(text)  # exactly one document: trailing data raises
    assert isinstance(obj, dict), obj
    assert set(obj) <= TOP_LEVEL, f"unknown top-level keys {set(obj) - TOP_LEVEL}"
    assert "systemMessage" not in obj, "hookd never speaks as the system (B10)"
    if "decision" in obj:
        assert event in ("Stop", "SubagentStop", "PostToolUse", "UserPromptSubmit"), (event, obj)
        assert obj["decision"] == "block" and isinstance(obj.get("reason"), str) and obj["reason"], obj
    hso = obj.get("hookSpecificOutput")
    if hso is None:
        assert obj, "an empty object: print nothing instead"
        return
    assert isinstance(hso, dict), hso
    assert event in SPECIFIC, f"{event!r} takes no hookSpecificOutput"
    assert hso.get("hookEventName") == event, (hso.get("hookEventName"), event)
    assert set(hso) <= SPECIFIC[event], f"{event}: unknown keys {set(hso) - SPECIFIC[event]}"
    assert len(hso) > 1, "hookSpecificOutput with nothing to say"
    if "additionalContext" in hso:
        ctx = hso["additionalContext"]
        assert isinstance(ctx, str) and ctx and len(ctx.encode()) <= MAX_CONTEXT, len(str(ctx))
    if event == "PreToolUse" and "permissionDecision" in hso:
        assert hso["permissionDecision"] in ("allow", "deny", "ask"), hso
        assert isinstance(hso.get("updatedInput", {}), dict)
    if event == "PermissionRequest":
        d = hso["decision"]
        assert isinstance(d, dict) and d.get("behavior") in ("allow", "deny"), d
        assert set(d) <= {"behavior", "updatedInput", "message", "interrupt"}, d
        assert isinstance(d.get("updatedInput", {}), dict) and isinstance(d.get("message", ""), str)


def check_error(status: int, content_type: str, body: bytes) -> dict[str, Any]:
    """Raise AssertionError unless this is hookd's one error shape with a 4xx status:
    ``{"error": {"code": str, "message": str}}``, both non-empty, plus, for a refused hook
    whose raw bytes were stored, ``"stored"``: their hook event id. Returns the error."""
    assert 400 <= status < 500, f"HTTP {status}: {body[:300]!r}"
    assert content_type.startswith("application/json"), content_type
    obj = json.loads(body)
    assert isinstance(obj, dict) and set(obj) == {"error"}, obj
    err = obj["error"]
    assert isinstance(err, dict) and set(err) - {"stored"} == {"code", "message"}, err
    assert isinstance(err.get("stored", 1), int) and err.get("stored", 1) >= 1, err
    assert isinstance(err["code"], str) and err["code"] and isinstance(err["message"], str) and err["message"], err
    return err
