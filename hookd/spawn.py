"""Spawn-time generation: the hook client and the builder's hook configuration.

`hookd spawn B --worktree W` writes ``HOOKD_HOME/bin/hook-client`` (bash) and merges one
hook entry per event into ``W/.claude/settings.local.json`` (or a standalone file for
``claude --settings``). Entries are recognised by a tag comment at the end of their command
(``# hookd builder=B``), so re-spawn replaces them and `unspawn` removes exactly them. Other
hooks and keys are never touched; files are written atomically; a file that is not strict
JSON is refused and left as it was. A manifest (``builders/B.json``) records what was added.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import time
from pathlib import Path
from typing import Any

import msgspec

from hookd.config import DEFAULT_DEADLINE_MS, Home, atomic_write, check_builder_id
from hookd.harness import claude_code as cc
from hookd.hooks import client_template
from hookd.models import ConfigError, NotFound

HARNESSES = (cc.HARNESS,)
#: Default wait of the idle-wake hook (seconds): an agent idle longer is not woken; its
#: messages wait for the next prompt.
DEFAULT_WAKE_WAIT_S = 0  # opt-in: see docs/decisions.md "Idle wake"
#: Default window (seconds) a PermissionRequest hook holds for a remote answer; the prompt
#: stays usable at the desk meanwhile. 0: never hold.
DEFAULT_HOLD_S = 900


def tag(builder: str) -> str:
    return f"# hookd builder={builder}"


def bash_path() -> str:
    """The real path of bash (no shims, no PATH lookup at hook time): the first ``bash`` on
    PATH (then the usual places) that resolves to a binary, skipping ``#!`` scripts such as
    version-manager shims."""
    found = shutil.which("bash") or "/bin/bash"
    candidates = [found, *(os.path.join(d, "bash") for d in os.get_exec_path()), "/bin/bash", "/usr/bin/bash"]
    for c in candidates:
        real = os.path.realpath(c)
        try:
            with open(real, "rb") as f:
                if f.read(2) != b"#!" and os.access(real, os.X_OK):
                    return real
        except OSError:
            continue
    return os.path.realpath(found)


def hook_command(home: Home, harness: str, builder: str, deadline_ms: int, mode: str = "hook") -> str:
    """The exact shell command the harness runs (``sh -c``): absolute, quoted paths; the
    builder id and hookd's tag baked in; no placeholder substitution. ``exec``: the harness's
    signals (SIGTERM on timeout or Esc) reach the client itself, not just the ``sh`` that
    started it (dash does not exec the last command of ``sh -c``). ``bash -p``: the agent's
    environment cannot inject code or cost (``BASH_ENV``, exported functions, ``SHELLOPTS``
    are ignored)."""
    client = shlex.quote(os.fspath(home.client_script))
    parts = [shlex.quote(bash_path()), "-p", client, harness, builder, str(deadline_ms)]
    if mode != "hook":
        parts.append(mode)
    # a missing client (the home was moved or deleted) must not turn every hook into an
    # error the agent's user sees: `[` is a builtin of sh, so the check costs nothing
    return f"[ -r {client} ] || exit 0; exec " + " ".join(parts) + " " + tag(builder)


def client_argv(command: str) -> list[str]:
    """The argv a generated command execs (``bash -p hook-client HARNESS BUILDER MS``)."""
    words = shlex.split(command, comments=True)
    return words[words.index("exec") + 1:]


def write_client(home: Home) -> Path:
    """(Re)write the home's hook client script (0700) with the home's path baked in."""
    text = client_template().replace("@HOOKD_HOME@", shlex.quote(os.fspath(home.root)))
    path = home.client_script
    try:
        if path.read_text() == text:
            return path
    except FileNotFoundError:
        pass
    atomic_write(path, text.encode(), mode=0o700)
    return path


def _load_settings(path: Path) -> tuple[dict[str, Any], bool]:
    """(settings object, existed). Raises ConfigError when the file is not a strict JSON
    object; the file is left untouched."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, False
    if not data.strip():
        return {}, True
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError as e:
        raise ConfigError(f"{path} is not strict JSON ({e}); left it untouched — fix or remove it and spawn again") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{path} must hold a JSON object; left it untouched")
    hooks = obj.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise ConfigError(f"{path}: 'hooks' must be an object; left it untouched")
    return obj, True


def _strip_tagged(settings: dict[str, Any], builder: str) -> int:
    """Remove hook handlers tagged for ``builder``; drop groups and events left empty.
    Returns how many handlers were removed."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    marker = tag(builder)
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for g in groups:
            handlers = g.get("hooks") if isinstance(g, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(g)
                continue
            kept = [h for h in handlers if not (isinstance(h, dict) and str(h.get("command", "")).endswith(marker))]
            removed += len(handlers) - len(kept)
            if kept or not handlers:
                kept_groups.append({**g, "hooks": kept} if len(kept) != len(handlers) else g)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed


def _dump(settings: dict[str, Any]) -> bytes:
    return msgspec.json.format(msgspec.json.encode(settings), indent=2) + b"\n"


def _write_settings(path: Path, settings: dict[str, Any]) -> None:
    mode = 0o644
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        pass
    atomic_write(path, _dump(settings), mode=mode)


def spawn(
    home: Home,
    builder: str,
    *,
    worktree: Path | None = None,
    settings_file: Path | None = None,
    harness: str = cc.HARNESS,
    deadline_ms: int | None = None,
    wake_wait_s: int = DEFAULT_WAKE_WAIT_S,
    hold_s: int = DEFAULT_HOLD_S,
) -> dict[str, Any]:
    """Install hookd's hooks for ``builder``; idempotent. Returns the manifest.

    worktree: the builder's worktree (hooks go to ``.claude/settings.local.json``) unless
    settings_file is given (a standalone file for ``claude --settings``).
    deadline_ms: the hook client's hard deadline (default HOOKD_DEADLINE_MS or 5000).
    wake_wait_s: how long the idle-wake Stop hook waits for a message (seconds; 0: no idle
    wake hook). hold_s: how long a PermissionRequest hook waits for a remote answer (seconds;
    0: it does not wait; Claude Code's timeout for it is hold_s + 60).
    Raises ConfigError on a bad builder id, a missing worktree, or a non-JSON settings file.
    """
    check_builder_id(builder)
    if harness not in HARNESSES:
        raise ConfigError(f"unknown harness {harness!r}; supported: {', '.join(HARNESSES)}")
    if deadline_ms is None:
        deadline_ms = int(os.environ.get("HOOKD_DEADLINE_MS", DEFAULT_DEADLINE_MS))
    if not 100 <= deadline_ms <= 600_000:
        raise ConfigError("deadline must be between 0.1 and 600 seconds")
    if not 0 <= wake_wait_s <= 86_400:
        raise ConfigError("wake wait must be between 0 (off) and 86400 seconds")
    if not (hold_s == 0 or 5 <= hold_s <= 86_400):
        raise ConfigError("hold must be 0 (off) or between 5 and 86400 seconds")
    if settings_file is None:
        if worktree is None:
            raise ConfigError("give --worktree DIR or --settings-file PATH")
        worktree = worktree.expanduser().absolute()
        if not worktree.is_dir():
            raise ConfigError(f"worktree {worktree} is not a directory")
        target = worktree / ".claude" / "settings.local.json"
    else:
        target = settings_file.expanduser().absolute()
    home.ensure()
    old = read_manifest(home, builder)
    if old and old["settings_file"] != os.fspath(target):
        unspawn(home, builder)
        old = None

    settings, existed = _load_settings(target)
    original = target.read_text(encoding="utf-8", errors="surrogateescape") if existed else None
    had_hooks_key = "hooks" in settings
    created_dir = not target.parent.exists()
    _strip_tagged(settings, builder)
    command = hook_command(home, harness, builder, deadline_ms)
    timeout_s = max(10, math.ceil(deadline_ms / 1000) * 2)
    wake_command = hook_command(home, harness, builder, wake_wait_s * 1000, mode="wake") if wake_wait_s else None
    permission_command = hook_command(home, harness, builder, hold_s * 1000) if hold_s else None
    hooks = settings.setdefault("hooks", {})
    for event, groups in cc.hook_settings(command, timeout_s, wake_command, wake_wait_s + 60,
                                          permission_command, hold_s + 60).items():
        existing = hooks.get(event)
        hooks[event] = (existing if isinstance(existing, list) else []) + groups

    write_client(home)
    home.spool_dir(builder).mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_settings(target, settings)
    manifest = {
        "builder": builder,
        "harness": harness,
        "worktree": os.fspath(worktree) if worktree else None,
        "settings_file": os.fspath(target),
        "command": command,
        "deadline_ms": deadline_ms,
        "wake_wait_s": wake_wait_s,
        "hold_s": hold_s,
        "events": list(cc.REGISTERED_EVENTS),
        "created_file": old["created_file"] if old else not existed,
        "created_dir": old.get("created_dir", False) if old else created_dir,
        "added_hooks_key": old["added_hooks_key"] if old else not had_hooks_key,
        # the file as it was before the first spawn: unspawn restores it byte for byte when
        # nothing else changed meanwhile
        "original": old.get("original") if old else original,
        "spawned_at": time.time(),
    }
    atomic_write(home.manifest(builder), _dump(manifest), mode=0o600)
    return manifest


def read_manifest(home: Home, builder: str) -> dict[str, Any] | None:
    try:
        return msgspec.json.decode(home.manifest(builder).read_bytes())
    except FileNotFoundError:
        return None


def list_manifests(home: Home) -> list[dict[str, Any]]:
    """Every spawned builder's manifest, by builder id."""
    out = []
    if home.builders_dir.is_dir():
        for f in sorted(home.builders_dir.glob("*.json")):
            try:
                out.append(msgspec.json.decode(f.read_bytes()))
            except (OSError, msgspec.DecodeError):
                continue
    return out


def _parses_to(text: str, settings: dict[str, Any]) -> bool:
    try:
        return msgspec.json.decode(text.encode("utf-8", errors="surrogateescape")) == settings if text.strip() else settings == {}
    except msgspec.DecodeError:
        return False


def unspawn(home: Home, builder: str) -> dict[str, Any]:
    """Remove exactly what `spawn` added for ``builder``. Raises NotFound when the builder
    was never spawned in this home, ConfigError when its settings file is no longer JSON.
    Returns ``{"builder", "settings_file", "removed"}`` (handlers removed)."""
    m = read_manifest(home, builder)
    if m is None:
        raise NotFound(f"builder {builder!r} was not spawned in {home.root}")
    target = Path(m["settings_file"])
    removed = 0
    settings, existed = _load_settings(target)
    if existed:
        removed = _strip_tagged(settings, builder)
        if m.get("added_hooks_key") and settings.get("hooks") == {}:
            del settings["hooks"]
        original = m.get("original")
        if m.get("created_file") and not settings:
            target.unlink()
            if m.get("created_dir"):
                try:
                    target.parent.rmdir()  # only if empty
                except OSError:
                    pass
        elif original is not None and _parses_to(original, settings):
            atomic_write(target, original.encode("utf-8", errors="surrogateescape"),
                         mode=target.stat().st_mode & 0o777)
        elif removed:
            _write_settings(target, settings)
    home.manifest(builder).unlink()
    spool = home.spool_dir(builder)
    if spool.is_dir() and not any(spool.iterdir()):
        spool.rmdir()
    return {"builder": builder, "settings_file": os.fspath(target), "removed": removed}
