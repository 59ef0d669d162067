"""The CLI's reading commands: ``hookd questions``, ``lanes``, ``events``, ``inbox`` and
``tail`` (what the daemon knows, as tables or ``--json``). Registered on the group in
``hookd.cli``.
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path
from typing import Any

import click

from hookd.cli_complete import builders, queued_messages
from hookd.cli_events import _event_line
from hookd.cli_render import (
    _client, _duration, _echo_json, _interaction, _lane_state, _lines, _out, _seg, _subagent_row, _table, json_option,
)
from hookd.errors import DaemonNotRunning
from hookd.launching import run_note
from hookd.vocabulary import os_user
from hookd.untrusted import visible



@click.command()
@click.option("--state", type=click.Choice(["pending", "resolved", "all"]), default="pending", show_default=True)
@json_option("A JSON array of interactions.")
@click.pass_context
def questions(ctx: click.Context, state: str, as_json: bool) -> None:
    """Questions and other interactions waiting on (or answered by) a human: each with its
    options (a permission prompt: its tool input), how long it has waited, and the
    `hookd answer` command that answers it. With `hookd --hub URL`: every host's (agents' async
    asks too; resolved: the newest 100)."""
    if (hub := ctx.find_root().meta.get("hookd.hub")) is not None:
        from hookd.cli_hub import hub_questions

        return hub_questions(hub, as_json, state)
    items = _client(ctx).get("/v1/questions", state=state)
    if as_json:
        _echo_json(items)
        return
    now = time.time()
    _out(_lines([_interaction(i, now) for i in items], sep="\n\n") if items else "no questions")



@click.command()
@click.option("--all", "show_all", is_flag=True, help="Also the builders that were unspawned.")
@click.option("--builder", "-b", "only", multiple=True, metavar="B", shell_complete=builders,
              help="Only builder B's lane (repeat for several).")
@json_option("A JSON array of lanes (unspawned ones too).")
@click.pass_context
def lanes(ctx: click.Context, show_all: bool, only: tuple[str, ...], as_json: bool) -> None:
    """Every builder's lane: working, waiting_question, waiting_permission, idle, stalled,
    failed (an API error stopped the agent), ended or dead; those waiting on a human's answer first,
    then stalled, failed and dead ones;
    under the table, a line for each builder whose agent (hookd run) ended before its first hook,
    or runs and has begun no session yet (a dialog at its desk, say). A builder unspawned (`hookd unspawn`) is
    shown, as unspawned, only with --all. Under a lane, one row per running subagent of its
    agent (↳ its kind): working or waiting on a human, and its agent id. With `hookd --hub URL`:
    every host's lanes, with a host column."""
    if (hub := ctx.find_root().meta.get("hookd.hub")) is not None:
        from hookd.cli_hub import hub_lanes

        return hub_lanes(hub, as_json, only)

    from hookd.config import check_builder_id

    wanted = [check_builder_id(b) for b in only]  # (a name no builder can have: exit 2, saying so)
    items = _lanes_of(_client(ctx), wanted)
    if as_json:
        _echo_json(items)
        return
    hidden = 0 if show_all else sum(1 for lane in items if lane["state"] == "unspawned")
    if hidden:
        items = [lane for lane in items if lane["state"] != "unspawned"]
        _out(f"({hidden} unspawned builder{'s' if hidden > 1 else ''} not shown; --all shows them)", err=True)
    now = time.time()
    rows: list[list[Any]] = []
    for lane in items:
        rows.append([lane["builder"], _lane_state(lane["state"]), _duration(now - lane["since"]), len(lane["pending"]),
                     lane["queued"], lane["session_id"] or "-", lane["detail"]])
        rows += [_subagent_row(lane["builder"], s, now) for s in lane.get("subagents") or ()]
    _out(_table(rows, ["builder", "lane", "for", "pending", "queued", "session", "detail"])
         if rows else "no builders")
    for lane in items:  # hooks that stopped working (its detail says why): the command that restores them
        if lane.get("hooks_changed"):
            _out(f"{lane['builder']}: to restore its hooks: {lane['hooks_changed'].get('fix')}")
    runs = {r["builder"]: r for r in _client(ctx).get("/v1/runs")} if rows else {}
    for lane in items:  # an agent that ended before its first hook: its lane cannot say why
        if note := run_note(lane["builder"], runs.get(lane["builder"]), lane):
            _out(note)




def _stream_ended(ctx: click.Context, last_seq: int) -> None:
    """A followed event stream ended: only the daemon ends one (it stopped, or went away).
    Raises DaemonNotRunning (exit 3) saying so and where to pick up."""
    home = shlex.quote(str(ctx.find_root().obj.root))
    raise DaemonNotRunning(
        f"the daemon stopped (its event stream ended after seq {last_seq}); start it again with "
        f"`hookd --home {home} serve` and resume with `--after {last_seq}`"
    )



@click.command()
@click.option("--after", type=int, default=0, show_default=True, help="Only events with seq > AFTER.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events as they are committed.")
@click.option("--builder", "-b", "only", multiple=True, metavar="B", shell_complete=builders,
              help="Only events of builder B (repeat for several).")
@json_option("JSON lines: seq, kind, builder, session_id, at, data.")
@click.pass_context
def events(ctx: click.Context, after: int, follow: bool, only: tuple[str, ...], as_json: bool) -> None:
    """hookd's event log, oldest first: one line per event with the key fields of its kind."""
    from hookd.config import check_builder_id

    client = _client(ctx)
    wanted = {check_builder_id(b) for b in only}  # (a name no builder can have: exit 2, saying so)
    if wanted:
        _lanes_of(client, sorted(wanted))  # a builder hookd does not know: exit 1 (a typo never waits)
    shown = 0

    def show(e: dict[str, Any]) -> None:
        nonlocal shown
        if wanted and e.get("builder") not in wanted:
            return
        shown += 1
        if as_json:
            _echo_json(e)
        else:
            _out(_event_line(e))

    if follow:
        last = after
        for e in client.lines("/v1/events", after=after, follow=1):
            show(e)
            last = e["seq"]
        _stream_ended(ctx, last)
    first = after
    while True:
        batch = list(client.lines("/v1/events", after=after, limit=1000))
        for e in batch:
            show(e)
        if len(batch) < 1000:
            break
        after = batch[-1]["seq"]
    if not shown and not as_json:  # (as `hookd questions` says "no questions")
        of = f" of {', '.join(only)}" if only else ""
        _out(f"no events{of}" if first == 0 else f"no events{of} after seq {first}")



def _lanes_of(client: Any, wanted: list[str]) -> list[dict[str, Any]]:
    """``GET /v1/lanes`` for the builders ``wanted`` (all when empty). Raises NotFound naming
    the ones hookd does not know (spawned, started, or seen)."""
    from urllib.parse import urlencode

    items = client.get("/v1/lanes" + ("?" + urlencode([("builder", b) for b in wanted]) if wanted else ""))
    shown = {lane["builder"] for lane in items}
    if unknown := [b for b in dict.fromkeys(wanted) if b not in shown]:
        from hookd.errors import NotFound

        raise NotFound(f"builder {', '.join(map(repr, unknown))} is not known: spawn it first (or check the name)")
    return items


class _InboxGroup(click.Group):
    """``hookd inbox [B]`` is ``hookd inbox list [B]``; ``hookd inbox cancel ID`` takes a
    queued message back. Completing ``hookd inbox `` offers both: the subcommands and the
    builder ids."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and ctx.resilient_parsing:  # a shell completing the word after `inbox`
            return super().parse_args(ctx, args)
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["list", *args]
        return super().parse_args(ctx, args)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        more = [] if incomplete.startswith("-") else builders(ctx, self.commands["list"].params[0], incomplete)
        return [*super().shell_complete(ctx, incomplete), *more]


@click.group(cls=_InboxGroup)
def inbox() -> None:
    """Messages queued for builders and what became of them: `hookd inbox [B]` lists them
    (queued, delivered, adopted, cancelled); `hookd inbox cancel ID` takes a queued one back."""


@inbox.command("list")
@click.argument("builder", required=False, shell_complete=builders)
@click.option("--limit", type=click.IntRange(1), default=1000, show_default=True, help="Show the newest N.")
@json_option("A JSON array of messages.")
@click.pass_context
def inbox_list(ctx: click.Context, builder: str | None, limit: int, as_json: bool) -> None:
    """Messages queued for builders and what became of them (queued, delivered, adopted,
    cancelled); `hookd inbox [B]` for short. With `hookd --hub URL`: the answers and messages
    queued on the hub for every host ([HOST/]B: one builder) and what became of them."""
    if (hub := ctx.find_root().meta.get("hookd.hub")) is not None:
        from hookd.cli_hub import hub_inbox

        return hub_inbox(hub, builder, limit, as_json)
    items, headers = _client(ctx).get_with_headers("/v1/messages", builder=builder, limit=limit)
    total = int(headers.get("x-total-count", len(items)))
    if total > len(items):
        _out(f"(the newest {len(items)} of {total} messages; --limit shows more)", err=True)
    if as_json:
        _echo_json(items)
        return
    # via: the hook that delivered it, else what proved it adopted undelivered (``desk``: the
    # desk gave the same answer; hookd events says the same)
    rows = [[m["id"], m["builder"], m["state"], m["delivered_via"] or m.get("adopted_via") or "-", m["deliveries"],
             m["author"],
             (m["text"][:50] + "...") if len(m["text"]) > 50 else m["text"]] for m in items]
    _out(_table(rows, ["id", "builder", "state", "via", "deliveries", "author", "text"]) if rows else "no messages")



@inbox.command("cancel")
@click.argument("message_id", shell_complete=queued_messages)
@click.option("--actor", default=os_user, show_default="your user name", metavar="NAME",
              help="Who takes it back (recorded in the inbox_cancelled event).")
@json_option("Print {message, cancelled} as JSON.")
@click.pass_context
def inbox_cancel(ctx: click.Context, message_id: str, actor: str, as_json: bool) -> None:
    """Take back MESSAGE_ID (m-3), still queued: it is never delivered. Refused (exit 2) once
    delivered (the agent may have read it)."""
    if ctx.find_root().meta.get("hookd.hub") is not None:
        raise click.UsageError("--hub: a command queued on the hub cannot be taken back yet")
    r = _client(ctx).post_json(f"/v1/messages/{_seg(message_id)}/cancel", {"actor": actor, "surface": "cli"})
    if as_json:
        _echo_json(r)
        return
    m = r["message"]
    _out(f"cancelled {m['id']} for {m['builder']}: it will not be delivered" if r["cancelled"]
         else f"{m['id']} for {m['builder']} was already cancelled")



@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--builder", required=True, shell_complete=builders, help="The builder these transcripts belong to.")
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
                _out(_event_line(e))
        _stream_ended(ctx, after)
