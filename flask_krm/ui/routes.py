"""The live UI's routes and template globals on the ``krm`` blueprint.

- ``GET  /ui/pages/<page_id>/channel``: the page's one SSE connection (:mod:`.channel`)
- ``POST /ui/components/<component_id>/edit``: field edits (:mod:`.edits`)
- ``POST /ui/components/<component_id>/yaml``: YAML edits (:mod:`.yaml_edits`)
- ``POST /ui/components/<component_id>/actions/<name>``: editor actions such as Save (:mod:`.actions`)
- template globals ``krm_script``, ``krm_live_list``, ``krm_live_editor``, ``krm_workload_status``
"""

from __future__ import annotations

import typing as t

from flask import Blueprint, Response, request
from markupsafe import escape

from .. import guards
from ..htmx import PAGE_HEADER, refusal_response
from ..runtime import runtime
from .actions import EditorContext
from .assets import krm_script
from .binding import Refusal, bind
from .channel import channel_response
from .channel import refusal_form as channel_refusal
from .edits import edit_response
from .live import live_editor, live_list
from .page import EditorSpec, is_component_id
from .status import workload_status
from .yaml_edits import yaml_response


def register(blueprint: Blueprint) -> None:
    """Add the live UI's routes and template globals to the ``krm`` blueprint.

    Session stores are fed by :meth:`KrmRuntime.subscribe <flask_krm.runtime.KrmRuntime.subscribe>`:
    the shared hub for Kubernetes targets, or a source plugged with ``plug_source``.
    """
    blueprint.add_app_template_global(krm_script, "krm_script")
    blueprint.add_app_template_global(live_list, "krm_live_list")
    blueprint.add_app_template_global(live_editor, "krm_live_editor")
    blueprint.add_app_template_global(workload_status, "krm_workload_status")

    @blueprint.get("/ui/pages/<page_id>/channel", endpoint="ui_channel")
    @guards.refuses_as(channel_refusal)
    def channel(page_id: str) -> Response:
        return channel_response(page_id)

    @blueprint.post("/ui/components/<component_id>/edit", endpoint="ui_edit")
    @guards.refuses_as(outcome_refusal)
    def edit(component_id: str) -> Response:
        return edit_response(component_id)

    @blueprint.post("/ui/components/<component_id>/yaml", endpoint="ui_yaml")
    @guards.refuses_as(outcome_refusal)
    def yaml_edit(component_id: str) -> Response:
        return yaml_response(component_id)

    @blueprint.post("/ui/components/<component_id>/actions/<name>", endpoint="ui_action")
    @guards.refuses_as(outcome_refusal)
    def action(component_id: str, name: str) -> Response:
        return action_response(component_id, name)


TOO_LARGE: t.Final = "This change is too large to send. Your other changes are still here."
CSRF_REFUSED: t.Final = "This page can no longer make changes (its session ended or changed): reload the page."


def outcome_refusal(status: int, message: str, kind: str) -> Response | None:
    """How an editor's requests (field and YAML edits, actions) are refused by the guards
    (:func:`flask_krm.guards.refuses_as`): in the outcome region of the component the URL names; a
    CSRF refusal also ends the page's session (its token is no longer the session's). ``None``
    when the URL names no component."""
    component_id = (request.view_args or {}).get("component_id")
    if not is_component_id(component_id):
        return None
    outcome_id = f"{component_id}-outcome"
    if kind == "too-large":
        return refusal_response(outcome_id, status, TOO_LARGE, kind="too-large", detail=message)
    if kind == "csrf":
        return refusal_response(
            outcome_id, status, CSRF_REFUSED, kind="session-ended", detail=message, session_ended=True
        )
    return refusal_response(outcome_id, status, message)


def action_response(component_id: str, name: str) -> Response:
    """Run the editor action ``name`` on one editor of the caller's page (see :mod:`.actions`)."""
    krm = runtime()
    found = krm.hooks.editor_actions.get(name)
    if found is None:
        return _refused(component_id, 404, f"No editor action named {name}.")
    try:
        binding = bind(krm, request.headers.get(PAGE_HEADER), component_id)
    except Refusal as refusal:
        return _refused(component_id, refusal.status, refusal.message, session_ended=refusal.ends_session)
    if not isinstance(binding.component.spec, EditorSpec):
        return _refused(component_id, 400, "Actions apply to editors only.")
    context = EditorContext(
        krm=krm,
        principal=binding.principal,
        drafts=binding.drafts,
        page=binding.page,
        component=binding.component,
        store=binding.store,
        feed=binding.feed,
    )
    return found.view(context)


def _refused(component_id: str, status: int, message: str, *, session_ended: bool = False) -> Response:
    """A refused action: shown in the editor's outcome region, or as plain text when the URL names
    no component."""
    if not is_component_id(component_id):
        return Response(escape(message), status=status, mimetype="text/plain")
    return refusal_response(f"{component_id}-outcome", status, message, session_ended=session_ended)
