"""What `hookd run` and `hookd continue` do, without the command line: arm a builder's hooks,
start its agent (:mod:`hookd.runner`) and have the daemon record it, refused while the builder
has a live session. The CLI (:mod:`hookd.cli_run`) and the Python API (:mod:`hookd.api`) both
call :func:`start` and :func:`resume`.

Errors: :class:`hookd.errors.ConfigError` (exit 2: bad options, no program, no tmux),
:class:`hookd.errors.Conflict` (exit 2: a live session), :class:`hookd.errors.NotFound` (no
session to continue), :class:`hookd.errors.DaemonNotRunning` (exit 3).
"""

from __future__ import annotations

import os
import shlex
import urllib.parse
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hookd.client import Client
from hookd.config import Home, check_builder_id
from hookd.errors import ConfigError, Conflict, NotFound


def _seg(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def launcher(harness: str) -> Any:
    """The harness's :class:`hookd.harness.launch.Launcher`; ConfigError when hookd cannot start it."""
    from hookd.harness.registry import ADAPTERS

    adapter = ADAPTERS.get(harness)
    found = adapter.launchers.get(harness) if adapter is not None else None
    if found is None:
        known = sorted(h for a in set(ADAPTERS.values()) for h in a.launchers)
        raise ConfigError(f"hookd cannot start {harness} agents (it starts: {', '.join(known)}); "
                          f"spawn the builder (hookd spawn) and start its agent yourself")
    return found


def view(client: Client, builder: str) -> dict[str, Any]:
    """``GET /v1/builders/B/run``: the builder's newest run, what makes it live, its last session."""
    check_builder_id(builder)
    return client.get(f"/v1/builders/{_seg(builder)}/run")


def refuse_live(v: Mapping[str, Any]) -> None:
    """Raise Conflict when the builder's run view says a new session would be refused."""
    if v.get("refusal"):
        raise Conflict(v["refusal"])


def arm(home: Home, client: Client, builder: str, harness: str, worktree: str,
        git_worktree: dict[str, Any] | None, trust: bool = False) -> tuple[str | None, str | None]:
    """Spawn ``builder``'s hooks into ``worktree`` (:func:`hookd.spawn.spawn`, as `hookd spawn`
    does), with the options of its last spawn when it was spawned for the same harness, and
    tell the daemon (``POST /v1/builders/B/spawned``). ``trust``: `hookd spawn --trust` (Codex).
    Returns two sentences or None each: the harness will not run the hooks until they are
    trusted (:func:`hookd.spawn.check.untrusted_advice`), and its prompt is hidden at the desk
    while hookd holds it (:func:`hookd.spawn.check.held_prompt_line`; the builder's first arming
    for this harness only)."""
    from hookd.spawn import read_manifest, spawn
    from hookd.spawn.check import held_prompt_line, untrusted_advice

    old = read_manifest(home, builder)
    kw: dict[str, Any] = {}
    if old is not None and old.get("harness") == harness:
        d = old.get("default_answer") or {}
        kw = {"deadline_ms": old.get("deadline_ms"), "wake_wait_s": old.get("wake_wait_s", 0),
              "hold_s": old.get("hold_s", 900), "mcp": old.get("mcp") is not None,
              "transport": old.get("transport", "sh"), "default_answer_after_s": d.get("after_s"),
              "default_answer": d.get("label")}
    m = spawn(home, builder, worktree=Path(worktree), harness=harness, git_worktree=git_worktree, trust=trust, **kw)
    client.post_json(f"/v1/builders/{_seg(builder)}/spawned", {}, timeout=5)
    first = old is None or old.get("harness") != harness  # (the held-prompt note once, as spawn's)
    return untrusted_advice(home, m), held_prompt_line(home, m) if first else None


def _record(home: Home, client: Client, builder: str, harness: str, *, headless: bool, worktree: str,
            argv: list[str], session_id: str | None, resumes: str | None, environ: Mapping[str, str],
            agent_args: Sequence[str]) -> dict[str, Any]:
    """Start ``argv`` for ``builder`` (tmux, or headless) in ``worktree`` and record it with the
    daemon; a refusal there (another live session) ends what was started. Returns the run."""
    from hookd import runner

    started = (runner.start_headless if headless else runner.start_interactive)(home, builder, argv, worktree, environ)
    body = {"harness": harness, "mode": "headless" if headless else "interactive", "argv": argv,
            "worktree": worktree, "session_id": session_id, "resumes": resumes, "agent_args": list(agent_args),
            **started}
    try:
        return client.post_json(f"/v1/builders/{_seg(builder)}/started", body, timeout=10)["run"]
    except BaseException:  # refused (a live session), or the daemon gone: no agent runs unrecorded
        runner.stop_process(started["pid"], started["pid_started_at"], 5.0)
        raise


def start(home: Home, client: Client, builder: str, *, worktree: str | os.PathLike[str] | None = None,
          branch: str | None = None, harness: str | None = None, headless: bool = False, prompt: str | None = None,
          agent_args: Sequence[str] = (), cwd: str | None = None, environ: Mapping[str, str] | None = None,
          trust: bool = False, warn: Callable[[str], None] | None = None,
          ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """`hookd run`: arm ``builder``'s hooks and start its agent; returns (the run as the daemon
    recorded it, the git worktree made for ``branch`` or None). worktree: where it runs
    (default: its spawned worktree, else ``cwd``); branch: a git worktree of it made from the
    repository at ``cwd`` instead; harness: default its spawned one, else ``claude-code``;
    headless: the print mode, which needs ``prompt``; cwd: default the current directory;
    environ: the agent's environment (default this process's); trust: also trust the hooks
    where the harness asks for it (Codex: `hookd spawn --trust`); warn: called with a sentence
    when the hooks will not run until trusted (default: :func:`warnings.warn`)."""
    from hookd import runner
    from hookd.spawn import read_manifest

    env = dict(os.environ if environ is None else environ)
    cwd = cwd or os.getcwd()
    if worktree is not None and branch is not None:
        raise ConfigError("give --worktree DIR or --git-worktree BRANCH, not both")
    check_builder_id(builder)
    old = read_manifest(home, builder)
    harness = harness or (old or {}).get("harness") or "claude-code"
    launch = launcher(harness)
    if headless and not prompt:
        raise ConfigError("--headless needs a prompt: --prompt TEXT, or --prompt - to read it from standard input")
    program = runner.find_program(launch, env)
    refuse_live(view(client, builder))  # (before anything is made: also a daemon that is not running)
    with runner.builder_lock(home, builder):
        refuse_live(view(client, builder))
        git_rec = None
        if branch is not None:
            git_rec = runner.git_worktree_add(home, builder, branch, cwd, known=(old or {}).get("git_worktree"))
            where = git_rec["path"]
        elif worktree is not None:
            where = os.path.realpath(worktree)
        else:
            where = (old or {}).get("worktree") or os.path.realpath(cwd)
        untrusted, held = arm(home, client, builder, harness, where, git_rec, trust)
        if untrusted and headless:  # (interactive: the dialog it waits on is named below)
            (warn or warnings.warn)(untrusted)
        if held:
            (warn or warnings.warn)(held)
        sid = str(uuid.uuid4()) if launch.names_session else None
        args = launch.headless(agent_args, prompt or "", sid) if headless else launch.interactive(agent_args, prompt, sid)
        run = _record(home, client, builder, harness, headless=headless, worktree=where, argv=[program, *args],
                      session_id=sid, resumes=None, environ=env, agent_args=agent_args)
    if not headless and (dialog := dialog_hint(home, builder, harness, where, env)):
        (warn or warnings.warn)(dialog)
    return run, git_rec


def dialog_hint(home: Home, builder: str, harness: str, worktree: str, environ: Mapping[str, str]) -> str | None:
    """What an interactive agent of ``builder`` just started in ``worktree`` waits on at its
    terminal before any hook (None: nothing known): Claude Code's folder trust dialog where it
    was never accepted (`hookd doctor`'s ``folder_trust`` check), Codex's "Trust this folder" or
    "Hooks need review" where its config does not trust the project or hookd's hooks."""
    from hookd.doctor import folder_trust_check
    from hookd.spawn import INSTALLS, read_manifest
    from hookd.spawn.trust import check as check_trust

    attach = f"answer it at its terminal (hookd attach {builder}); it sends no hook until then"
    if harness == "claude-code":
        if folder_trust_check(builder, worktree, environ)["state"] == "warn":
            return f"Claude Code has not been trusted in {worktree}: {builder} waits on its trust dialog; {attach}"
        return None
    t = check_trust(read_manifest(home, builder) or {}, INSTALLS.get(harness))
    if t is None or t["state"] == "trusted":
        return None
    what = '"Trust this folder"' if t["state"] == "project_not_trusted" else '"Hooks need review"'
    return f"{builder} waits on {harness}'s {what} dialog ({t['detail']}); {attach}, or stop it and run with --trust"


def resume(home: Home, client: Client, builder: str, *, prompt: str | None = None, headless: bool | None = None,
           agent_args: Sequence[str] = (), environ: Mapping[str, str] | None = None,
           warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """`hookd continue`: a new session of an ended ``builder`` resuming its last session (the
    newest one its hooks told hookd of: never a session id hookd only gave an agent that ended
    before its first hook), in that session's directory, run as its last run was unless
    ``headless`` says; its hooks armed again first. ``agent_args``: the agent's own arguments;
    none: the last run's when it ran in the same mode (else they are dropped, and ``warn``
    is told). Returns the run. NotFound when it has no session."""
    from hookd import runner
    from hookd.spawn import read_manifest

    env = dict(os.environ if environ is None else environ)
    v = view(client, builder)
    refuse_live(v)
    last, prev = v.get("last_session"), v.get("run")
    sid = (last or {}).get("session_id")
    if not sid:
        raise NotFound(f"{builder} has no session to continue: {_no_session(builder, prev)}")
    harness = (last or {}).get("harness") or (prev or {}).get("harness") or "claude-code"
    launch = launcher(harness)
    if headless is None:
        headless = bool(prev and prev["mode"] == "headless")
    if not agent_args and prev and prev.get("agent_args") and prev["harness"] == harness:
        if (prev["mode"] == "headless") == headless:
            agent_args = prev["agent_args"]
        else:
            (warn or warnings.warn)(
                f"the last run's agent arguments ({shlex.join(prev['agent_args'])}) were for its {prev['mode']} mode:"
                f" not given to this {'headless' if headless else 'interactive'} one (give them after --)")
    if headless and not prompt:
        raise ConfigError("--headless needs a prompt: --prompt TEXT, or --prompt - to read it from standard input")
    m = read_manifest(home, builder)
    # the session's own directory: where the harness finds it to resume
    where = (last or {}).get("cwd") or (m or {}).get("worktree") or (prev or {}).get("worktree")
    if not where or not os.path.isdir(where):
        raise ConfigError(f"{builder}'s worktree {where or '(unknown)'} is gone: its session cannot be resumed there")
    program = runner.find_program(launch, env)
    with runner.builder_lock(home, builder):
        refuse_live(view(client, builder))
        arm(home, client, builder, harness, where, None)
        return _record(home, client, builder, harness, headless=headless, worktree=where,
                       argv=[program, *launch.resume(sid, agent_args, prompt, headless)], session_id=None,
                       resumes=sid, environ=env, agent_args=agent_args)


def _no_session(builder: str, prev: Mapping[str, Any] | None) -> str:
    """Why ``builder`` has no session to continue, and what to do (``prev``: its last run)."""
    if prev is None or prev.get("hooks") != 0:
        return f"start it with hookd run {builder}"
    if prev.get("stop_reason") == "stopped":  # (hookd stop ended it: nothing to fix)
        return (f"its last run was stopped (hookd stop) before its first hook, so it began no session; start it again "
                f"with hookd run {builder}")
    return (f"its last run {ended_text(prev)} before its first hook ({where_it_said(builder, prev)}); "
            f"fix what stopped it, then start it again with hookd run {builder}")


def ended_text(r: Mapping[str, Any]) -> str:
    """How a run (``GET /v1/runs``' shape) ended: ``stopped by hookd stop`` (whatever status its
    signal left), ``exited 1``, else ``ended`` (its status not known)."""
    if r.get("stop_reason") == "stopped":
        return "stopped by hookd stop"
    status = r.get("exit_status")
    return f"exited {status}" if status is not None else "ended"


def log_tail(path: str | None) -> str | None:
    """The last line of a headless agent's log that is its own (not hookd's ``--- hookd:``
    lines), clipped; None when there is none or the log cannot be read."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    own = [line.strip() for line in lines if line.strip() and not line.startswith("--- hookd:")]
    return _clip(own[-1]) if own else None


def where_it_said(builder: str, r: Mapping[str, Any]) -> str:
    """Where to see what an ended run's agent said: its log (and its last line), or its kept
    tmux screen (`hookd attach`)."""
    if r.get("mode") == "headless":
        tail = log_tail(r.get("log_path"))
        return f"see {r.get('log_path')}" + (f" ({tail})" if tail else "")
    from hookd import runner

    try:
        tail = runner.pane_tail(r["tmux_socket"], r["tmux_session"]) if r.get("tmux_socket") else None
    except Exception:  # (no tmux here, or it failed: the attach hint stands alone)
        tail = None
    return f"see hookd attach {builder}" + (f" ({_clip(tail)})" if tail else "")


def run_note(builder: str, r: Mapping[str, Any] | None, lane: Mapping[str, Any] | None = None) -> str | None:
    """A line for a builder whose newest run ended before its first hook (its error would be
    lost otherwise), or, given its ``lane``, whose running agent has begun no session yet (an
    interactive one may wait on a dialog at its desk: Claude Code's folder trust, say), for
    `hookd ls` and `hookd lanes`; None for any other run."""
    if r is None:
        return None
    if r.get("stopped_at") is None:
        if not r.get("alive") or lane is None or lane.get("session_id") is not None:
            return None
        where = (f"see {r.get('log_path')}" if r.get("mode") == "headless"
                 else f"it may wait on a dialog at its desk: hookd attach {builder}")
        return f"{builder}: its agent (pid {r.get('pid')}) has sent no hook yet; {where}"
    if r.get("hooks") != 0 or r.get("stop_reason") == "stopped":
        return None
    return f"{builder}: its agent {ended_text(r)} before its first hook: {where_it_said(builder, r)}"


def _clip(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."
