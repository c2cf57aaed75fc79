"""Is the event loop still turning? A ticking greenlet and how late it wakes.

:class:`LoopTicker` sleeps :data:`TICK` seconds at a time in a greenlet of its own and notes how
much later than asked it woke. A greenlet that holds the CPU without yielding (a blocking call in
an unpatched library, a runaway loop) delays every other greenlet by the same amount: the ticker
sees it as lag, or, while the loop is still stuck, as a last tick long past. The liveness probe
reads it (:mod:`flask_krm.health`); nothing else here depends on Redis or the API server.
"""

from __future__ import annotations

import time
import typing as t
from collections.abc import Callable

from .concurrency import Greenlet, Group, sleep

__all__ = ["TICK", "LoopTicker"]

TICK: t.Final = 0.5
"""Seconds between the ticker's wake-ups."""


class LoopTicker:
    """The event loop's heartbeat for one application (started once, by the first probe, scrape or
    server hook that asks; stopped with the application's greenlet group)."""

    def __init__(self, tick: float = TICK, clock: Callable[[], float] = time.monotonic) -> None:
        self.tick = tick
        self._clock = clock
        self.last_tick: float | None = None
        """When it last woke (``None``: not yet)."""
        self.lag = 0.0
        """How much later than asked it last woke, in seconds."""
        self.on_tick: list[Callable[[float], None]] = []
        """Called with the lag after each tick, on the ticker's greenlet (must not block)."""
        self._greenlet: Greenlet | None = None

    def start(self, group: Group) -> None:
        """Start ticking in ``group`` unless it already ticks in this process (after a fork it does not)."""
        if self._greenlet is not None and not self._greenlet.dead:
            return
        self._greenlet = group.spawn(self._run)

    def stop(self) -> None:
        """Stop ticking (the application is shutting down)."""
        greenlet, self._greenlet = self._greenlet, None
        if greenlet is not None:
            greenlet.kill(block=False)

    @property
    def started(self) -> bool:
        return self._greenlet is not None and not self._greenlet.dead

    def behind(self) -> float:
        """Seconds the loop is behind now: the last tick's lag, or, when the next tick is overdue,
        how overdue it is (0 before the first tick)."""
        if self.last_tick is None:
            return 0.0
        overdue = self._clock() - self.last_tick - self.tick
        return max(self.lag, overdue, 0.0)

    def _run(self) -> None:
        while True:
            due = self._clock() + self.tick
            sleep(self.tick)
            now = self._clock()
            self.lag = max(0.0, now - due)
            self.last_tick = now
            for listener in self.on_tick:
                listener(self.lag)
