"""The template globals behind the ``krm.list`` and ``krm.editor`` macros.

Each call registers a live component on the request's page (creating the page, and emitting its
one channel element, on the first call), starts the feed that keeps the session's store current,
and renders the component root with its current body. When the hub already holds the scope, the
first paint shows its content: the render waits a moment (:data:`~flask_krm.ui.state.FIRST_PAINT_WAIT`)
for a new feed to go live.
"""

from __future__ import annotations

import dataclasses
import hashlib
import typing as t
from collections.abc import Mapping

from flask import render_template, request, url_for
from markupsafe import Markup
from werkzeug.routing import BuildError

from .. import csrf
from ..htmx import PAGE_HEADER
from ..runtime import krm_csrf_token, runtime
from ..save.controls import VERB_OF_ACTION, may, offer_for
from ..scope import Scope, ScopeError, parse_scope
from .binding import Refusal, attach, authorize, session_of
from .list_query import ListQuery, column_keys, parse_list_query
from .list_updates import paint_list
from .page import (
    Component,
    ComponentSpecError,
    EditorSpec,
    InvalidObjectName,
    ListSpec,
    Page,
    make_component,
    new_page_id,
    parse_columns,
    parse_labelled_fields,
    parse_page_size,
    parse_policy,
    parse_row_actions,
    parse_url_key,
    store_page,
)
from .paint import painted
from .render import StreamStatus, model_of_editor, render_body, render_whole
from .state import FIRST_PAINT_WAIT, RENDER_HOLD

PAGE_KEY: t.Final = "flask_krm.page"

MAX_SHOWN_BYTES: t.Final = 256 * 1024
"""The largest editor body of a session's own whose model a page keeps as painted (its channel
sends changed elements only): the page's state lives as long as the page, a large draft's must not."""


def _scope(value: t.Any) -> Scope:
    if isinstance(value, Scope):
        return value
    if isinstance(value, (str, bytes, Mapping)):
        return parse_scope(value)
    raise ComponentSpecError(f"scope {value!r} is neither a Scope, a query string nor a mapping of parameters")


def _projection(projection: str | None) -> str:
    return projection or t.cast(str, runtime().setting("PROJECTION"))


def live_list(
    scope: t.Any,
    *,
    columns: t.Any = None,
    projection: str | None = None,
    link: str | None = None,
    title: str | None = None,
    row_actions: t.Any = None,
    page_size: t.Any = 50,
    url_key: str | None = None,
) -> Markup:
    """Template global ``krm_live_list`` (macro ``krm.list``): a live list of every object of ``scope``.

    ``columns``: RFC 6901 pointers, ``(header, pointer)`` pairs or a header->pointer mapping (default:
    Name, and Namespace for a scope across namespaces). ``link``: a URL pattern for the first cell,
    with ``{name}`` and ``{namespace}``. ``row_actions``: buttons on every row, as ``(label,
    endpoint)`` pairs or :class:`~flask_krm.ui.page.RowAction`; each posts the row's ``uid`` to
    ``url_for(endpoint, component_id=<the list's id>)`` (``[("Delete", "krm_review.delete")]``
    stages deletes in :class:`~flask_krm.save.review.ReviewViews`); a Delete (an endpoint named
    ``delete``) is shown only to a person who may delete the list's objects, and ``krm/list.html``
    (overridden by a host to add a create form) is given ``offered(verb)``, so a create form can ask
    ``offered("create")``. Every row carries its object's
    uid as ``data-krm-uid``. ``page_size``: rows per page (1 to 500). The filter, sort column and
    page come from the page's URL, in parameters named after ``url_key`` (default: the scope's
    resource, as in ``configmaps.q``, ``configmaps.sort=-name``, ``configmaps.page=2``). Raises
    ``ValueError`` for arguments that describe no list, and
    :class:`~flask_krm.ui.list_query.InvalidListQuery` (a ``ValueError`` and a 400) for a URL
    asking for a sort column the list does not have or an over-long filter.
    """
    parsed = _scope(scope)
    spec = ListSpec(
        scope=parsed,
        projection=_projection(projection),
        columns=parse_columns(columns, parsed),
        link=link,
        title=title or (f"{parsed.resource} in {parsed.namespace}" if parsed.namespace else parsed.resource),
        row_actions=parse_row_actions(row_actions),
        page_size=parse_page_size(page_size),
        url_key=parse_url_key(url_key, parsed),
    )
    component = make_component(spec)
    for action in spec.row_actions:
        try:
            url_for(action.endpoint, component_id=component.id)
        except BuildError:
            raise ComponentSpecError(
                f"row action {action.label!r}: no endpoint {action.endpoint!r} taking a component_id"
            ) from None
    sort_keys = column_keys([column.header for column in spec.columns])
    path = "/" + (request.script_root + request.path).lstrip("/")  # never "//host": links stay on this site
    query = parse_list_query(spec.url_key, request.args.items(multi=True), path, sort_keys)
    return _live(component, "krm/list.html", query)


def live_editor(
    scope: t.Any,
    *,
    name: str | None = None,
    projection: str | None = None,
    policy: t.Any = None,
    fields: t.Any = None,
    title: str | None = None,
    yaml: bool = True,
) -> Markup:
    """Template global ``krm_live_editor`` (macro ``krm.editor``): a live editor of one named object.

    ``name`` names the object (or the scope does). ``fields``: the pointers to show, each alone or
    as a ``(label, pointer)`` pair (``("Replicas", "/spec/replicas")``; default labels come from
    the path: "Replicas"); default: labels, annotations and every top-level member but identity.
    ``policy``: what may be edited;
    by default exactly the ``fields`` shown (and what is under them) that the default policy
    allows, so nothing the page does not show can be written; ``"default"`` asks for every
    default region whatever is shown; also ``"read-only"``, an :class:`~flask_krm.store.EditPolicy`
    or editable pointers, which can only narrow the default policy. Raises ``ValueError`` for
    arguments that describe no editor, and :class:`~flask_krm.ui.page.InvalidObjectName` (a
    ``ValueError`` and a 404) for a ``name`` no object can have.
    """
    parsed = _scope(scope)
    if name is not None:
        try:
            parsed = dataclasses.replace(parsed, name=name)
        except ScopeError as exc:
            raise InvalidObjectName(f"No such object: {exc.message}") from None
    if not parsed.name:
        raise ComponentSpecError("krm.editor needs the object's name: krm.editor(scope, 'my-config')")
    labelled = parse_labelled_fields(fields)
    shown = None if labelled is None else tuple(path for path, _ in labelled)
    spec = EditorSpec(
        scope=parsed,
        projection=_projection(projection),
        policy=parse_policy(policy, shown),
        fields=shown,
        title=title or parsed.name,
        yaml=bool(yaml),
        labels=labelled or (),
    )
    return _live(make_component(spec), "krm/editor.html")


def _offered(scope: Scope, projection: str | None, verb: str | None) -> bool:
    """Whether the signed-in person is offered a control needing ``verb`` (``None``: always);
    without a session nothing is decided here (the component refuses itself)."""
    if verb is None:
        return True
    krm = runtime()
    try:
        principal, drafts = session_of(krm)
    except Refusal:
        return True
    return may(krm, principal, drafts, scope, projection, verb)


def _nothing_offered(verb: str | None) -> bool:
    """``offered`` of a component refused to its person: no control at all."""
    return False


def current_page() -> Page:
    """The page the current request renders (made on the first call of the request)."""
    # Kept in the request's environ: an outer application context (a test's) shares ``g`` between requests.
    held = request.environ.get(PAGE_KEY)
    if isinstance(held, Page):
        return held
    page = request.environ[PAGE_KEY] = Page(new_page_id())
    return page


def body_digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def _live(component: Component, template: str, query: ListQuery | None = None) -> Markup:
    krm = runtime()
    spec = component.spec
    title = spec.title or component.id
    context: dict[str, t.Any] = {
        "component": component,
        "spec": spec,
        "title": title,
        "actions": [],
        "channel": False,
        "headers": {csrf.HEADER: krm_csrf_token()},
        "yaml_url": url_for("krm.ui_yaml", component_id=component.id)
        if isinstance(spec, EditorSpec) and spec.yaml
        else None,
        "offered": _nothing_offered,
    }
    try:
        principal, drafts = session_of(krm)
        authorize(krm, principal, component)
        store, feed = attach(krm, principal, drafts, component)
    except Refusal as refusal:
        status = StreamStatus("terminal", refusal.message)
        context["body"] = render_body(component, None, status, krm.cache)
        return Markup(render_template(template, **context))

    page = current_page()
    if component.id in page.components:
        raise ComponentSpecError(
            f"the same {component.kind} is shown twice on this page; give one of them another title= "
            "(two identical components would share their element ids)"
        )
    first = not page.components
    page.add(component)
    feed.hold_for(RENDER_HOLD)
    if feed.status.state != "live" and not store.snapshot_complete:
        feed.wait_live(FIRST_PAINT_WAIT)
    shown = painted(drafts, page.id)
    offer = offer_for(krm, principal, drafts, component)
    if query is not None:
        page.queries[component.id] = query
        body, shown.lists[component.id] = paint_list(component, store, feed.status, krm.cache, page, offer)
    else:
        model = model_of_editor(component, store, feed.status, page, offer=offer)
        body = render_whole(component, model, krm.cache)
        page.painted[component.id] = body_digest(body)
        if (
            model.body_key is not None or len(body) <= MAX_SHOWN_BYTES
        ):  # a larger one of its own: the channel resends it
            shown.editors[component.id] = model
    store_page(drafts, page)
    context.update(
        body=body,
        channel=first,
        channel_url=url_for("krm.ui_channel", page_id=page.id),
        headers={csrf.HEADER: krm_csrf_token(), PAGE_HEADER: page.id},
        offered=lambda verb: _offered(spec.scope, spec.projection, verb),
        actions=[
            {
                "name": action.name,
                "label": action.label,
                "url": url_for("krm.ui_action", component_id=component.id, name=action.name),
            }
            for action in krm.hooks.editor_actions
            if _offered(spec.scope, spec.projection, VERB_OF_ACTION.get(action.name))
        ]
        if isinstance(spec, EditorSpec)
        else [],
    )
    return Markup(render_template(template, **context))
