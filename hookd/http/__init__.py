"""hookd's HTTP layer: what the daemon serves on its Unix socket and loopback TCP port.

- :mod:`hookd.http.app`: the outer ASGI app (access: tokens, the operator page's cookie) and
  the Starlette app (routes, the one error shape), built by ``build_app``;
- :mod:`hookd.http.hooks`: the hook path, one implementation for the ASGI app and the fast path;
- :mod:`hookd.http.routes`: the REST routes and their request bodies; :mod:`hookd.http.status`:
  ``GET /v1/status``; :mod:`hookd.http.responses`: the one error shape and raw replies;
- :mod:`hookd.http.claw`: claw-http; :mod:`hookd.http.web`: the operator page;
- :mod:`hookd.http.fastpath`: the fast path, the only module that knows uvicorn's internals.

The daemon (:mod:`hookd.daemon`) builds and serves it; nothing here imports the daemon or the CLI.
"""
