"""Fault injection for tests: dropped, expired or lagging watches, compaction, refused connections, latency, lost
responses, write hooks.

``FaultState`` is what the server reads on every request; ``Faults`` is the control surface a test
holds (``kube.faults``). Controls that touch the server's greenlets run on the server's hub.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .registry import Registry, WriteHook
from .store import ObjectStore
from .watch import Watcher


@dataclass
class FaultState:
    """Faults currently in force (plain attributes: safe to read from the serving thread)."""

    refuse_until: float = 0.0
    refuse_with_503: bool = False
    latency: float = 0.0
    lost_write_responses: int = 0
    streaming_lists_refused: frozenset[str] | None = None  # group versions ("" for all); None: served

    def refuses_streaming_list(self, api_version: str) -> bool:
        """Whether a ``sendInitialEvents`` watch of ``api_version`` is refused like an aggregated API refuses it."""
        refused = self.streaming_lists_refused
        return refused is not None and (not refused or api_version in refused)

    def refusing(self) -> bool:
        """Whether connections are being refused now."""
        return time.monotonic() < self.refuse_until

    def take_lost_write_response(self) -> bool:
        """Consume one pending 'lose the response of the next write' request."""
        if self.lost_write_responses <= 0:
            return False
        self.lost_write_responses -= 1
        return True


class Faults:
    """What a test can break in a running simulator."""

    def __init__(
        self,
        state: FaultState,
        store: ObjectStore,
        registry: Registry,
        watchers: set[Watcher],
        call: Callable[[Callable[[], Any]], Any],
    ) -> None:
        self._state = state
        self._store = store
        self._registry = registry
        self._watchers = watchers
        self._call = call

    def drop_watches(self) -> int:
        """Close every open watch connection mid-stream (no final chunk); returns how many were open."""
        return int(self._call(lambda: self._end_watches(lambda watcher: watcher.end(drop=True))))

    def expire_watches(self) -> int:
        """Send every open watch an ERROR 410 Expired event and end it, as when its history was compacted."""
        return int(self._call(lambda: self._end_watches(Watcher.expire)))

    def _end_watches(self, ending: Callable[[Watcher], None]) -> int:
        watchers = list(self._watchers)
        for watcher in watchers:
            watcher.close()
            ending(watcher)
        return len(watchers)

    def hold_watch_events(self) -> int:
        """Keep back every open watch's events (the watch lags behind the store, as a watch cache
        can) until :meth:`release_watch_events`; reads and writes go on. Returns how many watches."""
        return int(self._call(lambda: self._each_watch(Watcher.hold)))

    def release_watch_events(self) -> int:
        """Deliver what :meth:`hold_watch_events` kept back, in order; returns how many watches."""
        return int(self._call(lambda: self._each_watch(Watcher.release)))

    def _each_watch(self, action: Callable[[Watcher], None]) -> int:
        watchers = list(self._watchers)
        for watcher in watchers:
            action(watcher)
        return len(watchers)

    def compact(self) -> int:
        """Forget the change history now; returns the version below which everything is 410 Expired."""

        def compact() -> int:
            self._store.compact()
            return self._store.horizon

        return int(self._call(compact))

    def refuse_connections(self, seconds: float, *, respond_503: bool = False) -> None:
        """For ``seconds``, close new connections at once (or answer 503 ServiceUnavailable)."""
        self._state.refuse_with_503 = respond_503
        self._state.refuse_until = time.monotonic() + seconds

    def accept_connections(self) -> None:
        """End a ``refuse_connections`` period early."""
        self._state.refuse_until = 0.0

    def refuse_streaming_lists(self, *api_versions: str) -> None:
        """Answer ``sendInitialEvents`` watches of these group versions (all if none given) with the 422 an
        aggregated API server without the WatchList feature gives, so clients fall back to list-then-watch."""
        self._state.streaming_lists_refused = frozenset(api_versions)

    def serve_streaming_lists(self) -> None:
        """Serve streaming lists everywhere again."""
        self._state.streaming_lists_refused = None

    def set_latency(self, seconds: float) -> None:
        """Delay every request by ``seconds`` before handling it (0 to stop)."""
        self._state.latency = seconds

    def lose_next_write_response(self) -> None:
        """Apply the next write (a dry run is not one), then close its connection without a response."""
        self._state.lost_write_responses += 1

    def mutate_writes(self, hook: WriteHook) -> Callable[[], None]:
        """Run ``hook`` on every write just before it is applied (a mutating webhook); returns its remover."""
        self._call(lambda: self._registry.write_hooks.append(hook))

        def remove() -> None:
            self._call(lambda: self._registry.write_hooks.remove(hook) if hook in self._registry.write_hooks else None)

        return remove
