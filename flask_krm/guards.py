"""Request guards every flask-krm blueprint runs before its views (``before_request`` hooks).

- :func:`limit_request_size`: the body bound (``KRM_MAX_REQUEST_BYTES``; :func:`too_large` words the 413);
- :func:`refuse_credential_parameters`: a query naming an API server or a credential is a probe;
- :func:`bind_session`: the browser session's flask-krm state follows the signed-in principal,
  once per request, before the CSRF check (:func:`flask_krm.csrf.protect`) looks at the token.

The ``krm`` blueprint runs all of them; the review views and the native proxy run the size bound
and the session binding, and check CSRF on their writes.
"""

from __future__ import annotations

import logging
import typing as t

from flask import Response, request
from werkzeug.exceptions import RequestEntityTooLarge

from . import csrf
from .runtime import runtime
from .scope import is_refused_parameter
from .ui.channel import close_frame, event_stream

logger = logging.getLogger("flask_krm")

STREAM_ENDPOINT: t.Final = "krm.resource_stream"
CHANNEL_ENDPOINT: t.Final = "krm.ui_channel"

CREDENTIAL_PARAMETER_MESSAGE: t.Final = (
    "A query parameter names an API server, an endpoint or a credential: the request is refused."
)


def limit_request_size() -> None:
    """Bound the body of a state-changing request to ``KRM_MAX_REQUEST_BYTES`` (or the
    application's smaller ``MAX_CONTENT_LENGTH``).

    A declared ``Content-Length`` over the limit is refused at once with werkzeug's
    ``RequestEntityTooLarge`` (413); a body without one raises it when reading passes the limit.
    :func:`too_large` words it.
    """
    if request.method not in csrf.UNSAFE_METHODS:
        return
    limit = t.cast(int, runtime().setting("MAX_REQUEST_BYTES"))
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
    """Refuse a request whose query names an API server, an endpoint, a credential or an identity
    to act as (:func:`~flask_krm.scope.is_refused_parameter`).

    The browser never supplies any of them, so such a request is a probe: it is refused, not
    ignored. The stream endpoint refuses them itself, as a terminal ``SCOPE_INVALID`` event; a
    page channel gets its close event (its answers are always event streams); every other route
    answers 400.
    """
    if request.endpoint == STREAM_ENDPOINT or not any(is_refused_parameter(name) for name in request.args):
        return None
    if request.endpoint == CHANNEL_ENDPOINT:
        return event_stream(iter([close_frame(CREDENTIAL_PARAMETER_MESSAGE)]))
    return Response(CREDENTIAL_PARAMETER_MESSAGE, status=400, mimetype="text/plain")


def bind_session() -> None:
    """Bind the browser session to the signed-in principal (:meth:`KrmRuntime.follow_principal
    <flask_krm.runtime.KrmRuntime.follow_principal>`).

    The JSON stream endpoint keeps no session state and is left alone. A principal loader that
    fails is left to the view, which answers it in its own way.
    """
    if request.endpoint == STREAM_ENDPOINT:
        return
    try:
        runtime().follow_principal()
    except Exception:
        logger.debug("the principal loader failed while binding the session; the view answers it")
