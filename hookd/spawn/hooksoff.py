"""Does a setting turn every hook of a spawned Claude Code builder off? (``disableAllHooks``;
issue 21, "hooks that stopped working").

hookd's entries may be whole in the file spawn wrote while Claude Code runs none of them:
``"disableAllHooks": true`` in any settings file it reads for the project turns every hook
off (docs/harness-claude-code.md "disableAllHooks": checked with 2.1.332). Which value holds
is the highest-precedence file that sets the key to a boolean, lowest first:

- ``user``: ``<config dir>/settings.json`` (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``);
- ``project``: ``<worktree>/.claude/settings.json``;
- ``local``: ``<worktree>/.claude/settings.local.json``;
- ``flag``: the ``claude --settings`` file (a builder spawned with ``--settings-file``).

So ``true`` in the user's file is undone by ``false`` in the project's local one, and the
other way round. Managed (policy) settings are not read: hookd does not model them. Pure
reads, at most :data:`hookd.spawn.check.MAX_SETTINGS_BYTES` a file; never raises.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hookd.config import Home

#: The key that turns every hook off.
KEY = "disableAllHooks"
#: What each scope is called in a sentence.
SCOPES = {"user": "the user's settings", "project": "the project's settings", "local": "the project's local settings",
          "flag": "the --settings file"}


def user_config_dir(transcript_path: str | None, environ: Mapping[str, str]) -> Path:
    """Claude Code's user config folder for the agent (its ``settings.json`` is the ``user``
    scope): the folder whose ``projects/<slug>/<session>.jsonl`` is ``transcript_path`` (the
    agent's newest transcript: its own ``HOME`` or ``CLAUDE_CONFIG_DIR``, wherever it ran),
    else ``$CLAUDE_CONFIG_DIR``, else ``$HOME/.claude`` of ``environ``."""
    if transcript_path:
        p = Path(transcript_path)
        if p.parent.parent.name == "projects":
            return p.parent.parent.parent
    d = environ.get("CLAUDE_CONFIG_DIR")
    return Path(d) if d else Path(environ.get("HOME") or os.path.expanduser("~")) / ".claude"


def settings_layers(manifest: dict[str, Any], config_dir: Path) -> list[tuple[str, str]]:
    """The settings files Claude Code 2.1.332 reads for ``manifest``'s builder, lowest
    precedence first, as ``(scope, path)``: ``user``, then (with a worktree) ``project`` and
    ``local``, then ``flag`` when spawn's file is a ``--settings`` file. [] for a harness other
    than Claude Code or a plugin builder."""
    if (manifest.get("harness") or "claude-code") != "claude-code" or manifest.get("plugin"):
        return []
    out = [("user", os.fspath(config_dir / "settings.json"))]
    worktree = manifest.get("worktree")
    if isinstance(worktree, str) and worktree:
        out += [("project", os.path.join(worktree, ".claude", "settings.json")),
                ("local", os.path.join(worktree, ".claude", "settings.local.json"))]
    spawned = manifest.get("settings_file")
    if isinstance(spawned, str) and spawned and spawned not in (p for _, p in out):
        out.append(("flag", spawned))
    return out


def hooks_off(manifest: dict[str, Any], config_dir: Path) -> dict[str, Any] | None:
    """None unless a settings file turns every hook of ``manifest``'s builder off; else
    ``{"settings_file": the file whose ``disableAllHooks: true`` is in force, "scope"
    (:data:`SCOPES`), "key": "disableAllHooks", "files": every file of the layers that sets it
    true (each must lose it), "reason": words, "fix": what to do}``. A file that is missing,
    unreadable or not JSON is skipped (:func:`hookd.spawn.check.check_hooks` reports spawn's
    own); a value that is not a boolean is no setting. Never raises."""
    from hookd.spawn.check import read_settings

    found: list[tuple[str, str, bool]] = []
    for scope, path in settings_layers(manifest, config_dir):
        if not os.path.exists(path):
            continue
        settings, unread = read_settings(path)
        value = settings.get(KEY) if unread is None and isinstance(settings, dict) else None
        if isinstance(value, bool):
            found.append((scope, path, value))
    if not found or not found[-1][2]:
        return None
    scope, path, _ = found[-1]
    files = [p for _, p, v in found if v]
    also = [p for p in files if p != path]
    reason = (f"{KEY} is true in {path} ({SCOPES[scope]}): Claude Code runs no hook, hookd's included"
              + (f" (it is true in {' and '.join(also)} too)" if also else ""))
    fix = f"remove \"{KEY}\" from {' and '.join(reversed(files))}"
    if scope == "flag":
        fix += " (or set it to false there), then restart the agent: claude reads its --settings file only at start"
    else:
        where = " there" if files == [path] else f" in {path}"
        fix += (f" (or set it to false{where}): Claude Code reloads the file and runs the hooks again from its"
                " next event")
    return {"settings_file": path, "scope": scope, "key": KEY, "files": files, "reason": reason, "fix": fix}


def check_builder(home: Home, manifest: dict[str, Any], config_dir: Path) -> dict[str, Any] | None:
    """Will ``manifest``'s hooks run? None when spawn's entries are whole
    (:func:`hookd.spawn.check.check_hooks`) and no setting turns them off (:func:`hooks_off`);
    else check_hooks's shape (``settings_file``: spawn's file, ``missing``, ``changed``,
    ``reason``, ``fix``) plus ``disabled`` (:func:`hooks_off`'s finding) when a setting turns
    them off: its reason and fix come first. Never raises for the files' state."""
    from hookd.spawn.check import check_hooks

    wrong = check_hooks(home, manifest)
    off = hooks_off(manifest, config_dir)
    if off is None:
        return wrong
    if wrong is None:
        return {"settings_file": manifest.get("settings_file"), "missing": [], "changed": [], "reason": off["reason"],
                "fix": off["fix"], "disabled": off}
    return {**wrong, "reason": f"{off['reason']}; {wrong['reason']}", "fix": f"{off['fix']}; and {wrong['fix']}",
            "disabled": off}
