"""What the CLI process prints against a real daemon (one for the module): `hookd questions`
with each question's options, its wait and the `hookd answer` command that answers it (and
that command, run as printed, is accepted); `hookd answer` on a call with two questions saying
how to answer each at once; `hookd events` one line per event with its kind's key fields;
`hookd lanes` with human durations; colour on a terminal only, never in a pipe, never with
NO_COLOR. Expected text is exact (goldens, reviewed like code); only what the clock decides
(durations, times, seqs, a permission prompt's id) is replaced before comparing. The
formatters themselves, every event kind and interaction shape: tests/test_cli_render.py."""

from __future__ import annotations

import json
import os
import pty
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess, wait_until

from .conftest import TUI, hookd_cli

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("cli_output")]

SID1 = "346f6e3a-edc5-468f-856d-23ceddca3ede"  # b1's session (the recorded one)
SID2 = "5a1e0c2b-0000-4000-8000-00000000b002"  # b2's
ASK = "toolu_01ASK0000000000000000001"
MULTI = "toolu_01MULTI"
ASK2 = "toolu_01B2ASK"
SID3 = "5a1e0c2b-0000-4000-8000-00000000b003"  # b3's
ASK3, MULTI3 = "toolu_01B3ASK", "toolu_01B3MULTI"
SID4A, SID4B = "5a1e0c2b-0000-4000-8000-0000000b004a", "5a1e0c2b-0000-4000-8000-0000000b004b"  # b4's two
ASK4 = "toolu_01B4ASK"
TOPPINGS = {"question": "Which toppings?", "header": "Toppings", "multiSelect": True,
            "options": [{"label": "Cheese"}, {"label": "Ham, smoked"}, {"label": "Olives"}]}


def _payload(name: str, **changes: Any) -> dict[str, Any]:
    p = json.loads((TUI / name).read_bytes())
    p.update(changes)
    return p


class Rig:
    """The module's daemon with builders b1 (three interactions left pending: a question, a
    call asking two questions, a Bash permission prompt), b4 (a question pending in one session
    while another session works), b2 (a whole session: a message
    delivered and adopted, a question answered from the CLI, then at the desk, which wins,
    the session's end) and b3 (a question and a call asking two, for the printed commands to
    answer). Each test reads its own builder's lines, so none depends on another's order."""

    def __init__(self, home: Path):
        self.home = home
        self.http = httpx.Client(transport=httpx.HTTPTransport(uds=os.fspath(Home.resolve(home).socket_path)),
                                 base_url="http://hookd", timeout=30)

    def cli(self, *args: str, ok: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
        r = hookd_cli(self.home, *args, **kw)
        assert (r.returncode == 0) == ok, (args, r.returncode, r.stderr)
        assert "\x1b" not in r.stdout + r.stderr, "no colour in a pipe"
        return r

    def hook(self, builder: str, p: dict[str, Any]) -> str:
        r = self.http.post(f"/v1/hooks/claude-code/{builder}", content=json.dumps(p).encode())
        assert r.status_code == 200, r.text
        return r.text


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cli_output")
    d = DaemonProcess(root / "home").start()
    rig = Rig(root / "home")
    try:
        for b in ("b1", "b2", "b3", "b4"):
            rig.cli("spawn", b, "--settings-file", os.fspath(root / f"{b}.json"))
        # b1: left pending
        rig.hook("b1", _payload("001-SessionStart.json"))
        rig.hook("b1", _payload("007-PreToolUse.json"))
        multi = _payload("007-PreToolUse.json", tool_use_id=MULTI)
        multi["tool_input"]["questions"].append(TOPPINGS)
        rig.hook("b1", multi)
        perm = {k: v for k, v in _payload("004-PreToolUse.json").items() if k != "tool_use_id"}
        perm.update(hook_event_name="PermissionRequest", permission_mode="default",
                    tool_input={"command": "ls -la", "description": "List files"})
        rig.hook("b1", perm)
        # b3: the same two calls, answered with the commands `hookd questions` prints
        rig.hook("b3", _payload("007-PreToolUse.json", session_id=SID3, tool_use_id=ASK3))
        rig.hook("b3", {**multi, "session_id": SID3, "tool_use_id": MULTI3})
        # b4: a question left pending in its first session, then a second session at work
        rig.hook("b4", _payload("007-PreToolUse.json", session_id=SID4A, tool_use_id=ASK4))
        rig.hook("b4", _payload("001-SessionStart.json", session_id=SID4B))
        rig.hook("b4", _payload("004-PreToolUse.json", session_id=SID4B))
        # b2: a whole session
        rig.hook("b2", _payload("001-SessionStart.json", session_id=SID2))
        rig.hook("b2", _payload("002-UserPromptSubmit.json", session_id=SID2))
        rig.cli("send", "b2", "also update the changelog", "--author", "ana")
        rig.hook("b2", _payload("004-PreToolUse.json", session_id=SID2))
        rig.hook("b2", _payload("005-PostToolUse.json", session_id=SID2))  # delivers m-1
        rig.hook("b2", _payload("007-PreToolUse.json", session_id=SID2, tool_use_id=ASK2))
        rig.cli("answer", ASK2, "--option", "Red", "--actor", "ana")
        post = _payload("010-PostToolUse.json", session_id=SID2, tool_use_id=ASK2)  # the desk chose Blue
        rig.hook("b2", post)
        rig.hook("b2", _payload("012-Stop.json", session_id=SID2))
        rig.hook("b2", _payload("014-SessionEnd.json", session_id=SID2))
        yield rig
    finally:
        rig.http.close()
        d.stop()
        d.kill()


def _blocks(out: str, builder: str) -> list[str]:
    """`hookd questions`' blocks about ``builder``, each wait replaced by ``waiting <d>``."""
    blocks = [b for b in out.rstrip("\n").split("\n\n") if f" from {builder}, " in b.split("\n")[0]]
    return [re.sub(r"waiting \d+(s|m|h\d\dm|d\d\dh)$", "waiting <d>", b, flags=re.M) for b in blocks]


def test_questions_show_options_wait_and_the_command_that_answers(rig: Rig) -> None:
    out = rig.cli("questions").stdout
    [pr] = [i["id"] for i in json.loads(rig.cli("questions", "--json").stdout)
            if i["kind"] == "permission" and i["builder"] == "b1"]
    question, multi, permission = _blocks(out, "b1")
    assert question == f"""\
{ASK}  question from b1, waiting <d>
  Which color do you prefer?
    Red   The red option
    Blue  The blue option
  answer: hookd answer {ASK} --option Red"""
    assert multi == f"""\
{MULTI}  question from b1, waiting <d>
  1. Which color do you prefer?
       Red   The red option
       Blue  The blue option
  2. Which toppings? (multi-select: repeat --option)
       Cheese
       Ham, smoked
       Olives
  answer: hookd answer {MULTI} --question 1 --option Red --question 2 --option Cheese"""
    # the tool call as the daemon's tool_view shows it; posted on the plain hook route, no hook
    # holds this prompt: only the desk can answer it, and the block says so instead of commands
    assert permission.split("\n") == [
        f"{pr}  permission from b1, waiting <d>", "  Bash: List files", "    ls -la",
        "  answer at the desk: no hook is holding this prompt (an answer from here would be kept as a message)"]


def test_answer_on_a_call_with_two_questions_says_how_to_answer_each_at_once(rig: Rig) -> None:
    each = (f"{MULTI} asks 2 questions; answer each question: --question 1 --option LABEL --question 2 --option LABEL "
            "[--option LABEL]... (1: 'Which color do you prefer?', options: Red, Blue; 2: 'Which toppings?', "
            "multi-select, options: Cheese, 'Ham, smoked', Olives)")
    r = rig.cli("answer", MULTI, "--option", "Blue", ok=False)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"hookd: {each}\n")
    r = rig.cli("answer", MULTI, "--question", "1", "--option", "Blue", ok=False)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"hookd: this answer leaves out 'Which toppings?': {each}\n")


def test_the_printed_commands_are_accepted_as_printed(rig: Rig) -> None:
    out = rig.cli("questions").stdout
    commands = [line.split(": ", 1)[1] for b in _blocks(out, "b3") for line in b.split("\n")
                if line.startswith("  answer: ")]
    assert commands == [f"hookd answer {ASK3} --option Red",
                        f"hookd answer {MULTI3} --question 1 --option Red --question 2 --option Cheese"]
    for command in commands:
        argv = shlex.split(command)
        assert argv[:2] == ["hookd", "answer"]
        receipt = json.loads(rig.cli(*argv[1:], "--json").stdout)
        assert receipt["interaction"]["id"] == argv[2] and receipt["interaction"]["received_at"]


def _event_lines(rig: Rig, builder: str) -> list[str]:
    """`hookd events` lines of ``builder`` without their seq and time, lane changes left out
    (when the lane watch records one depends on timing)."""
    out = rig.cli("events").stdout
    head = re.compile(r"^ *\d+ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d (\S+) +(\S+) (.*)$")
    rows = [m.groups() for m in map(head.match, out.splitlines())]
    assert None not in rows, out
    return [f"{kind} {summary}" for kind, b, summary in rows if b == builder and kind != "lane_changed"]


def test_events_say_what_matters_in_one_line_each(rig: Rig) -> None:
    assert _event_lines(rig, "b2") == [
        "hook_received SessionStart",
        f"session_started {SID2} (startup)",
        "hook_received UserPromptSubmit",
        "inbox_queued m-1 by ana, 25 chars",
        "hook_received PreToolUse Bash toolu_01BASH000000000000000001",
        "hook_received PostToolUse Bash toolu_01BASH000000000000000001",
        "inbox_delivered m-1 at PostToolUse",
        f"hook_received PreToolUse AskUserQuestion {ASK2}",
        f"question_pending {ASK2}: Which color do you prefer? (seen through its hook)",
        f"interaction_answered {ASK2} from the CLI by ana: Red; goes to the agent through its hook",
        f"question_resolved {ASK2} answered from the CLI by ana: Red",
        f"hook_received PostToolUse AskUserQuestion {ASK2}",
        f"inbox_queued m-2 by ana, late answer to {ASK2}, 112 chars",
        f"answer_superseded {ASK2} answered at the desk: the desk answered first; kept as inbox message m-2",
        "inbox_delivered m-2 at PostToolUse",
        "hook_received Stop",
        "inbox_adopted m-1,m-2 via Stop",
        "hook_received SessionEnd",
        f"session_ended {SID2} (prompt_input_exit)",
    ]
    # (a lane is refreshed at most once a second while hooks come: its last change may follow them)
    def lane_lines() -> list[str]:
        return [line for line in rig.cli("events").stdout.splitlines() if " lane_changed " in line and " b2 " in line]

    lanes = wait_until(lambda: (x := lane_lines()) and " -> ended " in x[-1] and x, 30, what="b2's lane_changed to ended")
    assert lanes and all(re.search(r" lane_changed +b2 (-|[a-z_]+) -> [a-z_]+( \(.*\))?$", x) for x in lanes), lanes
    assert lanes[-1].endswith(" -> ended (session ended (prompt_input_exit))")


def test_lanes_say_how_long_in_human_units(rig: Rig) -> None:
    wait_until(lambda: {x["builder"]: x["state"] for x in json.loads(rig.cli("lanes", "--json").stdout)}["b2"]
               == "ended", 30, what="b2's lane ended")
    out = rig.cli("lanes").stdout
    header, rule, *rows = out.rstrip("\n").split("\n")
    assert header.split() == ["builder", "lane", "for", "pending", "queued", "session", "detail"]
    cells = {row.split()[0]: row.split(None, 6) for row in rows}
    assert re.fullmatch(r"\d+s|\d+m", cells["b2"][2]), cells  # (a seconds-old lane: not "3331 s")
    assert cells["b2"][:2] + cells["b2"][3:] == ["b2", "ended", "0", "0", SID2, "session ended (prompt_input_exit)"]


def test_lanes_name_the_session_the_lane_waits_on(rig: Rig) -> None:
    """b4's newest hook is its second session's; its lane waits on the first one's question."""
    lane = next(x for x in json.loads(rig.cli("lanes", "--json").stdout) if x["builder"] == "b4")
    assert (lane["state"], lane["session_id"], lane["pending"]) == ("waiting_question", SID4A, [ASK4])
    [row] = [r for r in rig.cli("lanes").stdout.splitlines() if r.startswith("b4 ")]
    assert row.split(None, 6)[:2] + row.split(None, 6)[3:] == [
        "b4", "waiting_question", "1", "0", SID4A, f"question {ASK4} is pending"]


def _on_a_terminal(rig: Rig, *args: str, env: dict[str, str]) -> str:
    """What the CLI writes to a terminal (a pty as its stdout)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.run([sys.executable, "-m", "hookd", "--home", os.fspath(rig.home), *args],
                           stdout=slave, stderr=subprocess.PIPE, env={**os.environ, **env}, timeout=60)
        os.close(slave)
        slave = -1
        assert p.returncode == 0, p.stderr
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child's side is closed and everything was read
                break
            if not chunk:
                break
            out += chunk
        return out.decode()
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)


def test_colour_on_a_terminal_only_and_never_with_no_color(rig: Rig) -> None:
    coloured = _on_a_terminal(rig, "lanes", env={"NO_COLOR": ""})
    # b1 waits on a human: yellow and bold; b2's lane, ended, is plain
    assert "\x1b[33m\x1b[1mwaiting_" in coloured and " ended " in coloured, coloured
    plain = _on_a_terminal(rig, "lanes", env={"NO_COLOR": "1"})
    assert "\x1b" not in plain and " waiting_" in plain and " ended " in plain
    # (in a pipe: no colour in any call of this module, Rig.cli)


def test_inbox_counts_deliveries_in_the_apis_word(rig: Rig) -> None:
    """The column is the API's field, `deliveries` (how often the message was delivered)."""
    assert rig.cli("inbox", "b2").stdout == """\
id    builder    state    via            deliveries  author    text
----  ---------  -------  -----------  ------------  --------  -----------------------------------------------------
m-1   b2         adopted  PostToolUse             1  ana       also update the changelog
m-2   b2         adopted  PostToolUse             1  ana       [Late answer to question toolu_01B2ASK (not used: ...
"""
    assert [m["deliveries"] for m in json.loads(rig.cli("inbox", "b2", "--json").stdout)] == [1, 1]


def test_status_names_the_hook_client_in_words(rig: Rig) -> None:
    """The column says what it is (`hook client`) and each value what a person knows it as."""
    words = {"c": "compiled", "bash": "bash script"}
    clients = {b["builder"]: b["client"] for b in json.loads(rig.cli("status", "--json").stdout)["builders"]}
    lines = rig.cli("status").stdout.splitlines()
    header = next(line for line in lines if line.startswith("builder "))
    assert re.split(r"\s{2,}", header.strip()) == ["builder", "harness", "hook client", "hooks", "pending", "last hook",
                                                    "note"]
    for b in ("b1", "b2", "b3", "b4"):
        row = next(line for line in lines if line.startswith(f"{b} "))
        assert re.split(r"\s{2,}", row)[:3] == [b, "claude-code", words[clients[b]]], row
