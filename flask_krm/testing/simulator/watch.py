"""WATCH streams: newline-delimited ``{"type", "object"}`` events for one collection.

A ``Watcher`` is registered with the store and seeded (initial events, replayed history) in one
step without yielding to other greenlets, so it misses nothing and sees nothing twice. The HTTP
layer iterates ``Watcher.lines()`` to write one chunk per event.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ... import concurrency
from .catalog import ResourceType
from .errors import ApiError
from .listing import ListOptions
from .store import Event, Object, ObjectStore, too_old

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class ConnectionDropped(Exception):
    """Raised inside a response to close the connection without finishing the response."""


@dataclass(frozen=True)
class _End:
    """Queue marker: finish the stream, cleanly or by dropping the connection."""

    drop: bool


@dataclass
class WatchSettings:
    """Server-wide watch behaviour."""

    bookmark_interval: float = 60.0
    default_timeout: float = 1800.0


def encode_event(event_type: str, obj: Object) -> bytes:
    """One watch event as a JSON line."""
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


EMPTY_FIELDS: dict[str, dict[str, Any]] = {
    "Namespace": {"spec": {}, "status": {}},
    "Deployment": {
        "spec": {
            "replicas": 0,
            "selector": None,
            "template": {"metadata": {}, "spec": {"containers": None}},
            "strategy": {},
        },
        "status": {},
    },
    "Role": {"rules": None},
    "ClusterRole": {"rules": None},
    "RoleBinding": {"roleRef": {"apiGroup": "", "kind": "", "name": ""}},
    "ClusterRoleBinding": {"roleRef": {"apiGroup": "", "kind": "", "name": ""}},
}
"""What an empty object of a built-in kind still serializes (its non-omitempty fields); bookmarks carry them."""


def bookmark(resource: ResourceType, resource_version: int, initial_events_end: bool = False) -> Object:
    """A BOOKMARK object: an empty object of the kind with only ``metadata.resourceVersion`` (plus the end annotation)."""
    metadata: dict[str, Any] = {"resourceVersion": str(resource_version)}
    if initial_events_end:
        metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
    empty = {} if resource.custom else EMPTY_FIELDS.get(resource.kind, {})
    return {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": metadata, **copy.deepcopy(empty)}


def _with_version(obj: Object, resource_version: int) -> Object:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(resource_version)}}


def _unchanged(obj: Object) -> Object | None:
    return obj


@dataclass(eq=False)
class Watcher:
    """One open watch on a collection (``namespace`` ``None`` means every namespace).

    ``render`` converts each event's object as the request's ``Accept`` asks (``None``: not sent).
    """

    store: ObjectStore
    resource: ResourceType
    namespace: str | None
    options: ListOptions
    settings: WatchSettings
    render: Callable[[Object], Object | None] = _unchanged
    _queue: concurrency.Queue[bytes | _End] = field(default_factory=concurrency.Queue)
    _unsubscribe: Callable[[], None] | None = None
    _after: int = 0
    _held: list[Event] | None = None
    last_version: int = 0

    def open(self) -> None:
        """Seed the initial events or replayed history and start receiving live events."""
        options = self.options
        requested = options.requested_version()
        if requested is not None and requested > self.store.resource_version:
            self._after = requested  # a version from the future: wait for it quietly, as the watch cache does
        elif options.send_initial_events or (options.send_initial_events is None and requested is None):
            for obj in self.store.items(self.resource, self.namespace):
                if options.selects(self.resource, obj):
                    self._put("ADDED", obj)
            if options.send_initial_events and options.allow_watch_bookmarks:
                self._put("BOOKMARK", bookmark(self.resource, self.store.resource_version, True))
        elif requested is not None:
            try:
                history = self.store.events_since(requested)
            except ApiError as error:
                self._fail(error)
                return
            for event in history:
                self._offer(event)
        self.last_version = self.store.resource_version
        self._unsubscribe = self.store.subscribe(self._offer)

    def _put(self, event_type: str, obj: Object) -> None:
        rendered = self.render(obj)
        if rendered is not None:
            self._queue.put(encode_event(event_type, rendered))

    def _fail(self, error: ApiError) -> None:
        self._queue.put(encode_event("ERROR", error.status()))
        self._queue.put(_End(drop=False))

    def hold(self) -> None:
        """Keep back the events committed from now on, as a lagging watch cache does, until :meth:`release`."""
        if self._held is None:
            self._held = []

    def release(self) -> None:
        """Send the events kept back since :meth:`hold`, in order, and stop holding."""
        held, self._held = self._held, None
        for event in held or ():
            self._offer(event)

    def _offer(self, event: Event) -> None:
        if self._held is not None:
            self._held.append(event)
            return
        if event.resource != self.resource or event.resource_version <= self._after:
            return
        namespace = event.object["metadata"].get("namespace", "")
        if self.namespace is not None and namespace != self.namespace:
            return
        now_selected = event.type != "DELETED" and self.options.selects(self.resource, event.object)
        was_selected = event.previous is not None and self.options.selects(self.resource, event.previous)
        if now_selected or was_selected:
            self.last_version = event.resource_version
        if now_selected:
            self._put("MODIFIED" if was_selected else "ADDED", event.object)
        elif was_selected and event.previous is not None:
            self._put("DELETED", _with_version(event.previous, event.resource_version))

    def end(self, drop: bool) -> None:
        """Finish the stream after what is queued; ``drop`` closes the connection mid-response."""
        self._queue.put(_End(drop))

    def expire(self) -> None:
        """End the stream with the ERROR event a watcher gets when its history was compacted away."""
        self._fail(too_old(self.last_version, self.store.resource_version))

    def close(self) -> None:
        """Stop receiving events (idempotent)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _next_bookmark(self, now: float, deadline: float) -> float | None:
        """When to send the next bookmark: every interval, and 2 s before the timeout (as the watch cache does)."""
        if not self.options.allow_watch_bookmarks:
            return None
        due = min(now + self.settings.bookmark_interval, deadline - 2.0)
        return due if due > now else None

    def lines(self) -> Iterator[bytes]:
        """The response body: one JSON line per event until timeout, end, or a dropped connection."""
        timeout = self.options.timeout_seconds
        deadline = time.monotonic() + (timeout if timeout is not None else self.settings.default_timeout)
        next_bookmark = self._next_bookmark(time.monotonic(), deadline)
        try:
            while True:
                now = time.monotonic()
                if now >= deadline:
                    return
                if next_bookmark is not None and now >= next_bookmark and self._queue.empty():
                    next_bookmark = self._next_bookmark(now, deadline)
                    rendered = self.render(bookmark(self.resource, self.store.resource_version))
                    if rendered is not None:
                        yield encode_event("BOOKMARK", rendered)
                    continue
                wake = deadline if next_bookmark is None else min(deadline, next_bookmark)
                try:
                    item = self._queue.get(timeout=max(wake - now, 0.0))
                except concurrency.Empty:
                    continue
                if isinstance(item, _End):
                    if item.drop:
                        raise ConnectionDropped()
                    return
                yield item
        finally:
            self.close()
