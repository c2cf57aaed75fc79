"""Engines sharing per-object work (``SharedProjections``): each object projected, digested and
encoded once per projection; the same events as engines of their own; revisions per connection."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import flask_krm.stream
from flask_krm.events import Event, Redaction, Upsert, encode_body
from flask_krm.ops import Change, ContinuityLost, Snapshot, SourceOp
from flask_krm.projection import PROJECTIONS
from flask_krm.scope import Scope
from flask_krm.stream import SharedProjections, StreamEngine, feed_each
from flask_krm.versions import Ordering
from tests.test_stream_properties import actions, history

SCOPE = Scope(target="demo", version="v1", resource="configmaps", namespace="app")
RAW, FULL, SPEC = PROJECTIONS


def cm(uid: str, rv: str, value: str = "v") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"uid": uid, "name": f"cm-{uid}", "namespace": "app", "resourceVersion": rv},
        "data": {"k": value},
        "status": {"s": value},
    }


def secret(rv: str, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"uid": "s1", "name": "creds", "namespace": "app", "resourceVersion": rv},
        "data": {"token": token},
    }


def feed(engines: Iterable[StreamEngine], op: SourceOp) -> list[list[Event]]:
    return [engine.feed(op) for engine in engines]


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[Any, ...]]:
    """Record every call of ``flask_krm.stream.<name>`` (still calling through)."""
    calls: list[tuple[Any, ...]] = []
    original: Callable[..., Any] = getattr(flask_krm.stream, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(flask_krm.stream, name, wrapper)
    return calls


def test_engines_of_one_projection_hand_out_the_same_event_and_bytes() -> None:
    shared = SharedProjections()
    engines = [StreamEngine(SCOPE, FULL, shared=shared) for _ in range(3)]
    for op in (Snapshot([cm("a", "1"), cm("b", "2")]), Change("MODIFIED", cm("a", "3", "w"))):
        for position in zip(*feed(engines, op)):
            assert all(event == position[0] for event in position)
            if isinstance(position[0], Upsert):
                assert all(event is position[0] for event in position), "one event object, shared"
                pair = shared.pair(position[0])
                assert pair is not None and pair[0] is position[0]
                assert pair[1] == encode_body(position[0])
                assert all(shared.pair(event) is pair for event in position), "one body, shared"


def test_each_object_is_projected_and_digested_once_per_projection(monkeypatch: pytest.MonkeyPatch) -> None:
    projected = counting(monkeypatch, "project")
    digested = counting(monkeypatch, "content_key")
    shared = SharedProjections()
    engines = [StreamEngine(SCOPE, projection, shared=shared) for projection in PROJECTIONS for _ in range(4)]
    objects = [cm(str(n), str(10 + n)) for n in range(5)]
    feed(engines, Snapshot(objects))
    assert digested == [], "a snapshot compares with nothing: no content key is needed yet"
    change = cm("0", "20", "w")
    feed(engines, Change("MODIFIED", change))
    late = [StreamEngine(SCOPE, projection, shared=shared) for projection in PROJECTIONS]
    feed(late, Snapshot(objects[1:] + [change]))  # a joiner's snapshot: the same objects again
    feed(engines + late, Change("MODIFIED", change))  # a replay: suppressed everywhere
    assert sorted((id(raw), name) for raw, name in projected) == sorted(
        (id(raw), name) for raw in objects + [change] for name in PROJECTIONS
    ), "once per object and projection"
    # the change was compared with what was delivered before: both digested, once per projection
    assert len(digested) == 2 * len(PROJECTIONS)
    assert len({id(args[0]) for args in digested}) == len(digested)


def test_engines_without_shared_projections_project_per_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    projected = counting(monkeypatch, "project")
    engines = [StreamEngine(SCOPE, FULL) for _ in range(3)]
    feed(engines, Snapshot([cm("a", "1")]))
    assert len(projected) == 3, "the counting wrapper sees every projection"


def test_a_late_joiner_starts_its_own_revisions_at_1() -> None:
    shared = SharedProjections()
    early = [StreamEngine(SCOPE, FULL, shared=shared) for _ in range(2)]
    feed(early, Snapshot([secret("1", "a")]))
    rotated = secret("2", "b")
    [first, second] = feed(early, Change("MODIFIED", rotated))
    assert first[0] is second[0] and first[0].redacted == (Redaction("/data/token", 2),)  # type: ignore[union-attr]

    joiner = StreamEngine(SCOPE, FULL, shared=shared)
    [reset, joined, synced] = joiner.feed(Snapshot([rotated]))
    assert isinstance(joined, Upsert) and joined.redacted == (Redaction("/data/token", 1),)
    assert joined.object is first[0].object, "the projection is shared"  # type: ignore[union-attr]
    joined_pair, early_pair = shared.pair(joined), shared.pair(first[0])
    assert joined_pair is not None and early_pair is not None
    assert b'"rev":1' in joined_pair[1] and b'"rev":2' in early_pair[1]

    again = feed([*early, joiner], Change("MODIFIED", secret("3", "c")))
    assert [getattr(events[0], "redacted", None) for events in again] == [
        (Redaction("/data/token", 3),),
        (Redaction("/data/token", 3),),
        (Redaction("/data/token", 2),),
    ]
    assert again[0][0] is again[1][0] and again[2][0] is not again[0][0]


def test_revisions_survive_a_resync_of_a_sharing_engine_and_stay_its_own() -> None:
    shared = SharedProjections()
    resynced, fresh = StreamEngine(SCOPE, FULL, shared=shared), StreamEngine(SCOPE, FULL, shared=shared)
    resynced.feed(Snapshot([secret("1", "a")]))
    resynced.feed(ContinuityLost())
    rotated = Snapshot([secret("2", "b")])
    [carried, _] = resynced.feed(rotated)
    [_, first_sight, _] = fresh.feed(rotated)
    assert isinstance(carried, Upsert) and carried.redacted == (Redaction("/data/token", 2),)
    assert isinstance(first_sight, Upsert) and first_sight.redacted == (Redaction("/data/token", 1),)


def test_nothing_crosses_projections() -> None:
    shared = SharedProjections()
    full, raw = StreamEngine(SCOPE, FULL, shared=shared), StreamEngine(SCOPE, RAW, shared=shared)
    obj = secret("1", "aHVudGVyMg==")
    [[_, hidden, _], [_, visible, _]] = feed([full, raw], Snapshot([obj]))
    assert isinstance(hidden, Upsert) and isinstance(visible, Upsert)
    assert "data" not in hidden.object and visible.object["data"] == {"token": "aHVudGVyMg=="}
    hidden_pair, visible_pair = shared.pair(hidden), shared.pair(visible)
    assert hidden_pair is not None and visible_pair is not None
    assert b"aHVudGVyMg" not in hidden_pair[1] and b"aHVudGVyMg" in visible_pair[1]


def test_forget_and_retain_drop_what_was_made_of_an_object() -> None:
    shared = SharedProjections()
    engine = StreamEngine(SCOPE, FULL, shared=shared)
    [_, a, b, _] = engine.feed(Snapshot([cm("a", "1"), cm("b", "2")]))
    assert "a" in shared and "b" in shared and len(shared) == 2
    shared.forget("a")
    shared.retain({"c"})
    assert len(shared) == 0 and shared.pair(a) is None and shared.pair(b) is None
    assert shared.pair(engine.feed(ContinuityLost())[0]) is None, "only upserts have shared bodies"


def test_a_newer_object_under_a_uid_replaces_the_older_one() -> None:
    shared = SharedProjections()
    engine = StreamEngine(SCOPE, FULL, shared=shared)
    [_, old, _] = engine.feed(Snapshot([cm("a", "1")]))
    [new] = engine.feed(Change("MODIFIED", cm("a", "2", "w")))
    assert len(shared) == 1 and shared.pair(old) is None and shared.pair(new) is not None


def test_changes_prepared_earlier_stay_usable_until_their_object_is_discarded() -> None:
    """What the hub's event log relies on: a reader may take a change after newer changes of the
    same uid, or its deletion, were prepared; discard_stale frees only objects no longer current."""
    shared = SharedProjections()
    early, late = StreamEngine(SCOPE, FULL, shared=shared), StreamEngine(SCOPE, FULL, shared=shared)
    for engine in (early, late):
        engine.feed(Snapshot([cm("a", "1")]))
    first = shared.prepare(Change("MODIFIED", cm("a", "2", "first")), keep_replaced=True)
    second = shared.prepare(Change("MODIFIED", cm("a", "3", "second")), keep_replaced=True)
    assert first is not None and second is not None
    assert shared.prepare(Change("DELETED", cm("a", "4"))) is None, "only upserts are prepared"
    [one] = early.feed_change(first)
    [two] = early.feed_change(second)
    assert isinstance(one, Upsert) and one.object["data"] == {"k": "first"}
    assert isinstance(two, Upsert) and two.object["data"] == {"k": "second"}
    assert shared.pair(one) is not None and shared.pair(two) is not None
    assert late.feed_change(first) == [one], "the same shared event for an engine in the same state"
    shared.discard_stale(second)
    assert shared.pair(two) is not None, "still the current object of its uid"
    shared.discard_stale(first)
    shared.discard_stale(first)  # idempotent
    assert shared.pair(one) is None, "replaced: what was made of it is gone"
    shared.release("a")
    assert "a" not in shared and shared.pair(two) is not None, "released, not discarded"
    shared.discard_stale(second)
    assert shared.pair(two) is None


def test_feed_change_is_feed_for_engines_that_cannot_take_the_shortcut() -> None:
    shared = SharedProjections()
    change = shared.prepare(Change("ADDED", cm("b", "5")))
    assert change is not None
    awaiting = StreamEngine(SCOPE, FULL, shared=shared)  # no snapshot yet
    elsewhere = StreamEngine(SCOPE, FULL, shared=SharedProjections())
    elsewhere.feed(Snapshot([]))
    other_namespace = StreamEngine(
        Scope(target="demo", version="v1", resource="configmaps", namespace="other"), FULL, shared=shared
    )
    other_namespace.feed(Snapshot([]))
    assert awaiting.feed_change(change) == []
    assert [e.type for e in elsewhere.feed_change(change)] == ["added"]
    assert other_namespace.feed_change(change) == []


# ------------------------------------------------------------------------------ properties --

JOINERS = st.lists(
    st.tuples(st.integers(0, 40), st.sampled_from(PROJECTIONS), st.sampled_from(list(Ordering))),
    min_size=1,
    max_size=6,
)


@given(st.lists(actions(), max_size=25), JOINERS)
def test_sharing_changes_no_event(steps: list[tuple[Any, ...]], joiners: list[tuple[int, str, Ordering]]) -> None:
    """Engines joining at any point, under any projection and ordering, fed one by one or together
    (``feed_each``), emit exactly what engines of their own emit (events and bytes), and the
    engines of one projection that joined together hand out the same event objects."""
    ops, _ = history(steps, final_announced=False)
    shared = SharedProjections()
    # each joiner twice over (two connections in one state), and a reference engine of its own
    sharing = [
        [StreamEngine(SCOPE, projection, ordering, shared=shared) for _ in range(2)]
        for _, projection, ordering in joiners
    ]
    alone = [StreamEngine(SCOPE, projection, ordering) for _, projection, ordering in joiners]
    for position, op in enumerate(ops):
        connected = [n for n, (joined, _, _) in enumerate(joiners) if position >= joined]
        # the first of each pair fed alone, the second ones (and the references) all together
        together = feed_each([sharing[n][1] for n in connected] + [alone[n] for n in connected], op)
        for n, second, expected in zip(connected, together, together[len(connected) :]):
            first = sharing[n][0].feed(op)
            assert first == expected and second == expected
            assert all(a is b for a, b in zip(first, second) if isinstance(a, Upsert))
            for event in first:
                if isinstance(event, Upsert):
                    body = shared.pair(event)
                    assert body is not None and body[1] == encode_body(event)


def test_feed_each_is_feed_per_engine_whatever_the_engine() -> None:
    shared = SharedProjections()
    closed = StreamEngine(SCOPE, FULL, shared=shared)
    engines = [
        StreamEngine(SCOPE, FULL, shared=shared),
        StreamEngine(SCOPE, FULL),  # no shared projections
        StreamEngine(SCOPE, FULL, shared=shared),  # never snapshotted: awaiting
        closed,
        StreamEngine(Scope(target="demo", version="v1", resource="configmaps", namespace="other"), FULL, shared=shared),
        StreamEngine(SCOPE, FULL, Ordering.LENIENT, shared=shared),
    ]
    snapshot = Snapshot([cm("a", "1")])
    for engine in engines[:2] + engines[3:]:
        engine.feed(snapshot)
    closed.feed(Change("MODIFIED", cm("a", "")))  # strict: an empty resourceVersion ends it
    assert closed.closed
    events = feed_each(engines, Change("MODIFIED", cm("a", "", "w")))
    assert [[getattr(e, "code", e.type) for e in each] for each in events] == [
        ["INTERNAL"],
        ["INTERNAL"],
        [],
        [],
        [],
        ["modified"],
    ]
    assert engines[0].closed and not engines[5].closed
