"""Every route the daemon serves, enumerated from the app itself at test time.

The hardening suites (access, bad input) iterate over these, so a route added later is
covered without editing them: the Starlette app's routes (recursing into mounts) plus the
hook routes :class:`hookd.http.app.HookdASGI` serves itself, for every harness hookd knows.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

#: Values substituted for path parameters: a plausible one per known name, else "x".
PATH_VALUES = {"builder": "b1", "id": "toolu_missing", "harness": "claude-code", "path": "index.html"}
_PARAM = re.compile(r"\{([^}:]+)(?::[^}]+)?\}")


@dataclass(frozen=True)
class RouteInfo:
    """One (method, path template) pair. ``hook``: served by HookdASGI's hot path."""

    method: str
    template: str
    hook: bool = False

    def params(self) -> list[str]:
        return _PARAM.findall(self.template)

    def path(self, **values: str) -> str:
        """The template with its parameters filled (``values``, else PATH_VALUES, else "x")."""
        return _PARAM.sub(lambda m: values.get(m.group(1), PATH_VALUES.get(m.group(1), "x")), self.template)

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def _app() -> Any:
    from hookd.http.app import build_app

    # build_app only defines handlers: the core is used when a request arrives
    return build_app(None, token="enumeration-only")  # type: ignore[arg-type]


def _walk(routes: Any, prefix: str = "") -> list[RouteInfo]:
    from starlette.routing import Mount, Route

    out: list[RouteInfo] = []
    for r in routes:
        if isinstance(r, Mount):
            sub = getattr(r, "routes", None)
            if sub:
                out += _walk(sub, prefix + r.path)
            else:  # an ASGI app mounted whole (static files): a GET of a file in it
                directory = getattr(r.app, "directory", None)
                files = sorted(os.listdir(directory)) if directory and os.path.isdir(directory) else []
                out.append(RouteInfo("GET", prefix + r.path + "/" + (files[0] if files else "{path}")))
        elif isinstance(r, Route):
            for m in sorted(r.methods or {"GET"}):
                if m != "HEAD":
                    out.append(RouteInfo(m, prefix + r.path))
    return out


def harnesses() -> list[str]:
    from hookd.harness.registry import ADAPTERS

    return sorted(ADAPTERS)


def hook_routes() -> list[RouteInfo]:
    """The hook routes (POST), served before routing by HookdASGI."""
    from hookd.http.hooks import HOOK_ROUTES

    return [RouteInfo("POST", t, hook=True) for t in HOOK_ROUTES]


def rest_routes() -> list[RouteInfo]:
    """Every route of the Starlette app (one entry per method)."""
    return _walk(_app().app.routes)


def all_routes() -> list[RouteInfo]:
    return hook_routes() + rest_routes()


def public_paths() -> frozenset[str]:
    """Paths the operator page serves without the token or a session (its sign-in page and
    assets, which hold no data); empty when there is no such page."""
    try:
        from hookd.http import web
    except ImportError:
        return frozenset()
    return frozenset(getattr(web, "PUBLIC_PATHS", ()))
