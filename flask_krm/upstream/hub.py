"""The shared fan-out hub: one upstream watch serves any number of subscribers.

One :class:`Hub` per application. :meth:`Hub.subscribe` authorizes a subscriber, then attaches it to
the upstream watch of its (target, identity, scope), opening that watch for the first subscriber.
The watch is a :class:`~flask_krm.upstream.reflector.Reflector` in its own greenlet (the *pump*),
which keeps a cache of the raw objects it has seen (uid -> object, shared and never mutated).

Each subscriber has its own projection and :class:`~flask_krm.stream.StreamEngine`. It first gets
its own snapshot, built from the cache once the watch is synced (a joiner never causes an upstream
request), then the live events, through a bounded queue. The per-object work is shared by every
subscriber of the watch (:class:`~flask_krm.stream.SharedProjections`): each raw object is
projected, digested and encoded once per projection, and subscribers that agree on an event reuse
the same ``(event, body)`` pair (the same immutable objects and bytes; only ``seq`` differs per
subscriber). What a subscriber adds per event is bookkeeping and a reference in its queue.

- A snapshot is never subject to the queue bound; live events are. A subscriber whose queue of
  live events overflows loses what is queued and is resynchronized from the cache
  (``RESYNC_REQUIRED``, ``reset``, the members, ``synced``), so a slow reader never grows memory
  and never slows the others.
- Snapshots are built lazily by the subscriber's own reader, so the pump never waits on a large
  snapshot and a reader that stalls costs nothing until it reads again.
- The watch stops ``linger`` seconds after its last subscriber leaves (at once for ``0``).
- Every subscriber is authorized again before each new snapshot cycle it gets (after a relist,
  an overflow resync or a recovery from an outage), once per cycle and before any object of it;
  watches shared under the target's service identity also re-authorize each subscriber every
  ``reauthorize_every`` seconds. A revoked subscriber ends with a terminal ``FORBIDDEN``; a check
  that cannot be completed ends it with a terminal ``INTERNAL`` (never an allow).
- :meth:`Hub.guard` makes a subscriber that is authorized, re-authorized and ended like the others
  but delivers nothing else (no snapshot, no live event, no heartbeat) and never follows the event
  log: a session whose objects come from the server's own shared state (:meth:`Hub.follow`) keeps
  its access under watch with one, at no cost per change.
- :meth:`Hub.shutdown` ends every stream with a terminal error, stops every watch and leaves no
  greenlet behind. Every greenlet the hub starts belongs to its group (:class:`~flask_krm.concurrency.Group`).

The process must be monkey-patched by gevent before ``ssl``, ``urllib3`` or ``kubernetes`` are
imported (``from gevent import monkey; monkey.patch_all()`` as the entry point's first lines, or
gunicorn's gevent worker); the hub refuses to start otherwise.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any, Final, Protocol

from kubernetes.client import ApiClient

from .. import concurrency
from ..access import decide
from ..concurrency import Group, Waiter
from ..events import Event, Reset, Upsert, encode_body, frame
from ..ops import Change, ContinuityLost, Failure, Snapshot, SourceOp
from ..scope import Scope
from ..sse import HEARTBEAT, heartbeat_interval, released
from ..stream import Pair, SharedChange, SharedProjections, StreamEngine
from ..versions import Ordering
from .authz import Authorizer
from .clients import SERVICE_IDENTITY, ActingApiClient, ApiClients
from .collector import PROCESS_POLICY, Collector
from .reflector import Reflector, StreamingListMemory, WatchSettings

__all__ = ["Hub", "HubClosed", "HubMeter", "HubObserver", "StreamMeter", "Subscriber", "DEFAULT_QUEUE_DEPTH"]

log = logging.getLogger(__name__)

DEFAULT_QUEUE_DEPTH: Final = 256
HEARTBEAT_TICKS: Final = 4
"""Heartbeat checks per heartbeat interval."""
PUMP_SLICE: Final = 0.01
"""Seconds a watch fans out buffered events before its readers write (at most half a queue)."""
SHUTDOWN_FAILURE: Final = Failure("INTERNAL", "the server is shutting down", terminal=True)
_WATCH_CRASHED: Final = Failure("INTERNAL", "the upstream watch failed", terminal=True)


class HubClosed(RuntimeError):
    """The hub was shut down; it serves no new subscribers."""


class HubObserver:
    """Lifecycle hooks the hub calls (override the ones you need). They run on hub greenlets and
    must return promptly: never block, never raise."""

    def watch_started(self, scope: Scope) -> None:
        """An upstream watch opened for ``scope``."""

    def watch_stopped(self, scope: Scope) -> None:
        """The upstream watch of ``scope`` stopped (linger elapsed, terminal failure or shutdown)."""

    def watch_failed(self, scope: Scope, failure: Failure) -> None:
        """The upstream watch of ``scope`` reported ``failure`` (terminal or retrying)."""

    def subscriber_overflowed(self, scope: Scope) -> None:
        """A subscriber of ``scope`` fell behind its queue bound and is being resynchronized."""

    def watch_restarted(self, scope: Scope, reason: str) -> None:
        """The upstream watch of ``scope`` starts over: ``expired`` (its version expired, 410: it
        relists), ``error`` (it failed, or the watch broke, and it retries) or ``recovered`` (synced
        again after an outage)."""


class StreamMeter(Protocol):
    """Counts what one subscriber writes (see :class:`HubMeter`)."""

    def delivered(self, events: int, size: int, received: float) -> None:
        """``events`` frames of ``size`` bytes were written in one chunk; the oldest live operation
        among them was logged at ``received`` (``time.monotonic()``; 0 when none was live)."""


class HubMeter(Protocol):
    """Delivery counting: when a hub has one, each subscriber looks its scope's meter up once and
    reports once per chunk it writes. Without one (the default) nothing is counted or stamped."""

    def for_scope(self, scope: Scope) -> StreamMeter:
        """The meter of ``scope``'s target and resource."""


class Hub:
    """Shared upstream watches and their subscribers for one application.

    :param clients: the per-target API clients.
    :param authorizer: decides each subscriber (see :mod:`flask_krm.upstream.authz`).
    :param queue_depth: live events buffered per subscriber before it is resynchronized.
    :param linger: seconds a watch stays open after its last subscriber left.
    :param heartbeat: seconds between heartbeats on an idle subscriber's SSE stream.
    :param reauthorize_every: seconds between re-authorizations of the subscribers of a watch
        shared under the service identity (``None``: only when they subscribe).
    :param settings: timeouts and backoff of the upstream watches.
    :param observer: lifecycle hooks.
    :param meter: counts deliveries (``None``: nothing is counted).
    """

    def __init__(
        self,
        clients: ApiClients,
        authorizer: Authorizer,
        *,
        queue_depth: int = DEFAULT_QUEUE_DEPTH,
        linger: float = 30.0,
        heartbeat: float = 20.0,
        reauthorize_every: float | None = 60.0,
        settings: WatchSettings | None = None,
        observer: HubObserver | None = None,
        meter: HubMeter | None = None,
    ) -> None:
        if not concurrency.patched():
            raise RuntimeError(
                "flask-krm's upstream hub needs a gevent monkey-patched process: call "
                "'from gevent import monkey; monkey.patch_all()' first thing in the entry point "
                "(before ssl, urllib3 or kubernetes are imported), or run under gunicorn's gevent worker"
            )
        if queue_depth < 1:
            raise ValueError(f"queue_depth must be at least 1, got {queue_depth}")
        if linger < 0:
            raise ValueError(f"linger must be zero or more seconds, got {linger}")
        if reauthorize_every is not None and not reauthorize_every > 0:
            raise ValueError(f"reauthorize_every must be a positive number of seconds or None, got {reauthorize_every}")
        self.clients = clients
        self.authorizer = authorizer
        self.queue_depth = queue_depth
        self.linger = float(linger)
        self.heartbeat = heartbeat_interval(heartbeat)
        self.reauthorize_every = reauthorize_every
        self.settings = settings or WatchSettings()
        self.observer = observer or HubObserver()
        self.meter = meter
        self.collector: Collector = PROCESS_POLICY
        """The process's collector policy, settled after snapshots (see :mod:`.collector`)."""
        self.streaming_lists = StreamingListMemory()
        self.group = Group()
        self._watches: dict[tuple[Scope, object], _Watch] = {}
        self._closed = False

    @property
    def closed(self) -> bool:
        """:meth:`shutdown` was called."""
        return self._closed

    @property
    def watch_count(self) -> int:
        """Upstream watches currently open (lingering ones included)."""
        return len(self._watches)

    def synced_count(self) -> tuple[int, int]:
        """How many of the open upstream watches are synced, and how many are open."""
        watches = list(self._watches.values())
        return sum(1 for watch in watches if watch.synced), len(watches)

    def subscribe(
        self,
        scope: Scope,
        projection: str,
        principal: Any,
        *,
        client: ApiClient | None = None,
        ordering: Ordering | str = Ordering.STRICT,
        authorized: bool = False,
    ) -> Subscriber:
        """A new subscriber of ``scope`` under ``projection``, acting for ``principal``.

        ``client`` is who the upstream watch acts as: ``None`` (or the target's own client) for the
        target's service identity (one watch shared by every principal; the authorizer is the only
        boundary and is asked again on a timer), an impersonating client from
        :meth:`~flask_krm.upstream.clients.ApiClients.acting_as` (shared by that identity), or any
        other ``ApiClient`` (shared by subscribers passing the same client object).

        ``authorized`` says the caller has just decided access for exactly this subscriber (see
        :mod:`flask_krm.access`); otherwise this blocks while the authorizer decides. A refused
        subscriber is returned already ended with a terminal error and touches no watch. Raises
        :class:`HubClosed` after :meth:`shutdown`, :class:`~flask_krm.projection.UnknownProjection`
        for an unknown projection and
        :class:`~flask_krm.upstream.clients.UnknownTargetError` for an unconfigured target.
        """
        self._refuse_if_closed()
        subscriber = Subscriber(self, StreamEngine(scope, projection, ordering), principal)
        return self._admit(subscriber, client, authorized)

    def guard(
        self,
        scope: Scope,
        projection: str,
        principal: Any,
        *,
        client: ApiClient | None = None,
        authorized: bool = False,
    ) -> Subscriber:
        """A subscriber that only keeps ``principal``'s access to ``scope`` under watch: for a session
        whose objects come from the server's own shared state (:meth:`follow`), never from a stream
        of its own.

        It is authorized and attached to the watch exactly as :meth:`subscribe` would (same
        arguments, same watch), and ended as a subscriber is: a refusal at join, at the periodic
        re-authorization or before a new snapshot cycle of the watch ends it with its terminal
        error, as do a terminal failure of the watch and :meth:`shutdown`. But it delivers nothing
        else: no snapshot, no live event, no outage notice and no heartbeat (read it with
        :meth:`Subscriber.batches` or :meth:`Subscriber.take`, not as SSE), and it never follows the
        watch's event log, so a change costs it nothing and its reader is woken only by a new
        snapshot cycle or its end. :meth:`Subscriber.cached` reads the watch's cache as usual.
        """
        self._refuse_if_closed()
        subscriber = Subscriber(self, StreamEngine(scope, projection), principal)
        subscriber.guard = True
        return self._admit(subscriber, client, authorized)

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise HubClosed("the upstream hub was shut down")

    def _admit(self, subscriber: Subscriber, client: ApiClient | None, authorized: bool) -> Subscriber:
        """Authorize ``subscriber`` (unless ``authorized``) and attach it; a refused one is ended."""
        refusal = None if authorized else self._authorize(subscriber)
        if refusal is not None:
            subscriber._end(refusal)
            return subscriber
        return self._join(subscriber, client)

    def follow(self, scope: Scope, projection: str, *, client: ApiClient | None = None) -> Subscriber:
        """A subscriber for the server's own shared state of a watch (see
        :class:`~flask_krm.store.truth.ServerTruth`), never for a person: nobody is asked about it,
        so it is never refused, re-authorized or revoked. Whoever reads what it holds must have
        decided that reader's access itself (every session reading it still has its own :meth:`guard`).
        ``client`` picks the watch as for :meth:`subscribe`."""
        self._refuse_if_closed()
        subscriber = Subscriber(self, StreamEngine(scope, projection), None)
        subscriber.trusted = True
        return self._join(subscriber, client)

    def watch_key(self, scope: Scope, client: ApiClient | None = None) -> tuple[Scope, object]:
        """The key of the watch :meth:`subscribe` gives ``scope`` and ``client``: subscribers with the
        same key share one watch, its cache and what it delivers."""
        return (scope, self._identity(scope, client)[0])

    def _identity(self, scope: Scope, client: ApiClient | None) -> tuple[object, ApiClient]:
        service = self.clients.service(scope.target)
        if client is None or client is service:
            return SERVICE_IDENTITY, service
        if isinstance(client, ActingApiClient):
            return client.identity, client
        return ("client", id(client)), client

    def _join(self, subscriber: Subscriber, client: ApiClient | None) -> Subscriber:
        if self._closed:
            subscriber._end(SHUTDOWN_FAILURE)
            return subscriber
        scope = subscriber.scope
        identity, api = self._identity(scope, client)
        key = (scope, identity)
        watch = self._watches.get(key)
        if watch is None:
            watch = _Watch(self, key, api, shared=identity is SERVICE_IDENTITY)
            self._watches[key] = watch
            watch.start()
        watch.attach(subscriber)
        return subscriber

    def shutdown(self, timeout: float = 5.0) -> None:
        """End every stream with a terminal error and stop every watch. Idempotent.

        Waits up to ``timeout`` seconds for the hub's greenlets to finish, then kills the rest.
        """
        if self._closed:
            return
        self._closed = True
        watches = list(self._watches.values())
        self._watches.clear()
        for watch in watches:
            watch.shutdown()
        self.group.join(timeout=timeout)
        self.group.kill(block=True, timeout=1.0)

    # -- internals used by watches and subscribers -----------------------------------------

    def _authorize(self, subscriber: Subscriber) -> Failure | None:
        if subscriber.trusted:
            return None
        engine = subscriber.engine
        authorizer = self.authorizer
        decision = decide(
            lambda principal, scope, projection, verb: authorizer(principal, scope, projection),
            subscriber.principal,
            engine.scope,
            engine.projection,
            "watch",
        )
        return None if decision.allowed else decision.failure()

    def _forget(self, watch: _Watch) -> None:
        if self._watches.get(watch.key) is watch:
            del self._watches[watch.key]


class _Bodies:
    """Encoded bodies shared by the subscribers of one watch.

    Upserts come with theirs from the watch's :class:`~flask_krm.stream.SharedProjections` (kept for
    as long as the object is cached, so snapshots to new subscribers and live events reuse them);
    resets are kept per projection; other events are shared within one stream position (a
    ``position`` list: one per entry of the event log, and :attr:`current` for what subscribers
    are given directly, such as snapshots, until the next operation is logged).
    """

    def __init__(self, projections: SharedProjections) -> None:
        self.projections = projections
        self._resets: dict[str, Pair] = {}
        self.current: list[Pair] = []

    def pair(self, projection: str, event: Event, position: list[Pair]) -> Pair:
        shared = self.projections.pair(event)
        if shared is not None:
            return shared
        if isinstance(event, Upsert):
            return (event, encode_body(event))  # not made from the shared projections
        if isinstance(event, Reset):
            reset = self._resets.get(projection)
            if reset is None:
                reset = self._resets[projection] = (event, encode_body(event))
            return reset
        for pair in position:
            if pair[0] == event:
                return pair
        pair = (event, encode_body(event))
        position.append(pair)
        return pair


class _Entry:
    """One live operation in a watch's event log: a change (``prepared`` when it is a trusted upsert,
    resolved once for every subscriber) or a non-terminal failure, and the bodies of the other
    events its readers made of it."""

    __slots__ = ("op", "prepared", "position", "recent", "received")

    def __init__(self, op: Change | Failure, prepared: SharedChange | None, received: float = 0.0) -> None:
        self.op = op
        self.prepared = prepared
        self.received = received
        """When the watch logged it (``time.monotonic()``), for a hub with a meter; else 0."""
        self.position: list[Pair] = []
        self.recent: Pair | None = None
        """The pair a reader made of this entry last."""


class _EventLog:
    """The last ``depth`` live operations of a watch, by absolute position, and who reads where.

    The pump appends (O(1)); each subscriber's reader follows the log from its own cursor. Readers
    are indexed by cursor, so the entry that falls off the end names exactly the readers that fell
    more than ``depth`` operations behind, without looking at any other.
    """

    __slots__ = ("depth", "end", "_ring", "_readers")

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.end = 0
        """The position the next entry takes."""
        self._ring: list[_Entry | None] = [None] * depth
        self._readers: dict[int, set[Subscriber]] = {}

    @property
    def start(self) -> int:
        """The oldest position still held."""
        return max(0, self.end - self.depth)

    def append(self, entry: _Entry) -> tuple[_Entry | None, set[Subscriber] | None]:
        """Add ``entry``; the entry that fell off and the readers still at its position."""
        position = self.end
        slot = position % self.depth
        dropped = self._ring[slot]
        self._ring[slot] = entry
        self.end = position + 1
        late = self._readers.pop(position - self.depth, None) if dropped is not None else None
        return dropped, late

    def since(self, cursor: int) -> list[_Entry]:
        """The entries from ``cursor`` (not before :attr:`start`) to the end."""
        ring, depth = self._ring, self.depth
        return [ring[position % depth] for position in range(cursor, self.end)]  # type: ignore[misc]

    def move(self, reader: Subscriber, old: int | None, new: int | None) -> None:
        """Index ``reader`` at ``new`` (``None``: not following) instead of ``old``."""
        if old is not None:
            here = self._readers.get(old)
            if here is not None:
                here.discard(reader)
                if not here:
                    del self._readers[old]
        if new is not None:
            here = self._readers.get(new)
            if here is None:
                here = self._readers[new] = set()
            here.add(reader)


class _Watch:
    """One upstream watch, its cache of raw objects and its subscribers."""

    def __init__(self, hub: Hub, key: tuple[Scope, object], api: ApiClient, *, shared: bool) -> None:
        self.hub = hub
        self.key = key
        self.scope = key[0]
        self.api = api
        self.shared = shared
        self.subscribers: set[Subscriber] = set()
        self.cache: dict[str, Mapping[str, Any]] = {}
        self.synced = False
        self.outage: Failure | None = None
        self.projections = SharedProjections()
        self.bodies = _Bodies(self.projections)
        self.log = _EventLog(hub.queue_depth)
        self.ended = False
        self._sleepers: set[_Doorbell] = set()
        self._waking = False
        self._loop = concurrency.current_loop()
        self._pump: concurrency.Greenlet | None = None
        self._reauthorizer: concurrency.Greenlet | None = None
        self._heartbeats: concurrency.Greenlet | None = None
        self._linger: concurrency.Greenlet | None = None

    def start(self) -> None:
        self._pump = self.hub.group.spawn(self._run)
        self._heartbeats = self.hub.group.spawn(self._beat)
        if self.shared and self.hub.reauthorize_every is not None:
            self._reauthorizer = self.hub.group.spawn(self._reauthorize)
        self.hub.observer.watch_started(self.scope)

    # -- subscribers -----------------------------------------------------------------------

    def attach(self, subscriber: Subscriber) -> None:
        if self._linger is not None:
            self._linger.kill(block=False)
            self._linger = None
        subscriber._watch = self
        subscriber.engine.shared = self.projections
        self.subscribers.add(subscriber)
        if not subscriber.guard:  # a guard reads nothing of the log: it never falls behind
            subscriber._follow_from(self.log.end)
            if self.outage is not None:
                subscriber._deliver(subscriber.engine.feed(self.outage))
        subscriber._bell.ring()

    def detach(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)
        self._sleepers.discard(subscriber._bell)
        self.log.move(subscriber, subscriber._cursor, None)
        subscriber._cursor = None
        if self.subscribers or self.ended:
            return
        if self.hub.linger == 0:
            self.stop()
        elif self._linger is None:
            self._linger = concurrency.Greenlet(self._linger_expired)
            self.hub.group.add(self._linger)
            self._linger.start_later(self.hub.linger)

    def _linger_expired(self) -> None:
        self._linger = None
        if not self.subscribers:
            self.stop()

    # -- the pump --------------------------------------------------------------------------

    def _run(self) -> None:
        reflector = Reflector(
            self.api, self.scope, streaming_lists=self.hub.streaming_lists, settings=self.hub.settings
        )
        ops = reflector.ops()
        try:
            # Readers write what was queued at least every slice: a watch with buffered events would
            # otherwise keep the CPU until every queue overflowed. Within a slice, buffered events
            # are fanned out back to back, so each reader writes them in one coalesced chunk. A
            # slice starts when the pump starts reading again after it waited (the event loop's
            # clock moved on meanwhile), so the events of one read are never split by a wake-up.
            most = max(1, self.hub.queue_depth // 2)
            loop_time = self._loop.now
            started, applied, turn = time.monotonic(), 0, loop_time()
            for op in ops:
                if loop_time() != turn:
                    started, applied, turn = time.monotonic(), 0, loop_time()
                self._apply(op)
                if self.ended:
                    return
                applied += 1
                if applied >= most or time.monotonic() - started >= PUMP_SLICE:
                    concurrency.sleep(0)
                    started, applied = time.monotonic(), 0
        except Exception as exc:
            log.error("the upstream watch failed with %s; its streams end", type(exc).__name__)
            self._apply(_WATCH_CRASHED)
        finally:
            ops.close()

    def _apply(self, op: SourceOp) -> None:
        if isinstance(op, Change):
            uid = str(op.object["metadata"]["uid"])
            if op.type == "DELETED":
                self.cache.pop(uid, None)
            else:
                self.cache[uid] = op.object
            # resolved once for every reader; what it replaces stays usable while the log holds it
            received = time.monotonic() if self.hub.meter is not None else 0.0
            self._append(_Entry(op, self.projections.prepare(op, keep_replaced=True), received))
            if op.type == "DELETED":
                self.projections.release(uid)
        elif isinstance(op, Snapshot):
            # every reader awaits the snapshot served from this cache and skips the changes logged
            # before it, so what was made of objects that left the cache can go now
            self.cache = {str(obj["metadata"]["uid"]): obj for obj in op.objects}
            self.projections.retain(self.cache)
            self.synced = True
            if self.outage is not None:
                self.hub.observer.watch_restarted(self.scope, "recovered")
            self.outage = None
            self.hub.collector.settle()
            for subscriber in self.subscribers:
                subscriber._awaiting = True
                subscriber._bell.ring()
        elif isinstance(op, ContinuityLost):
            if self.outage is None:  # after an outage, its recovery is what is reported
                cause = "expired" if "expired" in op.reason else "error"
                self.hub.observer.watch_restarted(self.scope, cause)
            self.synced = False
            for subscriber in self.subscribers:
                subscriber._awaiting = True
        elif isinstance(op, Failure):
            self.hub.observer.watch_failed(self.scope, op)
            if op.terminal:
                self._end()
                for subscriber in list(self.subscribers):
                    subscriber._deliver(subscriber.engine.feed(op))  # what is not read yet is dropped
            else:
                self.hub.observer.watch_restarted(self.scope, "error")
                self.synced = False
                self.outage = op
                self._append(_Entry(op, None))
        # a Bookmark only advances the reflector's resourceVersion

    def _append(self, entry: _Entry) -> None:
        """Log a live operation for the readers and wake those waiting: O(1), whatever the number
        of subscribers (the readers that fell behind are the only ones looked at)."""
        dropped, late = self.log.append(entry)
        self.bodies.current = []
        if dropped is not None and dropped.prepared is not None:
            self.projections.discard_stale(dropped.prepared)
        if late:
            for subscriber in late:
                subscriber._fell_behind(self.log.end)
        if self._sleepers and not self._waking:
            self._waking = True
            self._loop.run_callback(self._wake)

    def sleep(self, bell: _Doorbell) -> None:
        """Have the next logged operation ring ``bell``."""
        self._sleepers.add(bell)

    def _wake(self) -> None:
        """Wake every reader waiting for the log, once per batch of operations: runs on the
        event loop, switching to each reader in turn."""
        self._waking = False
        sleepers, self._sleepers = self._sleepers, set()
        for bell in sleepers:
            bell.ring(from_loop=True)

    def _end(self) -> None:
        """The watch is over (terminal failure): no new subscriber joins it."""
        self.ended = True
        self.hub._forget(self)
        self._cancel_timers()
        self.hub.observer.watch_stopped(self.scope)

    def stop(self) -> None:
        """Stop the upstream watch (its last subscriber left, or the hub is shutting down)."""
        if self.ended:
            return
        self._end()
        if self._pump is not None and self._pump is not concurrency.getcurrent():
            self._pump.kill(block=False)

    def shutdown(self) -> None:
        for subscriber in list(self.subscribers):
            subscriber._end(SHUTDOWN_FAILURE)
        self.stop()

    def _cancel_timers(self) -> None:
        current = concurrency.getcurrent()
        for greenlet in (self._linger, self._reauthorizer, self._heartbeats):
            if greenlet is not None and greenlet is not current:
                greenlet.kill(block=False)
        self._linger = self._reauthorizer = self._heartbeats = None

    # -- heartbeats --------------------------------------------------------------------------

    def _beat(self) -> None:
        """Wake the SSE readers that have written nothing for a heartbeat interval.

        One timer per watch rather than a timeout per wait: arming and cancelling a timer each
        time a reader waits would cost more than the rest of its work per event. A stream idles at
        most ``1 + HEARTBEAT_TICKS**-1`` heartbeat intervals between two writes.
        """
        interval = self.hub.heartbeat
        while not self.ended:
            concurrency.sleep(interval / HEARTBEAT_TICKS)
            due = time.monotonic() - interval
            for subscriber in list(self.subscribers):
                if subscriber._written_at <= due and not subscriber.guard:  # a guard writes nothing
                    subscriber._beat = True
                    subscriber._bell.ring()

    # -- re-authorization --------------------------------------------------------------------

    def _reauthorize(self) -> None:
        interval = self.hub.reauthorize_every
        assert interval is not None
        while not self.ended:
            concurrency.sleep(interval)
            for subscriber in list(self.subscribers):
                if subscriber._watch is not self or subscriber.ended:
                    continue
                refusal = self.hub._authorize(subscriber)
                if refusal is not None and subscriber._watch is self:
                    subscriber._end(refusal)

    # -- snapshots -------------------------------------------------------------------------

    def serve_snapshot(self, subscriber: Subscriber) -> None:
        """Give ``subscriber`` a snapshot cycle from the cache (which must be synced)."""
        engine = subscriber.engine
        if not engine.needs_snapshot:
            subscriber._deliver(engine.feed(ContinuityLost("resynchronized from the cache")))
        # Building a snapshot allocates a few containers per object, nearly all kept (the shared
        # projections and bodies): the cyclic collector would scan the whole process's heap over
        # and over, for nothing, more than doubling the cost of a first snapshot. It is paused for
        # this loop only, which never yields to another greenlet, and left as it was found.
        pause = gc.isenabled()
        if pause:
            gc.disable()
        allocated = gc.get_count()[0]
        try:
            subscriber._deliver(engine.feed(Snapshot(list(self.cache.values()))))
        finally:
            allocated = gc.get_count()[0] - allocated
            if pause:
                gc.enable()
        subscriber._follow_from(self.log.end)  # the cache holds everything logged so far
        subscriber._awaiting = False  # until the cache changes, another snapshot would be the same
        subscriber._cleared = False  # the next cycle is authorized again
        self.hub.collector.settle(allocated)  # the first of a projection made every view


def _framed(pairs: list[Pair], first: int) -> bytes:
    """The SSE frames of ``pairs`` as one chunk, ``seq`` from ``first``. Empties ``pairs``, so that a
    stream idling after a snapshot keeps no list of every object it sent."""
    chunk = b"".join([frame(n, body) for n, (_, body) in enumerate(pairs, first)])
    pairs.clear()
    return chunk


def _metered(chunk: bytes, meter: StreamMeter, events: int, received: float) -> Iterator[bytes]:
    """:func:`~flask_krm.sse.released` of ``chunk``, counted once it was written."""
    size = len(chunk)
    written = released(chunk)
    del chunk
    yield from written
    meter.delivered(events, size, received)


class _Doorbell:
    """Wakes the one greenlet that reads a subscriber: what an :class:`~flask_krm.concurrency.Event` does for it at
    a third of the cost (one loop callback per ring and no link bookkeeping), which matters when
    one upstream event wakes a thousand readers."""

    __slots__ = ("rung", "_waiter", "_loop")

    def __init__(self) -> None:
        self.rung = False
        self._waiter: Waiter[None] | None = None
        self._loop = concurrency.current_loop()

    def ring(self, *, from_loop: bool = False) -> None:
        """Wake the reader; ``from_loop`` (only in a callback of the event loop): switch to it now."""
        if not self.rung:
            self.rung = True
            waiter = self._waiter
            if waiter is not None:
                self._waiter = None
                if from_loop:
                    waiter.switch(None)
                else:
                    self._loop.run_callback(waiter.switch, None)

    def wait(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds (``None``: for ever) for a ring; whether it rang. Resets."""
        if not self.rung:
            waiter: Waiter[None] = Waiter()
            self._waiter = waiter
            try:
                if timeout is None:
                    waiter.get()
                else:
                    with concurrency.Timeout(timeout, False):
                        waiter.get()
            finally:
                self._waiter = None
        rung, self.rung = self.rung, False
        return rung


class Subscriber:
    """One stream served by the hub: iterate it for SSE bytes, or use :meth:`batches` for events.

    Iterating yields SSE chunks: every frame queued at the time joined into one chunk (``seq``
    from 1), and :data:`~flask_krm.sse.HEARTBEAT` once a heartbeat interval passed without a write
    (checked :data:`HEARTBEAT_TICKS` times per interval by the watch). Iteration
    ends after a terminal error (shutdown, revoked access, a terminal upstream failure) or
    :meth:`close`; closing the iterator closes the subscriber.
    """

    def __init__(self, hub: Hub, engine: StreamEngine, principal: Any) -> None:
        self._hub = hub
        self.engine = engine
        self.principal = principal
        self._watch: _Watch | None = None
        self._queue: list[Pair] = []  # an empty list holds no slots; a deque keeps a block of 64
        self._cursor: int | None = None
        """The next position of the watch's event log to read (``None``: not following it)."""
        self._awaiting = True
        self._cleared = False  # authorized for the next snapshot cycle (the first: by subscribe)
        self._ending = False
        self._closed = False
        self._bell = _Doorbell()
        self._written_at = time.monotonic()
        self._beat = False
        meter = hub.meter
        self._meter = meter.for_scope(engine.scope) if meter is not None else None
        self._received = 0.0
        """With a meter: when the oldest live operation not yet written was logged."""
        self.resyncs = 0
        """How many times this subscriber overflowed its queue and was resynchronized."""
        self.trusted = False
        """Made by :meth:`Hub.follow`: never authorized (it serves no person)."""
        self.guard = False
        """Made by :meth:`Hub.guard`: authorized and ended as any subscriber, delivers nothing else."""
        self.cycles_kept = 0
        """A guard's snapshot cycles of the watch so far (each authorized; the first at join)."""

    @property
    def scope(self) -> Scope:
        return self.engine.scope

    @property
    def projection(self) -> str:
        return self.engine.projection

    @property
    def ended(self) -> bool:
        """Nothing more will be queued (a terminal error was queued, or it was closed)."""
        return self._ending or self._closed

    @property
    def queued(self) -> int:
        """Events and live operations waiting to be read."""
        watch, cursor = self._watch, self._cursor
        behind = watch.log.end - cursor if watch is not None and cursor is not None and not self._awaiting else 0
        return len(self._queue) + behind

    def __iter__(self) -> Iterator[bytes]:
        seq = 0
        try:
            while True:
                pairs = self._take(None, heartbeats=True)
                if pairs is None:
                    return
                if pairs:
                    # the hub queues nothing after a terminal error, so every pair is framed
                    first, seq = seq + 1, seq + len(pairs)
                    meter = self._meter
                    if meter is None:
                        yield from released(_framed(pairs, first))
                    else:
                        received, self._received = self._received, 0.0
                        yield from _metered(_framed(pairs, first), meter, seq - first + 1, received)
                else:
                    yield HEARTBEAT
                self._written_at = time.monotonic()
        finally:
            self.close()

    def batches(self, timeout: float | None = None) -> Iterator[list[Event]]:
        """Protocol events in batches as they arrive; an empty batch after each idle ``timeout``
        (default: the heartbeat interval). Ends like iteration does; closes the subscriber."""
        wait = self._hub.heartbeat if timeout is None else timeout
        try:
            while True:
                pairs = self.take(wait)
                if pairs is None:
                    return
                yield [event for event, _ in pairs]
        finally:
            self.close()

    def take(self, timeout: float | None) -> list[Pair] | None:
        """Everything queued, waiting up to ``timeout`` seconds for something (``[]`` if nothing
        came); ``None`` once the stream is over and drained."""
        return self._take(timeout, heartbeats=False)

    def _take(self, timeout: float | None, *, heartbeats: bool) -> list[Pair] | None:
        """:meth:`take`; with ``heartbeats``, ``[]`` also when the watch's timer says a heartbeat
        is due."""
        while True:
            if self._closed:
                return None
            watch = self._watch
            if self._awaiting and not self._ending and watch is not None and watch.synced:
                if (self.cycles_kept if self.guard else self.engine.cycles) and not self._cleared:
                    self._authorize_cycle()  # may block: the state is looked at again after it
                    continue
                if self.guard:
                    self._keep_cycle()
                else:
                    watch.serve_snapshot(self)
            if watch is not None and self._cursor is not None and self._cursor < watch.log.end and not self._ending:
                self._read_log(watch)
            if self._queue:
                pairs, self._queue = self._queue, []
                self._bell.rung = False  # for what was just taken
                return pairs
            if self._ending:
                self.close()
                return None
            if heartbeats and self._beat:
                self._beat = False
                return []
            if watch is not None and not self.guard:
                watch.sleep(self._bell)  # a guard is rung by a new snapshot cycle and its end only
            if not self._bell.wait(timeout):
                return []

    def _read_log(self, watch: _Watch) -> None:
        """Take this subscriber's events of every live operation logged since its cursor."""
        log = watch.log
        cursor = self._cursor
        assert cursor is not None
        end = log.end
        engine = self.engine
        projection = engine.projection
        pair = watch.bodies.pair
        append = self._queue.append
        awaiting = self._awaiting
        entries = log.since(cursor)
        if self._meter is not None and not self._received and entries:
            self._received = entries[0].received
        for entry in entries:
            prepared = entry.prepared
            if prepared is not None:
                if awaiting:
                    continue  # the snapshot to come supersedes it
                events = engine.feed_change(prepared)
            elif awaiting and isinstance(entry.op, Change):
                continue
            else:
                events = engine.feed(entry.op)
            for event in events:
                # readers in the same state make the same event of an entry: look its body up once
                recent = entry.recent
                if recent is None or recent[0] is not event:
                    recent = entry.recent = pair(projection, event, entry.position)
                append(recent)
        # An engine that closed or refused a live event makes nothing of later entries (it emitted
        # the terminal error, or RESYNC_REQUIRED and reset), so its state is looked at once.
        if engine.closed:
            self._ending = True
            self._detach()
            self._bell.ring()
            return
        if engine.needs_snapshot:
            self._awaiting = True  # a snapshot from the cache follows
        log.move(self, cursor, end)
        self._cursor = end

    def _keep_cycle(self) -> None:
        """A guard's new snapshot cycle, authorized: it serves nothing of it."""
        self.cycles_kept += 1
        self._awaiting = False
        self._cleared = False  # the next cycle is authorized again

    def _follow_from(self, position: int) -> None:
        """Read the watch's event log from ``position`` on."""
        watch = self._watch
        if watch is not None:
            watch.log.move(self, self._cursor, position)
            self._cursor = position

    def _fell_behind(self, end: int) -> None:
        """The log dropped an operation this subscriber had not read (its cursor is unindexed)."""
        if self._awaiting:
            self._cursor = None  # a snapshot comes next anyway, and moves the cursor to the end
            self._follow_from(end)
        else:
            self._cursor = None
            self._overflow()

    def _authorize_cycle(self) -> None:
        """Ask the authorizer again before a new snapshot cycle sends anything (a relist, an overflow
        resync, a recovery after an outage): once per cycle, by this subscriber's own reader, so the
        watch never waits on it. A refusal ends the stream with its terminal error.

        A check that cannot be completed ends the stream too, with a terminal ``INTERNAL``, as it
        does when the subscriber joins, rather than holding the stream with a non-terminal error and
        a retry: the client's reconnection is the retry, and it is authorized like any new
        subscriber, so no decision is ever assumed and no timer is kept per subscriber.
        """
        refusal = self._hub._authorize(self)
        if refusal is not None:
            self._end(refusal)
        else:
            self._cleared = True

    def cached(self, uid: str) -> Mapping[str, Any] | None:
        """The raw object the watch serving this subscriber holds for ``uid`` now, or ``None``.

        The newest version the shared watch has seen (possibly newer than what this subscriber
        delivered so far), from this subscriber's own watch, so the same identity and scope.
        Shared: never mutate it. ``None`` when the uid is not cached or nothing is attached.
        """
        watch = self._watch
        return watch.cache.get(uid) if watch is not None else None

    def close(self) -> None:
        """Stop being served; queued events are dropped. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        self._bell.ring()
        self._detach()

    # -- fed by the watch --------------------------------------------------------------------

    def _deliver(self, events: list[Event]) -> None:
        """Queue events that are not read from the log: a snapshot cycle, an outage notice for a
        joiner, a terminal error (snapshots are never subject to the queue bound)."""
        if not events or self._ending or self._closed:
            return
        watch = self._watch
        bodies = watch.bodies if watch is not None else _Bodies(SharedProjections())
        engine = self.engine
        projection = engine.projection
        append = self._queue.append
        position = bodies.current
        for event in events:
            append(bodies.pair(projection, event, position))
        if engine.closed:
            self._ending = True
            self._detach()
        self._bell.ring()

    def _overflow(self) -> None:
        self._queue.clear()
        self._awaiting = True
        self.resyncs += 1
        self._hub.observer.subscriber_overflowed(self.scope)
        self._bell.ring()

    def end(self, failure: Failure) -> None:
        """End with ``failure`` (terminal) as the next event; what was queued is dropped (the
        browser session the stream belongs to ended)."""
        self._end(failure)

    def _end(self, failure: Failure) -> None:
        """End with ``failure`` (terminal) as the last event; what was queued is dropped."""
        if self.ended:
            return
        self._queue.clear()
        self._deliver(self.engine.feed(failure))
        self._ending = True
        self._detach()
        self._bell.ring()

    def _detach(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.detach(self)
