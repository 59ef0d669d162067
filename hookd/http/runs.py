"""The routes of the agents hookd starts (`hookd run`, `hookd continue`, `hookd stop`,
`hookd ls`, `hookd attach`; issue 23), over :class:`hookd.core.runs.Runs`:

- ``GET /v1/runs``: every builder's newest run (:class:`hookd.models.Run`, ``alive`` filled in);
- ``GET /v1/builders/{builder}/run``: ``{builder, run, live, last_session}``
  (:meth:`hookd.core.runs.Runs.view`; run and live may be null);
- ``POST /v1/builders/{builder}/started`` (:class:`StartedRequest`): the CLI started an agent;
  201 ``{run}``, 409 when the builder already has a live session;
- ``POST /v1/builders/{builder}/stopped`` (:class:`StoppedRequest`): `hookd stop` ended it;
  200 ``{run}``, 404 for no such run of the builder.

Errors: the one shape (:mod:`hookd.http.responses`)."""

from __future__ import annotations

from typing import Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hookd.config import check_builder_id
from hookd.core import Hookd
from hookd.http.responses import json_response
from hookd.http.routes import decode_body, read_api_body
from hookd.models import BadRequest, os_user


class StartedRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/started``: :class:`hookd.models.Run`'s fields
    the CLI knows (pid_started_at: UNIX seconds)."""

    harness: str
    mode: Literal["interactive", "headless"]
    pid: int
    argv: list[str]
    pid_started_at: float | None = None
    tmux_socket: str | None = None
    tmux_session: str | None = None
    log_path: str | None = None
    worktree: str | None = None
    session_id: str | None = None
    resumes: str | None = None


class StoppedRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/stopped``: the run, the last signal sent
    (``SIGTERM``, ``SIGKILL``; None: none was needed), who stopped it (None: the daemon's user)."""

    run: int
    signal: str | None = None
    actor: str | None = None


def routes(core: Hookd) -> list[Route]:
    """The routes above, over ``core``."""

    async def all_runs(request: Request) -> Response:
        return json_response(await core.runs.all())

    async def view(request: Request) -> Response:
        return json_response(await core.runs.view(check_builder_id(request.path_params["builder"])))

    async def started(request: Request) -> Response:
        builder = check_builder_id(request.path_params["builder"])
        body = decode_body(await read_api_body(request), StartedRequest, "started")
        if body.pid <= 0:
            raise BadRequest("pid must be a positive integer")
        run = await core.builder_started(builder, msgspec.structs.asdict(body))
        return json_response({"run": run}, 201)

    async def stopped(request: Request) -> Response:
        builder = check_builder_id(request.path_params["builder"])
        body = decode_body(await read_api_body(request), StoppedRequest, "stopped")
        if body.signal not in (None, "SIGTERM", "SIGKILL"):
            raise BadRequest("signal must be SIGTERM or SIGKILL")
        run = await core.builder_stopped(builder, body.run, signal=body.signal,
                                         actor=body.actor if body.actor is not None else os_user())
        return json_response({"run": run})

    return [
        Route("/v1/runs", all_runs),
        Route("/v1/builders/{builder}/run", view),
        Route("/v1/builders/{builder}/started", started, methods=["POST"]),
        Route("/v1/builders/{builder}/stopped", stopped, methods=["POST"]),
    ]
