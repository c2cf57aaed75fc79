"""``fieldValidation``: fields a body carries that its kind does not declare.

kube-apiserver drops unknown fields when it decodes a body. With ``fieldValidation=Warn`` (the
default) it names each one in a ``Warning`` header, with ``Ignore`` it says nothing, and with
``Strict`` it refuses the write: 400 for a create or update, 422 on ``patch`` for a patch (whose
result is what was decoded). The fields each built-in kind declares come from the real server's
OpenAPI documents (``field_schemas.json``, written by ``scripts/simulator-schemas``); a custom
resource's top level and metadata are checked as any kind's, ``spec`` and ``status`` against its
CRD's structural schema (what it neither declares nor preserves is unknown, and pruned).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from . import catalog, structural_schema
from .catalog import ResourceType

IGNORE, WARN, STRICT = "Ignore", "Warn", "Strict"
DIRECTIVES = (IGNORE, WARN, STRICT)
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
CUSTOM_RESOURCE_FIELDS = {"apiVersion": "", "kind": "", "metadata": OBJECT_META, "spec": "", "status": ""}


@dataclass
class FieldValidation:
    """One write's directive (``""`` is ``Warn``) and the warnings it collected for the response."""

    directive: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def strict(self) -> bool:
        return self.directive == STRICT

    def report(self, unknown: list[str]) -> str:
        """Record ``unknown`` fields; returns the strict decoding error's text (``""``: none)."""
        if not unknown:
            return ""
        messages = [f'unknown field "{path}"' for path in unknown]
        if self.directive in ("", WARN):
            self.warnings += messages
        return "strict decoding error: " + ", ".join(messages)


@functools.cache
def _table() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("field_schemas.json").read_text()
    table = json.loads(text)
    assert isinstance(table, dict)
    return table


def unknown_fields(resource: ResourceType, obj: Any) -> list[str]:
    """Paths of the fields in ``obj`` that ``resource``'s kind does not declare, in document order."""
    found: list[str] = []
    _walk(obj, _kind_fields(resource), "", found, prune=False)
    _walk_custom(resource, obj, found, prune=False)
    return found


def drop_unknown_fields(resource: ResourceType, obj: Any) -> None:
    """Remove, in place, every field of ``obj`` that ``resource``'s kind does not declare (decoding drops them)."""
    _walk(obj, _kind_fields(resource), "", [], prune=True)
    _walk_custom(resource, obj, [], prune=True)


def _walk_custom(resource: ResourceType, obj: Any, found: list[str], *, prune: bool) -> None:
    if not resource.custom or not isinstance(obj, dict):
        return
    properties = catalog.openapi_schema(resource).get("properties") or {}
    for key in ("spec", "status"):
        if key in obj and key in properties:
            structural_schema.unknown_fields(properties[key], obj[key], key, found, prune=prune)


def _kind_fields(resource: ResourceType) -> dict[str, str] | None:
    if resource.custom:
        return CUSTOM_RESOURCE_FIELDS
    type_name = _table()["kinds"].get(resource.kind)
    return None if type_name is None else _fields(type_name)


def _walk(value: Any, fields: dict[str, str] | None, path: str, found: list[str], *, prune: bool) -> None:
    if fields is None or not isinstance(value, dict):
        return
    for key, item in list(value.items()):
        child = f"{path}.{key}" if path else key
        if key not in fields:
            found.append(child)
            if prune:
                del value[key]
            continue
        declared = fields[key]
        if not declared:
            continue
        if declared.startswith("[]"):
            for index, element in enumerate(item if isinstance(item, list) else []):
                _walk(element, _fields(declared[2:]), f"{child}[{index}]", found, prune=prune)
        elif declared.startswith("{}"):
            for name, element in (item if isinstance(item, dict) else {}).items():
                _walk(element, _fields(declared[2:]), f"{child}[{name}]", found, prune=prune)
        else:
            _walk(item, _fields(declared), child, found, prune=prune)


def _fields(type_name: str) -> dict[str, str] | None:
    fields = _table()["types"].get(type_name)
    assert fields is None or isinstance(fields, dict)
    return fields
