"""Drive the real Codex CLI (``@openai/codex``, pinned by ``.ci/install-codex.sh``) offline.

Codex runs in a private home (``HOME`` and ``CODEX_HOME``, created here) with a
``config.toml`` that points it at a ``FakeResponsesAPI``; nothing reaches the network and
no login is needed. Two ways to run it:

* ``run_exec``: ``codex exec`` (one prompt, non-interactive; its approval policy is always
  ``never``, so no permission prompt is ever asked there);
* ``AppServer``: ``codex app-server`` over stdio (JSON-RPC, one JSON object a line): a client
  that starts threads and turns, answers the server's requests (approvals,
  ``request_user_input``) and sees every notification (``hook/started``, ``turn/completed``,
  ...). ``hooks_list`` and ``trust_hooks`` use it to read and write hook trust.

docs/harness-codex.md says what each of these was used to check.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from .fake_api import wait_on
from .fake_responses import KEY_ENV, FakeResponsesAPI, LoggedRequest, codex_config
from .test_harness_selfcheck import read_payloads, write_script

__all__ = ["AppServer", "CODEX_VERSION", "CodexNotFound", "ExecResult", "Recorder", "codex_env",
           "find_codex_bin", "hooks_config", "hooks_list", "prepare_home", "rollouts",
           "run_exec", "save_fixture", "trust_hash", "trust_hooks", "write_hooks"]

CODEX_VERSION = "0.171.0"
#: the native binary under the install cache (x86_64 Linux; the wrapper script is a fallback)
NATIVE_REL = Path("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
WRAPPER_REL = Path("node_modules/@openai/codex/bin/codex.js")
#: every hook event 0.171.0 knows (its HookEventName, in config spelling)
HOOK_EVENTS = ("SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse",
               "PermissionRequest", "PostToolUse", "PreCompact", "PostCompact", "SubagentStart",
               "SubagentStop", "Stop", "Interrupt", "PreModelRequest", "PostModelRequest")
#: events whose hook timeout 0.171.0 clamps to 3 s (it warns when configured longer)
SHORT_TIMEOUT_EVENTS = ("SessionEnd", "Interrupt")


class CodexNotFound(RuntimeError):
    """Raised by ``find_codex_bin`` when no usable binary exists."""


def cache_dir() -> Path:
    """The install cache: ``$HOOKD_CODEX_CACHE`` or ``~/.cache/hookd-codex``."""
    return Path(os.environ.get("HOOKD_CODEX_CACHE") or Path.home() / ".cache" / "hookd-codex")


def find_codex_bin() -> Path:
    """The Codex binary: ``$HOOKD_CODEX_BIN`` (must be executable, else ``CodexNotFound``),
    else the native binary of the install cache, else its node wrapper. Absolute path;
    ``CodexNotFound`` names the install script when there is none."""
    explicit = os.environ.get("HOOKD_CODEX_BIN")
    if explicit:
        path = Path(explicit).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
        raise CodexNotFound(f"HOOKD_CODEX_BIN={explicit} is not an executable file")
    for rel in (NATIVE_REL, WRAPPER_REL):
        path = cache_dir() / rel
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
    raise CodexNotFound(f"Codex {CODEX_VERSION} not found under {cache_dir()}; "
                        "run .ci/install-codex.sh")


def codex_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment (nothing inherited) for Codex in the private ``home``:
    ``HOME=home``, ``CODEX_HOME=home/.codex``, ``TMPDIR=home/tmp`` (created: Codex writes
    spilled hook output there), ``PATH``, a UTF-8 locale, ``TERM`` and the fake provider's key
    variable; ``extra`` applied last."""
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "TMPDIR": str(home / "tmp"),
           "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "TERM": "xterm-256color", KEY_ENV: "hookd-fake-key"}
    env.update(extra or {})
    return env


def prepare_home(home: Path, api: FakeResponsesAPI, extra_config: str = "") -> Path:
    """Create ``home`` and ``home/.codex`` and write ``config.toml`` pointing Codex at
    ``api`` (plus ``extra_config``, TOML appended as is). Returns ``CODEX_HOME``."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(api) + "\n" + extra_config)
    return codex_home


def hooks_config(command: Callable[[str], str] | str, events: Iterable[str] = HOOK_EVENTS,
                 timeout: int = 30, matcher: str | None = None) -> dict:
    """A ``hooks.json`` document: for each event one group holding one command hook.
    ``command`` is the command line, or a function of the event name giving it; ``matcher``
    (a tool name pattern) goes on every group when given. Timeouts of SessionEnd and
    Interrupt are capped at 3 s (0.171.0 clamps them, with a warning)."""
    out: dict[str, list[dict]] = {}
    for event in events:
        cmd = command(event) if callable(command) else command
        limit = min(timeout, 3) if event in SHORT_TIMEOUT_EVENTS else timeout
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": cmd, "timeout": limit}]}
        if matcher is not None:
            group["matcher"] = matcher
        out[event] = [group]
    return {"hooks": out}


def write_hooks(path: Path, config: dict) -> Path:
    """Write ``config`` (``hooks_config``'s shape) as JSON to ``path``; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


@dataclass
class ExecResult:
    """What ``codex exec`` did: exit status, stdout (the final message, or JSONL events with
    ``--json``), stderr (the run's log: header, ``hook: <Event>`` lines, warnings)."""

    returncode: int
    stdout: str
    stderr: str

    def events(self) -> list[dict]:
        """The stdout lines that are JSON objects (``--json`` mode)."""
        out = []
        for line in self.stdout.splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
        return out


def run_exec(codex_bin: Path, prompt: str, cwd: Path, env: Mapping[str, str],
             args: Iterable[str] = (), timeout: float = 90) -> ExecResult:
    """Run ``codex exec --skip-git-repo-check [args] PROMPT`` in ``cwd`` with ``env`` and
    stdin closed; ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
    r = subprocess.run([str(codex_bin), "exec", "--skip-git-repo-check", *args, prompt],
                       cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=timeout)
    return ExecResult(r.returncode, r.stdout, r.stderr)


class AppServerError(RuntimeError):
    """A JSON-RPC error answered by the app server (``.error`` holds its object)."""

    def __init__(self, method: str, error: Any):
        super().__init__(f"{method}: {error}")
        self.error = error


@dataclass
class AppServer:
    """A ``codex app-server`` process on stdio, as a JSON-RPC client.

    Args:
        codex_bin, cwd, env: the binary, its working directory and environment.
        answers: ``{method: result}`` answered to the server's requests of that method
            (``item/commandExecution/requestApproval``: ``{"decision": "accept"}``, ...), or
            a function ``(params) -> result``; a request of another method is answered with
            a JSON-RPC error.
        args: extra arguments after ``app-server`` (``--enable FEATURE``, ``-c k=v``).

    Every message (both ways) is kept in ``messages`` as ``(direction, object)`` with
    direction ``"in"`` or ``"out"``; the server's requests are also in ``server_requests``.
    """

    codex_bin: Path
    cwd: Path
    env: Mapping[str, str]
    answers: dict[str, Any] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    messages: list[tuple[str, dict]] = field(default_factory=list)
    server_requests: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        self._ids = iter(range(1, 1_000_000))
        self._replies: dict[int, queue.Queue] = {}
        self._proc: subprocess.Popen | None = None

    def start(self) -> Self:
        """Start the process and initialize the session (``initialize``, ``initialized``)."""
        self._proc = subprocess.Popen(
            [str(self.codex_bin), "app-server", *self.args, "--listen", "stdio://"],
            cwd=self.cwd, env=dict(self.env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, bufsize=1)
        threading.Thread(target=self._read, name="codex-app-server", daemon=True).start()
        self.request("initialize", {"clientInfo": {"name": "hookd-e2e", "version": "0"},
                                    "capabilities": {"experimentalApi": True}})
        self._send({"jsonrpc": "2.0", "method": "initialized"})
        return self

    def close(self, timeout: float = 20) -> int | None:
        """Close stdin (the server then ends its threads: SessionEnd hooks run) and wait for
        the exit; kill after ``timeout`` seconds. Returns the exit status."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, obj: dict) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        with self._lock:
            self.messages.append(("out", obj))
            self._proc.stdin.write(json.dumps(obj) + "\n")
            self._proc.stdin.flush()

    def _read(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.messages.append(("in", obj))
                self._lock.notify_all()
            if "method" in obj and "id" in obj:
                self._answer(obj)
            elif "id" in obj and obj["id"] in self._replies:
                self._replies[obj["id"]].put(obj)
        with self._lock:
            self._lock.notify_all()

    def _answer(self, req: dict) -> None:
        self.server_requests.append(req)
        answer = self.answers.get(req["method"])
        if answer is None:
            self._send({"jsonrpc": "2.0", "id": req["id"],
                        "error": {"code": -32000, "message": "no answer configured"}})
            return
        result = answer(req.get("params")) if callable(answer) else answer
        self._send({"jsonrpc": "2.0", "id": req["id"], "result": result})

    def request(self, method: str, params: dict, timeout: float = 30) -> Any:
        """Send a request and return its ``result``; ``AppServerError`` on a JSON-RPC error,
        ``TimeoutError`` after ``timeout`` seconds."""
        rid = next(self._ids)
        box: queue.Queue = queue.Queue()
        self._replies[rid] = box
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        try:
            reply = box.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"app-server: no reply to {method} within {timeout}s") from None
        finally:
            self._replies.pop(rid, None)
        if "error" in reply:
            raise AppServerError(method, reply["error"])
        return reply.get("result")

    def notifications(self, method: str | None = None) -> list[dict]:
        """Notifications received (objects with ``method`` and no ``id``), of ``method``
        when given, in order."""
        with self._lock:
            return [o for d, o in self.messages if d == "in" and "method" in o and "id" not in o
                    and (method is None or o["method"] == method)]

    def wait_for(self, predicate: Callable[[AppServer], Any], timeout: float = 30) -> Any:
        """``predicate(self)``'s first truthy value, checked on every message;
        ``TimeoutError`` after ``timeout`` seconds."""
        return wait_on(self._lock, lambda: predicate(self), timeout, 0.1, "app-server")

    def start_thread(self, cwd: Path, **params: Any) -> str:
        """``thread/start`` in ``cwd`` (``approvalPolicy``, ``sandbox``, ... as keywords);
        returns the thread id."""
        result = self.request("thread/start", {"cwd": str(cwd), **params})
        return result["thread"]["id"]

    def run_turn(self, thread_id: str, text: str, timeout: float = 60) -> dict:
        """``turn/start`` with one text input, then wait for that turn's
        ``turn/completed``; returns the completed turn object."""
        turn = self.request("turn/start", {"threadId": thread_id,
                                           "input": [{"type": "text", "text": text}]})["turn"]
        return self.wait_turn(turn["id"], timeout)

    def wait_turn(self, turn_id: str, timeout: float = 60) -> dict:
        """The turn object of ``turn_id``'s ``turn/completed`` (waited for)."""
        def done(srv: AppServer) -> dict | None:
            for n in srv.notifications("turn/completed"):
                if n["params"]["turn"]["id"] == turn_id:
                    return n["params"]["turn"]
            return None
        return self.wait_for(done, timeout)


def hooks_list(codex_bin: Path, env: Mapping[str, str], cwd: Path) -> list[dict]:
    """The hooks Codex would load for ``cwd`` (``hooks/list``): one ``HookMetadata`` object
    per handler (``key``, ``eventName``, ``command``, ``sourcePath``, ``currentHash``,
    ``trustStatus`` (managed, untrusted, trusted, modified), ``enabled``, ...)."""
    with AppServer(codex_bin, cwd, env) as srv:
        data = srv.request("hooks/list", {"cwds": [str(cwd)]})["data"]
    return [h for entry in data for h in entry["hooks"]]


def trust_hash(event_key: str, command: str, timeout: int, matcher: str | None = None,
               is_async: bool = False, status_message: str | None = None) -> str:
    """The ``trusted_hash`` Codex 0.171.0 expects for one command hook, computed without it:
    ``sha256:`` + the hex SHA-256 of the compact JSON, keys sorted, of
    ``{"event_name": event_key, "matcher": ..., "hooks": [{"type": "command", "command": ...,
    "timeout": ..., "async": ..., "statusMessage": ...}]}`` (``matcher`` and ``statusMessage``
    only when set). ``event_key`` is the snake_case event of the trust key (``pre_tool_use``);
    ``timeout`` is the one Codex applies (600 s when none is configured; SessionEnd and
    Interrupt at most 3). Checked against ``hooks/list``'s ``currentHash``
    (docs/harness-codex.md, "Hook trust")."""
    handler: dict[str, Any] = {"type": "command", "command": command, "timeout": timeout,
                               "async": is_async}
    if status_message is not None:
        handler["statusMessage"] = status_message
    identity: dict[str, Any] = {"event_name": event_key, "hooks": [handler]}
    if matcher is not None:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def trust_hooks(codex_bin: Path, env: Mapping[str, str], cwd: Path,
                keep: Callable[[dict], bool] = lambda hook: True) -> list[dict]:
    """Trust the hooks ``hooks_list`` reports for ``cwd`` (those ``keep`` accepts) the way
    Codex's own review does: ``hooks.state."<key>".trusted_hash = <currentHash>`` in the user
    ``config.toml``, written through the app server's ``config/batchWrite``. Returns the
    hooks trusted."""
    with AppServer(codex_bin, cwd, env) as srv:
        data = srv.request("hooks/list", {"cwds": [str(cwd)]})["data"]
        chosen = [h for entry in data for h in entry["hooks"] if keep(h)]
        state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in chosen}
        srv.request("config/batchWrite", {"edits": [
            {"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": state}]})
    return chosen


class Recorder:
    """A command hook that appends each payload (its stdin) to ``dir/hooks.jsonl`` and then
    prints the next queued output for its event, once: ``respond(event, obj, ...)`` queues
    JSON outputs (printed in order, one per hook run; none queued: no output).

    ``command(event)`` is the command line for ``event`` (``sh <script> <event>``), for
    ``hooks_config``."""

    def __init__(self, dir: Path):
        self.dir = dir
        self.outputs = dir / "outputs"
        self.outputs.mkdir(parents=True, exist_ok=True)
        self.log = dir / "hooks.jsonl"
        self._queued = 0
        self.script = write_script(dir / "record.sh", f"""\
tmp=$(mktemp '{dir}/.hook.XXXXXX')
cat > "$tmp"
printf '\\n' >> "$tmp"
cat "$tmp" >> '{self.log}'
rm -f "$tmp"
for f in '{self.outputs}'/"$1".*.json; do
    [ -f "$f" ] && cat "$f" && mv "$f" "$f.used"
    break
done
exit 0
""")

    def command(self, event: str) -> str:
        """``sh <script> <event>``."""
        return f"sh {self.script} {event}"

    def respond(self, event: str, *outputs: dict) -> None:
        """Queue ``outputs`` for the next runs of ``event``'s hook, in order."""
        for obj in outputs:
            self._queued += 1
            path = self.outputs / f"{event}.{self._queued:04d}.json"
            path.write_text(json.dumps(obj))

    def payloads(self, event: str | None = None) -> list[dict]:
        """The payloads recorded so far (of ``event`` when given), in completion order."""
        return [p for p in read_payloads(self.log)
                if event is None or p.get("hook_event_name") == event]

    def events(self) -> list[str]:
        """``hook_event_name`` of every recorded payload, in order."""
        return [p.get("hook_event_name", "?") for p in self.payloads()]


def rollouts(codex_home: Path) -> list[Path]:
    """The rollout files under ``codex_home/sessions`` (``YYYY/MM/DD/rollout-*.jsonl``),
    oldest first by name."""
    return sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))


def _request_summary(req: LoggedRequest) -> dict:
    """A logged request without what every request repeats (instructions, tools, the
    conversation so far): what was new to the model in it."""
    return {"method": req.method, "path": req.path, "kind": req.kind, "agent": req.agent,
            "turn": req.turn, "status": req.status, "tools": req.tool_names(),
            "new_input": _new_items(req)}


def _new_items(req: LoggedRequest) -> list[dict]:
    items = req.input_items()
    last = max((n for n, i in enumerate(items) if i.get("role") == "assistant"
                or i.get("type") == "function_call"), default=-1)
    return items[last + 1:]


def save_fixture(name: str, recorder: Recorder, api: FakeResponsesAPI, codex_home: Path,
                 script: dict, app: AppServer | None = None) -> Path | None:
    """When ``$HOOKD_CODEX_RECORD`` names a folder, write scenario ``name`` there as recorded:
    ``hooks/NNN-<Event>.json`` (payloads in completion order), ``rollout.jsonl`` (the first
    rollout; subagents' as ``rollout-<n>.jsonl``), ``model-script.json``, ``requests.jsonl``
    (each model request's new input items, ``_request_summary``) and, for an app-server
    scenario, ``app-server.jsonl`` (every message, ``{"dir": "in"|"out", "msg": ...}``).
    The test's private tree is written as the Claude Code fixtures' (``codex_home``'s
    parent, the private HOME, as ``/home/dev``; the rest of the test's temp folder as
    ``/home/dev/work``: :func:`normalise_paths`); ids and times are kept as they are.
    Returns the folder, or ``None`` when the variable is unset."""
    root = os.environ.get("HOOKD_CODEX_RECORD")
    if not root:
        return None
    out = Path(root) / name
    (out / "hooks").mkdir(parents=True, exist_ok=True)
    home = codex_home.parent

    def write(path: Path, text: str) -> None:
        path.write_text(normalise_paths(text, home))

    for n, payload in enumerate(recorder.payloads(), 1):
        event = payload.get("hook_event_name", "Unknown")
        write(out / "hooks" / f"{n:03d}-{event}.json", json.dumps(payload, indent=2) + "\n")
    for n, path in enumerate(rollouts(codex_home)):
        write(out / ("rollout.jsonl" if n == 0 else f"rollout-{n}.jsonl"), path.read_text())
    write(out / "model-script.json", json.dumps(script, indent=2) + "\n")
    write(out / "requests.jsonl", "".join(json.dumps(_request_summary(r)) + "\n" for r in api.requests))
    if app is not None:
        write(out / "app-server.jsonl", "".join(json.dumps({"dir": d, "msg": m}) + "\n" for d, m in app.messages))
    return out


def normalise_paths(text: str, home: Path) -> str:
    """``text`` with the test's private ``home`` as ``/home/dev`` and the rest of its temp
    folder (``home``'s parent) as ``/home/dev/work``: no path of this machine's temp tree is
    left in a committed fixture (tests/test_replay.py checks them all)."""
    return text.replace(os.fspath(home), "/home/dev").replace(os.fspath(home.parent), "/home/dev/work")
