"""What a subscription is, and the two kinds served without the shared hub.

:class:`Subscription` is what :meth:`flask_krm.runtime.KrmRuntime.subscribe` returns (the hub's
:class:`~flask_krm.upstream.hub.Subscriber` is one). :class:`PluggedSubscription` serves a target
plugged with :meth:`KrmStream.plug_source <flask_krm.KrmStream.plug_source>` through its own
engine; :class:`Refused` is a subscription refused before it started.
"""

from __future__ import annotations

import logging
import typing as t
from collections.abc import Callable, Iterable, Iterator

from .concurrency import Empty, Greenlet, Group, Queue, getcurrent
from .events import Event, StreamError
from .ops import Failure, SourceOp
from .sse import HEARTBEAT, FrameSequencer, released
from .stream import StreamEngine

if t.TYPE_CHECKING:
    from .hooks import OpsSource
    from .principal import Principal

logger = logging.getLogger("flask_krm")

SHUTDOWN_ERROR: t.Final = StreamError("INTERNAL", "the server is shutting down", terminal=True)
SOURCE_FAILED: t.Final = Failure("INTERNAL", "the stream source failed", terminal=True)
CLIENT_FAILED: t.Final = StreamError("INTERNAL", "no client for the target could be obtained", terminal=True)


class ShutdownAware(t.Protocol):
    """Something open that the application's shutdown must end (a stream, a feed)."""

    def end_for_shutdown(self) -> None:
        """End now: the application is shutting down. Must not block."""
        ...


class Subscription(t.Protocol):
    """One stream of one scope under one projection.

    Iterate it for SSE bytes (``seq`` from 1, heartbeats while idle) or use :meth:`batches` for
    protocol events; either ends after a terminal error or when the source ends, and closes the
    subscription. :class:`flask_krm.upstream.hub.Subscriber` is one.
    """

    def __iter__(self) -> Iterator[bytes]: ...

    @property
    def ended(self) -> bool:
        """Nothing more will be served: the stream's last event was queued, or it was closed."""
        ...

    def batches(self, timeout: float | None = None) -> Iterator[list[Event]]:
        """Events as they arrive; an empty batch after each idle ``timeout``."""
        ...

    def close(self) -> None:
        """Stop being served. Idempotent."""
        ...

    def end(self, failure: Failure) -> None:
        """End with ``failure`` (terminal) as the next event; what was queued is dropped. Must not
        block; nothing when the stream already ended."""
        ...


class _Last:
    """The final batch of a plugged subscription (possibly empty)."""

    __slots__ = ("events",)

    def __init__(self, events: list[Event]) -> None:
        self.events = events


class PluggedSubscription:
    """A subscription served by a plugged source, through its own engine.

    A pump greenlet in ``group`` feeds the source's operations to the engine and queues the
    events; the bounded queue holds the source back when the reader is slow (nothing is shared,
    so nobody else waits). ``track`` registers the subscription for shutdown and returns the undo.
    """

    def __init__(
        self,
        engine: StreamEngine,
        principal: Principal,
        source: OpsSource,
        *,
        group: Group,
        track: Callable[[ShutdownAware], Callable[[], None]],
        heartbeat: float,
        queue_depth: int,
    ) -> None:
        self.engine = engine
        self.principal = principal
        self._heartbeat = heartbeat
        self._queue: Queue[list[Event] | _Last] = Queue(maxsize=queue_depth)
        self._ended = False
        self._last_queued = False
        """The final batch is in the queue: nothing may replace it (its terminal error included)."""
        self._closed = False
        self._untrack = track(self)
        self._pump: Greenlet = group.spawn(self._run, source)

    def __iter__(self) -> Iterator[bytes]:
        sequencer = FrameSequencer()
        try:
            while True:
                events = self.take(self._heartbeat)
                if events is None:
                    return
                if not events:
                    yield HEARTBEAT
                    continue
                yield from released(b"".join([sequencer.frame(event) for event in events]))
        finally:
            self.close()

    @property
    def ended(self) -> bool:
        """Nothing more will be served: the source's last batch was taken, or it was closed."""
        return self._ended or self._closed

    def batches(self, timeout: float | None = None) -> Iterator[list[Event]]:
        wait = self._heartbeat if timeout is None else timeout
        try:
            while True:
                events = self.take(wait)
                if events is None:
                    return
                yield events
        finally:
            self.close()

    def take(self, timeout: float | None) -> list[Event] | None:
        """The next events, ``[]`` after ``timeout`` idle seconds, ``None`` once over."""
        if self._closed or self._ended:
            self.close()
            return None
        try:
            item = self._queue.get(timeout=timeout)
        except Empty:
            return []
        if isinstance(item, _Last):
            self._ended = True
            return item.events or self.take(timeout)
        return item

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._untrack()
        if self._pump is not getcurrent():
            self._pump.kill(block=True)

    def end_for_shutdown(self) -> None:
        """End with a terminal error as the next event; what was queued is dropped. Nothing when
        the final batch is already queued (it keeps its own terminal error, if it has one)."""
        if self._closed or self._last_queued:
            return
        self._pump.kill(block=True)
        self._end_with([SHUTDOWN_ERROR] if not self.engine.closed else [])

    def end(self, failure: Failure) -> None:
        if self._closed or self._last_queued:
            return
        self._pump.kill(block=False)
        self._end_with(self.engine.feed(failure) if not self.engine.closed else [])

    def _end_with(self, events: list[Event]) -> None:
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(_Last(events))
        self._last_queued = True

    def _run(self, source: OpsSource) -> None:
        engine = self.engine
        ops: Iterable[SourceOp] = ()
        try:
            ops = source(engine.scope, engine.projection, self.principal)
            for op in ops:
                events = engine.feed(op)
                if engine.closed:
                    self._queue.put(_Last(events))
                    self._last_queued = True
                    return
                if events:
                    self._queue.put(events)
            self._queue.put(_Last([]))
            self._last_queued = True
        except Exception:
            logger.exception("a plugged stream source failed; its stream ends")
            self._queue.put(_Last(engine.feed(SOURCE_FAILED)))
            self._last_queued = True
        finally:
            close = getattr(ops, "close", None)
            if callable(close):
                close()


class Refused:
    """A subscription refused before it started: its only event is the terminal error."""

    def __init__(self, error: StreamError) -> None:
        self.error = error

    @property
    def ended(self) -> bool:
        """Always: its one event is its last."""
        return True

    def __iter__(self) -> Iterator[bytes]:
        yield FrameSequencer().frame(self.error)

    def batches(self, timeout: float | None = None) -> Iterator[list[Event]]:
        yield [self.error]

    def close(self) -> None:
        """Nothing to release."""

    def end(self, failure: Failure) -> None:
        """Nothing: its one event is its last."""
