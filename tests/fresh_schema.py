"""A fresh home's database made from a copy of the migrated schema, for the tests' daemons.

Every test that starts a daemon or an in-process core on a new home ran all of
:data:`hookd.store.MIGRATIONS` (about 27 ms of CPU on the 2-core machine of docs/testing.md,
some 600 times a run). :func:`install` makes :meth:`hookd.store.Store.open` of this process, and
of the daemons forked from it (tests/forkserve.py), copy an image of a database that
:func:`hookd.store.migrations.migrate` migrated once (SQLite's backup API: the same pages,
the ``migrations`` table included) into a database that has no table yet, and run the real
``migrate`` on any other: an existing database, and anything a migration test prepared, is
migrated as a user's is. A daemon started as a new interpreter (the ``exec_daemon`` and e2e
modules, ``HOOKD_TEST_DAEMON=exec``) runs the real ``migrate`` from the start.
``tests/test_store_migrations.py::test_a_fresh_schema_copy_is_what_migrate_makes`` proves the
copy holds what ``migrate`` makes.
"""

from __future__ import annotations

import sqlite3
import threading

import pytest

from hookd.store import migrations, writer
from hookd.store.migrations import migrate

_lock = threading.Lock()
#: the migrations' names and the image migrate made of them
_image: tuple[tuple[str, ...], bytes] | None = None


def _names() -> tuple[str, ...]:
    return tuple(name for name, _ in migrations.MIGRATIONS)


def image() -> bytes:
    """The serialized database :func:`migrate` makes from nothing (made once per process)."""
    global _image
    with _lock:
        if _image is None:
            db = sqlite3.connect(":memory:", isolation_level=None)
            migrate(db)
            _image = (_names(), db.serialize())
            db.close()
        return _image[1]


def migrate_fresh(db: sqlite3.Connection) -> None:
    """:func:`migrate`, or the migrated image copied in when ``db`` has no table yet (and
    :data:`hookd.store.MIGRATIONS` is still the list the image was made of: a migration test
    may shorten it)."""
    fresh = not db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if not fresh or _image is None or _image[0] != _names():
        migrate(db)
        return
    src = sqlite3.connect(":memory:", isolation_level=None)
    try:
        src.deserialize(image())
        src.backup(db)
    finally:
        src.close()


def install(mp: pytest.MonkeyPatch) -> None:
    """Use :func:`migrate_fresh` in :meth:`hookd.store.Store.open` (until ``mp`` is undone)."""
    image()
    mp.setattr(writer, "migrate", migrate_fresh)
