"""Destructive-looking shell commands: a small rule set over a command line's text
(:data:`RULES`, :func:`reasons`), harness-neutral (the views of :mod:`hookd.harness.tool_views`
mark a command with it; ``docs/decisions.md`` "A permission prompt as a person reads it").

No shell parser: the command is cut into simple commands at ``;`` ``&`` ``|`` ``&&`` ``||``
``(`` ``)`` ``{`` ``}`` a backquote, ``$(`` and newlines, each one split at whitespace; its
command word is the first word past wrappers (``sudo``, ``env``, ``xargs``, ... and their
options), ``VAR=value`` assignments and the shell's keywords, without its directory
(``/bin/rm`` is ``rm``). A few rules read the whole text instead (a ``>`` redirection, SQL, a
script run from a download). Quotes are not understood, so a rule word inside a string counts
too: false positives are accepted (a marked command only loses its default button); a command
that hides what it does (``$CMD``, ``eval``, a script file) is not caught.

Linear in the command's length (no pattern that backtracks over it): the daemon judges
commands on its event loop. Pure: no I/O, imports nothing of hookd.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import NamedTuple

#: A command longer than this (characters) is marked as such: nobody reads it all on a card.
MAX_JUDGED = 20_000

#: Words that run the command after them (with their options): skipped to the command word.
WRAPPERS = frozenset({"sudo", "doas", "env", "xargs", "nohup", "time", "nice", "command", "exec", "builtin"})
#: Options of the wrappers that take the next word as their argument.
WRAPPER_ARGS = frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-n", "-I", "-P", "-L", "-d",
                          "-E", "-s", "-a", "-o", "-f", "-S"})
#: Shell keywords a command may follow (``do rm "$f"``, ``then rm x``).
KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!"})
#: git's options that take the next word (before its subcommand).
GIT_ARGS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})

_SPLIT = re.compile(r"(\|\||&&|\$\(|[;&|(){}`\n])")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")


class Simple(NamedTuple):
    """One simple command: its command word (no directory), its arguments (words), and the
    command word of the next command in its pipeline (after ``|``), or None."""

    word: str
    args: list[str]
    piped_to: str | None


def _word_and_args(words: list[str]) -> tuple[str, list[str]]:
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        if w in KEYWORDS or _ASSIGNMENT.match(w):
            i += 1
        elif os.path.basename(w) in WRAPPERS:
            i += 1
            while i < n and words[i].startswith("-"):
                i += 2 if words[i] in WRAPPER_ARGS else 1
        else:
            break
    if i >= n:
        return "", []
    return os.path.basename(words[i]), words[i + 1:]


def simple_commands(command: str) -> list[Simple]:
    """The simple commands of ``command``, in order (empty ones left out)."""
    parts = _SPLIT.split(command)
    cmds: list[tuple[str, list[str], str]] = []  # (word, args, the separator after it)
    for k in range(0, len(parts), 2):
        word, args = _word_and_args(parts[k].split())
        sep = parts[k + 1] if k + 1 < len(parts) else ""
        cmds.append((word, args, sep))
    out = []
    for k, (word, args, sep) in enumerate(cmds):
        if not word:
            continue
        nxt = cmds[k + 1][0] if sep == "|" and k + 1 < len(cmds) else None
        out.append(Simple(word, args, nxt or None))
    return out


def _flag(args: list[str], short: str, *long: str) -> bool:
    """Is ``-<short>`` given (alone or among combined short flags, ``-fdx``) or one of ``long``?"""
    return any((a.startswith("-") and not a.startswith("--") and short in a[1:]) or a in long
               or any(a.startswith(x + "=") for x in long) for a in args)


def _git(args: list[str]) -> tuple[str, list[str]]:
    """git's subcommand and its arguments (past git's own options)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in GIT_ARGS else 1
    return (args[i], args[i + 1:]) if i < len(args) else ("", [])


def _git_rule(sub: str, test: Callable[[list[str]], bool]) -> Callable[[Simple], bool]:
    def rule(c: Simple) -> bool:
        if c.word != "git":
            return False
        s, a = _git(c.args)
        return s == sub and test(a)
    return rule


def _word(*names: str) -> Callable[[Simple], bool]:
    return lambda c: c.word in names or (c.word.startswith("mkfs.") and "mkfs" in names)


#: (what it does, test of one simple command): the command-word rules, in the order reported.
COMMAND_RULES: tuple[tuple[str, Callable[[Simple], bool]], ...] = (
    ("deletes files (rm)", _word("rm")),
    ("overwrites files beyond recovery (shred)", _word("shred")),
    ("deletes files (find -delete)", lambda c: c.word == "find" and "-delete" in c.args),
    ("writes raw blocks (dd)", _word("dd")),
    ("formats a file system (mkfs)", _word("mkfs")),
    ("cuts a file's content (truncate)", _word("truncate")),
    ("changes modes recursively (chmod -R)", lambda c: c.word == "chmod" and _flag(c.args, "R", "--recursive")),
    ("changes owners recursively (chown -R)", lambda c: c.word == "chown" and _flag(c.args, "R", "--recursive")),
    ("rewrites the remote's history (git push --force)", _git_rule("push", lambda a: _flag(
        a, "f", "--force", "--force-with-lease", "--force-if-includes") or any(x.startswith("+") for x in a))),
    ("discards uncommitted changes (git reset --hard)", _git_rule("reset", lambda a: "--hard" in a)),
    ("deletes untracked files (git clean -f)", _git_rule("clean", lambda a: _flag(a, "f", "--force"))),
    ("discards uncommitted changes (git checkout/restore .)", lambda c: c.word == "git" and _git(c.args)[0] in (
        "checkout", "restore") and "." in _git(c.args)[1]),
    ("deletes a branch (git branch -D)", _git_rule("branch", lambda a: _flag(a, "D") or (
        _flag(a, "d", "--delete") and _flag(a, "f", "--force")))),
    ("runs a downloaded script (curl | sh)", lambda c: c.word in ("curl", "wget") and c.piped_to in SHELLS),
)

#: (what it does, pattern over the whole text): the text rules, reported after the command
#: rules. Each pattern matches in linear time (no repeated group over unbounded text).
TEXT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # `>`, `N>` or `>|` into a file; not `>>`, `>&N`, `=>`, `->`, a process substitution or a device
    ("overwrites a file (> redirection)",
     re.compile(r"(?<![<>&=\-|])[0-9]?>\|?(?![>&(=])[ \t]*(?!/dev/(?:null|stdout|stderr|tty)\b)[^\s;&|<>()]")),
    ("drops or empties a table (DROP / TRUNCATE)",
     re.compile(r"\b(?:DROP\s+(?:TABLE|DATABASE|SCHEMA|INDEX|VIEW)|TRUNCATE\s+TABLE)\b", re.I)),
    ("deletes rows (DELETE FROM)", re.compile(r"\bDELETE\s+FROM\b", re.I)),
    ("runs a downloaded script (curl | sh)",
     re.compile(r"\b(?:ba|z|da|k)?sh[ \t]+(?:-c[ \t]+)?[\"']?(?:\$\(|<\()[ \t]*(?:curl|wget)\b")),
)

TOO_LONG = f"too long to read on a card (over {MAX_JUDGED:,} characters)"

#: Every reason a command can be marked with, in the order :func:`reasons` reports them.
RULES: tuple[str, ...] = tuple(dict.fromkeys(
    [why for why, _ in COMMAND_RULES] + [why for why, _ in TEXT_RULES] + [TOO_LONG]))


def reasons(command: str) -> list[str]:
    """What each rule that marks ``command`` (a shell command line, possibly several lines)
    says it does, each once, in :data:`RULES` order; empty when none does. A command over
    :data:`MAX_JUDGED` characters is judged on its first :data:`MAX_JUDGED` and marked
    :data:`TOO_LONG`."""
    text = command[:MAX_JUDGED]
    found: set[str] = set()
    for c in simple_commands(text):
        found.update(why for why, test in COMMAND_RULES if why not in found and test(c))
    found.update(why for why, rx in TEXT_RULES if why not in found and rx.search(text))
    if len(command) > MAX_JUDGED:
        found.add(TOO_LONG)
    return [why for why in RULES if why in found]


def is_destructive(command: str) -> bool:
    """Does any rule mark ``command``? (:func:`reasons` not empty)"""
    return bool(reasons(command))
