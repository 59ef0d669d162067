"""The in-process tier: hookd's core and HTTP app driven in the test's own process, no daemon.

:class:`InProc` builds what ``hookd serve`` builds (:func:`hookd.daemon._serve`): the home's
directories and token, the store on the home's SQLite file (``Store(home.db,
settings=...).open()``), the core (:class:`hookd.core.Hookd`), the app
(:func:`hookd.http.app.build_app` with the token and a fresh :class:`hookd.config.Endpoint`),
and it runs the daemon's own lifespan (:func:`hookd.daemon._lifespan`: the spool ingested, the
endpoint file, the spool watcher, expiry, notifications, the transcript tailer, lanes, storage
retries; at stop the held hooks let go, the tasks ended, the core closed). No socket, no fast
path, no uvicorn: requests reach the app through httpx's ``ASGITransport``, which presents them
as TCP requests, so every one carries the home's bearer token. Differences from the daemon: no
process umask (``serve`` sets 0077: file modes are a daemon test), the endpoint names port 0,
and the objects the lifespan's ``gc.freeze()`` froze are unfrozen (a test process starts many
cores).

The app runs on an event loop in a thread the fixture owns (the daemon's loop factory,
uvloop's where installed); tests stay synchronous: :meth:`InProc.request` runs one request on
that loop and waits for it, :meth:`InProc.submit` starts one in the background (a held hook)
and returns a :class:`concurrent.futures.Future`. ``ASGITransport`` returns a response only
when the app has finished it, so a streaming route (``/v1/events?follow=1``, the page's SSE) is
a daemon test.

The ``inproc`` fixture (tests/conftest.py) gives a started one on the test's ``home``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import itertools
import json
import os
import secrets
import threading
from pathlib import Path
from typing import Any, Coroutine, TypeVar

import httpx

from hookd.config import Endpoint, Home, process_start
from hookd.core import Hookd
from hookd.daemon import _lifespan, _loop_factory
from hookd.http.app import HookdASGI, build_app
from hookd.settings import Settings
from hookd.store import Store

T = TypeVar("T")

#: How long a synchronous call waits for the loop (seconds): a deadline, not a budget.
WAIT_S = 60.0

#: The generated hook client's deadline for a plain hook (hookd.spawn's default, ms).
HOOK_DEADLINE_MS = 5000


class InProc:
    """hookd's core and app on ``home`` in this process (module doc).

    home: the hookd home (created as ``hookd serve`` creates it); settings: the daemon's
    settings (default ``Settings()``); notify_overrides: as ``hookd serve``'s notification
    options (:func:`hookd.watchers.notify_config.load_config`). After :meth:`start`: ``core``,
    ``store``, ``app``, ``token``, ``endpoint``.
    """

    def __init__(self, home: Path, settings: Settings | None = None,
                 notify_overrides: dict[str, Any] | None = None):
        self.home = Home.resolve(home)
        self.settings = settings or Settings()
        self.notify_overrides = notify_overrides
        self.core: Hookd
        self.store: Store
        self.app: HookdASGI
        self.token = ""
        self.stopping = False  # the app's should_exit: followers end when the tier stops
        self._deliveries = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: httpx.AsyncClient | None = None
        self._life: Any = None

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> "InProc":
        """Start the loop thread, open the store, build the core and the app, run the
        lifespan's start. Raises what the store's opening or the lifespan raises."""
        factory = _loop_factory()
        self._loop = factory() if factory is not None else asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hookd-inproc", daemon=True)
        self._thread.start()
        try:
            self.call(self._open())
        except BaseException:
            self.stop()
            raise
        return self

    async def _open(self) -> None:
        from hookd.watchers.notify_config import load_config

        home, settings = self.home, self.settings
        notify_config = load_config(home, self.notify_overrides)
        home.ensure()
        self.token = home.read_token()
        # no TCP port: the endpoint names port 0 (no hook client reads it in this tier)
        self.endpoint = Endpoint(0, secrets.token_urlsafe(32), os.getpid(), process_start(),
                                 secrets.token_urlsafe(24))
        self.store = await Store(home.db, settings=settings).open()
        self.core = Hookd(home, self.store, settings)
        lifespan = _lifespan(home, self.core, self.endpoint, notify_config, settings, home.socket_path)
        self.app = build_app(self.core, token=self.token, lifespan=lifespan, should_exit=lambda: self.stopping,
                             endpoint=self.endpoint, settings=settings)
        self._life = lifespan(self.app)
        await self._life.__aenter__()
        # the daemon freezes what start-up made for its lifetime; a test process starts many
        # cores, whose objects must stay collectable after their test
        gc.unfreeze()
        self._client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://hookd",
                                         headers={"authorization": f"Bearer {self.token}"}, timeout=WAIT_S)

    async def _close(self) -> None:
        self.stopping = True
        try:
            if self._client is not None:
                await self._client.aclose()
            if self._life is not None:
                await self._life.__aexit__(None, None, None)  # held hooks let go, tasks ended, core closed
        finally:
            if self._life is not None:
                await self.store.close()
            current = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not current]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)
            await asyncio.get_running_loop().shutdown_default_executor()  # (asyncio.to_thread's threads)

    def stop(self) -> None:
        """Run the lifespan's stop, close the store, end the loop thread. Idempotent."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            if self._life is not None or self._client is not None:
                asyncio.run_coroutine_threadsafe(self._close(), loop).result(WAIT_S)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(WAIT_S)
            loop.close()

    # --- running on the loop ---------------------------------------------------------------

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = WAIT_S) -> T:
        """Run ``coro`` on the tier's loop and return its result (raises what it raises;
        TimeoutError after ``timeout`` seconds)."""
        return self.spawn(coro).result(timeout)

    def spawn(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coro`` on the tier's loop; its future."""
        assert self._loop is not None, "InProc is not started"
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    # --- requests --------------------------------------------------------------------------

    def submit(self, method: str, path: str, *, json: Any = None, content: bytes | None = None,
               params: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
               ) -> concurrent.futures.Future[httpx.Response]:
        """Start one request to the app (``path`` from ``/v1/...``; ``json`` or raw ``content``
        as its body); the future's result is the whole response."""
        assert self._client is not None, "InProc is not started"
        return self.spawn(self._client.request(method, path, json=json, content=content, params=params,
                                               headers=headers))

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """One request to the app, waited for (:meth:`submit`'s arguments)."""
        return self.submit(method, path, **kw).result(WAIT_S)

    def get(self, path: str, **params: Any) -> Any:
        """``GET path`` with ``params``: its JSON body (asserts a 200)."""
        r = self.request("GET", path, params=params or None)
        assert r.status_code == 200, r.text
        return r.json()

    def hook_headers(self, deadline_ms: int = HOOK_DEADLINE_MS, **extra: str) -> dict[str, str]:
        """The headers the generated hook client sends: a fresh ``X-Hookd-Delivery``, its
        ``X-Hookd-Deadline-Ms``, and ``extra`` (``{"X-Hookd-Agent-Pid": ...}``)."""
        return {"x-hookd-delivery": f"inproc-{next(self._deliveries)}", "x-hookd-deadline-ms": str(deadline_ms),
                "content-type": "application/json", **extra}

    def submit_hook(self, payload: Any, builder: str = "b1", *, harness: str = "claude-code", route: str = "",
                    deadline_ms: int = HOOK_DEADLINE_MS, headers: dict[str, str] | None = None,
                    ) -> concurrent.futures.Future[httpx.Response]:
        """Start one hook: ``payload`` (a dict, sent as JSON, or the raw bytes) posted to
        ``/v1/hooks/{harness}/{builder}{route}`` (route ``""``, ``/hold`` or ``/wake``) with
        the hook client's headers."""
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return self.submit("POST", f"/v1/hooks/{harness}/{builder}{route}", content=raw,
                           headers={**self.hook_headers(deadline_ms), **(headers or {})})

    def hook(self, payload: Any, builder: str = "b1", **kw: Any) -> httpx.Response:
        """One hook, waited for (:meth:`submit_hook`'s arguments); the reply's body is the
        hook's stdout."""
        return self.submit_hook(payload, builder, **kw).result(WAIT_S)

    # --- reading state (what `hookd questions|events|inbox --json` print) --------------------

    def questions(self, state: str = "all") -> list[dict[str, Any]]:
        return self.get("/v1/questions", state=state)

    def events(self) -> list[dict[str, Any]]:
        """Every event, oldest first (``GET /v1/events`` in pages, as ``hookd events`` reads)."""
        out: list[dict[str, Any]] = []
        while True:
            r = self.request("GET", "/v1/events", params={"after": out[-1]["seq"] if out else 0, "limit": 1000})
            assert r.status_code == 200, r.text
            page = [json.loads(line) for line in r.text.splitlines() if line.strip()]
            out += page
            if len(page) < 1000:
                return out

    def inbox(self, builder: str) -> list[dict[str, Any]]:
        return self.get("/v1/messages", builder=builder, limit=1000)

    def interaction(self, iid: str) -> dict[str, Any]:
        return self.get(f"/v1/interactions/{iid}")
