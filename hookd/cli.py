"""The `hookd` command line: a thin click layer over the core, the client and spawn.

Every command takes ``--home`` (or ``HOOKD_HOME``). Errors print one sentence to stderr
and exit non-zero (2 bad input or config, 3 daemon not running, 4 already serving, 1 other).

Everything printed for a human goes through :func:`hookd.untrusted.visible` (``_out``,
``_table``): text an agent or a harness wrote (questions, tool input, session ids, paths,
messages, error messages quoting them, the daemon's log lines) cannot move the cursor, clear
the screen, set a window title, hide or reorder words. ``--json`` output is exact.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import shlex
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import click
import msgspec
from tabulate import tabulate

from hookd import __version__
from hookd.config import Home
from hookd.models import ConfigError, DaemonNotRunning, HookdError
from hookd.untrusted import json_escape_visible, visible

_enc = msgspec.json.Encoder()


def _out(text: Any, err: bool = False, nl: bool = True) -> None:
    """Print text for a human: each line's control and bidi characters escaped (the line
    breaks of ``text`` itself kept)."""
    click.echo("\n".join(visible(line) for line in str(text).split("\n")), err=err, nl=nl)


def _seg(value: str) -> str:
    """``value`` as one URL path segment (an id with ``/``, ``?`` or control characters is
    sent as it is, and refused by the daemon as unknown, never mangled into another path)."""
    return urllib.parse.quote(value, safe="")


def _table(rows: list[list[Any]], headers: list[str]) -> str:
    """tabulate's plain table, every text cell shown with :func:`visible` (one line per row)."""
    return tabulate([[visible(c) if isinstance(c, str) else c for c in r] for r in rows], headers=headers)


class _VisibleFormatter(logging.Formatter):
    """Log lines whose message (not the traceback) is shown with :func:`visible`."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = visible(record.message)
        return super().formatMessage(record)


def _log_to_stderr(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter(fmt))
    logging.basicConfig(level=level.upper(), handlers=[handler])


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HookdError as e:
            _out(f"hookd: {visible(e.message)}", err=True)
            ctx.exit(e.exit_code)
        except UnicodeEncodeError as e:
            # an argument with bytes that are not UTF-8 (Python keeps them as lone surrogates):
            # text sent to the daemon must be UTF-8
            near = e.object[max(0, e.start - 20):e.end + 20] if isinstance(e.object, str) else ""
            _out(f"hookd: an argument is not valid UTF-8 text (near {visible(near)!s}); give text in UTF-8", err=True)
            ctx.exit(2)


def _echo_json(obj: Any) -> None:
    """JSON, exact: the characters JSON leaves raw that a terminal may act on (DEL, C1, bidi)
    are written as ``\\uXXXX`` escapes, which decode to the same text."""
    click.echo(json_escape_visible(_enc.encode(obj).decode()))


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="hookd")
@click.option("--home", type=click.Path(path_type=Path), envvar="HOOKD_HOME",
              help="hookd's data directory [env HOOKD_HOME; default: per-user data dir].")
@click.pass_context
def main(ctx: click.Context, home: Path | None) -> None:
    """hookd: the local hook bridge between coding agents and the humans who steer them."""
    ctx.obj = Home.resolve(home)


def _client(ctx: click.Context) -> Any:
    from hookd.client import Client

    return Client(ctx.obj)


@main.command()
@click.option("--port", type=int, default=0, show_default=True,
              help="Loopback TCP port for hook clients (0: any free port).")
@click.option("--log-level", default="info", type=click.Choice(["debug", "info", "warning", "error"]))
@click.option("--notify-question-after", type=float, metavar="S",
              help="Notify about a question or permission prompt pending S seconds [config notify.question_after_s; default 60].")
@click.option("--notify-steps", metavar="S,S,...", help="Escalation offsets in seconds [config notify.steps_s; default 0,300,1800].")
@click.pass_context
def serve(ctx: click.Context, port: int, log_level: str, notify_question_after: float | None, notify_steps: str | None) -> None:
    """Run the daemon in the foreground (SIGTERM/SIGINT stop it). Logs go to stderr."""
    from hookd.daemon import serve as run

    _log_to_stderr(log_level, "%(asctime)s hookd %(levelname)s %(message)s")
    try:
        steps = None if notify_steps is None else [float(x) for x in notify_steps.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter("comma-separated seconds, e.g. 0,300,1800", param_hint="--notify-steps") from None
    run(ctx.obj, port=port, notify_overrides={"question_after_s": notify_question_after, "steps_s": steps})


@main.command()
@click.argument("builder")
@click.option("--worktree", type=click.Path(path_type=Path, file_okay=False), help="The builder's worktree.")
@click.option("--settings-file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a standalone settings file for `claude --settings PATH` instead.")
@click.option("--harness", default="claude-code", show_default=True,
              help="claude-code; claw (Rust claw: .claw/settings.local.json); claw-code-go (flat strings in "
                   ".claude/settings.local.json: that file then no longer serves Claude Code).")
@click.option("--deadline", type=float, default=None,
              help="Hook client's hard deadline in seconds [default 5; env HOOKD_DEADLINE_MS, in milliseconds].")
@click.option("--wake-wait", type=int, default=0, show_default=True,
              help="Opt in to idle wake: seconds an async Stop hook waits for a message to the idle "
                   "agent (0: off). See docs/usage.md before enabling it for headless (-p) runs.")
@click.option("--hold", type=int, default=900, show_default=True,
              help="Seconds a PermissionRequest hook waits for a remote `hookd answer` while the prompt "
                   "stays usable at the desk (0: never wait).")
@click.option("--mcp/--no-mcp", default=True, show_default=True,
              help="Register hookd's MCP server (ask_user_async, await_answers, check_answers) for the agent.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.pass_context
def spawn(ctx: click.Context, builder: str, worktree: Path | None, settings_file: Path | None,
          harness: str, deadline: float | None, wake_wait: int, hold: int, mcp: bool, as_json: bool) -> None:
    """Install hookd's hooks for BUILDER (idempotent; works while the daemon is down)."""
    from hookd.spawn import spawn as do_spawn

    m = do_spawn(ctx.obj, builder, worktree=worktree, settings_file=settings_file, harness=harness,
                 deadline_ms=None if deadline is None else int(deadline * 1000), wake_wait_s=wake_wait,
                 hold_s=hold, mcp=mcp)
    if as_json:
        _echo_json(m)
        return
    client = "compiled" if m.get("client") == "c" else "bash"
    _out(f"spawned {builder}: hooks for {len(m['events'])} events in {m['settings_file']} ({client} hook client)")
    if m.get("client_note"):
        _out(f"hookd: note: {m['client_note']}", err=True)
    if m.get("warning"):
        _out(f"hookd: warning: {m['warning']}", err=True)
    rec = m.get("mcp")
    if rec and rec.get("skipped"):
        _out(f"hookd: {visible(rec['skipped'])}", err=True)
    elif rec and rec.get("standalone"):
        _out(f"MCP server config in {rec['file']}: pass --mcp-config {shlex.quote(rec['file'])} to claude")
    elif rec:
        _out(f"MCP server 'hookd' (tools mcp__hookd__*) in {rec['file']}")


@main.command()
@click.argument("builder")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def unspawn(ctx: click.Context, builder: str, as_json: bool) -> None:
    """Remove exactly the hooks (and MCP server entry) `spawn` added for BUILDER."""
    from hookd.spawn import unspawn as do_unspawn

    r = do_unspawn(ctx.obj, builder)
    if as_json:
        _echo_json(r)
    else:
        mcp = " and hookd's MCP server" if r.get("mcp_removed") else ""
        _out(f"unspawned {builder}: removed {r['removed']} hook entries{mcp} from {r['settings_file']}")


@main.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """The daemon's state: listeners, counts, builders."""
    s = _client(ctx).get("/v1/status")
    if as_json:
        _echo_json(s)
        return
    _out(f"hookd {s['version']} pid {s['pid']}, up {s['uptime_s']:.0f} s, home {s['home']}")
    _out(f"socket {s['socket']}, hook port 127.0.0.1:{s['tcp_port']}")
    c = s["counts"]
    _out(f"{c.get('hook_events', '?')} hook events, {c.get('events', '?')} events, "
          f"{c.get('pending_interactions', '?')} pending, {c['spooled']} spooled")
    st = s.get("storage") or {"state": "ok"}
    if st["state"] == "ok":
        _out("storage ok")
    else:  # the daemon answers hooks 503 and their clients spool them
        _out(f"storage UNAVAILABLE since {_when(st['since'])}: {st['message']} ({st['error']}); "
             f"{st['refused']} write(s) refused, hooks are spooled"
             + ("" if st.get("final") else "; retried until it commits"))
    if st.get("read_error"):
        _out(st["read_error"])
    if s.get("held"):
        _out(f"holding a PermissionRequest hook for: {visible(', '.join(s['held']))} (answer with `hookd answer ID`)")
    if s["builders"]:
        rows = [[b["builder"], b["harness"], b.get("client") or "", b["hooks_seen"], b["pending"],
                 _when(b["last_hook_at"]), b.get("warning") or ""] for b in s["builders"]]
        _out(_table(rows, ["builder", "harness", "client", "hooks", "pending", "last hook", "note"]))
        for b in s["builders"]:  # why a hook client fell back to bash: a line of its own, beside any warning
            if b.get("client_note"):
                _out(f"{b['builder']}: hook client {b.get('client') or '-'}: {visible(b['client_note'])}")


@main.command("open")
@click.option("--no-browser", is_flag=True, help="Only print the link (also when CI=true or there is no DISPLAY).")
@click.option("--json", "as_json", is_flag=True, help="Print {url, expires_in_s} as JSON.")
@click.pass_context
def open_page(ctx: click.Context, no_browser: bool, as_json: bool) -> None:
    """Sign in to the operator page: print (and open, when a browser is available) a link
    with a one-time code, valid 10 minutes and once; the page then keeps a session cookie."""
    from hookd.http.web import open_browser, should_open_browser

    r = _client(ctx).post_json("/v1/web/codes", {})
    opened = not no_browser and should_open_browser() and open_browser(r["url"])
    if as_json:
        _echo_json({"url": r["url"], "expires_in_s": r["expires_in_s"], "opened": opened})
        return
    _out(r["url"])
    _out(f"(one-time sign-in link, valid {r['expires_in_s'] / 60:.0f} minutes{'; opened in your browser' if opened else ''})",
         err=True)


@main.command()
@click.option("--state", type=click.Choice(["pending", "resolved", "all"]), default="pending", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="A JSON array of interactions.")
@click.pass_context
def questions(ctx: click.Context, state: str, as_json: bool) -> None:
    """Questions and other interactions waiting on (or answered by) a human."""
    items = _client(ctx).get("/v1/questions", state=state)
    if as_json:
        _echo_json(items)
        return
    rows = []
    for i in items:
        if i["kind"] == "permission":
            text = f"{i['tool_name']}: {_enc.encode(i['input']).decode()}"
            text = text if len(text) <= 80 else text[:77] + "..."
            ans = (i["decision"] or "-") + (f": {i['message']}" if i.get("message") else "")
        else:
            qs = i["questions"] if isinstance(i["questions"], list) else []
            text = "; ".join(str(q.get("question", "?")) for q in qs if isinstance(q, dict)) or "-"
            ans = "; ".join(f"{v}" for v in (i["answers"] or {}).values()) or "-"
        rows.append([i["id"], i["kind"], i["builder"], i["state"], text, ans, i["surface"] or "-", _when(i["created_at"])])
    _out(_table(rows, ["id", "kind", "builder", "state", "question / input", "answer", "by", "asked"])
         if rows else "no questions")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="A JSON array of lanes.")
@click.pass_context
def lanes(ctx: click.Context, as_json: bool) -> None:
    """Every builder's lane: working, waiting_question, waiting_permission, idle, stalled,
    ended or dead; those waiting on a human first."""
    items = _client(ctx).get("/v1/lanes")
    if as_json:
        _echo_json(items)
        return
    now = dt.datetime.now().timestamp()
    rows = [[lane["builder"], lane["state"], f"{max(0, now - lane['since']):.0f} s", len(lane["pending"]), lane["queued"],
             lane["session_id"] or "-", lane["detail"]] for lane in items]
    _out(_table(rows, ["builder", "lane", "for", "pending", "queued", "session", "detail"])
         if rows else "no builders")


def _stream_ended(ctx: click.Context, last_seq: int) -> None:
    """A followed event stream ended: only the daemon ends one (it stopped, or went away).
    Raises DaemonNotRunning (exit 3) saying so and where to pick up."""
    home = shlex.quote(str(ctx.find_root().obj.root))
    raise DaemonNotRunning(
        f"the daemon stopped (its event stream ended after seq {last_seq}); start it again with "
        f"`hookd --home {home} serve` and resume with `--after {last_seq}`"
    )


@main.command()
@click.option("--after", type=int, default=0, show_default=True, help="Only events with seq > AFTER.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events as they are committed.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines: seq, kind, builder, session_id, at, data.")
@click.pass_context
def events(ctx: click.Context, after: int, follow: bool, as_json: bool) -> None:
    """hookd's event log, oldest first."""
    client = _client(ctx)

    def show(e: dict[str, Any]) -> None:
        if as_json:
            _echo_json(e)
        else:
            d = e["data"]
            detail = " ".join(f"{k}={visible(d[k])}" for k in ("hook_event_name", "tool_name", "id", "outcome", "source")
                              if d.get(k))
            _out(f"{e['seq']:>6} {_when(e['at'])} {visible(e['kind']):<18} {visible(e['builder'] or '-')} {detail}")

    if follow:
        last = after
        for e in client.lines("/v1/events", after=after, follow=1):
            show(e)
            last = e["seq"]
        _stream_ended(ctx, last)
    while True:
        batch = list(client.lines("/v1/events", after=after, limit=1000))
        for e in batch:
            show(e)
        if len(batch) < 1000:
            break
        after = batch[-1]["seq"]


@main.command()
@click.argument("builder")
@click.argument("text")
@click.option("--id", "key", help="Idempotency key: the same key and text again returns the first receipt.")
@click.option("--session", "session_id", help="Deliver only to this session of the builder.")
@click.option("--agent", "agent_id", help="Deliver only to this subagent (its agent_id).")
@click.option("--author", default=lambda: os.environ.get("USER") or "human", show_default="$USER",
              help="Who the agent is told the message is from.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def send(ctx: click.Context, builder: str, text: str, key: str | None, session_id: str | None,
         agent_id: str | None, author: str, as_json: bool) -> None:
    """Queue TEXT for BUILDER's agent; it is delivered at the agent's next turn boundary."""
    body = {"text": text, "id": key, "session_id": session_id, "agent_id": agent_id, "author": author}
    r = _client(ctx).post_json(f"/v1/builders/{_seg(builder)}/messages", body)
    if as_json:
        _echo_json(r)
    else:
        m = r["message"]
        _out(f"{'queued' if r['created'] else 'already queued'} {m['id']} for {builder} ({m['state']})")


class _AnswerCommand(click.Command):
    """Keeps the order of --question/--option/--text so that one call can answer several
    questions: each --option/--text belongs to the --question before it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        groups: list[dict[str, Any]] = [{"question": None, "options": [], "text": None}]
        it = iter(args)
        for a in it:
            name, eq, val = a.partition("=")
            if name not in ("--question", "--option", "--text"):
                continue
            if not eq:
                val = next(it, "")
            if name == "--question":
                groups.append({"question": val, "options": [], "text": None})
            elif name == "--option":
                groups[-1]["options"].append(val)
            else:
                groups[-1]["text"] = val
        ctx.meta["answer_groups"] = [g for g in groups if g["question"] is not None or g["options"] or g["text"] is not None]
        return super().parse_args(ctx, args)


@main.command(cls=_AnswerCommand)
@click.argument("interaction_id")
@click.option("--option", "options", multiple=True, metavar="LABEL",
              help="An option's label (repeat for multi-select); for a permission prompt: allow or deny.")
@click.option("--text", help="Free text ('Other'); for a permission deny: the message shown to the model.")
@click.option("--question", "questions", multiple=True, metavar="TEXT",
              help="Which question the following --option/--text answer (its text or number); "
                   "needed when the interaction asks several.")
@click.option("--response-id", help="Idempotency key: the same key and answer again returns the first receipt.")
@click.option("--revision", type=int, help="Refuse unless the interaction is still at this revision (what you saw).")
@click.option("--actor", default=lambda: os.environ.get("USER") or None, show_default="$USER",
              help="Who answers (recorded; named in inbox copies).")
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON.")
@click.pass_context
def answer(ctx: click.Context, interaction_id: str, options: tuple[str, ...], text: str | None,
           questions: tuple[str, ...], response_id: str | None, revision: int | None, actor: str | None,
           as_json: bool) -> None:
    """Answer INTERACTION_ID (an id or tool_use_id from `hookd questions`): a question, a
    permission prompt (--option allow | --option deny --text MESSAGE) or an async ask.
    A question asked in a terminal gets the answer through its held PermissionRequest hook
    (the menu closes with it); refused (exit 2) when it was already answered or expired, and
    then your answer is kept as an inbox message for the builder."""
    groups = ctx.meta.get("answer_groups", [])
    body: dict[str, Any] = {"response_id": response_id, "actor": actor, "revision": revision, "surface": "cli"}
    if len(groups) > 1 or (groups and groups[0]["question"] is not None and len(questions) > 1):
        answers: dict[str, Any] = {}
        for g in groups:
            if g["question"] is None:
                raise click.UsageError("with several --question, put each --option/--text after its --question")
            answers[g["question"]] = {"options": g["options"], "text": g["text"]}
        body["answers"] = answers
    else:
        body.update({"question": questions[0] if questions else None, "options": list(options), "text": text})
    r = _client(ctx).post_json(f"/v1/interactions/{_seg(interaction_id)}/answer", body)
    if as_json:
        _echo_json(r)
        return
    i = r["interaction"]
    what = visible(i["decision"] if i["kind"] == "permission"
                   else "; ".join(f"{q} -> {a}" for q, a in (i["answers"] or {}).items()))
    dup = " (repeated response id: first receipt)" if r["duplicate"] else ""
    if r["delivery"] == "inbox" and i["state"] == "pending":
        _out(f"queued as inbox message {r['message_id']} for {i['builder']}{dup}")
    else:
        _out(f"answered {visible(i['id'])} ({i['kind']}, {i['builder']}): {what}; delivery: {r['delivery']}{dup}")
    if r.get("warning"):
        _out(f"hookd: {visible(r['warning'])}", err=True)


@main.command()
@click.argument("builder")
@click.argument("question")
@click.option("--option", "options", multiple=True, metavar="LABEL", help="An answer option (repeat).")
@click.option("--expires-in", type=float, help="Seconds until it expires unanswered.")
@click.option("--author", default=lambda: os.environ.get("USER") or None, show_default="$USER")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def ask(ctx: click.Context, builder: str, question: str, options: tuple[str, ...], expires_in: float | None,
        author: str | None, as_json: bool) -> None:
    """Ask the humans QUESTION on behalf of BUILDER without blocking it (what the agent's
    `ask_user_async` MCP tool does); the answer reaches the agent through its inbox."""
    r = _client(ctx).post_json(f"/v1/builders/{_seg(builder)}/asks", {
        "question": question, "options": list(options) or None, "expires_in_s": expires_in, "author": author,
    })
    if as_json:
        _echo_json(r)
    else:
        _out(f"asked {r['interaction']['id']} for {builder}")


@main.command()
@click.option("--builder", required=True, help="The builder whose agent runs this server.")
@click.option("--log-level", default="warning", type=click.Choice(["debug", "info", "warning", "error"]))
@click.pass_context
def mcp(ctx: click.Context, builder: str, log_level: str) -> None:
    """Serve hookd's MCP tools (ask_user_async, await_answers, check_answers) over stdio for
    BUILDER's agent; `hookd spawn` registers it. Logs go to stderr only."""
    from hookd.config import check_builder_id
    from hookd.mcp_server import run as run_mcp

    _log_to_stderr(log_level, "%(asctime)s hookd-mcp %(levelname)s %(message)s")
    run_mcp(ctx.obj, check_builder_id(builder))


@main.command()
@click.argument("builder")
@click.option("--question", required=True, help="The exact question text the agent will ask.")
@click.option("--option", "options", multiple=True, metavar="LABEL", help="The answer's label(s).")
@click.option("--text", help="Free-text answer.")
@click.option("--actor", default=lambda: os.environ.get("USER") or None, show_default="$USER")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def preanswer(ctx: click.Context, builder: str, question: str, options: tuple[str, ...], text: str | None,
              actor: str | None, as_json: bool) -> None:
    """Answer ahead of time: the next AskUserQuestion of BUILDER asking exactly QUESTION is
    answered by its PreToolUse hook (no menu), when each of its questions has an answer."""
    from hookd.harness.base import encode_answer

    if not options and not text:
        raise click.UsageError("give --option LABEL or --text TEXT")
    r = _client(ctx).post_json(f"/v1/builders/{_seg(builder)}/preanswers", {
        "question": question, "answer": encode_answer(list(options), text), "actor": actor,
    })
    if as_json:
        _echo_json(r)
    else:
        _out(f"registered answer {r['answer']!r} for {builder}: {question!r}")


@main.command()
@click.argument("builder", required=False)
@click.option("--limit", type=click.IntRange(1), default=1000, show_default=True, help="Show the newest N.")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of messages.")
@click.pass_context
def inbox(ctx: click.Context, builder: str | None, limit: int, as_json: bool) -> None:
    """Messages queued for builders and what became of them (queued, delivered, adopted)."""
    items, headers = _client(ctx).get_with_headers("/v1/messages", builder=builder, limit=limit)
    total = int(headers.get("x-total-count", len(items)))
    if total > len(items):
        _out(f"(the newest {len(items)} of {total} messages; --limit shows more)", err=True)
    if as_json:
        _echo_json(items)
        return
    rows = [[m["id"], m["builder"], m["state"], m["delivered_via"] or "-", m["deliveries"], m["author"],
             (m["text"][:50] + "...") if len(m["text"]) > 50 else m["text"]] for m in items]
    _out(_table(rows, ["id", "builder", "state", "via", "offers", "author", "text"]) if rows else "no messages")


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--builder", required=True, help="The builder these transcripts belong to.")
@click.option("--session", "session_id", help="When they are one session's transcript.")
@click.option("--follow", "-f", is_flag=True, help="Then print the builder's events as they come.")
@click.pass_context
def tail(ctx: click.Context, paths: tuple[Path, ...], builder: str, session_id: str | None, follow: bool) -> None:
    """Have the daemon follow transcript PATHS for BUILDER (hooks missing: installed
    mid-session, a harness without hooks); a folder (a Claude Code projects folder,
    ~/.claude/projects/<slug>) means every transcript in it, also those that appear later.
    It catches up from the start and keeps following, across restarts."""
    client = _client(ctx)
    r = client.post_json(f"/v1/builders/{_seg(builder)}/transcripts",
                         {"paths": [os.fspath(p.absolute()) for p in paths], "session_id": session_id})
    refused = [f for f in r["files"] if f.get("refused")]
    for f in r["files"]:
        if f.get("refused"):
            click.echo(f"hookd: not following {visible(f['path'])}: {visible(f['refused'])}", err=True)
            continue
        what = f"folder {visible(f['path'])} ({f['files']} transcripts now, and new ones)" if f.get("folder") else visible(f["path"])
        later = "" if os.path.exists(f["path"]) else "; it does not exist yet: followed once it appears"
        _out(f"following {what} for {builder} ({f['rows']} rows read{later})")
    if refused:
        ctx.exit(2)
    if follow:
        after = client.get("/v1/status")["counts"]["events"]  # append-only: the count is the last seq
        for e in client.lines("/v1/events", after=after, follow=1):
            after = e["seq"]
            if e["builder"] == builder:
                _out(f"{e['seq']:>6} {_when(e['at'])} {visible(e['kind']):<18} {visible(e.get('session_id') or '-')}")
        _stream_ended(ctx, after)


@main.command()
@click.argument("scenario_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--update", is_flag=True, help="Rewrite expected-events.jsonl from this run.")
@click.option("--into", "into", metavar="BUILDER",
              help="Instead: play the hooks into the running daemon as spawned BUILDER's agent (fresh ids; "
                   "a PermissionRequest waits for an answer from the page or `hookd answer`).")
@click.pass_context
def replay(ctx: click.Context, scenario_dir: Path, update: bool, into: str | None) -> None:
    """Replay SCENARIO_DIR/hooks/*.json through a private daemon, as the hook client would,
    and compare the events with SCENARIO_DIR/expected-events.jsonl."""
    from hookd.devtools.replay import check_scenario, replay as do_replay

    if into is not None:
        from hookd.devtools.feed import feed

        def before(name: str, event: str) -> None:
            if event == "PermissionRequest":
                _out(f"{name}: waiting for an answer (the page: `hookd open`; or `hookd questions`)", err=True)

        for step in feed(ctx.obj, scenario_dir, into, before=before):
            out = visible(step.stdout.decode(errors="replace").strip())
            _out(f"{visible(step.name)}: exit {step.returncode}" + (f", stdout {out}" if out else ""))
        return

    check_scenario(scenario_dir, golden=not update)  # before a daemon starts for nothing
    result = do_replay(scenario_dir, update=update)
    if result.diff:
        _out(result.diff, nl=False)
        _out(f"replay {scenario_dir}: MISMATCH ({result.steps} hooks, {len(result.events)} events)", err=True)
        sys.exit(1)
    verb = "updated" if update else "ok"
    _out(f"replay {scenario_dir}: {verb} ({result.steps} hooks, {len(result.events)} events)")


@main.command()
@click.argument("version_dir", required=False, type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--fixtures", type=click.Path(path_type=Path, file_okay=False), default=Path("fixtures/claude-code"),
              show_default=True, help="Where recorded versions live (the newest is used).")
@click.option("--no-replay", is_flag=True, help="Skip replaying the golden files.")
@click.option("--json", "as_json", is_flag=True)
def drift(version_dir: Path | None, fixtures: Path, no_replay: bool, as_json: bool) -> None:
    """Report what the newest recorded Claude Code version sends that hookd does not know.
    Exits 1 on a parse failure or a golden mismatch."""
    from hookd.devtools.drift import drift as do_drift, newest_version_dir, render

    try:
        target = version_dir or newest_version_dir(fixtures)
    except FileNotFoundError as e:
        raise ConfigError(str(e)) from None
    rep = do_drift(target, replay_goldens=not no_replay)
    if as_json:
        _echo_json({"version_dir": str(rep.version_dir), "unknown_events": rep.unknown_events,
                    "unknown_fields": rep.unknown_fields, "unknown_row_types": rep.unknown_row_types,
                    "parse_failures": rep.parse_failures, "golden_mismatches": rep.golden_mismatches,
                    "failed": rep.failed})
    else:
        _out(render(rep), nl=False)
    sys.exit(1 if rep.failed else 0)


@main.group()
def notify() -> None:
    """Notifications about agents waiting on a human (HOOKD_HOME/config.toml [notify])."""


@notify.command("test")
@click.option("--channel", metavar="N", help="Only this channel: its number (1 = first [[notify.channel]]) or name.")
@click.pass_context
def notify_test(ctx: click.Context, channel: str | None) -> None:
    """Send a test notification to each configured channel (one attempt each) and report
    which worked; exit 1 if any failed."""
    import asyncio

    from hookd.watchers.notify_channels import test_channels
    from hookd.watchers.notify_config import load_config

    cfg = load_config(ctx.find_root().obj)
    if not cfg.channels:
        raise ConfigError(f"no [[notify.channel]] in {cfg.path}: nothing to test")
    results = asyncio.run(test_channels(cfg, channel))
    for ch, err in results:
        _out(f"{visible(ch.name)} ({ch.type}): " + ("ok" if err is None else f"failed: {visible(err)}"))
    sys.exit(1 if any(err is not None for _, err in results) else 0)
