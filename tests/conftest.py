"""Shared fixtures: a real daemon process on a real socket in a private home."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess, wait_until

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "claude-code" / "2.1.332"
TUI = FIXTURES / "tui-ask-answered-at-terminal" / "hooks"
#: a time as hookd says one to a person (hookd.clock.when: ``2026-12-02 19:52:07 +00:00``), a pattern
LOCAL_TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d"

__all__ = ["REPO", "FIXTURES", "TUI", "wait_until", "run_hook", "hookd_cli", "hookd_run"]


@pytest.fixture(scope="session", autouse=True)
def forked_daemons():
    """Every DaemonProcess of the run starts forked from its test's process, which imported the
    daemon once (tests/forkserve.py), unless the test is marked ``exec_daemon`` or
    ``HOOKD_TEST_DAEMON=exec``: then a new interpreter, as a user starts it."""
    from . import forkserve, fresh_schema

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DaemonProcess, "popen", forkserve.ForkedServe)
        fresh_schema.install(mp)
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """(Before any of the test's fixtures, module-scoped ones too: they start daemons.)"""
    from . import forkserve

    forkserve.exec_only = bool(item.get_closest_marker("exec_daemon"))


class _Chromium:
    """One Chromium per worker (Playwright driving Debian's headless Chromium,
    /usr/bin/chromium-headless-shell, else its full Chromium, /usr/bin/chromium; ``HOOKD_CHROMIUM``
    overrides both), launched by the first test that asks for ``browser`` and
    closed after the last of a run of such tests (``pytest_runtest_teardown`` below): the
    browser modules are one ``xdist_group``, so one launch serves them all. Closed rather than
    kept to the session's end: between its calls Playwright's sync API leaves its event loop
    marked running in this thread, which ``asyncio.run`` in a later test would refuse."""

    def __init__(self) -> None:
        self._pw: Any = None
        self.browser: Any = None

    def get(self) -> Any:
        """The running ``playwright.sync_api.Browser``, launched if none is; fails (``CI=true``)
        or skips the test when the binary is missing."""
        if self.browser is not None and self.browser.is_connected():
            return self.browser
        self.close()
        path = os.environ.get("HOOKD_CHROMIUM") or next(
            (p for p in ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium") if os.path.exists(p)),
            "/usr/bin/chromium-headless-shell")
        if not os.path.exists(path):
            msg = f"{path} is missing (.ci/run installs it: apt-get install -y chromium-headless-shell)"
            if os.environ.get("CI") == "true":
                pytest.fail(msg)
            pytest.skip(msg)
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        # tests run as root in CI
        self.browser = self._pw.chromium.launch(executable_path=path, args=["--no-sandbox"])
        return self.browser

    def close(self) -> None:
        if self.browser is not None:
            self.browser.close()
            self.browser = None
        if self._pw is not None:
            self._pw.stop()
            self._pw = None


_chromium = _Chromium()


@pytest.fixture
def browser() -> Any:
    """A Playwright ``Browser`` (Chromium), shared by consecutive tests that use it; each test
    makes its own contexts and pages (test_web_browser's ``page``)."""
    return _chromium.get()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the test's own fixtures (its pages and contexts) are torn down: close Chromium
    unless the next test uses it too."""
    result = yield
    if nextitem is None or "browser" not in getattr(nextitem, "fixturenames", ()):
        _chromium.close()
    return result


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def daemon(home: Path):
    """A running `hookd serve` on ``home``; stopped (SIGTERM) after the test."""
    d = DaemonProcess(home).start()
    yield d
    d.stop()
    d.kill()


@pytest.fixture
def inproc(home: Path):
    """hookd's core and app on ``home`` in this process (tests/inproc.py); stopped after the test."""
    from .inproc import InProc

    app = InProc(home).start()
    yield app
    app.stop()


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    w = tmp_path / "worktree"
    w.mkdir()
    return w


def stage_installed(dest: Path) -> Path:
    """A copy of the package at ``dest/hookd`` laid out as it is installed (``harness/`` as
    ``hookd.harness``, ``hooks/`` as ``hookd.hooks``; no bytecode, no static files): what
    import-linter and mypy read, as they walk only the package's own folder. Returns ``dest``."""
    ignore = shutil.ignore_patterns("__pycache__", "static")
    shutil.copytree(REPO / "hookd", dest / "hookd", ignore=ignore)
    shutil.copytree(REPO / "harness", dest / "hookd" / "harness", ignore=ignore)
    shutil.copytree(REPO / "hooks", dest / "hookd" / "hooks", ignore=ignore)
    return dest


def hookd_cli(home: Path, *args: str, input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the `hookd` CLI against ``home`` in a process of its own (its exit code, stdout and
    stderr; text unless ``input`` is given, as bytes); never raises on exit code. The process
    is forked from this one, which has imported hookd (tests/forkserve.py), as the tests'
    daemons are; in a module marked ``exec_daemon`` or ``e2e``, or with
    ``HOOKD_TEST_DAEMON=exec``, it is ``python -m hookd``, a new interpreter."""
    from . import forkserve

    argv = ["--home", os.fspath(home), *args]
    if not forkserve.forking():
        return subprocess.run([sys.executable, "-m", "hookd", *argv], input=input, capture_output=True,
                              timeout=timeout, text=input is None)

    def cli() -> int:
        from hookd.cli import main

        main(argv, prog_name="hookd")
        return 0

    r = forkserve.run_forked(cli, input=input, text=input is None, timeout=timeout)
    return subprocess.CompletedProcess([sys.executable, "-m", "hookd", *argv], r.returncode, r.stdout, r.stderr)


def hookd_run(home: Path | None, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """The `hookd` CLI against ``home`` (None: no ``--home``) run in this process (click's CliRunner: the same
    parsing, commands and output, without an interpreter's start, which was most of the CPU
    a test spent on a CLI call): for tests where the CLI's process is not the point (a builder
    spawned to have hooks, an answer sent to reach the agent). Never raises on exit code; an
    exception the CLI does not turn into an exit code fails the test."""
    from click.testing import CliRunner

    from hookd.cli import main

    argv = [*(["--home", os.fspath(home)] if home is not None else []), *args]
    r = CliRunner().invoke(main, argv, input=input, catch_exceptions=False)
    return subprocess.CompletedProcess(["hookd", *args], r.exit_code, r.stdout, r.stderr)


def settings_command(settings_file: Path, event: str) -> str:
    """The command hookd generated for ``event`` in a settings file."""
    data = json.loads(settings_file.read_text())
    for group in data["hooks"][event]:
        for h in group["hooks"]:
            if "# hookd builder=" in h["command"]:
                return h["command"]
    raise AssertionError(f"no hookd command for {event} in {settings_file}")


def run_hook(command: str, payload: bytes, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    """Run a generated hook exactly as Claude Code does: ``sh -c "<command>"``, payload on stdin."""
    return subprocess.run(["sh", "-c", command], input=payload, cwd=cwd, capture_output=True, timeout=timeout)


def questions(home: Path, state: str = "all") -> list[dict[str, Any]]:
    """The daemon's interactions: ``GET /v1/questions`` over its socket, what `hookd questions
    --json` prints, read in this process (a CLI process per look cost the suite an interpreter
    start each; the CLI's own output is tested where it is the point: test_cli_output,
    test_operator, test_cli_edges)."""
    from hookd.client import Client

    c = Client(Home.resolve(home))
    try:
        return c.get("/v1/questions", state=state)
    finally:
        c.close()


def events(home: Path) -> list[dict[str, Any]]:
    """The daemon's event log (``GET /v1/events``, what `hookd events --json` prints), read in
    this process."""
    from hookd.client import Client

    c = Client(Home.resolve(home))
    try:
        return list(c.lines("/v1/events", after=0, limit=100000))
    finally:
        c.close()


def _group_module_fixture_users(items: list[pytest.Item]) -> None:
    """Each module's tests that use a module- or class-scoped fixture (a recording made once,
    a daemon shared by a module's tests) become one ``xdist_group`` named after the module, unless
    they are in a group already: under ``--dist loadgroup`` ungrouped tests go to any worker, and
    each worker would set the fixture up again (tests/e2e/test_record.py recorded its two Claude
    Code sessions on every worker that ran one of its tests)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else ()
        if any(d[-1].scope in ("module", "class", "package") for d in defs if d):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup`` pytest-xdist keeps an ``xdist_group``'s tests on one worker by
    suffixing their node ids with ``@<group>`` (tests/test_bad_input.py's tests share one daemon
    and end with a check over all of them). pytest 9.2 keeps node ids where xdist 3.8 cannot
    change them: the suffix is lost and the group is split across workers. Refuse to run then
    instead of failing later for that reason (pyproject.toml pins pytest below 9.2)."""
    _group_module_fixture_users(items)
    result = yield
    # the groups first (the fuzzing module's one daemon, the browser tests' one Chromium at a
    # time, the CLI's module-wide rigs), each in its own order: under --dist loadgroup each is
    # one worker's from the start, instead of the last minutes of the run being four workers
    # each running a browser on two cores
    items.sort(key=lambda i: i.get_closest_marker("xdist_group") is None)
    if getattr(config.option, "loadgroup", False):
        split = [i.nodeid for i in items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
        if split:
            raise pytest.UsageError(
                f"pytest-xdist's loadgroup did not group {len(split)} tests (e.g. {split[0]}): "
                "this pytest keeps node ids where pytest-xdist cannot suffix them; install pytest<9.2")
    return result


# --- e2e accounting: the run says how many real-client tests ran; in CI none may skip ----

_e2e = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_runtest_logreport(report):
    if "e2e" not in report.keywords:
        return
    if report.when == "call":
        _e2e["passed" if report.passed else "failed"] += 1
    elif report.skipped:
        _e2e["skipped"] += 1
    elif report.failed:
        _e2e["failed"] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    n = _e2e["passed"] + _e2e["failed"]
    terminalreporter.write_line(
        f"e2e tests executed: {n} (passed {_e2e['passed']}, failed {_e2e['failed']}, skipped {_e2e['skipped']})"
    )
    if os.environ.get("CI") == "true" and _e2e["skipped"]:
        terminalreporter.write_line("e2e tests were skipped under CI=true: that is a failure", red=True)
    from . import hardening_stats

    if hardening_stats.counts():
        terminalreporter.write_line(f"bad-input examples tried: {sum(hardening_stats.counts().values())} "
                                    f"(per route: {hardening_stats.RESULTS})")


def pytest_sessionfinish(session, exitstatus):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: its counts go to the controller
        from . import hardening_stats

        workeroutput["hardening"] = hardening_stats.counts()
        return
    if os.environ.get("CI") == "true" and _e2e["skipped"] and session.exitstatus == 0:
        session.exitstatus = 1


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist: a worker's bad-input counts join the controller's (the e2e counts come
    with the test reports the workers forward)."""
    from . import hardening_stats

    for what, n in getattr(node, "workeroutput", {}).get("hardening", {}).items():
        hardening_stats.tried(what, n)
