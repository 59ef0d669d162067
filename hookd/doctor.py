"""`hookd doctor`: proves, for each spawned builder, that its hooks will really run (issue 23,
item 5), from the files as they are now and what the daemon recorded, and says how to fix each
check that fails.

A check is ``{"builder": B or None (the machine's), "check": name, "state", "detail": words,
"fix": a command or steps, None when nothing is to be done}``; ``state`` is ``ok``, ``fail``
(the hooks will not run, or hookd cannot tell them from the agent: `hookd doctor` exits 1),
``warn`` (something a person meets at the desk: it does not stop the hooks) or ``skip`` (not
checkable now: no session yet, the daemon down, the program not found).

The machine's checks: ``daemon`` (running, and the same hookd as this CLI), ``tmux`` (`hookd
run`'s interactive agents). Each builder's, in order: ``settings`` (the hook file parses),
``entries`` (hookd's entries present and unedited: :func:`hookd.spawn.check.check_hooks`, the
same check as the daemon's ``hooks_changed``), ``hooks_on`` (Claude Code: no settings file it
reads for the project turns every hook off with ``disableAllHooks``:
:func:`hookd.spawn.hooksoff.hooks_off`, also the daemon's), ``client`` (each program the entries run is
executable; the home's hook client is this hookd's), ``version`` (the harness program's
``--version`` against :data:`hookd.harness.registry.KNOWN_VERSIONS`), ``trust`` (a harness
that runs hooks only once trusted: :func:`hookd.spawn.trust.check`, as `hookd status`'s
``hooks_trust``), ``folder_trust`` (Claude Code's trust dialog for the worktree),
``transcripts`` (the newest session's transcript folder readable), ``armed`` (a hook came from
the live session since it started). Reads files and runs the harness's ``--version``; writes
nothing.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hookd import __version__
from hookd.config import Home
from hookd.errors import ConfigError
from hookd.harness.registry import ADAPTERS, KNOWN_VERSIONS
from hookd.spawn import INSTALLS
from hookd.spawn.check import check_hooks, fix_command, read_settings
from hookd.spawn.client import c_build_path, client_argv, client_text
from hookd.spawn.files import tagged_builders
from hookd.spawn.hooksoff import KEY, hooks_off, settings_layers, user_config_dir
from hookd.spawn.trust import check as check_trust
from hookd.untrusted import read_regular

#: The states of a check, and the ones that make `hookd doctor` exit 1.
STATES = ("ok", "fail", "warn", "skip")
FAILING = frozenset({"fail"})
#: How long the harness program's ``--version`` may take (seconds).
VERSION_TIMEOUT_S = 20.0
_VERSION_RE = re.compile(r"\d+\.\d+\.\d+")


def _check(builder: str | None, name: str, state: str, detail: str, fix: str | None = None) -> dict[str, Any]:
    return {"builder": builder, "check": name, "state": state, "detail": detail, "fix": fix}


def machine_checks(home: Home, status: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The machine's checks: ``daemon`` (``status``: the daemon's ``GET /v1/status``, None when
    it is not running) and ``tmux``."""
    start = f"hookd service install, or in a terminal: hookd --home {shlex.quote(os.fspath(home.root))} serve"
    if status is None:
        out = [_check(None, "daemon", "fail", f"not running for {home.root}: hooks are spooled, nothing answers them",
                      start)]
    elif status.get("version") != __version__:
        out = [_check(None, "daemon", "fail",
                      f"runs hookd {status.get('version')}, this CLI is hookd {__version__}: the daemon predates the "
                      "install", "restart the daemon (hookd service install restarts the service)")]
    else:
        out = [_check(None, "daemon", "ok", f"running: hookd {__version__}, as this CLI")]
    tmux = shutil.which("tmux")
    if tmux is None:
        out.append(_check(None, "tmux", "warn", "not on PATH: hookd run starts interactive agents in tmux",
                          "install tmux (apt-get install tmux; brew install tmux), or use hookd run --headless"))
    else:
        out.append(_check(None, "tmux", "ok", f"{tmux} (hookd run's interactive agents)"))
    return out


def builder_checks(home: Home, manifest: dict[str, Any], status: dict[str, Any] | None,
                   runs: Mapping[str, dict[str, Any]], environ: Mapping[str, str],
                   asked: dict[str, tuple[str | None, str]] | None = None) -> list[dict[str, Any]]:
    """Every check of one spawned builder (``manifest``: its spawn manifest; ``status``: the
    daemon's ``GET /v1/status``, None when it is not running; ``runs``: builder -> its newest
    run, ``GET /v1/runs``; ``environ``: where the harness program and its config are found;
    ``asked``: :func:`version_check`'s)."""
    b, harness = str(manifest["builder"]), str(manifest.get("harness") or "claude-code")
    fix = fix_command(home, manifest)
    path = str(manifest.get("settings_file"))
    out: list[dict[str, Any]] = []
    settings, unread = read_settings(path)
    if unread is not None:
        out.append(_check(b, "settings", "fail", unread, fix))
        out.append(_check(b, "entries", "skip", "the settings file does not parse"))
    else:
        out.append(_check(b, "settings", "ok", f"{path} parses"))
        wrong = check_hooks(home, manifest)
        others = [o for o in tagged_builders(settings) if o != b] if isinstance(settings, dict) else []
        if wrong is not None:
            out.append(_check(b, "entries", "fail", wrong["reason"], wrong["fix"]))
        elif others:  # (spawned before spawn refused this: docs/decisions.md "One builder per hook file")
            out.append(_check(b, "entries", "fail", f"{path} also holds the hooks of builder {others[0]}: every hook of "
                              f"the agent reaches hookd for both, and messages to either reach it",
                              f"hookd unspawn {others[0]}, and give it a worktree of its own"))
        else:
            out.append(_check(b, "entries", "ok",
                              f"hookd's entries for {len(manifest.get('events') or [])} events, as spawn wrote them"))
    mine = next((s for s in (status or {}).get("builders", ()) if s.get("builder") == b), None)
    if (on := hooks_on_check(manifest, mine, environ)) is not None:
        out.append(on)
    out.append(client_check(home, manifest, fix))
    out.append(version_check(b, harness, environ, asked, runs.get(b)))
    t = check_trust(manifest, INSTALLS.get(harness))
    if t is not None:
        out.append(_check(b, "trust", "ok", t["detail"]) if t["state"] == "trusted" else
                   _check(b, "trust", "fail", f"{t['state'].replace('_', ' ')}: {t['detail']}", f"{fix} --trust"))
    if harness == "claude-code" and manifest.get("worktree"):
        out.append(folder_trust_check(b, str(manifest["worktree"]), environ, bool((mine or {}).get("hooks_seen"))))
    out.extend(session_checks(b, mine, status is not None, runs.get(b)))
    return out


def hooks_on_check(manifest: dict[str, Any], mine: dict[str, Any] | None,
                   environ: Mapping[str, str]) -> dict[str, Any] | None:
    """``hooks_on`` (Claude Code): ``fail`` when a settings file it reads for the builder
    (``manifest``) turns every hook off (:func:`hookd.spawn.hooksoff.hooks_off`; the user's
    settings are found from the newest session's transcript in ``mine``, its builder of
    ``GET /v1/status``, else from ``environ``), with the fix; None for a harness or a plugin
    builder the setting does not concern."""
    layers = settings_layers(manifest, Path())
    if not layers:
        return None
    sessions = sorted((mine or {}).get("sessions") or [], key=_active_at)
    newest = next((s.get("transcript_path") for s in reversed(sessions) if s.get("transcript_path")), None)
    config_dir = user_config_dir(newest, environ)
    b = str(manifest["builder"])
    off = hooks_off(manifest, config_dir)
    if off is not None:
        return _check(b, "hooks_on", "fail", off["reason"], off["fix"])
    scopes = [{"flag": "--settings"}.get(scope, scope) for scope, _ in layers]
    scopes_words = f"{', '.join(scopes[:-1])} or {scopes[-1]}" if len(scopes) > 1 else scopes[0]
    return _check(b, "hooks_on", "ok", f"no {KEY} in the {scopes_words} settings (the user's: "
                  f"{config_dir / 'settings.json'})")


def _programs(manifest: dict[str, Any]) -> list[str]:
    """The files the builder's hook entries run: each exec form's ``command`` and bash
    script, each shell form's exec'd program (and the bash client's script)."""
    seen: list[str] = []
    for groups in (manifest.get("entries") or {}).values():
        for g in groups if isinstance(groups, list) else ():
            handlers = g.get("hooks") if isinstance(g, dict) else [{"command": g}]
            for h in handlers if isinstance(handlers, list) else ():
                if not isinstance(h, dict) or h.get("type", "command") != "command" or not h.get("command"):
                    continue
                if isinstance(h.get("args"), list):
                    argv = [str(h["command"]), *map(str, h["args"])]
                    files = [argv[0], *(a for a in argv[1:] if a.endswith("/hook-client"))]
                else:
                    try:
                        argv = client_argv(str(h["command"]))
                    except ValueError:
                        continue
                    files = [argv[0], *(a for a in argv[1:3] if a.endswith("/hook-client"))]
                seen.extend(f for f in files if f not in seen)
    return seen


def client_check(home: Home, manifest: dict[str, Any], fix: str) -> dict[str, Any]:
    """``client``: each program the entries run is there and executable (the bash client's
    script readable), and the home's client is this hookd's (the bash script as this hookd
    writes it; the compiled one, when this hookd's build is in the cache, the same bytes)."""
    b = str(manifest["builder"])
    for f in _programs(manifest):
        script = f.endswith("/hook-client")
        if not os.access(f, os.R_OK if script else os.X_OK):
            return _check(b, "client", "fail", f"{f} is {'missing' if not os.path.exists(f) else 'not executable'}: "
                          "every hook is a silent no-op", fix)
    kind = manifest.get("client") or "bash"
    try:
        if read_regular(home.client_script, limit=1 << 20).decode("utf-8", "replace") != client_text(home):
            return _check(b, "client", "fail", f"{home.client_script} was written by another hookd than this "
                          f"{__version__}", fix)
    except OSError:
        if kind == "bash":
            return _check(b, "client", "fail", f"{home.client_script} is missing: every hook is a silent no-op", fix)
    if kind == "c":
        build = c_build_path()
        try:
            if build is not None and build.exists() and build.read_bytes() != home.c_client.read_bytes():
                return _check(b, "client", "fail", f"{home.c_client} was built from another hookd's client", fix)
        except OSError:
            return _check(b, "client", "fail", f"{home.c_client} cannot be read", fix)
    return _check(b, "client", "ok", f"the {'compiled' if kind == 'c' else 'bash'} hook client, this hookd's")


def harness_program(harness: str, environ: Mapping[str, str]) -> tuple[str | None, str | None, str]:
    """(the harness's program found, the variable that names it, or None, words): the
    program of the adapter's :class:`~hookd.harness.launch.Launcher` (its variable, else on
    ``PATH``); None when hookd knows no program for ``harness`` or it is not found."""
    from hookd.runner import find_program

    adapter = ADAPTERS.get(harness)
    launcher = adapter.launchers.get(harness) if adapter is not None else None
    if launcher is None:
        return None, None, f"not found: hookd knows no {harness} program (it starts no {harness} agent)"
    try:
        return find_program(launcher, environ), launcher.program_env, ""
    except ConfigError as e:
        return None, launcher.program_env, f"not found: {e.message}"


def _program_version(program: str, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """(the first ``N.N.N`` ``program --version`` prints, or None, words when there is none)."""
    try:
        r = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                           stdin=subprocess.DEVNULL, env=dict(environ), check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{program} --version failed: {e}"
    found = _VERSION_RE.search(r.stdout or "")
    return (found.group(), "") if found else (None, f"{program} --version printed no version (exit {r.returncode})")


def version_check(b: str, harness: str, environ: Mapping[str, str],
                  asked: dict[str, tuple[str | None, str]] | None = None,
                  run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``version``: the harness program's ``--version`` against the version its adapter was
    checked against; ``skip`` when the program is not found or hookd pins no version.
    asked: program -> its answer, shared by the builders of one run (each program asked once).
    run: the builder's newest run (``GET /v1/runs``): the program it started (its ``argv[0]``,
    still an executable file, for this harness) is the one asked, not the one ``environ``
    finds (`hookd run` may have had ``HOOKD_CLAUDE_BIN`` set where this CLI does not)."""
    known = KNOWN_VERSIONS.get(harness)
    if known is None:
        return _check(b, "version", "skip", f"hookd pins no version of {harness}")
    program, env_name, why = harness_program(harness, environ)
    started = _run_program(run, harness)
    if started is not None:
        program = started
    if program is None:
        return _check(b, "version", "skip", why)
    asked = {} if asked is None else asked
    if program not in asked:
        asked[program] = _program_version(program, environ)
    version, failed = asked[program]
    if version is None:
        return _check(b, "version", "fail", failed, f"check {program}")
    started_words = " (the program its newest run started)" if started is not None else ""
    if version != known:
        return _check(b, "version", "fail", f"{program}{started_words} is {harness} {version}; hookd's adapter knows {known}",
                      f"install {harness} {known}" + (f", or set {env_name} to a {known} program" if env_name else ""))
    return _check(b, "version", "ok", f"{program}{started_words} is {harness} {known}, the version hookd knows")


def _run_program(run: Mapping[str, Any] | None, harness: str) -> str | None:
    """The program ``run`` (a run of ``GET /v1/runs``) started for ``harness``, when it is still
    an executable file; else None."""
    argv = (run or {}).get("argv")
    if not run or run.get("harness") != harness or not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
        return None
    return argv[0] if os.path.isfile(argv[0]) and os.access(argv[0], os.X_OK) else None


def claude_config_file(environ: Mapping[str, str]) -> Path:
    """Claude Code's user config holding its folder trust: ``$CLAUDE_CONFIG_DIR/.claude.json``,
    else ``~/.claude.json``."""
    d = environ.get("CLAUDE_CONFIG_DIR")
    return Path(d) / ".claude.json" if d else Path(environ.get("HOME") or os.path.expanduser("~")) / ".claude.json"


def folder_trust_check(b: str, worktree: str, environ: Mapping[str, str], hooks_arrived: bool = False) -> dict[str, Any]:
    """``folder_trust`` (Claude Code): whether its trust dialog was accepted for ``worktree``
    or a folder above it (``projects[folder].hasTrustDialogAccepted`` in its config); ``warn``
    otherwise: a first start there shows the dialog, and runs no hook until it is accepted.
    ``hooks_arrived`` (the daemon has hooks of ``b``): ``ok`` then, the builder ran where no
    dialog is shown (``claude -p``); the detail says an interactive start would still ask."""
    import json

    config = claude_config_file(environ)
    try:
        projects = json.loads(read_regular(config, limit=64 << 20)).get("projects") or {}
    except FileNotFoundError:
        projects = {}
    except (OSError, ValueError, AttributeError) as e:
        return _check(b, "folder_trust", "skip", f"{config} cannot be read ({type(e).__name__})")
    folder = Path(os.path.realpath(worktree))
    for p in (folder, *folder.parents):
        entry = projects.get(os.fspath(p)) if isinstance(projects, dict) else None
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return _check(b, "folder_trust", "ok", f"Claude Code trusts {p}" + ("" if p == folder else f" (above {folder})"))
    if hooks_arrived:
        return _check(b, "folder_trust", "ok", f"{b}'s hooks arrived, so no trust dialog stopped them (claude -p shows "
                      f"none; {config} records no trust of {folder}: an interactive claude with this HOME would ask)")
    return _check(b, "folder_trust", "warn",
                  f"Claude Code has not been trusted in {folder}: its first start there asks (a trust dialog) and "
                  "runs no hook until someone accepts", f"hookd attach {b} after hookd run and accept it, or start "
                  f"claude in {folder} once")


def session_checks(b: str, mine: dict[str, Any] | None, daemon_up: bool, run: dict[str, Any] | None
                   ) -> list[dict[str, Any]]:
    """``transcripts`` and ``armed`` from the daemon's record of ``b`` (``mine``: its builder of
    ``GET /v1/status``; ``run``: its newest run of ``GET /v1/runs``, None when hookd never
    started it)."""
    if not daemon_up:
        return [_check(b, "transcripts", "skip", "needs the daemon"), _check(b, "armed", "skip", "needs the daemon")]
    # the session last active: a resumed one (`hookd continue`) keeps the start of its first run
    sessions = sorted((mine or {}).get("sessions") or [], key=_active_at)
    newest = sessions[-1] if sessions else None
    return [_transcripts(b, newest), _armed(b, newest, run)]


def _active_at(s: dict[str, Any]) -> float:
    """When a session of ``GET /v1/status`` last showed life: its start or its newest hook (UNIX s)."""
    return max(s.get("started_at") or 0, s.get("last_hook_at") or 0)


def _transcripts(b: str, s: dict[str, Any] | None) -> dict[str, Any]:
    path = (s or {}).get("transcript_path")
    if not path:
        return _check(b, "transcripts", "skip", "no session with a transcript yet")
    folder = os.path.dirname(path)
    if not os.path.exists(folder):
        # no access to give: the agent wrote it where this machine has no such folder
        return _check(b, "transcripts", "warn", f"{folder} does not exist here: hookd cannot read the transcript "
                      "(no adoption proven from it, no fallback)", "run the agent on this machine as this user, with "
                      "its own HOME (a session of another machine, container or HOME, or a replayed one, has none here)")
    if not os.access(folder, os.R_OK | os.X_OK):
        return _check(b, "transcripts", "fail", f"{folder} cannot be read: hookd cannot read the transcript (no "
                      "adoption proven, no fallback)", f"give this user read access to {folder}")
    if os.path.exists(path) and not os.access(path, os.R_OK):
        return _check(b, "transcripts", "fail", f"{path} cannot be read", f"give this user read access to {path}")
    return _check(b, "transcripts", "ok", f"{folder} readable")


def _armed(b: str, s: dict[str, Any] | None, run: dict[str, Any] | None) -> dict[str, Any]:
    restart = f"restart the agent: hookd stop {b} && hookd continue {b} (or /hooks in Claude Code, or start it again)"
    if run is not None and run.get("alive") and (s is None or _active_at(s) < (run.get("started_at") or 0)):
        return _check(b, "armed", "fail", f"the agent hookd started (pid {run.get('pid')}) has sent no hook yet",
                      f"wait for its first hook, or look: hookd attach {b}")
    if s is None:
        return _check(b, "armed", "skip", "no session yet")
    if s.get("ended_at") is not None:
        return _check(b, "armed", "skip", f"no live session (the newest, {s['session_id']}, ended)")
    if s.get("last_hook_at") is None:
        return _check(b, "armed", "fail", f"session {s['session_id']} sent no hook since it started (known from its "
                      "transcript only): it started before its hooks were written", restart)
    return _check(b, "armed", "ok", f"session {s['session_id']} sent hooks")


def diagnose(home: Home, manifests: list[dict[str, Any]], status: dict[str, Any] | None,
             runs: Mapping[str, dict[str, Any]], environ: Mapping[str, str]) -> dict[str, Any]:
    """`hookd doctor --json`: ``{"ok": no check failed, "checks": [check, ...]}``, the
    machine's checks first, then each builder's (``manifests``) in order (``status``,
    ``runs``: as :func:`builder_checks` takes them)."""
    checks = machine_checks(home, status)
    asked: dict[str, tuple[str | None, str]] = {}
    for m in manifests:
        checks.extend(builder_checks(home, m, status, runs, environ, asked))
    return {"ok": not any(c["state"] in FAILING for c in checks), "checks": checks}
