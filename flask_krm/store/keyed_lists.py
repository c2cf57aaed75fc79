"""Kubernetes keyed lists (``x-kubernetes-list-type: map``) from a structural OpenAPI schema.

A host passes structural schemas per ``(apiVersion, kind)``; a list whose schema says
``x-kubernetes-list-type: map`` with non-empty ``x-kubernetes-list-map-keys`` merges by key instead
of atomically. :data:`BUILTIN_LIST_SCHEMAS` holds the list-map markings Kubernetes publishes for
pod templates (containers keyed by name, and so on) for the built-in workload kinds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

from .paths import Segment

Schema: TypeAlias = Mapping[str, Any]
Identity: TypeAlias = tuple[tuple[str, Any], ...]


class KeyedLists:
    """The keyed lists of one kind, looked up by path (``int`` segments step into ``items``)."""

    __slots__ = ("_schema", "_cache")

    def __init__(self, schema: Schema) -> None:
        self._schema = schema
        self._cache: dict[tuple[Segment | None, ...], tuple[str, ...] | None] = {}

    def map_keys(self, path: Sequence[Segment]) -> tuple[str, ...] | None:
        """The list-map keys of the list at ``path``, or None when it is not a keyed list."""
        shape = tuple(None if isinstance(s, int) else s for s in path)
        if shape not in self._cache:
            self._cache[shape] = _map_keys(self._schema, shape)
        return self._cache[shape]


def _map_keys(schema: Schema, shape: tuple[str | None, ...]) -> tuple[str, ...] | None:
    node: Any = schema
    for segment in shape:
        if not isinstance(node, Mapping):
            return None
        if segment is None:
            node = node.get("items")
            continue
        properties = node.get("properties")
        if isinstance(properties, Mapping) and segment in properties:
            node = properties[segment]
        else:
            node = node.get("additionalProperties")
    if not isinstance(node, Mapping) or node.get("x-kubernetes-list-type") != "map":
        return None
    keys = node.get("x-kubernetes-list-map-keys")
    if not isinstance(keys, Sequence) or isinstance(keys, str) or not keys:
        return None
    if not all(isinstance(k, str) for k in keys):
        return None
    return tuple(keys)


def identities(items: Any, keys: tuple[str, ...]) -> list[Identity] | None:
    """Each item's identity (its key values), or None when the list cannot be merged by key.

    Valid only if every item is a map carrying every key with a non-null scalar, and no two items
    share an identity; otherwise the list falls back to atomic.
    """
    if type(items) is not list:
        return None
    found: list[Identity] = []
    for item in items:
        if type(item) is not dict:
            return None
        identity = []
        for key in keys:
            value = item.get(key)
            if value is None or type(value) not in (str, int, float, bool):
                return None
            identity.append((type(value).__name__, value))
        found.append(tuple(identity))
    if len(set(found)) != len(found):
        return None
    return found


def _keyed(*keys: str, items: Schema | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(keys),
    }
    if items is not None:
        schema["items"] = items
    return schema


_CONTAINER: Final = {
    "type": "object",
    "properties": {
        "ports": _keyed("containerPort", "protocol"),
        "env": _keyed("name"),
        "volumeMounts": _keyed("mountPath"),
        "volumeDevices": _keyed("devicePath"),
    },
}
_POD_SPEC: Final = {
    "type": "object",
    "properties": {
        "containers": _keyed("name", items=_CONTAINER),
        "initContainers": _keyed("name", items=_CONTAINER),
        "ephemeralContainers": _keyed("name", items=_CONTAINER),
        "volumes": _keyed("name"),
        "imagePullSecrets": _keyed("name"),
        "hostAliases": _keyed("ip"),
    },
}
_TEMPLATE: Final = {"type": "object", "properties": {"spec": _POD_SPEC}}
_WORKLOAD_SPEC: Final = {"type": "object", "properties": {"template": _TEMPLATE}}
_WORKLOAD: Final = {"type": "object", "properties": {"spec": _WORKLOAD_SPEC}}
_JOB_TEMPLATE: Final = {"type": "object", "properties": {"spec": _WORKLOAD_SPEC}}
_CRON_JOB: Final = {
    "type": "object",
    "properties": {"spec": {"type": "object", "properties": {"jobTemplate": _JOB_TEMPLATE}}},
}

BUILTIN_LIST_SCHEMAS: Final[Mapping[tuple[str, str], Schema]] = {
    ("v1", "Pod"): {"type": "object", "properties": {"spec": _POD_SPEC}},
    ("v1", "ReplicationController"): _WORKLOAD,
    ("apps/v1", "Deployment"): _WORKLOAD,
    ("apps/v1", "ReplicaSet"): _WORKLOAD,
    ("apps/v1", "StatefulSet"): _WORKLOAD,
    ("apps/v1", "DaemonSet"): _WORKLOAD,
    ("batch/v1", "Job"): _WORKLOAD,
    ("batch/v1", "CronJob"): _CRON_JOB,
}
