"""The CLI imports only what a command needs (issue 20 item 1): each command runs as a real
process, as a user runs it, and reports every module it imported by its exit; heavy modules a
command does not need must not be among them. No clock: how fast they start is
`bench/cli.py`'s to judge; this guards the structure that makes them fast, so that a stray
top-level import fails here instead of only in a benchmark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hookd.daemonproc import DaemonProcess

pytestmark = pytest.mark.daemon

#: The CLI's entry point as the console script runs it, plus: every module imported by the
#: time the process exits, one per line, into the file named by the first argument.
RUN = """
import atexit, sys
out = sys.argv.pop(1)
def dump():
    with open(out, "w") as f:
        f.write("\\n".join(sorted(sys.modules)))
atexit.register(dump)
sys.argv[0] = "hookd"
from hookd.cli import main
main()
"""

#: Never on a command's path: the old HTTP client, the MCP SDK and its models, the daemon's
#: server stack.
NEVER = {"httpx", "httpcore", "anyio", "mcp", "mcp_types", "pydantic", "pydantic_core", "starlette", "uvicorn",
         "asyncio", "hookd.daemon", "hookd.core", "hookd.store", "hookd.http"}
#: Printing a table needs tabulate, which reads its own version with importlib.metadata.
TABLE = {"tabulate", "importlib.metadata"}
#: Not on the path of a command that reads from the daemon and prints for a human (hookd.client
#: speaks HTTP on the socket itself; JSON with the standard library's json): msgspec and the
#: record shapes of hookd.models, the standard library's HTTP client with its email parser and
#: ssl, and every harness module (adapters, tool views: the daemon renders a tool's input).
READ_PATH_NEVER = {"msgspec", "hookd.models", "http", "http.client", "email", "ssl", "hookd.harness"}


def imported(tmp_path: Path, *args: str, stdin: bytes | None = None, rc: int = 0) -> tuple[set[str], str]:
    """Run ``hookd ARGS`` in a fresh interpreter; the names of the modules it imported and of
    their top-level packages, and its stdout."""
    out = tmp_path / "modules.txt"
    r = subprocess.run([sys.executable, "-P", "-c", RUN, os.fspath(out), *args], input=stdin,
                       capture_output=True, timeout=120)
    assert r.returncode == rc, r.stderr.decode()
    names = out.read_text().split()
    return set(names) | {n.split(".")[0] for n in names}, r.stdout.decode()


def test_version_loads_click_and_nothing_of_hookd_beyond_its_entry(tmp_path: Path) -> None:
    mods, out = imported(tmp_path, "--version")
    assert out == "hookd, version 0.1.0\n"
    assert "click" in mods
    heavy = (NEVER | TABLE | {"msgspec", "http", "platformdirs", "hookd.models", "hookd.config", "hookd.client",
                              "hookd.cli_read", "hookd.cli_steer", "hookd.cli_dev", "logging"}) & mods
    assert not heavy, heavy


def test_status_with_the_daemon_down_loads_no_table_and_no_server(tmp_path: Path) -> None:
    mods, out = imported(tmp_path, "--home", os.fspath(tmp_path / "home"), "status", rc=3)
    assert out == ""
    heavy = (NEVER | TABLE | READ_PATH_NEVER | {"platformdirs", "hookd.cli_read", "hookd.cli_steer", "hookd.cli_dev"}) & mods
    assert not heavy, heavy


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the default home is computed without platformdirs on Linux")
def test_the_default_home_is_found_without_platformdirs(tmp_path: Path) -> None:
    """A user runs hookd without --home or HOOKD_HOME: the per-user data directory, found
    without importing platformdirs (hookd.config.default_home)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HOOKD_HOME", "XDG_DATA_HOME")}
    for extra in ({"XDG_DATA_HOME": os.fspath(tmp_path / "data")}, {"HOME": os.fspath(tmp_path)}):
        out = tmp_path / "modules.txt"
        r = subprocess.run([sys.executable, "-P", "-c", RUN, os.fspath(out), "status"], env={**env, **extra},
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 3, r.stderr
        where = tmp_path / "data" / "hookd" if "XDG_DATA_HOME" in extra else tmp_path / ".local" / "share" / "hookd"
        assert f"the daemon is not running for {where};" in r.stderr, r.stderr
        assert "platformdirs" not in out.read_text().split()


@pytest.mark.parametrize("xdg", [None, "", "  ", "/srv/data", "/srv/data/", "relative/data", "~/data"])
@pytest.mark.parametrize("home", ["/home/ana", "/", "relative", None])
def test_the_default_home_is_platformdirs_answer(xdg: str | None, home: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever XDG_DATA_HOME and HOME say, the default home is platformdirs' user data
    directory for hookd (computed without it in the usual cases on Linux, asked otherwise)."""
    import platformdirs

    from hookd.config import default_home

    monkeypatch.delenv("HOOKD_HOME", raising=False)
    for name, value in (("XDG_DATA_HOME", xdg), ("HOME", home)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    try:
        want = Path(platformdirs.user_data_dir("hookd", appauthor=False))
    except RuntimeError:  # (no home directory platformdirs can find: default_home raises as it does)
        with pytest.raises(RuntimeError):
            default_home()
        return
    assert default_home() == want


def test_questions_loads_its_own_commands_only_and_no_table(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with DaemonProcess(home) as d:
        mods, out = imported(tmp_path, "--home", os.fspath(home), "questions")
        assert out == "no questions\n"
        heavy = (NEVER | TABLE | READ_PATH_NEVER | {"hookd.cli_steer", "hookd.cli_dev", "hookd.spawn"}) & mods
        assert not heavy, heavy

        r = subprocess.run(d.cli_args("spawn", "b1", "--settings-file", os.fspath(tmp_path / "settings.json")),
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        d.client().post_json("/v1/builders/b1/asks", {"question": "Which database?", "options": ["postgres", "sqlite"]})
        # a permission prompt too: its tool input comes as the daemon's tool_view (no harness module here)
        hook = {"session_id": "s1", "transcript_path": os.fspath(tmp_path / "t.jsonl"), "cwd": os.fspath(tmp_path),
                "hook_event_name": "PermissionRequest", "permission_mode": "default", "tool_name": "Bash",
                "tool_input": {"command": "rm -f README.md", "description": "Remove the readme"}}
        d.client().post("/v1/hooks/claude-code/b1", json.dumps(hook).encode(), {"content-type": "application/json"})
        for state in ("pending", "all"):
            mods, out = imported(tmp_path, "--home", os.fspath(home), "questions", "--state", state)
            # one block per interaction (hookd.cli_render._interaction): no table
            assert "Which database?" in out and "postgres" in out and "rm -f README.md" in out, out
            heavy = (NEVER | TABLE | READ_PATH_NEVER | {"hookd.cli_steer", "hookd.cli_dev", "hookd.spawn"}) & mods
            assert not heavy, heavy


def test_events_print_without_msgspec_and_json_keeps_its_encoder(tmp_path: Path) -> None:
    """``hookd events`` (a streamed reply) prints without msgspec too; ``--json`` loads it, for
    its exact encoder (hookd.cli_render._echo_json), as before."""
    home = tmp_path / "home"
    with DaemonProcess(home) as d:
        r = subprocess.run(d.cli_args("spawn", "b1", "--settings-file", os.fspath(tmp_path / "settings.json")),
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        d.client().post_json("/v1/builders/b1/asks", {"question": "Which database?"})
        mods, out = imported(tmp_path, "--home", os.fspath(home), "events")
        assert "human_input_requested b1" in out, out
        assert not (NEVER | READ_PATH_NEVER) & mods, (NEVER | READ_PATH_NEVER) & mods
        mods, out = imported(tmp_path, "--home", os.fspath(home), "questions", "--json")
        assert json.loads(out)[0]["questions"][0]["question"] == "Which database?"
        assert "msgspec" in mods and not (NEVER | (READ_PATH_NEVER - {"msgspec"})) & mods


def test_mcp_serves_its_tools_without_the_sdk(tmp_path: Path) -> None:
    hello = b"".join(json.dumps(m).encode() + b"\n" for m in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ))
    mods, out = imported(tmp_path, "--home", os.fspath(tmp_path / "home"), "mcp", "--builder", "b1", stdin=hello)
    replies = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert [t["name"] for t in replies[1]["result"]["tools"]] == ["ask_user_async", "await_answers", "check_answers"]
    heavy = (NEVER | TABLE | READ_PATH_NEVER | {"hookd.cli_read", "hookd.cli_steer", "hookd.cli_dev"}) & mods
    assert not heavy, heavy
