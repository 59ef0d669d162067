"""Group commit (hookd.store.Store.write) on a real SQLite file: writes requested together
commit together, in order, and one that raises undoes only its own changes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hookd.store import Store

pytestmark = pytest.mark.inproc


def test_writes_of_one_turn_commit_together_and_a_failure_is_only_its_own(tmp_path: Path) -> None:
    async def run() -> None:
        st = await Store(tmp_path / "h.db").open()
        try:
            calls: list[str] = []

            def ok(tx, name: str):  # noqa: ANN001
                tx.append_event("probe", name, None, 1.0, {"n": name})
                tx.after_commit.append(lambda: calls.append(name))
                return name

            def bad(tx):  # noqa: ANN001
                tx.append_event("probe", "bad", None, 1.0, {})
                raise ValueError("no")

            results = await asyncio.gather(
                st.write(ok, "a"), st.write(ok, "b"), st.write(bad), st.write(ok, "c"), return_exceptions=True)
            assert [r if isinstance(r, Exception) else r[0] for r in results[:2]] == ["a", "b"]
            assert isinstance(results[2], ValueError) and results[3][0] == "c"
            assert [e.builder for e in results[0][1]] == ["a"]  # each write gets its own events
            assert calls == ["a", "b", "c"]  # after the commit, in order
            evs = await st.events_after(0, 100)
            assert [e.builder for e in evs if e.kind == "probe"] == ["a", "b", "c"]  # "bad" undone
            assert [e.seq for e in evs] == sorted(e.seq for e in evs)
            # the next write after a failure works (the transaction was closed properly)
            assert (await st.write(ok, "d"))[0] == "d"
        finally:
            await st.close()

    asyncio.run(run())



def test_group_commit_off_in_settings_commits_each_write_alone(tmp_path: Path) -> None:
    """``Settings(group_commit=False)`` (``HOOKD_GROUP_COMMIT=0`` in a daemon): writes requested
    together commit one transaction each; with the default, the first commits at once and the
    others of that turn together."""
    from hookd.settings import Settings

    def ok(tx, name: str):  # noqa: ANN001
        tx.append_event("probe", name, None, 1.0, {"n": name})
        return name

    async def commits(settings: Settings | None) -> int:
        st = await Store(tmp_path / f"{settings is None}.db", settings=settings).open()
        try:
            before = st.commits
            results = await asyncio.gather(*(st.write(ok, n) for n in "abcd"))
            assert [r[0] for r in results] == list("abcd")
            return st.commits - before
        finally:
            await st.close()

    async def run() -> None:
        assert await commits(Settings(group_commit=False, busy_wait_s=0.5)) == 4
        assert await commits(None) == 2

    asyncio.run(run())
