"""Run `hookd serve` as a child process: used by `hookd replay`, the benchmarks and tests.

A real daemon on a real socket, started and stopped the way a user would (SIGTERM), or
killed with SIGKILL to test crash paths. Waits are on conditions with deadlines.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from hookd.config import Home
from hookd.models import HookdError


#: ``wait_until``'s polling when no interval is given: the first poll again after FIRST_S,
#: each wait then GROWTH times the last, up to MAX_S (seconds)
FIRST_S, GROWTH, MAX_S = 0.01, 1.25, 0.1


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float | None = None,
               what: str | Callable[[], str] = "condition", *, max_interval: float | None = None) -> Any:
    """Poll ``predicate`` until it returns a truthy value (returned) or ``timeout`` seconds
    pass: then raise TimeoutError naming ``what`` (or ``what()`` when callable). The only
    way hookd's tools and tests wait: never a bare sleep as synchronisation.

    Between polls: ``interval`` seconds, always the same when given (a benchmark timing how
    soon something happens); with no interval, 10 ms first and each wait 1.25 times the last
    up to 100 ms, so a condition met at once is seen at once and a long wait polls about ten
    times a second (a predicate asking a daemon costs both processes CPU at each poll).
    ``max_interval``: grow from ``interval`` up to it, the same way."""
    deadline = time.monotonic() + timeout
    wait = FIRST_S if interval is None else interval
    most = max(wait, MAX_S if interval is None else (max_interval or wait))
    while True:
        value = predicate()
        if value:
            return value
        now = time.monotonic()
        if now >= deadline:
            text = what() if callable(what) else what
            raise TimeoutError(f"timed out after {timeout} s waiting for {text}")
        time.sleep(min(wait, max(deadline - now, 0.0)))
        wait = min(wait * GROWTH, most)


class DaemonProcess:
    """`hookd --home HOME serve` in a child process.

    home: the daemon's home; log: file that receives its stderr (default HOME/serve.log);
    port: TCP port (0: any free port).
    """

    #: How the child is started: ``subprocess.Popen`` (tests/conftest.py installs one that
    #: forks a process which has imported the daemon already: tests/forkserve.py).
    popen: Callable[..., "subprocess.Popen[bytes]"] = subprocess.Popen

    def __init__(self, home: Path | str, log: Path | None = None, port: int = 0, env: dict[str, str] | None = None):
        self.home = Home.resolve(home)
        self.log = log or (self.home.root / "serve.log")
        self.port = port
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    def cli_args(self, *args: str) -> list[str]:
        # -P: never import a source checkout from the current directory instead of the
        # installed package
        return [sys.executable, "-P", "-m", "hookd", "--home", os.fspath(self.home.root), *args]

    def start(self, timeout: float = 15.0) -> "DaemonProcess":
        """Start and wait until the daemon answers on its socket and hook clients can find
        it (the endpoint file exists). Raises RuntimeError if it exits first."""
        self.home.root.mkdir(parents=True, exist_ok=True)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        logf = open(self.log, "ab")
        self.proc = self.popen(
            self.cli_args("serve", "--port", str(self.port)), stdout=logf, stderr=logf,
            stdin=subprocess.DEVNULL, env=self.env,
        )
        logf.close()

        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"hookd serve exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            return self.home.endpoint_file.exists() and self._status_ok()

        wait_until(ready, timeout, interval=0.02, what="hookd serve to be ready")
        return self

    def _status_ok(self) -> bool:
        from hookd.client import Client

        c = Client(self.home, timeout=2)
        try:
            # ours, not another daemon still serving this home (this one would then refuse)
            return c.get("/v1/status").get("pid") == (self.proc.pid if self.proc is not None else None)
        except HookdError:  # not listening yet, or busy starting (no answer in 2 s): asked again
            return False
        finally:
            c.close()

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM and wait; returns the exit code (None if it was not running)."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        """SIGKILL: no clean shutdown (the endpoint file stays, as after a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def client(self) -> Any:
        from hookd.client import Client

        return Client(self.home)

    def __enter__(self) -> "DaemonProcess":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
