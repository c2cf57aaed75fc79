"""Field edits: ``POST /ui/components/<id>/edit`` changes the session's draft.

The form body names the operation and its path (a JSON array of segments, as the field rendered
it): ``op`` is ``set`` (``value``), ``add_key`` (map path, ``key``, ``value``), ``remove_key``,
``rename_key`` (map path, ``key``, ``new_key``), ``revert``, ``take_theirs`` or ``keep_mine``. The
page is named by the ``X-KRM-Page`` header and must belong to the caller's session; the CSRF check
has already run. A submitted value is read back with the widget the field was rendered with
(:func:`flask_krm.ui.widgets.widget_for`), so a number stays a number and an array is parsed from
its JSON text.

The answer carries no field values: the store notifies every page channel of the session (this
tab and the others), which morph the new draft in. The body only sets or clears the field's error
slot (``<hx-partial>``, applied whatever the status). Refusals say why: 400 for a malformed
request, 403 for a read-only path, 404 for an unknown page, component or object, 409 for a key
that vanished, 422 for a value the field cannot hold.
"""

from __future__ import annotations

import re
import typing as t

from flask import Response, request

from ..bodies import JsonRefused, TooDeep, load_json
from ..htmx import PAGE_HEADER, html_response, partial
from ..runtime import runtime
from ..store import (
    MISSING,
    InvalidValueError,
    KeyExistsError,
    MalformedPathError,
    MissingKeyError,
    PathTypeError,
    ReadOnlyPathError,
    UnknownResourceError,
)
from ..store.paths import Path, as_path, get_at, text_path
from .binding import Binding, Refusal, bind
from .page import Component, EditorSpec
from .render import edited_object, render_template_fragment
from .widgets import WIDGETS, ValueRefused, label_for, normalized_lines, path_json, widget_for

OPERATIONS: t.Final = frozenset({"set", "add_key", "remove_key", "rename_key", "revert", "take_theirs", "keep_mine"})
READ_ONLY_MESSAGE: t.Final = "This field is read-only."


class EditRefused(Exception):
    """An edit that cannot be made: the status, the message and the field whose error slot shows it."""

    def __init__(self, status: int, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.path = path


def _error_slot(component: Component, path: Path | None) -> str:
    if path is None:
        return f"{component.id}-outcome"
    return component.element_id(path, "-error")


def _answer(component: Component, path: Path | None, message: str = "", status: int = 200, extra: str = "") -> Response:
    return html_response(partial(_error_slot(component, path), message) + extra, status)


def _path(name: str = "path") -> Path:
    raw = request.form.get(name)
    if raw is None:
        raise EditRefused(400, f"The request has no {name}.")
    try:
        return as_path(load_json(raw, what=f"the {name}"))
    except TooDeep as refused:
        raise EditRefused(400, f"{str(refused).capitalize()}.") from None
    except (JsonRefused, MalformedPathError):
        raise EditRefused(400, f"The {name} is not a JSON array of keys and indexes.") from None


def _text(name: str, *, required: bool = True) -> str:
    value = request.form.get(name)
    if value is None:
        if required:
            raise EditRefused(400, f"The request has no {name}.")
        return ""
    return value


def read_value(path: Path, draft: t.Any, server: t.Any) -> t.Any:
    """The submitted ``value`` for the field at ``path``, read by the widget that shows it
    (:data:`~flask_krm.ui.widgets.WIDGETS`).

    Raises :class:`EditRefused` (400 or 422) for text the widget cannot turn into a value.
    """
    server_value = get_at(server, path)
    widget = WIDGETS.get(widget_for(path, get_at(draft, path), server_value))
    if widget is None or widget.parse is None:
        raise EditRefused(400, "This field is not edited as one value.", path)
    try:
        return widget.parse(request.form.get("value"), server_value)
    except ValueRefused as refused:
        raise EditRefused(refused.status, refused.message, path if refused.about_value else None) from None


def _check_policy(spec: EditorSpec, path: Path) -> None:
    if not spec.policy.covers(text_path(path)):
        raise EditRefused(403, READ_ONLY_MESSAGE, path)


def apply_edit(binding: Binding) -> tuple[Path, str]:
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
    if op == "set":
        _check_policy(spec, path)
        if store.is_read_only(uid, path):  # a withheld value has no widget to read one with
            raise EditRefused(403, READ_ONLY_MESSAGE, path)
        store.set_value(uid, path, read_value(path, store.draft(uid), store.server(uid)))
        return path, extra
    if op in ("add_key", "rename_key"):
        key = _text("key")
        if not key:
            raise EditRefused(422, "Enter a key.", path)
        entry = path + (key,)
        if op == "add_key":
            _check_policy(spec, entry)
            store.add_key(uid, entry, normalized_lines(_text("value", required=False), MISSING))
            extra = _fresh_add_row(binding.component, path)
            return path, extra
        new_key = _text("new_key")
        if not new_key:
            raise EditRefused(422, "A key cannot be empty.", entry)
        if new_key != key:
            _check_policy(spec, entry)
            _check_policy(spec, path + (new_key,))
            store.rename_key(uid, entry, new_key)
        return entry, extra
    _check_policy(spec, path)
    if op == "remove_key":
        store.remove_key(uid, path)
    elif op in ("revert", "take_theirs"):
        store.revert(uid, path)
    else:
        store.keep_mine(uid, path)
    return path, extra


def _fresh_add_row(component: Component, map_path: Path) -> str:
    """An empty add row for the map at ``map_path``, replacing the one just used."""
    fid = component.element_id(map_path)
    labels = dict(component.spec.labels) if isinstance(component.spec, EditorSpec) else {}
    row = render_template_fragment(
        "krm/map_add_row.html",
        fid=fid,
        map_path_json=path_json(map_path),
        label=labels.get(tuple(map_path)) or label_for(map_path),  # as the map's field says
        edit_url=request.path,
    )
    return partial(f"{fid}-add", row, swap="outerHTML")


def edit_response(component_id: str) -> Response:
    """Handle one field edit (see the module doc)."""
    try:
        binding = bind(runtime(), request.headers.get(PAGE_HEADER), component_id)
    except Refusal as refusal:
        body = partial(f"{component_id}-outcome", refusal.message) if _safe_id(component_id) else ""
        return html_response(body, refusal.status)
    component = binding.component
    try:
        path, extra = apply_edit(binding)
    except EditRefused as refused:
        return _answer(component, refused.path, refused.message, refused.status)
    except ReadOnlyPathError:
        return _answer(component, _json_path(), READ_ONLY_MESSAGE, 403)
    except KeyExistsError as exc:
        key = exc.path[-1] if isinstance(exc.path, tuple) and exc.path else ""
        return _answer(component, _json_path(), f"A key named {key!s} already exists.", 422)
    except MissingKeyError:
        return _answer(component, _json_path(), "That key no longer exists.", 409)
    except InvalidValueError as exc:
        return _answer(component, _json_path(), f"This value cannot be stored: {exc}.", 422)
    except PathTypeError:
        return _answer(component, _json_path(), "This field no longer has that shape.", 409)
    except MalformedPathError:
        return _answer(component, None, "The path is not a path of this object.", 400)
    except UnknownResourceError:
        return _answer(component, None, "The object is no longer here.", 404)
    return _answer(component, path, extra=extra)


def _safe_id(value: str) -> bool:
    return bool(re.fullmatch(r"krm-[0-9a-f]{12}", value))


def _json_path() -> Path | None:
    """The request's path, if it is one (for choosing the error slot of a refusal)."""
    try:
        return as_path(load_json(request.form.get("path", ""), what="the path"))
    except (JsonRefused, MalformedPathError):
        return None
