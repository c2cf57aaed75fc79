"""The blueprint factory and the spec-v1 JSON stream endpoint (``/resource-stream/v1``).

A stream request is handled in the reference gateway's order: authenticate, parse the scope,
check it against ``KRM_SCOPE_POLICY``, pick the projection, authorize the principal for the exact
scope and projection, then stream. A refused request still gets HTTP 200 and SSE headers, then
exactly one terminal error event with ``seq`` 1 (a browser ``EventSource`` cannot read a non-200
body); no ``reset`` is ever sent. Authentication comes first, so an anonymous caller learns
nothing about which scopes exist.
"""

from __future__ import annotations

import logging
import typing as t
from collections.abc import Mapping

from flask import Blueprint, Flask, Response, request

from . import config, csrf
from .events import ErrorCode, StreamError, encode_body, frame
from .projection import PROJECTIONS
from .scope import Scope, ScopeError, parse_scope

if t.TYPE_CHECKING:
    from .extension import KrmStream

logger = logging.getLogger("flask_krm")

STREAM_HEADERS: t.Final[Mapping[str, str]] = {
    "X-KRM-Stream-Protocol": "1",
    "Cache-Control": "no-cache, no-transform",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}

UNIDENTIFIED_MESSAGE: t.Final = "the caller could not be identified"
UNAUTHENTICATED_MESSAGE: t.Final = "sign in to open this stream"
FORBIDDEN_MESSAGE: t.Final = "this stream is not permitted for the signed-in principal"
AUTHORIZER_FAILED_MESSAGE: t.Final = "the authorization check failed"
SHUTDOWN_MESSAGE: t.Final = "the server is shutting down"


def make_blueprint(krm: KrmStream, app: Flask) -> Blueprint:
    """Build the ``krm`` blueprint for ``app``: the JSON stream endpoint and CSRF protection."""
    bp = Blueprint("krm", __name__, template_folder="templates", static_folder="static")
    bp.before_request(csrf.protect)

    @bp.get("/resource-stream/v1")
    def resource_stream() -> Response:
        return stream_response(krm, request.args, request.args.get("projection") or None)

    return bp


def refusal(code: ErrorCode, message: str) -> Response:
    """An SSE response carrying one terminal error event with ``seq`` 1, over HTTP 200."""
    body = frame(1, encode_body(StreamError(code, message, terminal=True)))
    return Response(body, status=200, mimetype="text/event-stream", headers=dict(STREAM_HEADERS))


def stream_response(
    krm: KrmStream, scope: Scope | Mapping[str, t.Any] | str, projection: str | None
) -> Response:
    """Authenticate, validate and authorize a stream request, then stream it (see the module doc)."""
    try:
        principal = krm.current_principal()
    except Exception:
        logger.exception("the principal loader failed; the stream is refused")
        return refusal("FORBIDDEN", UNIDENTIFIED_MESSAGE)
    if principal is None:
        return refusal("UNAUTHENTICATED", UNAUTHENTICATED_MESSAGE)
    state = krm._get_state()
    try:
        if not isinstance(scope, Scope):
            scope = parse_scope(scope)
        state.policy.check(scope)
    except ScopeError as exc:
        return refusal("SCOPE_INVALID", exc.message)
    if projection is None:
        projection = t.cast(str, config.get(_app(), "PROJECTION"))
    if projection not in PROJECTIONS:
        return refusal(
            "SCOPE_INVALID", f"projection {projection!r} is unknown; use one of {', '.join(PROJECTIONS)}"
        )
    try:
        allowed = krm.is_authorized(principal, scope, projection, "watch")
    except RuntimeError:
        raise
    except Exception:
        logger.exception("the authorizer failed; the stream is refused")
        return refusal("INTERNAL", AUTHORIZER_FAILED_MESSAGE)
    if not allowed:
        return refusal("FORBIDDEN", FORBIDDEN_MESSAGE)
    if state.shut_down:
        return refusal("INTERNAL", SHUTDOWN_MESSAGE)
    raise NotImplementedError("streaming is wired to the upstream hub next")


def _app() -> Flask:
    from flask import current_app

    return t.cast(Flask, current_app._get_current_object())  # type: ignore[attr-defined]
