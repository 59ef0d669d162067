"""Are a builder's hooks still where `hookd spawn` wrote them? (issue 21, "hooks that stopped
working").

The settings file a spawned agent reads may be edited by anyone with write access to the
worktree: a person, a tool, the agent itself. Claude Code 2.1.332 reloads
``.claude/settings.local.json`` when it changes mid-session, so an edit that drops hookd's
entries stops every hook from the next one on (docs/harness-claude-code.md "ConfigChange").
This module compares the file with spawn's own record of what it wrote (the manifest's
``entries``: each event's groups exactly as merged), never with what the file or a hook
payload claims. Pure reads; no lock (spawn replaces the file atomically, so a read sees one
version or the other).
"""

from __future__ import annotations

import os
import shlex
from typing import Any

import msgspec

from hookd.config import Home
from hookd.spawn.client import tag
from hookd.untrusted import read_regular

#: The most of a settings file read to check it (bytes): spawn's files are a few KB; a larger
#: one is read this far, and fails to parse as JSON (reported as such).
MAX_SETTINGS_BYTES = 4 * 1024 * 1024


def check_hooks(home: Home, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """None when ``manifest``'s settings file holds every hook entry spawn wrote, as written
    (a handler's ``timeout`` raised counts as written: :func:`_works_as`); else what is wrong: ``{"settings_file", "missing": [events whose entry is gone],
    "changed": [events whose entry is there but edited], "reason": words, "fix": the command
    that writes them again}``. A manifest from before spawn recorded its ``entries`` is
    checked by its tag alone (each of its ``events`` has a handler tagged for the builder).
    Never raises for the file's state (missing, unreadable, not JSON: each a ``reason``)."""
    path = manifest.get("settings_file")
    builder = str(manifest.get("builder", ""))
    if not isinstance(path, str) or not path:
        return None
    entries = manifest.get("entries")
    events = list(entries) if isinstance(entries, dict) else [e for e in manifest.get("events") or [] if isinstance(e, str)]

    def wrong(reason: str, missing: list[str], changed: list[str]) -> dict[str, Any]:
        return {"settings_file": path, "missing": missing, "changed": changed, "reason": reason,
                "fix": fix_command(home, manifest)}

    settings, unread = read_settings(path)
    if unread is not None:
        return wrong(unread, events, [])
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    if not isinstance(hooks, dict):
        return wrong(f"{path} holds no hooks", events, [])
    marker = tag(builder)
    missing, changed = [], []
    for event in events:
        have = hooks.get(event)
        have = have if isinstance(have, list) else []
        if isinstance(entries, dict) and all(any(_works_as(g, h) for h in have) for g in entries[event]):
            continue
        if _tagged(have, marker):
            if isinstance(entries, dict):
                changed.append(event)
            continue
        missing.append(event)
    if not missing and not changed:
        return None
    parts = []
    if missing:
        parts.append(f"hookd's entries for {_events(missing)} are gone")
    if changed:
        parts.append(f"hookd's entries for {_events(changed)} were edited")
    return wrong(f"{'; '.join(parts)} in {path}", missing, changed)


def read_settings(path: str) -> tuple[Any, str | None]:
    """(the settings file at ``path`` decoded from JSON, None) or (None, why it cannot be:
    gone, unreadable, not JSON), read at most :data:`MAX_SETTINGS_BYTES`. Never raises."""
    try:
        data = read_regular(path, limit=MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return None, f"{path} is gone"
    except OSError as e:
        return None, f"{path} cannot be read ({e.strerror or type(e).__name__})"
    try:
        return msgspec.json.decode(data), None
    except msgspec.DecodeError:
        return None, f"{path} is no longer JSON: the agent reads no hook from it"


def _works_as(written: Any, group: Any) -> bool:
    """Whether ``group`` (in the file) is the matcher group spawn wrote (``written``), or that
    with a handler's ``timeout`` raised: a longer timeout cuts no hook short (a lower one may:
    edited). Everything else as written."""
    if written == group:
        return True
    if not (isinstance(written, dict) and isinstance(group, dict)) or written.keys() != group.keys():
        return False
    if any(written[k] != group[k] for k in written if k != "hooks"):
        return False
    mine, theirs = written.get("hooks"), group.get("hooks")
    if not (isinstance(mine, list) and isinstance(theirs, list)) or len(mine) != len(theirs):
        return False
    for w, h in zip(mine, theirs):
        if w == h:
            continue
        if not (isinstance(w, dict) and isinstance(h, dict)) or w.keys() != h.keys():
            return False
        if any(w[k] != h[k] for k in w if k != "timeout"):
            return False
        t0, t1 = w.get("timeout"), h.get("timeout")
        if not (isinstance(t0, (int, float)) and isinstance(t1, (int, float)) and not isinstance(t1, bool) and t1 >= t0):
            return False
    return True


def _tagged(groups: list[Any], marker: str) -> bool:
    """Whether any handler in ``groups`` carries ``marker`` (spawn's tag)."""
    for g in groups:
        if isinstance(g, str) and g.endswith(marker):
            return True
        handlers = g.get("hooks") if isinstance(g, dict) else None
        if isinstance(handlers, list) and any(
                isinstance(h, dict) and str(h.get("command", "")).endswith(marker) for h in handlers):
            return True
    return False


def _events(events: list[str]) -> str:
    return ", ".join(events) if len(events) <= 4 else f"{', '.join(events[:3])} and {len(events) - 3} more"


def fix_command(home: Home, manifest: dict[str, Any]) -> str:
    """The `hookd spawn` command that writes ``manifest``'s hooks again, with the options it
    was spawned with (its settings file, harness, hold, idle wake, MCP)."""
    m = manifest
    argv = ["hookd", "--home", os.fspath(home.root), "spawn", str(m.get("builder"))]
    mcp = m.get("mcp") or {}
    worktree, settings_file = m.get("worktree"), str(m.get("settings_file"))
    in_worktree = bool(worktree) and os.path.basename(settings_file) in ("settings.local.json", "hooks.json") and \
        os.path.dirname(os.path.dirname(settings_file)) == worktree
    if m.get("plugin"):
        argv += ["--plugin-dir", str(m["plugin"]["dir"])]
    elif not in_worktree:
        argv += ["--settings-file", settings_file]
    if worktree:
        argv += ["--worktree", str(worktree)]
    if m.get("harness") and m["harness"] != "claude-code":
        argv += ["--harness", str(m["harness"])]
    if m.get("hold_s") is not None and m["hold_s"] != 900 and m.get("harness", "claude-code") in ("claude-code", "codex"):
        argv += ["--hold", str(m["hold_s"])]
    if m.get("wake_wait_s"):
        argv += ["--wake-wait", str(m["wake_wait_s"])]
    if not mcp and m.get("harness", "claude-code") == "claude-code" and not m.get("plugin"):
        argv += ["--no-mcp"]
    return shlex.join(argv)


def held_prompt_line(home: Home, manifest: dict[str, Any]) -> str | None:
    """One sentence for a person spawning (or running) a builder whose harness hides its
    permission prompt while hookd holds it (the manifest's ``held_prompt``; Codex): how long,
    and the two ways out (`hookd dismiss`, a spawn with ``--hold 0``). None for the others."""
    note = manifest.get("held_prompt")
    if not note or not manifest.get("hold_s"):
        return None
    return (f"{note} (up to {manifest['hold_s']} s): answer it with hookd answer, or hookd dismiss ID to show it at "
            f"the desk; {fix_command(home, {**manifest, 'hold_s': 0})} leaves every prompt to the desk")


def untrusted_clause(manifest: dict[str, Any]) -> str:
    """What the manifest's harness does with hooks it does not trust yet (its
    :class:`hookd.harness.install.HookTrust`'s ``untrusted``; a clause), or "" when it has no
    trust step."""
    from hookd.spawn import INSTALLS

    install = INSTALLS.get(str(manifest.get("harness")))
    return install.trust.untrusted if install is not None and install.trust is not None else ""


def untrusted_advice(home: Home, manifest: dict[str, Any]) -> str | None:
    """One sentence for `hookd run` when the builder's hooks (``manifest``) will not run until
    trusted: what the harness does meanwhile and two commands that work as printed (`hookd run
    ... --trust`, or the spawn that writes the trust). None when trusted or no trust step."""
    t = manifest.get("trust")
    if not t or t.get("written"):
        return None
    return (f"{t['label']} runs hookd's hooks only once they are trusted ({untrusted_clause(manifest)}): "
            f"run with --trust, or {fix_command(home, manifest)} --trust")



def unignored_note(manifest: dict[str, Any]) -> str | None:
    """The note `hookd spawn` and `hookd run` print when git would commit the files spawn wrote
    into the builder's worktree (:func:`unignored_files`): which, and the line that keeps them
    out; None when there is nothing to say."""
    shown, exclude = unignored_files(manifest)
    if not (shown and exclude):
        return None
    return (f"git would commit {' and '.join(p.lstrip('/') for p in shown)} (hookd's, for this machine):"
            f" keep them out with printf '%s\\n' {' '.join(shown)} >> {shlex.quote(exclude)}")


def unignored_files(manifest: dict[str, Any]) -> tuple[list[str], str | None]:
    """The files spawn wrote into the builder's worktree (its hook file, its ``.mcp.json``)
    that git would offer to commit there (``git check-ignore`` says they are not ignored), as
    ``/``-anchored paths from the checkout's top folder (lines for git's exclude file), and
    that exclude file (``git rev-parse --git-path info/exclude``: a linked worktree's is its
    repository's). ``([], None)`` when the worktree is no git checkout, git is missing or does
    not answer within 5 s, or every such file is ignored."""
    import subprocess

    worktree = manifest.get("worktree")
    mcp = manifest.get("mcp") or {}
    files = [f for f in (manifest.get("settings_file"), None if mcp.get("standalone") else mcp.get("file"))
             if isinstance(f, str) and f]
    if not isinstance(worktree, str) or not worktree or not files:
        return [], None

    def git(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(["git", "-C", worktree, *args], input=stdin, capture_output=True, text=True,
                                  timeout=5, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None

    top = git("rev-parse", "--show-toplevel", "--git-path", "info/exclude")
    if top is None or top.returncode != 0 or len(top.stdout.splitlines()) != 2:
        return [], None  # not a git checkout (or git failed): nothing to say
    root, exclude = (os.path.realpath(os.path.join(worktree, p)) for p in top.stdout.splitlines())  # (relative: to -C)
    rel = [os.path.relpath(os.path.realpath(f), root) for f in files]
    rel = [f for f in rel if not f.startswith("..")]
    r = git("check-ignore", "--stdin", "-z", stdin="".join(f + "\0" for f in rel)) if rel else None
    if r is None or r.returncode not in (0, 1):
        return [], None
    ignored = set(r.stdout.split("\0"))
    shown = ["/" + f for f in rel if f not in ignored]
    return shown, exclude if shown else None
