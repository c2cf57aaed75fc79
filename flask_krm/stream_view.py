"""The blueprint factory and the spec-v1 JSON stream endpoint (``/resource-stream/v1``).

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
from collections.abc import Iterator, Mapping

from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.exceptions import RequestEntityTooLarge

from . import config, csrf, signals
from .errors import ScopeInvalid
from .events import ErrorCode, StreamError, encode_body, frame
from .extension import SHUTDOWN_ERROR
from .projection import PROJECTIONS
from .scope import Scope, is_refused_parameter
from .sse import HEADERS
from .sse_response import SSEResponse

if t.TYPE_CHECKING:
    from .extension import KrmStream, Subscription
    from .principal import Principal

logger = logging.getLogger("flask_krm")

UNIDENTIFIED_MESSAGE: t.Final = "the caller could not be identified"
UNAUTHENTICATED_MESSAGE: t.Final = "sign in to open this stream"
CREDENTIAL_PARAMETER_MESSAGE: t.Final = (
    "A query parameter names an API server, an endpoint or a credential: the request is refused."
)


def make_blueprint(krm: KrmStream) -> Blueprint:
    """Build a ``krm`` blueprint (one per application): the JSON stream endpoint, CSRF protection on every
    state-changing request, the refusal of query parameters naming an API server or a credential,
    and the live UI's routes, templates and static files. Registers the Save editor action on
    ``krm`` (:func:`flask_krm.save.views.register_save`)."""
    from . import ui
    from .save.views import register_save

    bp = Blueprint("krm", __name__, template_folder="templates", static_folder="static")
    bp.before_request(limit_request_size)
    bp.before_request(refuse_credential_parameters)
    bp.before_request(csrf.protect)
    bp.register_error_handler(RequestEntityTooLarge, too_large)

    @bp.get("/resource-stream/v1")
    def resource_stream() -> Response:
        return stream_response(krm, request.args, request.args.get("projection") or None)

    ui.register(bp, krm)
    register_save(krm.editor_actions)
    return bp


def limit_request_size() -> None:
    """``before_request`` hook: bound the body of a state-changing request to
    ``KRM_MAX_REQUEST_BYTES`` (or the application's smaller ``MAX_CONTENT_LENGTH``).

    A declared ``Content-Length`` over the limit is refused at once with werkzeug's
    ``RequestEntityTooLarge`` (413); a body without one raises it when reading passes the limit.
    :func:`too_large` words it. The review views and the native proxy register the hook too.
    """
    if request.method not in csrf.UNSAFE_METHODS:
        return
    limit = t.cast(int, config.get(current_app, "MAX_REQUEST_BYTES"))
    current = request.max_content_length
    if current is None or current > limit:
        request.max_content_length = current = limit
    if request.content_length is not None and request.content_length > current:
        raise RequestEntityTooLarge()


def too_large(error: RequestEntityTooLarge) -> Response:
    """The 413 answer to a body over the request size limit, naming the limit."""
    return Response(
        f"The request body is larger than {request.max_content_length} bytes.", status=413, mimetype="text/plain"
    )


def refuse_credential_parameters() -> Response | None:
    """``before_request`` hook: refuse a request whose query names an API server, an endpoint, a
    credential or an identity to act as (:func:`~flask_krm.scope.is_refused_parameter`).

    The browser never supplies any of them, so such a request is a probe: it is refused, not
    ignored. The stream endpoint refuses them itself, as a terminal ``SCOPE_INVALID`` event; a
    page channel gets its close event (its answers are always event streams); every other route
    answers 400.
    """
    if request.endpoint == "krm.resource_stream" or not any(is_refused_parameter(name) for name in request.args):
        return None
    if request.endpoint == "krm.ui_channel":
        from .ui.channel import close_frame, event_stream

        return event_stream(iter([close_frame(CREDENTIAL_PARAMETER_MESSAGE)]))
    return Response(CREDENTIAL_PARAMETER_MESSAGE, status=400, mimetype="text/plain")


def refusal(code: ErrorCode, message: str) -> Response:
    """An SSE response carrying one terminal error event with ``seq`` 1, over HTTP 200."""
    body = frame(1, encode_body(StreamError(code, message, terminal=True)))
    return Response(body, status=200, headers=list(HEADERS))


def stream_response(
    krm: KrmStream, scope: Scope | Mapping[str, t.Any] | str, projection: str | None
) -> Response:
    """Authenticate, validate and authorize a stream request, then stream it (see the module doc).

    Everything the stream needs is captured here: the generator runs without a request context.
    """
    app = t.cast(Flask, current_app._get_current_object())  # type: ignore[attr-defined]
    try:
        principal = krm.current_principal()
    except Exception:
        logger.exception("the principal loader failed; the stream is refused")
        return refusal("FORBIDDEN", UNIDENTIFIED_MESSAGE)
    if principal is None:
        return refusal("UNAUTHENTICATED", UNAUTHENTICATED_MESSAGE)
    try:
        scope = krm.scope_from(scope, app)
    except ScopeInvalid as exc:
        return refusal("SCOPE_INVALID", str(exc.description))
    if projection is None:
        projection = t.cast(str, config.get(app, "PROJECTION"))
    if projection not in PROJECTIONS:
        return refusal(
            "SCOPE_INVALID", f"projection {projection!r} is unknown; use one of {', '.join(PROJECTIONS)}"
        )
    denied = krm._stream_refusal(principal, scope, projection)
    if denied is not None:
        return refusal(denied.code, denied.message)
    if krm.is_shut_down(app):
        return refusal(SHUTDOWN_ERROR.code, SHUTDOWN_ERROR.message)
    subscription = krm._subscribe_authorized(principal, scope, projection, app)
    connection = _Connection(krm, app, subscription, principal, scope, projection)
    signals.stream_opened.send(app, principal=principal, scope=scope, projection=projection)
    return SSEResponse(connection.chunks(), list(HEADERS), connection.client_closed)


class _Connection:
    """One open JSON stream: its chunks, and the ``stream_closed`` signal sent exactly once."""

    def __init__(
        self, krm: KrmStream, app: Flask, subscription: Subscription, principal: Principal, scope: Scope, projection: str
    ) -> None:
        self._krm = krm
        self._app = weakref.ref(app)
        self._subscription = subscription
        self._principal = principal
        self._scope = scope
        self._projection = projection
        self._finished = False

    def chunks(self) -> Iterator[bytes]:
        reason = "client-closed"
        try:
            yield from self._subscription
            app = self._app()
            shut_down = app is not None and self._krm.is_shut_down(app)
            reason = "shutdown" if shut_down else "ended"
        finally:
            self._finish(reason)

    def client_closed(self) -> None:
        """The WSGI server closed the response (also when the body was never iterated)."""
        self._finish("client-closed")

    def _finish(self, reason: str) -> None:
        if self._finished:
            return
        self._finished = True
        self._subscription.close()
        app = self._app()
        if app is not None:
            signals.stream_closed.send(
                app, principal=self._principal, scope=self._scope, projection=self._projection, reason=reason
            )
