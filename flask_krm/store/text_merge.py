"""Three-way merge of text by lines: a person's change to a text, applied to a newer version of it.

A value edited as text (an array of unknown shape, shown as JSON) is not sent back whole: the edit
names the text the person started from and what they made of it, and :func:`merge_lines` applies
that change to the text the draft holds now, so whatever reached the draft meanwhile (a colleague's
change, merged from the server) stays. Changes of both sides that touch the same or adjacent lines
are a conflict (``None``), unless they are the same change.
"""

from __future__ import annotations

from difflib import SequenceMatcher

Hunk = tuple[int, int, list[str]]
"""Base lines ``[start, end)`` replaced by the given lines."""


def _hunks(base: list[str], other: list[str]) -> list[Hunk]:
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    return [(i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def merge_lines(base: str, mine: str, current: str) -> str | None:
    """``current`` with the change from ``base`` to ``mine``, or None when the two changes collide."""
    if mine == base or current == mine:
        return current
    if current == base:
        return mine
    lines = base.splitlines(keepends=True)
    ours = _hunks(lines, mine.splitlines(keepends=True))
    theirs = _hunks(lines, current.splitlines(keepends=True))
    chosen: list[Hunk] = []
    reach = -1
    for hunk in sorted(ours + theirs, key=lambda h: (h[0], h[1])):
        if chosen and hunk[0] <= reach:
            if hunk == chosen[-1]:
                continue  # the same change on both sides
            return None
        chosen.append(hunk)
        reach = max(reach, hunk[1])
    out: list[str] = []
    at = 0
    for start, end, replacement in chosen:
        out += lines[at:start]
        out += replacement
        at = end
    out += lines[at:]
    return "".join(out)
