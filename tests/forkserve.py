"""`hookd serve` started by fork from the test's own process instead of a new interpreter.

A daemon's start was mostly the interpreter importing the daemon (about 0.37 of 0.45 CPU-s
per start, on the 2-core machine of docs/testing.md): every test that starts a daemon paid it
again. ``ForkedServe`` is a ``subprocess.Popen`` whose child is a fork of this process, which
has imported ``hookd.cli`` and ``hookd.daemon`` once; the child then runs the same
``hookd --home HOME serve --port N`` as ``python -P -m hookd`` would (``hookd.cli.main``), on
its own pid, sockets, database and log, with the given environment, stdin, stdout and stderr.
It gets signals, is killed with SIGKILL and exits with the CLI's exit code as the real one.

What it does not repeat is the interpreter's start and the imports: where that is the point
(a module marked ``pytest.mark.exec_daemon``: the start-up and crash tests, one module of the
real Claude Code's), and everywhere with ``HOOKD_TEST_DAEMON=exec``, DaemonProcess starts a new interpreter.
tests/conftest.py installs it (``DaemonProcess.popen``).

:func:`run_forked` runs any function of this process's in such a child, for the tests that
start many short processes of hookd's own code (a spawn killed at each of its file operations).
"""

from __future__ import annotations

import faulthandler
import gc
import io
import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
import warnings
from typing import Any, Callable

#: Python's own signal dispositions at start-up (everything else: SIG_DFL)
_FRESH = {signal.SIGINT: signal.default_int_handler, signal.SIGPIPE: signal.SIG_IGN,
          signal.SIGXFSZ: signal.SIG_IGN}

#: the warning filters as this module was imported (before pytest's per-test ones)
_WARNINGS = list(warnings.filters)
_kept: list[Any] = []

#: set per test by tests/conftest.py: the test's module wants a new interpreter per daemon
exec_only = False


def wanted(args: Any) -> bool:
    """Fork for ``python -P -m hookd ... serve ...`` (DaemonProcess.cli_args), unless this
    test or the environment asks for a new interpreter."""
    return (forking() and isinstance(args, list) and args[:4] == [sys.executable, "-P", "-m", "hookd"]
            and "serve" in args)


class ForkedServe(subprocess.Popen):  # type: ignore[type-arg]
    """``subprocess.Popen(argv, ...)`` for DaemonProcess: forks when ``wanted(argv)``, else
    starts the program as Popen does. Same object, methods and exit codes."""

    def _execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env,  # type: ignore[override]
                       startupinfo, creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite,
                       errread, errwrite, *rest: Any) -> None:
        if not wanted(args):
            return super()._execute_child(args, executable, preexec_fn, close_fds, pass_fds, cwd, env,
                                          startupinfo, creationflags, shell, p2cread, p2cwrite, c2pread,
                                          c2pwrite, errread, errwrite, *rest)
        warm()
        fds = [p2cread, c2pwrite, errwrite]
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _child(args[4:], fds, cwd, env)
        self.pid = pid
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)


_warm = False


def warm() -> None:
    """Once per process, before its first fork: import what ``hookd serve`` imports (the
    daemon, and what it imports as it starts: the notifier, the folder watch, uvicorn's
    lifespan) and build the app once, so the routes' compiled patterns are in :mod:`re`'s cache:
    every forked daemon finds them done instead of doing them again (about 50 ms of a forked
    daemon's 110 ms of CPU from start to stop)."""
    global _warm
    if _warm:
        return
    import asyncinotify  # noqa: F401
    import uvicorn.lifespan.on  # noqa: F401

    import hookd.cli  # noqa: F401
    import hookd.daemon  # noqa: F401
    import hookd.watchers.notify  # noqa: F401
    import hookd.watchers.watch  # noqa: F401
    from hookd.http.app import build_app

    build_app(None, token="warm-up")  # type: ignore[arg-type]  # (routes only: no request comes)
    _warm = True


def _child(argv: list[str], fds: list[int], cwd: Any, env: Any) -> None:
    def serve() -> int:
        import hookd.cli

        hookd.cli.main(argv, prog_name="hookd")
        return 0

    _run_child(serve, fds, cwd, env)


def forking() -> bool:
    """Does this test start hookd's processes by fork (not marked for new interpreters, and no
    ``HOOKD_TEST_DAEMON=exec``)?"""
    return not exec_only and os.environ.get("HOOKD_TEST_DAEMON", "fork") != "exec"


def run_forked(fn: Callable[[], int], *, input: bytes | str | None = None, text: bool = True,
               timeout: float = 120) -> subprocess.CompletedProcess[Any]:
    """Run ``fn`` in a child forked from this process (set up as a fresh process: see
    :func:`_run_child`), ``input`` on its stdin (None: /dev/null), its stdout and stderr read
    into the result (str when ``text``, else bytes); ``returncode`` as Popen gives it (``-N``:
    killed by signal N; ``fn``'s return value, or a SystemExit's code). For code this process
    has imported already, where a new interpreter's start is not the point. Raises
    subprocess.TimeoutExpired (the child killed) after ``timeout`` seconds."""
    p = _Forked(fn, stdin=subprocess.DEVNULL if input is None else subprocess.PIPE, text=text)
    try:
        out, err = p.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise
    return subprocess.CompletedProcess(["<forked>"], p.returncode, out, err)


class _Forked(subprocess.Popen):  # type: ignore[type-arg]
    """Popen's pipes, wait and kill around a forked child running ``fn``."""

    def __init__(self, fn: Callable[[], int], stdin: int, text: bool):
        self._fn = fn
        super().__init__(["<forked>"], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text)

    def _execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env,  # type: ignore[override]
                       startupinfo, creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite,
                       errread, errwrite, *rest: Any) -> None:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _run_child(self._fn, [p2cread, c2pwrite, errwrite], cwd, env)
        self.pid = pid
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)


def _run_child(fn: Callable[[], int], fds: list[int], cwd: Any, env: Any) -> None:
    """In a just-forked child: make it a fresh process (``fds`` as its stdin, stdout and
    stderr, every other inherited fd number taken by /dev/null, ``cwd`` and ``env`` if given,
    signal dispositions, streams, logging and warnings as at an interpreter's start), run
    ``fn`` and exit with its return value (a SystemExit's code; 1 and the traceback on
    stderr for any other exception). Never returns."""
    code = 1
    try:
        gc.freeze()  # the parent's objects: never collected here (nor their pages copied)
        # the parent's thread pools' workers do not exist here (the one that forked, if it was
        # one, is this thread): never joined at exit
        pools = sys.modules.get("concurrent.futures.thread")
        if pools is not None:
            pools._threads_queues.clear()  # type: ignore[attr-defined]
        devnull = os.open(os.devnull, os.O_RDWR)
        for target, fd in enumerate(fds):
            os.dup2(fd if fd != -1 else devnull, target)
        # close_fds=True, except that each inherited number stays taken (by /dev/null): an
        # object of the parent finalized here closes that number, never one the daemon opened
        for name in os.listdir("/proc/self/fd"):
            if int(name) > 2 and int(name) != devnull:
                try:
                    os.dup2(devnull, int(name), inheritable=False)
                except OSError:  # (the directory listing's own fd, closed by now)
                    pass
        if cwd is not None:
            os.chdir(cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update({os.fsdecode(k): os.fsdecode(v) for k, v in env.items()})
        for sig in range(1, signal.NSIG):
            try:
                if sig in _FRESH or signal.getsignal(sig) not in (signal.SIG_DFL, None):
                    signal.signal(sig, _FRESH.get(sig, signal.SIG_DFL))
            except (OSError, ValueError):
                pass
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        # the parent's streams and handlers stay referenced: not finalized here
        _kept.extend([sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__])
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), errors="backslashreplace",
                                      line_buffering=True)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        root = logging.getLogger()  # as in a new interpreter: no handlers (pytest's are here)
        for h in root.handlers[:]:
            _kept.append(h)
            root.removeHandler(h)
        root.setLevel(logging.WARNING)
        logging.disable(logging.NOTSET)
        faulthandler.disable()  # (pytest's, on a stream of the parent)
        warnings.filters[:] = _WARNINGS  # as at start-up, not as pytest set them for the test
        try:
            code = fn()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, int | None):
                print(e.code, file=sys.stderr)
        threading._shutdown()  # type: ignore[attr-defined]  # as at an interpreter's exit (not atexit's: the parent's)
    except BaseException:  # noqa: BLE001 - as an uncaught exception would end the interpreter
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
