"""One write transaction's operations: :class:`Tx`, its state and one part per subject."""

from __future__ import annotations

from functools import cached_property

from hookd.store.base import TxBase
from hookd.store.chat import ChatTx
from hookd.store.events import EventsTx
from hookd.store.inbox import InboxTx
from hookd.store.interactions import InteractionsTx
from hookd.store.runs import RunsTx
from hookd.store.sessions import SessionsTx
from hookd.store.subagents import SubagentsTx


class Tx(TxBase):
    """Operations inside one write transaction, on the writer thread (see :meth:`Store.write`).

    Built by the store only (``Tx(db, inbox, mono)``: :class:`hookd.store.base.TxBase`, which
    holds the transaction's state and appends to the event log: :meth:`append_event`). The
    statements are grouped by subject, one part each, made at its first use in the transaction:
    :attr:`sessions` (hook events, builders, sessions, transcripts' cursors, lanes),
    :attr:`interactions` (questions and permission prompts, their answers, responses and
    pre-registered answers), :attr:`inbox`, :attr:`log` (what follows the event log: the hub's
    cursor and commands, notifications), :attr:`subagents`, :attr:`runs` (the agents hookd
    started) and :attr:`chat` (two-way chat channels' posts and updates). The parts share only
    the transaction's state and never call one another."""

    @cached_property
    def sessions(self) -> SessionsTx:
        return SessionsTx(self)

    @cached_property
    def interactions(self) -> InteractionsTx:
        return InteractionsTx(self)

    @cached_property
    def inbox(self) -> InboxTx:
        return InboxTx(self)

    @cached_property
    def log(self) -> EventsTx:
        return EventsTx(self)

    @cached_property
    def subagents(self) -> SubagentsTx:
        return SubagentsTx(self)

    @cached_property
    def runs(self) -> RunsTx:
        return RunsTx(self)

    @cached_property
    def chat(self) -> ChatTx:
        return ChatTx(self)
