"""Hooks that stopped working (issue 21, moment 6): the ``hooks_changed`` warning of a builder.

Two signals raise it, each checked against spawn's own record, never against what the agent or
the file claims (:func:`hookd.spawn.check.check_hooks`: the manifest's entries, exactly as
spawn merged them, compared with the settings file):

- **the settings file changed** (a :class:`~hookd.harness.base.SettingsChanged` observation:
  Claude Code's ConfigChange, which 2.1.332 fires with the hooks as they were before the edit,
  so hookd's own entry still reports the edit that removes it): after the hook's commit the
  file spawn wrote is read and compared; the same check runs at ``GET /v1/status`` (a daemon
  that was down when the file changed still finds it) and when `hookd spawn` tells the daemon
  it wrote the entries again;
- **hooks stopped arriving while the transcript moves**: a transcript read shows the main
  agent's turn ended (:class:`~hookd.harness.base.TurnEnded`) in a session that sent hooks
  before, and :data:`STOPPED_GRACE_S` later no hook of that session that is the agent's
  activity (not a ``notice``: a settings change, a notification) arrived since the turn began
  (hookd's hooks fire at every prompt and every turn's end).

The warning is a row per builder (``hooks_changed`` table: since when, what it says) and the
event ``hooks_changed`` (``signal``: ``settings`` or ``transcript``, ``reason``,
``settings_file``, ``missing``/``changed`` events, ``fix``: the command that restores them).
It clears, with the event ``hooks_restored`` (``reason``), when a hook of the builder arrives
again, or when the file holds spawn's entries again (a re-spawn, an edit undone): 2.1.332
reloads the file mid-session and its hooks fire again from the next event.

A setting that turns every hook off (``disableAllHooks: true`` in a settings file Claude Code
reads for the project: :mod:`hookd.spawn.hooksoff`) is found by the same checks, with spawn's
entries whole: the warning names the file and the key (``disabled``) and its fix is removing
the key, not a spawn. Such a warning clears only when a check finds the setting gone: a hook
that arrives, or a spawn, makes the check run (a hook that was on its way when the setting
came in proves nothing), and a spawn that leaves the setting in force records nothing.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from hookd.config import Home
from hookd.core.bus import EventBus, Tasks
from hookd.harness.base import Payload, SettingsChanged
from hookd.store import Store, Tx

#: How long after a transcript shows a turn's end hookd waits for that turn's hooks before it
#: says they stopped (seconds): the turn's Stop hook comes after its last row, and a client may
#: take its deadline (5 s by default) when the machine is loaded.
STOPPED_GRACE_S = 10.0
#: A hook counts for a turn when it arrived at most this long before the turn's first row
#: (seconds; the prompt's UserPromptSubmit hook may come a little before the prompt's row).
TURN_SLACK_S = 0.5
#: Only a turn that ended this recently is checked (seconds): a transcript read from its start
#: (a daemon started later) holds turns from before anything hookd can tell about.
RECENT_S = 600.0


class HookHealth:
    """The ``hooks_changed`` warning over ``home`` and ``store`` (``bus``: publishes;
    ``tasks``: the file checks run after a hook's commit)."""

    def __init__(self, home: Home, store: Store, bus: EventBus, tasks: Tasks):
        self.home = home
        self.store = store
        self.bus = bus
        self.tasks = tasks
        self._flagged: set[str] | None = None  # builders with the warning (loaded in the first transaction)
        self._stopped_checks: dict[str, tuple[str, float]] = {}  # sid -> (builder, newest turn end) to check

    def _flags(self, tx: Tx) -> set[str]:
        if self._flagged is None:
            self._flagged = tx.sessions.hooks_changed_builders()
        return self._flagged

    # --- in a hook's transaction ---------------------------------------------------------
    def hook_seen(self, tx: Tx, builder: str, p: Payload, observations: list[Any], at: float) -> None:
        """A hook of ``builder`` arrived: its hooks work, so a warning clears (``hooks_restored``),
        unless the hook reports a settings change (its file check, after the commit, decides:
        2.1.332 reports an edit with the hooks from before it)."""
        changed = next((ob for ob in observations if isinstance(ob, SettingsChanged)), None)
        if changed is not None:
            sid = p.session_id
            tx.after_commit.append(lambda: self.tasks.spawn(self.recheck(
                builder, sid, via=p.hook_event_name, source=changed.source, file_path=changed.file_path)))
            return
        flags = self._flags(tx)
        if builder not in flags:
            return
        if "disabled" in (tx.sessions.hooks_changed_of(builder) or {}):  # a setting turned them off: is it gone?
            tx.after_commit.append(lambda: self.tasks.spawn(self.recheck(builder, p.session_id, via=p.hook_event_name)))
            return
        old = tx.sessions.clear_hooks_changed(builder)
        if old is not None:
            tx.append_event("hooks_restored", builder, p.session_id, at, {
                "reason": "a hook arrived again", "via": p.hook_event_name, "since": old.get("since")})
        tx.after_commit.append(lambda: flags.discard(builder))

    # --- the file check ------------------------------------------------------------------
    async def recheck(self, builder: str, session_id: str | None = None, *, via: str,
                      source: str | None = None, file_path: str | None = None) -> dict[str, Any] | None:
        """Compare ``builder``'s settings file with spawn's record (read in a thread) and record
        the outcome: ``hooks_changed`` when entries are gone or edited (once while it holds),
        ``hooks_restored`` when a warning of the ``settings`` signal finds them whole again.
        via: what asked (the hook's event name, ``status``, ``spawn``); source/file_path: the
        hook's report (recorded, never read). Returns the check's finding
        (:func:`hookd.spawn.hooksoff.check_builder`'s; None: the hooks will run, or the builder
        has no spawn manifest). Never raises for a store that cannot commit."""
        found = await asyncio.to_thread(self._check_files, builder, await self._config_dir(builder))
        if found is None:  # not spawned (any more): no hooks of hookd's expected
            await self._unspawned(builder, via)
            return None
        manifest, wrong = found
        extra = {k: v for k, v in (("source", source), ("file_path", file_path)) if v is not None}
        try:
            await self.record(builder, session_id, wrong, via=via, extra=extra)
        except Exception:  # noqa: BLE001 - the store is closing or unavailable: the next check records it
            pass
        return wrong

    async def _unspawned(self, builder: str, via: str) -> None:
        def tx_(tx: Tx) -> None:
            old = tx.sessions.clear_hooks_changed(builder)
            if old is not None:
                tx.append_event("hooks_restored", builder, None, time.time(), {
                    "reason": "the builder is no longer spawned: no hook of hookd's is expected", "via": via,
                    "since": old.get("since")})
            flags = self._flags(tx)
            tx.after_commit.append(lambda: flags.discard(builder))
        _, events = await self.store.write(tx_)
        if events:
            await self.bus.publish()

    async def _config_dir(self, builder: str) -> Path:
        """Claude Code's user config folder for ``builder``'s agent: from its newest transcript's
        path, else this process's environment (:func:`hookd.spawn.hooksoff.user_config_dir`)."""
        from hookd.spawn.hooksoff import user_config_dir

        try:
            newest = (await self.store.newest_transcripts(builder)).get(builder)
        except Exception:  # noqa: BLE001 - the store cannot be read: the environment's folder
            newest = None
        return user_config_dir(newest, os.environ)

    def _check_files(self, builder: str, config_dir: Path) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        from hookd.spawn import read_manifest
        from hookd.spawn.hooksoff import check_builder

        try:
            manifest = read_manifest(self.home, builder)
        except Exception:  # noqa: BLE001 - a manifest that cannot be read: nothing to compare with
            return None
        if manifest is None:
            return None
        return manifest, check_builder(self.home, manifest, config_dir)

    async def record(self, builder: str, session_id: str | None, wrong: dict[str, Any] | None, *,
                     via: str, extra: dict[str, Any] | None = None) -> None:
        """Record one check's finding ``wrong`` (:func:`hookd.spawn.hooksoff.check_builder`'s;
        None: the file holds spawn's entries and no setting turns the hooks off) for
        ``builder``. A warning whose cause changed to or from such a setting (``disabled``)
        says the new cause (its ``since`` kept, no second event)."""
        def tx_(tx: Tx) -> None:
            flags = self._flags(tx)
            at = time.time()
            if wrong is not None:
                data = {"signal": "settings", "via": via, **wrong, **(extra or {})}
                if tx.sessions.set_hooks_changed(builder, at, data):
                    tx.append_event("hooks_changed", builder, session_id, at, data)
                    tx.after_commit.append(lambda: flags.add(builder))
                elif ("disabled" in (tx.sessions.hooks_changed_of(builder) or {})) != ("disabled" in wrong):
                    tx.sessions.replace_hooks_changed(builder, data)  # (a spawn's fix done, a setting's left)
            elif builder in flags:
                old = tx.sessions.hooks_changed_of(builder)
                # a transcript signal: the file was whole all along; only a hook or a re-spawn clears it,
                # or, when a setting turned the hooks off, that setting gone
                ends = old is not None and (old.get("signal") == "settings" or via == "spawn" or "disabled" in old)
                if old is None or ends:
                    tx.sessions.clear_hooks_changed(builder)
                    tx.after_commit.append(lambda: flags.discard(builder))
                if old is not None and ends:
                    off = old.get("disabled") or {}
                    reason = (f"{off.get('key')} no longer turns the hooks off ({off.get('settings_file')})" if off
                              else "spawn wrote hookd's entries again" if via == "spawn"
                              else "the settings file holds hookd's entries again")
                    tx.append_event("hooks_restored", builder, session_id, at, {
                        "reason": reason, "via": via, "since": old.get("since")})
        _, events = await self.store.write(tx_)
        if events:
            await self.bus.publish()

    # --- a transcript read -------------------------------------------------------------
    def turn_ended(self, tx: Tx, builder: str, sid: str, ended_at: float) -> None:
        """A transcript read shows ``sid``'s main turn ended at ``ended_at`` (row time): if the
        session sent hooks before, check :data:`STOPPED_GRACE_S` later that one came for this
        turn (one pending check per session)."""
        if builder in self._flags(tx) or time.time() - ended_at > RECENT_S or not tx.sessions.session_has_hooks(sid):
            return
        tx.after_commit.append(lambda: self._check_later(builder, sid, ended_at))

    def _check_later(self, builder: str, sid: str, ended_at: float) -> None:
        """Check ``sid`` once its newest turn end's grace has passed (one pending check per
        session, for its newest turn end)."""
        pending = self._stopped_checks
        if sid in pending:
            pending[sid] = (builder, max(ended_at, pending[sid][1]))
            return
        pending[sid] = (builder, ended_at)

        async def check() -> None:
            builder_, due = pending[sid]
            if due + STOPPED_GRACE_S > time.time():  # a later turn end came meanwhile
                loop.call_later(due + STOPPED_GRACE_S - time.time() + 0.05, lambda: self.tasks.spawn(check()))
                return
            del pending[sid]
            try:
                found = await asyncio.to_thread(self._check_files, builder_, await self._config_dir(builder_))
                _, events = await self.store.write(self._stopped_tx, builder_, sid, due, found)
                if events:
                    await self.bus.publish()
            except Exception:  # noqa: BLE001 - the store is closing: the next turn checks again
                pass

        loop = asyncio.get_running_loop()
        loop.call_later(max(0.0, ended_at + STOPPED_GRACE_S - time.time()) + 0.05, lambda: self.tasks.spawn(check()))

    def _stopped_tx(self, tx: Tx, builder: str, sid: str, ended_at: float,
                    found: tuple[dict[str, Any], dict[str, Any] | None] | None) -> None:
        """``sid``'s turn ended at ``ended_at``: flag ``builder`` when no hook of the session
        came since the turn began. found: the file check (:meth:`_check_files`), for the fix."""
        flags = self._flags(tx)
        if builder in flags or found is None:  # (no manifest: not spawned, or unspawned: no hooks expected)
            return
        started = tx.sessions.transcript_turn_started(sid)
        since = min(started if started is not None else ended_at, ended_at) - TURN_SLACK_S
        last = tx.sessions.last_hook_at(sid)
        if last is not None and last >= since:
            return  # the turn's hooks came
        at = time.time()
        reason = "the transcript shows a turn that ended with no hook from it"
        if last is not None:
            reason += f" (the session's last hook came {at - last:.0f} s ago)"
        data: dict[str, Any] = {"signal": "transcript", "via": "transcript", "reason": reason,
                                "turn_ended_at": ended_at, "last_hook_at": last}
        manifest, wrong = found
        from hookd.spawn.check import fix_command

        data["settings_file"] = manifest.get("settings_file")
        if wrong is not None:  # the files tell why (spawn's, or a setting that turns every hook off)
            data.update(missing=wrong["missing"], changed=wrong["changed"], reason=f"{reason}; {wrong['reason']}")
            if "disabled" in wrong:
                data["disabled"] = wrong["disabled"]
        else:
            data["reason"] = f"{reason}; the settings file still holds hookd's entries (the agent may run with other settings)"
        data["fix"] = wrong["fix"] if wrong is not None else fix_command(self.home, manifest) + " then restart the agent"
        if tx.sessions.set_hooks_changed(builder, at, data):
            tx.append_event("hooks_changed", builder, sid, at, data)
            tx.after_commit.append(lambda: flags.add(builder))
