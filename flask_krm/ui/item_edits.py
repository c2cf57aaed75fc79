"""Edits that keep what reached the draft meanwhile: values set against a known start, list items.

A person's edit is the change from what the field showed when they began typing (the ``from`` the
page sends) to what they typed, applied to the draft as it is now:

- a single value whose draft still holds the start, or the person's own edit (from another tab),
  is simply set: what was typed last wins; one the server meanwhile changed (a colleague's change,
  merged into the draft, that the field being typed in did not show) is set and recorded as a
  conflict holding the server's value, at that field;
- an array written as JSON text is merged by lines (:func:`flask_krm.store.text_merge.merge_lines`)
  into the draft's text now, never set whole from the page; colliding lines are a conflict;
- a row of a list of strings is found by the text it started from, so a row inserted or removed
  above it meanwhile does not redirect the edit;
- items of keyed lists are named by their keys (:mod:`flask_krm.store.items`), added with their
  keys, removed and moved one place up or down.

Refusals are :class:`~flask_krm.ui.widgets.ValueRefused` (status and message); the edit view
turns them into answers.
"""

from __future__ import annotations

import typing as t
from collections.abc import Callable, Mapping

from ..store import LiveResourceStore
from ..store.paths import MISSING, Path, get_at
from ..store.text_merge import merge_lines
from ..store.values import json_equal
from .list_widgets import ItemRefused, list_kind, new_item
from .widgets import WIDGETS, ValueRefused, normalized_lines, parse_structured, structured_text, widget_for

Parse: t.TypeAlias = Callable[[str | None, t.Any], t.Any]

MOVES: t.Final[Mapping[str, int]] = {"up": -1, "down": 1}
ROW_MOVED: t.Final = "This row was changed or removed by someone else meanwhile; nothing was changed."


def edit_value(
    store: LiveResourceStore,
    uid: str,
    path: Path,
    submitted: str | None,
    started: str | None,
    reader: Callable[[Parse], Parse] | None = None,
) -> None:
    """Set the value at ``path`` from the ``submitted`` text, which the person typed over ``started``
    (``None``: the page did not say, as for a checkbox); ``reader`` wraps the widget's parse of what
    was typed (the field's schema reads it)."""
    current = get_at(store.draft(uid), path)
    server_value = get_at(store.server(uid), path)
    widget = WIDGETS.get(widget_for(path, current, server_value))
    if widget is None or widget.parse is None:
        raise ValueRefused(400, "This field is not edited as one value.")
    if widget.kind == "structured":
        _edit_text(store, uid, path, current, submitted, started, server_value)
        return
    mine = (reader(widget.parse) if reader is not None else widget.parse)(submitted, server_value)
    base: t.Any = MISSING
    if started is not None:
        try:
            base = widget.parse(started, server_value)
        except ValueRefused:
            base = MISSING  # it started from text that was no value (an emptied number): nothing to compare
    if _is_row(store, uid, path):
        path = _row(store, uid, path, base)
        current = get_at(store.draft(uid), path)
    if base is MISSING or json_equal(current, base) or store.is_dirty(uid, path):
        # the draft still holds the start, or holds the person's own edit (typed in another tab, or
        # an answer this field had not shown yet): what was typed last wins
        store.set_value(uid, path, mine)
    elif not json_equal(current, mine):
        store.set_contested(uid, path, mine)


def _edit_text(
    store: LiveResourceStore,
    uid: str,
    path: Path,
    current: t.Any,
    submitted: str | None,
    started: str | None,
    server_value: t.Any,
) -> None:
    mine = parse_structured(submitted, server_value)
    if started is None:
        raise ValueRefused(400, "An edit of a list written as text must name the text it started from.")
    mine_text = normalized_lines(submitted or "", MISSING)
    current_text = structured_text(current) if current is not MISSING else ""
    merged = merge_lines(normalized_lines(started, MISSING), mine_text, current_text)
    if merged is not None:
        try:
            store.set_value(uid, path, parse_structured(merged, server_value))
            return
        except ValueRefused:
            pass  # both changes apply, but not to valid JSON together: the person decides
    store.set_contested(uid, path, mine)


def _is_row(store: LiveResourceStore, uid: str, path: Path) -> bool:
    return bool(path) and isinstance(path[-1], int) and store.list_keys(uid, path[:-1]) is None


def _row(store: LiveResourceStore, uid: str, path: Path, text: t.Any) -> Path:
    """The path of the row of a list of strings that holds ``text`` now: ``path`` itself, or the one
    row holding it; ``path`` when ``text`` is unknown."""
    items = get_at(store.draft(uid), path[:-1])
    index = path[-1]
    if type(items) is not list or not isinstance(index, int) or index >= len(items):
        raise ValueRefused(409, ROW_MOVED)
    if text is MISSING or json_equal(items[index], text):
        return path
    found = [i for i, item in enumerate(items) if json_equal(item, text)]
    if len(found) == 1:
        return path[:-1] + (found[0],)
    return path  # the row itself changed meanwhile: the edit is set against it and conflicts


def add_item(store: LiveResourceStore, uid: str, path: Path, form: Mapping[str, str]) -> None:
    """Append a new item to the list at ``path``: a keyed list's from its key fields (``item.<key>``),
    a row from ``value``."""
    items = get_at(store.draft(uid), path)
    keys = store.list_keys(uid, path)
    shown = list_kind(path, [] if items is MISSING else items, keys)
    if shown == "items" and keys is not None:
        try:
            value: t.Any = new_item(path, items, keys, {key: form.get(f"item.{key}") for key in keys})
        except ItemRefused as refused:
            raise ValueRefused(422, str(refused)) from None
    elif shown == "rows":
        value = normalized_lines(form.get("value", ""), MISSING)
    else:
        raise ValueRefused(400, "Items of this list are added by editing its text.")
    store.insert_item(uid, path, value)


def remove_item(store: LiveResourceStore, uid: str, path: Path, form: Mapping[str, str]) -> None:
    """Remove the item at ``path``; a row is found by its text (``value``) when it is given."""
    store.remove_item(uid, _located(store, uid, path, form))


def move_item(store: LiveResourceStore, uid: str, path: Path, form: Mapping[str, str]) -> None:
    """Move the item at ``path`` one place ``up`` or ``down`` (``to``)."""
    step = MOVES.get(form.get("to", ""))
    if step is None:
        raise ValueRefused(400, "Say where to move the item: up or down.", about_value=False)
    where = _located(store, uid, path, form)
    items = get_at(store.draft(uid), where[:-1])
    index = where[-1]
    if type(items) is not list or not isinstance(index, int):
        raise ValueRefused(400, "Name an item of a list.", about_value=False)
    if not 0 <= index + step < len(items):
        raise ValueRefused(409, "It is already the " + ("first." if step < 0 else "last."))
    store.move_item(uid, where, index + step)


def _located(store: LiveResourceStore, uid: str, path: Path, form: Mapping[str, str]) -> Path:
    if not path or not isinstance(path[-1], int):
        raise ValueRefused(400, "Name an item of a list.", about_value=False)
    if not _is_row(store, uid, path) or "value" not in form:
        return path
    items = get_at(store.draft(uid), path[:-1])
    text = normalized_lines(form["value"], MISSING)
    if type(items) is list and path[-1] < len(items) and items[path[-1]] == text:
        return path
    found = [i for i, item in enumerate(items) if item == text] if type(items) is list else []
    if len(found) != 1:
        raise ValueRefused(409, ROW_MOVED)
    return path[:-1] + (found[0],)
