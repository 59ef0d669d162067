"""hookd's MCP server in the builder's files (``hookd mcp --builder B``): the entry merged into
``W/.mcp.json`` (or a standalone ``HOOKD_HOME/mcp/B.json``), the settings keys that enable and
allow it, and their exact undo (the package's doc: :mod:`hookd.spawn`)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from hookd.config import Home
from hookd.models import ConfigError
from hookd.spawn.files import _load_settings, _original_text, _restore, _through


#: The MCP server's name in Claude Code's config (its tools are ``mcp__hookd__<tool>``).
MCP_SERVER = "hookd"
#: The permission rule that allows every tool of that server.
MCP_ALLOW = f"mcp__{MCP_SERVER}"


def python_path() -> str:
    """The interpreter that runs ``hookd mcp``: this one, by its absolute path. Not its real
    path: a virtualenv's ``bin/python`` is a symlink, and resolving it would lose the venv's
    packages. A ``#!`` script (a version-manager shim: ~200 ms per start) is resolved."""
    exe = os.path.abspath(sys.executable or shutil.which("python3") or "python3")
    try:
        with open(exe, "rb") as f:
            if f.read(2) == b"#!":
                return os.path.realpath(exe)
    except OSError:
        pass
    return exe


def mcp_entry(home: Home, builder: str) -> dict[str, Any]:
    """The stdio server entry Claude Code starts for ``builder``'s sessions. ``-P``: the
    session's cwd (the worktree) is not put on ``sys.path``, so a ``hookd/`` folder there is
    never imported instead of the installed package."""
    return {"type": "stdio", "command": python_path(),
            "args": ["-P", "-m", "hookd", "--home", os.fspath(home.root), "mcp", "--builder", builder]}


def _mcp_entry_builder(entry: Any) -> str | None:
    """The builder of an MCP entry hookd generated (``... -m hookd ... mcp --builder B``);
    None for anyone else's."""
    args = entry.get("args") if isinstance(entry, dict) else None
    if (isinstance(args, list) and len(args) >= 5 and args[-3:-1] == ["mcp", "--builder"]
            and "hookd" in args and isinstance(args[-1], str)):
        return args[-1]
    return None


# --- MCP: the settings keys ---------------------------------------------------------------
def _add_mcp_keys(settings: dict[str, Any], path: Path) -> dict[str, bool]:
    """Add ``enabledMcpjsonServers: ["hookd"]`` and ``permissions.allow: ["mcp__hookd"]``
    (merged: appended to existing lists, never replacing them). Returns what was added, for
    the manifest; raises ConfigError (nothing changed) when those keys have the wrong type."""
    enabled = settings.get("enabledMcpjsonServers")
    perms = settings.get("permissions")
    allow = perms.get("allow") if isinstance(perms, dict) else None
    if enabled is not None and not isinstance(enabled, list):
        raise ConfigError(f"{path}: 'enabledMcpjsonServers' must be a list; left it untouched")
    if perms is not None and not isinstance(perms, dict):
        raise ConfigError(f"{path}: 'permissions' must be an object; left it untouched")
    if allow is not None and not isinstance(allow, list):
        raise ConfigError(f"{path}: 'permissions.allow' must be a list; left it untouched")
    added = {"enabled": False, "enabled_key": False, "allow": False, "allow_key": False, "permissions_key": False}
    if enabled is None:
        settings["enabledMcpjsonServers"] = enabled = []
        added["enabled_key"] = True
    if MCP_SERVER not in enabled:
        enabled.append(MCP_SERVER)
        added["enabled"] = True
    if perms is None:
        settings["permissions"] = perms = {}
        added["permissions_key"] = True
    if allow is None:
        perms["allow"] = allow = []
        added["allow_key"] = True
    if MCP_ALLOW not in allow:
        allow.append(MCP_ALLOW)
        added["allow"] = True
    return added


def _mcp_records(m: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The MCP records of manifest ``m``: its ``mcp`` and, when a spawn that moved the entry
    (elsewhere, or away with --no-mcp) was interrupted, the ``previous_mcp`` ones."""
    if not m:
        return []
    return [r for r in (m.get("mcp"), *(m.get("previous_mcp") or [])) if r]


def _strip_mcp_keys_of(settings: dict[str, Any], records: list[dict[str, Any]]) -> bool:
    """:func:`_strip_mcp_keys` for the first of ``records`` whose keys are there (an
    interrupted spawn may not have rewritten the settings yet: then they are an earlier
    spawn's). Returns whether anything changed."""
    return any(_strip_mcp_keys(settings, r.get("settings")) for r in records)


def _remove_last(items: Any, value: str) -> bool:
    if isinstance(items, list) and value in items:
        del items[len(items) - 1 - items[::-1].index(value)]
        return True
    return False


def _strip_mcp_keys(settings: dict[str, Any], added: dict[str, bool] | None) -> bool:
    """Undo :func:`_add_mcp_keys` as recorded in ``added``: only what hookd added, keys it
    created only when left empty. Returns whether anything changed."""
    if not added:
        return False
    changed = False
    if added.get("enabled"):
        changed |= _remove_last(settings.get("enabledMcpjsonServers"), MCP_SERVER)
    if added.get("enabled_key") and settings.get("enabledMcpjsonServers") == []:
        del settings["enabledMcpjsonServers"]
        changed = True
    perms = settings.get("permissions")
    if isinstance(perms, dict):
        if added.get("allow"):
            changed |= _remove_last(perms.get("allow"), MCP_ALLOW)
        if added.get("allow_key") and perms.get("allow") == []:
            del perms["allow"]
            changed = True
        if added.get("permissions_key") and perms == {}:
            del settings["permissions"]
            changed = True
    return changed


# --- MCP: the server entry ----------------------------------------------------------------
def _plan_mcp_json(path: Path, builder: str, entry: dict[str, Any],
                   old: dict[str, Any] | None) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Merge hookd's entry into the ``.mcp.json`` at ``path`` (in memory). Returns (the new
    object or None when nothing is to be written, the manifest's ``mcp`` record). ``old``:
    the previous spawn's record for this same file (its ``original`` is kept). Raises
    ConfigError, touching nothing, when the file is not strict JSON or holds a ``hookd``
    server hookd did not write."""
    io = _through(path)
    obj, existed = _load_settings(io, "mcpServers")
    servers = obj.get("mcpServers")
    current = servers.get(MCP_SERVER) if isinstance(servers, dict) else None
    if current is not None:
        owner = _mcp_entry_builder(current)
        if owner is None:
            raise ConfigError(f"{path} already has an MCP server named {MCP_SERVER!r} that hookd did not write; "
                              "left it untouched — rename or remove it, or spawn with --no-mcp")
        if owner != builder:
            return None, {"file": os.fspath(path), "skipped": (
                f"{path} already serves the asks of builder {owner!r}: this spawn added no MCP server; "
                f"unspawn {owner} first to give {builder} its own")}
    if old is not None:
        created_file, original, added_key = old["created_file"], old["original"], old["added_servers_key"]
    else:
        created_file, original, added_key = not existed, _original_text(io, existed), "mcpServers" not in obj
    obj.setdefault("mcpServers", {})[MCP_SERVER] = entry
    return obj, {"file": os.fspath(path), "standalone": False, "entry": entry, "created_file": created_file,
                 "added_servers_key": added_key, "original": original}


def _undo_mcp_file(rec: dict[str, Any] | None, builder: str) -> bool:
    """Remove the MCP entry a spawn recorded in ``rec``: delete a standalone config; take
    hookd's entry out of a ``.mcp.json`` and restore the file byte for byte when nothing else
    changed (delete it when spawn created it and it is left empty; a symlink is written
    through, never deleted). Raises ConfigError, touching nothing, when that file is no longer
    JSON or a dangling link. Returns whether anything was removed."""
    if not rec or rec.get("skipped") or not rec.get("file"):
        return False
    path = Path(rec["file"])
    if rec.get("standalone"):
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        try:
            path.parent.rmdir()  # only if empty
        except OSError:
            pass
        return True
    io = _through(path)  # a symlinked .mcp.json: written through, never replaced by a file
    obj, existed = _load_settings(io, "mcpServers")
    if not existed:
        return False
    servers = obj.get("mcpServers")
    removed = False
    if isinstance(servers, dict) and _mcp_entry_builder(servers.get(MCP_SERVER)) == builder:
        del servers[MCP_SERVER]
        removed = True
        if rec.get("added_servers_key") and not servers:
            del obj["mcpServers"]
    _restore(io, path, obj, rec, removed)
    return removed
