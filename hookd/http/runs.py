"""The routes of the agents hookd starts (`hookd run`, `hookd continue`, `hookd stop`,
`hookd ls`, `hookd attach`; issue 23), over :class:`hookd.core.runs.Runs`:

- ``GET /v1/runs``: every builder's newest run (:class:`hookd.models.Run`, ``alive`` filled in);
- ``GET /v1/builders/{builder}/run``: ``{builder, run, live, last_session}``
  (:meth:`hookd.core.runs.Runs.view`; run and live may be null);
- ``POST /v1/builders/{builder}/started`` (:class:`StartedRequest`): the CLI started an agent;
  201 ``{run}``, 409 when the builder already has a live session;
- ``POST /v1/builders/{builder}/stop`` (:class:`StopRequest`): `hookd stop`: the daemon ends the
  agent (SIGTERM, then SIGKILL after ``timeout_s``) and records it; 200 ``{run}`` once it is
  done, 404 when hookd never started it or it is not running.

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
from hookd.models import BadRequest, NotFound, os_user


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
    agent_args: list[str] | None = None


class StopRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/stop``: seconds the agent has after SIGTERM
    before SIGKILL (0 to 600), who stops it (None: the daemon's user)."""

    timeout_s: float = 10.0
    actor: str | None = None


def routes(core: Hookd) -> list[Route]:
    """The routes above, over ``core``."""

    async def all_runs(request: Request) -> Response:
        return json_response(await core.runs.all())

    async def view(request: Request) -> Response:
        builder = check_builder_id(request.path_params["builder"])
        out = await core.runs.view(builder)
        if out["run"] is None:  # (`hookd stop`, `attach`: a builder hookd never heard of is named so)
            try:
                await core.known_builder(builder)
                out["known"] = True
            except NotFound:
                out["known"] = False
        return json_response(out)

    async def started(request: Request) -> Response:
        builder = check_builder_id(request.path_params["builder"])
        body = decode_body(await read_api_body(request), StartedRequest, "started")
        if body.pid <= 0:
            raise BadRequest("pid must be a positive integer")
        run = await core.builder_started(builder, msgspec.structs.asdict(body))
        return json_response({"run": run}, 201)

    async def stop(request: Request) -> Response:
        builder = check_builder_id(request.path_params["builder"])
        body = decode_body(await read_api_body(request) or b"{}", StopRequest, "stop")
        if not 0 <= body.timeout_s <= 600:
            raise BadRequest("timeout_s must be between 0 and 600")
        run = await core.stop_builder(builder, timeout_s=body.timeout_s,
                                      actor=body.actor if body.actor is not None else os_user())
        return json_response({"run": run})

    return [
        Route("/v1/runs", all_runs),
        Route("/v1/builders/{builder}/run", view),
        Route("/v1/builders/{builder}/started", started, methods=["POST"]),
        Route("/v1/builders/{builder}/stop", stop, methods=["POST"]),
    ]
