"""`hookd run`, `hookd continue`, `hookd stop`, `hookd attach` and `hookd ls`: hookd starts a
builder's agent after arming its hooks, lists, attaches to, stops and resumes it (issue 23).

The processes are started here (:mod:`hookd.runner`: a tmux session on hookd's own tmux server,
or the harness's print mode with its output logged); the daemon records them through its API
(``POST /v1/builders/B/started``, :mod:`hookd.http.runs`), stops them (``POST /v1/builders/B/stop``: the
daemon signals the agent, so that its watch never takes a stop for an exit) and refuses a second live
session of a builder. A harness's command lines are its adapter's ``launchers``
(:class:`hookd.harness.launch.Launcher`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from hookd.cli_complete import builders
from hookd.cli_render import _client, _echo_json, _lane_state, _out, _seg, _table, _when, json_option
from hookd.launching import ended_text, run_note, where_it_said


def _view(ctx: click.Context, builder: str) -> dict[str, Any]:
    """``GET /v1/builders/B/run``: the builder's newest run, what makes it live, its last session."""
    from hookd.launching import view

    return view(_client(ctx), builder)


def _never_started(builder: str, view: dict[str, Any]) -> str:
    """Why `stop` / `attach` find no run of ``builder`` (its ``GET /v1/builders/B/run``)."""
    if view.get("known") is False:
        return f"no builder {builder!r}: hookd ls lists them"
    return f"{builder} was not started by hookd (hookd run {builder} starts it)"


def _prompt_text(prompt: str | None) -> str | None:
    """``--prompt``: the text, or ``-`` for standard input (read whole)."""
    if prompt == "-":
        text = sys.stdin.read()
        return text if text.strip() else None
    return prompt


def _started_lines(builder: str, run: dict[str, Any], verb: str) -> None:
    """What `hookd run` / `hookd continue` print: where the agent runs and how to reach it."""
    session = run.get("session_id") or run.get("resumes")
    what = f"{verb} {builder} ({run['harness']})"
    sid = f", session {session}" if session else ""
    if run["mode"] == "headless":
        _out(f"{what} headless, pid {run['pid']}{sid}; its output: {run['log_path']}")
    else:
        _out(f"{what} in tmux session {run['tmux_session']}, pid {run['pid']}{sid}")
        _out(f"attach: hookd attach {builder}  (detach: Ctrl-b d; hookd's own tmux server: {run['tmux_socket']})")
    _out(f"stop: hookd stop {builder}")


_AGENT_ARGS = click.argument("agent_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- AGENT_ARGS...]")


@click.command()
@click.argument("builder", shell_complete=builders)
@_AGENT_ARGS
@click.option("--worktree", type=click.Path(path_type=Path, file_okay=False, exists=True), metavar="DIR",
              help="Start the agent in DIR [default: the builder's spawned worktree, else the current directory].")
@click.option("--git-worktree", "branch", metavar="BRANCH",
              help="Make a git worktree of BRANCH (created from HEAD when new) of the current directory's repository, "
                   "under HOOKD_HOME/worktrees/BUILDER, and start there (unspawn --remove-worktree removes it).")
@click.option("--harness", default=None, help="The agent [default: the builder's spawned harness, else claude-code].")
@click.option("--headless", is_flag=True,
              help="The harness's print mode (claude -p, codex exec): output to HOOKD_HOME/logs/BUILDER.log.")
@click.option("--prompt", metavar="TEXT", help="The first prompt ('-': read it from standard input). Headless needs one.")
@click.option("--trust", is_flag=True,
              help="codex: also trust the worktree and hookd's hooks in $CODEX_HOME/config.toml, as hookd spawn --trust.")
@json_option("Print the run as JSON.")
@click.pass_context
def run(ctx: click.Context, builder: str, agent_args: tuple[str, ...], worktree: Path | None, branch: str | None,
        harness: str | None, headless: bool, prompt: str | None, trust: bool, as_json: bool) -> None:
    """Arm BUILDER's hooks, then start its agent: in a tmux session named after it (hookd attach), or headless.

    Arguments after `--` go to the agent (`hookd run b1 -- --permission-mode default`). Refused while
    BUILDER has a live session. Needs the daemon."""
    from hookd.launching import start

    if worktree is not None and branch is not None:
        raise click.UsageError("give --worktree DIR or --git-worktree BRANCH, not both")
    r, git_rec = start(ctx.obj, _client(ctx), builder, worktree=worktree, branch=branch, harness=harness,
                       headless=headless, prompt=_prompt_text(prompt), agent_args=agent_args, trust=trust,
                       warn=lambda w: _out(f"hookd: warning: {w}", err=True))
    if as_json:
        _echo_json(r)
        return
    if git_rec is not None:
        _out(f"git worktree {git_rec['path']} on branch {git_rec['branch']}"
             f"{' (new)' if git_rec['created_branch'] else ''}")
    _started_lines(builder, r, "started")
    from hookd.spawn import read_manifest
    from hookd.spawn.check import unignored_note

    m = read_manifest(ctx.obj, builder)  # (the hooks this run armed: as `hookd spawn` says it)
    if m is not None and (note := unignored_note(m)):
        _out(f"hookd: note: {note}", err=True)


@click.command("continue")
@click.argument("builder", shell_complete=builders)
@_AGENT_ARGS
@click.option("--prompt", metavar="TEXT", help="A prompt for the resumed session ('-': standard input). Headless needs one.")
@click.option("--headless/--interactive", default=None,
              help="How to run it [default: as its last run, else interactive].")
@json_option("Print the run as JSON.")
@click.pass_context
def continue_(ctx: click.Context, builder: str, agent_args: tuple[str, ...], prompt: str | None,
              headless: bool | None, as_json: bool) -> None:
    """Start a new session of an ended BUILDER resuming its last session (claude --resume).

    Its hooks are armed again first; messages queued for it (hookd send) reach the resumed session
    at its first turn boundary. Refused while BUILDER has a live session."""
    from hookd.launching import resume

    r = resume(ctx.obj, _client(ctx), builder, prompt=_prompt_text(prompt), headless=headless, agent_args=agent_args,
               warn=lambda w: _out(f"hookd: warning: {w}", err=True))
    if as_json:
        _echo_json(r)
        return
    _started_lines(builder, r, "continued")


@click.command()
@click.argument("builder", shell_complete=builders)
@click.option("--timeout", type=float, default=10.0, show_default=True, metavar="S",
              help="Seconds the agent has to exit after SIGTERM before it is killed (SIGKILL).")
@json_option("Print the run as JSON.")
@click.pass_context
def stop(ctx: click.Context, builder: str, timeout: float, as_json: bool) -> None:
    """Stop BUILDER's agent: SIGTERM, then SIGKILL after --timeout; its lane ends (hookd continue resumes it)."""
    from hookd.errors import NotFound

    view = _view(ctx, builder)
    r = view.get("run")
    if r is None:
        raise NotFound(_never_started(builder, view))
    if not r.get("alive"):
        raise NotFound(_not_running(builder, r))
    r = _client(ctx).post_json(f"/v1/builders/{_seg(builder)}/stop", {"timeout_s": timeout},
                               timeout=timeout + 30)["run"]
    sig = r.get("stop_signal")
    if as_json:
        _echo_json(r)
        return
    how = f"on {sig}" if sig else "already"
    if r.get("hooks") == 0:  # (at a dialog before its first hook, say: it began no session)
        _out(f"stopped {builder}: pid {r['pid']} ended {how} before its first hook, so it began no session; "
             f"hookd run {builder} starts it again")
        return
    _out(f"stopped {builder}: pid {r['pid']} ended {how}; lane ended (hookd continue {builder} resumes it)")


@click.command()
@click.argument("builder", shell_complete=builders)
@click.pass_context
def attach(ctx: click.Context, builder: str) -> None:
    """Attach this terminal to BUILDER's tmux session (detach: Ctrl-b d)."""
    from hookd import runner
    from hookd.errors import ConfigError, NotFound

    view = _view(ctx, builder)
    r = view.get("run")
    if r is None:
        raise NotFound(_never_started(builder, view))
    if r["mode"] == "headless":
        raise ConfigError(f"{builder} runs headless: no terminal to attach to; its output: {r['log_path']}")
    kept = not r.get("alive") and runner.pane_dead(r["tmux_socket"], r["tmux_session"])
    if not r.get("alive") and not kept:
        raise NotFound(_not_running(builder, r))
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError(f"hookd attach needs a terminal: run it in one (the agent of {builder} runs in tmux session"
                          f" {r['tmux_session']})")
    if kept:
        _out(f"{builder}'s agent {ended_text(r)} at {_when(r.get('stopped_at'))}: its last screen"
             " (scroll back: Ctrl-b [, then PageUp; detach: Ctrl-b d)", err=True)
    argv = runner.attach_argv(r)
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}  # (attach from inside tmux too)
    os.execvpe(argv[0], argv, env)


def _not_running(builder: str, r: dict[str, Any]) -> str:
    """Why `hookd stop` / `hookd attach` have nothing to reach: how its agent ended, and what
    starts it again (`hookd continue` only when the run left a session to resume)."""
    head = f"{builder} is not running: its agent {ended_text(r)} at {_when(r.get('stopped_at'))}"
    if r.get("hooks") == 0 and r.get("stop_reason") != "stopped":
        return f"{head} before its first hook ({where_it_said(builder, r)}); hookd run {builder} starts it again"
    if r.get("hooks") == 0:  # stopped before it began a session: nothing to resume
        return f"{head}, stopped before its first hook (it began no session); hookd run {builder} starts it again"
    return f"{head} (hookd continue {builder} resumes it)"


@click.command("ls")
@json_option("Print the builders as JSON.")
@click.pass_context
def ls(ctx: click.Context, as_json: bool) -> None:
    """Every builder: harness, how hookd runs its agent, pid, lane, what waits on you, worktree."""
    from hookd.spawn import list_manifests

    client = _client(ctx)
    runs = {r["builder"]: r for r in client.get("/v1/runs")}
    lanes = {lane["builder"]: lane for lane in client.get("/v1/lanes")}
    manifests = {m["builder"]: m for m in list_manifests(ctx.obj)}
    names = sorted(set(manifests) | set(runs) | {b for b, lane in lanes.items() if lane["state"] != "unspawned"})
    items = [_ls_item(b, manifests.get(b), runs.get(b), lanes.get(b)) for b in names]
    if as_json:
        _echo_json(items)
        return
    if not items:
        _out("no builders")
        return
    rows = [[i["builder"], i["harness"] or "-", _agent_cell(i["run"]), _pid_cell(i), _lane_state(i["lane"]),
             ", ".join(i["pending"]) or "-", i["worktree"] or "-"] for i in items]
    _out(_table(rows, ["builder", "harness", "agent", "pid", "lane", "waiting on you", "worktree"], numparse=False))
    for i in items:
        if note := run_note(i["builder"], i["run"], lanes.get(i["builder"])):
            _out(note)


def _ls_item(builder: str, m: dict[str, Any] | None, r: dict[str, Any] | None, lane: dict[str, Any] | None) -> dict[str, Any]:
    """One builder of `hookd ls --json`: ``builder``, ``harness``, ``worktree``, ``run`` (its
    newest run, or None), ``pid`` and ``alive`` (the run's, else its session's agent), ``lane``
    (state), ``pending`` (interaction ids waiting on a human), ``queued`` (messages)."""
    pid = r["pid"] if r else (lane or {}).get("agent_pid")
    alive = r.get("alive") if r else (None if pid is None else (lane or {}).get("state") not in ("dead", "ended"))
    return {"builder": builder, "harness": (m or {}).get("harness") or (r or {}).get("harness"),
            "worktree": (m or {}).get("worktree") or (r or {}).get("worktree"), "run": r, "pid": pid, "alive": alive,
            "lane": (lane or {}).get("state"), "pending": list((lane or {}).get("pending") or ()),
            "queued": (lane or {}).get("queued", 0)}


def _agent_cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    return "headless" if r["mode"] == "headless" else f"tmux {r['tmux_session']}"


def _pid_cell(i: dict[str, Any]) -> str:
    if i["pid"] is None:
        return "-"
    if i["alive"]:
        return f"{i['pid']}"
    return f"{i['pid']} ({ended_text(i['run'])})" if i["run"] else f"{i['pid']} (ended)"
