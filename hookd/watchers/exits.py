"""When agents' processes exit, told by the kernel: a Linux pidfd (``os.pidfd_open``, Linux
5.3+) per live agent, watched by the event loop (``add_reader``: it turns readable once the
process has exited, a zombie included). A live agent then costs the daemon no wake-up until it
ends, and its end is seen at once. Where there is no pidfd (not Linux, an older kernel, a
process of another pid namespace, the process already gone) or past :data:`MAX_WATCHES`
agents, :meth:`ExitWatch.check` only checks the process, and the caller keeps checking that
agent on its own clock (:meth:`hookd.watchers.lanes.LaneWatch.sweep`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from hookd.core.procs import process_alive

log = logging.getLogger("hookd")

#: Most agents watched at once (an open file each); agents past it are checked on the clock.
MAX_WATCHES = 256

#: An agent: its process id and start time (UNIX seconds; None: not recorded).
Agent = tuple[int, float | None]


def agent_alive(pid: int | None, started_at: float | None) -> bool | None:
    """Is the agent process alive? None when unknown (no pid); else
    :func:`hookd.core.procs.process_alive` (a zombie, or a pid reused by another process, is
    gone)."""
    return None if not pid else process_alive(pid, started_at)


class ExitWatch:
    """Watches agents' exits. ``alive(pid, started_at)``: the full check of a process
    (:func:`agent_alive`); ``on_exit(agent)``: called on the event loop once a watched agent
    has exited (after its watch ended)."""

    def __init__(self, alive: Callable[[int, float | None], bool | None], on_exit: Callable[[Agent], None]):
        self._alive = alive
        self._on_exit = on_exit
        self._fds: dict[Agent, int] = {}

    def watching(self, agent: Agent | None) -> bool:
        """Whether ``agent``'s exit is being watched (it has not exited)."""
        return agent in self._fds

    def check(self, agent: Agent, watch: bool = True) -> bool | None:
        """Whether ``agent`` is alive (True at once while it is watched); when it is, ``watch``
        says so and it can be, its exit is watched from now on (on the running event loop,
        until :meth:`close`). The pidfd is opened before the process is checked, so the check
        proves the pidfd names the agent and not a process that took its pid since."""
        if agent in self._fds:
            return True
        fd = self._open(agent[0]) if watch and len(self._fds) < MAX_WATCHES else None
        try:
            alive = self._alive(*agent)
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
        if fd is not None and not (alive is True and self._add(agent, fd)):
            os.close(fd)
        return alive

    def forget(self, agent: Agent) -> None:
        """Stop watching ``agent`` (nothing if it was not)."""
        fd = self._fds.pop(agent, None)
        if fd is None:
            return
        try:
            asyncio.get_running_loop().remove_reader(fd)
        except RuntimeError:  # (no loop running: the daemon is stopping)
            pass
        os.close(fd)

    def close(self) -> None:
        """Stop watching every agent."""
        for agent in list(self._fds):
            self.forget(agent)

    @staticmethod
    def _open(pid: int) -> int | None:
        try:
            return os.pidfd_open(pid)
        except (AttributeError, OSError):  # (no pidfd here, or no such process in this namespace)
            return None

    def _add(self, agent: Agent, fd: int) -> bool:
        try:
            asyncio.get_running_loop().add_reader(fd, self._exited, agent)
        except (RuntimeError, OSError, NotImplementedError):  # (no loop; a loop that cannot watch it)
            return False
        self._fds[agent] = fd
        return True

    def _exited(self, agent: Agent) -> None:
        self.forget(agent)
        try:
            self._on_exit(agent)
        except Exception:
            log.exception("an agent's exit was not handled")
