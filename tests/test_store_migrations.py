"""Migrations that rebuild a table keep what it held (a real SQLite file, migrated the way a
user's is when a newer hookd starts on it)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import hookd.store.migrations as store_mod
from hookd.store import Store

pytestmark = pytest.mark.inproc


def test_events_keep_their_seq_through_0012_and_new_ones_follow_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home written before 0012 (events.seq AUTOINCREMENT, sqlite_sequence kept): after the
    migration every event has its seq, kind and data, the next event is the largest seq plus
    one, and neither the table nor sqlite_sequence involves AUTOINCREMENT any more (nor is
    there the unused events_builder index)."""
    db = tmp_path / "hookd.db"
    full = list(store_mod.MIGRATIONS)
    monkeypatch.setattr(store_mod, "MIGRATIONS", [m for m in full if m[0] < "0012"])

    def append(tx, n: int) -> None:  # noqa: ANN001
        for i in range(n):
            tx.append_event("probe", f"b{i % 3}", None, 1.0 + i, {"i": i})

    async def before() -> None:
        st = await Store(db).open()
        try:
            await st.write(append, 7)
        finally:
            await st.close()

    asyncio.run(before())
    c = sqlite3.connect(db)
    assert "AUTOINCREMENT" in c.execute("SELECT sql FROM sqlite_master WHERE name='events'").fetchone()[0]
    assert c.execute("SELECT seq FROM sqlite_sequence WHERE name='events'").fetchone() == (7,)
    c.close()

    monkeypatch.setattr(store_mod, "MIGRATIONS", full)

    async def after() -> None:
        st = await Store(db).open()
        try:
            assert "0012_events_seq_plain_rowid" in await st.applied_migrations()
            evs = await st.events_after(0, 100)
            assert [(e.seq, e.builder, e.data) for e in evs] == [(i + 1, f"b{i % 3}", {"i": i}) for i in range(7)]
            (_, new), = [await st.write(lambda tx: tx.append_event("probe", "b9", None, 9.0, {"i": 9}))]
            assert [e.seq for e in new] == [8]
        finally:
            await st.close()

    asyncio.run(after())
    c = sqlite3.connect(db)
    try:
        assert "AUTOINCREMENT" not in c.execute("SELECT sql FROM sqlite_master WHERE name='events'").fetchone()[0]
        assert c.execute("SELECT COUNT(*) FROM sqlite_sequence WHERE name='events'").fetchone() == (0,)
        # events are read by seq only: no index beside the table's own
        assert c.execute("SELECT name FROM sqlite_master WHERE tbl_name='events' AND type='index'").fetchall() == []
    finally:
        c.close()


def test_hook_kinds_of_rows_stored_before_0014_are_their_adapters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """0014 adds ``hook_events.hook_kind`` and fills it in for rows stored before it, by name
    (as the lanes read those rows then, whatever the harness): Claude Code's spelling, which the
    other harnesses of the time share, so every event a harness has gets its own adapter's kind
    (None for an event that means none), and a lane's last hook skips a ``notice`` as it did by
    name."""
    from hookd.harness.registry import ADAPTERS

    db = tmp_path / "hookd.db"
    full = list(store_mod.MIGRATIONS)
    monkeypatch.setattr(store_mod, "MIGRATIONS", [m for m in full if m[0] < "0014"])

    async def open_close() -> None:
        st = await Store(db).open()
        await st.close()

    asyncio.run(open_close())
    rows = [(harness, name) for harness in ("claude-code", "claw", "claw-http")
            for name in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
                         "PostToolUseFailure", "Stop", "SubagentStop", "PreCompact", "Drain", None, "SessionEnd",
                         "Notification")]
    c = sqlite3.connect(db)
    with c:
        c.execute("INSERT INTO sessions (id, builder, harness, started_at) VALUES ('s1', 'b1', 'claude-code', 1.0)")
        c.executemany("INSERT INTO hook_events (builder, harness, source, received_at, raw, hook_event_name, session_id)"
                      " VALUES (?, ?, 'live', ?, x'7b7d', ?, ?)",
                      [("b1", h, 1.0 + i, n, "s1" if h == "claude-code" else None) for i, (h, n) in enumerate(rows)])
    c.close()
    monkeypatch.setattr(store_mod, "MIGRATIONS", full)

    async def after() -> list[dict]:
        st = await Store(db).open()
        try:
            return await st.lane_inputs(["b1"])
        finally:
            await st.close()

    (lane,) = asyncio.run(after())
    c = sqlite3.connect(db)
    try:
        got = c.execute("SELECT harness, hook_event_name, hook_kind FROM hook_events ORDER BY id").fetchall()
    finally:
        c.close()
    assert got == [(h, n, ADAPTERS["claude-code"].hook_kinds.get(n) if n else None) for h, n in rows]
    assert all(k == ADAPTERS[h].hook_kinds[n] for h, n, k in got if n in ADAPTERS[h].hook_kinds)
    assert [k for _, _, k in got if k] and "notice" in {k for _, _, k in got}
    # claude-code's newest rows: SessionEnd, then a Notification (a notice: not activity)
    assert (lane["last_hook"]["hook_event_name"], lane["last_hook"]["kind"]) == ("SessionEnd", "session_end")


def test_a_fresh_schema_copy_is_what_migrate_makes(tmp_path: Path) -> None:
    """tests/fresh_schema.py gives the tests' new homes a copy of a migrated database: it must
    hold exactly what :func:`hookd.store.migrations.migrate` makes, in a WAL database."""
    from hookd.store.migrations import MIGRATIONS, migrate

    from .fresh_schema import image, migrate_fresh

    image()

    def opened(name: str) -> sqlite3.Connection:
        db = sqlite3.connect(tmp_path / name, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    def contents(db: sqlite3.Connection) -> dict[str, Any]:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {
            "schema": db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall(),
            "rows": {t: db.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables if t != "migrations"},
            "migrations": [r[0] for r in db.execute("SELECT name FROM migrations ORDER BY id")],
            "user_version": db.execute("PRAGMA user_version").fetchone(),
            "journal_mode": db.execute("PRAGMA journal_mode").fetchone(),
        }

    real, copied = opened("real.db"), opened("copied.db")
    migrate(real)
    migrate_fresh(copied)
    assert contents(copied) == contents(real)
    assert contents(copied)["migrations"] == [name for name, _ in MIGRATIONS]
    assert contents(copied)["journal_mode"] == ("wal",)
    migrate_fresh(copied)  # a database with tables is migrated for real: nothing applied twice
    assert contents(copied)["migrations"] == [name for name, _ in MIGRATIONS]
