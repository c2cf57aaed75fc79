"""Exceptions raised by flask-krm.

Errors raised while handling a request, before any stream byte is sent, subclass the matching
werkzeug HTTP exception, so a host can handle them with ``@app.errorhandler`` and a client always
gets a precise 4xx. Once a stream has started, an error travels as a terminal SSE event instead.
Setup mistakes (a missing hook, bad configuration) raise ``RuntimeError`` or ``ValueError`` with a
message naming the fix.
"""

from __future__ import annotations

from werkzeug.exceptions import BadRequest, Conflict, Forbidden, ServiceUnavailable, Unauthorized


class KrmError(Exception):
    """Base class of every flask-krm error."""


class ScopeInvalid(KrmError, BadRequest):
    """The requested scope or projection is malformed or not served (400)."""


class Unauthenticated(KrmError, Unauthorized):
    """No principal is signed in (401)."""


class ScopeDenied(KrmError, Forbidden):
    """The principal may not perform the verb on this scope and projection (403)."""


class CsrfError(KrmError, BadRequest):
    """A state-changing request lacks the session's CSRF token or carries a wrong one (400)."""


class DraftLimitReached(KrmError, Conflict):
    """The session already holds the maximum number of draft stores, all with unsaved edits (409)."""


class DraftsUnavailable(KrmError, ServiceUnavailable):
    """The draft backend (Redis) cannot be reached now: nothing was lost, try again shortly (503)."""

    description = "Drafts are temporarily unavailable: nothing is lost, try again in a moment."
