"""Which hub a daemon ships to: ``hookd serve --hub URL``, else ``HOOKD_HUB``
(:attr:`hookd.settings.Settings.hub_url`), else ``url`` in ``config.toml``'s ``[hub]`` table;
none of them: no hub (the daemon is what it always was). ``[hub] notify`` and
``notify_grace_s``: :func:`notify_settings`.

The URL is a PostgreSQL connection URL as asyncpg takes it, passed on unchanged: its TLS
parameters (``sslmode=verify-full``, ``sslrootcert``, ``sslcert``, ``sslkey``, ...) and
``passfile`` reach asyncpg as written (docs/fleet.md "Security").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hookd.models import ConfigError
from hookd.untrusted import NotRegularFile, read_regular


def _table(home_root: Path) -> tuple[Path, dict[str, Any]]:
    """``home_root/config.toml``'s ``[hub]`` table (empty: no file, no table). Raises
    ConfigError naming the file when it cannot be read or ``[hub]`` is malformed."""
    path = Path(home_root) / "config.toml"
    try:
        raw = read_regular(path)
    except FileNotFoundError:
        return path, {}
    except NotRegularFile as e:
        raise ConfigError(f"cannot read {e}") from None
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    import tomllib

    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path} is not valid TOML: {e}") from None
    hub: Any = doc.get("hub", {})
    if not isinstance(hub, dict):
        raise ConfigError(f"{path}: 'hub' must be a table ([hub])")
    unknown = sorted(set(hub) - set(KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key hub.{unknown[0]} (known: {', '.join(KEYS)})")
    return path, hub


#: ``[hub]``'s keys.
KEYS = ("url", "notify", "notify_grace_s")
#: ``[hub] notify``'s values (docs/fleet.md "One notifier for the fleet").
NOTIFY_MODES = ("fleet", "local")


def config_url(home_root: Path) -> str | None:
    """``[hub] url`` of ``home_root/config.toml`` (None: no file, no table, no url). Raises
    ConfigError naming the file when it cannot be read or ``[hub]`` is malformed."""
    path, hub = _table(home_root)
    url = hub.get("url")
    if url is not None and not isinstance(url, str):
        raise ConfigError(f"{path}: hub.url must be a string")
    return url or None


def notify_settings(home_root: Path) -> tuple[str, float]:
    """``[hub] notify`` (``fleet``, the default: one notifier for the fleet covers this
    host's interactions; ``local``: this host notifies them itself) and ``notify_grace_s``
    (seconds a step the fleet covers is left to it before this host claims it itself;
    default 10). Raises ConfigError naming the file and the key."""
    path, hub = _table(home_root)
    mode = hub.get("notify", "fleet")
    if mode not in NOTIFY_MODES:
        raise ConfigError(f"{path}: hub.notify must be \"fleet\" or \"local\" (got {mode!r})")
    grace = hub.get("notify_grace_s", 10.0)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
        raise ConfigError(f"{path}: hub.notify_grace_s must be a number of seconds, at least 0 (got {grace!r})")
    return mode, float(grace)


def resolve(home_root: Path, flag: str | None, env_url: str | None) -> str | None:
    """The hub URL in force (module doc), checked (:func:`check_url`), or None."""
    url = flag or env_url or config_url(home_root)
    if url:
        notify_settings(home_root)  # (its errors at start, before anything is bound)
    return check_url(url) if url else None


def require_driver() -> None:
    """Raise ConfigError saying how to install asyncpg (the extra ``hookd[hub]``) when it is
    missing."""
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        raise ConfigError("a hub needs asyncpg: pip install 'hookd[hub]'") from None


def check_url(url: str) -> str:
    """``url`` when it is a ``postgresql://`` (or ``postgres://``) URL; raises ConfigError."""
    if urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"the hub's URL must start with postgresql:// (not {redact(url)!r})")
    return url


def redact(url: str) -> str:
    """``url`` without its password (for logs, status, and as the hub's key in the local
    cursor: the same hub whatever the password)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[2]}"))
