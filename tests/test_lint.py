"""ruff over the package, with the rules in pyproject.toml [tool.ruff]: the suite (and so CI)
fails on an unused or undefined name in hookd/, harness/ or hooks/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from .conftest import REPO


def test_ruff_finds_nothing_in_the_package():
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    r = subprocess.run([ruff, "check", "--no-cache", "hookd", "harness", "hooks"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
