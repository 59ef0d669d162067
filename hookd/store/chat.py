"""The transaction's SQL about two-way chat channels (issue 24; the :class:`hookd.store.Tx`
part :class:`ChatTx`): the messages a channel posted and the chat updates it handled."""

from __future__ import annotations

from typing import Any

import msgspec

from hookd.store.base import TxPart
from hookd.store.rows import _dec, _enc


class ChatPost(msgspec.Struct, frozen=True):
    """A message a channel posted: ``id`` (hookd's, carried in its buttons), the chat's
    ``chat_id`` and ``message_id``; for an interaction its id, the ``revision`` and
    ``input_hash`` its buttons answer and ``choices`` (one answer body per button, JSON
    objects of :class:`hookd.models.AnswerRequest` fields); for a lane's alert only
    ``builder``. Times are UNIX seconds; ``ended_at``: edited to show the outcome. ``draft``:
    the answer in the making (:mod:`hookd.watchers.chat_posts`; None: none), ``reminded``: the
    highest reminder step replied in the post's thread (0: none)."""

    id: int
    channel: str
    chat_id: str
    message_id: int
    interaction_id: str | None
    builder: str | None
    revision: int | None
    input_hash: str | None
    choices: list[dict[str, Any]]
    posted_at: float
    ended_at: float | None
    draft: dict[str, Any] | None = None
    reminded: int = 0


CHAT_POST_COLS = ("id, channel, chat_id, message_id, interaction_id, builder, revision, input_hash, choices, posted_at,"
                  " ended_at, draft, reminded")


def chat_post_of(row: tuple) -> ChatPost:
    """A ``chat_posts`` row (:data:`CHAT_POST_COLS`) as a :class:`ChatPost`."""
    (id_, channel, chat_id, message_id, interaction_id, builder, revision, input_hash, choices, posted_at, ended_at,
     draft, reminded) = row
    return ChatPost(id=id_, channel=channel, chat_id=chat_id, message_id=message_id, interaction_id=interaction_id,
                    builder=builder, revision=revision, input_hash=input_hash,
                    choices=_dec.decode(choices) if choices else [], posted_at=posted_at, ended_at=ended_at,
                    draft=_dec.decode(draft) if draft else None, reminded=reminded or 0)


class ChatTx(TxPart):
    """Chat posts (``chat_posts``) and handled updates (``chat_updates``) in one transaction."""

    __slots__ = ()

    def add_chat_post(self, channel: str, chat_id: str, message_id: int, *, interaction_id: str | None,
                      builder: str | None, revision: int | None, input_hash: str | None,
                      choices: list[dict[str, Any]], at: float) -> ChatPost:
        """Record a posted message (an interaction's replaces its earlier post). Returns it."""
        if interaction_id is not None:
            self._db.execute("DELETE FROM chat_posts WHERE channel=? AND interaction_id=?", (channel, interaction_id))
        cur = self._db.execute(
            "INSERT INTO chat_posts (channel, chat_id, message_id, interaction_id, builder, revision, input_hash,"
            " choices, posted_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (channel, chat_id, message_id, interaction_id, builder, revision, input_hash, _enc.encode(choices), at))
        post = self.chat_post(int(cur.lastrowid or 0))
        assert post is not None
        return post

    def chat_post(self, post_id: int) -> ChatPost | None:
        row = self._one(f"SELECT {CHAT_POST_COLS} FROM chat_posts WHERE id=?", (post_id,))
        return chat_post_of(row) if row else None

    def chat_post_of_message(self, channel: str, chat_id: str, message_id: int) -> ChatPost | None:
        """The post that is message ``message_id`` of ``chat_id`` (a reply's target), or None."""
        row = self._one(f"SELECT {CHAT_POST_COLS} FROM chat_posts WHERE channel=? AND chat_id=? AND message_id=?"
                        " ORDER BY id DESC LIMIT 1", (channel, chat_id, message_id))
        return chat_post_of(row) if row else None

    def revise_chat_post(self, post_id: int, revision: int, input_hash: str | None,
                         choices: list[dict[str, Any]]) -> None:
        """The post's buttons now answer ``revision`` (the message was edited; its draft cleared)."""
        self._db.execute("UPDATE chat_posts SET revision=?, input_hash=?, choices=?, draft=NULL WHERE id=?",
                         (revision, input_hash, _enc.encode(choices), post_id))

    def set_chat_draft(self, post_id: int, draft: dict[str, Any] | None) -> None:
        """The post's answer in the making (None: none)."""
        self._db.execute("UPDATE chat_posts SET draft=? WHERE id=?",
                         (None if draft is None else _enc.encode(draft), post_id))

    def chat_reminded(self, post_id: int, step: int) -> bool:
        """Claim reminder ``step`` of the post: True when it is above the highest claimed (send
        it), False when it (or a later one) was claimed already."""
        cur = self._db.execute("UPDATE chat_posts SET reminded=? WHERE id=? AND reminded<?", (step, post_id, step))
        return cur.rowcount > 0

    def unclaim_chat_reminder(self, post_id: int, before: int) -> None:
        """Reminder claimed but not sent (the chat unreachable): back to ``before``."""
        self._db.execute("UPDATE chat_posts SET reminded=? WHERE id=?", (before, post_id))

    def place_chat_post(self, post_id: int, chat_id: str, message_id: int) -> None:
        """Where the post recorded before it was sent landed."""
        self._db.execute("UPDATE chat_posts SET chat_id=?, message_id=? WHERE id=?", (chat_id, message_id, post_id))

    def delete_chat_post(self, post_id: int) -> None:
        """A post that could not be sent (it is tried again)."""
        self._db.execute("DELETE FROM chat_posts WHERE id=?", (post_id,))

    def end_chat_post(self, post_id: int, at: float) -> None:
        self._db.execute("UPDATE chat_posts SET ended_at=? WHERE id=? AND ended_at IS NULL", (at, post_id))

    def chat_update_handled(self, channel: str, update_id: int) -> bool:
        """Whether update ``update_id`` of ``channel`` was handled already."""
        return self._one("SELECT 1 FROM chat_updates WHERE channel=? AND update_id=?", (channel, update_id)) is not None

    def record_chat_update(self, channel: str, update_id: int, at: float) -> None:
        self._db.execute("INSERT OR IGNORE INTO chat_updates (channel, update_id, handled_at) VALUES (?,?,?)",
                         (channel, update_id, at))

    def chat_offset(self, channel: str) -> int:
        """The update id to poll from: one past the newest handled (0: none yet)."""
        row = self._one("SELECT MAX(update_id) FROM chat_updates WHERE channel=?", (channel,))
        return int(row[0]) + 1 if row and row[0] is not None else 0
