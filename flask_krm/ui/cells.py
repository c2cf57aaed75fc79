"""What one table cell of a live list shows, and how its rows sort and filter.

A cell never shows raw JSON: a map is a row of ``key=value`` chips, a list of scalars a short
comma-separated line, a list of objects their names (or how many there are), a scalar its text.
Long values are cut, so one row stays small whatever the object holds (a ConfigMap value can be a
megabyte). Pure: no Flask, no gevent.
"""

from __future__ import annotations

import math
import re
import typing as t
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .status import WorkloadStatus, workload_status
from .widgets import display_text

MAX_CHIPS: t.Final = 6
"""Chips shown for a map; the rest are counted (``+3 more``)."""
MAX_ITEMS: t.Final = 5
"""Items shown for a list; the rest are counted."""
MAX_TEXT: t.Final = 120
"""Characters of a text cell shown; a longer text ends with an ellipsis."""
MAX_CHIP: t.Final = 60
"""Characters of one chip shown."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell: ``text`` (a scalar or a compact list) or ``chips`` (a map), and how many items
    were left out (``more``). Hashable: part of the key a row is shared under."""

    text: str = ""
    chips: tuple[str, ...] = ()
    more: int = 0
    kind: str = "text"
    """``text``, or how a workload status is drawn (see :data:`flask_krm.ui.status.CELL_KINDS`)."""
    status: WorkloadStatus | None = None
    """The row's workload status, for a cell of a status kind."""

    @property
    def empty(self) -> bool:
        return not self.text and not self.chips and self.status is None

    def __str__(self) -> str:
        """The cell as one line of text (chips joined with commas)."""
        shown = self.text or ", ".join(self.chips)
        return f"{shown} +{self.more} more" if self.more else shown

    @property
    def search_text(self) -> str:
        """What a filter matches against (case-folded)."""
        return " ".join((self.text, *self.chips)).casefold()


EMPTY: t.Final = Cell()
_DIGITS: t.Final = re.compile(r"([0-9]+)")


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split()) if ("\n" in text or "\r" in text or "\t" in text) else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def scalar_text(value: t.Any) -> str:
    """A value as a cell shows it: a scalar as a field does, nothing for null, a map or list as how
    many it holds."""
    if isinstance(value, (str, int, float)):  # booleans too
        return display_text(value)
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return f"{len(value)} field" + ("" if len(value) == 1 else "s")
    if isinstance(value, Sequence):
        return f"{len(value)} item" + ("" if len(value) == 1 else "s")
    return str(value)


def _item_text(item: t.Any) -> str:
    name = item.get("name") if isinstance(item, Mapping) else None
    return name if isinstance(name, str) else scalar_text(item)


def status_cell(obj: Mapping[str, t.Any], kind: str) -> Cell:
    """A cell drawing ``obj``'s workload status as ``kind``; its text (filter, sort) is the health
    and rollout line."""
    status = workload_status(obj)
    text = f"{status.health_label} {status.rollout}" if status is not None else ""
    return Cell(text=text, kind=kind, status=status)


def cell_of(value: t.Any) -> Cell:
    """The cell showing ``value`` (``None`` or absent: an empty cell)."""
    if value is None:
        return EMPTY
    if isinstance(value, Mapping):
        keys = sorted(value, key=str)
        chips = tuple(_cut(f"{key}={scalar_text(value[key])}", MAX_CHIP) for key in keys[:MAX_CHIPS])
        return Cell(chips=chips, more=max(0, len(keys) - MAX_CHIPS))
    if isinstance(value, (list, tuple)):
        if (
            value
            and all(isinstance(item, Mapping) for item in value)
            and not all(isinstance(item.get("name"), str) for item in value)
        ):
            return Cell(text=scalar_text(value))
        shown = ", ".join(_item_text(item) for item in value[:MAX_ITEMS])
        return Cell(text=_cut(shown, MAX_TEXT), more=max(0, len(value) - MAX_ITEMS))
    return Cell(text=_cut(scalar_text(value), MAX_TEXT))


class Descending:
    """A sort value that orders in reverse (for a descending column), still comparable in tuples."""

    __slots__ = ("value",)

    def __init__(self, value: t.Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Descending) and self.value == other.value

    def __lt__(self, other: Descending) -> bool:
        return bool(other.value < self.value)

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Descending({self.value!r})"


SortValue: t.TypeAlias = tuple[int, t.Any]


def sort_value(value: t.Any, cell: Cell, *, descending: bool = False) -> SortValue:
    """How a cell sorts: numbers by value before text (case-insensitive, digits by number), empty
    cells last in either direction."""
    if value is None or cell.empty:
        return (2, "")
    primary: t.Any
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        rank, primary = 0, float(value) if math.isfinite(value) else math.inf
    else:
        rank, primary = 1, natural_key(cell.search_text)
    return (rank, Descending(primary) if descending else primary)


def natural_key(text: str) -> tuple[t.Any, ...]:
    """``text`` ordered as people read it: runs of digits by their number (``pod-2`` before ``pod-10``)."""
    parts = _DIGITS.split(text)
    return tuple(int(part) if at % 2 else part for at, part in enumerate(parts))


__all__ = ["EMPTY", "Cell", "Descending", "SortValue", "cell_of", "natural_key", "scalar_text", "sort_value"]
