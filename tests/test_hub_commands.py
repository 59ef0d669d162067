"""Down to hosts (hookd.hub.commands, issue 25): operators' answers and messages queued on the
hub's ``commands`` table and applied by the owning host through its own answer and send paths,
against a real PostgreSQL (tests/pg.py) and two hosts in process, each with a builder ``b1``.

What is proven: an answer given on the hub releases the held PermissionRequest hook on the right
host (and the other host's stays held); a message reaches the right host's inbox; an answer
racing the desk or the local CLI is decided once (the loser refused with the local reason); a
host offline gets its command when it is back (queued meanwhile, and shown so); a restart does
not apply a command again; host A can neither read B's commands nor write their outcome; the
operator is the role that wrote the command, recorded by the database. The CLI's lines are
compared whole."""

from __future__ import annotations

import concurrent.futures
import json
import re
import sqlite3
from pathlib import Path
from typing import Any, Iterator

import asyncpg
import pytest

from hookd import clock
from hookd.config import Home
from hookd.daemonproc import wait_until
from hookd.hub import sql
from hookd.hub.config import redact
from hookd.settings import Settings

from .conftest import LOCAL_TIME, hookd_cli
from .hubrig import Hub, ask, cluster_fixture, fresh_hub, pg, role, session, shipped
from .inproc import InProc
from .pg import PgCluster
from .test_answers import bash_perm, bash_post
from .test_answers_inproc import Rig, finish, pending_permission

pytestmark = [pytest.mark.inproc]  # (its module-scoped cluster keeps its tests on one worker: tests/conftest.py)

cluster = pytest.fixture(scope="module")(cluster_fixture)


@pytest.fixture
def hub(cluster: PgCluster) -> Hub:
    return fresh_hub(cluster)


class Host:
    """One host: its role's URL, its home, its in-process daemon and a spawned builder b1
    (PermissionRequest held up to 30 s)."""

    def __init__(self, hub: Hub, tmp: Path, name: str):
        self.url = hub.host(name)
        self.id = role(self.url)
        self.home = tmp / name
        self.worktree = tmp / f"wt-{name}"
        self.worktree.mkdir()
        self.app: InProc | None = None
        self.rig: Rig | None = None

    def start(self) -> "Host":
        self.app = InProc(self.home, Settings(hub_url=self.url)).start()
        self.rig = Rig(self.app, self.worktree)
        core_hub: Any = self.app.core.hub
        wait_until(lambda: (core_hub.view()["commands"] or {}).get("state") == "up", 60,
                   what=lambda: f"{self.id}'s commands task up: {core_hub.view()}")
        return self

    def stop(self) -> None:
        if self.app is not None:
            self.app.stop()
            self.app = None

    def commands_view(self) -> dict[str, Any]:
        assert self.app is not None
        return self.app.core.hub.view()["commands"]  # type: ignore[union-attr,no-any-return]

    def held_permission(self, cmd: str) -> tuple[concurrent.futures.Future[Any], dict[str, Any]]:
        """A Bash PermissionRequest held on this host: (its hook's future, the interaction)."""
        assert self.rig is not None
        fut = self.rig.start_hook(bash_perm(cmd))
        p = pending_permission(self.rig)
        self.rig.held(p["id"])
        return fut, p


@pytest.fixture
def two(hub: Hub, tmp_path: Path) -> Iterator[tuple[Host, Host]]:
    a, b = Host(hub, tmp_path, "ha"), Host(hub, tmp_path, "hb")
    try:
        yield a.start(), b.start()
    finally:
        a.stop()
        b.stop()


def op_cli(hub_url: str, tmp: Path, *args: str) -> Any:
    return hookd_cli(tmp / "operator", "--hub", hub_url, *args)


def command_rows(hub: Hub) -> list[dict[str, Any]]:
    return [dict(r) for r in pg(hub.admin, lambda c: c.fetch(
        "SELECT id, kind, host_id, builder, interaction_id, operator, state, reason FROM hookd.commands ORDER BY seq"))]


def test_an_answer_on_the_hub_releases_the_held_hook_on_the_right_host(hub: Hub, two: tuple[Host, Host],
                                                                       tmp_path: Path) -> None:
    a, b = two
    op = hub.operator()
    held_a, p_a = a.held_permission("make deploy")
    held_b, p_b = b.held_permission("make deploy")  # the same prompt, the same builder name, on host B
    assert a.app is not None and b.app is not None
    # the operator sees both once each host's events are on the hub; the bare id is ambiguous
    wait_until(lambda: len(json.loads(op_cli(op, tmp_path, "questions", "--json").stdout)) == 2, 60)
    assert p_a["id"] == p_b["id"]  # (from the session, the input and the hook event: the same on both)
    r = op_cli(op, tmp_path, "answer", p_a["id"], "--option", "allow")
    assert (r.returncode, r.stderr) == (2, f"hookd: {p_a['id']} is pending on several hosts ({a.id}, {b.id}):"
                                           f" name one, as HOST/{p_a['id']}\n")
    # no choice at all: refused before anything is queued (the host would refuse it after)
    r = op_cli(op, tmp_path, "answer", f"{a.id}/{p_a['id']}", "--json")
    assert r.returncode == 2 and "an answer needs --option" in r.stderr, r
    assert op_cli(op, tmp_path, "inbox").stdout == "no commands\n"
    r = op_cli(op, tmp_path, "answer", f"{a.id}/{p_a['id']}", "--option", "allow")
    assert (r.returncode, r.stdout, r.stderr) == (
        0, f"{a.id}: answered {p_a['id']} (permission, b1): allow; goes to the agent through its hook\n", "")
    status, out = finish(held_a)
    assert status == 200 and json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    i = a.app.interaction(p_a["id"])
    assert (i["state"], i["decision"], i["surface"], i["actor"]) == ("answered", "allow", "hub", role(op))
    assert i["by"] == f"from the fleet's hub by {role(op)}"  # (what the CLI and the page say)
    assert b.app.interaction(p_b["id"])["state"] == "pending" and not held_b.done()  # B's hook still held
    (row,) = command_rows(hub)
    assert (row["kind"], row["host_id"], row["builder"], row["interaction_id"], row["operator"], row["state"]) == (
        "answer", a.id, "b1", p_a["id"], role(op), "applied")
    # B's is answered on its own (deny with a message), and its hold ends with that
    r = op_cli(op, tmp_path, "answer", f"{b.id}/{p_b['id']}", "--option", "deny", "--text", "not from here", "--json")
    c = json.loads(r.stdout)
    assert (r.returncode, c["state"], c["host_id"], c["operator"], c["result"]["delivery"]) == (
        0, "applied", b.id, role(op), "hook")
    assert json.loads(finish(held_b)[1])["hookSpecificOutput"]["decision"] == {
        "behavior": "deny", "message": "not from here"}
    assert a.commands_view()["applied"] == 1 and b.commands_view()["applied"] == 1


def test_a_send_reaches_the_right_hosts_inbox(hub: Hub, two: tuple[Host, Host], tmp_path: Path) -> None:
    a, b = two
    op = hub.operator()
    assert a.app is not None and b.app is not None
    for h in two:
        assert h.app is not None
        session(h.app, "b1")
    wait_until(lambda: len(json.loads(op_cli(op, tmp_path, "lanes", "--json").stdout)) == 2, 60)
    r = op_cli(op, tmp_path, "send", "b1", "hello")
    assert (r.returncode, r.stderr) == (2, f"hookd: b1 is a builder on several hosts ({a.id}, {b.id}): name one, as HOST/b1\n")
    r = op_cli(op, tmp_path, "send", f"{b.id}/b1", "look at the failing test", "--id", "k1")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{b.id}: queued m-1 for b1\n", "")
    (m,) = b.app.inbox("b1")
    assert (m["text"], m["author"], m["state"]) == ("look at the failing test", role(op), "queued")
    assert a.app.inbox("b1") == []
    # the same --id again is the same command (its first outcome); other text under it is refused
    r = op_cli(op, tmp_path, "send", f"{b.id}/b1", "look at the failing test", "--id", "k1")
    assert (r.returncode, r.stdout) == (0, f"{b.id}: queued m-1 for b1\n")
    r = op_cli(op, tmp_path, "send", f"{b.id}/b1", "other text", "--id", "k1")
    assert (r.returncode, r.stderr) == (2, f"hookd: command send:{b.id}:k1 was already queued with other content;"
                                           " use a new --id\n")
    assert len(b.app.inbox("b1")) == 1
    r = op_cli(op, tmp_path, "send", "nohost/b1", "hi")
    assert (r.returncode, r.stderr) == (1, "hookd: no host 'nohost' on the hub (`hookd --hub URL hub hosts` lists them)\n")
    r = op_cli(op, tmp_path, "send", f"{a.id}/nobody", "hi")
    assert (r.returncode, r.stderr) == (2, f"hookd: {a.id} refused it: builder 'nobody' is not known on this host\n")
    r = op_cli(op, tmp_path, "send", f"{a.id}/nobody", "hi again", "--json")
    c = json.loads(r.stdout)
    assert (r.returncode, c["state"], c["reason"], c["result"]) == (
        2, "refused", "builder 'nobody' is not known on this host", None)
    for unknown, says in (("nohost/b1", "no host 'nohost' on the hub"), ("b77", "no host has a builder 'b77'")):
        r = op_cli(op, tmp_path, "inbox", unknown)  # (as answer and send: exit 1; it printed "no commands")
        assert r.returncode == 1 and r.stderr.startswith(f"hookd: {says}"), r
    assert len(op_cli(op, tmp_path, "inbox", "nobody").stdout.splitlines()) == 4  # (its commands name it: known)
    r = op_cli(op, tmp_path, "inbox")
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["host", "kind", "builder", "for", "state", "since", "operator", "what"]
    cells = [re.split(r"\s{2,}", x.strip()) for x in lines[2:]]
    assert [(c[0], c[1], c[2], c[3], c[4], c[6], c[7]) for c in cells] == [
        (b.id, "send", "b1", "m-1", "applied", role(op), "look at the failing test"),
        (a.id, "send", "nobody", "-", "refused", role(op), "hi (refused: builder 'nobody' is not known on this host)"),
        (a.id, "send", "nobody", "-", "refused", role(op),
         "hi again (refused: builder 'nobody' is not known on this host)")]


def test_an_answer_racing_the_desk_or_the_cli_is_decided_once(hub: Hub, two: tuple[Host, Host], tmp_path: Path) -> None:
    a, _ = two
    op = hub.operator()
    assert a.app is not None and a.rig is not None
    # the desk first: the prompt is answered in the terminal (its PostToolUse), then the hub's
    held, p = a.held_permission("npm test")
    a.rig.hook(bash_post("npm test"))
    assert finish(held, timeout=20) == (200, b"")
    r = op_cli(op, tmp_path, "answer", f"{a.id}/{p['id']}", "--option", "allow")
    i = a.app.interaction(p["id"])
    assert (r.returncode, r.stdout) == (2, "")
    assert re.fullmatch(rf"hookd: {a.id} refused it: the desk answered first: {p['id']} is already allowed"
                        rf" at the desk at {LOCAL_TIME}; nothing was kept \(a bare decision or a form's content means"
                        r" nothing to the agent later\)\n", r.stderr), r.stderr
    assert (i["surface"], i["decision"]) == ("terminal", "allow")
    # a late answer with words is kept in the host's inbox: taking it back is a command of that host's
    r = op_cli(op, tmp_path, "answer", f"{a.id}/{p['id']}", "--option", "deny", "--text", "not that one",
               "--response-id", "late")
    assert r.returncode == 2 and r.stderr.endswith(
        f"; your answer was kept as inbox message m-1 for b1; take it back on {a.id} (a command run there):"
        " hookd inbox cancel m-1\n"), r.stderr
    r = op_cli(op, tmp_path, "inbox")
    assert f"take it back on {a.id} (a command run there): hookd inbox cancel m-1)" in r.stdout, r.stdout
    # the local CLI (the answer `hookd answer` posts) and the hub at once: exactly one wins, the
    # other is refused with the local reason
    held, p = a.held_permission("npm run lint")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        remote = pool.submit(op_cli, op, tmp_path, "answer", f"{a.id}/{p['id']}", "--option", "deny", "--text", "no")
        local = pool.submit(a.rig.answer, p["id"], options=["allow"])
        hub_r, cli_r = remote.result(120), local.result(120)
    assert (hub_r.returncode == 0) != (cli_r.status_code == 200), (hub_r, cli_r.text)
    winner = "hub" if hub_r.returncode == 0 else "cli"
    loser = cli_r.json()["error"]["message"] if winner == "hub" else hub_r.stderr
    assert f"{p['id']} is already " in loser and (winner == "hub" or hub_r.returncode == 2), loser
    decision = json.loads(finish(held)[1])["hookSpecificOutput"]["decision"]["behavior"]
    assert decision == ("deny" if winner == "hub" else "allow")
    assert a.app.interaction(p["id"])["surface"] == winner
    assert [r["state"] for r in command_rows(hub)] == ["refused", "refused", "applied" if winner == "hub" else "refused"]


def test_a_host_offline_gets_its_command_when_it_is_back_and_a_restart_applies_nothing_again(
        hub: Hub, tmp_path: Path) -> None:
    a = Host(hub, tmp_path, "ho")
    op = hub.operator()
    a.start()
    try:
        assert a.app is not None
        session(a.app, "b1")
        wait_until(lambda: json.loads(op_cli(op, tmp_path, "lanes", "--json").stdout), 60)
    finally:
        a.stop()
    r = op_cli(op, tmp_path, "send", f"{a.id}/b1", "while you were away", "--no-wait")
    created = pg(hub.admin, lambda c: c.fetchval("SELECT created_at FROM hookd.commands"))
    assert r.returncode == 0 and re.fullmatch(
        rf"queued for {a.id} since {re.escape(clock.when(created.timestamp()))} \(host seen \d+s ago\): {a.id} applies"
        r" it when it next reads the hub; `hookd --hub URL inbox` shows what becomes of it\n", r.stdout), r.stdout
    r = op_cli(op, tmp_path, "send", f"{a.id}/b1", "still away", "--wait", "0.5", "--json")
    assert json.loads(r.stdout)["state"] == "queued"
    lanes = json.loads(op_cli(op, tmp_path, "lanes", "--json").stdout)
    assert [(x["host_id"], x["builder"], x["sends_queued"]) for x in lanes] == [(a.id, "b1", 2)]
    assert [x.split()[4] for x in op_cli(op, tmp_path, "inbox").stdout.splitlines()[2:]] == ["queued", "queued"]
    a.start()  # back: both applied, in order
    try:
        assert a.app is not None
        wait_until(lambda: [r["state"] for r in command_rows(hub)] == ["applied", "applied"], 60)
        assert [m["text"] for m in a.app.inbox("b1")] == ["while you were away", "still away"]
    finally:
        a.stop()
    # an outcome the hub lost (written back, then the row queued again as if the reply was
    # lost): the restarted host ships its recorded outcome and applies nothing again
    requeue(hub)
    a.start()
    try:
        assert a.app is not None
        wait_until(lambda: [r["state"] for r in command_rows(hub)] == ["applied", "applied"], 60)
        assert len(a.app.inbox("b1")) == 2 and a.commands_view()["applied"] == 0
    finally:
        a.stop()
    # and with the local record gone too, the message key the command carries takes it once
    con = sqlite3.connect(Home.resolve(a.home).db)
    assert con.execute("SELECT count(*) FROM hub_commands WHERE hub = ?", (redact(a.url),)).fetchone() == (2,)
    con.execute("DELETE FROM hub_commands")
    con.commit()
    con.close()
    requeue(hub)
    a.start()
    try:
        assert a.app is not None
        wait_until(lambda: [r["state"] for r in command_rows(hub)] == ["applied", "applied"], 60)
        assert len(a.app.inbox("b1")) == 2
    finally:
        a.stop()


def test_an_answer_queued_for_a_host_offline_shows_on_its_question(hub: Hub, tmp_path: Path) -> None:
    a = Host(hub, tmp_path, "hq")
    op = hub.operator()
    a.start()
    try:
        assert a.app is not None
        qid = ask(a.app, "b1")
        wait_until(lambda: json.loads(op_cli(op, tmp_path, "questions", "--json").stdout), 60)
    finally:
        a.stop()
    r = op_cli(op, tmp_path, "answer", qid, "--option", "Red", "--no-wait")  # (the bare id: one host has it)
    assert r.returncode == 0 and r.stdout.startswith(f"queued for {a.id} since "), r.stdout
    (q,) = json.loads(op_cli(op, tmp_path, "questions", "--json").stdout)
    assert (q["host_id"], q["id"], q["answers_queued"]) == (a.id, qid, 1)
    lines = op_cli(op, tmp_path, "questions").stdout.splitlines()
    at = lines[0].index("answers queued")
    assert lines[2][at:].split()[0] == "1"
    a.start()  # back: the answer goes through the host's answer path like any other
    try:
        assert a.app is not None
        wait_until(lambda: [r["state"] for r in command_rows(hub)] != ["queued"], 60)
        i = a.app.interaction(qid)
        assert (i["state"], i["surface"], i["actor"], i["answers"]) == (
            "answered", "hub", role(op), {"Which color do you prefer?": "Red"})
    finally:
        a.stop()


def requeue(hub: Hub) -> None:
    """Put every command back to queued, as the hub's administrator (past the outcome trigger)."""
    async def go(c: Any) -> None:
        async with c.transaction():
            await c.execute("ALTER TABLE hookd.commands DISABLE TRIGGER outcome")
            await c.execute("UPDATE hookd.commands SET state = 'queued', reason = NULL, result = NULL, applied_at = NULL")
            await c.execute("ALTER TABLE hookd.commands ENABLE TRIGGER outcome")
    pg(hub.admin, go)


def test_a_host_can_neither_read_nor_write_another_hosts_commands(hub: Hub) -> None:
    a_url, b_url = hub.host("ca"), hub.host("cb")
    a, b = role(a_url), role(b_url)
    op = hub.operator()
    pg(hub.admin, sql.install)  # (the schema's migration again: idempotent)
    for host in (a, b):
        pg(op, sql.put_command, f"send:{host}:1", "send", host, "b1", None, None, None, '{"text": "hi"}')

    async def as_a(conn: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"seen": [r[0] for r in await conn.fetch("SELECT id FROM hookd.commands")],
                               "queued": [r["id"] for r in await sql.queued_commands(conn)],
                               "b_outcome": await sql.set_outcome(conn, f"send:{b}:1", "applied", None, None, 0)}
        for name, stmt in [
            ("insert", f"INSERT INTO hookd.commands (id, kind, host_id, payload) VALUES ('x', 'send', '{a}', '{{}}')"),
            ("payload", "UPDATE hookd.commands SET payload = '{}'"),
            ("host_id", f"UPDATE hookd.commands SET host_id = '{b}'"),
            ("delete", "DELETE FROM hookd.commands"),
        ]:
            try:
                out[name] = await conn.execute(stmt)
            except asyncpg.InsufficientPrivilegeError as e:
                out[name] = type(e).__name__
        return out

    seen = pg(a_url, as_a)
    assert seen == {"seen": [f"send:{a}:1"], "queued": [f"send:{a}:1"], "b_outcome": False,
                    "insert": "InsufficientPrivilegeError", "payload": "InsufficientPrivilegeError",
                    "host_id": "InsufficientPrivilegeError", "delete": "InsufficientPrivilegeError"}
    assert pg(a_url, sql.set_outcome, f"send:{a}:1", "applied", None, None, 0) is True
    assert pg(a_url, sql.set_outcome, f"send:{a}:1", "refused", "again", None, 0) is False  # written once
    rows = {r["id"]: r for r in command_rows(hub)}
    assert rows[f"send:{b}:1"]["state"] == "queued" and rows[f"send:{a}:1"]["state"] == "applied"
    # the operator is the role that wrote it, whatever the client says; operators write nothing else
    assert {r["operator"] for r in rows.values()} == {role(op)}

    async def as_op(conn: Any) -> dict[str, Any]:
        out = {}
        for name, stmt in [
            ("operator", f"INSERT INTO hookd.commands (id, kind, host_id, payload, operator) VALUES"
                         f" ('y', 'send', '{a}', '{{}}', 'someone_else')"),
            ("outcome", "UPDATE hookd.commands SET state = 'applied'"),
            ("delete", "DELETE FROM hookd.commands"),
            ("events", f"INSERT INTO hookd.events (host_id, seq, kind, at, data) VALUES ('{a}', 99, 'k', 0, '{{}}')"),
        ]:
            try:
                out[name] = await conn.execute(stmt)
            except asyncpg.InsufficientPrivilegeError as e:
                out[name] = type(e).__name__
        return out

    assert pg(op, as_op) == {k: "InsufficientPrivilegeError" for k in ("operator", "outcome", "delete", "events")}


def test_lanes_queued_is_the_hosts_inbox_as_it_ships_it_plus_the_hubs_queued_sends(hub: Hub, tmp_path: Path) -> None:
    a = Host(hub, tmp_path, "ha").start()
    try:
        assert a.app is not None
        app = a.app
        session(app, "b1")
        op = hub.operator()
        for n in range(3):  # sent from the hub, applied: queued in the host's inbox
            r = op_cli(op, tmp_path, "send", f"{a.id}/b1", f"note {n}")
            assert r.returncode == 0 and r.stdout == f"{a.id}: queued m-{n + 1} for b1\n", (r.stdout, r.stderr)
        assert app.request("POST", "/v1/builders/b1/messages", json={"text": "from here"}).status_code == 201
        assert app.request("POST", "/v1/messages/m-1/cancel", json={}).status_code == 200
        (lane,) = [x for x in app.get("/v1/lanes") if x["builder"] == "b1"]
        assert lane["queued"] == 3  # m-2, m-3, m-4
        shipped(app, hub, a.url)
        lanes = json.loads(op_cli(op, tmp_path, "lanes", "--json").stdout)
        assert [(x["builder"], x["state"], x["queued"], x["sends_queued"]) for x in lanes] == [("b1", "idle", 3, 0)]
        a.stop()  # the host offline: a send waits on the hub, counted beside the host's inbox
        r = op_cli(op, tmp_path, "send", f"{a.id}/b1", "later", "--no-wait")
        assert r.returncode == 0, r.stderr
        lanes = json.loads(op_cli(op, tmp_path, "lanes", "--json").stdout)
        assert [(x["queued"], x["sends_queued"]) for x in lanes] == [(3, 1)]
        (row,) = op_cli(op, tmp_path, "lanes").stdout.splitlines()[2:]
        assert row.split()[:2] == [a.id, "b1"] and row.split()[5] == "4", row
    finally:
        a.stop()
