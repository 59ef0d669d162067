"""A claw-http client for Python agent loops (httpx; see :mod:`hookd.http.claw` for the API).

Typical loop::

    from hookd.clawclient import ClawClient

    hk = ClawClient.for_home("~/.local/share/hookd", builder="b1")   # or ClawClient(url, token, "b1")
    hk.register()
    while True:
        reply = model(messages)
        if reply.tool_calls:
            for call in reply.tool_calls:
                hk.pre_tool(call.name, call.input, call.id)
                out = run(call)
                hk.post_tool(call.name, call.input, out, call.id)
            got = hk.drain("between_tools")
            if got.text:
                messages.append(user(got.text))
            continue
        got = hk.drain("before_final")          # the Stop analogue
        if got.continue_:
            messages.append(user(got.text))
            continue                             # a human wrote: keep going
        break
    hk.stop()

Acks are automatic: the ids a drain returned are acked by the client's next call (the next
boundary proves the loop went on with them); :meth:`ack` acks at once. The client never breaks
the loop (``fail_open``, default): when hookd is down or answers an error, a call returns an
empty result, logs a warning, and the unacked ids are kept for the next call.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

log = logging.getLogger("hookd.clawclient")


@dataclass
class Drained:
    """What a drain returned: ``ids`` (ack them; the client does at its next call), ``text``
    (framed for the model as one user turn; "" when nothing), ``waiting`` (more follow at the
    next drain), ``redelivered`` (delivered before, never acked), ``continue_`` (a
    before_final drain delivered something: do not finish)."""

    ids: list[str] = field(default_factory=list)
    text: str = ""
    waiting: int = 0
    redelivered: list[str] = field(default_factory=list)
    continue_: bool = False


class ClawClient:
    """One loop session's connection to hookd.

    base_url: ``http://127.0.0.1:<port>`` (TCP; token required) or ``http://hookd`` with
    ``uds`` (the Unix socket; no token). builder: the builder id the session belongs to;
    session_id: the loop's run id (None: hookd makes one at :meth:`register`); timeout:
    seconds per call; fail_open: see the module docstring.
    """

    def __init__(self, base_url: str, token: str | None, builder: str, session_id: str | None = None, *,
                 uds: str | None = None, timeout: float = 10.0, fail_open: bool = True):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        transport = httpx.HTTPTransport(uds=uds) if uds else None
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout, transport=transport)
        self.builder = builder
        self.session_id = session_id
        self.fail_open = fail_open
        self.unacked: list[str] = []

    @classmethod
    def for_home(cls, home: str | os.PathLike[str], builder: str, session_id: str | None = None,
                 **kw: Any) -> "ClawClient":
        """A client over ``home``'s Unix socket (the daemon serving that HOOKD_HOME)."""
        from hookd.config import Home

        h = Home.resolve(Path(home).expanduser())
        return cls("http://hookd", None, builder, session_id, uds=str(h.socket_path), **kw)

    @classmethod
    def for_endpoint(cls, home: str | os.PathLike[str], builder: str, session_id: str | None = None,
                     **kw: Any) -> "ClawClient":
        """A client over loopback TCP, port and hook token read from ``home``'s
        ``run/endpoint`` (what hook clients use; written while the daemon serves; the hook
        token admits the claw routes only). Raises FileNotFoundError when no daemon has
        written one; ValueError for a file that is not an endpoint."""
        from hookd.config import Home

        h = Home.resolve(Path(home).expanduser())
        ep = h.read_endpoint()
        return cls(f"http://127.0.0.1:{ep.port}", ep.hook_token, builder, session_id, **kw)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "ClawClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- calls ------------------------------------------------------------------------
    def _post(self, suffix: str, body: dict[str, Any], *, ack: bool = True) -> dict[str, Any] | None:
        path = f"/v1/claw/{self.builder}/sessions" + (f"/{self.session_id}/{suffix}" if suffix else "")
        sent = list(self.unacked) if ack else []
        if sent:
            body = {**body, "ack": sent}
        try:
            r = self._http.post(path, json=body)
            data = r.json() if r.content else {}
            if r.status_code >= 400:
                err = data.get("error", {}) if isinstance(data, dict) else {}
                raise RuntimeError(f"hookd {suffix or 'register'}: HTTP {r.status_code} "
                                   f"{err.get('code', '')}: {err.get('message', '')}")
        except (httpx.HTTPError, OSError, ValueError, RuntimeError) as e:
            if not self.fail_open:
                raise
            log.warning("hookd %s failed (the loop goes on): %s", suffix or "register", e)
            return None
        if sent:
            self.unacked = [i for i in self.unacked if i not in sent]
        return data

    def register(self, cwd: str | None = None) -> str | None:
        """Register this session (again: a restarted loop gets its unacked messages back at
        its next drain). Returns the session id."""
        body: dict[str, Any] = {"cwd": cwd or os.getcwd()}
        if self.session_id:
            body["session_id"] = self.session_id
        data = self._post("", body)
        if data is not None:
            self.session_id = data["session_id"]
        return self.session_id

    def pre_tool(self, tool_name: str, tool_input: Any = None, tool_use_id: str | None = None) -> dict[str, Any]:
        """Before a tool call. A question tool (AskUserQuestion, ask_user) opens a question:
        its id is ``["question"]``."""
        return self._post("pre_tool", {"tool_name": tool_name, "tool_input": tool_input,
                                       "tool_use_id": tool_use_id}) or {}

    def post_tool(self, tool_name: str, tool_input: Any = None, tool_output: Any = None,
                  tool_use_id: str | None = None) -> dict[str, Any]:
        """After a tool call (a question tool's output ``{"question", "answer"}`` resolves it)."""
        return self._post("post_tool", {"tool_name": tool_name, "tool_input": tool_input,
                                        "tool_output": tool_output, "tool_use_id": tool_use_id}) or {}

    def post_tool_failure(self, tool_name: str, tool_input: Any = None, error: Any = None,
                          tool_use_id: str | None = None) -> dict[str, Any]:
        """After a failed tool call."""
        return self._post("post_tool_failure", {"tool_name": tool_name, "tool_input": tool_input,
                                                "error": error, "tool_use_id": tool_use_id}) or {}

    def ask(self, question: str, options: list[str] | None = None, *, expires_in_s: float | None = None,
            author: str | None = None) -> str | None:
        """Ask the humans without blocking; returns the question's id (``ask_…``). The answer
        arrives through a later drain as ``[Answer to question <id>] ...``."""
        data = self._post("ask", {"question": question, "options": options, "expires_in_s": expires_in_s,
                                  "author": author}, ack=False)
        return data["id"] if data else None

    def drain(self, boundary: str = "between_tools") -> Drained:
        """Take the queued messages at ``boundary`` (``between_tools`` | ``before_final``).
        The returned ids are acked by the next call."""
        data = self._post("drain", {"boundary": boundary})
        if not data:
            return Drained()
        self.unacked.extend(i for i in data["ids"] if i not in self.unacked)
        return Drained(ids=data["ids"], text=data["text"], waiting=data["waiting"],
                       redelivered=data["redelivered"], continue_=data["continue"])

    def ack(self, ids: list[str] | None = None) -> list[str]:
        """Ack ``ids`` (default: every id drained and not yet acked) now."""
        ids = list(self.unacked) if ids is None else ids
        data = self._post("ack", {"ids": ids}, ack=False)
        if data is None:
            return []
        self.unacked = [i for i in self.unacked if i not in ids]
        return data["acked"]

    def stop(self, reason: str | None = None) -> None:
        """End the session (acking what is unacked)."""
        self._post("stop", {"reason": reason})
