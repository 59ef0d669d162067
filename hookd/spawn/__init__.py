"""Spawn-time generation: the hook client and the builder's hook configuration.

`hookd spawn B --worktree W` writes ``HOOKD_HOME/bin/hook-client`` (bash) and merges one
hook entry per event into ``W/.claude/settings.local.json`` (or a standalone file for
``claude --settings``). Entries are recognised by a tag comment at the end of their command
(``# hookd builder=B``), so re-spawn replaces them and `unspawn` removes exactly them. Other
hooks and keys are never touched; files are written atomically; a file that is not strict
JSON is refused and left as it was. A manifest (``builders/B.json``) records what was added.

One builder per hook file: a spawn into a file already holding another builder's tagged
hooks (by its content: whatever path or symlink names it) is refused before anything is
written (:func:`hookd.spawn.files.refuse_shared`). Concurrent spawns and unspawns do not lose
each other's entries (and of two spawns into one file, exactly one wins): each holds an
exclusive ``flock`` per file it merges into (keyed by the
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

What differs per harness (its settings file, the options it takes, its entries) is the
adapter's: :data:`INSTALLS`, from each adapter's ``hook_installs``
(:class:`hookd.harness.install.HookInstall`). The package: this module (spawn, unspawn, the
manifest), :mod:`hookd.spawn.client` (the hook clients and commands), :mod:`hookd.spawn.files`
(the user's files: locks, shapes, atomic writes), :mod:`hookd.spawn.mcp` (the MCP server),
:mod:`hookd.spawn.trust` (a harness's hook trust in its user config: Codex's ``config.toml``),
:mod:`hookd.spawn.check` and :mod:`hookd.spawn.hooksoff` (will the hooks run: spawn's entries
whole, no ``disableAllHooks`` in force; spawn never edits that key, `hookd spawn` names it).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from hookd.config import BUILDER_ID_RE, DEFAULT_DEADLINE_MS, Home, check_builder_id
from hookd.harness.install import HookCommands, HookInstall
from hookd.harness.registry import ADAPTERS, DEFAULT_HARNESS
from hookd.models import ConfigError, NotFound
from hookd.spawn.client import (
    bash_path as bash_path,  # (re-exported: the package's public names)
    build_program as build_program,
    c_compiler as c_compiler,
    client_argv as client_argv,
    hook_argv,
    hook_command,
    install_client,
    tag,
    write_client as write_client,
)
from hookd.spawn.files import (
    _builder_key,
    _check_hooks_shape,
    _drop_tmp,
    _dump,
    _file_key,
    _load_settings,
    _locked,
    _original_text,
    _restore,
    refuse_shared,
    _strip_tagged,
    _through,
    _tmp_of,
    _user_write,
    _write_settings,
)
from hookd.spawn.mcp import (
    MCP_SERVER,
    _add_mcp_keys,
    _mcp_records,
    _plan_mcp_json,
    _strip_mcp_keys_of,
    _undo_mcp_file,
    mcp_entry,
)
from hookd.spawn.plugin import HOOKS_FILE
from hookd.spawn.plugin import undo as plugin_undo
from hookd.spawn.plugin import write as plugin_write
from hookd.spawn.trust import plan as trust_plan
from hookd.spawn.trust import preflight as trust_preflight
from hookd.spawn.trust import undo as trust_undo
from hookd.spawn.trust import write as trust_write
from hookd.untrusted import read_regular

#: harness name -> how `hookd spawn` installs its hooks (the adapters' ``hook_installs``, in
#: :data:`hookd.harness.registry.ADAPTERS`' order: ``claude-code``, ``claw``, ``claw-code-go``,
#: ``codex``)
INSTALLS: dict[str, HookInstall] = {
    name: adapter.hook_installs[name] for name, adapter in ADAPTERS.items() if name in adapter.hook_installs
}
HARNESSES = tuple(INSTALLS)
#: Default wait of the idle-wake hook (seconds): an agent idle longer is not woken; its
#: messages wait for the next prompt.
DEFAULT_WAKE_WAIT_S = 0  # opt-in: see docs/decisions.md "Idle wake"
#: Default window (seconds) a PermissionRequest hook holds for a remote answer; the prompt
#: stays usable at the desk meanwhile. 0: never hold.
DEFAULT_HOLD_S = 900
#: ``--hook-transport``: ``sh`` (default: a shell-form command hook per event), ``exec`` (the
#: same client spawned directly: ``command`` + ``args``), ``http`` (``exec``, and Claude Code's
#: own http hooks for the tool events); docs/decisions.md "Hook transports"
TRANSPORTS = ("sh", "exec", "http")
DEFAULT_TRANSPORT = "sh"
#: the environment variable an http hook reads its bearer token from (``HOOKD_HOME/hook-token``)
HTTP_TOKEN_ENV = "HOOKD_HOOK_TOKEN"


def spawn(
    home: Home,
    builder: str,
    *,
    worktree: Path | None = None,
    settings_file: Path | None = None,
    harness: str = DEFAULT_HARNESS,
    deadline_ms: int | None = None,
    wake_wait_s: int = DEFAULT_WAKE_WAIT_S,
    hold_s: int = DEFAULT_HOLD_S,
    mcp: bool = True,
    transport: str = DEFAULT_TRANSPORT,
    default_answer_after_s: int | None = None,
    default_answer: str | None = None,
    trust: bool = False,
    git_worktree: dict[str, Any] | None = None,
    plugin_dir: Path | None = None,
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
    default_answer_after_s: opt in to a default answer (:mod:`hookd.core.policy`) after this
    many seconds unanswered (1 to below hold_s: it reaches the agent through the held hook;
    None: none, the default); default_answer: the option label a question gets (else its first
    option). The manifest's ``default_answer`` is ``{"after_s", "label"}`` or None.
    git_worktree: the git worktree `hookd run --git-worktree` made for the builder
    (:func:`hookd.runner.git_worktree_add`'s record), kept in the manifest's ``git_worktree``
    (a later spawn keeps it) until `hookd unspawn --remove-worktree` removes it.
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

    transport (:data:`TRANSPORTS`, where the harness takes it: ``HookInstall.transports``):
    ``exec`` writes each hook in the exec form (no ``sh -c``); ``http`` also makes the tool
    events Claude Code's http hooks to the daemon's loopback port (``HOOKD_HOME/web-port``: the
    daemon must have run once; refused otherwise), their token read from ``$HOOKD_HOOK_TOKEN``
    (``HOOKD_HOME/hook-token``, the manifest's ``http``). Raises ConfigError for a transport
    the harness does not take.

    plugin_dir (Claude Code): the hooks as a plugin directory for ``claude --plugin-dir``
    (:mod:`hookd.spawn.plugin`): ``hooks/hooks.json`` written as a standalone settings file,
    ``.claude-plugin/plugin.json`` beside it (the manifest's ``plugin``); no MCP server.

    harness ``codex``: every hook but the model-request ones in ``W/.codex/hooks.json``, the
    held PermissionRequest (Codex asks at its desk only once that hook returned), no MCP,
    wake or standalone file. Codex runs them only once trusted: the manifest's ``trust``
    (:mod:`hookd.spawn.trust`) says what its user config must hold; ``trust`` writes that into
    ``$CODEX_HOME/config.toml`` (recorded, undone by unspawn; a re-spawn of a builder spawned
    with it writes it again). Raises ConfigError for ``trust`` with a harness that has no
    trust step, or a config that is not TOML.
    """
    check_builder_id(builder)
    install = INSTALLS.get(harness)
    if install is None:
        raise ConfigError(f"unknown harness {harness!r}; supported: {', '.join(HARNESSES)}")
    if transport not in install.transports:
        raise ConfigError(f"{harness} takes --hook-transport {' or '.join(install.transports)}, not {transport!r}")
    if trust and install.trust is None:
        raise ConfigError(f"{harness} runs its hooks with no trust step: --trust is for codex")
    plugin_created = False
    if plugin_dir is not None:
        if settings_file is not None:
            raise ConfigError("give --settings-file PATH or --plugin-dir DIR, not both")
        if harness != DEFAULT_HARNESS:
            raise ConfigError(f"--plugin-dir makes a Claude Code plugin: not for {harness}")
        plugin_dir = plugin_dir.expanduser().absolute()
        plugin_created = not plugin_dir.exists()
        settings_file, mcp = plugin_dir / HOOKS_FILE, False
    if settings_file is not None and not install.standalone:
        raise ConfigError(f"{harness} reads hooks only from its working directory: give --worktree, not --settings-file")
    mcp, wake_wait_s, hold_s = mcp and install.mcp, wake_wait_s if install.wake else 0, hold_s if install.hold else 0
    if deadline_ms is None:
        deadline_ms = int(os.environ.get("HOOKD_DEADLINE_MS", DEFAULT_DEADLINE_MS))
    if not 100 <= deadline_ms <= 600_000:
        raise ConfigError("deadline must be between 0.1 and 600 seconds")
    if not 0 <= wake_wait_s <= 86_400:
        raise ConfigError("wake wait must be between 0 (off) and 86400 seconds")
    if not (hold_s == 0 or 5 <= hold_s <= 86_400):
        raise ConfigError("hold must be 0 (off) or between 5 and 86400 seconds")
    if default_answer is not None and default_answer_after_s is None:
        raise ConfigError("--default-answer LABEL goes with --default-answer-after S (when it applies)")
    if default_answer_after_s is not None:
        if not hold_s:
            raise ConfigError(f"a default answer reaches the agent through a held hook: {harness} with --hold 0 has none")
        if not 1 <= default_answer_after_s < hold_s:
            raise ConfigError(f"--default-answer-after must be between 1 and {hold_s - 1} seconds "
                              f"(under --hold, {hold_s}: the hook is let go after that)")
    if worktree is not None:
        # the physical path: what Claude Code reports as a session's cwd and what claw
        # fingerprints (".." and symlinks resolved; the same directory either way)
        worktree = Path(os.path.realpath(worktree.expanduser()))
        if not worktree.exists():
            raise ConfigError(f"worktree {worktree} does not exist: create it first "
                              "(mkdir -p, or git worktree add), then spawn")
        if not worktree.is_dir():
            raise ConfigError(f"worktree {worktree} is not a directory")
    if settings_file is None:
        if worktree is None:
            raise ConfigError("give --worktree DIR or --settings-file PATH")
        target = worktree / install.settings_dir / install.settings_name
        mcp_path = worktree / ".mcp.json"
    else:
        # the standalone form: the worktree, if given, is only recorded (the lane's directory);
        # nothing is written into it, the MCP server included
        target = settings_file.expanduser().absolute()
        mcp_path = home.mcp_config(builder)
    if trust or (((read_manifest(home, builder) or {}).get("trust") or {}).get("written")):
        trust_preflight(install, os.environ)  # a config it would refuse later: refused before any write
    home.ensure()
    with _locked(home, [_builder_key(builder)]):
        # what a spawn killed before left in the home (the user's files: under their locks)
        for f in (home.manifest(builder), home.client_script, home.c_client, home.socket_path_file):
            _drop_tmp(f)
        old = read_manifest(home, builder)
        # the git worktree `hookd run --git-worktree` made for it: kept until unspawn removes it
        git_worktree = git_worktree or (old or {}).get("git_worktree")
        with _locked(home, [_file_key(target)]):  # before the previous spawn is undone: nothing written on refusal
            _check_shared(target, builder)
        if old and old["settings_file"] != os.fspath(target):
            _unspawn_locked(home, builder, old)
            old = None
        files = [target, *([mcp_path] if mcp else []), *(Path(r["file"]) for r in _mcp_records(old) if r.get("file"))]
        with _locked(home, [_file_key(f) for f in files]):
            _drop_tmps(files)
            manifest = _spawn_locked(home, builder, harness=harness, install=install, worktree=worktree, target=target,
                                     mcp_path=mcp_path if mcp else None, mcp_standalone=settings_file is not None,
                                     old=old, deadline_ms=deadline_ms, wake_wait_s=wake_wait_s, hold_s=hold_s,
                                     transport=transport, intent=lambda m: _write_manifest(home, builder, m))
            manifest["default_answer"] = (None if default_answer_after_s is None else
                                          {"after_s": default_answer_after_s, "label": default_answer})
            if git_worktree:
                manifest["git_worktree"] = git_worktree
            if plugin_dir is not None:
                was = (old or {}).get("plugin") or {}
                manifest["plugin"] = plugin_write(plugin_dir, builder, bool(was.get("created_dir", plugin_created)))
            _write_manifest(home, builder, manifest)
        try:
            manifest = _trust(home, builder, manifest, old, trust)
        except ConfigError as e:  # (after the hook file was written: said so)
            raise ConfigError(f"{e}; the hooks are written to {target}, untrusted "
                              f"(hookd unspawn {builder} removes them)") from None
        with contextlib.suppress(FileNotFoundError):
            home.unspawned_file(builder).unlink()  # spawned again: no longer unspawned
    return manifest


def _check_shared(target: Path, builder: str) -> None:
    """:func:`refuse_shared` for the file at ``target`` as it is now (through a symlink; a
    missing file holds nobody's hooks). Its lock is the caller's."""
    settings, _ = _load_settings(_through(target))
    _check_hooks_shape(target, settings)
    refuse_shared(target, settings, builder)


def _trust(home: Home, builder: str, manifest: dict[str, Any], old: dict[str, Any] | None, write: bool) -> dict[str, Any]:
    """The trust step of a spawn whose hook file is written (``manifest``; ``old``: the
    previous spawn's, whose trust values are taken back first): with ``write``, or when the
    previous spawn wrote them, the entries go into the user's config and the manifest records
    what was added (written again). Raises ConfigError for a config that is not TOML (the
    hooks are installed then, untrusted, and the manifest says so)."""
    rec = manifest.get("trust")
    old_rec = (old or {}).get("trust") or {}
    if rec is None or not (write or old_rec.get("written")):
        trust_undo(home, old_rec)
        return manifest
    trust_undo(home, old_rec)
    return {**manifest, "trust": trust_write(home, rec, lambda t: _write_manifest(home, builder, {**manifest, "trust": t}))}


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


def _spawn_locked(home: Home, builder: str, *, harness: str, install: HookInstall, worktree: Path | None, target: Path,
                  mcp_path: Path | None, mcp_standalone: bool, old: dict[str, Any] | None, deadline_ms: int,
                  wake_wait_s: int, hold_s: int, intent: Callable[[dict[str, Any]], None],
                  transport: str = DEFAULT_TRANSPORT) -> dict[str, Any]:
    """spawn's read-merge-write of the settings file ``target`` and the MCP config
    ``mcp_path`` (None: no MCP; a worktree's ``.mcp.json``, or with ``mcp_standalone`` hookd's
    own ``HOOKD_HOME/mcp/B.json``), their locks held. Every refusal comes before the first
    write; right before it, ``intent`` gets the manifest with ``state: "spawning"`` (and the
    MCP records this spawn undoes as ``previous_mcp``), so that a crash
    from then on leaves what unspawn undoes. Returns the final manifest (not yet written)."""
    io = _through(target)  # a symlinked settings file: written through, the link kept
    settings, existed = _load_settings(io)
    _check_hooks_shape(target, settings)
    refuse_shared(target, settings, builder)
    install.check_settings(os.fspath(target), settings)
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
    forms = _transport_forms(home, harness, builder, transport, client, deadline_ms, wake_wait_s, hold_s)
    hooks = settings.setdefault("hooks", {})
    generated = install.hook_settings(HookCommands(
        command=command, timeout_s=timeout_s, wake=wake_command, wake_timeout_s=wake_wait_s + 60,
        hold=permission_command, hold_timeout_s=hold_s + 60, tag=tag(builder), **forms))
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
        "transport": transport,
        **_transport_manifest(home, forms),
        "events": list(install.events),
        # spawn's own record of the entries it merged (event -> groups, exactly as written):
        # what hookd.spawn.check compares the file with
        "entries": generated,
        "created_file": old["created_file"] if old else not existed,
        "created_dir": old.get("created_dir", False) if old else created_dir,
        "added_hooks_key": old["added_hooks_key"] if old else not had_hooks_key,
        # the file as it was before the first spawn: unspawn restores it byte for byte when
        # nothing else changed meanwhile
        "original": old.get("original") if old else original,
        "mcp": mcp_rec,
        # what the harness's user config must hold before it runs these hooks (None: no
        # trust step; hookd.spawn.trust)
        "trust": trust_plan(install, os.fspath(target), settings, builder, os.fspath(worktree or target.parent),
                            os.environ),
        "spawned_at": time.time(),
    }
    if install.warning is not None:
        manifest["warning"] = install.warning
    if hold_s and install.held_prompt is not None:
        manifest["held_prompt"] = install.held_prompt
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


def _transport_forms(home: Home, harness: str, builder: str, transport: str, client: str, deadline_ms: int,
                     wake_wait_s: int, hold_s: int) -> dict[str, Any]:
    """:class:`HookCommands`' exec-form and http fields for ``transport`` (empty for ``sh``).
    Raises ConfigError for ``http`` when the daemon never bound its loopback port here."""
    if transport == "sh":
        return {}
    out: dict[str, Any] = {
        "argv": tuple(hook_argv(home, harness, builder, deadline_ms, client=client)),
        "wake_argv": tuple(hook_argv(home, harness, builder, wake_wait_s * 1000, "wake", client)) if wake_wait_s else None,
        "hold_argv": tuple(hook_argv(home, harness, builder, hold_s * 1000, "hold", client)) if hold_s else None,
    }
    if transport == "http":
        try:
            port = int(read_regular(home.root / "web-port", follow=False, limit=64).strip())
        except (OSError, ValueError):
            raise ConfigError("--hook-transport http needs the daemon's loopback port: start `hookd serve` once "
                              "in this home, then spawn") from None
        home.read_hook_token()  # the daemon admits it from its next start on (made here when it has not run)
        out["http_url"] = f"http://127.0.0.1:{port}/v1/hooks/{harness}/{builder}"
        out["http_token_env"] = HTTP_TOKEN_ENV
    return out


def _transport_manifest(home: Home, forms: dict[str, Any]) -> dict[str, Any]:
    """The manifest's record of a transport's forms: ``argv`` (the exec form of the hook
    command), ``http`` (the url, the token's variable and file)."""
    out: dict[str, Any] = {}
    if forms.get("argv"):
        out["argv"] = list(forms["argv"])
    if forms.get("http_url"):
        out["http"] = {"url": forms["http_url"], "token_env": HTTP_TOKEN_ENV, "token_file": os.fspath(home.hook_token_file)}
    return out


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


def unspawn(home: Home, builder: str) -> dict[str, Any]:
    """Remove exactly what `spawn` added for ``builder``. Raises NotFound when the builder
    was never spawned in this home, ConfigError when its settings file is no longer JSON or
    is a dangling symlink (nothing changed then). Returns ``{"builder", "settings_file",
    "removed", "mcp_removed", "mcp_files"}`` (hook handlers removed; whether hookd's MCP server entry was,
    and from which files).
    Leaves ``unspawned/<id>.json`` in the home (:func:`unspawned_at`; the next spawn removes it).
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
        r = _unspawn_locked(home, builder, m)
        mark = home.unspawned_file(builder)
        mark.parent.mkdir(mode=0o700, exist_ok=True)
        _user_write(mark, _dump({"builder": builder, "unspawned_at": time.time(), "harness": m.get("harness"),
                                 "worktree": m.get("worktree"), "settings_file": m.get("settings_file")}), mode=0o600)
        return r


def unspawned_at(home: Home, builder: str) -> float | None:
    """When ``builder`` was unspawned (UNIX seconds; ``unspawned/<id>.json``), or None: spawned
    (again), or never."""
    try:
        return float(msgspec.json.decode(read_regular(home.unspawned_file(builder), follow=False))["unspawned_at"])
    except (OSError, msgspec.DecodeError, KeyError, TypeError, ValueError):
        return None


def list_unspawned(home: Home) -> dict[str, float]:
    """Every unspawned builder (``unspawned/*.json``) -> when it was unspawned (UNIX seconds)."""
    out: dict[str, float] = {}
    d = home.root / "unspawned"
    if d.is_dir():
        for f in sorted(d.glob("*.json")):
            at = unspawned_at(home, f.name[:-5]) if BUILDER_ID_RE.match(f.name[:-5]) else None
            if at is not None:
                out[f.name[:-5]] = at
    return out


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
        mcp_files: list[str] = []
        for rec in records:  # before any write: it may refuse
            if _undo_mcp_file(rec, builder):
                mcp_removed = True
                if rec.get("file"):
                    mcp_files.append(str(rec["file"]))
        if existed:
            removed = _strip_tagged(settings, builder)
            keys_removed = _strip_mcp_keys_of(settings, records)
            if m.get("added_hooks_key") and settings.get("hooks") == {}:
                del settings["hooks"]
            _restore(io, target, settings, m, bool(removed or keys_removed))
        if m.get("created_dir"):
            with contextlib.suppress(OSError):
                target.parent.rmdir()  # only if empty (also what an interrupted spawn made, and nothing else)
        plugin_undo(m.get("plugin"), builder)
    trust_removed = trust_undo(home, m.get("trust"))
    home.manifest(builder).unlink()
    spool = home.spool_dir(builder)
    if spool.is_dir() and not any(spool.iterdir()):
        spool.rmdir()
    return {"builder": builder, "settings_file": os.fspath(target), "removed": removed, "mcp_removed": mcp_removed,
            "mcp_files": mcp_files, "trust_removed": trust_removed,
            "trust_config": (m.get("trust") or {}).get("config_file") if trust_removed else None,
            "git_worktree": m.get("git_worktree")}
