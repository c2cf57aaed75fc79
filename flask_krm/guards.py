"""Request guards every flask-krm blueprint runs before its views (``before_request`` hooks).

Each guard refuses, with a precise 4xx and nothing logged, a request no browser page of flask-krm
would send:

- :func:`limit_request_size`: a state-changing body over ``KRM_MAX_REQUEST_BYTES`` (413);
- :func:`malformed_request`: a query string, URL path or form body that is not UTF-8 text (raw
  bytes, not percent-escapes: werkzeug keeps an escape it cannot decode as its ``%XX`` text);
- :func:`credential_parameter`: a query parameter naming an API server, an endpoint, a
  credential or an identity to act as (:func:`~flask_krm.scope.is_refused_parameter`). The browser
  never supplies one, so such a request is a probe: refused, not ignored.

Then :func:`bind_session` binds the browser session's flask-krm state to the signed-in principal,
once per request, before the CSRF check (:func:`flask_krm.csrf.protect`) looks at the token.

:func:`install` adds them all to a blueprint with the blueprint's own way of answering (plain
text, a Kubernetes ``Status``, a terminal stream event: :func:`krm_answer`). A host whose own views
read ``request.args`` can refuse undecodable requests application-wide the same way::

    app.before_request(flask_krm.guards.refuse_malformed_request)
"""

from __future__ import annotations

import logging
import typing as t
from collections.abc import Callable, Collection, Mapping

from flask import Blueprint, Response, request
from werkzeug.exceptions import RequestEntityTooLarge

from . import csrf
from .errors import CsrfError
from .htmx import refusal_response
from .runtime import runtime
from .scope import is_refused_parameter
from .stream_view import refusal
from .ui.channel import close_frame, event_stream
from .ui.page import is_component_id

logger = logging.getLogger("flask_krm")

Answer: t.TypeAlias = Callable[[int, str], Response]
"""How a blueprint words a refusal: ``answer(status, message) -> Response``."""

STREAM_ENDPOINT: t.Final = "krm.resource_stream"
CHANNEL_ENDPOINT: t.Final = "krm.ui_channel"
UI_ENDPOINTS: t.Final = frozenset({"krm.ui_edit", "krm.ui_action"})
TOO_LARGE: t.Final = "This change is too large to send. Your other changes are still here."
CSRF_REFUSED: t.Final = "This page can no longer make changes (its session ended or changed): reload the page."

MALFORMED_QUERY: t.Final = "The query string is not UTF-8 text."
MALFORMED_PATH: t.Final = "The URL path is not UTF-8 text."
MALFORMED_FORM: t.Final = "The form body is not UTF-8 text."
CREDENTIAL_PARAMETER_MESSAGE: t.Final = (
    "A query parameter names an API server, an endpoint or a credential: the request is refused."
)
FORM_TYPE: t.Final = "application/x-www-form-urlencoded"


def plain_answer(status: int, message: str) -> Response:
    """A refusal as ``text/plain``, never cached."""
    return Response(message, status=status, mimetype="text/plain", headers={"Cache-Control": "no-store"})


def ui_outcome_id() -> str | None:
    """The outcome region of the component a field edit or an editor action names, or ``None``
    (another endpoint, or a URL naming no component)."""
    if request.endpoint not in UI_ENDPOINTS:
        return None
    component_id = (request.view_args or {}).get("component_id")
    return f"{component_id}-outcome" if is_component_id(component_id) else None


def krm_answer(status: int, message: str) -> Response:
    """A refusal on the ``krm`` blueprint in the form the endpoint's client reads: a terminal
    ``SCOPE_INVALID`` event on the JSON stream, the close event on a page channel (its answers are
    always event streams), an outcome at the editor for a field edit or an editor action, plain
    text elsewhere."""
    if request.endpoint == STREAM_ENDPOINT:
        return refusal("SCOPE_INVALID", message)
    if request.endpoint == CHANNEL_ENDPOINT:
        return event_stream(iter([close_frame(message)]))
    outcome_id = ui_outcome_id()
    if outcome_id is not None and status == 413:
        return refusal_response(outcome_id, status, TOO_LARGE, kind="too-large", detail=message)
    if outcome_id is not None:
        return refusal_response(outcome_id, status, message)
    return plain_answer(status, message)


def protect_csrf() -> Response | None:
    """``before_request`` hook of the ``krm`` blueprint: :func:`flask_krm.csrf.protect`. A field
    edit or an editor action it refuses is answered at the editor, where the refusal also ends the
    page's session (its token is no longer the session's); any other refusal propagates as
    :class:`~flask_krm.errors.CsrfError` (400), for the host's error handlers."""
    try:
        csrf.protect()
    except CsrfError as error:
        outcome_id = ui_outcome_id()
        if outcome_id is None:
            raise
        return refusal_response(
            outcome_id, 400, CSRF_REFUSED, kind="session-ended", detail=str(error.description), session_ended=True
        )
    return None


def _is_utf8(text: str) -> bool:
    """Whether a WSGI string (bytes carried as latin-1, PEP 3333) holds UTF-8 text."""
    try:
        text.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return False
    return True


def malformed_request(environ: Mapping[str, t.Any]) -> str | None:
    """What makes the request undecodable (a message safe to show), or ``None``.

    Reads the body only of a state-changing ``application/x-www-form-urlencoded`` request, after
    :func:`limit_request_size` has bounded it.
    """
    if not _is_utf8(str(environ.get("QUERY_STRING", ""))):
        return MALFORMED_QUERY
    if not _is_utf8(str(environ.get("SCRIPT_NAME", ""))) or not _is_utf8(str(environ.get("PATH_INFO", ""))):
        return MALFORMED_PATH
    if request.method in csrf.UNSAFE_METHODS and request.mimetype == FORM_TYPE:
        try:
            request.get_data(cache=True).decode("utf-8")
        except UnicodeDecodeError:
            return MALFORMED_FORM
    return None


def refuse_malformed_request() -> Response | None:
    """``before_request`` hook: answer 400 (plain text) to a request :func:`malformed_request` refuses."""
    problem = malformed_request(request.environ)
    return plain_answer(400, problem) if problem else None


def limit_request_size() -> None:
    """Bound the body of a state-changing request to ``KRM_MAX_REQUEST_BYTES`` (or the
    application's smaller ``MAX_CONTENT_LENGTH``).

    A declared ``Content-Length`` over the limit is refused at once with werkzeug's
    ``RequestEntityTooLarge`` (413); a body without one raises it when reading passes the limit.
    """
    if request.method not in csrf.UNSAFE_METHODS:
        return
    limit = t.cast(int, runtime().setting("MAX_REQUEST_BYTES"))
    current = request.max_content_length
    if current is None or current > limit:
        request.max_content_length = current = limit
    if request.content_length is not None and request.content_length > current:
        raise RequestEntityTooLarge()


def too_large_message() -> str:
    """The 413 message, naming the limit."""
    return f"The request body is larger than {request.max_content_length} bytes."


def credential_parameter() -> str | None:
    """The first query parameter naming a server or credential, or ``None``. The query must be
    decodable (:func:`malformed_request` runs first)."""
    return next((name for name in request.args if is_refused_parameter(name)), None)


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


def install(blueprint: Blueprint, answer: Answer = plain_answer, *, scope_checked: Collection[str] = ()) -> None:
    """Add the guards to ``blueprint``, in order: body size, decoding, credential parameters, then
    the session binding.

    :param answer: how the blueprint words a refusal.
    :param scope_checked: endpoints that refuse credential parameters themselves, as part of
        their scope (the JSON stream answers them with a terminal ``SCOPE_INVALID`` after
        authentication).
    """

    def guard() -> Response | None:
        limit_request_size()
        problem = malformed_request(request.environ)
        if problem is None and request.endpoint not in scope_checked and credential_parameter() is not None:
            problem = CREDENTIAL_PARAMETER_MESSAGE
        return answer(400, problem) if problem else None

    blueprint.before_request(guard)
    blueprint.before_request(bind_session)
    blueprint.register_error_handler(RequestEntityTooLarge, lambda error: answer(413, too_large_message()))
