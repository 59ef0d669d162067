"""claw-http: a loopback JSON API for in-process agent loops (iterion's ``claw`` backend style).

A Go, Rust or Python loop with no settings file and no shell hooks calls hookd at its own
boundaries. Same listeners and authentication as the REST API (the Unix socket, trusted by
its file mode; ``127.0.0.1:<port>`` with ``Authorization: Bearer <HOOKD_HOME/token>``), same
error shape ``{"error": {"code", "message"}}``. Routes (all ``POST``, JSON bodies; ``ack``:
optional list of message ids the loop consumed since its last call, applied first):

- ``/v1/claw/{builder}/sessions`` ``{"session_id"?, "cwd"?, "ack"?}`` -> 201 ``{"session_id",
  "builder", ...}``: register (or re-register) a session; ``session_id`` defaults to
  ``clawhttp-<hex>``. A re-register makes every message delivered to the session and never
  acked come back at its next drain.
- ``/v1/claw/{builder}/sessions/{session_id}/pre_tool`` ``{"tool_name", "tool_input"?,
  "tool_use_id"?, "ack"?}``; ``.../post_tool`` (plus ``"tool_output"?``);
  ``.../post_tool_failure`` (plus ``"error"?``): a question tool (``AskUserQuestion``,
  ``ask_user``) opens a ``question`` interaction at pre_tool (``"question"`` in the reply) and
  is resolved by its post_tool output (``{"question", "answer"}`` or ``{"answers": {...}}``);
- ``.../ask`` ``{"question", "options"?, "expires_in_s"?, "author"?}`` -> 201
  ``{"interaction", "id"}``: ask the humans without blocking; the answer comes back through a
  drain as ``[Answer to question <id>] Q: ... A: ...``;
- ``.../drain`` ``{"boundary": "between_tools" | "before_final", "ack"?}`` -> ``{"ids",
  "text", "waiting", "redelivered", "continue", "acked"}``: the queued messages, framed as one
  user turn (``text``, empty when none). ``before_final`` is the Stop analogue: ``continue``
  true means the loop must not finish but hand ``text`` to the model (at most 3 times in a
  row); a blocking question still open is then resolved ``dismissed``;
- ``.../ack`` ``{"ids"}`` -> ``{"acked"}``: the messages reached the model (consumed; shown as
  ``adopted`` via ``ack`` in ``hookd inbox``);
- ``.../stop`` ``{"reason"?, "ack"?}`` -> ``{"acked", "ended": true}``: the session ended
  (open blocking questions ``orphaned``).

Message states: ``queued`` -> ``delivered`` (a drain returned it) -> ``adopted`` (acked).
A delivered message never acked is returned again by the session's next drain after a
re-register or a daemon restart, and by any drain ``HOOKD_REDELIVER_AFTER_S`` seconds after its delivery.
The OpenAPI 3.1 document of these routes is served at ``GET /v1/claw/openapi.json`` (a copy
is ``docs/claw-http.openapi.json``).
"""

from __future__ import annotations

import secrets
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hookd.config import check_builder_id
from hookd.models import BadRequest, Interaction
from hookd.untrusted import decode_json

PREFIX = "/v1/claw/{builder}/sessions"
_enc = msgspec.json.Encoder()


class RegisterRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/claw/{builder}/sessions``. session_id: the loop's run id (1-200
    printable ASCII, no spaces; default ``clawhttp-<hex>``); cwd: the loop's working
    directory (recorded with the session)."""

    session_id: str | None = None
    cwd: str | None = None
    ack: list[str] = []


class RegisterResponse(msgspec.Struct):
    session_id: str
    builder: str
    acked: list[str]


class ToolRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``pre_tool`` / ``post_tool`` / ``post_tool_failure``: the call's tool name and
    input (any JSON), its id if the loop has one; ``tool_output`` (post_tool) / ``error``
    (post_tool_failure)."""

    tool_name: str
    tool_input: Any = None
    tool_use_id: str | None = None
    tool_output: Any = None
    error: Any = None
    ack: list[str] = []


class ToolResponse(msgspec.Struct):
    """acked: message ids this call marked consumed; question: the interaction a question
    tool opened (pre_tool), if any."""

    acked: list[str]
    question: str | None = None


class AskRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``.../ask``: the question, up to 12 option labels, seconds until it expires
    unanswered (None: never), who asks."""

    question: str
    options: list[str] | None = None
    expires_in_s: float | None = None
    author: str | None = None


class AskResponse(msgspec.Struct):
    id: str
    interaction: Interaction


class DrainRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``.../drain``: ``between_tools`` after a tool round, ``before_final`` before
    accepting an answer with no tool call (the Stop analogue)."""

    boundary: str
    ack: list[str] = []


class DrainResponse(msgspec.Struct):
    """ids: the messages delivered now (ack them at the next boundary); text: them framed as
    one user turn for the model ("" when none); waiting: how many more wait for the next
    drain (size cap); redelivered: ids delivered before and never acked; continue: a
    before_final drain delivered something (keep the loop going)."""

    boundary: str
    ids: list[str]
    text: str
    waiting: int
    redelivered: list[str]
    acked: list[str]
    continue_: bool = msgspec.field(name="continue")


class AckRequest(msgspec.Struct, forbid_unknown_fields=True):
    ids: list[str]


class AckResponse(msgspec.Struct):
    acked: list[str]


class StopRequest(msgspec.Struct, forbid_unknown_fields=True):
    reason: str | None = None
    ack: list[str] = []


class StopResponse(msgspec.Struct):
    acked: list[str]
    ended: bool = True


class ErrorDetail(msgspec.Struct):
    code: str
    message: str


class Error(msgspec.Struct):
    error: ErrorDetail


def _decode(raw: bytes, type_: Any, what: str) -> Any:
    try:
        return decode_json(raw or b"{}", type=type_)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as e:
        raise BadRequest(f"{what} body: {e}") from None


def _json(obj: Any, status: int = 200) -> Response:
    return Response(_enc.encode(obj), status_code=status, media_type="application/json")


#: (route suffix, request type, response type, status, summary) for the OpenAPI document.
OPERATIONS: list[tuple[str, Any, Any, int, str]] = [
    ("", RegisterRequest, RegisterResponse, 201, "Register (or re-register) a loop session"),
    ("/{session_id}/pre_tool", ToolRequest, ToolResponse, 200, "Before a tool call"),
    ("/{session_id}/post_tool", ToolRequest, ToolResponse, 200, "After a tool call"),
    ("/{session_id}/post_tool_failure", ToolRequest, ToolResponse, 200, "After a failed tool call"),
    ("/{session_id}/ask", AskRequest, AskResponse, 201, "Ask the humans without blocking"),
    ("/{session_id}/drain", DrainRequest, DrainResponse, 200, "Take queued messages at a boundary"),
    ("/{session_id}/ack", AckRequest, AckResponse, 200, "Mark drained messages consumed"),
    ("/{session_id}/stop", StopRequest, StopResponse, 200, "End the session"),
]


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the claw-http routes (schemas from the msgspec structs)."""
    types = sorted({t for op in OPERATIONS for t in op[1:3]} | {Error}, key=lambda t: t.__name__)
    schemas, components = msgspec.json.schema_components(types, ref_template="#/components/schemas/{name}")
    paths: dict[str, Any] = {}
    err = {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for suffix, req, resp, status, summary in OPERATIONS:
        params = [{"name": "builder", "in": "path", "required": True, "schema": {"type": "string"}}]
        if "{session_id}" in suffix:
            params.append({"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}})
        paths[PREFIX + suffix] = {"post": {
            "summary": summary,
            "operationId": "claw_" + (suffix.rsplit("/", 1)[-1] or "register"),
            "parameters": params,
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{req.__name__}"}}}},
            "responses": {str(status): {"description": "ok", "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{resp.__name__}"}}}},
                "400": err, "401": err, "404": err},
        }}
    return {
        "openapi": "3.1.0",
        "info": {"title": "hookd claw-http", "version": "1",
                 "description": "Boundary calls of in-process agent loops (see hookd/http/claw.py). "
                                "Unix socket: no token; 127.0.0.1 TCP: Authorization: Bearer <HOOKD_HOME/token>."},
        "components": {"schemas": components,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": paths,
    }


def routes(core: Any) -> list[Route]:
    """The claw-http routes over ``core`` (a :class:`hookd.core.Hookd`), for
    :func:`hookd.http.app.build_app`."""

    def ids(request: Request) -> tuple[str, str]:
        return check_builder_id(request.path_params["builder"]), request.path_params["session_id"]

    async def register(request: Request) -> Response:
        builder = check_builder_id(request.path_params["builder"])
        body = _decode(await request.body(), RegisterRequest, "register")
        sid = body.session_id or f"clawhttp-{secrets.token_hex(8)}"
        out = await core.claw_call(builder, sid, {"hook_event_name": "SessionStart", "source": "register",
                                                  "cwd": body.cwd}, ack=body.ack)
        return _json(RegisterResponse(session_id=sid, builder=builder, acked=out["acked"]), 201)

    def tool(event: str) -> Any:
        async def handler(request: Request) -> Response:
            builder, sid = ids(request)
            body = _decode(await request.body(), ToolRequest, event)
            payload: dict[str, Any] = {"hook_event_name": event, "tool_name": body.tool_name,
                                       "tool_input": body.tool_input, "tool_use_id": body.tool_use_id}
            if event == "PostToolUse":
                payload["tool_output"] = body.tool_output
            elif event == "PostToolUseFailure":
                payload["error"] = body.error
            out = await core.claw_call(builder, sid, payload, ack=body.ack)
            return _json(ToolResponse(acked=out["acked"], question=out.get("question")))
        return handler

    async def ask(request: Request) -> Response:
        builder, sid = ids(request)
        body = _decode(await request.body(), AskRequest, "ask")
        i = await core.claw_ask(builder, sid, body.question, body.options, body.expires_in_s, body.author)
        return _json(AskResponse(id=i.id, interaction=i), 201)

    async def drain(request: Request) -> Response:
        builder, sid = ids(request)
        body = _decode(await request.body(), DrainRequest, "drain")
        if body.boundary not in ("between_tools", "before_final"):
            raise BadRequest("boundary must be between_tools or before_final")
        out = await core.claw_call(builder, sid, {"hook_event_name": "Drain", "boundary": body.boundary},
                                   ack=body.ack)
        return _json(DrainResponse(boundary=body.boundary, ids=out["ids"], text=out["text"], waiting=out["waiting"],
                                   redelivered=out["redelivered"], acked=out["acked"],
                                   continue_=body.boundary == "before_final" and bool(out["ids"])))

    async def ack(request: Request) -> Response:
        builder, sid = ids(request)
        body = _decode(await request.body(), AckRequest, "ack")
        return _json(AckResponse(acked=await core.claw_ack(builder, sid, body.ids)))

    async def stop(request: Request) -> Response:
        builder, sid = ids(request)
        body = _decode(await request.body(), StopRequest, "stop")
        out = await core.claw_call(builder, sid, {"hook_event_name": "SessionEnd", "reason": body.reason},
                                   ack=body.ack)
        return _json(StopResponse(acked=out["acked"]))

    async def schema(request: Request) -> Response:
        return _json(openapi())

    return [
        Route("/v1/claw/openapi.json", schema),
        Route(PREFIX, register, methods=["POST"]),
        Route(PREFIX + "/{session_id}/pre_tool", tool("PreToolUse"), methods=["POST"]),
        Route(PREFIX + "/{session_id}/post_tool", tool("PostToolUse"), methods=["POST"]),
        Route(PREFIX + "/{session_id}/post_tool_failure", tool("PostToolUseFailure"), methods=["POST"]),
        Route(PREFIX + "/{session_id}/ask", ask, methods=["POST"]),
        Route(PREFIX + "/{session_id}/drain", drain, methods=["POST"]),
        Route(PREFIX + "/{session_id}/ack", ack, methods=["POST"]),
        Route(PREFIX + "/{session_id}/stop", stop, methods=["POST"]),
    ]
