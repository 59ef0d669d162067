"""The HTTP layer's one error shape and its raw ASGI replies.

Every error hookd's HTTP API answers is ``{"error": {"code", "message"}}``
(:class:`hookd.models.ErrorResponse`; ``stored`` too for a hook refused after its raw bytes
were stored) with a 4xx/5xx status; the hook path, the fast path and the Starlette app all
build it here.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.responses import Response

from hookd.models import ErrorBody, ErrorResponse

#: The JSON encoder of every reply (msgspec: structs, dicts, lists).
enc = msgspec.json.Encoder()


def error_body(code: str, message: str, stored: int | None = None) -> bytes:
    """The one error shape as JSON bytes: ``{"error": {"code", "message"[, "stored"]}}``."""
    return enc.encode(ErrorResponse(ErrorBody(code, message, stored)))


def json_response(obj: Any, status: int = 200) -> Response:
    return Response(enc.encode(obj), status_code=status, media_type="application/json")


def error_response(code: str, message: str, status: int) -> Response:
    return Response(error_body(code, message), status_code=status, media_type="application/json")


async def send_response(send: Any, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    """Send one response: ``body`` as JSON, or with ``headers`` (which name its content-type)."""
    hs = [(k.encode(), v.encode()) for k, v in headers.items()] if headers else [(b"content-type", b"application/json")]
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [*hs, (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})


def with_header(send: Any, header: tuple[bytes, bytes]) -> Any:
    """``send`` that adds ``header`` to the response's head."""
    async def send_with(message: dict) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message["headers"], header]
        await send(message)
    return send_with
