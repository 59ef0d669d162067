"""What every write transaction holds (:class:`TxState`, which the parts of
:class:`hookd.store.Tx` share; :class:`TxBase`, that state as the core sees it; :class:`TxPart`,
what each part is made of) and the store's cache of builders with live inbox messages
(:class:`InboxLive`)."""

from __future__ import annotations

import sqlite3
from typing import Any, Callable

from hookd.models import Event
from hookd.store.rows import _enc


class InboxLive:
    """The builders that may have live inbox messages (``queued`` or ``delivered``): every
    turn-boundary hook (each PostToolUse, Stop, UserPromptSubmit) asks for its builder's
    deliverable messages, and almost always there are none; for a builder not in this set
    that question is answered without a query (0.03 ms of a 0.3 ms hook, measured cold).

    A superset, never a subset: a builder is added as a message is inserted (before its
    commit: a rolled-back insert leaves a harmless extra), and removed only after the commit
    of a transaction whose query found none of its messages live, unless a message was
    inserted for it meanwhile (``_added``). Messages become live only by insertion (one
    writer: the daemon), and leave that state only by adoption."""

    def __init__(self, builders: set[str]):
        self.builders = builders
        self._added: dict[str, int] = {}  # builder -> insertions so far

    def add(self, builder: str) -> None:
        self.builders.add(builder)
        self._added[builder] = self._added.get(builder, 0) + 1

    def drained(self, tx: TxState, builder: str) -> None:
        """``tx`` found no live message of ``builder``: forget it once ``tx`` commits."""
        mark = self._added.get(builder, 0)

        def forget() -> None:
            if self._added.get(builder, 0) == mark:
                self.builders.discard(builder)

        tx.after_commit.append(forget)


class TxState:
    """The state of one write transaction (on the writer connection, the event loop's thread:
    :meth:`hookd.store.Store.write`) that its parts read and write: the connection, the store's
    :class:`InboxLive`, the timeline stamp, the events appended, the hook event stored and the
    callbacks to run after the commit. It refers to no part and not to its :class:`TxBase`, so
    a transaction's objects are freed as it ends, with no reference cycle for the collector."""

    __slots__ = ("db", "inbox", "mono", "events", "hook_event_id", "after_commit")

    def __init__(self, db: sqlite3.Connection, inbox: InboxLive, mono: float):
        self.db = db
        self.inbox = inbox
        #: this transaction's moment on hookd's timeline (:meth:`hookd.clock.Clock.mono`): the
        #: stamp of what it records, and what its windows are measured from (the core moves it
        #: back for a spooled hook)
        self.mono = mono
        self.events: list[Event] = []
        #: id of the hook event stored in this transaction, if any
        self.hook_event_id: int | None = None
        #: callables run on the writer thread after COMMIT (cache updates); what they return is
        #: ignored
        self.after_commit: list[Callable[[], object]] = []


class TxBase:
    """One write transaction's state (:class:`TxState`, which its parts share) as the core reads
    and writes it: ``mono``, ``hook_event_id``, ``events``, ``after_commit``; and the event
    log's append, which every subject's transaction does."""

    def __init__(self, db: sqlite3.Connection, inbox: InboxLive, mono: float = 0.0):
        self._state = state = TxState(db, inbox, mono)
        self._db = db
        #: the events appended (published after the commit)
        self.events = state.events
        #: callables run on the writer thread after COMMIT (cache updates)
        self.after_commit = state.after_commit

    @property
    def mono(self) -> float:
        """This transaction's moment on hookd's timeline (:attr:`TxState.mono`); settable."""
        return self._state.mono

    @mono.setter
    def mono(self, value: float) -> None:
        self._state.mono = value

    @property
    def hook_event_id(self) -> int | None:
        """Id of the hook event stored in this transaction, if any."""
        return self._state.hook_event_id

    def append_event(self, kind: str, builder: str | None, session_id: str | None, at: float, data: dict[str, Any]) -> Event:
        """Append to the event log (``at``: UNIX seconds; ``data`` stored as JSON). The event is
        published only after the commit (:attr:`events`)."""
        blob = _enc.encode(data)
        cur = self._db.execute(
            "INSERT INTO events (kind, builder, session_id, at, data) VALUES (?,?,?,?,?)",
            (kind, builder, session_id, at, blob),
        )
        seq = cur.lastrowid
        assert seq is not None  # (an INSERT sets it)
        ev = Event(seq=seq, kind=kind, builder=builder, session_id=session_id, at=at, data=data)
        self.events.append(ev)
        return ev


class TxPart:
    """One subject's statements inside a transaction (a part of :class:`hookd.store.Tx`, made
    by it over its :class:`TxState`: ``self._tx``). Parts never call one another."""

    __slots__ = ("_tx", "_db", "_inbox")

    def __init__(self, state: TxState):
        self._tx = state
        self._db = state.db
        self._inbox = state.inbox

    def _one(self, sql: str, args: tuple = ()) -> tuple | None:
        return self._db.execute(sql, args).fetchone()
