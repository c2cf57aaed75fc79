"""The host's seams: every function a host plugs into flask-krm, in one place.

Each seam says why it is one. :class:`Hooks` holds what a :class:`~flask_krm.KrmStream` was given;
:meth:`Hooks.check` runs when the extension is registered on an application, so a required seam
that is missing fails there, not at the first request.

- ``principal_loader() -> Principal | None``: who the current request acts for. A seam because
  sign-in belongs to the host (default: Flask-Login's ``current_user``).
- ``authorizer(principal, scope, projection, verb) -> bool``: may this principal read or write
  this scope? A seam because only the host knows; required, since allowing everything must be a
  deliberate choice.
- ``client_loader(target, principal) -> ApiClient | None``: whose credentials reach Kubernetes.
  A seam because per-user credentials or impersonation are the host's policy; required for
  Kubernetes targets (a plugged target needs none), so it is checked when one is first used.
- ``save_hook(WriteRequest) -> WriteResult``: how a write is made. Optional (default: the
  conditional merge PATCH as the principal).
- editor actions: buttons on every live editor (:class:`EditorActions`); Save is one.
"""

from __future__ import annotations

import typing as t
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .ops import SourceOp
from .principal import Principal, flask_login_principal
from .save.writer import default_save

if t.TYPE_CHECKING:
    from flask import Response
    from kubernetes.client import ApiClient

    from .save.writer import WriteRequest, WriteResult
    from .scope import Scope

Verb: t.TypeAlias = t.Literal["get", "list", "watch", "create", "patch", "delete"]
"""What an authorization decision is about. Streams ask for ``"watch"`` (which includes listing)."""

PrincipalLoader: t.TypeAlias = Callable[[], "Principal | None"]
Authorizer: t.TypeAlias = Callable[["Principal", "Scope", str, str], bool]
ClientLoader: t.TypeAlias = Callable[[str, "Principal"], "ApiClient | None"]
SaveHook: t.TypeAlias = Callable[["WriteRequest"], "WriteResult"]
OpsSource: t.TypeAlias = Callable[["Scope", str, "Principal"], Iterable[SourceOp]]
"""A plugged source: ``source(scope, projection, principal)`` returns one connection's operations.

It is called once per subscription, in a greenlet of the application; iterating may block on
gevent primitives. When the iteration ends the stream ends, as the connection of a replayed
fixture does.
"""

ActionView: t.TypeAlias = Callable[[t.Any], "Response"]
"""An editor action's view: ``view(ctx: EditorContext) -> Response`` (see :mod:`flask_krm.ui.actions`)."""

T_action_view = t.TypeVar("T_action_view", bound=ActionView)

MISSING_AUTHORIZER: t.Final = (
    "flask-krm needs an authorizer: decorate a function (principal, scope, projection, verb) -> bool"
    " with @krm.authorizer before init_app, or pass authorizer= to KrmStream()."
)
MISSING_CLIENT_LOADER: t.Final = (
    "flask-krm needs a client loader for Kubernetes targets: decorate a function (target, principal)"
    " -> kubernetes.client.ApiClient | None with @krm.client_loader, or pass client_loader= to"
    " KrmStream()."
)


class MissingHook(RuntimeError):
    """A required host hook is not registered; the message names it and how to register it."""


@dataclass(frozen=True, slots=True)
class EditorAction:
    """A registered action: its name (URL segment), button label and view."""

    name: str
    label: str
    view: ActionView


def check_action_name(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is a lowercase URL segment (letters, digits, ``-``)."""
    if not name or not name.isascii() or not all(c.isalnum() or c == "-" for c in name) or name.lower() != name:
        raise ValueError(f"an editor action name is a lowercase word such as 'save', got {name!r}")


class EditorActions:
    """The editor actions of one :class:`~flask_krm.KrmStream`, in registration order.

    Reached as ``krm.hooks.editor_actions``; :meth:`KrmStream.editor_action
    <flask_krm.KrmStream.editor_action>` is the decorator hosts use.
    """

    def __init__(self) -> None:
        self._actions: dict[str, EditorAction] = {}

    def add(self, name: str, view: ActionView, *, label: str) -> EditorAction:
        """Register ``view`` as the action ``name`` with button ``label``; returns the action.

        Registering the same view under the same name again only updates its label (an extension
        serving several applications registers Save once per application). Raises ``ValueError``
        for a name that is not a lowercase URL segment, or one another view already has.
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


class HooksOwner(t.Protocol):
    """What holds the hooks: a :class:`~flask_krm.KrmStream`."""

    hooks: Hooks


@dataclass(frozen=True, slots=True)
class RegisteredHooks:
    """The host hooks registered with a :class:`KrmStream`; ``None`` means the default applies."""

    principal_loader: PrincipalLoader | None
    authorizer: Authorizer | None
    client_loader: ClientLoader | None
    save_hook: SaveHook | None


@dataclass(eq=False)
class Hooks:
    """The hooks one :class:`~flask_krm.KrmStream` holds, shared by every application it serves."""

    principal_loader: PrincipalLoader = flask_login_principal
    authorizer: Authorizer | None = None
    client_loader: ClientLoader | None = None
    save_hook: SaveHook | None = None
    editor_actions: EditorActions = field(default_factory=EditorActions)

    def check(self) -> None:
        """Raise :class:`MissingHook` when a hook every application needs is not registered (the
        authorizer). The client loader is needed only once a Kubernetes target is read or written,
        since a target may be plugged instead (:meth:`require_client_loader`; ``flask krm check``
        reports it)."""
        if self.authorizer is None:
            raise MissingHook(MISSING_AUTHORIZER)

    def require_authorizer(self) -> Authorizer:
        """The authorizer. Raises :class:`MissingHook` if none is registered."""
        if self.authorizer is None:
            raise MissingHook(MISSING_AUTHORIZER)
        return self.authorizer

    def require_client_loader(self) -> ClientLoader:
        """The client loader. Raises :class:`MissingHook` if none is registered."""
        if self.client_loader is None:
            raise MissingHook(MISSING_CLIENT_LOADER)
        return self.client_loader

    @property
    def saver(self) -> SaveHook:
        """The save hook in force: the registered one, or the default conditional write."""
        return self.save_hook if self.save_hook is not None else default_save

    def registered(self) -> RegisteredHooks:
        """Which hooks are registered (``None`` where the default is in force)."""
        loader = self.principal_loader
        return RegisteredHooks(
            principal_loader=None if loader is flask_login_principal else loader,
            authorizer=self.authorizer,
            client_loader=self.client_loader,
            save_hook=self.save_hook,
        )
