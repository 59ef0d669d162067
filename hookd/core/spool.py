"""The spool: hook payloads their clients wrote to files while the daemon could not take them,
ingested oldest first, each exactly once, when the daemon starts and whenever files appear.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

from hookd.config import Home, private_dir_problem
from hookd.core.ingest import Ingest
from hookd.harness.registry import DEFAULT_HARNESS
from hookd.models import HookdError, PayloadInvalid, StorageUnavailable
from hookd.untrusted import NotRegularFile, read_regular

log = logging.getLogger("hookd")


class Spool:
    """The spools of ``home``, ingested through ``ingest``."""

    def __init__(self, home: Home, ingest: Ingest):
        self.home = home
        self.ingest = ingest
        self._lock = asyncio.Lock()  # one spool pass at a time (ingest_spool)
        self._refused: set[str] = set()  # spool entries not regular files, already logged

    async def ingest_spool(self) -> dict[str, int]:
        """Ingest every spooled payload, oldest first, each exactly once.

        Spool files are ``spool/<builder>/<usec>-<pid>-<rand>.<harness>.json`` written by
        hook clients (temp file + rename), or the same under a spool outside the home
        (:meth:`hookd.config.Home.spool_roots`) when the home's could not be written. A file is deleted only after its transaction
        committed; its name is its delivery id, so a crash between commit and delete, or a
        payload that also reached the daemon live, is not stored twice. While the database
        cannot commit (StorageUnavailable) the pass stops at the first file: it and the rest
        stay, for the next pass once storage is back (hookd.storage_health.retry_until_back).
        A file that fails for another reason stays too (logged). One pass at a time.
        Returns counts: ingested, duplicates, invalid.
        """
        async with self._lock:
            return await self._pass()

    async def _pass(self) -> dict[str, int]:
        counts = {"ingested": 0, "duplicates": 0, "invalid": 0}
        files = await asyncio.to_thread(_spool_files, self.home)
        for name, builder, f in files:
            stem = name[: -len(".json")]
            delivery_id, _, harness = stem.rpartition(".")
            if not delivery_id:
                delivery_id, harness = stem, DEFAULT_HARNESS
            try:
                # off the event loop, and never a FIFO, device or symlink someone put there
                raw = await asyncio.to_thread(read_regular, f, follow=False)
            except NotRegularFile as e:
                if e.filename not in self._refused:
                    self._refused.add(e.filename)
                    log.warning("spool entry %s; left in place (remove it)", e)
                continue
            except OSError as e:
                log.warning("cannot read spool file %s: %s", f, e)
                continue
            try:
                received = int(delivery_id.split("-", 1)[0]) / 1e6
            except ValueError:
                received = f.stat().st_mtime
            try:
                res = await self.ingest.ingest_hook(harness, builder, raw, source="spool", delivery_id=delivery_id, received_at=received)
                counts["duplicates" if res.duplicate else "ingested"] += 1
            except PayloadInvalid as e:
                counts["invalid"] += 1  # stored with its raw bytes; safe to delete
                log.warning("spooled payload %s stored as invalid: %s", f, e.message)
            except StorageUnavailable:
                break  # it and the rest stay (the store logs the outage once)
            except HookdError as e:
                log.warning("spooled payload %s left in the spool: %s", f, e.message)
                continue
            except Exception:  # a bug: never the spool watcher's end, never the file's
                log.exception("spooled payload %s left in the spool", f)
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f)
        return counts


def _spool_files(home: Home) -> list[tuple[str, str, Path]]:
    """The spools' ``(name, builder, path)`` entries named like payloads, oldest first: the
    home's ``spool/``, then those outside it (a full disk: :meth:`Home.spool_roots`), whose
    builder folders must be private directories of this user's too."""
    files: list[tuple[str, str, Path]] = []
    for root in home.spool_roots():
        if not root.is_dir():
            continue
        for bdir in root.iterdir():
            if not bdir.is_dir() or bdir.is_symlink():
                continue
            if root != home.spool_root and private_dir_problem(bdir) is not None:
                continue
            for f in bdir.iterdir():
                if f.name.startswith(".") or not f.name.endswith(".json"):
                    continue
                files.append((f.name, bdir.name, f))
    files.sort(key=lambda t: (t[0].split("-", 1)[0].rjust(20, "0"), t[0]))
    return files
