"""Properties of the engine over random upstream histories.

A simulated upstream mutates a small set of objects and reports (or loses, replays, degrades) the
changes as source operations; the history always ends in a completed snapshot. A consumer that
applies the protocol's reducer (reset / upsert replaces / deleted drops / synced prunes the unseen)
must then hold exactly the projected server state, whatever happened before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from flask_krm.events import (
    Deleted,
    Event,
    Reset,
    StreamError,
    Synced,
    Upsert,
    encode_body,
    frame,
    from_json,
)
from flask_krm.ops import Bookmark, Change, ContinuityLost, Failure, Snapshot, SourceOp
from flask_krm.projection import PROJECTIONS, project
from flask_krm.scope import Scope
from flask_krm.sse import EventDecoder
from flask_krm.stream import StreamEngine
from flask_krm.versions import Ordering, compare

SCOPE = Scope(target="demo", version="v1", resource="configmaps", namespace="app")
KINDS = {"alpha": "ConfigMap", "beta": "ConfigMap", "token": "Secret"}
NAMES = tuple(KINDS)


@dataclass
class Upstream:
    """A tiny API server: objects by name, a global resourceVersion counter, every past state."""

    rv: int = 100
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    generation: int = 0

    def next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def make(self, name: str, kind: str, data: dict[str, str], status: int, uid: str | None = None) -> dict[str, Any]:
        if uid is None:
            self.generation += 1
            uid = f"{name}-{self.generation}"
        obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": {
                "uid": uid,
                "name": name,
                "namespace": "app",
                "resourceVersion": self.next_rv(),
                "managedFields": [{"manager": "test", "time": self.rv}],
            },
            "data": data,
            "status": {"observed": status},
        }
        self.history.setdefault(name, []).append(obj)
        return obj

    def snapshot(self) -> Snapshot:
        return Snapshot([self.objects[n] for n in sorted(self.objects)])


# Writes and replays of older states dominate; the rest disturb the stream now and then.
KIND_WEIGHTS = (
    ("write",) * 4
    + ("replay",) * 3
    + (
        "delete",
        "bookmark",
        "relist",
        "partial",
        "tombstone",
        "unavailable",
        "error-event",
    )
)


@st.composite
def actions(draw: st.DrawFn) -> tuple[Any, ...]:
    kind = draw(st.sampled_from(KIND_WEIGHTS))
    if kind == "write":
        data = draw(st.dictionaries(st.sampled_from(["a", "b", "c/d"]), st.sampled_from(["1", "2"]), max_size=2))
        return (
            kind,
            draw(st.sampled_from(NAMES)),
            data,
            draw(st.integers(0, 2)),
            draw(st.booleans()),
            draw(st.booleans()),
        )
    if kind == "replay":
        return (kind, draw(st.sampled_from(NAMES)), draw(st.integers(1, 3)))
    if kind == "delete":
        return (kind, draw(st.sampled_from(NAMES)), draw(st.booleans()))
    if kind == "relist":
        return (kind, draw(st.booleans()))
    if kind in ("partial", "tombstone"):
        return (kind, draw(st.sampled_from(NAMES)))
    return (kind,)


def history(steps: list[tuple[Any, ...]], final_announced: bool) -> tuple[list[SourceOp], Upstream]:
    """Source operations for ``steps``, ending with a completed snapshot of the server state."""
    up = Upstream()
    for name in NAMES:
        up.objects[name] = up.make(name, KINDS[name], {"a": "0"}, 0)
    ops: list[SourceOp] = [up.snapshot()]
    for step in steps:
        kind = step[0]
        if kind == "write":
            _, name, data, status, delivered, recreate = step
            current = up.objects.get(name)
            uid = current["metadata"]["uid"] if current else None
            if current and recreate:  # deleted and created again under the same name: a new uid
                del up.objects[name]
                ops.append(Change("DELETED", current))
                uid = None
            obj = up.make(name, KINDS[name], data, status, uid)
            up.objects[name] = obj
            if delivered:  # an undelivered change is one the final snapshot must repair
                ops.append(Change("MODIFIED" if uid else "ADDED", obj))
        elif kind == "delete":
            _, name, delivered = step
            if name in up.objects:
                gone = dict(up.objects.pop(name))
                gone["metadata"] = {**gone["metadata"], "resourceVersion": up.next_rv()}
                if delivered:
                    ops.append(Change("DELETED", gone))
        elif kind == "replay":  # a state ``step[2]`` writes old, delivered again
            past = up.history[step[1]]
            ops.append(Change("MODIFIED", past[max(0, len(past) - 1 - step[2])]))
        elif kind == "bookmark":
            ops.append(Bookmark(str(up.rv)))
        elif kind == "relist":
            if step[1]:
                ops.append(ContinuityLost())
            ops.append(up.snapshot())
        elif kind == "partial" and step[1] in up.objects:
            meta = up.objects[step[1]]["metadata"]
            ops.append(
                Change(
                    "MODIFIED",
                    {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": meta},
                )
            )
            ops.append(up.snapshot())  # the engine asked for one; a source delivers it next
        elif kind == "tombstone" and step[1] in up.objects:
            gone = up.objects.pop(step[1])
            meta = {k: v for k, v in gone["metadata"].items() if k != "uid"}
            ops.append(Change("DELETED", {**gone, "metadata": meta}))
            ops.append(up.snapshot())
        elif kind == "unavailable":
            ops.append(Failure("UPSTREAM_UNAVAILABLE", "connection refused", terminal=False, retry_after_ms=100))
        elif kind == "error-event":
            ops.append(Change("ERROR", {"kind": "Status", "code": 410}))  # type: ignore[arg-type]
            ops.append(up.snapshot())
    if final_announced:
        ops.append(ContinuityLost())
    ops.append(up.snapshot())
    return ops, up


@dataclass
class Consumer:
    """The protocol's reducer, as every conforming consumer applies it."""

    held: dict[str, Any] = field(default_factory=dict)
    redacted: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seen: set[str] | None = None

    def apply(self, event: Event) -> None:
        if isinstance(event, Reset):
            self.seen = set()
        elif isinstance(event, Upsert):
            self.held[event.uid] = event.object
            self.redacted[event.uid] = tuple(r.path for r in event.redacted)
            if self.seen is not None:
                self.seen.add(event.uid)
        elif isinstance(event, Deleted):
            self.held.pop(event.uid, None)
            self.redacted.pop(event.uid, None)
        elif isinstance(event, Synced) and self.seen is not None:
            for uid in set(self.held) - self.seen:
                del self.held[uid]
                del self.redacted[uid]
            self.seen = None


@given(
    st.lists(actions(), max_size=25),
    st.booleans(),
    st.sampled_from(PROJECTIONS),
    st.sampled_from(list(Ordering)),
)
def test_a_completed_snapshot_converges_the_consumer_on_the_server(
    steps: list[tuple[Any, ...]], final_announced: bool, projection: str, ordering: Ordering
) -> None:
    ops, up = history(steps, final_announced)
    engine = StreamEngine(SCOPE, projection, ordering)
    consumer = Consumer()
    decoder = EventDecoder()
    high_water: dict[str, str] = {}
    real_states = [project(obj, projection).object for past in up.history.values() for obj in past]
    seq = 0
    for op in ops:
        if isinstance(op, Snapshot):
            listed = {obj["metadata"]["uid"]: project(obj, projection).object for obj in op.objects}
        for event in engine.feed(op):
            seq += 1
            # every event survives its own wire encoding
            (decoded,) = decoder.feed(frame(seq, encode_body(event)))
            assert decoded["seq"] == seq and from_json(decoded) == event
            if isinstance(event, Reset):
                high_water.clear()
            elif isinstance(event, Upsert):
                assert event.object in real_states  # never a husk, never anything invented
                rv = event.object["metadata"]["resourceVersion"]
                if event.uid in high_water:  # per-object monotonicity within a cycle
                    assert compare(rv, high_water[event.uid]) in (0, 1)
                high_water[event.uid] = rv
            elif isinstance(event, StreamError):
                assert not event.terminal
            consumer.apply(event)
            if isinstance(event, Synced):  # a completed cycle holds exactly what was listed
                assert consumer.held == listed
    assert not engine.closed and engine.synced
    expected = {obj["metadata"]["uid"]: project(obj, projection) for obj in up.objects.values()}
    assert consumer.held == {uid: p.object for uid, p in expected.items()}
    assert consumer.redacted == {uid: p.redacted_paths for uid, p in expected.items()}


@given(st.lists(actions(), max_size=25))
def test_the_engine_emits_nothing_a_consumer_already_sees(steps: list[tuple[Any, ...]]) -> None:
    """Within a cycle, two consecutive upserts of one uid always differ in visible content."""
    ops, _ = history(steps, final_announced=False)
    engine = StreamEngine(SCOPE, "krm-spec/v1")
    last: dict[str, Any] = {}
    for op in ops:
        for event in engine.feed(op):
            if isinstance(event, Reset):
                last.clear()
            elif isinstance(event, Deleted):
                last.pop(event.uid, None)
            elif isinstance(event, Upsert):
                content = {
                    **event.object,
                    "metadata": {k: v for k, v in event.object["metadata"].items() if k != "resourceVersion"},
                }
                assert last.get(event.uid) != (content, event.redacted)
                last[event.uid] = (content, event.redacted)
