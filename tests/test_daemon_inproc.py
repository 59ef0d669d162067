"""What tests/test_daemon.py checked of the core through the API, in process (tests/inproc.py):
an invalid payload kept while the next hook is served, the migrations recorded, an interaction
found by its tool_use_id. The process itself (listeners, signals, kill -9, the second serve,
the CLI without a daemon) stays in tests/test_daemon.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from hookd.store import MIGRATIONS

from .conftest import TUI
from .inproc import InProc

pytestmark = pytest.mark.inproc


def test_invalid_payload_is_kept_and_the_app_goes_on_serving(inproc: InProc) -> None:
    r = inproc.request("POST", "/v1/hooks/claude-code/b1", content=b'{"hook_event_name": 42}')
    assert r.status_code == 422
    [ev] = [e for e in inproc.events() if e["kind"] == "hook_invalid"]
    assert "hook_event_name" in ev["data"]["error"] and ev["data"]["bytes"] == 23
    r = inproc.request("POST", "/v1/hooks/claude-code/b1", content=(TUI / "007-PreToolUse.json").read_bytes())
    assert r.status_code == 200
    assert [q["id"] for q in inproc.questions("pending")] == ["toolu_01ASK0000000000000000001"]


def test_migrations_are_recorded(inproc: InProc) -> None:
    s = inproc.get("/v1/status")
    assert s["migrations"] == [name for name, _ in MIGRATIONS] and s["migrations"][0] == "0001_initial"


def test_interaction_is_found_by_its_tool_use_id_too(inproc: InProc) -> None:
    perm = json.loads((TUI / "008-PermissionRequest.json").read_bytes())
    post = (TUI / "010-PostToolUse.json").read_bytes()
    assert inproc.request("POST", "/v1/hooks/claude-code/b1", content=json.dumps(perm).encode()).status_code == 200  # seen first: pr_ id
    assert inproc.request("POST", "/v1/hooks/claude-code/b1", content=post).status_code == 200
    [q] = inproc.questions()
    assert q["id"].startswith("pr_") and q["tool_use_id"] == "toolu_01ASK0000000000000000001"
    r = inproc.request("GET", "/v1/interactions/toolu_01ASK0000000000000000001")
    assert r.status_code == 200 and r.json()["id"] == q["id"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux only")
def test_the_spool_is_read_once_its_watch_is_in_place(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A payload spooled after the start's passes listed the spool and before the spool's watch
    was in place gives no event: a spool pass begins once the watch is in place (the passes
    all came before it, and such a payload waited for the next spooled one)."""
    import hookd.watchers.watch as watch
    from hookd.core.spool import Spool

    from .conftest import wait_until

    order: list[str] = []
    real_inotify, real_pass = watch._inotify, Spool._pass  # noqa: SLF001

    def inotify(dirs: tuple[str, ...], recursive: bool, *args: Any) -> Any:
        ino = real_inotify(dirs, recursive, *args)
        if recursive:  # the spool's watch (the tailer's folders are not watched recursively)
            order.append("watch")
        return ino

    async def counted(self: Spool) -> dict[str, int]:
        order.append("pass")
        return await real_pass(self)

    monkeypatch.setattr(watch, "_inotify", inotify)
    monkeypatch.setattr(Spool, "_pass", counted)
    app = InProc(home).start()
    try:
        wait_until(lambda: "watch" in order and "pass" in order[order.index("watch"):], 30,
                   what=lambda: f"a spool pass after its watch ({order})")
    finally:
        app.stop()
