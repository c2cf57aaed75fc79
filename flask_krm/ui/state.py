"""Per-application UI state: the shared fragment cache, the feeds, and how feeds subscribe.

The state lives in ``app.extensions["krm.ui"]``, made when the ``krm`` blueprint is registered.
"""

from __future__ import annotations

import typing as t
import weakref
from dataclasses import dataclass, field

from flask import Flask, current_app

from ..store import BUILTIN_LIST_SCHEMAS, DEFAULT_POLICY, EditPolicy, LiveResourceStore, RecoveryCopies
from .feeds import Feed
from .page import Component, EditorSpec
from .render import FragmentCache

if t.TYPE_CHECKING:
    from ..extension import KrmStream, Subscription
    from ..principal import Principal
    from ..sessions import SessionDrafts

FIRST_PAINT_WAIT: t.Final = 0.3
"""Seconds a page render waits for a new feed to go live, so a watch the hub already holds paints at once."""

RENDER_HOLD: t.Final = 30.0
"""Seconds a rendered page keeps its feeds running while its channel connects."""

EXTENSION_KEY: t.Final = "krm.ui"
"""Where the application's :class:`UiState` lives in ``app.extensions``."""


@dataclass(eq=False)
class UiState:
    """The UI's state for one application."""

    krm: KrmStream
    cache: FragmentCache = field(default_factory=FragmentCache)
    feeds: weakref.WeakKeyDictionary[LiveResourceStore, Feed] = field(default_factory=weakref.WeakKeyDictionary)

    def store_for(self, drafts: SessionDrafts, component: Component) -> LiveResourceStore:
        """The session's store for ``component``'s scope, projection and edit policy (made on first use).

        An editor with a narrowed policy gets a store of its own that enforces that policy, so
        its Save sends only paths it may edit, never what another editor of the same object
        changed (:func:`store_policy`). A new store keeps recovery copies for
        ``KRM_RECOVERY_LIFETIME`` seconds. Raises :class:`~flask_krm.errors.DraftLimitReached`
        when the session holds too many stores with unsaved edits.
        """
        lifetime = float(self.krm.setting("RECOVERY_LIFETIME"))
        policy = store_policy(component)
        return drafts.store(
            component.scope, component.projection, lambda: new_store(lifetime, policy or DEFAULT_POLICY), policy=policy
        )

    def feed_for(self, store: LiveResourceStore, principal: Principal, component: Component, app: Flask) -> Feed:
        """The feed that keeps ``store`` current (made on first use)."""
        feed = self.feeds.get(store)
        if feed is None:
            scope, projection = component.scope, component.projection

            def opener() -> Subscription:
                with app.app_context():
                    return self.krm.subscribe(principal, scope, projection, app)

            self.krm.track_stream(self, app)
            feed = Feed(store, opener, self.krm.greenlets(app), linger=float(self.krm.setting("WATCH_LINGER", app)))
            self.feeds[store] = feed
        return feed

    def end_for_shutdown(self) -> None:
        """Stop every feed: the application is shutting down (the extension calls this)."""
        for feed in list(self.feeds.values()):
            feed.close()


def store_policy(component: Component) -> EditPolicy | None:
    """The edit policy keying ``component``'s session store: ``None`` (the default policy) for
    lists and default editors, else the editor's policy with its roots in a canonical order."""
    spec = component.spec
    if not isinstance(spec, EditorSpec) or set(spec.policy.roots) == set(DEFAULT_POLICY.roots):
        return None
    return EditPolicy(tuple(sorted(set(spec.policy.roots))))


def new_store(recovery_lifetime: float | None = None, policy: EditPolicy = DEFAULT_POLICY) -> LiveResourceStore:
    """A session store as the UI makes them: ``policy`` (an editor's narrowed one, or the default),
    the built-in keyed-list schemas and, given a lifetime in seconds, recovery copies of drafts
    whose objects disappear (the store belongs to one session and principal; copies are kept per
    uid)."""
    recovery = RecoveryCopies(recovery_lifetime) if recovery_lifetime is not None else None
    return LiveResourceStore(policy, BUILTIN_LIST_SCHEMAS, recovery=recovery)


def init_state(app: Flask, krm: KrmStream) -> UiState:
    """Create the UI state of ``app`` (when the blueprint is registered)."""
    state = app.extensions[EXTENSION_KEY] = UiState(krm=krm)
    return state


def ui_state(app: Flask | None = None) -> UiState:
    """The UI state of ``app`` (default: the current app). Raises ``RuntimeError`` if none."""
    state = (app or current_app).extensions.get(EXTENSION_KEY)
    if not isinstance(state, UiState):
        raise RuntimeError("flask-krm's live UI is not registered on this app: create KrmStream(app) first")
    return state


__all__ = ["EXTENSION_KEY", "FIRST_PAINT_WAIT", "RENDER_HOLD", "UiState", "init_state", "new_store", "store_policy", "ui_state"]
