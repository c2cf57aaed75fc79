"""Per-session CSRF tokens for every state-changing request to the blueprint.

The token is a random value kept in the host's signed session cookie. A state-changing request
(POST, PUT, PATCH, DELETE) must echo it in the ``X-KRM-CSRF`` header (htmx sends it through
``hx-headers``) or in the ``krm_csrf_token`` form field; otherwise it is refused
(:func:`validate_csrf`, which every flask-krm blueprint runs before its views through
:func:`flask_krm.guards.check_csrf`, and a host runs in its own form views).

The token belongs to the principal it was issued to: when another principal signs in on the same
browser (an anonymous visitor signing in included), the session calls :func:`revoke`
(:func:`flask_krm.sessions.follow_principal`), so a token learnt before a sign-in is refused after
it, with a message saying so. This module calls nothing else of flask-krm.
"""

from __future__ import annotations

import hmac
import secrets
import typing as t

from flask import request, session

from .errors import CsrfError

HEADER: t.Final = "X-KRM-CSRF"
"""Request header that carries the token."""

FIELD: t.Final = "krm_csrf_token"
"""Form field that carries the token."""

SESSION_KEY: t.Final = "_krm_csrf"

UNSAFE_METHODS: t.Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})

REVOKED_KEY: t.Final = "flask_krm.csrf_revoked"
"""Marks (in ``request.environ``) a request during which the session's token was revoked."""


def csrf_token() -> str:
    """The current session's CSRF token, created on first use. Requires a request context.

    Exposed to templates as ``krm_csrf_token()``.
    """
    token = session.get(SESSION_KEY)
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        session[SESSION_KEY] = token
    return token


def validate_csrf() -> None:
    """Refuse the current request unless it carries the session's CSRF token.

    Raises :class:`~flask_krm.errors.CsrfError` with a message saying what is wrong.
    """
    if request.environ.get(REVOKED_KEY):
        raise CsrfError("The CSRF token was issued before the current sign-in: reload the page and retry.")
    expected = session.get(SESSION_KEY)
    if not isinstance(expected, str) or not expected:
        raise CsrfError("The CSRF session token is missing: load a flask-krm page first, then retry.")
    sent = request.headers.get(HEADER) or request.form.get(FIELD)
    if not sent:
        raise CsrfError(f"The CSRF token is missing: send it in the {HEADER} header or the {FIELD} field.")
    if not hmac.compare_digest(sent.encode(), expected.encode()):
        raise CsrfError("The CSRF token is invalid: reload the page and retry.")


def revoke() -> None:
    """Drop the session's token because another principal signed in; a state-changing request
    later in this same request is refused as carrying a token issued before the sign-in."""
    if session.pop(SESSION_KEY, None):
        request.environ[REVOKED_KEY] = True
