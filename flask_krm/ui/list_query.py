"""What one live list shows on one page: its text filter, sort column and page, kept in the URL.

Each list reads its own query parameters, named after its ``url_key`` (by default the scope's
resource): ``configmaps.q`` (the filter), ``configmaps.sort`` (a column, ``-`` first for
descending) and ``configmaps.page``. Links the list renders (sort headers, pages, clearing the
filter) keep every other parameter of the page, so two lists on one page, and the host's own
parameters, are left alone, and a reload or a shared link shows the same view.

Bad values: a page that is not a positive number is page 1 and a page past the end is the last
page (a clamp, as a person editing the URL expects); an unknown sort column or an over-long filter
is refused with :class:`InvalidListQuery`, a 400 naming what is wrong.
"""

from __future__ import annotations

import re
import typing as t
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from werkzeug.exceptions import BadRequest

MAX_FILTER: t.Final = 200
"""Characters a filter may have."""
MAX_PAGE: t.Final = 10**9
"""A larger page number is read as this one (and then shows the last page)."""

URL_KEY: t.Final = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class InvalidListQuery(BadRequest, ValueError):
    """A list's query parameter that names nothing it can show (a 400 for the page)."""

    def __init__(self, message: str) -> None:
        BadRequest.__init__(self, description=message)


def column_keys(headers: Sequence[str]) -> tuple[str, ...]:
    """The sort keys of columns with ``headers``: the header in lower case, dashed (``Image`` ->
    ``image``, ``Ready replicas`` -> ``ready-replicas``), made unique by position."""
    keys: list[str] = []
    for index, header in enumerate(headers):
        key = re.sub(r"[^a-z0-9]+", "-", header.lower()).strip("-") or f"column-{index + 1}"
        if key in keys:
            key = f"{key}-{index + 1}"
        keys.append(key)
    return tuple(keys)


@dataclass(frozen=True, slots=True)
class ListQuery:
    """One list's view on one page: filter text, sort column (its key) and direction, page number,
    and the page's path and other parameters (kept in every link)."""

    key: str
    text: str = ""
    sort: str | None = None
    descending: bool = False
    page: int = 1
    path: str = ""
    others: tuple[tuple[str, str], ...] = ()

    def param(self, name: str) -> str:
        """The URL parameter ``name`` (``q``, ``sort``, ``page``) of this list."""
        return f"{self.key}.{name}"

    @property
    def terms(self) -> tuple[str, ...]:
        """The filter's words, case-folded; a row matches when each is in one of its cells."""
        return tuple(self.text.casefold().split())

    def sort_param(self, column: str) -> str:
        """The ``sort`` value a column header links to: ascending first, descending when it is
        already sorted ascending."""
        return f"-{column}" if self.sort == column and not self.descending else column

    def href(self, **changes: t.Any) -> str:
        """A link to this page with ``changes`` to this list's view (``page=2``, ``text=""``...)."""
        changed = replace(self, **changes)
        own: list[tuple[str, str]] = []
        if changed.text:
            own.append((self.param("q"), changed.text))
        if changed.sort is not None:
            own.append((self.param("sort"), ("-" if changed.descending else "") + changed.sort))
        if changed.page > 1:
            own.append((self.param("page"), str(changed.page)))
        pairs = [*self.others, *own]
        return self.path + ("?" + urlencode(pairs) if pairs else "")

    def sort_href(self, column: str) -> str:
        """The link of a column header: sorted by it (or reversed), from the first page."""
        value = self.sort_param(column)
        return self.href(sort=value.lstrip("-"), descending=value.startswith("-"), page=1)


def _page(raw: str | None) -> int:
    if raw is None:
        return 1
    raw = raw.strip()
    if not raw.isdigit() or not raw.isascii():
        return 1
    return max(1, int(raw)) if len(raw) <= 9 else MAX_PAGE


def parse_list_query(key: str, args: Iterable[tuple[str, str]], path: str, columns: Sequence[str]) -> ListQuery:
    """The view of the list ``key`` from a page's query ``args`` (pairs, in order), for a list
    whose columns have the sort keys ``columns``. Raises :class:`InvalidListQuery`."""
    pairs = list(args)
    own = {f"{key}.q": "q", f"{key}.sort": "sort", f"{key}.page": "page"}
    values: dict[str, str] = {}
    for name, value in pairs:
        if name in own:
            values.setdefault(own[name], value)
    others = tuple((name, value) for name, value in pairs if name not in own)
    text = values.get("q", "").strip()
    if len(text) > MAX_FILTER:
        raise InvalidListQuery(f"The filter {key}.q is longer than {MAX_FILTER} characters.")
    sort: str | None = None
    descending = False
    raw_sort = values.get("sort", "").strip()
    if raw_sort:
        descending = raw_sort.startswith("-")
        sort = raw_sort.lstrip("-")
        if sort not in columns:
            shown = raw_sort if len(raw_sort) <= 40 else raw_sort[:39] + "…"
            raise InvalidListQuery(
                f"This list cannot be sorted by {shown!r} ({key}.sort): use one of {', '.join(columns)}, "
                "with a leading '-' to sort descending."
            )
    return ListQuery(key, text, sort, descending, _page(values.get("page")), path, others)


__all__ = ["MAX_FILTER", "URL_KEY", "InvalidListQuery", "ListQuery", "column_keys", "parse_list_query"]
