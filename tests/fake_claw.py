"""A faithful stand-in for the Rust claw's hook runner (claw cannot be installed here).

Reproduces ``shared/claw/README.md`` and ultraworkers/claw-code ``rust/crates/runtime/src/``:

- settings (``config.rs`` ``ConfigLoader::discover``), lowest to highest precedence:
  ``<config_home>/../.claw.json``, ``<config_home>/settings.json``, ``<cwd>/.claw.json``,
  ``<cwd>/.claw/settings.json``, ``<cwd>/.claw/settings.local.json``; never
  ``.claude/settings*.json``. Hooks: object form ``{"matcher", "hooks": [{"type":
  "command", "command"}]}`` or legacy bare strings; hook lists of all files are concatenated
  in that order without duplicates; ``Stop`` / ``UserPromptSubmit`` / ``Notification`` (any
  event but the three) are reported invalid and skipped, their valid siblings still load.
  Matcher: case-insensitive tool names, ``*`` is every tool, alternatives split on ``,`` or
  ``|``; not a regex.
- execution (``hooks.rs``): ``sh -lc "<command>"`` in claw's own cwd, stdin the payload,
  environment plus ``HOOK_EVENT``, ``HOOK_TOOL_NAME``, ``HOOK_TOOL_INPUT``,
  ``HOOK_TOOL_IS_ERROR`` (0/1) and ``HOOK_TOOL_OUTPUT`` (post events); **no timeout**; a
  command that cannot start (e.g. an environment too large: E2BIG) fails.
- payload: ``{"hook_event_name", "tool_name", "tool_input" (parsed, or {"raw"}),
  "tool_input_json", "tool_output", "tool_result_is_error"}``; PostToolUseFailure has
  ``tool_error`` instead of ``tool_output``.
- exit codes: 0 allow (or deny when the JSON says so), 2 deny, anything else (signals too)
  fails the hook and refuses the tool; the remaining hooks of that event do not run.
- stdout (trimmed): empty is a no-op; a JSON object contributes ``systemMessage``,
  ``reason``, ``hookSpecificOutput.additionalContext`` as messages, ``continue: false`` /
  ``decision: "block"`` deny, ``permissionDecision`` / ``updatedInput``; **a JSON object
  without any message field is itself the message**; broken JSON that looks like JSON is a
  ``hook_invalid_json: ...`` message; other text is the message verbatim.
- tool results (``conversation.rs`` ``merge_hook_feedback``): the messages of the pre and
  post hooks are appended as ``<output>\\n\\nHook feedback:\\n<messages joined by \\n>``
  (``Hook feedback (error)`` for an error result).
- sessions (``session.rs``, ``session_control.rs``): ``<cwd>/.claw/sessions/<fnv1a64(cwd)>/
  session-<ms>-<n>.jsonl``, a ``session_meta`` row then ``message`` rows appended as they
  happen (assistant ``tool_use`` with ``input`` a JSON string, tool ``tool_result``).
- AskUserQuestion ``{"question", "options"?}`` reads its answer from claw's own stdin (here:
  ``answer_from``) and returns ``{"question", "answer", "status": "answered"}``.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

VALID_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
_counter = itertools.count()


def fingerprint(path: str) -> str:
    h = 0xCBF29CE484222325
    for b in path.encode("utf-8", "replace"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


@dataclass
class HookRun:
    """One event's hooks for one tool call: messages, denied, failed, and per command
    (command, exit code, stdout, stderr)."""

    messages: list[str] = field(default_factory=list)
    denied: bool = False
    failed: bool = False
    runs: list[tuple[str, int | None, bytes, bytes]] = field(default_factory=list)


@dataclass
class ToolResult:
    output: str          # what the model reads (hook feedback merged in)
    is_error: bool
    raw_output: str      # the tool's own output
    pre: HookRun
    post: HookRun | None


def _matches(matcher: Any, tool: str) -> bool:
    if matcher is None or matcher == "":
        return True
    if not isinstance(matcher, str):
        return False
    alts = [a.strip().lower() for a in matcher.replace("|", ",").split(",")]
    return "*" in alts or tool.lower() in alts


class FakeClaw:
    """claw running in ``cwd`` with a private environment ``env`` (HOME etc.)."""

    def __init__(self, cwd: Path, env: dict[str, str], config_home: Path | None = None):
        self.cwd = Path(os.path.realpath(cwd))
        self.env = dict(env)
        self.config_home = config_home or Path(self.env.get("CLAW_CONFIG_HOME") or Path(self.env["HOME"]) / ".claw")
        self.invalid: list[str] = []
        self.session_id = f"session-{int(time.time() * 1000)}-{next(_counter)}"
        self.session_file = self.cwd / ".claw" / "sessions" / fingerprint(str(self.cwd)) / f"{self.session_id}.jsonl"
        self.session_file.parent.mkdir(parents=True, exist_ok=True)  # SessionStore::from_cwd
        self._append({"type": "session_meta", "version": 1, "session_id": self.session_id,
                      "created_at_ms": int(time.time() * 1000), "updated_at_ms": int(time.time() * 1000),
                      "workspace_root": str(self.cwd)})
        self._ids = itertools.count(1)

    # --- settings --------------------------------------------------------------------
    def settings_files(self) -> list[Path]:
        return [self.config_home.parent / ".claw.json", self.config_home / "settings.json",
                self.cwd / ".claw.json", self.cwd / ".claw" / "settings.json", self.cwd / ".claw" / "settings.local.json"]

    def hooks(self, event: str, tool: str) -> list[str]:
        """The commands claw runs for ``event`` on ``tool``, in order."""
        self.invalid = []
        out: list[str] = []
        for f in self.settings_files():
            try:
                data = json.loads(f.read_text())
            except FileNotFoundError:
                continue
            hooks = data.get("hooks") or {}
            for name, entries in hooks.items():
                if name not in VALID_EVENTS:
                    self.invalid.append(f"{f}: hooks.{name}")
                    continue
                if name != event:
                    continue
                for e in entries:
                    if isinstance(e, str):
                        cmds = [e]
                    elif isinstance(e, dict) and _matches(e.get("matcher"), tool):
                        cmds = [h["command"] for h in e.get("hooks", []) if h.get("type") == "command"]
                    else:
                        cmds = []
                    out.extend(c for c in cmds if c not in out)
        return out

    # --- running hooks ----------------------------------------------------------------
    def run_hooks(self, event: str, tool: str, tool_input_json: str, output: str | None, is_error: bool) -> HookRun:
        res = HookRun()
        cmds = self.hooks(event, tool)
        if not cmds:
            return res
        try:
            parsed: Any = json.loads(tool_input_json)
        except ValueError:
            parsed = {"raw": tool_input_json}
        payload: dict[str, Any] = {"hook_event_name": event, "tool_name": tool, "tool_input": parsed,
                                   "tool_input_json": tool_input_json}
        if event == "PostToolUseFailure":
            payload.update(tool_error=output, tool_result_is_error=True)
        else:
            payload.update(tool_output=output, tool_result_is_error=is_error)
        env = {**self.env, "HOOK_EVENT": event, "HOOK_TOOL_NAME": tool, "HOOK_TOOL_INPUT": tool_input_json,
               "HOOK_TOOL_IS_ERROR": "1" if is_error else "0"}
        if output is not None:
            env["HOOK_TOOL_OUTPUT"] = output
        data = json.dumps(payload, separators=(",", ":")).encode()
        for cmd in cmds:
            try:
                p = subprocess.run(["sh", "-lc", cmd], input=data, cwd=self.cwd, env=env, capture_output=True)  # no timeout
            except OSError as e:  # e.g. E2BIG: the environment (HOOK_TOOL_OUTPUT) is too large to exec
                res.runs.append((cmd, None, b"", str(e).encode()))
                res.messages.append(f"{event} hook `{cmd}` failed to start for `{tool}`: {e}")
                res.failed = True
                return res
            res.runs.append((cmd, p.returncode, p.stdout, p.stderr))
            stdout = p.stdout.decode("utf-8", "replace").strip()
            stderr = p.stderr.decode("utf-8", "replace").strip()
            msgs, deny = parse_output(event, tool, cmd, stdout, stderr)
            if p.returncode == 0:
                res.messages.extend(msgs)
                if deny:
                    res.denied = True
                    return res
            elif p.returncode == 2:
                res.messages.extend(msgs or [f"{event} hook denied tool `{tool}`"])
                res.denied = True
                return res
            else:
                res.messages.extend(msgs or [f"Hook `{cmd}` exited with status {p.returncode}: {stderr}"])
                res.failed = True
                return res
        return res

    # --- tools ------------------------------------------------------------------------
    def run_tool(self, name: str, tool_input: dict[str, Any],
                 tool: Callable[[dict[str, Any]], tuple[str, bool]]) -> ToolResult:
        """One tool call as claw's conversation loop runs it: the assistant's tool_use row,
        PreToolUse hooks, the tool (unless denied/failed), PostToolUse(Failure) hooks, the
        tool_result row with hook feedback merged in."""
        tool_use_id = f"toolu_{next(self._ids):04d}"
        input_json = json.dumps(tool_input)
        self._append({"type": "message", "message": {"role": "assistant", "blocks": [
            {"type": "tool_use", "id": tool_use_id, "name": name, "input": input_json}]}})
        pre = self.run_hooks("PreToolUse", name, input_json, None, False)
        post = None
        if pre.denied or pre.failed:
            output, is_error = "\n".join(pre.messages) or f"PreToolUse hook denied tool `{name}`", True
            final = output
        else:
            output, is_error = tool(tool_input)
            post = self.run_hooks("PostToolUseFailure" if is_error else "PostToolUse", name, input_json, output, is_error)
            is_error = is_error or post.denied or post.failed
            final = merge_hook_feedback(pre.messages + post.messages, output, is_error)
        self._append({"type": "message", "message": {"role": "tool", "blocks": [
            {"type": "tool_result", "tool_use_id": tool_use_id, "tool_name": name, "output": final,
             "is_error": is_error}]}})
        return ToolResult(output=final, is_error=is_error, raw_output=output, pre=pre, post=post)

    def bash(self, command: str) -> ToolResult:
        def run(inp: dict[str, Any]) -> tuple[str, bool]:
            p = subprocess.run(["bash", "-c", inp["command"]], cwd=self.cwd, env=self.env, capture_output=True, text=True)
            return p.stdout + p.stderr, p.returncode != 0
        return self.run_tool("bash", {"command": command}, run)

    def ask(self, question: str, options: list[str], answer_from: Callable[[], str]) -> ToolResult:
        """AskUserQuestion: the answer comes from claw's own stdin (``answer_from`` is called
        while the tool runs, after PreToolUse)."""
        def run(inp: dict[str, Any]) -> tuple[str, bool]:
            answer = answer_from()
            return json.dumps({"question": inp["question"], "answer": answer, "status": "answered"}), False
        return self.run_tool("AskUserQuestion", {"question": question, "options": options}, run)

    def _append(self, row: dict[str, Any]) -> None:
        with open(self.session_file, "a") as f:
            f.write(json.dumps(row, separators=(",", ":")) + "\n")


def parse_output(event: str, tool: str, command: str, stdout: str, stderr: str) -> tuple[list[str], bool]:
    """``hooks.rs`` ``parse_hook_output``: (messages, deny)."""
    if not stdout:
        return [], False
    try:
        root = json.loads(stdout)
    except ValueError as e:
        if stdout.lstrip()[:1] in ("{", "["):
            return [f"hook_invalid_json: phase={event} tool={tool} command={command[:160]} detail={e} "
                    f"stdout_preview={stdout[:160]} stderr_preview={stderr[:160] or '<empty>'}"], False
        return [stdout], False
    if not isinstance(root, dict):
        return [f"hook_invalid_json: phase={event} tool={tool} detail=expected top-level JSON object"], False
    msgs: list[str] = []
    for key in ("systemMessage", "reason"):
        if isinstance(root.get(key), str):
            msgs.append(root[key])
    deny = root.get("continue") is False or root.get("decision") == "block"
    spec = root.get("hookSpecificOutput")
    if isinstance(spec, dict):
        if isinstance(spec.get("additionalContext"), str):
            msgs.append(spec["additionalContext"])
        if spec.get("permissionDecision") == "deny":
            deny = True
    if not msgs:
        msgs.append(stdout)  # any JSON without a message field is itself the feedback
    return msgs, deny


def merge_hook_feedback(messages: list[str], output: str, is_error: bool) -> str:
    """``conversation.rs`` ``merge_hook_feedback``."""
    if not messages:
        return output
    sections = [output] if output.strip() else []
    label = "Hook feedback (error)" if is_error else "Hook feedback"
    sections.append(f"{label}:\n" + "\n".join(messages))
    return "\n\n".join(sections)
