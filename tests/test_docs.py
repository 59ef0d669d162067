"""The CLI reference (docs/cli.md) stays in step with the CLI itself (`hookd ... --help`):
every command has a row, every option of a command is named in its row, and no row names a
command or an option the CLI does not have."""

from __future__ import annotations

import re

import click

from hookd.cli import main

from .conftest import REPO

CLI_DOC = REPO / "docs" / "cli.md"


def commands(group: click.Group = main, prefix: str = "hookd") -> dict[str, click.Command]:
    """Every leaf command by its full name (``hookd notify test``), as ``--help`` lists them
    (``hookd``'s group loads most commands only when named: hookd.cli.LAZY_COMMANDS)."""
    out: dict[str, click.Command] = {}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        full = f"{prefix} {name}"
        if isinstance(cmd, click.Group):
            out.update(commands(cmd, full))
        else:
            out[full] = cmd
    return out


def option_names(cmd: click.Command) -> list[set[str]]:
    """Each option's long names (a flag pair such as ``--mcp/--no-mcp`` is one option)."""
    return [{o for o in p.opts + p.secondary_opts if o.startswith("--")} for p in cmd.params
            if isinstance(p, click.Option) and "--help" not in p.opts]


def long_options(cmd: click.Command) -> set[str]:
    return set().union(*option_names(cmd))


def rows() -> list[str]:
    """The first cell of each row of the reference table (``hookd serve [--port N] ...``)."""
    text = CLI_DOC.read_text()
    return [m.group(1) for m in re.finditer(r"^\| `(hookd [^`]*)` \|", text, re.M)]


def rows_of(name: str) -> list[str]:
    return [r for r in rows() if r == name or r.startswith(name + " ")]


def test_every_command_has_a_row_naming_each_of_its_options():
    cmds = commands()
    assert len(cmds) >= 18
    for name, cmd in cmds.items():
        mine = rows_of(name)
        assert mine, f"docs/cli.md has no row for `{name}`"
        named = set(re.findall(r"--[a-z][a-z0-9-]*", " ".join(mine)))
        missing = [sorted(o) for o in option_names(cmd) if not o & named]
        assert not missing, f"`{name}`: options missing from docs/cli.md: {missing}"
        assert named <= long_options(cmd), f"`{name}`: docs/cli.md names options it lacks: {sorted(named - long_options(cmd))}"


def test_the_reference_is_one_table_with_one_row_per_form():
    """A blank line inside the table ends it (what follows renders as text), and a form given
    twice says two things of one command."""
    lines = CLI_DOC.read_text().splitlines()
    at = [i for i, line in enumerate(lines) if re.match(r"^\| `hookd ", line)]
    assert at == list(range(at[0], at[-1] + 1)), "docs/cli.md: the reference table is broken by a line that is not a row"
    firsts = rows()
    assert sorted({r for r in firsts if firsts.count(r) > 1}) == []


def test_no_row_names_a_command_that_does_not_exist():
    cmds = commands()
    for row in rows():
        words = row.split()
        assert any(row == c or row.startswith(c + " ") for c in cmds), f"docs/cli.md: `{row}` is no command"
        assert words[1] in main.list_commands(click.Context(main))


def test_the_global_options_are_documented():
    text = CLI_DOC.read_text()
    for opt in long_options(main):
        assert f"`{opt}`" in text, f"docs/cli.md does not mention the global option {opt}"


def test_every_pointer_to_a_section_names_a_heading_there():
    """``docs/usage.md "Hook transports"`` in a doc or the README names a heading of that file:
    the heading itself, or its start before ``:``, ``;``, ``,`` or `` (`` (a longer title)."""
    files = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
    heads = {f"docs/{f.name}" if f.parent.name == "docs" else f.name:
             [re.sub(r"^#+\s*", "", line).strip() for line in f.read_text().splitlines() if line.startswith("#")]
             for f in files}
    bad = []
    for f in files:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for m in re.finditer(r'(docs/[\w-]+\.md|README\.md)\)?,? "([^"]+)"', line):
                target, title = m.groups()
                if target in heads and not any(h == title or h.startswith(tuple(title + s for s in (":", ";", ",", " (")))
                                               for h in heads[target]):
                    bad.append(f"{f.name}:{n}: {target} {title!r}")
    assert bad == []
