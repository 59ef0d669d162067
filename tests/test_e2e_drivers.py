"""The e2e tier's helpers that docs/testing.md "Trying Claude Code by hand, offline" hands to
users, checked without Claude Code."""

from __future__ import annotations

import json
from pathlib import Path

from .e2e.drivers import seed_claude_json


def test_seed_claude_json_keeps_the_folders_trusted_before(tmp_path: Path) -> None:
    home = tmp_path / "cc-home"
    a, b = tmp_path / "a", tmp_path / "b"
    seed_claude_json(home, a)
    (home / ".claude.json").write_text(json.dumps({**json.loads((home / ".claude.json").read_text()),
                                                   "numStartups": 7}))  # (what Claude Code adds)
    seed_claude_json(home, b)
    data = json.loads((home / ".claude.json").read_text())
    assert {str(a), str(b)} <= set(data["projects"])
    assert all(data["projects"][str(p)]["hasTrustDialogAccepted"] is True for p in (a, b))
    assert "numStartups" not in data  # (the rest is written anew)


def test_seed_claude_json_approves_the_folders_mcp_servers(tmp_path: Path) -> None:
    home, proj, bare = tmp_path / "cc-home", tmp_path / "proj", tmp_path / "bare"
    proj.mkdir()
    bare.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"hookd": {"command": "hookd"}, "other": {}}}))
    seed_claude_json(home, proj)
    seed_claude_json(home, bare)
    data = json.loads((home / ".claude.json").read_text())
    assert data["projects"][str(proj)]["enabledMcpjsonServers"] == ["hookd", "other"]
    assert data["projects"][str(bare)]["enabledMcpjsonServers"] == []
