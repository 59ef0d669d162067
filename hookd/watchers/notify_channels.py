"""Alerts and their delivery: what a notification says (:class:`Alert`,
:func:`interaction_alert`) and one attempt to send it on a channel (:func:`deliver`: a
desktop notification, a webhook, a command), retried by the notifier
(``hookd.watchers.notify``); ``hookd notify test`` (:func:`test_channels`).
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from hookd.core.plans import plan_text
from hookd.harness.base import ToolView
from hookd.harness.tool_views import json_view
from hookd.models import DECISION_KINDS, ConfigError, HookdError, Interaction, NotFound
from hookd.untrusted import visible
from hookd.watchers.notify_config import TWO_WAY_TYPES, Channel, NotifyConfig

if TYPE_CHECKING:
    from hookd.watchers.chat import ChatRelay
    import httpx

Rule = Literal["question_pending", "permission_pending", "plan_pending", "elicitation_pending", "idle_with_messages", "agent_dead", "test"]

_enc = msgspec.json.Encoder(order="sorted")


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
        # the message may have lines of its own (a permission prompt's command or diff): each
        # line is made safe, the line breaks between them kept
        self.title = visible(self.title)
        self.message = "\n".join(visible(line) for line in self.message.split("\n"))


def duration(s: float) -> str:
    """``1 h 5 min``, ``2 min 3 s``, ``45 s``."""
    s = max(0, int(s))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60} min"
    if s >= 60:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s} s"


#: Most lines of a permission prompt's tool call a notification shows under its summary.
DETAIL_LINES = 4


def view_lines(view: ToolView) -> list[str]:
    """The first lines of ``view``'s detail a notification shows under its summary (at most
    :data:`DETAIL_LINES`, each made safe and cut to 160 characters, ``…`` when more follow):
    not what the summary already says (a command without a description, a URL, a diff's
    file headers)."""
    lines = view.detail.split("\n")
    if view.kind == "command" and view.detail == view.summary:
        lines = []
    elif view.kind == "url":
        lines = lines[1:]
    elif view.kind == "diff":
        lines = [x for x in lines if not x.startswith(("--- ", "+++ "))]
    elif view.kind == "json":
        lines = [] if view.detail == view.summary else lines
    lines = [x for x in lines if x.strip()]
    shown = [visible(x if len(x) <= 160 else x[:159] + "…") for x in lines[:DETAIL_LINES]]
    if len(lines) > DETAIL_LINES:
        shown.append("…")
    return shown


def interaction_alert(i: Interaction, step: int, steps: int, now: float, view: ToolView | None = None,
                      default: dict[str, Any] | None = None, answer: str | None = None,
                      held: bool | None = None) -> Alert:
    """The alert for a pending question, permission prompt or elicitation (its server, message
    and fields, the answer command). view: a permission prompt's
    tool call as a person reads it (its adapter's ``present_tool``; None: compact JSON of the
    input): its summary, the first lines of its detail (:func:`view_lines`) on lines of their
    own, and whether it looks destructive. default: the builder's default answer for it
    (:meth:`hookd.core.policy.Policy.defaults`: ``{"answer": words, "at": UNIX seconds}``;
    None: none), said (``Unless you answer, hookd denies it in 4m.``) on a line of its own, or
    in a one-line alert before its ``Answer:`` command (a command is copied whole), and in ``data``
    as ``default_answer``. answer: the command its ``Answer:`` line gives, up to the id (None:
    ``hookd answer ID``, run on the interaction's own host). held: False for a permission
    prompt, plan or elicitation no hook holds (only the desk answers it: the alert says so and
    gives no command, ``held: false`` in ``data``); None or True: the command."""
    alert = _interaction_alert(i, step, steps, now, view, answer)
    if held is False and i.kind in DECISION_KINDS:
        head, found, _ = alert.message.rpartition("Answer: ")
        desk = "No hook holds it: answer it at the desk."
        alert = msgspec.structs.replace(alert, message=f"{head}{desk}" if found else f"{alert.message} {desk}",
                                        data={**alert.data, "held": False})
    if default is None:
        return alert
    left = float(default["at"]) - now
    when = f"in {duration(left)}" if left >= 1 else "now"
    unless = f"Unless you answer, hookd {default['answer']} {when}."
    head, found, cmd = alert.message.rpartition(" Answer: ")
    if "\n" in alert.message or not found:
        said = f"{alert.message}\n{unless}" if "\n" in alert.message else f"{alert.message} {unless}"
    else:  # (a question's alert stays one line, its command last: copied whole, nothing after it)
        said = f"{head} {unless} Answer: {cmd}"
    return msgspec.structs.replace(alert, message=said, data={**alert.data, "default_answer": default})


def _interaction_alert(i: Interaction, step: int, steps: int, now: float, view: ToolView | None,
                       answer: str | None) -> Alert:
    waited = duration(now - i.created_at)
    cmd = answer or f"hookd answer {i.id}"
    nth = f" (reminder {step} of {steps - 1})" if step else ""
    if i.kind == "elicitation":
        shown = i.input if isinstance(i.input, dict) else {}
        fields = shown.get("requested_schema", {}).get("properties") if isinstance(shown.get("requested_schema"), dict) else None
        names = list(fields) if isinstance(fields, dict) else []
        rule = "elicitation_pending"
        title = f"hookd: {i.builder}'s tool server {i.tool_name} asks for your input"
        how = "".join(f" --field {_shell_word(n)}=VALUE" for n in names)
        message = visible(f"{i.builder} has been waiting {waited}: {i.tool_name} asks: {shown.get('message') or '-'}"
                          + (f" (fields: {', '.join(map(str, names))})" if names else "")
                          + (f" (open {shown.get('url')})" if shown.get("url") else "") + f"{nth}. "
                          f"Answer: {cmd} --option accept{how}   (or: --option decline)")
        what: Any = {"server": i.tool_name, "message": shown.get("message"), "fields": names}
    elif i.kind == "plan":
        plan, path = plan_text(i)
        lines = [x for x in (plan or "").split("\n") if x.strip()]
        preview = [visible(x if len(x) <= 160 else x[:159] + "…") for x in lines[:DETAIL_LINES]]
        rule = "plan_pending"
        title = f"hookd: {i.builder} asks you to approve its plan"
        message = "\n".join([
            f"{i.builder} has been waiting {waited} for you to approve its plan{nth}.",
            *("  " + x for x in preview + (["…"] if len(lines) > DETAIL_LINES else [])),
            f"Answer: {cmd} --option auto   (or: --option manual; --option deny --text \"what to change\")"])
        what = {"plan": plan, "plan_path": path}
    elif i.kind == "permission":
        view = view if view is not None else json_view(i.input)
        rule = "permission_pending"
        risky = " (looks destructive)" if view.destructive else ""
        # a subagent's prompt says so: "b1's subagent general-purpose"
        who = visible(f"{i.builder}'s subagent {i.agent_type or 'of unknown type'}") if i.agent_id else i.builder
        title = f"hookd: {who} needs permission for {i.tool_name}{risky}"
        message = "\n".join([
            f"{who} has been waiting {waited} for permission to run {i.tool_name}: "
            f"{visible(view.summary)}{risky}{nth}.",
            *("  " + x for x in view_lines(view)),
            f"Answer: {cmd} --option allow   (or: --option deny --text \"why\")"])
        what = {"tool_name": i.tool_name, "input": i.input, "tool_view": msgspec.to_builtins(view)}
    else:
        qs = [q for q in (i.questions or []) if isinstance(q, dict)]
        text = "; ".join(str(q.get("question", "?")) for q in qs) or "a question"
        opts = [o.get("label") for o in (qs[0].get("options") or []) if isinstance(o, dict)] if len(qs) == 1 else []
        rule = "question_pending"
        title = f"hookd: {i.builder} is waiting for your answer"
        how = (f"--option {_shell_word(opts[0])}" if opts else "--text \"...\"")
        message = visible(f"{i.builder} has been waiting {waited} for an answer to: {text}"
                          + (f" (options: {', '.join(map(str, opts))})" if opts else "") + f"{nth}. "
                          f"Answer: {cmd} {how}")  # one line: the agent's text has no say
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


async def _communicate(proc: asyncio.subprocess.Process, stdin: bytes | None) -> bytes | None:
    """``proc.communicate(stdin)``'s stderr; None when the program exited (or closed its stdin)
    before reading the alert and the loop raised for it (asyncio's own loop drops the broken
    pipe; uvloop's transport raises RuntimeError, "the handler is closed", from the write):
    its stderr is not kept then, its exit status is."""
    try:
        return (await proc.communicate(stdin))[1] or b""
    except (BrokenPipeError, ConnectionResetError, RuntimeError):
        if proc.stdin is None or not proc.stdin.is_closing():
            raise
    await proc.wait()
    return None


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
        err = await asyncio.wait_for(_communicate(proc, stdin), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise NotifyFailed(f"{argv[0]} did not finish within {timeout:g} s") from None
    except asyncio.CancelledError:  # cleared or shutting down: leave no notifier behind
        if proc.returncode is None:
            proc.kill()
        raise
    if proc.returncode != 0:
        if err is None:
            raise NotifyFailed(f"{argv[0]} exited with {proc.returncode} before reading the alert")
        tail = err.decode(errors="replace").strip()[-300:]
        raise NotifyFailed(f"{argv[0]} exited with {proc.returncode}" + (f": {tail}" if tail else ""))


def two_way_channel(ch: Channel) -> Any:
    """The :class:`hookd.watchers.chat.TwoWayChannel` of a ``telegram`` or ``slack`` channel
    (its module imported here: a daemon without one never loads the service's SDK)."""
    if ch.type == "slack":
        from hookd.watchers.slack import SlackChannel

        return SlackChannel(ch)
    from hookd.watchers.telegram import TelegramChannel

    return TelegramChannel(ch)


async def _chat(ch: Channel, alert: Alert, chat: ChatRelay | None) -> None:
    """``alert`` posted on a two-way channel: through its relay in the daemon (a reply to it
    reaches the builder), or once on its own (``hookd notify test``)."""
    from hookd.watchers.chat import ChatUnreachable

    own = two_way_channel(ch) if chat is None else None
    try:
        if chat is not None:
            await chat.post_alert(alert)
        else:
            assert own is not None
            await own.send_text(f"{alert.title}\n{alert.message}")
    except ChatUnreachable as e:
        raise NotifyFailed(str(e)) from None
    except HookdError as e:
        raise PermanentFailure(str(e)) from None
    finally:
        if own is not None:
            await own.close()


async def deliver(ch: Channel, alert: Alert, http: httpx.AsyncClient | None = None,
                  chat: ChatRelay | None = None) -> None:
    """One delivery attempt on ``ch`` (a two-way channel: through ``chat``, its relay, when
    the daemon runs one). Raises NotifyFailed (PermanentFailure: do not retry)."""
    if ch.type in TWO_WAY_TYPES:
        await _chat(ch, alert, chat)
    elif ch.type == "desktop":
        await _run(desktop_argv(alert), None, ch.timeout_s)
    elif ch.type == "command":
        await _run(ch.command, _enc.encode(alert), ch.timeout_s)
    else:
        assert ch.url is not None
        import httpx  # here: a daemon with no webhook channel never loads it

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


# --- hookd notify test --------------------------------------------------------------------

def test_alert() -> Alert:
    return Alert(key=f"test:{int(time.time())}", rule="test", builder=None, title="hookd: test notification",
                 message="This is a test from `hookd notify test`: this channel works.", data={"test": True})


async def test_channels(config: NotifyConfig, only: str | None = None,
                        chats: dict[str, ChatRelay] | None = None) -> list[tuple[Channel, str | None]]:
    """Send a test alert to each channel (``only``: its 1-based number or name), one attempt
    each, concurrently; a two-way channel through its relay in ``chats`` (channel name ->
    relay: the daemon's) when it has one. Returns (channel, error or None). Raises ConfigError
    when ``config`` has no channel, NotFound when none is ``only``."""
    if not config.channels:
        raise ConfigError(f"no [[notify.channel]] in {config.path}: nothing to test")
    chans = list(config.channels)
    if only is not None:
        chans = [c for n, c in enumerate(chans, 1) if only in (str(n), c.name)]
        if not chans:
            raise NotFound(f"no channel {only!r} in {config.path} (channels: "
                              f"{', '.join(f'{n}={c.name}' for n, c in enumerate(config.channels, 1)) or 'none'})")
    alert = test_alert()

    async def one(ch: Channel) -> tuple[Channel, str | None]:
        try:
            await deliver(ch, alert, chat=(chats or {}).get(ch.name))
            return ch, None
        except NotifyFailed as e:
            return ch, str(e)

    return list(await asyncio.gather(*(one(c) for c in chans)))
