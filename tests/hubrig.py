"""What the hub's tests share (tests/test_hub.py, tests/test_hub_cli.py): a private cluster per
module (tests/pg.py), a fresh hub database per test with its hosts' roles, hooks that make
events, and the wait until a host's log is on the hub."""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
from typing import Any, Iterator

import asyncpg

from hookd.daemonproc import wait_until
from hookd.hub import sql

from .conftest import TUI
from .inproc import InProc
from .pg import PgCluster, private_cluster

_names = itertools.count(1)
_sessions = itertools.count(1)


def cluster_fixture() -> Iterator[PgCluster]:
    """The module's cluster, TLS on (each hub test module: ``cluster =
    pytest.fixture(scope="module")(cluster_fixture)``)."""
    with private_cluster(ssl=True) as c:
        yield c


def pg(url: str, fn: Any, *args: Any) -> Any:
    """``fn(conn, *args)`` on a fresh connection to ``url``, in a thread of its own (the test's
    thread may have an event loop marked running: Playwright's sync API leaves its loop so
    between the browser tests of a worker, where ``asyncio.run`` is refused)."""
    async def go() -> Any:
        conn = await asyncpg.connect(url)
        try:
            return await fn(conn, *args)
        finally:
            await conn.close()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, go()).result()


class Hub:
    """A fresh hub database on ``cluster`` (schema installed) and its hosts' URLs."""

    def __init__(self, cluster: PgCluster):
        self.cluster = cluster
        self.db = f"hub_{next(_names)}"
        pg(cluster.admin_url(), lambda c: c.execute(f"CREATE DATABASE {self.db}"))
        self.admin = cluster.admin_url(self.db)
        pg(self.admin, sql.install)

    def host(self, name: str) -> str:
        """A new host role (unique on the cluster: roles are the cluster's) and its URL."""
        role = f"{name}_{self.db}"
        pg(self.admin, sql.add_host, role, f"pw-{role}")
        return self.cluster.url(role, f"pw-{role}", self.db)

    def operator(self, name: str = "op") -> str:
        """A new operator role (unique on the cluster) and its URL."""
        role = f"{name}_{self.db}"
        pg(self.admin, sql.add_operator, role, f"pw-{role}")
        return self.cluster.url(role, f"pw-{role}", self.db)

    def rows(self, host_url: str | None = None) -> list[tuple[int, str, str | None, Any]]:
        """(seq, kind, builder, data) of the host's rows (every row, read as the
        administrator, for ``host_url``'s role), in seq order."""
        async def read(conn: Any) -> Any:
            role = None if host_url is None else host_url.split("//")[1].split(":")[0]
            return await conn.fetch("SELECT seq, kind, builder, data::text FROM hookd.events"
                                    " WHERE $1::text IS NULL OR host_id = $1 ORDER BY host_id, seq", role)
        return [(r[0], r[1], r[2], json.loads(r[3])) for r in pg(self.admin, read)]


def fresh_hub(cluster: PgCluster) -> Hub:
    """A fresh hub database on ``cluster`` (started again if a test left it stopped)."""
    if not cluster.running():
        cluster.start()
    return Hub(cluster)


def session(app: InProc, builder: str = "b1") -> None:
    """One SessionStart hook of a new session (events: the session's start, its lane)."""
    p = json.loads((TUI / "001-SessionStart.json").read_bytes())
    p["session_id"] = f"s-{next(_sessions)}"
    r = app.hook(p, builder)
    assert r.status_code == 200, r


def local(app: InProc) -> list[tuple[int, str, str | None, Any]]:
    return [(e["seq"], e["kind"], e["builder"], e["data"]) for e in app.events()]


def shipped(app: InProc, h: Hub, url: str) -> list[tuple[int, str, str | None, Any]]:
    """Wait until the hub holds exactly the host's event log (read again at each look: the
    lanes append events of their own); return the hub's rows."""
    wait_until(lambda: h.rows(url) == local(app), 60)
    return h.rows(url)


def role(url: str) -> str:
    """The role (a host's id) of a role's URL."""
    return url.split("//")[1].split(":")[0]


def ask(app: InProc, builder: str) -> str:
    """A session of ``builder`` whose agent asks a question (AskUserQuestion's PreToolUse):
    the question's id."""
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "007-PreToolUse.json"):
        r = app.hook(json.loads((TUI / name).read_bytes()), builder)
        assert r.status_code == 200, r
    (q,) = app.questions("pending")
    return str(q["id"])

