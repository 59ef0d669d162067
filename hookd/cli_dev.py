"""The CLI's developer and test commands: ``hookd replay``, ``drift`` and ``notify test``.
Registered on the group in ``hookd.cli``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hookd.cli_render import _client, _echo_json, _out, json_option
from hookd.models import ConfigError
from hookd.untrusted import visible



@click.command()
@click.argument("scenario_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--update", is_flag=True, help="Rewrite expected-events.jsonl from this run.")
@click.option("--into", "into", metavar="BUILDER",
              help="Instead: play the hooks into the running daemon as spawned BUILDER's agent (fresh ids; "
                   "a held hook, PermissionRequest or Elicitation, waits for an answer from the page or "
                   "`hookd answer` when one is asked).")
@click.pass_context
def replay(ctx: click.Context, scenario_dir: Path, update: bool, into: str | None) -> None:
    """Replay SCENARIO_DIR/hooks/*.json through a private daemon, as the hook client would,
    and compare the events with SCENARIO_DIR/expected-events.jsonl."""
    from hookd.devtools.replay import check_scenario, replay as do_replay

    if into is not None:
        from hookd.devtools.feed import feed

        def before(name: str, event: str) -> None:
            _out(f"{name}: held: waits for an answer if this asks one (the page: `hookd open`; or"
                 " `hookd questions`)", err=True)

        for step in feed(ctx.obj, scenario_dir, into, before=before):
            out = visible(step.stdout.decode(errors="replace").strip())
            _out(f"{visible(step.name)}: exit {step.returncode}" + (f", stdout {out}" if out else ""))
        return

    check_scenario(scenario_dir, golden=not update)  # before a daemon starts for nothing
    result = do_replay(scenario_dir, update=update)
    if result.diff:
        _out(result.diff, nl=False)
        _out(f"replay {scenario_dir}: MISMATCH ({result.steps} hooks, {len(result.events)} events)", err=True)
        sys.exit(1)
    verb = "updated" if update else "ok"
    _out(f"replay {scenario_dir}: {verb} ({result.steps} hooks, {len(result.events)} events)")



@click.command()
@click.argument("version_dir", required=False, type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--harness", type=click.Choice(["claude-code", "codex"]), default="claude-code", show_default=True,
              help="Whose recordings: read with that harness's adapter and transcript reader.")
@click.option("--fixtures", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where recorded versions live (the newest is used) [default: fixtures/HARNESS].")
@click.option("--no-replay", is_flag=True, help="Skip replaying the golden files.")
@json_option()
def drift(version_dir: Path | None, harness: str, fixtures: Path | None, no_replay: bool, as_json: bool) -> None:
    """Report what the newest recorded version of a harness (Claude Code, or --harness codex)
    sends that hookd does not know. Exits 1 on a parse failure or a golden mismatch."""
    from hookd.devtools.drift import drift as do_drift, newest_version_dir, render

    try:
        target = version_dir or newest_version_dir(fixtures or Path("fixtures") / harness)
    except FileNotFoundError as e:
        raise ConfigError(str(e)) from None
    rep = do_drift(target, replay_goldens=not no_replay, harness=harness)
    if as_json:
        _echo_json({"version_dir": str(rep.version_dir), "unknown_events": rep.unknown_events,
                    "unknown_fields": rep.unknown_fields, "unknown_row_types": rep.unknown_row_types,
                    "parse_failures": rep.parse_failures, "golden_mismatches": rep.golden_mismatches,
                    "failed": rep.failed})
    else:
        _out(render(rep), nl=False)
    sys.exit(1 if rep.failed else 0)



@click.group()
def notify() -> None:
    """Notifications about agents waiting on a human (HOOKD_HOME/config.toml [notify])."""



@notify.command("test")
@click.option("--channel", metavar="N", help="Only this channel: its number (1 = first [[notify.channel]]) or name.")
@click.pass_context
def notify_test(ctx: click.Context, channel: str | None) -> None:
    """Send a test notification to each configured channel (one attempt each) and report
    which worked; exit 1 if any failed. The running daemon sends it, with its own settings and
    environment (a token's token_env); with no daemon running, this command does, reading the
    tokens of the channel tested only."""
    import asyncio

    from hookd.errors import DaemonNotRunning

    try:
        results = _client(ctx).post_json("/v1/notify/test", {"channel": channel}, timeout=120)["channels"]
    except DaemonNotRunning:
        from hookd.watchers.notify_channels import test_channels
        from hookd.watchers.notify_config import load_config

        cfg = load_config(ctx.find_root().obj, only=channel)
        results = [{"name": ch.name, "type": ch.type, "error": err} for ch, err in asyncio.run(test_channels(cfg, channel))]
    for r in results:
        _out(f"{visible(r['name'])} ({r['type']}): " + ("ok" if r["error"] is None else f"failed: {visible(r['error'])}"))
    sys.exit(1 if any(r["error"] is not None for r in results) else 0)
