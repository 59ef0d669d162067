"""One write transaction's operations: :class:`Tx`, its state and one part per subject."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from hookd.store.base import TxBase, TxPart
from hookd.store.chat import ChatTx
from hookd.store.events import EventsTx
from hookd.store.inbox import InboxTx
from hookd.store.interactions import InteractionsTx
from hookd.store.runs import RunsTx
from hookd.store.sessions import SessionsTx
from hookd.store.subagents import SubagentsTx

P = TypeVar("P", bound=TxPart)


class _Part(Generic[P]):
    """A :class:`Tx` attribute holding one part, made at its first use in the transaction (a
    hook uses one or two of the seven). ``functools.cached_property`` does the same with a lock
    taken at each first use: 2.2 against 1.4 us for a transaction's two parts, measured."""

    def __init__(self, cls: type[P]):
        self.cls = cls
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, tx: Any, owner: type | None = None) -> P:
        part = self.cls(tx._state)
        tx.__dict__[self.name] = part  # (not a data descriptor: this instance attribute answers from now on)
        return part


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

    sessions = _Part(SessionsTx)
    interactions = _Part(InteractionsTx)
    inbox = _Part(InboxTx)
    log = _Part(EventsTx)
    subagents = _Part(SubagentsTx)
    runs = _Part(RunsTx)
    chat = _Part(ChatTx)
