"""Edit forms read into store operations: what a person typed, as the values the store applies.

A field's submitted text is read with the widget the field was rendered with
(:func:`flask_krm.ui.widgets.widget_for`), so a number stays a number, and sent with what the
field showed when the person began typing (the ``from`` the page sends, read the same way): the
store decides, against the draft as it is then, whether that makes the edit a conflict
(:mod:`flask_krm.store.pipeline`). An array written as JSON text travels as its two texts; a new
item of a keyed list is made from its key fields; a row of a list of strings names its text.

Refusals are :class:`RequestRefused` (a :class:`~flask_krm.ui.problems.RequestProblem` or a store
problem found before the operation exists); the edit views answer them from one table
(:mod:`flask_krm.ui.problems`).
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from ..kube_schema import SchemaView, as_view, required_members
from ..store import LiveResourceStore
from ..store.items import Address
from ..store.operations import AddItem, EditLines, MoveItem, Operation, RemoveItem, SetField
from ..store.paths import MISSING, Path, get_at
from ..store.problems import ProblemKind
from .list_widgets import ItemRefused, list_kind, new_item
from .problems import Kind, RequestProblem
from .schema_fields import SchemaRefused, schema_parse
from .widgets import WIDGETS, ValueRefused, normalized_lines, parse_structured, schema_widget, widget_for

MOVES: t.Final[Mapping[str, int]] = {"up": -1, "down": 1}


class RequestRefused(Exception):
    """An edit request that makes no operation: the problem, its detail and, when it is not the
    request's own path, the field it is about."""

    def __init__(self, kind: Kind, detail: str = "", path: Address | None = None) -> None:
        super().__init__(kind.value)
        self.kind = kind
        self.detail = detail
        self.path = path


def _value_refused(refused: ValueRefused) -> RequestRefused:
    if refused.status == 422:
        return RequestRefused(RequestProblem.UNREADABLE_VALUE, refused.message)
    return RequestRefused(RequestProblem.UNREADABLE_REQUEST, refused.message)


def schema_node(store: LiveResourceStore, uid: str, path: Path) -> SchemaView | None:
    """The schema of the value at ``path`` of ``uid`` (``None``: its kind's schema says nothing)."""
    schema = store.kind_schema(uid)
    return as_view(schema).at(path) if schema is not None else None


def editable_path(store: LiveResourceStore, uid: str, address: Address) -> Path:
    """Where ``address`` is in the draft of ``uid``, refused as read-only before anything is read
    from the request: a value the person may not write (a Secret's, a withheld one) is never
    checked against its schema, so the answer does not depend on what was sent."""
    if not store.covers(address):
        raise RequestRefused(ProblemKind.READ_ONLY)
    path = store.resolve(uid, address)
    if store.is_read_only(uid, path):
        raise RequestRefused(ProblemKind.READ_ONLY)
    return path


def set_field(
    store: LiveResourceStore, uid: str, address: Address, submitted: str | None, started: str | None
) -> Operation:
    """The operation that gives the field at ``address`` the ``submitted`` text, typed over
    ``started`` (``None``: the page did not say, as for a checkbox), read as the field's schema
    types it (:func:`~flask_krm.ui.schema_fields.schema_parse`)."""
    path = editable_path(store, uid, address)
    server_value = get_at(store.server(uid), path)
    draft_value = get_at(store.draft(uid), path)
    node = schema_node(store, uid, path)
    parent = schema_node(store, uid, path[:-1]) if path else None
    shown = server_value if draft_value is MISSING else draft_value
    widget = WIDGETS.get(schema_widget(widget_for(path, draft_value, server_value), shown, node, parent))
    if widget is None or widget.parse is None:
        raise RequestRefused(RequestProblem.NOT_ONE_VALUE)
    required = parent is not None and bool(path) and path[-1] in required_members(parent)
    try:
        if widget.kind == "structured":
            value = parse_structured(submitted, server_value)
            if started is None:
                raise RequestRefused(RequestProblem.NO_START)
            typed = normalized_lines(submitted or "", MISSING)
            return EditLines(address, typed, normalized_lines(started, MISSING), value)
        read = schema_parse(node, widget.parse, required=required) if node is not None else widget.parse
        mine = read(submitted, server_value)
    except ValueRefused as refused:
        raise _value_refused(refused) from None
    except SchemaRefused as refused:
        raise RequestRefused(RequestProblem.UNREADABLE_VALUE, str(refused)) from None
    base: t.Any = MISSING
    if started is not None:
        try:
            base = widget.parse(started, server_value)
        except ValueRefused:
            base = MISSING  # it started from text that was no value (an emptied number): nothing to compare
    return SetField(address, mine, base)


def add_item(store: LiveResourceStore, uid: str, address: Address, form: Mapping[str, str]) -> Operation:
    """The operation that appends a new item to the list at ``address``: a keyed list's from its
    key fields (``item.<key>``), a row from ``value``."""
    path = editable_path(store, uid, address)
    items = get_at(store.draft(uid), path)
    keys = store.list_keys(uid, path)
    shown = list_kind(path, [] if items is MISSING else items, keys)
    if shown == "items" and keys is not None:
        try:
            node = schema_node(store, uid, path)
            submitted = {key: form.get(f"item.{key}") for key in keys}
            value: t.Any = new_item(path, items, keys, submitted, node.item() if node is not None else None)
        except ItemRefused as refused:
            raise RequestRefused(RequestProblem.UNREADABLE_ITEM, str(refused)) from None
    elif shown == "rows":
        value = normalized_lines(form.get("value", ""), MISSING)
    else:
        raise RequestRefused(RequestProblem.ADDED_AS_TEXT)
    return AddItem(address, value)


def remove_item(address: Address, form: Mapping[str, str]) -> Operation:
    """The operation that removes the item at ``address``; a row by its text (``value``) when given."""
    return RemoveItem(address, _row(form))


def move_item(address: Address, form: Mapping[str, str]) -> Operation:
    """The operation that moves the item at ``address`` one place ``up`` or ``down`` (``to``)."""
    step = MOVES.get(form.get("to", ""))
    if step is None:
        raise RequestRefused(RequestProblem.NO_DIRECTION)
    return MoveItem(address, step, _row(form))


def _row(form: Mapping[str, str]) -> t.Any:
    return normalized_lines(form["value"], MISSING) if "value" in form else MISSING
