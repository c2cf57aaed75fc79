"""In-memory object storage with one global, strictly increasing resourceVersion (like etcd).

Every committed change is an ``Event`` in the history; watches replay it and lists can be served as
of any version still in it. Like etcd's, the history is only forgotten by compaction (``compact``,
``compact_to``), unless a ``history_window`` bounds it to that many events. Stored objects are never
mutated after they are committed: writers build a new mapping and commit it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .catalog import ResourceType
from .errors import ApiError, expired

Object = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


@dataclass(frozen=True)
class Event:
    """One committed change: ``ADDED``, ``MODIFIED`` or ``DELETED`` of an object of ``resource``."""

    type: str
    resource: ResourceType
    object: Object
    previous: Object | None
    resource_version: int


def object_key(obj: Object) -> Key:
    """The storage key of ``obj``."""
    metadata = obj["metadata"]
    return (metadata.get("namespace", ""), metadata["name"])


def key_path(key: Key) -> str:
    """The storage key below the resource prefix (``namespace/name`` or ``name``); lists follow its order."""
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


def too_old(requested: int, horizon: int) -> ApiError:
    """The watch/list failure for a version older than the history window."""
    return expired(f"too old resource version: {requested} ({horizon})")


class ObjectStore:
    """Objects per resource type, the global resourceVersion and the change history."""

    def __init__(self, history_window: int | None = None) -> None:
        self.resource_version = 1
        self.horizon = 1
        self._history_window = history_window
        self._objects: dict[ResourceType, dict[Key, Object]] = {}
        self._history: deque[Event] = deque()
        self._listeners: list[Callable[[Event], None]] = []

    def get(self, resource: ResourceType, namespace: str, name: str) -> Object | None:
        """The current object, if any."""
        return self._objects.get(resource, {}).get((namespace, name))

    def items(self, resource: ResourceType, namespace: str | None = None) -> list[Object]:
        """Current objects in key order (namespace, then name), optionally in one namespace."""
        stored = self._objects.get(resource, {})
        return [stored[key] for key in sorted(stored, key=key_path) if namespace is None or key[0] == namespace]

    def items_at(self, resource: ResourceType, namespace: str | None, resource_version: int) -> list[Object]:
        """The objects as they were at ``resource_version``; 410 Expired if that is outside the history."""
        if resource_version < self.horizon:
            raise too_old(resource_version, self.horizon)
        state = {object_key(obj): obj for obj in self.items(resource, namespace)}
        for event in reversed(self._history):
            if event.resource_version <= resource_version:
                break
            key = object_key(event.object)
            if event.resource != resource or (namespace is not None and key[0] != namespace):
                continue
            if event.previous is None:
                state.pop(key, None)
            else:
                state[key] = event.previous
        return [state[key] for key in sorted(state, key=key_path)]

    def namespace_has_objects(self, namespace: str) -> bool:
        """Whether any namespaced object lives in ``namespace``."""
        return any(key[0] == namespace for objects in self._objects.values() for key in objects if key[0])

    def next_version(self) -> int:
        """The resourceVersion the next commit gets."""
        return self.resource_version + 1

    def commit(self, resource: ResourceType, obj: Object, event_type: str) -> Event:
        """Store ``obj`` (already stamped with ``next_version()``) or remove it for ``DELETED``."""
        version = int(obj["metadata"]["resourceVersion"])
        if version != self.resource_version + 1:
            raise RuntimeError(f"commit of version {version} after {self.resource_version}")
        objects = self._objects.setdefault(resource, {})
        key = object_key(obj)
        previous = objects.get(key)
        if event_type == "DELETED":
            objects.pop(key, None)
        else:
            objects[key] = obj
        self.resource_version = version
        event = Event(event_type, resource, obj, previous, version)
        self._history.append(event)
        while self._history_window is not None and len(self._history) > self._history_window:
            self.horizon = self._history.popleft().resource_version
        for listener in list(self._listeners):
            listener(event)
        return event

    def events_since(self, resource_version: int) -> Iterable[Event]:
        """Every event after ``resource_version``, in order; 410 Expired if the history no longer has them."""
        if resource_version < self.horizon:
            raise too_old(resource_version, self.horizon)
        return [event for event in self._history if event.resource_version > resource_version]

    def compact(self) -> None:
        """Forget all history: every version older than the current one becomes too old."""
        self.compact_to(self.resource_version)

    def compact_to(self, resource_version: int) -> None:
        """Forget the history up to ``resource_version``: older versions become too old (etcd's compaction)."""
        while self._history and self._history[0].resource_version <= resource_version:
            self._history.popleft()
        self.horizon = max(self.horizon, resource_version)

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``listener`` synchronously for every committed event; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe
