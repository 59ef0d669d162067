"""The harness adapter protocol (harness/base.py): every registered adapter satisfies it and
declares every trait, every transcript reader satisfies its protocol, the core asks adapters
nothing outside it, and the import contracts in pyproject.toml hold."""

from __future__ import annotations

import ast
import inspect
import os
import re
import shutil
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from hookd.core.claw import CLAW_HTTP
from hookd.harness import (base, claude_code, claude_code_hooks, claw, claw_http, codex, codex_hooks, install, launch,
                          registry)
from hookd.spawn import INSTALLS

from .conftest import stage_installed

ROOT = Path(__file__).resolve().parent.parent


def _members(proto: type) -> tuple[dict[str, Any], list[str]]:
    """(data members with their types, method names) that ``proto`` declares."""
    hints = typing.get_type_hints(proto)
    methods = [n for n, v in vars(proto).items() if inspect.isfunction(v) and not n.startswith("_")]
    return hints, methods


def _accepts(fn: Any, proto_fn: Any) -> None:
    """``fn`` (an adapter's function) accepts every call the protocol's method allows: its
    positional parameters by position, its keyword-only ones by name."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in list(inspect.signature(proto_fn).parameters.values())[1:]:  # without self
        if p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = None
        else:
            args.append(None)
    inspect.signature(fn).bind(*args, **kwargs)  # TypeError when it does not


def _isinstance(value: Any, kind: Any) -> bool:
    """``isinstance`` for a declared member type: a class, ``X | None``, or a generic such as
    ``Mapping[str, X]`` (its origin)."""
    if isinstance(kind, types.UnionType):
        return any(_isinstance(value, k) for k in typing.get_args(kind))
    if kind is type(None):
        return value is None
    return isinstance(value, typing.get_origin(kind) or kind)


ADAPTER_DATA, ADAPTER_METHODS = _members(base.Adapter)
READER_DATA, READER_METHODS = _members(base.TranscriptReader)
REMOTE_DATA, REMOTE_METHODS = _members(base.RemoteAnswers)
INSTALL_DATA, INSTALL_METHODS = _members(install.HookInstall)
LAUNCH_DATA, LAUNCH_METHODS = _members(launch.Launcher)


def test_the_protocol_declares_the_traits_as_booleans():
    assert {n for n, t in ADAPTER_DATA.items() if t is bool} == {
        "desk_only", "questions_at_desk", "sequential_questions", "needs_context", "ack_required", "idle_wake",
        "quiet_idle"}
    assert set(ADAPTER_METHODS) == {"parse", "observe", "boundary", "render_context", "known_fields", "present_tool",
                                   "call_input"}
    assert {n for n, t in ADAPTER_DATA.items() if t is not bool} == {"hook_kinds", "remote_answers", "hook_installs", "launchers",
                                                                     "version"}


@pytest.mark.parametrize("name", sorted(registry.ADAPTERS))
def test_every_registered_adapter_satisfies_the_protocol(name):
    adapter = registry.ADAPTERS[name]
    assert isinstance(adapter, base.Adapter)
    for trait, kind in ADAPTER_DATA.items():
        # declared by the adapter itself, with its type: no trait is left to a default
        assert trait in vars(adapter), f"{name} does not declare {trait}"
        assert _isinstance(vars(adapter)[trait], kind), (name, trait)
    for method in ADAPTER_METHODS:
        _accepts(getattr(adapter, method), getattr(base.Adapter, method))
    # a tool call as a person reads it: a ToolView whatever the tool and input
    for tool, inp in (("Bash", {"command": "ls"}), ("no-such-tool", None), (None, {"x": [1]})):
        assert isinstance(adapter.present_tool(tool, inp), base.ToolView), (name, tool)
    # what it can do for a remote answer: said by a typed member, None exactly when desk-only
    remote = adapter.remote_answers
    assert (remote is None) == adapter.desk_only, name
    if remote is not None:
        assert isinstance(remote, base.RemoteAnswers)
        for member, kind in REMOTE_DATA.items():
            assert _isinstance(getattr(remote, member), kind), (name, member)
        for method in REMOTE_METHODS:
            _accepts(getattr(remote, method), getattr(base.RemoteAnswers, method))
    for harness, inst in adapter.hook_installs.items():
        assert isinstance(inst, install.HookInstall), (name, harness)
        assert registry.ADAPTERS[harness] is adapter, (name, harness)
        for member, kind in INSTALL_DATA.items():
            assert _isinstance(getattr(inst, member), kind), (name, harness, member)
        for method in INSTALL_METHODS:
            _accepts(getattr(inst, method), getattr(install.HookInstall, method))
    for harness, launcher in adapter.launchers.items():  # what `hookd run` starts: a harness it installs hooks for
        assert isinstance(launcher, launch.Launcher), (name, harness)
        assert harness in adapter.hook_installs, (name, harness)
        for member, kind in LAUNCH_DATA.items():
            assert _isinstance(getattr(launcher, member), kind), (name, harness, member)
        for method in LAUNCH_METHODS:
            _accepts(getattr(launcher, method), getattr(launch.Launcher, method))


@pytest.mark.parametrize("reader", registry.READERS, ids=lambda r: r.HARNESS)
def test_every_transcript_reader_satisfies_its_protocol(reader):
    assert isinstance(reader, base.TranscriptReader)
    for member, kind in READER_DATA.items():
        assert member in vars(reader), f"{reader.HARNESS} does not declare {member}"
        assert isinstance(vars(reader)[member], typing.get_origin(kind) or kind), (reader.HARNESS, member)
    for method in READER_METHODS:
        _accepts(getattr(reader, method), getattr(base.TranscriptReader, method))
    assert reader.HARNESS in registry.ADAPTERS


def test_the_registry_names_the_harnesses_and_their_readers():
    assert registry.ADAPTERS == {"claude-code": claude_code, "claw": claw, "claw-code-go": claw, "claw-http": claw_http,
                                 "codex": codex}
    assert registry.DEFAULT_HARNESS in registry.ADAPTERS
    assert registry.ADAPTERS[CLAW_HTTP] is claw_http and claw_http.ack_required
    fp = claw.fingerprint("/w/x")
    assert registry.reader_of(f"/w/x/.claw/sessions/{fp}/session-1.jsonl") is claw
    assert registry.reader_of("/home/u/.claude/projects/-w-x/0b7c2f4e-5c1d-4c39-9e0f-2f3b8f6f0a11.jsonl") is claude_code
    rollout = "/home/u/.codex/sessions/2026/12/03/rollout-2026-12-03T09-35-17-01a23b42-1903-7a70-959b-b3274430e91c.jsonl"
    assert registry.reader_of(rollout) is codex
    assert codex.transcript_session("b1", rollout) == "01a23b42-1903-7a70-959b-b3274430e91c"
    assert registry.reader_of("/somewhere/else.jsonl") is claude_code  # the last reader takes the rest


def test_the_traits_say_what_the_harnesses_do():
    cc, cl, ch, cx = claude_code, claw, claw_http, codex
    assert (cc.desk_only, cl.desk_only, ch.desk_only, cx.desk_only) == (False, True, True, False)
    # Codex's request_user_input goes to its TUI or app-server client, never to a hook
    assert (cc.questions_at_desk, cl.questions_at_desk, ch.questions_at_desk, cx.questions_at_desk) == (
        False, True, True, True)
    assert (cc.sequential_questions, cl.sequential_questions, ch.sequential_questions,
            cx.sequential_questions) == (False, True, True, False)
    assert (cc.needs_context, cl.needs_context, ch.needs_context, cx.needs_context) == (False, True, False, False)
    assert (cc.ack_required, cl.ack_required, ch.ack_required, cx.ack_required) == (False, False, True, False)
    assert (cc.idle_wake, cl.idle_wake, ch.idle_wake, cx.idle_wake) == (True, False, False, False)
    # claw has only tool hooks; claw-http's before_final drain and the others' Stop end a turn
    assert (cc.quiet_idle, cl.quiet_idle, ch.quiet_idle, cx.quiet_idle) == (False, True, False, False)
    assert (cc.version, cl.version, ch.version, cx.version) == ("2.1.332", None, None, "0.171.0")
    assert registry.KNOWN_VERSIONS == {"claude-code": "2.1.332", "codex": "0.171.0"}
    assert (cc.remote_answers, cl.remote_answers, ch.remote_answers, cx.remote_answers) == (
        claude_code_hooks, None, None, codex_hooks)
    assert codex_hooks.hold_events == {"permission": "PermissionRequest"}
    assert codex_hooks.child_process_tools == frozenset() and not codex_hooks.runs_tool("Bash", {"command": "ls"},
                                                                                          ["bash", "-c", "ls"])
    assert claude_code_hooks.hold_events == {"permission": "PermissionRequest", "plan": "PermissionRequest",
                                             "question": "PermissionRequest",
                                             "elicitation": "Elicitation"}


def test_each_adapter_says_what_its_hook_events_mean():
    """``hook_kinds``: each harness's own event names onto the kinds the core and the lanes act
    on (harness/base.py ``HookKind``); every name is one its ``parse`` knows."""
    kinds = set(typing.get_args(base.HookKind))
    assert claude_code.hook_kinds == {
        "SessionStart": "session_start", "SessionEnd": "session_end", "UserPromptSubmit": "prompt",
        "Stop": "turn_end", "SubagentStop": "subagent_end", "PreToolUse": "tool_before",
        "PermissionRequest": "permission", "PostToolUse": "tool_after", "PostToolUseFailure": "tool_after",
        "Notification": "notice", "ConfigChange": "notice"}
    assert claw.hook_kinds == {"PreToolUse": "tool_before", "PostToolUse": "tool_after",
                               "PostToolUseFailure": "tool_after"}
    assert claw_http.hook_kinds == {"SessionStart": "session_start", "SessionEnd": "session_end",
                                    "PreToolUse": "tool_before", "PostToolUse": "tool_after",
                                    "PostToolUseFailure": "tool_after"}
    assert codex.hook_kinds == {
        "SessionStart": "session_start", "SessionEnd": "session_end", "UserPromptSubmit": "prompt",
        "Stop": "turn_end", "Interrupt": "turn_end", "SubagentStop": "subagent_end", "PreToolUse": "tool_before",
        "PermissionRequest": "permission", "PostToolUse": "tool_after"}
    for name, adapter in registry.ADAPTERS.items():
        assert set(adapter.hook_kinds.values()) <= kinds, name
        assert all(adapter.known_fields(event) is not None for event in adapter.hook_kinds), name


def _event_name_literals(source: str, names: Any) -> list[tuple[int, str]]:
    """(line, text) of every string constant in ``source`` that ``names`` (a predicate) takes
    for a harness's hook event name; docstrings (a statement that is only a string) are text
    and are skipped."""
    tree = ast.parse(source)
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose and names(n.value)]


def _is_event_name(s: str) -> bool:
    """Is ``s`` one of a registered harness's hook event names (in its ``hook_kinds``, or an
    event its ``parse`` has a model of)?"""
    return any(s in a.hook_kinds or a.known_fields(s) is not None for a in registry.ADAPTERS.values())


def test_the_core_and_the_watchers_name_no_harness_event():
    """The core and the watchers act on what a hook means (``hook_kinds``, the stored
    ``hook_kind``, observations), never on a harness's name for it: a new harness whose events
    are spelled otherwise (Gemini CLI's BeforeTool, AfterAgent, ...) needs no change there. A
    recorded name passes through as data (``p.hook_event_name``), never as a literal."""
    hits = [f"{f.relative_to(ROOT)}:{line}: {text!r}"
            for pkg in ("core", "watchers") for f in sorted((ROOT / "hookd" / pkg).rglob("*.py"))
            for line, text in _event_name_literals(f.read_text(), _is_event_name)]
    assert hits == []
    # the scan sees a literal where one is, and not in a docstring
    sample = 'def f(p):\n    """A Stop hook."""\n    return p.hook_event_name == "Stop" or p.x in ("AfterAgent", "x")\n'
    assert _event_name_literals(sample, _is_event_name) == [(3, "Stop")]
    assert _event_name_literals(sample, lambda s: s in {"Stop", "AfterAgent"}) == [(3, "Stop"), (3, "AfterAgent")]


def test_spawn_installs_what_the_adapters_declare():
    """`hookd spawn`'s harnesses are the adapters' ``hook_installs``, in the registry's order:
    claw-http has none (its loops call hookd); claw's two differ in their file and form; Codex's
    alone has a trust step."""
    assert list(INSTALLS) == ["claude-code", "claw", "claw-code-go", "codex"]
    cc, rust, go, cx = INSTALLS["claude-code"], INSTALLS["claw"], INSTALLS["claw-code-go"], INSTALLS["codex"]
    assert (cc.settings_dir, rust.settings_dir, go.settings_dir, cx.settings_dir) == (".claude", ".claw", ".claude", ".codex")
    assert {x.settings_name for x in (cc, rust, go)} == {"settings.local.json"} and cx.settings_name == "hooks.json"
    assert (cc.trust, rust.trust, go.trust) == (None, None, None) and cx.trust is codex_hooks.TRUST
    assert (cx.standalone, cx.mcp, cx.wake, cx.hold, cx.transports, cx.warning) == (False, False, False, True, ("sh",), None)
    assert cx.events == codex.REGISTERED_EVENTS and "PreModelRequest" not in cx.events
    assert (cc.standalone, cc.mcp, cc.wake, cc.hold) == (True, True, True, True)
    assert not any(x.standalone or x.mcp or x.wake or x.hold for x in (rust, go))
    assert (cc.warning, rust.warning) == (None, None) and go.warning == claw.FLAT_WARNING
    # only Codex hides its prompt while hookd holds the hook (spawn says so)
    assert (cc.held_prompt, rust.held_prompt, go.held_prompt) == (None, None, None) and "Running hook" in cx.held_prompt
    assert (cc.transports, rust.transports, go.transports) == (("sh", "exec", "http"), ("sh",), ("sh",))
    assert cc.events == claude_code.REGISTERED_EVENTS and rust.events == go.events == claw.REGISTERED_EVENTS


def test_the_core_never_probes_an_adapter():
    """The core reads adapters through the protocol only: no ``getattr`` on one (a trait it
    does not declare would silently read as a default)."""
    probe = re.compile(r"getattr\((adapter|self\.adapter|rows|reader)\b")
    hits = [f"{f.name}:{n}" for f in sorted((ROOT / "hookd").rglob("*.py"))
            for n, line in enumerate(f.read_text().splitlines(), 1) if probe.search(line)]
    assert hits == []


def test_import_contracts_hold(tmp_path):
    """``lint-imports`` over the contracts in pyproject.toml, on a copy of the package laid out
    as it is installed (``hookd.harness`` is mapped from ``harness/``: grimp walks only the
    package's own folder)."""
    lint = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if lint is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    stage = stage_installed(tmp_path / "stage")
    env = {**os.environ, "PYTHONPATH": str(stage)}
    r = subprocess.run([lint, "--no-cache", str(ROOT / "pyproject.toml")], cwd=stage, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout, r.stdout
