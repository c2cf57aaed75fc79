"""Prometheus metrics of one application (``KRM_METRICS_PATH``; ``pip install flask-krm[metrics]``).

Made only when the host names a metrics path: without one this module is never imported and
nothing is counted. Every label is bounded by the configuration (``target``, ``resource``,
``kind``, ``operation``, ``outcome``, ``reason``, ``generation``); no series ever names a namespace,
an object, a principal, a session or a uid.

What the hot path pays: the hub counts deliveries once per chunk a stream writes (every event of a
wake-up in one chunk), through a :class:`ScopeMeter` each subscriber looked up once, and stamps a
live operation once per watch, not per subscriber.

Under gunicorn with ``PROMETHEUS_MULTIPROC_DIR`` set, prometheus_client keeps every worker's values
in that folder and :meth:`Metrics.exposition` merges them (gauges: the sum over live workers);
:mod:`flask_krm.serving` wipes the folder when the master starts and marks a dead worker's files.
"""

from __future__ import annotations

import gc
import os
import time
import typing as t
from collections.abc import Iterator, Mapping

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from .drafts.backend import BackendUnavailable, DraftBackend, Message
from .scope import Scope

if t.TYPE_CHECKING:
    from .save.audit import AuditRecord

__all__ = ["MULTIPROC_ENV", "Metrics", "MeteredBackend", "ScopeMeter", "resource_label"]

MULTIPROC_ENV: t.Final = "PROMETHEUS_MULTIPROC_DIR"

LAG_BUCKETS: t.Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
FAST_BUCKETS: t.Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
MAX_PENDING_PAUSES: t.Final = 10_000
"""Collector pauses kept between two flushes at most (the rest are not observed)."""
SAVE_BUCKETS: t.Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def resource_label(scope: Scope) -> str:
    """A scope's resource as kubectl names it: ``configmaps``, ``deployments.apps``."""
    return f"{scope.resource}.{scope.group}" if scope.group else scope.resource


class ScopeMeter:
    """The delivery counters of one (target, resource): what a hub subscriber calls per chunk."""

    __slots__ = ("_events", "_bytes", "_lag")

    def __init__(self, events: t.Any, size: t.Any, lag: t.Any) -> None:
        self._events = events
        self._bytes = size
        self._lag = lag

    def delivered(self, events: int, size: int, received: float) -> None:
        """``events`` frames of ``size`` bytes were written; the oldest live operation among them
        arrived from the API server at ``received`` (``time.monotonic()``; 0: none was live)."""
        self._events.inc(events)
        self._bytes.inc(size)
        if received:
            self._lag.observe(time.monotonic() - received)


class Metrics:
    """Every metric flask-krm keeps for one application, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.streams_open = Gauge(
            "krm_streams_open",
            "Streams open now, by kind (page, json).",
            ["kind"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self.streams_opened = Counter("krm_streams_opened", "Streams opened, by kind.", ["kind"], registry=r)
        self.watches = Gauge(
            "krm_upstream_watches",
            "Upstream watches open now (lingering ones included).",
            ["target", "resource"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self.watch_restarts = Counter(
            "krm_watch_restarts",
            "Upstream watch restarts by reason: expired (410, relisted), error (retrying), recovered.",
            ["target", "resource", "reason"],
            registry=r,
        )
        self.deliveries = Counter(
            "krm_deliveries",
            "Events (json) or messages (page) written to streams.",
            ["kind", "target", "resource"],
            registry=r,
        )
        self.delivered_bytes = Counter(
            "krm_delivered_bytes", "Bytes written to streams.", ["kind", "target", "resource"], registry=r
        )
        self.resnapshots = Counter(
            "krm_resnapshots",
            "Subscribers resynchronized after falling behind their queue bound.",
            ["target", "resource"],
            registry=r,
        )
        self.delivery_lag = Histogram(
            "krm_delivery_lag_seconds",
            "From a live event received from the API server to its frame written.",
            ["target", "resource"],
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.writes = Counter(
            "krm_writes",
            "Write attempts by operation and outcome (version-stale: a 409).",
            ["target", "kind", "operation", "outcome"],
            registry=r,
        )
        self.save_duration = Histogram(
            "krm_save_duration_seconds",
            "Duration of a write through the save hook.",
            ["target", "operation"],
            buckets=SAVE_BUCKETS,
            registry=r,
        )
        self.backend_latency = Histogram(
            "krm_draft_backend_seconds",
            "Draft backend calls by operation.",
            ["operation"],
            buckets=FAST_BUCKETS,
            registry=r,
        )
        self.backend_errors = Counter(
            "krm_draft_backend_errors", "Draft backend calls that failed (unavailable).", ["operation"], registry=r
        )
        self.sessions = Gauge(
            "krm_sessions", "Browser sessions holding drafts.", registry=r, multiprocess_mode="livesum"
        )
        self.unsaved_sessions = Gauge(
            "krm_sessions_unsaved",
            "Browser sessions with unsaved edits or open conflicts.",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.loop_lag = Gauge(
            "krm_event_loop_lag_seconds",
            "How late the event loop's ticker last woke.",
            registry=r,
            multiprocess_mode="livemax",
        )
        self.gc_pause = Histogram(
            "krm_gc_pause_seconds",
            "Garbage collector pauses by generation.",
            ["generation"],
            buckets=FAST_BUCKETS,
            registry=r,
        )
        self._scopes: dict[tuple[str, str], ScopeMeter] = {}
        self._gc_started = 0.0
        self._gc_pauses: list[tuple[int, float]] = []
        """Pauses noted by the collector's callback, observed later by :meth:`flush`: the callback
        runs inside whatever allocated, perhaps a metric update holding prometheus_client's
        (non-reentrant) lock, so it must not take that lock itself."""
        gc.callbacks.append(self._gc)

    # -- streams -------------------------------------------------------------------------------

    def stream_opened(self, kind: str) -> None:
        self.streams_opened.labels(kind).inc()
        self.streams_open.labels(kind).inc()

    def stream_closed(self, kind: str) -> None:
        self.streams_open.labels(kind).dec()

    def for_scope(self, scope: Scope) -> ScopeMeter:
        """The delivery counters of ``scope``'s target and resource (one per pair, kept)."""
        key = (scope.target, resource_label(scope))
        meter = self._scopes.get(key)
        if meter is None:
            meter = self._scopes[key] = ScopeMeter(
                self.deliveries.labels("json", *key),
                self.delivered_bytes.labels("json", *key),
                self.delivery_lag.labels(*key),
            )
        return meter

    def page_delivered(self, size: int) -> None:
        """A page channel wrote one message of ``size`` bytes."""
        self.deliveries.labels("page", "", "").inc()
        self.delivered_bytes.labels("page", "", "").inc(size)

    # -- watches -------------------------------------------------------------------------------

    def watch_started(self, scope: Scope) -> None:
        self.watches.labels(scope.target, resource_label(scope)).inc()

    def watch_stopped(self, scope: Scope) -> None:
        self.watches.labels(scope.target, resource_label(scope)).dec()

    def watch_restarted(self, scope: Scope, reason: str) -> None:
        self.watch_restarts.labels(scope.target, resource_label(scope), reason).inc()

    def resnapshot(self, scope: Scope) -> None:
        self.resnapshots.labels(scope.target, resource_label(scope)).inc()

    # -- writes and drafts ---------------------------------------------------------------------

    def write(self, record: AuditRecord) -> None:
        """Count one write attempt by its audit record (kind, operation and outcome only)."""
        self.writes.labels(record.target, record.identity.kind, record.operation, record.outcome).inc()

    def saved_in(self, target: str, operation: str, seconds: float) -> None:
        self.save_duration.labels(target, operation).observe(seconds)

    def backend_call(self, operation: str, seconds: float, *, failed: bool) -> None:
        self.backend_latency.labels(operation).observe(seconds)
        if failed:
            self.backend_errors.labels(operation).inc()

    def session_counts(self, total: int, unsaved: int) -> None:
        self.sessions.set(total)
        self.unsaved_sessions.set(unsaved)

    # -- the process -----------------------------------------------------------------------------

    def _gc(self, phase: str, info: Mapping[str, t.Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started:
            if len(self._gc_pauses) < MAX_PENDING_PAUSES:
                self._gc_pauses.append((int(info.get("generation", -1)), time.perf_counter() - self._gc_started))
            self._gc_started = 0.0

    def flush(self) -> None:
        """Observe the collector pauses noted since the last flush (the event loop's ticker calls it)."""
        pauses, self._gc_pauses = self._gc_pauses, []
        for generation, seconds in pauses:
            self.gc_pause.labels(str(generation)).observe(seconds)

    def close(self) -> None:
        """Stop timing the garbage collector (the application is shutting down)."""
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition and its content type: every worker's values under gunicorn's
        multiprocess mode, this process's otherwise."""
        self.flush()
        if os.environ.get(MULTIPROC_ENV):
            merged = CollectorRegistry()
            multiprocess.MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
            return generate_latest(merged), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


TIMED_OPERATIONS: t.Final = {
    "read": "read",
    "read_versioned": "read",
    "swap": "swap",
    "write": "write",
    "touch": "touch",
    "drop": "drop",
    "lock": "lock",
    "unlock": "unlock",
    "publish": "publish",
    "ping": "ping",
}
"""The draft backend's calls that are timed, by method, with the operation label they count under."""


class MeteredBackend:
    """A :class:`~flask_krm.drafts.backend.DraftBackend` whose calls are timed and their failures
    counted (``krm_draft_backend_seconds``, ``krm_draft_backend_errors_total``).

    Every member of the wrapped backend is forwarded as it is; the methods named in
    :data:`TIMED_OPERATIONS` are timed, and a failure to subscribe to :meth:`messages` is counted.
    """

    def __init__(self, backend: DraftBackend, metrics: Metrics) -> None:
        self.backend = backend
        self._metrics = metrics

    @classmethod
    def around(cls, backend: DraftBackend, metrics: Metrics) -> DraftBackend:
        """``backend`` metered: a :class:`MeteredBackend` has every member of the backend it wraps."""
        return t.cast(DraftBackend, cls(backend, metrics))

    def __getattr__(self, name: str) -> t.Any:
        found = getattr(self.backend, name)
        operation = TIMED_OPERATIONS.get(name)
        if operation is None:
            return found

        def timed(*args: t.Any, **kwargs: t.Any) -> t.Any:
            started = time.perf_counter()
            failed = False
            try:
                return found(*args, **kwargs)
            except BackendUnavailable:
                failed = True
                raise
            finally:
                self._metrics.backend_call(operation, time.perf_counter() - started, failed=failed)

        return timed

    def messages(self) -> Iterator[Message]:
        try:
            yield from self.backend.messages()
        except BackendUnavailable:
            self._metrics.backend_call("subscribe", 0.0, failed=True)
            raise
