"""The hub (hookd.hub, issue 25 stage 1) against a real PostgreSQL started by the tests
(tests/pg.py): the event log shipped in order from a cursor, once, whatever the hub does
(stopped, killed and restarted under load, away while the host works), and each host's role
kept to its own rows. The hub down never reaches an agent: every hook is answered meanwhile."""

from __future__ import annotations

import asyncio
import itertools
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterator

import asyncpg
import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess, wait_until
from hookd.hub import sql
from hookd.hub.config import redact, resolve
from hookd.models import ConfigError
from hookd.settings import Settings

from .conftest import TUI
from .inproc import InProc
from .pg import PgCluster, private_cluster

pytestmark = [pytest.mark.inproc, pytest.mark.xdist_group("hub")]

_names = itertools.count(1)
_sessions = itertools.count(1)


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    with private_cluster() as c:
        yield c


def pg(url: str, fn: Any, *args: Any) -> Any:
    """``fn(conn, *args)`` on a fresh connection to ``url``, from the test's thread."""
    async def go() -> Any:
        conn = await asyncpg.connect(url)
        try:
            return await fn(conn, *args)
        finally:
            await conn.close()
    return asyncio.run(go())


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

    def rows(self, host_url: str | None = None) -> list[tuple[int, str, str | None, Any]]:
        """(seq, kind, builder, data) of the host's rows (every row, read as the
        administrator, for ``host_url``'s role), in seq order."""
        async def read(conn: Any) -> Any:
            role = None if host_url is None else host_url.split("//")[1].split(":")[0]
            return await conn.fetch("SELECT seq, kind, builder, data::text FROM hookd.events"
                                    " WHERE $1::text IS NULL OR host_id = $1 ORDER BY host_id, seq", role)
        return [(r[0], r[1], r[2], json.loads(r[3])) for r in pg(self.admin, read)]


@pytest.fixture
def hub(cluster: PgCluster) -> Hub:
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


def test_the_event_log_ships_in_order_from_a_persisted_cursor(hub: Hub, home: Path) -> None:
    url = hub.host("ha")
    app = InProc(home, Settings(hub_url=url)).start()
    try:
        for _ in range(5):
            session(app)
        first = shipped(app, hub, url)  # every event, in order, as the host holds it
        assert len(first) >= 5
    finally:
        app.stop()
    # away from the hub (no hub configured) the host goes on ...
    app = InProc(home).start()
    try:
        for _ in range(3):
            session(app)
        everything = local(app)
    finally:
        app.stop()
    con = sqlite3.connect(Home.resolve(home).db)
    assert con.execute("SELECT seq FROM hub_cursor").fetchall() == [(first[-1][0],)]
    con.close()
    # ... and back on the hub it sends only what the hub lacks, from the cursor
    app = InProc(home, Settings(hub_url=url)).start()
    try:
        final = shipped(app, hub, url)
        assert final[:len(everything)] == everything
        view = app.core.hub.view()  # type: ignore[union-attr]
        assert view["sent"] == view["inserted"] == len(final) - len(first)  # none of the first sent again
        assert view["state"] == "up" and view["shipped_seq"] == final[-1][0] and "pw-" not in view["url"]
    finally:
        app.stop()


def test_a_hub_killed_and_restarted_under_load_loses_and_duplicates_nothing(hub: Hub, home: Path) -> None:
    url = hub.host("hb")
    app = InProc(home, Settings(hub_url=url)).start()
    done = threading.Event()
    answered = [0]

    def load() -> None:
        while not done.is_set():
            session(app, f"b{answered[0] % 4}")
            answered[0] += 1

    t = threading.Thread(target=load)
    t.start()
    try:
        wait_until(lambda: len(hub.rows(url)) >= 10, 60)
        hub.cluster.stop("immediate")  # as a crash: connections cut, no shutdown checkpoint
        during = answered[0]
        wait_until(lambda: app.core.hub.view()["state"] == "down", 60)  # type: ignore[union-attr]
        wait_until(lambda: answered[0] >= during + 20, 60)  # hooks answered while the hub is down
        hub.cluster.start()
        wait_until(lambda: answered[0] >= during + 40, 60)
    finally:
        done.set()
        t.join(60)
    try:
        rows = shipped(app, hub, url)  # nothing lost, nothing twice (the seqs are 1..N, each once)
        assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    finally:
        app.stop()


def test_a_host_offline_for_a_while_catches_up_and_its_hooks_never_wait(hub: Hub, home: Path) -> None:
    url = hub.host("hc")
    hub.cluster.stop()
    app = InProc(home, Settings(hub_url=url)).start()
    try:
        for n in range(20):  # every hook answered while the hub is away
            session(app, f"b{n % 3}")
        assert app.core.hub.view()["state"] in ("connecting", "down")  # type: ignore[union-attr]
        hub.cluster.start()
        rows = shipped(app, hub, url)
        view = app.core.hub.view()  # type: ignore[union-attr]
        assert view["inserted"] == len(rows) and view["state"] == "up"
    finally:
        app.stop()


def test_a_host_can_neither_read_nor_write_another_hosts_rows(hub: Hub) -> None:
    a, b = hub.host("ra"), hub.host("rb")
    role_b = b.split("//")[1].split(":")[0]
    pg(a, sql.ship, [(1, "k", "b1", None, 1.0, '{"x": 1}')], "test")
    pg(b, sql.ship, [(1, "k", "b9", None, 1.0, '{"x": 2}'), (2, "k", "b9", None, 2.0, '{}')], "test")

    async def as_a(conn: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "events": [tuple(r) for r in await conn.fetch("SELECT host_id, seq FROM hookd.events")],
            "hosts": [r[0] for r in await conn.fetch("SELECT host_id FROM hookd.hosts")],
            "update": await conn.execute("UPDATE hookd.hosts SET shipped_seq = 0 WHERE host_id = $1", role_b),
        }
        for name, stmt in [
            ("insert", f"INSERT INTO hookd.events (host_id, seq, kind, at, data) VALUES ('{role_b}', 9, 'k', 0, '{{}}')"),
            ("update_events", f"UPDATE hookd.events SET kind = 'x' WHERE host_id = '{role_b}'"),
            ("delete", f"DELETE FROM hookd.events WHERE host_id = '{role_b}'"),
            ("heartbeat_as_b", f"INSERT INTO hookd.hosts (host_id) VALUES ('{role_b}')"),
        ]:
            try:
                await conn.execute(stmt)
                out[name] = "allowed"
            except asyncpg.InsufficientPrivilegeError as e:
                out[name] = type(e).__name__
        return out

    seen = pg(a, as_a)
    role_a = a.split("//")[1].split(":")[0]
    assert seen == {"events": [(role_a, 1)], "hosts": [role_a], "update": "UPDATE 0",
                    "insert": "InsufficientPrivilegeError", "update_events": "InsufficientPrivilegeError",
                    "delete": "InsufficientPrivilegeError", "heartbeat_as_b": "InsufficientPrivilegeError"}
    assert [(s, k, b_, d) for s, k, b_, d in hub.rows(b)] == [(1, "k", "b9", {"x": 2}), (2, "k", "b9", {})]
    # an operator reads every host's rows and writes none
    pg(hub.admin, sql.add_operator, f"op_{hub.db}", "op-pw")
    op = hub.cluster.url(f"op_{hub.db}", "op-pw", hub.db)
    assert len(pg(op, sql.events)) == 3 and {h["host_id"] for h in pg(op, sql.hosts)} == {role_a, role_b}
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        pg(op, lambda c: c.execute("DELETE FROM hookd.events"))


@pytest.mark.daemon
def test_hookd_serve_ships_to_the_hub_named_by_HOOKD_HUB(hub: Hub, home: Path) -> None:
    url = hub.host("hd")
    d = DaemonProcess(home, env={"HOOKD_HUB": url}).start()
    try:
        c = d.client()
        wait_until(lambda: c.get("/v1/status")["hub"]["state"] == "up", 30)
        status = c.get("/v1/status")["hub"]
        assert status["url"] == redact(url) and status["host_id"] == url.split("//")[1].split(":")[0]
        c.post("/v1/hooks/claude-code/b1", (TUI / "001-SessionStart.json").read_bytes(),
               {"content-type": "application/json", "x-hookd-delivery": "d-1"})
        wait_until(lambda: len(hub.rows(url)) > 0, 30)
        assert c.get("/v1/status")["hub"]["shipped_seq"] == hub.rows(url)[-1][0]
    finally:
        d.stop()
        d.kill()


def test_the_hub_url_comes_from_the_flag_then_HOOKD_HUB_then_config_toml(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[hub]\nurl = "postgresql://h@hub/db?sslmode=verify-full"\n')
    assert resolve(tmp_path, None, None) == "postgresql://h@hub/db?sslmode=verify-full"  # TLS passed on as written
    assert resolve(tmp_path, None, "postgresql://e@hub/db") == "postgresql://e@hub/db"
    assert resolve(tmp_path, "postgres://f@hub/db", "postgresql://e@hub/db") == "postgres://f@hub/db"
    assert redact("postgresql://h:secret@hub:5432/db?sslmode=require") == "postgresql://h@hub:5432/db?sslmode=require"
    with pytest.raises(ConfigError, match="postgresql://"):
        resolve(tmp_path, "mysql://h:secret@hub/db", None)
    (tmp_path / "config.toml").write_text('[hub]\nurl = "postgresql://h@hub/db"\nuser = "x"\n')
    with pytest.raises(ConfigError, match="unknown key hub.user"):
        resolve(tmp_path, None, None)
    assert Settings.from_env({"HOOKD_HUB": " postgresql://e@hub/db "}).hub_url == "postgresql://e@hub/db"


def ask(app: InProc, builder: str) -> str:
    """A session of ``builder`` whose agent asks a question (AskUserQuestion's PreToolUse):
    the question's id."""
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "007-PreToolUse.json"):
        r = app.hook(json.loads((TUI / name).read_bytes()), builder)
        assert r.status_code == 200, r
    (q,) = app.questions("pending")
    return str(q["id"])


@pytest.mark.daemon
def test_an_operator_reads_every_hosts_lanes_and_questions_from_the_hub(cluster: PgCluster, tmp_path: Path) -> None:
    from .conftest import hookd_cli

    if not cluster.running():
        cluster.start()
    db = f"hub_{next(_names)}"
    pg(cluster.admin_url(), lambda c: c.execute(f"CREATE DATABASE {db}"))
    admin, cli_home = cluster.admin_url(db), tmp_path / "operator"
    r = hookd_cli(cli_home, "--hub", admin, "hub", "init")
    assert (r.returncode, r.stdout) == (0, "hub ready: add each host with `hookd --hub URL hub add-host NAME`\n"), r.stderr
    urls = {}
    for name in (f"ha_{db}", f"hb_{db}"):
        r = hookd_cli(cli_home, "--hub", admin, "hub", "add-host", name, "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["role"] == name and out["kind"] == "host" and out["url"].startswith(f"postgresql://{name}:")
        urls[name] = out["url"]
    r = hookd_cli(cli_home, "--hub", admin, "hub", "add-operator", f"op_{db}", "--json")
    op = json.loads(r.stdout)["url"]
    r = hookd_cli(cli_home, "--hub", admin, "hub", "add-host", "Bad-Name")
    assert r.returncode == 2 and "must be 1-48 of a-z" in r.stderr
    (ha, a_url), (hb, b_url) = urls.items()
    a = InProc(tmp_path / "a", Settings(hub_url=a_url)).start()
    b = InProc(tmp_path / "b", Settings(hub_url=b_url)).start()
    try:
        qid = ask(a, "b1")
        session(b, "b1")
        wait_until(lambda: a.get("/v1/lanes")[0]["state"] == "waiting_question", 30)
        h = Hub.__new__(Hub)
        h.admin = admin
        shipped(a, h, a_url)
        shipped(b, h, b_url)
        r = hookd_cli(cli_home, "--hub", op, "lanes", "--json")
        assert r.returncode == 0, r.stderr
        lanes = {(x["host_id"], x["builder"]): x for x in json.loads(r.stdout)}
        assert set(lanes) == {(ha, "b1"), (hb, "b1")}
        assert lanes[(ha, "b1")]["state"] == "waiting_question" and lanes[(ha, "b1")]["pending"] == [qid]
        assert lanes[(hb, "b1")]["state"] == "idle"
        r = hookd_cli(cli_home, "--hub", op, "lanes")
        assert r.stdout.split("\n")[0].split() == ["host", "builder", "lane", "for", "pending", "queued", "detail",
                                                   "host", "seen"]
        r = hookd_cli(cli_home, "--hub", op, "questions", "--json")
        (q,) = json.loads(r.stdout)
        assert (q["host_id"], q["id"], q["kind"], q["builder"]) == (ha, qid, "question", "b1")
        r = hookd_cli(cli_home, "--hub", op, "questions")
        head, row = r.stdout.splitlines()[0], r.stdout.splitlines()[2]
        assert head.split() == ["host", "id", "kind", "builder", "waiting", "what", "host", "seen"]
        assert row.split()[:4] == [ha, qid, "question", "b1"]
        # one host's role reads only its own rows; --hub on a command that cannot read the hub is refused
        r = hookd_cli(cli_home, "--hub", b_url, "lanes", "--json")
        assert [(x["host_id"], x["builder"]) for x in json.loads(r.stdout)] == [(hb, "b1")]
        r = hookd_cli(cli_home, "--hub", op, "send", "b1", "hi")
        assert r.returncode == 2 and "only lanes, questions, hub read the hub so far" in r.stderr
        r = hookd_cli(cli_home, "--hub", cluster.url(f"op_{db}", "wrong-pw", db), "lanes")  # (TCP: passwords)
        assert r.returncode == 1 and "password" in r.stderr and "wrong-pw" not in r.stderr
    finally:
        a.stop()
        b.stop()
