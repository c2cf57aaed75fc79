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
from collections.abc import Callable, Iterator
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

T_action_view = t.TypeVar("T_action_view", bound=ActionView)


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


def check_action_name(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is a lowercase URL segment (letters, digits, ``-``)."""
    if not name or not name.isascii() or not all(c.isalnum() or c == "-" for c in name) or name.lower() != name:
        raise ValueError(f"an editor action name is a lowercase word such as 'save', got {name!r}")


class EditorActions:
    """The editor actions of one :class:`~flask_krm.KrmStream`, in registration order.

    Reached as ``krm.editor_actions``; :meth:`KrmStream.editor_action
    <flask_krm.KrmStream.editor_action>` is the decorator hosts use.
    """

    def __init__(self) -> None:
        self._actions: dict[str, EditorAction] = {}

    def add(self, name: str, view: ActionView, *, label: str) -> EditorAction:
        """Register ``view`` as the action ``name`` with button ``label``; returns the action.

        Registering the same view under the same name again only updates its label (an extension
        serving several applications registers Save once per blueprint). Raises ``ValueError`` for
        a name that is not a lowercase URL segment, or one another view already has.
        """
        check_action_name(name)
        existing = self._actions.get(name)
        if existing is not None and existing.view is not view:
            raise ValueError(f"an editor action named {name!r} is already registered")
        action = self._actions[name] = EditorAction(name, label, view)
        return action

    def register(self, name: str, *, label: str) -> Callable[[T_action_view], T_action_view]:
        """Decorator form of :meth:`add`; returns the view unchanged. The name is checked at once."""
        check_action_name(name)

        def decorate(view: T_action_view) -> T_action_view:
            self.add(name, view, label=label)
            return view

        return decorate

    def get(self, name: str) -> EditorAction | None:
        """The action ``name``, or ``None``."""
        return self._actions.get(name)

    def __iter__(self) -> Iterator[EditorAction]:
        return iter(list(self._actions.values()))

    def __len__(self) -> int:
        return len(self._actions)

    def __contains__(self, name: object) -> bool:
        return name in self._actions
