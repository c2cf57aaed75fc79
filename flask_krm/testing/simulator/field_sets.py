"""Field sets as structured-merge-diff computes them from a kind's schema, and their ``fieldsV1`` form.

A path is a tuple of path elements written as in ``fieldsV1``: ``f:<field>`` for a field of an
object, ``k:<JSON of the key fields>`` for an item of an ``x-kubernetes-list-type: map`` list,
``v:<JSON>`` for an item of a ``set`` list. A set holds the paths a manager owns: leaves (scalars,
atomic lists and maps, empty objects) and the items of keyed lists (``.`` in ``fieldsV1``). The
schema of a built-in kind is its OpenAPI v3 schema (``openapi_v3.json``), that of a custom resource
its CRD's ``openAPIV3Schema``; lists without a list type are atomic, objects without a schema
(preserved unknown fields) are granular maps.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from . import catalog
from .catalog import ResourceType

Schema = dict[str, Any]
Path = tuple[str, ...]
REFERENCE_PREFIX = "#/components/schemas/"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
STRIPPED = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        ("f:metadata", "f:name"),
        ("f:metadata", "f:namespace"),
        ("f:metadata", "f:creationTimestamp"),
        ("f:metadata", "f:selfLink"),
        ("f:metadata", "f:uid"),
        ("f:metadata", "f:generation"),
        ("f:metadata", "f:managedFields"),
        ("f:metadata", "f:resourceVersion"),
    }
)
"""What kube-apiserver's field manager never records (``stripMetaManager``)."""


@functools.cache
def _components() -> dict[str, Schema]:
    bundle = json.loads(resources.files(__package__).joinpath("openapi_v3.json").read_text())
    schemas: dict[str, Schema] = {}
    for document in bundle["documents"].values():
        schemas.update(document["components"]["schemas"])
    return schemas


def resolve(schema: Schema | None) -> Schema | None:
    """``schema`` with its ``$ref`` (alone or as the only ``allOf`` member) followed."""
    while schema is not None:
        reference = schema.get("$ref")
        if reference is None and len(schema.get("allOf") or []) == 1:
            reference = schema["allOf"][0].get("$ref")
        if reference is None:
            return schema
        schema = _components().get(str(reference).removeprefix(REFERENCE_PREFIX))
    return None


def kind_schema(resource: ResourceType) -> Schema | None:
    """The schema of ``resource``'s objects (``metadata`` resolved to ``ObjectMeta`` for a custom resource)."""
    if resource.custom:
        schema = catalog.openapi_schema(resource)
        properties = {"metadata": {"$ref": REFERENCE_PREFIX + OBJECT_META}, **(schema.get("properties") or {})}
        return {**schema, "properties": properties}
    for schema in _components().values():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if (gvk["group"], gvk["version"], gvk["kind"]) == (resource.group, resource.version, resource.kind):
                return schema
    return None


def child(schema: Schema | None, key: str) -> Schema | None:
    """The schema of field ``key`` of an object described by ``schema`` (``None``: unknown, treated as deduced)."""
    if schema is None:
        return None
    properties = schema.get("properties") or {}
    if key in properties:
        return resolve(properties[key])
    additional = schema.get("additionalProperties")
    return resolve(additional) if isinstance(additional, dict) else None


def list_type(schema: Schema | None) -> str:
    return str((schema or {}).get("x-kubernetes-list-type") or "atomic")


def items(schema: Schema | None) -> Schema | None:
    return resolve((schema or {}).get("items"))


def is_atomic_map(schema: Schema | None) -> bool:
    return (schema or {}).get("x-kubernetes-map-type") == "atomic"


def item_key(schema: Schema | None, item: Any) -> str:
    """The ``k:`` element of a keyed list's item (key fields sorted by name, as structured-merge-diff writes them).

    A key field the item leaves out takes its schema default (a container port's ``protocol: TCP``).
    """
    keys = (schema or {}).get("x-kubernetes-list-map-keys") or []
    fields = (items(schema) or {}).get("properties") or {}
    present: dict[str, Any] = {}
    for key in sorted(keys):
        if isinstance(item, dict) and key in item:
            present[key] = item[key]
        elif "default" in (fields.get(key) or {}):
            present[key] = fields[key]["default"]
    return "k:" + json.dumps(present, separators=(",", ":"), ensure_ascii=False)


def value_element(item: Any) -> str:
    return "v:" + json.dumps(item, separators=(",", ":"), ensure_ascii=False)


def object_set(resource: ResourceType, obj: dict[str, Any]) -> set[Path]:
    """The fields ``obj`` sets (``ToFieldSet``), without what the field manager strips and, for a kind with
    a status subresource, without ``status`` (reset on writes to the main resource)."""
    found: set[Path] = set()
    _collect(kind_schema(resource), obj, (), found)
    return {path for path in found - STRIPPED if not (resource.status_subresource and path[:1] == ("f:status",))}


def _collect(schema: Schema | None, value: Any, path: Path, found: set[Path]) -> None:
    if isinstance(value, list):
        kind = list_type(schema)
        if kind == "map":
            for item in value:
                element = path + (item_key(schema, item),)
                found.add(element)
                _collect(items(schema), item, element, found)
        elif kind == "set":
            found.update(path + (value_element(item),) for item in value)
        else:
            found.add(path)
    elif isinstance(value, dict) and value and not is_atomic_map(schema):
        for key, item in value.items():
            _collect(child(schema, key), item, path + (f"f:{key}",), found)
    else:
        found.add(path)


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """A set as ``fieldsV1`` (keys sorted; ``.`` marks a member that also has children)."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        node["."] = {}
    return _emit(tree)


def _emit(node: dict[str, Any]) -> dict[str, Any]:
    children = {key: _emit(value) for key, value in node.items() if key != "."}
    if "." in node and children:
        children["."] = {}
    return {key: children[key] for key in sorted(children)}


def from_fields_v1(tree: dict[str, Any], path: Path = ()) -> set[Path]:
    """The paths a ``fieldsV1`` tree holds."""
    found: set[Path] = set()
    children = [key for key in tree if key != "."]
    if path and (not children or "." in tree):
        found.add(path)
    for key in children:
        found |= from_fields_v1(tree[key], path + (key,))
    return found


def path_string(path: Path) -> str:
    """``fieldpath.Path.String()``: ``.spec.ports[name="http"].port``, ``.metadata.finalizers[="a"]``."""
    text = ""
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            text += f".{rest}"
        elif kind == "k":
            fields = json.loads(rest)
            text += "[" + ",".join(f"{key}={json.dumps(value)}" for key, value in fields.items()) + "]"
        else:
            text += f"[={rest}]"
    return text
