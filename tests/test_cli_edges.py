"""CLI edges: a followed event stream whose daemon stops, `hookd replay` on directories that
are not scenarios, and `hookd status` showing why a builder's hook client fell back to bash."""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hookd.daemonproc import DaemonProcess

from .conftest import FIXTURES, hookd_cli

pytestmark = pytest.mark.daemon

REFERENCE = FIXTURES / "tui-ask-answered-at-terminal"


def _no_traceback(r: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in r.stderr, r.stderr


# --- hookd events --follow when the daemon goes away -----------------------------------------


class _Follower:
    """`hookd events --follow --json` in a child process; reads its stdout lines as they come."""

    def __init__(self, home: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hookd", "--home", os.fspath(home), "events", "--follow", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.lines: list[dict] = []
        self._buf = b""
        self._sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)

    def read_until(self, n: int, timeout: float) -> list[dict]:
        """Wait (deadline ``timeout`` s) until ``n`` events were printed."""
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while len(self.lines) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the follower printed {len(self.lines)} events, not {n}")
            if not self._sel.select(left):
                continue
            chunk = self.proc.stdout.read()
            if not chunk:
                if self.proc.poll() is not None:
                    raise AssertionError(f"the follower exited early ({self.proc.returncode})")
                continue
            self._buf += chunk
            *done, self._buf = self._buf.split(b"\n")
            self.lines += [json.loads(line) for line in done if line.strip()]
        return self.lines

    def finish(self, timeout: float) -> tuple[int, list[dict], str]:
        """Wait for its exit: (exit code, every event it printed, its stderr)."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        rc = self.proc.wait(timeout)
        os.set_blocking(self.proc.stdout.fileno(), True)
        rest = self._buf + self.proc.stdout.read()
        self.lines += [json.loads(line) for line in rest.split(b"\n") if line.strip()]
        err = self.proc.stderr.read().decode()
        self._sel.close()
        return rc, self.lines, err


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_events_follow_says_so_when_the_daemon_stops(tmp_path: Path, how: str) -> None:
    home = tmp_path / "home"
    daemon = DaemonProcess(home).start()
    try:
        assert hookd_cli(home, "spawn", "b1", "--settings-file", str(tmp_path / "s.json")).returncode == 0
        assert hookd_cli(home, "send", "b1", "before the follower").returncode == 0
        follower = _Follower(home)
        follower.read_until(1, 30)
        for i in range(3):
            assert hookd_cli(home, "send", "b1", f"while following {i}").returncode == 0
        follower.read_until(4, 30)
        assert hookd_cli(home, "send", "b1", "just before the stop").returncode == 0
        committed = [json.loads(line) for line in hookd_cli(home, "events", "--json").stdout.splitlines()]
        if how == "stop":
            assert daemon.stop() == 0
        else:
            follower.read_until(len(committed), 30)  # a killed daemon cannot flush what it had not sent
            daemon.kill()
        rc, printed, err = follower.finish(30)
    finally:
        daemon.stop()
        daemon.kill()
    *printed, last = printed  # the JSON lines end with the error shape, saying why they end
    assert [e["seq"] for e in printed] == [e["seq"] for e in committed], "every committed event is printed first"
    assert rc == 3, (rc, err)
    [line] = err.strip().splitlines()
    assert line.startswith("hookd: the daemon stopped") and f"--after {committed[-1]['seq']}" in line, err
    assert last == {"error": {"code": "daemon_not_running", "message": line.removeprefix("hookd: ")}}


def test_events_follow_of_a_daemon_that_is_not_running_says_how_to_start_it(tmp_path: Path) -> None:
    r = hookd_cli(tmp_path / "home", "events", "--follow")
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr.startswith("hookd: the daemon is not running") and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_events_on_an_empty_log_says_so(tmp_path: Path) -> None:
    """As `hookd questions` says "no questions": an empty event log (or nothing after
    --after) is a line saying so, not silence; --json stays empty (no lines)."""
    home = tmp_path / "home"
    with DaemonProcess(home):
        assert (hookd_cli(home, "events").stdout, hookd_cli(home, "events", "--after", "9").stdout) == (
            "no events\n", "no events after seq 9\n")
        assert hookd_cli(home, "events", "--json").stdout == ""


def test_events_of_one_builder(tmp_path: Path) -> None:
    """`hookd events --builder B` (repeatable): only B's events, in the same words; a builder
    hookd does not know: exit 1, as `hookd lanes -b` (found by a fresh user's trial: a typo in a
    feed's filter waited silently)."""
    home = tmp_path / "home"
    with DaemonProcess(home):
        for b in ("b1", "b2"):
            assert hookd_cli(home, "spawn", b, "--settings-file", str(tmp_path / f"{b}.json"), "--no-mcp").returncode == 0
            assert hookd_cli(home, "send", b, f"hello {b}").returncode == 0
        # (the lanes' watcher may commit events between two reads: each read is compared with
        # the whole log read after it, up to its own last event)
        def log() -> list[dict]:
            return [json.loads(line) for line in hookd_cli(home, "events", "--json").stdout.splitlines()]

        one = [json.loads(line) for line in hookd_cli(home, "events", "--json", "--builder", "b2").stdout.splitlines()]
        assert one and one == [e for e in log() if e["builder"] == "b2" and e["seq"] <= one[-1]["seq"]]
        both = [json.loads(line) for line in hookd_cli(home, "events", "--json", "-b", "b1", "-b", "b2").stdout.splitlines()]
        assert {e["builder"] for e in both} == {"b1", "b2"}
        assert both == [e for e in log() if e["builder"] in ("b1", "b2") and e["seq"] <= both[-1]["seq"]]
        # a builder hookd does not know is an error at once, also for a feed that would wait
        for follow in ((), ("--follow",)):
            nobody = hookd_cli(home, "events", *follow, "--json", "--builder", "nobody", "-b", "b1")
            assert nobody.returncode == 1 and nobody.stderr == (
                "hookd: builder 'nobody' is not known: spawn it first (or check the name)\n"), nobody
            assert json.loads(nobody.stdout)["error"]["code"] == "not_found"
        bad = hookd_cli(home, "events", "--builder", "no/such")
        assert bad.returncode == 2 and "invalid builder id 'no/such'" in bad.stderr, bad


# --- hookd replay on what is not a scenario -------------------------------------------------


def test_replay_of_a_directory_without_payloads_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "empty" / "hooks").mkdir(parents=True)
    (tmp_path / "empty" / "expected-events.jsonl").write_text("")
    for scenario in (tmp_path / "empty", tmp_path / "empty" / "hooks"):
        r = hookd_cli(tmp_path / "home", "replay", str(scenario))
        assert r.returncode == 2, r.stderr
        _no_traceback(r)
        [line] = r.stderr.strip().splitlines()
        assert line.startswith("hookd: ") and "has no *.json payloads" in line, r.stderr


def test_replay_of_a_missing_directory_is_refused_cleanly(tmp_path: Path) -> None:
    r = hookd_cli(tmp_path / "home", "replay", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and r.stdout == ""
    assert "Traceback" not in r.stderr
    assert f"Directory '{tmp_path / 'nowhere'}' does not exist." in r.stderr, r.stderr


def test_replay_without_a_golden_file_says_to_record_one(tmp_path: Path) -> None:
    scenario = tmp_path / "new-scenario"
    shutil.copytree(REFERENCE / "hooks", scenario / "hooks")
    r = hookd_cli(tmp_path / "home", "replay", str(scenario))
    assert r.returncode == 1 and r.stdout == "", r.stdout
    _no_traceback(r)
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"hookd: {scenario / 'expected-events.jsonl'} does not exist") and "--update" in line, line
    assert not (scenario / "expected-events.jsonl").exists()


@pytest.mark.parametrize("content, says", [
    ("{", "cannot be read as JSON"),
    ('["steps"]', "must be a JSON object"),
    ('{"steps": {"007-PreToolUse.json": {"repeat": "twice"}}}', "step 007-PreToolUse.json"),
])
def test_replay_with_a_malformed_scenario_json_is_one_sentence(tmp_path: Path, content: str, says: str) -> None:
    scenario = tmp_path / "scenario"
    shutil.copytree(REFERENCE, scenario)
    (scenario / "scenario.json").write_text(content)
    r = hookd_cli(tmp_path / "home", "replay", str(scenario))
    assert r.returncode == 2, r.stderr
    _no_traceback(r)
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"hookd: {scenario / 'scenario.json'}") and says in line, line


# --- hookd status: the hook client's note beside a warning ----------------------------------


def test_status_table_shows_the_client_note_beside_the_no_hook_warning(tmp_path: Path, monkeypatch) -> None:
    """A builder spawned without a C compiler (note: why bash) from which no hook came yet
    (warning): the plain table shows both."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "auto")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no cc, gcc or clang either
    assert hookd_cli(home, "spawn", "b-fallback", "--settings-file", str(tmp_path / "f.json")).returncode == 0
    monkeypatch.undo()
    with DaemonProcess(home):
        as_json = json.loads(hookd_cli(home, "status", "--json").stdout)
        table = hookd_cli(home, "status")
    [b] = as_json["builders"]
    assert b["warning"] and b["client_note"] and "compiler" in b["client_note"]
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    row = next(line for line in lines if line.startswith("b-fallback "))
    assert "no hook received yet" in row
    assert any(b["client_note"] in line and line.startswith("b-fallback:") for line in lines), table.stdout


# --- a symlinked home; the inbox of a builder nobody knows ---------------------------------


def test_a_home_that_is_a_symlink_is_served_from_its_target(tmp_path: Path) -> None:
    """HOOKD_HOME kept on another disk behind a symlink: serve, spawn and the hooks work; the
    target is the home from then on (what status names and the generated commands use), so
    the link can be swapped later without moving this daemon or its hooks."""
    real = tmp_path / "disk" / "hookd-data"
    real.mkdir(parents=True)
    link = tmp_path / "home-link"
    link.symlink_to(real, target_is_directory=True)
    wt = tmp_path / "wt"
    wt.mkdir()
    d = DaemonProcess(link).start()
    try:
        r = hookd_cli(link, "status", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["home"] == os.fspath(real)
        r = hookd_cli(link, "spawn", "b1", "--worktree", os.fspath(wt))
        assert r.returncode == 0, r.stderr
        from .conftest import run_hook, settings_command

        command = settings_command(wt / ".claude" / "settings.local.json", "PreToolUse")
        assert os.fspath(real) in command and os.fspath(link) not in command
        assert run_hook(command, (REFERENCE / "hooks" / "007-PreToolUse.json").read_bytes(), wt).returncode == 0
        r = hookd_cli(link, "questions", "--json")
        assert [q["id"] for q in json.loads(r.stdout)] == ["toolu_01ASK0000000000000000001"]
    finally:
        d.stop()
        d.kill()


def test_the_inbox_of_an_unknown_builder_is_not_found(tmp_path: Path) -> None:
    """`hookd inbox nosuch` says the builder is not known (exit 1), as `hookd send nosuch`
    does, instead of "no messages"; a known builder with no messages is "no messages"."""
    home = tmp_path / "home"
    wt = tmp_path / "wt"
    wt.mkdir()
    d = DaemonProcess(home).start()
    try:
        for argv in (["inbox", "nosuch"], ["send", "nosuch", "hello"]):
            r = hookd_cli(home, *argv)
            _no_traceback(r)
            assert r.returncode == 1 and "not known" in r.stderr and len(r.stderr.strip().splitlines()) == 1, (argv, r.stderr)
        assert hookd_cli(home, "spawn", "b1", "--worktree", os.fspath(wt)).returncode == 0
        r = hookd_cli(home, "inbox", "b1")
        assert (r.returncode, r.stdout.strip()) == (0, "no messages"), r.stderr
    finally:
        d.stop()
        d.kill()


@pytest.mark.parametrize("var, value, says", [
    ("HOOKD_BODY_TIMEOUT_S", "abc", "positive number"),
    ("HOOKD_REDELIVER_AFTER_S", "-5", "positive number"),
    ("HOOKD_LIVENESS_S", "nan", "positive number"),
    ("HOOKD_TAIL_STEP_MS", "1.5", "positive whole number"),
])
def test_a_bad_tuning_variable_is_one_sentence_naming_it(var: str, value: str, says: str, tmp_path: Path) -> None:
    """The daemon's tuning variables are read when it starts: a value that is not a positive
    number is refused in one sentence naming the variable (it was a ValueError traceback)."""
    r = subprocess.run([sys.executable, "-m", "hookd", "--home", os.fspath(tmp_path / "home"), "serve"],
                       env={**os.environ, var: value}, capture_output=True, text=True, timeout=30)
    _no_traceback(r)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stderr)
    assert r.stderr.strip() == f"hookd: {var} must be a {says}, not {value!r}"
