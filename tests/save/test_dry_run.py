"""When a draft's check is sent: once the draft is still, one run per burst, never starved by the server."""

from __future__ import annotations

import gevent
from gevent.pool import Group

from flask_krm.save.dry_run import Debouncer

SERVER_CHANGES = 10


def test_a_burst_of_pokes_runs_once_and_a_servers_change_never_postpones() -> None:
    server_changes = 0
    runs: list[int] = []
    """The number of the server's changes that had come when each run began."""
    group = Group()
    debouncer = Debouncer(group, 0.05, lambda: runs.append(server_changes))
    for _ in range(5):
        debouncer.poke()
        gevent.sleep(0.01)
    group.join(timeout=2)
    assert len(runs) == 1 and not debouncer.pending
    debouncer.poke()
    for _ in range(SERVER_CHANGES):  # the server's changes, every 20 ms: the run stays due 50 ms after the edit
        gevent.sleep(0.02)
        debouncer.poke(postpone=False)
        server_changes += 1
    group.join(timeout=2)
    # postponed by each change, the run would wait for the last; due 50 ms after the edit, it comes
    # while they still arrive, whatever the machine's speed (the waits are in the same order)
    assert len(runs) >= 2 and runs[1] < SERVER_CHANGES, runs
