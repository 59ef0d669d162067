"""The operator's words and second thoughts at the CLI (issue 20 items 4, 6, 7), against one real
daemon for the module: `hookd questions` says "denied" "from the CLI by <you>" as the page does,
`hookd inbox cancel` takes a message back, `hookd lanes` leaves an unspawned builder out unless
`--all`, and `hookd send` to it is refused unless `--force`. Outputs are goldens: exact text
where it is deterministic. What the API does is tests/test_operator_inproc.py."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from hookd.daemonproc import DaemonProcess
from hookd.models import os_user

from .conftest import LOCAL_TIME, events, hookd_cli, questions, wait_until
from .test_answers import Rig, bash_perm, finish
from .test_answers import payload as tui

# one daemon for the module; its tests run in order on one worker (each builds on the last)
pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("operator_cli")]

ME = os_user()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("operator") / "home"


@pytest.fixture(scope="module")
def daemon(home: Path) -> Iterator[DaemonProcess]:
    d = DaemonProcess(home).start()
    yield d
    d.stop()
    d.kill()


@pytest.fixture(scope="module")
def rig(home: Path, tmp_path_factory: pytest.TempPathFactory, daemon: DaemonProcess) -> Rig:
    worktree = tmp_path_factory.mktemp("operator-wt")
    r = Rig(home, worktree, hold=30)
    r.hook(tui("001-SessionStart.json"))
    return r


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    r = hookd_cli(home, *args)
    return r.returncode, r.stdout, r.stderr


def when(text: str) -> str:
    """``text`` with its local times (:data:`LOCAL_TIME`) as ``T``."""
    return re.sub(LOCAL_TIME, "T", text)


def test_a_deny_from_the_cli_reads_denied_from_the_cli_by_you(rig: Rig, home: Path) -> None:
    held = rig.start_hook(bash_perm("rm -f README.md"))
    pid = wait_until(lambda: [q["id"] for q in questions(home, "pending") if q["kind"] == "permission"], 60,
                     what="a pending permission prompt")[0]
    rig.held(pid)
    code, out, err = cli(home, "answer", pid, "--option", "deny", "--text", "keep the README")
    assert (code, out, err) == (0, f"answered {pid} (permission, b1): deny: keep the README;"
                                   " goes to the agent through its hook\n", "")
    finish(held)
    [i] = [q for q in questions(home, "all") if q["id"] == pid]
    assert (i["state"], i["outcome"], i["actor"], i["by"]) == ("answered", "denied", ME, f"from the CLI by {ME}")
    code, out, err = cli(home, "questions", "--state", "all")
    block = out.split(pid, 1)[1].split("\n\n")[0].splitlines()  # its block (hookd.cli_render._interaction)
    assert re.fullmatch(rf"  permission from b1, denied from the CLI by {ME}, \S+ ago", block[0]), block
    assert block[-1] == "  -> deny: keep the README", block
    # a second answer: refused (exit 2), in the same words, with nothing kept (a bare decision)
    code, out, err = cli(home, "answer", pid, "--option", "allow")
    assert code == 2 and out == ""
    assert when(err) == (f"hookd: {pid} is already denied from the CLI by {ME} at T; nothing was kept (a bare"
                         " decision or a form's content means nothing to the agent later)\n"), err


def test_a_late_answer_kept_as_a_message_is_taken_back(rig: Rig, home: Path) -> None:
    rig.hook(tui("007-PreToolUse.json"))
    desk = tui("010-PostToolUse.json")  # the desk chose Blue
    rig.hook(desk)
    code, out, err = cli(home, "answer", "toolu_01ASK0000000000000000001", "--option", "Red", "--actor", "ana")
    assert code == 2 and out == ""
    assert re.fullmatch(
        r"hookd: the desk answered first: toolu_01ASK0000000000000000001 is already answered at the desk at "
        rf"{LOCAL_TIME}; your answer was kept as inbox message m-1 for b1; take it back: hookd inbox cancel m-1\n", err), err
    code, out, err = cli(home, "inbox", "cancel", "m-1")
    assert (code, out, err) == (0, "cancelled m-1 for b1: it will not be delivered\n", "")
    assert cli(home, "inbox", "cancel", "m-1") == (0, "m-1 for b1 was already cancelled\n", "")
    code, out, err = cli(home, "inbox", "cancel", "m-1", "--json")
    assert json.loads(out)["cancelled"] is False and json.loads(out)["message"]["state"] == "cancelled"
    assert rig.hook(tui("012-Stop.json")) == ""  # the Stop would have carried it
    code, out, err = cli(home, "inbox")  # the short form of `hookd inbox list`
    assert out.splitlines()[2].split()[:6] == ["m-1", "b1", "cancelled", "-", "0", "ana"]
    ev = _cancelled(home)
    assert ev["data"] == {"id": "m-1", "actor": ME, "surface": "cli"}


def _cancelled(home: Path) -> dict[str, Any]:
    evs = [json.loads(line) for line in hookd_cli(home, "events", "--json").stdout.splitlines()]
    [ev] = [e for e in evs if e["kind"] == "inbox_cancelled"]
    return ev


def test_a_delivered_message_cannot_be_taken_back(rig: Rig, home: Path) -> None:
    code, out, err = cli(home, "send", "b1", "also update the changelog", "--actor", "ana")
    # (its agent is idle at its prompt after the Stop above, spawned with no idle-wake hook)
    assert (code, err) == (0, "") and out.startswith(
        "queued m-2 for b1\n  b1's agent is idle at its prompt: the message is delivered when its next turn begins"
        " (someone types there); to have hookd wake it: hookd --home ")
    assert out.endswith(" --wake-wait 1800, then restart its agent: hookd stop b1 && hookd continue b1\n"), out
    assert "also update the changelog" in rig.hook(tui("002-UserPromptSubmit.json"))
    code, out, err = cli(home, "inbox", "cancel", "m-2")
    assert (code, out) == (2, "")
    assert re.fullmatch(rf"hookd: m-2 was already delivered by UserPromptSubmit at {LOCAL_TIME}, so it cannot be taken back"
                        r" \(the agent may have read it\); send b1 a correction instead\n", err), err
    assert cli(home, "inbox", "cancel", "m-99") == (1, "", "hookd: no inbox message 'm-99'\n")


def test_an_unspawned_builder_is_left_out_of_lanes_and_a_send_to_it_refused(rig: Rig, home: Path) -> None:
    rig.hook(tui("002-UserPromptSubmit.json"))
    # the lane as last recorded is what unspawn keeps: wait for its change to working (a lane is
    # refreshed at most once a second while hooks come)
    wait_until(lambda: [e["data"]["to"] for e in events(home) if e["kind"] == "lane_changed" and e["builder"] == "b1"][-1:] == ["working"],
               30, what="b1's lane recorded as working")
    settings = rig.worktree / ".claude" / "settings.local.json"
    entries = sum(len(groups) for groups in json.loads(settings.read_text())["hooks"].values())
    code, out, err = cli(home, "unspawn", "b1")
    assert (code, out, err) == (0, f"unspawned b1: removed {entries} hook entries from {settings};"
                                   f" hookd's MCP server from {rig.worktree / '.mcp.json'}\n", "")
    evs = [json.loads(line) for line in hookd_cli(home, "events", "--json").stdout.splitlines()]
    assert [e["builder"] for e in evs if e["kind"] == "builder_unspawned"] == ["b1"]  # the daemon was told
    code, out, err = cli(home, "lanes")
    assert (code, out, err) == (0, "no builders\n", "(1 unspawned builder not shown; --all shows them)\n")
    code, out, err = cli(home, "lanes", "--all")
    lines = out.splitlines()
    assert lines[0].split() == ["builder", "lane", "for", "pending", "queued", "session", "detail"]
    assert lines[2].split()[:2] == ["b1", "unspawned"]
    assert when(lines[2]).endswith("unspawned at T (was working: last hook UserPromptSubmit)")
    code, out, err = cli(home, "status")
    [row] = [line for line in out.splitlines() if line.startswith("b1 ")]
    assert when(row).endswith("unspawned at T")
    code, out, err = cli(home, "send", "b1", "are you there?")
    assert (code, out) == (2, "")
    assert when(err) == ("hookd: b1 was unspawned at T: no session of its agent still runs hookd's hooks, so the"
                         " message would wait forever; spawn it again, or send with --force to queue it anyway\n")
    code, out, err = cli(home, "send", "b1", "are you there?", "--force")
    # (the module's daemon is shared: the id counts the messages of the tests before this one)
    assert (code, err) == (0, "") and re.fullmatch(r"queued m-\d+ for b1\n", out), out
    code, out, err = cli(home, "spawn", "b1", "--worktree", str(rig.worktree), "--hold", "30")
    assert code == 0, err
    code, out, err = cli(home, "lanes")
    assert err == "" and out.splitlines()[2].split()[:2] == ["b1", "working"]


def test_unspawn_of_a_builder_whose_agent_runs_says_its_session_keeps_the_hooks(
        home: Path, daemon: DaemonProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`hookd unspawn` while the builder's agent is live (a session whose agent process runs):
    done, and a note on stderr that the session keeps its hooks until it ends."""
    worktree = tmp_path / "w5"
    worktree.mkdir()
    b5 = Rig(home, worktree, name="b5")
    agent = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        monkeypatch.setenv("CLAUDE_PID", str(agent.pid))  # what Claude Code gives its hooks
        start = tui("001-SessionStart.json")
        b5.hook({**start, "session_id": "5e55a0b5-0000-4000-8000-0000000000b5"})
        code, out, err = cli(home, "unspawn", "b5")
        assert code == 0 and out.startswith("unspawned b5: removed "), (out, err)
        assert err == ("hookd: note: b5's agent is still running (session 5e55a0b5-0000-4000-8000-0000000000b5): it "
                       "keeps the hooks it started with until it ends, so they still reach hookd; `hookd stop b5` "
                       "ends it\n")
    finally:
        agent.kill()
        agent.wait()
    b6 = Rig(home, worktree, name="b6")  # (its agent not running: no note)
    code, out, err = cli(home, "unspawn", b6.name)
    assert (code, err) == (0, ""), err


def test_lanes_of_some_builders_only(rig: Rig, home: Path, tmp_path: Path) -> None:
    """`hookd lanes -b B` (`GET /v1/lanes?builder=B`, repeatable): those builders' lanes only;
    a builder hookd does not know has none (the CLI says so, exit 1); a name no builder can have
    is refused (exit 2)."""
    from hookd.config import Home
    from hookd.spawn import spawn

    spawn(Home.resolve(home), "b2", worktree=tmp_path)
    every = [lane["builder"] for lane in json.loads(cli(home, "lanes", "--json")[1])]
    assert {"b1", "b2"} <= set(every)
    code, out, _ = cli(home, "lanes", "-b", "b2", "--json")
    assert code == 0 and [lane["builder"] for lane in json.loads(out)] == ["b2"]
    code, out, _ = cli(home, "lanes", "-b", "b2", "-b", "b1", "--json")
    assert code == 0 and sorted(lane["builder"] for lane in json.loads(out)) == ["b1", "b2"]
    code, out, err = cli(home, "lanes", "-b", "b2", "--builder", "nosuch")  # as `hookd send nosuch` says it
    assert (code, out, err) == (1, "", "hookd: builder 'nosuch' is not known: spawn it first (or check the name)\n")
    code, _, err = cli(home, "lanes", "-b", "not a builder!")
    assert code == 2 and "builder" in err


def test_send_refuses_a_session_or_subagent_hookd_never_saw(rig: Rig, home: Path) -> None:
    """`hookd send --agent` / `--session` with an id hookd never saw for the builder: exit 1,
    the reason on stderr (with --json: the API's one error shape on stdout); nothing queued."""
    before = json.loads(cli(home, "inbox", "b1", "--json")[1])
    code, out, err = cli(home, "send", "b1", "X", "--agent", "a0000bogus")
    assert (code, out) == (1, "") and err.startswith(
        "hookd: b1 has no subagent 'a0000bogus' that hookd knows (no hook of b1's came from it), so the message"
        " would never be delivered; "), err
    code, out, err = cli(home, "send", "b1", "Y", "--session", "nosuchsession", "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "not_found"
    assert json.loads(out)["error"]["message"].startswith("b1 has no session 'nosuchsession' that hookd knows")
    assert json.loads(cli(home, "inbox", "b1", "--json")[1]) == before
