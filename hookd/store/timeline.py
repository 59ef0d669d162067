"""hookd's timeline in the database (:mod:`hookd.clock`): each boot's offset, in table
``clock_boots`` keyed by the kernel's boot id, read or recorded when the store opens
(:func:`attach`), and how far the timeline has run, recorded when it opens and closes
(:func:`record`: the floor of the next boot's)."""

from __future__ import annotations

import sqlite3

from hookd.clock import Clock


def attach(clock: Clock, db: sqlite3.Connection) -> None:
    """Set ``clock.offset`` to this boot's (table ``clock_boots``), recording it on the first
    start of a boot. Runs in its own transaction on ``db`` (an autocommit connection)."""
    boot = clock.boot()
    if db.execute("SELECT 1 FROM sqlite_master WHERE name='clock_boots'").fetchone() is None:
        return  # a database from before the timeline (its migration not applied): this process's anchor
    row = db.execute("SELECT offset FROM clock_boots WHERE boot_id=?", (boot,)).fetchone()
    if row is not None:
        clock.offset = row[0]
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute("SELECT offset FROM clock_boots WHERE boot_id=?", (boot,)).fetchone()
        if row is None:
            floor = db.execute("SELECT MAX(last) FROM clock_boots").fetchone()[0]
            start = max(clock.wall(), floor if floor is not None else float("-inf"))
            offset = start - clock.since_boot()
            db.execute("INSERT INTO clock_boots (boot_id, offset, last) VALUES (?, ?, ?)", (boot, offset, start))
        else:
            offset = row[0]
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    clock.offset = offset


def record(clock: Clock, db: sqlite3.Connection) -> None:
    """Record how far this boot's timeline has run (the floor of the next boot's); in the
    caller's transaction."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE name='clock_boots'").fetchone() is not None:
        db.execute("UPDATE clock_boots SET last=MAX(last, ?) WHERE boot_id=?", (clock.mono(), clock.boot()))
