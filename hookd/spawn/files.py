"""The user's files `hookd spawn` merges into: per-file and per-builder locks, symlinks written
through, the shapes it refuses, hookd's tagged hook entries, atomic writes through one temp
name per file (the package's doc: :mod:`hookd.spawn`)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from hookd.config import Home, atomic_write
from hookd.models import ConfigError
from hookd.spawn.client import tag
from hookd.untrusted import NotRegularFile, read_regular


def _file_key(path: Path) -> str:
    """The lock key of a file spawn merges into: its real path (a symlink and its target,
    or two spellings of one path, share one lock)."""
    return "file:" + os.path.realpath(path)


def _builder_key(builder: str) -> str:
    return "builder:" + builder


@contextlib.contextmanager
def _locked(home: Home, keys: Iterable[str]) -> Iterator[None]:
    """Hold an exclusive ``flock`` for each key (blocking until it is ours) for the block.

    Lock files: ``HOOKD_HOME/run/locks/<sha256 of the key>.lock`` (0600, empty, kept: removing
    a lock file while another process waits on it would let a third take a fresh one). Not
    the settings file itself, which atomic writes replace. Taken in one global order (sorted
    file names), so two holders never wait on each other. A process holding a builder lock
    may take file locks, never the other way round. Raises OSError when the lock directory
    cannot be written."""
    d = home.run_dir / "locks"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    names = sorted({hashlib.sha256(k.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".lock" for k in keys})
    fds: list[int] = []
    try:
        for name in names:
            fd = os.open(d / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        for fd in reversed(fds):
            os.close(fd)  # releases its lock


def _through(path: Path) -> Path:
    """Where reading and writing ``path`` lands: ``path`` itself, or, when it is a symlink (a
    settings file kept in a dotfiles repo), the file the link points to, so that the atomic
    write (temp file + rename) happens in the target's directory and the link stays a link.
    Raises ConfigError, touching nothing, when it is a link to nothing (dangling, or a loop):
    creating a file wherever a stale link points is not what anyone asked for."""
    if not os.path.islink(path):
        return path
    real = Path(os.path.realpath(path))
    if not real.exists():
        raise ConfigError(f"{path} is a symlink to {os.readlink(path)}, which does not exist; left it untouched — "
                          "create that file (it may hold just {}) or remove the link, and try again")
    return real


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "null"
    return "a number"


def _check_hooks_shape(path: Path, settings: dict[str, Any]) -> None:
    """Refuse (ConfigError naming the key; nothing written) a ``hooks`` spawn cannot merge
    into without dropping or misreading something: each event's value must be a list of
    matcher groups; a group an object (or a string: claw-code-go's flat form); a group's
    ``hooks``, when there, a list of objects. (``hooks`` itself: :func:`_load_settings`.)"""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return

    def refuse(key: str, want: str, value: Any) -> None:
        raise ConfigError(f"{path}: '{key}' must be {want}, not {_json_type(value)}; left it untouched")

    for event, groups in hooks.items():
        if not isinstance(groups, list):
            refuse(f"hooks.{event}", "a list of matcher groups", groups)
        for i, group in enumerate(groups):
            if isinstance(group, str):
                continue
            if not isinstance(group, dict):
                refuse(f"hooks.{event}[{i}]", "an object (a matcher group)", group)
            if "hooks" not in group:
                continue
            handlers = group["hooks"]
            if not isinstance(handlers, list):
                refuse(f"hooks.{event}[{i}].hooks", "a list of hook entries", handlers)
            for j, handler in enumerate(handlers):
                if not isinstance(handler, dict):
                    refuse(f"hooks.{event}[{i}].hooks[{j}]", "an object (a hook entry)", handler)


def _load_settings(path: Path, object_key: str = "hooks") -> tuple[dict[str, Any], bool]:
    """(settings object, existed). Raises ConfigError when the file is not a strict JSON
    object, or its ``object_key`` is there and not an object (null included); the file is
    left untouched. ``path``: the file to read (a symlink is followed)."""
    try:
        data = read_regular(path)  # a FIFO or a device is refused, never waited on
    except FileNotFoundError:
        return {}, False
    except NotRegularFile as e:
        raise ConfigError(f"{path} is {e.kind}, not a settings file; left it untouched") from None
    if not data.strip():
        return {}, True
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError as e:
        raise ConfigError(f"{path} is not strict JSON ({e}); left it untouched — fix or remove it and spawn again") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{path} must hold a JSON object; left it untouched")
    if object_key in obj and not isinstance(obj[object_key], dict):
        raise ConfigError(f"{path}: '{object_key}' must be an object, not {_json_type(obj[object_key])}; left it untouched")
    return obj, True


def _original_text(path: Path, existed: bool) -> str | None:
    return read_regular(path).decode("utf-8", errors="surrogateescape") if existed else None


def is_tagged(handler: Any, marker: str) -> bool:
    """Is ``handler`` (a hook entry) hookd's, tagged ``marker``? In each form `spawn` writes:
    the shell form's ``command`` ends with it, the exec form's last ``args`` is it, an http
    hook's ``X-Hookd-Tag`` header is it."""
    if not isinstance(handler, dict):
        return False
    if str(handler.get("command", "")).endswith(marker):
        return True
    args, headers = handler.get("args"), handler.get("headers")
    if isinstance(args, list) and args and args[-1] == marker:
        return True
    return isinstance(headers, dict) and headers.get("X-Hookd-Tag") == marker


_TAG_RE = re.compile(r"# hookd builder=([A-Za-z0-9][A-Za-z0-9._-]{0,63})$")


def _tag_owner(handler: Any) -> str | None:
    """The builder a hook entry is tagged for (:func:`is_tagged`'s forms, and claw-code-go's
    flat strings), or None: not hookd's."""
    if isinstance(handler, str):
        texts = [handler]
    elif isinstance(handler, dict):
        args, headers = handler.get("args"), handler.get("headers")
        texts = [str(handler.get("command", "")), *([str(args[-1])] if isinstance(args, list) and args else []),
                 *([str(headers.get("X-Hookd-Tag", ""))] if isinstance(headers, dict) else [])]
    else:
        return None
    for text in texts:
        m = _TAG_RE.search(text)
        if m:
            return m.group(1)
    return None


def tagged_builders(settings: dict[str, Any]) -> list[str]:
    """Every builder whose hookd hooks ``settings`` (a settings or hook file's object) holds,
    sorted."""
    hooks = settings.get("hooks")
    found: set[str] = set()
    for groups in hooks.values() if isinstance(hooks, dict) else ():
        for g in groups if isinstance(groups, list) else ():
            handlers = g.get("hooks") if isinstance(g, dict) else [g]
            for h in handlers if isinstance(handlers, list) else ():
                owner = _tag_owner(h)
                if owner is not None:
                    found.add(owner)
    return sorted(found)


def refuse_shared(path: Path, settings: dict[str, Any], builder: str) -> None:
    """Refuse (ConfigError) to put ``builder``'s hooks into the file at ``path`` (its object
    ``settings``) when it already holds another builder's: each of those hooks would run for
    both, and the daemon could not tell their sessions or messages apart."""
    others = [b for b in tagged_builders(settings) if b != builder]
    if others:
        other = others[0]
        raise ConfigError(f"{path} already holds the hooks of builder {other}: one agent's hooks would report to both; "
                          f"run `hookd unspawn {other}` first, or give {builder} another worktree")


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
            if isinstance(g, str) and g.endswith(marker):  # a flat-string entry (claw-code-go)
                removed += 1
                continue
            handlers = g.get("hooks") if isinstance(g, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(g)
                continue
            kept = [h for h in handlers if not is_tagged(h, marker)]
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


#: The temp file of an atomic write into the user's directories: ``.<name>`` + this.
TMP_SUFFIX = ".hookd-tmp"


def _tmp_of(path: Path) -> Path:
    return path.with_name(f".{path.name}{TMP_SUFFIX}")


def _user_write(path: Path, data: bytes, mode: int) -> None:
    """Atomically replace ``path`` (a file in the user's directories, its lock held) through
    ``.<name>.hookd-tmp`` beside it. The temp name is fixed, so a write killed half-way leaves a
    file the next spawn or unspawn of that file removes (:func:`_drop_tmp`)."""
    atomic_write(path, data, mode, tmp=_tmp_of(path))


def _drop_tmp(path: Path) -> None:
    """Remove what a killed write into ``path`` left (its lock held): hookd's temp file
    ``.<name>.hookd-tmp`` and, from hookd versions before it, ``.<name>.<pid>.tmp`` of a pid
    that no longer runs."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        _tmp_of(path).unlink()
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):-len(".tmp")] if name.startswith(prefix) and name.endswith(".tmp") else ""
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                (path.parent / name).unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write_settings(path: Path, settings: dict[str, Any]) -> None:
    mode = 0o644
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        pass
    _user_write(path, _dump(settings), mode=mode)


def _parses_to(text: str, settings: dict[str, Any]) -> bool:
    try:
        return msgspec.json.decode(text.encode("utf-8", errors="surrogateescape")) == settings if text.strip() else settings == {}
    except msgspec.DecodeError:
        return False


def _restore(io: Path, path: Path, obj: dict[str, Any], record: dict[str, Any], changed: bool) -> None:
    """Undo hookd's edit of the user's JSON file ``path`` (written through ``io``, its target when
    it is a symlink) once hookd's entries are stripped from ``obj``: removed when hookd created
    it and nothing is left; its original text back when that still parses to ``obj`` (the user's
    bytes, formatting and all); else ``obj`` written when ``changed``. ``record``: the manifest's
    ``created_file`` and ``original`` for this file."""
    original = record.get("original")
    if record.get("created_file") and not obj and io == path:
        path.unlink()
    elif original is not None and _parses_to(original, obj):
        _user_write(io, original.encode("utf-8", errors="surrogateescape"), mode=io.stat().st_mode & 0o777)
    elif changed:
        _write_settings(io, obj)
