"""The CLI's HTTP client: httpx over the daemon's Unix socket (``Client``; ``AsyncClient``
for asyncio callers such as ``hookd mcp``).

Raises DaemonNotRunning (with the command that starts it) when nothing listens, HookdError
when the socket's directory is not this user's alone (nothing is sent), and turns the API's
error shape back into the matching HookdError.
"""

from __future__ import annotations

import shlex
from typing import Any, Iterator

import httpx
import msgspec

from hookd.config import Home
from hookd.models import DaemonNotRunning, HookdError

_ERRORS = {cls.code: cls for cls in HookdError.__subclasses__()}
_UNREACHABLE = (httpx.ConnectError, FileNotFoundError, httpx.RemoteProtocolError)


class _Transport(httpx.HTTPTransport):
    """httpx over the home's Unix socket, only while its directory is this user's alone."""

    def __init__(self, home: Home):
        super().__init__(uds=str(home.socket_path))
        self.home = home

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        _check_socket(self.home)
        return super().handle_request(request)


class _AsyncTransport(httpx.AsyncHTTPTransport):
    """:class:`_Transport` for asyncio callers."""

    def __init__(self, home: Home):
        super().__init__(uds=str(home.socket_path))
        self.home = home

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        _check_socket(self.home)
        return await super().handle_async_request(request)


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


def _raise_for(r: httpx.Response, body: bytes) -> None:
    """Raise the HookdError an error reply (``{"error": {"code", "message"}}``) stands for."""
    if r.status_code < 400:
        return
    try:
        err = msgspec.json.decode(body)["error"]
        cls = _ERRORS.get(err["code"], HookdError)
        raise cls(err["message"])
    except (msgspec.DecodeError, KeyError, TypeError):
        raise HookdError(f"daemon answered HTTP {r.status_code}") from None


class Client:
    """A client for one home's daemon. timeout: seconds per request (None: no limit)."""

    def __init__(self, home: Home, timeout: float | None = 10.0):
        self.home = home
        self._http = httpx.Client(transport=_Transport(home), base_url="http://hookd", timeout=timeout)

    def _not_running(self) -> DaemonNotRunning:
        return _not_running(self.home)

    def _raise_for(self, r: httpx.Response) -> None:
        _raise_for(r, r.read() if r.status_code >= 400 else b"")

    def get(self, path: str, **params: Any) -> Any:
        return self.get_with_headers(path, **params)[0]

    def get_with_headers(self, path: str, **params: Any) -> tuple[Any, httpx.Headers]:
        """GET and decode JSON; also returns the reply's headers (e.g. ``x-total-count``)."""
        try:
            r = self._http.get(path, params={k: v for k, v in params.items() if v is not None})
        except (httpx.ConnectError, FileNotFoundError, httpx.RemoteProtocolError):
            raise self._not_running() from None
        self._raise_for(r)
        return msgspec.json.decode(r.content), r.headers

    def post_json(self, path: str, obj: Any) -> Any:
        """POST a JSON body; returns the decoded JSON reply."""
        return msgspec.json.decode(self.post(path, msgspec.json.encode(obj), {"content-type": "application/json"}))

    def post(self, path: str, body: bytes, headers: dict[str, str] | None = None) -> bytes:
        try:
            r = self._http.post(path, content=body, headers=headers)
        except (httpx.ConnectError, FileNotFoundError, httpx.RemoteProtocolError):
            raise self._not_running() from None
        self._raise_for(r)
        return r.content

    def lines(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Stream JSON lines (``/v1/events?follow=1``) until the daemon ends the stream."""
        try:
            with self._http.stream("GET", path, params=params, timeout=None) as r:
                self._raise_for(r)
                for line in r.iter_lines():
                    if line:
                        yield msgspec.json.decode(line)
        except (httpx.ConnectError, FileNotFoundError):
            raise self._not_running() from None
        except (httpx.RemoteProtocolError, httpx.ReadError):
            return

    def close(self) -> None:
        self._http.close()


class AsyncClient:
    """The asyncio twin of :class:`Client` (JSON POST and GET only), for callers that must not
    block their event loop while the daemon waits (``POST /v1/interactions/await``).
    timeout: default seconds per request; ``post_json(..., timeout=)`` overrides it."""

    def __init__(self, home: Home, timeout: float | None = 10.0):
        self.home = home
        self._http = httpx.AsyncClient(transport=_AsyncTransport(home), base_url="http://hookd", timeout=timeout)

    async def get(self, path: str, **params: Any) -> Any:
        try:
            r = await self._http.get(path, params={k: v for k, v in params.items() if v is not None})
        except _UNREACHABLE:
            raise _not_running(self.home) from None
        _raise_for(r, r.content)
        return msgspec.json.decode(r.content)

    async def post_json(self, path: str, obj: Any, timeout: Any = httpx.USE_CLIENT_DEFAULT) -> Any:
        """POST a JSON body; returns the decoded JSON reply. Raises DaemonNotRunning, HookdError."""
        try:
            r = await self._http.post(path, content=msgspec.json.encode(obj),
                                      headers={"content-type": "application/json"}, timeout=timeout)
        except _UNREACHABLE:
            raise _not_running(self.home) from None
        _raise_for(r, r.content)
        return msgspec.json.decode(r.content)

    async def aclose(self) -> None:
        await self._http.aclose()
