"""ruff and mypy over the package, with their settings in pyproject.toml ([tool.ruff],
[tool.mypy]): the suite (and so CI) fails on an unused or undefined name or a type error in
hookd/, harness/ or hooks/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from .conftest import REPO, stage_installed


def test_ruff_finds_nothing_in_the_package():
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    r = subprocess.run([ruff, "check", "--no-cache", "hookd", "harness", "hooks"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_finds_nothing_in_the_package(tmp_path):
    """mypy over ``hookd`` laid out as installed (``harness/`` as ``hookd.harness``, ``hooks/``
    as ``hookd.hooks``: a copy, as tests/test_adapter_protocol.py makes for import-linter),
    with [tool.mypy] of pyproject.toml; any error fails, named by its path in the repository."""
    mypy = shutil.which("mypy", path=os.path.dirname(sys.executable)) or shutil.which("mypy")
    if mypy is None:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    stage = stage_installed(tmp_path / "stage")
    r = subprocess.run([mypy, "--config-file", str(REPO / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache")],
                       cwd=stage, capture_output=True, text=True, timeout=600)
    out = (r.stdout + r.stderr).replace("hookd/harness/", "harness/").replace("hookd/hooks/", "hooks/")
    assert r.returncode == 0, out
