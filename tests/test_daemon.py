"""The daemon as a process: listeners, access, errors, lifecycle, durability (what it checked of
the core through the API is tests/test_daemon_inproc.py)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys

import httpx
import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess

from .conftest import TUI, events, hookd_cli, hookd_run, questions

pytestmark = [pytest.mark.daemon, pytest.mark.exec_daemon]  # the start and the signals of a new interpreter


def _tcp(home):
    """The running daemon's TCP port and the home's API token."""
    h = Home.resolve(home)
    return h.read_endpoint().port, h.read_token()


def _post_hook(home, payload: bytes, token=None, builder="b1"):
    port, real = _tcp(home)
    headers = {"Authorization": f"Bearer {token if token is not None else real}"}
    return httpx.post(f"http://127.0.0.1:{port}/v1/hooks/claude-code/{builder}", content=payload, headers=headers)


def test_files_and_sockets_are_private(daemon, home):
    h = Home.resolve(home)
    assert stat.S_IMODE(os.stat(h.socket_path).st_mode) == 0o600
    assert stat.S_ISSOCK(os.stat(h.socket_path).st_mode)
    assert stat.S_IMODE(os.stat(h.socket_path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(h.token_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(h.endpoint_file).st_mode) == 0o600


def test_tcp_listens_on_loopback_only_and_needs_the_token(daemon, home):
    port, token = _tcp(home)
    s = hookd_cli(home, "status", "--json")
    assert json.loads(s.stdout)["tcp_port"] == port
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
        r = httpx.get(f"http://127.0.0.1:{port}/v1/status", headers=headers)
        assert r.status_code == 401
        assert r.json() == {"error": {"code": "unauthorized", "message": "missing or wrong bearer token"}}
    r = httpx.get(f"http://127.0.0.1:{port}/v1/status", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200
    import psutil

    conns = [c for c in psutil.Process(daemon.proc.pid).net_connections("tcp") if c.status == "LISTEN"]
    assert [c.laddr.ip for c in conns] == ["127.0.0.1"]


def test_errors_have_one_json_shape(daemon, home):
    port, token = _tcp(home)
    auth = {"Authorization": f"Bearer {token}"}
    cases = [
        (httpx.get(f"http://127.0.0.1:{port}/v1/nope", headers=auth), 404, "not_found"),
        (httpx.get(f"http://127.0.0.1:{port}/v1/questions?state=bogus", headers=auth), 400, "bad_request"),
        (httpx.get(f"http://127.0.0.1:{port}/v1/interactions/missing", headers=auth), 404, "not_found"),
        (httpx.get(f"http://127.0.0.1:{port}/v1/events?after=x", headers=auth), 400, "bad_request"),
        (httpx.post(f"http://127.0.0.1:{port}/v1/hooks/claude-code/b1", content=b"{oops", headers=auth), 422, "payload_invalid"),
        (httpx.post(f"http://127.0.0.1:{port}/v1/hooks/claude-code/bad%20id", content=b"{}", headers=auth), 400, "config_error"),
        (httpx.post(f"http://127.0.0.1:{port}/v1/hooks/nosuch/b1", content=b"{}", headers=auth), 404, "not_found"),
    ]
    for r, status, code in cases:
        assert r.status_code == status, r.text
        body = r.json()
        assert set(body) == {"error"} and body["error"]["code"] == code and body["error"]["message"]


def test_second_serve_on_the_same_home_refuses_with_one_sentence(daemon, home):
    r = subprocess.run([sys.executable, "-m", "hookd", "--home", str(home), "serve"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 4
    assert r.stderr.strip().count("\n") == 0
    assert "already serving" in r.stderr and str(daemon.proc.pid) in r.stderr
    assert hookd_cli(home, "status").returncode == 0  # the first one is untouched


def test_sigterm_shuts_down_cleanly(home):
    d = DaemonProcess(home).start()
    h = Home.resolve(home)
    assert d.stop() == 0
    assert not h.endpoint_file.exists() and not h.socket_path.exists()
    assert "hookd stopped" in d.log.read_text()


def test_shutdown_stops_the_daemon_of_its_home(home, tmp_path):
    other = DaemonProcess(tmp_path / "other").start()  # another home's daemon runs on
    d = DaemonProcess(home).start()
    r = hookd_cli(home, "shutdown")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"stopped the daemon (pid {d.proc.pid})\n", "")
    assert d.proc.wait(10) == 0 and "hookd stopped" in d.log.read_text()
    assert not Home.resolve(home).socket_path.exists()
    again = hookd_cli(home, "shutdown")
    assert again.returncode == 3 and again.stderr.startswith("hookd: the daemon is not running for ")
    assert other.proc.poll() is None and hookd_cli(tmp_path / "other", "status").returncode == 0
    assert other.stop() == 0


def test_shutdown_says_when_the_daemon_has_not_exited_in_time(home):
    d = DaemonProcess(home).start()
    r = hookd_cli(home, "shutdown", "--timeout", "0")  # (looked at once: a daemon takes longer than that to exit)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (f"hookd: the daemon (pid {d.proc.pid}) has not exited 0 s after SIGTERM; a second one forces it:"
                        f" kill {d.proc.pid}\n")
    assert d.proc.wait(10) == 0  # the SIGTERM was sent: it exits all the same
    bad = hookd_cli(home, "shutdown", "--timeout", "-1")
    assert bad.returncode == 2 and "-1" in bad.stderr  # refused before anything is sent


def test_sigint_shuts_down_cleanly(home):
    d = DaemonProcess(home).start()
    d.proc.send_signal(signal.SIGINT)
    assert d.proc.wait(10) == 0


@pytest.mark.parametrize("cmd", [["status"], ["questions"], ["events"], ["events", "--follow"]])
def test_commands_without_a_daemon_say_how_to_start_it(home, cmd):
    r = hookd_cli(home, *cmd)
    assert r.returncode == 3
    assert r.stderr.startswith("hookd: the daemon is not running for ")
    assert f"hookd --home {home} serve" in r.stderr and r.stderr.count("\n") == 1
    assert r.stdout == ""


@pytest.mark.parametrize("cmd", [
    ["status"], ["ls"], ["lanes"], ["questions"], ["events"], ["inbox", "list"], ["shutdown"],
    ["send", "b1", "hi"], ["answer", "q-1", "--option", "allow"], ["dismiss", "q-1", "--reason", "stale"],
])
def test_json_commands_without_a_daemon_print_the_error_shape(home, cmd):
    """A script reading a ``--json`` command's stdout gets the API's one error shape, with
    the sentence on stderr for its human and the exit status saying which."""
    r = hookd_cli(home, *cmd, "--json")
    assert r.returncode == 3
    assert r.stderr.startswith("hookd: the daemon is not running for ")
    body = json.loads(r.stdout)
    assert body == {"error": {"code": "daemon_not_running", "message": r.stderr.strip().removeprefix("hookd: ")}}


@pytest.mark.parametrize("args", [
    ["lanes", "--json", "--bogus"], ["questions", "--state", "nope", "--json"], ["inbox", "list", "--json", "-x"],
    ["--bogus", "lanes", "--json"], ["answer", "--json"],
])
def test_a_usage_error_with_json_is_the_error_shape_too(home, args):
    """click's usage text on stderr and exit 2 as for any command; with ``--json`` on the
    command line, ``bad_request`` on stdout (before any option's callback could run)."""
    r = hookd_cli(home, *args)
    assert r.returncode == 2 and "Usage: hookd" in r.stderr, r
    body = json.loads(r.stdout)
    assert body["error"]["code"] == "bad_request" and body["error"]["message"] in r.stderr
    plain = hookd_cli(home, *[a for a in args if a != "--json"])
    assert plain.returncode == 2 and plain.stdout == ""


def test_a_json_after_double_dash_is_the_agents(home):
    """`hookd run B -- --json`: the agent's argument, so hookd's error stays one sentence."""
    r = hookd_cli(home, "run", "b1", "--", "--json")
    assert r.returncode in (2, 3) and r.stdout == "" and r.stderr.startswith("hookd: "), r


def test_status_without_a_daemon_counts_the_hooks_waiting_in_its_spool(home):
    spool = Home.resolve(home).spool_dir("b1")
    spool.mkdir(parents=True)
    for n in (1, 2):
        (spool / f"{n}-delivery.json").write_bytes(b'{"hook_event_name": "Stop"}')
        r = hookd_cli(home, "status")
        assert r.returncode == 3 and r.stderr.startswith("hookd: the daemon is not running for ")
        waits = "1 hook payload waits" if n == 1 else "2 hook payloads wait"
        assert r.stderr.endswith(f" serve; {waits} in its spool, ingested when it starts\n"), r.stderr


def test_events_follow_streams_new_events_after_commit(daemon, home):
    p = subprocess.Popen([sys.executable, "-m", "hookd", "--home", str(home), "events", "--follow", "--json"],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert _post_hook(home, (TUI / "001-SessionStart.json").read_bytes()).status_code == 200
        first = json.loads(p.stdout.readline())
        second = json.loads(p.stdout.readline())
        assert (first["kind"], second["kind"]) == ("hook_received", "session_started")
        assert second["seq"] == first["seq"] + 1
        assert set(first) == {"seq", "kind", "builder", "session_id", "at", "data"}
    finally:
        p.terminate()
        p.wait(10)


def test_events_after_filters_by_seq(daemon, home):
    _post_hook(home, (TUI / "001-SessionStart.json").read_bytes())
    r = hookd_cli(home, "events", "--after", "1", "--json")
    seqs = [json.loads(line)["seq"] for line in r.stdout.splitlines()]
    # session_started (2), then whatever followed it (a lane_changed): all after 1, in order
    assert seqs[0] == 2 and seqs == list(range(2, 2 + len(seqs)))


def test_kill_9_loses_nothing_acknowledged(home):
    d = DaemonProcess(home).start()
    for name in ("001-SessionStart.json", "007-PreToolUse.json", "010-PostToolUse.json"):
        assert _post_hook(home, (TUI / name).read_bytes()).status_code == 200
    before = events(home)
    d.kill()
    d.start()
    try:
        after = events(home)
        # every acknowledged event kept, once, in order; the restarted daemon's lane watcher may
        # have recorded its own view since (the agent's process is gone): lane changes only
        assert after[:len(before)] == before
        assert {e["kind"] for e in after[len(before):]} <= {"lane_changed"}, after[len(before):]
        [q] = questions(home)
        assert q["state"] == "answered" and q["answers"] == {"Which color do you prefer?": "Blue"}
    finally:
        d.stop()


def test_status_lists_spawned_builder_with_no_hooks_as_not_yet_armed(daemon, home, worktree):
    assert hookd_run(home, "spawn", "b7", "--worktree", str(worktree)).returncode == 0
    s = json.loads(hookd_cli(home, "status", "--json").stdout)
    [b] = s["builders"]
    assert b["builder"] == "b7" and b["spawned"] and b["hooks_seen"] == 0
    assert "no hook received yet" in b["warning"]


def test_status_names_each_builders_hook_client(daemon, home, worktree, tmp_path, monkeypatch):
    """Which client each builder's hooks run (the manifest's), and why one fell back to bash."""
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "bash")
    assert hookd_run(home, "spawn", "b-bash", "--settings-file", str(tmp_path / "bash.json")).returncode == 0
    monkeypatch.setenv("HOOKD_HOOK_CLIENT", "auto")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no cc, gcc or clang either: bash, with a note
    assert hookd_run(home, "spawn", "b-fallback", "--settings-file", str(tmp_path / "fallback.json")).returncode == 0
    monkeypatch.undo()
    default = hookd_run(home, "spawn", "b-default", "--worktree", str(worktree))
    assert default.returncode == 0
    want_default = json.loads(Home.resolve(home).manifest("b-default").read_text())["client"]
    s = json.loads(hookd_cli(home, "status", "--json").stdout)
    by = {b["builder"]: b for b in s["builders"]}
    assert by["b-bash"]["client"] == "bash" and by["b-bash"]["client_note"] is None
    assert by["b-fallback"]["client"] == "bash" and "compiler" in by["b-fallback"]["client_note"]
    assert by["b-default"]["client"] == want_default and want_default in ("c", "bash")
    table = hookd_cli(home, "status").stdout
    header = next(line for line in table.splitlines() if line.startswith("builder"))
    assert header.split()[:4] == ["builder", "harness", "hook", "client"]
    row = next(line for line in table.splitlines() if line.startswith("b-bash "))
    assert row.split()[2:4] == ["bash", "script"]
    note = next(line for line in table.splitlines() if line.startswith("b-fallback: "))
    assert note.startswith("b-fallback: hook client bash script: ") and "compiler" in note


def test_long_home_path_gets_a_short_socket(tmp_path):
    home = tmp_path / ("x" * 120)
    with DaemonProcess(home) as d:
        sock = Home.resolve(home).socket_path
        assert len(os.fsencode(sock)) <= 100 and sock.exists()
        assert hookd_cli(home, "status").returncode == 0


