"""``hookd serve``: the daemon's lifecycle. :func:`serve` takes the home's lock, binds the Unix
socket and the loopback TCP port, builds the settings (:meth:`hookd.settings.Settings.from_env`,
once), the store, the core and the HTTP app (:func:`hookd.http.app.build_app`), starts the
daemon's tasks (spool watching and ingestion, expiry, notifications, the transcript tailer,
lanes, storage retries) and runs uvicorn (:class:`hookd.http.fastpath.Server`, with the fast
path's protocol) until SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import logging
import os
import secrets
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, AsyncIterator

import uvicorn

from hookd import __version__
from hookd.config import (Endpoint, Home, atomic_write, ensure_private_dir, private_dir_problem, process_start,
                          write_private)
from hookd.http.app import build_app
from hookd.http.fastpath import Server, protocol
from hookd.http.web import bind_loopback
from hookd.watchers.hookalerts import HookAlerts
from hookd.watchers.lanes import LaneAlerts, LaneWatch
from hookd.watchers.runs import RunWatch
from hookd.models import AlreadyServing, ConfigError
from hookd.core import Hookd
from hookd.settings import Settings
from hookd.spawn import write_client
from hookd.storage_health import retry_until_back
from hookd.store import Store
from hookd.watchers.tailer import Tailer

log = logging.getLogger("hookd")


class _Lock:
    """An exclusive flock on ``run/serve.lock`` held for the daemon's lifetime."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(self.fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(self.fd)
            raise AlreadyServing(
                f"hookd is already serving {path.parent.parent} (pid {pid}); stop it first or use another --home"
            ) from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
            os.close(self.fd)


def _socket_location(home: Home) -> tuple[Path, Path | None]:
    """Where to bind: ``run/hookd.sock``, or, for a home whose path makes that too long, the
    first of :meth:`Home.socket_candidates` whose directory is (or is made) a private
    directory of this user's. When every candidate's directory is someone else's (another
    user created ``/tmp/hookd-<uid>`` first, to receive hookd's payloads and answer its hooks),
    a fresh directory with an unpredictable name (``mkdtemp``, 0700) instead, and a warning
    naming what to remove. Returns (path, the directory made for this run, or None)."""
    short = home.run_dir / "hookd.sock"
    if home.socket_path == short:
        return short, None
    refused = []
    for candidate in home.socket_candidates():
        try:
            ensure_private_dir(candidate.parent)
            return candidate, None
        except (ConfigError, OSError):
            refused.append(private_dir_problem(candidate.parent) or f"{candidate.parent} cannot be created")
    fresh = Path(tempfile.mkdtemp(prefix=f"hookd-{os.geteuid()}-", dir=home.socket_candidates()[-1].parent.parent))
    log.warning("not binding the socket in %s: %s; another user may have created it to take over hookd's socket. "
                "Using %s instead (hook clients and the CLI find it through %s). Remove %s (as its owner or "
                "root), or set XDG_RUNTIME_DIR to a private directory of yours, to get the usual place back.",
                " or ".join(str(c.parent) for c in home.socket_candidates()), "; ".join(refused), fresh,
                home.socket_path_file, " and ".join(str(c.parent) for c in home.socket_candidates()))
    return fresh / home.socket_candidates()[0].name, fresh


def _bind_unix(home: Home) -> tuple[socket.socket, Path, Path | None]:
    """Bind and listen on the home's socket (:func:`_socket_location`), 0600; a long home's
    path is recorded in ``bin/socket-path`` (0600), where its clients read it. Returns (the
    socket, its path, the directory made for this run or None)."""
    try:
        recorded: Path | None = Path(os.fsdecode(home.socket_path_file.read_bytes()))
    except OSError:
        recorded = None
    path, made = _socket_location(home)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # stale: we hold the serve lock
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(os.fspath(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(512)
    sock.set_inheritable(True)
    if path != home.run_dir / "hookd.sock" and recorded != path:
        atomic_write(home.socket_path_file, os.fsencode(path), mode=0o600)
        if recorded is not None and recorded.parent.name.startswith(f"hookd-{os.geteuid()}-") \
                and private_dir_problem(recorded.parent) is None:
            with contextlib.suppress(OSError):  # an earlier run's fresh directory (a kill -9 left it)
                recorded.unlink(missing_ok=True)
                recorded.parent.rmdir()
    return sock, path, made


def _bind_tcp(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(512)
    return sock


def _outside_spools(home: Home) -> list[Path]:
    """The spools outside the home to watch (:meth:`Home.outside_spool_roots`): those that
    exist as private directories of this user's, and the first a client would use (under a
    base that exists: ``$XDG_RUNTIME_DIR`` or ``/run/user/<uid>`` only when it is this user's
    private directory; ``/dev/shm``, ``/tmp``), created 0700 if missing. One whose directory
    another user created is skipped, with a warning (neither the clients nor the daemon use
    it). Every one is scanned whenever the spool is ingested, watched or not."""
    out: list[Path] = []
    for root in home.outside_spool_roots():
        top = root.parent.parent
        if not top.is_dir() or (root.parent.name == "hookd" and private_dir_problem(top) is not None):
            continue
        if out and not root.is_dir():
            continue  # (only the first is made ahead of need)
        try:
            ensure_private_dir(root.parent)
            ensure_private_dir(root)
        except (ConfigError, OSError):
            log.warning("not using %s for payloads spooled outside the home: %s", root,
                        private_dir_problem(root.parent) or private_dir_problem(root))
            continue
        out.append(root)
    return out


async def _watch_spool(core: Hookd, stop: asyncio.Event, backend: str = "auto") -> None:
    """Ingest payloads spooled while the daemon runs (a client that timed out, or one that
    read no endpoint during start-up), in the home's spool and in those outside it: a pass
    once the watch is in place (a payload spooled after the start's passes listed the spool
    and before the watch gave no event), then one after each change."""
    from hookd.watchers.watch import awatch_dirs, ended, started

    logging.getLogger("watchfiles").setLevel(logging.WARNING)
    outside = _outside_spools(core.home)
    changes = awatch_dirs(os.fspath(core.home.spool_root), *map(os.fspath, outside), stop_event=stop,
                          debounce=50, step=20, recursive=True, backend=backend, rust_timeout=200)
    nxt = await started(changes)  # the watch in place: then the first pass
    try:
        while True:
            try:
                await core.ingest_spool()
            except Exception:  # (a database that cannot commit: the files stay for a later pass)
                log.exception("spool ingestion failed; the spooled files stay")
            try:
                await nxt
            except StopAsyncIteration:
                break
            nxt = asyncio.ensure_future(changes.__anext__())
    except Exception:  # never let the watcher take the daemon down
        log.exception("spool watcher stopped")
    finally:
        await ended(changes, nxt)  # its watch released now (a no-op once it ended at ``stop``)
    for root in outside:  # (kept while it holds anything)
        for d in [*root.iterdir(), root] if root.is_dir() else []:
            with contextlib.suppress(OSError):
                d.rmdir()


def serve(home: Home, port: int = 0, notify_overrides: dict[str, Any] | None = None, hub: str | None = None) -> None:
    """Run the daemon in the foreground until SIGTERM/SIGINT. Raises AlreadyServing, and
    ConfigError for an invalid config.toml or ``HOOKD_*`` variable, or a hub (``hub``: the
    URL of ``--hub``) without asyncpg installed (before binding anything)."""
    from hookd.watchers.notify_config import load_config

    settings = Settings.from_env()  # the daemon's tunables, read once, handed to what needs them
    settings = _with_hub(home, settings, hub)
    notify_config = load_config(home, notify_overrides)
    os.umask(0o077)  # the database, its WAL and the spool are the user's alone
    home.ensure()
    lock = _Lock(home.lock_file)
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(_serve(home, port, notify_config, settings))
    finally:
        lock.release()


def _with_hub(home: Home, settings: Settings, flag: str | None) -> Settings:
    """``settings`` with the hub in force (``--hub``, ``HOOKD_HUB``, ``[hub] url``:
    :func:`hookd.hub.config.resolve`). Raises ConfigError for a bad URL, or when asyncpg (the
    extra ``hookd[hub]``) is missing."""
    import msgspec

    from hookd.hub.config import require_driver, resolve

    url = resolve(home.root, flag, settings.hub_url)
    if url is not None:
        require_driver()
    return msgspec.structs.replace(settings, hub_url=url)


def _loop_factory() -> Any:
    """uvloop's event loop where it is installed (a dependency off Windows; bench/load.py: about
    +20% hooks/s back to back on 2 cores), else asyncio's default (None)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def _serve(home: Home, port: int, notify_config: Any = None, settings: Settings | None = None) -> None:
    """Bind, open the store, build the core and the app, and serve until the server stops."""
    settings = settings or Settings()
    token = home.read_token()
    http_hook_token = home.read_hook_token()  # Claude Code's http hooks (spawn --hook-transport http)
    unix_sock, sock_path, sock_dir = _bind_unix(home)
    tcp_sock = bind_loopback(home, port, _bind_tcp)  # port 0: the last one first (an open page reconnects)
    tcp_port = tcp_sock.getsockname()[1]
    endpoint = Endpoint(tcp_port, secrets.token_urlsafe(32), os.getpid(), process_start(),
                        secrets.token_urlsafe(24))
    store = await Store(home.db, settings=settings).open()
    core = Hookd(home, store, settings, tcp_port=tcp_port)
    server: Server | None = None
    lifespan = _lifespan(home, core, endpoint, notify_config, settings, sock_path)
    app = build_app(core, token=token, lifespan=lifespan, should_exit=lambda: server is not None and server.should_exit,
                    endpoint=endpoint, settings=settings, http_hook_token=http_hook_token)
    config = uvicorn.Config(
        app,
        http=protocol(app.hooks, os.fspath(sock_path), settings),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=3,
        server_header=False,
        date_header=False,
        # no proxy in front of hookd: X-Forwarded-* headers are never trusted
        proxy_headers=False,
    )
    server = Server(config)
    server.core = core
    try:
        await server.serve(sockets=[unix_sock, tcp_sock])
    finally:
        await store.close()
        with contextlib.suppress(FileNotFoundError):
            sock_path.unlink()
        if sock_dir is not None:
            with contextlib.suppress(OSError):
                sock_dir.rmdir()
        log.info("hookd stopped")


def _start_hub(core: Hookd, home: Home, settings: Settings, notifier: Any, stop: asyncio.Event) -> list[asyncio.Task[None]]:
    """The hub's background tasks (hookd.hub, docs/fleet.md), none on the hook path: the
    shipper (the event log up to the hub), the applier (the hub's commands down to this host),
    the notification link, and the fleet notifier's
    candidate when this host notifies for the fleet and has a one-way channel."""
    from hookd.hub.commands import Applier
    from hookd.hub.config import notify_settings
    from hookd.hub.fleet import FleetLead, FleetLink
    from hookd.hub.shipper import Shipper
    from hookd.watchers.notify_fleet import fleet_sender, one_way

    url = str(settings.hub_url)
    shipper = Shipper(core, url)
    shipper.applier = Applier(core, url)  # (down to hosts: the hub's commands for this host)
    mode, grace = notify_settings(home.root)
    link = FleetLink(url, mode, grace_s=grace, home_id=shipper.claimed_home)
    notifier.fleet = link
    link.on_linked = notifier.wake
    lead = None
    if mode == "fleet" and one_way(notifier.config):
        cfg = notifier.config
        lead = FleetLead(url, fleet_sender(notifier), cfg.question_after_s, cfg.steps_s)
    core.hub = _HubView(shipper, link, lead)
    return [asyncio.create_task(t.run(stop)) for t in (shipper, shipper.applier, link, lead) if t is not None]


class _HubView:
    """What status shows of the hub: the shipper's view (hookd.hub.shipper.Shipper.view) and
    ``notify``: the link's (hookd.hub.fleet.FleetLink.view) with ``notifier``: the fleet
    notifier's candidate here (hookd.hub.fleet.FleetLead.view; None: this host never leads)."""

    def __init__(self, shipper: Any, link: Any, lead: Any):
        self.shipper, self.link, self.lead = shipper, link, lead

    def view(self) -> dict[str, Any]:
        return {**self.shipper.view(), "notify": {**self.link.view(),
                                                  "notifier": None if self.lead is None else self.lead.view()}}


def _lifespan(home: Home, core: Hookd, endpoint: Endpoint, notify_config: Any, settings: Settings,
              sock_path: Path) -> Any:
    """The app's lifespan: at start, ingest the spool, publish the endpoint and start the
    daemon's tasks (with ``settings``, the daemon's); at stop, end them and close the core."""
    from hookd.watchers import notify
    from hookd.watchers.notify_config import load_config

    tcp_port = endpoint.port
    stop_watch = asyncio.Event()

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        counts = await core.ingest_spool()
        if counts["ingested"] or counts["invalid"]:
            log.info("spool: %s", counts)
        # Hook clients find us only from here on; what they spooled meanwhile is picked up
        # by the spool watcher's first pass, made once its watch is in place.
        if home.client_script.exists():
            # a bash client written by an older hookd may read an older endpoint line
            try:
                write_client(home)
            except OSError as e:
                log.warning("could not refresh %s: %s", home.client_script, e)
        write_private(home.endpoint_file, endpoint.line())
        watcher = asyncio.create_task(_watch_spool(core, stop_watch, settings.watch_backend))
        expiry = asyncio.create_task(core.run_expiry())
        defaulting = asyncio.create_task(core.run_defaults())
        notifier, notifying = notify.start(core, notify_config or load_config(home))
        tailer = Tailer(core, settings=settings)
        core.attach_tailer(tailer)
        tailing = asyncio.create_task(tailer.run(stop_watch))
        lanes = LaneWatch(core, LaneAlerts(notifier), question_after_s=notifier.config.question_after_s,
                          idle_inbox_after_s=notifier.config.idle_inbox_after_s, settings=settings)
        core.attach_lanes(lanes)
        laning = asyncio.create_task(lanes.run(stop_watch))
        retrying = asyncio.create_task(retry_until_back(core, stop_watch))
        hook_alerts = asyncio.create_task(HookAlerts(core, notifier).run(stop_watch))
        run_watch = asyncio.create_task(RunWatch(core, settings.liveness_s).run(stop_watch))
        unreturned = asyncio.create_task(core.unreturned_holds(time.time()))
        hub_tasks = _start_hub(core, home, settings, notifier, stop_watch) if settings.hub_url else []
        # what start-up made (modules, the app) lives as long as the daemon: the garbage
        # collector's full passes, pauses of the hook path, need not walk it again and again
        gc.freeze()
        log.info(
            "hookd %s serving %s on unix:%s and http://127.0.0.1:%d (pid %d)",
            __version__, home.root, sock_path, tcp_port, os.getpid(),
        )
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                home.endpoint_file.unlink()
            stop_watch.set()
            expiry.cancel()
            defaulting.cancel()
            notifying.cancel()
            await asyncio.gather(notifying, return_exceptions=True)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(tailing, 2)
            laning.cancel()
            retrying.cancel()
            hook_alerts.cancel()
            run_watch.cancel()
            unreturned.cancel()
            for t in hub_tasks:
                t.cancel()
            await asyncio.gather(*hub_tasks, return_exceptions=True)
            core.release_all()
            await core.bus.close()
            await core.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(watcher, 2)

    return lifespan
