"""Shell completion (click's own, hookd.cli_complete's callbacks), driven the way the shell
drives it: a `python -m hookd` process with ``_HOOKD_COMPLETE=bash_complete`` (or
``zsh_complete``), ``COMP_WORDS`` and ``COMP_CWORD``, reading the candidates it prints.
Against a real home with two spawned builders and a real daemon (one for the module) holding
a pending question, a pending permission prompt, an answered question, a queued message and
a cancelled one: builder ids come from the manifests, interaction ids (pending ones only)
and message ids (queued ones only) from the daemon; with the daemon down the daemon's
candidates are none, silently. Candidates are exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hookd.client import Client
from hookd.config import Home
from hookd.daemonproc import DaemonProcess

from .conftest import TUI, hookd_cli, hookd_run

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("cli_complete")]

ASK = "toolu_01ASK0000000000000000001"  # b1's question, left pending
DONE = "toolu_01DONE"  # b1's question answered from the CLI


def complete(home: Path, line: str, shell: str = "bash") -> list[str]:
    """What the shell gets when the user presses Tab at the end of ``line`` (a trailing space:
    a new, empty word): the candidates (bash: values; zsh: value and help pairs, ``_`` for
    none). Asserts the process exits 0 and prints nothing on stderr."""
    words = line.split(" ")
    env = {**os.environ, "HOOKD_HOME": os.fspath(home), "_HOOKD_COMPLETE": f"{shell}_complete",
           "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}
    r = subprocess.run([sys.executable, "-P", "-m", "hookd"], env=env, capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr) == (0, ""), (line, r.returncode, r.stderr)
    lines = [row for row in r.stdout.splitlines() if row]  # none: click prints an empty line
    if shell == "zsh":
        return [f"{v} {h}" for v, h in zip(lines[1::3], lines[2::3], strict=True)]
    return [row.partition(",")[2] for row in lines]


def _hook(client: Client, builder: str, name: str, **changes: Any) -> None:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    client.post(f"/v1/hooks/claude-code/{builder}", json.dumps(p).encode(), {"content-type": "application/json"})


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory):
    """The module's home: builders b1 and b2 spawned; b1 with a pending question (ASK), an
    answered one (DONE) and a queued message (m-1); b2 with a pending permission prompt and a
    cancelled message (m-2). Yields (home, the permission prompt's id)."""
    root = tmp_path_factory.mktemp("cli_complete")
    home = root / "home"
    d = DaemonProcess(home).start()
    try:
        for b in ("b1", "b2"):
            r = hookd_run(home, "spawn", b, "--settings-file", os.fspath(root / f"{b}.json"))
            assert r.returncode == 0, r.stderr
        c = d.client()
        _hook(c, "b1", "001-SessionStart.json")
        _hook(c, "b1", "007-PreToolUse.json", tool_use_id=DONE)
        c.post_json(f"/v1/interactions/{DONE}/answer", {"options": ["Red"], "surface": "cli"})
        _hook(c, "b1", "007-PreToolUse.json", tool_use_id=ASK)
        _hook(c, "b2", "001-SessionStart.json", session_id="5a1e0c2b-0000-4000-8000-00000000b002")
        perm = json.loads((TUI / "004-PreToolUse.json").read_bytes())
        del perm["tool_use_id"]
        perm.update(hook_event_name="PermissionRequest", permission_mode="default",
                    session_id="5a1e0c2b-0000-4000-8000-00000000b002")
        c.post("/v1/hooks/claude-code/b2", json.dumps(perm).encode(), {"content-type": "application/json"})
        assert c.post_json("/v1/builders/b1/messages", {"text": "also update the changelog"})["message"]["id"] == "m-1"
        assert c.post_json("/v1/builders/b2/messages", {"text": "never mind"})["message"]["id"] == "m-2"
        c.post_json("/v1/messages/m-2/cancel", {})
        pending = c.get("/v1/questions", state="pending")
        [pr] = [i["id"] for i in pending if i["kind"] == "permission"]
        assert [i["id"] for i in pending] == [ASK, pr]
        yield home, pr
    finally:
        d.stop()
        d.kill()


@pytest.mark.parametrize("line", [
    "hookd send ", "hookd spawn ", "hookd unspawn ", "hookd ask ", "hookd preanswer ", "hookd inbox list ",
    "hookd tail --builder ", "hookd mcp --builder ", "hookd send --actor ana ",
])
def test_builder_ids_complete_from_the_manifests(rig: tuple[Path, str], line: str) -> None:
    home, _ = rig
    assert complete(home, line) == ["b1", "b2"]
    assert complete(home, line + "b2") == ["b2"]
    assert complete(home, line + "c") == []


def test_builder_ids_complete_without_the_daemon(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for b in ("b2", "b1", "b3"):
        assert hookd_run(home, "spawn", b, "--settings-file", os.fspath(tmp_path / f"{b}.json")).returncode == 0
    assert hookd_cli(home, "unspawn", "b3").returncode == 0
    assert complete(home, "hookd send ") == ["b1", "b2"]  # sorted; an unspawned builder has no manifest
    assert complete(home, "hookd answer ") == []  # the daemon is down: nothing, and no error
    assert complete(home, "hookd inbox cancel ") == []
    assert complete(tmp_path / "nowhere", "hookd send ") == []  # no home at all: nothing either


def test_spawn_completes_and_lists_every_harness_an_adapter_installs(tmp_path: Path) -> None:
    from hookd.harness.registry import ADAPTERS

    names = [n for a in dict.fromkeys(ADAPTERS.values()) for n in a.hook_installs]
    assert names == ["claude-code", "claw", "claw-code-go", "codex"]  # claw-http installs none: it calls hookd
    home = tmp_path / "home"
    assert complete(home, "hookd spawn b1 --harness ") == names
    assert complete(home, "hookd spawn b1 --harness cl") == ["claude-code", "claw", "claw-code-go"]
    assert complete(home, "hookd spawn b1 --harness co", shell="zsh") == [
        "codex .codex/hooks.json: Codex runs them once trusted, see --trust"]
    helped = "".join(hookd_run(home, "spawn", "--help").stdout.split())  # (wrapped anywhere, even in a name)
    for n in names:
        assert f"{n}(" in helped, n


def test_inbox_completes_its_subcommands_and_builder_ids(rig: tuple[Path, str]) -> None:
    home, _ = rig
    assert complete(home, "hookd inbox ") == ["cancel", "list", "b1", "b2"]
    assert complete(home, "hookd inbox b") == ["b1", "b2"]
    assert complete(home, "hookd inbox b1 --l") == ["--limit"]


def test_answer_completes_the_pending_interactions(rig: tuple[Path, str]) -> None:
    home, pr = rig
    assert complete(home, "hookd answer ") == [ASK, pr]
    assert complete(home, "hookd answer pr_") == [pr]
    assert complete(home, "hookd answer ", shell="zsh") == [
        f"{ASK} b1: Which color do you prefer?", f"{pr} b2: Bash: Print hi",
    ]


def test_inbox_cancel_completes_the_queued_messages(rig: tuple[Path, str]) -> None:
    home, _ = rig
    assert complete(home, "hookd inbox cancel ") == ["m-1"]
    assert complete(home, "hookd inbox cancel ", shell="zsh") == ["m-1 b1: also update the changelog"]


def test_the_command_line_home_is_the_one_completed(rig: tuple[Path, str], tmp_path: Path) -> None:
    home, _ = rig
    other = tmp_path / "other"
    Home.resolve(other).builders_dir.mkdir(parents=True)
    (Home.resolve(other).builders_dir / "c1.json").write_text("{}")
    assert complete(home, f"hookd --home {other} send ") == ["c1"]
    assert complete(home, f"hookd --home {other} answer ") == []
