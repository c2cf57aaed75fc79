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
once per request, and :func:`check_csrf` (the one CSRF check of every flask-krm route,
:func:`flask_krm.csrf.validate_csrf`) looks at the token of a state-changing request.

A refusal is worded in the form its client reads (a :data:`RefusalForm`): each view declares its
own where it is registered, with :func:`refuses_as`; otherwise the blueprint's, given to
:func:`install`; otherwise plain text, and a CSRF refusal raises
:class:`~flask_krm.errors.CsrfError` (400) for the host's error handlers. A host whose own views
read ``request.args`` can refuse undecodable requests application-wide the same way::

    app.before_request(flask_krm.guards.refuse_malformed_request)
"""

from __future__ import annotations

import logging
import typing as t
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from flask import Blueprint, Response, current_app, request
from werkzeug.exceptions import RequestEntityTooLarge

from . import csrf
from .errors import CsrfError
from .runtime import runtime
from .scope import is_refused_parameter

logger = logging.getLogger("flask_krm")

RefusalKind: t.TypeAlias = t.Literal["refused", "too-large", "csrf"]
"""What a guard refuses: a bad request (400), a body too large (413), a CSRF token (400)."""

RefusalForm: t.TypeAlias = Callable[[int, str, RefusalKind], "Response | None"]
"""How a route words a refusal: ``form(status, message, kind) -> Response``, or ``None`` when it
has no answer of its own for this request (then the next form down answers)."""

View = t.TypeVar("View", bound=Callable[..., t.Any])

DECLARATION: t.Final = "krm_refusals"
"""The attribute of a view function holding its :class:`Declaration`."""

MALFORMED_QUERY: t.Final = "The query string is not UTF-8 text."
MALFORMED_PATH: t.Final = "The URL path is not UTF-8 text."
MALFORMED_FORM: t.Final = "The form body is not UTF-8 text."
CREDENTIAL_PARAMETER_MESSAGE: t.Final = (
    "A query parameter names an API server, an endpoint or a credential: the request is refused."
)
FORM_TYPE: t.Final = "application/x-www-form-urlencoded"


@dataclass(frozen=True, slots=True)
class Declaration:
    """What a view declares to the guards (:func:`refuses_as`).

    :param form: how its refusals are worded.
    :param checks_parameters: it refuses credential parameters itself, as part of its scope.
    :param sessionless: it keeps no browser-session state (no session binding, no CSRF token).
    """

    form: RefusalForm
    checks_parameters: bool = False
    sessionless: bool = False


def refuses_as(
    form: RefusalForm, *, checks_parameters: bool = False, sessionless: bool = False
) -> Callable[[View], View]:
    """Decorator for a view, where it is registered: the guards word its refusals in ``form``
    (see :class:`Declaration` for the other flags). Returns the view unchanged."""
    declaration = Declaration(form, checks_parameters, sessionless)

    def declare(view: View) -> View:
        setattr(view, DECLARATION, declaration)
        return view

    return declare


def declared() -> Declaration | None:
    """What the view of the current request declared, or ``None``."""
    view = current_app.view_functions.get(request.endpoint or "")
    found = getattr(view, DECLARATION, None)
    return found if isinstance(found, Declaration) else None


def plain_answer(status: int, message: str) -> Response:
    """A refusal as ``text/plain``, never cached."""
    return Response(message, status=status, mimetype="text/plain", headers={"Cache-Control": "no-store"})


def plain_form(status: int, message: str, kind: RefusalKind) -> Response:
    """The :data:`RefusalForm` of plain text, for every kind of refusal."""
    return plain_answer(status, message)


def _answer(blueprint_form: RefusalForm | None, status: int, message: str, kind: RefusalKind) -> Response | None:
    """The refusal in the view's form, else the blueprint's, else ``None``."""
    declaration = declared()
    for form in (declaration.form if declaration else None, blueprint_form):
        answered = form(status, message, kind) if form is not None else None
        if answered is not None:
            return answered
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

    A sessionless view (the JSON stream) is left alone. A principal loader that fails is left to
    the view, which answers it in its own way.
    """
    declaration = declared()
    if declaration is not None and declaration.sessionless:
        return
    try:
        runtime().follow_principal()
    except Exception:
        logger.debug("the principal loader failed while binding the session; the view answers it")


def check_csrf(blueprint_form: RefusalForm | None = None) -> Response | None:
    """Refuse a state-changing request without the session's CSRF token
    (:func:`flask_krm.csrf.validate_csrf`), in the view's or ``blueprint_form``'s form; with
    neither, :class:`~flask_krm.errors.CsrfError` (400) propagates for the host's error
    handlers."""
    if request.method not in csrf.UNSAFE_METHODS:
        return None
    try:
        csrf.validate_csrf()
    except CsrfError as error:
        answered = _answer(blueprint_form, 400, str(error.description), "csrf")
        if answered is None:
            raise
        return answered
    return None


def install(blueprint: Blueprint, form: RefusalForm | None = None) -> None:
    """Add the guards to ``blueprint``, in order: body size, decoding, credential parameters, the
    session binding, then the CSRF check.

    :param form: how the blueprint's views that declare no form of their own (:func:`refuses_as`)
        word a refusal; by default plain text, and a CSRF refusal raises
        :class:`~flask_krm.errors.CsrfError`.
    """

    def refuse(status: int, message: str, kind: RefusalKind) -> Response:
        return _answer(form, status, message, kind) or plain_answer(status, message)

    def guard() -> Response | None:
        limit_request_size()
        problem = malformed_request(request.environ)
        declaration = declared()
        checks_parameters = declaration is not None and declaration.checks_parameters
        if problem is None and not checks_parameters and credential_parameter() is not None:
            problem = CREDENTIAL_PARAMETER_MESSAGE
        return refuse(400, problem, "refused") if problem else None

    def session_and_token() -> Response | None:
        bind_session()
        return check_csrf(form)

    blueprint.before_request(guard)
    blueprint.before_request(session_and_token)
    blueprint.register_error_handler(RequestEntityTooLarge, lambda error: refuse(413, too_large_message(), "too-large"))
