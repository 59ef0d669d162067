"""What `hookd spawn` asks of a harness: :class:`HookInstall` (an adapter's ``hook_installs``,
by harness name) renders hookd's hook entries from the commands spawn generated
(:class:`HookCommands`) and says where they go and what the harness takes.

Pure: no I/O; imports nothing of hookd (its errors are :class:`hookd.models.ConfigError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import msgspec


class HookCommands(msgspec.Struct, frozen=True, kw_only=True):
    """The hook commands `hookd spawn` generated for one builder (shell commands, the builder
    id and hookd's tag baked in; their exec form where asked) and the harness's own timeout for
    each (seconds): ``command``
    for every hook; ``wake``: the idle-wake hook (None: none); ``hold``: the permission
    prompt's hook that holds for a remote answer (None: it does not hold)."""

    command: str
    timeout_s: int
    wake: str | None = None
    wake_timeout_s: int = 0
    hold: str | None = None
    hold_timeout_s: int = 0
    #: the exec form of each command (``hookd spawn --hook-transport exec|http``: the
    #: executable, then its arguments, hookd's tag the last; None: the shell form)
    argv: tuple[str, ...] | None = None
    wake_argv: tuple[str, ...] | None = None
    hold_argv: tuple[str, ...] | None = None
    #: ``--hook-transport http``: the URL the harness's http hooks post to (None: none), the
    #: environment variable holding their bearer token, and hookd's tag (sent as a header)
    http_url: str | None = None
    http_token_env: str = "HOOKD_HOOK_TOKEN"
    tag: str = ""


class TrustEntry(msgspec.Struct, frozen=True):
    """One value the harness must find in its user config to run hookd's hooks: ``key`` =
    ``value`` in the table ``table`` (its key path: ``("hooks", "state", "<file>:...")``)."""

    table: tuple[str, ...]
    key: str
    value: str


@runtime_checkable
class HookTrust(Protocol):
    """A harness that runs a project's hooks only once its user trusts them (Codex: the
    project and a hash per handler in ``$CODEX_HOME/config.toml``): what `hookd spawn --trust`
    writes, what it prints without ``--trust``, and what `hookd status` checks. Pure: the
    files are read and written by :mod:`hookd.spawn.trust`."""

    #: the harness as a person names it ("Codex")
    label: str
    #: what the harness does with hooks it does not trust yet (a clause: spawn's and run's advice)
    untrusted: str

    def config_file(self, environ: Mapping[str, str]) -> str:
        """The user config file holding trust (absolute), from the user's ``environ``."""
        ...

    def entries(self, settings_file: str, settings: dict[str, Any], marker: str, worktree: str) -> list[TrustEntry]:
        """What makes the harness run the handlers tagged ``marker`` in ``settings`` (the hook
        file ``settings_file`` as it will be written) for the project ``worktree``."""
        ...

    def state(self, entries: list[TrustEntry], config: Mapping[str, Any]) -> tuple[str, str]:
        """(state, words): whether ``config`` (the parsed user config) holds ``entries``:
        ``trusted`` (the hooks will run) or why not (``untrusted``, ``modified``,
        ``project_not_trusted``)."""
        ...


@runtime_checkable
class HookInstall(Protocol):
    """How `hookd spawn` installs hookd's hooks for one harness name (an adapter's
    ``hook_installs``): a settings file (``<worktree>/<settings_dir>/<settings_name>``,
    or a standalone file) into whose ``hooks`` mapping :meth:`hook_settings`'s entries are
    merged."""

    #: what `hookd spawn --harness <name>` writes, for its ``--help`` (a phrase: ``.codex/hooks.json:
    #: Codex runs them once trusted, see --trust``)
    summary: str
    #: the folder under the worktree holding the hook file (``.claude``)
    settings_dir: str
    #: the hook file's name in it (``settings.local.json``; Codex: ``hooks.json``)
    settings_name: str
    #: the harness can read a settings file named on its command line (``--settings-file``)
    standalone: bool
    #: the harness reads the worktree's ``.mcp.json`` and the settings' MCP keys (``hookd mcp``)
    mcp: bool
    #: the harness takes an idle-wake hook (:attr:`HookCommands.wake`)
    wake: bool
    #: the harness takes a permission prompt's hook that holds (:attr:`HookCommands.hold`)
    hold: bool
    #: what the agent's desk shows while hookd holds a permission prompt, where that is not the
    #: prompt itself (a sentence; None: the prompt stays usable at the desk meanwhile)
    held_prompt: str | None
    #: the hook events registered (the manifest's ``events``)
    events: tuple[str, ...]
    #: what the manifest warns of (None: nothing)
    warning: str | None
    #: the hook transports `hookd spawn --hook-transport` takes for it (``sh``: shell-form
    #: command hooks, every harness; ``exec``: ``command`` + ``args``, no shell; ``http``: the
    #: harness's own http hooks for some events)
    transports: tuple[str, ...]
    #: the harness runs hookd's hooks only once trusted (:class:`HookTrust`); None: no trust
    trust: HookTrust | None

    def hook_settings(self, cmds: HookCommands) -> dict[str, list[Any]]:
        """The ``hooks`` entries to add: hook event -> the entries (appended to the file's)."""
        ...

    def check_settings(self, path: str, settings: dict[str, Any]) -> None:
        """Refuse a settings file (``path``, already parsed as ``settings``) the hooks would
        not run from: raises :class:`hookd.models.ConfigError`, nothing written then."""
        ...
