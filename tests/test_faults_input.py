"""Issue 18, hostile files and payloads against a real daemon: a FIFO, a character device or
a directory where a transcript or a spool file should be (never opened blocking, never read,
the daemon keeps serving and tailing, SIGTERM stops it); hook payloads with lone UTF-16
surrogates (Node's ``JSON.stringify`` of a string cut mid-emoji) parsed instead of refused,
through the generated client; agent text escaped in every human-facing output. A transcript
path that is no ``.jsonl`` file and surrogates in rows, claw payloads and API bodies are
tests/test_faults_input_inproc.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess

from .conftest import FIXTURES, TUI, events, hookd_cli, hookd_run, questions, run_hook, settings_command, wait_until

pytestmark = pytest.mark.daemon

STREAM = FIXTURES / "stream-ask-answered-by-host" / "hooks"
ROWS = [json.loads(line) for line in (FIXTURES / "tui-ask-answered-at-terminal" / "transcript.jsonl").read_text().splitlines()]
ASK = "toolu_01ASK0000000000000000001"


def _ask_use_row(session_id: str, tool_use_id: str) -> bytes:
    """The recorded AskUserQuestion tool_use row, moved to ``session_id`` and ``tool_use_id``."""
    use = next(r for r in ROWS if r.get("type") == "assistant"
               and any(b.get("id") == ASK for b in r["message"]["content"] if isinstance(b, dict)))
    text = json.dumps(use).replace(ASK, tool_use_id).replace(use["sessionId"], session_id)
    return text.encode() + b"\n"


def _session_start(settings: Path, worktree: Path, session_id: str, transcript: str) -> None:
    p = json.loads((TUI / "001-SessionStart.json").read_bytes())
    p["session_id"], p["transcript_path"] = session_id, transcript
    r = run_hook(settings_command(settings, "SessionStart"), json.dumps(p).encode(), worktree)
    assert r.returncode == 0 and r.stdout == b"", r


def _refused(home: Path) -> dict[str, str]:
    """The ``transcript_refused`` events so far: path -> reason."""
    return {e["data"]["path"]: e["data"]["reason"] for e in events(home) if e["kind"] == "transcript_refused"}


def _stop_cleanly(d: DaemonProcess) -> int | None:
    """SIGTERM, then wait for the exit (a deadline, not a budget: a daemon that ignores the
    signal is killed after it, and its exit code then says so)."""
    return d.stop(timeout=60)


# --- item 4: non-regular files ---------------------------------------------------------------

def test_fifo_device_and_directory_transcripts_are_refused_and_tailing_goes_on(
        home: Path, worktree: Path, tmp_path: Path) -> None:
    d = DaemonProcess(home).start()
    try:
        assert hookd_run(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
        settings = worktree / ".claude" / "settings.local.json"
        hostile = tmp_path / "hostile"
        hostile.mkdir()
        fifo = hostile / "fifo.jsonl"
        os.mkfifo(fifo)
        (hostile / "zero.jsonl").symlink_to("/dev/zero")  # a character device behind a link
        (hostile / "dir.jsonl").mkdir()                      # a directory named like a transcript
        for n, name in enumerate(("fifo.jsonl", "zero.jsonl", "dir.jsonl")):
            _session_start(settings, worktree, f"hostile-{n}", str(hostile / name))
        refused = wait_until(lambda: r if len(r := _refused(home)) >= 3 else None, 30,
                             what="a transcript_refused event for each hostile path")
        assert "a FIFO" in refused[str(fifo)]
        assert "a character device" in refused[str(hostile / "zero.jsonl")]
        assert "a directory" in refused[str(hostile / "dir.jsonl")]

        # another session's transcript is still tailed, and hooks are still served
        good = tmp_path / "good.jsonl"
        good.write_bytes(b"")
        _session_start(settings, worktree, "good-session", str(good))
        with open(good, "ab") as f:
            f.write(_ask_use_row("good-session", "toolu_01GOOD00000000000000001"))
        q = wait_until(lambda: next((q for q in questions(home, "pending") if q["id"] == "toolu_01GOOD00000000000000001"),
                                    None), 30, what="the question read from the good transcript")
        assert q["session_id"] == "good-session"
        # a writer opening the FIFO now finds no reader: nothing in the daemon holds it open
        with pytest.raises(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        assert "Traceback" not in d.log.read_text()
    finally:
        code = _stop_cleanly(d)
    assert code == 0


def test_a_fifo_in_the_spool_neither_stops_startup_nor_the_spool(home: Path, worktree: Path) -> None:
    assert hookd_run(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
    h = Home.resolve(home)
    spool = h.spool_dir("b1")
    spool.mkdir(parents=True, exist_ok=True)
    os.mkfifo(spool / "1-1-fifo.claude-code.json")
    (spool / "2-2-zero.claude-code.json").symlink_to("/dev/zero")
    start = json.loads((TUI / "001-SessionStart.json").read_bytes())
    start["session_id"] = "spooled-session"
    (spool / "3-3-good.claude-code.json").write_bytes(json.dumps(start).encode())
    d = DaemonProcess(home).start(timeout=60)  # startup completes (it ingests the spool first)
    try:
        wait_until(lambda: any(e["kind"] == "session_started" and e["session_id"] == "spooled-session"
                               for e in events(home)), 30, what="the regular spool file ingested")
        assert not (spool / "3-3-good.claude-code.json").exists()
        assert (spool / "1-1-fifo.claude-code.json").exists()  # left for the human, never read
        log = d.log.read_text()
        assert "1-1-fifo.claude-code.json is a FIFO" in log and "2-2-zero.claude-code.json is a symlink" in log
        # a hook spooled while it runs (a client that timed out) is still picked up
        start["session_id"] = "spooled-later"
        tmp = spool / ".4-4-late.claude-code.json.tmp"
        tmp.write_bytes(json.dumps(start).encode())
        tmp.rename(spool / "4-4-late.claude-code.json")
        wait_until(lambda: any(e["session_id"] == "spooled-later" for e in events(home)), 30,
                   what="a payload spooled at run time ingested")
        # and live hooks are served
        settings = worktree / ".claude" / "settings.local.json"
        _session_start(settings, worktree, "live-session", str(worktree / "t.jsonl"))
        assert any(e["session_id"] == "live-session" for e in events(home))
    finally:
        code = _stop_cleanly(d)
    assert code == 0



def test_fifos_for_config_toml_a_manifest_and_a_settings_file_are_refused_not_waited_on(
        home: Path, worktree: Path, tmp_path: Path) -> None:
    h = Home.resolve(home)
    h.ensure()
    os.mkfifo(h.root / "config.toml")
    r = hookd_cli(home, "serve", timeout=60)  # a deadline: the old daemon waited for a writer forever
    assert r.returncode == 2 and "config.toml is a FIFO, not a regular file" in r.stderr
    os.unlink(h.root / "config.toml")

    (worktree / ".claude").mkdir()
    os.mkfifo(worktree / ".claude" / "settings.local.json")
    r = hookd_cli(home, "spawn", "b1", "--worktree", str(worktree), timeout=60)
    assert r.returncode == 2 and "settings.local.json is a FIFO, not a settings file" in r.stderr
    assert not h.manifest("b1").exists()

    d = DaemonProcess(home).start()
    try:
        other = tmp_path / "other"
        other.mkdir()
        assert hookd_run(home, "spawn", "b2", "--worktree", str(other)).returncode == 0
        os.mkfifo(h.builders_dir / "planted.json")  # a manifest that is no file
        st = hookd_cli(home, "status", "--json", timeout=60)
        assert st.returncode == 0, st.stderr
        assert [b["builder"] for b in json.loads(st.stdout)["builders"]] == ["b2"]
        assert hookd_cli(home, "lanes", timeout=60).returncode == 0
    finally:
        code = _stop_cleanly(d)
    assert code == 0


# --- item 5: lone surrogates ---------------------------------------------------------------

QUESTION = "Which color do you prefer?"


def _node_json(obj: Any) -> str:
    """JSON as Claude Code's Node writes it (compact, non-ASCII as is)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _with_lone_surrogates(name: str) -> bytes:
    """A recorded 2.1.332 payload whose question text ends in a string cut mid-emoji (a lone
    high surrogate, as ``JSON.stringify`` writes it): in ``questions``, the ``answers`` keys
    and ``tool_response``; the response also gets a lone low surrogate of its own."""
    p = json.loads((STREAM / name).read_bytes())
    if "tool_response" in p:
        p["tool_response"]["note"] = "LOW-CUT"
    text = _node_json(p).replace(QUESTION, QUESTION + " HIGH-CUT")
    return text.replace("HIGH-CUT", "\\ud83d").replace("LOW-CUT", "\\ude00 tail").encode()


def _raw_hooks(home: Path) -> list[bytes]:
    import sqlite3

    con = sqlite3.connect(Home.resolve(home).db)
    try:
        return [bytes(r[0]) for r in con.execute("SELECT raw FROM hook_events ORDER BY id")]
    finally:
        con.close()


def test_payloads_with_lone_surrogates_parse_and_the_answer_and_message_get_through(
        home: Path, worktree: Path, daemon: DaemonProcess) -> None:
    assert hookd_run(home, "spawn", "b1", "--worktree", str(worktree)).returncode == 0
    settings = worktree / ".claude" / "settings.local.json"
    pre, post = _with_lone_surrogates("007-PreToolUse.json"), _with_lone_surrogates("008-PostToolUse.json")
    assert b'"Which color do you prefer? \\ud83d"' in pre and b"\\ude00 tail" in post
    with pytest.raises(ValueError):
        msgspec.json.decode(post)  # what msgspec alone makes of it
    r = run_hook(settings_command(settings, "PreToolUse"), pre, worktree)
    assert r.returncode == 0
    q = wait_until(lambda: next((q for q in questions(home, "pending") if q["id"] == ASK), None), 60,
                   what="question_pending from the payload with a lone surrogate")
    assert q["questions"][0]["question"] == QUESTION + " \ufffd"
    assert hookd_cli(home, "send", "b1", "use the blue one").returncode == 0
    # the harness keeps stdin open: the daemon must see one complete object and answer
    proc = subprocess.Popen(["sh", "-c", settings_command(settings, "PostToolUse")], cwd=worktree,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(post)
    proc.stdin.flush()
    out = proc.stdout.read()  # until the client exits, its stdin still open
    proc.stdin.close()
    assert proc.wait(60) == 0
    reply = json.loads(out)
    assert "use the blue one" in reply["hookSpecificOutput"]["additionalContext"]  # the queued message delivered
    done = next(q for q in questions(home) if q["id"] == ASK)
    assert done["state"] == "answered" and done["answers"] == {QUESTION + " \ufffd": "Blue"}
    assert not [e for e in events(home) if e["kind"] == "hook_invalid"]
    assert _raw_hooks(home)[-2:] == [pre, post]  # the raw bytes kept as received


#: Every kind of hostile text: clear screen, hidden text, a window title (OSC ... BEL), a bidi
#: override and isolate, a C1 CSI, DEL, a carriage return and a forged line.
HOSTILE = ("Deploy?\x1b[8m (hidden: this deletes prod)\x1b[0m\x1b[2J\x1b]0;pwned\x07"
           "\u202eevil\u2066x\u2069\x9b2J\x7f\rFAKE\nhookd: all clear")
_BAD = {*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)} - {0x0A}


def _clean(what: str, text: str) -> None:
    bad = sorted({f"U+{ord(c):04X}" for c in text if ord(c) in _BAD})
    assert not bad, f"{what} printed raw control/bidi characters {bad}:\n{text!r}"


def _run(home: Path, *args: str, ok: bool = True, shows: bool = True, timeout: float = 120) -> str:
    """Run ``hookd ARGS``: no traceback, exit 0 unless not ``ok``, nothing raw printed, and
    (``shows``) the hostile text shown escaped."""
    r = subprocess.run([sys.executable, "-m", "hookd", "--home", os.fspath(home), *args],
                       capture_output=True, timeout=timeout)
    out = r.stdout.decode("utf-8", "replace") + r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in out, out
    if ok:
        assert r.returncode == 0, (args, out)
    _clean("hookd " + " ".join(a[:20] for a in args), out)
    if shows:
        assert "\\x9b2J" in out or "\\x1b[2J" in out, (args, out)
    return out


def test_every_human_facing_output_escapes_agent_text_and_json_stays_exact(home: Path, tmp_path: Path) -> None:
    wt = tmp_path / ("wt" + "\x1b[2J")  # even a worktree path that is hostile
    wt.mkdir()
    h = Home.resolve(home)
    h.ensure()
    (h.root / "config.toml").write_text(
        '[[notify.channel]]\ntype = "command"\nname = "pager\\u001b]0;x\\u0007"\n'
        'command = ["sh", "-c", "cat >/dev/null; printf \'\\\\033[2Jboom\\\\033]0;t\\\\007\' >&2; exit 3"]\n')
    d = DaemonProcess(home).start()
    try:
        _run(home, "spawn", "b1", "--worktree", str(wt))
        settings = wt / ".claude" / "settings.local.json"
        sid = "s-" + HOSTILE
        start = json.loads((TUI / "001-SessionStart.json").read_bytes())
        start.update(session_id=sid, transcript_path="/tmp/" + HOSTILE)  # refused: not .jsonl (a log line)
        assert run_hook(settings_command(settings, "SessionStart"), json.dumps(start).encode(), wt).returncode == 0
        pre = json.loads((STREAM / "007-PreToolUse.json").read_bytes())
        qs = pre["tool_input"]["questions"]
        qs[0]["question"], qs[0]["header"], qs[0]["options"][1]["label"] = HOSTILE, HOSTILE, "Blue" + HOSTILE
        pre.update(session_id=sid, tool_use_id="toolu_01HOSTILE" + "\x1b[2J")
        assert run_hook(settings_command(settings, "PreToolUse"), json.dumps(pre).encode(), wt).returncode == 0
        bash = {**pre, "tool_name": "Bash" + HOSTILE, "tool_input": {"command": "rm -rf / " + HOSTILE},
                "tool_use_id": "toolu_01BASH" + HOSTILE}
        assert run_hook(settings_command(settings, "PreToolUse"), json.dumps(bash).encode(), wt).returncode == 0
        perm = {k: v for k, v in bash.items() if k != "tool_use_id"}
        perm["hook_event_name"] = "PermissionRequest"
        held = subprocess.Popen(["sh", "-c", settings_command(settings, "PermissionRequest")], cwd=wt,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert held.stdin is not None
        held.stdin.write(json.dumps(perm).encode())
        held.stdin.close()
        wait_until(lambda: len(questions(home, "pending")) == 2, 30, what="the question and the permission prompt")

        # --json is exact
        exact = json.loads(_run(home, "questions", "--json", shows=False))
        q = next(x for x in exact if x["kind"] == "question")
        assert q["questions"][0]["question"] == HOSTILE and q["session_id"] == sid
        # every human rendering escapes
        out = _run(home, "questions")
        assert "Deploy?\\x1b[8m (hidden: this deletes prod)" in out and "\\u202eevil" in out
        _run(home, "questions", "--state", "all")
        _run(home, "send", "b1", HOSTILE, "--author", "me" + HOSTILE, "--session", sid, shows=False)
        _run(home, "inbox")
        _run(home, "inbox", "b1")
        _run(home, "ask", "b1", HOSTILE, "--option", HOSTILE, shows=False)
        _run(home, "preanswer", "b1", "--question", HOSTILE, "--option", HOSTILE)
        _run(home, "lanes")
        _run(home, "status", shows=False)
        _run(home, "events")
        _run(home, "answer", "nope" + HOSTILE, "--option", "x", ok=False)  # the error quotes the id
        pr = next(x for x in questions(home, "pending") if x["kind"] == "permission")
        _run(home, "answer", pr["id"], "--option", "deny", "--text", HOSTILE, shows=False)
        assert held.wait(60) == 0
        _run(home, "answer", q["id"], "--option", "Blue" + HOSTILE)
        _run(home, "answer", q["id"], "--option", "Blue" + HOSTILE, ok=False)  # refused: answered already
        _run(home, "events")
        _run(home, "notify", "test", ok=False)  # the channel fails with hostile stderr

        # tail, and tail --follow
        t = tmp_path / ("t" + HOSTILE.replace("\n", "").replace("/", "") + ".jsonl")
        t.write_bytes(b"")
        _run(home, "tail", str(t), "--builder", "b1")
        follow = subprocess.Popen([sys.executable, "-m", "hookd", "--home", os.fspath(home),
                                   "tail", str(t), "--builder", "b1", "--session", sid, "--follow"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert follow.stdout is not None
            first = follow.stdout.readline()  # "following ..."
            _run(home, "send", "b1", "again", "--session", sid, shows=False)
            # event lines of b1 (its session id hostile) up to the message's: a lane_changed
            # of b1 may come first (lanes refresh at most once a second)
            second = b""
            for _ in range(20):
                line = follow.stdout.readline()
                second += line
                if b"inbox_queued" in line or not line:
                    break
            assert b"inbox_queued" in second, second
        finally:
            follow.terminate()
            follow.wait(60)
        _clean("tail --follow", (first + second).decode())
        assert "Traceback" not in d.log.read_text()
    finally:
        code = _stop_cleanly(d)
    assert code == 0
    _clean("serve's log", d.log.read_text())  # the refused hostile transcript path was logged

    # replay (a golden mismatch prints a diff of agent text) and drift (unknown field names)
    scen = tmp_path / "scen"
    (scen / "hooks").mkdir(parents=True)
    pre.update(session_id="s1", tool_use_id="toolu_01R")
    pre[HOSTILE] = HOSTILE  # a field no model declares
    (scen / "hooks" / "001-PreToolUse.json").write_text(json.dumps(pre))
    (scen / "expected-events.jsonl").write_text(json.dumps({"kind": "x" + HOSTILE}) + "\n")
    _run(home, "replay", str(scen), ok=False)
    ver = tmp_path / "versions" / "9.9.9"
    shutil.copytree(scen, ver / "scen")
    out = _run(home, "drift", str(ver), "--no-replay", ok=False)
    assert "FAKE\\nhookd: all clear (1x" in out  # one line per field: no forged line
    _run(home, "unspawn", "b1")


def test_notifications_carry_no_control_characters() -> None:
    from hookd.models import Interaction
    from hookd.watchers.notify_channels import desktop_argv, interaction_alert, webhook_body
    from hookd.watchers.notify_config import Channel

    i = msgspec.convert({"id": "toolu_01X", "kind": "question", "builder": "b1", "session_id": "s" + HOSTILE,
                         "agent_id": None, "tool_name": "AskUserQuestion", "tool_use_id": "toolu_01X",
                         "state": "pending", "answers": None, "selections": None, "surface": None, "warning": None,
                         "error": None, "created_at": 0.0, "resolved_at": None, "revision": 1,
                         "questions": [{"question": HOSTILE, "options": [{"label": HOSTILE}]}]}, Interaction)
    alert = interaction_alert(i, 0, 3, 100.0)
    for text in desktop_argv(alert, "linux") + desktop_argv(alert, "darwin"):
        _clean("desktop notification", text)
    assert "Deploy?\\x1b[8m" in alert.message and alert.data["questions"] == [HOSTILE]  # data stays exact
    for fmt in ("slack", "ntfy"):
        body = json.loads(webhook_body(msgspec.convert({"type": "webhook", "name": "w", "url": "http://x", "format": fmt,
                                                        "topic": "t"}, Channel), alert))
        _clean(f"{fmt} webhook", json.dumps(body, ensure_ascii=False))



def test_hookd_tail_of_a_fifo_says_it_is_not_followed(home: Path, tmp_path: Path) -> None:
    """`hookd tail` names a transcript the daemon refuses to read (here a FIFO named like one)
    and exits 2, instead of saying it follows it; a regular file beside it is followed."""
    d = DaemonProcess(home).start()
    try:
        assert hookd_run(home, "spawn", "b1", "--settings-file", str(tmp_path / "b1.json")).returncode == 0
        fifo, good = tmp_path / "planted.jsonl", tmp_path / "good.jsonl"
        os.mkfifo(fifo)
        good.write_bytes(b"")
        r = hookd_cli(home, "tail", str(fifo), str(good), "--builder", "b1", timeout=60)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert f"not following {fifo}: " in r.stderr and "FIFO" in r.stderr
        assert f"following {good} for b1" in r.stdout and str(fifo) not in r.stdout
    finally:
        d.stop()


def test_arguments_that_are_not_utf8_are_refused_in_one_sentence(daemon: Any, home: Path, tmp_path: Path) -> None:
    """Bytes that are not UTF-8 on the command line (a pasted terminal sequence) get one
    sentence and exit 2 from every command that sends text, never a traceback."""
    assert hookd_run(home, "spawn", "b1", "--settings-file", str(tmp_path / "b1.json")).returncode == 0
    for args in ([b"send", b"b1", b"bad \x9b byte"], [b"ask", b"b1", b"Deploy \xff?"],
                 [b"answer", b"x\xff", b"--option", b"a"], [b"preanswer", b"b1", b"--question", b"q\xfe", b"--text", b"a"]):
        r = subprocess.run([os.fsencode(sys.executable), b"-m", b"hookd", b"--home", os.fsencode(home), *args],
                           capture_output=True, timeout=60)
        assert r.returncode == 2, (args, r.stderr)
        assert b"Traceback" not in r.stderr and r.stderr.count(b"\n") == 1, r.stderr
        assert b"not valid UTF-8" in r.stderr
