"""`hookd spawn --harness codex`: hookd's entries in ``<worktree>/.codex/hooks.json`` (merged,
tagged, idempotent, undone by unspawn), trust made explicit (``--trust`` writes the project's
and each handler's trust into ``$CODEX_HOME/config.toml``, comments and all kept; without it
the steps are printed), and `hookd status` saying whether Codex will run them, from the files.
That Codex itself agrees is tests/e2e/test_codex_e2e.py's."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from hookd.daemonproc import DaemonProcess
from hookd.harness import codex_hooks
from hookd.spawn.client import tag

from tests.conftest import hookd_run

pytestmark = pytest.mark.daemon

USER_CONFIG = '# my Codex settings\nmodel = "gpt-x"  # the one I use\n\n[projects."/elsewhere"]\ntrust_level = "trusted"\n'


@pytest.fixture
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "codex-home"
    d.mkdir()
    (d / "config.toml").write_text(USER_CONFIG)
    monkeypatch.setenv("CODEX_HOME", str(d))
    return d


def spawn_codex(home: Path, worktree: Path, *args: str, builder: str = "b1") -> dict:
    r = hookd_run(home, "spawn", builder, "--worktree", str(worktree), "--harness", "codex", "--json", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def hooks_of(worktree: Path) -> dict:
    return json.loads((worktree / ".codex" / "hooks.json").read_text())


def test_the_hook_file_holds_every_event_but_the_model_requests(home: Path, worktree: Path, codex_home: Path) -> None:
    m = spawn_codex(home, worktree)
    hooks = hooks_of(worktree)["hooks"]
    assert m["settings_file"] == str(worktree / ".codex" / "hooks.json")
    assert list(hooks) == list(codex_hooks.REGISTERED_EVENTS) == m["events"]
    timeouts = {e: g[0]["hooks"][0]["timeout"] for e, g in hooks.items()}
    assert timeouts == {**{e: 10 for e in hooks}, "SessionEnd": 3, "Interrupt": 3, "PermissionRequest": 960}
    assert all("matcher" not in g[0] for g in hooks.values())  # every tool
    assert all(g[0]["hooks"][0]["command"].endswith(tag("b1")) for g in hooks.values())
    # the permission prompt's hook holds for a remote answer (its client waits --hold: 900 s)
    assert " 900000 hold " in hooks["PermissionRequest"][0]["hooks"][0]["command"]
    assert " hold " not in hooks["Stop"][0]["hooks"][0]["command"]
    assert (codex_home / "config.toml").read_text() == USER_CONFIG  # nothing trusted without --trust
    assert m["trust"]["written"] is False and m["trust"]["config_file"] == str(codex_home / "config.toml")


def test_spawn_merges_with_the_users_hooks_is_idempotent_and_unspawn_restores_the_file(
        home: Path, worktree: Path, codex_home: Path) -> None:
    mine = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}, "x": 1}\n'
    (worktree / ".codex").mkdir()
    (worktree / ".codex" / "hooks.json").write_text(mine)
    spawn_codex(home, worktree)
    once = (worktree / ".codex" / "hooks.json").read_bytes()
    spawn_codex(home, worktree)
    assert (worktree / ".codex" / "hooks.json").read_bytes() == once
    stop = hooks_of(worktree)["hooks"]["Stop"]
    assert stop[0] == {"hooks": [{"type": "command", "command": "say done"}]} and len(stop) == 2
    assert hookd_run(home, "unspawn", "b1").returncode == 0
    assert (worktree / ".codex" / "hooks.json").read_text() == mine


def test_without_trust_spawn_prints_the_exact_steps(home: Path, worktree: Path, codex_home: Path) -> None:
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--harness", "codex")
    assert r.returncode == 0, r.stderr
    file = worktree / ".codex" / "hooks.json"
    lines = [line for line in r.stderr.splitlines() if not line.startswith("hookd: note: ")]  # (the held prompt's)
    assert lines[:4] == [
        'hookd: Codex runs these hooks only once they are trusted (its TUI asks "Hooks need review" at start; '
        "codex exec skips them without a word). Either run",
        f"  hookd --home {home} spawn b1 --worktree {worktree} --harness codex --trust",
        f"or add to {codex_home / 'config.toml'}:",
        f'  [projects."{worktree}"]',
    ]
    assert lines[-1] == "then `hookd status` shows whether they will run."
    # the TOML printed is exactly what --trust writes: pasted into the config, Codex trusts them
    pasted = "\n".join(line[2:] for line in lines[3:-1])
    config = tomllib.loads(USER_CONFIG + "\n" + pasted)
    state = config["hooks"]["state"]
    assert len(state) == 12 and config["projects"][str(worktree)] == {"trust_level": "trusted"}
    hooks = hooks_of(worktree)["hooks"]
    assert state[f"{file}:stop:0:0"]["trusted_hash"] == codex_hooks.trust_hash("Stop", hooks["Stop"][0],
                                                                                hooks["Stop"][0]["hooks"][0])


def test_trust_writes_the_config_keeping_its_formatting_and_unspawn_removes_exactly_it(
        home: Path, worktree: Path, codex_home: Path) -> None:
    config = codex_home / "config.toml"
    m = spawn_codex(home, worktree, "--trust")
    text = config.read_text()
    assert text.startswith(USER_CONFIG)  # the user's lines, comments and all, untouched
    parsed = tomllib.loads(text)
    file = str(worktree / ".codex" / "hooks.json")
    hooks = hooks_of(worktree)["hooks"]
    want = {f"{file}:{codex_hooks.event_key(e)}:0:0": {"trusted_hash": codex_hooks.trust_hash(e, g[0], g[0]["hooks"][0])}
            for e, g in hooks.items()}
    assert parsed["hooks"]["state"] == want
    assert parsed["projects"] == {"/elsewhere": {"trust_level": "trusted"}, str(worktree): {"trust_level": "trusted"}}
    assert m["trust"]["written"] is True and len(m["trust"]["added"]) == 13
    # a re-spawn keeps the trust (written again), and unspawn takes back exactly what was added
    spawn_codex(home, worktree)
    assert tomllib.loads(config.read_text())["hooks"]["state"] == want
    r = hookd_run(home, "unspawn", "b1")
    assert r.returncode == 0 and f"removed 13 trust value(s) from {config}" in r.stdout
    assert config.read_text() == USER_CONFIG


def test_unspawn_leaves_trust_the_user_had_or_changed(home: Path, worktree: Path, codex_home: Path) -> None:
    config = codex_home / "config.toml"
    config.write_text(USER_CONFIG + f'\n[projects."{worktree}"]\ntrust_level = "trusted"\n')
    m = spawn_codex(home, worktree, "--trust")
    assert len(m["trust"]["added"]) == 12  # the project was trusted already: not hookd's to remove
    stop_key = f'{worktree / ".codex" / "hooks.json"}:stop:0:0'
    config.write_text(config.read_text().replace(m["trust"]["added"][-3]["value"], "sha256:mine"))
    hookd_run(home, "unspawn", "b1")
    left = tomllib.loads(config.read_text())
    assert left["projects"][str(worktree)] == {"trust_level": "trusted"}
    assert list(left["hooks"]["state"].values()) == [{"trusted_hash": "sha256:mine"}], stop_key


def test_trust_is_refused_for_other_harnesses_and_for_a_config_that_is_not_toml(
        home: Path, worktree: Path, codex_home: Path) -> None:
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--trust")
    assert r.returncode != 0 and "--trust is for codex" in r.stderr
    (codex_home / "config.toml").write_text("model = [unclosed\n")
    r = hookd_run(home, "spawn", "b2", "--worktree", str(worktree), "--harness", "codex", "--trust")
    assert r.returncode != 0 and "is not TOML" in r.stderr
    assert (codex_home / "config.toml").read_text() == "model = [unclosed\n"
    assert list(worktree.iterdir()) == [] and not (home / "builders" / "b2.json").exists()  # nothing written
    # refused only once the hook file is written (a key that is no table): said so
    (codex_home / "config.toml").write_text("[hooks]\nstate = 3\n")
    r = hookd_run(home, "spawn", "b2", "--worktree", str(worktree), "--harness", "codex", "--trust")
    hooks = worktree / ".codex" / "hooks.json"
    assert (r.returncode, r.stderr) == (2, f"hookd: 'hooks.state' is not a table in the config; left it untouched; the "
                                           f"hooks are written to {hooks}, untrusted (hookd unspawn b2 removes them)\n")
    assert hooks.exists() and (codex_home / "config.toml").read_text() == "[hooks]\nstate = 3\n"


def test_status_says_whether_codex_will_run_the_hooks(home: Path, worktree: Path, codex_home: Path,
                                                       tmp_path: Path) -> None:
    """From the files only (the hook file and the user's config.toml): project not trusted,
    untrusted, modified, trusted; text and --json."""
    config = codex_home / "config.toml"
    spawn_codex(home, worktree)
    m_trusted = tmp_path / "w2"
    m_trusted.mkdir()
    spawn_codex(home, m_trusted, "--trust", builder="b2")

    def states() -> dict[str, str]:
        s = json.loads(hookd_run(home, "status", "--json").stdout)
        return {b["builder"]: b["hooks_trust"]["state"] for b in s["builders"]}

    with DaemonProcess(home):
        assert states() == {"b1": "project_not_trusted", "b2": "trusted"}
        config.write_text(config.read_text() + f'\n[projects."{worktree}"]\ntrust_level = "trusted"\n')
        assert states()["b1"] == "untrusted"
        text = config.read_text()
        file2 = m_trusted / ".codex" / "hooks.json"
        key = f"{file2}:stop:0:0"
        good = tomllib.loads(text)["hooks"]["state"][key]["trusted_hash"]
        config.write_text(text.replace(good, "sha256:" + "0" * 64))
        assert states()["b2"] == "modified"
        lines = hookd_run(home, "status").stdout.splitlines()
    assert "b1: hooks untrusted: 12 of hookd's 12 hooks are not trusted: Codex skips them (its TUI asks to review them first)" in lines
    assert f"b1: to trust them: hookd --home {home} spawn b1 --worktree {worktree} --harness codex --trust" in lines
    assert "b2: hooks modified: 1 of hookd's 12 hooks changed since they were trusted: Codex skips them" in lines
    row = next(line for line in lines if line.startswith("b1 "))
    assert row.rstrip().endswith("hooks untrusted (below)"), row


def test_a_spawn_killed_before_its_trust_write_leaves_what_unspawn_undoes(
        home: Path, worktree: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest records the trust values first; killed before the config is written, the
    config is as it was and unspawn takes nothing from it (each value is absent)."""
    from hookd.config import Home
    from hookd.spawn import read_manifest, spawn, trust, unspawn

    def killed(*args: object, **kw: object) -> None:
        raise SystemExit("killed")

    real = trust._user_write
    monkeypatch.setattr(trust, "_user_write", killed)
    with pytest.raises(SystemExit):
        spawn(Home.resolve(home), "b1", worktree=worktree, harness="codex", trust=True)
    monkeypatch.setattr(trust, "_user_write", real)
    m = read_manifest(Home.resolve(home), "b1")
    assert m is not None and len(m["trust"]["added"]) == 13
    assert (codex_home / "config.toml").read_text() == USER_CONFIG
    r = unspawn(Home.resolve(home), "b1")
    assert r["trust_removed"] == 0 and (codex_home / "config.toml").read_text() == USER_CONFIG
    assert not (worktree / ".codex").exists()


def test_spawn_says_codex_hides_its_prompt_while_hookd_holds_it(home: Path, worktree: Path, codex_home: Path,
                                                                 tmp_path: Path) -> None:
    """One line on stderr for a Codex builder whose permission prompt hookd holds (how long,
    `hookd dismiss`, and the spawn command with --hold 0 that works as printed); none with
    --hold 0, none for Claude Code (its prompt stays usable at the desk)."""
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--harness", "codex", "--trust")
    assert r.returncode == 0, r.stderr
    again = f"hookd --home {home} spawn b1 --worktree {worktree} --harness codex --hold 0"
    assert r.stderr == ('hookd: note: while hookd holds a permission prompt, Codex shows only "Running hook" at its desk, '
                        "not the prompt (up to 900 s): answer it with hookd answer, or hookd dismiss ID to show it at "
                        f"the desk; {again} leaves every prompt to the desk\n")
    assert json.loads(hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--harness", "codex",
                                "--json").stdout)["held_prompt"].startswith("while hookd holds")
    r = hookd_run(home, *again.split()[3:])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    claude = tmp_path / "cc"
    claude.mkdir()
    r = hookd_run(home, "spawn", "b2", "--worktree", str(claude))
    assert r.returncode == 0 and "Running hook" not in r.stderr, r.stderr


def test_run_s_advice_for_untrusted_hooks_works_as_printed(home: Path, worktree: Path, codex_home: Path) -> None:
    """What `hookd run` warns of untrusted Codex hooks (:func:`hookd.spawn.check.untrusted_advice`)
    names a spawn command that works when run literally (it trusts them); none once trusted."""
    from hookd.config import Home
    from hookd.spawn import read_manifest
    from hookd.spawn.check import untrusted_advice

    spawn_codex(home, worktree)
    advice = untrusted_advice(Home.resolve(home), read_manifest(Home.resolve(home), "b1"))
    assert advice is not None
    head, command = advice.split(": run with --trust, or ")
    assert head == ("Codex runs hookd's hooks only once they are trusted (its TUI asks \"Hooks need review\" at start; "
                    "codex exec skips them without a word)")
    assert command == f"hookd --home {home} spawn b1 --worktree {worktree} --harness codex --trust"
    r = hookd_run(home, *command.split()[3:])
    assert r.returncode == 0, r.stderr
    assert untrusted_advice(Home.resolve(home), read_manifest(Home.resolve(home), "b1")) is None
