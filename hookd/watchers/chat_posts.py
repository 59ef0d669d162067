"""What a two-way chat channel posts (hookd.watchers.chat): an interaction as plain text with
its buttons, and the line that shows its outcome once it ended.

Agent text is untrusted: every line goes through :func:`hookd.untrusted.visible` (control and
bidi characters escaped) and channels send it as plain text (no markup, so no link or
formatting an agent wrote is rendered as such). A button is a label and the answer it gives
(:class:`hookd.models.AnswerRequest` fields); its press is bound to the revision and input hash
the post was made for (:mod:`hookd.watchers.chat`)."""

from __future__ import annotations

from typing import Any

import msgspec

from hookd.core.outcomes import questions_of
from hookd.core.plans import plan_text
from hookd.harness.base import ToolView
from hookd.models import Interaction
from hookd.untrusted import visible

#: What a chat message may hold (Telegram's limit is 4096 characters).
MAX_TEXT = 3800
#: Lines of a tool call's detail or a plan shown.
DETAIL_LINES = 30
#: The interaction kinds posted with buttons.
KINDS = ("question", "async", "permission", "plan", "elicitation")


class Button(msgspec.Struct, frozen=True):
    """One button: its label and the answer it gives (AnswerRequest fields)."""

    label: str
    answer: dict[str, Any]


class Post(msgspec.Struct, frozen=True):
    """A message to post: plain text and buttons (one row each; none once it ended)."""

    text: str
    buttons: list[Button] = []


def _lines(text: str, limit: int = DETAIL_LINES) -> list[str]:
    rows = [x for x in text.split("\n")]
    out = [visible(x if len(x) <= 300 else x[:299] + "…") for x in rows[:limit]]
    return out + (["…"] if len(rows) > limit else [])


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def interaction_post(i: Interaction, view: ToolView | None) -> Post:
    """``i`` as a message with its buttons (a pending interaction). view: a permission
    prompt's tool call as its adapter shows it (None: the input as JSON)."""
    who = visible(i.builder)
    reply = "Reply to this message to answer with text."
    if i.kind == "permission":
        v = view
        summary = v.summary if v is not None else (i.tool_name or "a tool")
        detail = v.detail if v is not None else msgspec.json.encode(i.input).decode()
        head = f"{who} asks permission to run {visible(i.tool_name or '?')}: {visible(summary)}"
        if v is not None and v.destructive:
            head += " (looks destructive)"
        text = "\n".join([head, *("  " + x for x in _lines(detail or "")), "",
                          "Reply to this message to deny with a reason."])
        buttons = [Button("Allow", {"decision": "allow"}), Button("Deny", {"decision": "deny"})]
    elif i.kind == "plan":
        plan, _ = plan_text(i)
        text = "\n".join([f"{who} asks you to approve its plan:", *_lines((plan or "").strip("\n") or "-"), "",
                          "Reply to this message to send it back with what to change."])
        buttons = [Button("Approve (auto)", {"options": ["auto"]}), Button("Approve (manual)", {"options": ["manual"]})]
    elif i.kind == "elicitation":
        shown: dict[str, Any] = i.input if isinstance(i.input, dict) else {}
        schema = shown.get("requested_schema")
        fields = schema.get("properties") if isinstance(schema, dict) else None
        names = list(fields) if isinstance(fields, dict) else []
        text = "\n".join([f"{who}'s tool server {visible(i.tool_name or '?')} asks:", *_lines(str(shown.get("message") or "-")),
                          *([f"open: {visible(shown.get('url'))}"] if shown.get("url") else []),
                          *([f"fields: {visible(', '.join(map(str, names)))} (answer those at the desk or with hookd answer)"]
                            if names else [])])
        buttons = ([] if names else [Button("Accept", {"decision": "accept"})]) + [
            Button("Decline", {"decision": "decline"}), Button("Cancel", {"decision": "cancel"})]
    else:
        qs = questions_of(i)
        body: list[str] = []
        for q in qs:
            body += _lines(q.question, 10)
            body += [f"  • {visible(o.label)}" + (f": {visible(o.description)}" if o.description else "") for o in q.options]
        if len(qs) == 1:
            buttons = [Button(o.label, {"options": [o.label]}) for o in qs[0].options]
            body += ["", ("Other: " if buttons else "") + reply]
        else:
            buttons = []
            body += ["", f"{len(qs)} questions: answer them with hookd answer {visible(i.id)} or at the desk."]
        text = "\n".join([f"{who} asks:", *body])
    return Post(_cut(text), buttons)


def outcome(i: Interaction) -> str:
    """The line that shows how ``i`` ended, e.g. ``answered: allow (by ana, cli)``."""
    if i.kind == "plan" and i.decision == "allow" and isinstance(i.answers, dict):
        what = f"approved ({i.answers.get('mode', 'manual')})"
    elif i.decision is not None:
        what = i.decision + (f": {i.message}" if i.message else "")
    elif isinstance(i.answers, dict) and i.answers:
        what = "; ".join(str(v) for v in i.answers.values())
    else:
        what = ""
    by = ", ".join(x for x in (i.actor, i.surface) if x)
    line = i.state + (f": {what}" if what else "") + (f" (by {by})" if by else "")
    return "— " + visible(line if len(line) <= 500 else line[:499] + "…")


def ended_post(i: Interaction, view: ToolView | None) -> Post:
    """The message of a post once ``i`` ended: its text, the outcome, no buttons."""
    shown = interaction_post(i, view).text.rsplit("\n\n", 1)[0]  # (without how to answer)
    return Post(_cut(shown + "\n\n" + outcome(i)))
