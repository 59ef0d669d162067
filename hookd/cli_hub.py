"""``hookd hub ...`` (set up a hub: its schema, a host's role, an operator's role; its hosts) and
the hub's side of ``hookd --hub URL lanes|questions|inbox|answer|send`` (every host's, with a
host column; answers and messages queued on the hub for their hosts): over
:mod:`hookd.hub.ops`, imported only when named. docs/fleet.md.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import click

from hookd.clock import when
from hookd.cli_render import _duration, _echo_json, _lane_state, _out, _table, answered_line, json_option, sent_line
from hookd.vocabulary import by_text, outcome_of


def _hub_url(ctx: click.Context) -> str:
    url = ctx.find_root().meta.get("hookd.hub")
    if not url:
        raise click.UsageError("name the hub: hookd --hub postgresql://... hub ...")
    return str(url)


@click.group()
def hub() -> None:
    """Set up and look at a fleet's hub (PostgreSQL; name it with `hookd --hub URL`): docs/fleet.md."""


@hub.command("init")
@click.pass_context
def init(ctx: click.Context) -> None:
    """Create or update the hub's schema, its roles hookd_host and hookd_operator and their
    row-level security (idempotent; as the hub's administrator)."""
    from hookd.hub import ops

    url = _hub_url(ctx)
    ops.install(url)
    _out("hub ready: add each host with `hookd --hub URL hub add-host NAME`")


def _role_url(admin_url: str, role: str, password: str) -> str:
    """``admin_url`` with ``role`` and ``password`` as its user (host, database, query kept)."""
    parts = urlsplit(admin_url)
    where = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{role}:{quote(password, safe='')}@{where}"))


def _add(ctx: click.Context, name: str, password_file: Path | None, as_json: bool, operator: bool,
         notifier: bool = False) -> None:
    from hookd.errors import ConfigError
    from hookd.hub import ops

    url = _hub_url(ctx)
    password = password_file.read_text().strip() if password_file is not None else None
    try:
        password = ops.add_role(url, name, operator, password)
        if notifier:
            ops.grant_notifier(url, name)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    role_url = _role_url(url, name, password)
    if as_json:
        out = {"role": name, "kind": "operator" if operator else "host", "password": password, "url": role_url}
        _echo_json(out if operator else {**out, "notifier": notifier})
    elif operator:
        _out(f"operator {name} ready (reads every host; writes only commands: answers and messages for hosts); read with: hookd --hub '{role_url}' lanes")
    else:
        may = "; it may notify for the fleet" if notifier else ""
        _out(f"host {name} ready (writes only its own rows{may}); on that machine: hookd serve --hub '{role_url}'")


@hub.command("add-host")
@click.argument("name")
@click.option("--password-file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="The role's password from this file (default: a new random one, printed once).")
@click.option("--notifier", is_flag=True,
              help="The host may be the fleet's notifier (a member of hookd_notifier: it reads every host's "
                   "pending and resolved interactions, nothing else of theirs): docs/fleet.md.")
@json_option("Print {role, kind, password, url, notifier} as JSON.")
@click.pass_context
def add_host(ctx: click.Context, name: str, password_file: Path | None, notifier: bool, as_json: bool) -> None:
    """Create host NAME's role (it writes only its own rows), or give it a new password; prints
    the URL that host's `hookd serve --hub` takes."""
    _add(ctx, name, password_file, as_json, operator=False, notifier=notifier)


@hub.command("add-operator")
@click.argument("name")
@click.option("--password-file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="The role's password from this file (default: a new random one, printed once).")
@json_option("Print {role, kind, password, url} as JSON.")
@click.pass_context
def add_operator(ctx: click.Context, name: str, password_file: Path | None, as_json: bool) -> None:
    """Create operator NAME's role (reads every host's rows; writes only commands: answers and
    messages for hosts), or give it a new password."""
    _add(ctx, name, password_file, as_json, operator=True)


@hub.command("hosts")
@json_option("A JSON array of hosts.")
@click.pass_context
def hosts(ctx: click.Context, as_json: bool) -> None:
    """Every host the hub knows (that the role may see): the newest event seq the hub holds
    from it, its heartbeat's age (its freshness), its hookd version."""
    from hookd.hub import ops

    items = ops.hosts(_hub_url(ctx))
    if as_json:
        _echo_json(items)
        return
    rows = [[h["host_id"], h["shipped_seq"], f"{_duration(max(0.0, h['age_s']))} ago", h["version"] or "-"] for h in items]
    _out(_table(rows, ["host", "shipped", "heartbeat", "version"]) if rows else "no hosts")


@hub.command("serve")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="The loopback TCP port (0: any free one).")
@click.option("--wait", "wait_s", type=click.FloatRange(0), default=10.0, show_default=True,
              help="Seconds an answer or message from the page waits for its host's outcome.")
@click.option("--no-browser", is_flag=True, help="Print the sign-in link only.")
@click.pass_context
def serve(ctx: click.Context, port: int, wait_s: float, no_browser: bool) -> None:
    """Serve the operator page over the hub on 127.0.0.1: every host's lanes and questions,
    each host's freshness, live; answers and messages go to their hosts as the hub's commands.
    Use an operator's role (`hub add-operator`). Prints a one-time sign-in link; sessions end
    when this stops (Ctrl-C). docs/fleet.md "The page over the hub"."""
    from hookd.http.hubpage import serve_hub_page
    from hookd.http.web import open_browser, should_open_browser
    from hookd.hub import ops
    from hookd.hub.config import redact
    from hookd.hub.page import HubSource

    url = _hub_url(ctx)
    ops.hosts(url)  # the hub reachable and the role allowed to read it, or exit 1 now
    user = urlsplit(url).username or "operator"
    if not ops.is_operator(url):
        _out(f"hookd: warning: {user} is a host's role: the page shows only its own rows and cannot answer or send"
             " (an operator's role: hookd --hub ADMIN_URL hub add-operator NAME)", err=True)

    def ready(link: str) -> None:
        _out(f"the page over hub {redact(url)}, as {user}: {link}")
        if not no_browser and should_open_browser():
            open_browser(link)
    serve_hub_page(HubSource(url, wait_s), user, port, ready)


def _fresh(age: float | None) -> str:
    return "-" if age is None else f"{_duration(max(0.0, age))} ago"


def hub_lanes(url: str, as_json: bool, only: tuple[str, ...] = ()) -> None:
    """``hookd --hub URL lanes``: every host's builders' lanes (``only``: those builders', on
    any host; a ``HOST/BUILDER`` names one host's; one no host shipped a lane of: NotFound),
    as their last ``lane_changed`` says (a wait its detail counts, counted to now). JSON items: ``host_id``, ``builder``, ``state``, ``since``, ``detail``, ``pending``,
    ``queued`` (its inbox's messages still queued, as the host's shipped inbox events say), ``seq``, ``heartbeat_age_s``,
    ``sends_queued`` (messages queued on the hub for it, not yet taken by its host; the
    table's ``queued`` counts both)."""
    import json

    from hookd.hub import ops

    from hookd.clock import detail_now

    items = []
    now = time.time()
    queued = ops.queued_counts(url)
    seen: set[str] = set()
    for r in ops.lanes(url):
        if only and r["builder"] not in only and f"{r['host_id']}/{r['builder']}" not in only:
            continue
        seen |= {r["builder"], f"{r['host_id']}/{r['builder']}"}
        d = json.loads(r["data"])
        items.append({"host_id": r["host_id"], "builder": r["builder"], "state": d.get("to"), "since": d.get("since"),
                      "detail": detail_now(d.get("detail"), d.get("waited"), d.get("waiting_since"), now), "pending": d.get("pending") or [], "queued": r["inbox_queued"],
                      "seq": r["seq"], "heartbeat_age_s": r["heartbeat_age_s"],
                      "sends_queued": queued.get((r["host_id"], "send", r["builder"]), 0)})
    if unknown := [b for b in dict.fromkeys(only) if b not in seen]:  # (as the local `lanes -b`: exit 1)
        from hookd.errors import NotFound

        raise NotFound(f"builder {', '.join(map(repr, unknown))} is not known on the hub: no host shipped its lane"
                       " (hookd --hub URL lanes lists them)")
    if as_json:
        _echo_json(items)
        return
    rows: list[list[Any]] = [[i["host_id"], i["builder"], _lane_state(i["state"]),
                              _duration(max(0.0, now - (i["since"] or now))), len(i["pending"]),
                              i["queued"] + i["sends_queued"], i["detail"] or "", _fresh(i["heartbeat_age_s"])]
                             for i in items]
    _out(_table(rows, ["host", "builder", "lane", "for", "pending", "queued", "detail", "host seen"])
         if rows else "no builders")


def _what(kind: str, d: dict[str, Any]) -> str:
    if kind == "permission_pending":
        return f"{d.get('tool_name') or '?'} permission" if d.get("kind") != "plan" else "plan approval"
    if kind == "elicitation_pending":
        return f"{d.get('server') or '?'}: {d.get('message') or ''}"
    if kind == "human_input_requested":
        return str(d.get("question") or "question") + (f" [{' / '.join(map(str, d['options']))}]" if d.get("options") else "")
    qs = d.get("questions") or []
    return " / ".join(str(q.get("question", "")) for q in qs if isinstance(q, dict)) or "question"


#: What the hub's questions table adds to a prompt its host no longer takes a remote answer for
DESK_ONLY = " (no hook holds it: answer it at the desk)"


def hub_questions(url: str, as_json: bool, state: str = "pending") -> None:
    """``hookd --hub URL questions [--state pending|resolved|all]``: what waits on a human on
    every host (agents' async asks too), and the newest 100 resolved. JSON items: ``state``
    (``pending``, or how it ended: ``answered``, ``dismissed``, ``expired``...), ``host_id``,
    ``id``, ``kind``, ``builder``, ``at``, ``data`` (the pending event's), ``heartbeat_age_s``,
    and ``answers_queued`` (pending: answers queued on the hub for it, not yet taken by its
    host) and ``held`` (pending: a permission prompt's, plan's or elicitation's, whether its host
    takes a remote answer for it, as its events say; false: answered at the desk only; null for
    the other kinds), or ``resolved_at``, ``outcome``, ``by``, ``resolution`` (resolved: the resolving
    event's data)."""
    from hookd.hub import ops

    now = time.time()
    pending: list[dict[str, Any]] = []
    done: list[dict[str, Any]] = []
    if state in ("pending", "all"):
        queued = ops.queued_counts(url)
        for r in ops.pending(url):
            d = json.loads(r["data"])
            pending.append({"state": "pending", "host_id": r["host_id"], "id": d.get("id"),
                            "kind": d.get("kind") or r["kind"].split("_")[0], "builder": r["builder"], "at": r["at"],
                            "data": d, "heartbeat_age_s": r["heartbeat_age_s"],
                            "answers_queued": queued.get((r["host_id"], "answer", d.get("id")), 0), "held": r["held"],
                            "event": r["kind"]})
    if state in ("resolved", "all"):
        for r in ops.resolved(url):
            d, res = json.loads(r["data"]), json.loads(r["resolution"])
            kind = d.get("kind") or r["kind"].split("_")[0]
            st = res.get("outcome") or "answered"
            done.append({"state": st, "host_id": r["host_id"], "id": d.get("id"), "kind": kind, "builder": r["builder"],
                         "at": r["at"], "data": d, "heartbeat_age_s": r["heartbeat_age_s"],
                         "resolved_at": r["resolved_at"], "outcome": outcome_of(kind, st, res.get("decision")),
                         "by": by_text(res.get("surface"), res.get("actor")), "resolution": res, "event": r["kind"]})
    if as_json:
        _echo_json([{k: v for k, v in i.items() if k != "event"} for i in pending + done])
        return
    out = []
    if state in ("pending", "all"):
        rows: list[list[Any]] = [[i["host_id"], i["id"], i["kind"], i["builder"], _duration(max(0.0, now - i["at"])),
                                  _what(i["event"], i["data"]) + (DESK_ONLY if i["held"] is False else ""),
                                  i["answers_queued"] or "-", _fresh(i["heartbeat_age_s"])]
                                 for i in pending]
        out.append(_table(rows, ["host", "id", "kind", "builder", "waiting", "what", "answers queued", "host seen"])
                   if rows else "no questions")
    if state in ("resolved", "all"):
        rows = [[i["host_id"], i["id"], i["kind"], i["builder"], i["outcome"], i["by"] or "-",
                 f"{_duration(max(0.0, now - i['resolved_at']))} ago", _what(i["event"], i["data"]),
                 _fresh(i["heartbeat_age_s"])] for i in done]
        out.append(_table(rows, ["host", "id", "kind", "builder", "outcome", "by", "resolved", "what", "host seen"])
                   if rows else "nothing resolved")
    _out("\n\n".join(out))


def hub_command(url: str, kind: str, target: str, body: dict[str, Any], wait_s: float, as_json: bool) -> None:
    """``hookd --hub URL answer|send``: queue the command on the hub for its host
    (:func:`hookd.hub.ops.command`), wait up to ``wait_s`` seconds for the outcome and say
    it: applied (the host's own receipt line, after ``HOST: ``), refused (exit 2, the host's
    reason) or queued (since when, and when the host was last seen). JSON: the command
    (:func:`hookd.hub.ops.view` and ``created``); a refusal exits 2 there too."""
    from hookd.errors import Conflict
    from hookd.hub import ops

    c = ops.command(url, kind, target, body, wait_s)
    host = c["host_id"]
    if as_json:
        _echo_json(c)
        if c["state"] == "refused":
            raise click.exceptions.Exit(2)
        return
    if c["state"] == "refused":
        raise Conflict(f"{host} refused it: {ops.on_host(host, c['reason'])}")
    if c["state"] == "applied":
        r = c["result"] or {}
        _out(f"{host}: {answered_line(r) if kind == 'answer' else sent_line(r)}")
        if r.get("warning"):
            _out(f"hookd: {host}: {r['warning']}", err=True)
        return
    _out(f"queued for {host} since {when(c['created_at'])} (host seen {_fresh(c['heartbeat_age_s'])}): "
         f"{host} applies it when it next reads the hub; `hookd --hub URL inbox` shows what becomes of it")


def _what_command(c: dict[str, Any]) -> str:
    p = c["payload"]
    if c["kind"] == "send":
        text = str(p.get("text") or "")
        return (text[:50] + "...") if len(text) > 50 else text
    if p.get("answers"):
        return "; ".join(f"{q}: {v}" for q, v in p["answers"].items())
    parts = [*(p.get("options") or []), *([p["decision"]] if p.get("decision") else []),
             *([p["text"]] if p.get("text") else []), *([p["message"]] if p.get("message") else [])]
    return ", ".join(str(x) for x in parts) or "-"


def hub_inbox(url: str, target: str | None, limit: int, as_json: bool) -> None:
    """``hookd --hub URL inbox [[HOST/]BUILDER]``: the operators' commands on the hub (answers
    and messages for hosts), oldest first, with their state: queued (since when), applied,
    refused (why). JSON: :func:`hookd.hub.ops.view` items."""
    from hookd.hub import ops

    host, builder = (None, target) if target is None or "/" not in target else target.split("/", 1)
    if target is not None:
        ops.check_target(url, target)  # (an unknown host or builder: exit 1, as answer and send say)
    items = [c for c in ops.commands(url, host, limit) if builder is None or c["builder"] == builder]
    if as_json:
        _echo_json(items)
        return
    now = time.time()
    rows: list[list[Any]] = []
    for c in items:
        res = c["result"] or {}
        what = _what_command(c) + (f" (refused: {ops.on_host(c['host_id'], c['reason'])})" if c["state"] == "refused" else "")
        done_at = c["applied_at"] if c["applied_at"] is not None else c["created_at"]
        rows.append([c["host_id"], c["kind"], c["builder"] or "-",
                     c["interaction_id"] or (res.get("message") or {}).get("id") or "-", c["state"],
                     f"{_duration(max(0.0, now - done_at))} ago", c["operator"], what])
    _out(_table(rows, ["host", "kind", "builder", "for", "state", "since", "operator", "what"])
         if rows else "no commands")
