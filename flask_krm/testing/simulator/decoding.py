"""Request bodies decoded as kube-apiserver's codec decodes them, before any write semantics apply."""

from __future__ import annotations

import copy
import json
from typing import Any

from . import strategies
from .catalog import ResourceType
from .errors import bad_request
from .field_validation import FieldValidation, drop_unknown_fields, unknown_fields
from .store import Object

__all__ = ["decode"]


def decode(resource: ResourceType, body: Any, validation: FieldValidation | None = None) -> Object:
    """A request body as the object of ``resource`` it stands for, as kube-apiserver's codec
    decodes it (400 for what it cannot handle, or unknown fields under strict validation)."""
    if not isinstance(body, dict):
        raise bad_request(
            f'{resource.kind} in version "{resource.version}" cannot be handled as a {resource.kind}: '
            f"json: cannot unmarshal {strategies.json_type(body)} into Go value of type struct"
        )
    kind, api_version = body.get("kind"), body.get("apiVersion")
    if resource.custom and not kind:
        raw = json.dumps(body)
        raise bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"Object 'Kind' is missing in '{raw}' ({raw[:30]} ...)"
        )
    if kind and kind != resource.kind:
        internal_kind = f"{resource.group.split('.')[0] or 'core'}.{resource.kind}"
        raise bad_request(
            f'{kind} in version "{resource.version}" cannot be handled as a {resource.kind}: '
            f"converting ({resource.version}.{kind}) to ({internal_kind}): unknown conversion"
        )
    if api_version and api_version != resource.api_version:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version ({resource.api_version})"
        )
    obj = copy.deepcopy(body)
    obj.setdefault("metadata", {})
    try:
        strategies.check_types(resource, obj)
    except strategies.DecodeError as error:
        raise bad_request(
            f'{resource.kind} in version "{resource.version}" cannot be handled as a {resource.kind}: {error}'
        ) from None
    validation = validation or FieldValidation()
    strict_error = validation.report(unknown_fields(resource, body))
    if strict_error and validation.strict:
        raise bad_request(
            f'{resource.kind} in version "{resource.version}" cannot be handled as a {resource.kind}: {strict_error}'
        )
    drop_unknown_fields(resource, obj)
    strategies.normalize_bytes(resource, obj)
    obj["kind"], obj["apiVersion"] = resource.kind, resource.api_version
    return strategies.canonical(resource, obj)
