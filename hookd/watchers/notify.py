"""Detect-and-notify (DESIGN.md "Stall detection and notification").

A human hears about an agent waiting on them within a bounded time, once per escalation step,
on the channels they chose in ``HOOKD_HOME/config.toml``::

    [notify]
    question_after_s = 60          # a question or permission prompt pending this long
    idle_inbox_after_s = 120       # an idle lane with queued inbox messages (lanes raise it)
    steps_s = [0, 300, 1800]       # escalation: offsets after a rule first fires

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

Environment overrides (watchfiles style): ``HOOKD_NOTIFY_QUESTION_AFTER_S``,
``HOOKD_NOTIFY_IDLE_INBOX_AFTER_S``, ``HOOKD_NOTIFY_STEPS_S`` (comma-separated),
``HOOKD_NOTIFY_RETRY_ATTEMPTS``, ``HOOKD_NOTIFY_RETRY_INITIAL_S``, ``HOOKD_NOTIFY_RETRY_MAX_S``.
``hookd serve`` flags override both.

Subjects are keys (``interaction:<id>``, ``lane:<builder>:<rule>...``). Step ``n`` of a subject
is claimed in the store (one transaction) before anything is sent, one row per channel, so a
step goes out at most once per channel, across restarts; a delivery is retried with
exponential backoff (tenacity) in a background task and stops when the subject is cleared.
Interaction rules run here (:meth:`Notifier.run`); lanes raise their own alerts with
:func:`raise_alert` and end them with :func:`clear`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sys
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import httpx
import msgspec
from tenacity import AsyncRetrying, retry_if_not_exception_type, stop_after_attempt, wait_exponential

from hookd.models import ConfigError, Interaction, NotFound
from hookd.untrusted import NotRegularFile, read_regular, visible

if TYPE_CHECKING:
    from hookd.core import Hookd
    from hookd.store import Tx

log = logging.getLogger("hookd")

DEFAULT_QUESTION_AFTER_S = 60.0
DEFAULT_IDLE_INBOX_AFTER_S = 120.0
DEFAULT_STEPS_S = (0.0, 300.0, 1800.0)
DEFAULT_RETRY_ATTEMPTS = 5
DEFAULT_RETRY_INITIAL_S = 1.0
DEFAULT_RETRY_MAX_S = 60.0
DEFAULT_TIMEOUT_S = 10.0
#: Fewest seconds between two rule passes woken by commits (bursts of hooks coalesce).
MIN_PASS_GAP_S = 0.05

Rule = Literal["question_pending", "permission_pending", "idle_with_messages", "agent_dead", "test"]
CHANNEL_TYPES = ("desktop", "webhook", "command")
WEBHOOK_FORMATS = ("json", "slack", "ntfy")

_enc = msgspec.json.Encoder(order="sorted")


# --- configuration ------------------------------------------------------------------------

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


class NotifyConfig(msgspec.Struct, frozen=True, kw_only=True):
    question_after_s: float = DEFAULT_QUESTION_AFTER_S
    idle_inbox_after_s: float = DEFAULT_IDLE_INBOX_AFTER_S
    steps_s: tuple[float, ...] = DEFAULT_STEPS_S
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    retry_initial_s: float = DEFAULT_RETRY_INITIAL_S
    retry_max_s: float = DEFAULT_RETRY_MAX_S
    channels: tuple[Channel, ...] = ()
    path: str = ""


_NUMBERS = {
    "question_after_s": (float, 0.0),
    "idle_inbox_after_s": (float, 0.0),
    "retry_attempts": (int, 1),
    "retry_initial_s": (float, 0.0),
    "retry_max_s": (float, 0.0),
}
_CHANNEL_KEYS = {"type", "name", "url", "format", "topic", "headers", "command", "timeout_s"}


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


def _channel(where: str, t: Any) -> Channel:
    if not isinstance(t, dict):
        raise ConfigError(f"{where} must be a table ([[notify.channel]])")
    unknown = sorted(set(t) - _CHANNEL_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_CHANNEL_KEYS))})")
    typ = t.get("type")
    if typ not in CHANNEL_TYPES:
        raise ConfigError(f"{where}.type must be one of {', '.join(CHANNEL_TYPES)} (got {typ!r})")
    kw: dict[str, Any] = {"type": typ}
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


def load_config(home: Any, overrides: dict[str, Any] | None = None,
                env: dict[str, str] | os._Environ[str] | None = None) -> NotifyConfig:
    """The notification settings of ``home``: defaults < ``config.toml`` < environment
    < ``overrides`` (command-line flags, None values ignored). Raises ConfigError naming the
    file (or variable) and the key."""
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
        elif key == "channel":
            if not isinstance(value, list):
                raise ConfigError(f"{where} must be an array of tables ([[notify.channel]])")
            kw["channels"] = tuple(_channel(f"{path}: notify.channel[{n}]", t) for n, t in enumerate(value, 1))
        else:
            known = sorted([*_NUMBERS, "steps_s", "channel"])
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


# --- alerts -------------------------------------------------------------------------------

class Alert(msgspec.Struct, kw_only=True):
    """One notification. key: the subject (``interaction:<id>``, ``lane:<builder>:<rule>``);
    step: escalation step (0 first); message: human text (who waits, on what, since when,
    and the command that answers); data: rule-specific JSON; at: when it was raised.
    ``title`` and ``message`` hold agent-written text (questions, tool input) shown with
    :func:`hookd.untrusted.visible`: a desktop notification, a chat message or a pager
    gets no control or bidi character from it; ``data`` keeps the exact values."""

    key: str
    rule: str
    builder: str | None
    title: str
    message: str
    step: int = 0
    session_id: str | None = None
    data: dict[str, Any] = {}
    at: float = msgspec.field(default_factory=time.time)

    def __post_init__(self) -> None:
        self.title, self.message = visible(self.title), visible(self.message)


def duration(s: float) -> str:
    """``1 h 5 min``, ``2 min 3 s``, ``45 s``."""
    s = max(0, int(s))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60} min"
    if s >= 60:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s} s"


def interaction_alert(i: Interaction, step: int, steps: int, now: float) -> Alert:
    """The alert for a pending question or permission prompt."""
    waited = duration(now - i.created_at)
    nth = f" (reminder {step} of {steps - 1})" if step else ""
    if i.kind == "permission":
        inp = _enc.encode(i.input).decode() if i.input is not None else ""
        inp = inp if len(inp) <= 200 else inp[:197] + "..."
        rule = "permission_pending"
        title = f"hookd: {i.builder} needs permission for {i.tool_name}"
        message = (f"{i.builder} has been waiting {waited} for permission to run {i.tool_name} {inp}{nth}. "
                   f"Answer: hookd answer {i.id} --option allow   (or: --option deny --text \"why\")")
        what: Any = {"tool_name": i.tool_name, "input": i.input}
    else:
        qs = [q for q in (i.questions or []) if isinstance(q, dict)]
        text = "; ".join(str(q.get("question", "?")) for q in qs) or "a question"
        opts = [o.get("label") for o in (qs[0].get("options") or []) if isinstance(o, dict)] if len(qs) == 1 else []
        rule = "question_pending"
        title = f"hookd: {i.builder} is waiting for your answer"
        how = (f"--option {_shell_word(opts[0])}" if opts else "--text \"...\"")
        message = (f"{i.builder} has been waiting {waited} for an answer to: {text}"
                   + (f" (options: {', '.join(map(str, opts))})" if opts else "") + f"{nth}. "
                   f"Answer: hookd answer {i.id} {how}")
        what = {"questions": [q.get("question") for q in qs]}
    return Alert(key=f"interaction:{i.id}", rule=rule, step=step, builder=i.builder, session_id=i.session_id,
                 title=title, message=message, at=now,
                 data={"interaction_id": i.id, "kind": i.kind, "created_at": i.created_at,
                       "waited_s": round(now - i.created_at, 3), **what})


def _shell_word(s: Any) -> str:
    import shlex

    return shlex.quote(str(s))


# --- channels -----------------------------------------------------------------------------

class NotifyFailed(Exception):
    """A delivery attempt failed (retried)."""


class PermanentFailure(NotifyFailed):
    """A delivery that cannot succeed by retrying (no notifier binary)."""


def webhook_body(ch: Channel, alert: Alert) -> bytes:
    """What a webhook channel POSTs: the alert (json), ``{"text"}`` (Slack incoming webhook),
    or an ntfy JSON publish (``topic``, ``title``, ``message``, ``priority``, ``tags``) to the
    server's base URL."""
    if ch.format == "slack":
        return _enc.encode({"text": f"*{alert.title}*\n{alert.message}"})
    if ch.format == "ntfy":
        return _enc.encode({"topic": ch.topic, "title": alert.title, "message": alert.message,
                            "priority": min(5, 3 + alert.step), "tags": ["hookd", alert.rule]})
    return _enc.encode(alert)


def desktop_argv(alert: Alert, platform: str = sys.platform) -> list[str]:
    if platform == "darwin":
        # arguments, not string splicing: no AppleScript quoting issues
        return ["osascript", "-e", "on run argv", "-e",
                "display notification (item 2 of argv) with title (item 1 of argv)", "-e", "end run",
                alert.title, alert.message]
    return ["notify-send", "--app-name=hookd", alert.title, alert.message]


async def _run(argv: list[str], stdin: bytes | None, timeout: float) -> None:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    except FileNotFoundError:
        raise PermanentFailure(f"{argv[0]} not found") from None
    except PermissionError:
        raise PermanentFailure(f"{argv[0]} is not executable") from None
    try:
        _, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise NotifyFailed(f"{argv[0]} did not finish within {timeout:g} s") from None
    except asyncio.CancelledError:  # cleared or shutting down: leave no notifier behind
        if proc.returncode is None:
            proc.kill()
        raise
    if proc.returncode != 0:
        tail = (err or b"").decode(errors="replace").strip()[-300:]
        raise NotifyFailed(f"{argv[0]} exited with {proc.returncode}" + (f": {tail}" if tail else ""))


async def deliver(ch: Channel, alert: Alert, http: httpx.AsyncClient | None = None) -> None:
    """One delivery attempt on ``ch``. Raises NotifyFailed (PermanentFailure: do not retry)."""
    if ch.type == "desktop":
        await _run(desktop_argv(alert), None, ch.timeout_s)
    elif ch.type == "command":
        await _run(ch.command, _enc.encode(alert), ch.timeout_s)
    else:
        assert ch.url is not None
        own = http is None
        client = http or httpx.AsyncClient()
        try:
            r = await client.post(ch.url, content=webhook_body(ch, alert), timeout=ch.timeout_s,
                                  headers={"content-type": "application/json", "user-agent": "hookd", **ch.headers})
        except httpx.HTTPError as e:
            raise NotifyFailed(f"POST {ch.url}: {type(e).__name__}: {e}") from None
        finally:
            if own:
                await client.aclose()
        if r.status_code >= 300:
            raise NotifyFailed(f"POST {ch.url}: HTTP {r.status_code} {r.text[:200]}")


# --- the notifier in the daemon -----------------------------------------------------------

class Notifier:
    """Rules, escalation and delivery inside ``hookd serve``.

    Interaction rules: a pending ``question`` or ``permission`` older than
    ``question_after_s`` fires step 0; step n follows ``steps_s[n]`` seconds after step 0;
    after downtime only the highest step due is sent. Lane rules are raised by the lanes
    code through :meth:`raise_alert`. Every step is claimed in the store before it is sent.
    """

    def __init__(self, core: Hookd, config: NotifyConfig):
        self.core = core
        self.config = config
        self._tasks: dict[tuple[str, int, str], asyncio.Task[None]] = {}
        self._clearing: set[str] = set()
        self._steps: dict[str, tuple[int, float]] = {}  # key -> (highest step claimed, first at)
        self._lane: dict[str, Alert] = {}  # raised subjects that escalate (key -> step-0 alert)
        self._wake = asyncio.Event()
        self._closed = False
        self._http: httpx.AsyncClient | None = None

    # public API (lanes) ----------------------------------------------------------------
    async def raise_alert(self, alert: Alert, *, escalate: bool = True) -> bool:
        """Send ``alert`` (step ``alert.step``) on every channel unless that step (or a higher
        one) of ``alert.key`` was already claimed; True when it is being sent. With
        ``escalate`` the later steps follow at ``steps_s`` offsets (from the subject's first
        step) until :meth:`clear`."""
        sent = await self._claim_and_send(alert)
        if escalate and alert.key not in self._clearing:
            self._lane[alert.key] = msgspec.structs.replace(alert, step=0)
            self._wake.set()
        return sent

    async def clear(self, key: str) -> None:
        """The subject is resolved: no further steps, pending retries stop (``cleared``)."""
        self._lane.pop(key, None)
        self._steps.pop(key, None)
        self._clearing.add(key)
        try:
            for k, task in list(self._tasks.items()):
                if k[0] == key:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            n, _ = await self.core.store.write(lambda tx: tx.clear_notifications(key))
        finally:
            self._clearing.discard(key)
        if n:
            log.info("notifications for %s cleared (%d pending)", key, n)

    # delivery --------------------------------------------------------------------------
    async def _claim_and_send(self, alert: Alert) -> bool:
        if not self.config.channels or self._closed:
            return False
        names = [c.name for c in self.config.channels]
        blob = _enc.encode(alert)
        (top, first, claimed), _ = await self.core.store.write(
            lambda tx: tx.claim_notification(alert.key, alert.step, alert.rule, alert.builder, names, blob, alert.at))
        self._steps[alert.key] = (top, first)
        for ch in self.config.channels:
            if ch.name in claimed:
                self._spawn(ch, alert, 0)
        return bool(claimed)

    def _spawn(self, ch: Channel, alert: Alert, attempts_before: int) -> None:
        k = (alert.key, alert.step, ch.name)
        if k in self._tasks:
            return
        task = asyncio.create_task(self._deliver(ch, alert, attempts_before))
        self._tasks[k] = task
        task.add_done_callback(lambda _t: self._tasks.pop(k, None))

    async def _deliver(self, ch: Channel, alert: Alert, attempts_before: int) -> None:
        cfg = self.config
        attempts = 0
        status, error = "sent", None
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(max(1, cfg.retry_attempts - attempts_before)),
                wait=wait_exponential(multiplier=cfg.retry_initial_s, min=cfg.retry_initial_s, max=cfg.retry_max_s),
                # tenacity's attempt context swallows BaseException too: without CancelledError
                # here a clear/close that cancels a request in flight would send it again
                retry=retry_if_not_exception_type((PermanentFailure, asyncio.CancelledError)),
                reraise=True,
            ):
                with attempt:
                    attempts += 1
                    try:
                        await deliver(ch, alert, self._http)
                    except NotifyFailed as e:
                        log.warning("notification %s step %d on %s failed (attempt %d): %s",
                                    alert.key, alert.step, ch.name, attempts_before + attempts, e)
                        raise
        except asyncio.CancelledError:
            if alert.key not in self._clearing:
                raise  # shutdown: the row stays pending and is resumed at the next start
            status, error = "cleared", None
        except Exception as e:  # noqa: BLE001 - a notifier must never take the daemon down
            status, error = "failed", str(e) or type(e).__name__
        await self._finish(ch, alert, status, attempts, error)

    async def _finish(self, ch: Channel, alert: Alert, status: str, attempts: int, error: str | None) -> None:
        at = time.time()

        def tx_fn(tx: Tx) -> None:
            if not tx.finish_notification(alert.key, alert.step, ch.name, status=status, attempts=attempts,
                                          error=error, at=at):
                return
            if status in ("sent", "failed"):
                data: dict[str, Any] = {"key": alert.key, "step": alert.step, "channel": ch.name, "type": ch.type,
                                        "rule": alert.rule, "attempts": attempts}
                if error:
                    data["error"] = error
                tx.append_event(f"notification_{status}", alert.builder, alert.session_id, at, data)

        try:
            await self.core.store.write(tx_fn)
            await self.core.bus.publish()
        except Exception:
            log.exception("recording notification %s step %d on %s failed", alert.key, alert.step, ch.name)

    # rules -----------------------------------------------------------------------------
    async def run(self) -> None:
        """Resume deliveries a restart interrupted, then evaluate the rules whenever
        something is committed or the next step falls due (no polling)."""
        logging.getLogger("httpx").setLevel(logging.WARNING)  # its INFO lines carry webhook URLs (secrets)
        self._http = httpx.AsyncClient()
        try:
            await self._resume()
            last = 0.0
            while not self.core.bus.closed and not self._closed:
                version = self.core.bus.version
                self._wake.clear()
                try:
                    nxt = await self._pass(time.time())
                except Exception:
                    log.exception("notification rules pass failed")
                    nxt = time.time() + 5
                last = time.monotonic()
                wait = 3600.0 if nxt is None else min(3600.0, max(0.0, nxt - time.time()) + 0.01)
                waker = asyncio.create_task(self._wake.wait())
                bus = asyncio.create_task(self.core.bus.wait(wait, since=version))
                try:
                    await asyncio.wait({waker, bus}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waker.cancel()
                    bus.cancel()
                gap = MIN_PASS_GAP_S - (time.monotonic() - last)
                if gap > 0:
                    await asyncio.sleep(gap)
        finally:
            await self.close()

    async def _resume(self) -> None:
        # Read the open interactions first: between reading the pending rows and spawning
        # there must be no await, or a delivery this process started before run() (a lane's
        # raise_alert) could finish in between, leave _tasks, and be spawned (sent) again.
        open_ids = {i.id for i in await self.core.store.interactions("pending", limit=100000)}
        rows, _ = await self.core.store.write(lambda tx: tx.pending_notifications())
        channels = {c.name: c for c in self.config.channels}
        closed: set[str] = set()
        removed: list[tuple[str, Alert]] = []
        for key, step, name, blob, attempts in rows:
            alert = msgspec.json.decode(blob, type=Alert)
            ch = channels.get(name)
            if key.startswith("interaction:") and key.split(":", 1)[1] not in open_ids:
                closed.add(key)
            elif ch is None:
                removed.append((name, alert))
            else:
                self._spawn(ch, alert, attempts)
        for key in closed:
            await self.core.store.write(lambda tx, k=key: tx.clear_notifications(k))
        for name, alert in removed:
            await self._finish(Channel(type="removed", name=name), alert, "failed", 0, "channel no longer configured")

    async def _pass(self, now: float) -> float | None:
        """Fire what is due; return when the next step falls due (None: nothing scheduled)."""
        cfg = self.config
        if not cfg.channels:
            return None
        nxt: float | None = None
        pending = [i for i in await self.core.store.interactions("pending", limit=100000)
                   if i.kind in ("question", "permission")]
        open_keys = {f"interaction:{i.id}" for i in pending}
        for key in [k for k in self._steps if k.startswith("interaction:") and k not in open_keys]:
            await self.clear(key)  # resolved
        unknown = [k for k in open_keys if k not in self._steps]
        if unknown:
            found, _ = await self.core.store.write(lambda tx: tx.notification_steps(unknown))
            for k in unknown:
                self._steps[k] = found.get(k, (-1, 0.0))
        for i in pending:
            key = f"interaction:{i.id}"
            fire_at = i.created_at + cfg.question_after_s
            top = self._steps.get(key, (-1, 0.0))[0]
            due = [n for n, off in enumerate(cfg.steps_s) if fire_at + off <= now]
            if due and due[-1] > top:
                await self._claim_and_send(interaction_alert(i, due[-1], len(cfg.steps_s), now))
                top = max(top, due[-1])
            if top + 1 < len(cfg.steps_s):
                t = fire_at + cfg.steps_s[top + 1]
                nxt = t if nxt is None else min(nxt, t)
        for key, base in list(self._lane.items()):
            top, first = self._steps.get(key, (-1, base.at))
            due = [n for n, off in enumerate(cfg.steps_s) if first + off - cfg.steps_s[0] <= now]
            if due and due[-1] > top:
                waited = duration(now - first)
                alert = msgspec.structs.replace(base, step=due[-1], at=now,
                                                message=f"{base.message} (still so after {waited}; reminder {due[-1]} of {len(cfg.steps_s) - 1})")
                await self._claim_and_send(alert)
                top = self._steps.get(key, (top, first))[0]
            if top + 1 < len(cfg.steps_s):
                t = first + cfg.steps_s[top + 1] - cfg.steps_s[0]
                nxt = t if nxt is None else min(nxt, t)
            else:
                self._lane.pop(key, None)
        return nxt

    async def close(self) -> None:
        """Stop: deliveries in flight stay ``pending`` in the store and resume at the next start."""
        self._closed = True
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def start(core: Hookd, config: NotifyConfig) -> tuple[Notifier, asyncio.Task[None]]:
    """Attach a Notifier to ``core`` (``core.notifier``) and start its rules task."""
    n = Notifier(core, config)
    core.attach_notifier(n)
    return n, asyncio.create_task(n.run())


async def raise_alert(core: Hookd, alert: Alert, *, escalate: bool = True) -> bool:
    """Raise ``alert`` through the daemon's notifier (see :meth:`Notifier.raise_alert`);
    False when none is running (tests, replay) or the step was already sent."""
    n = core.notifier
    return False if n is None else await n.raise_alert(alert, escalate=escalate)


async def clear(core: Hookd, key: str) -> None:
    """End subject ``key`` (see :meth:`Notifier.clear`); nothing when no notifier runs."""
    n = core.notifier
    if n is not None:
        await n.clear(key)


# --- hookd notify test --------------------------------------------------------------------

def test_alert() -> Alert:
    return Alert(key=f"test:{int(time.time())}", rule="test", builder=None, title="hookd: test notification",
                 message="This is a test from `hookd notify test`: this channel works.", data={"test": True})


async def test_channels(config: NotifyConfig, only: str | None = None) -> list[tuple[Channel, str | None]]:
    """Send a test alert to each channel (``only``: its 1-based number or name), one attempt
    each, concurrently. Returns (channel, error or None)."""
    chans = list(config.channels)
    if only is not None:
        chans = [c for n, c in enumerate(chans, 1) if only in (str(n), c.name)]
        if not chans:
            raise NotFound(f"no channel {only!r} in {config.path} (channels: "
                              f"{', '.join(f'{n}={c.name}' for n, c in enumerate(config.channels, 1)) or 'none'})")
    alert = test_alert()

    async def one(ch: Channel) -> tuple[Channel, str | None]:
        try:
            await deliver(ch, alert)
            return ch, None
        except NotifyFailed as e:
            return ch, str(e)

    return list(await asyncio.gather(*(one(c) for c in chans)))
