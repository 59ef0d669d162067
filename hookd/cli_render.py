"""What the CLI's commands share: printing for a human (every line through
:func:`hookd.untrusted.visible`: ``_out``, ``_table``, ``_when``; logs by
``_log_to_stderr``), exact JSON (``_echo_json``), URL path segments (``_seg``) and the
daemon's client (``_client``). The names are underscored: they belong to the CLI's modules
(``hookd.cli`` and ``hookd.cli_*``), not to hookd's API.
"""

from __future__ import annotations

import datetime as dt
import sys
import urllib.parse
from typing import Any

import click

from hookd.untrusted import json_escape_visible, visible

# msgspec, tabulate and logging are imported by the helpers that use them: a command that
# prints no table does not pay for tabulate (docs/decisions.md "The CLI starts fast").



def _out(text: Any, err: bool = False, nl: bool = True) -> None:
    """Print text for a human: each line's control and bidi characters escaped (the line
    breaks of ``text`` itself kept)."""
    click.echo("\n".join(visible(line) for line in str(text).split("\n")), err=err, nl=nl)



def _seg(value: str) -> str:
    """``value`` as one URL path segment (an id with ``/``, ``?`` or control characters is
    sent as it is, and refused by the daemon as unknown, never mangled into another path)."""
    return urllib.parse.quote(value, safe="")



def _table(rows: list[list[Any]], headers: list[str]) -> str:
    """tabulate's plain table, every text cell shown with :func:`visible` (one line per row)."""
    from tabulate import tabulate

    return tabulate([[visible(c) if isinstance(c, str) else c for c in r] for r in rows], headers=headers)



def _log_to_stderr(level: str, fmt: str) -> None:
    """Log to stderr at ``level``, each message shown with :func:`visible`."""
    import logging

    class _VisibleFormatter(logging.Formatter):
        """Log lines whose message (not the traceback) is shown with :func:`visible`."""

        def formatMessage(self, record: logging.LogRecord) -> str:
            record.message = visible(record.message)
            return super().formatMessage(record)

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter(fmt))
    logging.basicConfig(level=level.upper(), handlers=[handler])



def _echo_json(obj: Any) -> None:
    """JSON, exact: the characters JSON leaves raw that a terminal may act on (DEL, C1, bidi)
    are written as ``\\uXXXX`` escapes, which decode to the same text."""
    import msgspec

    click.echo(json_escape_visible(msgspec.json.encode(obj).decode()))



def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")



def _client(ctx: click.Context) -> Any:
    from hookd.client import Client

    return Client(ctx.obj)
