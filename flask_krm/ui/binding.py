"""Finding a request's live component: the caller's session, page, component, store and feed.

Every UI request (the page channel, a field edit, an editor action) names a page and a component
that must belong to the caller's own session; anything else is refused with a :class:`Refusal`
saying why, before any state is touched.
"""

from __future__ import annotations

import logging
import typing as t
from dataclasses import dataclass

from flask import Flask, current_app

from ..errors import DraftLimitReached, Unauthenticated
from ..scope import ScopeError
from .page import Component, Page, find_page
from .state import UiState

if t.TYPE_CHECKING:
    from ..extension import KrmStream
    from ..principal import Principal
    from ..sessions import SessionDrafts
    from ..store import LiveResourceStore
    from .feeds import Feed

log = logging.getLogger("flask_krm")

SIGNED_OUT: t.Final = "You are signed out: sign in again, then reload the page."
PAGE_EXPIRED: t.Final = "This page has expired: reload it to continue."
UNKNOWN_COMPONENT: t.Final = "This view is not part of the page: reload it to continue."
NOT_PERMITTED: t.Final = "You may not view this."
NOT_SERVED: t.Final = "This view is not available."
TOO_MANY_DRAFTS: t.Final = "You have too many views with unsaved changes open: save or discard one first."
CHECK_FAILED: t.Final = "The access check failed: reload the page to try again."


class Refusal(Exception):
    """A UI request that cannot be served: the HTTP status and what to tell the person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Binding:
    """A component of a page of the caller's session, with its store and feed."""

    principal: Principal
    drafts: SessionDrafts
    page: Page
    component: Component
    store: LiveResourceStore
    feed: Feed


def current_app_object() -> Flask:
    return t.cast(Flask, current_app._get_current_object())  # type: ignore[attr-defined]


def session_of(krm: KrmStream) -> tuple[Principal, SessionDrafts]:
    """The signed-in principal and the session's drafts. Raises :class:`Refusal` (401)."""
    try:
        principal = krm.require_principal()
        return principal, krm.drafts()
    except Unauthenticated:
        raise Refusal(401, SIGNED_OUT) from None


def page_of(drafts: SessionDrafts, page_id: str | None) -> Page:
    """The session's page ``page_id``. Raises :class:`Refusal` (404)."""
    page = find_page(drafts, page_id or "")
    if page is None:
        raise Refusal(404, PAGE_EXPIRED)
    return page


def authorize(krm: KrmStream, principal: Principal, component: Component) -> None:
    """Check the scope policy and the host's authorizer for watching the component's scope.

    Raises :class:`Refusal` (403) when either refuses, or when the authorizer fails.
    """
    try:
        krm.scope_policy().check(component.scope)
    except ScopeError:
        raise Refusal(403, NOT_SERVED) from None
    try:
        allowed = krm.is_authorized(principal, component.scope, component.projection, "watch")
    except RuntimeError:
        raise
    except Exception:
        log.exception("the authorizer failed; a live view is refused")
        raise Refusal(403, CHECK_FAILED) from None
    if not allowed:
        raise Refusal(403, NOT_PERMITTED)


def attach(state: UiState, principal: Principal, drafts: SessionDrafts, component: Component) -> tuple[LiveResourceStore, Feed]:
    """The session store and feed of an authorized component. Raises :class:`Refusal` (409)."""
    try:
        store = state.store_for(drafts, component)
    except DraftLimitReached:
        raise Refusal(409, TOO_MANY_DRAFTS) from None
    return store, state.feed_for(store, principal, component, current_app_object())


def bind(state: UiState, page_id: str | None, component_id: str) -> Binding:
    """Everything a request on ``component_id`` of page ``page_id`` needs. Raises :class:`Refusal`."""
    principal, drafts = session_of(state.krm)
    page = page_of(drafts, page_id)
    component = page.components.get(component_id)
    if component is None:
        raise Refusal(404, UNKNOWN_COMPONENT)
    authorize(state.krm, principal, component)
    store, feed = attach(state, principal, drafts, component)
    return Binding(principal, drafts, page, component, store, feed)
