"""The CLI's HTTP client: HTTP/1.1 over the daemon's Unix socket (``Client``), one connection per
request, written here on :mod:`socket`.

Raises DaemonNotRunning (with the command that starts it) when nothing listens, HookdError
when the socket's directory is not this user's alone (nothing is sent) or when the daemon
does not answer within the timeout, and turns the API's error shape back into the matching
HookdError.

Not httpx, and not the standard library's ``http.client`` either: importing httpx costs the
CLI more than the rest of a short command together, and ``http.client`` loads the ``email``
package (its header parser) and ``ssl``, about a fifth of ``hookd questions``' start
(docs/decisions.md "The CLI starts fast"). The daemon is hookd's own (uvicorn): a reply is a
status line, headers, and a body of ``Content-Length`` bytes, in chunks
(``Transfer-Encoding: chunked``: the event stream) or up to the close; nothing else is needed.
JSON with the standard library's ``json`` and errors from :mod:`hookd.errors`: a CLI call
loads no msgspec for talking to the daemon. A body with text that is not UTF-8 (an argument's
undecodable bytes, kept by Python as lone surrogates) raises UnicodeEncodeError before
anything is sent.
"""

from __future__ import annotations

import json
import shlex
import socket
import urllib.parse
from typing import Any, BinaryIO, Iterator

from hookd.config import Home
from hookd.errors import DaemonNotRunning, HookdError

_ERRORS = {cls.code: cls for cls in HookdError.__subclasses__()}
#: What connecting to a socket nobody listens on raises (a missing file, a refused connection),
#: and reading from a daemon that closed the connection before its reply was whole (stopping).
_UNREACHABLE = (FileNotFoundError, ConnectionRefusedError, ConnectionResetError)
#: The longest status or header line read (the daemon's are short; a longer one is not HTTP).
_MAX_LINE = 65536


class _Cut(Exception):
    """The connection ended before the reply was whole (no status line, a short body)."""


class Headers(dict[str, str]):
    """A reply's headers, names lower-cased: ``get`` and ``[]`` take any case. A name sent
    twice keeps its last value."""

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)


def _line(f: BinaryIO) -> bytes:
    """One line of the reply's head (CRLF stripped); raises _Cut at its end."""
    line = f.readline(_MAX_LINE + 1)
    if not line.endswith(b"\n"):
        if len(line) > _MAX_LINE:
            raise HookdError("hookd answered with a line too long for HTTP")
        raise _Cut
    return line.rstrip(b"\r\n")


class _Reply:
    """A reply whose status line and headers are read; ``read`` and ``chunks`` give its body."""

    def __init__(self, f: BinaryIO):
        self._f = f
        parts = _line(f).split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise HookdError("hookd answered with something that is not HTTP")
        self.status = int(parts[1])
        self.headers = Headers()
        while line := _line(f):
            name, _, value = line.decode("latin-1").partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def chunks(self) -> Iterator[bytes]:
        """The body as it arrives: each chunk of a chunked body, else the whole (up to its
        ``Content-Length``, or to the close). Raises _Cut when it ends short."""
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            while True:
                size = int(_line(self._f).split(b";")[0], 16)
                if size == 0:
                    return
                data = self._f.read(size)
                if len(data) < size or _line(self._f) != b"":
                    raise _Cut
                yield data
        length = self.headers.get("content-length")
        data = self._f.read(int(length)) if length is not None else self._f.read()
        if length is not None and len(data) < int(length):
            raise _Cut
        yield data

    def read(self) -> bytes:
        return b"".join(self.chunks())


class _Connection:
    """One request's connection to the home's Unix socket, made only while the socket's
    directory is this user's alone. timeout: seconds per socket operation (None: none)."""

    def __init__(self, home: Home, timeout: float | None):
        self.home = home
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self._file: BinaryIO | None = None

    def connect(self) -> None:
        _check_socket(self.home)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = sock
        sock.settimeout(self.timeout)
        sock.connect(str(self.home.socket_path))

    def request(self, method: str, target: str, body: bytes | None, headers: dict[str, str]) -> _Reply:
        """Send the request (``Connection: close``: the daemon closes it after the reply) and
        read the reply's head."""
        assert self.sock is not None
        head = [f"{method} {target} HTTP/1.1", "Host: hookd", "Connection: close",
                *(f"{k}: {v}" for k, v in headers.items())]
        if body is not None:
            head.append(f"Content-Length: {len(body)}")
        self.sock.sendall("\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + (body or b""))
        self._file = self.sock.makefile("rb")
        return _Reply(self._file)

    def close(self) -> None:
        for c in (self._file, self.sock):
            if c is not None:
                c.close()


def _check_socket(home: Home) -> None:
    """Raise HookdError when the socket's directory is not a private directory of this user's
    (another user could be listening there, to read what the CLI sends and answer for hookd)."""
    why = home.untrusted_socket()
    if why is not None:
        raise HookdError(f"not connecting to {home.socket_path}: {why}")


def _not_running(home: Home) -> DaemonNotRunning:
    return DaemonNotRunning(
        f"the daemon is not running for {home.root}; start it with: hookd --home {shlex.quote(str(home.root))} serve"
    )


def _raise_for(status: int, body: bytes) -> None:
    """Raise the HookdError an error reply (``{"error": {"code", "message"}}``) stands for."""
    if status < 400:
        return
    try:
        err = json.loads(body)["error"]
        cls = _ERRORS.get(err["code"], HookdError)
        raise cls(err["message"])
    except (ValueError, KeyError, TypeError):  # (json.JSONDecodeError and UnicodeDecodeError are ValueErrors)
        raise HookdError(f"daemon answered HTTP {status}") from None


def _encode(obj: Any) -> bytes:
    """``obj`` as compact JSON in UTF-8, text as it is (not ``\\u`` escaped). Raises
    UnicodeEncodeError for text that is not UTF-8 (lone surrogates), TypeError for what JSON
    cannot hold."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def _target(path: str, params: dict[str, Any]) -> str:
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    return f"{path}?{query}" if query else path


class Client:
    """A client for one home's daemon. timeout: seconds per request (None: no limit)."""

    def __init__(self, home: Home, timeout: float | None = 10.0):
        self.home = home
        self.timeout = timeout
        self._open: _Connection | None = None  # the connection of a request under way
        self._aborted = False

    def _not_running(self) -> DaemonNotRunning:
        return _not_running(self.home)

    def _did_not_answer(self, conn: _Connection) -> HookdError:
        return HookdError(f"hookd did not answer within {conn.timeout:g} s (socket {self.home.socket_path})")

    def _request(self, method: str, target: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None, timeout: float | None = None, stream: bool = False
                 ) -> tuple[_Connection, _Reply]:
        """Send one request on a fresh connection; returns it with the reply's head read.
        timeout: seconds (default the client's); stream: none at all. Raises DaemonNotRunning,
        HookdError (untrusted socket, no answer in time, a reply that is not HTTP)."""
        conn = _Connection(self.home, None if stream else self.timeout if timeout is None else timeout)
        self._open = conn
        try:
            conn.connect()
            if self._aborted:
                raise HookdError("the request to hookd was broken off")
            return conn, conn.request(method, target, body, headers or {})
        except (*_UNREACHABLE, _Cut):
            conn.close()
            raise self._not_running() from None
        except TimeoutError:
            conn.close()
            raise self._did_not_answer(conn) from None
        except OSError:
            conn.close()
            if self._aborted:  # abort() shut the socket down under the request (a broken pipe, a reset)
                raise HookdError("the request to hookd was broken off") from None
            raise
        except BaseException:
            conn.close()
            raise

    def _call(self, method: str, target: str, body: bytes | None = None,
              headers: dict[str, str] | None = None, timeout: float | None = None
              ) -> tuple[bytes, Headers]:
        conn, r = self._request(method, target, body, headers, timeout)
        try:
            data = r.read()
        except (ConnectionResetError, _Cut, ValueError):  # (ValueError: a chunk size that is no number)
            raise self._not_running() from None
        except TimeoutError:
            raise self._did_not_answer(conn) from None
        finally:
            conn.close()
        _raise_for(r.status, data)
        return data, r.headers

    def get(self, path: str, **params: Any) -> Any:
        return self.get_with_headers(path, **params)[0]

    def get_with_headers(self, path: str, **params: Any) -> tuple[Any, Headers]:
        """GET and decode JSON; also returns the reply's headers (``.get("x-total-count")``,
        names case-insensitive)."""
        data, headers = self._call("GET", _target(path, params))
        return json.loads(data), headers

    def post_json(self, path: str, obj: Any, timeout: float | None = None) -> Any:
        """POST a JSON body; returns the decoded JSON reply. timeout: seconds for this request
        (default: the client's)."""
        return json.loads(self.post(path, _encode(obj), {"content-type": "application/json"}, timeout=timeout))

    def post(self, path: str, body: bytes, headers: dict[str, str] | None = None,
             timeout: float | None = None) -> bytes:
        return self._call("POST", path, body, headers, timeout)[0]

    def lines(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Stream JSON lines (``/v1/events?follow=1``) until the daemon ends the stream (no
        timeout: a followed stream may stay quiet for hours)."""
        conn, r = self._request("GET", _target(path, params), stream=True)
        try:
            if r.status >= 400:
                _raise_for(r.status, r.read())
            chunks, buf = r.chunks(), b""
            while True:
                try:
                    chunk = next(chunks, None)
                except (_Cut, ValueError, OSError):  # the daemon went away (or abort()): the stream ends
                    return
                if chunk is None:
                    break
                *whole, buf = (buf + chunk).split(b"\n")
                for line in whole:
                    if line.strip():
                        yield json.loads(line)
            if buf.strip():
                yield json.loads(buf)
        finally:
            conn.close()

    def abort(self) -> None:
        """Break off the request under way from another thread (its caller then gets
        DaemonNotRunning or HookdError): ``hookd mcp`` when the agent cancels a wait."""
        self._aborted = True
        conn = self._open
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        """Nothing stays open between requests; kept for callers that close their client."""
