"""Rows to objects: the column lists the store selects and the functions that build
:mod:`hookd.models` objects from them (shared by the transaction and the reads)."""

from __future__ import annotations

from typing import Any

import aiosqlite
import msgspec

from hookd.models import Event, InboxMessage, Interaction, Selection

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def _j(v: Any) -> bytes | None:
    return None if v is None else _enc.encode(v)


def _uj(v: bytes | str | None) -> Any:
    return None if v is None else _dec.decode(v)


_INTERACTION_COLS = (
    "id, kind, builder, session_id, agent_id, tool_name, tool_use_id, state, questions, "
    "answers, selections, surface, warning, error, created_at, resolved_at, revision, "
    "input, input_hash, decision, message, actor, response_id, expires_at, received_at, "
    "delivered_at, delivered_via, adopted_at, inbox_message_id, agent_type"
)


def _interaction(row: aiosqlite.Row | tuple) -> Interaction:
    sel = _uj(row[10])
    return Interaction(
        id=row[0],
        kind=row[1],
        builder=row[2],
        session_id=row[3],
        agent_id=row[4],
        tool_name=row[5],
        tool_use_id=row[6],
        state=row[7],
        questions=_uj(row[8]),
        answers=_uj(row[9]),
        selections=None if sel is None else msgspec.convert(sel, list[Selection]),
        surface=row[11],
        warning=row[12],
        error=row[13],
        created_at=row[14],
        resolved_at=row[15],
        revision=row[16],
        input=_uj(row[17]),
        input_hash=row[18],
        decision=row[19],
        message=row[20],
        actor=row[21],
        response_id=row[22],
        expires_at=row[23],
        received_at=row[24],
        delivered_at=row[25],
        delivered_via=row[26],
        adopted_at=row[27],
        inbox_message_id=row[28],
        agent_type=row[29],
    )


_MESSAGE_COLS = (
    "id, builder, session_id, agent_id, author, text, state, created_at, delivered_at,"
    " delivered_hook_event_id, delivered_session_id, delivered_via, deliveries, adopted_at,"
    " adopted_via, cancelled_at, idem_key, answer_to"
)


#: A permission prompt whose tool result is still to come: pending, answered remotely and not
#: yet adopted, or allowed at the desk while its tool ran (hookd.core.holds: the tool's process
#: seen; no tool_use_id until its PostToolUse).
_AWAITING_TOOL = ("(state='pending' OR (state='answered' AND received_at IS NOT NULL AND adopted_at IS NULL)"
                  " OR (state='answered' AND received_at IS NULL AND decision='allow' AND tool_use_id IS NULL))")


def _message(row: tuple) -> InboxMessage:
    return InboxMessage(*row)


def _event(row: tuple) -> Event:
    return Event(seq=row[0], kind=row[1], builder=row[2], session_id=row[3], at=row[4], data=_dec.decode(row[5]))

