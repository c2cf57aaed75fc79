"""Live updates of one list on one page, row by row.

The page channel keeps a :class:`ListUpdates` per list. After a change it re-reads only the
objects that changed (:meth:`~flask_krm.ui.list_view.ListIndex.update`), works out the page now
shown and compares it with what the browser shows (:class:`ShownList`), then sends the
difference as ``<hx-partial>`` elements: a changed row replaces its ``<tr>`` by id (``outerMorph``,
so a focused row button keeps its focus), a row that left the page is deleted, a row that arrived
is inserted before the row that now follows it (or at the end of the table's body), and the count
and pager are replaced when their numbers moved. A change to an object outside the page sends the
count only, or nothing. The whole body is sent instead when the stream's state changed, the list
became empty or stopped being empty, the row buttons the person is offered changed
(:class:`~flask_krm.ui.offer.Offer`), or more than half a page of rows changed at once (a resync).
Rows and messages are shared by every session offered the same row buttons.

Each partial targets an element the browser holds before the message (htmx resolves every
target of a message before it swaps any), and deletes come first.
"""

from __future__ import annotations

import bisect
import typing as t
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from markupsafe import Markup

from ..htmx import partial
from .list_view import ListIndex, Window
from .offer import EVERYTHING, Offer
from .page import Component, ListSpec, Page
from .render import (
    FragmentCache,
    RowButton,
    StreamStatus,
    body_partial,
    list_index,
    render_list_body,
    render_list_part,
    render_row,
    row_buttons,
    row_id,
)

if t.TYPE_CHECKING:
    from ..store import LiveResourceStore


def rows_id(component: Component) -> str:
    """The id of the list table's ``<tbody>``."""
    return f"{component.id}-rows"


def _numbers(window: Window) -> tuple[int, ...]:
    return (window.page, window.pages, window.first, window.last, window.matching, window.total)


@dataclass(frozen=True, slots=True)
class ShownList:
    """What a page shows of one list: the stream state, each row (uid, content digest) in order,
    the numbers its count and pager were rendered with, and the row buttons its person is offered."""

    status: StreamStatus
    rows: tuple[tuple[str, int], ...]
    numbers: tuple[int, ...]
    parts: tuple[int, ...]
    """Digests of the count and the pager."""
    actions: tuple[RowButton, ...] = ()


MEMO_SIZE: t.Final = 256
"""Messages of one change a shared index keeps, one per state of the sessions showing it."""

PARTS: t.Final = (("krm/list_count.html", "count"), ("krm/list_pager.html", "pager"))


def _digest(markup: str) -> int:
    return hash(markup)


def paint_list(
    component: Component,
    store: LiveResourceStore | None,
    status: StreamStatus,
    cache: FragmentCache,
    page: Page,
    offer: Offer = EVERYTHING,
) -> tuple[Markup, ShownList]:
    """The list's body for a page's first paint with the row buttons of ``offer``, and what it
    shows (kept on the page, so the page's channel starts from it)."""
    index = list_index(component, store, page)
    actions = row_buttons(component, offer)
    body = render_list_body(component, store, status, cache, page, index, actions)
    return body, _shown(component, status, index, cache, actions)


def _parts(component: Component, status: StreamStatus, index: ListIndex) -> list[Markup]:
    return [render_list_part(template, component, status, index) for template, _ in PARTS]


def _shown(
    component: Component, status: StreamStatus, index: ListIndex, cache: FragmentCache, actions: tuple[RowButton, ...]
) -> ShownList:
    window = index.window()
    rows = tuple((row.uid, _digest(render_row(component, row, actions, cache))) for row in window.rows)
    parts = tuple(_digest(part) for part in _parts(component, status, index))
    return ShownList(status, rows, _numbers(window), parts, actions)


def _kept(common: Sequence[str], positions: dict[str, int]) -> set[str]:
    """The longest run of ``common`` rows already in their browser order (they stay put)."""
    tails: list[int] = []
    tail_at: list[int] = []
    previous: list[int] = [-1] * len(common)
    for i, uid in enumerate(common):
        at = bisect.bisect_left(tails, positions[uid])
        if at == len(tails):
            tails.append(positions[uid])
            tail_at.append(i)
        else:
            tails[at] = positions[uid]
            tail_at[at] = i
        previous[i] = tail_at[at - 1] if at else -1
    kept: set[str] = set()
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        kept.add(common[i])
        i = previous[i]
    return kept


class ListUpdates:
    """One list followed by one page channel: what to send after each change."""

    def __init__(self, component: Component, page: Page, cache: FragmentCache, shown: ShownList | None) -> None:
        spec = component.spec
        assert isinstance(spec, ListSpec)
        self.component = component
        self.page = page
        self.cache = cache
        self.shown = shown
        self.index: ListIndex | None = None
        self.rows_at_once = max(4, spec.page_size // 2)
        """More changed rows than this in one message: the whole body is sent instead."""
        self._buttons: dict[Offer, tuple[RowButton, ...]] = {}
        """The row buttons of each offer (their URLs are made once)."""

    def changes(
        self,
        store: LiveResourceStore | None,
        status: StreamStatus,
        uids: Collection[str] | None,
        offer: Offer = EVERYTHING,
    ) -> list[str]:
        """The partials bringing the page up to date after ``uids`` changed (``None``: unknown,
        everything is read again), or ``[]`` when it shows the current rows already; rows show the
        buttons of ``offer``."""
        actions = self._buttons.get(offer)
        if actions is None:
            actions = self._buttons[offer] = row_buttons(self.component, offer)
        everything = self.index is None or uids is None or store is None
        if not everything and self.index is not None and store is not None:
            # a session that removed or adopted an object reads its own index until the truth catches up
            everything = self.index.following != (store.shared and not store.diverged())
        if self.index is None or everything:
            self.index = list_index(self.component, store, self.page)
        elif uids:
            assert store is not None
            self.index.update(store, uids)
        index = self.index
        shown = self.shown
        if not index.following or shown is None or everything:
            return self._changes(store, status, uids, everything, actions)
        # Every session showing this view in the same state, offered the same row buttons, makes the
        # same message of the same change: it is made once per change of the truth (the first session
        # asking makes it). The sessions that took it share what they show from then on, so the next
        # look-up is by identity.
        changed = frozenset(uids or ())
        fast = (id(shown), status, changed, actions)
        made = index.memo.get(fast)
        if made is None or made[2] is not shown:
            made = index.memo.get((shown, status, changed, actions))
            if made is None:
                parts = self._changes(store, status, uids, everything, actions)
                if len(index.memo) >= MEMO_SIZE:
                    return parts
                made = index.memo[(shown, status, changed, actions)] = (tuple(parts), self.shown, shown)
            if len(index.memo) < MEMO_SIZE:
                index.memo[fast] = made
        self.shown = made[1]
        return list(made[0])

    def _changes(
        self,
        store: LiveResourceStore | None,
        status: StreamStatus,
        uids: Collection[str] | None,
        everything: bool,
        actions: tuple[RowButton, ...],
    ) -> list[str]:
        index = self.index
        assert index is not None
        window = index.window()
        shown = self.shown
        if (
            shown is None
            or shown.status != status
            or bool(shown.rows) != bool(window.rows)
            or shown.actions != actions  # the person is offered other buttons now: every row changed
        ):
            return self._body(store, status, index, actions)
        known = dict(shown.rows)
        old = [uid for uid, _ in shown.rows]
        positions = {uid: at for at, uid in enumerate(old)}
        new = [row.uid for row in window.rows]
        common = [uid for uid in new if uid in positions]
        kept = _kept(common, positions)
        parts = [partial(row_id(self.component, uid), "", swap="delete") for uid in old if uid not in kept]
        inserts: list[str] = []
        rows: list[tuple[str, int]] = []
        following: str | None = None
        for row in reversed(window.rows):
            changed = everything or row.uid not in known or (uids is not None and row.uid in uids)
            markup = render_row(self.component, row, actions, self.cache) if changed else None
            digest = _digest(markup) if markup is not None else known[row.uid]
            rows.append((row.uid, digest))
            if row.uid in kept:
                if markup is not None and digest != known[row.uid]:
                    parts.append(partial(row_id(self.component, row.uid), markup, swap="outerMorph"))
                following = row.uid
                continue
            if markup is None:
                markup = render_row(self.component, row, actions, self.cache)
            if following is None:
                inserts.append(partial(rows_id(self.component), markup, swap="beforeend"))
            else:
                inserts.append(partial(row_id(self.component, following), markup, swap="beforebegin"))
        parts.extend(reversed(inserts))
        if len(parts) > self.rows_at_once:
            return self._body(store, status, index, actions)
        numbers, digests = _numbers(window), shown.parts
        if numbers != shown.numbers:
            rendered = _parts(self.component, status, index)
            digests = tuple(_digest(part) for part in rendered)
            for (_, name), part, digest, old_digest in zip(PARTS, rendered, digests, shown.parts, strict=True):
                if digest != old_digest:
                    parts.append(partial(f"{self.component.id}-{name}", part, swap="outerMorph"))
        self.shown = ShownList(status, tuple(reversed(rows)), numbers, digests, actions)
        return parts

    def _body(
        self, store: LiveResourceStore | None, status: StreamStatus, index: ListIndex, actions: tuple[RowButton, ...]
    ) -> list[str]:
        body = render_list_body(self.component, store, status, self.cache, self.page, index, actions)
        self.shown = _shown(self.component, status, index, self.cache, actions)
        return [body_partial(self.component, body)]


__all__ = ["ListUpdates", "ShownList", "paint_list", "rows_id"]
