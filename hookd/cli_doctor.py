"""`hookd doctor` (are each builder's hooks going to run?) and `hookd service` (the daemon as a
systemd user unit or a launchd agent): the machine's set-up, imported only when named
(:data:`hookd.cli.LAZY_COMMANDS`)."""

from __future__ import annotations

import os
from typing import Any

import click

from hookd.cli_complete import builders
from hookd.cli_render import _client, _echo_json, _out, json_option

#: The width of a check's name in `hookd doctor`'s lines.
_NAME_W = 13


@click.command()
@click.argument("builder", required=False, shell_complete=builders)
@json_option("Print {ok, checks} as JSON.")
@click.pass_context
def doctor(ctx: click.Context, builder: str | None, as_json: bool) -> None:
    """Prove that each spawned builder's hooks (or BUILDER's) will really run; print each failing check with its fix.

    Exit 1 when a check fails, 0 when none does (a warning does not fail)."""
    from hookd.config import check_builder_id
    from hookd.doctor import diagnose
    from hookd.errors import DaemonNotRunning, NotFound
    from hookd.spawn import list_manifests, read_manifest

    if builder is not None:
        m = read_manifest(ctx.obj, check_builder_id(builder))
        if m is None:
            raise NotFound(f"{builder} is not spawned (hookd spawn {builder} --worktree DIR, or hookd run {builder})")
        manifests = [m]
    else:
        manifests = list_manifests(ctx.obj)
    client = _client(ctx)
    status: dict[str, Any] | None
    try:
        status = client.get("/v1/status")
        runs = {r["builder"]: r for r in client.get("/v1/runs")}
    except DaemonNotRunning:
        status, runs = None, {}
    r = diagnose(ctx.obj, manifests, status, runs, os.environ)
    if as_json:
        _echo_json(r)
    else:
        _print(r, manifests)
    ctx.exit(0 if r["ok"] else 1)


def _print(r: dict[str, Any], manifests: list[dict[str, Any]]) -> None:
    """Each check a line (``state  name  detail``), its fix on the next one when it is not ok;
    each builder's under a heading; a last line with the outcome."""
    where = {m["builder"]: f"{m['builder']} ({m.get('harness') or 'claude-code'}, {m.get('worktree') or m.get('settings_file')})"
             for m in manifests}
    current: str | None = None
    for c in r["checks"]:
        if c["builder"] != current:
            current = c["builder"]
            _out(where.get(current, current))
        _out(f"{'  ' if current else ''}{c['state']:<4}  {c['check']:<{_NAME_W}} {c['detail']}")
        if c["fix"] and c["state"] in ("fail", "warn"):
            _out(f"{'  ' if current else ''}      {'fix:':<{_NAME_W}} {c['fix']}")
    failed = [f"{c['builder'] + ' ' if c['builder'] else ''}{c['check']}" for c in r["checks"] if c["state"] == "fail"]
    if not manifests:
        _out("no builder is spawned (hookd spawn B --worktree DIR, or hookd run B)")
    if failed:
        _out(f"{len(failed)} check(s) failed: {', '.join(failed)}")
    else:  # (every state counted: a warning or a skipped check is not a pass)
        counts = {st: sum(c["state"] == st for c in r["checks"]) for st in ("ok", "warn", "skip")}
        others = "".join(f", {n} {st}" for st, n in counts.items() if st != "ok" and n)
        _out(f"no check failed ({counts['ok']} ok{others})" if others else f"every check passed ({counts['ok']} ok)")


@click.group()
def service() -> None:
    """Run the daemon as a service: a systemd user unit (Linux) or a launchd agent (macOS), restarted when it fails."""


def _service(ctx: click.Context) -> Any:
    from hookd.service import Service

    return Service(ctx.obj)


def _status_lines(s: dict[str, Any]) -> None:
    if not s["installed"]:
        _out(f"{s['unit']}: not installed ({s['file']} does not exist; hookd service install writes it)")
        return
    pid = f", pid {s['pid']}" if s.get("pid") else ""
    _out(f"{s['unit']}: {s['state']}{pid}, {'enabled' if s['enabled'] else 'not enabled'} ({s['manager']}: {s['file']})")
    _out(f"logs: {s['logs']}")


@service.command("install")
@click.option("--print", "print_only", is_flag=True, help="Print the unit (or plist) only: write and start nothing.")
@json_option("Print the service's status as JSON.")
@click.pass_context
def service_install(ctx: click.Context, print_only: bool, as_json: bool) -> None:
    """Write the unit running `hookd serve` for this home, enable it at login and (re)start it.

    Refused (exit 2) when no user systemd (launchd) is reachable: `systemctl --user show-environment` fails."""
    svc = _service(ctx)
    if print_only:
        _out(svc.text(), nl=False)
        return
    s = svc.install()
    if as_json:
        _echo_json(s)
        return
    _out(f"{'replaced' if s['replaced'] else 'wrote'} {s['file']}; {s['unit']} enabled and (re)started")
    _status_lines(s)


@service.command("uninstall")
@json_option("Print what was removed as JSON.")
@click.pass_context
def service_uninstall(ctx: click.Context, as_json: bool) -> None:
    """Stop and disable this home's service and remove its unit (exit 1 when none is installed)."""
    r = _service(ctx).uninstall()
    if as_json:
        _echo_json(r)
        return
    _out(f"stopped and disabled {r['unit']}; removed {r['file']}")


@service.command("status")
@json_option("Print the service's status as JSON.")
@click.pass_context
def service_status(ctx: click.Context, as_json: bool) -> None:
    """This home's service as the service manager sees it (systemctl --user show); exit 1 unless it runs."""
    s = _service(ctx).status()
    if as_json:
        _echo_json(s)
    else:
        _status_lines(s)
    ctx.exit(0 if s.get("active") else 1)
