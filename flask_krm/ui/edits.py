"""Field edits: ``POST /ui/components/<id>/edit`` changes the session's draft.

The form body names the operation and its path (a JSON array of segments, as the field rendered
it; an item of a keyed list is named by its keys, ``{"name": "web"}``, see
:mod:`flask_krm.store.items`): ``op`` is ``set`` (``value``, and ``from``: the text the field
showed when the person began typing), ``add_key`` (map path, ``key``, ``value``), ``remove_key``,
``rename_key`` (map path, ``key``, ``new_key``), ``add_item`` (list path; ``item.<key>`` per key of
a keyed list, ``value`` for a row), ``remove_item``, ``add_member`` (object path, ``member``: a
member its schema declares, added with :func:`~flask_krm.ui.schema_fields.initial_value`),
``remove_member`` (an optional member's path), ``move_item`` (``to``: ``up`` or ``down``;
rows also name their text, ``value``), ``revert``, ``take_theirs`` or ``keep_mine``. The page is
named by the ``X-KRM-Page`` header and must belong to the caller's session; the CSRF check has
already run. A submitted value is read back with the widget the field was rendered with
(:func:`flask_krm.ui.widgets.widget_for`) as the kind's schema types it
(:func:`~flask_krm.ui.schema_fields.schema_parse`: an int-or-string, a quantity, an enum's value,
an integer within its bounds; a refusal is a 422 at the field), so a number stays a number, and applied as the change
from ``from`` (:mod:`flask_krm.ui.item_edits`): an array written as text is merged by lines, never
set whole.

The answer carries no field values: the store notifies every page channel of the session (this
tab and the others), which morph the new draft in. The body only sets or clears the field's error
slot (``<hx-partial>``, applied whatever the status). Refusals say why: 400 for a malformed
request, 403 for a read-only path, 404 for an unknown page, component or object, 409 for a key
or item that vanished, 422 for a value the field cannot hold.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from flask import Response, request

from ..bodies import JsonRefused, TooDeep, load_json
from ..htmx import EDITS_HEADER, PAGE_HEADER, html_response, partial, refusal_response
from ..kube_schema import SchemaView, as_view
from ..runtime import runtime
from ..store import (
    MISSING,
    InvalidValueError,
    ItemExistsError,
    KeyExistsError,
    LiveResourceStore,
    MalformedPathError,
    MissingItemError,
    MissingKeyError,
    PathTypeError,
    ReadOnlyPathError,
    UnknownResourceError,
)
from ..store.items import Address, as_address
from ..store.paths import Path, get_at
from .binding import Binding, Refusal, bind
from .item_edits import add_item, edit_value, move_item, remove_item
from .list_widgets import key_inputs
from .page import Component, EditorSpec, is_component_id
from .render import edited_object, render_template_fragment
from .schema_fields import SchemaRefused, initial_value, is_removable, schema_parse
from .state import store_policy
from .widgets import Field, ValueRefused, label_for, normalized_lines, parse_text, path_json

OPERATIONS: t.Final = frozenset(
    {
        "set",
        "add_key",
        "remove_key",
        "rename_key",
        "add_item",
        "remove_item",
        "move_item",
        "add_member",
        "remove_member",
        "revert",
        "take_theirs",
        "keep_mine",
    }
)
ITEM_OPERATIONS: t.Final = {"add_item": add_item, "remove_item": remove_item, "move_item": move_item}
READ_ONLY_MESSAGE: t.Final = "This field is read-only."


class EditRefused(Exception):
    """An edit that cannot be made: the status, the message and the field whose error slot shows it."""

    def __init__(self, status: int, message: str, path: Address | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.path = path


def _error_slot(component: Component, path: Address | None) -> str:
    if path is None:
        return f"{component.id}-outcome"
    return component.element_id(path, "-error")


def _answer(
    component: Component, path: Address | None, message: str = "", status: int = 200, extra: str = ""
) -> Response:
    return html_response(partial(_error_slot(component, path), message) + extra, status)


def _path(name: str = "path") -> Address:
    raw = request.form.get(name)
    if raw is None:
        raise EditRefused(400, f"The request has no {name}.")
    try:
        return as_address(load_json(raw, what=f"the {name}"))
    except TooDeep as refused:
        raise EditRefused(400, f"{str(refused).capitalize()}.") from None
    except (JsonRefused, MalformedPathError):
        raise EditRefused(400, f"The {name} is not a JSON array of keys, indexes and item keys.") from None


def _text(name: str, *, required: bool = True) -> str:
    value = request.form.get(name)
    if value is None:
        if required:
            raise EditRefused(400, f"The request has no {name}.")
        return ""
    return value


def _check_policy(spec: EditorSpec, path: Address) -> None:
    text = tuple(_ITEM if isinstance(segment, Mapping) else str(segment) for segment in path)
    if not spec.policy.covers(text):
        raise EditRefused(403, READ_ONLY_MESSAGE, path)


_ITEM: t.Final = "\x00item"
"""An item key as a policy sees it: no policy root passes through a list."""


def apply_edit(binding: Binding) -> tuple[Address, str]:
    """Perform the requested edit on the binding's store; returns the field path and any extra HTML."""
    spec = binding.component.spec
    if not isinstance(spec, EditorSpec):
        raise EditRefused(400, "A list has no fields to edit.")
    op = request.form.get("op", "")
    if op not in OPERATIONS:
        raise EditRefused(400, f"Unknown edit operation {op!r}.")
    path = _path()
    store = binding.store
    uid = edited_object(store, binding.component, binding.page).uid
    if uid is None:
        raise EditRefused(404, "The object is no longer here.", path)
    extra = ""
    if op in ("add_key", "rename_key"):
        key = _text("key")
        if not key:
            raise EditRefused(422, "Enter a key.", path)
        entry = path + (key,)
        _check_policy(spec, entry)
        where = store.resolve(uid, entry)
        if op == "add_key":
            value = normalized_lines(_text("value", required=False), MISSING)
            node = _schema_node(store, uid, where)
            if node is not None and value:
                try:
                    value = schema_parse(node, parse_text)(value, MISSING)
                except SchemaRefused as refused:
                    raise EditRefused(422, str(refused), path) from None
            store.add_key(uid, where, value)
            extra = _fresh_add_row(binding.component, path)
            return path, extra
        new_key = _text("new_key")
        if not new_key:
            raise EditRefused(422, "A key cannot be empty.", entry)
        if new_key != key:
            _check_policy(spec, path + (new_key,))
            store.rename_key(uid, where, new_key)
        return entry, extra
    _check_policy(spec, path)
    where = store.resolve(uid, path)
    try:
        if op == "set":
            if store.is_read_only(uid, where):  # a withheld value has no widget to read one with
                raise EditRefused(403, READ_ONLY_MESSAGE, path)
            node = _schema_node(store, uid, where)
            edit_value(
                store,
                uid,
                where,
                request.form.get("value"),
                request.form.get("from"),
                reader=(lambda parse: schema_parse(node, parse)) if node is not None else None,
            )
        elif op == "add_member":
            name = _text("member")
            parent = _schema_node(store, uid, where)
            member = parent.member(name) if parent is not None and name in parent.members() else None
            if member is None:
                raise EditRefused(422, "Choose a field to add.", path)
            _check_policy(spec, path + (name,))
            if get_at(store.draft(uid), where + (name,)) is MISSING:
                store.set_value(uid, where + (name,), initial_value(member))
        elif op == "remove_member":
            if not where or not is_removable(_schema_node(store, uid, where[:-1]), where[-1]):
                raise EditRefused(422, "This field cannot be removed: its object needs it.", path)
            store.remove_key(uid, where)
        elif op in ITEM_OPERATIONS:
            ITEM_OPERATIONS[op](store, uid, where, request.form)
            if op == "add_item":
                extra = _fresh_add_item(binding, uid, path)
        elif op == "remove_key":
            store.remove_key(uid, where)
        elif op in ("revert", "take_theirs"):
            store.revert(uid, where)
        else:
            store.keep_mine(uid, where)
    except ValueRefused as refused:
        raise EditRefused(refused.status, refused.message, path if refused.about_value else None) from None
    except SchemaRefused as refused:
        raise EditRefused(422, str(refused), path) from None
    return path, extra


def _schema_node(store: LiveResourceStore, uid: str, path: Path) -> SchemaView | None:
    """The schema of the value at ``path`` of ``uid`` (``None``: its kind's schema says nothing)."""
    schema = store.kind_schema(uid)
    return as_view(schema).at(path) if schema is not None else None


def _fresh_add_item(binding: Binding, uid: str, list_path: Address) -> str:
    """Empty key fields for the list at ``list_path``, replacing the ones just used."""
    component = binding.component
    fid = component.element_id(list_path)
    store = binding.store
    where = store.resolve(uid, list_path)
    keys = store.list_keys(uid, where)
    items = get_at(store.draft(uid), where)
    row = render_template_fragment(
        "krm/list_add_item.html",
        fid=fid,
        f=Field(list_path, str(list_path[-1]), "items" if keys else "rows", True, keys=key_inputs(items, keys or ())),
        edit_url=request.path,
    )
    return partial(f"{fid}-add", row, swap="outerHTML")


def _fresh_add_row(component: Component, map_path: Address) -> str:
    """An empty add row for the map at ``map_path``, replacing the one just used."""
    fid = component.element_id(map_path)
    labels: dict[t.Any, str] = dict(component.spec.labels) if isinstance(component.spec, EditorSpec) else {}
    # a map inside a list item (named by its keys, a dict) is never a labelled root
    named = labels.get(tuple(map_path)) if not any(isinstance(s, Mapping) for s in map_path) else None
    row = render_template_fragment(
        "krm/map_add_row.html",
        fid=fid,
        map_path_json=path_json(map_path),
        label=named or label_for(map_path),  # as the map's field says
        edit_url=request.path,
    )
    return partial(f"{fid}-add", row, swap="outerHTML")


def bind_request(component_id: str) -> Binding | Response:
    """This request's binding to the caller's ``component_id``, or its refusal answered in the
    component's outcome region (an empty answer when the URL names no component)."""
    try:
        return bind(runtime(), request.headers.get(PAGE_HEADER), component_id)
    except Refusal as refusal:
        if not is_component_id(component_id):
            return html_response("", refusal.status)
        return refusal_response(
            f"{component_id}-outcome", refusal.status, refusal.message, session_ended=refusal.ends_session
        )


def edit_response(component_id: str) -> Response:
    """Handle one field edit (see the module doc)."""
    binding = bind_request(component_id)
    if isinstance(binding, Response):
        return binding
    component = binding.component
    try:
        path, extra = binding.drafts.edit(
            component.scope, component.projection, lambda: apply_edit(binding), policy=store_policy(component)
        )
    except EditRefused as refused:
        return _answer(component, refused.path, refused.message, refused.status)
    except ReadOnlyPathError:
        return _answer(component, _json_path(), READ_ONLY_MESSAGE, 403)
    except KeyExistsError as exc:
        key = exc.path[-1] if isinstance(exc.path, tuple) and exc.path else ""
        return _answer(component, _json_path(), f"A key named {key!s} already exists.", 422)
    except MissingKeyError:
        return _answer(component, _json_path(), "That key no longer exists.", 409)
    except MissingItemError:
        return _answer(component, _json_path(), "That item is no longer in the list.", 409)
    except ItemExistsError:
        return _answer(component, _json_path(), "An item with these keys is already in the list.", 422)
    except InvalidValueError as exc:
        return _answer(component, _json_path(), f"This value cannot be stored: {exc}.", 422)
    except PathTypeError:
        return _answer(component, _json_path(), "This field no longer has that shape.", 409)
    except MalformedPathError:
        return _answer(component, None, "The path is not a path of this object.", 400)
    except UnknownResourceError:
        return _answer(component, None, "The object is no longer here.", 404)
    response = _answer(component, path, extra=extra)
    uid = edited_object(binding.store, component, binding.page).uid
    response.headers[EDITS_HEADER] = str(binding.store.edit_sequence(uid) if uid is not None else 0)
    return response


def _json_path() -> Address | None:
    """The request's path, if it is one (for choosing the error slot of a refusal)."""
    try:
        return as_address(load_json(request.form.get("path", ""), what="the path"))
    except (JsonRefused, MalformedPathError):
        return None
