"""Editor actions: the seam where Save (and any other editor-wide command) plugs in.

An action is a POST view bound to one editor on one page. Register it once, at import time of the
module that implements it::

    from flask_krm.ui import EditorContext, editor_action

    @editor_action("save", label="Save")
    def save(ctx: EditorContext) -> Response:
        ...
        return ctx.outcome("Saved to Kubernetes; waiting for live confirmation.")

Every editor then renders a button for it in its actions region (``#<id>-actions``, template
``krm/editor_actions.html``), posting to ``/ui/components/<id>/actions/<name>`` with the page's
CSRF and page headers. Before the handler runs, the request has passed the CSRF check, the page
and component have been found in the caller's own session (404 otherwise), and the principal is
authorized to watch the scope. The button waits for pending field edits to be sent first
(``data-krm-flush``). :attr:`EditorContext.live` says whether writes are allowed: the handler
must refuse a write when it is False. :meth:`EditorContext.outcome` answers into the editor's
outcome region (``#<id>-outcome``, a polite live region).
"""

from __future__ import annotations

import typing as t
from collections.abc import Callable
from dataclasses import dataclass

from flask import Response
from markupsafe import Markup, escape

from .page import Component, EditorSpec, Page
from .render import EditedObject, edited_object

if t.TYPE_CHECKING:
    from ..extension import KrmStream
    from ..principal import Principal
    from ..sessions import SessionDrafts
    from ..store import LiveResourceStore
    from .feeds import Feed

ActionView: t.TypeAlias = Callable[["EditorContext"], Response]


@dataclass(frozen=True, slots=True)
class EditorAction:
    """A registered action: its name (URL segment), button label and view."""

    name: str
    label: str
    view: ActionView


@dataclass(frozen=True, slots=True)
class EditorContext:
    """Everything an action needs about the editor it was invoked on."""

    krm: KrmStream
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
        body = f'<hx-partial hx-target="#{self.outcome_id}">{escape(message)}</hx-partial>'
        return Response(body, status=status, mimetype="text/html")


_ACTIONS: dict[str, EditorAction] = {}

T_view = t.TypeVar("T_view", bound=ActionView)


def editor_action(name: str, *, label: str) -> Callable[[T_view], T_view]:
    """Decorator: register an editor action ``name`` with button ``label``; returns the view unchanged.

    Raises ``ValueError`` for a name that is not a lowercase URL segment, or one already taken.
    """
    if not name or not all(c.isalnum() or c == "-" for c in name) or name.lower() != name:
        raise ValueError(f"an editor action name is a lowercase word such as 'save', got {name!r}")

    def register(view: T_view) -> T_view:
        existing = _ACTIONS.get(name)
        if existing is not None and existing.view is not view:
            raise ValueError(f"an editor action named {name!r} is already registered")
        _ACTIONS[name] = EditorAction(name, label, view)
        return view

    return register


def registered_actions() -> list[EditorAction]:
    """Every registered action, in registration order."""
    return list(_ACTIONS.values())


def find_action(name: str) -> EditorAction | None:
    return _ACTIONS.get(name)
