"""Codex CLI's hook outputs for a human's remote answers, its hook file and its hook trust.

The :class:`hookd.harness.base.RemoteAnswers` of :mod:`hookd.harness.codex` (this module
itself: its ``remote_answers``), its :class:`hookd.harness.install.HookInstall`
(:data:`INSTALL`: ``<worktree>/.codex/hooks.json``) and that install's
:class:`hookd.harness.install.HookTrust` (the ``trusted_hash`` of each handler and the
project's trust in the user ``config.toml``). Facts per Codex 0.171.0 (docs/harness-codex.md).
Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from hookd.harness.install import HookCommands, HookTrust, TrustEntry

#: Events hookd registers at spawn: every event 0.171.0 fires but PreModelRequest and
#: PostModelRequest (two more hook processes per model request for nothing hookd acts on:
#: docs/decisions.md "Codex's model-request hooks").
REGISTERED_EVENTS = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
    "PreCompact", "PostCompact", "SubagentStart", "SubagentStop", "Stop", "Interrupt", "SessionEnd",
)
#: Events whose hook timeout 0.171.0 clamps to :data:`SHORT_TIMEOUT_S` (it warns when
#: configured longer): hookd writes that timeout itself, so the trusted hash is the one Codex
#: computes (it hashes the timeout it applies).
SHORT_TIMEOUT_EVENTS = frozenset({"SessionEnd", "Interrupt"})
SHORT_TIMEOUT_S = 3
#: The hook held for a remote answer (0.171.0 runs it to its end before the app-server
#: client or the TUI is asked: a held hook keeps the desk's prompt from showing).
HELD_EVENTS = ("PermissionRequest",)


# --- answers ---------------------------------------------------------------------------


def permission_decision(behavior: str, message: str | None = None) -> bytes:
    """PermissionRequest hook stdout carrying a decision (0.171.0): ``{"hookSpecificOutput":
    {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}``, or ``deny``
    with ``message``, which reaches the model inside the tool's failure ("Rejected(...)")."""
    decision: dict[str, Any] = {"behavior": behavior}
    if behavior == "deny":
        decision["message"] = message or "Denied by the human operator (via hookd)."
    return msgspec.json.encode({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})


#: (RemoteAnswers) tools whose process a held prompt watches: none. The desk cannot answer
#: while the hook is held (0.171.0 asks only once the hook returned), so no tool process can
#: prove a desk's allow meanwhile.
child_process_tools: frozenset[str] = frozenset()
#: (RemoteAnswers) the hook held for each kind's remote answer: a permission prompt only
#: (request_user_input is answered by the app-server client, never by a hook; Codex has no
#: plan approval or elicitation hook)
hold_events: Mapping[str, str] = {"permission": "PermissionRequest"}


def permission_reply(decision: str, tool_name: str | None, tool_input: Any, message: str | None) -> bytes:
    """The held PermissionRequest hook's stdout for ``decision`` (``allow`` | ``deny``; the
    input is not sent back: 0.171.0's decision has no ``updatedInput``)."""
    return permission_decision("allow" if decision == "allow" else "deny", message)


def plan_reply(decision: str, mode: str | None, tool_input: Any, message: str | None) -> bytes:
    """Codex has no plan approval hook (no interaction of kind ``plan`` is ever opened for
    it): a plain allow or deny, as :func:`permission_reply`."""
    return permission_reply(decision, None, tool_input, message)


def question_reply(tool_input: Any, questions: Any, answers: dict[str, Any]) -> bytes:
    """No hook of 0.171.0 answers a question (``request_user_input`` is answered by the
    app-server client): empty, no decision."""
    return b""


def preanswer_reply(tool_input: dict[str, Any], answers: dict[str, str]) -> bytes:
    """As :func:`question_reply`: PreToolUse cannot answer ``request_user_input``."""
    return b""


def runs_tool(tool_name: str | None, tool_input: Any, argv: list[str]) -> bool:
    """Never (:data:`child_process_tools` is empty)."""
    return False


def elicitation_reply(action: str, content: dict[str, Any] | None) -> bytes:
    """Codex has no elicitation hook: empty."""
    return b""


# --- the hook file ---------------------------------------------------------------------


def hook_settings(command: str, timeout_s: int = 30, permission_command: str | None = None,
                  permission_timeout_s: int = 960) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` mapping hookd adds to ``.codex/hooks.json`` for one builder: one group
    per event of :data:`REGISTERED_EVENTS`, no matcher (every tool), one command hook with an
    explicit timeout (seconds; :data:`SHORT_TIMEOUT_S` for :data:`SHORT_TIMEOUT_EVENTS`: what
    Codex applies, so the trusted hash holds). ``permission_command``: the PermissionRequest
    hook that holds for a remote answer (None: it does not hold)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for event in REGISTERED_EVENTS:
        cmd, timeout = command, timeout_s
        if event in HELD_EVENTS and permission_command is not None:
            cmd, timeout = permission_command, permission_timeout_s
        if event in SHORT_TIMEOUT_EVENTS:
            timeout = min(timeout, SHORT_TIMEOUT_S)
        out[event] = [{"hooks": [{"type": "command", "command": cmd, "timeout": timeout}]}]
    return out


# --- trust -----------------------------------------------------------------------------


def event_key(event: str) -> str:
    """A hook event's name in a trust key (``PreToolUse`` -> ``pre_tool_use``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


#: The timeout Codex applies to a command hook that configures none (seconds).
DEFAULT_TIMEOUT_S = 600


def trust_hash(event: str, group: Mapping[str, Any], handler: Mapping[str, Any]) -> str:
    """The ``trusted_hash`` Codex 0.171.0 computes for ``handler`` (a command hook) in
    ``group`` (its matcher group) of ``event``: ``sha256:`` + the hex SHA-256 of the compact
    JSON (keys sorted, UTF-8) of ``{"event_name", "matcher" (when set, "" included), "hooks":
    [{"type", "command", "timeout" (as applied), "async", "statusMessage" (when set)}]}``
    (docs/harness-codex.md "Hook trust"; equal to ``hooks/list``'s ``currentHash``)."""
    timeout = handler.get("timeout")
    timeout = timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else DEFAULT_TIMEOUT_S
    if event in SHORT_TIMEOUT_EVENTS:
        timeout = min(timeout, SHORT_TIMEOUT_S)
    h: dict[str, Any] = {"type": "command", "command": handler.get("command"), "timeout": timeout,
                         "async": handler.get("async") is True}
    if handler.get("statusMessage") is not None:
        h["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event_key(event), "hooks": [h]}
    if group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _tagged(settings: Mapping[str, Any], marker: str) -> list[tuple[str, str]]:
    """(trust key suffix ``<event_snake>:<group>:<handler>``, hash) of every handler in
    ``settings`` tagged ``marker``, in file order."""
    out = []
    hooks = settings.get("hooks")
    for event, groups in (hooks.items() if isinstance(hooks, dict) else ()):
        for gi, group in enumerate(groups if isinstance(groups, list) else ()):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for hi, handler in enumerate(handlers if isinstance(handlers, list) else ()):
                if isinstance(handler, dict) and str(handler.get("command", "")).endswith(marker):
                    out.append((f"{event_key(event)}:{gi}:{hi}", trust_hash(event, group, handler)))
    return out


class _Trust:
    """Codex's hook trust (:class:`hookd.harness.install.HookTrust`): a project hook file runs
    only when the project is trusted (``[projects."<worktree>"] trust_level = "trusted"``) and
    each handler only when ``[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash``
    equals its hash; both in the user ``$CODEX_HOME/config.toml`` (``~/.codex`` without it)."""

    label = "Codex"
    #: (0.171.0: docs/harness-codex.md "Hook trust")
    untrusted = 'its TUI asks "Hooks need review" at start; codex exec skips them without a word'

    def config_file(self, environ: Mapping[str, str]) -> str:
        home = environ.get("CODEX_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".codex")
        return os.path.join(home, "config.toml")

    def entries(self, settings_file: str, settings: dict[str, Any], marker: str, worktree: str) -> list[TrustEntry]:
        out = [TrustEntry(table=("projects", worktree), key="trust_level", value="trusted")]
        out += [TrustEntry(table=("hooks", "state", f"{settings_file}:{suffix}"), key="trusted_hash", value=h)
                for suffix, h in _tagged(settings, marker)]
        return out

    def state(self, entries: list[TrustEntry], config: Mapping[str, Any]) -> tuple[str, str]:
        """(``trusted`` | ``untrusted`` | ``modified`` | ``project_not_trusted``, words)."""
        def get(e: TrustEntry) -> Any:
            node: Any = config
            for part in e.table:
                node = node.get(part) if isinstance(node, Mapping) else None
            return node.get(e.key) if isinstance(node, Mapping) else None

        project, handlers = entries[0], entries[1:]
        if get(project) != project.value:
            return "project_not_trusted", f"Codex does not trust the project {project.table[1]}: it reads no hook from its .codex/"
        have = [get(e) for e in handlers]
        modified = sum(1 for e, v in zip(handlers, have) if v is not None and v != e.value)
        missing = sum(1 for v in have if v is None)
        if modified:
            return "modified", f"{modified} of hookd's {len(handlers)} hooks changed since they were trusted: Codex skips them"
        if missing:
            return "untrusted", f"{missing} of hookd's {len(handlers)} hooks are not trusted: Codex skips them (its TUI asks to review them first)"
        return "trusted", f"the project and hookd's {len(handlers)} hooks are trusted: Codex runs them"


TRUST = _Trust()


class _Install:
    """`hookd spawn --harness codex` (:class:`hookd.harness.install.HookInstall`): every hook of
    :data:`REGISTERED_EVENTS` in ``<worktree>/.codex/hooks.json``, the held PermissionRequest,
    and :data:`TRUST`. No standalone file (a project's hooks are read from its ``.codex/``),
    no MCP server (Codex's are configured in ``config.toml``: not written by hookd yet), no
    idle wake (Codex has no asynchronous Stop hook), shell-form commands only."""

    summary = ".codex/hooks.json: Codex runs them once trusted, see --trust"
    settings_dir = ".codex"
    settings_name = "hooks.json"
    standalone = False
    mcp = False
    wake = False
    hold = True
    #: (0.171.0: its TUI asks only once the PermissionRequest hook returned; docs/harness-codex.md)
    held_prompt: str | None = 'while hookd holds a permission prompt, Codex shows only "Running hook" at its desk, not the prompt'
    events: tuple[str, ...] = REGISTERED_EVENTS
    warning: str | None = None
    transports: tuple[str, ...] = ("sh",)
    trust: HookTrust | None = TRUST

    def hook_settings(self, cmds: HookCommands) -> dict[str, list[Any]]:
        return dict(hook_settings(cmds.command, cmds.timeout_s, cmds.hold, cmds.hold_timeout_s))

    def check_settings(self, path: str, settings: dict[str, Any]) -> None:
        """Any ``hooks.json`` of Claude Code's shape (spawn checks the shape)."""


INSTALL = _Install()


class _Launch:
    """`hookd run` / `hookd continue` for Codex 0.171.0 (:class:`hookd.harness.launch.Launcher`):
    ``codex --no-daemon [ARGS] [-- PROMPT]`` (its terminal UI), ``codex exec [ARGS] -- PROMPT``
    (one prompt, then exit), ``codex resume --no-daemon [ARGS] ID [-- PROMPT]`` and ``codex exec
    [ARGS] resume ID -- PROMPT`` (``codex exec``'s options before ``resume``: ``codex exec resume``
    itself refuses some of them, ``-s`` and ``-C`` among them). ``--no-daemon``: the TUI then runs the session in its own
    process instead of the shared background app server it starts and leaves running
    otherwise (docs/harness-codex.md): the process hookd starts, watches and stops is the
    session, and its hooks run in the environment hookd started it with. Codex names a new
    session itself (its thread id): hookd learns it from the first hook."""

    program = "codex"
    program_env = "HOOKD_CODEX_BIN"
    names_session = False

    def interactive(self, extra: Sequence[str], prompt: str | None, session_id: str | None) -> list[str]:
        return ["--no-daemon", *extra, *_prompt(prompt)]

    def headless(self, extra: Sequence[str], prompt: str, session_id: str | None) -> list[str]:
        return ["exec", *extra, *_prompt(prompt)]

    def resume(self, session_id: str, extra: Sequence[str], prompt: str | None, headless: bool) -> list[str]:
        if headless:
            return ["exec", *extra, "resume", session_id, *_prompt(prompt)]
        return ["resume", "--no-daemon", *extra, session_id, *_prompt(prompt)]


def _prompt(prompt: str | None) -> list[str]:
    """The prompt as Codex's last argument, after ``--`` (a prompt may start with ``-``)."""
    return ["--", prompt] if prompt else []


#: `hookd run --harness codex` (harness/codex.py ``launchers``).
LAUNCH = _Launch()
