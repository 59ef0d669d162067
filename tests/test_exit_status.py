"""A headless run's exit status as its wrapper leaves it (hookd.runner's ``_HEADLESS``:
``running <wrapper pid>`` in ``run/exits/<pid>``, then the status), read by
:func:`hookd.core.procs.exit_status` once the agent is gone. On a loaded machine the wrapper can
take seconds to be scheduled after its agent ended (a `-n 8` suite recorded a clean exit as
status unknown): while the wrapper runs, its status is waited for."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from hookd.core import procs
from hookd.daemonproc import wait_until

pytestmark = pytest.mark.inproc

RUN = SimpleNamespace(pid=4242, tmux_session=None, tmux_socket=None)


@pytest.fixture
def wrapper():
    """A live process standing for the wrapper (its pid is what the file names): it waits on
    its stdin until the test ends."""
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    yield p
    p.kill()
    p.wait()


def test_the_status_is_waited_for_past_wait_s_while_the_wrapper_runs(tmp_path: Path, wrapper, monkeypatch) -> None:  # noqa: ANN001
    status_file = tmp_path / str(RUN.pid)
    status_file.write_text(f"running {wrapper.pid}\n")
    looks: list[int] = []
    real = procs._file_status  # noqa: SLF001

    def counted(path: Path) -> tuple[int | None, bool, bool]:
        looks.append(1)
        return real(path)

    monkeypatch.setattr(procs, "_file_status", counted)
    got: list[int | None] = []
    t = threading.Thread(target=lambda: got.append(procs.exit_status(RUN, tmp_path, wait_s=0.0, wrapper_wait_s=60)))
    t.start()
    wait_until(lambda: len(looks) >= 3, 30, what="three looks at the file")  # past wait_s (0) already
    (tmp_path / "tmp").write_text("0\n")
    (tmp_path / "tmp").replace(status_file)  # as the wrapper does: the status, renamed into place
    t.join(30)
    assert got == [0]
    assert not status_file.exists()


def test_a_wrapper_gone_without_a_status_is_unknown_at_once(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    status_file = tmp_path / str(RUN.pid)
    status_file.write_text(f"running {gone.pid}\n")
    assert procs.exit_status(RUN, tmp_path, wait_s=60, wrapper_wait_s=60) is None  # (not 60 s later)
    assert not status_file.exists()


def test_a_status_written_as_the_wrapper_ended_is_read(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The wrapper wrote its status and exited between the read of ``running N`` and the look
    at whether N is alive: the file is read again."""
    status_file = tmp_path / str(RUN.pid)
    status_file.write_text("running 999999\n")

    def ended(pid: int) -> bool:
        status_file.write_text("3\n")
        return False

    monkeypatch.setattr(procs.psutil, "pid_exists", ended)
    assert procs.exit_status(RUN, tmp_path, wait_s=60, wrapper_wait_s=60) == 3


def test_the_real_wrapper_marks_itself_running_then_writes_the_status(tmp_path: Path) -> None:
    """hookd.runner's wrapper, run as the launcher runs it: ``running <its pid>`` while the agent
    runs, the agent's status once it ended."""
    from hookd import runner

    exits, log, gate = tmp_path / "exits", tmp_path / "log", tmp_path / "gate"
    exits.mkdir()
    os.mkfifo(gate)  # the agent blocks opening it until the test opens its other end
    agent = [sys.executable, "-c", f"open({str(gate)!r}).read()\nraise SystemExit(7)"]
    w = subprocess.Popen(["/bin/sh", "-c", runner._HEADLESS, "hookd-run", str(log), str(exits), *agent],  # noqa: SLF001
                         stdout=subprocess.PIPE, text=True)
    assert w.stdout is not None
    pid = int(w.stdout.readline())
    assert (exits / str(pid)).read_text() == f"running {w.pid}\n"
    with open(gate, "w"):
        pass  # (the agent's read ends: it exits 7)
    assert procs.exit_status(SimpleNamespace(pid=pid, tmux_session=None, tmux_socket=None), exits,
                             wait_s=0.0, wrapper_wait_s=60) == 7
    w.wait(30)
