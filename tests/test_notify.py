"""Detect-and-notify: configuration, channels (desktop and command faked with
pytest-subprocess, webhooks against a real local receiver), retries with backoff, the
once-per-step record, the interaction rules in a real daemon (answering stops them; a restart
sends nothing twice), and `hookd notify test`."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess
from hookd.models import ConfigError, Interaction
from hookd.watchers.notify import Notifier
from hookd.harness import claude_code
from hookd.watchers.notify_channels import Alert, deliver, desktop_argv, interaction_alert
from hookd.watchers.notify_config import Channel, NotifyConfig, load_config
from hookd.core import Hookd
from hookd.store import Store

from .conftest import events, hookd_cli, hookd_run, wait_until
from .test_answers import ASK_ID, AUQ_POST, AUQ_PRE, Rig, bash_perm, payload

pytestmark = pytest.mark.daemon


# --- a real webhook receiver ---------------------------------------------------------------

class Receiver:
    """An HTTP server in a thread that records every POST; the first ``fail`` requests get
    HTTP 500."""

    def __init__(self, fail: int = 0):
        self.requests: list[dict[str, Any]] = []
        self.fail = fail
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body,
                                           "at": time.time()})
                    failing = outer.fail > 0
                    if failing:
                        outer.fail -= 1
                self.send_response(500 if failing else 200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *a: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def bodies(self) -> list[Any]:
        with self.lock:
            return [json.loads(r["body"]) for r in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def alert(**kw: Any) -> Alert:
    base = dict(key="interaction:toolu_X", rule="question_pending", builder="b1", title="hookd: b1 is waiting",
                message="b1 has been waiting 1 min for an answer to: Which color? Answer: hookd answer toolu_X --option Blue")
    base.update(kw)
    return Alert(**base)


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


# --- configuration -------------------------------------------------------------------------

def test_defaults_without_a_config_file(tmp_path: Path) -> None:
    cfg = load_config(Home(tmp_path), env={})
    assert (cfg.question_after_s, cfg.idle_inbox_after_s, cfg.steps_s, cfg.channels) == (60.0, 120.0, (0.0, 300.0, 1800.0), ())


def test_file_env_and_flags_in_that_order(tmp_path: Path) -> None:
    write_config(tmp_path, """
[notify]
question_after_s = 30
steps_s = [0, 60]
[[notify.channel]]
type = "desktop"
[[notify.channel]]
type = "webhook"
url = "https://ntfy.sh"
format = "ntfy"
topic = "t"
[[notify.channel]]
type = "command"
command = ["/bin/cat"]
name = "pager"
""")
    cfg = load_config(Home(tmp_path), env={})
    assert (cfg.question_after_s, cfg.steps_s) == (30.0, (0.0, 60.0))
    assert [c.type for c in cfg.channels] == ["desktop", "webhook", "command"]
    assert cfg.channels[0].name == "desktop" and cfg.channels[1].name.startswith("webhook:") and cfg.channels[2].name == "pager"
    env = {"HOOKD_NOTIFY_QUESTION_AFTER_S": "5", "HOOKD_NOTIFY_STEPS_S": "0,10,20"}
    cfg = load_config(Home(tmp_path), env=env)
    assert (cfg.question_after_s, cfg.steps_s) == (5.0, (0.0, 10.0, 20.0))
    cfg = load_config(Home(tmp_path), {"question_after_s": 1.5, "steps_s": None}, env=env)
    assert (cfg.question_after_s, cfg.steps_s) == (1.5, (0.0, 10.0, 20.0))


@pytest.mark.parametrize("text, words", [
    ("[notify]\nquestion_after = 5\n", ["notify.question_after", "unknown key"]),
    ("[notify]\nquestion_after_s = \"soon\"\n", ["notify.question_after_s", "number"]),
    ("[notify]\nsteps_s = [300, 0]\n", ["notify.steps_s", "increasing"]),
    ("[notify\n", ["not valid TOML"]),
    ("[[notify.channel]]\ntype = \"pager\"\n", ["notify.channel[1].type", "desktop, webhook, command"]),
    ("[[notify.channel]]\ntype = \"webhook\"\nurl = \"ftp://x\"\n", ["notify.channel[1].url"]),
    ("[[notify.channel]]\ntype = \"webhook\"\nurl = \"http://x\"\nformat = \"ntfy\"\n", ["notify.channel[1].topic"]),
    ("[[notify.channel]]\ntype = \"command\"\ncommand = \"page-me\"\n", ["notify.channel[1].command", "list"]),
])
def test_invalid_config_names_the_file_and_key(tmp_path: Path, text: str, words: list[str]) -> None:
    write_config(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_config(Home(tmp_path), env={})
    assert str(tmp_path / "config.toml") in e.value.message
    for w in words:
        assert w in e.value.message


def test_invalid_env_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="HOOKD_NOTIFY_QUESTION_AFTER_S"):
        load_config(Home(tmp_path), env={"HOOKD_NOTIFY_QUESTION_AFTER_S": "a minute"})


def test_daemon_refuses_to_start_with_an_invalid_config(home: Path) -> None:
    write_config(home, "[notify]\nquestion_after_s = -1\n")
    r = hookd_cli(home, "serve", timeout=30)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"hookd: {home / 'config.toml'}: notify.question_after_s must be at least 0 (got -1)"]
    assert not Home(home).endpoint_file.exists()


# --- channels ------------------------------------------------------------------------------

def test_desktop_runs_notify_send(fp: Any) -> None:
    fp.register(["notify-send", "--app-name=hookd", fp.any()])
    a = alert()
    asyncio.run(deliver(Channel(type="desktop", name="desktop"), a))
    assert fp.calls[0] == desktop_argv(a, "linux") == ["notify-send", "--app-name=hookd", a.title, a.message]


def test_desktop_on_macos_passes_text_as_arguments() -> None:
    a = alert(title='say "hi"', message="it's \\ fine")
    argv = desktop_argv(a, "darwin")
    assert argv[0] == "osascript" and argv[-2:] == [a.title, a.message]  # never spliced into the script


def test_desktop_failure_and_missing_binary(fp: Any, tmp_path: Path) -> None:
    from hookd.watchers.notify_channels import NotifyFailed, PermanentFailure

    fp.register(["notify-send", fp.any()], returncode=1, stderr=b"no session bus")
    with pytest.raises(NotifyFailed, match="exited with 1: no session bus"):
        asyncio.run(deliver(Channel(type="desktop", name="desktop"), alert()))
    fp.allow_unregistered(True)  # a real exec of a path that does not exist
    with pytest.raises(PermanentFailure, match="not found"):
        asyncio.run(deliver(Channel(type="command", name="c", command=[str(tmp_path / "nope")]), alert()))


def test_command_gets_the_alert_json_on_stdin(fp: Any) -> None:
    seen: list[bytes] = []
    fp.register(["/usr/local/bin/page-me", "--quiet"], stdin_callable=lambda data: seen.append(data) or None)
    a = alert(step=1, data={"interaction_id": "toolu_X"})
    asyncio.run(deliver(Channel(type="command", name="c", command=["/usr/local/bin/page-me", "--quiet"]), a))
    got = json.loads(seen[0])
    assert {k: got[k] for k in ("key", "rule", "step", "builder", "title", "message", "data")} == {
        "key": a.key, "rule": "question_pending", "step": 1, "builder": "b1", "title": a.title,
        "message": a.message, "data": {"interaction_id": "toolu_X"}}


def test_webhook_formats(receiver: Receiver) -> None:
    a = alert(step=2)
    for fmt, topic in (("json", None), ("slack", None), ("ntfy", "hookd-alerts")):
        asyncio.run(deliver(Channel(type="webhook", name=fmt, url=receiver.url + "/" + fmt, format=fmt, topic=topic,
                                    headers={"Authorization": "Bearer tk_x"}), a))
    j, s, n = receiver.bodies()
    assert (j["key"], j["step"], j["message"]) == (a.key, 2, a.message)
    assert s == {"text": f"*{a.title}*\n{a.message}"}
    assert n == {"topic": "hookd-alerts", "title": a.title, "message": a.message, "priority": 5,
                 "tags": ["hookd", "question_pending"]}
    assert [r["path"] for r in receiver.requests] == ["/json", "/slack", "/ntfy"]
    assert all(r["headers"]["content-type"] == "application/json" and r["headers"]["authorization"] == "Bearer tk_x"
               for r in receiver.requests)


# --- delivery in the daemon's notifier (in-process, real store) ------------------------------

async def _core(tmp_path: Path) -> Hookd:
    home = Home(tmp_path / "h")
    home.ensure()
    return Hookd(home, await Store(home.db).open())


async def _until(pred: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.01)


def _rows(core: Hookd) -> list[dict[str, Any]]:
    return core.store._transaction(lambda tx: tx.log.notifications(), ())[0]


def test_failing_webhook_is_retried_with_backoff_then_sent(tmp_path: Path) -> None:
    rec = Receiver(fail=2)

    async def main() -> None:
        core = await _core(tmp_path)
        cfg = NotifyConfig(retry_attempts=5, retry_initial_s=0.1, retry_max_s=1.0,
                           channels=(Channel(type="webhook", name="hook", url=rec.url),))
        n = Notifier(core, cfg)
        try:
            assert await n.raise_alert(alert(), escalate=False) is True
            assert await n.raise_alert(alert(), escalate=False) is False  # once per (key, step)
            await _until(lambda: _rows(core)[0]["status"] != "pending")
            row = _rows(core)[0]
            assert (row["status"], row["attempts"], row["last_error"]) == ("sent", 3, None)
            gaps = [b["at"] - a["at"] for a, b in zip(rec.requests, rec.requests[1:])]
            assert len(rec.requests) == 3 and gaps[0] >= 0.09 and gaps[1] >= 0.19  # exponential
            evs = [e for e in await core.store.events_after(0) if e.kind.startswith("notification_")]
            assert [(e.kind, e.data["attempts"], e.data["channel"]) for e in evs] == [("notification_sent", 3, "hook")]
        finally:
            await n.close()
            await core.store.close()

    try:
        asyncio.run(main())
    finally:
        rec.close()


def test_gives_up_after_the_attempts_and_records_failed(tmp_path: Path, fp: Any) -> None:
    for _ in range(3):
        fp.register(["page-me"], returncode=3, stderr=b"pager down")

    async def main() -> None:
        core = await _core(tmp_path)
        cfg = NotifyConfig(retry_attempts=3, retry_initial_s=0.01, retry_max_s=0.02,
                           channels=(Channel(type="command", name="pager", command=["page-me"]),))
        n = Notifier(core, cfg)
        try:
            await n.raise_alert(alert(), escalate=False)
            await _until(lambda: _rows(core)[0]["status"] != "pending")
            row = _rows(core)[0]
            assert (row["status"], row["attempts"]) == ("failed", 3) and "pager down" in row["last_error"]
            evs = [e for e in await core.store.events_after(0) if e.kind.startswith("notification_")]
            assert [(e.kind, e.data["attempts"]) for e in evs] == [("notification_failed", 3)]
            assert "exited with 3: pager down" in evs[0].data["error"]
        finally:
            await n.close()
            await core.store.close()

    asyncio.run(main())
    assert fp.call_count(["page-me"]) == 3


def test_clear_stops_retries(tmp_path: Path) -> None:
    rec = Receiver(fail=10**6)

    async def main() -> None:
        core = await _core(tmp_path)
        cfg = NotifyConfig(retry_attempts=50, retry_initial_s=0.05, retry_max_s=0.05,
                           channels=(Channel(type="webhook", name="hook", url=rec.url),))
        n = Notifier(core, cfg)
        try:
            await n.raise_alert(alert())
            await _until(lambda: len(rec.requests) >= 2)
            await n.clear(alert().key)
            assert not n._tasks  # no retry left
            row = _rows(core)[0]
            assert (row["status"], row["sent_at"]) == ("cleared", None)
            assert await n.raise_alert(alert()) is False  # a cleared step is never sent again
        finally:
            await n.close()
            await core.store.close()

    try:
        asyncio.run(main())
    finally:
        rec.close()


def test_lane_alerts_escalate_until_cleared(tmp_path: Path, receiver: Receiver) -> None:
    async def main() -> None:
        core = await _core(tmp_path)
        # Step 2 falls due 5 s after step 0: the clear below must come before it, and a loaded
        # machine can take a second between noticing step 1 and clearing (at 0.4 s it failed).
        cfg = NotifyConfig(steps_s=(0.0, 0.2, 5.0), retry_initial_s=0.01,
                           channels=(Channel(type="webhook", name="hook", url=receiver.url),))
        n = Notifier(core, cfg)
        runner = asyncio.create_task(n.run())
        key = "lane:b1:agent_dead"
        try:
            await n.raise_alert(alert(key=key, rule="agent_dead", title="b1's agent died", message="b1 died"))
            await _until(lambda: 1 in [b["step"] for b in receiver.bodies()])
            await n.clear(key)
            later = alert(key="lane:b2:agent_dead", rule="agent_dead", title="b2", message="b2 died")
            await n.raise_alert(later)  # a marker raised after the clear: wait for its last step
            await _until(lambda: any(b["key"] == later.key and b["step"] == 2 for b in receiver.bodies()))
            assert [b["step"] for b in receiver.bodies() if b["key"] == key] == [0, 1]
            assert "reminder 1 of 2" in [b for b in receiver.bodies() if b["key"] == key][1]["message"]
        finally:
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
            await core.store.close()

    asyncio.run(main())


# --- end to end: a real daemon, real hooks ---------------------------------------------------

def _command_channel(out: Path) -> str:
    script = f"import sys; open({str(out)!r}, 'ab').write(sys.stdin.buffer.read() + b'\\n')"
    return f"[[notify.channel]]\ntype = \"command\"\nname = \"log\"\ncommand = {json.dumps([sys.executable, '-c', script])}\n"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def _steps(items: list[dict[str, Any]], key: str) -> list[int]:
    return sorted(i["step"] for i in items if i["key"] == key)


def permission(tool: str, inp: Any) -> Interaction:
    return Interaction(id="pr_1", kind="permission", builder="b1", session_id="s", agent_id=None, tool_name=tool,
                       tool_use_id=None, state="pending", questions=None, answers=None, selections=None, surface=None,
                       warning=None, error=None, created_at=1000.0, resolved_at=None, revision=1, input=inp)


ANSWER = 'Answer: hookd answer pr_1 --option allow   (or: --option deny --text "why")'


def test_a_permission_alert_reads_as_the_tool_call():
    """Issue 20 item 5: the summary, the first lines of the detail, destructive-looking ones
    said so in the title and the text; never the raw JSON."""
    i = permission("Bash", {"command": "rm -f README.md", "description": "Remove the README"})
    a = interaction_alert(i, 0, 2, 1125.0, claude_code.present_tool(i.tool_name, i.input))
    assert a.title == "hookd: b1 needs permission for Bash (looks destructive)"
    assert a.message == ("b1 has been waiting 2 min 5 s for permission to run Bash: Remove the README (looks destructive).\n"
                         "  rm -f README.md\n" + ANSWER)
    assert a.data["tool_view"] == {"kind": "command", "summary": "Remove the README", "detail": "rm -f README.md",
                                   "destructive": True}
    edit = permission("Edit", {"file_path": "/w/a.py", "old_string": "a\nb\nc\nd\ne", "new_string": "A\nb\nc\nd\nE"})
    a = interaction_alert(edit, 1, 3, 1010.0, claude_code.present_tool(edit.tool_name, edit.input))
    assert a.title == "hookd: b1 needs permission for Edit"
    assert a.message == ("b1 has been waiting 10 s for permission to run Edit: Edit /w/a.py (reminder 1 of 2).\n"
                         "  -a\n  +A\n   b\n   c\n  …\n" + ANSWER)
    # no view (the harness unknown): compact JSON, once; an agent's control characters made visible
    other = permission("mcp__x__y", {"q": "\x1b[31mred"})
    a = interaction_alert(other, 0, 1, 1000.0)
    assert a.message == 'b1 has been waiting 0 s for permission to run mcp__x__y: {"q":"\\u001b[31mred"}.\n' + ANSWER
    fetch = permission("WebFetch", {"url": "https://example.org", "prompt": "Is it up?\n\x1b]0;pwned\x07"})
    a = interaction_alert(fetch, 0, 1, 1000.0, claude_code.present_tool(fetch.tool_name, fetch.input))
    assert a.message == ("b1 has been waiting 0 s for permission to run WebFetch: https://example.org.\n"
                         "  Is it up?\n  \\x1b]0;pwned\\x07\n" + ANSWER)
    # no hook holds it (a dialog auto mode asks at the desk; a builder spawned --hold 0): no
    # command that would be refused, the desk named instead (a fresh user's trial)
    a = interaction_alert(i, 0, 2, 1125.0, claude_code.present_tool(i.tool_name, i.input), held=False)
    assert a.message == ("b1 has been waiting 2 min 5 s for permission to run Bash: Remove the README (looks destructive).\n"
                         "  rm -f README.md\nNo hook holds it: answer it at the desk.")
    assert a.data["held"] is False
    assert interaction_alert(i, 0, 2, 1125.0, held=True).message.endswith(ANSWER)


def test_a_question_alert_stays_one_line_whatever_the_agent_wrote():
    q = Interaction(id="toolu_1", kind="question", builder="b1", session_id="s", agent_id=None, tool_name="AskUserQuestion",
                    tool_use_id="toolu_1", state="pending", answers=None, selections=None, surface=None, warning=None,
                    error=None, created_at=1000.0, resolved_at=None, revision=1,
                    questions=[{"question": "Ship?\nAnswer: hookd answer x --option allow", "options": [{"label": "yes"}]}])
    a = interaction_alert(q, 0, 1, 1000.0)
    assert "\n" not in a.message and "Ship?\\nAnswer: hookd answer x" in a.message


def test_an_alert_says_the_builders_default_answer_and_when():
    """A builder spawned with --default-answer-after: its alert says what hookd will answer
    and in how long (once due: now), as the last words (a question's alert still one line),
    and gives it in data."""
    i = permission("Bash", {"command": "ls", "description": "List"})
    a = interaction_alert(i, 0, 2, 1125.0, claude_code.present_tool(i.tool_name, i.input),
                          default={"answer": "denies", "at": 1365.0})
    assert a.message.endswith(ANSWER + "\nUnless you answer, hookd denies in 4 min.")
    assert a.data["default_answer"] == {"answer": "denies", "at": 1365.0}
    q = Interaction(id="toolu_1", kind="question", builder="b1", session_id="s", agent_id=None, tool_name="AskUserQuestion",
                    tool_use_id="toolu_1", state="pending", answers=None, selections=None, surface=None, warning=None,
                    error=None, created_at=1000.0, resolved_at=None, revision=1,
                    questions=[{"question": "Ship?", "options": [{"label": "yes"}, {"label": "no"}]}])
    a = interaction_alert(q, 0, 1, 1100.0, default={"answer": "answers yes", "at": 1100.0})
    assert "\n" not in a.message and a.message.endswith(  # (the command last: copied whole, a trial found)
        " Unless you answer, hookd answers yes now. Answer: hookd answer toolu_1 --option yes")
    assert "Unless" not in interaction_alert(q, 0, 1, 1100.0).message


def test_an_elicitation_alert_names_the_server_its_message_and_the_fields():
    i = Interaction(id="el_1", kind="elicitation", builder="b1", session_id="s", agent_id=None, tool_name="booker",
                    tool_use_id=None, state="pending", questions=None, answers=None, selections=None, surface=None,
                    warning=None, error=None, created_at=1000.0, resolved_at=None, revision=1,
                    input={"server": "booker", "message": "Who is the table for?\x1b[2J", "mode": "form", "url": None,
                           "elicitation_id": None, "requested_schema": {"type": "object", "properties": {
                               "name": {"type": "string"}, "party": {"type": "integer"}}}})
    a = interaction_alert(i, 1, 2, 1065.0)
    assert (a.rule, a.title) == ("elicitation_pending", "hookd: b1's tool server booker asks for your input")
    assert a.message == ("b1 has been waiting 1 min 5 s: booker asks: Who is the table for?\\x1b[2J (fields: name, party)"
                         " (reminder 1 of 1). Answer: hookd answer el_1 --option accept --field name=VALUE"
                         " --field party=VALUE   (or: --option decline)")
    assert a.data["fields"] == ["name", "party"] and a.data["server"] == "booker"


def test_pending_question_notifies_once_per_step_and_a_restart_resends_nothing(
        home: Path, worktree: Path, tmp_path: Path, receiver: Receiver) -> None:
    out = tmp_path / "alerts.jsonl"
    write_config(home, f"""
[notify]
question_after_s = 0.3
steps_s = [0, 1]
[[notify.channel]]
type = "webhook"
name = "hook"
url = "{receiver.url}"
""" + _command_channel(out))
    d = DaemonProcess(home).start()
    try:
        rig = Rig(home, worktree, hold=0)
        t0 = time.time()
        rig.hook(AUQ_PRE)
        key = f"interaction:{ASK_ID}"
        wait_until(lambda: _steps(receiver.bodies(), key) == [0, 1] and _steps(_lines(out), key) == [0, 1], 60,
                   what=lambda: f"steps 0 and 1 on both channels: {receiver.bodies()} {_lines(out)}")
        first = receiver.bodies()[0]
        assert first["rule"] == "question_pending" and first["builder"] == "b1"
        assert f"hookd answer {ASK_ID} --option" in first["message"] and "Which color do you prefer?" in first["message"]
        assert receiver.requests[0]["at"] - t0 >= 0.3
        wait_until(lambda: len([e for e in events(home) if e["kind"] == "notification_sent"]) == 4, 60, what="4 sent events")
        d.stop()
        d = DaemonProcess(home).start()
        # a marker subject after the restart: once it is notified, the rules have run
        rig.hook(bash_perm("ls /tmp"))
        wait_until(lambda: any(b["rule"] == "permission_pending" for b in receiver.bodies()), 60, what="the marker")
        perm = next(b for b in receiver.bodies() if b["rule"] == "permission_pending")
        # the command as a person reads it (its description, then the command), not raw JSON
        head, command, answer = perm["message"].split("\n")
        assert re.fullmatch(r"b1 has been waiting \d+ s for permission to run Bash: x\.", head), head
        # (the rig spawned --hold 0: no hook holds the prompt, the desk answers it)
        assert (command, answer) == ("  ls /tmp", "No hook holds it: answer it at the desk.")
        assert perm["data"]["held"] is False
        assert perm["data"]["tool_view"] == {"kind": "command", "summary": "x", "detail": "ls /tmp", "destructive": False}
        assert perm["data"]["input"] == {"command": "ls /tmp", "description": "x"}  # the exact values stay
        assert _steps(receiver.bodies(), key) == [0, 1] and _steps(_lines(out), key) == [0, 1]
    finally:
        d.stop()


def test_the_alert_of_a_builder_with_a_default_answer_says_it(home: Path, worktree: Path, receiver: Receiver) -> None:
    """A builder spawned with --default-answer-after: the daemon's alert for its question says
    what hookd will answer, and in how long, read from the builder's spawn manifest."""
    write_config(home, f"""
[notify]
question_after_s = 0
[[notify.channel]]
type = "webhook"
name = "hook"
url = "{receiver.url}"
""")
    r = hookd_run(home, "spawn", "b1", "--worktree", str(worktree), "--hold", "600", "--default-answer-after", "300",
                  "--default-answer", "Blue")
    assert r.returncode == 0, r.stderr
    d = DaemonProcess(home).start()
    try:
        rig = Rig.__new__(Rig)  # (spawned above, with the default answer)
        rig.home, rig.worktree, rig.name = home, worktree, "b1"
        rig.settings = worktree / ".claude" / "settings.local.json"
        rig.hook(AUQ_PRE)
        [first] = wait_until(lambda: receiver.bodies(), 60, what="the question's alert")
        assert re.search(r" Unless you answer, hookd answers Blue in 4 min \d+ s\. Answer: hookd answer \S+ --option \S+$",
                         first["message"]), first["message"]
        assert first["data"]["default_answer"]["answer"] == "answers Blue"
    finally:
        d.stop()


@pytest.mark.parametrize("how", ["answered", "dismissed", "orphaned"])
def test_a_question_that_left_the_queue_is_no_longer_notified(
        home: Path, worktree: Path, receiver: Receiver, how: str) -> None:
    """Answered at the desk, dismissed (`hookd dismiss`) or orphaned (its session ended): the
    escalation's next step never comes."""
    write_config(home, f"""
[notify]
question_after_s = 0.2
steps_s = [0, 3]
[[notify.channel]]
type = "webhook"
name = "hook"
url = "{receiver.url}"
""")
    d = DaemonProcess(home).start()
    try:
        rig = Rig(home, worktree, hold=0)
        rig.hook(AUQ_PRE)
        key = f"interaction:{ASK_ID}"
        wait_until(lambda: _steps(receiver.bodies(), key) == [0], 60, what="step 0")
        if how == "answered":
            rig.hook(AUQ_POST)  # at the desk
        elif how == "dismissed":
            assert hookd_cli(home, "dismiss", ASK_ID, "--reason", "stale").returncode == 0
        else:
            assert rig.hook(payload("014-SessionEnd.json")) == ""
        assert rig.interaction(ASK_ID)["state"] == how
        rig.hook(bash_perm("echo marker"))  # asked now: its step 1 comes after the question's would have
        wait_until(lambda: any(b["rule"] == "permission_pending" and b["step"] == 1 for b in receiver.bodies()), 60,
                   what="the marker's step 1")
        assert _steps(receiver.bodies(), key) == [0]
    finally:
        d.stop()


def test_env_overrides_reach_the_daemon(home: Path, worktree: Path, receiver: Receiver) -> None:
    write_config(home, f"[[notify.channel]]\ntype = \"webhook\"\nurl = \"{receiver.url}\"\nformat = \"slack\"\n")
    env = {**os.environ, "HOOKD_NOTIFY_QUESTION_AFTER_S": "0", "HOOKD_NOTIFY_STEPS_S": "0"}
    d = DaemonProcess(home, env=env).start()
    try:
        Rig(home, worktree, hold=0).hook(AUQ_PRE)
        wait_until(lambda: receiver.bodies(), 60, what="a slack notification")
        assert ASK_ID in receiver.bodies()[0]["text"]
    finally:
        d.stop()


# --- hookd notify test ---------------------------------------------------------------------

def test_notify_test_reports_each_channel(home: Path, receiver: Receiver) -> None:
    write_config(home, f"""
[[notify.channel]]
type = "webhook"
name = "good"
url = "{receiver.url}"
format = "ntfy"
topic = "t"
[[notify.channel]]
type = "command"
name = "broken"
command = ["{sys.executable}", "-c", "import sys; sys.exit('no pager here')"]
""")
    r = hookd_cli(home, "notify", "test")
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["good (webhook): ok", f"broken (command): failed: {sys.executable} exited with 1: no pager here"]
    assert receiver.bodies()[0]["title"] == "hookd: test notification"
    r = hookd_cli(home, "notify", "test", "--channel", "1")
    assert (r.returncode, r.stdout) == (0, "good (webhook): ok\n")
    r = hookd_cli(home, "notify", "test", "--channel", "9")
    assert r.returncode == 1 and "no channel '9'" in r.stderr


def test_notify_test_without_channels(home: Path) -> None:
    r = hookd_cli(home, "notify", "test")
    assert r.returncode == 2 and "no [[notify.channel]]" in r.stderr


def test_a_fleet_alerts_answer_line_answers_through_the_hub():
    """The fleet's notifier's alert for another host's interaction (docs/fleet.md "One notifier
    for the fleet"): the lead's own `hookd answer ID` cannot reach that host; its Answer: line
    names the host and goes through the hub, the operator's URL left to the reader."""
    from hookd.watchers.notify_fleet import fleet_alert

    q = {"host_id": "hostb", "kind": "question_pending", "builder": "b2", "session_id": "s", "at": 1000.0,
         "data": {"id": "toolu_1", "kind": "question", "tool_name": "AskUserQuestion",
                  "questions": [{"question": "Which color?", "options": [{"label": "Red"}, {"label": "Blue"}]}]}}
    a = fleet_alert(q, 0, 2, 1060.0)
    assert (a.title, a.message) == (
        "[hostb] hookd: b2 is waiting for your answer",
        "on host hostb: b2 has been waiting 1 min for an answer to: Which color? (options: Red, Blue). "
        "Answer: hookd --hub <operator URL> answer hostb/toolu_1 --option Red")
    p = {**q, "kind": "permission_pending",
         "data": {"id": "pr_1", "kind": "permission", "tool_name": "Bash", "tool_input": {"command": "ls"}}}
    assert fleet_alert(p, 0, 2, 1060.0).message.splitlines()[-1] == (
        'Answer: hookd --hub <operator URL> answer hostb/pr_1 --option allow   (or: --option deny --text "why")')


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_command_that_exits_without_reading_its_alert_fails_with_its_status(loop: str) -> None:
    """A command channel's program that exits before reading stdin is a failed delivery with
    its exit status, on the daemon's loop (uvloop raises RuntimeError from the write to a closed
    pipe: no internal error) as on asyncio's (which drops the broken pipe and keeps stderr)."""
    from hookd.watchers.notify_channels import NotifyFailed, _run

    factory = asyncio.new_event_loop
    if loop == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        factory = uvloop.new_event_loop
    argv = ["sh", "-c", "exec 0<&-; printf 'no thanks' >&2; exit 3"]
    with asyncio.Runner(loop_factory=factory) as runner:
        with pytest.raises(NotifyFailed, match=r"^sh exited with 3(: no thanks| before reading the alert)$"):
            runner.run(_run(argv, b"x" * (1 << 20), 30))
