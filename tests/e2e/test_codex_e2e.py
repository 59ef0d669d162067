"""hookd with the real Codex CLI 0.171.0, offline (the fake Responses API, a private
``CODEX_HOME``): a builder spawned with ``hookd spawn --harness codex``, its hooks run by
``codex exec`` or ``codex app-server`` (driven through ``codex_drivers`` where a permission
prompt is needed: ``exec`` never asks), and what reached the model read from the fake's log.

- trust: an untrusted spawn is ``untrusted`` in `hookd status` and Codex runs none of its hooks
  (without a word); with ``--trust`` status says ``trusted``, Codex's own ``hooks/list``
  agrees, and the hooks reach hookd;
- a permission prompt held by hookd, answered remotely: allow (the command runs, the
  app-server client is never asked), deny with a message (the model reads it);
- a ``request_user_input`` question (Plan mode) pending in `hookd questions`, a remote answer
  kept as an inbox message (only the desk answers it), the desk's answer recorded;
- a message sent during a tool call reaches the next model request, exactly once;
- a message sent while the model writes its last reply goes on the turn as a Stop block.
- a whole run with the daemon down: spooled, ingested once;
- a session whose hooks never ran (untrusted), found from its rollout (``hooks_unarmed``);
- `hookd run --harness codex`: its TUI in hookd's tmux (``--no-daemon``) stopped by `hookd stop`;
  `--headless` and `hookd continue` (``codex exec``, ``codex exec resume``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hookd.daemonproc import DaemonProcess

from ..conftest import hookd_cli
from .codex_drivers import AppServer, codex_env, hooks_list, prepare_home
from .drivers import wait_until
from .fake_responses import FakeResponsesAPI, LoggedRequest, call
from .test_codex_selfcheck import QUESTION, escalated

pytestmark = pytest.mark.e2e

B = "cx1"


@dataclass
class Rig:
    """A hookd home with its daemon running, the fake model, Codex's private home and the
    project (the builder's worktree)."""

    home: Path
    daemon: DaemonProcess
    api: FakeResponsesAPI
    env: dict[str, str]
    proj: Path
    codex_bin: Path

    def cli(self, *args: str) -> str:
        r = hookd_cli(self.home, *args)
        assert r.returncode == 0, f"hookd {' '.join(args)}: {r.stdout}{r.stderr}"
        return r.stdout

    def spawn(self, *args: str) -> dict[str, Any]:
        return json.loads(self.cli("spawn", B, "--worktree", str(self.proj), "--harness", "codex", "--json", *args))

    def builder(self) -> dict[str, Any]:
        (b,) = [b for b in json.loads(self.cli("status", "--json"))["builders"] if b["builder"] == B]
        return b

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        c = self.daemon.client()
        try:
            return [e for e in c.lines("/v1/events", after=0, limit=100000) if kind is None or e["kind"] == kind]
        finally:
            c.close()

    def hooks(self) -> list[str]:
        return [e["data"]["hook_event_name"] for e in self.events("hook_received")]

    def wait_hook(self, name: str, **data: Any) -> None:
        wait_until(lambda: any(e["data"].get("hook_event_name") == name and all(e["data"].get(k) == v for k, v in data.items())
                               for e in self.events("hook_received")), 30, 0.05, f"hook {name} {data} in hookd")

    def pending(self) -> list[dict[str, Any]]:
        return json.loads(self.cli("questions", "--state", "pending", "--json"))

    def exec_in_background(self, prompt: str) -> tuple[threading.Thread, list[subprocess.CompletedProcess[str]]]:
        out: list[subprocess.CompletedProcess[str]] = []

        def run() -> None:
            out.append(subprocess.run([str(self.codex_bin), "exec", "--skip-git-repo-check", prompt], cwd=self.proj,
                                      env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                      timeout=120))
        t = threading.Thread(target=run)
        t.start()
        return t, out


@pytest.fixture
def rig(tmp_path: Path, codex_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    proj = Path(os.path.realpath(tmp_path)) / "proj"
    proj.mkdir()
    with FakeResponsesAPI() as api:
        # a user who already works in this project with Codex: the project is trusted, hookd's
        # hooks are not (yet)
        prepare_home(tmp_path / "codex", api, f'[projects."{proj}"]\ntrust_level = "trusted"\n')
        env = codex_env(tmp_path / "codex")
        monkeypatch.setenv("CODEX_HOME", env["CODEX_HOME"])  # what `hookd spawn --trust` writes into
        daemon = DaemonProcess(tmp_path / "hookd")
        with daemon:
            yield Rig(tmp_path / "hookd", daemon, api, env, proj, codex_bin)


def run_exec(rig: Rig, prompt: str) -> subprocess.CompletedProcess[str]:
    t, out = rig.exec_in_background(prompt)
    t.join()
    assert out and out[0].returncode == 0, out[0].stderr[-3000:] if out else "no result"
    return out[0]


def occurrences(req: LoggedRequest, needle: str) -> int:
    return sum(json.dumps(item).count(needle) for item in req.input_items())


def adopted_from_the_rollout(rig: Rig) -> None:
    """The message m-1 is adopted, proven by the rollout (the Stop hook's transcript read)."""
    wait_until(lambda: [e["data"] for e in rig.events("inbox_adopted")] == [{"ids": ["m-1"], "via": "transcript"}],
               15, 0.05, "m-1 adopted from the rollout")


def test_untrusted_hooks_show_in_status_and_trusted_ones_run_in_exec(rig: Rig) -> None:
    rig.spawn()
    b = rig.builder()
    assert b["hooks_trust"]["state"] == "untrusted", b
    assert b["hooks_trust"]["fix"].endswith("--harness codex --trust")
    rig.api.set_script({"turns": [[call("exec_command", {"cmd": "echo hi"}, "call_CX_E1")], "FIN-1"]})
    run_exec(rig, "Run echo hi")
    assert rig.api.main_requests(), "Codex ran"
    assert rig.hooks() == [] and rig.builder()["hooks_seen"] == 0  # skipped, and Codex said nothing

    m = rig.spawn("--trust")
    assert rig.builder()["hooks_trust"]["state"] == "trusted"
    assert len(m["trust"]["added"]) == 12  # the project was trusted already: not hookd's
    mine = [h for h in hooks_list(rig.codex_bin, rig.env, rig.proj) if h["sourcePath"] == m["settings_file"]]
    assert len(mine) == 12 and {h["trustStatus"] for h in mine} == {"trusted"}  # Codex agrees
    rig.api.set_script({"turns": [[call("exec_command", {"cmd": "echo hi"}, "call_CX_E2")], "FIN-2"]})
    run_exec(rig, "Run echo hi")
    wait_until(lambda: "SessionEnd" in rig.hooks(), 15, 0.05, "SessionEnd in hookd")
    assert rig.hooks() == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"]
    assert rig.builder()["hooks_seen"] == 6


def test_a_permission_prompt_is_allowed_and_denied_remotely(rig: Rig, tmp_path: Path) -> None:
    rig.spawn("--trust")
    made = {k: tmp_path / f"made-{k}" for k in "AB"}
    rig.api.set_script({"turns": [[escalated(f"touch {made['A']}", "call_CX_A")], "DONE-A",
                                  [escalated(f"touch {made['B']}", "call_CX_B")], "DONE-B"]})
    with AppServer(rig.codex_bin, rig.proj, rig.env, answers={}) as srv:
        thread = srv.start_thread(rig.proj, approvalPolicy="on-request", sandbox="read-only")
        for key, answer in (("A", ["--option", "allow"]), ("B", ["--option", "deny", "--text", "DENY-CX-REMOTE use ls"])):
            turn = srv.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": f"make {key}"}]})["turn"]
            (q,) = wait_until(lambda: rig.pending() or None, 30, 0.1, f"permission prompt {key} pending in hookd")
            assert (q["kind"], q["tool_name"], q["input"]["command"]) == ("permission", "Bash", f"touch {made[key]}")
            assert q["input"]["description"] == "Needs to write outside the workspace"
            rig.cli("answer", q["id"], *answer)
            done = srv.wait_turn(turn["id"])
            assert done["status"] == "completed", done
    assert srv.server_requests == []  # the desk's client was never asked: hookd's answer decided
    assert made["A"].exists() and not made["B"].exists()
    denied = rig.api.requests_containing("call_CX_B")[-1].function_outputs()["call_CX_B"]
    assert "DENY-CX-REMOTE use ls" in denied, denied
    states = {q["input"]["command"]: (q["state"], q.get("decision"))
              for q in json.loads(rig.cli("questions", "--state", "all", "--json"))}
    assert states == {f"touch {made['A']}": ("answered", "allow"), f"touch {made['B']}": ("answered", "deny")}, states


def test_a_question_is_pending_in_hookd_then_answered_at_the_desk(rig: Rig) -> None:
    """Plan mode through the app server, whose client is the desk here (as the TUI is): the
    question shows in `hookd questions` while the desk's menu is open; `hookd answer` can only
    queue a message (no hook answers ``request_user_input``); the desk's choice resolves it."""
    rig.spawn("--trust")
    rig.api.set_script({"turns": [[call("request_user_input", {"questions": [QUESTION]}, "call_CX_Q")], "FIN-Q"]})
    desk_may_answer = threading.Event()

    def desk(params: dict[str, Any]) -> dict[str, Any]:  # the client's menu, answered when the test says
        assert desk_may_answer.wait(60)
        return {"answers": {"color": {"answers": ["Blue"]}}}
    with AppServer(rig.codex_bin, rig.proj, rig.env, answers={"item/tool/requestUserInput": desk}) as srv:
        thread = srv.start_thread(rig.proj)
        turn = srv.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": "ask me"}],
                                          "collaborationMode": {"mode": "plan", "settings": {"model": rig.api.model}}})["turn"]
        (q,) = wait_until(lambda: rig.pending() or None, 30, 0.1, "the question pending in hookd")
        assert (q["id"], q["kind"], q["tool_name"]) == ("call_CX_Q", "question", "request_user_input")
        assert [o["label"] for o in q["questions"][0]["options"]] == ["Red (Recommended)", "Blue"]
        r = hookd_cli(rig.home, "answer", "call_CX_Q", "--option", "Red (Recommended)")
        assert (r.returncode, r.stdout) == (0, "queued as inbox message m-1 for cx1\n"), r.stderr
        assert r.stderr.startswith("hookd: codex reads the answer to call_CX_Q at its own prompt (no hook can carry"
                                   " one), so it can only be answered at the desk"), r.stderr
        desk_may_answer.set()
        assert srv.wait_turn(turn["id"])["status"] == "completed"
    (q,) = json.loads(rig.cli("questions", "--state", "all", "--json"))
    assert (q["state"], q["surface"], q["answers"]) == ("answered", "terminal", {QUESTION["question"]: "Blue"})
    assert [s["labels"] for s in q["selections"]] == [["Blue"]]
    assert json.loads(rig.api.main_requests()[1].function_outputs()["call_CX_Q"]) == {
        "answers": {"color": {"answers": ["Blue"]}}}  # the desk's answer is what the model got
    later = rig.api.main_requests()[1]  # the remote answer, said not to be used, follows at the tool's end
    assert occurrences(later, "Late answer to question call_CX_Q") == 1


def test_a_message_sent_during_a_tool_call_reaches_the_next_request_once(rig: Rig, tmp_path: Path) -> None:
    rig.spawn("--trust")
    gate = tmp_path / "gate"
    rig.api.set_script({"turns": [[call("exec_command", {"cmd": f"until [ -e {gate} ]; do sleep 0.05; done; echo open",
                                                         "yield_time_ms": 30000}, "call_CX_G")], "FIN-G"]})
    t, out = rig.exec_in_background("wait for the gate")
    rig.wait_hook("PreToolUse", tool_use_id="call_CX_G")
    rig.cli("send", B, "MSG-CX-TOOL please also count to three")
    gate.touch()
    t.join()
    assert out[0].returncode == 0, out[0].stderr[-3000:]
    reqs = rig.api.main_requests()
    assert len(reqs) == 2
    assert occurrences(reqs[0], "MSG-CX-TOOL") == 0 and occurrences(reqs[1], "MSG-CX-TOOL") == 1
    (item,) = [i for i in reqs[1].input_items() if "MSG-CX-TOOL" in json.dumps(i)]
    assert item["role"] == "developer" and "[human msg m-1 from " in json.dumps(item)  # PostToolUse's context
    adopted_from_the_rollout(rig)


def test_a_message_at_the_end_of_a_turn_continues_it(rig: Rig) -> None:
    rig.spawn("--trust")
    sent = threading.Event()

    def gate(answered: int) -> None:
        if answered == 0:  # the model writes its last reply: the message comes now
            rig.cli("send", B, "MSG-CX-END one more thing")
            sent.set()
    rig.api.main_gate = gate
    rig.api.set_script({"turns": ["FIN-FIRST", "FIN-AFTER"]})
    run_exec(rig, "say something")
    assert sent.is_set()
    reqs = rig.api.main_requests()
    assert len(reqs) == 2 and occurrences(reqs[0], "MSG-CX-END") == 0
    tail = reqs[1].input_items()[-1]
    assert tail["role"] == "user" and "<hook_prompt" in json.dumps(tail) and "MSG-CX-END" in json.dumps(tail)
    assert occurrences(reqs[1], "MSG-CX-END") == 1
    stops = [e for e in rig.events("hook_received") if e["data"]["hook_event_name"] == "Stop"]
    assert len(stops) == 2  # the block went on with the same turn; its next Stop ended it
    adopted_from_the_rollout(rig)


def test_a_run_with_the_daemon_down_is_spooled_and_ingested_once(rig: Rig) -> None:
    rig.spawn("--trust")
    rig.daemon.stop()
    rig.api.set_script({"turns": [[call("exec_command", {"cmd": "echo hi"}, "call_CX_D")], "FIN-DOWN"]})
    res = run_exec(rig, "Run echo hi")
    assert res.stdout.strip() == "FIN-DOWN"  # the hooks did not stand in the way
    spooled = sorted(p.name for p in (rig.home / "spool" / B).glob("*.json"))
    assert len(spooled) == 6 and all(n.endswith(".codex.json") for n in spooled), spooled
    rig.daemon.start()
    wait_until(lambda: len(rig.hooks()) == 6 and not list((rig.home / "spool" / B).glob("*.json")), 15, 0.05,
               "the spool ingested")
    rig.daemon.stop()
    rig.daemon.start()  # a restart ingests nothing twice
    got = [(e["data"]["hook_event_name"], e["data"]["source"]) for e in rig.events("hook_received")]
    assert got == [(name, "spool") for name in
                   ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")]


def test_a_session_with_no_hook_is_detected_from_its_rollout(rig: Rig) -> None:
    """Hooks not trusted: Codex runs none; the rollout, followed with `hookd tail`, shows the
    session moving with no hook, and hookd says why (``hooks_unarmed`` with Codex's advice)."""
    rig.spawn()
    rig.api.set_script({"turns": ["FIN-UNARMED"]})
    run_exec(rig, "hello")
    (rollout,) = sorted((Path(rig.env["CODEX_HOME"]) / "sessions").rglob("rollout-*.jsonl"))
    sid = rollout.name[-len("01a23b42-1903-7a70-959b-b3274430e91c.jsonl"):-len(".jsonl")]
    rig.cli("tail", str(rollout), "--builder", B)
    wait_until(lambda: rig.events("hooks_unarmed"), 20, 0.1, "hooks_unarmed")
    (started,) = rig.events("session_started")
    assert (started["session_id"], started["data"]["source"]) == (sid, "transcript")
    (unarmed,) = rig.events("hooks_unarmed")
    assert unarmed["session_id"] == sid and "--trust" in unarmed["data"]["advice"]
    assert rig.hooks() == []


def hookd_in(rig: Rig, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m hookd --home HOME ARGS`` in the project, in Codex's environment plus
    ``HOOKD_CODEX_BIN`` (the agent hookd starts inherits it, as it would a user's shell's)."""
    env = {**rig.env, "HOOKD_CODEX_BIN": str(rig.codex_bin)}
    return subprocess.run([sys.executable, "-m", "hookd", "--home", str(rig.home), *args], env=env, cwd=rig.proj,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def test_hookd_run_starts_the_codex_tui_in_its_own_process_and_stop_ends_it(rig: Rig) -> None:
    """`hookd run B --harness codex --trust --prompt P`: ``codex --no-daemon -- P`` in hookd's
    tmux; its hooks reach hookd and the prompt reaches the model; `hookd stop` ends the lane, and
    Codex left no background app server (no copy of itself under ``$CODEX_HOME/packages``)."""
    rig.api.set_script({"turns": ["FIN-TUI-RUN"]})
    try:
        p = hookd_in(rig, "run", B, "--harness", "codex", "--trust", "--worktree", str(rig.proj), "--prompt", "hello tui")
        assert p.returncode == 0 and p.stdout.startswith(f"started {B} (codex) in tmux session {B}, pid "), p
        wait_until(lambda: "Stop" in rig.hooks(), 60, 0.1, "the TUI's turn in hookd")
        assert rig.hooks()[:2] == ["SessionStart", "UserPromptSubmit"]
        assert rig.api.main_requests()[0].user_texts()[-1] == "hello tui"
        p = hookd_in(rig, "stop", B)
        assert p.returncode == 0, p.stderr
        wait_until(lambda: rig.events("builder_stopped"), 30, 0.1, "builder_stopped")
    finally:  # whatever failed, hookd's tmux server (and the TUI in it) goes with the test
        subprocess.run(["tmux", "-S", str(rig.home / "run" / "hookd.tmux"), "kill-server"], capture_output=True,
                       check=False)
    (item,) = json.loads(hookd_in(rig, "ls", "--json").stdout)
    assert (item["run"]["mode"], item["lane"]) == ("interactive", "ended"), item
    assert not (Path(rig.env["CODEX_HOME"]) / "packages").exists()


def test_hookd_run_starts_codex_headless_and_continue_resumes_it(rig: Rig) -> None:
    """`hookd run B --harness codex --headless --trust --prompt P -- --skip-git-repo-check`:
    ``codex exec`` started by hookd in the caller's environment, its hooks (trusted by the run)
    reaching hookd, the session learnt from them, the lane ended at its exit; then `hookd
    continue B --prompt Q` resumes that session headless (``codex exec ARGS resume``), given the
    run's own arguments again (``--skip-git-repo-check``: without it Codex refuses this folder)."""
    def hookd(*args: str) -> subprocess.CompletedProcess[str]:
        return hookd_in(rig, *args)

    def ended(n: int) -> list[dict[str, Any]]:
        stops = rig.events("builder_stopped")
        return stops if len(stops) == n else []
    rig.api.set_script({"turns": [[call("exec_command", {"cmd": "echo hi"}, "call_CX_R1")], "FIN-RUN", "FIN-CONT"]})
    p = hookd("run", B, "--harness", "codex", "--headless", "--trust", "--worktree", str(rig.proj),
              "--prompt", "-first prompt", "--", "--skip-git-repo-check")
    assert p.returncode == 0, p.stderr
    log = rig.home / "logs" / f"{B}.log"
    assert p.stdout.startswith(f"started {B} (codex) headless, pid ") and p.stdout.endswith(
        f"; its output: {log}\nstop: hookd stop {B}\n"), p.stdout
    assert "session" not in p.stdout  # Codex names it: learnt from its first hook
    (stopped,) = wait_until(lambda: ended(1), 60, 0.1, "the run's exit")
    assert stopped["data"]["reason"] == "exited"
    assert rig.hooks() == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"]
    assert rig.api.main_requests()[0].user_texts()[-1] == "-first prompt"
    assert "FIN-RUN" in log.read_text()
    (item,) = json.loads(hookd("ls", "--json").stdout)
    sid = rig.events("session_started")[0]["session_id"]
    assert (item["run"]["mode"], item["run"]["harness"], item["lane"]) == ("headless", "codex", "ended"), item

    p = hookd("continue", B, "--prompt", "go on")
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.startswith(f"continued {B} (codex) headless, pid "), p.stdout
    wait_until(lambda: ended(2), 60, 0.1, "the resumed run's exit")
    last = rig.api.main_requests()[-1]
    assert last.user_texts()[-2:] == ["-first prompt", "go on"]  # the same conversation, resumed
    starts = [e for e in rig.events("hook_received") if e["data"]["hook_event_name"] == "SessionStart"]
    assert [e["session_id"] for e in starts] == [sid, sid]
    assert "FIN-CONT" in log.read_text()
    (item,) = json.loads(hookd("ls", "--json").stdout)
    assert item["run"]["argv"][1:] == ["exec", "--skip-git-repo-check", "resume", sid, "--", "go on"]
    assert (item["run"]["exit_status"], ended(2)[1]["data"]["exit_status"]) == (0, 0)
