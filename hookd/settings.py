"""The daemon's tunables: every ``HOOKD_*`` environment variable the daemon reads, resolved once.

``Settings.from_env()`` is called once, by whoever starts the daemon (``hookd serve``) or a test
that builds the core in-process, and the result is handed to each component that needs a
value; no module reads the environment at import. Durations are in the unit their name says
(``_s`` seconds, ``_ms`` milliseconds). The hook client's own variables (``HOOKD_HOME``,
``HOOKD_SOCK``, ``HOOKD_DEADLINE_MS``) and the notifier's (``HOOKD_NOTIFY_*``, in
``hookd.watchers.notify``) are read where those are configured, not here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import msgspec

from hookd.models import ConfigError


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """The daemon's tunables with their defaults (each field: its variable, its unit)."""

    redeliver_after_s: float = 300.0
    """``HOOKD_REDELIVER_AFTER_S``: a delivered message not adopted by then is queued again."""
    liveness_s: float = 2.0
    """``HOOKD_LIVENESS_S``: how often lanes check that a builder's process is alive, and the run
    watch the runs ``hookd run`` started, where the kernel does not tell their exit
    (hookd.watchers.exits)."""
    quiet_idle_s: float = 30.0
    """``HOOKD_QUIET_IDLE_S``: a working lane with no hook for this long is shown idle."""
    group_commit: bool = True
    """``HOOKD_GROUP_COMMIT`` (``0`` turns it off): hooks arriving together share one commit."""
    busy_wait_s: float = 2.0
    """``HOOKD_BUSY_WAIT_S``: how long a write waits on a locked database before it fails."""
    checkpoint_quiet_s: float = 30.0
    """``HOOKD_CHECKPOINT_QUIET_S``: the WAL is copied into the database after a window this long
    with no commit (or every 128 commits); commits are synced a second after them whatever this is."""
    body_timeout_s: float = 30.0
    """``HOOKD_BODY_TIMEOUT_S``: a request body not complete by then is answered 408."""
    fastpath: bool = True
    """``HOOKD_FASTPATH`` (``0`` turns it off): hook requests skip the ASGI stack."""
    hook_timings: bool = False
    """``HOOKD_HOOK_TIMINGS`` (``1`` turns it on): the app keeps each hook's handling time."""
    tail_debounce_ms: int = 20
    """``HOOKD_TAIL_DEBOUNCE_MS``: the transcript watcher's debounce."""
    tail_step_ms: int = 10
    """``HOOKD_TAIL_STEP_MS``: the transcript watcher's step."""
    watch_backend: str = "auto"
    """``HOOKD_WATCH_BACKEND``: ``watchfiles`` forces it on Linux (inotify otherwise)."""
    tail_quiet_ms: int = 2000
    """``HOOKD_TAIL_QUIET_MS``: while a session's hooks keep coming, a change of its transcript
    is read once they have been quiet this long ..."""
    tail_max_defer_ms: int = 2000
    """``HOOKD_TAIL_MAX_DEFER_MS``: ... or at its first hook once the change is this old
    (:mod:`hookd.watchers.quiet`)."""
    hub_url: str | None = None
    """``HOOKD_HUB``: the hub's PostgreSQL URL the daemon ships its event log to (hookd.hub; None:
    no hub); ``hookd serve --hub`` and ``[hub] url`` in config.toml are the other ways to name it."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings named in ``env`` (default ``os.environ``), defaults for the rest.

        Raises ConfigError naming the variable when a number is not a positive number."""
        env = os.environ if env is None else env
        return cls(
            redeliver_after_s=_number(env, "HOOKD_REDELIVER_AFTER_S", 300.0),
            liveness_s=_number(env, "HOOKD_LIVENESS_S", 2.0),
            quiet_idle_s=_number(env, "HOOKD_QUIET_IDLE_S", 30.0),
            group_commit=env.get("HOOKD_GROUP_COMMIT", "1") != "0",
            busy_wait_s=_number(env, "HOOKD_BUSY_WAIT_S", 2.0),
            checkpoint_quiet_s=_number(env, "HOOKD_CHECKPOINT_QUIET_S", 30.0),
            body_timeout_s=_number(env, "HOOKD_BODY_TIMEOUT_S", 30.0),
            fastpath=env.get("HOOKD_FASTPATH", "1") != "0",
            hook_timings=env.get("HOOKD_HOOK_TIMINGS") == "1",
            tail_debounce_ms=_number(env, "HOOKD_TAIL_DEBOUNCE_MS", 20, kind=int),
            tail_step_ms=_number(env, "HOOKD_TAIL_STEP_MS", 10, kind=int),
            watch_backend=(env.get("HOOKD_WATCH_BACKEND") or "auto").strip().lower(),
            tail_quiet_ms=_number(env, "HOOKD_TAIL_QUIET_MS", 2000, kind=int),
            tail_max_defer_ms=_number(env, "HOOKD_TAIL_MAX_DEFER_MS", 2000, kind=int),
            hub_url=(env.get("HOOKD_HUB") or "").strip() or None,
        )


def _number(env: Mapping[str, str], name: str, default: float, *, kind: type = float) -> Any:
    """The positive number in ``env[name]`` (``kind`` float or int), else ``default``; raises
    ConfigError naming the variable when it is set to anything else."""
    text = env.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not 0 < value < float("inf"):  # (NaN is not > 0)
        raise ConfigError(f"{name} must be a positive {'whole ' if kind is int else ''}number, not {text!r}")
    return value
