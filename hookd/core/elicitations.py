"""Elicitations: a tool server (an MCP server) asks the human for input, a form of flat fields
(``mode`` ``form``: a JSON Schema object) or a URL to open (``url``).

One interaction of kind ``elicitation`` per request (``el_`` + 20 hex digits), opened by an
:class:`~hookd.harness.base.ElicitationAsked` in the hook's transaction (its hook may then be
held for a remote answer: the id is returned), resolved by an
:class:`~hookd.harness.base.ElicitationResolved` (the desk answered) or by a remote answer
(``hookd answer ID --option accept --field NAME=VALUE``, :func:`normalize_elicitation`: the
content is validated against the requested schema with ``jsonschema`` before any hook sends
it). Events: ``elicitation_pending``, ``elicitation_resolved``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hookd.core.outcomes import supersede
from hookd.core.state import Waiters
from hookd.harness.base import ElicitationAsked, ElicitationResolved, Payload, elicitation_key, text
from hookd.models import AnswerRequest, BadRequest, Interaction
from hookd.store import Tx

#: What a human may answer an elicitation with (the MCP spec's three actions).
ACTIONS = ("accept", "decline", "cancel")
_USAGE = ("an elicitation takes --option accept [--field NAME=VALUE ...], --option decline"
          " or --option cancel")


def _elicitation_id(session_id: str | None, key: str, hook_event_id: int | None) -> str:
    """``el_`` + 20 hex digits of the session, the request's key and its hook event's id."""
    h = hashlib.sha256(f"{session_id}|{key}|{hook_event_id}".encode()).hexdigest()[:20]
    return f"el_{h}"


def elicitation_asked(tx: Tx, builder: str, p: Payload, ob: ElicitationAsked, at: float) -> str | None:
    """Open an ``elicitation`` interaction for ``ob`` (event ``elicitation_pending``); returns
    its id (its hook may be held for a remote answer)."""
    sid = p.session_id
    key = elicitation_key(ob.server, ob.elicitation_id)
    iid = _elicitation_id(sid, key, tx.hook_event_id)
    if tx.interactions.interaction(iid) is not None:
        return iid  # (the same hook stored twice: a retried client)
    shown = {"server": ob.server, "message": ob.message, "mode": ob.mode, "url": ob.url,
             "elicitation_id": ob.elicitation_id, "requested_schema": ob.requested_schema}
    i = Interaction(
        id=iid, kind="elicitation", builder=builder, session_id=sid, agent_id=p.agent_id,
        tool_name=ob.server, tool_use_id=None, state="pending", questions=None, answers=None,
        selections=None, surface=None, warning=None, error=None, created_at=at, resolved_at=None,
        revision=1, input=shown, input_hash=key, agent_type=text(p.agent_type) if p.agent_id else None,
    )
    tx.interactions.insert_interaction(i, permission_seen_at=at)
    data: dict[str, Any] = {"id": iid, "kind": "elicitation", **shown}
    if p.agent_id:
        data["agent_id"], data["agent_type"] = p.agent_id, i.agent_type
    tx.append_event("elicitation_pending", builder, sid, at, data)
    return iid


def elicitation_resolved(tx: Tx, waiters: Waiters, builder: str, p: Payload, ob: ElicitationResolved,
                         at: float) -> None:
    """The desk answered the session's newest open elicitation of that server (and id): it
    ends ``answered`` (accept, decline: the decision) or ``dismissed`` (cancel); a held hook
    for it is let go. A remote answer accepted but never read by a hook (the hold ended as it
    came) is superseded by the desk's (its text kept as an inbox message), unless the desk's is
    the same answer. Nothing open (a hook answered it, or it is unknown): nothing happens."""
    i = tx.interactions.interaction_by_hash(builder=builder, session_id=p.session_id, tool_name=ob.server,
                               input_hash=elicitation_key(ob.server, ob.elicitation_id),
                               states=("pending", "answered"), since=0.0)
    if i is None or i.kind != "elicitation":
        return
    state = "dismissed" if ob.action == "cancel" else "answered"
    content = ob.content if ob.action == "accept" else None
    if i.state == "answered":
        if i.received_at is not None and i.delivered_at is None and not (
                ob.action == i.decision and content == i.answers):
            # (the same action and content is the remote answer itself, reported before its
            # hook's read is recorded: a busy daemon can take this hook first)
            supersede(tx, i, at, state=state, answers=content, selections=None, decision=ob.action, error=None,
                      reason=f"the desk answered the elicitation ({ob.action}) after the hold ended")
        return
    if not tx.interactions.resolve_interaction(i.id, expected_state="pending", state=state, answers=content, selections=None,
                                  surface="terminal", warning=None, error=None, at=at, decision=ob.action):
        return
    waiters.release_after(tx, i.id)
    tx.append_event("elicitation_resolved", builder, p.session_id, at, {
        "id": i.id, "kind": "elicitation", "server": ob.server, "outcome": state, "decision": ob.action,
        "answers": content, "surface": "terminal",
    })


def normalize_elicitation(i: Interaction, req: AnswerRequest) -> tuple[dict[str, Any] | None, str]:
    """(content, action) of ``req`` for elicitation ``i``: ``decision`` (or one option) among
    :data:`ACTIONS`; with accept, ``content`` (field -> value) validated against the requested
    schema (JSON Schema, ``jsonschema``'s validator for the schema's draft); decline and
    cancel take no content. Raises BadRequest saying what is wrong."""
    if req.answers is not None or req.text is not None or req.question is not None or len(req.options) > 1:
        raise BadRequest(_USAGE)
    action = req.decision or (req.options[0] if req.options else None)
    if action not in ACTIONS:
        raise BadRequest(_USAGE)
    if action != "accept":
        if req.content:
            raise BadRequest(f"--option {action} takes no fields (only accept sends content)")
        return None, action
    content = dict(req.content or {})
    schema = i.input.get("requested_schema") if isinstance(i.input, dict) else None
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict) and (unknown := [k for k in content if k not in props]):
            # a form's content is its requested fields only (MCP: the client sends no other
            # field, and the server drops one): a misspelt field would be lost unsaid
            raise BadRequest(f"the form has no field {', '.join(map(repr, unknown))}; its fields: "
                             + (", ".join(props) or "none"))
        content = _coerce(content, schema)
        _validate(content, schema)
    return content, action


def _coerce(content: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A value given as text (``hookd answer --field``) read as its field's type where the
    schema says ``integer``, ``number`` or ``boolean`` (left as text when it does not read:
    the validation then says why)."""
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    out = {}
    for k, v in content.items():
        prop = props.get(k)
        t = prop.get("type") if isinstance(prop, dict) else None
        if isinstance(v, str):
            try:
                if t == "integer":
                    v = int(v)
                elif t == "number":
                    v = float(v)
                elif t == "boolean" and v.lower() in ("true", "false"):
                    v = v.lower() == "true"
            except ValueError:
                pass
        out[k] = v
    return out


def _validate(content: dict[str, Any], schema: dict[str, Any]) -> None:
    import jsonschema  # (only an answer to an elicitation needs it)

    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise BadRequest(f"the server's requested schema is not valid JSON Schema ({e.message});"
                         " answer it at the desk") from None
    errors = sorted(cls(schema).iter_errors(content), key=lambda e: list(e.path))
    if errors:
        parts = [(f"{'.'.join(str(x) for x in e.path)}: " if e.path else "") + _as_json(e) for e in errors[:5]]
        raise BadRequest("the content does not fit the requested schema: " + "; ".join(parts))


def _as_json(e: Any) -> str:
    """A jsonschema error's message with the value it begins with as JSON spells it (``true``,
    ``null``), not Python (``True``, ``None``)."""
    head = repr(e.instance)
    if e.message.startswith(head):
        try:
            return json.dumps(e.instance) + e.message[len(head):]
        except (TypeError, ValueError):
            pass
    return e.message


def check_field(shown: Any, name: str, value: Any) -> Any:
    """``value`` for field ``name`` of an elicitation whose input is ``shown``, one field at a
    time (a chat's form, :mod:`hookd.watchers.chat`): text read as the field's type as
    ``hookd answer --field`` reads it, then checked against that field's schema with the
    validator the whole answer meets (:func:`normalize_elicitation`). Returns the value as
    read. Raises BadRequest saying what is wrong."""
    schema = shown.get("requested_schema") if isinstance(shown, dict) else None
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(schema, dict) or not isinstance(props, dict) or name not in props:
        raise BadRequest(f"the server asks for no field {name!r}")
    one: dict[str, Any] = {"type": "object", "properties": {name: props[name]}, "required": [name]}
    if "$schema" in schema:
        one["$schema"] = schema["$schema"]
    content = _coerce({name: value}, one)
    _validate(content, one)
    return content[name]


def schema_fields(shown: Any) -> list[dict[str, Any]]:
    """The requested schema's fields of an elicitation's ``input`` (``shown``), for showing:
    ``[{"name", "type", "required", "title", "description", "enum"}]`` in the schema's order
    (empty for a url elicitation)."""
    schema = shown.get("requested_schema") if isinstance(shown, dict) else None
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    out = []
    for name, prop in schema["properties"].items():
        prop = prop if isinstance(prop, dict) else {}
        out.append({"name": name, "type": prop.get("type"), "required": name in required,
                    "title": prop.get("title"), "description": prop.get("description"),
                    "enum": prop.get("enum")})
    return out
