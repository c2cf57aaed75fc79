"""The event loop's ticker: its lag after a held loop, how overdue it is while the loop is stuck,
and one ticking greenlet per application."""

from __future__ import annotations

import time

import gevent
from gevent.pool import Group

from flask_krm.event_loop import LoopTicker


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_behind_is_nothing_before_the_first_tick_then_the_lag_or_how_overdue_the_next_tick_is() -> None:
    clock = Clock()
    ticker = LoopTicker(tick=0.5, clock=clock)
    clock.now += 60
    assert ticker.behind() == 0.0
    ticker.last_tick, ticker.lag = clock.now, 0.25
    assert ticker.behind() == 0.25  # the last tick was late
    clock.now += 0.5
    assert ticker.behind() == 0.25  # the next tick is due now: the lag still counts
    clock.now += 2.0
    assert ticker.behind() == 2.0  # overdue by 2 s while the loop is stuck


def test_a_loop_held_without_yielding_is_seen_as_lag_by_the_next_tick() -> None:
    ticker = LoopTicker(tick=0.01)
    lags: list[float] = []
    ticker.on_tick.append(lags.append)
    group = Group()
    ticker.start(group)
    try:
        gevent.sleep(0.1)
        assert lags and ticker.last_tick is not None
        before = len(lags)
        time.sleep(0.3)  # holds the loop: no greenlet runs
        gevent.sleep(0.05)
        assert max(lags[before:]) >= 0.2
        assert ticker.lag == lags[-1]
    finally:
        ticker.stop()
        group.kill()


def test_one_ticking_greenlet_that_stops_and_starts_again() -> None:
    ticker = LoopTicker(tick=0.01)
    group = Group()
    assert not ticker.started
    ticker.start(group)
    ticker.start(group)
    assert ticker.started and len(group) == 1
    ticker.stop()
    gevent.sleep(0)
    assert not ticker.started and len(group) == 0
    ticker.start(group)
    assert ticker.started and len(group) == 1
    ticker.stop()
    group.kill()
