"""The Unix socket's fast path for plain hooks (hookd.http.fastpath.HttpProtocol) against the ASGI
path it short-cuts: the same requests get the same replies and leave the same records.

Two real daemons, one with the fast path (the default) and one with ``HOOKD_FASTPATH=0``,
are sent the same raw HTTP requests over their Unix sockets, as the compiled hook client
sends them (chunked, one write) and in the other shapes a client may use.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookd.client import Client
from hookd.config import Home
from hookd.daemonproc import DaemonProcess
from hookd.devtools.replay import normalize

from .conftest import TUI, wait_until

pytestmark = pytest.mark.daemon

ASK_PRE = (TUI / "007-PreToolUse.json").read_bytes()


def head(builder: str = "b1", harness: str = "claude-code", extra: bytes = b"") -> bytes:
    return (b"POST /v1/hooks/%s/%s HTTP/1.1\r\nHost: hookd\r\nContent-Type: application/json\r\n"
            % (harness.encode(), builder.encode()) + extra)


def chunked(payload: bytes, delivery: str, *, last: bool = True, builder: str = "b1", harness: str = "claude-code") -> bytes:
    """What the compiled client writes: head, one chunk, the last-chunk marker (when stdin ended)."""
    return (head(builder, harness, b"X-Hookd-Delivery: %s\r\nX-Hookd-Deadline-Ms: 5000\r\n" % delivery.encode())
            + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            + b"%x\r\n%s\r\n" % (len(payload), payload) + (b"0\r\n\r\n" if last else b""))


def sized(payload: bytes, delivery: str, extra: bytes = b"") -> bytes:
    return (head(extra=b"X-Hookd-Delivery: %s\r\n" % delivery.encode() + extra)
            + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(payload) + payload)


def exchange(home: Home, data: bytes, *, close_write: bool = False, timeout: float = 15) -> bytes:
    """Send ``data`` on a new connection to the daemon's Unix socket and read until it closes,
    our writing side left open as the compiled client leaves it; close_write=True shuts it down
    after the request (on the ASGI path an EOF is the client gone: its reply may never come)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(os.fspath(home.socket_path))
    try:
        s.sendall(data)
        if close_write:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out
    finally:
        s.close()


def reply(raw: bytes) -> tuple[int, bytes]:
    """(status, body) of the final response (after any 100 Continue); checks its framing."""
    while raw.startswith(b"HTTP/1.1 100 "):
        raw = raw.split(b"\r\n\r\n", 1)[1]
    head_, _, body = raw.partition(b"\r\n\r\n")
    lines = head_.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
    assert int(headers[b"content-length"]) == len(body), raw
    assert headers[b"content-type"] == b"application/json", raw
    if status != 200:
        err = json.loads(body)["error"]
        assert set(err) - {"stored"} == {"code", "message"} and err["message"], body
        # a refused hook whose bytes were committed names their hook event, in the body and
        # the header (its client must not spool it); no other reply carries either
        assert headers.get(b"x-hookd-stored") == (str(err["stored"]).encode() if "stored" in err else None), raw
        assert "stored" not in err or 400 <= status < 500, raw
    return status, body


@pytest.fixture
def pair(tmp_path: Path):
    """(fast, asgi): two running daemons, the second with HOOKD_FASTPATH=0."""
    fast = DaemonProcess(tmp_path / "fast").start()
    asgi = DaemonProcess(tmp_path / "asgi", env={**os.environ, "HOOKD_FASTPATH": "0"}).start()
    yield fast, asgi
    for d in (fast, asgi):
        d.stop()
        d.kill()


@contextlib.contextmanager
def api(home: Home) -> Iterator[Client]:
    c = Client(home)
    try:
        yield c
    finally:
        c.close()


def all_events(c: Client) -> list[dict]:
    return list(c.lines("/v1/events", after=0, limit=100000))


def recorded(d: DaemonProcess) -> tuple[list[dict], dict]:
    """The daemon's events (normalised as replay does; lane changes, which depend on timing,
    left out) and its status."""
    with api(d.home) as c:
        events = [normalize(e) for e in all_events(c) if e["kind"] != "lane_changed"]
        st = c.get("/v1/status")
    return events, st


def test_fast_path_answers_and_records_like_the_asgi_path(pair) -> None:
    """The recorded TUI session's hooks (an AskUserQuestion asked and answered at the
    terminal, a message delivered at a boundary), plus every other shape a hook request may
    take: Content-Length instead of chunks, Expect: 100-continue, stdin held open after a
    complete object, a duplicate delivery, malformed JSON, non-UTF-8 bytes, an empty body, an
    unknown harness and a bad builder id. Same status and body from both daemons for each,
    same events and counts after; and the fast daemon served them on its fast path."""
    fast, asgi = pair
    hooks = sorted(TUI.glob("*.json"))
    replies: dict[str, list[tuple[int, bytes]]] = {"fast": [], "asgi": []}
    for name, d in (("fast", fast), ("asgi", asgi)):
        h = d.home
        out = replies[name]
        for i, f in enumerate(hooks):
            out.append(reply(exchange(h, chunked(f.read_bytes(), f"tui-{i}"))))
            if i == 0:  # the builder is known now: a message for the next boundary
                with api(h) as c:
                    c.post_json("/v1/builders/b1/messages", {"text": "also update the changelog", "author": "ana"})
        out.append(reply(exchange(h, sized(ASK_PRE.replace(b"toolu_", b"toolu_cl"), "sized"))))
        out.append(reply(exchange(h, sized(ASK_PRE.replace(b"toolu_", b"toolu_ex"), "expect",
                                           b"Expect: 100-continue\r\n"))))
        out.append(reply(exchange(h, chunked(ASK_PRE.replace(b"toolu_", b"toolu_ho"), "held", last=False),
                                  close_write=False)))
        out.append(reply(exchange(h, chunked(hooks[3].read_bytes(), "tui-3"))))  # a duplicate delivery
        out.append(reply(exchange(h, chunked(b'{"hook_event_name": "Stop", "session_id": ', "bad-json"))))
        out.append(reply(exchange(h, chunked(b'{"hook_event_name": "Stop", "x": "\xff\xfe"}', "not-utf8"))))
        out.append(reply(exchange(h, sized(b"", "empty"))))
        out.append(reply(exchange(h, chunked(ASK_PRE, "no-harness", harness="no-such-harness"))))
        out.append(reply(exchange(h, chunked(ASK_PRE, "bad-builder", builder="b!1"))))

    # (a delivered message names the time it was sent, to the second)
    untimed = lambda rs: [(st, re.sub(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", b"<time>", b)) for st, b in rs]  # noqa: E731
    assert untimed(replies["fast"]) == untimed(replies["asgi"])
    statuses = [s for s, _ in replies["fast"]]
    assert statuses[:len(hooks) + 4] == [200] * (len(hooks) + 4)
    assert statuses[len(hooks) + 4:] == [422, 422, 422, 404, 400], replies["fast"][len(hooks):]
    delivered = [b for _, b in replies["fast"][:len(hooks)] if b"also update the changelog" in b]
    assert len(delivered) == 1  # the message went out once, in a hook's reply

    fast_events, fast_st = recorded(fast)
    asgi_events, asgi_st = recorded(asgi)
    assert fast_events == asgi_events
    assert {e["kind"] for e in fast_events} >= {"question_pending", "question_resolved", "inbox_delivered", "hook_invalid"}
    counts = lambda st: {k: v for k, v in st["counts"].items() if k != "events"}  # noqa: E731 (lane changes)
    assert counts(fast_st) == counts(asgi_st) and fast_st["counts"]["hook_events"] == len(replies["fast"]) - 3
    # not stored: the duplicate delivery, the unknown harness and the bad builder id; and
    # the fast daemon answered every one of them on its fast path
    assert fast_st["fast_path"]["enabled"] is True and fast_st["fast_path"]["hooks"] == len(replies["fast"])
    assert asgi_st["fast_path"] == {"enabled": False, "hooks": 0, "waited": 0}


def test_a_refused_hook_whose_bytes_were_stored_names_them(pair) -> None:
    """The reply contract: a hook refused after its raw bytes were committed (malformed JSON,
    kept as ``hook_invalid``) gets a 4xx with ``X-Hookd-Stored: <hook event id>`` and that id
    as the error's ``stored``, on either path, so that its client does not spool it; one
    refused with nothing stored (an unknown harness) carries neither, and is spooled."""
    for d in pair:
        raw = exchange(d.home, chunked(b'{"hook_event_name": "Stop", "session_id": ', "bad-json"))
        status, body = reply(raw)
        db = sqlite3.connect(f"file:{d.home.db}?mode=ro", uri=True)
        try:
            [(stored,)] = db.execute("SELECT id FROM hook_events WHERE delivery_id = 'bad-json'").fetchall()
        finally:
            db.close()
        assert status == 422 and json.loads(body)["error"]["stored"] == stored
        assert b"\r\nx-hookd-stored: %d\r\n" % stored in raw.split(b"\r\n\r\n")[0].lower() + b"\r\n", raw
        raw = exchange(d.home, chunked(ASK_PRE, "no-harness", harness="no-such-harness"))
        status, body = reply(raw)
        assert status == 404 and b"x-hookd-stored" not in raw.lower() and "stored" not in json.loads(body)["error"]


@pytest.mark.parametrize("path", ["fast", "asgi-unix", "asgi-tcp"])
def test_a_body_cut_off_does_not_shadow_its_spooled_copy(path: str, tmp_path: Path) -> None:
    """A hook client stopped mid-body (the harness's timeout, Esc) spools the whole payload
    under its delivery id. The cut body the daemon got is stored raw, under ``<id>~cut``, so
    the spooled copy is not taken for a duplicate: both are kept, the question is recorded."""
    env = {**os.environ, "HOOKD_FASTPATH": "0" if path.startswith("asgi") else "1"}
    d = DaemonProcess(tmp_path / "home", env=env).start()
    try:
        h = d.home
        half = len(ASK_PRE) // 2
        data = chunked(ASK_PRE, "1796000000000000-7-1", last=False)[: -len(ASK_PRE) - 2 + half]  # half the object
        if path == "asgi-tcp":
            ep = h.read_endpoint()
            s = socket.create_connection(("127.0.0.1", ep.port))
            data = data.replace(b"Host: hookd\r\n", b"Host: hookd\r\nAuthorization: Bearer %s\r\n" % ep.hook_token.encode())
        else:
            s = socket.socket(socket.AF_UNIX)
            s.connect(os.fspath(h.socket_path))
        s.sendall(data)
        with api(h) as c:
            before = c.get("/v1/status")["counts"]["hook_events"]
            s.close()
            wait_until(lambda: c.get("/v1/status")["counts"]["hook_events"] == before + 1, 60,
                       what="the cut body to be stored")
            spool = h.spool_dir("b1")
            spool.mkdir(parents=True, exist_ok=True)
            tmp = spool / ".1796000000000000-7-1.tmp"
            tmp.write_bytes(ASK_PRE)
            tmp.rename(spool / "1796000000000000-7-1.claude-code.json")
            wait_until(lambda: not list(spool.glob("*.json")), 60, what="the spool to be ingested")
            st = c.get("/v1/status")
            events = all_events(c)
            pending = c.get("/v1/questions", state="pending")
        assert st["counts"]["hook_events"] == before + 2
        invalid = [e for e in events if e["kind"] == "hook_invalid"]
        assert len(invalid) == 1 and invalid[0]["data"]["source"] == "live"
        assert invalid[0]["data"]["bytes"] == half
        received = [e for e in events if e["kind"] == "hook_received"]
        assert [e["data"]["source"] for e in received] == ["spool"]
        assert [q["id"] for q in pending] == [json.loads(ASK_PRE)["tool_use_id"]]
    finally:
        d.stop()
        d.kill()


@pytest.mark.parametrize("fastpath", ["1", "0"])
def test_a_body_that_never_ends_is_refused_after_the_body_timeout(fastpath: str, tmp_path: Path) -> None:
    """HOOKD_BODY_TIMEOUT_S=1: a hook whose body stalls halfway is answered 400 in the one
    error shape after about a second, on either path, and what arrived is stored raw (as
    ``hook_invalid``, under the cut delivery id)."""
    env = {**os.environ, "HOOKD_FASTPATH": fastpath, "HOOKD_BODY_TIMEOUT_S": "1"}
    d = DaemonProcess(tmp_path / "home", env=env).start()
    try:
        data = chunked(ASK_PRE, "stalled", last=False)
        t0 = time.monotonic()
        raw = exchange(d.home, data[: len(data) - 100], timeout=20)
        took = time.monotonic() - t0
        status, body = reply(raw)
        assert status == 400 and b"did not arrive within 1 s; what arrived is stored raw" in body, raw
        assert b"\r\nx-hookd-stored: 1\r\n" in raw.lower() and json.loads(body)["error"]["stored"] == 1, raw
        assert 0.9 <= took < 10, took
        with api(d.home) as c:
            assert c.get("/v1/status")["counts"]["hook_events"] == 1
            assert [e["data"]["bytes"] for e in all_events(c) if e["kind"] == "hook_invalid"] == [len(ASK_PRE) - 100 + 2]
        db = sqlite3.connect(f"file:{d.home.db}?mode=ro", uri=True)
        try:
            assert db.execute("SELECT delivery_id FROM hook_events").fetchall() == [("stalled~cut",)]
        finally:
            db.close()
    finally:
        d.stop()
        d.kill()


PRE = (TUI / "004-PreToolUse.json").read_bytes()


def finished_together(d: DaemonProcess, n: int, tag: str, *, half_close: bool = False) -> list[tuple[int | None, bytes]]:
    """``n`` hooks (PRE with tool_use_ids ``toolu_000...``) whose last bytes arrive at once:
    each connection accepted with half its body, then the rest written (and, with half_close,
    our writing side shut down) while the daemon is stopped. Returns each reply's (status,
    body), ``(None, b"")`` for a connection closed with no reply."""
    h = d.home
    requests, socks = [], []
    for i in range(n):
        data = chunked(PRE.replace(b"toolu_", b"toolu_%03d" % i), f"{tag}-{i}")
        requests.append(data)
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(os.fspath(h.socket_path))
        s.sendall(data[: len(data) // 2])
        socks.append(s)
    with api(h) as c:  # accepted after the n (the backlog is served in order), answered after them
        c.get("/v1/status")
    assert d.proc is not None
    os.kill(d.proc.pid, signal.SIGSTOP)
    try:
        for s, data in zip(socks, requests):
            s.sendall(data[len(data) // 2:])
            if half_close:
                s.shutdown(socket.SHUT_WR)
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
    replies: list[tuple[int | None, bytes]] = []
    for s in socks:
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        s.close()
        replies.append(reply(out) if out else (None, b""))
    return replies


def test_hooks_arriving_together_share_a_commit_and_are_all_answered(tmp_path: Path) -> None:
    """60 hooks whose last bytes arrive at once (:func:`finished_together`): the writes of one
    event-loop turn share a group commit, so fast-path hooks wait for it and a task finishes
    them (``fast_path.waited``). Every one is answered 200 and stored once, with its own events."""
    d = DaemonProcess(tmp_path / "home").start()
    try:
        assert finished_together(d, 60, "together") == [(200, b"")] * 60
        with api(d.home) as c:
            st = c.get("/v1/status")
            received = [e for e in all_events(c) if e["kind"] == "hook_received"]
        assert st["counts"]["hook_events"] == 60
        assert sorted(e["data"]["tool_use_id"] for e in received) == sorted(
            json.loads(PRE)["tool_use_id"].replace("toolu_", "toolu_%03d" % i) for i in range(60))
        assert st["fast_path"]["hooks"] == 60 and 0 < st["fast_path"]["waited"] < 60, st["fast_path"]
    finally:
        d.stop()
        d.kill()


def test_a_fast_path_client_that_half_closes_after_its_request_still_gets_its_reply(tmp_path: Path) -> None:
    """A client may shut down its writing side once its request is sent: on the fast path the
    reply still comes. 20 hooks whose rest and EOF arrive together while the daemon is stopped
    (:func:`finished_together`): those that wait for a group commit are answered by a task,
    and the EOF is not read before (``_HookRequest.start`` pauses reading once the body is
    there); each is answered 200 and stored once. On the ASGI path an EOF is the client gone
    (uvicorn's ``eof_received``), which held hooks, idle wakes and event streams rely on."""
    d = DaemonProcess(tmp_path / "home").start()
    try:
        assert finished_together(d, 20, "half", half_close=True) == [(200, b"")] * 20
        with api(d.home) as c:
            st = c.get("/v1/status")
        assert st["counts"]["hook_events"] == 20
        assert st["fast_path"]["waited"] > 0, st["fast_path"]  # some replies came after the EOF
    finally:
        d.stop()
        d.kill()


def test_resume_drives_a_started_coroutine_as_a_task_would() -> None:
    """hookd.http.fastpath._resume, which finishes a fast-path hook that had to wait (its first step
    ran in the protocol's callback): a future's result reaches the coroutine, so does its
    error, a bare yield is a turn of the loop, and cancelling the task throws into it."""
    import asyncio

    from hookd.http.fastpath import _resume

    async def run() -> None:
        loop = asyncio.get_running_loop()
        log: list[str] = []

        async def work(fut: asyncio.Future, fail: asyncio.Future) -> str:
            got = await fut
            await asyncio.sleep(0)  # a bare yield
            try:
                await fail
            except ValueError as e:
                log.append(f"error {e}")
            return f"done {got}"

        fut, fail = loop.create_future(), loop.create_future()
        coro = work(fut, fail)
        first = coro.send(None)  # as _HookRequest.start does
        assert first is fut
        task = loop.create_task(_resume(coro, first))
        loop.call_soon(fut.set_result, 42)
        loop.call_later(0.01, fail.set_exception, ValueError("no"))
        assert await asyncio.wait_for(task, 5) == "done 42" and log == ["error no"]

        cleaned: list[bool] = []

        async def held(f: asyncio.Future) -> None:
            try:
                await f
            finally:
                cleaned.append(True)

        never = loop.create_future()
        coro = held(never)
        task = loop.create_task(_resume(coro, coro.send(None)))
        await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert task.cancelled() and cleaned == [True]

    asyncio.run(run())
