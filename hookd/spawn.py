"""Spawn-time generation: the hook client and the builder's hook configuration.

`hookd spawn B --worktree W` writes ``HOOKD_HOME/bin/hook-client`` (bash) and merges one
hook entry per event into ``W/.claude/settings.local.json`` (or a standalone file for
``claude --settings``). Entries are recognised by a tag comment at the end of their command
(``# hookd builder=B``), so re-spawn replaces them and `unspawn` removes exactly them. Other
hooks and keys are never touched; files are written atomically; a file that is not strict
JSON is refused and left as it was. A manifest (``builders/B.json``) records what was added.

Concurrent spawns and unspawns (of different builders into one worktree, say) do not lose
each other's entries: each holds an exclusive ``flock`` per file it merges into (keyed by the
file's real path) around its read-merge-write, and one per builder around the whole run; the
lock files live in ``HOOKD_HOME/run/locks/``, never next to the user's files. A settings file
or ``.mcp.json`` that is a symlink (a dotfiles repo) is written through: the link stays a
link and the file it points to gets the atomic write; a dangling link is refused.

Crash-consistent: a spawn first records its intent (the manifest, ``state: "spawning"``,
with everything unspawn needs to undo it, also what the previous spawn had elsewhere), then
writes the user's files, then the final manifest. A ``kill -9`` at any point leaves a builder
that `unspawn` knows and undoes (or that a second `spawn` completes). Writes into the user's
directories go through one temp file name per file (``.<name>.hookd-tmp``, only ever written
with that file's lock held), which the next spawn or unspawn touching that file removes.

MCP (default on): the entry ``mcpServers.hookd`` (``python -P -m hookd --home H mcp --builder
B``) is merged into ``W/.mcp.json``, and ``enabledMcpjsonServers: ["hookd"]`` (no "new MCP
server" dialog) plus ``permissions.allow: ["mcp__hookd"]`` (no permission prompt; in ``-p``
no denial) into the settings file; with ``--settings-file`` the entry goes to a standalone
``HOOKD_HOME/mcp/B.json`` for ``claude --mcp-config``. The same rules hold: recognised by
its ``mcp --builder B`` arguments, recorded in the manifest, undone exactly by `unspawn`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

import platformdirs

from hookd.config import DEFAULT_DEADLINE_MS, MAX_SOCKET_PATH, Home, atomic_write, check_builder_id
from hookd.harness import claude_code as cc
from hookd.harness import claw
from hookd.hooks import c_client_source, client_template
from hookd.models import ConfigError, NotFound
from hookd.untrusted import NotRegularFile, read_regular

HARNESSES = (cc.HARNESS, *claw.HARNESSES)
#: Default wait of the idle-wake hook (seconds): an agent idle longer is not woken; its
#: messages wait for the next prompt.
DEFAULT_WAKE_WAIT_S = 0  # opt-in: see docs/decisions.md "Idle wake"
#: Default window (seconds) a PermissionRequest hook holds for a remote answer; the prompt
#: stays usable at the desk meanwhile. 0: never hold.
DEFAULT_HOLD_S = 900


#: The MCP server's name in Claude Code's config (its tools are ``mcp__hookd__<tool>``).
MCP_SERVER = "hookd"
#: The permission rule that allows every tool of that server.
MCP_ALLOW = f"mcp__{MCP_SERVER}"


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


#: ``HOOKD_HOOK_CLIENT``: which hook client `hookd spawn` writes. ``auto`` (default): the
#: compiled client when a C compiler builds it, else the bash client; ``c``: the compiled
#: client, and spawn fails without a working compiler; ``bash``: the bash client.
HOOK_CLIENTS = ("auto", "c", "bash")
#: Compiler flags tried in order: static (no dynamic loader at each hook's start: ~0.15 ms),
#: then dynamic where the C library cannot link statically (macOS).
C_FLAGS = (["-O2", "-static"], ["-O2"])


def hook_client_kind() -> str:
    """``HOOKD_HOOK_CLIENT`` (auto, c or bash). Raises ConfigError on another value."""
    kind = (os.environ.get("HOOKD_HOOK_CLIENT") or "auto").strip().lower()
    if kind not in HOOK_CLIENTS:
        raise ConfigError(f"HOOKD_HOOK_CLIENT must be auto, c or bash, not {kind!r}")
    return kind


def c_compiler() -> list[str] | None:
    """The C compiler: ``$CC`` (split like a shell word list), else the first of cc, gcc,
    clang on PATH; None when there is none."""
    if os.environ.get("CC"):
        return shlex.split(os.environ["CC"])
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


def build_c_client() -> Path:
    """Build the compiled hook client (``hooks/client.c``), or reuse an earlier build: builds
    are cached in the user cache dir, keyed by the source, the compiler (path, size, mtime)
    and the flags; the binary has no home baked in, so one build serves every home.
    Returns the cached binary. Raises ConfigError (with the compiler's last words) when no
    compiler is found or none of C_FLAGS builds a binary that runs."""
    compiler = c_compiler()
    if not compiler:
        raise ConfigError("no C compiler found ($CC, cc, gcc or clang)")
    source = c_client_source()
    exe = shutil.which(compiler[0]) or compiler[0]
    try:
        st = os.stat(exe)
        ident = f"{os.path.realpath(exe)}:{st.st_size}:{st.st_mtime_ns}"
    except OSError as e:
        raise ConfigError(f"C compiler {compiler[0]!r}: {e.strerror}") from None
    key = hashlib.sha256("\0".join([source, *compiler, ident, str(MAX_SOCKET_PATH), repr(C_FLAGS)]).encode()).hexdigest()[:20]
    cache = Path(platformdirs.user_cache_dir("hookd")) / "hook-client"
    out = cache / f"hook-client-c-{key}"
    if os.access(out, os.X_OK):
        return out
    try:
        built = build_program(cache, compiler, source, out)
    except OSError as e:  # the cache cannot be written (read-only home directory, full disk)
        raise ConfigError(f"cannot build the compiled hook client in {cache}: {e.strerror or e}") from None
    if isinstance(built, Path):
        return built
    raise ConfigError(f"cannot build the compiled hook client with {' '.join(compiler)}: {built or 'unknown error'}")


def _runs(exe: Path) -> str | None:
    """None when ``exe`` runs (no arguments: "nothing to do", exit 0 and silence), else why not."""
    try:
        smoke = subprocess.run([os.fspath(exe)], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the built client does not run: {e}"
    if smoke.returncode != 0 or smoke.stdout or smoke.stderr:
        return f"the built client exited {smoke.returncode} with no arguments"
    return None


def build_program(cache: Path, compiler: list[str], source: str, out: Path) -> Path | str:
    """Compile the C ``source`` with ``compiler`` and the first of C_FLAGS that gives a binary
    that runs (no arguments: exit 0, silent), into ``out`` (atomically), building in a temp
    dir under ``cache``. Returns ``out``, or the last failure's message. Raises OSError when
    ``cache`` cannot be written. (bench/run.py builds its no-op floor with it.)"""
    cache.mkdir(parents=True, exist_ok=True)
    last = ""
    with tempfile.TemporaryDirectory(dir=cache, prefix=".build-") as tmp:
        src, exe = Path(tmp) / "client.c", Path(tmp) / "hook-client-c"
        src.write_text(source, encoding="utf-8")
        for flags in C_FLAGS:
            try:
                r = subprocess.run([*compiler, *flags, f"-DMAX_SOCKET_PATH={MAX_SOCKET_PATH}", "-o", os.fspath(exe), os.fspath(src)],
                                   capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
            except (OSError, subprocess.TimeoutExpired) as e:
                last = str(e)
                continue
            if r.returncode != 0:
                lines = r.stderr.decode(errors="replace").strip().splitlines()
                last = lines[-1] if lines else f"exit status {r.returncode}"
                continue
            why = _runs(exe)
            if why:
                last = why
                continue
            os.chmod(exe, 0o700)  # homes hard-link it: 0700 like the rest of a home
            os.replace(exe, out)
            return out
    return last


def install_client(home: Home) -> tuple[str, str | None]:
    """Write the home's hook clients; return (kind, note): kind ``c`` when the compiled
    client is installed (``bin/hook-client-c``), ``bash`` otherwise; note says why the
    compiled client was not used (None when it was, or when bash was asked for).
    The bash client is always written (the fallback, and what earlier spawns' commands
    exec). Raises ConfigError when HOOKD_HOOK_CLIENT=c and the build fails."""
    write_client(home)
    kind = hook_client_kind()
    if kind == "bash":
        return "bash", None
    try:
        built = build_c_client()
    except ConfigError as e:
        if kind == "c":
            raise ConfigError(f"HOOKD_HOOK_CLIENT=c: {e.message}") from None
        return "bash", f"{e.message}; using the bash client (about 2x slower per hook)"
    target = home.c_client
    try:
        same = os.path.samefile(target, built) or target.read_bytes() == built.read_bytes()
    except OSError:
        same = False
    if not same:
        # a hard link to the cached build (instant, and it outlives a cache cleanup), else a copy
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            tmp.unlink(missing_ok=True)
            os.link(built, tmp)
            os.replace(tmp, target)
        except OSError:
            tmp.unlink(missing_ok=True)
            atomic_write(target, built.read_bytes(), mode=0o700)
    why = _runs(target)  # where it is run from: a home on a noexec mount cannot run it
    if why:
        target.unlink(missing_ok=True)
        if kind == "c":
            raise ConfigError(f"HOOKD_HOOK_CLIENT=c: {target}: {why}")
        return "bash", f"{target}: {why}; using the bash client (about 2x slower per hook)"
    sock = os.fsencode(home.socket_path)
    try:
        same = home.socket_path_file.read_bytes() == sock
    except OSError:
        same = False
    if not same:
        atomic_write(home.socket_path_file, sock, mode=0o600)
    return "c", None


def hook_command(home: Home, harness: str, builder: str, deadline_ms: int, mode: str = "hook", client: str = "bash") -> str:
    """The exact shell command the harness runs (``sh -c``): absolute, quoted paths; the
    builder id and hookd's tag baked in; no placeholder substitution. ``exec``: the harness's
    signals (SIGTERM on timeout or Esc) reach the client itself, not just the ``sh`` that
    started it (dash does not exec the last command of ``sh -c``). ``client``: ``c`` execs
    the compiled client; ``bash`` runs the bash client with ``bash -p`` (the agent's
    environment cannot inject code or cost: ``BASH_ENV``, exported functions, ``SHELLOPTS``
    are ignored)."""
    if client == "c":
        path = shlex.quote(os.fspath(home.c_client))
        parts = [path, harness, builder, str(deadline_ms)]
        check = f"[ -x {path} ]"
    else:
        path = shlex.quote(os.fspath(home.client_script))
        parts = [shlex.quote(bash_path()), "-p", path, harness, builder, str(deadline_ms)]
        check = f"[ -r {path} ]"
    if mode != "hook":
        parts.append(mode)
    # a missing client (the home was moved or deleted) must not turn every hook into an
    # error the agent's user sees: `[` is a builtin of sh, so the check costs nothing
    return f"{check} || exit 0; exec " + " ".join(parts) + " " + tag(builder)


def client_argv(command: str) -> list[str]:
    """The argv a generated command execs (``HOOKD_HOME/bin/hook-client-c HARNESS BUILDER
    MS`` or ``bash -p HOOKD_HOME/bin/hook-client HARNESS BUILDER MS``)."""
    words = shlex.split(command, comments=True)
    return words[words.index("exec") + 1:]


def write_client(home: Home) -> Path:
    """(Re)write the home's bash hook client script (0700) with the home's path baked in."""
    text = client_template().replace("@HOOKD_HOME@", shlex.quote(os.fspath(home.root)))
    path = home.client_script
    try:
        if path.read_text() == text:
            return path
    except FileNotFoundError:
        pass
    atomic_write(path, text.encode(), mode=0o700)
    return path


# --- shared files: locks, symlinks, shapes --------------------------------------------------
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
    original = rec.get("original")
    if rec.get("created_file") and not obj and io == path:
        path.unlink()
    elif original is not None and _parses_to(original, obj):
        _user_write(io, original.encode("utf-8", errors="surrogateescape"), mode=io.stat().st_mode & 0o777)
    elif removed:
        _write_settings(io, obj)
    return removed


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
    mcp: bool = True,
) -> dict[str, Any]:
    """Install hookd's hooks for ``builder``; idempotent. Returns the manifest.

    worktree: the builder's worktree (hooks go to ``.claude/settings.local.json``) unless
    settings_file is given (a standalone file for ``claude --settings``); given with
    settings_file, the worktree is only recorded in the manifest (the lane's directory) and
    nothing is written into it.
    deadline_ms: the hook client's hard deadline (default HOOKD_DEADLINE_MS or 5000).
    wake_wait_s: how long the idle-wake Stop hook waits for a message (seconds; 0: no idle
    wake hook). hold_s: how long a PermissionRequest hook waits for a remote answer (seconds;
    0: it does not wait; Claude Code's timeout for it is hold_s + 60).
    mcp: also register ``hookd mcp --builder B`` (``W/.mcp.json``, or the standalone
    ``HOOKD_HOME/mcp/B.json`` with settings_file) and allow its tools in the settings file;
    the manifest's ``mcp`` says where (``claude_args`` to pass in the standalone form).
    Raises ConfigError on a bad builder id, a missing worktree, a settings or ``.mcp.json``
    file that is not strict JSON, a dangling symlink, or hooks of the wrong shape (an event's
    value not a list, a group or entry not an object: the message names the key); nothing is
    written then. Concurrent spawns and unspawns into the same files are serialised (module doc).

    harness ``claw`` (Rust claw): object-form hooks, matcher ``*``, for PreToolUse,
    PostToolUse and PostToolUseFailure only, in ``W/.claw/settings.local.json``; no MCP, hold
    or wake (claw has neither PermissionRequest nor Stop). ``claw-code-go``: the same as flat
    strings in ``W/.claude/settings.local.json`` (the manifest's ``warning`` says why that file
    then no longer serves Claude Code); refused when that file already holds object-form hooks.
    Both need ``worktree``.
    """
    check_builder_id(builder)
    if harness not in HARNESSES:
        raise ConfigError(f"unknown harness {harness!r}; supported: {', '.join(HARNESSES)}")
    if harness in claw.HARNESSES:
        if settings_file is not None:
            raise ConfigError(f"{harness} reads hooks only from its working directory: give --worktree, not --settings-file")
        mcp, wake_wait_s, hold_s = False, 0, 0
    if deadline_ms is None:
        deadline_ms = int(os.environ.get("HOOKD_DEADLINE_MS", DEFAULT_DEADLINE_MS))
    if not 100 <= deadline_ms <= 600_000:
        raise ConfigError("deadline must be between 0.1 and 600 seconds")
    if not 0 <= wake_wait_s <= 86_400:
        raise ConfigError("wake wait must be between 0 (off) and 86400 seconds")
    if not (hold_s == 0 or 5 <= hold_s <= 86_400):
        raise ConfigError("hold must be 0 (off) or between 5 and 86400 seconds")
    if worktree is not None:
        # the physical path: what Claude Code reports as a session's cwd and what claw
        # fingerprints (".." and symlinks resolved; the same directory either way)
        worktree = Path(os.path.realpath(worktree.expanduser()))
        if not worktree.is_dir():
            raise ConfigError(f"worktree {worktree} is not a directory")
    if settings_file is None:
        if worktree is None:
            raise ConfigError("give --worktree DIR or --settings-file PATH")
        target = worktree / (".claw" if harness == claw.HARNESS else ".claude") / "settings.local.json"
        mcp_path = worktree / ".mcp.json"
    else:
        # the standalone form: the worktree, if given, is only recorded (the lane's directory);
        # nothing is written into it, the MCP server included
        target = settings_file.expanduser().absolute()
        mcp_path = home.mcp_config(builder)
    home.ensure()
    with _locked(home, [_builder_key(builder)]):
        # what a spawn killed before left in the home (the user's files: under their locks)
        for f in (home.manifest(builder), home.client_script, home.c_client, home.socket_path_file):
            _drop_tmp(f)
        old = read_manifest(home, builder)
        if old and old["settings_file"] != os.fspath(target):
            _unspawn_locked(home, builder, old)
            old = None
        files = [target, *([mcp_path] if mcp else []), *(Path(r["file"]) for r in _mcp_records(old) if r.get("file"))]
        with _locked(home, [_file_key(f) for f in files]):
            _drop_tmps(files)
            manifest = _spawn_locked(home, builder, harness=harness, worktree=worktree, target=target,
                                     mcp_path=mcp_path if mcp else None, mcp_standalone=settings_file is not None,
                                     old=old, deadline_ms=deadline_ms, wake_wait_s=wake_wait_s, hold_s=hold_s,
                                     intent=lambda m: _write_manifest(home, builder, m))
            _write_manifest(home, builder, manifest)
    return manifest


def _write_manifest(home: Home, builder: str, manifest: dict[str, Any]) -> None:
    """Atomically write ``builders/B.json`` (0600; B's lock held: a fixed temp name)."""
    home.builders_dir.mkdir(parents=True, exist_ok=True)
    _user_write(home.manifest(builder), _dump(manifest), mode=0o600)


def _drop_tmps(files: Iterable[Path]) -> None:
    """:func:`_drop_tmp` for each file (where its writes land: through a symlink)."""
    for f in files:
        try:
            io = _through(f)
        except ConfigError:
            io = f
        _drop_tmp(io)


def _spawn_locked(home: Home, builder: str, *, harness: str, worktree: Path | None, target: Path,
                  mcp_path: Path | None, mcp_standalone: bool, old: dict[str, Any] | None, deadline_ms: int,
                  wake_wait_s: int, hold_s: int, intent: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """spawn's read-merge-write of the settings file ``target`` and the MCP config
    ``mcp_path`` (None: no MCP; a worktree's ``.mcp.json``, or with ``mcp_standalone`` hookd's
    own ``HOOKD_HOME/mcp/B.json``), their locks held. Every refusal comes before the first
    write; right before it, ``intent`` gets the manifest with ``state: "spawning"`` (and the
    MCP records this spawn undoes as ``previous_mcp``), so that a crash
    from then on leaves what unspawn undoes. Returns the final manifest (not yet written)."""
    io = _through(target)  # a symlinked settings file: written through, the link kept
    settings, existed = _load_settings(io)
    _check_hooks_shape(target, settings)
    if harness == claw.FLAT_HARNESS:
        _check_flat(target, settings, builder)
    original = _original_text(io, existed)
    had_hooks_key = "hooks" in settings
    created_dir = not target.parent.exists()
    _strip_tagged(settings, builder)
    olds = _mcp_records(old)
    _strip_mcp_keys_of(settings, olds)
    mcp_rec: dict[str, Any] | None = None
    mcp_obj: dict[str, Any] | None = None
    if mcp_path is not None:
        entry = mcp_entry(home, builder)
        if not mcp_standalone:
            same = next((r for r in olds if r.get("file") == os.fspath(mcp_path) and not r.get("skipped")), None)
            mcp_obj, mcp_rec = _plan_mcp_json(mcp_path, builder, entry, same)
        else:
            mcp_obj = {"mcpServers": {MCP_SERVER: entry}}
            mcp_rec = {"file": os.fspath(mcp_path), "standalone": True, "entry": entry,
                       "claude_args": ["--mcp-config", os.fspath(mcp_path)]}
    client, client_note = install_client(home)
    command = hook_command(home, harness, builder, deadline_ms, client=client)
    timeout_s = max(10, math.ceil(deadline_ms / 1000) * 2)
    wake_command = hook_command(home, harness, builder, wake_wait_s * 1000, mode="wake", client=client) if wake_wait_s else None
    permission_command = hook_command(home, harness, builder, hold_s * 1000, mode="hold", client=client) if hold_s else None
    hooks = settings.setdefault("hooks", {})
    if harness in claw.HARNESSES:
        generated = claw.hook_settings(command, flat=harness == claw.FLAT_HARNESS)
    else:
        generated = cc.hook_settings(command, timeout_s, wake_command, wake_wait_s + 60, permission_command, hold_s + 60)
    for event, groups in generated.items():
        hooks[event] = hooks.get(event, []) + groups  # each a list: _check_hooks_shape
    if mcp_rec is not None and not mcp_rec.get("skipped"):
        mcp_rec["settings"] = _add_mcp_keys(settings, target)  # may refuse: nothing written yet

    manifest = {
        "builder": builder,
        "harness": harness,
        "worktree": os.fspath(worktree) if worktree else None,
        "settings_file": os.fspath(target),
        "command": command,
        "client": client,
        "deadline_ms": deadline_ms,
        "wake_wait_s": wake_wait_s,
        "hold_s": hold_s,
        "events": list(claw.REGISTERED_EVENTS if harness in claw.HARNESSES else cc.REGISTERED_EVENTS),
        "created_file": old["created_file"] if old else not existed,
        "created_dir": old.get("created_dir", False) if old else created_dir,
        "added_hooks_key": old["added_hooks_key"] if old else not had_hooks_key,
        # the file as it was before the first spawn: unspawn restores it byte for byte when
        # nothing else changed meanwhile
        "original": old.get("original") if old else original,
        "mcp": mcp_rec,
        "spawned_at": time.time(),
    }
    if harness == claw.FLAT_HARNESS:
        manifest["warning"] = claw.FLAT_WARNING
    if client_note:
        manifest["client_note"] = client_note
    moved = [r for r in olds if mcp_rec is None or r.get("file") != mcp_rec["file"]]  # --no-mcp now, or elsewhere
    intent({**manifest, "state": "spawning", **({"previous_mcp": moved} if moved else {})})

    home.spool_dir(builder).mkdir(parents=True, exist_ok=True)
    for rec in moved:
        _undo_mcp_file(rec, builder)
    if mcp_obj is not None and mcp_path is not None:
        _write_settings(_through(mcp_path), mcp_obj)
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_settings(io, settings)
    return manifest


def _check_flat(path: Path, settings: dict[str, Any], builder: str) -> None:
    """claw-code-go skips a whole settings file that holds any object-form hook entry: refuse
    (nothing written) rather than install hooks that never run."""
    hooks = settings.get("hooks") or {}
    for event, entries in hooks.items():
        if isinstance(entries, list) and any(not isinstance(e, str) for e in entries):
            raise ConfigError(
                f"{path} holds object-form hooks ({event}: Claude Code's format), and claw-code-go skips such a file "
                "entirely: the flat-string hooks would never run; left it untouched — move those hooks elsewhere "
                "or spawn this builder with --harness claw (the Rust claw, .claw/settings.local.json)")


def read_manifest(home: Home, builder: str) -> dict[str, Any] | None:
    try:
        return msgspec.json.decode(read_regular(home.manifest(builder), follow=False))
    except FileNotFoundError:
        return None


def list_manifests(home: Home) -> list[dict[str, Any]]:
    """Every spawned builder's manifest, by builder id."""
    out = []
    if home.builders_dir.is_dir():
        for f in sorted(home.builders_dir.glob("*.json")):
            try:
                out.append(msgspec.json.decode(read_regular(f, follow=False)))
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
    was never spawned in this home, ConfigError when its settings file is no longer JSON or
    is a dangling symlink (nothing changed then). Returns ``{"builder", "settings_file",
    "removed", "mcp_removed"}`` (hook handlers removed; whether hookd's MCP server entry was).
    Safe to run beside other spawns and unspawns of the same files (see the module doc)."""
    if read_manifest(home, builder) is None:  # before the lock: it would create run/locks
        if os.path.lexists(_tmp_of(home.manifest(builder))):  # a spawn killed while recording its intent
            with _locked(home, [_builder_key(builder)]):
                _drop_tmp(home.manifest(builder))
        raise NotFound(f"builder {builder!r} was not spawned in {home.root}")
    with _locked(home, [_builder_key(builder)]):
        _drop_tmp(home.manifest(builder))
        m = read_manifest(home, builder)
        if m is None:  # a concurrent unspawn got there first
            raise NotFound(f"builder {builder!r} was not spawned in {home.root}")
        return _unspawn_locked(home, builder, m)


def _unspawn_locked(home: Home, builder: str, m: dict[str, Any]) -> dict[str, Any]:
    """unspawn with ``builder``'s lock held and its manifest ``m`` read: takes the locks of
    the files ``m`` names, undoes them, removes the manifest."""
    target = Path(m["settings_file"])
    records = _mcp_records(m)  # with those an interrupted spawn was moving away from
    files = [target, *(Path(r["file"]) for r in records if r.get("file"))]
    removed = 0
    with _locked(home, [_file_key(f) for f in files]):
        io = _through(target)  # before any write: it may refuse
        settings, existed = _load_settings(io)
        _drop_tmps(files)
        mcp_removed = False
        for rec in records:  # before any write: it may refuse
            mcp_removed = _undo_mcp_file(rec, builder) or mcp_removed
        if existed:
            removed = _strip_tagged(settings, builder)
            keys_removed = _strip_mcp_keys_of(settings, records)
            if m.get("added_hooks_key") and settings.get("hooks") == {}:
                del settings["hooks"]
            original = m.get("original")
            if m.get("created_file") and not settings and io == target:
                target.unlink()
            elif original is not None and _parses_to(original, settings):
                _user_write(io, original.encode("utf-8", errors="surrogateescape"), mode=io.stat().st_mode & 0o777)
            elif removed or keys_removed:
                _write_settings(io, settings)
        if m.get("created_dir"):
            with contextlib.suppress(OSError):
                target.parent.rmdir()  # only if empty (also what an interrupted spawn made, and nothing else)
    home.manifest(builder).unlink()
    spool = home.spool_dir(builder)
    if spool.is_dir() and not any(spool.iterdir()):
        spool.rmdir()
    return {"builder": builder, "settings_file": os.fspath(target), "removed": removed, "mcp_removed": mcp_removed}
