"""Editor actions: the seam where Save (and any other editor-wide command) plugs in.

An action is a POST view bound to one editor on one page. Actions belong to a
:class:`~flask_krm.KrmStream` and show on the editors of every application it serves; the
blueprint factory registers Save. A host adds its own with the extension's decorator::

    krm = KrmStream(app)

    @krm.editor_action("show-draft", label="Show draft")
    def show_draft(ctx: EditorContext) -> Response:
        ...
        return ctx.outcome("Nothing saved yet.")

Every editor then renders a button per action, in registration order, in its actions region
(``#<id>-actions``, template ``krm/editor_actions.html``), posting to
``/ui/components/<id>/actions/<name>`` with the page's CSRF and page headers. Before the handler
runs, the request has passed the CSRF check, the page and component have been found in the
caller's own session (404 otherwise), and the principal is authorized to watch the scope. The
button waits for pending field edits to be sent first (``data-krm-flush``).
:attr:`EditorContext.live` says whether writes are allowed: the handler must refuse a write when
it is False. :meth:`EditorContext.outcome` answers into the editor's outcome region
(``#<id>-outcome``, a polite live region).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from flask import Response
from markupsafe import Markup

from ..hooks import EditorAction, EditorActions, check_action_name
from ..htmx import html_response, partial
from ..runtime import KrmRuntime
from .page import Component, EditorSpec, Page
from .render import EditedObject, edited_object

if t.TYPE_CHECKING:
    from ..principal import Principal
    from ..sessions import SessionDrafts
    from ..store import LiveResourceStore
    from .feeds import Feed


@dataclass(frozen=True, slots=True)
class EditorContext:
    """Everything an action needs about the editor it was invoked on."""

    krm: KrmRuntime
    """The application's runtime (settings, access decisions, clients, the save hook)."""
    principal: Principal
    drafts: SessionDrafts
    page: Page
    component: Component
    store: LiveResourceStore
    feed: Feed

    @property
    def spec(self) -> EditorSpec:
        assert isinstance(self.component.spec, EditorSpec)
        return self.component.spec

    @property
    def edited(self) -> EditedObject:
        """What the editor edits on its page: the object's uid, or the recovery copy of the unsaved
        changes to an object since deleted or replaced (:func:`flask_krm.ui.render.edited_object`)."""
        return edited_object(self.store, self.component, self.page)

    @property
    def uid(self) -> str | None:
        """The uid of the object the editor edits, or None when there is none (gone or never there)."""
        return self.edited.uid

    @property
    def live(self) -> bool:
        """Whether the editor's stream is live: writes are allowed only then."""
        return self.feed.status.writable

    @property
    def outcome_id(self) -> str:
        return f"{self.component.id}-outcome"

    def outcome(self, message: str | Markup, status: int = 200) -> Response:
        """A response showing ``message`` (escaped unless it is ``Markup``) in the outcome region."""
        return html_response(partial(self.outcome_id, message), status)


__all__ = ["EditorAction", "EditorActions", "EditorContext", "check_action_name"]
