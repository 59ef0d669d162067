"""The CLI's HTTP client (hookd.client.Client) on the wire: what it sends, and how it reads the
replies it may get. Against a real daemon every CLI test uses it; the replies a daemon sends
only when something breaks (a reply cut short, bytes that are not HTTP, no reply at all) are
written here by a peer on a real Unix socket at the home's socket path, one scripted reply per
connection.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Iterator

import pytest

from hookd.client import Client
from hookd.config import Home
from hookd.errors import Conflict, DaemonNotRunning, HookdError


class Peer:
    """Listens on ``home``'s socket; each connection gets the next of ``replies`` (raw bytes,
    written once the request's head and body are in, then the connection is closed; None: the
    connection is held open, unanswered, until the peer is closed). ``requests``: the raw
    requests read."""

    def __init__(self, home: Home, replies: list[bytes | None]):
        home.socket_path.parent.mkdir(parents=True, mode=0o700)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(os.fspath(home.socket_path))
        self.sock.listen()
        self.replies = list(replies)
        self.requests: list[bytes] = []
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        for reply in self.replies:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                body += conn.recv(65536)
            self.requests.append(head + b"\r\n\r\n" + body)
            if reply is None:
                self.held.append(conn)
                continue
            conn.sendall(reply)
            conn.close()

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()
        self.thread.join(10)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home.resolve(tmp_path / "home")


@pytest.fixture
def peer(home: Home, request: pytest.FixtureRequest) -> Iterator[Peer]:
    p = Peer(home, request.param)
    yield p
    p.close()


def reply(status: str, body: bytes, *headers: str) -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(f"{h}\r\n" for h in headers) + "\r\n").encode() + body


def sized(status: str, body: bytes, *headers: str) -> bytes:
    return reply(status, body, *headers, f"content-length: {len(body)}")


def chunked(*chunks: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"


@pytest.mark.parametrize("peer", [[sized("200 OK", b'{"n": 1, "s": "\xc3\xa9"}', "content-type: application/json",
                                         "X-Total-Count: 7")]], indirect=True)
def test_a_reply_with_a_length_and_its_headers_any_case(peer: Peer, home: Home) -> None:
    data, headers = Client(home).get_with_headers("/v1/messages", builder="b 1", limit=5, none=None)
    assert data == {"n": 1, "s": "é"}
    assert headers.get("x-total-count") == "7" and headers["X-TOTAL-COUNT"] == "7" and headers.get("nope") is None
    assert peer.requests == [b"GET /v1/messages?builder=b+1&limit=5 HTTP/1.1\r\nHost: hookd\r\nConnection: close\r\n\r\n"]


@pytest.mark.parametrize("peer", [[sized("200 OK", b'{"ok":true}')]], indirect=True)
def test_a_json_body_is_compact_utf8_and_text_not_utf8_is_refused_before_sending(peer: Peer, home: Home) -> None:
    c = Client(home)
    with pytest.raises(UnicodeEncodeError):  # hookd.cli's _Group.invoke: one sentence, exit 2
        c.post_json("/v1/builders/b1/messages", {"text": "bad \udc9b byte"})
    assert c.post_json("/v1/builders/b1/messages", {"text": "für dich", "n": [1, None]}) == {"ok": True}
    body = '{"text":"für dich","n":[1,null]}'.encode()
    assert peer.requests == [b"POST /v1/builders/b1/messages HTTP/1.1\r\nHost: hookd\r\nConnection: close\r\n"
                             b"content-type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)]


@pytest.mark.parametrize("peer", [[
    reply("200 OK", chunked(b'{"seq": 1}\n{"se', b'q": 2}\n', b"\n", b'{"seq": 3}\n'), "Transfer-Encoding: chunked"),
    reply("200 OK", b'{"seq": 1}\n{"seq": 2}'),  # no length: up to the close, the last line without its newline
    reply("200 OK", b'5\r\n{"seq"', "transfer-encoding: chunked"),  # the daemon went away mid-chunk
]], indirect=True)
def test_a_stream_of_lines_in_chunks_or_to_the_close_and_one_cut_short(peer: Peer, home: Home) -> None:
    c = Client(home)
    assert [e["seq"] for e in c.lines("/v1/events", after=0, follow=1)] == [1, 2, 3]
    assert [e["seq"] for e in c.lines("/v1/events")] == [1, 2]
    assert list(c.lines("/v1/events")) == []  # the stream ends; hookd events then says the daemon stopped


@pytest.mark.parametrize("peer", [[
    b"",  # closed before any reply: a daemon stopping
    reply("200 OK", b'{"a":', "content-length: 10"),  # a body cut short
    reply("200 OK", b"5\r\n{\"a\":", "transfer-encoding: chunked"),
]], indirect=True)
def test_a_reply_cut_short_is_the_daemon_not_running(peer: Peer, home: Home) -> None:
    for _ in range(3):
        with pytest.raises(DaemonNotRunning, match="start it with: hookd --home .* serve"):
            Client(home).get("/v1/status")


@pytest.mark.parametrize("peer", [[
    b"SSH-2.0-OpenSSH_9.6\r\n",
    sized("409 Conflict", b'{"error":{"code":"conflict","message":"already answered"}}'),
    sized("500 Internal Server Error", b"oops"),
]], indirect=True)
def test_replies_that_are_not_http_or_are_errors_are_one_sentence(peer: Peer, home: Home) -> None:
    c = Client(home)
    with pytest.raises(HookdError, match="^hookd answered with something that is not HTTP$"):
        c.get("/v1/status")
    with pytest.raises(Conflict, match="^already answered$"):
        c.post_json("/v1/interactions/x/answer", {})
    with pytest.raises(HookdError, match="^daemon answered HTTP 500$"):
        c.get("/v1/status")


@pytest.mark.parametrize("peer", [[None]], indirect=True)
def test_a_daemon_that_never_answers_is_a_sentence_after_the_timeout(peer: Peer, home: Home) -> None:
    with pytest.raises(HookdError, match=r"^hookd did not answer within 0\.2 s \(socket "):
        Client(home, timeout=0.2).get("/v1/status")


def test_no_socket_is_the_daemon_not_running(home: Home) -> None:
    with pytest.raises(DaemonNotRunning):
        Client(home).get("/v1/status")
