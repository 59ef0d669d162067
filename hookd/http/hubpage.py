"""The operator page over the hub (``hookd --hub URL hub serve``, docs/fleet.md "The page over
the hub"): the same page (``hookd/static/``, :class:`hookd.http.web.WebPage`'s pages, sign-in
and session cookie) with its API read from the hub for every host
(:class:`hookd.hub.page.HubSource`) instead of one daemon's store.

Routes (the page's own subset of the daemon's API, same shapes where the hub knows the field;
names qualified ``HOST/ID``, ``HOST/BUILDER``):

- ``GET /v1/questions?state=pending|resolved&limit=N``, ``GET /v1/interactions/{HOST/ID}``;
  ``POST /v1/interactions/{HOST/ID}/answer`` (what the page posts to a daemon) -> 200
  ``{"command", "interaction", "warning", "duplicate"}``: the answer queued on the hub and
  applied by its host within the source's ``wait_s`` (``warning`` says it is still queued);
  409 ``conflict`` with the host's reason when the host refused it.
- ``GET /v1/lanes``, ``GET /v1/status`` (``hosts``: each host's freshness),
  ``GET /v1/messages?limit=N``, ``POST /v1/builders/{HOST/B}/messages`` -> ``{"message"}``.
- ``GET /v1/events/sse``: ``event: hello`` ``{"seq": 0, "after": 0, "reset": true}`` (the hub
  has no one seq: every connect starts over and the page reads everything again), then each
  shipped event (``id``: this stream's own count) and ``hub_changed`` items (a heartbeat, a
  new host, a command's outcome: :meth:`hookd.hub.page.HubSource.stream`).
- Not over the hub (400 ``bad_request`` saying so): dismissing an interaction, taking back a
  message (docs/fleet.md "Not yet").

Access: :meth:`hookd.http.web.WebAuth.admit` for every request (loopback ``Host``, a session
cookie, the CSRF header on writes); the key is this process's own token (a new one per start:
sessions end with the process). :func:`build_hub_app` returns the app and the first sign-in
code.
"""

from __future__ import annotations

import secrets
from typing import Any, AsyncIterator, Callable

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from hookd.errors import BadRequest, HookdError, HubUnavailable
from hookd.http.responses import error_body, error_response, json_response, send_response
from hookd.http.views import with_tool_view
from hookd.http.web import STATIC_DIR, WebPage
from hookd.hub.page import HubSource
from hookd.untrusted import decode_json

_enc = msgspec.json.Encoder()


async def _views(items: list[dict[str, Any]]) -> list[Any]:
    """Each permission prompt with its ``tool_view`` (the harness unknown on the hub: the
    generic view), an elicitation with ``fields``, a plan with ``plan``."""
    cache: dict[str, str | None] = {}
    out = []
    for i in items:
        sid = i.get("session_id")
        if isinstance(sid, str):
            cache[sid] = None
        out.append(await with_tool_view(None, i, cache))  # type: ignore[arg-type]
    return out


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = decode_json(await request.body())
    except (msgspec.DecodeError, RecursionError) as e:
        raise BadRequest(f"body: {e}") from None
    if not isinstance(body, dict):
        raise BadRequest("body: a JSON object")
    return body


class HubPage:
    """The page's routes over ``source``. should_exit: tells streams the server is stopping."""

    def __init__(self, source: HubSource, user: str, should_exit: Callable[[], bool] | None = None):
        self.source = source
        self.web = WebPage(None, secrets.token_urlsafe(32), should_exit)
        self.web.user = user
        self.should_exit = should_exit or (lambda: False)

    def routes(self) -> list[Any]:
        w = self.web
        return [
            Route("/", w.index), Route("/signin", w.signin),
            Route("/web/session", w.session, methods=["POST"]), Route("/web/signout", w.signout, methods=["POST"]),
            Route("/v1/web/session", w.whoami),
            Route("/v1/questions", self.questions), Route("/v1/lanes", self.lanes), Route("/v1/status", self.status),
            Route("/v1/messages", self.messages),
            Route("/v1/interactions/{iid:path}/answer", self.answer, methods=["POST"]),
            Route("/v1/interactions/{iid:path}/dismiss", self.not_here, methods=["POST"]),
            Route("/v1/messages/{mid:path}/cancel", self.not_here, methods=["POST"]),
            Route("/v1/interactions/{iid:path}", self.interaction),
            Route("/v1/builders/{builder:path}/messages", self.send, methods=["POST"]),
            Route("/v1/events/sse", self.sse),
            Mount("/static", app=StaticFiles(directory=STATIC_DIR)),
        ]

    async def questions(self, request: Request) -> Response:
        try:
            limit = int(request.query_params.get("limit", "100"))
        except ValueError:
            raise BadRequest("limit must be an integer") from None
        items = await self.source.questions(request.query_params.get("state", "pending"), limit)
        return json_response(await _views(items))

    async def interaction(self, request: Request) -> Response:
        return json_response((await _views([await self.source.interaction(request.path_params["iid"])]))[0])

    async def answer(self, request: Request) -> Response:
        out = await self.source.answer(request.path_params["iid"], await _body(request))
        out["interaction"] = (await _views([out["interaction"]]))[0]
        return json_response(out)

    async def send(self, request: Request) -> Response:
        return json_response(await self.source.send(request.path_params["builder"], await _body(request)))

    async def lanes(self, request: Request) -> Response:
        return json_response(await self.source.lanes())

    async def status(self, request: Request) -> Response:
        return json_response(await self.source.status())

    async def messages(self, request: Request) -> Response:
        try:
            limit = int(request.query_params.get("limit", "200"))
        except ValueError:
            raise BadRequest("limit must be an integer") from None
        return json_response(await self.source.messages(limit))

    async def not_here(self, request: Request) -> Response:
        raise BadRequest("not from the hub page yet: dismissing an interaction and taking back a message are done"
                         " on the host (docs/fleet.md, Not yet)")

    async def sse(self, request: Request) -> Response:
        source, should_exit = self.source, self.should_exit

        async def stream() -> AsyncIterator[bytes]:
            yield b"retry: 1000\nevent: hello\ndata: %s\n\n" % _enc.encode({"seq": 0, "after": 0, "reset": True})
            n = 0
            try:
                async for item in source.stream(should_exit):
                    n += 1
                    yield b"id: %d\ndata: %s\n\n" % (n, _enc.encode({"seq": n, **item}))
            except HubUnavailable:
                return  # the page reconnects (EventSource's retry) and reads everything again

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})


async def _on_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HookdError):
        return error_response(exc.code, exc.message, exc.status)
    if isinstance(exc, HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(code, str(exc.detail), exc.status_code)
    return error_response("internal", f"internal error: {type(exc).__name__}", 500)


class HubASGI:
    """Every request admitted by the page's :class:`hookd.http.web.WebAuth` (no bearer token:
    this server holds no hook route), then the Starlette app."""

    def __init__(self, page: HubPage, app: Any):
        self.page = page
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refused = self.page.web.auth.admit(scope)
            if refused is not None:
                html = getattr(refused, "html", None)
                await send_response(send, refused.status, html or error_body(refused.code, refused.message),
                                    getattr(refused, "headers", None) if html else None)
                return
        await self.app(scope, receive, send)


def build_hub_app(source: HubSource, user: str, should_exit: Callable[[], bool] | None = None) -> tuple[HubASGI, str]:
    """The hub page's ASGI app over ``source``, answering as ``user`` (the operator's role),
    and a first one-time sign-in code (``/signin#code=CODE``; more from
    ``app.page.web.auth.new_code()``)."""
    page = HubPage(source, user, should_exit)
    app = Starlette(routes=page.routes(),
                    exception_handlers={Exception: _on_error, HTTPException: _on_error, HookdError: _on_error})
    return HubASGI(page, app), page.web.auth.new_code()


def serve_hub_page(source: HubSource, user: str, port: int, ready: Callable[[str], None]) -> None:
    """Run the hub page on ``127.0.0.1:port`` (0: any free port) until SIGINT/SIGTERM;
    ``ready(link)`` is called with the sign-in link once the port listens (a browser opened on
    it at once is queued, not refused). Raises OSError when the port cannot be bound; what
    ``ready`` raises propagates, the port closed."""
    import socket

    import uvicorn

    server: uvicorn.Server | None = None
    app, code = build_hub_app(source, user, should_exit=lambda: server is not None and server.should_exit)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
        ready(f"http://127.0.0.1:{sock.getsockname()[1]}/signin#code={code}")
    except BaseException:
        sock.close()
        raise
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                           timeout_graceful_shutdown=3, server_header=False, proxy_headers=False))
    server.run(sockets=[sock])
