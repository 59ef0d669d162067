"""The operator page (issue 9): sign-in and access on the loopback listener, the SSE event
stream, `hookd open`, `hookd replay --into` (real daemon, real sockets; hooks run as Claude Code
runs them). The browser tests are in tests/test_web_browser.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess
from hookd.devtools.feed import fresh_ids
from hookd.http.web import CODE_TTL_S, SESSION_TTL_S, SignInNeeded, WebAuth, should_open_browser

from .conftest import FIXTURES, hookd_cli, hookd_run, wait_until

pytestmark = pytest.mark.daemon

SCENARIO = FIXTURES / "tui-ask-answered-at-terminal"


def _port(home: Path) -> int:
    return int(Home.resolve(home).endpoint_file.read_text().split()[0])


def sign_in(home: Path) -> tuple[httpx.Client, str]:
    """A TCP client holding a session cookie, signed in the way the page does: `hookd open`'s
    link, its code posted to /web/session. Returns (client, cookie name)."""
    r = hookd_cli(home, "open", "--no-browser", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["opened"] is False and out["expires_in_s"] == CODE_TTL_S
    base, _, fragment = out["url"].partition("/signin#code=")
    assert base == f"http://127.0.0.1:{_port(home)}"
    c = httpx.Client(base_url=base, timeout=10)
    resp = c.post("/web/session", json={"code": fragment}, headers={"x-hookd-web": "1"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["expires_at"] > time.time() + SESSION_TTL_S - 60
    [cookie] = resp.headers.get_list("set-cookie")
    name = cookie.split("=", 1)[0]
    attrs = {a.strip().split("=")[0].lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "samesite", "path", "max-age"} <= attrs and "SameSite=Strict" in cookie
    return c, name


# --- unit: codes, sessions, admission ----------------------------------------------------------

def test_codes_are_one_time_and_expire() -> None:
    now = [1000.0]
    auth = WebAuth("tok", now=lambda: now[0])
    a, b = auth.new_code(), auth.new_code()
    assert a != b and len(a) >= 40
    assert auth.redeem(a) and not auth.redeem(a)  # once
    assert not auth.redeem("made-up")
    now[0] += CODE_TTL_S + 1
    assert not auth.redeem(b)  # expired


def test_session_cookies_are_signed_and_expire() -> None:
    now = [1000.0]
    auth = WebAuth("tok", now=lambda: now[0])
    value, exp = auth.new_session()
    assert auth.session_expiry(value) == exp == 1000 + SESSION_TTL_S
    e, nonce, mac = value.split(".")
    assert auth.session_expiry(f"{int(e) + 1000}.{nonce}.{mac}") is None  # a longer life is not signed
    assert auth.session_expiry(f"{e}.{nonce}.{mac[:-1]}{'E' if mac.endswith('A') else 'A'}") is None  # 1 in 16 ends in A
    assert auth.session_expiry(value + ".x") is None and auth.session_expiry("") is None
    assert WebAuth("another-token", now=lambda: now[0]).session_expiry(value) is None
    assert WebAuth("tok").cookie_name == auth.cookie_name != WebAuth("another-token").cookie_name
    now[0] = exp + 1
    assert auth.session_expiry(value) is None


def _scope(path: str, method: str = "GET", **headers: str) -> dict[str, Any]:
    hs = {"host": "127.0.0.1:4242", **headers}
    return {"type": "http", "path": path, "method": method, "server": ("127.0.0.1", 4242),
            "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in hs.items()]}


def test_admit() -> None:
    auth = WebAuth("tok")
    cookie = f"other=1; {auth.cookie_name}={auth.new_session()[0]}"
    assert auth.admit(_scope("/")).status == 401
    assert type(auth.admit(_scope("/"))) is not SignInNeeded  # JSON unless a browser asks for a page
    assert isinstance(auth.admit(_scope("/", accept="text/html")), SignInNeeded)
    assert not isinstance(auth.admit(_scope("/v1/status", accept="text/html")), SignInNeeded)
    assert auth.admit(_scope("/v1/status")).status == 401
    assert auth.admit(_scope("/signin")) is None and auth.admit(_scope("/static/signin.js")) is None
    assert auth.admit(_scope("/static/app.js")).status == 401  # only the sign-in assets are public
    s = _scope("/v1/status", cookie=cookie)
    assert auth.admit(s) is None and s["hookd.session"] is True
    assert auth.admit(_scope("/", cookie=cookie, host="evil.example:4242")).status == 403  # DNS rebinding
    assert auth.admit(_scope("/", cookie=cookie, host="localhost:4242")) is None
    assert auth.admit(_scope("/v1/hooks/claude-code/b1", "POST", cookie=cookie, x_hookd_web="1")).status == 401
    post = "/v1/builders/b1/messages"
    assert auth.admit(_scope(post, "POST", cookie=cookie)).status == 403  # no CSRF header
    assert auth.admit(_scope(post, "POST", cookie=cookie, x_hookd_web="1")) is None
    assert auth.admit(_scope(post, "POST", cookie=cookie, x_hookd_web="1", origin="http://127.0.0.1:4242")) is None
    assert auth.admit(_scope(post, "POST", cookie=cookie, x_hookd_web="1", origin="http://evil.example")).status == 403
    assert auth.admit(_scope(post, "POST", cookie=cookie, x_hookd_web="1", sec_fetch_site="cross-site")).status == 403
    assert auth.admit(_scope("/web/session", "POST")).status == 403  # the code exchange needs the header too
    assert auth.admit(_scope("/web/session", "POST", x_hookd_web="1")) is None


def test_should_open_browser() -> None:
    assert not should_open_browser({"CI": "true", "DISPLAY": ":0"}, "linux")
    assert not should_open_browser({}, "linux")
    assert should_open_browser({"DISPLAY": ":0"}, "linux")
    assert should_open_browser({"WAYLAND_DISPLAY": "wayland-0"}, "linux")
    assert should_open_browser({}, "darwin")


def test_fresh_ids_are_consistent() -> None:
    payloads = [f.read_bytes() for f in sorted((SCENARIO / "hooks").glob("*.json"))]
    renewed = fresh_ids(payloads)
    docs = [json.loads(p) for p in renewed]
    sids = {d["session_id"] for d in docs}
    assert len(sids) == 1 and sids != {json.loads(payloads[0])["session_id"]}
    pre, post = json.loads(renewed[6]), json.loads(renewed[9])  # the AskUserQuestion's Pre and Post
    assert pre["tool_use_id"] == post["tool_use_id"] != json.loads(payloads[6])["tool_use_id"]
    assert pre["tool_use_id"].startswith("toolu_01")
    assert f"/{pre['session_id']}.jsonl" in pre["transcript_path"]  # wherever the id occurs
    synthetic = FIXTURES.parent / "synthetic" / "auq-multiselect-other-commas" / "hooks"
    docs = [json.loads(p) for p in fresh_ids([f.read_bytes() for f in sorted(synthetic.glob("*.json"))])]
    assert len({d["session_id"] for d in docs}) == 1 and docs[0]["session_id"] != "s-0006"
    assert docs[1]["tool_use_id"] == docs[3]["tool_use_id"] != "toolu_M1"


# --- the daemon ------------------------------------------------------------------------------

def test_page_and_api_refuse_without_the_session_cookie(daemon: DaemonProcess, home: Path) -> None:
    port = _port(home)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as c:
        for path in ("/", "/static/app.js", "/v1/status", "/v1/questions", "/v1/events/sse", "/v1/web/session"):
            r = c.get(path)
            assert r.status_code == 401, (path, r.status_code)
            err = r.json()["error"]
            assert err["code"] == "unauthorized"
            assert ("token" if path.startswith("/v1/") else "hookd open") in err["message"]
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, cookies={"hookd_000000000000": "1.2.3"}) as c:
        assert c.get("/").status_code == 401  # a made-up cookie
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as c:
        # the sign-in page and its assets hold no data
        assert c.get("/signin").status_code == 200 and c.get("/static/signin.js").status_code == 200
        r = c.post("/web/session", json={"code": "made-up"}, headers={"x-hookd-web": "1"})
        assert r.status_code == 401 and "hookd open" in r.json()["error"]["message"]
        assert c.post("/v1/interactions/x/answer", json={}, headers={"x-hookd-web": "1"}).status_code == 401
        # a browser's page request gets a small page saying what to do (still 401); API paths and
        # other requests keep the JSON error shape
        html = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
        r = c.get("/", headers=html)
        assert r.status_code == 401 and r.headers["content-type"].startswith("text/html")
        assert "Run <code>hookd open</code> in a terminal to get a sign-in link" in r.text
        assert "default-src 'self'" in r.headers["content-security-policy"]
        assert r.headers["content-length"] == str(len(r.content))
        r = c.get("/v1/status", headers=html)
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        r = c.post("/web/signout", headers={**html, "x-hookd-web": "1"})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"


def test_sign_in_once_then_the_cookie_opens_page_and_api(daemon: DaemonProcess, home: Path) -> None:
    c, name = sign_in(home)
    try:
        r = c.get("/")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        csp = r.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        # no external resource: every script and stylesheet is hookd's own
        for ref in ("/static/toolview.js", "/static/app.js", "/static/hookd.css"):
            assert f'"{ref}"' in r.text and c.get(ref).status_code == 200
        assert "http://" not in r.text and "https://" not in r.text
        assert c.get("/v1/status").json()["tcp_port"] == _port(home)
        assert c.get("/v1/web/session").json()["user"]
        hookd_run(home, "spawn", "b1", "--settings-file", str(home.parent / "b1.json"), "--no-mcp")
        # state-changing requests: the page's header, same origin
        body = {"text": "hello", "author": "web-test"}
        assert c.post("/v1/builders/b1/messages", json=body).status_code == 403
        r = c.post("/v1/builders/b1/messages", json=body, headers={"x-hookd-web": "1", "origin": "http://evil.example"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
        r = c.post("/v1/builders/b1/messages", json=body,
                   headers={"x-hookd-web": "1", "origin": f"http://127.0.0.1:{_port(home)}"})
        assert r.status_code == 201, r.text
        # a session cannot mint sign-in codes, nor post hooks
        assert c.post("/v1/web/codes", json={}, headers={"x-hookd-web": "1"}).status_code == 403
        assert c.post("/v1/hooks/claude-code/b1", content=b"{}", headers={"x-hookd-web": "1"}).status_code == 401
        cookie = c.cookies[name]
    finally:
        c.close()
    r = hookd_cli(home, "open", "--no-browser")
    assert r.returncode == 0 and r.stdout.startswith("http://127.0.0.1:") and "one-time" in r.stderr
    with httpx.Client(base_url=f"http://127.0.0.1:{_port(home)}", timeout=10, cookies={name: cookie}) as again:
        assert again.get("/").status_code == 200
        r = again.post("/web/signout", headers={"x-hookd-web": "1"})
        assert r.status_code == 200 and "Max-Age=0" in r.headers["set-cookie"]


def test_sessions_and_the_port_survive_a_restart(home: Path) -> None:
    d = DaemonProcess(home).start()
    try:
        port = _port(home)
        c, name = sign_in(home)
        cookie = c.cookies[name]
        c.close()
        d.stop()
        d.start()
        assert _port(home) == port  # the page finds the daemon at the same origin
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, cookies={name: cookie}) as c2:
            assert c2.get("/v1/status").status_code == 200
    finally:
        d.stop()
        d.kill()


def _sse(c: httpx.Client, url: str, n: int, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The first ``n`` messages of an SSE stream: dicts of its fields (data decoded)."""
    out: list[dict[str, Any]] = []
    with c.stream("GET", url, headers=headers) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        msg: dict[str, Any] = {}
        for line in r.iter_lines():
            if line == "":
                if msg:
                    out.append(msg)
                    msg = {}
                    if len(out) == n:
                        break
                continue
            if line.startswith(":"):
                continue
            k, _, v = line.partition(": ")
            msg[k] = json.loads(v) if k == "data" else v
    return out


def test_sse_resumes_after_the_last_event_id(daemon: DaemonProcess, home: Path) -> None:
    hookd_run(home, "spawn", "b1", "--settings-file", str(home.parent / "b1.json"), "--no-mcp")
    for q in ("one?", "two?", "three?"):
        assert hookd_cli(home, "ask", "b1", q).returncode == 0
    c, _ = sign_in(home)
    try:
        evs = [json.loads(line) for line in c.get("/v1/events").text.splitlines()]
        last = evs[-1]["seq"]
        # from the start of the log: hello, then every event with its seq as id
        got = _sse(c, "/v1/events/sse?after=0", 1 + len(evs))
        assert got[0]["event"] == "hello" and got[0]["data"] == {"seq": last, "after": 0, "reset": False}
        assert [int(m["id"]) for m in got[1:]] == [e["seq"] for e in evs]
        assert [m["data"] for m in got[1:]] == evs
        # Last-Event-ID (EventSource's reconnect) wins over ?after=
        asks = [e for e in evs if e["kind"] == "human_input_requested"]
        got = _sse(c, "/v1/events/sse?after=0", 2, headers={"last-event-id": str(asks[1]["seq"])})
        assert got[0]["data"]["after"] == asks[1]["seq"] and int(got[1]["id"]) == asks[1]["seq"] + 1
        # without either it starts at the end: the next event is a new one
        hello = _sse(c, "/v1/events/sse", 1)[0]
        assert hello["data"] == {"seq": last, "after": last, "reset": False}
        # beyond the end (another home's page): from the end, flagged
        assert _sse(c, f"/v1/events/sse?after={last + 100}", 1)[0]["data"] == {"seq": last, "after": last, "reset": True}
        assert c.get("/v1/events/sse?after=x").status_code == 400
    finally:
        c.close()


def _replay_into(home: Path, tmp_path: Path, scenario: Path, builder: str) -> subprocess.Popen[str]:
    """``builder`` spawned with a 60 s hold, then ``hookd replay SCENARIO --into BUILDER`` started
    (its stdout and stderr piped, as text)."""
    assert hookd_run(home, "spawn", builder, "--settings-file", str(tmp_path / f"{builder}.json"), "--hold", "60",
                     "--no-mcp").returncode == 0
    return subprocess.Popen([sys.executable, "-m", "hookd", "--home", str(home), "replay", str(scenario), "--into",
                             builder], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_replay_into_a_builder_waits_for_the_answer_and_the_tool_gets_it(daemon: DaemonProcess, home: Path,
                                                                          tmp_path: Path) -> None:
    """What docs/usage.md's walk-through does: the recorded question reaches the running daemon,
    the PermissionRequest waits for an answer from anywhere, and the recorded PostToolUse then
    carries that answer (adopted, not superseded by the recording's own "Blue")."""
    proc = _replay_into(home, tmp_path, SCENARIO, "demo")
    try:
        client = daemon.client()
        held = wait_until(lambda: client.get("/v1/status")["held"], 60, what="the PermissionRequest to be held")
        [q] = client.get("/v1/questions")
        assert q["id"] == held[0] and q["builder"] == "demo" and q["questions"][0]["question"] == "Which color do you prefer?"
        assert q["session_id"] != json.loads((SCENARIO / "hooks" / "001-SessionStart.json").read_text())["session_id"]
        r = hookd_cli(home, "answer", q["id"], "--option", "Red", "--actor", "ana")
        assert r.returncode == 0, r.stderr
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert [x.split(":")[0] for x in err.splitlines() if ": held: waits for an answer" in x] == [
        "008-PermissionRequest.json"]  # the one held hook of the recording, said before it runs
    line = next(x for x in out.splitlines() if x.startswith("008-PermissionRequest.json"))
    doc = json.loads(line.split(", stdout ", 1)[1])
    assert doc["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {"Which color do you prefer?": "Red"}
    i = client.get(f"/v1/interactions/{q['id']}")
    assert (i["state"], i["answers"], i["surface"], i["actor"]) == ("answered", {"Which color do you prefer?": "Red"}, "cli", "ana")
    assert i["adopted_at"] is not None and i["warning"] is None
    kinds = [e["kind"] for e in client.lines("/v1/events", after=0) if e["data"].get("id") == q["id"]]
    assert "answer_adopted" in kinds and "answer_superseded" not in kinds
    client.close()



def test_replay_into_says_which_hooks_are_held(daemon: DaemonProcess, home: Path, tmp_path: Path) -> None:
    """An Elicitation is held as a PermissionRequest is (the builder's adapter's hold events):
    the replay says so before it waits; with ``--hold 0`` nothing is held and nothing said."""
    elicit = FIXTURES / "print-mcp-elicitation-cancelled"
    proc = _replay_into(home, tmp_path, elicit, "el")
    try:
        client = daemon.client()
        [held] = wait_until(lambda: client.get("/v1/status")["held"], 60, what="the Elicitation to be held")
        assert hookd_cli(home, "answer", held, "--option", "cancel").returncode == 0
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert [x.split(":")[0] for x in err.splitlines() if ": held: " in x] == ["004-Elicitation.json"]
    assert '"action":"cancel"' in next(x for x in out.splitlines() if x.startswith("004-Elicitation.json"))
    client.close()
    assert hookd_run(home, "spawn", "nohold", "--settings-file", str(tmp_path / "nohold.json"), "--hold", "0",
                     "--no-mcp").returncode == 0
    r = subprocess.run([sys.executable, "-m", "hookd", "--home", str(home), "replay", str(SCENARIO), "--into", "nohold"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and ": held: " not in r.stderr, r.stderr


def test_sign_out_revokes_that_session_on_the_server_also_after_a_restart(home: Path) -> None:
    """Issue 18 item 9: sign-out used to clear only the browser's cookie; a copy of it (another
    tab's, a stolen one) kept working for 7 days. Now the session is revoked on the server, for
    good; another browser's session is untouched."""
    d = DaemonProcess(home).start()
    try:
        port = _port(home)
        a, name = sign_in(home)
        b, _ = sign_in(home)  # a second browser
        copy = a.cookies[name]
        assert a.post("/web/signout", headers={"x-hookd-web": "1"}).status_code == 200
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, cookies={name: copy}) as stolen:
            r = stolen.get("/v1/web/session")
            assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
            assert stolen.get("/").status_code == 401
        assert b.get("/v1/web/session").status_code == 200  # the other browser stays signed in
        keep = b.cookies[name]
        a.close()
        b.close()
        d.stop()
        d.start()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, cookies={name: copy}) as stolen:
            assert stolen.get("/v1/status").status_code == 401  # still revoked after the restart
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, cookies={name: keep}) as other:
            assert other.get("/v1/status").status_code == 200
    finally:
        d.stop()


def test_revocations_expire_with_their_cookies(tmp_path: Path) -> None:
    now = [1000.0]
    f = tmp_path / "web-revoked.json"
    auth = WebAuth("tok", now=lambda: now[0], revoked_file=f)
    old, _ = auth.new_session()
    now[0] += SESSION_TTL_S / 2
    new, _ = auth.new_session()
    assert auth.revoke(old) and not auth.revoke("not.a.cookie")
    assert auth.session_expiry(old) is None and auth.session_expiry(new) is not None
    now[0] += SESSION_TTL_S / 2 + 1  # the old cookie would have expired: its revocation goes too
    assert auth.revoke(new)
    assert list(json.loads(f.read_text()).values()) == [int(1000 + SESSION_TTL_S * 1.5)]
    assert WebAuth("tok", now=lambda: now[0], revoked_file=f).session_expiry(new) is None
