"""The notification settings (``hookd.watchers.notify``'s configuration), from
``HOOKD_HOME/config.toml``::

    [notify]
    question_after_s = 60          # a question or permission prompt pending this long
    idle_inbox_after_s = 120       # an idle lane with queued inbox messages (lanes raise it)
    steps_s = [0, 300, 1800]       # escalation: offsets after a rule first fires
    agent_messages = "proactive"   # the agent's own messages sent on: proactive | all | off

    [[notify.channel]]
    type = "desktop"               # notify-send (Linux) / osascript (macOS)

    [[notify.channel]]
    type = "webhook"
    url = "https://ntfy.sh"
    format = "ntfy"                # json (default) | slack | ntfy
    topic = "my-hookd-alerts"      # ntfy only

    [[notify.channel]]
    type = "command"
    command = ["/usr/local/bin/page-me", "--quiet"]   # the alert as JSON on stdin

    [[notify.channel]]
    type = "telegram"              # two-way: answer from the chat (hookd.watchers.chat)
    token_env = "HOOKD_TELEGRAM_TOKEN"   # or token = "123:ABC" (never logged nor shown)
    chat_id = "123456789"          # where hookd posts
    allow = [123456789]            # the Telegram user ids whose answers count
    base_url = "https://api.telegram.org/bot"   # optional (a test's fake)

    [[notify.channel]]
    type = "slack"                 # two-way over Socket Mode (hookd.watchers.slack)
    token_env = "HOOKD_SLACK_BOT_TOKEN"      # or token = "xoxb-..." (never logged nor shown)
    app_token_env = "HOOKD_SLACK_APP_TOKEN"  # or app_token = "xapp-..." (Socket Mode)
    chat_id = "C0123456789"        # the Slack channel hookd posts in
    allow = ["U0123ABCD"]          # the Slack user ids whose answers count
    base_url = "https://slack.com/api/"      # optional (a test's fake)

Environment overrides (watchfiles style): ``HOOKD_NOTIFY_QUESTION_AFTER_S``,
``HOOKD_NOTIFY_IDLE_INBOX_AFTER_S``, ``HOOKD_NOTIFY_STEPS_S`` (comma-separated),
``HOOKD_NOTIFY_RETRY_ATTEMPTS``, ``HOOKD_NOTIFY_RETRY_INITIAL_S``, ``HOOKD_NOTIFY_RETRY_MAX_S``,
``HOOKD_NOTIFY_AGENT_MESSAGES``.
``hookd serve`` flags override both. :func:`load_config` reads them (a bad value is a
ConfigError naming the file or variable and the key).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import msgspec

from hookd.models import ConfigError
from hookd.untrusted import NotRegularFile, read_regular

DEFAULT_QUESTION_AFTER_S = 60.0
DEFAULT_IDLE_INBOX_AFTER_S = 120.0
DEFAULT_STEPS_S = (0.0, 300.0, 1800.0)
DEFAULT_RETRY_ATTEMPTS = 5
DEFAULT_RETRY_INITIAL_S = 1.0
DEFAULT_RETRY_MAX_S = 60.0
DEFAULT_TIMEOUT_S = 10.0
CHANNEL_TYPES = ("desktop", "webhook", "command", "telegram", "slack")
#: channel types that also take answers from the chat (hookd.watchers.chat)
TWO_WAY_TYPES = ("telegram", "slack")
#: ``agent_messages``: which of the agent's own messages (hookd.watchers.notify_agent) are sent
AGENT_MESSAGES = ("proactive", "all", "off")
WEBHOOK_FORMATS = ("json", "slack", "ntfy")


class Channel(msgspec.Struct, frozen=True, kw_only=True):
    """One configured notifier. name: stable id used to record deliveries (default: type and
    a short hash of its settings, so reordering channels re-sends nothing)."""

    type: str
    name: str
    url: str | None = None
    format: str = "json"
    topic: str | None = None
    headers: dict[str, str] = {}
    command: list[str] = []
    timeout_s: float = DEFAULT_TIMEOUT_S
    #: telegram, slack: the bot's token (from ``token`` or the variable ``token_env``), the
    #: chat (Slack: the channel id) posted to, the user ids allowed to answer (Telegram:
    #: numbers, Slack: ``U...`` strings), the API's base URL (None: the service's own)
    token: str | None = None
    chat_id: str | None = None
    allow: tuple[int | str, ...] = ()
    base_url: str | None = None
    #: slack: the app-level token (``xapp-``) that opens the Socket Mode websocket
    app_token: str | None = None

    def __repr__(self) -> str:  # the token stays out of logs and tracebacks
        return f"Channel(type={self.type!r}, name={self.name!r})"


class NotifyConfig(msgspec.Struct, frozen=True, kw_only=True):
    question_after_s: float = DEFAULT_QUESTION_AFTER_S
    idle_inbox_after_s: float = DEFAULT_IDLE_INBOX_AFTER_S
    steps_s: tuple[float, ...] = DEFAULT_STEPS_S
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    retry_initial_s: float = DEFAULT_RETRY_INITIAL_S
    retry_max_s: float = DEFAULT_RETRY_MAX_S
    channels: tuple[Channel, ...] = ()
    agent_messages: str = "proactive"
    path: str = ""


_NUMBERS = {
    "question_after_s": (float, 0.0),
    "idle_inbox_after_s": (float, 0.0),
    "retry_attempts": (int, 1),
    "retry_initial_s": (float, 0.0),
    "retry_max_s": (float, 0.0),
}
_CHANNEL_KEYS = {"type", "name", "url", "format", "topic", "headers", "command", "timeout_s", "token", "token_env",
                 "chat_id", "allow", "base_url", "app_token", "app_token_env"}
_CHAT_KEYS = ("token", "token_env", "chat_id", "allow", "base_url")


def config_path(home: Any) -> Path:
    return Path(home.root) / "config.toml"


def _number(where: str, value: Any, kind: type, minimum: float) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise ConfigError(f"{where} must be {'an integer' if kind is int else 'a number'} (got {value!r})")
    if value < minimum:
        raise ConfigError(f"{where} must be at least {minimum:g} (got {value!r})")
    return kind(value)


def _steps(where: str, value: Any) -> tuple[float, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where} must be a non-empty list of seconds, e.g. [0, 300, 1800]")
    steps = tuple(float(_number(where, v, float, 0.0)) for v in value)
    if any(b <= a for a, b in zip(steps, steps[1:])):
        raise ConfigError(f"{where} must be strictly increasing (got {value!r})")
    return steps


def _agent_messages(where: str, value: Any) -> str:
    if value not in AGENT_MESSAGES:
        raise ConfigError(f"{where} must be one of {', '.join(AGENT_MESSAGES)} (got {value!r})")
    return str(value)


#: The ``env`` of a channel whose ``*_env`` variables are not read (``load_config``'s ``only``:
#: a channel not tested): its token from a variable is None.
_UNREAD: dict[str, str] = {}


def _telegram(where: str, t: dict[str, Any], env: Any) -> dict[str, Any]:
    """The telegram keys of channel table ``t`` (the token read from ``token_env`` in ``env``;
    None when ``env`` is ``_UNREAD``)."""
    token, var = t.get("token"), t.get("token_env")
    if (token is None) == (var is None):
        raise ConfigError(f"{where}: give the bot's token as token or token_env (one of them)")
    if var is not None:
        if not isinstance(var, str) or not var:
            raise ConfigError(f"{where}.token_env must be the name of an environment variable")
        token = None if env is _UNREAD else env.get(var)
        if not token and env is not _UNREAD:
            raise ConfigError(f"{where}.token_env: environment variable {var} is not set")
    if token is not None and (not isinstance(token, str) or ":" not in token
                              or any(c.isspace() or c == "/" for c in token)):
        raise ConfigError(f"{where}: the token is not a bot token (as @BotFather gives it: digits, ':', letters)")
    chat = t.get("chat_id")
    if isinstance(chat, bool) or not isinstance(chat, (int, str)) or not str(chat).lstrip("-@").strip():
        raise ConfigError(f"{where}.chat_id must be the chat's id (a number) or @channelname (got {chat!r})")
    allow = t.get("allow")
    if not isinstance(allow, list) or not allow or not all(isinstance(a, int) and not isinstance(a, bool) for a in allow):
        raise ConfigError(f"{where}.allow must be a non-empty list of Telegram user ids (numbers) allowed to answer")
    base = t.get("base_url")
    if base is not None and (not isinstance(base, str) or not base.startswith(("http://", "https://"))):
        raise ConfigError(f"{where}.base_url must be an http:// or https:// URL (got {base!r})")
    return {"token": token, "chat_id": str(chat), "allow": tuple(allow), "base_url": base}


def _secret(where: str, t: dict[str, Any], env: Any, key: str, what: str) -> str | None:
    """The value of ``key`` or of the environment variable named by ``<key>_env`` (one of them;
    None when ``env`` is ``_UNREAD``)."""
    value, var = t.get(key), t.get(f"{key}_env")
    if (value is None) == (var is None):
        raise ConfigError(f"{where}: give the {what} as {key} or {key}_env (one of them)")
    if var is not None:
        if not isinstance(var, str) or not var:
            raise ConfigError(f"{where}.{key}_env must be the name of an environment variable")
        if env is _UNREAD:
            return None
        value = env.get(var)
        if not value:
            raise ConfigError(f"{where}.{key}_env: environment variable {var} is not set")
    if not isinstance(value, str):
        raise ConfigError(f"{where}.{key} must be a string")
    return value


def _slack(where: str, t: dict[str, Any], env: Any) -> dict[str, Any]:
    """The slack keys of channel table ``t`` (tokens read from ``*_env`` variables in ``env``)."""
    from importlib.util import find_spec

    if find_spec("slack_sdk") is None or find_spec("aiohttp") is None:
        raise ConfigError(f"{where}: a slack channel needs slack_sdk and aiohttp: pip install 'hookd[slack]'")
    token = _secret(where, t, env, "token", "bot token (xoxb-...)")
    if token is not None and (not token.startswith("xoxb-") or any(c.isspace() for c in token)):
        raise ConfigError(f"{where}: the token is not a Slack bot token (it starts with xoxb-)")
    app_token = _secret(where, t, env, "app_token", "app-level token (xapp-..., Socket Mode)")
    if app_token is not None and (not app_token.startswith("xapp-") or any(c.isspace() for c in app_token)):
        raise ConfigError(f"{where}: the app_token is not a Slack app-level token (it starts with xapp-)")
    chat = t.get("chat_id")
    if not isinstance(chat, str) or not chat.strip() or any(c.isspace() for c in chat):
        raise ConfigError(f"{where}.chat_id must be the Slack channel's id, e.g. \"C0123456789\" (got {chat!r})")
    allow = t.get("allow")
    if not isinstance(allow, list) or not allow or not all(isinstance(a, str) and a.strip() for a in allow):
        raise ConfigError(f"{where}.allow must be a non-empty list of Slack user ids (strings such as \"U0123ABCD\")")
    base = t.get("base_url")
    if base is not None and (not isinstance(base, str) or not base.startswith(("http://", "https://"))):
        raise ConfigError(f"{where}.base_url must be an http:// or https:// URL (got {base!r})")
    if base is not None and not base.endswith("/"):
        base += "/"
    return {"token": token, "app_token": app_token, "chat_id": chat, "allow": tuple(allow), "base_url": base}


def _channel(where: str, t: Any, env: Any = None) -> Channel:
    if not isinstance(t, dict):
        raise ConfigError(f"{where} must be a table ([[notify.channel]])")
    unknown = sorted(set(t) - _CHANNEL_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_CHANNEL_KEYS))})")
    typ = t.get("type")
    if typ not in CHANNEL_TYPES:
        raise ConfigError(f"{where}.type must be one of {', '.join(CHANNEL_TYPES)} (got {typ!r})")
    kw: dict[str, Any] = {"type": typ}
    extra = [k for k in _CHAT_KEYS if k in t and typ not in TWO_WAY_TYPES]
    if extra:
        raise ConfigError(f"{where}.{extra[0]} applies to a telegram or slack channel only")
    extra = [k for k in ("app_token", "app_token_env") if k in t and typ != "slack"]
    if extra:
        raise ConfigError(f"{where}.{extra[0]} applies to a slack channel only")
    if "timeout_s" in t:
        kw["timeout_s"] = float(_number(f"{where}.timeout_s", t["timeout_s"], float, 0.1))
    if typ == "webhook":
        url = t.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.url must be an http:// or https:// URL (got {url!r})")
        fmt = t.get("format", "json")
        if fmt not in WEBHOOK_FORMATS:
            raise ConfigError(f"{where}.format must be one of {', '.join(WEBHOOK_FORMATS)} (got {fmt!r})")
        topic = t.get("topic")
        if fmt == "ntfy" and (not isinstance(topic, str) or not topic):
            raise ConfigError(f"{where}.topic is required with format = \"ntfy\" (url is the server's base URL)")
        headers = t.get("headers", {})
        if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
            raise ConfigError(f"{where}.headers must be a table of strings")
        kw.update(url=url, format=fmt, topic=topic, headers=headers)
        ident = f"{url} {fmt} {topic}"
    elif typ == "command":
        cmd = t.get("command")
        if not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) and a for a in cmd):
            raise ConfigError(f"{where}.command must be a non-empty list of strings (argv), e.g. [\"/usr/bin/page-me\"]")
        kw["command"] = cmd
        ident = "\0".join(cmd)
    elif typ == "telegram":
        kw.update(_telegram(where, t, os.environ if env is None else env))
        ident = f"{kw['chat_id']}"
    elif typ == "slack":
        kw.update(_slack(where, t, os.environ if env is None else env))
        ident = f"{kw['chat_id']}"
    else:
        for k in ("url", "command", "topic"):
            if k in t:
                raise ConfigError(f"{where}.{k} does not apply to a desktop channel")
        ident = ""
    name = t.get("name")
    if name is None:
        name = typ if typ == "desktop" else f"{typ}:{hashlib.sha256(ident.encode()).hexdigest()[:8]}"
    elif not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.name must be a non-empty string")
    return Channel(name=name, **kw)


def _channels(path: str, tables: list[Any], env: Any, only: str | None) -> tuple[Channel, ...]:
    """The channels of ``tables`` (``[[notify.channel]]``); with ``only``, the tokens of that
    channel alone read from ``env`` (:func:`load_config`)."""
    where = [f"{path}: notify.channel[{n}]" for n in range(1, len(tables) + 1)]
    if only is None:
        return tuple(_channel(w, t, env) for w, t in zip(where, tables))
    unread = [_channel(w, t, _UNREAD) for w, t in zip(where, tables)]
    return tuple(_channel(w, t, env) if only in (str(n), c.name) else c
                 for n, (w, t, c) in enumerate(zip(where, tables, unread), 1))


def load_config(home: Any, overrides: dict[str, Any] | None = None,
                env: dict[str, str] | os._Environ[str] | None = None, only: str | None = None) -> NotifyConfig:
    """The notification settings of ``home``: defaults < ``config.toml`` < environment
    < ``overrides`` (command-line flags, None values ignored). only: a channel's 1-based
    number or name: only its tokens are read from ``*_env`` variables (the others' are None:
    ``hookd notify test --channel`` without a daemon). Raises ConfigError naming the file (or
    variable) and the key."""
    path = config_path(home)
    env = os.environ if env is None else env
    data: dict[str, Any] = {}
    try:
        raw = read_regular(path)  # never waits on a FIFO (or a device) named config.toml
    except FileNotFoundError:
        raw = None
    except NotRegularFile as e:
        raise ConfigError(f"cannot read {e}") from None
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    if raw is not None:
        import tomllib  # here: most homes have no config.toml

        try:
            doc = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path} is not valid TOML: {e}") from None
        notify = doc.get("notify", {})
        if not isinstance(notify, dict):
            raise ConfigError(f"{path}: 'notify' must be a table ([notify])")
        data = dict(notify)
    kw: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{path}: notify.{key}"
        if key in _NUMBERS:
            kind, minimum = _NUMBERS[key]
            kw[key] = _number(where, value, kind, minimum)
        elif key == "steps_s":
            kw[key] = _steps(where, value)
        elif key == "agent_messages":
            kw[key] = _agent_messages(where, value)
        elif key == "channel":
            if not isinstance(value, list):
                raise ConfigError(f"{where} must be an array of tables ([[notify.channel]])")
            kw["channels"] = _channels(str(path), value, env, only)
        else:
            known = sorted([*_NUMBERS, "steps_s", "channel", "agent_messages"])
            raise ConfigError(f"{where}: unknown key (known: {', '.join(known)})")
    for key, (kind, minimum) in _NUMBERS.items():
        var = f"HOOKD_NOTIFY_{key.upper()}"
        if var in env:
            try:
                value = kind(env[var])
            except ValueError:
                raise ConfigError(f"environment variable {var} must be {'an integer' if kind is int else 'a number'} (got {env[var]!r})") from None
            kw[key] = _number(f"environment variable {var}", value, kind, minimum)
    if "HOOKD_NOTIFY_STEPS_S" in env:
        try:
            parts = [float(p) for p in env["HOOKD_NOTIFY_STEPS_S"].split(",") if p.strip()]
        except ValueError:
            raise ConfigError(f"environment variable HOOKD_NOTIFY_STEPS_S must be comma-separated seconds (got {env['HOOKD_NOTIFY_STEPS_S']!r})") from None
        kw["steps_s"] = _steps("environment variable HOOKD_NOTIFY_STEPS_S", parts)
    if "HOOKD_NOTIFY_AGENT_MESSAGES" in env:
        kw["agent_messages"] = _agent_messages("environment variable HOOKD_NOTIFY_AGENT_MESSAGES",
                                               env["HOOKD_NOTIFY_AGENT_MESSAGES"])
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key == "steps_s":
            kw[key] = _steps("--notify-steps", list(value))
        else:
            kind, minimum = _NUMBERS[key]
            kw[key] = _number(f"--{key.replace('_', '-')}", value, kind, minimum)
    names = [c.name for c in kw.get("channels", ())]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ConfigError(f"{path}: two channels are named {dup!r}; give each a distinct name")
    return NotifyConfig(path=str(path), **kw)
