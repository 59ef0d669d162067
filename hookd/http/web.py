"""The operator page (issue 9): one live inbox for every lane, answered in the browser.

Served by ``hookd serve`` on its loopback TCP listener (``http://127.0.0.1:<port>/``), next to
the REST API it is a client of. Everything the page loads (``hookd/static/``: html, js, css)
comes from the package: no external network resource, no build step.

Sign-in: ``hookd open`` asks the daemon (Unix socket, or the bearer token) for a one-time code
(``POST /v1/web/codes``; kept in the daemon's memory, valid CODE_TTL_S, used at most once) and
prints ``http://127.0.0.1:<port>/signin#code=<code>``. The sign-in page posts the code
(``POST /web/session``) and gets a session cookie: ``HttpOnly; SameSite=Strict; Path=/``, named
per home (``hookd_<hex>``, several daemons share the host's cookie jar), valid SESSION_TTL_S.
The cookie is ``<expires>.<nonce>.<mac>``, an HMAC-SHA256 over ``<expires>.<nonce>`` with a key
derived from the home's bearer token: it survives a daemon restart (the page reconnects without
a new sign-in) and needs no table; all sessions end when the token changes (stop the daemon,
delete ``HOOKD_HOME/token``, start it: hook clients read the new one from ``run/endpoint``).
Signing out revokes that one session on the server: its nonce is kept, until the cookie would
have expired, in ``HOOKD_HOME/web-revoked.json`` (0600; read at start, so a revoked cookie
stays refused after a restart); other browsers' sessions are untouched.

Access on TCP (:class:`hookd.http.app.HookdASGI` asks :meth:`WebAuth.admit` when the bearer token
is missing): a request needs the right ``Host`` (``127.0.0.1:<port>`` or ``localhost:<port>``:
no DNS rebinding) and a valid session cookie, except the sign-in page and its assets
(PUBLIC_PATHS, which hold no data); hook routes always need the token. A state-changing request
(not GET/HEAD) with a cookie also needs the header ``X-Hookd-Web: 1`` (a cross-site form cannot
send it; a cross-site fetch with it needs a CORS preflight, which hookd never grants), an
``Origin`` (when sent) equal to the page's own, and ``Sec-Fetch-Site`` (when sent)
``same-origin``. Refusals: 401 ``unauthorized`` (not signed in), 403 ``forbidden`` (host,
origin or header), in the API's one error shape (``/v1/`` paths keep the token's wording,
"missing or wrong bearer token"; the page's paths say to run ``hookd open``), except a
browser's page request (GET with ``Accept: text/html``, not ``/v1/``): 401 with a small HTML
page saying to run ``hookd open`` (:class:`SignInNeeded`).

Routes added to the app (:meth:`WebPage.routes`):

- ``GET /`` the page; ``GET /signin`` the sign-in page; ``GET /static/...`` its assets.
- ``POST /web/session`` ``{"code"}`` -> 200 ``{"user", "expires_at"}`` + ``Set-Cookie``;
  401 for an unknown, used or expired code. ``POST /web/signout`` revokes the session (for
  good, across restarts) and clears the cookie.
- ``GET /v1/web/session`` -> ``{"user", "expires_at"}`` (who the page answers as).
- ``POST /v1/web/codes`` -> 201 ``{"code", "url", "expires_in_s"}``; not with a cookie (403).
- ``GET /v1/events/sse?after=SEQ`` the event log as server-sent events (``text/event-stream``):
  first ``event: hello`` with ``{"seq": last committed seq, "after": where this stream starts,
  "reset": bool}``, then each event as ``id: <seq>`` + ``data: <event JSON>``. ``Last-Event-ID``
  (EventSource's automatic reconnect) wins over ``after``; with neither the stream starts at the
  end of the log. ``after`` beyond the log (another home's page) starts at the end, ``reset``
  true. A comment line every KEEPALIVE_S while idle; the stream ends when the daemon stops.

The TCP port is kept across restarts (:func:`bind_loopback`), so an open page finds the daemon
again at the same origin.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, AsyncIterator

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from hookd.config import Home, write_private
from hookd.models import BadRequest, HookdError, Unauthorized, os_user
from hookd.untrusted import decode_json, read_regular

#: Seconds a one-time sign-in code stays valid.
CODE_TTL_S = 600.0
#: Seconds a session cookie stays valid.
SESSION_TTL_S = 7 * 86400
#: Seconds between keep-alive comments on an idle SSE stream.
KEEPALIVE_S = 15.0
#: The header a state-changing request from the page carries (with value ``1``).
CSRF_HEADER = "x-hookd-web"
#: Paths anyone on loopback may GET (the sign-in page and its assets: no data) and the code
#: exchange (POST, with the CSRF header).
PUBLIC_PATHS = frozenset({"/signin", "/static/signin.js", "/static/hookd.css", "/web/session"})
#: Loopback host names the page may be reached by (``Host`` header, before ``:port``).
HOSTS = ("127.0.0.1", "localhost")
#: The page's files: ``hookd/static/`` (package data of ``hookd``, beside this package).
STATIC_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")

log = logging.getLogger("hookd")
_enc = msgspec.json.Encoder()
_SAFE = frozenset({"GET", "HEAD"})
#: Sent with every page: nothing but hookd's own scripts, styles and API (no inline code).
PAGE_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}


class Forbidden(HookdError):
    code = "forbidden"
    status = 403
    exit_code = 2


#: The body of a browser's page request without a session (401, text/html): what to do.
SIGNIN_NEEDED_HTML = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>hookd: sign in</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/static/hookd.css"></head>
<body class="signin"><main><h1>hookd</h1>
<p id="signin-needed">Not signed in. Run <code>hookd open</code> in a terminal to get a sign-in link.</p>
</main></body></html>
"""


class SignInNeeded(Unauthorized):
    """401 for a browser's page request (GET, ``Accept: text/html``, not ``/v1/``) without a
    session: answered with :data:`SIGNIN_NEEDED_HTML` instead of the JSON error shape
    (``html``, ``headers``: what :class:`hookd.http.app.HookdASGI` sends)."""

    html = SIGNIN_NEEDED_HTML
    headers = {**PAGE_HEADERS, "content-type": "text/html; charset=utf-8"}


def _b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def _nonce_key(nonce: str) -> str:
    return hashlib.sha256(nonce.encode()).hexdigest()


def _headers(scope: Mapping[str, Any]) -> dict[bytes, bytes]:
    return {k: v for k, v in scope.get("headers", ())}


class WebAuth:
    """One-time sign-in codes (in memory) and HMAC-signed session cookies for one home.

    token: the home's bearer token (the HMAC key is derived from it); now: the clock (UNIX
    seconds; tests pass their own); revoked_file: where signed-out sessions are kept (None:
    in memory only).
    """

    def __init__(self, token: str, now: Callable[[], float] = time.time, revoked_file: Path | None = None):
        self._key = hmac.new(token.encode(), b"hookd web session v1", hashlib.sha256).digest()
        self.cookie_name = "hookd_" + hmac.new(self._key, b"cookie name", hashlib.sha256).hexdigest()[:12]
        self._codes: dict[bytes, float] = {}  # sha256(code) -> expiry (UNIX seconds)
        self._now = now
        self._revoked_file = revoked_file
        #: signed-out sessions: sha256 of the nonce (hex) -> the cookie's expiry (UNIX seconds)
        self._revoked: dict[str, int] = self._load_revoked()

    # --- codes ---------------------------------------------------------------------------
    def new_code(self) -> str:
        """A fresh one-time code (43 url-safe characters), valid CODE_TTL_S seconds."""
        now = self._now()
        self._codes = {h: exp for h, exp in self._codes.items() if exp > now}
        code = secrets.token_urlsafe(32)
        self._codes[hashlib.sha256(code.encode()).digest()] = now + CODE_TTL_S
        return code

    def redeem(self, code: str) -> bool:
        """True once for a code from :meth:`new_code` that has not expired."""
        exp = self._codes.pop(hashlib.sha256(code.encode()).digest(), None)
        return exp is not None and exp > self._now()

    # --- sessions ------------------------------------------------------------------------
    def _mac(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())

    def new_session(self) -> tuple[str, int]:
        """(cookie value, expiry in UNIX seconds) of a new session."""
        exp = int(self._now() + SESSION_TTL_S)
        payload = f"{exp}.{secrets.token_urlsafe(12)}"
        return f"{payload}.{self._mac(payload)}", exp

    def session_expiry(self, value: str | None) -> int | None:
        """The expiry of a valid, unexpired session cookie value, else None."""
        if not value or value.count(".") != 2:
            return None
        exp, nonce, mac = value.split(".")
        if not hmac.compare_digest(mac.encode(), self._mac(f"{exp}.{nonce}").encode()):
            return None
        if not exp.isdigit() or int(exp) <= self._now():
            return None
        if self._revoked and _nonce_key(nonce) in self._revoked:
            return None  # signed out
        return int(exp)

    def revoke(self, value: str | None) -> bool:
        """Sign out the session of cookie ``value`` for good (until the cookie would have
        expired), across restarts when a revoked_file was given: written before this returns
        (blocking: call it off the event loop). False when ``value`` is no valid session."""
        exp = self.session_expiry(value)
        if exp is None or value is None:
            return False
        now = self._now()
        self._revoked = {k: e for k, e in self._revoked.items() if e > now}
        self._revoked[_nonce_key(value.split(".")[1])] = exp
        if self._revoked_file is not None:
            write_private(self._revoked_file, _enc.encode(self._revoked).decode())
        return True

    def _load_revoked(self) -> dict[str, int]:
        if self._revoked_file is None:
            return {}
        try:
            data = msgspec.json.decode(read_regular(self._revoked_file, follow=False), type=dict[str, int])
        except FileNotFoundError:
            return {}
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as e:
            # unreadable: every session ends (the safe side), rather than reviving signed-out ones
            log.warning("cannot read %s (%s): signing out every page session", self._revoked_file, e)
            self._key = hmac.new(self._key, secrets.token_bytes(16), hashlib.sha256).digest()
            return {}
        now = self._now()
        return {k: e for k, e in data.items() if e > now}

    def cookie_of(self, scope: Mapping[str, Any]) -> str | None:
        """This home's session cookie value in the request, if any."""
        raw = _headers(scope).get(b"cookie")
        if not raw:
            return None
        for part in raw.decode("latin-1").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.cookie_name:
                return value
        return None

    def set_cookie_header(self, value: str, max_age: int) -> str:
        return f"{self.cookie_name}={value}; Max-Age={max_age}; Path=/; HttpOnly; SameSite=Strict"

    # --- access --------------------------------------------------------------------------
    def admit(self, scope: dict[str, Any]) -> HookdError | None:
        """Decide a TCP request that came without the bearer token: None to let it through
        (then ``scope["hookd.session"]`` says whether a session cookie admitted it), or the
        error to refuse it with (Unauthorized 401, Forbidden 403)."""
        path: str = scope["path"]
        if path.startswith("/v1/hooks/"):
            return Unauthorized("missing or wrong bearer token")
        headers = _headers(scope)
        port = scope["server"][1]
        allowed = {f"{h}:{port}" for h in HOSTS}
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if host not in allowed:
            return Forbidden(f"the page is served at http://127.0.0.1:{port}/ only (Host {host!r})")
        public = path in PUBLIC_PATHS
        signed_in = self.session_expiry(self.cookie_of(scope)) is not None
        if not public and not signed_in:
            if path.startswith("/v1/"):  # API clients: the same refusal as ever
                return Unauthorized("missing or wrong bearer token")
            if scope["method"] == "GET" and b"text/html" in headers.get(b"accept", b""):
                return SignInNeeded("not signed in: run `hookd open` for a sign-in link")  # a browser
            return Unauthorized("not signed in: run `hookd open` for a sign-in link (or send the bearer token)")
        if scope["method"] not in _SAFE:
            if headers.get(CSRF_HEADER.encode()) != b"1":
                return Forbidden(f"a state-changing request from the page needs the header {CSRF_HEADER}: 1")
            origin = headers.get(b"origin")
            if origin is not None and origin.decode("latin-1").lower() not in {f"http://{a}" for a in allowed}:
                return Forbidden("cross-site request refused (Origin)")
            site = headers.get(b"sec-fetch-site")
            if site is not None and site != b"same-origin":
                return Forbidden("cross-site request refused (Sec-Fetch-Site)")
        scope["hookd.session"] = signed_in
        return None


def should_open_browser(env: Mapping[str, str] = os.environ, platform: str = sys.platform) -> bool:
    """Open a browser for ``hookd open``? Not under CI=true, and on Linux/BSD only with a
    display (DISPLAY or WAYLAND_DISPLAY); macOS and Windows always have one."""
    if env.get("CI") == "true":
        return False
    if platform == "darwin" or platform.startswith("win"):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def open_browser(url: str) -> bool:
    """Open ``url`` with Python's webbrowser module; False when no browser could be started."""
    import webbrowser

    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


# --- the TCP port across restarts ----------------------------------------------------------

def _port_file(home: Home) -> Any:
    return home.root / "web-port"


def bind_loopback(home: Home, port: int, bind: Callable[[int], Any]) -> Any:
    """Bind the loopback TCP listener with ``bind(port)``. With port 0 the port used last
    time (``HOOKD_HOME/web-port``) is tried first, so an open page finds a restarted daemon at
    the same origin; any free port when it is taken. Records the port bound."""
    sock = None
    if port == 0:
        try:
            last = int(read_regular(_port_file(home), follow=False, limit=64).strip())
        except (OSError, ValueError):
            last = 0
        if 1024 <= last <= 65535:
            try:
                sock = bind(last)
            except OSError:
                sock = None
    if sock is None:
        sock = bind(port)
    write_private(_port_file(home), f"{sock.getsockname()[1]}\n")
    return sock


# --- routes ---------------------------------------------------------------------------------

class CodeRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /web/session``."""

    code: str


def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_enc.encode(obj), status_code=status, media_type="application/json", headers=headers)


async def _page(name: str) -> Response:
    """One of the package's pages, read off the event loop (a regular file: never a FIFO)."""
    data = await asyncio.to_thread(read_regular, os.path.join(STATIC_DIR, name))
    return Response(data, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


def _sse(e: Any) -> bytes:
    return b"id: %d\ndata: %s\n\n" % (e.seq, _enc.encode(e))


class WebPage:
    """The page's routes over one daemon core. token: the home's bearer token; should_exit:
    tells streams that the server is stopping."""

    def __init__(self, core: Any, token: str, should_exit: Callable[[], bool] | None = None):
        self.core = core
        home = getattr(core, "home", None)  # None: an app built only to list its routes
        self.auth = WebAuth(token, revoked_file=home.root / "web-revoked.json" if home is not None else None)
        self.should_exit = should_exit or (lambda: False)
        self.user = os_user()  # who the page answers as: the same name the CLI defaults to

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/", self.index),
            Route("/signin", self.signin),
            Route("/web/session", self.session, methods=["POST"]),
            Route("/web/signout", self.signout, methods=["POST"]),
            Route("/v1/web/session", self.whoami),
            Route("/v1/web/codes", self.codes, methods=["POST"]),
            Route("/v1/events/sse", self.sse),
            Mount("/static", app=StaticFiles(directory=STATIC_DIR)),
        ]

    async def index(self, request: Request) -> Response:
        return await _page("index.html")

    async def signin(self, request: Request) -> Response:
        return await _page("signin.html")

    async def session(self, request: Request) -> Response:
        try:
            body = decode_json(await request.body(), type=CodeRequest)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as e:
            raise BadRequest(f"sign-in body: {e}") from None
        if not self.auth.redeem(body.code):
            raise Unauthorized("this sign-in link was already used or has expired: run `hookd open` for a new one")
        value, exp = self.auth.new_session()
        return _json({"user": self.user, "expires_at": exp},
                     headers={"set-cookie": self.auth.set_cookie_header(value, SESSION_TTL_S), "cache-control": "no-store"})

    async def signout(self, request: Request) -> Response:
        """Revoke this browser's session on the server (also after a restart), then clear its
        cookie; other browsers stay signed in."""
        await asyncio.to_thread(self.auth.revoke, self.auth.cookie_of(request.scope))
        return _json({"signed_out": True}, headers={"set-cookie": self.auth.set_cookie_header("", 0)})

    async def whoami(self, request: Request) -> Response:
        return _json({"user": self.user, "expires_at": self.auth.session_expiry(self.auth.cookie_of(request.scope))})

    async def codes(self, request: Request) -> Response:
        if request.scope.get("hookd.session"):
            raise Forbidden("a sign-in code is made by `hookd open` (Unix socket or bearer token), not by the page")
        code = self.auth.new_code()
        port = self.core.tcp_port
        return _json({"code": code, "url": f"http://127.0.0.1:{port}/signin#code={code}",
                      "expires_in_s": CODE_TTL_S}, 201)

    async def sse(self, request: Request) -> Response:
        raw = request.headers.get("last-event-id") or request.query_params.get("after")
        store = self.core.store
        last_seq = (await store.counts())["events"]  # append-only log: the count is the last seq
        reset = False
        if raw is None or raw == "":
            after = last_seq
        else:
            try:
                after = int(raw)
            except ValueError:
                raise BadRequest("after (or Last-Event-ID) must be an integer") from None
            if after < 0 or after > last_seq:
                after, reset = last_seq, True
        bus = self.core.bus

        async def stream() -> AsyncIterator[bytes]:
            last = after
            hello = {"seq": last_seq, "after": after, "reset": reset}
            yield b"retry: 1000\nevent: hello\ndata: %s\n\n" % _enc.encode(hello)
            idle_since = time.monotonic()
            while True:
                version = bus.version  # a commit published during the read below wakes the wait
                evs = await store.events_after(last, 500)
                if evs:
                    last = evs[-1].seq
                    yield b"".join(_sse(e) for e in evs)
                    idle_since = time.monotonic()
                    continue
                if bus.closed or self.should_exit():
                    return
                if time.monotonic() - idle_since >= KEEPALIVE_S:
                    yield b": keepalive\n\n"
                    idle_since = time.monotonic()
                await bus.wait(0.5, since=version)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})

