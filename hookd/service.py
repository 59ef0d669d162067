"""The daemon as a service (issue 23, item 4): `hookd service install|uninstall|status` writes,
removes and reads a systemd user unit (Linux) or a launchd agent (macOS) that runs `hookd
serve` for one home, started at login and restarted when it fails.

- **systemd** (Linux): ``$XDG_CONFIG_HOME/systemd/user/<name>.service`` (``~/.config``),
  ``Restart=on-failure`` (not after exit 2, a bad configuration, nor 4, a daemon already
  serving the home: restarting cannot mend either), the daemon's stderr to the journal
  (``journalctl --user -u <name>``); `install` then runs ``systemctl --user daemon-reload``,
  ``enable`` and ``restart`` (a new hookd takes over at once). A user systemd is reachable
  when ``systemctl --user show-environment`` succeeds (``systemctl`` on ``PATH``, a user
  manager running for this user, its bus found through ``XDG_RUNTIME_DIR``): not in most
  containers, nor over ``su`` without a login session; `install` refuses there and says so.
- **launchd** (macOS): ``~/Library/LaunchAgents/<label>.plist`` with ``KeepAlive``
  ``{SuccessfulExit: false}`` (restarted when it fails), ``RunAtLoad``, its output to
  ``~/Library/Logs/<label>.log`` (launchd keeps no journal); loaded with ``launchctl
  bootstrap gui/<uid>``.

The unit runs this interpreter (``python -P -m hookd``: the same install as the CLI that wrote
it) with ``--home``. The default home's unit is ``hookd``; another home's ``hookd-<8 hex of
its path's sha256>`` (several homes, several units; a home named by ``HOOKD_HOME`` too). No socket activation: see
docs/decisions.md "The daemon as a service".
"""

from __future__ import annotations

import hashlib
import os
import plistlib
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hookd.config import Home, atomic_write
from hookd.errors import ConfigError, NotFound

#: Exit codes of `hookd serve` after which the service is not restarted (2: a bad
#: configuration; 4: another daemon already serves the home).
NO_RESTART_EXITS = (2, 4)
#: Seconds systemd waits before restarting a daemon that failed.
RESTART_SEC = 2
#: The launchd label's prefix (reverse-DNS, as launchd labels are).
LAUNCHD_PREFIX = "io.hookd."


def manager(platform: str = sys.platform) -> str:
    """``launchd`` on macOS, else ``systemd``."""
    return "launchd" if platform == "darwin" else "systemd"


def unit_name(home: Home) -> str:
    """``hookd`` for the per-user data directory's home (the default without ``HOOKD_HOME``:
    platformdirs' ``user_data_dir("hookd")``), else ``hookd-<8 hex>`` of the home's path."""
    import platformdirs

    if os.path.realpath(platformdirs.user_data_dir("hookd", appauthor=False)) == os.path.realpath(home.root):
        return "hookd"
    return "hookd-" + hashlib.sha256(os.fsencode(os.path.realpath(home.root))).hexdigest()[:8]


def serve_argv(home: Home, python: str = sys.executable) -> list[str]:
    """The command the service runs: this interpreter, ``-P -m hookd --home HOME serve``."""
    return [python, "-P", "-m", "hookd", "--home", os.path.realpath(home.root), "serve"]


def _systemd_word(word: str) -> str:
    """``word`` as one argument of a unit's ``ExecStart=``: double-quoted with ``\\`` and
    ``"`` escaped when it holds a space, a quote or a backslash; ``%`` doubled (a specifier
    otherwise), ``$`` doubled (a variable otherwise)."""
    w = word.replace("%", "%%").replace("$", "$$")
    if any(c in w for c in ' \t"\'\\;'):
        w = '"' + w.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return w


def systemd_unit(home: Home, argv: Sequence[str]) -> str:
    """The systemd user unit running ``argv`` (:func:`serve_argv`) for ``home``."""
    return "\n".join([
        "[Unit]",
        f"Description=hookd, the hook bridge between coding agents and their humans (home {home.root})",
        "",
        "[Service]",
        "Type=exec",
        "ExecStart=" + " ".join(_systemd_word(a) for a in argv),
        "Restart=on-failure",
        f"RestartSec={RESTART_SEC}",
        "RestartPreventExitStatus=" + " ".join(map(str, NO_RESTART_EXITS)),
        "StandardOutput=journal",
        "StandardError=journal",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ])


def launchd_plist(label: str, argv: Sequence[str], log: Path) -> str:
    """The launchd agent ``label`` running ``argv``, its output appended to ``log``."""
    doc = {"Label": label, "ProgramArguments": list(argv), "RunAtLoad": True,
           "KeepAlive": {"SuccessfulExit": False}, "StandardOutPath": os.fspath(log),
           "StandardErrorPath": os.fspath(log), "ProcessType": "Background"}
    return plistlib.dumps(doc, sort_keys=False).decode()


class Service:
    """The service of ``home`` under ``mgr`` (``systemd`` or ``launchd``), its files under the
    user's directories in ``environ`` (``HOME``, ``XDG_CONFIG_HOME``); ``run`` runs
    ``systemctl`` / ``launchctl`` (``subprocess.run``'s signature: tests hand in a recorder)."""

    def __init__(self, home: Home, mgr: str | None = None, environ: Mapping[str, str] = os.environ,
                 python: str = sys.executable):
        self.home = home
        self.manager = mgr or manager()
        self.environ = environ
        self.argv = serve_argv(home, python)
        self.name = unit_name(home)
        user = Path(environ.get("HOME") or os.path.expanduser("~"))
        if self.manager == "systemd":
            config = Path(environ.get("XDG_CONFIG_HOME") or user / ".config")
            self.file = config / "systemd" / "user" / f"{self.name}.service"
            self.unit = f"{self.name}.service"
        else:
            self.unit = LAUNCHD_PREFIX + self.name
            self.file = user / "Library" / "LaunchAgents" / f"{self.unit}.plist"
            self.log = user / "Library" / "Logs" / f"{self.unit}.log"

    def text(self) -> str:
        """The unit file's (or the plist's) contents."""
        if self.manager == "systemd":
            return systemd_unit(self.home, self.argv)
        return launchd_plist(self.unit, self.argv, self.log)

    # --- the service manager ---------------------------------------------------------------
    def _ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``systemctl --user ARGS`` (or ``launchctl ARGS``); raises ConfigError when it
        fails and ``check``."""
        prog = "systemctl" if self.manager == "systemd" else "launchctl"
        exe = shutil.which(prog, path=self.environ.get("PATH"))
        if exe is None:
            raise ConfigError(self._unreachable(f"{prog} is not on PATH"))
        argv = [exe, "--user", *args] if self.manager == "systemd" else [exe, *args]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=dict(self.environ),
                               stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ConfigError(f"{prog} {' '.join(args)} failed: {e}") from None
        if check and r.returncode != 0:
            raise ConfigError(f"{prog} {' '.join(argv[1:])} failed (exit {r.returncode}): "
                              f"{(r.stderr or r.stdout).strip() or 'no output'}")
        return r

    def _unreachable(self, why: str) -> str:
        return (f"no user {self.manager} is reachable here ({why}): run the daemon yourself (hookd serve), "
                f"or write the unit by hand from hookd service install --print")

    def reachable(self) -> None:
        """Raise ConfigError (one sentence: why, and what to do) unless the user's service
        manager answers: ``systemctl --user show-environment`` (``launchctl print gui/<uid>``)."""
        args = ("show-environment",) if self.manager == "systemd" else ("print", f"gui/{os.getuid()}")
        try:
            r = self._ctl(*args, check=False)
        except ConfigError as e:
            raise ConfigError(self._unreachable(e.message)) from None
        if r.returncode != 0:
            prog = "systemctl --user" if self.manager == "systemd" else "launchctl"
            said = (r.stderr or r.stdout).strip().splitlines()
            raise ConfigError(self._unreachable(f"{prog} {args[0]}: {said[0] if said else f'exit {r.returncode}'}"))

    def install(self) -> dict[str, Any]:
        """Write the unit, then enable and (re)start it. Returns :meth:`status`. Raises
        ConfigError, with nothing written, when no user service manager is reachable."""
        self.reachable()
        self.file.parent.mkdir(parents=True, exist_ok=True)
        existed = self.file.exists()
        atomic_write(self.file, self.text().encode(), mode=0o644)
        if self.manager == "systemd":
            self._ctl("daemon-reload")
            self._ctl("enable", self.unit)
            self._ctl("restart", self.unit)
        else:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            if existed:
                self._ctl("bootout", f"gui/{os.getuid()}/{self.unit}", check=False)
            self._ctl("bootstrap", f"gui/{os.getuid()}", os.fspath(self.file))
        return {**self.status(), "replaced": existed}

    def uninstall(self) -> dict[str, Any]:
        """Stop and disable the service and remove its file. Raises NotFound when it is not
        installed."""
        if not self.file.exists():
            raise NotFound(f"no hookd service is installed for {self.home.root} ({self.file} does not exist)")
        self.reachable()
        if self.manager == "systemd":
            self._ctl("disable", "--now", self.unit)
            self.file.unlink()
            self._ctl("daemon-reload")
        else:
            self._ctl("bootout", f"gui/{os.getuid()}/{self.unit}", check=False)
            self.file.unlink()
        return {"manager": self.manager, "unit": self.unit, "file": os.fspath(self.file), "removed": True}

    def status(self) -> dict[str, Any]:
        """``{"manager", "unit", "file", "installed", "active", "state", "pid", "enabled",
        "logs"}``: read from ``systemctl --user show`` (``launchctl print``); ``state`` its
        words (``active (running)``, ``inactive (dead)``, ``failed (...)``), ``pid`` None when
        none runs. Raises ConfigError when no user service manager is reachable."""
        out: dict[str, Any] = {"manager": self.manager, "unit": self.unit, "file": os.fspath(self.file),
                               "installed": self.file.exists()}
        self.reachable()
        if self.manager == "systemd":
            r = self._ctl("show", self.unit, "-p", "LoadState,ActiveState,SubState,MainPID,UnitFileState")
            p = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
            main_pid = int(p.get("MainPID") or 0)
            out.update(active=p.get("ActiveState") == "active",
                       state=f"{p.get('ActiveState', '?')} ({p.get('SubState', '?')})",
                       pid=main_pid or None, enabled=p.get("UnitFileState") == "enabled",
                       logs=f"journalctl --user -u {self.unit}")
        else:
            r = self._ctl("print", f"gui/{os.getuid()}/{self.unit}", check=False)
            p = {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in r.stdout.splitlines()) if v}
            pid = int(p["pid"]) if p.get("pid", "").isdigit() else None
            out.update(active=p.get("state") == "running", state=p.get("state") or "not loaded", pid=pid,
                       enabled=r.returncode == 0, logs=os.fspath(self.log))
        return out
