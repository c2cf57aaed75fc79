"""Field edits: ``POST /ui/components/<id>/edit`` changes the session's draft.

The form body names the operation and its path (a JSON array of segments, as the field rendered
it; an item of a keyed list is named by its keys, ``{"name": "web"}``, see
:mod:`flask_krm.store.items`): ``op`` is ``set`` (``value``, and ``from``: the text the field
showed when the person began typing), ``add_key`` (map path, ``key``, ``value``), ``remove_key``,
``rename_key`` (map path, ``key``, ``new_key``), ``add_item`` (list path; ``item.<key>`` per key of
a keyed list, ``value`` for a row), ``remove_item``, ``move_item`` (``to``: ``up`` or ``down``;
rows also name their text, ``value``), ``add_member`` (object path, ``member``: a member its schema
declares, added with :func:`~flask_krm.ui.schema_fields.initial_value`), ``remove_member`` (an
optional member's path), ``revert``, ``take_theirs`` or ``keep_mine``. A value is read as the
kind's schema types it (:func:`~flask_krm.ui.schema_fields.schema_parse`; a refusal is a 422 at the
field). The page is
named by the ``X-KRM-Page`` header and must belong to the caller's session; the CSRF check has
already run. The form is read into one store operation (:mod:`flask_krm.ui.edit_forms`: a value is
read back with the widget the field was rendered with, so a number stays a number) and performed
by the store (:func:`perform`, the one path of every edit: fields, items, rows, keys, the YAML
text, resolving conflicts, discarding), which decides what a change that reached the draft
meanwhile makes of it.

The answer carries no field values: the store notifies every page channel of the session (this
tab and the others), which morph the new draft in. The body only sets or clears the field's error
slot (``<hx-partial>``, applied whatever the status), and the ``X-KRM-Edits`` header the object's
edit sequence. Refusals say why, each from the one table (:mod:`flask_krm.ui.problems`): 400 for a
malformed request, 403 for a read-only path, 404 for an unknown page, component or object, 409 for
a key or item that vanished, 422 for a value the field cannot hold.
"""

from __future__ import annotations

import typing as t
from collections.abc import Callable, Mapping

from flask import Response, request

from ..bodies import JsonRefused, TooDeep, load_json
from ..htmx import EDITS_HEADER, PAGE_HEADER, html_response, partial, refusal_response
from ..runtime import runtime
from ..store import MISSING, LiveResourceStore, MalformedPathError, StoreError
from ..store.items import Address, as_address
from ..store.operations import (
    AddKey,
    KeepMine,
    Operation,
    Outcome,
    RemoveKey,
    RenameKey,
    Revert,
    SetField,
    TakeTheirs,
)
from ..store.paths import get_at
from ..store.problems import EditRefused, Problem, ProblemKind, problem_of
from .binding import Binding, Refusal, bind
from .edit_forms import RequestRefused, add_item, editable_path, move_item, remove_item, schema_node, set_field
from .list_widgets import key_inputs
from .page import Component, EditorSpec, is_component_id
from .problems import RequestProblem, say
from .render import edited_object, render_template_fragment
from .schema_fields import MEMBER_STEP, SchemaRefused, initial_value, is_removable, schema_parse
from .state import store_policy
from .widgets import Field, label_for, normalized_lines, parse_text, path_json

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
RESOLVES: t.Final[Mapping[str, Callable[[Address], Operation]]] = {
    "remove_key": RemoveKey,
    "revert": Revert,
    "take_theirs": TakeTheirs,
    "keep_mine": KeepMine,
}
"""Operations named by their path alone."""

Build: t.TypeAlias = Callable[[LiveResourceStore, str], Operation]
"""Reads the request into an operation on the object ``uid`` of the store, as it is now."""


def perform(binding: Binding, build: Build) -> tuple[str, Outcome]:
    """Perform the operation ``build`` reads from the request on the component's object, as the
    session's drafts make edits (so that it lands whatever other workers write at the same time);
    the object's uid and the outcome. Raises :class:`~flask_krm.store.problems.EditRefused` or
    :class:`~.edit_forms.RequestRefused`."""
    component = binding.component
    store = binding.store

    def apply() -> tuple[str, Outcome]:
        uid = edited_object(store, component, binding.page).uid
        if uid is None:
            raise EditRefused((Problem(ProblemKind.UNKNOWN_OBJECT),))
        try:
            operation = build(store, uid)
        except StoreError as error:  # an address the draft no longer has
            raise EditRefused((problem_of(error),)) from None
        return uid, store.perform(uid, operation)

    return binding.drafts.edit(component.scope, component.projection, apply, policy=store_policy(component))


def with_edits_header(response: Response, outcome: Outcome) -> Response:
    """``response`` with the edit sequence of the object after an edit (``X-KRM-Edits``)."""
    response.headers[EDITS_HEADER] = str(outcome.sequence)
    return response


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
        raise RequestRefused(RequestProblem.NO_FIELD, name)
    try:
        return as_address(load_json(raw, what=f"the {name}"))
    except TooDeep as refused:
        raise RequestRefused(RequestProblem.UNREADABLE_REQUEST, f"{str(refused).capitalize()}.") from None
    except (JsonRefused, MalformedPathError):
        raise RequestRefused(RequestProblem.NOT_A_PATH, name) from None


def _text(name: str, *, required: bool = True) -> str:
    value = request.form.get(name)
    if value is None:
        if required:
            raise RequestRefused(RequestProblem.NO_FIELD, name)
        return ""
    return value


def read_edit(op: str, path: Address) -> Build:
    """How to read the field edit ``op`` on ``path`` into an operation (see the module doc)."""
    if op == "set":
        value, started = request.form.get("value"), request.form.get("from")
        return lambda store, uid: set_field(store, uid, path, value, started)
    if op in ("add_key", "rename_key"):
        key = _text("key")
        if not key:
            raise RequestRefused(RequestProblem.EMPTY_KEY)
        if op == "add_key":
            value = normalized_lines(_text("value", required=False), MISSING)
            return lambda store, uid: AddKey(path + (key,), _schema_value(store, uid, path + (key,), value))
        new_key = _text("new_key")
        if not new_key:
            raise RequestRefused(RequestProblem.EMPTY_NEW_KEY, path=path + (key,))
        return lambda store, uid: RenameKey(path + (key,), new_key)
    form = request.form
    if op == "add_member":
        name = _text("member")
        return lambda store, uid: _add_member(store, uid, path, name)
    if op == "remove_member":
        return lambda store, uid: _remove_member(store, uid, path)
    if op == "add_item":
        return lambda store, uid: add_item(store, uid, path, form)
    if op == "remove_item":
        return lambda store, uid: remove_item(path, form)
    if op == "move_item":
        return lambda store, uid: move_item(path, form)
    return lambda store, uid: RESOLVES[op](path)


def _schema_value(store: LiveResourceStore, uid: str, address: Address, value: str) -> t.Any:
    """A new key's ``value`` as the schema of its place types it (text when it says nothing)."""
    node = schema_node(store, uid, editable_path(store, uid, address))
    if node is None or not value:
        return value
    try:
        return schema_parse(node, parse_text)(value, MISSING)
    except SchemaRefused as refused:
        raise RequestRefused(RequestProblem.UNREADABLE_VALUE, str(refused)) from None


def _add_member(store: LiveResourceStore, uid: str, address: Address, name: str) -> Operation:
    """Add the member ``name`` its object's schema declares, with its initial value (when absent);
    ``member/its-member`` adds a member of a member shown as absent (``resources/limits``)."""
    where = store.resolve(uid, address)
    parent = schema_node(store, uid, where)
    outer, _, inner = name.partition(MEMBER_STEP)
    member = parent.member(outer) if parent is not None and outer in parent.members() else None
    if member is not None and inner:
        member = member.member(inner) if inner in member.members() else None
    if member is None:
        raise RequestRefused(RequestProblem.NO_MEMBER)
    present = get_at(store.draft(uid), where + (outer,))
    if inner and present is MISSING:
        return AddKey(address + (outer,), {inner: initial_value(member)})
    if inner and not isinstance(present, Mapping):
        raise RequestRefused(RequestProblem.NO_MEMBER)
    names = (outer, inner) if inner else (outer,)
    added = address + names
    present = get_at(store.draft(uid), where + names)
    if present is not MISSING:
        return SetField(added, present)  # already there: it stays as it is
    return AddKey(added, initial_value(member))


def _remove_member(store: LiveResourceStore, uid: str, address: Address) -> Operation:
    """Remove an optional member (one its object's schema does not require)."""
    where = store.resolve(uid, address)
    if not where or not is_removable(schema_node(store, uid, where[:-1]), where[-1]):
        raise RequestRefused(RequestProblem.REQUIRED_MEMBER)
    return RemoveKey(address)


def _fresh_add_item(binding: Binding, uid: str, list_path: Address) -> str:
    """Empty key fields for the list at ``list_path``, replacing the ones just used."""
    component = binding.component
    fid = component.element_id(list_path)
    store = binding.store
    where = store.resolve(uid, list_path)
    keys = store.list_keys(uid, where)
    items = get_at(store.draft(uid), where)
    node = schema_node(store, uid, where)
    item = node.item() if node is not None else None
    row = render_template_fragment(
        "krm/list_add_item.html",
        fid=fid,
        f=Field(
            list_path, str(list_path[-1]), "items" if keys else "rows", True, keys=key_inputs(items, keys or (), item)
        ),
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
        if not isinstance(component.spec, EditorSpec):
            raise RequestRefused(RequestProblem.NO_FIELDS)
        op = request.form.get("op", "")
        if op not in OPERATIONS:
            raise RequestRefused(RequestProblem.UNKNOWN_OPERATION, op)
        path = _path()
        uid, outcome = perform(binding, read_edit(op, path))
    except RequestRefused as refused:
        said = say(refused.kind, refused.detail)
        where = refused.path if refused.path is not None else _json_path()
        return _answer(component, where if said.at_field else None, said.message, said.status)
    except EditRefused as refused:
        problem = refused.problems[0]
        said = say(problem.kind, problem.detail, problem.path)
        return _answer(component, _json_path() if said.at_field else None, said.message, said.status)
    extra = ""
    if op == "add_key":
        extra = _fresh_add_row(component, path)
    elif op == "add_item":
        try:
            extra = _fresh_add_item(binding, uid, path)
        except StoreError:  # the list went meanwhile: the channel's render shows what is there
            extra = ""
    answered = path + (request.form["key"],) if op == "rename_key" else path
    return with_edits_header(_answer(component, answered, extra=extra), outcome)


def _json_path() -> Address | None:
    """The request's path, if it is one (for choosing the error slot of a refusal)."""
    try:
        return as_address(load_json(request.form.get("path", ""), what="the path"))
    except (JsonRefused, MalformedPathError):
        return None
