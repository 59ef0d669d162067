"""Hook trust for harnesses that run a project's hooks only once their user trusts them
(Codex: :class:`hookd.harness.install.HookTrust`): `hookd spawn --trust` writes the entries
into the user's config (``$CODEX_HOME/config.toml``), `hookd unspawn` removes exactly those,
`hookd status` checks them.

The config is TOML edited with tomlkit, so the user's formatting and comments stay; it is
replaced atomically under the same per-file lock as spawn's other files
(:func:`hookd.spawn.files._locked`). The manifest's ``trust`` records what this spawn needs
(``entries``), where (``config_file``), whether it wrote them (``written``) and each value it
actually changed (``added``: the table, key, value, the previous value, how many tables it
created), so that unspawn undoes only what is still as hookd left it. A config that is not
TOML is refused and left as it was.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import tomlkit
import tomlkit.exceptions
from tomlkit.container import Container
from tomlkit.items import Table

from hookd.config import Home
from hookd.harness.install import HookInstall, TrustEntry
from hookd.models import ConfigError
from hookd.spawn.client import tag
from hookd.spawn.files import _drop_tmp, _file_key, _locked, _through, _user_write
from hookd.untrusted import read_regular

#: The most of a config file read to check it (bytes).
MAX_CONFIG_BYTES = 4 * 1024 * 1024


def plan(install: HookInstall, settings_file: str, settings: dict[str, Any], builder: str, worktree: str,
         environ: dict[str, str] | os._Environ[str]) -> dict[str, Any] | None:
    """The manifest's ``trust`` for hooks about to be written to ``settings_file`` (as
    ``settings``): ``{"config_file", "entries": [[table, key, value], ...], "written": False,
    "added": []}``; None for a harness with no trust step."""
    trust = install.trust
    if trust is None:
        return None
    entries = trust.entries(settings_file, settings, tag(builder), worktree)
    return {"label": trust.label, "config_file": trust.config_file(environ),
            "entries": [[list(e.table), e.key, e.value] for e in entries], "written": False, "added": []}


def preflight(install: HookInstall, environ: dict[str, str] | os._Environ[str]) -> None:
    """Refuse (ConfigError) before a spawn writes anything when the harness's user config,
    which :func:`write` will merge into, cannot be read or is not TOML."""
    if install.trust is not None:
        _load(_through(Path(install.trust.config_file(environ))))


def _entries(rec: dict[str, Any]) -> list[TrustEntry]:
    return [TrustEntry(table=tuple(t), key=k, value=v) for t, k, v in rec.get("entries") or []]


def _load(path: Path) -> tuple[tomlkit.TOMLDocument, bool]:
    """(the config as a tomlkit document, existed). Raises ConfigError when it is not TOML."""
    try:
        data = read_regular(path, limit=MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return tomlkit.document(), False
    except OSError as e:
        raise ConfigError(f"{path} cannot be read ({e}); left it untouched") from None
    try:
        return tomlkit.parse(data.decode("utf-8")), True
    except (tomlkit.exceptions.TOMLKitError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path} is not TOML ({e}); left it untouched — fix it, then spawn again") from None


def _node(doc: Container | Table, table: list[str], create: bool) -> tuple[Any, int]:
    """(the table at ``table`` in ``doc`` or None, how many tables were created on the way)."""
    node: Any = doc
    created = 0
    for i, part in enumerate(table):
        if part not in node:
            if not create:
                return None, created
            node[part] = tomlkit.table(is_super_table=i < len(table) - 1)
            created += 1
        node = node[part]
        if not isinstance(node, (Table, Container)):
            raise ConfigError(f"'{'.'.join(table[: i + 1])}' is not a table in the config; left it untouched")
    return node, created


def write(home: Home, rec: dict[str, Any], intent: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Write ``rec``'s entries (a manifest's ``trust``) into its config file, under that
    file's lock, atomically; returns ``rec`` with ``written`` and ``added`` (only the values it
    changed: an entry already there is left and not recorded). ``intent`` gets that record
    before the file is written (the manifest records it first: a spawn killed between the two
    leaves values :func:`undo` finds absent, and skips). Raises ConfigError (nothing written)
    for a config that is not TOML or has a non-table where a table goes."""
    path = Path(rec["config_file"])
    with _locked(home, [_file_key(path)]):
        io = _through(path)
        _drop_tmp(io)
        doc, existed = _load(io)
        original = tomlkit.dumps(doc) if existed else None
        added: list[dict[str, Any]] = []
        for e in _entries(rec):
            node, created = _node(doc, list(e.table), create=True)
            previous = node.get(e.key)
            previous = previous.unwrap() if hasattr(previous, "unwrap") else previous
            if previous == e.value:
                continue
            node[e.key] = e.value
            added.append({"table": list(e.table), "key": e.key, "value": e.value, "previous": previous,
                          "created": created})
        # the config as it was: unspawn puts these bytes back when nothing else changed meanwhile
        out = {**rec, "written": True, "added": added, "created_file": not existed if added else False,
               "original": original if added else None}
        intent(out)
        if added:
            mode = io.stat().st_mode & 0o777 if existed else 0o600
            _user_write(io, tomlkit.dumps(doc).encode("utf-8"), mode=mode)
    return out


def undo(home: Home, rec: dict[str, Any] | None) -> int:
    """Remove from ``rec``'s config what :func:`write` added and is still as it left it (a
    previous value put back; tables it created dropped when left empty; the file removed when
    hookd created it and it is left empty). Returns how many values it took back. A config
    gone or no longer TOML is left alone (0)."""
    added = (rec or {}).get("added") or []
    if not added:
        return 0
    assert rec is not None
    path = Path(rec["config_file"])
    with _locked(home, [_file_key(path)]):
        try:
            io = _through(path)
            _drop_tmp(io)
            doc, existed = _load(io)
        except ConfigError:
            return 0
        if not existed:
            return 0
        undone = 0
        for a in reversed(added):
            node, _ = _node(doc, a["table"], create=False)
            if node is None or node.get(a["key"]) != a["value"]:
                continue  # changed since: the user's now
            undone += 1
            if a.get("previous") is not None:
                node[a["key"]] = a["previous"]
                continue
            del node[a["key"]]
            for depth in range(len(a["table"]), len(a["table"]) - int(a.get("created") or 0), -1):
                parent, _ = _node(doc, a["table"][: depth - 1], create=False)
                if parent is None or len(parent[a["table"][depth - 1]]) != 0:
                    break
                del parent[a["table"][depth - 1]]
        if undone:
            text = tomlkit.dumps(doc)
            original = rec.get("original")
            if original is not None and _same(original, text):
                text = original  # the user's bytes, blank lines and all
            if rec.get("created_file") and not doc.body and io == path:
                path.unlink()
            else:
                _user_write(io, text.encode("utf-8"), mode=io.stat().st_mode & 0o777)
        return undone


def _same(a: str, b: str) -> bool:
    """Do two TOML texts hold the same values?"""
    try:
        return tomllib.loads(a) == tomllib.loads(b)
    except tomllib.TOMLDecodeError:
        return False


def toml_text(rec: dict[str, Any]) -> str:
    """``rec``'s entries as the TOML a person adds to the config by hand."""
    doc = tomlkit.document()
    for e in _entries(rec):
        node, _ = _node(doc, list(e.table), create=True)
        node[e.key] = e.value
    return tomlkit.dumps(doc)


def check(manifest: dict[str, Any], install: HookInstall | None) -> dict[str, Any] | None:
    """Whether the harness will run ``manifest``'s hooks, from the files as they are now (the
    hook file, the user's config; no harness process): ``{"state", "detail", "config_file"}``
    (state ``trusted``, ``untrusted``, ``modified``, ``project_not_trusted``, or ``unknown``
    when a file cannot be read); None for a harness with no trust step. Never raises."""
    rec = manifest.get("trust")
    if install is None or install.trust is None or not isinstance(rec, dict):
        return None
    config_file = str(rec.get("config_file"))
    out = {"config_file": config_file}
    try:
        settings = msgspec.json.decode(read_regular(str(manifest["settings_file"]), limit=MAX_CONFIG_BYTES))
        entries = install.trust.entries(str(manifest["settings_file"]), settings if isinstance(settings, dict) else {},
                                        tag(str(manifest["builder"])), str(manifest.get("worktree")))
    except (OSError, msgspec.DecodeError, KeyError) as e:
        return {**out, "state": "unknown", "detail": f"the hook file cannot be read ({type(e).__name__})"}
    try:
        config = tomllib.loads(read_regular(config_file, limit=MAX_CONFIG_BYTES).decode("utf-8"))
    except FileNotFoundError:
        config = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        return {**out, "state": "unknown", "detail": f"{config_file} cannot be read as TOML ({type(e).__name__})"}
    state, detail = install.trust.state(entries, config)
    return {**out, "state": state, "detail": detail}


def fix_steps(manifest: dict[str, Any], fix_command: str) -> str:
    """What a person does to make the harness run ``manifest``'s hooks: the spawn command
    with ``--trust``, or the entries added to the config by hand."""
    rec = manifest.get("trust") or {}
    return f"run `{fix_command} --trust`, or add to {rec.get('config_file')}:\n{toml_text(rec)}"

