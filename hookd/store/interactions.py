"""The transaction's SQL about interactions (questions and permission prompts), their
answers' idempotency receipts and pre-registered answers (the :class:`hookd.store.Tx` part
:class:`InteractionsTx`)."""

from __future__ import annotations

from typing import Any

from hookd.models import Interaction, InteractionHead
from hookd.store.base import TxPart
from hookd.store.rows import _AWAITING_TOOL, _INTERACTION_COLS, _interaction, _j


class InteractionsTx(TxPart):
    """Interactions, responses and pre-registered answers, inside one write transaction."""

    __slots__ = ()

    # interactions --------------------------------------------------------------------
    def interaction_by_tool_use_id(self, tool_use_id: str) -> Interaction | None:
        row = self._one(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE tool_use_id=? OR id=?",
            (tool_use_id, tool_use_id),
        )
        return _interaction(row) if row else None

    def interaction_head_by_tool_use_id(self, tool_use_id: str) -> InteractionHead | None:
        """:meth:`interaction_by_tool_use_id` without the JSON columns (questions, input,
        answers, selections): a third of its cost on the hook path."""
        row = self._one(
            "SELECT id, kind, builder, session_id, tool_use_id, state, received_at FROM interactions"
            " WHERE tool_use_id=? OR id=?",
            (tool_use_id, tool_use_id),
        )
        return InteractionHead(*row) if row else None

    def interaction_by_hash(
        self, *, builder: str, session_id: str | None, tool_name: str, input_hash: str,
        states: tuple[str, ...], since: float, without_tool_use_id: bool = False,
    ) -> Interaction | None:
        """Newest interaction of that (builder, session, tool, input hash) in ``states``,
        created at or after ``since`` (hookd's timeline: :attr:`mono`)."""
        marks = ",".join("?" * len(states))
        sql = (
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE builder=? AND session_id IS ?"
            f" AND tool_name=? AND input_hash=? AND state IN ({marks}) AND COALESCE(created_mono, created_at)>=?"
        )
        if without_tool_use_id:
            sql += " AND tool_use_id IS NULL"
        sql += " ORDER BY COALESCE(created_mono, created_at) DESC LIMIT 1"
        row = self._one(sql, (builder, session_id, tool_name, input_hash, *states, since))
        return _interaction(row) if row else None

    def insert_interaction(self, i: Interaction, *, permission_seen_at: float | None) -> None:
        self._db.execute(
            "INSERT INTO interactions (id, kind, builder, session_id, agent_id, tool_name, tool_use_id,"
            " state, questions, answers, selections, surface, warning, error, created_at, resolved_at,"
            " revision, input, input_hash, expires_at, permission_seen_at, created_mono, agent_type)"
            f" VALUES ({','.join('?' * 23)})",
            (i.id, i.kind, i.builder, i.session_id, i.agent_id, i.tool_name, i.tool_use_id,
             i.state, _j(i.questions), _j(i.answers), _j(i.selections), i.surface, i.warning,
             i.error, i.created_at, i.resolved_at, i.revision, _j(i.input), i.input_hash,
             i.expires_at, permission_seen_at, self._tx.mono, i.agent_type),
        )

    def interaction(self, interaction_id: str) -> Interaction | None:
        """By id or by the harness's tool_use_id."""
        row = self._one(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE id=? OR tool_use_id=? LIMIT 1",
            (interaction_id, interaction_id),
        )
        return _interaction(row) if row else None

    def note_moved_on(self, interaction_id: str, *, via: str, at: float) -> None:
        """A remote deny's turn went on (``via``, a hook event's name; ``at``, UNIX seconds)
        before its held hook's read was recorded: kept for :meth:`moved_on` (the first only)."""
        self._db.execute("UPDATE interactions SET moved_on_at=?, moved_on_via=? WHERE id=? AND moved_on_at IS NULL",
                         (at, via, interaction_id))

    def moved_on(self, interaction_id: str) -> tuple[float, str] | None:
        """(UNIX seconds, the hook event's name) of :meth:`note_moved_on`, or None."""
        row = self._one("SELECT moved_on_at, moved_on_via FROM interactions WHERE id=? AND moved_on_at IS NOT NULL",
                        (interaction_id,))
        return (row[0], row[1]) if row else None

    def pending_sharing_call(self, interaction_id: str) -> list[Interaction]:
        """Pending interactions other than ``interaction_id`` that carry its id as their
        tool_use_id, or as the key of a call whose id another session reused (``<id>~<8 hex>``:
        :func:`hookd.core.questions._reused_key`)."""
        rows = self._db.execute(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE state='pending' AND id<>?"
            " AND (tool_use_id=? OR (id>=? AND id<?)) ORDER BY created_at",
            (interaction_id, interaction_id, interaction_id + "~", interaction_id + "~~"),
        ).fetchall()
        return [_interaction(r) for r in rows]

    def permission_seen(self, interaction_id: str) -> bool:
        row = self._one("SELECT permission_seen_at FROM interactions WHERE id=?", (interaction_id,))
        return bool(row and row[0] is not None)

    def record_answer(
        self, interaction_id: str, *, expected_revision: int, answers: Any, selections: Any,
        decision: str | None, message: str | None, surface: str, actor: str | None,
        response_id: str | None, at: float,
    ) -> bool:
        """Compare-and-set a remote answer onto a pending interaction at ``expected_revision``:
        state ``answered``, received_at = resolved_at = ``at``. False when it changed."""
        cur = self._db.execute(
            "UPDATE interactions SET state='answered', answers=?, selections=?, decision=?, message=?,"
            " surface=?, actor=?, response_id=?, received_at=?, resolved_at=?, revision=revision+1"
            " WHERE id=? AND state='pending' AND revision=?",
            (_j(answers), _j(selections), decision, message, surface, actor, response_id, at, at,
             interaction_id, expected_revision),
        )
        return cur.rowcount == 1

    def mark_answer_delivered(self, interaction_id: str, *, via: str, at: float,
                              inbox_message_id: str | None = None) -> bool:
        """First delivery of a remote answer (a hook returned it, or it was queued to the
        inbox as ``inbox_message_id``). False when it was already delivered."""
        cur = self._db.execute(
            "UPDATE interactions SET delivered_at=?, delivered_via=?, inbox_message_id=COALESCE(?, inbox_message_id),"
            " revision=revision+1 WHERE id=? AND delivered_at IS NULL",
            (at, via, inbox_message_id, interaction_id),
        )
        return cur.rowcount == 1

    def set_inbox_message(self, interaction_id: str, message_id: str) -> None:
        self._db.execute("UPDATE interactions SET inbox_message_id=? WHERE id=?", (message_id, interaction_id))

    def mark_adopted(self, interaction_id: str, at: float) -> bool:
        cur = self._db.execute(
            "UPDATE interactions SET adopted_at=?, revision=revision+1 WHERE id=? AND adopted_at IS NULL",
            (at, interaction_id),
        )
        return cur.rowcount == 1

    def supersede_answer(
        self, interaction_id: str, *, state: str, answers: Any, selections: Any, decision: str | None,
        surface: str | None, warning: str | None, error: str | None, at: float,
    ) -> bool:
        """The desk won a race a remote answer lost: replace the outcome (the remote answer's
        text is kept elsewhere, as an inbox message). False unless it was answered remotely."""
        cur = self._db.execute(
            "UPDATE interactions SET state=?, answers=?, selections=?, decision=?, message=NULL, surface=?,"
            " warning=?, error=?, resolved_at=?, revision=revision+1"
            " WHERE id=? AND state='answered' AND received_at IS NOT NULL",
            (state, _j(answers), _j(selections), decision, surface, warning, error, at, interaction_id),
        )
        return cur.rowcount == 1

    def awaiting_tool_result(self, session_id: str) -> bool:
        """Has the session a permission prompt whose tool result is still to come (pending,
        answered remotely and not yet adopted, or allowed at the desk while its tool runs)?
        Cheap: spares hashing every tool input."""
        return self._one(
            f"SELECT 1 FROM interactions WHERE session_id=? AND kind IN ('permission','plan') AND {_AWAITING_TOOL} LIMIT 1",
            (session_id,),
        ) is not None

    def permission_by_hash(self, session_id: str, tool_name: str, input_hash: str, since: float) -> Interaction | None:
        """The newest permission prompt of this input still awaiting its tool result, created
        at or after ``since`` (hookd's timeline: :attr:`mono`)."""
        row = self._one(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE session_id=? AND kind IN ('permission','plan')"
            f" AND tool_name=? AND input_hash=? AND COALESCE(created_mono, created_at)>=? AND {_AWAITING_TOOL}"
            " ORDER BY COALESCE(created_mono, created_at) DESC LIMIT 1",
            (session_id, tool_name, input_hash, since),
        )
        return _interaction(row) if row else None

    def due_expiries(self, now: float) -> list[Interaction]:
        rows = self._db.execute(
            f"SELECT {_INTERACTION_COLS} FROM interactions WHERE state='pending' AND expires_at IS NOT NULL"
            " AND expires_at<=? ORDER BY expires_at",
            (now,),
        ).fetchall()
        return [_interaction(r) for r in rows]


    # responses (idempotency receipts) --------------------------------------------------
    def response(self, response_id: str) -> tuple[str, bytes, bytes] | None:
        """(interaction_id, content, receipt) stored for ``response_id``."""
        row = self._one("SELECT interaction_id, content, receipt FROM responses WHERE response_id=?", (response_id,))
        return (row[0], bytes(row[1]), bytes(row[2])) if row else None

    def insert_response(self, response_id: str, interaction_id: str, content: bytes, receipt: bytes, at: float) -> None:
        self._db.execute(
            "INSERT INTO responses (response_id, interaction_id, content, receipt, created_at) VALUES (?,?,?,?,?)",
            (response_id, interaction_id, content, receipt, at),
        )

    # pre-registered answers --------------------------------------------------------------
    def insert_preanswer(self, builder: str, question: str, answer: str, actor: str | None, at: float) -> int:
        cur = self._db.execute(
            "INSERT INTO preanswers (builder, question, answer, actor, created_at) VALUES (?,?,?,?,?)",
            (builder, question, answer, actor, at),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def open_preanswers(self, builder: str, questions: list[str]) -> dict[str, tuple[int, str, str | None]]:
        """Oldest unused pre-registered answer per question text: {question: (id, answer, actor)}."""
        out: dict[str, tuple[int, str, str | None]] = {}
        if not questions:
            return out
        rows = self._db.execute(
            f"SELECT id, question, answer, actor FROM preanswers WHERE builder=? AND used_at IS NULL"
            f" AND question IN ({','.join('?' * len(questions))}) ORDER BY id",
            (builder, *questions),
        ).fetchall()
        for pid, q, a, actor in rows:
            out.setdefault(q, (pid, a, actor))
        return out

    def use_preanswers(self, ids: list[int], interaction_id: str, at: float) -> None:
        self._db.executemany(
            "UPDATE preanswers SET used_at=?, used_by=? WHERE id=? AND used_at IS NULL",
            [(at, interaction_id, i) for i in ids],
        )

    def mark_permission_seen(self, interaction_id: str, at: float) -> None:
        self._db.execute(
            "UPDATE interactions SET permission_seen_at=COALESCE(permission_seen_at, ?) WHERE id=?",
            (at, interaction_id),
        )

    def set_input(self, interaction_id: str, tool_input: Any) -> None:
        self._db.execute("UPDATE interactions SET input=COALESCE(input, ?) WHERE id=?", (_j(tool_input), interaction_id))

    def set_tool_use_id(self, interaction_id: str, tool_use_id: str) -> None:
        self._db.execute(
            "UPDATE interactions SET tool_use_id=? WHERE id=? AND tool_use_id IS NULL",
            (tool_use_id, interaction_id),
        )

    def answered_after_dismissal(self, interaction_id: str, *, answers: Any, selections: Any, surface: str | None,
                                 warning: str, at: float) -> bool:
        """Compare-and-set: a question a human dismissed (``dismissed`` with their actor and
        reason) was answered at ``surface`` after all: ``answered`` with those answers, the
        dismissal's actor and reason cleared (``warning`` tells of it). False when it is not so."""
        cur = self._db.execute(
            "UPDATE interactions SET state='answered', answers=?, selections=?, surface=?, warning=?, actor=NULL,"
            " message=NULL, resolved_at=?, revision=revision+1 WHERE id=? AND state='dismissed'",
            (_j(answers), _j(selections), surface, warning, at, interaction_id),
        )
        return cur.rowcount == 1

    def resolve_interaction(
        self, interaction_id: str, *, expected_state: str, state: str, answers: Any,
        selections: Any, surface: str | None, warning: str | None, error: str | None, at: float,
        decision: str | None = None, actor: str | None = None, message: str | None = None,
    ) -> bool:
        """Compare-and-set: move ``interaction_id`` from ``expected_state`` to ``state``.
        Returns False (and changes nothing) when it was no longer in ``expected_state``.
        actor / message (a dismissal's who and why): kept as they were when None."""
        cur = self._db.execute(
            "UPDATE interactions SET state=?, answers=?, selections=?, surface=?, warning=?,"
            " error=?, resolved_at=?, decision=COALESCE(?, decision), actor=COALESCE(?, actor),"
            " message=COALESCE(?, message), revision=revision+1 WHERE id=? AND state=?",
            (state, _j(answers), _j(selections), surface, warning, error, at, decision, actor, message,
             interaction_id, expected_state),
        )
        return cur.rowcount == 1
