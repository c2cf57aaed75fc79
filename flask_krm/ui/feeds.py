"""Feeds: what keeps a session's store current, and where its stream stands.

A :class:`Feed` pumps one upstream subscription (the hub's shared watch of a scope, seen through
one projection) into what holds its server objects, in a greenlet of the application's group: a
session's :class:`~flask_krm.store.LiveResourceStore` (a plugged source, an unshared client), or
the :class:`~flask_krm.store.truth.ServerTruth` every session store of one hub watch and projection
shares. A session feed given such a truth's feed as its ``source`` applies nothing itself: its own
subscription is a guard (:meth:`~flask_krm.upstream.hub.Hub.guard`) that authorizes the session and
yields nothing but its terminal error when access is refused or revoked, and its state is the
source's, unless that guard ended it. It runs while something needs it: every page channel showing the store
holds it, and a freshly rendered page holds it for a short while so the channel finds it running
(with a shared draft backend, so does every request on the store: an edit reaching a worker that
serves none of the session's channels finds that worker's store current).
When the last holder lets go it stops after a linger, and a later holder starts a new
subscription, which begins with a fresh snapshot (the store keeps the drafts).

The feed also tracks the stream's state (:class:`~flask_krm.ui.render.StreamStatus`): ``syncing``
from ``reset`` to ``synced``, ``live`` after it, ``retrying`` while the upstream is unavailable,
``terminal`` with a reason after a terminal error.
"""

from __future__ import annotations

import logging
import typing as t
import weakref
from collections.abc import Callable

from .. import concurrency
from ..concurrency import Group
from ..events import Event, Reset, StreamError, Synced
from .render import CONNECTING, StreamStatus

if t.TYPE_CHECKING:
    from ..store import LiveResourceStore
    from ..subscriptions import Subscription

log = logging.getLogger("flask_krm")

Listener: t.TypeAlias = Callable[[], None]

TERMINAL_REASONS: t.Final[t.Mapping[str, str]] = {
    "FORBIDDEN": "You may not view this.",
    "UNAUTHENTICATED": "You are signed out: sign in again, then reload the page.",
    "SCOPE_INVALID": "This view is not available.",
    "SLOW_CONSUMER": "The connection fell behind: reload the page to continue.",
    "INTERNAL": "The live view stopped because of a server error: reload the page to try again.",
    "UPSTREAM_UNAVAILABLE": "The cluster is unavailable: reload the page to try again.",
}
"""What a person is told for each terminal error code (the stream's own message may say more)."""

RETRYING_REASON: t.Final = "The cluster is unavailable; retrying."


SubscriptionOpener: t.TypeAlias = Callable[[], "Subscription"]


class EventSink(t.Protocol):
    """What a feed applies protocol events to: a store, or a shared truth."""

    def apply(self, event: Event) -> t.Any: ...


@t.runtime_checkable
class _Cached(t.Protocol):
    """A subscription whose upstream watch keeps the raw objects it has seen (the hub's)."""

    def cached(self, uid: str) -> t.Mapping[str, t.Any] | None: ...


def terminal_reason(error: StreamError) -> str:
    """The text shown when ``error`` ended a component's stream."""
    return TERMINAL_REASONS.get(error.code, "The live view stopped: reload the page to try again.")


class Feed:
    """One store, kept current by one upstream subscription while anything holds the feed.

    :param store: the session store (or shared truth) the events are applied to.
    :param opener: opens a new upstream subscription (called in the pump greenlet).
    :param group: the application's greenlet group (shutdown joins and kills it).
    :param linger: seconds the subscription stays open after the last holder let go.
    :param source: the feed of the shared truth ``store`` reads: it applies the events, and its
        state is this feed's, except when this feed's own stream ended (refused, revoked).
    """

    def __init__(
        self, store: EventSink, opener: SubscriptionOpener, group: Group, linger: float, source: Feed | None = None
    ) -> None:
        # Weak: the registry keeps feeds in a weak mapping keyed by their store, so a feed must not
        # keep its store alive; a store nobody holds any more ends its feed.
        self._store = weakref.ref(store)
        self._opener = opener
        self._group = group
        self._linger = linger
        self._holders = 0
        self._pump: concurrency.Greenlet | None = None
        self._subscription: Subscription | None = None
        self._stopper: concurrency.Greenlet | None = None
        self._timers: set[concurrency.Greenlet] = set()
        self._status = CONNECTING
        self._listeners: list[Listener] = []
        self._changed = concurrency.Event()
        self._source = source
        self._unlisten: Callable[[], None] | None = None

    @property
    def status(self) -> StreamStatus:
        source = self._source
        if source is None or self._status.state == "terminal":
            return self._status
        return source.status

    @property
    def running(self) -> bool:
        return self._pump is not None and not self._pump.dead

    def newest_known(self, uid: str) -> t.Mapping[str, t.Any] | None:
        """The newest raw object the upstream watch holds for ``uid`` (shared: never mutate it),
        or ``None``: not running, not cached, or a source that keeps no objects (a plugged one)."""
        subscription = self._subscription
        return subscription.cached(uid) if isinstance(subscription, _Cached) else None

    # -- holders -----------------------------------------------------------------------------

    def acquire(self) -> None:
        """Hold the feed: start the subscription unless it runs already."""
        self._holders += 1
        if self._source is not None:
            self._source.acquire()
            if self._unlisten is None:
                self._unlisten = self._source.on_status(self._source_changed)
        if self._stopper is not None:
            self._stopper.kill(block=False)
            self._stopper = None
        if not self.running:
            self._set_status(CONNECTING)
            store = self._store()
            if self._source is not None and store is not None:
                t.cast("LiveResourceStore", store).reattach()  # follows the truth again, if it stopped
            self._pump = self._group.spawn(self._run)

    def release(self) -> None:
        """Let go of the feed; the last holder's release stops it after the linger."""
        if self._holders and self._source is not None:
            self._source.release()
        self._holders = max(0, self._holders - 1)
        if self._holders or self._stopper is not None:
            return
        if self._linger <= 0:
            self.stop()
        else:
            self._stopper = concurrency.Greenlet(self._stop_if_unheld)
            self._group.add(self._stopper)
            self._stopper.start_later(self._linger)

    def hold_for(self, seconds: float) -> None:
        """Hold the feed for ``seconds`` (a rendered page, until its channel connects)."""
        self.acquire()

        def release() -> None:
            self._timers.discard(releaser)
            self.release()

        releaser = concurrency.Greenlet(release)
        self._timers.add(releaser)
        self._group.add(releaser)
        releaser.start_later(seconds)

    def wait_live(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the stream to be live (or terminal); True when live."""
        deadline = concurrency.Timeout(timeout, False)
        with deadline:
            while self.status.state not in ("live", "terminal"):
                self._changed.clear()
                self._changed.wait()
        return self.status.state == "live"

    def stop(self) -> None:
        """Close the subscription now (shutdown, or nobody holds the feed)."""
        unlisten, self._unlisten = self._unlisten, None
        if unlisten is not None:
            unlisten()
        pump, self._pump = self._pump, None
        if pump is not None and pump is not concurrency.getcurrent():
            pump.kill(block=False)

    def close(self) -> None:
        """Stop the subscription and every pending timer (the application is shutting down)."""
        timers = list(self._timers) + ([self._stopper] if self._stopper is not None else [])
        self._timers.clear()
        self._stopper = None
        for timer in timers:
            timer.kill(block=False)
        self.stop()

    def _stop_if_unheld(self) -> None:
        self._stopper = None
        if not self._holders:
            self.stop()

    # -- listeners ---------------------------------------------------------------------------

    def on_status(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener()`` after every status change; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _set_status(self, status: StreamStatus) -> None:
        if status == self._status:
            return
        shown = self.status
        self._status = status
        store = self._store()
        if self._source is not None and status.state == "terminal" and store is not None:
            # refused or revoked: this session sees nothing the shared truth takes from now on
            t.cast("LiveResourceStore", store).detach()
        if self.status != shown:
            self._tell()

    def _source_changed(self) -> None:
        if self._status.state != "terminal":
            self._tell()

    def _tell(self) -> None:
        self._changed.set()
        for listener in list(self._listeners):
            listener()

    # -- the pump ----------------------------------------------------------------------------

    def _run(self) -> None:
        subscription: Subscription | None = None
        try:
            subscription = self._subscription = self._opener()
            for batch in subscription.batches():
                store = self._store()
                if store is None:
                    return
                for event in batch:
                    self._apply(store, event)
                del store
        except Exception as exc:
            log.exception("a live view's subscription failed with %s", type(exc).__name__)
            self._set_status(StreamStatus("terminal", TERMINAL_REASONS["INTERNAL"]))
        finally:
            if subscription is not None:
                if self._subscription is subscription:
                    self._subscription = None
                subscription.close()

    def _apply(self, store: EventSink, event: Event) -> None:
        """Apply one protocol event to the store (unless a source feeds its truth) and move the
        status along."""
        if isinstance(event, StreamError):
            if event.terminal:
                self._set_status(StreamStatus("terminal", terminal_reason(event)))
            elif event.code == "UPSTREAM_UNAVAILABLE":
                self._set_status(StreamStatus("retrying", RETRYING_REASON))
            else:
                self._set_status(StreamStatus("syncing"))
            return
        if self._source is None:
            store.apply(event)
        if isinstance(event, Reset):
            self._set_status(StreamStatus("syncing"))
        elif isinstance(event, Synced):
            self._set_status(StreamStatus("live"))
