"""What `hookd run` and `hookd continue` ask of a harness: :class:`Launcher` (an adapter's
``launchers``, by harness name) says how to start its agent interactively, headless and
resuming a session, and how hookd learns the session id.

Pure: no I/O; imports nothing of hookd.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable


@runtime_checkable
class Launcher(Protocol):
    """How hookd starts one harness's agent (``hookd run``, ``hookd continue``). Each method
    returns the arguments after the program (``program``, found on ``PATH`` unless
    ``program_env`` names it), the agent's own arguments ``extra`` (what follows ``--`` on
    hookd's command line) included where the harness takes them."""

    #: the agent program's name on ``PATH`` (``claude``)
    program: str
    #: the environment variable that names the program's path instead (``HOOKD_CLAUDE_BIN``)
    program_env: str
    #: hookd can name the new session's id on the command line (Claude Code's
    #: ``--session-id``): the id is then known before the first hook; False: the session id is
    #: learnt from the agent's first hook (its ``session_id``, recorded in hookd's store)
    names_session: bool

    def interactive(self, extra: Sequence[str], prompt: str | None, session_id: str | None) -> list[str]:
        """Arguments for the agent's own terminal UI (run in tmux), starting with ``prompt``
        when given; ``session_id``: the id to give the new session (None unless
        :attr:`names_session`)."""
        ...

    def headless(self, extra: Sequence[str], prompt: str, session_id: str | None) -> list[str]:
        """Arguments for the harness's print mode: one prompt, its output on stdout, then exit."""
        ...

    def resume(self, session_id: str, extra: Sequence[str], prompt: str | None, headless: bool) -> list[str]:
        """Arguments that resume session ``session_id`` (interactive, or headless with
        ``prompt``, which headless requires)."""
        ...
