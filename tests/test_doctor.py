"""`hookd doctor` (issue 23, item 5): every check passing on a sound set-up, then each one
failing once on a set-up broken for it (real files: spawn's settings, the hook client, a
program standing in for the harness's with its ``--version``, Claude Code's and Codex's user
configs; a real daemon for the session checks), with its exact lines and fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hookd.client import Client
from hookd.config import Home
from hookd.spawn import spawn

from .conftest import TUI, hookd_cli, hookd_run, run_hook, settings_command


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A sound set-up: b1 spawned (bash client) into ``tmp/w``, a ``claude`` that says it is
    2.1.332, Claude Code's trust of ``tmp`` (above the worktree) in ``$HOME/.claude.json``."""
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "bash")
    monkeypatch.setenv("HOME", os.fspath(tmp_path / "user"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    exe = tmp_path / "bin" / "claude"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\necho '2.1.332 (Claude Code)'\n")
    exe.chmod(0o755)
    monkeypatch.setenv("HOOKD_CLAUDE_BIN", os.fspath(exe))
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / ".claude.json").write_text(json.dumps(
        {"projects": {os.path.realpath(tmp_path): {"hasTrustDialogAccepted": True}}}))
    w = tmp_path / "w"
    w.mkdir()
    home = tmp_path / "home"
    spawn(Home.resolve(home), "b1", worktree=w, mcp=False)
    return {"home": home, "w": os.path.realpath(w), "tmp": os.path.realpath(tmp_path), "claude": os.fspath(exe),
            "settings": w / ".claude" / "settings.local.json", "tmux": shutil.which("tmux"),
            "user_settings": tmp_path / "user" / ".claude" / "settings.json"}


def _lines(s: dict[str, Any], **overrides: str) -> list[str]:
    """doctor's lines for the sound set-up with the daemon down; ``overrides``: a check's lines instead."""
    h, w = s["home"], s["w"]
    lines = {
        "daemon": [f"fail  daemon        not running for {h}: hooks are spooled, nothing answers them",
                   f"      fix:          hookd service install, or in a terminal: hookd --home {h} serve"],
        "tmux": [f"ok    tmux          {s['tmux']} (hookd run's interactive agents)"],
        "head": [f"b1 (claude-code, {w})"],
        "settings": [f"  ok    settings      {w}/.claude/settings.local.json parses"],
        "entries": ["  ok    entries       hookd's entries for 17 events, as spawn wrote them"],
        "hooks_on": [f"  ok    hooks_on      no disableAllHooks in the user, project or local settings (the user's: "
                     f"{s['user_settings']})"],
        "client": ["  ok    client        the bash hook client, this hookd's"],
        "version": [f"  ok    version       {s['claude']} is claude-code 2.1.332, the version hookd knows"],
        "folder_trust": [f"  ok    folder_trust  Claude Code trusts {s['tmp']} (above {w})"],
        "transcripts": ["  skip  transcripts   needs the daemon"],
        "armed": ["  skip  armed         needs the daemon"],
    }
    for k, v in overrides.items():
        lines[k] = v.splitlines()
    return [x for part in lines.values() for x in part]


def test_a_sound_set_up_with_the_daemon_down(setup: dict[str, Any]) -> None:
    r = hookd_run(setup["home"], "doctor")
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines() == [*_lines(setup), "1 check(s) failed: daemon"]
    doc = json.loads(hookd_run(setup["home"], "doctor", "--json").stdout)
    assert doc["ok"] is False
    assert doc["checks"][0] == {"builder": None, "check": "daemon", "state": "fail",
                                "detail": f"not running for {setup['home']}: hooks are spooled, nothing answers them",
                                "fix": f"hookd service install, or in a terminal: hookd --home {setup['home']} serve"}
    assert doc["checks"][5] == {"builder": "b1", "check": "client", "state": "ok",
                                "detail": "the bash hook client, this hookd's", "fix": None}
    assert [c["check"] for c in doc["checks"]] == ["daemon", "tmux", "settings", "entries", "hooks_on", "client",
                                                   "version", "folder_trust", "transcripts", "armed"]


def test_settings_that_do_not_parse(setup: dict[str, Any]) -> None:
    setup["settings"].write_text("{not json")
    fix = f"hookd --home {setup['home']} spawn b1 --worktree {setup['w']} --no-mcp"
    r = hookd_run(setup["home"], "doctor", "b1")
    assert r.stdout.splitlines() == [*_lines(
        setup,
        settings=f"  fail  settings      {setup['settings']} is no longer JSON: the agent reads no hook from it\n"
                 f"        fix:          {fix}",
        entries="  skip  entries       the settings file does not parse"), "2 check(s) failed: daemon, b1 settings"]


def test_an_entry_edited_and_one_gone(setup: dict[str, Any]) -> None:
    data = json.loads(setup["settings"].read_text())
    del data["hooks"]["Stop"]
    data["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = 1
    setup["settings"].write_text(json.dumps(data))
    fix = f"hookd --home {setup['home']} spawn b1 --worktree {setup['w']} --no-mcp"
    r = hookd_run(setup["home"], "doctor", "b1")
    assert r.stdout.splitlines() == [*_lines(
        setup, entries=f"  fail  entries       hookd's entries for Stop are gone; hookd's entries for PreToolUse were edited "
                       f"in {setup['settings']}\n        fix:          {fix}"), "2 check(s) failed: daemon, b1 entries"]
    hookd_run(setup["home"], "spawn", "b1", "--worktree", setup["w"], "--no-mcp")  # the fix mends it
    assert hookd_run(setup["home"], "doctor", "b1").stdout.splitlines() == [*_lines(setup), "1 check(s) failed: daemon"]


def test_a_setting_that_turns_every_hook_off(setup: dict[str, Any]) -> None:
    """``disableAllHooks: true`` in the user's settings: spawn writes its entries, keeps the
    person's key and says why none will run; doctor fails ``hooks_on`` with the fix; the
    project's local ``false`` (a higher file) turns them on again."""
    user = setup["user_settings"]
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"disableAllHooks": True}))
    cause = f"disableAllHooks is true in {user} (the user's settings): Claude Code runs no hook, hookd's included"
    fix = (f"remove \"disableAllHooks\" from {user} (or set it to false there): Claude Code reloads the file and "
           "runs the hooks again from its next event")
    r = hookd_run(setup["home"], "spawn", "b1", "--worktree", setup["w"], "--no-mcp")
    assert r.returncode == 0, r.stderr
    assert f"hookd: warning: {cause}: none of the hooks just written will run; to run them: {fix}\n" in r.stderr
    assert json.loads(user.read_text()) == {"disableAllHooks": True}
    r = hookd_run(setup["home"], "doctor", "b1")
    assert r.stdout.splitlines() == [*_lines(setup, hooks_on=f"  fail  hooks_on      {cause}\n        fix:          {fix}"),
                                     "2 check(s) failed: daemon, b1 hooks_on"]
    data = json.loads(setup["settings"].read_text())
    setup["settings"].write_text(json.dumps({**data, "disableAllHooks": False}))
    assert hookd_run(setup["home"], "doctor", "b1").stdout.splitlines() == [*_lines(setup), "1 check(s) failed: daemon"]
    assert "warning" not in hookd_run(setup["home"], "spawn", "b1", "--worktree", setup["w"], "--no-mcp").stderr


@pytest.mark.parametrize("breakage, detail", [
    ("gone", "{script} is missing: every hook is a silent no-op"),
    ("other", "{script} was written by another hookd than this 0.1.0"),
])
def test_the_hook_client_missing_or_another_hookds(setup: dict[str, Any], breakage: str, detail: str) -> None:
    script = setup["home"] / "bin" / "hook-client"
    if breakage == "gone":
        script.unlink()
    else:
        script.write_text(script.read_text() + "# an older hookd's\n")
    fix = f"hookd --home {setup['home']} spawn b1 --worktree {setup['w']} --no-mcp"
    r = hookd_run(setup["home"], "doctor", "b1")
    assert r.stdout.splitlines() == [*_lines(
        setup, client=f"  fail  client        {detail.format(script=script)}\n        fix:          {fix}"),
        "2 check(s) failed: daemon, b1 client"]


def test_a_harness_version_the_adapter_does_not_know_and_a_missing_program(
        setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    Path(setup["claude"]).write_text("#!/bin/sh\necho '2.1.400 (Claude Code)'\n")
    r = hookd_run(setup["home"], "doctor", "b1")
    assert r.stdout.splitlines() == [*_lines(
        setup, version=f"  fail  version       {setup['claude']} is claude-code 2.1.400; hookd's adapter knows 2.1.332\n"
                       "        fix:          install claude-code 2.1.332, or set HOOKD_CLAUDE_BIN to a 2.1.332 program"),
        "2 check(s) failed: daemon, b1 version"]
    monkeypatch.delenv("HOOKD_CLAUDE_BIN")
    monkeypatch.setenv("PATH", os.fspath(tmp_path / "nowhere") + os.pathsep + os.path.dirname(setup["tmux"]))
    r = hookd_run(setup["home"], "doctor", "b1")
    assert "  skip  version       not found: claude is not on PATH: install it, or set HOOKD_CLAUDE_BIN to its path" \
        in r.stdout.splitlines()


def test_a_transcript_folder_there_but_unreadable_is_a_failure_with_access_as_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder that exists but that this user may not read (faked: the suite runs as root,
    who reads anything) fails, with read access as the fix; one that does not exist here only
    warns (the test above)."""
    from hookd import doctor

    folder = tmp_path / "theirs"
    folder.mkdir()
    real = os.access
    monkeypatch.setattr(doctor.os, "access", lambda p, mode: False if os.fspath(p) == os.fspath(folder) else real(p, mode))
    assert doctor._transcripts("b1", {"transcript_path": os.fspath(folder / "s.jsonl")}) == {
        "builder": "b1", "check": "transcripts", "state": "fail",
        "detail": f"{folder} cannot be read: hookd cannot read the transcript (no adoption proven, no fallback)",
        "fix": f"give this user read access to {folder}"}


def test_the_version_of_the_program_the_newest_run_started(tmp_path: Path) -> None:
    """`hookd run` started a program this CLI's environment does not find (HOOKD_CLAUDE_BIN set
    only where it ran): that program is asked, not the one on this CLI's PATH."""
    from hookd.doctor import version_check

    def program(name: str, version: str) -> str:
        exe = tmp_path / name
        exe.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
        exe.chmod(0o755)
        return os.fspath(exe)

    on_path, pinned = program("claude", "2.1.400"), program("claude-pinned", "2.1.332")
    env = {"PATH": os.fspath(tmp_path)}
    run = {"harness": "claude-code", "argv": [pinned, "--permission-mode", "default"]}
    assert version_check("b1", "claude-code", env, run=run) == {
        "builder": "b1", "check": "version", "state": "ok",
        "detail": f"{pinned} (the program its newest run started) is claude-code 2.1.332, the version hookd knows",
        "fix": None}
    assert version_check("b1", "claude-code", env)["detail"].startswith(f"{on_path} is claude-code 2.1.400")
    # a run of another harness, or a program gone since: the one this environment finds
    assert version_check("b1", "claude-code", env, run=dict(run, harness="codex"))["state"] == "fail"
    os.unlink(pinned)
    assert version_check("b1", "claude-code", env, run=run)["detail"].startswith(f"{on_path} is claude-code 2.1.400")


def test_claude_codes_folder_trust_and_no_tmux(setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    (tmp_path / "user" / ".claude.json").unlink()
    monkeypatch.setenv("PATH", os.fspath(tmp_path / "nowhere"))
    r = hookd_run(setup["home"], "doctor", "b1")
    w = setup["w"]
    assert r.stdout.splitlines() == [*_lines(
        setup,
        tmux="warn  tmux          not on PATH: hookd run starts interactive agents in tmux\n"
             "      fix:          install tmux (apt-get install tmux; brew install tmux), or use hookd run --headless",
        folder_trust=f"  warn  folder_trust  Claude Code has not been trusted in {w}: its first start there asks (a trust "
                     "dialog) and runs no hook until someone accepts\n"
                     f"        fix:          hookd attach b1 after hookd run and accept it, or start claude in {w} once"),
        "1 check(s) failed: daemon"]  # (warnings do not fail)


def test_codex_hooks_not_trusted(setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODEX_HOME", os.fspath(tmp_path / "codex"))
    w2 = tmp_path / "w2"
    w2.mkdir()
    spawn(Home.resolve(setup["home"]), "c1", worktree=w2, harness="codex")
    doc = json.loads(hookd_run(setup["home"], "doctor", "c1", "--json").stdout)
    trust = next(c for c in doc["checks"] if c["check"] == "trust")
    assert trust["state"] == "fail" and trust["detail"].startswith("project not trusted: ")
    assert trust["fix"] == f"hookd --home {setup['home']} spawn c1 --worktree {os.path.realpath(w2)} --harness codex --trust"
    hookd_run(setup["home"], "spawn", "c1", "--worktree", os.fspath(w2), "--harness", "codex", "--trust")
    doc = json.loads(hookd_run(setup["home"], "doctor", "c1", "--json").stdout)
    assert next(c for c in doc["checks"] if c["check"] == "trust")["state"] == "ok"
    assert [c["check"] for c in doc["checks"] if c["builder"] == "c1"] == [
        "settings", "entries", "client", "version", "trust", "transcripts", "armed"]


def test_a_builder_that_is_not_spawned(setup: dict[str, Any]) -> None:
    r = hookd_run(setup["home"], "doctor", "nobody")
    assert (r.returncode, r.stderr) == (
        1, "hookd: nobody is not spawned (hookd spawn nobody --worktree DIR, or hookd run nobody)\n")


# --- with the daemon: the session's checks ------------------------------------------------------


def _hook(s: dict[str, Any], name: str, **changes: Any) -> None:
    p = json.loads((TUI / name).read_bytes())
    p.update(cwd=s["w"], **changes)
    r = run_hook(settings_command(s["settings"], p["hook_event_name"]), json.dumps(p).encode(), Path(s["w"]))
    assert r.returncode == 0, r.stderr


@pytest.mark.daemon
def test_every_check_passes_then_the_session_checks_fail(setup: dict[str, Any], tmp_path: Path) -> None:
    from hookd.daemonproc import DaemonProcess

    d = DaemonProcess(setup["home"]).start()
    try:
        folder = tmp_path / "projects"
        folder.mkdir()
        _hook(setup, "001-SessionStart.json", session_id="s-1", transcript_path=os.fspath(folder / "s-1.jsonl"))
        r = hookd_cli(setup["home"], "doctor")
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.splitlines() == [*_lines(
            setup, daemon="ok    daemon        running: hookd 0.1.0, as this CLI",
            transcripts=f"  ok    transcripts   {folder} readable", armed="  ok    armed         session s-1 sent hooks"),
            "every check passed (10 ok)"]
        # a folder Claude Code never trusted, but whose hooks arrived (claude -p asks nothing): no warning
        claude_json = tmp_path / "user" / ".claude.json"
        trusted = claude_json.read_text()
        claude_json.write_text("{}")
        r = hookd_cli(setup["home"], "doctor", "b1")
        assert f"  ok    folder_trust  b1's hooks arrived, so no trust dialog stopped them (claude -p shows none; " \
               f"{claude_json} records no trust of {setup['w']}: an interactive claude with this HOME would ask)" \
               in r.stdout.splitlines(), r.stdout
        claude_json.write_text(trusted)

        # a new session whose folder is gone; then an agent hookd started that sent no hook yet
        _hook(setup, "001-SessionStart.json", session_id="s-2", transcript_path=os.fspath(tmp_path / "gone" / "s-2.jsonl"))
        sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
        try:
            import psutil

            Client(Home.resolve(setup["home"])).post_json("/v1/builders/b1/started", {
                "harness": "claude-code", "mode": "headless", "pid": sleeper.pid, "argv": ["claude"],
                "pid_started_at": psutil.Process(sleeper.pid).create_time(), "log_path": "/dev/null"})
            r = hookd_cli(setup["home"], "doctor", "b1")
        finally:
            sleeper.kill()
            sleeper.wait()
        assert r.returncode == 1
        gone = tmp_path / "gone"
        assert r.stdout.splitlines() == [*_lines(
            setup, daemon="ok    daemon        running: hookd 0.1.0, as this CLI",
            transcripts=f"  warn  transcripts   {gone} does not exist here: hookd cannot read the transcript (no adoption "
                        "proven from it, no fallback)\n        fix:          run the agent on this machine as this user, "
                        "with its own HOME (a session of another machine, container or HOME, or a replayed one, has "
                        "none here)",
            armed=f"  fail  armed         the agent hookd started (pid {sleeper.pid}) has sent no hook yet\n"
                  "        fix:          wait for its first hook, or look: hookd attach b1"),
            "1 check(s) failed: b1 armed"]
    finally:
        d.stop()


def test_a_session_resumed_by_the_run_hookd_started_is_armed_by_its_hooks() -> None:
    """`hookd continue` resumes a session that started before its run: the run's hooks arm
    it, whichever session started last."""
    from hookd.doctor import session_checks

    run = {"alive": True, "pid": 42, "started_at": 100.0}
    resumed = {"session_id": "s-1", "started_at": 50.0, "last_hook_at": 120.0, "ended_at": None}
    other = {"session_id": "s-2", "started_at": 80.0, "last_hook_at": 90.0, "ended_at": None}
    [_, armed] = session_checks("b1", {"sessions": [resumed, other]}, True, run)
    assert (armed["state"], armed["detail"]) == ("ok", "session s-1 sent hooks")
    before = {**resumed, "last_hook_at": 95.0}  # no hook of it since the run started
    [_, armed] = session_checks("b1", {"sessions": [before, other]}, True, run)
    assert (armed["state"], armed["detail"]) == ("fail", "the agent hookd started (pid 42) has sent no hook yet")


def test_a_daemon_older_than_the_cli(tmp_path: Path) -> None:
    from hookd.doctor import machine_checks

    [daemon, _] = machine_checks(Home.resolve(tmp_path / "home"), {"version": "0.0.9"})
    assert daemon == {"builder": None, "check": "daemon", "state": "fail",
                      "detail": "runs hookd 0.0.9, this CLI is hookd 0.1.0: the daemon predates the install",
                      "fix": "restart the daemon (hookd service install restarts the service)"}


@pytest.mark.daemon
def test_a_session_known_only_from_its_transcript_is_not_armed(setup: dict[str, Any], tmp_path: Path) -> None:
    from hookd.daemonproc import DaemonProcess

    from .conftest import FIXTURES

    rows = (FIXTURES / "tui-ask-answered-at-terminal" / "transcript.jsonl").read_text()
    sid = json.loads(rows.splitlines()[0])["sessionId"]
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / f"{sid}.jsonl").write_text(rows)
    d = DaemonProcess(setup["home"]).start()
    try:
        Client(Home.resolve(setup["home"])).post_json("/v1/builders/b1/transcripts", {"paths": [os.fspath(folder / f"{sid}.jsonl")]})
        r = hookd_cli(setup["home"], "doctor", "b1")
    finally:
        d.stop()
    assert r.returncode == 1
    assert r.stdout.splitlines() == [*_lines(
        setup, daemon="ok    daemon        running: hookd 0.1.0, as this CLI",
        transcripts=f"  ok    transcripts   {folder} readable",
        armed=f"  fail  armed         session {sid} sent no hook since it started (known from its transcript only): it "
              "started before its hooks were written\n"
              "        fix:          restart the agent: hookd stop b1 && hookd continue b1 (or /hooks in Claude Code, or "
              "start it again)"),
        "1 check(s) failed: b1 armed"]


def test_a_hook_file_that_also_holds_another_builders_hooks(setup: dict[str, Any]) -> None:
    """Two builders' hooks in one file (spawned before spawn refused it): `entries` fails for
    each, naming the other and the fix."""
    from hookd.spawn.files import _load_settings, _write_settings

    settings, _ = _load_settings(setup["settings"])
    for groups in settings["hooks"].values():  # b7's hooks beside b1's, as an older spawn wrote them
        groups.append({"hooks": [{"type": "command", "command": "true # hookd builder=b7"}]})
    _write_settings(setup["settings"], settings)
    doc = json.loads(hookd_run(setup["home"], "doctor", "b1", "--json").stdout)
    [entries] = [c for c in doc["checks"] if c["check"] == "entries"]
    assert entries == {"builder": "b1", "check": "entries", "state": "fail",
                       "detail": f"{setup['settings']} also holds the hooks of builder b7: every hook of the agent "
                                 "reaches hookd for both, and messages to either reach it",
                       "fix": "hookd unspawn b7, and give it a worktree of its own"}


def test_the_last_line_counts_warnings_and_skipped_checks_apart(capsys: pytest.CaptureFixture[str]) -> None:
    """A warning or a skipped check is not a pass: the last line says "no check failed" and
    counts them (a fresh user read "every check passed (9 ok)" under a warning)."""
    from hookd.cli_doctor import _print

    def checks(*states: str) -> dict[str, Any]:
        return {"ok": True, "checks": [{"builder": None, "check": f"c{n}", "state": st, "detail": "d", "fix": None}
                                       for n, st in enumerate(states)]}

    _print(checks("ok", "warn", "ok", "skip"), [{"builder": "b1"}])
    assert capsys.readouterr().out.splitlines()[-1] == "no check failed (2 ok, 1 warn, 1 skip)"
    _print(checks("ok", "ok"), [{"builder": "b1"}])
    assert capsys.readouterr().out.splitlines()[-1] == "every check passed (2 ok)"
