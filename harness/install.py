"""What `hookd spawn` asks of a harness: :class:`HookInstall` (an adapter's ``hook_installs``,
by harness name) renders hookd's hook entries from the commands spawn generated
(:class:`HookCommands`) and says where they go and what the harness takes.

Pure: no I/O; imports nothing of hookd (its errors are :class:`hookd.models.ConfigError`).
"""

from __future__ import annotations

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


@runtime_checkable
class HookInstall(Protocol):
    """How `hookd spawn` installs hookd's hooks for one harness name (an adapter's
    ``hook_installs``): a settings file (``<worktree>/<settings_dir>/settings.local.json``,
    or a standalone file) into whose ``hooks`` mapping :meth:`hook_settings`'s entries are
    merged."""

    #: the folder under the worktree holding ``settings.local.json`` (``.claude``)
    settings_dir: str
    #: the harness can read a settings file named on its command line (``--settings-file``)
    standalone: bool
    #: the harness reads the worktree's ``.mcp.json`` and the settings' MCP keys (``hookd mcp``)
    mcp: bool
    #: the harness takes an idle-wake hook (:attr:`HookCommands.wake`)
    wake: bool
    #: the harness takes a permission prompt's hook that holds (:attr:`HookCommands.hold`)
    hold: bool
    #: the hook events registered (the manifest's ``events``)
    events: tuple[str, ...]
    #: what the manifest warns of (None: nothing)
    warning: str | None
    #: the hook transports `hookd spawn --hook-transport` takes for it (``sh``: shell-form
    #: command hooks, every harness; ``exec``: ``command`` + ``args``, no shell; ``http``: the
    #: harness's own http hooks for some events)
    transports: tuple[str, ...]

    def hook_settings(self, cmds: HookCommands) -> dict[str, list[Any]]:
        """The ``hooks`` entries to add: hook event -> the entries (appended to the file's)."""
        ...

    def check_settings(self, path: str, settings: dict[str, Any]) -> None:
        """Refuse a settings file (``path``, already parsed as ``settings``) the hooks would
        not run from: raises :class:`hookd.models.ConfigError`, nothing written then."""
        ...
