"""The per-watch event log: appends are O(1) and name only the readers that fell behind."""

from __future__ import annotations

from typing import Any, cast

from flask_krm.ops import Change
from flask_krm.upstream.hub import Subscriber, _Entry, _EventLog


def entry(n: int) -> _Entry:
    return _Entry(Change("MODIFIED", {"metadata": {"uid": "u", "resourceVersion": str(n)}}), None)


def reader(name: str) -> Subscriber:
    return cast(Subscriber, cast(Any, name))  # the log only indexes readers, never calls them


def test_readers_follow_by_position_and_only_those_lapped_are_named() -> None:
    log = _EventLog(3)
    slow, fast, gone = reader("slow"), reader("fast"), reader("gone")
    log.move(slow, None, 0)
    log.move(gone, None, 0)
    log.move(gone, 0, None)  # left: unindexed
    entries = [entry(n) for n in range(6)]
    for n in range(3):
        assert log.append(entries[n]) == (None, None)
    assert log.start == 0 and log.end == 3
    assert log.since(1) == entries[1:3]
    log.move(fast, None, 3)
    dropped, late = log.append(entries[3])
    assert dropped is entries[0] and late == {slow}, "the reader still at the dropped position"
    assert log.start == 1 and log.since(1) == entries[1:4]
    dropped, late = log.append(entries[4])
    assert dropped is entries[1] and late is None, "nobody was reading there"
    dropped, late = log.append(entries[5])
    assert dropped is entries[2] and late is None
    log.move(fast, 3, 6)
    assert log.since(6) == []
    assert log.append(entry(6))[1] is None and log.append(entry(7))[1] is None
    assert log.append(entry(8))[1] is None
    assert log.append(entry(9))[1] == {fast}
