"""The spec-v1 JSON stream endpoint (``/resource-stream/v1``) and :func:`stream_response`.

A stream request is handled in the reference gateway's order: authenticate, parse the scope,
check it against ``KRM_SCOPE_POLICY``, pick the projection, authorize the principal for the exact
scope and projection, then stream. A refused request still gets HTTP 200 and the SSE headers, then
exactly one terminal error event with ``seq`` 1 (a browser ``EventSource`` cannot read a non-200
body); no ``reset`` is ever sent. Authentication comes first, so an anonymous caller learns
nothing about which scopes exist. Refusals send no signal: :data:`~flask_krm.signals.stream_opened`
marks a stream that passed every check.
"""

from __future__ import annotations

import logging
import typing as t
import weakref
from collections.abc import Callable, Mapping

from flask import Flask, Response, session

from . import signals
from .errors import ScopeInvalid
from .events import ErrorCode, StreamError, encode_body, frame
from .log_fields import new_stream_id, request_id, scope_fields
from .ops import Failure
from .projection import PROJECTIONS
from .runtime import KrmRuntime, runtime
from .scope import Scope
from .sessions import SESSION_ID_KEY
from .sse import HEADERS
from .sse_response import sse_response
from .subscriptions import SHUTDOWN_ERROR, Subscription

if t.TYPE_CHECKING:
    from .principal import Principal

logger = logging.getLogger("flask_krm")

UNIDENTIFIED_MESSAGE: t.Final = "the caller could not be identified"
UNAUTHENTICATED_MESSAGE: t.Final = "sign in to open this stream"
SESSION_ENDED: t.Final = Failure("UNAUTHENTICATED", "the session ended (signed out): sign in again", terminal=True)
"""The last event of a stream whose browser session ended (sign-out, another sign-in, expiry)."""


def refusal(code: ErrorCode, message: str) -> Response:
    """An SSE response carrying one terminal error event with ``seq`` 1, over HTTP 200."""
    body = frame(1, encode_body(StreamError(code, message, terminal=True)))
    return Response(body, status=200, headers=list(HEADERS))


def refusal_form(status: int, message: str, kind: str) -> Response:
    """How the stream endpoint's guards refuse (:func:`flask_krm.guards.refuses_as`): a terminal
    ``SCOPE_INVALID`` event, the one answer its clients read."""
    return refusal("SCOPE_INVALID", message)


def stream_response(scope: Scope | Mapping[str, t.Any] | str, projection: str | None) -> Response:
    """Authenticate, validate and authorize a stream request, then stream it (see the module doc).

    Everything the stream needs is captured here: the generator runs without a request context.
    """
    krm = runtime()
    try:
        principal = krm.current_principal()
    except Exception:
        logger.exception("the principal loader failed; the stream is refused")
        return refusal("FORBIDDEN", UNIDENTIFIED_MESSAGE)
    if principal is None:
        return refusal("UNAUTHENTICATED", UNAUTHENTICATED_MESSAGE)
    try:
        scope = krm.scope_from(scope)
    except ScopeInvalid as exc:
        return refusal("SCOPE_INVALID", str(exc.description))
    if projection is None:
        projection = t.cast(str, krm.setting("PROJECTION"))
    if projection not in PROJECTIONS:
        return refusal("SCOPE_INVALID", f"projection {projection!r} is unknown; use one of {', '.join(PROJECTIONS)}")
    decision = krm.decide(principal, scope, projection, "watch")
    if not decision.allowed:
        error = decision.stream_error()
        return refusal(error.code, error.message)
    if krm.shut_down:
        return refusal(SHUTDOWN_ERROR.code, SHUTDOWN_ERROR.message)
    subscription = krm.subscribe(principal, scope, projection, decision)
    connection = _Connection(krm, subscription, principal, scope, projection)
    if session.get(SESSION_ID_KEY):  # a browser session's stream ends as soon as the session does
        connection.unwatch = krm.session_drafts().watch_end(lambda: subscription.end(SESSION_ENDED))
    signals.stream_opened.send(krm.app, principal=principal, scope=scope, projection=projection)
    if krm.metrics is not None:
        krm.metrics.stream_opened("json")
    logger.debug("stream opened", extra=connection.fields)
    # the subscription's own iterator, with nothing wrapped around it: a layer per stream would
    # cost every write a resume, and every idle stream the memory of its suspended frame
    return sse_response(iter(subscription), list(HEADERS), connection.closed)


class _Connection:
    """One open JSON stream, and the ``stream_closed`` signal sent exactly once when it closes."""

    def __init__(
        self, krm: KrmRuntime, subscription: Subscription, principal: Principal, scope: Scope, projection: str
    ) -> None:
        self._krm = weakref.ref(krm)
        self._app: weakref.ref[Flask] = krm.app_ref
        self._subscription = subscription
        self._principal = principal
        self._scope = scope
        self._projection = projection
        self._finished = False
        self.unwatch: Callable[[], None] = lambda: None
        """Stops watching the browser session's end."""
        self.fields: dict[str, str] = {
            "krm_event": "stream-open",
            "request_id": request_id(),
            "stream_id": new_stream_id(),
            "kind": "json",
            **scope_fields(scope),
        }
        """The structured log fields of this stream (see :mod:`flask_krm.log_fields`)."""

    def closed(self) -> None:
        """The WSGI server closed the response (also when the body was never iterated), or the
        client was seen to go. A subscription that had ended by itself ended the stream (``ended``,
        or ``shutdown``); one still serving was left by its client (``client-closed``)."""
        if self._finished:
            return
        self._finished = True
        self.unwatch()
        ended = self._subscription.ended
        self._subscription.close()
        krm = self._krm()
        reason = ("shutdown" if krm is not None and krm.shut_down else "ended") if ended else "client-closed"
        if krm is not None and krm.metrics is not None:
            krm.metrics.stream_closed("json")
        logger.debug("stream closed: %s", reason, extra={**self.fields, "krm_event": "stream-close", "outcome": reason})
        app = self._app()
        if app is not None:
            signals.stream_closed.send(
                app, principal=self._principal, scope=self._scope, projection=self._projection, reason=reason
            )
