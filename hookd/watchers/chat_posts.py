"""What a two-way chat channel posts (hookd.watchers.chat): an interaction as plain text with
its buttons, and the line that shows its outcome once it ended.

Agent text is untrusted: every line goes through :func:`hookd.untrusted.visible` (control and
bidi characters escaped) and channels send it as plain text (no markup, so no link or
formatting an agent wrote is rendered as such). A button is a label and the answer it gives
(:class:`hookd.models.AnswerRequest` fields); its press is bound to the revision and input hash
the post was made for (:mod:`hookd.watchers.chat`).

What cannot be one press is answered in steps on the same post, the answer in the making its
*draft* (stored with the post): a question with several parts (one part at a time, its options
as buttons, a reply its free text; answered once every part is), a multi-select part (toggle
buttons and Done), an elicitation with fields (one field at a time, given by reply or, for a
boolean or an enum, by button; an optional one skipped; each value checked against its field's
schema, the whole against the requested schema when it is sent). A step's button is a
:data:`STEPS` action instead of an answer (:func:`advance`)."""

from __future__ import annotations

from typing import Any

import msgspec

from hookd.core.elicitations import check_field, schema_fields
from hookd.core.outcomes import questions_of
from hookd.core.plans import plan_text
from hookd.harness.base import ToolView
from hookd.models import BadRequest, Interaction
from hookd.untrusted import visible

#: What a chat message may hold (Telegram's limit is 4096 characters).
MAX_TEXT = 3800
#: Lines of a tool call's detail or a plan shown.
DETAIL_LINES = 30
#: The interaction kinds posted with buttons.
KINDS = ("question", "async", "permission", "plan", "elicitation")
#: The keys of a button that is a step (:func:`advance`), not an answer: ``pick`` (part,
#: label), ``toggle`` (part, label), ``done`` (part), ``field`` (name, value), ``skip`` (name).
STEPS = ("pick", "toggle", "done", "field", "skip")


class Button(msgspec.Struct, frozen=True):
    """One button: its label and the answer it gives (AnswerRequest fields)."""

    label: str
    answer: dict[str, Any]


#: How a post says to answer it with text (a reply to it); a channel whose replies go
#: elsewhere says so instead (Slack: in the post's thread, :func:`hookd.watchers.slack.threaded`).
REPLY = "Reply to this message"


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


def interaction_post(i: Interaction, view: ToolView | None, draft: dict[str, Any] | None = None) -> Post:
    """``i`` as a message with its buttons (a pending interaction). view: a permission
    prompt's tool call as its adapter shows it (None: the input as JSON); draft: the answer
    in the making of a step-by-step one (:func:`advance`; None: its first step)."""
    who = visible(i.builder)
    reply = f"{REPLY} to answer with text."
    if i.kind == "permission":
        v = view
        summary = v.summary if v is not None else (i.tool_name or "a tool")
        detail = v.detail if v is not None else msgspec.json.encode(i.input).decode()
        head = f"{who} asks permission to run {visible(i.tool_name or '?')}: {visible(summary)}"
        if v is not None and v.destructive:
            head += " (looks destructive)"
        text = "\n".join([head, *("  " + x for x in _lines(detail or "")), "",
                          f"{REPLY} to deny with a reason."])
        buttons = [Button("Allow", {"decision": "allow"}), Button("Deny", {"decision": "deny"})]
    elif i.kind == "plan":
        plan, _ = plan_text(i)
        text = "\n".join([f"{who} asks you to approve its plan:", *_lines((plan or "").strip("\n") or "-"), "",
                          f"{REPLY} to send it back with what to change."])
        buttons = [Button("Approve (auto)", {"options": ["auto"]}), Button("Approve (manual)", {"options": ["manual"]})]
    elif i.kind == "elicitation":
        return _elicitation_post(i, draft)
    else:
        qs = questions_of(i)
        if stepwise(i):
            return _parts_post(i, draft)
        body: list[str] = []
        for q in qs:
            body += _lines(q.question, 10)
            body += [f"  • {visible(o.label)}" + (f": {visible(o.description)}" if o.description else "") for o in q.options]
        buttons = [Button(o.label, {"options": [o.label]}) for o in qs[0].options] if qs else []
        body += ["", ("Other: " if buttons else "") + reply]
        text = "\n".join([f"{who} asks:", *body])
    return Post(_cut(text), buttons)


def outcome(i: Interaction) -> str:
    """The line that shows how ``i`` ended, e.g. ``answered: allow (by ana, cli)``."""
    if i.kind == "plan" and i.decision == "allow" and isinstance(i.answers, dict):
        what = f"approved ({i.answers.get('mode', 'manual')})"
    elif i.decision is not None:
        what = i.decision + (f": {i.message}" if i.message else "")
    elif i.state == "dismissed" and i.message:
        what = i.message  # (the reason it was dismissed)
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


# --- step by step (several parts, multi-select, an elicitation's fields) ----------------------

def stepwise(i: Interaction) -> bool:
    """Whether ``i`` is answered in steps: a question with several parts or a multi-select
    one, an elicitation with fields."""
    if i.kind == "elicitation":
        return bool(schema_fields(i.input))
    qs = questions_of(i) if i.kind in ("question", "async") else []
    return len(qs) > 1 or any(q.multiSelect for q in qs)


def interaction_choices(i: Interaction, view: ToolView | None) -> list[dict[str, Any]]:
    """Every answer or step a button of ``i``'s post may give at its revision, in a fixed
    order (a button's callback data holds its index here, whichever step shows it)."""
    out: list[dict[str, Any]] = []
    if i.kind == "elicitation" and stepwise(i):
        for f in schema_fields(i.input):
            out += [{"field": f["name"], "value": v} for v in _field_values(f)]
            out += [] if f["required"] else [{"skip": f["name"]}]
        return out + [{"decision": "decline"}, {"decision": "cancel"}]
    if i.kind in ("question", "async") and stepwise(i):
        for k, q in enumerate(questions_of(i)):
            if q.multiSelect:
                out += [{"toggle": k, "label": o.label} for o in q.options] + [{"done": k}]
            else:
                out += [{"pick": k, "label": o.label} for o in q.options]
        return out
    return [b.answer for b in interaction_post(i, view).buttons]


def _field_values(f: dict[str, Any]) -> list[Any]:
    """The values a field's buttons give: a boolean's two, an enum's (up to 20)."""
    if f["type"] == "boolean":
        return [True, False]
    return list(f["enum"][:20]) if isinstance(f["enum"], list) else []


def _shown(v: Any) -> str:
    return visible(msgspec.json.encode(v).decode() if not isinstance(v, str) else v)


def _parts_post(i: Interaction, draft: dict[str, Any] | None) -> Post:
    qs = questions_of(i)
    answers: dict[str, Any] = (draft or {}).get("answers", {})
    toggled: dict[str, list[str]] = (draft or {}).get("toggled", {})
    at = next((k for k in range(len(qs)) if str(k) not in answers), len(qs) - 1)
    body: list[str] = []
    for k, q in enumerate(qs):
        many = " (choose any, then Done)" if q.multiSelect else ""
        body += [f"{k + 1}. " + x if n == 0 else x for n, x in enumerate(_lines(q.question + many, 10))]
        body += [f"  • {visible(o.label)}" + (f": {visible(o.description)}" if o.description else "") for o in q.options]
        if str(k) in answers:
            a = answers[str(k)]
            body.append("  → " + (", ".join(map(_shown, a)) if isinstance(a, list) else _shown(a)))
    q = qs[at]
    if q.multiSelect:
        on = set(toggled.get(str(at), []))
        buttons = [Button(("☑ " if o.label in on else "☐ ") + o.label, {"toggle": at, "label": o.label}) for o in q.options]
        buttons.append(Button("Done", {"done": at}))
    else:
        buttons = [Button(o.label, {"pick": at, "label": o.label}) for o in q.options]
    step = f"Question {at + 1} of {len(qs)}: " if len(qs) > 1 else ""
    body += ["", f"{step}Other: {REPLY} to answer it with text."]
    return Post(_cut("\n".join([f"{visible(i.builder)} asks:", *body])), buttons)


def _elicitation_post(i: Interaction, draft: dict[str, Any] | None) -> Post:
    shown: dict[str, Any] = i.input if isinstance(i.input, dict) else {}
    fields = schema_fields(shown)
    text = [f"{visible(i.builder)}'s tool server {visible(i.tool_name or '?')} asks:", *_lines(str(shown.get("message") or "-")),
            *([f"open: {visible(shown.get('url'))}"] if shown.get("url") else [])]
    if not fields:
        buttons = [Button("Accept", {"decision": "accept"}), Button("Decline", {"decision": "decline"}),
                   Button("Cancel", {"decision": "cancel"})]
        return Post(_cut("\n".join(text)), buttons)
    content: dict[str, Any] = (draft or {}).get("content", {})
    skipped: list[str] = (draft or {}).get("skipped", [])
    text.append("fields: " + visible(", ".join(str(f["name"]) for f in fields)))
    text += [f"  {visible(str(k))} = {_shown(v)}" for k, v in content.items()]
    text += [f"  {visible(str(k))}: skipped" for k in skipped]
    f = _field_at(fields, draft) or fields[-1]
    n = fields.index(f) + 1
    about = ", ".join(x for x in (str(f["type"] or "any"), "required" if f["required"] else "optional") if x)
    desc = f["description"] or f["title"]
    text += ["", f"Field {n} of {len(fields)}: {visible(str(f['name']))} ({visible(about)})"
             + (f": {visible(str(desc))}" if desc else ""),
             *([f"one of: {visible(', '.join(map(str, f['enum'])))}"] if isinstance(f["enum"], list) else []),
             f"{REPLY} with its value" + (", or press a button." if _field_values(f) else ".")]
    buttons = [Button(str(v).lower() if isinstance(v, bool) else str(v), {"field": f["name"], "value": v})
               for v in _field_values(f)]
    buttons += [] if f["required"] else [Button("Skip", {"skip": f["name"]})]
    buttons += [Button("Decline", {"decision": "decline"}), Button("Cancel", {"decision": "cancel"})]
    return Post(_cut("\n".join(text)), buttons)


def _field_at(fields: list[dict[str, Any]], draft: dict[str, Any] | None) -> dict[str, Any] | None:
    done = set((draft or {}).get("content", {})) | set((draft or {}).get("skipped", []))
    return next((f for f in fields if f["name"] not in done), None)


def advance(i: Interaction, draft: dict[str, Any] | None, step: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One step of ``i``'s answer: ``step`` a :data:`STEPS` button's action, or ``{"text": T}``
    (a reply: the current part's free text, the current field's value). Returns (the new
    draft, the whole answer once complete: AnswerRequest fields, else None). Raises
    BadRequest (a value that does not fit its field, Done with nothing chosen)."""
    d: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(draft or {}))  # (a copy)
    if i.kind == "elicitation":
        fields = schema_fields(i.input)
        f = _field_at(fields, d)
        if f is None:
            raise BadRequest("every field is given already")
        if "skip" in step:
            if f["required"] or step["skip"] != f["name"]:
                raise BadRequest(f"{f['name']} cannot be skipped now")
            d.setdefault("skipped", []).append(f["name"])
        else:
            name = step.get("field", f["name"])
            if name != f["name"]:
                raise BadRequest(f"the form is at {f['name']} now, not {name}")
            d.setdefault("content", {})[name] = check_field(i.input, name, step["value"] if "field" in step else step["text"])
        if _field_at(fields, d) is None:
            return d, {"decision": "accept", "content": d.get("content", {})}
        return d, None
    qs = questions_of(i)
    answers = d.setdefault("answers", {})
    toggled = d.setdefault("toggled", {})
    at = next((k for k in range(len(qs)) if str(k) not in answers), None)
    k = step.get("pick", step.get("toggle", step.get("done", at)))
    if at is None or k != at:
        raise BadRequest("that part is answered already: use the message's buttons for the next one")
    if "toggle" in step:
        on = toggled.setdefault(str(k), [])
        if step["label"] in on:
            on.remove(step["label"])
        else:
            on.append(step["label"])
        return d, None
    if "done" in step:
        chosen = [o.label for o in qs[k].options if o.label in toggled.get(str(k), [])]
        if not chosen:
            raise BadRequest("choose at least one first, or reply with text")
        answers[str(k)] = chosen
    elif "pick" in step:
        answers[str(k)] = step["label"]
    else:  # a reply's text: with the part's toggles chosen so far (a multi-select part)
        chosen = [o.label for o in qs[k].options if o.label in toggled.get(str(k), [])]
        answers[str(k)] = {"options": chosen, "text": step["text"]} if chosen else step["text"]
    if len(answers) < len(qs):
        return d, None
    return d, {"answers": {str(n + 1): answers[str(n)] for n in range(len(qs))}}
