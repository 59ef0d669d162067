"""Drivers that run the real Claude Code binary against a fake API.

Three ways of driving it:

* ``run_print``: headless ``claude -p PROMPT --output-format stream-json --verbose``;
* ``StreamJsonHost``: ``claude -p --input-format stream-json --output-format
  stream-json --verbose --permission-prompt-tool stdio``, where this process is
  the SDK host and answers ``control_request``/``can_use_tool`` messages;
* ``TmuxClaude``: the interactive TUI inside a private tmux server.

All of them take an environment built by ``hermetic_env`` so that the only
network connection Claude Code makes is to the fake API on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from hookd.daemonproc import wait_until as _wait_until

__all__ = [
    "CLAUDE_VERSION",
    "TEST_API_KEY",
    "ClaudeNotFound",
    "PrintResult",
    "StreamJsonHost",
    "TmuxClaude",
    "cache_dir",
    "find_claude_bin",
    "hermetic_env",
    "run_print",
    "seed_claude_json",
    "wait_until",
    "write_settings",
]

CLAUDE_VERSION = "2.1.332"
# Any key works against the fake API; the TUI approves it by its last 20 chars.
TEST_API_KEY = "sk-ant-test-hookd-e2e-0123456789abcdefghij"
LINUX_X64_REL = Path("node_modules/@anthropic-ai/claude-code-linux-x64/claude")
NPM_BIN_REL = Path("node_modules/.bin/claude")


class ClaudeNotFound(RuntimeError):
    """Raised by ``find_claude_bin`` when no usable binary exists."""


def wait_until(fn: Callable[[], Any], timeout: float, interval: float = 0.05,
               message: str | Callable[[], str] = "condition") -> Any:
    """Poll ``fn()`` until truthy (hookd.daemonproc.wait_until: ``interval`` seconds at first,
    growing to 0.25 s: a poll here is often a process, e.g. ``tmux capture-pane``); raises
    TimeoutError naming ``message``."""
    return _wait_until(fn, timeout, interval, message, max_interval=max(interval, 0.25))


# --------------------------------------------------------------------------- env
def cache_dir() -> Path:
    """The install cache folder: ``$HOOKD_CC_CACHE`` or ``~/.cache/hookd-cc``."""
    return Path(os.environ.get("HOOKD_CC_CACHE") or Path.home() / ".cache" / "hookd-cc")


def _is_exe(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def find_claude_bin() -> Path:
    """Locate the Claude Code binary.

    Order: ``$HOOKD_CLAUDE_BIN`` (must exist, else ``ClaudeNotFound``); the
    native package binary ``<cache>/node_modules/@anthropic-ai/claude-code-linux-x64/claude``;
    then ``<cache>/node_modules/.bin/claude`` only if it resolves to a working
    file (npm 11 skips the postinstall that makes it usable). ``<cache>`` is
    ``cache_dir()``. Returns an absolute path; raises ``ClaudeNotFound``.
    """
    explicit = os.environ.get("HOOKD_CLAUDE_BIN")
    if explicit:
        p = Path(explicit).expanduser()
        if _is_exe(p):
            return p.resolve()
        raise ClaudeNotFound(f"HOOKD_CLAUDE_BIN={explicit} is not an executable file")
    base = cache_dir()
    native = base / LINUX_X64_REL
    if _is_exe(native):
        return native.resolve()
    wrapper = base / NPM_BIN_REL
    if _is_exe(wrapper):
        real = wrapper.resolve()
        # Without the postinstall the wrapper is a stub that only prints an error.
        if real.stat().st_size > 10_000_000:
            return real
    raise ClaudeNotFound(
        f"Claude Code {CLAUDE_VERSION} not found under {base}; run .ci/install-claude-code.sh")


#: Variables every ``hermetic_env`` adds before ``extra``: empty here (the benchmarks and
#: ``record.py`` run Claude Code as a user does); the test session sets its own
#: (tests/e2e/conftest.py ``_runtime_env``).
RUNTIME_ENV: dict[str, str] = {}


def hermetic_env(home: str | os.PathLike, api_url: str,
                 extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Build a minimal environment (not inherited from this process).

    Args:
        home: private HOME directory (created if missing).
        api_url: the fake API base URL (``ANTHROPIC_BASE_URL``).
        extra: additional variables, applied last (may override).

    Returns a dict with HOME, PATH (``/usr/local/bin:/usr/bin:/bin`` plus the
    directory of ``node`` when it lives elsewhere), LANG/LC_ALL=C.UTF-8,
    TERM, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY (``TEST_API_KEY``), the
    opt-outs of non-essential traffic/auto-update/telemetry/error reports,
    IS_SANDBOX=1 (lets root use ``--permission-mode bypassPermissions``) and
    ``RUNTIME_ENV``.
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    path = ["/usr/local/bin", "/usr/bin", "/bin"]
    node = shutil.which("node")
    if node:
        node_dir = str(Path(node).resolve().parent)
        if node_dir not in path:
            path.append(node_dir)
    env = {
        "HOME": str(home),
        "PATH": ":".join(path),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm-256color",
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": TEST_API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "IS_SANDBOX": "1",
        **RUNTIME_ENV,
    }
    if extra:
        env.update(extra)
    return env


def write_settings(path: str | os.PathLike, settings: Mapping[str, Any]) -> Path:
    """Write ``settings`` as JSON to ``path`` (parents created); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(settings, indent=2))
    return p


def _settings_args(settings: Any) -> list[str]:
    """``--settings`` argv for a path or a mapping (a mapping is passed inline as JSON)."""
    if settings is None:
        return []
    if isinstance(settings, Mapping):
        return ["--settings", json.dumps(settings)]
    return ["--settings", str(settings)]


# --------------------------------------------------------------------- headless
@dataclass
class PrintResult:
    """Outcome of ``run_print``.

    Attributes:
        returncode: process exit status.
        messages: stream-json lines parsed as dicts, in order.
        stdout, stderr: raw text.
        duration: wall time in seconds.
    """

    returncode: int
    messages: list[dict]
    stdout: str
    stderr: str
    duration: float

    @property
    def result(self) -> dict | None:
        """The final ``{"type": "result", ...}`` message, if any."""
        for m in reversed(self.messages):
            if m.get("type") == "result":
                return m
        return None

    def of_type(self, type_: str) -> list[dict]:
        """Messages whose ``type`` equals ``type_``."""
        return [m for m in self.messages if m.get("type") == type_]


def parse_stream_json(text: str) -> list[dict]:
    """Parse newline-delimited JSON, skipping blank and non-JSON lines."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def run_print(prompt: str, cwd: str | os.PathLike, env: Mapping[str, str], settings: Any = None,
              extra_args: Sequence[str] = (), timeout: float = 60.0,
              claude_bin: str | os.PathLike | None = None) -> PrintResult:
    """Run ``claude -p PROMPT --output-format stream-json --verbose [--settings F]``.

    Args:
        prompt: the user prompt.
        cwd: the session working directory (project dir).
        env: full environment (see ``hermetic_env``).
        settings: ``--settings`` value: a file path, or a mapping passed inline.
        extra_args: more CLI arguments (e.g. ``("--permission-mode", "bypassPermissions")``).
        timeout: seconds before the process is killed (``subprocess.TimeoutExpired``).
        claude_bin: binary path; default ``find_claude_bin()``.

    stdin is ``/dev/null``. Returns a ``PrintResult``.
    """
    exe = str(claude_bin or find_claude_bin())
    argv = [exe, "-p", prompt, "--output-format", "stream-json", "--verbose",
            *_settings_args(settings), *extra_args]
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=str(cwd), env=dict(env), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout,
                          start_new_session=True, check=False)
    return PrintResult(proc.returncode, parse_stream_json(proc.stdout), proc.stdout,
                       proc.stderr, time.monotonic() - t0)


# ------------------------------------------------------------- stream-json host
def ask_answers_for(tool_input: Mapping[str, Any],
                    choose: Callable[[dict], str] | Mapping[str, str] | None = None) -> dict:
    """Answers map for an AskUserQuestion input: question text -> answer string.

    ``choose`` is a mapping question text -> answer, or a callable taking the
    question dict and returning the answer; default: the first option's label.
    """
    answers = {}
    for q in tool_input.get("questions") or []:
        text = q.get("question", "")
        if callable(choose):
            answers[text] = choose(q)
        elif choose is not None and text in choose:
            answers[text] = choose[text]
        else:
            opts = q.get("options") or [{}]
            answers[text] = opts[0].get("label", "")
    return answers


class StreamJsonHost:
    """Host side of ``claude -p --input-format stream-json --output-format
    stream-json --verbose --permission-prompt-tool stdio``.

    Claude Code writes one JSON object per line; permission checks arrive as::

        {"type": "control_request", "request_id": "<id>",
         "request": {"subtype": "can_use_tool", "tool_name": "AskUserQuestion",
                     "input": {...}, "tool_use_id": "toolu_...", ...}}

    and are answered on stdin with::

        {"type": "control_response",
         "response": {"subtype": "success", "request_id": "<id>",
                      "response": {"behavior": "allow", "updatedInput": {...}}}}

    ``on_can_use_tool(request) -> dict`` decides (the inner ``response`` object);
    the default allows every tool unchanged and answers AskUserQuestion with
    ``ask_choose`` (see ``ask_answers_for``) merged into ``updatedInput``.

    Args:
        cwd, env: as for ``run_print``.
        settings: ``--settings`` file path or mapping.
        extra_args: more CLI arguments.
        on_can_use_tool: optional decision callback.
        ask_choose: AskUserQuestion chooser for the default callback.
        claude_bin: binary path; default ``find_claude_bin()``.

    Use as a context manager; ``send_user(text)`` starts a turn,
    ``wait_for_result()`` waits for the turn's ``result`` message,
    ``messages`` holds everything read so far, ``close()`` ends the process.
    """

    def __init__(self, cwd: str | os.PathLike, env: Mapping[str, str], settings: Any = None,
                 extra_args: Sequence[str] = (),
                 on_can_use_tool: Callable[[dict], dict] | None = None,
                 ask_choose: Callable[[dict], str] | Mapping[str, str] | None = None,
                 claude_bin: str | os.PathLike | None = None):
        exe = str(claude_bin or find_claude_bin())
        self.argv = [exe, "-p", "--input-format", "stream-json", "--output-format",
                     "stream-json", "--verbose", "--permission-prompt-tool", "stdio",
                     *_settings_args(settings), *extra_args]
        self.cwd, self.env = str(cwd), dict(env)
        self.on_can_use_tool = on_can_use_tool or self._default_decision
        self.ask_choose = ask_choose
        self.messages: list[dict] = []
        self.control_requests: list[dict] = []
        self.control_responses_sent: list[dict] = []
        self.stderr_lines: list[str] = []
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._threads: list[threading.Thread] = []

    def _default_decision(self, request: dict) -> dict:
        tool_input = dict(request.get("input") or {})
        if request.get("tool_name") == "AskUserQuestion":
            tool_input["answers"] = ask_answers_for(tool_input, self.ask_choose)
        return {"behavior": "allow", "updatedInput": tool_input}

    def start(self) -> StreamJsonHost:
        """Start the process and the reader threads; returns self."""
        self._proc = subprocess.Popen(
            self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
            start_new_session=True)
        for target in (self._read_stdout, self._read_stderr):
            t = threading.Thread(target=target, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, obj: dict) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(obj) + "\n")
        self._proc.stdin.flush()

    def send_user(self, text: str) -> None:
        """Send one user message (starts a turn)."""
        self._write({"type": "user", "session_id": "",
                     "message": {"role": "user", "content": [{"type": "text", "text": text}]},
                     "parent_tool_use_id": None})

    def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.messages.append(msg)
            if msg.get("type") == "control_request":
                self._handle_control(msg)

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            with self._lock:
                self.stderr_lines.append(line.rstrip("\n"))

    def _handle_control(self, msg: dict) -> None:
        req = msg.get("request") or {}
        with self._lock:
            self.control_requests.append(msg)
        if req.get("subtype") == "can_use_tool":
            try:
                decision = self.on_can_use_tool(req)
                response = {"subtype": "success", "request_id": msg.get("request_id"),
                            "response": decision}
            except Exception as exc:  # noqa: BLE001 - report back, never hang the agent
                response = {"subtype": "error", "request_id": msg.get("request_id"),
                            "error": f"{type(exc).__name__}: {exc}"}
        else:
            response = {"subtype": "error", "request_id": msg.get("request_id"),
                        "error": f"unsupported control request {req.get('subtype')!r}"}
        out = {"type": "control_response", "response": response}
        with self._lock:
            self.control_responses_sent.append(out)
        try:
            self._write(out)
        except (BrokenPipeError, ValueError):
            pass

    def snapshot(self) -> list[dict]:
        """A copy of all messages read so far."""
        with self._lock:
            return list(self.messages)

    def wait_for_message(self, predicate: Callable[[dict], bool], timeout: float = 30.0) -> dict:
        """Wait for the first message satisfying ``predicate``; returns it.
        Raises ``TimeoutError`` (with the stderr tail) after ``timeout`` seconds
        or ``RuntimeError`` if the process exits first."""
        def check():
            for m in self.snapshot():
                if predicate(m):
                    return m
            if self._proc is not None and self._proc.poll() is not None:
                for t in self._threads:
                    t.join(timeout=2)
                for m in self.snapshot():
                    if predicate(m):
                        return m
                raise RuntimeError(f"claude exited ({self._proc.returncode}): "
                                   + "\n".join(self.stderr_lines[-20:]))
            return None
        return wait_until(check, timeout, 0.02,
                          lambda: "stream-json message; stderr: " + "\n".join(self.stderr_lines[-20:]))

    def wait_for_result(self, count: int = 1, timeout: float = 30.0) -> dict:
        """Wait until ``count`` ``result`` messages arrived; returns the last one."""
        def check():
            res = [m for m in self.snapshot() if m.get("type") == "result"]
            return res[count - 1] if len(res) >= count else None
        return wait_until(check, timeout, 0.02,
                          lambda: f"{count} result message(s); stderr: "
                                  + "\n".join(self.stderr_lines[-20:]))

    def close(self, timeout: float = 10.0) -> int | None:
        """Close stdin (Claude Code then exits); kill the process group if it
        lingers past ``timeout`` seconds. Returns the exit code."""
        if self._proc is None:
            return None
        try:
            if self._proc.stdin and not self._proc.stdin.closed:
                self._proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._proc.wait(timeout=5)
        for t in self._threads:
            t.join(timeout=2)
        return self._proc.returncode


# ------------------------------------------------------------------------- TUI
def seed_claude_json(home: str | os.PathLike, cwd: str | os.PathLike,
                     api_key: str = TEST_API_KEY, extra: Mapping[str, Any] | None = None) -> Path:
    """Write ``$HOME/.claude.json`` so the TUI opens with no dialog.

    Sets hasCompletedOnboarding, a theme, bypassPermissionsModeAccepted, the
    API key approval (last 20 chars of ``api_key``) and trust of ``cwd``
    (both as given and resolved), with the servers of ``cwd``'s ``.mcp.json``
    approved for it (``enabledMcpjsonServers``, as the TUI's "Use this MCP
    server" records it): Claude Code 2.1.332 honours the approval `hookd spawn`
    writes into ``.claude/settings.local.json`` only once a ``git ls-files``
    answers within 2 s, so on a loaded machine its "New MCP server found"
    dialog can stop a session that has nothing to do with MCP
    (docs/testing.md, session 46). ``extra`` is merged at top level. The other
    folders an earlier call trusted in the same file stay trusted (their
    ``projects`` entries are kept); the rest of the file is written anew.
    """
    path = Path(home) / ".claude.json"
    try:
        before = json.loads(path.read_text())
    except (OSError, ValueError):
        before = {}
    kept = before.get("projects") if isinstance(before, dict) else None
    projects: dict[str, Any] = dict(kept) if isinstance(kept, dict) else {}
    try:
        servers = sorted(json.loads((Path(cwd) / ".mcp.json").read_text()).get("mcpServers") or {})
    except (OSError, ValueError, AttributeError):
        servers = []
    for p in {str(cwd), str(Path(cwd).resolve())}:
        projects[p] = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True,
                       "allowedTools": [], "enabledMcpjsonServers": servers}
    data: dict[str, Any] = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": CLAUDE_VERSION,
        "theme": "dark",
        "bypassPermissionsModeAccepted": True,
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": projects,
    }
    if extra:
        data.update(extra)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


def stray_git() -> Path | None:
    """A ``.git`` in the system's temp folder or a folder above it (where no test project's
    repository belongs), or None."""
    here = Path(tempfile.gettempdir()).resolve()
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d / ".git"
    return None


class TmuxClaude:
    """The Claude Code TUI running in a private tmux server (``tmux -L <name>``).

    Args:
        cwd, env: project dir and full environment (``hermetic_env``). HOME's
            ``.claude.json`` is seeded unless ``seed=False``.
        settings: ``--settings`` file path or mapping (or rely on
            ``<cwd>/.claude/settings.local.json``).
        extra_args: more CLI arguments (e.g. ``("--permission-mode", "bypassPermissions")``).
        width, height: terminal size in cells.
        claude_bin: binary path; default ``find_claude_bin()``.

    ``start()`` launches it; ``send_keys``/``send_text`` type;
    ``capture()`` returns the visible screen as text; ``wait_for_screen``
    polls it; ``close()`` kills the private tmux server.
    """

    def __init__(self, cwd: str | os.PathLike, env: Mapping[str, str], settings: Any = None,
                 extra_args: Sequence[str] = (), width: int = 120, height: int = 40,
                 claude_bin: str | os.PathLike | None = None, seed: bool = True,
                 tmux: str | None = None):
        self.cwd, self.env = str(cwd), dict(env)
        self.exe = str(claude_bin or find_claude_bin())
        self.args = [*_settings_args(settings), *extra_args]
        self.width, self.height = width, height
        self.seed = seed
        self.tmux = tmux or shutil.which("tmux") or "/usr/bin/tmux"
        self.socket = f"hookd-e2e-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.target = "claude:0.0"
        self.started = False

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([self.tmux, "-L", self.socket, *args], capture_output=True,
                              text=True, check=check, env=self._tmux_env(), timeout=10)

    def _tmux_env(self) -> dict[str, str]:
        # The tmux client/server get the hermetic env too (the server's env is
        # what the pane's process inherits, together with -e below).
        env = dict(self.env)
        env.pop("TMUX", None)
        return env

    def start(self) -> TmuxClaude:
        """Start tmux + claude; returns self (does not wait for the prompt). Raises
        RuntimeError when a ``.git`` sits in the temp folder or above it (see
        :func:`stray_git`)."""
        stray = stray_git()
        if stray is not None:
            raise RuntimeError(f"{stray} exists: Claude Code takes its folder for the repository of every test project "
                               "under it, and its 'New MCP server found' dialog stops the TUI (docs/testing.md "
                               "\"A Codex sandbox's /tmp/.git\"); remove it (an empty one is a sandbox's leftover)")
        if self.seed:
            seed_claude_json(self.env["HOME"], self.cwd, self.env.get("ANTHROPIC_API_KEY",
                                                                      TEST_API_KEY))
        cmd = " ".join(_shquote(a) for a in [self.exe, *self.args])
        # One tmux invocation: server options first (focus events on, keep the
        # pane after exit so a crash can still be captured), then the session.
        try:
            self._tmux("-f", "/dev/null", "start-server", ";",
                       "set-option", "-g", "focus-events", "on", ";",
                       "set-option", "-g", "remain-on-exit", "on", ";",
                       "set-option", "-g", "history-limit", "5000", ";",
                       "new-session", "-d", "-s", "claude", "-x", str(self.width),
                       "-y", str(self.height), "-c", self.cwd,
                       *[x for k, v in self.env.items() for x in ("-e", f"{k}={v}")],
                       f"exec {cmd}")
        except BaseException:
            self._kill_server()  # it may have started (a timeout under load, say): never left behind
            raise
        self.started = True
        return self

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_keys(self, *keys: str) -> None:
        """Send tmux key names (``"Enter"``, ``"Down"``, ``"Escape"``, ``"C-c"``, ...)
        or literal chunks as tmux interprets them."""
        self._tmux("send-keys", "-t", self.target, *keys)

    def send_text(self, text: str) -> None:
        """Type ``text`` literally (no key-name interpretation)."""
        self._tmux("send-keys", "-t", self.target, "-l", text)

    def submit(self, text: str, timeout: float = 30.0) -> None:
        """Type ``text`` at the prompt, wait until it is visible on screen,
        then press Enter. Raises ``TimeoutError`` if the text never shows.

        2.1.332 can drop the first keys typed while it redraws after a menu closes,
        even once the idle prompt is back ("❯ arry on" for "carry on", the prompt
        waited for): a one-line input that shows only the end of ``text`` (every key
        was read, some were lost) is erased and typed again."""
        self.send_text(text)
        probe = text.strip().splitlines()[-1][-40:] if text.strip() else ""
        if probe:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    self.wait_for_screen(lambda s: probe in s, min(5.0, max(0.0, deadline - time.monotonic())))
                    break
                except TimeoutError:
                    if time.monotonic() >= deadline:
                        raise
                shown = self.prompt_input()
                if "\n" not in text and shown and shown != text and text.endswith(shown):
                    self.send_keys(*["BSpace"] * len(shown))
                    erased = shown  # (an empty prompt may show a placeholder hint)
                    self.wait_for_screen(lambda s: not (self.prompt_input(s) or "").endswith(erased),
                                         max(1.0, deadline - time.monotonic()))
                    self.send_text(text)
        self.send_keys("Enter")

    def prompt_input(self, screen: str | None = None) -> str | None:
        """What the idle prompt's input line holds (``"❯\\xa0"`` + text, trailing
        blanks dropped) on ``screen`` (default: the screen now); None with no prompt."""
        m = re.search(r"^❯\xa0(.*)$", self.capture() if screen is None else screen, re.MULTILINE)
        return None if m is None else m.group(1).rstrip()

    def press_until(self, keys: str | Sequence[str],
                    predicate: str | re.Pattern | Callable[[str], Any],
                    timeout: float = 10.0, retry_every: float = 0.5) -> str:
        """Send ``keys`` and wait for ``predicate`` (as in ``wait_for_screen``);
        re-send them every ``retry_every`` seconds until it holds. Returns the
        screen; raises ``TimeoutError`` after ``timeout`` seconds.

        Needed for menus: 2.1.332's AskUserQuestion/permission menus ignore
        Enter for roughly 0.1-0.15 s after they appear (arrow keys work), and
        there is no screen signal for the end of that window. Only use it
        where a repeated key is harmless once the predicate holds (e.g. Enter
        on a menu that then closes).
        """
        if isinstance(keys, str):
            keys = [keys]
        deadline = time.monotonic() + timeout
        while True:
            self.send_keys(*keys)
            step = min(retry_every, max(0.0, deadline - time.monotonic()))
            try:
                return self.wait_for_screen(predicate, timeout=step)
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise

    def wait_ready(self, timeout: float = 20.0) -> str:
        """Wait for the idle input prompt and return the screen.

        The prompt line is ``"❯\\xa0"`` (a NO-BREAK SPACE follows the
        chevron) between two ``───`` rules; menus use ``"❯ "`` + a number."""
        return self.wait_for_screen(
            lambda s: re.search(r"^❯\xa0", s, re.MULTILINE) and "───" in s, timeout)

    def capture(self) -> str:
        """The visible pane as plain text (no escapes), lines joined by ``\\n``."""
        return self._tmux("capture-pane", "-p", "-J", "-t", self.target).stdout

    def pane_dead(self) -> bool:
        """True when the claude process in the pane has exited."""
        r = self._tmux("display-message", "-p", "-t", self.target, "#{pane_dead}", check=False)
        return r.stdout.strip() == "1"

    def wait_for_screen(self, predicate: str | re.Pattern | Callable[[str], Any],
                        timeout: float = 15.0, interval: float = 0.05) -> str:
        """Poll ``capture()`` until ``predicate`` holds; returns that screen.

        ``predicate`` is a regex (str or compiled, searched with MULTILINE) or a
        callable ``screen -> truthy``. Raises ``TimeoutError`` with the last
        screen in the message after ``timeout`` seconds.
        """
        if isinstance(predicate, str):
            predicate = re.compile(predicate, re.MULTILINE)
        if isinstance(predicate, re.Pattern):
            pat = predicate
            check: Callable[[str], Any] = lambda s: pat.search(s)
        else:
            check = predicate
        last = {"screen": ""}

        def poll():
            screen = self.capture()
            last["screen"] = screen
            return screen if check(screen) else None
        return wait_until(poll, timeout, interval,
                          lambda: f"screen predicate {predicate!r}; last screen:\n{last['screen']}")

    def close(self) -> None:
        """Kill the private tmux server (and so claude). Idempotent."""
        if self.started:
            self._kill_server()
            self.started = False

    def _kill_server(self) -> None:
        """``kill-server``; when tmux does not answer that (a loaded machine: its 10 s timeout),
        SIGKILL to every process of this private server (its command line names ``-L <socket>``)
        and to their children (claude)."""
        try:
            self._tmux("kill-server", check=False)
            return
        except subprocess.TimeoutExpired:
            pass
        import psutil

        for p in psutil.process_iter(["cmdline"]):
            cmd = p.info["cmdline"] or []
            if "-L" in cmd and self.socket in cmd:
                with contextlib.suppress(psutil.Error):
                    for child in p.children(recursive=True):
                        child.kill()
                    p.kill()


def _shquote(s: str) -> str:
    import shlex
    return shlex.quote(s)
