"""The transaction's SQL about what follows the event log: the hub's cursor and commands, and
notifications (the :class:`hookd.store.Tx` part :class:`EventsTx`, ``tx.log``; the log's append
itself is :meth:`hookd.store.base.TxBase.append_event`)."""

from __future__ import annotations

from typing import Any

from hookd.store.base import TxPart


class EventsTx(TxPart):
    """What follows the event log (the hub's cursor and commands, notifications), inside one
    write transaction."""

    __slots__ = ()

    # the hub's cursor (hookd.hub.shipper) -----------------------------------------------
    def set_hub_cursor(self, hub: str, seq: int, at: float, home_id: str) -> None:
        """Record that ``hub`` holds every event up to ``seq`` (at ``at``, UNIX seconds); a new
        row takes ``home_id`` (an existing one keeps its own)."""
        self._db.execute("INSERT INTO hub_cursor (hub, seq, at, home_id) VALUES (?,?,?,?)"
                         " ON CONFLICT (hub) DO UPDATE SET seq=excluded.seq, at=excluded.at", (hub, seq, at, home_id))

    def record_hub_command(self, hub: str, cid: str, seq: int, kind: str, state: str, reason: str | None,
                           result: str | None, at: float) -> None:
        """Record that command ``cid`` of ``hub`` (its ``seq`` and ``kind`` there) was applied
        here at ``at``: ``state`` ``applied`` | ``refused``, ``reason``, ``result`` (JSON
        text); a command recorded before keeps its first record."""
        self._db.execute("INSERT INTO hub_commands (hub, id, seq, kind, state, reason, result, applied_at)"
                         " VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (hub, id) DO NOTHING",
                         (hub, cid, seq, kind, state, reason, result, at))

    def hub_command_shipped(self, hub: str, cid: str, at: float) -> None:
        """Record that the outcome of command ``cid`` of ``hub`` is on the hub (since ``at``)."""
        self._db.execute("UPDATE hub_commands SET shipped_at=? WHERE hub=? AND id=?", (at, hub, cid))

    # notifications -------------------------------------------------------------------
    # (hookd.watchers.notify: escalation steps claimed once per subject, delivery per channel)
    def claim_notification(self, key: str, step: int, rule: str, builder: str | None,
                           channels: list[str], alert: bytes, at: float) -> tuple[int, float, list[str]]:
        """Claim escalation ``step`` of subject ``key`` for ``channels``, unless a step at
        least as high was claimed before. Returns (highest step claimed, when the subject's
        first step was claimed, the channels claimed now: empty when nothing is to be sent)."""
        row = self._one("SELECT MAX(step), MIN(created_at) FROM notifications WHERE key=?", (key,))
        top, first = (row[0], row[1]) if row and row[0] is not None else (-1, at)
        if top >= step:
            return top, first, []
        self._db.executemany(
            "INSERT OR IGNORE INTO notifications (key, step, channel, rule, builder, status, alert, created_at)"
            " VALUES (?,?,?,?,?,'pending',?,?)",
            [(key, step, ch, rule, builder, alert, at) for ch in channels],
        )
        return step, first, list(channels)

    def notification_steps(self, keys: list[str]) -> dict[str, tuple[int, float]]:
        """{key: (highest step claimed, first claimed at)} for the keys with notifications."""
        out: dict[str, tuple[int, float]] = {}
        for k in keys:
            row = self._one("SELECT MAX(step), MIN(created_at) FROM notifications WHERE key=?", (k,))
            if row and row[0] is not None:
                out[k] = (row[0], row[1])
        return out

    def finish_notification(self, key: str, step: int, channel: str, *, status: str, attempts: int,
                            error: str | None, at: float) -> bool:
        """Record the outcome of a pending delivery (``sent`` | ``failed`` | ``cleared``)."""
        cur = self._db.execute(
            "UPDATE notifications SET status=?, attempts=attempts+?, last_error=?, sent_at=?"
            " WHERE key=? AND step=? AND channel=? AND status='pending'",
            (status, attempts, error, at if status == "sent" else None, key, step, channel),
        )
        return cur.rowcount == 1

    def clear_notifications(self, key: str) -> int:
        """The subject is resolved: its deliveries still pending are not retried."""
        return self._db.execute(
            "UPDATE notifications SET status='cleared' WHERE key=? AND status='pending'", (key,)).rowcount

    def pending_notifications(self) -> list[tuple[str, int, str, bytes, int]]:
        """(key, step, channel, alert, attempts) of deliveries claimed but not finished (a
        restart resumes them)."""
        return [tuple(r) for r in self._db.execute(
            "SELECT key, step, channel, alert, attempts FROM notifications WHERE status='pending' ORDER BY created_at")]

    def notifications(self, limit: int = 1000) -> list[dict[str, Any]]:
        keys = ("key", "step", "channel", "rule", "builder", "status", "attempts", "last_error", "created_at", "sent_at")
        rows = self._db.execute(
            f"SELECT {', '.join(keys)} FROM notifications ORDER BY created_at DESC, key, step, channel LIMIT ?", (limit,))
        return [dict(zip(keys, r)) for r in rows]
