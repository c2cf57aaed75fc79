"""The live UI: Jinja macros that put live lists and editors on a host's pages.

In a template::

    {% import "krm/_macros.html" as krm %}
    <head>{{ krm_script() }}</head>
    {{ krm.list("target=demo&version=v1&resource=configmaps&namespace=app") }}
    {{ krm.editor(scope, "my-config", fields=["/data", "/metadata/labels"]) }}
    {{ krm.list(scope, row_actions=[("Delete", "krm_review.delete")]) }}  {# a button on every row #}

:func:`register` adds the UI's routes and template globals to the extension's blueprint:

- ``GET  /ui/pages/<page_id>/channel``: the page's one SSE connection (:mod:`.channel`)
- ``POST /ui/components/<component_id>/edit``: field edits (:mod:`.edits`)
- ``POST /ui/components/<component_id>/actions/<name>``: editor actions such as Save (:mod:`.actions`;
  hosts add their own with :meth:`krm.editor_action <flask_krm.KrmStream.editor_action>`)
- template globals ``krm_script``, ``krm_live_list``, ``krm_live_editor``

Templates live under ``krm/`` and are overridden by path from the application's own template
folder; static files are served at ``url_for("krm.static", filename=...)``.
"""

from __future__ import annotations

import typing as t

from flask import Blueprint, Flask, Response, request
from flask.blueprints import BlueprintSetupState
from markupsafe import escape

from .actions import EditorAction, EditorActions, EditorContext
from .assets import HTMX_VERSION, krm_script
from .binding import Refusal, bind
from .channel import channel_response
from .edits import edit_response
from .live import PAGE_HEADER, live_editor, live_list
from .page import EditorSpec, RowAction
from .state import UiState, init_state, ui_state

if t.TYPE_CHECKING:
    from ..extension import KrmStream

__all__ = [
    "HTMX_VERSION",
    "EditorAction",
    "EditorActions",
    "EditorContext",
    "RowAction",
    "UiState",
    "krm_script",
    "register",
    "ui_state",
]


def register(blueprint: Blueprint, krm: KrmStream) -> None:
    """Add the live UI's routes and template globals to the ``krm`` blueprint.

    Session stores are fed by :meth:`KrmStream.subscribe <flask_krm.KrmStream.subscribe>`: the
    shared hub for Kubernetes targets, or a source plugged with ``plug_source``.
    """

    def setup(setup_state: BlueprintSetupState) -> None:
        init_state(t.cast(Flask, setup_state.app), krm)

    blueprint.record_once(setup)
    blueprint.add_app_template_global(krm_script, "krm_script")
    blueprint.add_app_template_global(live_list, "krm_live_list")
    blueprint.add_app_template_global(live_editor, "krm_live_editor")

    @blueprint.get("/ui/pages/<page_id>/channel", endpoint="ui_channel")
    def channel(page_id: str) -> Response:
        return channel_response(ui_state(), page_id)

    @blueprint.post("/ui/components/<component_id>/edit", endpoint="ui_edit")
    def edit(component_id: str) -> Response:
        return edit_response(ui_state(), component_id)

    @blueprint.post("/ui/components/<component_id>/actions/<name>", endpoint="ui_action")
    def action(component_id: str, name: str) -> Response:
        return action_response(ui_state(), component_id, name)


def action_response(state: UiState, component_id: str, name: str) -> Response:
    """Run the editor action ``name`` on one editor of the caller's page (see :mod:`.actions`)."""
    found = state.krm.editor_actions.get(name)
    if found is None:
        return Response(f"No editor action named {escape(name)}.", status=404, mimetype="text/plain")
    try:
        binding = bind(state, request.headers.get(PAGE_HEADER), component_id)
    except Refusal as refusal:
        return Response(escape(refusal.message), status=refusal.status, mimetype="text/plain")
    if not isinstance(binding.component.spec, EditorSpec):
        return Response("Actions apply to editors only.", status=400, mimetype="text/plain")
    context = EditorContext(
        krm=state.krm,
        principal=binding.principal,
        drafts=binding.drafts,
        page=binding.page,
        component=binding.component,
        store=binding.store,
        feed=binding.feed,
    )
    return found.view(context)

