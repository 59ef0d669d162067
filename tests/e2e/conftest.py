"""Fixtures for end-to-end tests against the real Claude Code and Codex CLI binaries.

* ``claude_bin``: path of the pinned binary. Missing binary: the test FAILS
  when ``CI=true`` (CI must have run ``.ci/install-claude-code.sh``), and is
  skipped otherwise.
* ``codex_bin``: the same for the pinned Codex CLI (``.ci/install-codex.sh``);
  a binary of another version counts as missing.
* ``tmux_bin``: path of tmux, with the same fail-in-CI / skip-locally rule.
* ``fake_api``: a started ``FakeAnthropicAPI`` with an empty script (set one
  with ``fake_api.set_script(...)``), stopped after the test.
* ``e2e_home`` / ``e2e_project``: private HOME and project directories.
* ``e2e_env``: ``hermetic_env(e2e_home, fake_api.url)``.

For the whole session, every hermetic environment runs Claude Code with JavaScriptCore's
optimizing JIT tiers off (``_runtime_env``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from . import drivers
from .drivers import ClaudeNotFound, find_claude_bin, hermetic_env
from .fake_api import FakeAnthropicAPI


@pytest.fixture(scope="session", autouse=True)
def _runtime_env():
    """``BUN_JSC_useDFGJIT=0`` in every hermetic environment of the tests: Claude Code 2.1.332
    is a Bun executable, and JavaScriptCore's DFG (and so FTL) tier compiles in threads of its
    own, work a process that lives seconds rarely gets back. The binary and its behaviour are
    the same (a JIT tier changes speed, not semantics); its CPU in the e2e tier is ~17% less
    (docs/testing.md "Claude Code's JIT and the browser in the tests"; checked against the
    binary by test_harness_selfcheck's ``test_the_binary_reads_the_tests_jit_setting``). The
    benchmarks run it as a user does."""
    drivers.RUNTIME_ENV["BUN_JSC_useDFGJIT"] = "0"
    yield
    drivers.RUNTIME_ENV.clear()


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _missing(what: str) -> None:
    if _in_ci():
        pytest.fail(f"{what} (CI=true: the e2e prerequisites must be installed)", pytrace=False)
    pytest.skip(what)


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """Absolute path of the Claude Code 2.1.332 binary (see ``find_claude_bin``)."""
    try:
        return find_claude_bin()
    except ClaudeNotFound as exc:
        _missing(str(exc))
        raise  # unreachable: _missing fails or skips


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """Absolute path of the Codex CLI 0.171.0 binary (see ``find_codex_bin``)."""
    # imported here: codex_drivers imports a test module's helpers (test_harness_selfcheck)
    from .codex_drivers import CODEX_VERSION, CodexNotFound, find_codex_bin

    try:
        path = find_codex_bin()
    except CodexNotFound as exc:
        _missing(str(exc))
        raise  # unreachable: _missing fails or skips
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30,
                         stdin=subprocess.DEVNULL).stdout.strip()
    if out != f"codex-cli {CODEX_VERSION}":
        _missing(f"{path} is {out!r}, not codex-cli {CODEX_VERSION}; run .ci/install-codex.sh")
    return path


@pytest.fixture(scope="session")
def tmux_bin() -> str:
    """Absolute path of tmux (fails in CI when missing, else skips)."""
    path = shutil.which("tmux") or ("/usr/bin/tmux" if os.path.exists("/usr/bin/tmux") else None)
    if not path:
        _missing("tmux not installed; run .ci/install-claude-code.sh")
    return path  # type: ignore[return-value]


@pytest.fixture
def fake_api():
    """A running ``FakeAnthropicAPI`` (empty script) on 127.0.0.1."""
    api = FakeAnthropicAPI()
    api.start()
    try:
        yield api
    finally:
        api.stop()


@pytest.fixture
def e2e_home(tmp_path: Path) -> Path:
    """A private, empty HOME for Claude Code."""
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def e2e_project(tmp_path: Path) -> Path:
    """An empty project directory (the session cwd)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    return proj


@pytest.fixture
def e2e_env(e2e_home: Path, fake_api: FakeAnthropicAPI) -> dict[str, str]:
    """Hermetic environment pointing Claude Code at ``fake_api``."""
    return hermetic_env(e2e_home, fake_api.url)
