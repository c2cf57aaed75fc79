"""The live UI: Jinja macros that put live lists and editors on a host's pages.

In a template::

    {% import "krm/_macros.html" as krm %}
    <head>{{ krm_script() }}</head>
    {{ krm.list("target=demo&version=v1&resource=configmaps&namespace=app") }}
    {{ krm.editor(scope, "my-config", fields=["/data", "/metadata/labels"]) }}
    {{ krm.list(scope, row_actions=[("Delete", "krm_review.delete")]) }}  {# a button on every row #}

:func:`flask_krm.ui.routes.register` adds the UI's routes and template globals to the ``krm``
blueprint:

- ``GET  /ui/pages/<page_id>/channel``: the page's one SSE connection (:mod:`.channel`)
- ``POST /ui/components/<component_id>/edit``: field edits (:mod:`.edits`)
- ``POST /ui/components/<component_id>/actions/<name>``: editor actions such as Save (:mod:`.actions`;
  hosts add their own with :meth:`krm.editor_action <flask_krm.KrmStream.editor_action>`)
- template globals ``krm_script``, ``krm_live_list``, ``krm_live_editor``

Templates live under ``krm/`` and are overridden by path from the application's own template
folder; static files are served at ``url_for("krm.static", filename=...)``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..hooks import EditorAction as EditorAction
    from ..hooks import EditorActions as EditorActions
    from .actions import EditorContext as EditorContext
    from .assets import HTMX_VERSION as HTMX_VERSION
    from .assets import krm_script as krm_script
    from .page import RowAction as RowAction

_EXPORTS = {
    "EditorAction": "..hooks",
    "EditorActions": "..hooks",
    "EditorContext": ".actions",
    "HTMX_VERSION": ".assets",
    "RowAction": ".page",
    "krm_script": ".assets",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flask_krm.ui' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
