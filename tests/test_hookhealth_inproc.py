"""Hooks that stopped working (issue 21, moment 6), in process: the settings file compared
with spawn's own record (hookd/spawn/check.py), Claude Code 2.1.332's ConfigChange hook (shaped
as docs/harness-claude-code.md "ConfigChange" records it), a transcript that moves while no
hook comes, the ``hooks_changed`` warning in status, lanes and the notifier, and what clears
it (a hook, the file restored, a re-spawn)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home
from hookd.core import hookhealth
from hookd.harness import claude_code as cc
from hookd.harness import claude_code_hooks as cch
from hookd.harness.base import SettingsChanged
from hookd.spawn import read_manifest, spawn, unspawn
from hookd.spawn.check import check_hooks, fix_command

from .conftest import wait_until
from .inproc import InProc
from .test_lanes import _notified

pytestmark = pytest.mark.inproc

SID = "5a1e0c2b-0000-4000-8000-0000000h0001"
#: the ConfigChange 2.1.332 sent for an edit of the project's settings.local.json (recorded:
#: tests/e2e/record.py stream-settings-edited-mid-session)
RECORDED = (Path(__file__).resolve().parent.parent / "fixtures" / "claude-code" / "2.1.332"
            / "stream-settings-edited-mid-session" / "hooks" / "009-ConfigChange.json")


def settings_of(worktree: Path) -> Path:
    return worktree / ".claude" / "settings.local.json"


def config_change(worktree: Path, transcript: Path | None = None) -> dict[str, Any]:
    """The recorded ConfigChange, as 2.1.332 sends it for an edit of this worktree's
    settings.local.json."""
    p = json.loads(RECORDED.read_bytes())
    p.update(session_id=SID, transcript_path=str(transcript or worktree / "t.jsonl"), cwd=str(worktree),
             file_path=str(settings_of(worktree)))
    return p


def session_start(worktree: Path, transcript: Path) -> dict[str, Any]:
    return {"session_id": SID, "transcript_path": str(transcript), "cwd": str(worktree),
            "hook_event_name": "SessionStart", "source": "startup"}


def prompt(worktree: Path, transcript: Path) -> dict[str, Any]:
    return {"session_id": SID, "transcript_path": str(transcript), "cwd": str(worktree),
            "hook_event_name": "UserPromptSubmit", "prompt": "go"}


def drop_hookd_entries(worktree: Path, keep: tuple[str, ...] = ()) -> None:
    """What a person (or a tool) does to the file: hookd's entries removed, other keys kept."""
    f = settings_of(worktree)
    s = json.loads(f.read_text())
    s["hooks"] = {k: v for k, v in s["hooks"].items() if k in keep}
    f.write_text(json.dumps(s, indent=2))


def kinds(app: InProc, *names: str) -> list[dict[str, Any]]:
    return [e for e in app.events() if e["kind"] in names]


# --- the adapter and spawn's record -----------------------------------------------------


def test_config_change_is_a_settings_change_and_spawn_registers_it() -> None:
    p = cc.parse(RECORDED.read_bytes())
    assert cc.observe(p) == [SettingsChanged(source="local_settings", file_path="/home/dev/proj/.claude/settings.local.json")]
    assert cc.hook_kinds["ConfigChange"] == "notice"  # not the agent's activity
    assert cc.known_fields("ConfigChange") >= {"source", "file_path"}
    s = cch.hook_settings("cmd # hookd builder=b1", 10)
    assert s["ConfigChange"] == [{"matcher": "", "hooks": [{"type": "command", "command": "cmd # hookd builder=b1",
                                                              "timeout": 10}]}]


def test_check_compares_the_file_with_what_spawn_wrote(tmp_path: Path, worktree: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    spawn(home, "b1", worktree=worktree)
    m = read_manifest(home, "b1")
    assert m is not None and set(m["entries"]) == set(m["events"]) and "ConfigChange" in m["entries"]
    assert check_hooks(home, m) is None
    fix = f"hookd --home {home.root} spawn b1 --worktree {worktree}"
    assert fix_command(home, m) == fix
    f = settings_of(worktree)
    # a timeout raised (Stop's, 10 -> 99) cuts no hook short: the hooks still work as written
    s = json.loads(f.read_text())
    assert s["hooks"]["Stop"][0]["hooks"][0]["timeout"] == 10
    s["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 99
    f.write_text(json.dumps(s))
    assert check_hooks(home, m) is None
    # one entry edited (its timeout lowered), one removed, another user's hook added beside them:
    # the edited and the missing are named, the stranger's hook is no concern
    s = json.loads(f.read_text())
    s["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 1
    del s["hooks"]["PreToolUse"]
    s["hooks"].setdefault("PostToolUse", []).append({"matcher": "", "hooks": [{"type": "command", "command": "true"}]})
    f.write_text(json.dumps(s))
    assert check_hooks(home, m) == {
        "settings_file": str(f), "missing": ["PreToolUse"], "changed": ["Stop"], "fix": fix,
        "reason": f"hookd's entries for PreToolUse are gone; hookd's entries for Stop were edited in {f}"}
    f.write_text("{not json")
    assert check_hooks(home, m)["reason"] == f"{f} is no longer JSON: the agent reads no hook from it"
    f.unlink()
    gone = check_hooks(home, m)
    assert gone["reason"] == f"{f} is gone" and gone["missing"] == m["events"]
    # a manifest written before spawn recorded its entries: the tag alone is checked
    spawn(home, "b1", worktree=worktree)
    old = {k: v for k, v in m.items() if k != "entries"}
    assert check_hooks(home, old) is None
    drop_hookd_entries(worktree, keep=("Stop",))
    assert check_hooks(home, old)["changed"] == [] and "Stop" not in check_hooks(home, old)["missing"]


def test_the_fix_repeats_the_options_spawn_was_given(tmp_path: Path, worktree: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    standalone = tmp_path / "b2-settings.json"
    spawn(home, "b2", settings_file=standalone, worktree=worktree, hold_s=30, wake_wait_s=60, mcp=False)
    assert fix_command(home, read_manifest(home, "b2")) == (
        f"hookd --home {home.root} spawn b2 --settings-file {standalone} --worktree {worktree} "
        "--hold 30 --wake-wait 60 --no-mcp")


# --- the core: ConfigChange, status, lanes, what clears it ------------------------------


@pytest.fixture
def spawned(inproc: InProc, worktree: Path) -> tuple[InProc, Path]:
    spawn(Home.resolve(inproc.home.root), "b1", worktree=worktree)  # what `hookd spawn` does
    transcript = worktree / "t.jsonl"
    transcript.write_text("")
    assert inproc.hook(session_start(worktree, transcript)).status_code == 200
    return inproc, worktree


def test_config_change_removing_hookds_entries_warns_until_a_hook_arrives(spawned: tuple[InProc, Path]) -> None:
    app, worktree = spawned
    assert app.hook(config_change(worktree)).status_code == 200  # the file as spawn wrote it: nothing
    assert app.hook(prompt(worktree, worktree / "t.jsonl")).status_code == 200
    assert kinds(app, "hooks_changed") == []
    drop_hookd_entries(worktree)
    r = app.hook(config_change(worktree))
    assert (r.status_code, r.content) == (200, b"")  # never blocks the edit (a ConfigChange hook could)
    [ev] = wait_until(lambda: kinds(app, "hooks_changed"), 30, what="hooks_changed")
    f = settings_of(worktree)
    fix = f"hookd --home {app.home.root} spawn b1 --worktree {worktree}"
    d = ev["data"]
    assert (ev["builder"], ev["session_id"], d["signal"], d["via"], d["source"], d["file_path"], d["fix"]) == (
        "b1", SID, "settings", "ConfigChange", "local_settings", str(f), fix)
    assert d["missing"] == read_manifest(Home.resolve(app.home.root), "b1")["events"]
    assert d["reason"].startswith("hookd's entries for SessionStart, UserPromptSubmit, PreToolUse and ")
    # status, lanes: the warning with the fix
    [b] = app.get("/v1/status")["builders"]
    assert (b["hooks_changed"]["signal"], b["hooks_changed"]["fix"]) == ("settings", fix)
    [lane] = app.get("/v1/lanes")
    assert lane["hooks_changed"]["fix"] == fix and lane["detail"].startswith(f"hooks stopped working: {d['reason']}; ")
    # a second report of the same edit: one warning
    app.hook(config_change(worktree))
    app.call(app.core.check_hooks("b1", via="test"))
    assert len(kinds(app, "hooks_changed")) == 1
    # hooks arrive again (the person undid the edit and the agent reloaded it): cleared
    app.hook(prompt(worktree, worktree / "t.jsonl"))
    [restored] = kinds(app, "hooks_restored")
    assert (restored["data"]["reason"], restored["data"]["via"]) == ("a hook arrived again", "UserPromptSubmit")
    assert app.get("/v1/lanes")[0]["hooks_changed"] is None


def test_re_spawn_clears_the_warning_at_once(spawned: tuple[InProc, Path]) -> None:
    app, worktree = spawned
    drop_hookd_entries(worktree)
    app.hook(config_change(worktree))
    wait_until(lambda: kinds(app, "hooks_changed"), 30, what="hooks_changed")
    spawn(Home.resolve(app.home.root), "b1", worktree=worktree)
    r = app.request("POST", "/v1/builders/b1/spawned")  # what `hookd spawn` tells a running daemon
    assert r.status_code == 200 and r.json() == {"builder": "b1", "hooks_changed": None}
    [restored] = kinds(app, "hooks_restored")
    assert (restored["data"]["reason"], restored["data"]["via"]) == ("spawn wrote hookd's entries again", "spawn")
    assert app.get("/v1/status")["builders"][0]["hooks_changed"] is None
    assert app.request("POST", "/v1/builders/nobody/spawned").status_code == 404
    # flagged again, then unspawned: no hook of hookd's is expected any more, the warning ends
    drop_hookd_entries(worktree)
    app.hook(config_change(worktree))
    wait_until(lambda: len(kinds(app, "hooks_changed")) == 2, 30, what="the second hooks_changed")
    unspawn(Home.resolve(app.home.root), "b1")
    assert app.request("POST", "/v1/builders/b1/unspawned").status_code == 200  # what `hookd unspawn` sends
    assert kinds(app, "hooks_restored")[-1]["data"]["reason"] == "the builder is no longer spawned: no hook of hookd's is expected"
    assert app.call(app.store.hooks_changed()) == {}


def test_status_checks_the_file_itself(spawned: tuple[InProc, Path]) -> None:
    """An edit no hook reported (the daemon was down, or the agent not running): `hookd status`
    reads the file, and the warning is recorded then; restoring the file clears it there."""
    app, worktree = spawned
    drop_hookd_entries(worktree, keep=("Stop",))
    [b] = app.get("/v1/status")["builders"]
    w = b["hooks_changed"]
    assert w["signal"] == "settings" and "Stop" not in w["missing"] and w["changed"] == []
    [ev] = wait_until(lambda: kinds(app, "hooks_changed"), 30, what="hooks_changed recorded by status")
    assert ev["data"]["via"] == "status"
    spawn(Home.resolve(app.home.root), "b1", worktree=worktree)  # no daemon told: status finds it
    assert app.get("/v1/status")["builders"][0]["hooks_changed"] is None
    [restored] = kinds(app, "hooks_restored")
    assert restored["data"]["reason"] == "the settings file holds hookd's entries again"


# --- the transcript moves, no hook comes -------------------------------------------------


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def _turn_rows(t: float) -> str:
    """A main-agent turn as 2.1.332 writes it: the prompt, then the assistant's end_turn."""
    rows = [
        {"type": "user", "sessionId": SID, "uuid": "u-1", "timestamp": _iso(t), "cwd": "/w",
         "message": {"role": "user", "content": "go on"}},
        {"type": "assistant", "sessionId": SID, "uuid": "a-1", "parentUuid": "u-1", "timestamp": _iso(t + 0.1),
         "message": {"role": "assistant", "stop_reason": "end_turn", "content": [{"type": "text", "text": "done"}]}},
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_a_turn_in_the_transcript_with_no_hook_warns(spawned: tuple[InProc, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    app, worktree = spawned
    monkeypatch.setattr(hookhealth, "STOPPED_GRACE_S", 0.2)
    monkeypatch.setattr(hookhealth, "TURN_SLACK_S", 0.0)
    transcript = worktree / "t.jsonl"
    # a turn whose hooks came: no warning
    t0 = time.time()
    app.hook(prompt(worktree, transcript))
    with transcript.open("a") as f:
        f.write(_turn_rows(t0 - 0.5))
    app.call(app.core.tailer.poll(str(transcript)))
    # a turn written after the last hook, with no hook of its own: the warning, with why
    with transcript.open("a") as f:
        f.write(_turn_rows(time.time() + 0.05).replace("u-1", "u-2").replace("a-1", "a-2"))
    app.call(app.core.tailer.poll(str(transcript)))
    [ev] = wait_until(lambda: kinds(app, "hooks_changed"), 30, what="hooks_changed from the transcript")
    d = ev["data"]
    assert (d["signal"], d["via"], d["settings_file"]) == ("transcript", "transcript", str(settings_of(worktree)))
    assert d["reason"].startswith("the transcript shows a turn that ended with no hook from it")
    assert d["reason"].endswith("the settings file still holds hookd's entries (the agent may run with other settings)")
    assert d["fix"] == f"hookd --home {app.home.root} spawn b1 --worktree {worktree} then restart the agent"
    # the file is whole: status keeps the transcript's warning; a hook clears it
    assert app.get("/v1/status")["builders"][0]["hooks_changed"]["signal"] == "transcript"
    app.hook(prompt(worktree, transcript))
    assert [e["data"]["reason"] for e in kinds(app, "hooks_restored")] == ["a hook arrived again"]


# --- notified once ----------------------------------------------------------------------


def test_notified_once_with_the_fix(home: Path, worktree: Path, tmp_path: Path) -> None:
    out = tmp_path / "alerts.jsonl"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[notify]\nquestion_after_s = 3600\nsteps_s = [0, 3600]\n"
        f'[[notify.channel]]\ntype = "command"\ncommand = ["sh", "-c", "cat >> {out}; echo >> {out}"]\n')
    app = InProc(home).start()
    try:
        spawn(Home.resolve(home), "b1", worktree=worktree)
        transcript = worktree / "t.jsonl"
        app.hook(session_start(worktree, transcript))
        drop_hookd_entries(worktree)
        app.hook(config_change(worktree))
        [alert] = wait_until(lambda: _notified(out), 60, what="the hooks_changed notification")
        fix = f"hookd --home {Home.resolve(home).root} spawn b1 --worktree {worktree}"
        assert (alert["rule"], alert["builder"], alert["title"]) == ("hooks_changed", "b1", "hookd: b1's hooks stopped working")
        assert alert["message"].endswith(f"To restore them: {fix}") and alert["data"]["fix"] == fix
        app.hook(config_change(worktree))  # the same warning again: no second notification
        app.get("/v1/status")
        app.hook(prompt(worktree, transcript))  # cleared
        wait_until(lambda: kinds(app, "hooks_restored"), 30)
        assert len(_notified(out)) == 1
    finally:
        app.stop()


# --- a setting that turns every hook off (disableAllHooks) ---------------------------------


def _set(path: Path, **keys: Any) -> None:
    """``keys`` set in the settings file at ``path`` (its other keys kept; None removes one)."""
    s = json.loads(path.read_text()) if path.exists() else {}
    for k, v in keys.items():
        if v is None:
            s.pop(k, None)
        else:
            s[k] = v
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(s, indent=2))


def test_the_setting_in_force_is_the_highest_file_that_sets_it(tmp_path: Path, worktree: Path) -> None:
    """Claude Code 2.1.332's order (docs/harness-claude-code.md "disableAllHooks"): user, project,
    local, the --settings file; the highest that sets the key decides."""
    from hookd.spawn.hooksoff import check_builder, hooks_off, user_config_dir

    home = Home.resolve(tmp_path / "h")
    spawn(home, "b1", worktree=worktree)
    m = read_manifest(home, "b1")
    cfg = tmp_path / "cfg"
    user, project, local = cfg / "settings.json", worktree / ".claude" / "settings.json", settings_of(worktree)
    # the agent's config folder: its transcript's, else CLAUDE_CONFIG_DIR, else ~/.claude
    assert user_config_dir(str(cfg / "projects" / "-w" / f"{SID}.jsonl"), {"HOME": "/nobody"}) == cfg
    assert user_config_dir(str(tmp_path / "t.jsonl"), {"CLAUDE_CONFIG_DIR": str(cfg), "HOME": "/x"}) == cfg
    assert user_config_dir(None, {"HOME": "/x"}) == Path("/x/.claude")
    assert hooks_off(m, cfg) is None and check_builder(home, m, cfg) is None
    _set(user, disableAllHooks=True)
    off = hooks_off(m, cfg)
    assert off == {"settings_file": str(user), "scope": "user", "key": "disableAllHooks", "files": [str(user)],
                   "reason": f"disableAllHooks is true in {user} (the user's settings): Claude Code runs no hook, "
                             "hookd's included",
                   "fix": f"remove \"disableAllHooks\" from {user} (or set it to false there): Claude Code reloads "
                          "the file and runs the hooks again from its next event"}
    assert check_builder(home, m, cfg) == {"settings_file": str(local), "missing": [], "changed": [],
                                           "reason": off["reason"], "fix": off["fix"], "disabled": off}
    _set(local, disableAllHooks=False)  # a higher file's false wins
    assert hooks_off(m, cfg) is None
    _set(local, disableAllHooks=True)
    _set(project, disableAllHooks=True)
    off = hooks_off(m, cfg)
    assert (off["settings_file"], off["scope"], off["files"]) == (str(local), "local", [str(user), str(project), str(local)])
    assert off["fix"].startswith(f"remove \"disableAllHooks\" from {local} and {project} and {user} ")
    _set(local, disableAllHooks="yes")  # not a boolean: no setting; the project's true holds
    assert hooks_off(m, cfg)["scope"] == "project"
    # entries gone as well: both causes, the setting's first
    drop_hookd_entries(worktree)
    both = check_builder(home, m, cfg)
    assert both["reason"].startswith("disableAllHooks is true in ") and "are gone in" in both["reason"]
    assert both["fix"].endswith(f"; and {fix_command(home, m)}") and both["missing"] == m["events"]
    # a builder spawned into a --settings file: that file outranks the project's; it is read at start only
    flag = tmp_path / "b2.json"
    spawn(home, "b2", settings_file=flag, worktree=worktree, mcp=False)
    m2 = read_manifest(home, "b2")
    _set(flag, disableAllHooks=False)
    assert hooks_off(m2, cfg) is None
    _set(flag, disableAllHooks=True)
    assert hooks_off(m2, cfg)["fix"].endswith("then restart the agent: claude reads its --settings file only at start")
    # Codex has no such key
    assert hooks_off({**m, "harness": "codex"}, cfg) is None


def test_disable_all_hooks_warns_naming_the_file_and_spawn_does_not_say_the_hooks_work(
        spawned: tuple[InProc, Path]) -> None:
    """The trial's case: ``disableAllHooks: true`` added to the project's local settings of a
    running builder. ConfigChange reports the edit; the warning names the key and the file and
    its fix removes the key; `hookd spawn` leaves the setting (a person's) and records no
    ``hooks_restored``; a hook on its way proves nothing; the key removed, the next hook ends it."""
    app, worktree = spawned
    local = settings_of(worktree)
    _set(local, disableAllHooks=True)
    app.hook(config_change(worktree))
    [ev] = wait_until(lambda: kinds(app, "hooks_changed"), 30, what="hooks_changed")
    d = ev["data"]
    assert (d["signal"], d["missing"], d["changed"], d["disabled"]["settings_file"], d["disabled"]["key"]) == (
        "settings", [], [], str(local), "disableAllHooks")
    assert d["reason"] == f"disableAllHooks is true in {local} (the project's local settings): Claude Code runs no hook, " \
                          "hookd's included"
    assert d["fix"].startswith(f"remove \"disableAllHooks\" from {local} ")
    # spawn again: it writes its entries and keeps the person's key; the daemon says what is still wrong
    spawn(Home.resolve(app.home.root), "b1", worktree=worktree)
    assert json.loads(local.read_text())["disableAllHooks"] is True
    r = app.request("POST", "/v1/builders/b1/spawned")
    assert r.status_code == 200 and r.json()["hooks_changed"]["disabled"]["settings_file"] == str(local)
    # a hook that was on its way when the setting came in
    app.hook(prompt(worktree, worktree / "t.jsonl"))
    assert kinds(app, "hooks_restored") == []
    [b] = app.get("/v1/status")["builders"]
    assert b["hooks_changed"]["fix"] == d["fix"]
    [lane] = app.get("/v1/lanes")
    assert lane["hooks_changed"]["disabled"]["settings_file"] == str(local)
    assert kinds(app, "hooks_restored") == [] and len(kinds(app, "hooks_changed")) == 1
    # the key removed: the next hook (they run again) ends the warning, naming why
    _set(local, disableAllHooks=None)
    app.hook(prompt(worktree, worktree / "t.jsonl"))
    [restored] = wait_until(lambda: kinds(app, "hooks_restored"), 30, what="hooks_restored")
    assert (restored["data"]["reason"], restored["data"]["via"]) == (
        f"disableAllHooks no longer turns the hooks off ({local})", "UserPromptSubmit")
    assert app.get("/v1/status")["builders"][0]["hooks_changed"] is None


def test_a_turn_with_no_hook_names_the_users_setting_found_from_the_transcripts_folder(
        inproc: InProc, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's own config folder (not the daemon's HOME) holds its user settings: the one
    its transcripts are under. A transcript turn with no hook warns with that file and the key
    as the cause; `hookd spawn` records nothing; status finds the key gone and ends it."""
    monkeypatch.setattr(hookhealth, "STOPPED_GRACE_S", 0.2)
    monkeypatch.setattr(hookhealth, "TURN_SLACK_S", 0.0)
    app = inproc
    spawn(Home.resolve(app.home.root), "b1", worktree=worktree)
    cfg = tmp_path / "agent-home" / ".claude"
    transcript = cfg / "projects" / "-w" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("")
    app.hook(session_start(worktree, transcript))
    user = cfg / "settings.json"
    _set(user, disableAllHooks=True)  # (no ConfigChange: say it was written while the daemon was down)
    with transcript.open("a") as f:
        f.write(_turn_rows(time.time() + 0.05))
    app.call(app.core.tailer.poll(str(transcript)))
    [ev] = wait_until(lambda: kinds(app, "hooks_changed"), 30, what="hooks_changed from the transcript")
    d = ev["data"]
    assert (d["signal"], d["disabled"]["settings_file"], d["disabled"]["scope"]) == ("transcript", str(user), "user")
    assert d["reason"].startswith("the transcript shows a turn that ended with no hook from it")
    assert d["reason"].endswith(f"; disableAllHooks is true in {user} (the user's settings): Claude Code runs no hook, "
                                "hookd's included")
    assert d["fix"] == f"remove \"disableAllHooks\" from {user} (or set it to false there): Claude Code reloads " \
                       "the file and runs the hooks again from its next event"
    spawn(Home.resolve(app.home.root), "b1", worktree=worktree)
    assert app.request("POST", "/v1/builders/b1/spawned").json()["hooks_changed"]["disabled"]["settings_file"] == str(user)
    w = app.get("/v1/status")["builders"][0]["hooks_changed"]  # (status says what its own check finds now)
    assert (w["reason"], w["fix"]) == (d["reason"].split("; ", 1)[1], d["fix"])
    assert kinds(app, "hooks_restored") == []
    _set(user, disableAllHooks=None)
    assert app.get("/v1/status")["builders"][0]["hooks_changed"] is None
    [restored] = wait_until(lambda: kinds(app, "hooks_restored"), 30, what="hooks_restored by status")
    assert (restored["data"]["reason"], restored["data"]["via"]) == (
        f"disableAllHooks no longer turns the hooks off ({user})", "status")


def test_each_builders_newest_transcript_is_one_row_each(tmp_path: Path) -> None:
    """Where each agent's Claude Code keeps its settings is read from its newest session's
    transcript: one row per builder (GET /v1/status asks for every builder at each call),
    the newest by start, never an older session's path or a session with none."""
    import asyncio

    from hookd.store import Store

    async def run() -> tuple[dict[str, str], dict[str, str]]:
        st = await Store(tmp_path / "h.db").open()
        try:
            def tx(t: Any) -> None:
                for b, sid, at, path in [("b1", "s1", 1.0, "/a/projects/x/s1.jsonl"),
                                         ("b1", "s2", 3.0, "/b/projects/x/s2.jsonl"),
                                         ("b1", "s3", 2.0, "/c/projects/x/s3.jsonl"), ("b2", "s4", 1.0, None)]:
                    t._db.execute("INSERT INTO sessions (id, builder, harness, started_at, transcript_path)"
                                  " VALUES (?, ?, 'claude-code', ?, ?)", (sid, b, at, path))
            await st.write(tx)
            return await st.newest_transcripts(), await st.newest_transcripts("b1")
        finally:
            await st.close()

    assert asyncio.run(run()) == ({"b1": "/b/projects/x/s2.jsonl"}, {"b1": "/b/projects/x/s2.jsonl"})
