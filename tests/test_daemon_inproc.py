"""What tests/test_daemon.py checked of the core through the API, in process (tests/inproc.py):
an invalid payload kept while the next hook is served, the migrations recorded, an interaction
found by its tool_use_id. The process itself (listeners, signals, kill -9, the second serve,
the CLI without a daemon) stays in tests/test_daemon.py."""

from __future__ import annotations

import json

import pytest

from hookd.store import MIGRATIONS

from .conftest import TUI
from .inproc import InProc

pytestmark = pytest.mark.inproc


def test_invalid_payload_is_kept_and_the_app_goes_on_serving(inproc: InProc) -> None:
    r = inproc.request("POST", "/v1/hooks/claude-code/b1", content=b'{"hook_event_name": 42}')
    assert r.status_code == 422
    [ev] = [e for e in inproc.events() if e["kind"] == "hook_invalid"]
    assert "hook_event_name" in ev["data"]["error"] and ev["data"]["bytes"] == 23
    r = inproc.request("POST", "/v1/hooks/claude-code/b1", content=(TUI / "007-PreToolUse.json").read_bytes())
    assert r.status_code == 200
    assert [q["id"] for q in inproc.questions("pending")] == ["toolu_01ASK0000000000000000001"]


def test_migrations_are_recorded(inproc: InProc) -> None:
    s = inproc.get("/v1/status")
    assert s["migrations"] == [name for name, _ in MIGRATIONS] and s["migrations"][0] == "0001_initial"


def test_interaction_is_found_by_its_tool_use_id_too(inproc: InProc) -> None:
    perm = json.loads((TUI / "008-PermissionRequest.json").read_bytes())
    post = (TUI / "010-PostToolUse.json").read_bytes()
    assert inproc.request("POST", "/v1/hooks/claude-code/b1", content=json.dumps(perm).encode()).status_code == 200  # seen first: pr_ id
    assert inproc.request("POST", "/v1/hooks/claude-code/b1", content=post).status_code == 200
    [q] = inproc.questions()
    assert q["id"].startswith("pr_") and q["tool_use_id"] == "toolu_01ASK0000000000000000001"
    r = inproc.request("GET", "/v1/interactions/toolu_01ASK0000000000000000001")
    assert r.status_code == 200 and r.json()["id"] == q["id"]
