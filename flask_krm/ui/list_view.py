"""The rows one live list shows on one page: filtered, sorted and cut into pages, kept up to date
one object at a time.

A :class:`ListIndex` holds, for every object of the list's store, its row (cells, link, sort
key) and, in sort order, the rows the filter keeps. A change to one object re-reads that object
only and moves its row in the order (a binary search), so following a live list of thousands of
objects costs the same per change as following a list of ten. :meth:`ListIndex.window` is the page
shown: its rows and the counts ("41 of 5,000"). Pure apart from reading the store: no Flask.
"""

from __future__ import annotations

import bisect
import typing as t
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from ..store.paths import MISSING, get_at_pointer
from .cells import Cell, SortValue, cell_of, natural_key, sort_value
from .list_query import ListQuery, column_keys

if t.TYPE_CHECKING:
    from ..store import LiveResourceStore
    from .page import ListSpec


@dataclass(frozen=True, slots=True)
class Row:
    """One object as its row shows it."""

    uid: str
    name: str
    namespace: str
    cells: tuple[Cell, ...]
    href: str | None
    key: tuple[t.Any, ...]
    """Where the row sorts: the sort column's value, then namespace, name and uid."""
    search: str
    """Every cell's text, case-folded, for the filter."""

    def matches(self, terms: tuple[str, ...]) -> bool:
        return all(term in self.search for term in terms)


@dataclass(frozen=True, slots=True)
class Window:
    """The page of a list shown: its rows, which page of how many, and the counts."""

    rows: tuple[Row, ...]
    page: int
    pages: int
    first: int
    """The 1-based position of the first row among the matching rows (0 when there is none)."""
    matching: int
    total: int

    @property
    def last(self) -> int:
        return self.first + len(self.rows) - 1 if self.rows else 0


def _href(link: str | None, name: str, namespace: str) -> str | None:
    if link is None:
        return None
    return link.format(name=quote(name, safe=""), namespace=quote(namespace, safe=""))


def _value(obj: Mapping[str, t.Any], path: tuple[t.Any, ...]) -> t.Any:
    value = get_at_pointer(obj, [str(segment) for segment in path])
    return None if value is MISSING else value


class ListIndex:
    """Every row of one list's store, and the rows its query keeps in sort order.

    :param spec: the list (columns, link).
    :param query: the page's view of it (filter, sort, page).
    :param page_size: rows per page.
    """

    def __init__(self, spec: ListSpec, query: ListQuery, page_size: int) -> None:
        self.spec = spec
        self.query = query
        self.page_size = page_size
        self._terms = query.terms
        keys = column_keys([column.header for column in spec.columns])
        self._sort_column = keys.index(query.sort) if query.sort is not None else None
        self._rows: dict[str, Row] = {}
        self._order: list[tuple[tuple[t.Any, ...], str]] = []

    @property
    def total(self) -> int:
        return len(self._rows)

    @property
    def matching(self) -> int:
        return len(self._order)

    def row(self, uid: str) -> Row | None:
        return self._rows.get(uid)

    def make_row(self, uid: str, obj: Mapping[str, t.Any]) -> Row:
        """The row of ``obj`` (held under ``uid``) as this list shows it."""
        metadata = obj.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace", ""))
        values = [_value(obj, column.path) for column in self.spec.columns]
        cells = tuple(cell_of(value) for value in values)
        if self._sort_column is None:
            primary: SortValue = (0, "")
        else:
            primary = sort_value(values[self._sort_column], cells[self._sort_column], descending=self.query.descending)
        key = (primary, natural_key(namespace), natural_key(name), uid)
        search = " ".join(cell.search_text for cell in cells)
        return Row(uid, name, namespace, cells, _href(self.spec.link, name, namespace), key, search)

    def rebuild(self, store: LiveResourceStore | None) -> None:
        """Read every object of ``store`` again (``None``: no rows)."""
        self._rows = {}
        if store is not None:
            for uid in store.uids():
                obj = store.server(uid)
                if obj is not None:
                    self._rows[uid] = self.make_row(uid, obj)
        self._order = sorted((row.key, row.uid) for row in self._rows.values() if row.matches(self._terms))

    def update(self, store: LiveResourceStore, uids: Iterable[str]) -> None:
        """Read the objects ``uids`` of ``store`` again (each changed, arrived or left)."""
        for uid in uids:
            old = self._rows.pop(uid, None)
            if old is not None and old.matches(self._terms):
                self._remove(old)
            obj = store.server(uid)
            if obj is None:
                continue
            row = self._rows[uid] = self.make_row(uid, obj)
            if row.matches(self._terms):
                bisect.insort(self._order, (row.key, row.uid))

    def _remove(self, row: Row) -> None:
        at = bisect.bisect_left(self._order, (row.key, row.uid))
        if at < len(self._order) and self._order[at][1] == row.uid:
            del self._order[at]
        else:  # never expected: keys are unique; stay correct anyway
            self._order = [entry for entry in self._order if entry[1] != row.uid]

    def window(self) -> Window:
        """The page the query asks for, or the last page when it asks for one past the end."""
        matching = len(self._order)
        pages = max(1, -(-matching // self.page_size))
        page = min(self.query.page, pages)
        start = (page - 1) * self.page_size
        entries = self._order[start : start + self.page_size]
        rows = tuple(self._rows[uid] for _, uid in entries)
        return Window(rows, page, pages, start + 1 if rows else 0, matching, len(self._rows))


__all__ = ["ListIndex", "Row", "Window"]
