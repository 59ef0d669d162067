"""The hub from the command line against a real PostgreSQL (tests/pg.py): `hookd serve` with
`HOOKD_HUB` shipping (status says so), and an operator's `hookd --hub URL hub ...`,
`lanes` and `questions` across two hosts; the daemon applying a command from the hub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hookd.daemonproc import DaemonProcess, wait_until
from hookd.hub.config import redact
from hookd.settings import Settings

from .conftest import TUI, hookd_cli
from .hubrig import Hub, _names, ask, cluster_fixture, fresh_hub, pg, session, shipped
from .inproc import InProc
from .pg import PgCluster

pytestmark = [pytest.mark.daemon]  # (its module-scoped cluster keeps its tests on one worker: tests/conftest.py)

cluster = pytest.fixture(scope="module")(cluster_fixture)


@pytest.fixture
def hub(cluster: PgCluster) -> Hub:
    return fresh_hub(cluster)


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
        # (the lane's events may still come after the hook's: read until everything is shipped)
        def hub_line() -> str:
            return next(x for x in hookd_cli(home, "status").stdout.splitlines() if x.startswith("hub "))

        def expected() -> str:
            n = c.get("/v1/status")["counts"]["events"]
            return f"hub {redact(url)} up as host {status['host_id']}, shipped through seq {n} of {n}"

        wait_until(lambda: hub_line() == expected(), 30, what=lambda: f"{hub_line()!r} to be {expected()!r}")
        # the daemon applies the hub's commands for it (docs/fleet.md "Down to hosts"); status says so
        r = hookd_cli(home / "op", "--hub", hub.operator(), "send", f"{status['host_id']}/b1", "hi from the hub")
        assert (r.returncode, r.stdout) == (0, f"{status['host_id']}: queued m-1 for b1\n"), r.stderr
        lines = hookd_cli(home, "status").stdout.splitlines()
        assert "hub commands up: 1 applied, 0 refused since the start" in lines
        assert c.get("/v1/status")["hub"]["commands"] == {"state": "up", "error": None, "applied": 1, "refused": 0}
    finally:
        d.stop()
        d.kill()



def test_an_operator_reads_every_hosts_lanes_and_questions_from_the_hub(cluster: PgCluster, tmp_path: Path) -> None:
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
        # the hub's lanes are the hosts' last lane_changed events (recorded up to a second after
        # the lane moved while hooks keep coming): wait for the event, not GET /v1/lanes
        wait_until(lambda: [e for e in a.events() if e["kind"] == "lane_changed"][-1:]
                   and [e for e in a.events() if e["kind"] == "lane_changed"][-1]["data"]["to"] == "waiting_question", 30)
        h = Hub.__new__(Hub)
        h.admin = admin
        shipped(a, h, a_url)
        shipped(b, h, b_url)
        r = hookd_cli(cli_home, "--hub", op, "hub", "hosts", "--json")
        hosts = {h["host_id"]: h for h in json.loads(r.stdout)}
        assert set(hosts) == {ha, hb} and hosts[ha]["shipped_seq"] == a.events()[-1]["seq"]
        r = hookd_cli(cli_home, "--hub", op, "hub", "hosts")
        lines = r.stdout.splitlines()
        assert lines[0].split() == ["host", "shipped", "heartbeat", "version"]
        assert [x.split()[0] for x in lines[2:]] == [ha, hb]
        r = hookd_cli(cli_home, "--hub", op, "lanes", "--json")
        assert r.returncode == 0, r.stderr
        lanes = {(x["host_id"], x["builder"]): x for x in json.loads(r.stdout)}
        assert set(lanes) == {(ha, "b1"), (hb, "b1")}
        assert lanes[(ha, "b1")]["state"] == "waiting_question" and lanes[(ha, "b1")]["pending"] == [qid]
        assert lanes[(hb, "b1")]["state"] == "idle"
        r = hookd_cli(cli_home, "--hub", op, "lanes", "-b", f"{hb}/b1", "--json")  # one host's builder
        assert [(x["host_id"], x["builder"]) for x in json.loads(r.stdout)] == [(hb, "b1")]
        for unknown in ("b9", f"{ha}/b9", "nohost/b1"):  # as the local `lanes -b`: exit 1, naming it
            r = hookd_cli(cli_home, "--hub", op, "lanes", "-b", unknown, "--json")
            assert r.returncode == 1 and r.stderr.startswith(f"hookd: builder {unknown!r} is not known on the hub"), r
            assert json.loads(r.stdout)["error"]["code"] == "not_found"
        r = hookd_cli(cli_home, "--hub", op, "lanes")
        assert r.stdout.split("\n")[0].split() == ["host", "builder", "lane", "for", "pending", "queued", "detail",
                                                   "host", "seen"]
        r = hookd_cli(cli_home, "--hub", op, "questions", "--json")
        (q,) = json.loads(r.stdout)
        assert (q["host_id"], q["id"], q["kind"], q["builder"]) == (ha, qid, "question", "b1")
        r = hookd_cli(cli_home, "--hub", op, "questions")
        head, row = r.stdout.splitlines()[0], r.stdout.splitlines()[2]
        assert head.split() == ["host", "id", "kind", "builder", "waiting", "what", "answers", "queued", "host", "seen"]
        assert row.split()[:4] == [ha, qid, "question", "b1"]
        # one host's role reads only its own rows; --hub on a command that cannot read the hub is refused
        r = hookd_cli(cli_home, "--hub", b_url, "lanes", "--json")
        assert [(x["host_id"], x["builder"]) for x in json.loads(r.stdout)] == [(hb, "b1")]
        # ... and queues nothing: said as what the role may not do, not PostgreSQL's words alone
        r = hookd_cli(cli_home, "--hub", b_url, "send", f"{hb}/b1", "hi", "--no-wait")
        assert r.returncode == 1 and "this role may not do that" in r.stderr and "add-operator" in r.stderr, r
        # its page would show its own rows only: `hub serve` says so as it starts (a fresh user's trial)
        for url, warned in ((b_url, True), (op, False)):
            page = subprocess.Popen([sys.executable, "-m", "hookd", "--home", os.fspath(cli_home), "--hub", url, "hub",
                                     "serve", "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "CI": "true"})
            try:
                assert page.stdout is not None and "/signin#code=" in page.stdout.readline()
            finally:
                page.terminate()
                _, err = page.communicate(timeout=30)
            assert ("is a host's role: the page shows only its own rows" in err) is warned, err
        r = hookd_cli(cli_home, "--hub", op, "dismiss", qid, "--reason", "x")
        assert r.returncode == 2 and "only lanes, questions, inbox, answer, send, hub use the hub so far" in r.stderr
        r = hookd_cli(cli_home, "--hub", cluster.url(f"op_{db}", "wrong-pw", db), "lanes")  # (TCP: passwords)
        assert r.returncode == 1 and "password" in r.stderr and "wrong-pw" not in r.stderr
    finally:
        a.stop()
        b.stop()


def test_the_hubs_lanes_count_a_stalled_lanes_wait_to_now(hub: Hub, tmp_path: Path) -> None:
    """A lane's state is its host's last ``lane_changed``, shipped when the lane moved: its
    wait ("waiting on a human for 2m") is counted to the hub's read, in ``lanes`` and on the
    page (a fleet operator's trial read "for 5s" a minute on)."""
    import time

    from hookd.hub import sql
    from hookd.hub.page import HubSource

    host_url = hub.host("ha")
    host = host_url.split("//")[1].split(":")[0]
    at = time.time() - 480  # the lane went stalled 8 minutes ago, after 2 minutes' wait
    data = {"from": "waiting_question", "to": "stalled", "since": at, "pending": ["q-1"], "queued": 0,
            "detail": "question q-1 waiting on a human for 2m; the agent said: done soon",
            "waiting_since": at - 120, "waited": "2m"}
    pg(host_url, sql.ship, [(1, "lane_changed", "b1", "s1", at, json.dumps(data))], "test")
    op = hub.operator()
    r = hookd_cli(tmp_path, "--hub", op, "lanes", "--json")
    assert r.returncode == 0, r.stderr
    (lane,) = json.loads(r.stdout)
    assert lane["detail"] == "question q-1 waiting on a human for 10m; the agent said: done soon"
    r = hookd_cli(tmp_path, "--hub", op, "lanes")
    assert "question q-1 waiting on a human for 10m;" in r.stdout, r.stdout
    (page_lane,) = pg(op, lambda _conn: HubSource(op).lanes())  # (pg: on a thread of its own)
    assert page_lane["detail"] == lane["detail"] and page_lane["builder"] == f"{host}/b1"


def test_the_hubs_questions_say_which_prompts_their_host_takes_no_answer_for(hub: Hub, tmp_path: Path) -> None:
    """A prompt whose host's held hook is gone (``hold_ended``: its hold ran out, or none came
    back after the host's restart) is answered at the desk only: the hub's questions say so
    (``held`` false; the page's card then offers no answer), until a ``hold_resumed``. A
    fleet operator's trial answered one after a host's kill -9, and the host refused it."""
    from hookd.hub import sql
    from hookd.hub.page import HubSource

    host_url = hub.host("ha")
    perm = {"id": "pr_1", "kind": "permission", "tool_name": "Bash", "tool_input": {"command": "make deploy"}}
    ask = {"id": "toolu_1", "kind": "question", "questions": [{"question": "Which?", "options": [{"label": "A"}]}]}
    pg(host_url, sql.ship, [(1, "permission_pending", "b1", "s1", 1.0, json.dumps(perm)),
                            (2, "question_pending", "b1", "s1", 2.0, json.dumps(ask))], "test")
    op = hub.operator()

    def held() -> dict[str, object]:
        r = hookd_cli(tmp_path, "--hub", op, "questions", "--json")
        assert r.returncode == 0, r.stderr
        page = {i["local_id"]: i.get("held") for i in pg(op, lambda _conn: HubSource(op).questions())}
        cli = {i["id"]: i["held"] for i in json.loads(r.stdout)}
        assert page == cli, (page, cli)
        return cli

    assert held() == {"pr_1": True, "toolu_1": None}
    pg(host_url, sql.ship, [(3, "hold_ended", "b1", "s1", 3.0, '{"id": "pr_1", "kind": "permission", "reason": "restart"}')],
       "test")
    assert held() == {"pr_1": False, "toolu_1": None}
    r = hookd_cli(tmp_path, "--hub", op, "questions")
    [row] = [line for line in r.stdout.splitlines() if "pr_1" in line]
    assert "Bash permission (no hook holds it: answer it at the desk)" in row, r.stdout
    pg(host_url, sql.ship, [(4, "hold_resumed", "b1", "s1", 4.0, '{"id": "pr_1", "kind": "permission"}')], "test")
    assert held() == {"pr_1": True, "toolu_1": None}
