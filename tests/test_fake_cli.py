"""The e2e fakes run by hand (docs/testing.md "Trying Claude Code by hand, offline", "Trying
Codex by hand, offline"): each started as a file prints its URL, and the Responses fake writes
a CODEX_HOME's config.toml pointing at itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, wait_until

pytestmark = pytest.mark.inproc


@pytest.mark.parametrize("fake, script, extra", [
    ("fake_api.py", "fixtures/claude-code/2.1.332/tui-ask-answered-at-terminal/model-script.json", False),
    ("fake_responses.py", "fixtures/codex/0.171.0/exec-bash-hooks/model-script.json", True),
])
def test_a_fake_run_as_a_file_serves_and_prints_its_url(tmp_path: Path, fake: str, script: str, extra: bool) -> None:
    out = tmp_path / "url"
    args = [sys.executable, str(REPO / "tests" / "e2e" / fake), str(REPO / script)]
    if extra:
        args += ["--codex-home", str(tmp_path / "codex-home")]
    with out.open("w") as f:
        p = subprocess.Popen(args, stdout=f, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        url = wait_until(lambda: out.read_text().strip() or (p.poll() is not None and "exited"), 30, what="its URL")
        assert url.startswith("http://127.0.0.1:"), (url, p.stderr.read() if p.poll() is not None else "")
        if extra:
            config = (tmp_path / "codex-home" / "config.toml").read_text()
            assert f'base_url = "{url}"' in config and 'wire_api = "responses"' in config
    finally:
        p.terminate()
        assert p.wait(timeout=30) == 0
