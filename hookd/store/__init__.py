"""The store: SQLite (WAL) through aiosqlite. The only package that contains SQL.

One writer: every write is a function run by :meth:`Store.write` inside one
``BEGIN IMMEDIATE`` transaction on the writer connection, handed a :class:`Tx` whose methods
are the SQL of that transaction; reads go through :class:`Store`'s reader connection.

Modules:

- ``writer``: :class:`Store` (the connections, the writer and its group commit, checkpoints,
  close); its base ``reads`` (:class:`hookd.store.reads.Reads`: the queries on the reader
  connection);
- ``walsync``: :class:`hookd.store.walsync.WalSync`, the thread that syncs the WAL a second
  after commits (they then survive a power cut);
- ``tx``: :class:`Tx`, the transaction's state (``base``: :class:`hookd.store.base.TxBase`, which
  also appends to the event log; :class:`InboxLive`) and one part per subject, an attribute
  each: ``tx.sessions`` (hook events, builders, sessions, transcripts, lanes; module
  ``sessions``), ``tx.interactions`` (interactions, responses, pre-registered answers),
  ``tx.inbox``, ``tx.log`` (module ``events``: the hub's cursor and commands, notifications),
  ``tx.subagents``, ``tx.runs``, ``tx.chat``;
- ``migrations``: :data:`MIGRATIONS` and :func:`hookd.store.migrations.migrate`;
- ``rows``: the column lists and the row-to-model functions the others share;
- ``timeline``: hookd's timeline (:mod:`hookd.clock`) in the database, each boot's offset.
"""

from hookd.store.base import InboxLive, TxBase
from hookd.store.migrations import MIGRATIONS
from hookd.store.tx import Tx
from hookd.store.writer import Store

__all__ = ["MIGRATIONS", "InboxLive", "Store", "Tx", "TxBase"]
