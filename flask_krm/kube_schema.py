"""A kind's schema in a cluster's OpenAPI v3 document, read as one tree.

Pure: no Flask, no gevent, no network. kube-apiserver serves one OpenAPI v3 document per group
version (``/openapi/v3/apis/<group>/<version>``); each kind is a component schema marked with
``x-kubernetes-group-version-kind`` whose members refer to other components (``$ref``, often
wrapped in ``allOf`` beside a ``description`` and ``default``). :class:`SchemaView` reads such a
node with its ``$ref`` and ``allOf`` resolved on access, so a schema with cycles (a CRD's
``JSONSchemaProps``) costs nothing until a path walks into it, and the view is a ``Mapping`` the
structural-schema code (:class:`flask_krm.store.keyed_lists.KeyedLists`) reads as it reads a plain
schema.
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterator, Mapping, Sequence

REF_PREFIX: t.Final = "#/components/schemas/"
MAX_REF_DEPTH: t.Final = 32
"""How many ``$ref``/``allOf`` steps one node may take before it is read as an empty schema (a
reference loop such as ``A: {allOf: [{$ref: A}]}`` would otherwise never end)."""

_WRAPPED: t.Final = frozenset({"properties", "patternProperties"})
_NESTED: t.Final = frozenset({"items", "additionalProperties", "not"})

KindKey: t.TypeAlias = tuple[str, str]
"""``(apiVersion, kind)``, as draft stores key their schemas."""


class _Resolver:
    """One document's component schemas and the nodes already merged (by identity: the document's
    nodes live as long as it does)."""

    __slots__ = ("components", "merged")

    def __init__(self, components: Mapping[str, t.Any]) -> None:
        self.components = components
        self.merged: dict[int, tuple[Mapping[str, t.Any], dict[str, t.Any]]] = {}

    def merge(self, node: Mapping[str, t.Any]) -> dict[str, t.Any]:
        found = self.merged.get(id(node))
        if found is None or found[0] is not node:
            found = self.merged[id(node)] = (node, _flatten(self.components, node, 0))
        return found[1]


class SchemaView(Mapping[str, t.Any]):
    """One schema node with its ``$ref`` and ``allOf`` members merged in (its own keys win)."""

    __slots__ = ("_components", "_merged")

    def __init__(self, components: Mapping[str, t.Any] | _Resolver, node: Mapping[str, t.Any]) -> None:
        self._components = components if isinstance(components, _Resolver) else _Resolver(components)
        self._merged = self._components.merge(node)

    def __getitem__(self, key: str) -> t.Any:
        value = self._merged[key]
        if key in _WRAPPED and isinstance(value, Mapping):
            return _Members(self._components, value)
        if key in _NESTED and isinstance(value, Mapping):
            return self._view(value)
        if key in ("oneOf", "anyOf") and isinstance(value, list):
            return [self._view(member) if isinstance(member, Mapping) else member for member in value]
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged)

    def __len__(self) -> int:
        return len(self._merged)

    def _view(self, node: t.Any) -> t.Any:
        return SchemaView(self._components, node) if isinstance(node, Mapping) else node

    def member(self, name: str) -> SchemaView | None:
        """The schema of member ``name`` of this object (its ``properties`` entry, else its
        ``additionalProperties``); ``None`` when the schema says nothing about it."""
        properties = self._merged.get("properties")
        if isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping):
            return SchemaView(self._components, properties[name])
        extra = self._merged.get("additionalProperties")
        return SchemaView(self._components, extra) if isinstance(extra, Mapping) else None

    def item(self) -> SchemaView | None:
        """The schema of this array's items (``None``: not said)."""
        items = self._merged.get("items")
        return SchemaView(self._components, items) if isinstance(items, Mapping) else None

    def members(self) -> tuple[str, ...]:
        """The names of this object's declared members, in the document's order."""
        properties = self._merged.get("properties")
        return tuple(properties) if isinstance(properties, Mapping) else ()

    def at(self, path: Sequence[t.Any]) -> SchemaView | None:
        """The node at ``path`` below this one: string segments name members, anything else (an
        index, or an item's keys) steps into ``items``; ``None`` where the schema says nothing."""
        node: SchemaView | None = self
        for segment in path:
            if node is None:
                return None
            node = node.member(segment) if isinstance(segment, str) else node.item()
        return node


class _Members(Mapping[str, t.Any]):
    """An object's ``properties``, each read as a :class:`SchemaView` when it is asked for."""

    __slots__ = ("_resolver", "_members")

    def __init__(self, resolver: _Resolver, members: Mapping[str, t.Any]) -> None:
        self._resolver = resolver
        self._members = members

    def __getitem__(self, name: str) -> t.Any:
        member = self._members[name]
        return SchemaView(self._resolver, member) if isinstance(member, Mapping) else member

    def __contains__(self, name: object) -> bool:
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)


def _flatten(components: Mapping[str, t.Any], node: Mapping[str, t.Any], depth: int) -> dict[str, t.Any]:
    """``node``'s own keys over those of what it refers to and its ``allOf`` members; the
    ``properties`` of all of them together and their ``required`` names joined."""
    if depth > MAX_REF_DEPTH:
        return {}
    merged: dict[str, t.Any] = {}
    parts: list[Mapping[str, t.Any]] = []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        target = components.get(ref[len(REF_PREFIX) :])
        if isinstance(target, Mapping):
            parts.append(target)
    members = node.get("allOf")
    if isinstance(members, list):
        parts.extend(member for member in members if isinstance(member, Mapping))
    for part in parts:
        _merge_into(merged, _flatten(components, part, depth + 1))
    _merge_into(merged, {key: value for key, value in node.items() if key not in ("$ref", "allOf")})
    return merged


def _merge_into(merged: dict[str, t.Any], extra: Mapping[str, t.Any]) -> None:
    for key, value in extra.items():
        before = merged.get(key)
        if key == "properties" and isinstance(before, Mapping) and isinstance(value, Mapping):
            merged[key] = {**before, **value}
        elif key == "required" and isinstance(before, list) and isinstance(value, list):
            merged[key] = [*before, *(name for name in value if name not in before)]
        else:
            merged[key] = value


def as_view(schema: Mapping[str, t.Any]) -> SchemaView:
    """``schema`` read as a :class:`SchemaView` (a host's plain structural schema has no ``$ref``)."""
    return schema if isinstance(schema, SchemaView) else SchemaView({}, schema)


def kind_schemas(document: Mapping[str, t.Any], group: str, version: str) -> dict[KindKey, SchemaView]:
    """Every kind of ``group``/``version`` (core: ``""``) in one group version's OpenAPI v3
    document, by ``(apiVersion, kind)``."""
    components = document.get("components")
    schemas = components.get("schemas") if isinstance(components, Mapping) else None
    if not isinstance(schemas, Mapping):
        return {}
    resolver = _Resolver(schemas)
    api_version = f"{group}/{version}" if group else version
    found: dict[KindKey, SchemaView] = {}
    for schema in schemas.values():
        if not isinstance(schema, Mapping):
            continue
        marks = schema.get("x-kubernetes-group-version-kind")
        for mark in marks if isinstance(marks, list) else ():
            if (
                isinstance(mark, Mapping)
                and mark.get("group", "") == group
                and mark.get("version") == version
                and isinstance(mark.get("kind"), str)
            ):
                found[(api_version, mark["kind"])] = SchemaView(resolver, schema)
    return found


def group_version_path(group: str, version: str) -> str:
    """The key of a group version in the ``/openapi/v3`` index (``api/v1``, ``apis/apps/v1``)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


# ---------------------------------------------------------------------------- what a node is --


def types_of(node: Mapping[str, t.Any]) -> frozenset[str]:
    """The JSON types a node allows (``oneOf``/``anyOf`` alternatives included); empty: any."""
    found: set[str] = set()
    declared = node.get("type")
    if isinstance(declared, str):
        found.add(declared)
    for key in ("oneOf", "anyOf"):
        alternatives = node.get(key)
        for alternative in alternatives if isinstance(alternatives, list) else ():
            if isinstance(alternative, Mapping) and isinstance(alternative.get("type"), str):
                found.add(alternative["type"])
    return frozenset(found)


def is_int_or_string(node: Mapping[str, t.Any]) -> bool:
    """An ``IntOrString`` (a port by number or name, a percentage)."""
    return (
        node.get("format") == "int-or-string"
        or node.get("x-kubernetes-int-or-string") is True
        or types_of(node) == {"integer", "string"}
    )


def is_quantity(node: Mapping[str, t.Any]) -> bool:
    """A ``resource.Quantity`` (``500m``, ``128Mi``): a string or a number."""
    return node.get("format") == "quantity" or types_of(node) == {"number", "string"}


def required_members(node: Mapping[str, t.Any]) -> frozenset[str]:
    """The members an object must have."""
    names = node.get("required")
    return frozenset(name for name in names if isinstance(name, str)) if isinstance(names, list) else frozenset()


__all__ = [
    "KindKey",
    "SchemaView",
    "as_view",
    "group_version_path",
    "is_int_or_string",
    "is_quantity",
    "kind_schemas",
    "required_members",
    "types_of",
]
