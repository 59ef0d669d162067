"""`hookd spawn` / `hookd unspawn` on real files, and the generated command under ``sh -c``.

Merging into existing settings (other hooks and keys untouched; unspawn restores them),
idempotent re-spawn, refusal of non-strict JSON, the ``--settings-file`` form, odd paths
(quotes, ``$(...)``, backticks, non-ASCII) in both the worktree and HOOKD_HOME, matchers,
registered events, the interpreter path; and case B20's slug/path helpers.

`hookd spawn` and `hookd unspawn` run in this process (``hookd_run``: the same commands and
output without an interpreter's start); where the process is the point (killed at each file
operation, concurrent spawns) they are processes of their own.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hookd.client import Client
from hookd.config import Home
from hookd.daemonproc import DaemonProcess
from hookd.harness import claude_code as cc
from hookd.harness import claude_code_hooks as cch
from hookd.spawn import client_argv

from tests.forkserve import run_forked
from tests.conftest import TUI, hookd_run, run_hook, settings_command, wait_until

pytestmark = pytest.mark.daemon

TAG = "# hookd builder="
EXISTING: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
    "env": {"FOO": "bar"},
    "model": "sonnet",
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard.sh", "timeout": 5}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PostToolBatch": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:9/x"}]}],
    },
    "statusLine": {"type": "command", "command": "echo hi"},
}


def settings_path(worktree: Path) -> Path:
    return worktree / ".claude" / "settings.local.json"


def spawn_ok(home: Path, builder: str, *args: str) -> dict[str, Any]:
    r = hookd_run(home, "spawn", builder, *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


#: hookd's handlers per default spawn: one per registered event (idle wake is opt-in)
HANDLERS = len(cc.REGISTERED_EVENTS)


def hookd_handlers(settings: dict[str, Any], builder: str | None = None, wake: bool = False) -> dict[str, list[tuple[dict, dict]]]:
    """event -> [(group, handler)] for hookd's tagged handlers (of ``builder`` if given;
    the idle-wake Stop handler only with ``wake``)."""
    out: dict[str, list[tuple[dict, dict]]] = {}
    for event, groups in settings.get("hooks", {}).items():
        for g in groups:
            for h in g.get("hooks", []):
                cmd = h.get("command", "")
                if h.get("asyncRewake") and not wake:
                    continue
                if TAG in cmd and (builder is None or cmd.endswith(f"{TAG}{builder}")):
                    out.setdefault(event, []).append((g, h))
    return out


def argv_of(command: str) -> list[str]:
    """The argv the command execs (after its fail-open check)."""
    return client_argv(command)


def client_of(command: str) -> Path:
    """The hook client a command runs: the compiled one it execs, or bash's script."""
    argv = argv_of(command)
    return Path(argv[0] if argv[1] != "-p" else argv[2])


@pytest.fixture(params=["c", "bash"])
def client_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Spawn (in this test's hookd subprocesses) writes this hook client."""
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", request.param)
    return request.param


# --- merge, idempotency, reversal ---------------------------------------------------------


def test_merge_keeps_other_hooks_and_keys_and_unspawn_restores_them(home: Path, worktree: Path) -> None:
    target = settings_path(worktree)
    target.parent.mkdir()
    original = json.dumps(EXISTING, indent=4).encode()
    target.write_bytes(original)

    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    merged = json.loads(target.read_bytes())
    for key in ("env", "model", "statusLine"):
        assert merged[key] == EXISTING[key]
    # the MCP server's allow rule is appended to the user's; deny untouched
    assert merged["permissions"] == {"allow": ["Bash(npm test:*)", "mcp__hookd"], "deny": ["Read(./.env)"]}
    assert merged["enabledMcpjsonServers"] == ["hookd"]
    # the user's hooks are still there, first and unchanged, next to hookd's
    for event, groups in EXISTING["hooks"].items():
        assert merged["hooks"][event][: len(groups)] == groups
    mine = hookd_handlers(merged, "b-1", wake=True)
    assert set(mine) == set(cc.REGISTERED_EVENTS)
    # one handler per event (the idle-wake Stop handler is opt-in: tests/test_wake.py)
    assert {e: len(v) for e, v in mine.items()} == {e: 1 for e in cc.REGISTERED_EVENTS}
    assert merged["hooks"]["PostToolBatch"] == EXISTING["hooks"]["PostToolBatch"]  # not registered by hookd

    r = hookd_run(home, "unspawn", "b-1")
    assert r.returncode == 0, r.stderr
    restored = json.loads(target.read_bytes())
    assert restored == EXISTING
    assert list(restored) == list(EXISTING)  # key order kept too
    assert not (home / "builders" / "b-1.json").exists()


def test_relative_worktree_through_a_symlink_and_dotdot_is_stored_as_its_physical_path(home: Path, tmp_path: Path) -> None:
    """`--worktree ../x/../wt` given from a symlinked directory: the manifest and status name
    the directory Claude Code reports as its cwd (realpath), and the settings land there."""
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "wt").mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    r = subprocess.run([sys.executable, "-m", "hookd", "--home", os.fspath(home), "spawn", "b-rel", "--worktree", "../sub/../wt"],
                       cwd=tmp_path / "link" / "sub", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((home / "builders" / "b-rel.json").read_text())
    assert manifest["worktree"] == os.path.realpath(real / "wt")
    assert manifest["settings_file"] == os.fspath(Path(os.path.realpath(real / "wt")) / ".claude" / "settings.local.json")
    assert (real / "wt" / ".claude" / "settings.local.json").is_file()


def test_a_worktree_that_does_not_exist_is_refused_saying_to_create_it(home: Path, tmp_path: Path) -> None:
    """`hookd spawn B --worktree DIR` of a missing DIR: exit 2, one sentence that says to create
    it first; a path that is a file is refused too (by the option's type). Nothing is written
    either way."""
    missing = tmp_path / "proj-b1"
    r = hookd_run(home, "spawn", "b1", "--worktree", str(missing))
    assert r.returncode == 2 and "does not exist: create it first" in r.stderr, r
    assert not missing.exists()
    afile = tmp_path / "afile"
    afile.write_text("x")
    r = hookd_run(home, "spawn", "b1", "--worktree", str(afile))
    assert r.returncode == 2 and "is a file" in r.stderr, r
    assert afile.read_text() == "x"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_spawn_says_how_to_keep_its_files_out_of_git_commits(home: Path, tmp_path: Path) -> None:
    """In a git checkout where spawn's two files are not ignored, a note (stderr) gives the
    lines for the repository's exclude file; once they are there, no note; none outside git."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", os.fspath(repo)], check=True)
    r = hookd_run(home, "spawn", "b1", "--worktree", os.fspath(repo))
    assert r.returncode == 0, r
    exclude = os.path.realpath(repo / ".git" / "info" / "exclude")
    [note] = [ln for ln in r.stderr.splitlines() if "git would commit" in ln]
    assert note == ("hookd: note: git would commit .claude/settings.local.json and .mcp.json (hookd's, for this "
                    "machine): keep them out with printf '%s\\n' /.claude/settings.local.json /.mcp.json >> " + exclude)
    subprocess.run(note.split("keep them out with ", 1)[1], shell=True, check=True, cwd=tmp_path)  # as a user pastes it
    status = subprocess.run(["git", "-C", os.fspath(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""  # git sees nothing of hookd's now
    r = hookd_run(home, "spawn", "b1", "--worktree", os.fspath(repo))
    assert r.returncode == 0 and "git would commit" not in r.stderr, r
    plain = tmp_path / "plain"
    plain.mkdir()
    r = hookd_run(home, "spawn", "b2", "--worktree", os.fspath(plain))
    assert r.returncode == 0 and "git would commit" not in r.stderr, r


def files_of(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes)."""
    return {os.fspath(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


#: (harness, the second builder's path to the first one's file) -> the file both would share
SHARED = [("claude-code", "worktree"), ("claude-code", "symlink"), ("claude-code", "settings-file"),
          ("claude-code", "plugin-dir"), ("codex", "worktree"), ("codex", "symlink"), ("claw", "symlink"),
          ("claw-code-go", "worktree")]


@pytest.mark.parametrize("harness,how", SHARED)
def test_a_second_builder_is_refused_where_another_builders_hooks_are(harness: str, how: str, home: Path,
                                                                        worktree: Path, tmp_path: Path) -> None:
    """Whatever path names the file (the worktree, a symlink to it, the standalone or plugin
    forms through a symlink), b-2's hooks never land beside b-1's: exit 2, one sentence naming
    b-1 and what to do, nothing written (b-1's files and the home's manifests as they were).
    b-1 re-spawned is still idempotent; once b-1 is unspawned, b-2 spawns there."""
    link = tmp_path / "link"
    if how in ("worktree", "symlink"):
        first = ["--worktree", os.fspath(worktree), "--harness", harness]
        link.symlink_to(worktree)
        second = ["--worktree", os.fspath(worktree if how == "worktree" else link), "--harness", harness]
        root = worktree
    elif how == "settings-file":
        first = ["--settings-file", os.fspath(worktree / "s.json")]
        link.symlink_to(worktree / "s.json")
        second = ["--settings-file", os.fspath(link)]
        root = worktree
    else:
        first = ["--plugin-dir", os.fspath(worktree / "plugin")]
        link.symlink_to(worktree / "plugin")
        second = ["--plugin-dir", os.fspath(link)]
        root = worktree
    spawn_ok(home, "b-1", *first)
    before, manifests = files_of(root), files_of(home / "builders")
    r = hookd_run(home, "spawn", "b-2", *second)
    assert r.returncode == 2, r
    assert r.stdout == ""
    line, = r.stderr.splitlines()
    assert re.fullmatch(r"hookd: \S+ already holds the hooks of builder b-1: one agent's hooks would report to both; "
                        r"run `hookd unspawn b-1` first, or give b-2 another worktree", line), line
    assert files_of(root) == before and files_of(home / "builders") == manifests
    spawn_ok(home, "b-1", *first)
    assert files_of(root) == before
    assert hookd_run(home, "unspawn", "b-1").returncode == 0
    spawn_ok(home, "b-2", *first)  # (the standalone file b-1's spawn made is gone: its link dangles)


def test_a_builder_moving_onto_another_builders_file_keeps_its_own_hooks(home: Path, worktree: Path,
                                                                         tmp_path: Path) -> None:
    """b-2 spawned elsewhere, then re-spawned onto b-1's worktree: refused before b-2's old
    hooks are undone (nothing written anywhere)."""
    other = tmp_path / "other"
    other.mkdir()
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    spawn_ok(home, "b-2", "--worktree", os.fspath(other))
    before = (files_of(worktree), files_of(other), files_of(home / "builders"))
    r = hookd_run(home, "spawn", "b-2", "--worktree", os.fspath(worktree))
    assert r.returncode == 2 and "builder b-1" in r.stderr, r
    assert (files_of(worktree), files_of(other), files_of(home / "builders")) == before


@pytest.mark.parametrize("preexisting", [False, True])
def test_respawn_is_idempotent(preexisting: bool, home: Path, worktree: Path) -> None:
    target = settings_path(worktree)
    if preexisting:
        target.parent.mkdir()
        target.write_text(json.dumps(EXISTING))
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    first = target.read_bytes()
    client_first = (home / "bin" / "hook-client").read_bytes()
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    assert target.read_bytes() == first
    assert (home / "bin" / "hook-client").read_bytes() == client_first
    assert sum(len(v) for v in hookd_handlers(json.loads(first), wake=True).values()) == HANDLERS
    # and unspawn still knows whether it created the file
    assert hookd_run(home, "unspawn", "b-1").returncode == 0
    if preexisting:
        assert json.loads(target.read_bytes()) == EXISTING
    else:
        assert not target.exists()


NOT_STRICT = {
    "trailing-comma": b'{\n  "model": "sonnet",\n  "hooks": {},\n}\n',
    "line-comment": b'{\n  // my settings\n  "model": "sonnet"\n}\n',
    "block-comment": b'{ /* keep */ "model": "sonnet" }',
    "not-an-object": b'["model", "sonnet"]',
    "hooks-not-an-object": b'{"hooks": ["PreToolUse"]}',
}


@pytest.mark.parametrize("name", list(NOT_STRICT))
def test_non_strict_json_is_refused_and_left_byte_identical(name: str, home: Path, worktree: Path) -> None:
    target = settings_path(worktree)
    target.parent.mkdir()
    target.write_bytes(NOT_STRICT[name])
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == ""
    assert os.fspath(target) in r.stderr and "untouched" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert target.read_bytes() == NOT_STRICT[name]
    assert not (home / "builders" / "b-1.json").exists()
    assert sorted(p.name for p in target.parent.iterdir()) == ["settings.local.json"]  # no temp file left


def test_settings_file_form_and_unspawn_removes_the_file_it_created(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "gen" / "b-7.settings.json"
    m = spawn_ok(home, "b-7", "--settings-file", os.fspath(target))
    assert m["settings_file"] == os.fspath(target) and m["worktree"] is None
    data = json.loads(target.read_bytes())
    assert list(data) == ["hooks", "enabledMcpjsonServers", "permissions"]
    assert set(hookd_handlers(data, "b-7")) == set(cc.REGISTERED_EVENTS)
    mcp_config = home / "mcp" / "b-7.json"  # standalone, for claude --mcp-config
    assert m["mcp"]["file"] == os.fspath(mcp_config) and mcp_config.is_file()
    r = hookd_run(home, "unspawn", "b-7")
    assert r.returncode == 0, r.stderr
    assert not target.exists() and not mcp_config.exists()
    r = hookd_run(home, "unspawn", "b-7")
    assert r.returncode != 0 and "b-7" in r.stderr  # nothing left to undo


def test_settings_file_form_keeps_an_existing_file(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    target.write_text(json.dumps(EXISTING))
    spawn_ok(home, "b-7", "--settings-file", os.fspath(target))
    assert hookd_run(home, "unspawn", "b-7").returncode == 0
    assert json.loads(target.read_bytes()) == EXISTING


def test_unspawn_of_a_file_spawn_created_removes_it(home: Path, worktree: Path) -> None:
    target = settings_path(worktree)
    assert not target.parent.exists()
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    assert target.is_file()
    r = hookd_run(home, "unspawn", "b-1", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["removed"] == HANDLERS
    assert not target.exists()


# --- the generated command ----------------------------------------------------------------


def test_tool_events_match_every_tool_including_mcp(home: Path, worktree: Path) -> None:
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    mine = hookd_handlers(json.loads(settings_path(worktree).read_bytes()), "b-1")
    for event, [(group, handler)] in mine.items():
        if event in cch.TOOL_EVENTS:
            assert group["matcher"] == ".*"
            for tool in ("mcp__tracker__create_item", "AskUserQuestion", "Bash"):
                assert re.fullmatch(group["matcher"], tool), (event, tool)
        elif event in cch.NO_MATCHER_EVENTS:
            assert "matcher" not in group
        else:
            assert group.get("matcher", "") in ("", "*", ".*"), (event, group)
        assert handler["type"] == "command"
        assert handler["timeout"] * 1000 > 5000  # Claude Code's backstop is above the client's deadline


def test_every_registered_event_is_registered(home: Path, worktree: Path) -> None:
    m = spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    mine = hookd_handlers(json.loads(settings_path(worktree).read_bytes()), "b-1")
    assert set(mine) == set(cc.REGISTERED_EVENTS) == set(m["events"])
    assert {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "Stop"} <= set(mine)
    # one command for every event but PermissionRequest and Elicitation, which hold for a remote
    # answer: their client deadline is the hold window, Claude Code's timeout a minute above it
    assert {"Elicitation", "ElicitationResult"} <= set(mine)
    [(_, perm)] = mine.pop("PermissionRequest")
    [(_, elicit)] = mine.pop("Elicitation")
    assert elicit == perm
    assert len({h["command"] for v in mine.values() for _, h in v}) == 1
    assert client_argv(perm["command"])[-2:] == ["900000", "hold"] and perm["timeout"] == 960
    assert m["hold_s"] == 900


def test_hold_off_gives_permission_request_the_plain_command(home: Path, worktree: Path) -> None:
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree), "--hold", "0")
    mine = hookd_handlers(json.loads(settings_path(worktree).read_bytes()), "b-1")
    assert len({h["command"] for v in mine.values() for _, h in v}) == 1
    r = subprocess.run([sys.executable, "-m", "hookd", "--home", os.fspath(home), "spawn", "b-1",
                        "--worktree", os.fspath(worktree), "--hold", "3"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "hold must be 0 (off) or between 5 and 86400 seconds" in r.stderr


def test_command_uses_real_bash_and_absolute_client_path(home: Path, worktree: Path, tmp_path: Path) -> None:
    # a version-manager style shim first on PATH: a script named bash
    shims = tmp_path / "shims"
    shims.mkdir()
    marker = tmp_path / "shim-was-run"
    shim = shims / "bash"
    shim.write_text(f"#!/bin/sh\ntouch {shlex.quote(os.fspath(marker))}\nexec /bin/bash \"$@\"\n")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}", "HOOKD_HOOK_CLIENT": "bash"}
    r = subprocess.run([sys.executable, "-m", "hookd", "--home", os.fspath(home), "spawn", "b-1",
                        "--worktree", os.fspath(worktree)], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    command = settings_command(settings_path(worktree), "PreToolUse")
    argv = argv_of(command)
    bash, flag, client = argv[0], argv[1], argv[2]
    assert flag == "-p"  # privileged mode: BASH_ENV and exported functions are ignored
    assert os.path.isabs(bash) and bash == os.path.realpath(bash), bash
    assert bash != os.fspath(shim)
    with open(bash, "rb") as f:
        assert f.read(2) != b"#!", f"{bash} is a script (a shim?)"
    assert subprocess.run([bash, "--version"], capture_output=True, text=True).stdout.startswith("GNU bash")
    assert os.path.isabs(client) and Path(client) == Home.resolve(home).client_script
    assert os.access(client, os.X_OK)
    assert argv[3:] == ["claude-code", "b-1", "5000"]
    assert command.endswith("# hookd builder=b-1")
    assert "${" not in command and "CLAUDE_PROJECT_DIR" not in command  # no placeholder substitution
    # running it (even with the shim on PATH) never goes through the shim
    res = subprocess.run(["sh", "-c", command], input=b"", cwd=worktree, capture_output=True, env=env, timeout=30)
    assert (res.returncode, res.stdout) == (0, b"")
    assert not marker.exists()


def test_compiled_client_is_built_once_and_shared_by_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    assert real, "a C compiler (the CI installs gcc)"
    log = tmp_path / "cc.log"
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {shlex.quote(os.fspath(log))}\nexec {shlex.quote(real)} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", os.fspath(wrapper))
    monkeypatch.setenv("XDG_CACHE_HOME", os.fspath(tmp_path / "cache"))
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "auto")
    clients = []
    for name in ("h1", "h2"):
        wt = tmp_path / f"wt-{name}"
        wt.mkdir()
        spawn_ok(tmp_path / name, "b-1", "--worktree", os.fspath(wt))
        clients.append(client_of(settings_command(settings_path(wt), "PreToolUse")))
    assert clients == [Home.resolve(tmp_path / n).c_client for n in ("h1", "h2")]
    assert clients[0].read_bytes() == clients[1].read_bytes()
    assert len(log.read_text().splitlines()) == 1  # the second home reused the cached build
    assert "-static" in log.read_text()


def test_without_a_compiler_spawn_uses_the_bash_client_and_says_so(home: Path, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", os.fspath(tmp_path / "no-such-cc"))
    monkeypatch.setenv("XDG_CACHE_HOME", os.fspath(tmp_path / "cache"))
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "auto")
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode == 0, r.stderr
    assert "(hook client: bash script)" in r.stdout
    assert r.stderr.startswith("hookd: note: C compiler") and "using the bash client" in r.stderr
    assert client_of(settings_command(settings_path(worktree), "PreToolUse")) == Home.resolve(home).client_script
    assert json.loads(Home.resolve(home).manifest("b-1").read_text())["client"] == "bash"
    # asked for the compiled client: a clear error, nothing written
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "c")
    other = tmp_path / "wt2"
    other.mkdir()
    r = hookd_run(home, "spawn", "b-2", "--worktree", os.fspath(other))
    assert r.returncode != 0 and "HOOKD_HOOK_CLIENT=c: C compiler" in r.stderr and not settings_path(other).exists()
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "fast")
    r = hookd_run(home, "spawn", "b-2", "--worktree", os.fspath(other))
    assert r.returncode != 0 and "HOOKD_HOOK_CLIENT must be auto, c or bash" in r.stderr


def test_unwritable_build_cache_falls_back_to_the_bash_client(home: Path, worktree: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("XDG_CACHE_HOME", os.fspath(blocker))
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "auto")
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode == 0, r.stderr
    assert "hookd: note: cannot build the compiled hook client in" in r.stderr and "Traceback" not in r.stderr
    assert client_of(settings_command(settings_path(worktree), "PreToolUse")) == Home.resolve(home).client_script


def test_a_home_that_cannot_run_the_built_client_falls_back_to_bash(home: Path, worktree: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The build runs in the cache; the home may not run it (a noexec mount). The seam: a
    "compiler" whose output runs everywhere except as HOOKD_HOME/bin/hook-client-c."""
    cc = tmp_path / "cc-noexec-home"
    cc.write_text('#!/bin/sh\n'
                  'while [ "$1" != -o ]; do shift; done\n'
                  'printf \'#!/bin/sh\\ncase $0 in */bin/hook-client-c) exit 126;; esac\\nexit 0\\n\' > "$2"\n'
                  'chmod +x "$2"\n')
    cc.chmod(0o755)
    monkeypatch.setenv("CC", os.fspath(cc))
    monkeypatch.setenv("XDG_CACHE_HOME", os.fspath(tmp_path / "cache"))
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "auto")
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode == 0, r.stderr
    assert "the built client exited 126 with no arguments; using the bash client" in r.stderr
    h = Home.resolve(home)
    assert client_of(settings_command(settings_path(worktree), "PreToolUse")) == h.client_script
    assert not h.c_client.exists()
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "c")
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode != 0 and "HOOKD_HOOK_CLIENT=c:" in r.stderr and "exited 126" in r.stderr


def test_compiled_client_reaches_the_short_socket_of_a_long_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "c")
    home, worktree = tmp_path / ("x" * 120), tmp_path / "wt"
    worktree.mkdir()
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    h = Home.resolve(home)
    assert h.socket_path.parent != h.run_dir  # run/hookd.sock would be too long to bind
    command = settings_command(settings_path(worktree), "PreToolUse")
    with DaemonProcess(home):
        r = run_hook(command, (TUI / "007-PreToolUse.json").read_bytes(), worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        c = Client(h)
        try:
            assert [e["data"]["source"] for e in c.lines("/v1/events") if e["kind"] == "hook_received"] == ["live"]
        finally:
            c.close()
    assert not list((home / "spool" / "b-1").glob("*.json"))


ODD = "wt 'q' \"dq\" $(touch PWNED) `touch PWNED2` ü"


def test_compiled_command_execs_the_home_client(home: Path, worktree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "c")
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    command = settings_command(settings_path(worktree), "PreToolUse")
    h = Home.resolve(home)
    assert command == f"[ -x {h.c_client} ] || exit 0; exec {h.c_client} claude-code b-1 5000 # hookd builder=b-1"
    assert oct(h.c_client.stat().st_mode & 0o777) == "0o700"
    assert h.socket_path_file.read_bytes() == os.fsencode(h.socket_path)
    assert json.loads(h.manifest("b-1").read_text())["client"] == "c"
    res = subprocess.run(["sh", "-c", command], input=b"", cwd=worktree, capture_output=True, timeout=30)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")


def test_odd_worktree_and_home_paths_are_quoted(tmp_path: Path, client_kind: str) -> None:
    root = tmp_path / ODD
    home, worktree = root / f"home {ODD}", root / f"worktree {ODD}"
    worktree.mkdir(parents=True)
    spawn_ok(home, "b-odd", "--worktree", os.fspath(worktree))
    settings = settings_path(worktree)
    assert settings.is_file()
    command = settings_command(settings, "PreToolUse")
    h = Home.resolve(home)
    assert client_of(command) == (h.c_client if client_kind == "c" else h.client_script)

    payloads = [(TUI / "004-PreToolUse.json").read_bytes(), (TUI / "005-PostToolUse.json").read_bytes()]
    # daemon down: the client spools into the odd home
    r = run_hook(command, payloads[0], worktree)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert len(list((home / "spool" / "b-odd").glob("*.json"))) == 1
    d = DaemonProcess(home)
    try:
        d.start()
        r = run_hook(settings_command(settings, "PostToolUse"), payloads[1], worktree)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        c = Client(Home.resolve(home))
        try:
            def received() -> list[dict[str, Any]]:
                return [e for e in c.lines("/v1/events") if e["kind"] == "hook_received"]

            got = wait_until(lambda: len(received()) >= 2 and received(), 60, what="both hooks recorded")
        finally:
            c.close()
        assert [(e["builder"], e["data"]["hook_event_name"], e["data"]["source"]) for e in got] == [
            ("b-odd", "PreToolUse", "spool"), ("b-odd", "PostToolUse", "live")]
    finally:
        d.stop()
        d.kill()
    for p in (Path.cwd(), worktree, tmp_path, root, home):
        assert not (p / "PWNED").exists() and not (p / "PWNED2").exists()
    assert hookd_run(home, "unspawn", "b-odd").returncode == 0
    assert not settings.exists()


# --- B20: project slug and path normalisation ---------------------------------------------


@pytest.mark.parametrize("cwd, slug", [
    ("/home/dev/proj", "-home-dev-proj"),
    ("D:\\Work\\my_app v2.1", "D--Work-my-app-v2-1"),
    ("D:\\Development\\Feature3", "D--Development-Feature3"),
    ("/home/dev/my_app v2.1/.claude/worktrees/feat-x", "-home-dev-my-app-v2-1--claude-worktrees-feat-x"),
    ("\\\\server\\share\\proj", "--server-share-proj"),
    ("/home/dev/ü", "-home-dev--"),
])
def test_project_slug(cwd: str, slug: str) -> None:
    assert cc.project_slug(cwd) == slug
    assert re.fullmatch(r"[A-Za-z0-9-]+", cc.project_slug(cwd))


def test_project_slug_matches_the_transcript_path_of_the_b20_trigger() -> None:
    payload = {"cwd": "D:\\Work\\my_app v2.1",
               "transcript_path": "C:\\Users\\dev\\.claude\\projects\\D--Work-my-app-v2-1\\s-0008.jsonl"}
    folder = cc.normalize_path(payload["transcript_path"]).split("/")[-2]
    assert folder == cc.project_slug(payload["cwd"]).lower()


@pytest.mark.parametrize("given, normal", [
    ("/home/Dev/Proj", "/home/Dev/Proj"),                  # POSIX: case-sensitive, unchanged
    ("D:\\Work\\my_app v2.1", "d:/work/my_app v2.1"),       # drive letter
    ("d:/Work/My_App v2.1", "d:/work/my_app v2.1"),
    ("\\\\?\\D:\\Work\\my_app v2.1", "d:/work/my_app v2.1"),  # long-path prefix stripped
    ("//?/D:/Work/my_app v2.1", "d:/work/my_app v2.1"),
    ("\\\\Server\\Share\\Proj", "//server/share/proj"),    # UNC
    ("C:\\Users\\dev\\.claude\\hooks\\hook.py", "c:/users/dev/.claude/hooks/hook.py"),
])
def test_normalize_path(given: str, normal: str) -> None:
    assert cc.normalize_path(given) == normal


def test_normalize_path_makes_windows_spellings_equal() -> None:
    spellings = ["D:\\Work\\my_app v2.1", "d:/work/MY_APP v2.1", "\\\\?\\D:\\Work\\my_app v2.1", "D:/Work\\my_app v2.1"]
    assert len({cc.normalize_path(s) for s in spellings}) == 1
    assert cc.normalize_path("/home/dev/A") != cc.normalize_path("/home/dev/a")


def test_unspawn_restores_the_original_file_byte_for_byte(home: Path, worktree: Path) -> None:
    settings = worktree / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    original = '{"permissions": {"allow": ["Bash(ls)"]},\n "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}}\n'
    settings.write_text(original)
    assert hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree)).returncode == 0
    assert settings.read_text() != original
    assert hookd_run(home, "unspawn", "b-1").returncode == 0
    assert settings.read_text() == original


def test_unspawn_removes_the_claude_dir_it_created(home: Path, worktree: Path) -> None:
    assert hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree)).returncode == 0
    assert (worktree / ".claude").is_dir()
    assert hookd_run(home, "unspawn", "b-1").returncode == 0
    assert not (worktree / ".claude").exists()


def test_command_fails_open_when_the_client_is_gone(home: Path, worktree: Path, client_kind: str) -> None:
    assert hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree)).returncode == 0
    command = settings_command(settings_path(worktree), "PreToolUse")
    client_of(command).unlink()  # the home was moved or deleted
    r = run_hook(command, (TUI / "004-PreToolUse.json").read_bytes(), worktree)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")


# --- the MCP server entry (.mcp.json) and its two settings keys --------------------------

MCP_EXISTING = '{"mcpServers": {"docs": {"command": "npx", "args": ["docs-mcp"]}},\n  "x-note": "mine"}\n'


def mcp_json(worktree: Path) -> Path:
    return worktree / ".mcp.json"


def test_mcp_entry_merged_and_unspawn_restores_both_files_byte_for_byte(home: Path, worktree: Path) -> None:
    settings = settings_path(worktree)
    settings.parent.mkdir()
    settings_text = '{"enabledMcpjsonServers": ["docs"],\n "permissions": {"allow": ["Bash(ls)"]}}\n'
    settings.write_text(settings_text)
    mcp_json(worktree).write_text(MCP_EXISTING)

    m = spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    data = json.loads(mcp_json(worktree).read_bytes())
    assert data["mcpServers"]["docs"] == {"command": "npx", "args": ["docs-mcp"]} and data["x-note"] == "mine"
    entry = data["mcpServers"]["hookd"]
    assert entry["type"] == "stdio" and os.path.isabs(entry["command"])
    assert entry["args"] == ["-P", "-m", "hookd", "--home", os.fspath(home.absolute()), "mcp", "--builder", "b-1"]
    assert m["mcp"]["file"] == os.fspath(mcp_json(worktree)) and m["mcp"]["entry"] == entry
    s = json.loads(settings.read_bytes())
    assert s["enabledMcpjsonServers"] == ["docs", "hookd"]
    assert s["permissions"] == {"allow": ["Bash(ls)", "mcp__hookd"]}

    r = hookd_run(home, "unspawn", "b-1")
    assert r.returncode == 0, r.stderr
    assert "MCP server" in r.stdout
    assert mcp_json(worktree).read_text() == MCP_EXISTING
    assert settings.read_text() == settings_text


def test_mcp_json_created_by_spawn_is_removed_and_respawn_is_idempotent(home: Path, worktree: Path) -> None:
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    first_mcp, first_settings = mcp_json(worktree).read_bytes(), settings_path(worktree).read_bytes()
    assert list(json.loads(first_mcp)["mcpServers"]) == ["hookd"]
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    assert mcp_json(worktree).read_bytes() == first_mcp
    assert settings_path(worktree).read_bytes() == first_settings
    assert hookd_run(home, "unspawn", "b-1").returncode == 0
    assert sorted(p.name for p in worktree.iterdir()) == []  # .mcp.json and .claude/ gone


def test_mcp_keys_already_there_are_neither_doubled_nor_removed(home: Path, worktree: Path) -> None:
    settings = settings_path(worktree)
    settings.parent.mkdir()
    mine = {"enabledMcpjsonServers": ["hookd"], "permissions": {"allow": ["mcp__hookd"]}}
    settings.write_text(json.dumps(mine))
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    s = json.loads(settings.read_bytes())
    assert s["enabledMcpjsonServers"] == ["hookd"] and s["permissions"]["allow"] == ["mcp__hookd"]
    assert hookd_run(home, "unspawn", "b-1").returncode == 0
    assert json.loads(settings.read_bytes()) == mine


def test_keys_added_later_by_the_user_survive_unspawn(home: Path, worktree: Path) -> None:
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    s = json.loads(settings_path(worktree).read_bytes())
    s["permissions"]["allow"].append("Bash(make)")
    s["enabledMcpjsonServers"].insert(0, "docs")
    settings_path(worktree).write_text(json.dumps(s))
    data = json.loads(mcp_json(worktree).read_bytes())
    data["mcpServers"]["docs"] = {"command": "docs-mcp"}
    mcp_json(worktree).write_text(json.dumps(data))
    assert hookd_run(home, "unspawn", "b-1").returncode == 0
    assert json.loads(settings_path(worktree).read_bytes()) == {
        "enabledMcpjsonServers": ["docs"], "permissions": {"allow": ["Bash(make)"]}}
    assert json.loads(mcp_json(worktree).read_bytes()) == {"mcpServers": {"docs": {"command": "docs-mcp"}}}


@pytest.mark.parametrize("name", ["trailing-comma", "line-comment", "not-an-object"])
def test_non_strict_mcp_json_is_refused_and_nothing_is_written(name: str, home: Path, worktree: Path) -> None:
    mcp_json(worktree).write_bytes(NOT_STRICT[name])
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert os.fspath(mcp_json(worktree)) in r.stderr and "untouched" in r.stderr and "Traceback" not in r.stderr
    assert mcp_json(worktree).read_bytes() == NOT_STRICT[name]
    assert sorted(p.name for p in worktree.iterdir()) == [".mcp.json"]  # no settings, no temp file
    assert not (home / "builders" / "b-1.json").exists()
    # --no-mcp leaves the file alone and spawns the hooks
    m = spawn_ok(home, "b-1", "--worktree", os.fspath(worktree), "--no-mcp")
    assert m["mcp"] is None and mcp_json(worktree).read_bytes() == NOT_STRICT[name]


@pytest.mark.parametrize("bad", [{"permissions": ["x"]}, {"permissions": {"allow": "x"}},
                                 {"enabledMcpjsonServers": "hookd"}, {"mcpServers": []}])
def test_wrongly_typed_keys_are_refused(bad: dict, home: Path, worktree: Path) -> None:
    target = mcp_json(worktree) if "mcpServers" in bad else settings_path(worktree)
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(bad))
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode == 2 and "untouched" in r.stderr, r.stderr
    assert json.loads(target.read_bytes()) == bad
    assert not (home / "builders" / "b-1.json").exists()


def test_a_hookd_server_hookd_did_not_write_is_refused(home: Path, worktree: Path) -> None:
    mine = {"mcpServers": {"hookd": {"command": "/opt/other-hookd"}}}
    mcp_json(worktree).write_text(json.dumps(mine))
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode == 2 and "--no-mcp" in r.stderr, r.stderr
    assert json.loads(mcp_json(worktree).read_bytes()) == mine and not settings_path(worktree).exists()


def test_an_mcp_json_serving_another_builder_gets_no_second_entry(home: Path, worktree: Path) -> None:
    """b-1's hooks taken out of the settings by hand while its MCP server stays: b-2 may spawn
    there, and gets no MCP entry of its own (b-1's is left as it was)."""
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    after_one = mcp_json(worktree).read_bytes()
    settings_path(worktree).write_text("{}")
    r = hookd_run(home, "spawn", "b-2", "--worktree", os.fspath(worktree))
    assert r.returncode == 0, r.stderr
    assert "builder 'b-1'" in r.stderr and "no MCP server" in r.stderr
    assert mcp_json(worktree).read_bytes() == after_one
    assert hookd_run(home, "unspawn", "b-2").returncode == 0
    assert mcp_json(worktree).read_bytes() == after_one


def test_respawn_with_no_mcp_removes_what_mcp_added(home: Path, worktree: Path) -> None:
    settings = settings_path(worktree)
    settings.parent.mkdir()
    settings.write_text(json.dumps(EXISTING, indent=4))
    mcp_json(worktree).write_text(MCP_EXISTING)
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    m = spawn_ok(home, "b-1", "--worktree", os.fspath(worktree), "--no-mcp")
    assert m["mcp"] is None
    assert mcp_json(worktree).read_text() == MCP_EXISTING
    s = json.loads(settings.read_bytes())
    assert "enabledMcpjsonServers" not in s and s["permissions"] == EXISTING["permissions"]
    assert set(hookd_handlers(s, "b-1")) == set(cc.REGISTERED_EVENTS)
    assert hookd_run(home, "unspawn", "b-1").returncode == 0
    assert settings.read_text() == json.dumps(EXISTING, indent=4)


def test_settings_file_form_writes_a_standalone_mcp_config(home: Path, tmp_path: Path, worktree: Path) -> None:
    target = tmp_path / "settings.json"
    original = json.dumps(EXISTING, indent=1)
    target.write_text(original)
    r = hookd_run(home, "spawn", "b-7", "--settings-file", os.fspath(target))
    assert r.returncode == 0, r.stderr
    config = home.absolute() / "mcp" / "b-7.json"
    assert f"--mcp-config {config}" in r.stdout
    data = json.loads(config.read_bytes())
    assert list(data["mcpServers"]) == ["hookd"] and data["mcpServers"]["hookd"]["args"][-1] == "b-7"
    m = json.loads(hookd_run(home, "spawn", "b-7", "--settings-file", os.fspath(target), "--json").stdout)
    assert m["mcp"]["claude_args"] == ["--mcp-config", os.fspath(config)]
    s = json.loads(target.read_bytes())
    assert s["enabledMcpjsonServers"] == ["hookd"] and s["permissions"]["allow"][-1] == "mcp__hookd"
    assert not mcp_json(worktree).exists()
    assert hookd_run(home, "unspawn", "b-7").returncode == 0
    assert target.read_text() == original and not config.exists()
    # a builder named like a manifest of another is no clash: configs live outside builders/
    spawn_ok(home, "b-7", "--settings-file", os.fspath(target))
    spawn_ok(home, "b-7.mcp", "--settings-file", os.fspath(tmp_path / "other.json"))
    assert hookd_run(home, "unspawn", "b-7").returncode == 0
    assert hookd_run(home, "unspawn", "b-7.mcp").returncode == 0


def test_mcp_command_is_this_interpreter_not_a_shim(home: Path, worktree: Path) -> None:
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    entry = json.loads(mcp_json(worktree).read_bytes())["mcpServers"]["hookd"]
    assert entry["command"] == os.path.abspath(sys.executable)
    with open(entry["command"], "rb") as f:
        assert f.read(2) != b"#!"
    # it runs the installed hookd even from a worktree holding a hookd/ folder (-P)
    (worktree / "hookd").mkdir()
    (worktree / "hookd" / "__main__.py").write_text("raise SystemExit('decoy imported')\n")
    r = subprocess.run([entry["command"], *entry["args"][:-3], "mcp", "--help"], cwd=worktree,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--builder" in r.stdout, r.stderr


# --- the same files from several processes at once, symlinks, shapes --------------------


def hookd_together(home: Path, *argvs: list[str], timeout: float = 120) -> list[subprocess.CompletedProcess[str]]:
    """Start one `hookd` CLI process per argv at once (none waits for another) and collect them."""
    procs = [subprocess.Popen([sys.executable, "-m", "hookd", "--home", os.fspath(home), *argv],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for argv in argvs]
    out = []
    for argv, p in zip(argvs, procs):
        stdout, stderr = p.communicate(timeout=timeout)
        out.append(subprocess.CompletedProcess(argv, p.returncode, stdout, stderr))
    return out


def handler_counts(settings: dict[str, Any]) -> dict[str, dict[str, int]]:
    """builder -> event -> how many of hookd's handlers tagged for it."""
    out: dict[str, dict[str, int]] = {}
    for event, groups in settings.get("hooks", {}).items():
        for g in groups:
            for h in g.get("hooks", []):
                cmd = h.get("command", "")
                if TAG in cmd:
                    b = cmd.rsplit(TAG, 1)[1]
                    out.setdefault(b, {}).setdefault(event, 0)
                    out[b][event] += 1
    return out


def user_part(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without hookd's handlers (and the hooks/events they alone filled) and
    without hookd's MCP keys: what the user had."""
    s = json.loads(json.dumps(settings))
    for event in list(s.get("hooks", {})):
        groups = [{**g, "hooks": [h for h in g["hooks"] if TAG not in h.get("command", "")]} for g in s["hooks"][event]]
        s["hooks"][event] = [g for g in groups if g["hooks"]]
        if not s["hooks"][event]:
            del s["hooks"][event]
    if s.get("enabledMcpjsonServers") == ["hookd"]:
        del s["enabledMcpjsonServers"]
    allow = s.get("permissions", {}).get("allow")
    if allow and allow[-1] == "mcp__hookd":
        allow.pop()
    return s


@pytest.mark.parametrize("trial", range(3))
def test_concurrent_spawns_into_one_worktree_leave_exactly_one_builder(trial: int, home: Path, worktree: Path) -> None:
    """Six `hookd spawn`s of different builders into one worktree at once: exactly one gets
    it (its handlers, its MCP server, the user's settings kept), the other five are refused
    naming it and wrote nothing (no manifest); the winner's unspawn restores the user's file.
    No lock file or temp file is left in the worktree."""
    target = settings_path(worktree)
    target.parent.mkdir()
    target.write_text(json.dumps(EXISTING, indent=2))
    builders = [f"b{i}" for i in range(6)]
    results = hookd_together(home, *(["spawn", b, "--worktree", os.fspath(worktree)] for b in builders))
    winners = [b for b, r in zip(builders, results) if r.returncode == 0]
    assert len(winners) == 1, [r.stderr for r in results]
    owner, = winners
    for b, r in zip(builders, results):
        if b != owner:
            assert r.returncode == 2 and f"hooks of builder {owner}:" in r.stderr, r

    settings = json.loads(target.read_bytes())
    assert handler_counts(settings) == {owner: {e: 1 for e in cc.REGISTERED_EVENTS}}
    assert user_part(settings) == EXISTING
    assert json.loads(mcp_json(worktree).read_bytes())["mcpServers"]["hookd"]["args"][-1] == owner
    assert sorted(p.name for p in (home / "builders").iterdir()) == [f"{owner}.json"]
    assert sorted(p.name for p in worktree.iterdir()) == [".claude", ".mcp.json"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["settings.local.json"]

    assert hookd_run(home, "unspawn", owner).returncode == 0
    assert json.loads(target.read_bytes()) == EXISTING
    assert sorted(p.name for p in worktree.iterdir()) == [".claude"]  # .mcp.json: spawn created it


@pytest.mark.parametrize("linked", ["settings", "mcp"])
def test_a_symlinked_file_is_written_through_and_stays_a_link(linked: str, home: Path, worktree: Path, tmp_path: Path) -> None:
    """Settings kept in a dotfiles repo: spawn and unspawn write the file the link points to
    (atomically, in its own directory) and leave the link a link, pointing where it did."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    settings_path(worktree).parent.mkdir()
    if linked == "settings":
        real, link, original = dotfiles / "claude-settings.json", settings_path(worktree), json.dumps(EXISTING, indent=4)
        relative = "../../dotfiles/claude-settings.json"
    else:
        real, link, original = dotfiles / "mcp.json", mcp_json(worktree), MCP_EXISTING
        relative = "../dotfiles/mcp.json"
    real.write_text(original)
    link.symlink_to(relative)

    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    assert link.is_symlink() and os.readlink(link) == relative
    data = json.loads(real.read_bytes())
    if linked == "settings":
        assert set(hookd_handlers(data, "b-1")) == set(cc.REGISTERED_EVENTS) and user_part(data) == EXISTING
    else:
        assert data["mcpServers"]["hookd"]["args"][-1] == "b-1" and data["mcpServers"]["docs"]["args"] == ["docs-mcp"]
    assert sorted(p.name for p in dotfiles.iterdir()) == sorted([real.name])  # no temp file left
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))  # re-spawn: the same
    assert link.is_symlink() and os.readlink(link) == relative

    r = hookd_run(home, "unspawn", "b-1")
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == relative
    assert real.read_text() == original  # byte for byte
    expect = [".claude", ".mcp.json"] if linked == "mcp" else [".claude"]
    assert sorted(p.name for p in worktree.iterdir()) == expect


@pytest.mark.parametrize("linked", ["settings", "mcp"])
def test_a_dangling_symlink_is_refused_by_spawn_and_unspawn(linked: str, home: Path, worktree: Path, tmp_path: Path) -> None:
    """A link to nothing (the dotfiles repo not checked out): refused in one sentence, exit 2,
    nothing created anywhere, the link as it was. Made dangling after a spawn, unspawn
    refuses the same way and keeps the manifest; once the file is back, unspawn works."""
    settings_path(worktree).parent.mkdir()
    link = settings_path(worktree) if linked == "settings" else mcp_json(worktree)
    missing = tmp_path / "dotfiles" / "gone.json"
    link.symlink_to(missing)
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert os.fspath(link) in r.stderr and "symlink" in r.stderr and "untouched" in r.stderr
    assert "it may hold just {})" in r.stderr  # (not an f-string's doubled braces)
    assert link.is_symlink() and os.readlink(link) == os.fspath(missing)
    assert not missing.parent.exists() and not (home / "builders" / "b-1.json").exists()
    assert sorted(p.name for p in worktree.iterdir()) == [".claude"] + ([".mcp.json"] if linked == "mcp" else [])
    assert [p.name for p in settings_path(worktree).parent.iterdir()] == (["settings.local.json"] if linked == "settings" else [])

    # a link that works at spawn and dangles at unspawn
    missing.parent.mkdir()
    missing.write_text("{}")
    spawn_ok(home, "b-1", "--worktree", os.fspath(worktree))
    spawned = missing.read_bytes()
    other = mcp_json(worktree) if linked == "settings" else settings_path(worktree)
    other_before = other.read_bytes()
    missing.rename(missing.with_name("away.json"))
    r = hookd_run(home, "unspawn", "b-1")
    assert r.returncode == 2 and "symlink" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert other.read_bytes() == other_before and (home / "builders" / "b-1.json").exists()
    missing.with_name("away.json").rename(missing)
    assert missing.read_bytes() == spawned
    r = hookd_run(home, "unspawn", "b-1")
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and json.loads(missing.read_bytes()) == {}


BAD_SHAPES = {
    "hooks-a-list": ({"hooks": ["PreToolUse"]}, "'hooks'", "a list"),
    "hooks-null": ({"hooks": None}, "'hooks'", "null"),
    "event-an-object": ({"hooks": {"PreToolUse": {}}}, "'hooks.PreToolUse'", "an object"),
    "event-a-string": ({"hooks": {"Stop": "notify-send done"}}, "'hooks.Stop'", "a string"),
    "event-null-unregistered": ({"hooks": {"PostToolBatch": None}}, "'hooks.PostToolBatch'", "null"),
    "group-a-number": ({"hooks": {"PreToolUse": [3]}}, "'hooks.PreToolUse[0]'", "a number"),
    "group-a-list": ({"hooks": {"Stop": [{"hooks": []}, []]}}, "'hooks.Stop[1]'", "a list"),
    "group-hooks-an-object": ({"hooks": {"Stop": [{"hooks": {"type": "command", "command": "x"}}]}},
                              "'hooks.Stop[0].hooks'", "an object"),
    "group-hooks-null": ({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": None}]}},
                         "'hooks.PreToolUse[0].hooks'", "null"),
    "entry-a-string": ({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}, "notify-send"]}]}},
                       "'hooks.Stop[0].hooks[1]'", "a string"),
    "entry-true": ({"hooks": {"Notification": [{"hooks": [True]}]}}, "'hooks.Notification[0].hooks[0]'", "true/false"),
}


@pytest.mark.parametrize("name", list(BAD_SHAPES))
def test_hooks_of_the_wrong_shape_are_refused_naming_the_key(name: str, home: Path, worktree: Path) -> None:
    """Every shape spawn walks, wrong: refused in one sentence naming the key, exit 2, the
    file byte for byte as it was, nothing else written (no .mcp.json, no manifest)."""
    settings, key, got = BAD_SHAPES[name]
    target = settings_path(worktree)
    target.parent.mkdir()
    text = json.dumps({"model": "sonnet", **settings}, indent=2).encode()
    target.write_bytes(text)
    r = hookd_run(home, "spawn", "b-1", "--worktree", os.fspath(worktree))
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert os.fspath(target) in r.stderr and key in r.stderr and f"not {got}" in r.stderr and "untouched" in r.stderr
    assert target.read_bytes() == text
    assert sorted(p.name for p in worktree.iterdir()) == [".claude"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["settings.local.json"]
    assert not (home / "builders" / "b-1.json").exists()


def test_flat_string_groups_are_not_a_wrong_shape(home: Path, worktree: Path) -> None:
    """claw-code-go's flat form (a string where a matcher group would be) is a shape spawn
    knows: a claw-code-go builder spawns next to the user's own flat hooks."""
    settings_path(worktree).parent.mkdir()
    settings_path(worktree).write_text(json.dumps({"hooks": {"PreToolUse": ["/usr/local/bin/guard.sh"]}}))
    spawn_ok(home, "b-2", "--worktree", os.fspath(worktree), "--harness", "claw-code-go")
    data = json.loads(settings_path(worktree).read_bytes())
    assert data["hooks"]["PreToolUse"][0] == "/usr/local/bin/guard.sh"
    assert all(c.endswith("=b-2") for cmds in data["hooks"].values() for c in cmds if c != "/usr/local/bin/guard.sh")


def test_settings_file_with_a_worktree_writes_nothing_into_the_worktree(home: Path, tmp_path: Path, worktree: Path) -> None:
    """`--settings-file F --worktree W`: as docs/usage.md says for --settings-file, the MCP server
    goes to the standalone HOOKD_HOME/mcp/B.json (for `claude --mcp-config`), not W/.mcp.json;
    W is only recorded (the lane's directory, by its physical path)."""
    target = tmp_path / "b-7.settings.json"
    (tmp_path / "wt-link").symlink_to(worktree, target_is_directory=True)
    r = hookd_run(home, "spawn", "b-7", "--settings-file", os.fspath(target), "--worktree", os.fspath(tmp_path / "wt-link"), "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    config = home.absolute() / "mcp" / "b-7.json"
    assert m["mcp"]["file"] == os.fspath(config) and m["mcp"]["standalone"] is True
    assert m["mcp"]["claude_args"] == ["--mcp-config", os.fspath(config)]
    assert json.loads(config.read_bytes())["mcpServers"]["hookd"]["args"][-1] == "b-7"
    assert m["worktree"] == os.path.realpath(worktree) and m["settings_file"] == os.fspath(target)
    assert set(hookd_handlers(json.loads(target.read_bytes()), "b-7")) == set(cc.REGISTERED_EVENTS)
    assert list(worktree.iterdir()) == []
    assert hookd_run(home, "unspawn", "b-7").returncode == 0
    assert not target.exists() and not config.exists() and list(worktree.iterdir()) == []


# --- crash consistency (issue 18 item 8): kill -9 at every file operation of a spawn ----------

def _kill_at_file_operation(at: int, roots: tuple[str, ...]) -> list[int]:
    """From now on (in this process: a forked child's), SIGKILL this process right before its
    ``at``-th file operation (open for writing, mkdir, rename/replace, chmod, unlink, rmdir,
    link, symlink: Python's audit events) on a path under one of ``roots``; ``at=0`` only
    counts them. Returns the count so far (a one-item list). The hook lives in this test:
    hookd has no kill switch."""
    n = [0]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in _FILE_OPS or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        if (event == "open" and len(args) > 2 and isinstance(args[2], int)
                and not args[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and args[1] in (None, "r", "rb")):
            return  # reads change nothing
        if not os.path.abspath(os.fsdecode(args[0])).startswith(roots):
            return
        n[0] += 1
        if n[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)
    return n


_FILE_OPS = {"open", "os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.chmod", "os.link", "os.symlink"}


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and folder (None) under ``root``, hidden ones included."""
    out: dict[str, bytes | None] = {}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(d, name), root) + "/"] = None
        for name in files:
            p = os.path.join(d, name)
            out[os.path.relpath(p, root)] = Path(p).read_bytes()
    return out


def _killed_spawn(home: Path, kill_at: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``hookd --home HOME spawn b1 ARGS`` in a process forked from this one (hookd is imported
    here already: a new interpreter per run was most of the test's time), killed with SIGKILL
    right before its ``kill_at``-th file operation under the home or a path in ``args``;
    ``kill_at=0`` prints ``file operations: N`` on stderr at its end."""
    roots = tuple(os.fspath(p) for p in (home, *[Path(a) for a in args if a.startswith("/")]))

    def run() -> int:
        from hookd.cli import main

        n = _kill_at_file_operation(kill_at, roots)
        try:
            main(["--home", os.fspath(home), "spawn", "b1", *args], prog_name="hookd")
            return 0
        finally:
            if kill_at == 0:
                print(f"file operations: {n[0]}", file=sys.stderr)

    return run_forked(run)


@pytest.mark.parametrize("scenario", ["fresh", "user-files", "respawn-no-mcp"])
def test_kill_9_at_every_file_operation_of_spawn_then_unspawn_or_respawn_restores_the_worktree(
        scenario: str, home: Path, tmp_path: Path) -> None:
    from hookd.config import Home
    from hookd.models import NotFound
    from hookd.spawn import spawn, unspawn

    wt = tmp_path / "wt"
    wt.mkdir()
    h = Home.resolve(home)
    args = ["--worktree", os.fspath(wt)]
    if scenario == "user-files":
        (wt / ".claude").mkdir()
        (wt / ".claude" / "settings.local.json").write_text('{"permissions": {"allow": ["Bash(ls)"]},\n "hooks": {}}\n')
        (wt / ".mcp.json").write_text('{ "mcpServers": { "other": {"command": "x"} } }')
    before = _snapshot(wt)
    if scenario == "respawn-no-mcp":
        spawn(h, "b1", worktree=wt)  # a complete spawn; the killed one moves its MCP entry away
        args.append("--no-mcp")
    r = _killed_spawn(home, 0, *args)
    assert r.returncode == 0, r.stderr
    total = int(r.stderr.rsplit("file operations: ", 1)[1])
    assert total >= 8  # the manifest, the settings file, .mcp.json, their temp files, .claude/
    unspawn(h, "b1")
    assert _snapshot(wt) == before
    orphans = killed = 0
    for k in range(1, total + 1):
        if scenario == "respawn-no-mcp":
            spawn(h, "b1", worktree=wt)
        r = _killed_spawn(home, k, *args)
        assert r.returncode in (-signal.SIGKILL, 0), (k, r.stderr)
        completed = r.returncode == 0  # k is past this run's last operation (the first run had more)
        if _snapshot(wt) != before and not h.manifest("b1").exists():
            orphans += 1  # the user's files changed and nothing records it
        if k % 2:  # recover with a re-spawn, then unspawn; else with unspawn alone
            spawn(h, "b1", worktree=wt, mcp=scenario != "respawn-no-mcp")
        try:
            unspawn(h, "b1")
        except NotFound:
            pass  # killed before it recorded its intent: then it wrote nothing in the worktree (below)
        after = _snapshot(wt)
        assert after == before, (k, scenario, sorted(set(after) ^ set(before)),
                                 [n for n in after if after.get(n) != before.get(n)])
        assert not [p for p in h.root.rglob("*") if p.name.endswith((".tmp", "-tmp"))], k
        if completed:
            break
        killed = k
    assert orphans == 0 and killed >= 8
    print(f"spawn kill -9 ({scenario}): killed at each of {killed} file operations, each recovered "
          "byte-identical, 0 orphans, no temp file left")


# --- the plugin form (issue 23, item 6; the real Claude Code runs it: tests/e2e/test_plugin_e2e.py) ---


def test_spawn_as_a_claude_code_plugin_and_unspawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hookd.spawn import spawn, unspawn
    from hookd.spawn.check import check_hooks, fix_command

    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "bash")
    home, plugin, w = Home.resolve(tmp_path / "home"), tmp_path / "plugins" / "b.1", tmp_path / "w"
    w.mkdir()
    m = spawn(home, "b.1", plugin_dir=plugin, worktree=w)
    assert m["settings_file"] == os.fspath(plugin / "hooks" / "hooks.json") and m["mcp"] is None
    assert m["plugin"] == {"dir": os.fspath(plugin), "manifest_file": os.fspath(plugin / ".claude-plugin" / "plugin.json"),
                           "wrote_manifest": True, "created_dir": True, "claude_args": ["--plugin-dir", os.fspath(plugin)]}
    assert (plugin / ".claude-plugin" / "plugin.json").read_text() == """{
  "name": "hookd-b-1",
  "version": "0.1.0",
  "description": "hookd's hooks for builder b.1: every hook event of the session reaches the hookd daemon (written by `hookd spawn --plugin-dir`; `hookd unspawn` removes them)"
}
"""
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())
    assert set(hooks) == {"hooks"} and set(hooks["hooks"]) == set(m["events"])  # (no MCP keys in a plugin's hooks)
    assert not any(w.iterdir()) and check_hooks(home, m) is None
    assert fix_command(home, m) == f"hookd --home {home.root} spawn b.1 --plugin-dir {plugin} --worktree {os.path.realpath(w)}"
    assert spawn(home, "b.1", plugin_dir=plugin, worktree=w)["plugin"]["created_dir"] is True  # (a re-spawn keeps it)
    unspawn(home, "b.1")
    assert not plugin.exists() and (tmp_path / "plugins").is_dir()


def test_a_plugin_json_of_someone_elses_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hookd.spawn import spawn, unspawn

    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "bash")
    home, plugin = Home.resolve(tmp_path / "home"), tmp_path / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    theirs = '{"name": "my-tools", "version": "2.0.0"}\n'
    (plugin / ".claude-plugin" / "plugin.json").write_text(theirs)
    m = spawn(home, "b1", plugin_dir=plugin)
    assert (m["plugin"]["wrote_manifest"], m["plugin"]["created_dir"]) == (False, False)
    unspawn(home, "b1")
    assert (plugin / ".claude-plugin" / "plugin.json").read_text() == theirs and not (plugin / "hooks").exists()
    r = hookd_run(tmp_path / "home", "spawn", "b1", "--plugin-dir", os.fspath(plugin), "--harness", "codex")
    assert (r.returncode, r.stderr) == (2, "hookd: --plugin-dir makes a Claude Code plugin: not for codex\n")
