"""Kubernetes ``Status`` failures, worded and shaped as kube-apiserver writes them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .catalog import GroupKind, GroupResource

Status = dict[str, Any]


@dataclass(frozen=True)
class FieldError:
    """One validation failure (``field.Error``): a cause of a 422 Invalid."""

    type: str
    field: str
    detail: str = ""
    value: Any = None
    has_value: bool = False

    @classmethod
    def invalid(cls, path: str, value: Any, detail: str) -> FieldError:
        """``field.Invalid``: a bad value."""
        return cls("FieldValueInvalid", path, detail, value, True)

    @classmethod
    def type_invalid(cls, path: str, value: Any, detail: str) -> FieldError:
        """``field.TypeInvalid``: a value of the wrong type."""
        return cls("FieldValueTypeInvalid", path, detail, value, True)

    @classmethod
    def forbidden(cls, path: str, detail: str) -> FieldError:
        """``field.Forbidden``: a value not allowed here."""
        return cls("FieldValueForbidden", path, detail)

    @classmethod
    def required(cls, path: str, detail: str = "") -> FieldError:
        """``field.Required``: a missing value."""
        return cls("FieldValueRequired", path, detail)

    @classmethod
    def not_supported(cls, path: str, value: Any, supported: list[str]) -> FieldError:
        """``field.NotSupported``: a value outside an enumeration."""
        detail = "supported values: " + ", ".join(json.dumps(item) for item in supported)
        return cls("FieldValueNotSupported", path, detail, value, True)

    @classmethod
    def duplicate(cls, path: str, value: Any) -> FieldError:
        """``field.Duplicate``: a value that must be unique."""
        return cls("FieldValueDuplicate", path, "", value, True)

    @classmethod
    def too_long(cls, path: str, limit: int) -> FieldError:
        """``field.TooLong``: the value is omitted, the limit named in bytes."""
        return cls("FieldValueTooLong", path, f"may not be more than {limit} bytes")

    def body(self) -> str:
        """The message without the field path (``ErrorBody``)."""
        label = {
            "FieldValueInvalid": "Invalid value",
            "FieldValueTypeInvalid": "Invalid value",
            "FieldValueForbidden": "Forbidden",
            "FieldValueRequired": "Required value",
            "FieldValueNotSupported": "Unsupported value",
            "FieldValueTooLong": "Too long",
            "FieldValueDuplicate": "Duplicate value",
            "FieldValueTooMany": "Too many",
        }[self.type]
        text = f"{label}: {go_value(self.value)}" if self.has_value else label
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def go_value(value: Any) -> str:
    """A bad value printed the way ``field.Error`` prints it (JSON for composite values)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def go_print(value: Any) -> str:
    """A decoded JSON value printed with Go's ``%v`` (maps with sorted keys, ``<nil>`` for null)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_print(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_print(item) for item in value) + "]"
    return str(value)


def go_type_name(value: Any) -> str:
    """The Go type a decoded JSON value has inside an ``interface{}`` (``map[string]interface {}``, ``int64``, ...)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "[]interface {}" if isinstance(value, list) else "map[string]interface {}"


def aggregate(errors: list[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one message alone, several bracketed, deduplicated."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


@dataclass
class ApiError(Exception):
    """A failed request: HTTP code plus the ``Status`` body the server sends."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    status_metadata: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> Status:
        """The ``Status`` object (key order as the Go encoder writes it)."""
        body: Status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.status_metadata),
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(resource_group: str, kind: str, name: str = "", **more: Any) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if resource_group:
        details["group"] = resource_group
    if kind:
        details["kind"] = kind
    details.update(more)
    return details


def not_found(resource: GroupResource, name: str) -> ApiError:
    """404 ``<resource> "<name>" not found``."""
    return ApiError(
        404, "NotFound", f'{resource} "{name}" not found', _details(resource.group, resource.resource, name)
    )


def unknown_resource() -> ApiError:
    """404 for a URL that names no served resource."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: GroupResource, name: str) -> ApiError:
    """409 AlreadyExists on create."""
    message = f'{resource} "{name}" already exists'
    return ApiError(409, "AlreadyExists", message, _details(resource.group, resource.resource, name))


def conflict(resource: GroupResource, name: str, cause: str) -> ApiError:
    """409 Conflict: ``Operation cannot be fulfilled on <resource> "<name>": <cause>``."""
    message = f'Operation cannot be fulfilled on {resource} "{name}": {cause}'
    return ApiError(409, "Conflict", message, _details(resource.group, resource.resource, name))


OPTIMISTIC_LOCK_MESSAGE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: GroupKind, name: str, errors: list[FieldError]) -> ApiError:
    """422 Invalid with one cause per field error."""
    causes = [{"reason": error.type, "message": error.body(), "field": error.field} for error in errors]
    message = f"{kind} {json.dumps(name, ensure_ascii=False)} is invalid: {aggregate([str(error) for error in errors])}"
    return ApiError(422, "Invalid", message, _details(kind.group, kind.kind, name, causes=causes))


def forbidden(resource: GroupResource, name: str, cause: str) -> ApiError:
    """403 Forbidden, worded like ``NewForbidden``."""
    if not resource.resource:
        message = f"forbidden: {cause}"
    elif name:
        message = f'{resource} "{name}" is forbidden: {cause}'
    else:
        message = f"{resource} is forbidden: {cause}"
    return ApiError(403, "Forbidden", message, _details(resource.group, resource.resource, name))


def unauthorized() -> ApiError:
    """401 for a missing or unknown token."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def bad_request(message: str) -> ApiError:
    """400 BadRequest."""
    return ApiError(400, "BadRequest", message)


def expired(message: str) -> ApiError:
    """410 Expired (a version older than the history)."""
    return ApiError(410, "Expired", message)


def method_not_allowed() -> ApiError:
    """405 for a verb the resource does not serve."""
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def unsupported_media_type(accepted: list[str]) -> ApiError:
    """415 for a body type the endpoint does not take."""
    message = "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted)
    return ApiError(415, "UnsupportedMediaType", message)


def too_large_resource_version(requested: int, current: int) -> ApiError:
    """504 for a resourceVersion newer than the server has."""
    message = f"Timeout: Too large resource version: {requested}, current: {current}"
    cause = {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    return ApiError(504, "Timeout", message, {"causes": [cause], "retryAfterSeconds": 1})


def service_unavailable(message: str) -> ApiError:
    """503 ServiceUnavailable."""
    return ApiError(503, "ServiceUnavailable", message)


def unwrapped(message: str) -> ApiError:
    """A plain Go error reaching the response writer: 500 with the bare message and no reason."""
    return ApiError(500, "", message)


def rejected() -> ApiError:
    """422 without details: an error the server only knows by its status code (a failed JSON patch operation)."""
    return ApiError(422, "Invalid", "the server rejected our request due to an error in our request", {})


def internal(message: str) -> ApiError:
    """500 InternalError."""
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})
