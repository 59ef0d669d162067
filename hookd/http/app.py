"""hookd's HTTP API: the outer ASGI app (access, the hook routes) around the Starlette app (the
other routes, the one error shape), built by :func:`build_app`; ``hookd serve`` runs it
(:mod:`hookd.daemon`).

Listeners: a Unix socket (0600 in a 0700 directory; trusted by file permissions) and a
loopback TCP port, where every request needs ``Authorization: Bearer <token>`` (token in
``HOOKD_HOME/token``, 0600), or, on the harness routes only (:data:`HARNESS_PREFIXES`), the
hook token made at each start and written to ``run/endpoint`` (:class:`hookd.config.Endpoint`);
hook replies over TCP carry that endpoint's proof (header ``X-Hookd-Proof``). One serve per
home (``run/serve.lock``).

Routes (all errors: ``{"error": {"code", "message"}}`` with a 4xx/5xx status,
:mod:`hookd.http.responses`):

- ``POST /v1/hooks/{harness}/{builder}[/hold]`` (:mod:`hookd.http.hooks`): one hook payload,
  optionally streamed with chunked encoding; answered as soon as one complete JSON object has
  arrived (stdin held open is not waited for). Response body = exact hook stdout (may be empty).
  Header ``X-Hookd-Delivery``: the client's unique id for this invocation;
  ``X-Hookd-Deadline-Ms``: the client's own deadline (ms); ``X-Hookd-Agent-Pid``: the agent's
  process id (``CLAUDE_PID``), for lane liveness. A PermissionRequest hook posted to
  ``/hold`` (the generated PermissionRequest command) whose deadline is at least
  :data:`hookd.http.hooks.HOLD_MIN_MS` is held (up to its deadline less
  :data:`hookd.http.hooks.HOLD_MARGIN_S`) for a
  remote answer: the response is then the decision, or empty when the desk answered first or
  the window ended; when the daemon stops, empty with ``X-Hookd-Hold: <interaction id>``: the
  client posts the same delivery again, with that header, to the next daemon, which holds it
  again (:meth:`hookd.core.holds.Holds.reattach`). A hook refused after its raw bytes were
  stored (4xx) names them: ``X-Hookd-Stored: <hook event id>``, and ``stored`` in the error.
- ``POST /v1/interactions/{id}/answer`` (:class:`hookd.models.AnswerRequest`; 200 with the
  receipt, 409 when refused: already resolved or expired (the answer is kept as an inbox
  message, named in the error), stale revision, other input, response_id reused);
  ``POST /v1/interactions/await`` (``{"ids", "timeout_s", "collect"?}``);
  ``POST /v1/builders/{builder}/asks`` (``{"question", "options"?, "session_id"?,
  "expires_in_s"?, "author"?}``; 201); ``POST /v1/builders/{builder}/preanswers``
  (``{"question", "answer", "actor"?}``; 201); ``POST /v1/builders/{builder}/transcripts``
  (``{"paths", "session_id"?}``: follow these transcripts too; 201 with rows read, and ``refused``: why a
  file is not read);
- ``POST /v1/builders/{builder}/messages`` (``{"text", "id"?, "session_id"?, "agent_id"?,
  "author"?, "force"?}``; 201 created, 200 for a repeated key with the same content, 409
  otherwise, and for a builder that was unspawned unless ``force``; 404 for a session or
  subagent hookd never saw for the builder; ``note``: :func:`hookd.http.send_notes.send_note`),
  ``GET /v1/messages?builder=``; ``POST /v1/builders/{builder}/unspawned`` (``hookd unspawn``
  tells a running daemon: ``builder_unspawned``); ``POST /v1/messages/{id}/cancel`` (``{"actor"?, "surface"?}``:
  200 ``{message, cancelled}``, 409 once delivered);
- ``POST /v1/notify/test`` (``{"channel"?}``: a test notification on the daemon's channels),
- ``GET /v1/lanes`` (every builder's lane, those waiting on a human first; ``unspawned`` for a
  builder `hookd unspawn` removed),
  ``GET /v1/status``, ``GET /v1/questions?state=pending|resolved|all``,
  ``GET /v1/transcripts`` (every tailed file: path, builder, session, offset, rows read),
  ``GET /v1/interactions/{id}``, ``GET /v1/events?after=SEQ&limit=N[&follow=1]``
  (JSON lines; ``follow`` keeps the stream open): :mod:`hookd.http.routes`;
- the agents hookd starts (``GET /v1/runs``, ``GET /v1/builders/{builder}/run``, ``POST
  /v1/builders/{builder}/started|stop``): :mod:`hookd.http.runs`;
- claw-http's routes (``/v1/claw/``): :mod:`hookd.http.claw`; the operator page's:
  :mod:`hookd.http.web`.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from hookd.config import Endpoint
from hookd.http.claw import routes as claw_routes
from hookd.http.hooks import HookPath
from hookd.http.responses import enc, error_body, error_response, send_response, with_header
from hookd.http.routes import RestApi
from hookd.http.runs import routes as run_routes
from hookd.http.web import WebAuth, WebPage
from hookd.models import BadRequest, HookdError, Unauthorized
from hookd.core import Hookd
from hookd.settings import Settings

log = logging.getLogger("hookd")

#: Paths the endpoint's hook token admits over TCP (the bash hook client, claw-http loops).
HARNESS_PREFIXES = ("/v1/hooks/", "/v1/claw/")
#: The path the home's hook-token admits over TCP (Claude Code's http hooks).
HOOK_PREFIX = "/v1/hooks/"


class HookdASGI:
    """The outer ASGI app.

    Access: requests that came over TCP need the bearer token; the Unix socket
    (``scope["server"]`` is a path or None) is protected by its file mode instead.
    Hot path: ``POST /v1/hooks/{harness}/{builder}`` is served here directly, by ``hooks``
    (:class:`hookd.http.hooks.HookPath`; no routing or middleware layers: it runs on every hook
    of every agent), or, over the Unix socket, by the fast path before any ASGI
    (:mod:`hookd.http.fastpath`, with the same ``hooks``); everything else goes to the
    Starlette app.
    """

    def __init__(self, app: Any, hooks: HookPath, token: str, web: WebAuth | None = None,
                 endpoint: Endpoint | None = None, http_hook_token: str | None = None):
        self.app = app
        self.hooks = hooks
        self._expected = f"Bearer {token}".encode()
        # the endpoint's hook token admits the harness routes only; its proof goes back on
        # every hook reply over TCP (hookd.config.Endpoint)
        self._hook_expected = f"Bearer {endpoint.hook_token}".encode() if endpoint else None
        # the home's hook-token (Claude Code's http hooks: hookd spawn --hook-transport http)
        # admits the hook route only
        self._http_hook_expected = f"Bearer {http_hook_token}".encode() if http_hook_token else None
        self._proof = (b"x-hookd-proof", endpoint.proof.encode()) if endpoint else None
        self.web = web  # the operator page's session cookie also admits (hookd/http/web.py)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        server = scope.get("server")
        over_tcp = isinstance(server, (tuple, list)) and isinstance(server[1], int)
        if over_tcp:
            got = b""
            for k, v in scope["headers"]:
                if k == b"authorization":
                    got = v
                    break
            if not hmac.compare_digest(got, self._expected) and not (
                self._hook_expected is not None
                and scope["path"].startswith(HARNESS_PREFIXES)
                and hmac.compare_digest(got, self._hook_expected)
            ) and not (
                self._http_hook_expected is not None
                and scope["path"].startswith(HOOK_PREFIX)
                and hmac.compare_digest(got, self._http_hook_expected)
            ):
                refused = self.web.admit(scope) if self.web else Unauthorized("missing or wrong bearer token")
                if refused is not None:
                    html = getattr(refused, "html", None)  # a browser's page request (hookd.http.web.SignInNeeded)
                    await send_response(send, refused.status, html or error_body(refused.code, refused.message),
                                        getattr(refused, "headers", None) if html else None)
                    return
        path: str = scope["path"]
        if path.startswith("/v1/hooks/") and scope["method"] == "POST":
            if over_tcp and self._proof is not None:
                send = with_header(send, self._proof)
            await self.hooks.asgi(scope, receive, send)
            return
        if self.hooks.timings is not None and path == "/v1/debug/hook-timings":
            out, self.hooks.timings = self.hooks.timings, []
            await send_response(send, 200, enc.encode(out))
            return
        await self.app(scope, receive, send)


async def _on_error(request: Request, exc: Exception) -> Response:
    """Any error of the Starlette app in the one error shape."""
    if isinstance(exc, HookdError):
        return error_response(exc.code, exc.message, exc.status)
    if isinstance(exc, HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(code, str(exc.detail), exc.status_code)
    if isinstance(exc, RecursionError):  # a JSON body nested deeper than the decoder goes
        return error_response(BadRequest.code, "request body is nested too deeply", 400)
    if isinstance(exc, OverflowError):  # a number SQLite cannot hold (64-bit integers)
        return error_response(BadRequest.code, f"a number in the request is out of range: {exc}", 400)
    log.exception("internal error on %s %s", request.method, request.url.path)
    return error_response("internal", f"internal error: {type(exc).__name__}", 500)


def build_app(core: Hookd, *, token: str, lifespan: Any = None, should_exit: Any = None,
              endpoint: Endpoint | None = None, settings: Settings | None = None,
              http_hook_token: str | None = None) -> HookdASGI:
    """The ASGI app (HookdASGI around Starlette) over ``core``. token: the home's bearer token;
    should_exit: callable telling followers that the server is shutting down; endpoint: this
    start's hook token and proof (None: no hook token); settings: the daemon's
    (:class:`hookd.settings.Settings`; default ``Settings()``): ``body_timeout_s``,
    ``hook_timings`` and ``fastpath`` (reported by status); http_hook_token: the home's
    ``hook-token`` (Claude Code's http hooks; None: not admitted). The hook path the fast
    path must share is the result's ``hooks``."""
    settings = settings or Settings()
    rest = RestApi(core, fastpath=settings.fastpath, should_exit=should_exit)
    web = WebPage(core, token, should_exit)
    app = Starlette(
        routes=[
            *claw_routes(core),  # claw-http (hookd/http/claw.py)
            *rest.routes(),
            *run_routes(core),  # the agents hookd starts (hookd/http/runs.py)
            *web.routes(),
        ],
        exception_handlers={Exception: _on_error, HTTPException: _on_error, HookdError: _on_error},
        lifespan=lifespan,
    )
    return HookdASGI(app, HookPath(core, settings), token, web=web.auth, endpoint=endpoint,
                     http_hook_token=http_hook_token)
