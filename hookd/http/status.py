"""``GET /v1/status``: the daemon's status, read from the core, the store and the home's files."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

from hookd import __version__
from hookd.config import Home
from hookd.models import StorageUnavailable
from hookd.core import Hookd
from hookd.spawn import INSTALLS, list_manifests, list_unspawned
from hookd.spawn.check import fix_command
from hookd.spawn.hooksoff import check_builder, user_config_dir
from hookd.spawn.trust import check as check_trust


async def core_status(core: Hookd, fastpath: bool = True) -> dict[str, Any]:
    """The daemon's status: process, listeners, counts, builders (spawned and seen), the
    interactions a PermissionRequest hook is held for (``held``), and ``storage``: whether
    the database commits (:meth:`hookd.store.Store.storage`; while it cannot
    be read either, ``read_error`` says so and the counts and builders read from it are
    empty); each spawned builder's ``hooks_changed``: its hooks stopped working (the settings
    file compared with spawn's record now, or the daemon's warning; None: they work as far as
    hookd can tell); ``fast_path``: whether the fast path is on (``fastpath``, from
    :attr:`hookd.settings.Settings.fastpath`) and the hooks it answered. Files (manifests, the
    spool) are read off the event loop."""
    storage = core.store.storage()
    try:
        stats = await core.store.builder_stats()
        counts = await core.store.counts()
        migrations = await core.store.applied_migrations()
        lanes = await core.store.lanes()
    except StorageUnavailable as e:
        storage["read_error"] = e.message
        stats, counts, migrations, lanes = {}, {}, [], {}
    try:
        transcripts = await core.store.newest_transcripts()
    except StorageUnavailable:
        transcripts = {}
    manifests, spooled, gone, checks, trusts = await asyncio.to_thread(_status_files, core.home, transcripts)
    try:
        warned = await core.store.hooks_changed()
    except StorageUnavailable:
        warned = {}
    builders = []
    for m in manifests:
        b = m["builder"]
        wrong = checks.get(b)
        if (wrong is not None) != (b in warned):
            # the file says otherwise than the daemon's record (it changed while the daemon was
            # down, or with no hook to report it): recorded now (hooks_changed / hooks_restored)
            with contextlib.suppress(Exception):
                await core.health.record(b, None, wrong, via="status")
        out = _builder_status(b, m, stats.pop(b, None), None, lanes.get(b))
        out["hooks_trust"] = trusts.get(b)
        if wrong is not None:  # (the daemon's own warning says when it began)
            out["hooks_changed"] = {**warned.get(b, {}), "signal": "settings", **wrong}
        else:  # the file is whole: only a transcript's warning (hooks stopped all the same) stands, unless its
            w = warned.get(b)  # cause was a setting that is gone now (recorded above: hooks_restored)
            out["hooks_changed"] = w if w is not None and w.get("signal") == "transcript" and "disabled" not in w else None
        builders.append(out)
    for b, s in sorted(stats.items()):
        builders.append(_builder_status(b, None, s, gone.get(b), lanes.get(b)))
    return {
        "version": __version__,
        "pid": os.getpid(),
        "home": str(core.home.root),
        "socket": str(core.home.socket_path),
        "tcp_port": core.tcp_port,
        "started_at": core.started_at,
        "uptime_s": round(time.time() - core.started_at, 3),
        "migrations": migrations,
        "counts": {**counts, "spooled": spooled},
        "builders": builders,
        "held": core.held(),
        "storage": storage,
        # hooks answered on the Unix socket's fast path since start (hookd.http.fastpath),
        # and how many of them had to wait (their write joined a group commit)
        "fast_path": {"enabled": fastpath, "hooks": core.fast_hooks, "waited": core.fast_hooks_resumed},
        # the hub's shipper (hookd.hub; null: no hub): url without password, state, error,
        # host_id, shipped_seq, sent, inserted
        "hub": core.hub.view() if core.hub is not None else None,
    }


def _status_files(home: Home, transcripts: dict[str, str]) -> tuple[list[dict[str, Any]], int, dict[str, float],
                                                                     dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(every spawn manifest, payloads in the spool, the unspawned builders and when, each
    spawned builder whose hooks will not run -> what is wrong (its settings file no longer
    holds spawn's entries, or a setting turns every hook off:
    :func:`hookd.spawn.hooksoff.check_builder`, the user's settings found from ``transcripts``,
    builder -> its newest transcript path), each spawned builder of a harness with a trust
    step -> whether it will run the hooks (:func:`trust_status`)): status's file reads, in a
    thread."""
    manifests = list_manifests(home)
    checks = {m["builder"]: wrong for m in manifests
              if (wrong := check_builder(home, m, user_config_dir(transcripts.get(m["builder"]), os.environ))) is not None}
    trusts = {m["builder"]: t for m in manifests if (t := trust_status(home, m)) is not None}
    return manifests, home.spooled(), list_unspawned(home), checks, trusts


def trust_status(home: Home, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """A spawned builder's ``hooks_trust`` in status: ``{"state", "detail", "config_file",
    "fix"}`` (:func:`hookd.spawn.trust.check`; ``fix``: the spawn command that trusts them,
    None when trusted), None for a harness with no trust step. From the files only: no
    harness process is started."""
    t = check_trust(manifest, INSTALLS.get(str(manifest.get("harness"))))
    if t is None:
        return None
    return {**t, "fix": None if t["state"] == "trusted" else f"{fix_command(home, manifest)} --trust"}


def _builder_status(builder: str, manifest: dict | None, stats: dict | None,
                    unspawned_at: float | None, lane: tuple[str, float, str | None, str | None] | None = None,
                    ) -> dict[str, Any]:
    """One builder of ``GET /v1/status``; lane: its lane as last recorded (state, since,
    session, detail), shown as ``lane`` (``{state, since, detail}``, None before the first)."""
    hooks_seen = stats["hooks_seen"] if stats else 0
    out: dict[str, Any] = {
        "builder": builder,
        "harness": (manifest or {}).get("harness") or (stats or {}).get("harness"),
        "worktree": (manifest or {}).get("worktree"),
        "settings_file": (manifest or {}).get("settings_file"),
        "spawned": manifest is not None,
        # when `hookd unspawn` removed its hooks (UNIX seconds); None: spawned, or never was
        "unspawned_at": unspawned_at,
        # the hook client spawn wrote: "c" (compiled) or "bash"; None when not spawned (or
        # a harness with no hook client); client_note: why it fell back to bash
        "client": (manifest or {}).get("client"),
        "client_note": (manifest or {}).get("client_note"),
        # how the harness runs the hooks (``hookd spawn --hook-transport``): "sh", "exec" or
        # "http"; None when not spawned (a manifest from before the option: "sh")
        "transport": ((manifest or {}).get("transport") or "sh") if manifest is not None else None,
        "hooks_seen": hooks_seen,
        "last_hook_at": (stats or {}).get("last_hook_at"),
        "pending": (stats or {}).get("pending", 0),
        "sessions": (stats or {}).get("sessions", []),
        "lane": {"state": lane[0], "since": lane[1], "detail": lane[3]} if lane else None,
        # its hooks stopped working (hookd.core.hookhealth; set by core_status for a spawned one)
        "hooks_changed": None,
        # a harness that runs hooks only once its user trusts them (Codex): whether it will run
        # them (trusted, untrusted, modified, project_not_trusted, unknown) and the fix; None
        # for the others (set by core_status for a spawned one)
        "hooks_trust": None,
    }
    if manifest is not None and hooks_seen == 0 and manifest.get("trust") is None:
        # Installed is not active (case B19): Claude Code snapshots hooks at session start.
        out["warning"] = (
            "no hook received yet: a Claude Code session started before spawn does not "
            "see the new hooks; run /hooks in it or restart it"
        )
    return out

