"""One notifier for the fleet (hookd.hub.fleet, docs/fleet.md "One notifier for the fleet")
against a real PostgreSQL (tests/pg.py) and three real daemons sharing a hub: A and B may lead
(members of hookd_notifier), C may not. Every daemon's notifications go to a `command`
channel that appends them to a file of its own, so what each host sent is read back: a
question is notified once, by the lead, whichever host asked it; the lead killed, B takes the
lead and nothing is lost or sent twice; the hub down, each host notifies its own questions, and
the hub back, the lead sends none of them again. Also: a host with `notify = "local"`, a lead
whose channel fails, a lead killed mid-send, the notifier role's rights, `[hub]`'s checks."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from hookd.daemonproc import DaemonProcess, wait_until
from hookd.hub import fleet_sql, sql
from hookd.hub.config import notify_settings, resolve
from hookd.models import ConfigError

from .conftest import TUI, events, hookd_cli
from .hubrig import Hub, cluster_fixture, fresh_hub, pg
from .pg import PgCluster

pytestmark = [pytest.mark.daemon]  # (its module-scoped cluster keeps its tests on one worker: tests/conftest.py)

cluster = pytest.fixture(scope="module")(cluster_fixture)
_sessions = itertools.count(1)


class Host:
    """A daemon shipping to the hub as its own host, notifying into ``out`` (one JSON alert a
    line; ``broken``: a channel that fails), leaving its steps to a lead for ``grace_s`` (long
    enough for the lead to have them under load: a lead that has not sent within it is
    overtaken by the host, by design)."""

    def __init__(self, hub: Hub, tmp: Path, name: str, notifier: bool, notify: str = "fleet", broken: bool = False,
                 grace_s: float = 5, stuck: bool = False):
        self.url = hub.host(name)
        self.role = self.url.split("//")[1].split(":")[0]
        if notifier:
            pg(hub.admin, fleet_sql.grant_notifier, self.role)
        self.home = tmp / name
        self.home.mkdir()
        self.out = tmp / f"{name}.notified"
        script = f"import sys; open({str(self.out)!r}, 'ab').write(sys.stdin.buffer.read() + b'\\n')"
        if broken:  # (a channel that never takes an alert)
            script = "import sys; sys.exit(3)"
        self.pid_file = tmp / f"{name}.channel-pid"
        if stuck:  # (a channel that has written the alert and never returns: the send is in flight)
            script = (f"import os, signal, sys; open({str(self.out)!r}, 'ab').write(sys.stdin.buffer.read() + b'\\n');"
                      f" open({str(self.pid_file)!r}, 'w').write(str(os.getpid())); signal.pause()")
        (self.home / "config.toml").write_text(
            f"[hub]\nurl = {json.dumps(self.url)}\nnotify = \"{notify}\"\nnotify_grace_s = {grace_s}\n\n"
            "[notify]\nquestion_after_s = 0\nsteps_s = [0]\nretry_attempts = 1\n\n"
            f"[[notify.channel]]\ntype = \"command\"\nname = \"log\"\ntimeout_s = 600\n"
            f"command = {json.dumps([sys.executable, '-c', script])}\n")
        self.d = DaemonProcess(self.home)

    def start(self) -> "Host":
        self.d.start()
        wait_until(lambda: self.notify()["link"] == "up", 30, what=lambda: f"{self.role} linked: {self.notify()}")
        return self

    def notify(self) -> dict[str, Any]:
        return dict(self.d.client().get("/v1/status")["hub"]["notify"])

    def role_now(self) -> str | None:
        n = self.notify()["notifier"]
        return None if n is None else str(n["role"])

    def ask(self, builder: str) -> str:
        """A new session of ``builder`` whose agent asks a question: the question's id."""
        sid = f"fleet-{next(_sessions)}"
        for n, name in enumerate(("001-SessionStart.json", "002-UserPromptSubmit.json", "007-PreToolUse.json")):
            p = json.loads((TUI / name).read_bytes())
            p["session_id"] = sid
            if "tool_use_id" in p:
                p["tool_use_id"] = f"toolu_{sid}"
            self.d.client().post(f"/v1/hooks/claude-code/{builder}", json.dumps(p).encode(),
                                 {"content-type": "application/json", "x-hookd-delivery": f"{sid}-{n}"})
        return f"toolu_{sid}"

    def sent(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.out.read_text().splitlines() if x.strip()] if self.out.exists() else []

    def stop(self) -> None:
        self.d.stop()
        self.d.kill()


@pytest.fixture
def fleet(cluster: PgCluster, tmp_path: Path) -> Any:
    hub = fresh_hub(cluster)
    hosts = {n: Host(hub, tmp_path, n, notifier=n != "c") for n in ("a", "b", "c")}
    hosts["a"].start()
    wait_until(lambda: hosts["a"].role_now() == "lead", 30, what="A leading")
    for n in ("b", "c"):
        hosts[n].start()
    wait_until(lambda: hosts["b"].role_now() == "standby" and hosts["c"].role_now() == "not_allowed", 30,
               what=lambda: f"B standing by, C not allowed: {hosts['b'].notify()}, {hosts['c'].notify()}")
    wait_until(lambda: all(h.notify()["lead_present"] for h in hosts.values()), 30, what="every link seeing the lead")
    try:
        yield hub, hosts
    finally:
        for h in hosts.values():
            h.stop()


def _status_line(h: Host) -> str:
    """``hookd status``'s line on the fleet's notifications."""
    r = hookd_cli(h.home, "status")
    assert r.returncode == 0, r.stderr
    return next(x for x in r.stdout.splitlines() if x.startswith("notifications: "))


def _lead(hub: Hub) -> str | None:
    """The role whose session holds the lead's lock on the hub now (None: no lead), as the
    hub's administrator sees it."""
    return pg(hub.admin, lambda c: c.fetchval(
        "SELECT a.usename FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND l.classid = $1::int8::oid AND l.objid = 0 AND l.granted", fleet_sql.LEAD_CLASS))


def _about(hosts: dict[str, Host], qid: str) -> dict[str, list[str]]:
    """Host name -> the hosts whose question ``qid`` it notified (its alerts' ``data.host``, or
    its own role for a host's own alert)."""
    return {n: [a["data"].get("host", h.role) for a in h.sent() if a["key"] == f"interaction:{qid}"]
            for n, h in hosts.items()}


def test_a_question_on_any_host_is_notified_once_by_the_lead_and_failover_loses_and_repeats_nothing(fleet: Any) -> None:
    hub, hosts = fleet
    a, b, c = hosts["a"], hosts["b"], hosts["c"]
    # C may not lead: it holds no connection for it (B, standing by, holds one: its last
    # statement asked for the lead's lock)
    assert c.notify()["notifier"] == {"role": "not_allowed", "state": "idle", "notified": 0}

    def candidates(h: Host) -> int:
        return int(pg(hub.admin, lambda conn: conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND (query LIKE '%pg_has_role%'"
            " OR query LIKE '%pg_try_advisory_lock%')", h.role)))
    assert (candidates(b), candidates(c)) == (1, 0)
    asked = {n: h.ask("b1") for n, h in hosts.items()}  # on B and C, and on the lead's own host
    for n, qid in asked.items():
        wait_until(lambda qid=qid: _about(hosts, qid)["a"], 30, what=f"A notifying {n}'s question")
    # each host left its question to the fleet (its grace over, the hub said the lead had sent it)
    wait_until(lambda: all(h.notify()["by_fleet"] == 1 for h in hosts.values()), 30,
               what=lambda: f"every host leaving its question to the fleet: {[h.notify() for h in hosts.values()]}")
    for n, qid in asked.items():
        assert _about(hosts, qid) == {"a": [hosts[n].role], "b": [], "c": []}
    assert _status_line(a) == "notifications: fleet (this host is the fleet's notifier; 1 left to it, 0 sent here)"
    assert _status_line(b) == "notifications: fleet (the fleet's notifier sends them; 1 left to it, 0 sent here)"
    alert = next(x for x in a.sent() if x["key"] == f"interaction:{asked['b']}")
    assert alert["title"].startswith(f"[{b.role}] hookd: b1") and alert["message"].startswith(f"on host {b.role}: b1 ")
    assert sorted((r["host_id"], r["step"], r["notified_by"], r["via"]) for r in pg(hub.admin, fleet_sql.notified)) == sorted(
        (h.role, 0, a.role, "fleet") for h in hosts.values())

    # the lead killed: a question asked meanwhile is notified once (by B once it leads, or
    # by C itself if it decided while no lead was there), and B leads from then on
    a.d.kill()
    during = c.ask("b2")
    wait_until(lambda: b.role_now() == "lead", 30, what="B taking the lead")
    # (C's link looks for a lead every second: one it has not seen yet, C sends at once itself)
    wait_until(lambda: c.notify()["lead_present"], 30, what="C seeing the lead")
    after = c.ask("b3")
    wait_until(lambda: _about(hosts, after)["b"], 30, what="B notifying C's question")
    wait_until(lambda: sum(map(len, _about(hosts, during).values())) == 1, 30, what="the question asked during failover notified")
    wait_until(lambda: c.notify()["by_fleet"] + c.notify()["here"] == 3, 30, what=lambda: f"C deciding: {c.notify()}")
    assert _about(hosts, after) == {"a": [], "b": [c.role], "c": []}
    assert sum(map(len, _about(hosts, during).values())) == 1, _about(hosts, during)
    for qid in asked.values():  # nothing of before sent again
        assert sum(map(len, _about(hosts, qid).values())) == 1


def test_the_hub_down_each_host_notifies_its_own_and_back_up_none_is_sent_twice(fleet: Any) -> None:
    hub, hosts = fleet
    b, c = hosts["b"], hosts["c"]
    hub.cluster.stop("immediate")
    wait_until(lambda: all(h.notify()["link"] == "down" for h in hosts.values()), 30, what="every link down")
    away = {n: hosts[n].ask("b1") for n in ("b", "c")}
    for n, qid in away.items():
        wait_until(lambda n=n, qid=qid: _about(hosts, qid)[n], 30, what=f"{n} notifying its own question")
    hub.cluster.start()
    who = wait_until(lambda: _lead(hub), 60, what="a lead again")
    lead = next(h for h in hosts.values() if h.role == who)
    for h in hosts.values():
        wait_until(lambda h=h: h.notify()["link"] == "up" and h.notify()["lead_present"], 60,
                   what=f"{h.role} linked again, seeing the lead")
    # the fleet works again: a new question is the lead's; the lead has read the ones of the
    # outage by then (pending, shipped before it) and left them alone
    fresh = c.ask("b2")
    wait_until(lambda: _about(hosts, fresh)[next(n for n, h in hosts.items() if h is lead)], 60,
               what=lambda: f"{lead.role} notifying a question after the outage: {_about(hosts, fresh)}, "
                            f"{[h.notify() for h in hosts.values()]}")
    for n, qid in away.items():
        assert _about(hosts, qid) == {m: [hosts[n].role] if m == n else [] for m in hosts}, _about(hosts, qid)
    claims = {(r["host_id"], r["interaction_id"]): r["notified_by"] for r in pg(hub.admin, fleet_sql.notified)}
    assert {claims.get((hosts[n].role, qid)) for n, qid in away.items()} == {b.role, c.role}


def test_a_host_that_notifies_locally_is_left_alone_by_the_lead(cluster: PgCluster, tmp_path: Path) -> None:
    hub = fresh_hub(cluster)
    hosts = {"a": Host(hub, tmp_path, "a", notifier=True), "d": Host(hub, tmp_path, "d", notifier=True, notify="local")}
    a, d = hosts["a"], hosts["d"]
    try:
        a.start()
        wait_until(lambda: _lead(hub) == a.role, 30, what="A leading")
        d.start()
        assert d.notify()["notifier"] is None  # (notify = "local": never a candidate)
        mine = d.ask("b1")
        wait_until(lambda: _about(hosts, mine)["d"], 30, what="D notifying its own question")
        later = a.ask("b1")  # (the lead reads pending interactions oldest first: D's before this one)
        wait_until(lambda: _about(hosts, later)["a"], 30, what="A notifying its own question through the fleet")
        assert _about(hosts, mine) == {"a": [], "d": [d.role]}
        assert d.notify()["here"] == 1 and d.notify()["by_fleet"] == 0
        assert _status_line(d) == "notifications: local (this host sends its own alerts)"
    finally:
        for h in hosts.values():
            h.stop()


def test_a_step_no_channel_of_the_lead_took_is_sent_by_its_host(cluster: PgCluster, tmp_path: Path) -> None:
    hub = fresh_hub(cluster)
    hosts = {"a": Host(hub, tmp_path, "a", notifier=True, broken=True),
             "b": Host(hub, tmp_path, "b", notifier=False, grace_s=1)}
    a, b = hosts["a"], hosts["b"]
    try:
        a.start()
        wait_until(lambda: _lead(hub) == a.role, 30, what="A leading")
        b.start()
        wait_until(lambda: b.notify()["lead_present"], 30, what="B seeing the lead")
        qid = b.ask("b1")
        wait_until(lambda: _about(hosts, qid)["b"], 30, what="B sending its question itself after its grace")
        assert b.notify()["here"] == 1 and b.notify()["by_fleet"] == 0
        failed = [e for e in events(a.home) if e["kind"] == "notification_failed"]
        assert failed and all(e["data"]["host"] == b.role and e["data"]["key"] == f"interaction:{qid}" for e in failed)
        assert [(r["host_id"], r["notified_by"], r["via"]) for r in pg(hub.admin, fleet_sql.notified)] == [
            (b.role, b.role, "host")]
    finally:
        for h in hosts.values():
            h.stop()


def test_a_lead_killed_mid_send_leaves_the_step_to_the_next_lead(cluster: PgCluster, tmp_path: Path) -> None:
    hub = fresh_hub(cluster)
    hosts = {"a": Host(hub, tmp_path, "a", notifier=True, stuck=True), "b": Host(hub, tmp_path, "b", notifier=True)}
    a, b = hosts["a"], hosts["b"]
    try:
        a.start()
        wait_until(lambda: _lead(hub) == a.role, 30, what="A leading")
        b.start()
        wait_until(lambda: b.role_now() == "standby" and b.notify()["lead_present"], 30, what="B standing by")
        qid = b.ask("b1")
        wait_until(lambda: _about(hosts, qid)["a"] and a.pid_file.exists(), 30, what="A's send in flight")
        assert pg(hub.admin, fleet_sql.notified) == []  # (its claim is not committed while it sends)
        a.d.kill()
        wait_until(lambda: _about(hosts, qid)["b"], 30, what="the next lead (or B itself) sending it")
        # sent again: the first send's channel had it, its claim never committed (docs/fleet.md "Limits")
        assert _about(hosts, qid) == {"a": [b.role], "b": [b.role]}
        # (B's claim, as the lead or as the question's host once its grace is over, commits once sent)
        rows = wait_until(lambda: pg(hub.admin, fleet_sql.notified), 30, what="B's claim committed")
        assert [(r["host_id"], r["notified_by"]) for r in rows] == [(b.role, b.role)]
    finally:
        for h in hosts.values():
            h.stop()
        if a.pid_file.exists():  # (the stuck channel's process, A's child, outlives A's kill)
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(a.pid_file.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("table, error", [
    ('notify = "both"', 'hub.notify must be "fleet" or "local" (got \'both\')'),
    ("notify_grace_s = -1", "hub.notify_grace_s must be a number of seconds, at least 0 (got -1)"),
    ("notifier = true", "unknown key hub.notifier (known: url, notify, notify_grace_s)"),
])
def test_the_hub_tables_notify_settings_are_checked_at_start(tmp_path: Path, table: str, error: str) -> None:
    (tmp_path / "config.toml").write_text(f'[hub]\nurl = "postgresql://h@hub/hookd"\n{table}\n')
    with pytest.raises(ConfigError) as e:
        resolve(tmp_path, None, None)
    assert str(e.value) == f"{tmp_path / 'config.toml'}: {error}"


def test_notify_defaults_to_the_fleet_with_a_10_s_grace(tmp_path: Path) -> None:
    assert notify_settings(tmp_path) == ("fleet", 10.0)
    (tmp_path / "config.toml").write_text('[hub]\nnotify = "local"\nnotify_grace_s = 5\n')
    assert notify_settings(tmp_path) == ("local", 5.0)


def test_only_a_notifier_reads_other_hosts_interactions_and_it_claims_only_as_the_fleet(cluster: PgCluster,
                                                                                       tmp_path: Path) -> None:
    hub = fresh_hub(cluster)
    a_url, b_url, c_url = hub.host("na"), hub.host("nb"), hub.host("nc")
    a, b, c = (u.split("//")[1].split(":")[0] for u in (a_url, b_url, c_url))
    (tmp_path / "pw").write_text(f"pw-{a}\n")  # (add-host on an existing role sets its password: the same one)
    r = hookd_cli(tmp_path / "op", "--hub", hub.admin, "hub", "add-host", a, "--notifier", "--password-file",
                  str(tmp_path / "pw"), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["notifier"] is True, r.stderr
    pg(b_url, sql.ship, [(1, "question_pending", "b1", None, 1.0, '{"id": "q1", "kind": "question"}'),
                         (2, "lane_changed", "b1", None, 1.0, '{"to": "waiting"}')], "test")

    def kinds(url: str) -> list[str]:
        return [r["kind"] for r in pg(url, sql.events, b)]
    assert kinds(a_url) == ["question_pending"]  # the notifier: B's interaction events, nothing else of B's
    assert kinds(c_url) == []  # a plain host: nothing of B's
    with pytest.raises(asyncpg.InsufficientPrivilegeError):  # not in B's name ...
        pg(a_url, lambda conn: conn.execute("INSERT INTO hookd.notified (host_id, interaction_id, step, notified_by)"
                                            " VALUES ($1, 'q1', 0, $1)", b))
    with pytest.raises(asyncpg.InsufficientPrivilegeError):  # ... and a plain host claims no other host's step
        pg(c_url, fleet_sql.claim_new, b, "q1", 0, 1)
    assert pg(a_url, fleet_sql.claim_new, b, "q1", 0, 1) is True
    assert pg(b_url, fleet_sql.claim, "q1", 0, 1) is False  # B finds its step claimed by the fleet
    assert pg(b_url, fleet_sql.claim, "q1", 1, 1) is True
    assert [(r["host_id"], r["step"], r["notified_by"], r["via"]) for r in pg(b_url, fleet_sql.notified)] == [
        (b, 0, a, "fleet"), (b, 1, b, "host")]


def test_the_leads_record_of_another_hosts_notification_makes_no_lane_on_the_leads_host(cluster: PgCluster,
                                                                                         tmp_path: Path) -> None:
    hub = fresh_hub(cluster)
    hosts = {"a": Host(hub, tmp_path, "a", notifier=True), "b": Host(hub, tmp_path, "b", notifier=False)}
    a, b = hosts["a"], hosts["b"]
    try:
        a.start()
        wait_until(lambda: _lead(hub) == a.role, 30, what="A leading")
        b.start()
        wait_until(lambda: b.notify()["lead_present"], 30, what="B seeing the lead")
        qid = b.ask("b2")  # (b2 exists on B only)
        wait_until(lambda: _about(hosts, qid)["a"], 30, what="A notifying B's question")
        a.ask("b9")  # the lanes watcher takes A's events in order: b9's lane means it has read the notification
        wait_until(lambda: any(e["kind"] == "lane_changed" and e["builder"] == "b9" for e in events(a.home)), 30,
                   what="A's lane for its own b9")
        (sent,) = [e for e in events(a.home) if e["kind"] == "notification_sent"
                   and e["data"]["key"] == f"interaction:{qid}"]
        assert (sent["builder"], sent["session_id"]) == (None, None)
        assert (sent["data"]["host"], sent["data"]["builder"]) == (b.role, "b2")
        assert [e["builder"] for e in events(a.home) if e["kind"] == "lane_changed"] == ["b9"]
        r = hookd_cli(a.home, "events")
        assert r.returncode == 0, r.stderr
        assert f"question_pending step 0 for {b.role}/b2 to log (command)" in r.stdout, r.stdout
    finally:
        for h in hosts.values():
            h.stop()


def test_a_host_restarted_sends_no_step_the_fleet_notifier_sent_before_its_link_checked_the_hub(
        cluster: PgCluster, tmp_path: Path) -> None:
    hub = fresh_hub(cluster)
    hosts = {"a": Host(hub, tmp_path, "a", notifier=True), "b": Host(hub, tmp_path, "b", notifier=False)}
    a, b = hosts["a"], hosts["b"]
    try:
        a.start()
        wait_until(lambda: _lead(hub) == a.role, 30, what="A leading")
        b.start()
        wait_until(lambda: b.notify()["lead_present"], 30, what="B seeing the lead")
        qid = b.ask("b1")
        wait_until(lambda: _about(hosts, qid)["a"] and b.notify()["by_fleet"] == 1, 30,
                   what="A notifying B's question, B leaving it to the fleet")
        b.d.stop()  # (SIGTERM: a clean stop) and started again: the question still pending on B
        b.d.start()
        wait_until(lambda: b.notify()["by_fleet"] + b.notify()["here"] == 1, 30,
                   what=lambda: f"B deciding its step again after the restart: {b.notify()}")
        assert b.notify()["by_fleet"] == 1 and _about(hosts, qid) == {"a": [b.role], "b": []}
        assert "out of reach" not in b.d.log.read_text()
    finally:
        for h in hosts.values():
            h.stop()
