"""One write transaction's operations: :class:`Tx`, made of one part per subject."""

from __future__ import annotations

from hookd.store.chat import ChatTx
from hookd.store.events import EventsTx
from hookd.store.inbox import InboxTx
from hookd.store.interactions import InteractionsTx
from hookd.store.runs import RunsTx
from hookd.store.sessions import SessionsTx
from hookd.store.subagents import SubagentsTx


class Tx(SessionsTx, InteractionsTx, InboxTx, EventsTx, SubagentsTx, RunsTx, ChatTx):
    """Operations inside one write transaction, on the writer thread (see :meth:`Store.write`).

    Built by the store only (``Tx(db, inbox, mono)``: :class:`hookd.store.base.TxBase`). Its
    methods are those of its parts, one module per subject: hook events, builders, sessions,
    transcripts and lanes (:mod:`hookd.store.sessions`); interactions, responses and
    pre-registered answers (:mod:`hookd.store.interactions`); the inbox
    (:mod:`hookd.store.inbox`); the event log and notifications (:mod:`hookd.store.events`);
    subagents (:mod:`hookd.store.subagents`); the agents hookd started (:mod:`hookd.store.runs`);
    two-way chat channels' posts and updates (:mod:`hookd.store.chat`).
    The parts share only :class:`TxBase`'s state and never call one another."""
