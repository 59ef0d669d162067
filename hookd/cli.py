"""The `hookd` command line: a thin click layer over the core, the client and spawn.

Every command takes ``--home`` (or ``HOOKD_HOME``). Errors print one sentence to stderr
and exit non-zero (2 bad input or config, 3 daemon not running, 4 already serving, 1 other).

Everything printed for a human goes through :func:`hookd.untrusted.visible` (``_out``,
``_table``): text an agent or a harness wrote (questions, tool input, session ids, paths,
messages, error messages quoting them, the daemon's log lines) cannot move the cursor, clear
the screen, set a window title, hide or reorder words. ``--json`` output is exact.

The commands live in ``hookd.cli`` (the daemon and the agents' set-up: ``serve``, ``spawn``,
``unspawn``, ``status``, ``open``, ``mcp``), ``hookd.cli_read`` (what the daemon knows),
``hookd.cli_steer`` (a human's words to agents) and ``hookd.cli_dev`` (replay, drift, notify
test); their shared helpers in ``hookd.cli_render``, their shell completion callbacks in
``hookd.cli_complete``. The other modules' commands are imported
only when named (:data:`LAZY_COMMANDS`: a new command there needs its line), and a command
imports what it needs beyond click and the helpers inside its body or helper, so that each call
loads only its own (``tests/test_cli_startup.py``, ``bench/cli.py``).
"""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hookd import __version__
from hookd.cli_complete import HarnessOption, builders
from hookd.cli_render import (
    _client, _duration, _echo_json, _hook_client, _log_to_stderr, _out, _seg, _table, _when, json_option,
)
from hookd.untrusted import visible

if TYPE_CHECKING:
    from hookd.errors import HookdError

#: Commands defined in the other CLI modules, imported only when named (``hookd --help`` and
#: shell completion import them all), so that ``hookd --version`` loads click and the printing
#: helpers only, and ``hookd questions`` neither ``hookd.cli_steer`` nor ``hookd.cli_dev``.
#: docs/decisions.md "The CLI starts fast".
LAZY_COMMANDS = {
    "questions": "hookd.cli_read:questions", "lanes": "hookd.cli_read:lanes", "events": "hookd.cli_read:events",
    "inbox": "hookd.cli_read:inbox", "tail": "hookd.cli_read:tail",
    "send": "hookd.cli_steer:send", "answer": "hookd.cli_steer:answer", "dismiss": "hookd.cli_steer:dismiss",
    "ask": "hookd.cli_steer:ask",
    "preanswer": "hookd.cli_steer:preanswer", "watch": "hookd.cli_watch:watch",
    "run": "hookd.cli_run:run", "continue": "hookd.cli_run:continue_", "stop": "hookd.cli_run:stop",
    "attach": "hookd.cli_run:attach", "ls": "hookd.cli_run:ls",
    "doctor": "hookd.cli_doctor:doctor", "service": "hookd.cli_doctor:service",
    "replay": "hookd.cli_dev:replay", "drift": "hookd.cli_dev:drift", "notify": "hookd.cli_dev:notify",
    "hub": "hookd.cli_hub:hub",
}

#: The commands that read a hub named with ``hookd --hub URL`` (docs/fleet.md).
HUB_COMMANDS = ("lanes", "questions", "inbox", "answer", "send", "hub")


def _hookd_error() -> type[HookdError]:
    """hookd's error class, imported when an exception is being matched (not at start)."""
    from hookd.errors import HookdError

    return HookdError


#: ``ctx.meta`` key (shared by every context of one invocation): the command line asks for
#: JSON (a ``--json`` before any ``--``), read before it is parsed: a usage error comes before
#: any option is
JSON_ASKED = "hookd.json_asked"


def _json_error(ctx: click.Context, code: str, message: str) -> None:
    """The error on stdout in the API's one shape, when the command line asks for JSON."""
    if ctx.meta.get(JSON_ASKED):
        _echo_json({"error": {"code": code, "message": message}})


class _Group(click.Group):
    """The ``hookd`` group: its own commands plus :data:`LAZY_COMMANDS` (click's documented
    lazy-loading pattern), and hookd's errors as one sentence on stderr and an exit code (with
    ``--json`` on the command line, also the API's error shape on stdout: :func:`_json_error`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = LAZY_COMMANDS.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, name = where.partition(":")
        command = getattr(importlib.import_module(module), name)
        assert isinstance(command, click.Command), where
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = args[:args.index("--")] if "--" in args else args  # (the words after "--" are the agent's)
        ctx.meta[JSON_ASKED] = "--json" in given
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:  # (hookd's own options: `hookd --bogus lanes --json`)
            _json_error(ctx, "bad_request", e.format_message())
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # (click prints it and exits 2, as for any command)
            _json_error(ctx, "bad_request", e.format_message())
            raise
        except _hookd_error() as e:
            _out(f"hookd: {visible(e.message)}", err=True)
            _json_error(ctx, e.code, e.message)
            ctx.exit(e.exit_code)
        except UnicodeEncodeError as e:
            # an argument with bytes that are not UTF-8 (Python keeps them as lone surrogates):
            # text sent to the daemon must be UTF-8
            near = e.object[max(0, e.start - 20):e.end + 20] if isinstance(e.object, str) else ""
            message = f"an argument is not valid UTF-8 text (near {visible(near)!s}); give text in UTF-8"
            _out(f"hookd: {message}", err=True)
            _json_error(ctx, "bad_request", message)
            ctx.exit(2)



@click.group(cls=_Group)
@click.version_option(__version__, prog_name="hookd")
@click.option("--home", type=click.Path(path_type=Path), envvar="HOOKD_HOME",
              help="hookd's data directory [env HOOKD_HOME; default: per-user data dir].")
@click.option("--hub", metavar="URL", help="Use a fleet's hub (PostgreSQL) instead of this machine's daemon: "
              "lanes, questions, inbox, answer, send and hub (docs/fleet.md).")
@click.pass_context
def main(ctx: click.Context, home: Path | None, hub: str | None) -> None:
    """hookd: the local hook bridge between coding agents and the humans who steer them."""
    from hookd.config import Home

    ctx.obj = Home.resolve(home)
    if hub is not None:
        if ctx.invoked_subcommand is not None and ctx.invoked_subcommand not in HUB_COMMANDS:
            raise click.UsageError(f"--hub: only {', '.join(HUB_COMMANDS)} use the hub so far (not {ctx.invoked_subcommand})")
        ctx.meta["hookd.hub"] = hub



@main.command()
@click.option("--port", type=int, default=0, show_default=True,
              help="Loopback TCP port for hook clients (0: any free port).")
@click.option("--log-level", default="info", type=click.Choice(["debug", "info", "warning", "error"]))
@click.option("--notify-question-after", type=float, metavar="S",
              help="Notify about a question or permission prompt pending S seconds [config notify.question_after_s; default 60].")
@click.option("--notify-steps", metavar="S,S,...", help="Escalation offsets in seconds [config notify.steps_s; default 0,300,1800].")
@click.option("--hub", metavar="URL", help="Ship the event log to this PostgreSQL hub (postgresql://HOST_ID:PASSWORD@HOST/DB; "
              "docs/fleet.md) [env HOOKD_HUB; config hub.url; default: no hub].")
@click.pass_context
def serve(ctx: click.Context, port: int, log_level: str, notify_question_after: float | None, notify_steps: str | None,
          hub: str | None) -> None:
    """Run the daemon in the foreground (SIGTERM/SIGINT stop it). Logs go to stderr."""
    from hookd.daemon import serve as run

    _log_to_stderr(log_level, "%(asctime)s hookd %(levelname)s %(message)s")
    try:
        steps = None if notify_steps is None else [float(x) for x in notify_steps.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter("comma-separated seconds, e.g. 0,300,1800", param_hint="--notify-steps") from None
    run(ctx.obj, port=port, notify_overrides={"question_after_s": notify_question_after, "steps_s": steps}, hub=hub)



@main.command()
@click.option("--timeout", type=click.FloatRange(min=0), default=15.0, show_default=True,
              help="Seconds to wait for the daemon to exit (its open requests end first).")
@json_option("Print {pid, stopped} as JSON.")
@click.pass_context
def shutdown(ctx: click.Context, timeout: float, as_json: bool) -> None:
    """Stop this home's daemon as SIGTERM stops `hookd serve`: held hooks are let go (their
    clients post them again to the next daemon), open requests end, then it exits. A daemon of
    `hookd service install` stays stopped until the service is started again. Exit 3 when no
    daemon answers; 1 when it has not exited after --timeout."""
    import os
    import signal

    from hookd.core.procs import process_alive, process_started_at
    from hookd.daemonproc import wait_until

    pid = int(_client(ctx).get("/v1/status")["pid"])  # (told by the daemon itself, over the home's own socket)
    started_at = process_started_at(pid)  # (a pid reused once it exits is not taken for it)
    os.kill(pid, signal.SIGTERM)
    try:
        wait_until(lambda: not process_alive(pid, started_at), timeout, what=f"the daemon (pid {pid}) to exit")
    except TimeoutError:
        _out(f"hookd: the daemon (pid {pid}) has not exited {timeout:g} s after SIGTERM; a second one forces it:"
             f" kill {pid}", err=True)
        if as_json:
            _echo_json({"pid": pid, "stopped": False})
        ctx.exit(1)
    if as_json:
        _echo_json({"pid": pid, "stopped": True})
    else:
        _out(f"stopped the daemon (pid {pid})")


@main.command()
@click.argument("builder", shell_complete=builders)
@click.option("--worktree", type=click.Path(path_type=Path, file_okay=False), help="The builder's worktree.")
@click.option("--settings-file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a standalone settings file for `claude --settings PATH` instead.")
@click.option("--plugin-dir", type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
              help="Write the hooks as a Claude Code plugin in DIR (hooks/hooks.json, .claude-plugin/plugin.json) "
                   "for `claude --plugin-dir DIR` instead (no MCP server).")
@click.option("--harness", default="claude-code", show_default=True, cls=HarnessOption)
@click.option("--deadline", type=float, default=None,
              help="Hook client's hard deadline in seconds [default 5; env HOOKD_DEADLINE_MS, in milliseconds].")
@click.option("--wake-wait", type=int, default=0, show_default=True,
              help="Opt in to idle wake: seconds an async Stop hook waits for a message to the idle "
                   "agent (0: off). See docs/usage.md before enabling it for headless (-p) runs.")
@click.option("--hold", type=int, default=900, show_default=True,
              help="Seconds a PermissionRequest hook waits for a remote `hookd answer` (0: never wait). "
                   "Claude Code's prompt stays usable at the desk meanwhile; Codex's shows only once the hook "
                   "returned (hookd dismiss ID lets it go at once).")
@click.option("--mcp/--no-mcp", default=True, show_default=True,
              help="Register hookd's MCP server (ask_user_async, await_answers, check_answers) for the agent.")
@click.option("--hook-transport", type=click.Choice(["sh", "exec", "http"]), default="sh", show_default=True,
              help="How Claude Code runs each hook: sh (a shell command), exec (the client spawned directly, no "
                   "shell), http (exec, and Claude Code's own http hooks for the tool events: not spooled while "
                   "the daemon is down; the agent needs HOOKD_HOOK_TOKEN). See docs/usage.md.")
@click.option("--default-answer-after", type=int, default=None, metavar="S",
              help="Opt in: answer what waits on a human after S seconds unanswered (a question: its first "
                   "option or --default-answer; a permission prompt or a plan: deny; an elicitation: decline). "
                   "Off by default.")
@click.option("--default-answer", default=None, metavar="LABEL",
              help="The option a question gets by default, where it is one of its options.")
@click.option("--trust", is_flag=True,
              help="codex: also trust the worktree and hookd's hooks in $CODEX_HOME/config.toml (undone by "
                   "unspawn); without it spawn prints what to add.")
@json_option("Print the manifest as JSON.")
@click.pass_context
def spawn(ctx: click.Context, builder: str, worktree: Path | None, settings_file: Path | None, plugin_dir: Path | None,
          harness: str, deadline: float | None, wake_wait: int, hold: int, mcp: bool, hook_transport: str,
          default_answer_after: int | None, default_answer: str | None, trust: bool, as_json: bool) -> None:
    """Install hookd's hooks for BUILDER (idempotent; works while the daemon is down)."""
    from hookd.spawn import spawn as do_spawn

    m = do_spawn(ctx.obj, builder, worktree=worktree, settings_file=settings_file, harness=harness,
                 deadline_ms=None if deadline is None else int(deadline * 1000), wake_wait_s=wake_wait,
                 hold_s=hold, mcp=mcp, transport=hook_transport,
                 default_answer_after_s=default_answer_after, default_answer=default_answer, trust=trust,
                 plugin_dir=plugin_dir)
    off = None
    try:  # a running daemon clears a hooks_changed warning at once (hooks_restored); none: at its next check
        told = _client(ctx).post_json(f"/v1/builders/{_seg(builder)}/spawned", {}, timeout=2)
        off = ((told or {}).get("hooks_changed") or {}).get("disabled")  # (it knows where the agent's config is)
    except Exception:  # noqa: BLE001 - best effort: the daemon down, or any failure, changes nothing done
        pass
    if off is None:
        import os

        from hookd.spawn.hooksoff import hooks_off, user_config_dir

        off = hooks_off(m, user_config_dir(None, os.environ))  # (this user's: most often the agent's)
    if off is not None:  # spawn never flips a person's setting; it says why its hooks will not run
        _out(f"hookd: warning: {off['reason']}: none of the hooks just written will run; to run them: {off['fix']}",
             err=True)
    if as_json:
        _echo_json(m)
        return
    _out(f"spawned {builder}: hooks for {len(m['events'])} events in {m['settings_file']} "
         f"(hook client: {_hook_client(m.get('client'))})")
    if m.get("client_note"):
        _out(f"hookd: note: {m['client_note']}", err=True)
    if m.get("http"):
        env, token_file = m["http"]["token_env"], m["http"]["token_file"]
        _out(f"http hooks post to {m['http']['url']}: start the agent with {env}=\"$(cat {shlex.quote(token_file)})\"")
    if m.get("warning"):
        _out(f"hookd: warning: {m['warning']}", err=True)
    if m.get("plugin"):
        _out(f"Claude Code plugin in {m['plugin']['dir']}: start claude with --plugin-dir {shlex.quote(m['plugin']['dir'])}")
    rec = m.get("mcp")
    if rec and rec.get("skipped"):
        _out(f"hookd: {visible(rec['skipped'])}", err=True)
    elif rec and rec.get("standalone"):
        _out(f"MCP server config in {rec['file']}: pass --mcp-config {shlex.quote(rec['file'])} to claude")
    elif rec:
        _out(f"MCP server 'hookd' (tools mcp__hookd__*) in {rec['file']}")
    d = m.get("default_answer")
    if d:
        label = f"{visible(d['label'])} (else the first option)" if d.get("label") else "the first option"
        _out(f"default answer after {d['after_s']}s unanswered: a question gets {label}; "
             "a permission prompt or a plan is denied, an elicitation declined")
    _spawn_trust(ctx, m)
    from hookd.spawn.check import unignored_note

    if note := unignored_note(m):
        _out(f"hookd: note: {note}", err=True)


def _spawn_trust(ctx: click.Context, m: dict) -> None:
    """spawn's lines about the harness's trust step and its held prompt (Codex): what was
    written, or the steps; what its desk shows while hookd holds a permission prompt."""
    from hookd.spawn.check import held_prompt_line

    held = held_prompt_line(ctx.obj, m)
    if held:
        _out(f"hookd: note: {held}", err=True)
    _trust_lines(ctx, m)


def _untrusted(m: dict) -> str:
    """What the manifest's harness does with hooks it does not trust yet (a clause)."""
    from hookd.spawn.check import untrusted_clause

    return untrusted_clause(m)


def _trust_lines(ctx: click.Context, m: dict) -> None:
    """spawn's lines about the harness's trust step (Codex): what was written, or the steps."""
    from hookd.spawn.check import fix_command
    from hookd.spawn.trust import toml_text

    t = m.get("trust")
    if not t:
        return
    n = len(t["entries"])
    if t.get("written"):
        _out(f"{t['label']} trusts the worktree and hookd's {n - 1} hooks: {len(t['added'])} value(s) written to "
             f"{t['config_file']} (unspawn removes them)")
        return
    _out(f"hookd: {t['label']} runs these hooks only once they are trusted ({_untrusted(m)}). Either run", err=True)
    _out(f"  {fix_command(ctx.obj, m)} --trust", err=True)
    _out(f"or add to {t['config_file']}:", err=True)
    for line in toml_text(t).splitlines():
        _out(f"  {line}", err=True)
    _out("then `hookd status` shows whether they will run.", err=True)



@main.command()
@click.argument("builder", shell_complete=builders)
@click.option("--remove-worktree", is_flag=True,
              help="Also remove the git worktree `hookd run --git-worktree` made for BUILDER (git worktree remove; "
                   "its branch is kept). Refused while its agent runs.")
@json_option()
@click.pass_context
def unspawn(ctx: click.Context, builder: str, remove_worktree: bool, as_json: bool) -> None:
    """Remove exactly the hooks (and MCP server entry) `spawn` added for BUILDER."""
    from hookd.spawn import read_manifest
    from hookd.spawn import unspawn as do_unspawn

    if remove_worktree:
        _removable_worktree(ctx, builder, read_manifest(ctx.obj, builder))
    live = _live_agent(ctx, builder)
    r = do_unspawn(ctx.obj, builder)
    if remove_worktree and r.get("git_worktree"):
        from hookd.runner import git_worktree_remove

        git_worktree_remove(r["git_worktree"])
    try:  # a running daemon shows the lane as unspawned at once (builder_unspawned); none: later
        _client(ctx).post_json(f"/v1/builders/{_seg(builder)}/unspawned", {}, timeout=2)
    except Exception:  # noqa: BLE001 - best effort: the daemon down, or any failure, changes nothing done
        pass
    if as_json:
        _echo_json(r)
    else:
        where = [f for f in r.get("mcp_files") or [] if f != r["settings_file"]]
        mcp = ("; hookd's MCP server from " + ", ".join(where) if where
               else " and hookd's MCP server" if r.get("mcp_removed") else "")
        n = r["removed"]
        _out(f"unspawned {builder}: removed {n} hook {'entry' if n == 1 else 'entries'} from {r['settings_file']}{mcp}")
        if r.get("trust_removed"):
            _out(f"removed {r['trust_removed']} trust value(s) from {r['trust_config']}")
        if remove_worktree and r.get("git_worktree"):
            w = r["git_worktree"]
            _out(f"removed git worktree {w['path']} (branch {w['branch']} kept in {w['repo']})")
    if live is not None:
        sid = f" (session {live['session_id']})" if live.get("session_id") else ""
        _out(f"hookd: note: {builder}'s agent is still running{sid}: it keeps the hooks it started with until it "
             f"ends, so they still reach hookd; `hookd stop {builder}` ends it", err=True)


def _live_agent(ctx: click.Context, builder: str) -> dict[str, Any] | None:
    """What makes ``builder``'s agent live (``GET /v1/builders/B/run``' ``live``: ``pid``,
    ``session_id``), or None: not live, or no daemon to ask."""
    try:
        return _client(ctx).get(f"/v1/builders/{_seg(builder)}/run", timeout=2).get("live")
    except Exception:  # noqa: BLE001 - best effort: the daemon down changes nothing unspawn does
        return None


def _removable_worktree(ctx: click.Context, builder: str, m: dict[str, Any] | None) -> None:
    """Refuse `unspawn --remove-worktree` before anything changes: no git worktree recorded for
    ``builder`` (ConfigError), or its agent still running (Conflict; the daemon asked when it runs)."""
    from hookd.errors import Conflict, ConfigError, DaemonNotRunning

    if m is not None and not m.get("git_worktree"):
        raise ConfigError(f"{builder} has no git worktree of hookd's (only `hookd run --git-worktree` makes one)")
    try:
        view = _client(ctx).get(f"/v1/builders/{_seg(builder)}/run")
    except DaemonNotRunning:
        return
    if view.get("live"):
        raise Conflict(f"{builder}'s agent is running in that worktree: stop it first (hookd stop {builder})")


@main.command()
@json_option()
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """The daemon's state: listeners, counts, builders."""
    from hookd.errors import DaemonNotRunning

    try:
        s = _client(ctx).get("/v1/status")
    except DaemonNotRunning as e:  # what waits for it: the hooks its clients spooled meanwhile
        n = ctx.obj.spooled()
        if n:
            raise DaemonNotRunning(f"{e.message}; {n} hook payload{'s wait' if n != 1 else ' waits'} in its"
                                   " spool, ingested when it starts") from None
        raise
    if as_json:
        _echo_json(s)
        return
    _out(f"hookd {s['version']} pid {s['pid']}, up {_duration(s['uptime_s'])}, home {s['home']}")
    _out(f"socket {s['socket']}, hook port 127.0.0.1:{s['tcp_port']}")
    c = s["counts"]
    _out(f"{c.get('hook_events', '?')} hook events, {c.get('events', '?')} events, "
          f"{c.get('pending_interactions', '?')} pending, {c['spooled']} spooled")
    st = s.get("storage") or {"state": "ok"}
    if st["state"] == "ok":
        _out("storage ok")
    else:  # the daemon answers hooks 503 and their clients spool them
        _out(f"storage UNAVAILABLE since {_when(st['since'])}: {st['message']} ({st['error']}); "
             f"{st['refused']} write(s) refused, hooks are spooled"
             + ("" if st.get("final") else "; retried until it commits"))
    if st.get("read_error"):
        _out(st["read_error"])
    if (hub := s.get("hub")) is not None:  # (hookd.hub: docs/fleet.md)
        _out(f"hub {hub['url']} {hub['state']}" + (f" as host {hub['host_id']}" if hub.get("host_id") else "")
             + f", shipped through seq {hub['shipped_seq']} of {c.get('events', '?')}"
             + (f": {hub['error']}" if hub.get("error") else ""))
        if (cmds := hub.get("commands")) and (cmds["applied"] or cmds["refused"] or cmds["state"] == "down"):
            _out(f"hub commands {cmds['state']}: {cmds['applied']} applied, {cmds['refused']} refused since the start"
                 + (f": {cmds['error']}" if cmds.get("error") else ""))
        if (n := hub.get("notify")) is not None:
            _out(_fleet_line(n))
    if s.get("held"):
        _out(f"holding a PermissionRequest hook for: {visible(', '.join(s['held']))} (answer with `hookd answer ID`)")
    if s["builders"]:
        rows = [[b["builder"], b["harness"], _hook_client(b.get("client"), b.get("transport")), b["hooks_seen"], b["pending"],
                 _when(b["last_hook_at"]),
                 f"unspawned at {_when(b['unspawned_at'])}" if b.get("unspawned_at") else
                 "hooks stopped working (below)" if b.get("hooks_changed") else
                 f"hooks {b['hooks_trust']['state'].replace('_', ' ')} (below)"
                 if (b.get("hooks_trust") or {}).get("state", "trusted") != "trusted" else
                 b.get("warning") or _stopped(b.get("lane"))]
                for b in s["builders"]]
        _out(_table(rows, ["builder", "harness", "hook client", "hooks", "pending", "last hook", "note"]))
        for b in s["builders"]:  # hooks that stopped working: why, and the command that restores them
            w = b.get("hooks_changed")
            if w:
                _out(f"{b['builder']}: hooks stopped working: {w.get('reason')}")
                _out(f"{b['builder']}: to restore them: {w.get('fix')}")
        for b in s["builders"]:  # a harness that runs hooks only once trusted (Codex): will it run them?
            t = b.get("hooks_trust")
            if t:
                _out(f"{b['builder']}: hooks {t['state'].replace('_', ' ')}: {t['detail']}")
                if t.get("fix"):
                    _out(f"{b['builder']}: to trust them: {t['fix']}")
        for b in s["builders"]:  # why a hook client fell back to bash: a line of its own, beside any warning
            if b.get("client_note"):
                _out(f"{b['builder']}: hook client {_hook_client(b.get('client'))}: {visible(b['client_note'])}")



def _fleet_line(n: dict[str, Any]) -> str:
    """``hookd status``'s line on the fleet's notifications (docs/fleet.md "One notifier for
    the fleet"): who sends this host's interaction alerts."""
    if n["notify"] == "local":
        return "notifications: local (this host sends its own alerts)"
    lead = (n.get("notifier") or {}).get("role")
    who = ("this host is the fleet's notifier" if lead == "lead" else
           "the fleet's notifier sends them" if n["lead_present"] and n["link"] == "up" else
           "no fleet notifier: sent here" if n["link"] == "up" else f"link {n['link']}: sent here")
    return f"notifications: fleet ({who}; {n['by_fleet']} left to it, {n['here']} sent here)"


def _stopped(lane: dict | None) -> str:
    """``status``'s note for a builder whose lane (as last recorded) needs a human: ``failed``
    (an API error stopped the agent), ``stalled`` or ``dead``, with why; else ''."""
    if lane and lane["state"] in ("failed", "stalled", "dead"):
        return f"{lane['state']}: {lane.get('detail') or '-'}"
    return ""


@main.command("open")
@click.option("--no-browser", is_flag=True, help="Only print the link (also when CI=true or there is no DISPLAY).")
@json_option("Print {url, expires_in_s} as JSON.")
@click.pass_context
def open_page(ctx: click.Context, no_browser: bool, as_json: bool) -> None:
    """Sign in to the operator page: print (and open, when a browser is available) a link
    with a one-time code, valid 10 minutes and once; the page then keeps a session cookie."""
    from hookd.http.web import open_browser, should_open_browser

    r = _client(ctx).post_json("/v1/web/codes", {})
    opened = not no_browser and should_open_browser() and open_browser(r["url"])
    if as_json:
        _echo_json({"url": r["url"], "expires_in_s": r["expires_in_s"], "opened": opened})
        return
    _out(r["url"])
    _out(f"(one-time sign-in link, valid {r['expires_in_s'] / 60:.0f} minutes{'; opened in your browser' if opened else ''})",
         err=True)



@main.command()
@click.option("--builder", required=True, shell_complete=builders, help="The builder whose agent runs this server.")
@click.option("--log-level", default="warning", type=click.Choice(["debug", "info", "warning", "error"]))
@click.pass_context
def mcp(ctx: click.Context, builder: str, log_level: str) -> None:
    """Serve hookd's MCP tools (ask_user_async, await_answers, check_answers) over stdio for
    BUILDER's agent; `hookd spawn` registers it. Logs go to stderr only."""
    from hookd.config import check_builder_id
    from hookd.mcp_server import run as run_mcp

    _log_to_stderr(log_level, "%(asctime)s hookd-mcp %(levelname)s %(message)s")
    run_mcp(ctx.obj, check_builder_id(builder))

