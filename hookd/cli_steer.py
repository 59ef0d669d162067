"""The CLI's commands that carry a human's words to agents: ``hookd send``, ``answer``,
``dismiss``, ``ask`` and ``preanswer``. Registered on the group in ``hookd.cli``.
"""

from __future__ import annotations

from typing import Any

import click

from hookd.cli_complete import builders, pending_interactions
from hookd.cli_render import _client, _echo_json, _out, _seg, answered_line, json_option, sent_line
from hookd.vocabulary import os_user
from hookd.untrusted import visible

#: What --actor defaults to, as --help shows it.
_ME = "your user name"



@click.command()
@click.argument("builder", shell_complete=builders)
@click.argument("text")
@click.option("--id", "key", help="Idempotency key: the same key and text again returns the first receipt.")
@click.option("--session", "session_id", help="Deliver only to this session of the builder (one hookd has seen).")
@click.option("--agent", "agent_id", help="Deliver only to this subagent (its agent_id: one hookd has seen).")
@click.option("--actor", "--author", "author", default=os_user, show_default=_ME, metavar="NAME",
              help="Who the agent is told the message is from (--author: the same).")
@click.option("--force", is_flag=True, help="Queue it even for a builder that was unspawned.")
@click.option("--wait", "wait_s", type=click.FloatRange(0), default=30.0, show_default=True, metavar="S",
              help="With --hub: how long to wait for the host's outcome (applied or refused) before saying queued.")
@click.option("--no-wait", is_flag=True, help="With --hub: return at once (queued).")
@json_option()
@click.pass_context
def send(ctx: click.Context, builder: str, text: str, key: str | None, session_id: str | None,
         agent_id: str | None, author: str, force: bool, wait_s: float, no_wait: bool, as_json: bool) -> None:
    """Queue TEXT for BUILDER's agent; it is delivered at the agent's next turn boundary.
    Refused (exit 2) for a builder that was unspawned, unless --force; refused (exit 1) for a
    --session or --agent hookd never saw for BUILDER. With `hookd --hub URL`:
    BUILDER is [HOST/]BUILDER (HOST/ needed when several hosts have it); the message is queued
    on the hub for its host, which queues it as its own (the author: your hub role)."""
    body: dict[str, Any] = {"text": text, "id": key, "session_id": session_id, "agent_id": agent_id, "author": author}
    if force:
        body["force"] = True
    if (hub := ctx.find_root().meta.get("hookd.hub")) is not None:
        from hookd.cli_hub import hub_command

        return hub_command(hub, "send", builder, body, 0.0 if no_wait else wait_s, as_json)
    r = _client(ctx).post_json(f"/v1/builders/{_seg(builder)}/messages", body)
    if as_json:
        _echo_json(r)
    else:
        _out(sent_line(r))


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



@click.command(cls=_AnswerCommand)
@click.argument("interaction_id", shell_complete=pending_interactions)
@click.option("--option", "options", multiple=True, metavar="LABEL",
              help="An option's label (repeat for multi-select); for a permission prompt: allow or deny; "
                   "for a plan: auto, manual or deny.")
@click.option("--text", help="Free text ('Other'); for a permission deny: the message shown to the model; "
                             "for a plan sent back (deny): what to change.")
@click.option("--question", "questions", multiple=True, metavar="TEXT",
              help="Which question the following --option/--text answer (its text or number); "
                   "needed when the interaction asks several.")
@click.option("--field", "fields", multiple=True, metavar="NAME=VALUE",
              help="An elicitation's field, with --option accept (repeat; the value is read as the field's type).")
@click.option("--response-id", help="Idempotency key: the same key and answer again returns the first receipt.")
@click.option("--revision", type=int, help="Refuse unless the interaction is still at this revision (what you saw).")
@click.option("--actor", default=os_user, show_default=_ME, metavar="NAME",
              help="Who answers (recorded; named in inbox copies; with --hub: your hub role instead).")
@click.option("--wait", "wait_s", type=click.FloatRange(0), default=30.0, show_default=True, metavar="S",
              help="With --hub: how long to wait for the host's outcome (applied or refused) before saying queued.")
@click.option("--no-wait", is_flag=True, help="With --hub: return at once (queued).")
@json_option("Print the receipt as JSON.")
@click.pass_context
def answer(ctx: click.Context, interaction_id: str, options: tuple[str, ...], text: str | None,
           questions: tuple[str, ...], fields: tuple[str, ...], response_id: str | None, revision: int | None,
           actor: str | None, wait_s: float, no_wait: bool, as_json: bool) -> None:
    """Answer INTERACTION_ID (an id or tool_use_id from `hookd questions`): a question, a
    permission prompt (--option allow | --option deny --text MESSAGE), a plan (--option auto |
    --option manual | --option deny --text FEEDBACK), an elicitation (--option accept --field
    NAME=VALUE ... | --option decline | --option cancel) or an async ask.
    A question asked in a terminal gets the answer through its held PermissionRequest hook
    (the menu closes with it); refused (exit 2) when it was already answered or expired, and
    then your answer is kept as an inbox message for the builder. With `hookd --hub URL`:
    INTERACTION_ID is [HOST/]ID (HOST/ needed when it is pending on several hosts); the answer
    is queued on the hub and its host applies it (actor: your hub role, surface: hub)."""
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
    if fields:
        content: dict[str, str] = {}
        for f in fields:
            name, eq, value = f.partition("=")
            if not eq or not name:
                raise click.UsageError(f"--field takes NAME=VALUE, not {f!r}")
            content[name] = value
        body["content"] = content
    if (hub := ctx.find_root().meta.get("hookd.hub")) is not None:
        from hookd.cli_hub import hub_command

        if not (options or text is not None or fields or body.get("answers")):
            # (the host would refuse it, after the hub had queued it: say so before)
            raise click.UsageError("an answer needs --option (or --text): hookd questions shows each one's choices")
        return hub_command(hub, "answer", interaction_id, body, 0.0 if no_wait else wait_s, as_json)
    r = _client(ctx).post_json(f"/v1/interactions/{_seg(interaction_id)}/answer", body)
    if as_json:
        _echo_json(r)
        return
    line = answered_line(r)
    _out(line)
    if r.get("warning"):
        _out(f"hookd: {visible(r['warning'])}", err=True)


@click.command()
@click.argument("interaction_id", metavar="ID", shell_complete=pending_interactions)
@click.option("--reason", required=True, metavar="TEXT", help="Why it is dismissed (recorded).")
@click.option("--actor", default=os_user, show_default=_ME, metavar="NAME", help="Who dismisses it (recorded).")
@json_option("Print the interaction as JSON.")
@click.pass_context
def dismiss(ctx: click.Context, interaction_id: str, reason: str, actor: str, as_json: bool) -> None:
    """Close a stale question, permission prompt, plan or elicitation unanswered: it leaves the
    queue, recorded with who and why. A hook held for it is let go with no decision (the desk's
    menu decides). Exit 2 when it is no longer pending."""
    r = _client(ctx).post_json(f"/v1/interactions/{_seg(interaction_id)}/dismiss",
                               {"reason": reason, "actor": actor, "surface": "cli"})
    if as_json:
        _echo_json(r)
        return
    i = r["interaction"]
    _out(f"dismissed {visible(i['id'])} ({i['kind']}, {i['builder']}): {visible(reason)}")


@click.command()
@click.argument("builder", shell_complete=builders)
@click.argument("question")
@click.option("--option", "options", multiple=True, metavar="LABEL", help="An answer option (repeat).")
@click.option("--expires-in", type=float, help="Seconds until it expires unanswered.")
@click.option("--actor", "--author", "author", default=os_user, show_default=_ME, metavar="NAME",
              help="Who asks (--author: the same).")
@json_option()
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



@click.command()
@click.argument("builder", shell_complete=builders)
@click.option("--question", required=True, help="The exact question text the agent will ask.")
@click.option("--option", "options", multiple=True, metavar="LABEL", help="The answer's label(s).")
@click.option("--text", help="Free-text answer.")
@click.option("--actor", default=os_user, show_default=_ME, metavar="NAME", help="Who answers (recorded).")
@json_option()
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
