"""A custom resource checked against its CRD's structural schema, worded as kube-apiserver words it.

kube-apiserver validates a custom resource with kube-openapi's JSON-schema validator (type,
``nullable``, ``enum``, ``pattern``, lengths, bounds, item counts, ``required``), turns each failure
into a field error (``apiextensions-apiserver``'s ``kubeOpenAPIResultToFieldErrors``), then checks
that the items of ``x-kubernetes-list-type: map`` lists have unique keys and those of ``set`` lists
are unique (``listtype.ValidateListSetsAndMaps``). The Go validator visits sibling properties in
map order; here they are visited in the schema's order, then the missing required ones.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import FieldError

Schema = dict[str, Any]
IN = "body"


def schema_type(value: Any) -> str:
    """The JSON-schema type kube-openapi infers for a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def go_number(value: float) -> str:
    """A bound printed with Go's ``%v`` of a float64 (``65535``, ``1.5``)."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e21 else repr(float(value))


def validate(schema: Schema, obj: Any) -> list[FieldError]:
    """Every field error of ``obj`` against ``schema`` (its ``openAPIV3Schema``), in kube-apiserver's order."""
    errors: list[FieldError] = []
    _check(schema, obj, "", errors)
    _check_lists(schema, obj, "", errors)
    return errors


def _allowed_types(schema: Schema) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    declared = schema.get("type")
    return [declared] if declared else []


def _type_matches(types: list[str], value: Any) -> bool:
    actual = schema_type(value)
    if actual in types:
        return True
    if actual == "number" and "integer" in types and float(value).is_integer():
        return True
    return actual == "integer" and "number" in types


def _check(schema: Schema, value: Any, path: str, errors: list[FieldError]) -> None:
    types = _allowed_types(schema)
    if value is None:
        if types and not schema.get("nullable"):
            _type_error(path, types, "null", errors)
        return
    if types and not _type_matches(types, value):
        _type_error(path, types, schema_type(value), errors)
    if isinstance(value, str):
        _check_string(schema, value, path, errors)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(schema, value, path, errors)
    elif isinstance(value, list):
        _check_array(schema, value, path, errors)
    if "enum" in schema and value not in schema["enum"]:
        supported = [item if isinstance(item, str) else json.dumps(item) for item in schema["enum"]]
        errors.append(FieldError.not_supported(path, value, supported))
    if isinstance(value, dict):
        _check_object(schema, value, path, errors)


def _type_error(path: str, types: list[str], actual: str, errors: list[FieldError]) -> None:
    detail = f"{path} in {IN} must be of type {','.join(types)}: {json.dumps(actual)}"
    errors.append(FieldError.type_invalid(path, actual, detail))


def _check_string(schema: Schema, value: str, path: str, errors: list[FieldError]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(FieldError("FieldValueTooLong", path, f"may not be more than {schema['maxLength']} bytes"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        detail = f"{path} in {IN} should be at least {schema['minLength']} chars long"
        errors.append(FieldError.invalid(path, value, detail))
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        errors.append(FieldError.invalid(path, value, f"{path} in {IN} should match '{schema['pattern']}'"))


def _check_number(schema: Schema, value: float, path: str, errors: list[FieldError]) -> None:
    if "multipleOf" in schema and (value / schema["multipleOf"]) % 1:
        detail = f"{path} in {IN} should be a multiple of {go_number(schema['multipleOf'])}"
        errors.append(FieldError.invalid(path, value, detail))
    if "maximum" in schema:
        limit = schema["maximum"]
        if schema.get("exclusiveMaximum") and value >= limit:
            errors.append(FieldError.invalid(path, value, f"{path} in {IN} should be less than {go_number(limit)}"))
        elif value > limit:
            detail = f"{path} in {IN} should be less than or equal to {go_number(limit)}"
            errors.append(FieldError.invalid(path, value, detail))
    if "minimum" in schema:
        limit = schema["minimum"]
        if schema.get("exclusiveMinimum") and value <= limit:
            errors.append(FieldError.invalid(path, value, f"{path} in {IN} should be greater than {go_number(limit)}"))
        elif value < limit:
            detail = f"{path} in {IN} should be greater than or equal to {go_number(limit)}"
            errors.append(FieldError.invalid(path, value, detail))


def _check_array(schema: Schema, value: list[Any], path: str, errors: list[FieldError]) -> None:
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _check(items, item, f"{path}[{index}]", errors)
    if "minItems" in schema and len(value) < schema["minItems"]:
        detail = f"{path} in {IN} should have at least {schema['minItems']} items"
        errors.append(FieldError.invalid(path, len(value), detail))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(
            FieldError("FieldValueTooMany", path, f"must have at most {schema['maxItems']} items", len(value), True)
        )


def _check_object(schema: Schema, value: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        for key, item in value.items():
            if key not in properties:
                _check(additional, item, f"{path}.{key}", errors)
    for key, child in properties.items():
        if key in value:
            _check(child, value[key], f"{path}.{key}" if path else key, errors)
    for key in schema.get("required") or []:
        if key not in value:
            errors.append(FieldError.required(f"{path}.{key}" if path else key))


def _check_lists(schema: Schema, value: Any, path: str, errors: list[FieldError]) -> None:
    """``ValidateListSetsAndMaps``: unique keys in ``map`` lists, unique items in ``set`` lists, at every depth."""
    if isinstance(value, list):
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            errors += [FieldError.duplicate(f"{path}[{index}]", value[index]) for index in _repeated(value)]
        elif list_type == "map":
            errors += _list_map_errors(schema.get("x-kubernetes-list-map-keys") or [], value, path)
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                _check_lists(items, item, f"{path}[{index}]", errors)
    elif isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            child = properties.get(key)
            if child is not None:
                _check_lists(child, item, f"{path}.{key}" if path else key, errors)
            elif isinstance(additional, dict):
                _check_lists(additional, item, f"{path}[{key}]", errors)


def _repeated(values: list[Any]) -> list[int]:
    """The index of each value's second appearance (``validateListSet``)."""
    seen: dict[str, int] = {}
    repeated: list[int] = []
    for index, value in enumerate(values):
        token = json.dumps(value, sort_keys=True, separators=(",", ":"))
        seen[token] = seen.get(token, 0) + 1
        if seen[token] == 2:
            repeated.append(index)
    return repeated


def _list_map_errors(keys: list[str], items: list[Any], path: str) -> list[FieldError]:
    for index, item in enumerate(items):
        if item is not None and not isinstance(item, dict):
            return [FieldError.invalid(f"{path}[{index}]", item, "must be an object for an array of list-type map")]
    key_values = [{key: item[key] for key in keys if key in item} if isinstance(item, dict) else {} for item in items]
    return [FieldError.duplicate(f"{path}[{index}]", key_values[index]) for index in _repeated(key_values)]


def unknown_fields(schema: Schema, value: Any, path: str, found: list[str], *, prune: bool) -> None:
    """Record (and with ``prune`` remove) the fields below ``value`` that ``schema`` neither declares nor preserves.

    kube-apiserver prunes them when it decodes a custom resource (``structuralpruning``) and reports
    them as unknown fields (``fieldValidation``).
    """
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                unknown_fields(items, item, f"{path}[{index}]", found, prune=prune)
        return
    if not isinstance(value, dict):
        return
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserved = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or additional is True
    for key, item in list(value.items()):
        child = f"{path}.{key}" if path else key
        if key in properties:
            unknown_fields(properties[key], item, child, found, prune=prune)
        elif isinstance(additional, dict):
            unknown_fields(additional, item, f"{path}[{key}]", found, prune=prune)
        elif not preserved:
            found.append(child)
            if prune:
                del value[key]
