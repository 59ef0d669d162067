"""hookd's hooks as a Claude Code plugin directory (issue 23, item 6): `hookd spawn B
--plugin-dir DIR` writes ``DIR/hooks/hooks.json`` (the same entries as the settings file, under
its ``hooks`` key: spawn's standalone form, recorded, checked and undone the same way) and
``DIR/.claude-plugin/plugin.json`` (the plugin's name, version and description), for ``claude
--plugin-dir DIR``. Claude Code 2.1.332 runs a plugin's hooks as it runs the settings' ones and
``claude plugin validate DIR`` accepts the directory (tests/e2e/test_plugin_e2e.py checks both).

The plugin carries the hooks only: hookd's MCP server is not registered (a plugin's MCP servers
are named after the plugin, so the settings' ``permissions.allow: ["mcp__hookd"]`` would not
match them). The builder's id is baked into each command, as in the settings file: one plugin
directory per builder.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

from hookd import __version__
from hookd.config import atomic_write
from hookd.untrusted import read_regular

#: Where the plugin's manifest and its hooks go, under the plugin directory.
MANIFEST = Path(".claude-plugin") / "plugin.json"
HOOKS_FILE = Path("hooks") / "hooks.json"


def plugin_name(builder: str) -> str:
    """The plugin's name: ``hookd-<builder>`` in kebab case (letters, digits, ``-``)."""
    return "hookd-" + (re.sub(r"[^a-z0-9]+", "-", builder.lower()).strip("-") or "builder")


def manifest_text(builder: str) -> str:
    """``plugin.json``'s contents for ``builder``'s plugin."""
    doc = {"name": plugin_name(builder), "version": __version__,
           "description": f"hookd's hooks for builder {builder}: every hook event of the session reaches the hookd "
                          "daemon (written by `hookd spawn --plugin-dir`; `hookd unspawn` removes them)"}
    return json.dumps(doc, indent=2) + "\n"


def write(plugin_dir: Path, builder: str, created_dir: bool) -> dict[str, Any]:
    """Write ``plugin_dir``'s ``plugin.json`` when it is missing or hookd's (a plugin.json of
    someone else's is left: the hooks go beside it). created_dir: spawn made ``plugin_dir``
    (unspawn removes it when empty). Returns the manifest's ``plugin`` record: ``{"dir",
    "manifest_file", "wrote_manifest", "created_dir", "claude_args"}``."""
    path = plugin_dir / MANIFEST
    mine = manifest_text(builder)
    try:
        have: str | None = read_regular(path, limit=1 << 20).decode("utf-8", "replace")
    except FileNotFoundError:
        have = None
    wrote = have is None or _is_ours(have, builder)
    if wrote and have != mine:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, mine.encode(), mode=0o644)
    return {"dir": os.fspath(plugin_dir), "manifest_file": os.fspath(path), "wrote_manifest": wrote,
            "created_dir": created_dir, "claude_args": ["--plugin-dir", os.fspath(plugin_dir)]}


def _is_ours(text: str, builder: str) -> bool:
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("name") == plugin_name(builder) and \
        str(doc.get("description", "")).startswith("hookd's hooks for builder ")


def undo(rec: dict[str, Any] | None, builder: str) -> None:
    """After unspawn removed the hooks: ``plugin.json`` removed when it is still hookd's, then
    the folders hookd made, each only when empty."""
    if not rec:
        return
    plugin_dir, path = Path(rec["dir"]), Path(rec["manifest_file"])
    try:
        if rec.get("wrote_manifest") and _is_ours(read_regular(path, limit=1 << 20).decode("utf-8", "replace"), builder):
            path.unlink()
    except OSError:
        pass
    for d in (path.parent, plugin_dir / HOOKS_FILE.parent, *((plugin_dir,) if rec.get("created_dir") else ())):
        with contextlib.suppress(OSError):
            d.rmdir()
