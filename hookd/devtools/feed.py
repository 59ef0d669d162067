"""`hookd replay DIR --into BUILDER`: play a recorded scenario into the running daemon, as
BUILDER's agent would, so that its questions reach the humans (the operator page, `hookd
questions`) and their answers come back through the hooks.

Unlike `hookd replay` (a private daemon, compared with a golden file), each payload of
``DIR/hooks/*.json`` runs through the command that `hookd spawn BUILDER` generated for its
event, exactly as Claude Code runs it: ``sh -c "<command>"`` in the builder's worktree (or a
temporary directory for a ``--settings-file`` spawn), payload on stdin, in file order. Events
the settings do not register are skipped. A hook the builder's harness holds for a remote answer
(its adapter's ``remote_answers.hold_events``: Claude Code's PermissionRequest and Elicitation)
runs the generated hold command, so it waits (up to the builder's ``--hold`` window) for an
answer from anywhere; when a PermissionRequest
returns an AskUserQuestion answer, the scenario's next AskUserQuestion PostToolUse carries that
answer instead of the recorded one (what Claude Code does with the hook's ``updatedInput``).
Session ids and tool_use ids are replaced by fresh ones (``fresh_ids``), so a scenario can be
played again into the same daemon and still ask anew.
"""

from __future__ import annotations

import re
import secrets
import shlex
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from hookd.config import Home
from hookd.harness.registry import ADAPTERS
from hookd.models import ConfigError, NotFound
from hookd.spawn import read_manifest

_ID_KEYS = ("session_id", "tool_use_id", "agent_id")


@dataclass
class Step:
    """One hook run: file name, event, exit code, stdout (bytes, exactly as printed)."""

    name: str
    event: str
    returncode: int
    stdout: bytes


def hook_commands(settings_file: Path, http_command: str = "") -> dict[str, str]:
    """Event name -> the hookd command in a spawned settings file (the tagged entry), as ``sh
    -c`` runs it: the shell form as written, the exec form (``command`` + ``args``, hookd's tag
    the last argument) quoted word by word, an http hook (``X-Hookd-Tag``) as
    ``http_command`` (the builder's shell-form command: the same payload to the same daemon;
    skipped when empty)."""
    data = msgspec.json.decode(settings_file.read_bytes())
    out: dict[str, str] = {}
    for event, groups in (data.get("hooks") or {}).items():
        for group in groups:
            for h in group.get("hooks", []):
                args = h.get("args")
                if "# hookd builder=" in str(h.get("command", "")):
                    out.setdefault(event, h["command"])
                elif isinstance(args, list) and args and str(args[-1]).startswith("# hookd builder="):
                    out.setdefault(event, shlex.join([str(h["command"]), *map(str, args)]))
                elif http_command and str((h.get("headers") or {}).get("X-Hookd-Tag", "")).startswith("# hookd builder="):
                    out.setdefault(event, http_command)
    return out


def fresh_ids(payloads: list[bytes]) -> list[bytes]:
    """The payloads with every session id and tool_use id (the values of ``session_id``,
    ``tool_use_id`` and ``agent_id`` fields, wherever else they occur too: transcript paths)
    replaced by a fresh one, consistently across all of them."""
    olds: dict[str, str] = {}
    for raw in payloads:
        try:
            doc = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            continue  # a malformed payload is played as recorded
        if not isinstance(doc, dict):
            continue
        for key in _ID_KEYS:
            v = doc.get(key)
            if isinstance(v, str) and len(v) >= 4 and v not in olds:
                olds[v] = f"toolu_01{secrets.token_hex(12)}" if key == "tool_use_id" else str(uuid.uuid4())
    if not olds:
        return list(payloads)
    pattern = re.compile("|".join(re.escape(o) for o in sorted(olds, key=len, reverse=True)).encode())
    return [pattern.sub(lambda m: olds[m.group(0).decode()].encode(), p) for p in payloads]


def _with_answer(payload: bytes, updated_input: dict[str, Any]) -> bytes:
    p = msgspec.json.decode(payload)
    p["tool_input"] = updated_input
    if isinstance(p.get("tool_response"), dict):
        p["tool_response"] = {**p["tool_response"], "answers": updated_input.get("answers")}
    return msgspec.json.encode(p)


def feed(home: Home, scenario: Path, builder: str, *, renew_ids: bool = True,
         before: Callable[[str, str], None] | None = None, timeout_s: float = 86_400) -> Iterator[Step]:
    """Play ``scenario`` into ``home``'s running daemon as ``builder`` (see module doc).

    before: called with (file name, event) before each hook that is held for an answer (see
    the module doc; none when the builder was spawned with ``--hold 0``), e.g. to say that it
    now waits for one. Yields each step as it completes. Raises
    NotFound (builder not spawned), ConfigError (no payloads, or the settings file is gone)."""
    manifest = read_manifest(home, builder)
    if manifest is None:
        raise NotFound(f"builder {builder!r} is not spawned in {home.root}: run `hookd spawn {builder} ...` first")
    settings = Path(manifest["settings_file"])
    if not settings.exists():
        raise ConfigError(f"{settings} (builder {builder}'s hooks) is gone: spawn it again")
    commands = hook_commands(settings, manifest.get("command") or "")
    adapter = ADAPTERS.get(manifest.get("harness") or "")
    remote = adapter.remote_answers if adapter is not None and manifest.get("hold_s") else None
    held = frozenset(remote.hold_events.values()) if remote is not None else frozenset()
    files = sorted((scenario / "hooks").glob("*.json"))
    if not files:
        raise ConfigError(f"{scenario}/hooks has no *.json payloads")
    payloads = [f.read_bytes() for f in files]
    if renew_ids:
        payloads = fresh_ids(payloads)
    answer_for_post: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="hookd-feed-") as tmp:
        cwd = manifest.get("worktree") or tmp
        for f, payload in zip(files, payloads):
            event = f.stem.split("-", 1)[-1]
            command = commands.get(event)
            if command is None:
                continue  # the harness would not run hookd's hook for it
            if event == "PostToolUse" and answer_for_post is not None and b'"AskUserQuestion"' in payload:
                payload = _with_answer(payload, answer_for_post)
                answer_for_post = None
            if before is not None and event in held:
                before(f.name, event)
            r = subprocess.run(["sh", "-c", command], input=payload, cwd=cwd, capture_output=True, timeout=timeout_s)
            yield Step(f.name, event, r.returncode, r.stdout)
            if event == "PermissionRequest" and r.stdout.strip():
                try:
                    decision = msgspec.json.decode(r.stdout)["hookSpecificOutput"]["decision"]
                except (msgspec.DecodeError, KeyError, TypeError):
                    decision = None
                updated = decision.get("updatedInput") if isinstance(decision, dict) else None
                if isinstance(updated, dict) and "answers" in updated:
                    answer_for_post = updated
