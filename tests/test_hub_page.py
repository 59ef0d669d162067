"""The operator page over the hub (``hookd --hub URL hub serve``: hookd/http/hubpage.py over
hookd/hub/page.py), in process (httpx's ASGI transport) against a real PostgreSQL (tests/pg.py)
and two hosts in process (tests/test_hub_commands.py's ``Host``).

What is proven: the page's API lists both hosts' lanes and pending prompts, named ``HOST/...``,
with each host's freshness; an answer posted from the page releases the held hook on the right
host only, and is then listed resolved; one for a host offline is queued, and says so; a
message from the page reaches the right host's inbox; the stream wakes on a host's shipped
event; ``hookd --hub URL questions`` lists async asks and resolved interactions (goldens, the
clock's spans aside); nothing is served without a session (and no
session without the one-time code, the loopback Host, the CSRF header)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from hookd.daemonproc import wait_until
from hookd.http.hubpage import HubASGI, build_hub_app, serve_hub_page
from hookd.hub.page import HubSource

from .conftest import hookd_cli
from .hubrig import Hub, cluster_fixture, fresh_hub, role, session, shipped
from .pg import PgCluster
from .test_answers_inproc import finish
from .test_hub_commands import Host

pytestmark = [pytest.mark.inproc]  # (its module-scoped cluster keeps its tests on one worker: tests/conftest.py)

cluster = pytest.fixture(scope="module")(cluster_fixture)
ORIGIN = "http://127.0.0.1:8765"
WRITE = {"x-hookd-web": "1", "content-type": "application/json"}


@pytest.fixture
def hub(cluster: PgCluster) -> Hub:
    return fresh_hub(cluster)


@pytest.fixture
def two(hub: Hub, tmp_path: Path) -> Iterator[tuple[Host, Host]]:
    a, b = Host(hub, tmp_path, "ha"), Host(hub, tmp_path, "hb")
    try:
        yield a.start(), b.start()
    finally:
        a.stop()
        b.stop()


class Page:
    """The hub page's app and a browser's cookie (None: not signed in)."""

    def __init__(self, op_url: str, wait_s: float = 30):
        self.app, self.code = build_hub_app(HubSource(op_url, wait_s=wait_s), role(op_url))
        self.cookie: str | None = None

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> httpx.Response:
        hs = dict(headers or {})
        if self.cookie is not None:
            hs["cookie"] = self.cookie

        async def go() -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url=ORIGIN) as c:
                return await c.request(method, path, headers=hs,
                                       content=None if body is None else json.dumps(body).encode())
        return asyncio.run(go())

    def sign_in(self) -> None:
        r = self.call("POST", "/web/session", {"code": self.code}, WRITE)
        assert r.status_code == 200, r.text
        assert r.json()["user"] == self.user
        self.cookie = r.headers["set-cookie"].split(";")[0]

    @property
    def user(self) -> str:
        app: HubASGI = self.app
        return app.page.web.user

    def get(self, path: str) -> Any:
        r = self.call("GET", path)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json()

    def until(self, path: str, n: int, ok: Any = None) -> Any:
        """``GET path`` once it lists ``n`` items (the hosts' events shipped) and ``ok(items)``
        holds (a lane's state comes with a lane_changed event, up to a second after its hook)."""
        def look() -> Any:
            items = self.get(path)
            return items if len(items) == n and (ok is None or ok(items)) else None
        return wait_until(look, 60, what=lambda: f"{n} items at {path}: {self.get(path)}")


def test_the_hub_page_lists_every_host_and_an_answer_releases_the_right_hook(
        hub: Hub, two: tuple[Host, Host], tmp_path: Path) -> None:
    a, b = two
    assert a.app is not None and b.app is not None
    page = Page(hub.operator())
    page.sign_in()
    held_a, p_a = a.held_permission("make deploy")
    held_b, p_b = b.held_permission("make deploy")  # the same prompt id on both hosts
    session(b.app, "b2")
    pending = page.until("/v1/questions?state=pending", 2)
    assert sorted((q["id"], q["host"], q["builder"], q["kind"], q["tool_name"], q["state"]) for q in pending) == [
        (f"{a.id}/{p_a['id']}", a.id, f"{a.id}/b1", "permission", "Bash", "pending"),
        (f"{b.id}/{p_b['id']}", b.id, f"{b.id}/b1", "permission", "Bash", "pending")]
    assert all(q["tool_view"] and q["input"]["command"] == "make deploy" for q in pending)
    assert all(0 <= q["heartbeat_age_s"] < 60 for q in pending)
    want = [(f"{a.id}/b1", a.id, "waiting_permission"), (f"{b.id}/b1", b.id, "waiting_permission"),
            (f"{b.id}/b2", b.id, "idle")]
    page.until("/v1/lanes", 3, lambda lanes: sorted((x["builder"], x["host"], x["state"]) for x in lanes) == want)
    status = page.get("/v1/status")
    assert [h["host"] for h in status["hosts"]] == sorted([a.id, b.id])
    assert all(0 <= h["heartbeat_age_s"] < 60 and h["shipped_seq"] > 0 for h in status["hosts"])
    # the answer the page posts (app.js submit), for host A's prompt: A's hook is released, B's stays held
    iid = f"{a.id}/{p_a['id']}"
    r = page.call("POST", f"/v1/interactions/{iid}/answer",
                  {"decision": "allow", "response_id": "r-page-1", "revision": None, "surface": "web",
                   "actor": page.user, "input_hash": pending[0]["input_hash"]}, WRITE)
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["command"]["state"], out["command"]["host_id"], out["command"]["operator"], out["warning"]) == (
        "applied", a.id, page.user, None)
    status_code, body = finish(held_a)
    assert status_code == 200 and json.loads(body)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    i = a.app.interaction(p_a["id"])
    assert (i["state"], i["decision"], i["surface"], i["actor"]) == ("answered", "allow", "hub", page.user)
    assert b.app.interaction(p_b["id"])["state"] == "pending" and not held_b.done()
    # once A's resolution is shipped the page lists it resolved, and B's alone as pending
    wait_until(lambda: [q["id"] for q in page.get("/v1/questions?state=pending")] == [f"{b.id}/{p_b['id']}"], 60)
    done = page.get(f"/v1/interactions/{iid}")
    assert (done["state"], done["outcome"], done["by"]) == ("answered", "allowed", f"from the fleet's hub by {page.user}")
    assert [q["id"] for q in page.get("/v1/questions?state=resolved")] == [iid]
    # an answer to it again is the host's refusal (409), in its words
    r = page.call("POST", f"/v1/interactions/{iid}/answer", {"decision": "deny", "response_id": "r-page-2"}, WRITE)
    assert r.status_code == 409 and r.json()["error"]["message"].startswith(f"{a.id}: "), r.text
    # a message from the page (app.js's compose) reaches B's b2 only
    r = page.call("POST", f"/v1/builders/{b.id}/b2/messages", {"text": "rebase first", "id": "k-page"}, WRITE)
    assert r.status_code == 200, r.text
    assert (r.json()["message"]["state"], r.json()["message"]["builder"]) == ("applied", f"{b.id}/b2")
    assert [m["text"] for m in b.app.inbox("b2")] == ["rebase first"] and a.app.inbox("b1") == []
    assert [(m["id"], m["state"], m["author"]) for m in page.get("/v1/messages")] == [
        (f"send:{b.id}:k-page", "applied", page.user)]
    # B's prompt answered from the page too: denied with the page's message, B's hook released
    r = page.call("POST", f"/v1/interactions/{b.id}/{p_b['id']}/answer",
                  {"decision": "deny", "message": "not from here", "response_id": "r-page-3"}, WRITE)
    assert (r.status_code, r.json()["command"]["state"]) == (200, "applied"), r.text
    assert json.loads(finish(held_b)[1])["hookSpecificOutput"]["decision"] == {
        "behavior": "deny", "message": "not from here"}


def test_an_answer_from_the_hub_page_for_a_host_offline_is_queued(hub: Hub, two: tuple[Host, Host]) -> None:
    a, _ = two
    assert a.app is not None
    page = Page(hub.operator(), wait_s=0.5)
    page.sign_in()
    _, p = a.held_permission("make deploy")
    iid = f"{a.id}/{p['id']}"
    wait_until(lambda: [q["id"] for q in page.get("/v1/questions?state=pending")] == [iid], 60)
    a.stop()  # the host offline: its command stays queued on the hub
    r = page.call("POST", f"/v1/interactions/{iid}/answer", {"decision": "allow", "response_id": "r-off"}, WRITE)
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["command"]["state"], out["interaction"]["state"]) == ("queued", "pending")
    assert re.fullmatch(rf"queued on the hub for {a.id} \(host seen \d+ s ago\): it is applied when the host takes it",
                        out["warning"]), out["warning"]


def test_the_hub_page_stream_wakes_on_a_hosts_event(hub: Hub, two: tuple[Host, Host]) -> None:
    a, _ = two
    assert a.app is not None
    source = HubSource(hub.operator())

    shipped(a.app, hub, a.url)  # (a's log on the hub: the stream starts after it)

    async def go() -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        first = asyncio.Event()

        async def read() -> None:
            async for item in source.stream(lambda: False):
                got.append(item)
                first.set()
                if item["kind"] == "session_started":
                    return
        reader = asyncio.create_task(read())
        await asyncio.wait_for(first.wait(), 60)  # each host's freshness first: the stream is listening
        assert got[0] == {"kind": "hub_changed", "data": {"what": "host_seen", "host": a.id}}
        await asyncio.to_thread(session, a.app, "b9")
        await asyncio.wait_for(reader, 60)
        return got

    got = asyncio.run(go())
    started = [e for e in got if e["kind"] == "session_started"]
    assert started and started[0]["host"] == a.id and started[0]["builder"] == f"{a.id}/b9"


def test_the_hub_page_needs_a_session(hub: Hub) -> None:
    page = Page(hub.operator())
    for path in ("/v1/questions", "/v1/lanes", "/v1/status", "/v1/events/sse"):
        r = page.call("GET", path)
        assert (r.status_code, r.json()["error"]["code"]) == (401, "unauthorized"), path
    r = page.call("GET", "/", headers={"accept": "text/html"})
    assert r.status_code == 401 and b"hookd open" in r.content
    assert page.call("GET", "/signin").status_code == 200  # the sign-in page holds no data
    r = page.call("POST", "/web/session", {"code": "wrong"}, WRITE)
    assert r.status_code == 401
    assert page.call("POST", "/web/session", {"code": page.code}).status_code == 403  # no CSRF header
    page.sign_in()
    r = page.call("POST", "/web/session", {"code": page.code}, WRITE)
    assert r.status_code == 401  # the code is used once
    assert page.get("/v1/status")["hosts"] == []
    r = page.call("GET", "/v1/status", headers={"host": "evil.example:8765"})
    assert r.status_code == 403  # loopback Host only (no DNS rebinding)
    r = page.call("POST", "/v1/builders/h/b1/messages", {"text": "hi"})
    assert r.status_code == 403  # a write without the CSRF header
    r = page.call("POST", "/v1/interactions/h/x/dismiss", {}, WRITE)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "bad_request")


def test_the_sign_in_link_is_printed_once_the_port_listens() -> None:
    # a browser opened on the printed link at once must be queued, not refused: ``ready`` connects
    # to the port before anything serves it (no hub is read before a request)
    class Printed(Exception):
        pass

    def ready(link: str) -> None:
        m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/signin#code=\S+", link)
        assert m, link
        with socket.create_connection(("127.0.0.1", int(m.group(1))), timeout=10):
            pass
        raise Printed(m.group(1))

    with pytest.raises(Printed) as e:
        serve_hub_page(HubSource("postgresql://127.0.0.1:1/none"), "op", 0, ready)
    with pytest.raises(ConnectionRefusedError):  # and the port is closed when serving stops
        socket.create_connection(("127.0.0.1", int(str(e.value))), timeout=10).close()


def op_cli(op: str, tmp: Path, *args: str) -> Any:
    return hookd_cli(tmp / "operator", "--hub", op, *args)


def cells(out: str) -> list[list[str]]:
    """A table's rows (its head, then each row after the rule) as cells, a span of time as
    ``T`` (``12s``, ``3m``, ``1h02m``: the clock's, not the golden's)."""
    lines = out.splitlines()
    rows = [lines[0]] + lines[2:] if len(lines) > 1 else lines
    return [[re.sub(r"^\d+(s|m|h\d\dm)( ago)?$", r"T\2", c) for c in re.split(r"\s{2,}", x.strip())] for x in rows]


def test_hub_questions_lists_async_asks_and_resolved_interactions(hub: Hub, two: tuple[Host, Host],
                                                                  tmp_path: Path) -> None:
    a, b = two
    assert a.app is not None and b.app is not None
    op = hub.operator()
    r = a.app.request("POST", "/v1/builders/b1/asks", json={"question": "Ship it today?", "options": ["yes", "no"]})
    assert r.status_code == 201, r.text
    ask_id = r.json()["interaction"]["id"]
    held, p = b.held_permission("make deploy")
    r = op_cli(op, tmp_path, "answer", f"{b.id}/{p['id']}", "--option", "deny", "--text", "not today")
    assert r.returncode == 0, r.stderr
    assert json.loads(finish(held)[1])["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "not today"}
    wait_until(lambda: json.loads(op_cli(op, tmp_path, "questions", "--state", "resolved", "--json").stdout), 60)
    # the page over the hub shows the async ask as a daemon's page does: its one question
    page = Page(op)
    page.sign_in()
    (q,) = page.get("/v1/questions?state=pending")
    assert (q["id"], q["kind"], q["questions"]) == (f"{a.id}/{ask_id}", "async", [
        {"question": "Ship it today?", "header": None, "multiSelect": False,
         "options": [{"label": "yes"}, {"label": "no"}]}])
    r = op_cli(op, tmp_path, "questions")
    assert (r.returncode, cells(r.stdout)) == (0, [
        ["host", "id", "kind", "builder", "waiting", "what", "answers queued", "host seen"],
        [a.id, ask_id, "async", "b1", "T", "Ship it today? [yes / no]", "-", "T ago"]]), r.stdout
    r = op_cli(op, tmp_path, "questions", "--state", "resolved")
    assert (r.returncode, cells(r.stdout)) == (0, [
        ["host", "id", "kind", "builder", "outcome", "by", "resolved", "what", "host seen"],
        [b.id, p["id"], "permission", "b1", "denied", f"from the fleet's hub by {role(op)}", "T ago", "Bash permission",
         "T ago"]]), r.stdout
    r = op_cli(op, tmp_path, "questions", "--state", "all")
    pending_part, resolved_part = r.stdout.split("\n\n")
    assert [c[:2] for c in cells(pending_part)[1:]] == [[a.id, ask_id]]
    assert [c[:2] for c in cells(resolved_part)[1:]] == [[b.id, p["id"]]]
    items = json.loads(op_cli(op, tmp_path, "questions", "--state", "all", "--json").stdout)
    assert [(i["state"], i["host_id"], i["id"], i["kind"]) for i in items] == [
        ("pending", a.id, ask_id, "async"), ("answered", b.id, p["id"], "permission")]
    assert (items[1]["outcome"], items[1]["by"], items[1]["resolution"]["decision"]) == (
        "denied", f"from the fleet's hub by {role(op)}", "deny")
    # the async ask is answered from the hub like any question, and then listed resolved
    r = op_cli(op, tmp_path, "answer", f"{a.id}/{ask_id}", "--option", "yes")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: op_cli(op, tmp_path, "questions").stdout == "no questions\n", 60)
    r = op_cli(op, tmp_path, "questions", "--state", "resolved")
    assert [c[:5] for c in cells(r.stdout)[1:]] == [[a.id, ask_id, "async", "b1", "answered"],
                                                     [b.id, p["id"], "permission", "b1", "denied"]]
