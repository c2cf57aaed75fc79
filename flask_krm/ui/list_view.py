"""The rows one live list shows on one page: filtered, sorted and cut into pages, kept up to date
one object at a time.

A :class:`ListIndex` holds, for every object of the list's store, where it sorts and whether the
filter keeps it (reading only the sort column, or every cell when there is a filter), the kept ones
in sort order, and whole rows (cells, link) only for the page shown. A change to one object re-reads that object
only and moves its row in the order (a binary search), so following a live list of thousands of
objects costs the same per change as following a list of ten. :meth:`ListIndex.window` is the page
shown: its rows and the counts ("41 of 5,000"). Pure apart from reading the store: no Flask.
"""

from __future__ import annotations

import bisect
import typing as t
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from ..store.paths import MISSING, get_at_pointer
from .cells import Cell, SortValue, cell_of, natural_key, sort_value, status_cell
from .list_query import ListQuery, column_keys

if t.TYPE_CHECKING:
    from ..store import LiveResourceStore
    from ..store.truth import ServerTruth, TruthChange
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


def _identity(obj: Mapping[str, t.Any]) -> tuple[str, str]:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return str(metadata.get("name", "")), str(metadata.get("namespace", ""))


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
        self._store: LiveResourceStore | None = None
        self._keys: dict[str, tuple[tuple[t.Any, ...], bool]] = {}
        """Every object's sort key, and whether the filter keeps it."""
        self._rows: dict[str, Row] = {}
        """Whole rows made so far (the shown ones, and those read by :meth:`update`)."""
        self._order: list[tuple[tuple[t.Any, ...], str]] = []
        self._truth: ServerTruth | None = None
        self.memo: dict[t.Hashable, t.Any] = {}
        """What the sessions showing a followed index made of its last change (see
        :class:`~flask_krm.ui.list_updates.ListUpdates`); emptied by every change."""

    @property
    def following(self) -> bool:
        """Whether this index follows a shared truth (:meth:`follow`): every session of the
        truth showing the same view reads it, and :meth:`update` has nothing to do."""
        return self._truth is not None

    def follow(self, truth: ServerTruth) -> None:
        """Read every object of ``truth`` (no copies: its objects are immutable) and follow its
        changes from now on, once for every session showing this view."""
        self._truth, self._store, self._keys, self._rows = truth, None, {}, {}
        for uid in truth.uids():
            held = truth.get(uid)
            if held is not None:
                self._keys[uid] = self._entry(uid, held.object)
        self._order = sorted((key, uid) for uid, (key, matches) in self._keys.items() if matches)
        truth.follow(self)

    def truth_changed(self, change: TruthChange) -> None:
        """The followed truth changed: move the changed objects (called by its writer)."""
        truth = self._truth
        assert truth is not None
        self.memo.clear()
        for uid in (*change.changed, *change.dropped):
            held = truth.get(uid)
            self._move(uid, None if held is None else held.object)

    @property
    def total(self) -> int:
        return len(self._keys)

    @property
    def matching(self) -> int:
        return len(self._order)

    def make_row(self, uid: str, obj: Mapping[str, t.Any]) -> Row:
        """The row of ``obj`` (held under ``uid``) as this list shows it."""
        name, namespace = _identity(obj)
        values = [_value(obj, column.path) for column in self.spec.columns]
        cells = tuple(
            cell_of(value) if column.cell == "text" else status_cell(obj, column.cell)
            for value, column in zip(values, self.spec.columns)
        )
        key = self._key(uid, name, namespace, values, cells)
        search = " ".join(cell.search_text for cell in cells)
        return Row(uid, name, namespace, cells, _href(self.spec.link, name, namespace), key, search)

    def _key(
        self, uid: str, name: str, namespace: str, values: Sequence[t.Any], cells: Sequence[Cell | None]
    ) -> tuple[t.Any, ...]:
        primary: SortValue = (0, "")
        if self._sort_column is not None:
            value = values[self._sort_column]
            cell = cells[self._sort_column] or cell_of(value)
            primary = sort_value(value, cell, descending=self.query.descending)
        return (primary, natural_key(namespace), natural_key(name), uid)

    def _entry(self, uid: str, obj: Mapping[str, t.Any]) -> tuple[tuple[t.Any, ...], bool]:
        """Where ``obj`` sorts and whether the filter keeps it, reading only what that needs
        (a whole row only with a filter)."""
        if self._terms:
            row = self.make_row(uid, obj)
            return row.key, row.matches(self._terms)
        name, namespace = _identity(obj)
        values: list[t.Any] = [None] * len(self.spec.columns)
        if self._sort_column is not None:
            values[self._sort_column] = _value(obj, self.spec.columns[self._sort_column].path)
        return self._key(uid, name, namespace, values, [None] * len(values)), True

    def rebuild(self, store: LiveResourceStore | None) -> None:
        """Read every object of ``store`` again (``None``: no rows)."""
        self._store, self._keys, self._rows = store, {}, {}
        if store is not None:
            for uid in store.uids():
                obj = store.server(uid)
                if obj is not None:
                    self._keys[uid] = self._entry(uid, obj)
        self._order = sorted((key, uid) for uid, (key, matches) in self._keys.items() if matches)

    def update(self, store: LiveResourceStore, uids: Iterable[str]) -> None:
        """Read the objects ``uids`` of ``store`` again (each changed, arrived or left); nothing to
        do for an index that follows a truth."""
        if self._truth is not None:
            return
        self._store = store
        for uid in uids:
            self._move(uid, store.server(uid))

    def _move(self, uid: str, obj: Mapping[str, t.Any] | None) -> None:
        self._rows.pop(uid, None)
        old = self._keys.pop(uid, None)
        if old is not None and old[1]:
            self._remove(old[0], uid)
        if obj is None:
            return
        row = self._rows[uid] = self.make_row(uid, obj)
        matches = row.matches(self._terms)
        self._keys[uid] = (row.key, matches)
        if matches:
            bisect.insort(self._order, (row.key, uid))

    def _remove(self, key: tuple[t.Any, ...], uid: str) -> None:
        at = bisect.bisect_left(self._order, (key, uid))
        if at < len(self._order) and self._order[at][1] == uid:
            del self._order[at]
        else:  # never expected: keys are unique; stay correct anyway
            self._order = [entry for entry in self._order if entry[1] != uid]

    def _row(self, uid: str) -> Row:
        row = self._rows.get(uid)
        if row is None:
            if self._truth is not None:
                held = self._truth.get(uid)
                obj: Mapping[str, t.Any] | None = None if held is None else held.object
            else:
                obj = self._store.server(uid) if self._store is not None else None
            row = self._rows[uid] = self.make_row(uid, obj or {})
        return row

    def window(self) -> Window:
        """The page the query asks for, or the last page when it asks for one past the end."""
        matching = len(self._order)
        pages = max(1, -(-matching // self.page_size))
        page = min(self.query.page, pages)
        start = (page - 1) * self.page_size
        entries = self._order[start : start + self.page_size]
        rows = tuple(self._row(uid) for _, uid in entries)
        if len(self._rows) > 4 * self.page_size:  # keep the rows of this page, drop those read before
            self._rows = {row.uid: row for row in rows}
        return Window(rows, page, pages, start + 1 if rows else 0, matching, len(self._keys))


__all__ = ["ListIndex", "Row", "Window"]
