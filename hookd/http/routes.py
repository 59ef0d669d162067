"""The REST API's routes (every ``/v1/`` route but the hooks, claw-http and the operator
page's), their request bodies and how those are read. The routes are listed, with their
bodies and replies, in :mod:`hookd.http.app`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, AsyncIterator

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hookd.clock import when
from hookd.config import check_builder_id
from hookd.http.responses import enc, json_response
from hookd.http.send_notes import send_note
from hookd.http.status import core_status
from hookd.http.views import with_tool_view, with_tool_views
from hookd.models import DECISION_KINDS, AnswerRequest, BadRequest, Conflict, NotFound, PayloadTooLarge, os_user
from hookd.core import Hookd
from hookd.spawn import read_manifest, unspawned_at
from hookd.untrusted import decode_json
from hookd.watchers.lane_view import lanes_now


#: The surfaces a REST body may name (``telegram``, ``slack`` and ``hub`` are hookd's own relays).
REST_SURFACES = ("cli", "api", "web")

class AskRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/asks``."""

    question: str
    options: list[str] | None = None
    session_id: str | None = None
    expires_in_s: float | None = None
    author: str | None = None


class AwaitRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/interactions/await``: ids, timeout_s (seconds, mandatory)."""

    ids: list[str]
    timeout_s: float
    collect: bool = True


class TailRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/transcripts``: absolute paths of transcripts to
    follow for the builder (session_id: when they are one session's)."""

    paths: list[str]
    session_id: str | None = None


class PreanswerRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/preanswers``."""

    question: str
    answer: str
    actor: str | None = None


class SendRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/builders/{builder}/messages``. id: idempotency key; session_id /
    agent_id: scope the message to one session or one subagent."""

    text: str
    id: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    #: who the agent is told the message is from (None: the daemon's user, :func:`os_user`)
    author: str | None = None
    #: queue it even for a builder that was unspawned (its agent has no hooks of hookd's)
    force: bool = False


class NotifyTestRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/notify/test``: channel: the one channel to test (its 1-based number or its
    name), or None: every channel."""

    channel: str | None = None


class CancelRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/messages/{id}/cancel`` (may be empty): who takes the message back
    (None: the daemon's user) and where (``cli`` | ``api`` | ``web``)."""

    actor: str | None = None
    surface: str = "api"


class DismissRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/interactions/{id}/dismiss``: why (recorded, required), who (None:
    the daemon's user) and where (``cli`` | ``api`` | ``web``)."""

    reason: str
    actor: str | None = None
    surface: str = "api"


#: Most rows one list request returns (``limit``): a negative limit would be no limit at all.
MAX_LIMIT = 100_000


def _int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    """Query parameter ``name`` as an integer in [lo, hi]; raises BadRequest naming it."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be an integer") from None
    if not lo <= value <= hi:
        raise BadRequest(f"{name} must be between {lo} and {hi}")
    return value


def decode_body(raw: bytes, type_: Any, what: str) -> Any:
    """Decode a JSON request body; raises BadRequest naming what is wrong."""
    try:
        return decode_json(raw, type=type_)  # a lone surrogate decodes as U+FFFD
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as e:
        raise BadRequest(f"{what} body: {e}") from None


#: Largest body (bytes) of the answer, message, ask and preanswer routes: the texts in them
#: are limited far below (hookd.core.limits.MAX_ANSWER_CHARS, hookd.core.limits.MAX_MESSAGE_CHARS), so
#: a bigger body is refused (413) without being read into memory.
MAX_API_BODY = 256 * 1024


async def read_api_body(request: Request, limit: int = MAX_API_BODY) -> bytes:
    """The request's body, at most ``limit`` bytes; raises PayloadTooLarge past it."""
    declared = request.headers.get("content-length", "")
    too_large = PayloadTooLarge(f"request body over {limit} bytes (answers and messages are limited far below)")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    buf = bytearray()
    async for chunk in request.stream():
        buf += chunk
        if len(buf) > limit:
            raise too_large
    return bytes(buf)


def _hm(ts: float) -> str:
    """``ts`` (UNIX seconds) as the daemon's local time with its UTC offset
    (:func:`hookd.clock.when`: ``2026-12-02 19:40:01 +01:00``)."""
    return when(ts)


class RestApi:
    """The REST routes over ``core``. fastpath: whether the fast path is on (status reports
    it); should_exit: callable telling followers (``/v1/events?follow=1``) that the server is
    shutting down."""

    def __init__(self, core: Hookd, *, fastpath: bool = True, should_exit: Callable[[], bool] | None = None):
        self.core = core
        self.fastpath = fastpath
        self.should_exit = should_exit

    def routes(self) -> list[Route]:
        return [
            Route("/v1/status", self.status),
            Route("/v1/questions", self.questions),
            Route("/v1/interactions/await", self.await_answers, methods=["POST"]),
            Route("/v1/interactions/{id}", self.interaction),
            Route("/v1/interactions/{id}/answer", self.answer, methods=["POST"]),
            Route("/v1/interactions/{id}/dismiss", self.dismiss, methods=["POST"]),
            Route("/v1/builders/{builder}/asks", self.ask, methods=["POST"]),
            Route("/v1/builders/{builder}/preanswers", self.preanswer, methods=["POST"]),
            Route("/v1/builders/{builder}/transcripts", self.tail, methods=["POST"]),
            Route("/v1/events", self.events),
            Route("/v1/builders/{builder}/messages", self.send, methods=["POST"]),
            Route("/v1/builders/{builder}/unspawned", self.unspawned, methods=["POST"]),
            Route("/v1/builders/{builder}/spawned", self.spawned, methods=["POST"]),
            Route("/v1/messages", self.messages),
            Route("/v1/messages/{id}/cancel", self.cancel, methods=["POST"]),
            Route("/v1/lanes", self.lanes),
            Route("/v1/notify/test", self.notify_test, methods=["POST"]),
            Route("/v1/transcripts", self.transcripts),
        ]

    async def status(self, request: Request) -> Response:
        return json_response(await core_status(self.core, self.fastpath))

    async def questions(self, request: Request) -> Response:
        state = request.query_params.get("state", "pending")
        if state not in ("pending", "resolved", "all"):
            raise BadRequest("state must be one of: pending, resolved, all")
        try:
            limit = int(request.query_params.get("limit", "1000"))
        except ValueError:
            raise BadRequest("limit must be an integer") from None
        if not 1 <= limit <= 100_000:
            raise BadRequest("limit must be between 1 and 100000")
        found = await self.core.store.interactions(state, limit)
        # the default answers of pending ones: their builders' spawn manifests, read in a thread
        defaults = await asyncio.to_thread(self.core.defaults, found) if any(i.state == "pending" for i in found) else {}
        items = await with_tool_views(self.core.store, found)
        held = await self._held(found)
        if held or defaults:  # (each pending one with whether a hook takes an answer, its default answer)
            rows = [i if isinstance(i, dict) else msgspec.to_builtins(i) for i in items]
            items = [_with(r, held, defaults) for r in rows]
        return json_response(items)

    async def _held(self, found: list[Any]) -> dict[str, bool]:
        """``held`` of each pending interaction of ``found`` that has one: a decision's, whether
        a held hook waits for it now (:meth:`hookd.core.holds.Holds.holding`); a question's,
        whether a hook would carry its answer (:meth:`hookd.core.answers.Answers.reachable`)."""
        held = await self.core.reachable(found)
        held.update({i.id: self.core.holding(i.id) for i in found if i.state == "pending" and i.kind in DECISION_KINDS})
        return held

    async def interaction(self, request: Request) -> Response:
        i = await self.core.store.interaction(request.path_params["id"])
        if i is None:
            raise NotFound(f"no interaction {request.path_params['id']!r}")
        d = (await asyncio.to_thread(self.core.defaults, [i])).get(i.id) if i.state == "pending" else None
        view = await with_tool_view(self.core.store, i)
        held = await self._held([i])
        if held or d is not None:  # (as GET /v1/questions lists it)
            view = _with(view if isinstance(view, dict) else msgspec.to_builtins(view), held,
                         {} if d is None else {i.id: d})
        return json_response(view)

    async def dismiss(self, request: Request) -> Response:
        """A human closes a pending interaction unanswered (:meth:`hookd.core.policy.Policy.dismiss`)."""
        body = decode_body(await read_api_body(request), DismissRequest, "dismissal")
        i = await self.core.dismiss(request.path_params["id"], reason=body.reason, actor=body.actor, surface=body.surface)
        return json_response({"interaction": await with_tool_view(self.core.store, i)})

    async def send(self, request: Request) -> Response:
        builder = await self.known_builder(request)
        body = decode_body(await read_api_body(request), SendRequest, "message")
        if not body.force:
            gone = await asyncio.to_thread(unspawned_at, self.core.home, builder)
            if gone is not None:
                raise Conflict(await self._unspawned_refusal(builder, gone))
        message, created = await self.core.send_message(
            builder, body.text, key=body.id, session_id=body.session_id, agent_id=body.agent_id,
            author=body.author if body.author is not None else os_user(),
        )
        out: dict[str, Any] = {"message": message, "created": created}
        if created and (note := await send_note(self.core, message)) is not None:
            out["note"] = note
        return json_response(out, 201 if created else 200)

    async def _unspawned_refusal(self, builder: str, gone: float) -> str:
        """Why `send` refuses a message to ``builder``, unspawned at ``gone`` (UNIX seconds): a
        session still sending hooks (one came since, or its agent is live) keeps the hooks it
        started with until it ends; else none of its agents has hookd's hooks."""
        last = await self.core.store.last_hook(builder)
        live = await self.core.runs.live(builder)
        if (last is not None and last[0] > gone) or live is not None:
            sid = (live or {}).get("session_id") or (last[1] if last else None)
            seen = f", last hook at {_hm(last[0])}" if last is not None else ""
            return (f"{builder} was unspawned at {_hm(gone)}, but its running session{f' {sid}' if sid else ''} "
                    f"(still sending hooks{seen}) keeps the hooks it started with until it ends: send with --force "
                    f"to queue the message for that session, or spawn {builder} again for its next sessions")
        return (f"{builder} was unspawned at {_hm(gone)}: no session of its agent still runs hookd's hooks, so the"
                f" message would wait forever; spawn it again, or send with --force to queue it anyway")

    async def unspawned(self, request: Request) -> Response:
        """`hookd unspawn` tells a running daemon (no body): records ``builder_unspawned`` so that
        lanes and the page learn it now. 404 unless ``unspawned/<id>.json`` says so."""
        builder = check_builder_id(request.path_params["builder"])
        at = await asyncio.to_thread(unspawned_at, self.core.home, builder)
        if at is None:
            raise NotFound(f"builder {builder!r} is not unspawned")
        await self.core.builder_unspawned(builder, at)
        await self.core.check_hooks(builder, via="unspawn")  # a hooks_changed warning ends with the builder
        return json_response({"builder": builder, "unspawned_at": at})

    async def spawned(self, request: Request) -> Response:
        """`hookd spawn` tells a running daemon it wrote the builder's hooks (no body): the
        settings file is compared with spawn's record at once, so a ``hooks_changed`` warning
        clears now (``hooks_restored``). 404 unless the builder has a spawn manifest.
        Returns ``{"builder", "hooks_changed"}`` (what is still wrong, or None: with
        ``disabled`` when a setting turns every hook off, which spawn leaves as it is)."""
        builder = check_builder_id(request.path_params["builder"])
        if await asyncio.to_thread(read_manifest, self.core.home, builder) is None:
            raise NotFound(f"builder {builder!r} is not spawned")
        wrong = await self.core.check_hooks(builder, via="spawn")
        return json_response({"builder": builder, "hooks_changed": wrong})

    async def cancel(self, request: Request) -> Response:
        body = decode_body(await read_api_body(request) or b"{}", CancelRequest, "cancel")
        if body.surface not in REST_SURFACES:
            raise BadRequest(f"surface must be one of {', '.join(REST_SURFACES)}")
        message, cancelled = await self.core.cancel_message(
            request.path_params["id"], actor=body.actor if body.actor is not None else os_user(), surface=body.surface)
        return json_response({"message": message, "cancelled": cancelled})

    async def known_builder(self, request: Request) -> str:
        builder = check_builder_id(request.path_params["builder"])
        await self.core.known_builder(builder)
        return builder

    async def answer(self, request: Request) -> Response:
        body = decode_body(await read_api_body(request), AnswerRequest, "answer")
        if body.surface not in REST_SURFACES:  # (a chat's or the hub's answers come from hookd itself)
            raise BadRequest(f"surface must be one of {', '.join(REST_SURFACES)}")
        receipt = await self.core.answer(request.path_params["id"], body, surface=body.surface)
        if receipt.get("interaction") is not None:
            receipt = {**receipt, "interaction": await with_tool_view(self.core.store, receipt["interaction"])}
        return json_response(receipt)

    async def ask(self, request: Request) -> Response:
        builder = await self.known_builder(request)
        body = decode_body(await read_api_body(request), AskRequest, "ask")
        i = await self.core.ask_async(builder, body.question, body.options, session_id=body.session_id,
                                      expires_in_s=body.expires_in_s, author=body.author)
        return json_response({"interaction": i}, 201)

    async def await_answers(self, request: Request) -> Response:
        body = decode_body(await request.body(), AwaitRequest, "await")
        return json_response(await self.core.await_answers(body.ids, body.timeout_s, collect=body.collect))

    async def preanswer(self, request: Request) -> Response:
        builder = await self.known_builder(request)
        body = decode_body(await read_api_body(request), PreanswerRequest, "preanswer")
        return json_response(await self.core.preanswer(builder, body.question, body.answer, actor=body.actor), 201)

    async def tail(self, request: Request) -> Response:
        core = self.core
        builder = await self.known_builder(request)
        body = decode_body(await request.body(), TailRequest, "tail")
        tailer = core.tailer
        if tailer is None:
            raise BadRequest("the transcript tailer is not running")
        out = []
        for path in body.paths:
            if not os.path.isabs(path):
                raise BadRequest(f"transcript path must be absolute: {path!r}")
            if os.path.isdir(path) or not path.endswith(".jsonl"):  # a folder, or one still to be made
                n = tailer.add_dir(path, builder)
                out.append({"path": os.path.abspath(path), "folder": True, "files": n,
                            "rows": sum([await tailer.poll(f) for f in tailer.targets() if f.startswith(os.path.abspath(path) + os.sep)])})
                continue
            tailer.add(path, builder, body.session_id)
            rows = await tailer.poll(os.path.abspath(path))
            # refused: why the tailer will not read it (a FIFO, a device, a directory)
            out.append({"path": os.path.abspath(path), "rows": rows, "refused": tailer.refusal(os.path.abspath(path))})
        return json_response({"builder": builder, "files": out}, 201)

    async def lanes(self, request: Request) -> Response:
        """``GET /v1/lanes[?builder=B...]``: every builder's lane, or only those builders'."""
        only = [check_builder_id(b) for b in request.query_params.getlist("builder")]
        lanes = await lanes_now(self.core, only or None)
        parts = []
        for i in range(0, len(lanes), 500):  # encoded 500 lanes per turn of the event loop
            if i:
                await asyncio.sleep(0)
            parts.append(enc.encode(lanes[i:i + 500])[1:-1])
        return Response(b"[" + b",".join(parts) + b"]", media_type="application/json")

    async def notify_test(self, request: Request) -> Response:
        body = decode_body(await read_api_body(request) or b"{}", NotifyTestRequest, "notify test")
        if self.core.notifier is None:
            raise BadRequest("this daemon sends no notifications")
        return json_response({"channels": await self.core.notifier.test(body.channel)})

    async def transcripts(self, request: Request) -> Response:
        return json_response(await self.core.store.transcripts())

    async def messages(self, request: Request) -> Response:
        core = self.core
        builder = request.query_params.get("builder")
        if builder is not None:
            check_builder_id(builder)
        limit = _int_param(request, "limit", 1000, 0, MAX_LIMIT)
        items, total = await core.store.messages(builder, limit)
        if builder is not None and not items:  # (a builder with messages is known)
            await core.known_builder(builder)
        return Response(enc.encode(items), media_type="application/json", headers={"x-total-count": str(total)})

    async def events(self, request: Request) -> Response:
        core, should_exit = self.core, self.should_exit
        after = _int_param(request, "after", 0, -(2**63), 2**63 - 1)
        limit = _int_param(request, "limit", 1000, 0, MAX_LIMIT)
        follow = request.query_params.get("follow") in ("1", "true", "yes")
        if not follow:
            evs = await core.store.events_after(after, limit)
            return Response(b"".join(enc.encode(e) + b"\n" for e in evs), media_type="application/x-ndjson")

        async def stream() -> AsyncIterator[bytes]:
            last = after
            while True:
                version = core.bus.version  # a commit published during the read below wakes the wait
                evs = await core.store.events_after(last, 1000)
                if evs:
                    last = evs[-1].seq
                    yield b"".join(enc.encode(e) + b"\n" for e in evs)
                    continue
                if core.bus.closed or (should_exit and should_exit()):
                    return
                await core.bus.wait(0.5, since=version)

        return StreamingResponse(stream(), media_type="application/x-ndjson")


def _with(row: dict[str, Any], held: dict[str, bool], defaults: dict[str, Any]) -> dict[str, Any]:
    """An interaction's JSON with its ``held`` and ``default_answer``, where it has them."""
    iid = row["id"]
    extra = {**({"held": held[iid]} if iid in held else {}),
             **({"default_answer": defaults[iid]} if iid in defaults else {})}
    return {**row, **extra} if extra else row
