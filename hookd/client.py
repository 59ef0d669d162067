"""The CLI's HTTP client: the standard library's ``http.client`` over the daemon's Unix socket
(``Client``), one connection per request.

Raises DaemonNotRunning (with the command that starts it) when nothing listens, HookdError
when the socket's directory is not this user's alone (nothing is sent) or when the daemon
does not answer within the timeout, and turns the API's error shape back into the matching
HookdError.

Not httpx: importing it costs the CLI more than the rest of a short command together
(docs/decisions.md "The CLI starts fast"); the daemon's replies need nothing beyond HTTP/1.1.
"""

from __future__ import annotations

import http.client
import shlex
import socket
import urllib.parse
from typing import Any, Iterator

import msgspec

from hookd.config import Home
from hookd.models import DaemonNotRunning, HookdError

_ERRORS = {cls.code: cls for cls in HookdError.__subclasses__()}
#: What connecting to a socket nobody listens on raises (a missing file, a refused connection,
#: the daemon closing the connection before its reply: stopping).
_UNREACHABLE = (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected)


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 over the home's Unix socket, only while its directory is this user's alone."""

    def __init__(self, home: Home, timeout: float | None):
        super().__init__("hookd", timeout=timeout)
        self.home = home

    def connect(self) -> None:
        _check_socket(self.home)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(str(self.home.socket_path))
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def _check_socket(home: Home) -> None:
    """Raise HookdError when the socket's directory is not a private directory of this user's
    (another user could be listening there, to read what the CLI sends and answer for hookd)."""
    why = home.untrusted_socket()
    if why is not None:
        raise HookdError(f"not connecting to {home.socket_path}: {why}")


def _not_running(home: Home) -> DaemonNotRunning:
    return DaemonNotRunning(
        f"hookd is not running for {home.root}; start it with: hookd --home {shlex.quote(str(home.root))} serve"
    )


def _raise_for(status: int, body: bytes) -> None:
    """Raise the HookdError an error reply (``{"error": {"code", "message"}}``) stands for."""
    if status < 400:
        return
    try:
        err = msgspec.json.decode(body)["error"]
        cls = _ERRORS.get(err["code"], HookdError)
        raise cls(err["message"])
    except (msgspec.DecodeError, KeyError, TypeError):
        raise HookdError(f"daemon answered HTTP {status}") from None


def _target(path: str, params: dict[str, Any]) -> str:
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    return f"{path}?{query}" if query else path


class Client:
    """A client for one home's daemon. timeout: seconds per request (None: no limit)."""

    def __init__(self, home: Home, timeout: float | None = 10.0):
        self.home = home
        self.timeout = timeout
        self._open: _UnixConnection | None = None  # the connection of a request under way
        self._aborted = False

    def _not_running(self) -> DaemonNotRunning:
        return _not_running(self.home)

    def _request(self, method: str, target: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None, timeout: float | None = None, stream: bool = False
                 ) -> tuple[_UnixConnection, http.client.HTTPResponse]:
        """Send one request on a fresh connection; returns it with the reply's head read.
        timeout: seconds (default the client's); stream: none at all. Raises DaemonNotRunning,
        HookdError (untrusted socket, no answer in time)."""
        conn = _UnixConnection(self.home, None if stream else self.timeout if timeout is None else timeout)
        self._open = conn
        try:
            conn.connect()
            if self._aborted:
                raise HookdError("the request to hookd was broken off")
            conn.request(method, target, body=body, headers=headers or {})
            return conn, conn.getresponse()
        except _UNREACHABLE:
            conn.close()
            raise self._not_running() from None
        except TimeoutError:
            conn.close()
            raise HookdError(f"hookd did not answer within {conn.timeout:g} s (socket {self.home.socket_path})") from None
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
              ) -> tuple[bytes, http.client.HTTPMessage]:
        conn, r = self._request(method, target, body, headers, timeout)
        try:
            data = r.read()
        except (ConnectionResetError, http.client.IncompleteRead):
            raise self._not_running() from None
        except TimeoutError:
            raise HookdError(f"hookd did not answer within {conn.timeout:g} s (socket {self.home.socket_path})") from None
        finally:
            conn.close()
        _raise_for(r.status, data)
        return data, r.headers

    def get(self, path: str, **params: Any) -> Any:
        return self.get_with_headers(path, **params)[0]

    def get_with_headers(self, path: str, **params: Any) -> tuple[Any, http.client.HTTPMessage]:
        """GET and decode JSON; also returns the reply's headers (``.get("x-total-count")``,
        names case-insensitive)."""
        data, headers = self._call("GET", _target(path, params))
        return msgspec.json.decode(data), headers

    def post_json(self, path: str, obj: Any, timeout: float | None = None) -> Any:
        """POST a JSON body; returns the decoded JSON reply. timeout: seconds for this request
        (default: the client's)."""
        return msgspec.json.decode(self.post(path, msgspec.json.encode(obj), {"content-type": "application/json"},
                                             timeout=timeout))

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
            while True:
                try:
                    line = r.readline()
                except (ConnectionResetError, http.client.IncompleteRead, OSError):
                    return
                if not line:
                    return
                if line.strip():
                    yield msgspec.json.decode(line)
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
