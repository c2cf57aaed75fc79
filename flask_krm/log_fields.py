"""Structured fields of flask-krm's log records, passed as ``extra=``.

Every record flask-krm logs about a request, a stream, a watch or a write carries the fields that
apply, as attributes of the ``logging.LogRecord``, for a structured formatter
(:class:`flask_krm.log_json.JsonFormatter` writes them as JSON keys):

- ``krm_event``: what happened (``stream-open``, ``stream-close``, ``write``, ``watch-restart``,
  ``drain``...);
- ``request_id``: the request's ``X-Request-Id`` when it sent a well-formed one (a proxy's),
  else one made here, the same for every record of the request;
- ``stream_id``: one per stream, from its opening to its end;
- ``target``, ``resource``: where (never a namespace or an object's name);
- ``kind``: ``json`` or ``page`` for streams; ``outcome``, ``operation``, ``reason``.

Values are plain strings; a value a client sent is used only when it matches
:data:`REQUEST_ID`, so no field can carry a forged line or a Secret value.
"""

from __future__ import annotations

import re
import secrets
import typing as t

from flask import has_request_context, request

from .log_json import KRM_FIELDS
from .scope import Scope

__all__ = ["FIELDS", "REQUEST_ID", "new_stream_id", "request_id", "scope_fields"]

FIELDS: t.Final = KRM_FIELDS
"""The structured fields flask-krm sets, in the order a formatter writes them."""

REQUEST_ID: t.Final = re.compile(r"[A-Za-z0-9._:-]{1,128}")
"""What a client's ``X-Request-Id`` must look like to be kept."""

_ENVIRON_KEY: t.Final = "flask_krm.request_id"


def request_id() -> str:
    """The current request's id (``""`` outside a request): the client's ``X-Request-Id`` when
    well formed, else a new random one; the same for the whole request."""
    if not has_request_context():
        return ""
    environ = request.environ
    found = environ.get(_ENVIRON_KEY)
    if found is None:
        sent = request.headers.get("X-Request-Id", "")
        found = environ[_ENVIRON_KEY] = sent if REQUEST_ID.fullmatch(sent) else secrets.token_hex(8)
    return t.cast(str, found)


def new_stream_id() -> str:
    """A new stream's id."""
    return secrets.token_hex(8)


def scope_fields(scope: Scope) -> dict[str, str]:
    """``target`` and ``resource`` (``configmaps``, ``deployments.apps``) of ``scope``."""
    resource = f"{scope.resource}.{scope.group}" if scope.group else scope.resource
    return {"target": scope.target, "resource": resource}
