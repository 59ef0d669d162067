"""hookd's Python API for orchestrators (issue 23, item 3): spawn builders, start and stop their
agents, send them messages, answer what they ask, wait for the next question and follow the
event log, over one home's daemon socket, without shelling out to the CLI.

    from hookd.api import Hookd

    hd = Hookd()                                   # the default home (or Hookd("~/hookd-test"))
    hd.run("b1", worktree="~/src/proj", prompt="fix the tests", headless=True)
    i = hd.wait_for_interaction("b1", timeout_s=600)
    if i is not None and i["kind"] == "question":
        hd.answer(i["id"], options=[i["questions"][0]["options"][0]["label"]])

Every method is one call of the daemon's HTTP API (docs/http-api.md; :class:`hookd.client.Client`),
or exactly what the CLI command of the same name does (`spawn`, `run`, `continue`:
:mod:`hookd.spawn`, :mod:`hookd.launching`). Shapes are the API's JSON as plain ``dict`` and
``list`` (docs/http-api.md, docs/events.md). Errors are :class:`hookd.errors.HookdError`
subclasses: :class:`~hookd.errors.DaemonNotRunning` (no daemon for the home),
:class:`~hookd.errors.NotFound` (no such builder, interaction or run),
:class:`~hookd.errors.Conflict` (refused: a live session, an interaction already answered),
:class:`~hookd.errors.BadRequest` and :class:`~hookd.errors.ConfigError` (bad input).
A ``Hookd`` holds no connection between calls (one per request) and may be shared by threads;
:meth:`Hookd.events` with ``follow`` and :meth:`Hookd.wait_for_interaction` hold one each while
they run. docs/api.md has the examples.
"""

from __future__ import annotations

import os
import threading
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hookd.client import Client
from hookd.config import Home, check_builder_id
from hookd.vocabulary import os_user

__all__ = ["Hookd", "PENDING_EVENTS"]

#: The event kinds that open an interaction waiting on a human (docs/events.md):
#: :meth:`Hookd.wait_for_interaction` looks again at what is pending when one arrives.
PENDING_EVENTS = frozenset({"question_pending", "permission_pending", "elicitation_pending", "human_input_requested"})


def _seg(value: str) -> str:
    return urllib.parse.quote(value, safe="")


class Hookd:
    """One home's daemon. home: its directory (default: ``HOOKD_HOME``, else the per-user data
    directory, as the CLI's ``--home``); timeout_s: seconds each request may take (None: no
    limit). Constructing it touches nothing; the first call needs the daemon running
    (DaemonNotRunning otherwise), except :meth:`spawn` and :meth:`unspawn`."""

    def __init__(self, home: str | os.PathLike[str] | None = None, *, timeout_s: float | None = 10.0):
        self.home = Home.resolve(Path(home).expanduser() if home is not None else None)
        self.timeout_s = timeout_s
        self.client = Client(self.home, timeout_s)

    # --- reading -------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """The daemon's status (``GET /v1/status``: ``version``, ``pid``, ``counts``, ``builders``, ...)."""
        return self.client.get("/v1/status")

    def lanes(self) -> list[dict[str, Any]]:
        """Every builder's lane (``GET /v1/lanes``: ``builder``, ``state`` such as ``working``,
        ``waiting_question``, ``idle``, ``ended``; ``pending``; ``queued``; ``detail``)."""
        return self.client.get("/v1/lanes")

    def runs(self) -> list[dict[str, Any]]:
        """Each builder's newest run, an agent hookd started (``GET /v1/runs``: ``builder``,
        ``harness``, ``mode``, ``pid``, ``alive``, ``session_id``, ``started_at``, ...)."""
        return self.client.get("/v1/runs")

    def questions(self, state: str = "pending", *, builder: str | None = None) -> list[dict[str, Any]]:
        """Interactions (``GET /v1/questions``), oldest first: ``state`` ``pending``,
        ``resolved`` or ``all``; only ``builder``'s when given. Each: ``id``, ``builder``,
        ``session_id``, ``kind`` (``question``, ``permission``, ``plan``, ``elicitation``,
        ``ask``), ``state``, ``questions`` (a question's: ``question``, ``options`` with
        ``label``), ``tool_view`` (a permission prompt's), ``held``, ..."""
        items = self.client.get("/v1/questions", state=state)
        return [i for i in items if builder is None or i.get("builder") == builder]

    def interaction(self, interaction_id: str) -> dict[str, Any]:
        """One interaction (``GET /v1/interactions/{id}``); NotFound when there is none."""
        return self.client.get(f"/v1/interactions/{_seg(interaction_id)}")

    def events(self, *, after: int = 0, follow: bool = False, kinds: Iterable[str] | None = None,
               builder: str | None = None) -> Iterator[dict[str, Any]]:
        """The event log after sequence number ``after``, oldest first: each event ``{"seq",
        "kind", "builder", "session_id", "at": UNIX seconds, "data"}`` (docs/events.md), only
        of ``kinds`` and ``builder`` when given. ``follow``: then wait for new ones, until the
        daemon stops or the caller stops iterating (close the generator, or break); else stop at
        the end of the log."""
        wanted = frozenset(kinds) if kinds is not None else None
        last = after
        while True:
            if follow:
                source: Iterable[dict[str, Any]] = Client(self.home, None).lines("/v1/events", after=last, follow=1)
            else:
                source = self.client.lines("/v1/events", after=last, limit=1000)
            n = 0
            for e in source:
                n += 1
                last = e["seq"]
                if (wanted is None or e["kind"] in wanted) and (builder is None or e.get("builder") == builder):
                    yield e
            if follow or n < 1000:
                return

    def wait_for_interaction(self, builder: str | None = None, *, kinds: Iterable[str] | None = None,
                             timeout_s: float | None = None) -> dict[str, Any] | None:
        """The oldest interaction waiting on a human (of ``builder``, of ``kinds`` such as
        ``{"question", "permission"}``, when given): one already pending, else the first to
        open, followed on the event stream. None when ``timeout_s`` seconds pass first (None:
        wait as long as it takes)."""
        wanted = frozenset(kinds) if kinds is not None else None

        def first() -> dict[str, Any] | None:
            return next((i for i in self.questions("pending", builder=builder)
                         if wanted is None or i.get("kind") in wanted), None)

        after = int(self.status()["counts"].get("events", 0))
        found = first()
        if found is not None:
            return found
        stream = Client(self.home, None)
        timer = threading.Timer(timeout_s, stream.abort) if timeout_s is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            for e in stream.lines("/v1/events", after=after, follow=1):
                if e["kind"] in PENDING_EVENTS and (builder is None or e.get("builder") == builder):
                    found = first()
                    if found is not None:
                        return found
        except Exception:  # noqa: BLE001 - the timer broke the stream off: the wait is over
            if timer is None or timer.is_alive():
                raise
        finally:
            if timer is not None:
                timer.cancel()
        return None

    # --- builders and their agents -------------------------------------------------------
    def spawn(self, builder: str, *, worktree: str | os.PathLike[str] | None = None,
              settings_file: str | os.PathLike[str] | None = None, harness: str = "claude-code",
              **options: Any) -> dict[str, Any]:
        """Install ``builder``'s hooks, as `hookd spawn` (:func:`hookd.spawn.spawn`: ``options``
        are its keywords, ``hold_s``, ``mcp``, ``transport``, ``trust``, ``wake_wait_s``,
        ``deadline_ms``, ``default_answer_after_s``, ``default_answer``); works while the
        daemon is down, and tells a running one. Returns the manifest (``builder``,
        ``harness``, ``worktree``, ``settings_file``, ``events``, ...). ConfigError on bad
        options or a settings file that is not JSON."""
        from hookd.spawn import spawn

        m = spawn(self.home, check_builder_id(builder), worktree=_path(worktree), settings_file=_path(settings_file),
                  harness=harness, **options)
        self._tell(f"/v1/builders/{_seg(builder)}/spawned")
        return m

    def unspawn(self, builder: str) -> dict[str, Any]:
        """Remove exactly what :meth:`spawn` added, as `hookd unspawn`; returns what was removed
        (``removed``, ``settings_file``, ...). NotFound when ``builder`` is not spawned."""
        from hookd.spawn import unspawn

        r = unspawn(self.home, check_builder_id(builder))
        self._tell(f"/v1/builders/{_seg(builder)}/unspawned")
        return r

    def _tell(self, path: str) -> None:
        try:  # best effort, as the CLI: a daemon that is down learns it at its next check
            self.client.post_json(path, {}, timeout=2)
        except Exception:  # noqa: BLE001
            pass

    def run(self, builder: str, *, worktree: str | os.PathLike[str] | None = None, git_worktree: str | None = None,
            harness: str | None = None, headless: bool = False, prompt: str | None = None,
            agent_args: Sequence[str] = (), cwd: str | None = None,
            env: Mapping[str, str] | None = None, trust: bool = False) -> dict[str, Any]:
        """Arm ``builder``'s hooks and start its agent, as `hookd run`: in a tmux session on
        hookd's tmux server, or ``headless`` (the print mode: ``prompt`` needed, output to
        ``HOOKD_HOME/logs/<builder>.log``). git_worktree: a branch to make a git worktree of
        (from the repository at ``cwd``); env: the agent's environment (default this
        process's); trust: also trust the hooks where the harness asks for it (Codex, as
        `hookd spawn --trust`; without it a :class:`UserWarning` says they will not run until
        trusted). Returns the run (``id``, ``pid``, ``mode``, ``session_id``, ``tmux_session``
        or ``log_path``, ...). Conflict while the builder has a live session; ConfigError when
        the program or tmux is missing."""
        from hookd.launching import start

        run, _ = start(self.home, self.client, builder, worktree=_path(worktree), branch=git_worktree,
                       harness=harness, headless=headless, prompt=prompt, agent_args=agent_args, cwd=cwd,
                       environ=env, trust=trust)
        return run

    def continue_(self, builder: str, *, prompt: str | None = None, headless: bool | None = None,
                  agent_args: Sequence[str] = (), env: Mapping[str, str] | None = None) -> dict[str, Any]:
        """A new session of an ended ``builder`` resuming its last one, as `hookd continue`
        (``headless`` None: as its last run); queued messages reach it at its first turn
        boundary. Returns the run. NotFound when it has no session; Conflict while it runs."""
        from hookd.launching import resume

        return resume(self.home, self.client, builder, prompt=prompt, headless=headless, agent_args=agent_args,
                      environ=env)

    def stop(self, builder: str, *, timeout_s: float = 10.0) -> dict[str, Any]:
        """Stop the agent hookd started for ``builder`` (SIGTERM, SIGKILL after ``timeout_s``):
        its lane ends. Returns the run (``stop_signal``, ``stopped_at``). NotFound when it is
        not running."""
        return self.client.post_json(f"/v1/builders/{_seg(builder)}/stop", {"timeout_s": timeout_s},
                                     timeout=timeout_s + 30)["run"]

    # --- a human's words ------------------------------------------------------------------
    def send(self, builder: str, text: str, *, session_id: str | None = None, author: str | None = None,
             key: str | None = None) -> dict[str, Any]:
        """Queue ``text`` for ``builder``'s agent, delivered at its next turn boundary, as
        `hookd send`. key: an idempotency key (the same key and text: the first receipt).
        Returns ``{"message": {"id", "state", ...}, "created"}``."""
        body = {"text": text, "id": key, "session_id": session_id, "author": author or os_user()}
        return self.client.post_json(f"/v1/builders/{_seg(builder)}/messages", body)

    def answer(self, interaction_id: str, *, options: Sequence[str] = (), text: str | None = None,
               question: str | None = None, answers: Mapping[str, Any] | None = None,
               content: Mapping[str, Any] | None = None, actor: str | None = None,
               response_id: str | None = None) -> dict[str, Any]:
        """Answer an interaction, as `hookd answer`: a question's option labels (``options``,
        ``text`` for free text, ``question`` naming which when it asks several, or
        ``answers``: question -> labels), a permission prompt's ``["allow"]`` or ``["deny"]``
        (``text``: the message to the model), a plan's ``["auto"]``, ``["manual"]`` or
        ``["deny"]``, an elicitation's ``["accept"]`` with ``content`` (field -> value),
        ``["decline"]`` or ``["cancel"]``. Returns the receipt (``interaction``, ``delivery``:
        ``hook`` or ``inbox``, ``duplicate``, ...). Conflict when it was already answered."""
        body: dict[str, Any] = {"actor": actor or os_user(), "response_id": response_id, "surface": "api"}
        if answers is not None:
            body["answers"] = dict(answers)
        else:
            body.update(question=question, options=list(options), text=text)
        if content is not None:
            body["content"] = dict(content)
        return self.client.post_json(f"/v1/interactions/{_seg(interaction_id)}/answer", body)

    def dismiss(self, interaction_id: str, reason: str, *, actor: str | None = None) -> dict[str, Any]:
        """Close a pending interaction unanswered, as `hookd dismiss` (``{"interaction"}``)."""
        return self.client.post_json(f"/v1/interactions/{_seg(interaction_id)}/dismiss",
                                     {"reason": reason, "actor": actor or os_user(), "surface": "api"})


def _path(p: str | os.PathLike[str] | None) -> Path | None:
    return None if p is None else Path(p).expanduser()
