"""What the CLI's commands share: printing for a human (every line through
:func:`hookd.untrusted.visible`: ``_out``, ``_table``, ``_when``, ``_duration``; colour by
``_paint``, shown only on a terminal and never with ``NO_COLOR``; logs by
``_log_to_stderr``), exact JSON (``_echo_json``), URL path segments (``_seg``) and the
daemon's client (``_client``); what ``hookd questions`` prints of an interaction
(``_interaction``, with the ``hookd answer`` commands that answer it) and ``hookd events`` of
an event (``_event_line``, in :mod:`hookd.cli_events`). The names are underscored: they belong to the CLI's modules
(``hookd.cli`` and ``hookd.cli_*``), not to hookd's API.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import urllib.parse
from typing import Any

import click

from hookd.untrusted import json_escape_visible, visible

# msgspec (``--json`` only: its exact encoder), json, tabulate and logging are imported by the
# helpers that use them: a command that prints no table does not pay for tabulate, nor one
# printing for a human for msgspec (docs/decisions.md "The CLI starts fast").



class _Shown(str):
    """Text already made safe for a terminal (each part through :func:`visible`, then styled
    by ``click.style``): ``_out`` and ``_table`` print it as it is. Made by ``_paint``,
    ``_line``, ``_lines`` and ``_table`` only: ``+`` with a str gives a plain str, which is
    escaped again when printed (its colour codes shown as ``\\x1b``), so join with ``_line``."""



def _paint(text: Any, **style: Any) -> _Shown:
    """``text`` through :func:`visible`, styled with ``click.style(**style)`` (``fg``,
    ``bold``, ``dim``...): shown in colour on a terminal, plain in a pipe or with ``NO_COLOR``."""
    shown = visible(text)
    return _Shown(click.style(shown, **style) if style else shown)



def _line(*parts: Any) -> _Shown:
    """One printable text of ``parts``: ``_paint`` results as they are, anything else through
    :func:`visible` (a line break inside a part is shown as ``\\n``)."""
    return _Shown("".join(p if isinstance(p, _Shown) else visible(p) for p in parts))



def _lines(lines: list[_Shown], sep: str = "\n") -> _Shown:
    """``lines`` (each made by ``_line``/``_paint``) as one text, joined by ``sep`` (line
    breaks only)."""
    return _Shown(sep.join(lines))



def _colour() -> bool | None:
    """click's ``color`` for human output: False when ``NO_COLOR`` is set and not empty
    (no-color.org), else None: click keeps styles on a terminal and strips them in a pipe."""
    return False if os.environ.get("NO_COLOR") else None



def _out(text: Any, err: bool = False, nl: bool = True) -> None:
    """Print text for a human: each line's control and bidi characters escaped (the line
    breaks of ``text`` itself kept); a ``_Shown`` text (``_line``, ``_paint``, ``_lines``) as
    it is. Colour only on a terminal, and never with ``NO_COLOR`` (:func:`_colour`)."""
    shown = text if isinstance(text, _Shown) else "\n".join(visible(line) for line in str(text).split("\n"))
    click.echo(shown, err=err, nl=nl, color=_colour())



def _seg(value: str) -> str:
    """``value`` as one URL path segment (an id with ``/``, ``?`` or control characters is
    sent as it is, and refused by the daemon as unknown, never mangled into another path)."""
    return urllib.parse.quote(value, safe="")



def _table(rows: list[list[Any]], headers: list[str], numparse: bool = True) -> _Shown:
    """tabulate's plain table, every text cell shown with :func:`visible` (one line per row);
    a ``_paint``-ed cell as it is (tabulate measures its width without the colour codes).
    ``numparse`` False: text that looks like a number is aligned as text (left)."""
    from tabulate import tabulate  # (only the commands that print a table pay for it)

    cells = [[c if isinstance(c, _Shown) else visible(c) if isinstance(c, str) else c for c in r] for r in rows]
    return _Shown(tabulate(cells, headers=[visible(h) for h in headers], disable_numparse=not numparse))



def _log_to_stderr(level: str, fmt: str) -> None:
    """Log to stderr at ``level``, each message shown with :func:`visible`."""
    import logging

    class _VisibleFormatter(logging.Formatter):
        """Log lines whose message (not the traceback) is shown with :func:`visible`."""

        def formatMessage(self, record: logging.LogRecord) -> str:
            record.message = visible(record.message)
            return super().formatMessage(record)

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter(fmt))
    logging.basicConfig(level=level.upper(), handlers=[handler])



def _echo_json(obj: Any) -> None:
    """JSON, exact: the characters JSON leaves raw that a terminal may act on (DEL, C1, bidi)
    are written as ``\\uXXXX`` escapes, which decode to the same text."""
    import msgspec

    click.echo(json_escape_visible(msgspec.json.encode(obj).decode()))


def json_option(help: str | None = None) -> Any:
    """Every command's ``--json`` flag (its parameter ``as_json``). With it on the command
    line, an error the command ends with is also printed on stdout in the API's one error
    shape, ``{"error": {"code", "message"}}`` (the ``hookd`` group: :mod:`hookd.cli`): a
    script reading stdout gets JSON whatever happened, and the exit status says which."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def _json_text(value: Any) -> str:
    """``value`` (decoded JSON) as compact JSON text to show (then clipped and made visible by
    the caller), with the standard library's ``json``: printing loads no msgspec."""
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))



def _when(ts: float | None) -> str:
    """Local date and time of UNIX seconds ``ts`` with its UTC offset
    (``2026-12-02 19:40:01 +01:00``), or ``-``: :func:`hookd.clock.when`."""
    from hookd.clock import when

    return when(ts)



def _duration(seconds: float) -> str:
    """A span of ``seconds`` for a human: :func:`hookd.clock.span` (``12s``, ``55m``, ``2h03m``)."""
    from hookd.clock import span

    return span(seconds)



#: The hook client a builder's hooks run (a spawn manifest's and ``GET /v1/status``' ``client``),
#: in words: ``hookd status``' "hook client" column, ``hookd spawn``'s line.
HOOK_CLIENT_WORDS = {"c": "compiled", "bash": "bash script"}


def _hook_client(kind: Any, transport: Any = None) -> str:
    """``c`` -> ``compiled``, ``bash`` -> ``bash script``; ``-`` when none (not spawned, or a
    harness without a hook client); another value as it is. A ``transport`` other than the
    default ``sh`` follows: ``compiled, exec``, ``bash script, http``."""
    words = HOOK_CLIENT_WORDS.get(str(kind), str(kind)) if kind else "-"
    return f"{words}, {transport}" if transport and transport != "sh" else words



#: How each lane state is coloured on a terminal (``_paint``'s style): waiting on a human
#: stands out, stalled, failed and dead are red, working is green; the others are plain.
LANE_STYLE: dict[str, dict[str, Any]] = {
    "working": {"fg": "green"},
    "waiting_question": {"fg": "yellow", "bold": True},
    "waiting_permission": {"fg": "yellow", "bold": True},
    "stalled": {"fg": "red", "bold": True},
    "failed": {"fg": "red", "bold": True},
    "dead": {"fg": "red"},
}



def _lane_state(state: Any) -> _Shown:
    """A lane state (``working``, ``waiting_question``...), coloured by LANE_STYLE."""
    return _paint(state if state is not None else "-", **LANE_STYLE.get(str(state), {}))



def _subagent_row(builder: str, s: dict[str, Any], now: float, session: bool = True) -> list[Any]:
    """A running subagent's row (an item of a lane's ``subagents``) under its builder's lane in
    ``hookd lanes`` (``session``: with that table's session column, ``-``) and ``hookd watch``:
    its kind, what it waits on (the lanes' words), how long it has run, its pending
    interactions, its agent id."""
    waits = f"; waiting on {', '.join(s['pending'])}" if s["pending"] else ""
    row = [f"↳ {s['agent_type'] or 'subagent'}", _lane_state(s["waiting"]), _duration(now - s["started_at"]),
           len(s["pending"]), "-", "-", f"{builder}'s subagent {s['agent_id']}{waits}"]
    return row if session else row[:5] + row[6:]



def _client(ctx: click.Context) -> Any:
    from hookd.client import Client

    return Client(ctx.obj)



# --- what `hookd questions` shows of an interaction -------------------------------------------

#: an option's description is shown up to this many characters (then clipped with "...")
DESCRIPTION_CHARS = 60
#: a permission prompt's ``tool_view.detail`` is shown up to this many lines (``--json``: all)
DETAIL_LINES = 20
#: Most lines of a plan `hookd questions` shows (the API has it whole).
PLAN_LINES = 40


def _value(v: Any) -> str:
    """A form field's value as a person reads it: text as it is, anything else as JSON spells
    it (``true``, ``3``, ``null``)."""
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def _clip(text: Any, n: int) -> str:
    s = str(text)
    return s if len(s) <= n else s[: n - 3] + "..."



def _questions(i: dict[str, Any]) -> list[dict[str, Any]]:
    qs = i.get("questions")
    return [q for q in qs if isinstance(q, dict)] if isinstance(qs, list) else []



def _options(q: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, description) of each option of question ``q`` (description "" when none)."""
    opts = q.get("options")
    if not isinstance(opts, list):
        return []
    return [(str(o["label"]), str(o.get("description") or "")) for o in opts
            if isinstance(o, dict) and o.get("label") is not None]



def _destructive(i: dict[str, Any]) -> bool:
    view = i.get("tool_view")
    return isinstance(view, dict) and view.get("destructive") is True



def _answer_commands(i: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``hookd answer`` commands that answer pending interaction ``i`` (an item of
    ``GET /v1/questions``), as (what, command line) pairs, shell-quoted: a question's with the
    first option of each question (``--question N`` before each when it asks several;
    ``--text TEXT`` where a question has no options); a permission prompt's allow and deny,
    deny first when its ``tool_view`` marks it destructive."""
    base = f"hookd answer {shlex.quote(str(i['id']))}"
    if i.get("kind") == "elicitation":
        fields = "".join(f" --field {shlex.quote(str(f.get('name')))}=VALUE" for f in i.get("fields") or []
                         if isinstance(f, dict))
        return [("accept", f"{base} --option accept{fields}"), ("decline", f"{base} --option decline"),
                ("cancel", f"{base} --option cancel")]
    if i.get("kind") == "plan":
        return [("approve, auto mode", f"{base} --option auto"), ("approve, ask each edit", f"{base} --option manual"),
                ("send back", f"{base} --option deny --text FEEDBACK")]
    if i.get("kind") == "permission":
        pair = [("allow", f"{base} --option allow"), ("deny", f"{base} --option deny --text MESSAGE")]
        return pair[::-1] if _destructive(i) else pair

    def one(q: dict[str, Any]) -> str:
        opts = _options(q)
        return f"--option {shlex.quote(opts[0][0])}" if opts else "--text TEXT"

    qs = _questions(i)
    if len(qs) <= 1:
        return [("answer", f"{base} {one(qs[0]) if qs else '--text TEXT'}")]
    return [("answer", base + "".join(f" --question {n} {one(q)}" for n, q in enumerate(qs, 1)))]



def _question_lines(i: dict[str, Any]) -> list[_Shown]:
    qs = _questions(i)
    answers = i.get("answers")
    answers = answers if isinstance(answers, dict) else {}
    out: list[_Shown] = []
    for n, q in enumerate(qs, 1):
        text = str(q.get("question", "?"))
        number = f"{n}. " if len(qs) > 1 else ""
        if i.get("state") != "pending":
            got = answers.get(text)
            out.append(_line(f"  {number}{text}", "" if got is None else f" -> {got}"))
            continue
        multi = _paint("(multi-select: repeat --option)", dim=True) if q.get("multiSelect") else ""
        out.append(_line(f"  {number}{text}", " " if multi else "", multi))
        opts = _options(q)
        width = max((len(label) for label, _ in opts), default=0)
        indent = " " * (4 + len(number))
        for label, desc in opts:
            if desc:
                out.append(_line(f"{indent}{label:<{width}}  ", _paint(_clip(desc, DESCRIPTION_CHARS), dim=True)))
            else:
                out.append(_line(f"{indent}{label}"))
    if not qs:
        out.append(_line("  (no readable questions; --json has what was asked)"))
    return out



def _permission_lines(i: dict[str, Any]) -> list[_Shown]:
    """A permission prompt's tool input: its ``tool_view`` when the daemon sends one (the
    tool's name and the summary, or the summary alone when it starts with the name; a
    destructive mark; the detail indented), else the tool's name and input as JSON."""
    view = i.get("tool_view")
    tool = str(i.get("tool_name") or "?")
    if isinstance(view, dict) and isinstance(view.get("summary"), str):
        mark = _paint("[destructive]", fg="red", bold=True) if view.get("destructive") is True else ""
        summary = view["summary"] if view["summary"].startswith(f"{tool} ") else f"{tool}: {view['summary']}"
        out = [_line(f"  {summary}", "  " if mark else "", mark)]
        detail = view.get("detail")
        rows = str(detail).expandtabs(4).split("\n") if isinstance(detail, str) and detail.strip() else []
        if rows != [view["summary"]]:
            out += [_line(f"    {row}") for row in rows[:DETAIL_LINES]]
            if len(rows) > DETAIL_LINES:
                out.append(_line(f"    ... ({len(rows) - DETAIL_LINES} more lines; --json has all)"))
    else:
        out = [_line("  ", _clip(f"{tool}: {_json_text(i.get('input'))}", 80))]
    if i.get("state") != "pending" and i.get("decision"):
        out.append(_line(f"  -> {i['decision']}", f": {i['message']}" if i.get("message") else ""))
    return out



def _elicitation_lines(i: dict[str, Any]) -> list[_Shown]:
    """An elicitation: its server and message, then its url (url mode) or its form's fields
    (name, type, required, description; enum values), and once it ended the action and the
    content sent."""
    shown: dict[str, Any] = i["input"] if isinstance(i.get("input"), dict) else {}
    out = [_line(f"  {shown.get('server') or i.get('tool_name') or '?'} asks: ", str(shown.get("message") or ""))]
    if shown.get("mode") == "url":
        out.append(_line(f"    open: {shown.get('url')}"))
    for f in i.get("fields") or []:
        kind = str(f.get("type") or "any") + ("" if f.get("required") else ", optional")
        desc = f.get("description") or f.get("title") or ""
        choice = f" one of {', '.join(str(e) for e in f['enum'])}" if isinstance(f.get("enum"), list) else ""
        out.append(_line(f"    {f.get('name')} ({kind}){choice}", "  " if desc else "",
                         _paint(_clip(str(desc), DESCRIPTION_CHARS), dim=True) if desc else ""))
    if i.get("state") != "pending" and i.get("decision"):
        got = "".join(f"; {k} = {_value(v)}" for k, v in (i.get("answers") or {}).items())
        out.append(_line(f"  -> {i['decision']}{got}"))
    return out


def _plan_lines(i: dict[str, Any]) -> list[_Shown]:
    """A plan's text as written (markdown, shown plain; its first :data:`PLAN_LINES` lines),
    the file it came from, and, once answered (remotely, or at the desk when its harness
    reported the mode), the choice."""
    plan, path = i.get("plan"), i.get("plan_path")
    rows = str(plan).expandtabs(4).rstrip("\n").split("\n") if isinstance(plan, str) and plan.strip() else []
    out = [_line(f"    {row}" if row.strip() else "") for row in rows[:PLAN_LINES]]
    if len(rows) > PLAN_LINES:
        out.append(_line(f"    ... ({len(rows) - PLAN_LINES} more lines; --json has all)"))
    if not rows:
        out.append(_line("  (no plan text: the agent wrote no plan file)"))
    if isinstance(path, str):
        out.append(_line("  ", _paint(f"plan file: {path}", dim=True)))
    if i.get("state") != "pending" and i.get("decision"):
        mode = (i.get("answers") or {}).get("mode") if isinstance(i.get("answers"), dict) else None
        got = ("approved" + (f" ({mode})" if mode else "")) if i["decision"] == "allow" else "sent back"
        out.append(_line(f"  -> {got}", f": {i['message']}" if i.get("message") else ""))
    return out


def _interaction(i: dict[str, Any], now: float) -> _Shown:
    """What ``hookd questions`` prints of interaction ``i`` (an item of ``GET /v1/questions``)
    at UNIX time ``now``: a head line (id, kind, builder, how long it has waited, or how and
    when it ended: the API's ``outcome`` and ``by`` words when it sends them, else ``state``
    and ``by SURFACE (ACTOR)``), the questions with their options (a permission prompt: its
    tool input), and, while it is pending, the ``hookd answer`` commands that answer it."""
    head: list[Any] = [_paint(i["id"], bold=True), f"  {i['kind']} from {_asker(i)}, "]
    if i["state"] == "pending":
        head.append(_paint(f"waiting {_duration(now - i['created_at'])}", fg="yellow"))
        if i.get("expires_at"):
            head.append(f", expires in {_duration(i['expires_at'] - now)}")
        d = i.get("default_answer")
        if isinstance(d, dict) and isinstance(d.get("at"), (int, float)):  # the builder's opt-in default
            # (due: the daemon's next pass of its default answers, a few seconds at most, gives it)
            left = d["at"] - now
            when = f"in {_duration(left)}" if left >= 1 else "now"
            head.append(_paint(f", {d.get('answer')} {when} unless you answer", fg="yellow"))
    else:
        from hookd.vocabulary import outcome_of

        head.append(i.get("outcome") or outcome_of(i["kind"], i["state"], i.get("decision")))
        head.append(f" {i['by']}" if i.get("by") else _who(i))  # (a daemon that sends no ``by``: the same words)
        if i.get("resolved_at"):
            head.append(f", {_duration(now - i['resolved_at'])} ago")
    lines = [_line(*head)]
    if i["kind"] == "elicitation":
        lines += _elicitation_lines(i)
    else:
        lines += (_permission_lines(i) if i["kind"] == "permission" else _plan_lines(i) if i["kind"] == "plan"
                  else _question_lines(i))
    if i["state"] == "pending" and i.get("received_at"):
        # a remote answer kept for the inbox while the menu stays open at the desk
        got = _answered({k: i.get(k) for k in ("answers", "decision", "message")}) or "-"
        where = f" (as inbox message {i['inbox_message_id']})" if i.get("inbox_message_id") else ""
        desk = "; the menu is still open at the desk" if i["kind"] == "question" else ""
        lines.append(_line(f"  answered{_who(i)}{where}: {got}{desk}"))
    if i["state"] == "dismissed" and i.get("message"):  # why, as the human who dismissed it said
        lines.append(_line("  why: ", str(i["message"])))
    if i.get("warning"):  # what hookd could not be sure of (an empty answer, a denial read from a transcript)
        lines.append(_line("  ", _paint("note:", fg="yellow"), f" {i['warning']}"))
    if i["state"] == "pending" and i["kind"] in ("permission", "plan", "elicitation") and i.get("held") is False:
        # no hook holds it (its hold ended, or none was spawned): the desk's dialog is the only way
        what = "prompt (an answer from here would be kept as a message)" if i["kind"] == "permission" else "elicitation"
        lines.append(_line("  ", _paint("answer at the desk:", bold=True), f" no hook is holding this {what}"))
    elif i["state"] == "pending":
        # a question no hook can carry an answer to (its hold ended: the daemon restarted, say):
        # from here it reaches the agent only as a message, after the desk's menu is answered
        as_message = i["kind"] == "question" and i.get("held") is False and not i.get("received_at")
        if as_message:
            lines.append(_line("  ", _paint("answer at the desk:", bold=True), " no hook is holding this question"))
        labels = [(what + (" (as a message)" if as_message else "") + ":", cmd) for what, cmd in _answer_commands(i)]
        width = max(len(label) for label, _ in labels)
        lines += [_line(f"  {label:<{width}} ", _paint(cmd, bold=True)) for label, cmd in labels]
    return _lines(lines)


def _asker(i: dict[str, Any]) -> str:
    """Who asked: the builder (``b1``), or its subagent (``b1's subagent general-purpose
    (a1b2c3)``: its kind and agent id) when a subagent's hook raised it."""
    if not i.get("agent_id"):
        return str(i["builder"])
    return f"{i['builder']}'s subagent {i.get('agent_type') or 'of unknown type'} ({i['agent_id']})"


# --- an answer in words: the interaction's block here, the event lines in hookd.cli_events ---

def _given(v: Any) -> bool:
    return v is not None and v != "" and v != [] and v != {}


def _answered(d: dict[str, Any]) -> str:
    """An answer in an event's data: a permission's decision (and deny message), or the
    questions' answers joined with "; " (clipped)."""
    if _given(d.get("decision")):
        return str(d["decision"]) + (f": {_clip(d['message'], 60)}" if _given(d.get("message")) else "")
    answers = d.get("answers")
    return _clip("; ".join(str(a) for a in answers.values()), 80) if isinstance(answers, dict) and answers else ""


def _who(d: dict[str, Any]) -> str:
    """`` from the CLI by ana`` of an event's data (:func:`hookd.vocabulary.by_text`: the words the
    page and the API's ``by`` use), or what of it is there."""
    from hookd.vocabulary import by_text

    surface = d.get("surface") if _given(d.get("surface")) else None
    actor = d.get("actor") if _given(d.get("actor")) else None
    by = by_text(str(surface) if surface is not None else None, str(actor) if actor is not None else None)
    return f" {by}" if by else ""


#: How an answer reaches the agent, in words (``interaction_answered``'s ``delivery``, the
#: receipt's): the words ``hookd answer`` prints; ``PreToolUse``: an answer registered before the
#: question was asked, handed over as the agent asked it.
DELIVERY_WORDS = {
    "hook": "goes to the agent through its hook",
    "inbox": "goes to the agent through its inbox",
    "PreToolUse": "went to the agent through its hook as it asked",
}


def _delivery(d: dict[str, Any]) -> str:
    how = d.get("delivery")
    return DELIVERY_WORDS.get(str(how), f"delivery: {how}") if _given(how) else "not delivered"


def answered_line(r: dict[str, Any]) -> str:
    """What `hookd answer` prints for its receipt ``r`` (its warning aside)."""
    i = r["interaction"]
    if i["kind"] == "elicitation":
        what = visible((i["decision"] or "-") + "".join(f"; {k} = {_value(v)}" for k, v in (i["answers"] or {}).items()))
    else:
        decision = i["decision"] or "-"
        if i["kind"] == "plan":  # approved (auto) / sent back: FEEDBACK
            decision = f"approved ({(i['answers'] or {}).get('mode')})" if decision == "allow" else "sent back"
        what = visible(decision + (f": {i['message']}" if i.get("message") else "") if i["kind"] in ("permission", "plan")
                       else "; ".join(f"{q} -> {a}" for q, a in (i["answers"] or {}).items()))
    dup = " (repeated response id: first receipt)" if r["duplicate"] else ""
    if r["delivery"] == "inbox" and i["state"] == "pending":
        return f"queued as inbox message {r['message_id']} for {i['builder']}{dup}"
    return f"answered {visible(i['id'])} ({i['kind']}, {i['builder']}): {what}; {_delivery(r)}{dup}"


def sent_line(r: dict[str, Any]) -> str:
    """What `hookd send` prints for its receipt ``r`` (``{message, created, note?}``: the note on a
    second line)."""
    m = r["message"]
    if not r["created"]:
        return f"{m['id']} for {m['builder']} was already sent ({m['state']})"
    return f"queued {m['id']} for {m['builder']}" + (f"\n  {r['note']}" if r.get("note") else "")
