"""The processes behind `hookd run`, `hookd continue`, `hookd stop` and `hookd attach` (issue
23), run by the CLI (the daemon only records them: :mod:`hookd.core.runs`):

- an interactive agent runs in a tmux session named after its builder on hookd's own tmux
  server (:func:`tmux_socket`: beside the daemon's socket, so neither the tests nor a user's own
  tmux sessions ever mix with hookd's); its process is the pane's;
- a headless agent (the harness's print mode) runs in a session of its own, its output
  appended to ``HOOKD_HOME/logs/<builder>.log``;
- a git worktree asked for (``--git-worktree BRANCH``) is ``git worktree add``\\ ed under
  ``HOOKD_HOME/worktrees/<builder>`` and recorded in the builder's spawn manifest
  (``git_worktree``), removed by `hookd unspawn --remove-worktree`.

Errors are :class:`hookd.models.ConfigError` (exit 2) with one sentence, or NotFound (exit 1).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import shutil
import subprocess
import tempfile

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hookd.config import Home
from hookd.errors import ConfigError
from hookd.harness.launch import Launcher

#: tmux's own variables, never handed to an agent's pane (they name the caller's server)
_TMUX_VARS = ("TMUX", "TMUX_PANE")


@contextlib.contextmanager
def builder_lock(home: Home, builder: str) -> Iterator[None]:
    """Held while `hookd run` / `hookd continue` start ``builder``'s agent (``run/locks/start-<id>``,
    flock): two of them at once start one agent, the other is refused (the daemon sees it live)."""
    d = home.run_dir / "locks"
    home.ensure()
    d.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(d / f"start-{builder}", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def tmux_socket(home: Home) -> Path:
    """hookd's tmux server's socket: beside the daemon's (``run/hookd.sock`` ->
    ``run/hookd.tmux``; a long home's hashed socket likewise), in a directory private to this
    user."""
    return home.socket_path.with_suffix(".tmux")


def tmux_session(builder: str) -> str:
    """The tmux session of ``builder`` (tmux turns ``.`` and ``:`` into ``_`` in names)."""
    return builder.replace(".", "_").replace(":", "_")


def _tmux_bin() -> str:
    found = shutil.which("tmux")
    if found is None:
        raise ConfigError("hookd run needs tmux for an interactive agent (apt-get install tmux), or use --headless")
    return found


def find_program(launcher: Launcher, env: Mapping[str, str]) -> str:
    """The agent program's path: ``env[launcher.program_env]`` when set, else
    ``launcher.program`` on ``env``'s PATH. Raises ConfigError when neither is an executable."""
    named = env.get(launcher.program_env)
    if named:
        if os.path.isfile(named) and os.access(named, os.X_OK):
            return os.path.abspath(named)
        raise ConfigError(f"{launcher.program_env}={named} is not an executable file")
    found = shutil.which(launcher.program, path=env.get("PATH"))
    if found is None:
        raise ConfigError(f"{launcher.program} is not on PATH: install it, or set {launcher.program_env} to its path")
    return found


def start_interactive(home: Home, builder: str, argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> dict[str, Any]:
    """Start ``argv`` in a detached tmux session named after ``builder`` on hookd's tmux server
    (started with it), in ``cwd``, with ``env`` (the server may have been started by another
    caller, so the pane is handed the caller's variables: through :func:`_env_file`, never on a
    command line another local user could read). The server keeps a pane whose agent ended
    (``remain-on-exit``): its last screen stays for `hookd attach`, and the daemon reads its
    exit status there (:func:`hookd.core.procs.exit_status`); such a session of an earlier
    run of ``builder`` is killed first. Returns ``{"pid", "pid_started_at", "tmux_socket",
    "tmux_session"}``. Raises ConfigError when tmux refuses (a live session of that name
    already exists, no tmux)."""
    sock, name = tmux_socket(home), tmux_session(builder)
    tmux = _tmux_bin()
    if sock.exists() and pane_dead(sock, name):
        subprocess.run([tmux, "-S", os.fspath(sock), "kill-session", "-t", f"={name}"], capture_output=True,
                       timeout=10, check=False)
    pane_env = {k: v for k, v in env.items() if k not in _TMUX_VARS}
    env_file = _env_file(sock.parent, pane_env)
    # several arguments: tmux runs them without a shell of its own; sh takes the variables in,
    # removes their file and becomes the agent (the pane's pid is the agent's)
    command = ["/bin/sh", "-c", 'set -a; . "$0"; rm -f -- "$0"; set +a; exec "$@"', os.fspath(env_file), *argv]
    r = subprocess.run(
        [tmux, "-S", os.fspath(sock), "start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
         "new-session", "-d", "-s", name, "-x", "160", "-y", "48", "-c", cwd, *command],
        capture_output=True, text=True, env=pane_env, timeout=30, check=False)
    if r.returncode != 0:
        env_file.unlink(missing_ok=True)
        raise ConfigError(f"tmux could not start session {name}: {r.stderr.strip() or r.returncode}")
    pid = int(_tmux(sock, "display-message", "-p", "-t", f"={name}:", "#{pane_pid}").strip())
    return {"pid": pid, "pid_started_at": _started_at(pid), "tmux_socket": os.fspath(sock), "tmux_session": name}


def pane_dead(sock: Path | str, name: str) -> bool:
    """Is tmux session ``name`` on the server at ``sock`` there with its agent ended (a pane
    kept by ``remain-on-exit``)? False when there is no such session."""
    r = subprocess.run([_tmux_bin(), "-S", os.fspath(sock), "display-message", "-p", "-t", f"={name}:", "#{pane_dead}"],
                       capture_output=True, text=True, timeout=10, check=False)
    return r.returncode == 0 and r.stdout.strip() == "1"


def pane_tail(sock: Path | str, name: str) -> str | None:
    """The last line the agent of tmux session ``name`` (its pane kept: :func:`pane_dead`)
    wrote, its scrollback included (tmux's "Pane is dead" line left out); None when there is
    none or no such session."""
    r = subprocess.run([_tmux_bin(), "-S", os.fspath(sock), "capture-pane", "-p", "-J", "-S", "-", "-t", f"={name}:"],
                       capture_output=True, text=True, timeout=10, check=False)
    lines = [line.strip() for line in r.stdout.splitlines() if line.strip() and not line.startswith("Pane is dead")]
    return lines[-1] if r.returncode == 0 and lines else None


def _env_file(folder: Path, env: Mapping[str, str]) -> Path:
    """``env`` as ``NAME='value'`` lines for ``sh`` to read, in a new file (0600) in ``folder``
    (the daemon's private run folder). Names a shell cannot assign (exported functions such as
    ``BASH_FUNC_f%%``) are left out."""
    lines = "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items() if k.isidentifier() and k.isascii())
    fd, path = tempfile.mkstemp(prefix="run-env-", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(lines)
    return Path(path)


def _tmux(sock: Path, *args: str) -> str:
    r = subprocess.run([_tmux_bin(), "-S", os.fspath(sock), *args], capture_output=True, text=True, timeout=10,
                       check=False)
    if r.returncode != 0:
        raise ConfigError(f"tmux {args[0]}: {r.stderr.strip() or r.returncode}")
    return r.stdout


def log_path(home: Home, builder: str) -> Path:
    """Where a headless agent of ``builder`` writes its output: ``logs/<builder>.log`` (appended
    to by each run)."""
    return home.root / "logs" / f"{builder}.log"


#: The headless agent's wrapper (``sh -c``; $1: the log, $2: the folder of exit statuses, then
#: the agent's argv): it starts the agent, writes ``running <its own pid>`` into ``$2/<pid>`` (the
#: status is coming while the wrapper lives), prints the pid, waits for the agent, then writes
#: its exit status to the log, then into ``$2/<pid>`` (for the daemon:
#: :func:`hookd.core.procs.exit_status`; the log is complete by the time the daemon records
#: the exit).
_HEADLESS = """log=$1; exits=$2; shift 2
"$@" >>"$log" 2>&1 </dev/null &
pid=$!
echo "running $$" >"$exits/$pid"
echo "$pid"
exec >/dev/null
wait "$pid"; rc=$?
printf -- '--- hookd: exited %s\\n' "$rc" >>"$log"
printf '%s\\n' "$rc" >"$exits/$pid.tmp" && mv -f "$exits/$pid.tmp" "$exits/$pid"
"""


def exits_dir(home: Home) -> Path:
    """Where a headless agent's wrapper leaves its exit status for the daemon (``run/exits``)."""
    return home.run_dir / "exits"


def start_headless(home: Home, builder: str, argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> dict[str, Any]:
    """Start ``argv`` (stdin ``/dev/null``, stdout and stderr appended to :func:`log_path`,
    0600) under a small ``sh`` wrapper in a session of its own (the wrapper leads its process
    group, so `hookd stop`'s SIGKILL ends the agent's tools too), and return at once: ``{"pid"
    (the agent's), "pid_started_at", "log_path"}``. When the agent ends, the wrapper appends
    ``--- hookd: exited N`` to the log and leaves N in :func:`exits_dir` for the daemon."""
    log = log_path(home, builder)
    log.parent.mkdir(mode=0o700, exist_ok=True)
    exits = exits_dir(home)
    exits.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, f"--- hookd: {shlex.join(argv)} (in {cwd}) at {time.strftime('%Y-%m-%d %H:%M:%S %z')}\n".encode())
        proc = subprocess.Popen(["/bin/sh", "-c", _HEADLESS, "hookd-run", os.fspath(log), os.fspath(exits), *argv],
                                cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=fd,
                                start_new_session=True)
    except OSError as e:
        raise ConfigError(f"could not start {argv[0]}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    proc.stdout.close()
    if not line.strip().isdigit():
        proc.wait()
        raise ConfigError(f"could not start {argv[0]}: see {log}")
    pid = int(line)
    # the wrapper reaped when it ends: a caller that lives on (hookd.api's orchestrator) keeps no
    # zombie (the CLI exits at once: init reaps it then)
    threading.Thread(target=proc.wait, daemon=True, name=f"reap-{proc.pid}").start()
    return {"pid": pid, "pid_started_at": _started_at(pid), "log_path": os.fspath(log)}


def _started_at(pid: int) -> float | None:
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def alive(pid: int, started_at: float | None) -> bool:
    """Is ``pid`` still the process that started at ``started_at`` (and not a zombie)?"""
    from hookd.core.procs import process_alive

    return process_alive(pid, started_at)


def stop_process(pid: int, started_at: float | None, timeout: float) -> str | None:
    """:func:`hookd.core.procs.stop_process` (SIGTERM, then SIGKILL after ``timeout`` seconds)."""
    from hookd.core.procs import stop_process as stop

    return stop(pid, started_at, timeout)


def attach_argv(run: Mapping[str, Any]) -> list[str]:
    """The command that attaches this terminal to ``run``'s tmux session."""
    return [_tmux_bin(), "-S", run["tmux_socket"], "attach-session", "-t", f"={run['tmux_session']}"]


# --- git worktrees -------------------------------------------------------------------------


def _git(cwd: str, *args: str) -> str:
    git = shutil.which("git")
    if git is None:
        raise ConfigError("--git-worktree needs git")
    r = subprocess.run([git, "-C", cwd, *args], capture_output=True, text=True, timeout=60, check=False)
    if r.returncode != 0:
        raise ConfigError(f"git {args[0]} {args[1] if len(args) > 1 else ''}: {r.stderr.strip() or r.returncode}".replace("  ", " "))
    return r.stdout


def git_worktree_add(home: Home, builder: str, branch: str, repo: str,
                     known: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``git worktree add`` of ``branch`` (created from the repository's HEAD when it does not
    exist) at ``HOOKD_HOME/worktrees/<builder>``, for the repository containing ``repo``.
    Returns the manifest's record ``{"path", "repo", "branch", "created_branch"}``. ``known``:
    the builder's record from an earlier run; when the path is that worktree, of the same
    repository, still on ``branch``, it is used again as it is (``known``, no branch created
    by this run: a second `hookd run B --git-worktree BRANCH` starts B there again). Raises
    ConfigError (not a repository, the path taken otherwise, git's own refusal)."""
    top = _git(repo, "rev-parse", "--show-toplevel").strip()
    path = home.root / "worktrees" / builder
    if os.path.lexists(path):
        if (known is not None and known.get("path") == os.path.realpath(path) and known.get("repo") == top
                and known.get("branch") == branch and _branch_of(os.fspath(path)) == branch):
            return dict(known, created_branch=False)
        raise ConfigError(f"{path} already exists: remove it (hookd unspawn {builder} --remove-worktree) or use --worktree")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    exists = subprocess.run([shutil.which("git") or "git", "-C", top, "show-ref", "--verify", "--quiet",
                             f"refs/heads/{branch}"], check=False).returncode == 0
    _git(top, "worktree", "add", *([os.fspath(path), branch] if exists else ["-b", branch, os.fspath(path)]))
    return {"path": os.path.realpath(path), "repo": top, "branch": branch, "created_branch": not exists}


def _branch_of(path: str) -> str | None:
    """The branch checked out at ``path``, or None (not a git worktree, a detached HEAD, no git)."""
    try:
        return _git(path, "rev-parse", "--abbrev-ref", "HEAD").strip() if os.path.isdir(path) else None
    except ConfigError:
        return None


def git_worktree_remove(rec: Mapping[str, Any]) -> None:
    """``git worktree remove`` of the worktree recorded as ``rec`` (its branch is kept: the
    work is on it). Git refuses a worktree with changes: ConfigError with its words."""
    _git(rec["repo"], "worktree", "remove", rec["path"])
