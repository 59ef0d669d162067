"""Shell completion of the values hookd's arguments take, for click's own completion
(``eval "$(_HOOKD_COMPLETE=bash_source hookd)"``; docs/usage.md "Shell completion"): click
completes commands and options itself; these ``shell_complete=`` callbacks add

- :func:`builders`: builder ids, from the spawn manifests in the home
  (``Home.builders_dir/*.json``), no daemon needed;
- :func:`pending_interactions`: the ids of pending interactions, for ``hookd answer``, from the
  daemon over its socket;
- :func:`queued_messages`: the ids of queued messages, for ``hookd inbox cancel``, likewise;
- :func:`spawnable_harnesses`: the harness names ``hookd spawn --harness`` takes, from the
  adapters' ``hook_installs``; and :class:`HarnessOption`, that option, whose help lists them
  (built when the help is shown, so a CLI start does not import the adapters).

Each returns a list of ``click.shell_completion.CompletionItem`` (value, and help for the
shells that show one: zsh, fish), those starting with what was typed, and never raises: an
exception in a completion callback would print a traceback into the user's command line.
The daemon down (or not answering within :data:`TIMEOUT_S`) is no candidates at all.

Imported by the modules that define the commands (``hookd.cli``, ``hookd.cli_read``,
``hookd.cli_steer``): what it imports at the top stays what they import anyway (click,
hookd.untrusted); the rest only when a completion runs.

The home is the one the command line names (``--home`` before the command, or
``HOOKD_HOME``): during completion click parses the words typed but runs no command, so
``ctx.obj`` is not set.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

from hookd.untrusted import visible

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from hookd.config import Home

#: Seconds a completion waits for the daemon's answer before offering nothing.
TIMEOUT_S = 1.0


def _home(ctx: click.Context) -> Home:
    """The home named on the command line being completed (``--home``, ``HOOKD_HOME``, the
    default)."""
    from hookd.config import Home

    return Home.resolve(ctx.find_root().params.get("home"))


def _items(pairs: Iterable[tuple[str, str | None]], incomplete: str) -> list[CompletionItem]:
    """CompletionItems of (value, help) pairs whose value starts with ``incomplete``; the help
    through :func:`visible` (it may quote an agent's words, shown by zsh and fish)."""
    from click.shell_completion import CompletionItem  # here: only a completion loads it

    return [CompletionItem(v, help=None if h is None else visible(h)) for v, h in pairs if v.startswith(incomplete)]


def _quiet(find: Callable[[click.Context], Iterable[tuple[str, str | None]]]
           ) -> Callable[[click.Context, click.Parameter, str], list[CompletionItem]]:
    """A ``shell_complete`` callback of ``find`` (the (value, help) pairs for a context) that
    offers nothing instead of raising, whatever goes wrong."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        try:
            return _items(find(ctx), incomplete)
        except Exception:  # noqa: BLE001 - a completion never shows an error: it offers nothing
            return []

    complete.__name__ = complete.__qualname__ = find.__name__
    complete.__doc__ = find.__doc__
    return complete


def _builder_ids(ctx: click.Context) -> list[tuple[str, str | None]]:
    """Builder ids, completed from the home's spawn manifests (``builders/<id>.json``, by
    file name; no daemon needed), sorted."""
    from hookd.config import BUILDER_ID_RE

    with os.scandir(_home(ctx).builders_dir) as it:
        names = [e.name[:-5] for e in it if e.name.endswith(".json") and BUILDER_ID_RE.match(e.name[:-5])]
    return [(n, None) for n in sorted(names)]


def _get(ctx: click.Context, path: str, **params: Any) -> Any:
    """GET ``path`` from the daemon of the command line's home within :data:`TIMEOUT_S`."""
    from hookd.client import Client

    return Client(_home(ctx), timeout=TIMEOUT_S).get(path, **params)


def _pending_interactions(ctx: click.Context) -> list[tuple[str, str | None]]:
    """Ids of the pending interactions (questions, permission prompts, asks) in the daemon's
    order, each with its builder and what it asks (:func:`_asks`) as help."""
    return [(i["id"], f"{i['builder']}: {_asks(i)}") for i in _get(ctx, "/v1/questions", state="pending")]


def _asks(i: dict[str, Any]) -> str:
    """What interaction ``i`` asks, in a few words: its first question; a permission prompt's
    tool and tool_view summary (the summary alone when it starts with the tool's name)."""
    qs = i.get("questions") or []
    if qs:
        return str(qs[0].get("question"))
    tool, summary = i.get("tool_name"), (i.get("tool_view") or {}).get("summary")
    if not summary:
        return str(tool or i["kind"])
    return str(summary) if not tool or str(summary).startswith(f"{tool} ") else f"{tool}: {summary}"


def _queued_messages(ctx: click.Context) -> list[tuple[str, str | None]]:
    """Ids of the messages still queued (``m-3``), oldest first, each with its builder and the
    start of its text as help."""
    items = _get(ctx, "/v1/messages", limit=1000)  # the newest 1000, oldest first
    return [(m["id"], f"{m['builder']}: {m['text'][:50]}") for m in items if m["state"] == "queued"]


builders = _quiet(_builder_ids)
pending_interactions = _quiet(_pending_interactions)
queued_messages = _quiet(_queued_messages)


def _spawnable(ctx: click.Context | None = None) -> list[tuple[str, str | None]]:
    """(harness name, what `hookd spawn` writes for it) of every adapter's ``hook_installs``
    (:data:`hookd.harness.registry.ADAPTERS`), in the registry's order."""
    from hookd.harness.registry import ADAPTERS

    return [(name, install.summary) for adapter in dict.fromkeys(ADAPTERS.values())
            for name, install in adapter.hook_installs.items()]


spawnable_harnesses = _quiet(_spawnable)


class HarnessOption(click.Option):
    """``hookd spawn --harness``: completes and lists the harness names `hookd spawn` takes
    (:func:`_spawnable`); adding an adapter adds its name here."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("shell_complete", spawnable_harnesses)
        super().__init__(*args, **kwargs)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = "; ".join(f"{name} ({summary})" for name, summary in _spawnable()) + "."
        return super().get_help_record(ctx)
