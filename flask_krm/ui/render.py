"""Server-side rendering of live components into HTML fragments.

A component's *body* is the part live updates replace (by morphing): the list's rows (each
carrying its object's uid, and the list's row actions), or the editor's fields. Bodies are rendered
from the session's store with the templates ``krm/list_body.html``, ``krm/list_row.html`` and
``krm/editor_body.html`` (hosts override them by path). Rendering goes straight through the
application's Jinja environment, not
``render_template``: a body depends only on the store, never on the request, which is what lets
a fragment be shared.

Sharing: a list row is rendered once per visible content and kept in a bounded
:class:`FragmentCache`; every session showing the same content reuses the bytes. An editor is
rendered from its :class:`EditorModel` (what its body shows, as data): for an object this session
has not touched, one model per delivery shared by every such session, whose body is kept in the
cache under the object's content. Only an editor holding this session's draft is rendered for the
session alone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import typing as t
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from flask import current_app, has_request_context, request, url_for
from markupsafe import Markup

from ..events import Redaction
from ..htmx import partial
from ..store import RecoveryCopy
from ..store.paths import MISSING, Path, pointer_to_path, text_path
from ..store.truth import ServerObject
from .list_query import ListQuery, column_keys
from .list_view import ListIndex, Row
from .offer import EVERYTHING, Offer
from .page import Component, EditorSpec, ListSpec, Page
from .recovery import CopyOut, copy_out, named_recovery_copy, recovery_copy
from .widgets import Built, EditorView, ObjectState, build_editor
from .yaml_view import YamlView, build_yaml_view

if t.TYPE_CHECKING:
    from ..store import LiveResourceStore

log = logging.getLogger("flask_krm")

StreamState: t.TypeAlias = t.Literal["connecting", "syncing", "live", "retrying", "terminal"]


@dataclass(frozen=True, slots=True)
class StreamStatus:
    """Where one component's stream stands; ``reason`` says why it retries or stopped."""

    state: StreamState
    reason: str = ""

    @property
    def writable(self) -> bool:
        return self.state == "live"


CONNECTING: t.Final = StreamStatus("connecting")


@dataclass(frozen=True, slots=True)
class Identity:
    """What the editor header shows about its object."""

    kind: str
    name: str
    namespace: str


class FragmentCache:
    """A bounded, least-recently-used map of rendered fragments shared across sessions."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Hashable, Markup] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_render(self, key: Hashable, render: Callable[[], Markup]) -> Markup:
        """The fragment cached under ``key``, rendering (and caching) it on a miss."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return found
        fragment = render()
        with self._lock:
            self.misses += 1
            self._items[key] = fragment
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return fragment

    def __len__(self) -> int:
        return len(self._items)


def content_digest(value: t.Any) -> str:
    """A digest of JSON content, insensitive to key order."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def render_template_fragment(template_name: str, /, **context: t.Any) -> Markup:
    """Render a flask-krm template (overridable by path) without request-time context processors."""
    template = current_app.jinja_env.get_or_select_template(template_name)
    return Markup(template.render(context))


_EDIT_URLS: dict[tuple[int, str, str], str] = {}
EDIT_URLS_KEPT: t.Final = 1024


def edit_url(component: Component) -> str:
    """Where field edits of ``component`` are posted (the page is named by the ``X-KRM-Page`` header);
    built once per application, script root and component (every live update renders it)."""
    if not has_request_context():
        return url_for("krm.ui_edit", component_id=component.id)
    key = (id(current_app._get_current_object()), request.script_root, component.id)  # type: ignore[attr-defined]
    found = _EDIT_URLS.get(key)
    if found is None:
        if len(_EDIT_URLS) >= EDIT_URLS_KEPT:
            _EDIT_URLS.clear()
        found = _EDIT_URLS[key] = url_for("krm.ui_edit", component_id=component.id)
    return found


# ----------------------------------------------------------------------------------- lists --


def row_id(component: Component, uid: str) -> str:
    return f"{component.id}-r{hashlib.sha256(uid.encode()).hexdigest()[:12]}"


@dataclass(frozen=True, slots=True)
class RowButton:
    """A row action as ``krm/list_row.html`` renders it: class name, label and URL."""

    name: str
    label: str
    url: str


def row_buttons(component: Component, offer: Offer = EVERYTHING) -> tuple[RowButton, ...]:
    """The row actions of the list ``component`` that ``offer`` shows, with their URLs (needs an
    application context)."""
    spec = component.spec
    assert isinstance(spec, ListSpec)
    return tuple(
        RowButton(action.name, action.label, url_for(action.endpoint, component_id=component.id))
        for action in spec.row_actions
        if offer.allows(action.verb)
    )


def list_query(component: Component, page: Page | None) -> ListQuery:
    """The view of the list ``component`` on ``page`` (the whole first page without one)."""
    spec = component.spec
    assert isinstance(spec, ListSpec)
    found = page.queries.get(component.id) if page is not None else None
    return found if found is not None else ListQuery(spec.url_key)


def list_index(component: Component, store: LiveResourceStore | None, page: Page | None) -> ListIndex:
    """The index of every row of ``store`` as the list ``component`` shows them on ``page``: for a
    store reading a shared truth whose objects it shows as they are (nothing removed or adopted
    here), the one index of this view every such session shares, following the truth; otherwise a
    fresh one of the session's own."""
    spec = component.spec
    assert isinstance(spec, ListSpec)
    query = list_query(component, page)
    if store is not None and store.shared and not store.diverged():
        truth = store.truth

        def follower() -> ListIndex:
            index = ListIndex(spec, query, spec.page_size)
            index.follow(truth)
            return index

        return truth.view(("list", spec, query), follower)
    index = ListIndex(spec, query, spec.page_size)
    index.rebuild(store)
    return index


def render_row(component: Component, row: Row, actions: tuple[RowButton, ...], cache: FragmentCache) -> Markup:
    """One row, rendered once per content and shared by every session showing it."""
    spec = component.spec
    context = {"row_id": row_id(component, row.uid), "uid": row.uid, "name": row.name, "cells": row.cells}
    return cache.get_or_render(
        ("row", component.id, row.uid, row.name, row.cells, row.href, actions),
        lambda: render_template_fragment(
            "krm/list_row.html", component=component, spec=spec, actions=actions, href=row.href, **context
        ),
    )


def list_context(component: Component, status: StreamStatus, index: ListIndex) -> dict[str, t.Any]:
    """What ``krm/list_body.html`` and its parts (count, pager, empty state) are rendered with."""
    spec = component.spec
    assert isinstance(spec, ListSpec)
    return {
        "component": component,
        "spec": spec,
        "status": status,
        "query": index.query,
        "window": index.window(),
        "sort_keys": column_keys([column.header for column in spec.columns]),
    }


def render_list_part(template_name: str, component: Component, status: StreamStatus, index: ListIndex) -> Markup:
    """One part of a list body alone (``krm/list_count.html``, ``krm/list_pager.html``)."""
    return render_template_fragment(template_name, **list_context(component, status, index))


def render_list_body(
    component: Component,
    store: LiveResourceStore | None,
    status: StreamStatus,
    cache: FragmentCache,
    page: Page | None = None,
    index: ListIndex | None = None,
    actions: tuple[RowButton, ...] | None = None,
) -> Markup:
    """The page of rows a live list shows (none without a store), each row shared across sessions
    through ``cache``; ``index``: the rows already read (else they are read from ``store``);
    ``actions``: the row buttons this person is offered (default: every one)."""
    if index is None:
        index = list_index(component, store, page)
    context = list_context(component, status, index)
    if actions is None:
        actions = row_buttons(component)
    rows = [render_row(component, row, actions, cache) for row in context["window"].rows]
    return render_template_fragment("krm/list_body.html", rows=rows, actions=actions, **context)


# --------------------------------------------------------------------------------- editors --


def find_object(store: LiveResourceStore, spec: EditorSpec) -> str | None:
    """The uid of the object an editor shows: the newest held object with the scope's name."""
    found = store.named(spec.scope.name or "", spec.scope.namespace)
    return found[-1] if found else None


@dataclass(frozen=True, slots=True)
class EditedObject:
    """What one editor on one page edits.

    :param uid: the object being edited, or ``None`` when there is none to edit.
    :param removed: the recovery copy of the object this page was editing with unsaved changes,
        since deleted (or replaced under the same name); the editor then edits nothing.
    :param replacement: the uid now holding the name, when ``removed`` was replaced.
    """

    uid: str | None
    removed: RecoveryCopy | None = None
    replacement: str | None = None


def edited_object(store: LiveResourceStore, component: Component, page: Page | None = None) -> EditedObject:
    """The object ``component`` edits on ``page``, binding the page to it.

    A page edits the object it first showed under the editor's name. When that object leaves the
    store while the session holds a recovery copy of its unsaved changes, the page stays bound to
    it: the editor reports the removal (and any replacement under the same name) and edits
    nothing, so the person's changes never land on a replacement; a replacement is opened by
    loading the page again. Without unsaved changes there is nothing to lose, and the page follows
    whatever object now has the name. A page opened while no object has the name (a reload after
    the deletion, on any worker) is bound to the session's recovery copy of the most recently
    removed one, so its unsaved changes stay offered until the copy's lifetime ends. Without a
    page, the newest object with the name is edited.
    """
    spec = component.spec
    assert isinstance(spec, EditorSpec)
    current = find_object(store, spec)
    if page is None:
        return EditedObject(current)
    bound = page.bound.get(component.id)
    if bound is not None and bound != current:
        if bound in store.uids():
            return EditedObject(bound)
        copy = recovery_copy(store, bound)
        if copy is not None:
            return EditedObject(None, copy, current)
    if current is None:
        copy = named_recovery_copy(store, spec.scope.name, spec.scope.namespace) if bound is None else None
        if copy is not None:
            page.bound[component.id] = copy.identity.uid
            return EditedObject(None, copy)
        page.bound.pop(component.id, None)
    else:
        page.bound[component.id] = current
    return EditedObject(current)


def _redaction_map(redactions: Sequence[Redaction]) -> dict[Path, int]:
    out: dict[Path, int] = {}
    for redaction in redactions:
        try:
            out[pointer_to_path(redaction.path)] = redaction.rev
        except ValueError:
            continue
    return out


def object_state(store: LiveResourceStore, uid: str, spec: EditorSpec) -> ObjectState:
    """Everything the field builder needs about ``uid``, with the editor's policy applied."""
    draft = store.draft(uid) or {}
    server = store.server(uid) or {}

    def read_only(path: Path) -> bool:
        return store.is_read_only(uid, path) or not spec.policy.covers(text_path(path))

    return ObjectState(
        draft=draft,
        server=server,
        read_only=read_only,
        dirty_paths=store.dirty(uid),
        conflicts={c.path: (c.theirs if c.present else MISSING) for c in store.conflicts(uid)},
        redacted=_redaction_map(store.redactions(uid)),
        list_keys=lambda path: store.list_keys(uid, path),
        schema=store.kind_schema(uid),
    )


def _identity(obj: Mapping[str, t.Any]) -> Identity:
    metadata = obj.get("metadata") or {}
    return Identity(
        kind=str(obj.get("kind", "")),
        name=str(metadata.get("name", "")),
        namespace=str(metadata.get("namespace", "")),
    )


@dataclass(frozen=True, slots=True)
class RemovedView:
    """What an editor shows when the object it edited with unsaved changes is gone, or when the
    server stops and its drafts are kept nowhere else (``restarting``)."""

    copy_out: CopyOut
    replaced: bool
    restarting: bool = False
    signed_out: bool = False
    """The page's session ended (sign-out, another sign-in, expiry) with these changes unsaved."""


@dataclass(frozen=True, slots=True, eq=False)
class EditorModel:
    """What an editor's body shows, as data: what live updates compare (see
    :mod:`flask_krm.ui.editor_updates`) and what its templates render.

    A clean object's model is made once per delivery and shared by every session that has not
    touched the object (:meth:`~flask_krm.store.truth.ServerObject.derived`), so its body and the
    messages made from it are made once too. Never mutated once made."""

    status: StreamStatus
    obj: Identity | None = None
    view: EditorView | None = None
    yaml: YamlView | None = None
    removed: RemovedView | None = None
    unrenderable: bool = False
    offer: Offer = EVERYTHING
    """The controls the body shows (Add and Remove need ``patch``): per person, never per spec."""
    body_key: t.Hashable | None = None
    """Where its body is kept in the :class:`FragmentCache` (``None``: a session's own, never
    kept): a clean object's content, so every session showing it reads one body."""

    @property
    def shape(self) -> str:
        """What the body holds: ``object``, ``removed``, ``unrenderable`` or ``none``."""
        if self.unrenderable:
            return "unrenderable"
        if self.removed is not None:
            return "removed"
        return "object" if self.obj is not None else "none"


def editor_model(
    component: Component,
    status: StreamStatus,
    state: ObjectState | None,
    patch: Mapping[str, t.Any] | None = None,
    *,
    body_key: t.Hashable | None = None,
    reuse: Built | None = None,
    built: Built | None = None,
    offer: Offer = EVERYTHING,
) -> EditorModel:
    """The model of ``component``'s body for the object in ``state`` (none: nothing to show),
    showing the controls of ``offer``; ``reuse`` and ``built``: see
    :func:`~flask_krm.ui.widgets.build_editor`."""
    spec = component.spec
    if state is None:
        return EditorModel(status, offer=offer)
    view = (
        build_editor(state, spec.fields, dict(spec.labels), reuse=reuse, built=built)
        if isinstance(spec, EditorSpec)
        else None
    )
    yaml = build_yaml_view(state, patch, spec.fields) if isinstance(spec, EditorSpec) and spec.yaml else None
    return EditorModel(status, _identity(state.server or state.draft), view, yaml, offer=offer, body_key=body_key)


def editor_context(component: Component, model: EditorModel) -> dict[str, t.Any]:
    """What ``krm/editor_body.html`` and ``krm/editor_part.html`` are rendered with."""
    return {
        "component": component,
        "spec": component.spec,
        "status": model.status,
        "obj": model.obj,
        "view": model.view,
        "edit_url": edit_url(component),
        "field_id": component.element_id,
        "removed": model.removed,
        "yaml": model.yaml,
        "unrenderable": model.unrenderable,
        "offer": model.offer,
    }


def render_model(component: Component, model: EditorModel, cache: FragmentCache | None = None) -> Markup:
    """The whole body of ``model`` (kept in ``cache`` under its :attr:`~EditorModel.body_key`)."""
    if model.body_key is None or cache is None:
        return render_template_fragment("krm/editor_body.html", **editor_context(component, model))
    return cache.get_or_render(
        model.body_key, lambda: render_template_fragment("krm/editor_body.html", **editor_context(component, model))
    )


def render_editor_part(component: Component, model: EditorModel, part: str, **fields: t.Any) -> Markup:
    """One element of ``model``'s body (``krm/editor_part.html``): ``part`` names it; ``field``
    and ``parent`` give a field's."""
    return render_template_fragment("krm/editor_part.html", part=part, **fields, **editor_context(component, model))


def _model_of(component: Component, status: StreamStatus, state: ObjectState | None, **more: t.Any) -> EditorModel:
    """:func:`editor_model`, or the unrenderable model when the draft cannot be shown."""
    try:
        return editor_model(component, status, state, **more)
    except Exception as exc:  # a draft no edit should have let in: say so, offer Discard
        log.warning("a draft cannot be rendered (%s); the editor offers to discard it", type(exc).__name__)
        return EditorModel(status, unrenderable=True)


def model_of_editor(
    component: Component,
    store: LiveResourceStore | None,
    status: StreamStatus,
    page: Page | None = None,
    *,
    edited: EditedObject | None = None,
    offer: Offer = EVERYTHING,
) -> EditorModel:
    """What ``component`` shows on ``page`` (see :func:`render_editor_body`) with the controls of
    ``offer``, as data: for an object this session has not touched, the one model of this delivery
    every session offered the same controls shares."""
    spec = component.spec
    assert isinstance(spec, EditorSpec)
    if edited is None:
        edited = edited_object(store, component, page) if store is not None else EditedObject(None)
    if edited.removed is not None:
        return EditorModel(status, removed=RemovedView(copy_out(edited.removed), edited.replacement is not None))
    uid = edited.uid
    if store is None or uid is None:
        return EditorModel(status, offer=offer, body_key=("editor", component.id, status, None))  # offers nothing
    clean = store.clean(uid)
    schema = id(store.kind_schema(uid))  # stores made while a cluster's schema could not be read render without it
    if clean is not None:  # one model of this delivery for every session that has not touched it
        return clean.derived(
            ("editor", component.id, status, schema, offer),
            lambda: _clean_model(component, status, store, uid, clean, offer),
        )
    state = object_state(store, uid, spec)
    if state.dirty_paths or state.conflicts:
        return _model_of(component, status, state, patch=store.patch(uid), offer=offer)
    return _model_of(component, status, state, body_key=_body_key(component, status, state, offer), offer=offer)


BUILDS_KEPT: t.Final = 64
"""Editors whose last clean build :func:`_clean_model` keeps, for the next delivery to start from."""
_BUILDS: OrderedDict[t.Hashable, tuple[t.Hashable, Built]] = OrderedDict()
_BUILDS_LOCK = threading.Lock()


def _clean_model(
    component: Component, status: StreamStatus, store: LiveResourceStore, uid: str, clean: ServerObject, offer: Offer
) -> EditorModel:
    """The model every session that has not touched ``uid`` shows: built from the truth's own
    (immutable) object, not a copy, starting from the last clean build of this editor, so the
    fields whose values the delivery left as they were (the very same objects) are not built again."""
    spec = component.spec
    assert isinstance(spec, EditorSpec)
    state = clean_state(store, uid, spec, clean)
    schema = state.schema
    # what the fields follow besides their values: the same for a build to take from another
    follows = (id(schema), id(store.policy), clean.regions(store.policy).blocked, tuple(sorted(state.redacted.items())))
    editor = (component.id, id(schema))  # the fields do not depend on the offer
    with _BUILDS_LOCK:
        last = _BUILDS.get(editor)
    reuse = last[1] if last is not None and last[0] == follows else None
    built: Built = {}
    model = _model_of(
        component,
        status,
        state,
        body_key=_body_key(component, status, state, offer),
        reuse=reuse,
        built=built,
        offer=offer,
    )
    with _BUILDS_LOCK:
        _BUILDS[editor] = (follows, built)
        _BUILDS.move_to_end(editor)
        while len(_BUILDS) > BUILDS_KEPT:
            _BUILDS.popitem(last=False)
    return model


def clean_state(store: LiveResourceStore, uid: str, spec: EditorSpec, clean: ServerObject) -> ObjectState:
    """:func:`object_state` of an object the store holds nothing of its own for: the truth's object
    itself (shared: the builders only read it) as both draft and server."""
    obj = clean.object
    read_only_in_store = store.read_only_check(uid)

    def read_only(path: Path) -> bool:
        return read_only_in_store(path) or not spec.policy.covers(text_path(path))

    return ObjectState(
        draft=obj,
        server=obj,
        read_only=read_only,
        redacted=_redaction_map(clean.redactions),
        list_keys=lambda path: store.list_keys(uid, path),
        schema=store.kind_schema(uid),
    )


def _body_key(component: Component, status: StreamStatus, state: ObjectState, offer: Offer) -> t.Hashable:
    """Where the body of a clean object is kept: by content (and the schema its widgets follow, and
    the controls it offers), so sessions of different truths share it."""
    content = content_digest([state.server, sorted(state.redacted.items())])
    return ("editor", component.id, status, content, id(state.schema), offer)


def render_editor_body(
    component: Component,
    store: LiveResourceStore | None,
    status: StreamStatus,
    cache: FragmentCache,
    page: Page | None = None,
    *,
    edited: EditedObject | None = None,
) -> Markup:
    """The fields of a live editor, rendered once per model: shared by every session that has not
    touched the object.

    On a ``page``, the editor shows the object the page edits (:func:`edited_object`, or ``edited``
    when the caller has just looked it up): when that object is gone with unsaved changes, a notice
    and their copy-out, rendered for this session.
    """
    return render_whole(component, model_of_editor(component, store, status, page, edited=edited), cache)


def render_whole(component: Component, model: EditorModel, cache: FragmentCache) -> Markup:
    """:func:`render_model`, or the unrenderable notice when an object's model cannot be rendered."""
    try:
        return render_model(component, model, cache)
    except Exception as exc:  # a draft no edit should have let in: say so, offer Discard
        if model.shape != "object":
            raise
        log.warning("a draft cannot be rendered (%s); the editor offers to discard it", type(exc).__name__)
        return render_model(component, EditorModel(model.status, unrenderable=True), cache)


def render_restart_copy_out(
    component: Component, store: LiveResourceStore | None, status: StreamStatus, page: Page, *, signed_out: bool = False
) -> Markup | None:
    """The body of an editor of ``page`` when the server stops while its drafts live in this
    process only (or, ``signed_out``, when the page's session ended): the person's unsaved changes
    as a copy-out, or ``None`` when there are none."""
    if store is None or not isinstance(component.spec, EditorSpec):
        return None
    edited = edited_object(store, component, page)
    copy = recovery_copy(store, edited.uid) if edited.uid is not None else edited.removed
    if copy is None:
        return None
    view = RemovedView(copy_out(copy), False, restarting=not signed_out, signed_out=signed_out)
    return render_model(component, EditorModel(status, removed=view))


def render_body(
    component: Component,
    store: LiveResourceStore | None,
    status: StreamStatus,
    cache: FragmentCache,
    page: Page | None = None,
) -> Markup:
    """A component's live body on ``page`` (``store`` None: nothing is held, as for a refused component)."""
    if isinstance(component.spec, ListSpec):
        return render_list_body(component, store, status, cache, page)
    return render_editor_body(component, store, status, cache, page)


def body_partial(component: Component, body: Markup) -> str:
    """The HTML that morphs ``body`` into the component on the page."""
    return partial(component.body_id, body, swap="innerMorph")
