"""`hookd service install|uninstall|status` (issue 23, item 4): the systemd user unit's and the
launchd agent's contents (goldens), `install` refusing where no user systemd answers, and what
`install`, `status` and `uninstall` ask ``systemctl --user``. No test needs a real systemd: a
``systemctl`` on the test's ``PATH`` records its arguments and answers as a user manager does
(the one on this machine, if any, is never reached)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hookd.config import Home
from hookd.service import Service, systemd_unit, unit_name

from .conftest import hookd_run

UNIT = """[Unit]
Description=hookd, the hook bridge between coding agents and their humans (home {home})

[Service]
Type=exec
ExecStart={python} -P -m hookd --home {home} serve
Restart=on-failure
RestartSec=2
RestartPreventExitStatus=2 4
StandardOutput=journal
StandardError=journal

[Install]
WantedBy=default.target
"""


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The user's directories under ``tmp`` and a ``systemctl`` that logs each call to
    ``calls`` (one JSON list a line); ``--user show-environment`` fails while ``down`` exists."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls, down = tmp_path / "calls", tmp_path / "down"
    (bin_ / "systemctl").write_text(f"""#!/bin/sh
python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@" >> {calls}
case "$2" in
  show-environment) [ -e {down} ] && {{ echo "Failed to connect to bus: No medium found" >&2; exit 1; }}; echo HOME=/x;;
  show) printf 'MainPID=4242\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\nUnitFileState=enabled\\n';;
esac
""")
    (bin_ / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", os.fspath(tmp_path / "user"))
    monkeypatch.setenv("XDG_CONFIG_HOME", os.fspath(tmp_path / "config"))
    return {"calls": calls, "down": down, "config": tmp_path / "config", "home": tmp_path / "home"}


def _calls(user: dict[str, Path]) -> list[list[str]]:
    return [json.loads(line) for line in user["calls"].read_text().splitlines()] if user["calls"].exists() else []


def test_the_systemd_unit(user: dict[str, Path]) -> None:
    home = Home.resolve(user["home"])
    r = hookd_run(user["home"], "service", "install", "--print")
    assert r.returncode == 0 and r.stdout == UNIT.format(home=home.root, python=os.sys.executable)
    assert _calls(user) == [] and not user["config"].exists()  # (--print writes and runs nothing)
    # an argument with a space, a quote, % and $ stays one word, as systemd reads ExecStart
    text = systemd_unit(home, ["/opt/my py/python", "-c", 'say "100%" $HOME'])
    assert 'ExecStart="/opt/my py/python" -c "say \\"100%%\\" $$HOME"\n' in text


def test_the_unit_names_its_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", os.fspath(tmp_path / "data"))
    assert unit_name(Home.resolve(tmp_path / "data" / "hookd")) == "hookd"
    other = unit_name(Home.resolve(tmp_path / "elsewhere"))
    assert other.startswith("hookd-") and len(other) == 14 and other != unit_name(Home.resolve(tmp_path / "e2"))


def test_the_launchd_agent(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "home")
    svc = Service(home, "launchd", {"HOME": os.fspath(tmp_path / "u")}, python="/usr/bin/python3")
    label = f"io.hookd.{svc.name}"
    assert svc.file == tmp_path / "u" / "Library" / "LaunchAgents" / f"{label}.plist"
    log = tmp_path / "u" / "Library" / "Logs" / f"{label}.log"
    assert svc.text() == f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>{label}</string>
	<key>ProgramArguments</key>
	<array>
		<string>/usr/bin/python3</string>
		<string>-P</string>
		<string>-m</string>
		<string>hookd</string>
		<string>--home</string>
		<string>{home.root}</string>
		<string>serve</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>StandardOutPath</key>
	<string>{log}</string>
	<key>StandardErrorPath</key>
	<string>{log}</string>
	<key>ProcessType</key>
	<string>Background</string>
</dict>
</plist>
"""


def test_install_refuses_where_no_user_systemd_answers(user: dict[str, Path]) -> None:
    user["down"].touch()
    r = hookd_run(user["home"], "service", "install")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("hookd: no user systemd is reachable here (systemctl --user show-environment: Failed to connect "
                        "to bus: No medium found): run the daemon yourself (hookd serve), or write the unit by hand from "
                        "hookd service install --print\n")
    assert _calls(user) == [["--user", "show-environment"]] and not user["config"].exists()


def test_install_status_uninstall(user: dict[str, Path]) -> None:
    home = Home.resolve(user["home"])
    name = unit_name(home)
    unit = user["config"] / "systemd" / "user" / f"{name}.service"
    r = hookd_run(user["home"], "service", "install")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"wrote {unit}; {name}.service enabled and (re)started\n"
                        f"{name}.service: active (running), pid 4242, enabled (systemd: {unit})\n"
                        f"logs: journalctl --user -u {name}.service\n")
    assert unit.read_text() == UNIT.format(home=home.root, python=os.sys.executable)
    show = ["--user", "show", f"{name}.service", "-p", "LoadState,ActiveState,SubState,MainPID,UnitFileState"]
    env = ["--user", "show-environment"]
    assert _calls(user) == [env, ["--user", "daemon-reload"], ["--user", "enable", f"{name}.service"],
                            ["--user", "restart", f"{name}.service"], env, show]
    r = hookd_run(user["home"], "service", "install", "--json")  # again: replaced, restarted
    assert json.loads(r.stdout) == {"manager": "systemd", "unit": f"{name}.service", "file": os.fspath(unit),
                                    "installed": True, "active": True, "state": "active (running)", "pid": 4242,
                                    "enabled": True, "logs": f"journalctl --user -u {name}.service", "replaced": True}
    r = hookd_run(user["home"], "service", "status")
    assert (r.returncode, r.stdout) == (0, f"{name}.service: active (running), pid 4242, enabled (systemd: {unit})\n"
                                           f"logs: journalctl --user -u {name}.service\n")
    user["calls"].unlink()
    r = hookd_run(user["home"], "service", "uninstall")
    assert (r.returncode, r.stdout) == (0, f"stopped and disabled {name}.service; removed {unit}\n")
    assert _calls(user) == [env, ["--user", "disable", "--now", f"{name}.service"], ["--user", "daemon-reload"]]
    assert not unit.exists()
    r = hookd_run(user["home"], "service", "uninstall")
    assert (r.returncode, r.stderr) == (1, f"hookd: no hookd service is installed for {home.root} ({unit} does not exist)\n")
