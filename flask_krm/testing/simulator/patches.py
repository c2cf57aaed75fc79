"""PATCH bodies by content type: merge patch, JSON patch, strategic merge patch; apply bodies decoded.

``patched_object`` turns the stored object and a patch into the object to validate and store,
failing exactly where kube-apiserver's patch handler fails (the content type, decoding the body,
applying it, decoding the result into the kind).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import yaml

from . import strategies
from .catalog import GroupKind, ResourceType
from .errors import ApiError, FieldError, bad_request, go_print, invalid, rejected, unwrapped
from .field_validation import FieldValidation, drop_unknown_fields, unknown_fields
from .json_patch import PatchFailed, apply_json_patch, decode_json_patch
from .merge_patch import apply_merge_patch
from .options import APPLY_PATCH_TYPES
from .patch_meta import patch_meta
from .store import Object
from .strategic_merge_patch import StrategicMergeError, strategic_merge

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = APPLY_PATCH_TYPES[0]


def accepted_patch_types(resource: ResourceType) -> list[str]:
    """The patch content types kube-apiserver accepts for ``resource``, in its order (apply included)."""
    if resource.custom:
        return [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
    return [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH]


def applied_patch_types(resource: ResourceType) -> list[str]:
    """The patch content types the simulator applies to every endpoint (apply only to the main resource, as YAML)."""
    return [patch_type for patch_type in accepted_patch_types(resource) if patch_type != APPLY_PATCH]


def decode_apply_body(raw: bytes) -> Any:
    """An apply patch: a YAML (or JSON) object, else 400 as kube-apiserver's apply handler words it.

    YAML syntax errors carry PyYAML's description of the problem where Go's YAML library has its own.
    """
    try:
        applied = yaml.safe_load(raw)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise bad_request(f"error encoding patch: yaml: {where}{problem}") from None
    if not isinstance(applied, dict):
        raise bad_request(
            "error decoding patch: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
            f"{strategies.json_type(applied)} into Go value of type map[string]interface {{}}"
        )
    return applied


def decode_body(raw: bytes) -> Any:
    """A non-apply patch body: any JSON value, else 400 as the handler's validity check answers."""
    try:
        return json.loads(raw)
    except ValueError:
        raise bad_request("invalid JSON patch") from None


def patched_object(
    resource: ResourceType, existing: Object, patch_type: str, patch: Any, validation: FieldValidation | None = None
) -> Object:
    """``existing`` (not modified) after ``patch``, decoded as ``resource``'s kind; unknown fields reported to ``validation``."""
    validation = validation or FieldValidation()
    if patch_type == JSON_PATCH:
        operations = decode_json_patch([] if patch is None else patch)
        try:
            result = apply_json_patch(existing, operations)
        except PatchFailed:
            raise rejected() from None
        return _decoded(
            resource, result, lambda: json.dumps(_top_sorted(result), separators=(",", ":")), False, validation
        )
    if patch_type == STRATEGIC_MERGE_PATCH:
        if patch is not None and not isinstance(patch, dict):
            raise bad_request(
                f"json: cannot unmarshal {strategies.json_type(patch)} into Go value of type map[string]interface {{}}"
            )
        merging = copy.deepcopy(patch) if patch is not None else {}
        try:
            result = strategic_merge(existing, merging, patch_meta(resource.kind))
        except StrategicMergeError as error:
            raise _merge_failure(error) from None
        return _decoded(resource, _unknown_fields_dropped(result), lambda: go_print(merging), True, validation)
    if patch is None:
        raise bad_request("Invalid JSON Patch")  # the merge patch library's refusal of a null patch
    if not isinstance(patch, dict):
        raise bad_request(
            f"error decoding patch: json: cannot unmarshal {strategies.json_type(patch)} into Go value of type map[string]interface {{}}"
        )
    result = apply_merge_patch(copy.deepcopy(existing), patch)
    return _decoded(
        resource, result, lambda: json.dumps(_sorted_along(result, patch), separators=(",", ":")), False, validation
    )


def _merge_failure(error: StrategicMergeError) -> ApiError:
    if error.code == 400:
        return bad_request(error.message)
    if error.code == 422:
        return rejected()
    return unwrapped(error.message)


def _sorted_along(value: Any, patch: Any) -> Any:
    """The merge patch library's output: objects the patch reached are re-encoded (keys sorted), the rest kept as they were."""
    if not isinstance(value, dict):
        return value
    reached = patch if isinstance(patch, dict) else {}
    return {key: _sorted_along(value[key], reached[key]) if key in reached else value[key] for key in sorted(value)}


def _top_sorted(value: Any) -> Any:
    return dict(sorted(value.items())) if isinstance(value, dict) else value


def _unknown_fields_dropped(value: Any) -> Any:
    """Nulls and directive keys left in merged list items: the typed decoder drops them."""
    if isinstance(value, dict):
        return {
            key: _unknown_fields_dropped(item)
            for key, item in value.items()
            if item is not None and not key.startswith("$")
        }
    if isinstance(value, list):
        return [_unknown_fields_dropped(item) for item in value]
    return value


def _decoded(
    resource: ResourceType, result: Any, shown: Callable[[], str], unstructured: bool, validation: FieldValidation
) -> Object:
    """``result`` checked against the kind, or the 422 on ``patch`` kube-apiserver gives for a result it cannot decode."""
    if not isinstance(result, dict):
        raise invalid(
            GroupKind("", ""), "", [FieldError.invalid("patch", shown(), "cannot restore struct from: slice")]
        )
    try:
        strategies.check_types(resource, result)
    except strategies.DecodeError as error:
        message = error.converter_message() if unstructured else str(error)
        raise invalid(GroupKind("", ""), "", [FieldError.invalid("patch", shown(), message)]) from None
    strict_error = validation.report(unknown_fields(resource, result))
    if strict_error and validation.strict:
        raise invalid(GroupKind("", ""), "", [FieldError.invalid("patch", shown(), strict_error)])
    drop_unknown_fields(resource, result)
    strategies.normalize_bytes(resource, result)
    return result
