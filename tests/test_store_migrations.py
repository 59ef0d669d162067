"""Migrations that rebuild a table keep what it held (a real SQLite file, migrated the way a
user's is when a newer hookd starts on it)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

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
