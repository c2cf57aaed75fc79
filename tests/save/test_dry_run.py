"""When a draft's check is sent: once the draft is still, one run per burst, never starved by the server."""

from __future__ import annotations

import time

import gevent
from gevent.pool import Group

from flask_krm.save.dry_run import Debouncer


def test_a_burst_of_pokes_runs_once_and_a_servers_change_never_postpones() -> None:
    runs: list[float] = []
    group = Group()
    debouncer = Debouncer(group, 0.05, lambda: runs.append(time.monotonic()))
    for _ in range(5):
        debouncer.poke()
        gevent.sleep(0.01)
    group.join(timeout=2)
    assert len(runs) == 1 and not debouncer.pending
    started = time.monotonic()
    debouncer.poke()
    for _ in range(10):  # the server's changes, every 20 ms: the run stays due 50 ms after the edit
        gevent.sleep(0.02)
        debouncer.poke(postpone=False)
    group.join(timeout=2)
    assert len(runs) >= 2 and runs[1] - started < 0.15
