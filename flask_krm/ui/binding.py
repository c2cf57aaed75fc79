"""Finding a request's live component: the caller's session, page, component, store and feed.

Every UI request (the page channel, a field edit, an editor action) names a page and a component
that must belong to the caller's own session; anything else is refused with a :class:`Refusal`
saying why, before any state is touched.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from ..errors import DraftLimitReached, Unauthenticated
from ..runtime import KrmRuntime
from .page import Component, Page, find_page
from .state import RENDER_HOLD, store_policy

if t.TYPE_CHECKING:
    from ..principal import Principal
    from ..sessions import SessionDrafts
    from ..store import LiveResourceStore
    from .feeds import Feed

SIGNED_OUT: t.Final = "You are signed out: sign in again, then reload the page."
PAGE_EXPIRED: t.Final = "This page has expired: reload it to continue."
UNKNOWN_COMPONENT: t.Final = "This view is not part of the page: reload it to continue."
TOO_MANY_DRAFTS: t.Final = "You have too many views with unsaved changes open: save or discard one first."
CATCH_UP_WAIT: t.Final = 5.0
"""Seconds a request waits for a store this worker makes for a page another worker rendered (a
shared draft backend) to hold the objects, so that the edit or Save finds the object it names."""


class Refusal(Exception):
    """A UI request that cannot be served: the HTTP status, what to tell the person, and whether the
    page's session is over (nothing it sends can succeed until it is loaded again)."""

    def __init__(self, status: int, message: str, *, ends_session: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.ends_session = ends_session


@dataclass(frozen=True, slots=True)
class Binding:
    """A component of a page of the caller's session, with its store and feed."""

    principal: Principal
    drafts: SessionDrafts
    page: Page
    component: Component
    store: LiveResourceStore
    feed: Feed


def session_of(krm: KrmRuntime) -> tuple[Principal, SessionDrafts]:
    """The signed-in principal and the session's drafts. Raises :class:`Refusal` (401)."""
    try:
        principal = krm.require_principal()
        return principal, krm.session_drafts()
    except Unauthenticated:
        raise Refusal(401, SIGNED_OUT, ends_session=True) from None


def page_of(drafts: SessionDrafts, page_id: str | None) -> Page:
    """The session's page ``page_id``. Raises :class:`Refusal` (404)."""
    page = find_page(drafts, page_id or "")
    if page is None:
        raise Refusal(404, PAGE_EXPIRED, ends_session=True)
    return page


def authorize(krm: KrmRuntime, principal: Principal, component: Component) -> None:
    """Decide whether ``principal`` may watch the component's scope (scope policy, then the host's
    authorizer: :mod:`flask_krm.access`). Raises :class:`Refusal` (403) with what the person reads.
    """
    decision = krm.decide(principal, component.scope, component.projection, "watch", check_policy=True)
    if not decision.allowed:
        raise Refusal(403, decision.ui_message())


def attach(
    krm: KrmRuntime, principal: Principal, drafts: SessionDrafts, component: Component
) -> tuple[LiveResourceStore, Feed]:
    """The session store and feed of an authorized component. Raises :class:`Refusal` (409)."""
    try:
        store = krm.store_for(drafts, component, principal)
    except DraftLimitReached:
        raise Refusal(409, TOO_MANY_DRAFTS) from None
    return store, krm.feed_for(store, principal, component)


def bind(krm: KrmRuntime, page_id: str | None, component_id: str) -> Binding:
    """Everything a request on ``component_id`` of page ``page_id`` needs. Raises :class:`Refusal`."""
    principal, drafts = session_of(krm)
    page = page_of(drafts, page_id)
    component = page.components.get(component_id)
    if component is None:
        raise Refusal(404, UNKNOWN_COMPONENT, ends_session=True)
    authorize(krm, principal, component)
    store, feed = attach(krm, principal, drafts, component)
    # A worker answering this session's requests keeps its view of the cluster current for a while,
    # channel or not: an edit or a resolution made on a store whose feed had stopped would take a
    # stale server object as its base (and every other worker would reopen its conflicts).
    current = feed.running and store.snapshot_complete
    feed.hold_for(RENDER_HOLD)
    if not current:
        feed.wait_live(CATCH_UP_WAIT)
    drafts.catch_up(component.scope, component.projection, policy=store_policy(component))
    return Binding(principal, drafts, page, component, store, feed)
