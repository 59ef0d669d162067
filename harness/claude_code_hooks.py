"""Claude Code's hook outputs for a human's remote answers, and its hook settings.

The :class:`hookd.harness.base.RemoteAnswers` of :mod:`hookd.harness.claude_code` (this module
itself: its ``remote_answers``) and its :class:`hookd.harness.install.HookInstall`
(:data:`INSTALL`). Facts per Claude Code 2.1.332 (docs/harness-claude-code.md). Pure: no I/O.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from hookd.harness.install import HookCommands, HookTrust

# Events hookd registers at spawn (PostToolBatch and MessageDisplay exist but add nothing).
REGISTERED_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
    "Elicitation",
    "ElicitationResult",
    "StopFailure",
    "PermissionDenied",
    "ConfigChange",
)
# Events that take no matcher in Claude Code's settings.
NO_MATCHER_EVENTS = frozenset({"UserPromptSubmit", "Stop", "SubagentStop", "PostToolBatch"})
# Tool events: matcher ".*" (a regex) covers every tool including mcp__server__tool.
TOOL_EVENTS = frozenset({"PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure", "PermissionDenied"})
# Events that go to hookd as Claude Code's own http hooks with `hookd spawn --hook-transport
# http` (docs/decisions.md "Hook transports"): the tool calls, which the transcript also holds.
# Every other event stays a command hook, which spools while the daemon is down.
HTTP_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
# Events held for a remote answer by the hold command (2.1.332 runs PermissionRequest beside its
# dialog; Elicitation before its dialog, which shows only once the hook returns nothing).
HELD_EVENTS = ("PermissionRequest", "Elicitation")


# --- answers ---------------------------------------------------------------------------


#: Tools whose PermissionRequest ``allow`` Claude Code 2.1.332 acts on only with
#: ``updatedInput``: without it the dialog stays open and no model request follows (checked with
#: the binary for ExitPlanMode; Bash, Edit, Write, NotebookEdit, WebFetch and MCP tools run on a
#: bare allow: docs/harness-claude-code.md "PermissionRequest decisions"). AskUserQuestion has
#: its own answer in ``updatedInput`` (the input plus ``answers``).
ALLOW_NEEDS_INPUT = frozenset({"ExitPlanMode"})


def allow_input(tool_name: str | None, tool_input: Any) -> Any:
    """The ``updatedInput`` a remote ``allow`` of a permission prompt carries: the tool's input
    exactly as the PermissionRequest hook received it where the tool needs one
    (:data:`ALLOW_NEEDS_INPUT`; Claude Code refuses an input that differs), else None (a bare
    allow: a large input, a file's content say, is not sent back)."""
    if tool_name in ALLOW_NEEDS_INPUT and isinstance(tool_input, dict):
        return tool_input
    return None


#: Tools Claude Code 2.1.332 runs as a child process of its own (:func:`runs_tool`).
RUNS_AS_CHILD = frozenset({"Bash"})
_SHELLS = frozenset({"bash", "zsh", "sh", "dash", "ksh"})


def runs_tool(tool_name: str | None, tool_input: Any, argv: list[str]) -> bool:
    """Is ``argv``, a child process of the agent, this tool call running? 2.1.332 runs a Bash
    command as ``<shell> -c "source <snapshot> ... && eval '<command>' < /dev/null && pwd -P
    >| /tmp/claude-<hex>-cwd"``, shell-quoted (checked with the binary for quotes, newlines,
    heredocs, backslashes and non-ASCII text): the word after ``eval`` is the command. Other
    tools run inside the agent's process: never."""
    if tool_name != "Bash" or not isinstance(tool_input, dict) or len(argv) < 3:
        return False
    command = tool_input.get("command")
    if not isinstance(command, str) or not command or argv[-2] != "-c" or os.path.basename(argv[0]) not in _SHELLS:
        return False
    try:
        words = shlex.split(argv[-1])
    except ValueError:
        return False
    return any(w == "eval" and nxt == command for w, nxt in zip(words, words[1:]))


def permission_decision(behavior: str, *, updated_input: Any = None, message: str | None = None) -> bytes:
    """PermissionRequest hook stdout carrying a decision (Claude Code 2.1.332 schema).

    behavior: ``allow`` | ``deny``; updated_input: for AskUserQuestion, the original input
    plus ``answers`` (never send an allow without answers for it: the menu stays, and past
    releases emptied the answers); for a tool of :data:`ALLOW_NEEDS_INPUT`, its input
    (:func:`allow_input`); message: shown to the model on deny.
    """
    decision: dict[str, Any] = {"behavior": behavior}
    if updated_input is not None:
        decision["updatedInput"] = updated_input
    if behavior == "deny":
        decision["message"] = message or "Denied by the human operator (via hookd)."
    return msgspec.json.encode({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})


def pre_tool_answer(updated_input: Any) -> bytes:
    """PreToolUse hook stdout that answers an AskUserQuestion before the menu appears:
    ``permissionDecision: allow`` with the input plus ``answers`` (no menu; the tool result
    is identical to a human answer)."""
    return msgspec.json.encode({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": updated_input,
    }})


# --- settings generation ---------------------------------------------------------------

def hook_settings(
    command: str, timeout_s: int = 30, wake_command: str | None = None, wake_timeout_s: int = 1860,
    permission_command: str | None = None, permission_timeout_s: int = 960,
) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` mapping hookd adds for one builder.

    command: the shell command Claude Code runs (``sh -c``), builder id and hookd's tag
    comment baked in. timeout_s: Claude Code's own timeout for the hook (seconds), a backstop
    above the client's deadline. Tool events use matcher ``.*`` so ``mcp__*`` tools are
    covered; UserPromptSubmit/Stop/SubagentStop take no matcher. No keys beyond Claude Code's
    own schema are written: hookd recognises its entries by the tag in the command.
    wake_command: the idle-wake Stop hook (``async`` + ``asyncRewake``), timeout in seconds.
    permission_command: the PermissionRequest command when it holds for a remote answer
    (its client deadline is the hold window), with Claude Code's timeout above that window:
    the prompt stays usable at the desk meanwhile (2.1.332 runs it beside the dialog). The
    Elicitation hook takes the same command (:data:`HELD_EVENTS`); 2.1.332 shows an
    elicitation's dialog only after its hooks return nothing.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for event in REGISTERED_EVENTS:
        group: dict[str, Any] = {}
        if event not in NO_MATCHER_EVENTS:
            group["matcher"] = ".*" if event in TOOL_EVENTS else ""
        if event in HELD_EVENTS and permission_command is not None:
            group["hooks"] = [{"type": "command", "command": permission_command, "timeout": permission_timeout_s}]
        else:
            group["hooks"] = [{"type": "command", "command": command, "timeout": timeout_s}]
        out[event] = [group]
    if wake_command is not None:
        # Idle wake: runs in the background in the TUI and in stream-json mode; exiting 2
        # starts a new turn with its stderr. "async" too, so that plain `-p` drops it at
        # exit instead of running it as a blocking Stop hook (2.1.332, verified).
        out["Stop"].append({"hooks": [{
            "type": "command", "command": wake_command, "timeout": wake_timeout_s,
            "async": True, "asyncRewake": True,
        }]})
    return out


# --- the protocols (hookd.harness.base.RemoteAnswers, hookd.harness.install.HookInstall) -------

#: (RemoteAnswers) the tools whose process a held permission prompt watches
child_process_tools = RUNS_AS_CHILD
#: (RemoteAnswers) the hook held for each kind's remote answer (:data:`HELD_EVENTS`)
hold_events: Mapping[str, str] = {"permission": "PermissionRequest", "plan": "PermissionRequest", "question": "PermissionRequest",
                                  "elicitation": "Elicitation"}


def permission_reply(decision: str, tool_name: str | None, tool_input: Any, message: str | None) -> bytes:
    """The held PermissionRequest hook's stdout for ``decision``: an allow carries the tool's
    input where Claude Code needs it (:func:`allow_input`), a deny its ``message``."""
    if decision == "allow":
        return permission_decision("allow", updated_input=allow_input(tool_name, tool_input))
    return permission_decision(decision, message=message)


#: (plan_reply) the permission mode each of hookd's plan modes asks for: ``auto`` is the
#: desk's "Yes, and use auto mode", ``manual`` its "Yes, manually approve edits" (default).
PLAN_MODE_SETTINGS = {"auto": "auto", "manual": "default"}


def plan_reply(decision: str, mode: str | None, tool_input: Any, message: str | None) -> bytes:
    """The held ExitPlanMode PermissionRequest hook's stdout: an allow carries the input as
    received (2.1.332 keeps the dialog open without it) and ``updatedPermissions`` with a
    session ``setMode`` to :data:`PLAN_MODE_SETTINGS` of ``mode`` (without one the session goes
    on in default mode); a deny carries the feedback as its ``message``, which is the tool
    result the model reads, and the session stays in plan mode (docs/harness-claude-code.md
    "Plan approval")."""
    if decision != "allow":
        return permission_decision("deny", message=message or "The plan was not approved (via hookd).")
    decision_body: dict[str, Any] = {"behavior": "allow", "updatedInput": tool_input if isinstance(tool_input, dict) else {}}
    setting = PLAN_MODE_SETTINGS.get(mode or "manual", "default")
    decision_body["updatedPermissions"] = [{"type": "setMode", "mode": setting, "destination": "session"}]
    return msgspec.json.encode({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision_body}})


def question_reply(tool_input: Any, questions: Any, answers: dict[str, Any]) -> bytes:
    """The held PermissionRequest hook's stdout answering an AskUserQuestion: allow, with the
    original input (or ``{"questions": questions}`` when unknown) plus every answer."""
    base = tool_input if isinstance(tool_input, dict) else {"questions": questions}
    return permission_decision("allow", updated_input={**base, "answers": answers})


def preanswer_reply(tool_input: dict[str, Any], answers: dict[str, str]) -> bytes:
    """The PreToolUse hook's stdout answering an AskUserQuestion before its menu shows
    (:func:`pre_tool_answer` of the input plus ``answers``)."""
    return pre_tool_answer({**tool_input, "answers": answers})


def elicitation_reply(action: str, content: dict[str, Any] | None) -> bytes:
    """The held Elicitation hook's stdout: ``hookSpecificOutput.action`` (``accept`` |
    ``decline`` | ``cancel``) and, with accept, ``content`` (2.1.332 sends both to the MCP
    server as the elicitation's result, and fires no ElicitationResult hook then)."""
    out: dict[str, Any] = {"hookEventName": "Elicitation", "action": action}
    if action == "accept":
        out["content"] = content or {}
    return msgspec.json.encode({"hookSpecificOutput": out})


def _transport(handler: dict[str, Any], cmds: HookCommands, event: str) -> dict[str, Any]:
    """``handler`` (a shell-form command entry of :func:`hook_settings`) in the transport
    ``cmds`` asks for: an http hook for :data:`HTTP_EVENTS` when ``cmds.http_url`` is set (its
    bearer token read from the environment variable ``cmds.http_token_env``, which only
    ``allowedEnvVars`` lets Claude Code interpolate; hookd's tag as the ``X-Hookd-Tag``
    header), else the exec form (``command`` + ``args``) where ``cmds`` has one, else as is."""
    cmd = handler["command"]
    argv = {cmds.command: cmds.argv, cmds.wake: cmds.wake_argv, cmds.hold: cmds.hold_argv}.get(cmd)
    if cmds.http_url is not None and event in HTTP_EVENTS and cmd == cmds.command:
        return {"type": "http", "url": cmds.http_url, "timeout": handler["timeout"],
                "headers": {"Authorization": f"Bearer ${cmds.http_token_env}", "X-Hookd-Tag": cmds.tag},
                "allowedEnvVars": [cmds.http_token_env]}
    if argv:
        rest = {k: v for k, v in handler.items() if k not in ("type", "command")}
        return {"type": "command", "command": argv[0], "args": list(argv[1:]), **rest}
    return handler


class _Install:
    """`hookd spawn --harness claude-code` (:class:`hookd.harness.install.HookInstall`): every
    hook of :data:`REGISTERED_EVENTS` in ``.claude/settings.local.json`` (or a standalone file
    for ``claude --settings``), the MCP server, the idle wake and the held PermissionRequest."""

    summary = ".claude/settings.local.json, or --settings-file or --plugin-dir"
    settings_dir = ".claude"
    settings_name = "settings.local.json"
    trust: HookTrust | None = None  # (it runs its hooks with no trust step)
    standalone = True
    mcp = True
    wake = True
    hold = True
    held_prompt: str | None = None  # (its prompt stays usable at the desk while hookd holds it)
    events: tuple[str, ...] = REGISTERED_EVENTS
    warning: str | None = None
    transports: tuple[str, ...] = ("sh", "exec", "http")  # 2.1.332: command + args, type "http"

    def hook_settings(self, cmds: HookCommands) -> dict[str, list[Any]]:
        out = hook_settings(cmds.command, cmds.timeout_s, cmds.wake, cmds.wake_timeout_s, cmds.hold, cmds.hold_timeout_s)
        for event, groups in out.items():
            for group in groups:
                group["hooks"] = [_transport(h, cmds, event) for h in group["hooks"]]
        return dict(out)

    def check_settings(self, path: str, settings: dict[str, Any]) -> None:
        """Any settings file whose hooks have Claude Code's shape (spawn checks the shape)."""


INSTALL = _Install()


class _Launch:
    """`hookd run` / `hookd continue` for Claude Code 2.1.332 (:class:`hookd.harness.launch.Launcher`):
    ``claude [ARGS] --session-id ID [-- PROMPT]`` (its terminal UI), ``claude -p [ARGS]
    --session-id ID -- PROMPT`` (print mode), ``claude --resume ID [-p] [ARGS] [-- PROMPT]``
    (``--resume`` keeps the session id: the session reopens, docs/harness-claude-code.md)."""

    program = "claude"
    program_env = "HOOKD_CLAUDE_BIN"
    names_session = True

    def interactive(self, extra: Sequence[str], prompt: str | None, session_id: str | None) -> list[str]:
        return [*extra, *(["--session-id", session_id] if session_id else []), *_prompt(prompt)]

    def headless(self, extra: Sequence[str], prompt: str, session_id: str | None) -> list[str]:
        return ["-p", *extra, *(["--session-id", session_id] if session_id else []), *_prompt(prompt)]

    def resume(self, session_id: str, extra: Sequence[str], prompt: str | None, headless: bool) -> list[str]:
        return [*(["-p"] if headless else []), "--resume", session_id, *extra, *_prompt(prompt)]


def _prompt(prompt: str | None) -> list[str]:
    """The prompt as Claude Code's last argument, after ``--`` (a prompt may start with ``-``)."""
    return ["--", prompt] if prompt else []


#: `hookd run --harness claude-code` (harness/claude_code.py ``launchers``).
LAUNCH = _Launch()
