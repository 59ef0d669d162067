"""hookd.store.InboxLive: a turn-boundary hook of a builder with no live inbox message asks
SQLite nothing about the inbox, and the shortcut never hides a message.

A real store on a real SQLite file; the writer connection's statements are observed with
sqlite3's trace callback.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hookd.store import Store

pytestmark = pytest.mark.inproc


def inbox_selects(statements: list[str]) -> list[str]:
    return [s for s in statements if s.startswith("SELECT") and "FROM inbox_messages WHERE builder=" in s]


def deliverable(tx, builder: str = "b1", session: str = "s1"):  # noqa: ANN001, ANN201
    return tx.inbox.deliverable(builder, session, None, redeliver_before=0.0)


def insert(tx, builder: str = "b1", text: str = "hello"):  # noqa: ANN001, ANN201
    return tx.inbox.insert_message(builder=builder, session_id=None, agent_id=None, author="human", text=text, key=None, at=1.0)


def test_no_query_for_a_builder_without_live_messages_and_nothing_hidden(tmp_path: Path) -> None:
    async def run() -> None:
        st = await Store(tmp_path / "hookd.db").open()
        seen: list[str] = []
        st._w.set_trace_callback(seen.append)  # noqa: SLF001 - the writer connection
        try:
            assert (await st.write(deliverable))[0] == []
            assert inbox_selects(seen) == []  # b1 never had a message: no query

            m, _ = await st.write(insert)
            got, _ = await st.write(deliverable)
            assert [x.id for x in got] == [m.id]
            # scope is still applied: another session's message is live but not this hook's
            other, _ = await st.write(lambda tx: tx.inbox.insert_message(
                builder="b1", session_id="s2", agent_id=None, author="human", text="for s2", key=None, at=2.0))
            got, _ = await st.write(deliverable)
            assert [x.id for x in got] == [m.id]

            # m delivered and adopted: none left for s1, but s2's is live: the builder is kept
            await st.write(lambda tx: tx.inbox.mark_delivered([m.id], hook_event_id=None, session_id="s1",
                                                        via="Stop", at=3.0))
            await st.write(lambda tx: tx.inbox.adopt_queued([m.id], via="test", at=4.0))
            assert (await st.write(deliverable))[0] == []
            got, _ = await st.write(deliverable, "b1", "s2")
            assert [x.id for x in got] == [other.id]

            # s2's adopted too: none live, the builder is forgotten after that commit
            await st.write(lambda tx: tx.inbox.adopt_queued([other.id], via="test", at=5.0))
            seen.clear()
            assert (await st.write(deliverable))[0] == []
            assert len(inbox_selects(seen)) == 2  # this one found none for it, then none live at all ...
            seen.clear()
            assert (await st.write(deliverable))[0] == []
            assert inbox_selects(seen) == []  # ... so the next one asks nothing

            # a new message is seen at once again
            m3, _ = await st.write(insert)
            got, _ = await st.write(deliverable)
            assert [x.id for x in got] == [m3.id]
        finally:
            st._w.set_trace_callback(None)  # noqa: SLF001
            await st.close()

    asyncio.run(run())


def test_a_message_inserted_in_the_same_group_commit_after_a_drained_check_is_kept(tmp_path: Path) -> None:
    """Group commit: a hook that found no live message and a send that queues one commit
    together, in that order; the hook's "none left" must not forget the new message."""
    async def run() -> None:
        st = await Store(tmp_path / "hookd.db").open()
        try:
            first, _ = await st.write(insert)
            await st.write(lambda tx: tx.inbox.adopt_queued([first.id], via="test", at=2.0))
            # the first write of a loop turn commits at once; the next two join one batch
            warm = st.write(lambda tx: None)
            drained = st.write(deliverable)
            queued = st.write(insert, "b1", "second")
            _, (found, _), (m, _) = await asyncio.gather(warm, drained, queued)
            assert found == []
            got, _ = await st.write(deliverable)
            assert [x.id for x in got] == [m.id], "the message queued in the same commit was lost"
        finally:
            await st.close()

    asyncio.run(run())


def test_live_messages_on_disk_are_known_after_a_restart(tmp_path: Path) -> None:
    async def run() -> str:
        st = await Store(tmp_path / "hookd.db").open()
        m, _ = await st.write(insert)
        await st.close()
        st = await Store(tmp_path / "hookd.db").open()
        try:
            got, _ = await st.write(deliverable)
            assert [x.id for x in got] == [m.id]
            return m.id
        finally:
            await st.close()

    asyncio.run(run())
