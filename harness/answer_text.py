"""A multi-select answer string split into its option labels and free text (for
:func:`hookd.harness.base.decode_answers`). Pure."""

from __future__ import annotations


def decode_multi(raw: str, names: list[str]) -> tuple[list[str], str | None]:
    """(labels, other) of one multi-select answer string."""
    split = _split_labels(raw, names)  # every item a known label, unquoted
    if split is not None:
        return split, None
    items = _split_quoted(raw)
    if items is None:
        return [], raw
    labels = [i for i in items if i in names]
    rest = [i for i in items if i not in names]
    return labels, (", ".join(rest) if rest else None)


def _split_quoted(raw: str) -> list[str] | None:
    """Split ``a, "b, c", "say \\"hi\\""`` into items; None if the quoting is broken."""
    items: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        if raw[i] == '"':
            j, buf = i + 1, []
            while j < n and raw[j] != '"':
                if raw[j] == "\\" and j + 1 < n:
                    j += 1
                buf.append(raw[j])
                j += 1
            if j >= n:
                return None
            items.append("".join(buf))
            i = j + 1
        else:
            j = raw.find(", ", i)
            j = n if j < 0 else j
            items.append(raw[i:j])
            i = j
        if i < n:
            if not raw.startswith(", ", i):
                return None
            i += 2
    return items


def _split_labels(raw: str, names: list[str]) -> list[str] | None:
    """Split ``raw`` into known labels joined by ", " (longest label first), or None."""
    ordered = sorted(set(names), key=len, reverse=True)
    memo: dict[int, list[str] | None] = {}

    def at(i: int) -> list[str] | None:
        if i in memo:
            return memo[i]
        result = None
        for name in ordered:
            if raw.startswith(name, i):
                j = i + len(name)
                if j == len(raw):
                    result = [name]
                    break
                if raw.startswith(", ", j):
                    rest = at(j + 2)
                    if rest is not None:
                        result = [name, *rest]
                        break
        memo[i] = result
        return result

    return at(0) if raw else None
