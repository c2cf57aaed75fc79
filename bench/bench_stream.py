"""The pure stream core: event encoding and the engine's cost per upstream event.

Baselines, measured in the same run:

- ``encode``: the original encoder (a JSON round trip to sort the object's keys) vs
  :func:`flask_krm.events.encode_body`.
- ``engine-*``: ``json.dumps(obj, sort_keys=True)`` of the same object (one C serialization, the
  floor of any exact suppression) vs one :meth:`StreamEngine.feed` of a ``MODIFIED`` Deployment;
  ``delivered`` under ``krm-full/v1`` (a status change: emitted), ``suppressed`` under
  ``krm-spec/v1`` (the same change: no event).
- ``fanout-shared``: the cost per subscriber of one ``MODIFIED`` Deployment fanned out to
  :data:`SUBSCRIBERS` engines: each engine fed on its own (``feed``, no shared projections: every
  engine projects, digests and encodes) vs engines sharing :class:`SharedProjections`, fed together
  (``feed_each``) with the shared body looked up, as the hub does.
- ``snapshot-shared``: the cost per object of a joiner's snapshot of :data:`SNAPSHOT_OBJECTS`
  ConfigMaps whose projections are already shared, framed for SSE, vs ``json.dumps`` of the objects.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask_krm.events import Upsert, dumps, encode_body, frame, to_json
from flask_krm.ops import Change, Snapshot
from flask_krm.projection import project
from flask_krm.scope import Scope
from flask_krm.stream import SharedProjections, StreamEngine, feed_each

SCOPE = Scope(group="apps", version="v1", resource="deployments", namespace="app")
SUBSCRIBERS = 1000
SNAPSHOT_OBJECTS = 10_000


def _deployment(rv: int, ready: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "uid": "deploy-web-0001",
            "name": "web",
            "namespace": "app",
            "resourceVersion": str(rv),
            "generation": 4,
            "labels": {"app.kubernetes.io/name": "web"},
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:status": {}}}
            ],
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "ghcr.io/configbutler/web:v1.2.3",
                            "ports": [{"containerPort": 8080}],
                        }
                    ]
                },
            },
        },
        "status": {
            "observedGeneration": 4,
            "replicas": 2,
            "readyReplicas": ready,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}],
        },
    }


def _round_trip_encode(event: Upsert) -> bytes:
    wire = to_json(event)
    wire["object"] = json.loads(json.dumps(wire["object"], sort_keys=True))
    return dumps(wire)[1:].encode()


def _per_call_us(fn: Callable[[], object], n: int, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


def _feed_us(projection: str, n: int, repeats: int = 5) -> float:
    ops = [Change("MODIFIED", _deployment(5000 + i, i % 7)) for i in range(n)]
    best = float("inf")
    for _ in range(repeats):
        engine = StreamEngine(SCOPE, projection)
        engine.feed(Snapshot([_deployment(4999, 6)]))
        start = time.perf_counter()
        for op in ops:
            engine.feed(op)
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


def _fanout_us(n: int, shared: bool, subscribers: int = SUBSCRIBERS) -> float:
    """Per subscriber and event: ``n`` changes fed to ``subscribers`` engines."""
    ops = [Change("MODIFIED", _deployment(5000 + i, i % 7)) for i in range(n)]
    projections = SharedProjections() if shared else None
    engines = [StreamEngine(SCOPE, "krm-full/v1", shared=projections) for _ in range(subscribers)]
    first = Snapshot([_deployment(4999, 6)])
    for engine in engines:
        engine.feed(first)
    start = time.perf_counter()
    for op in ops:
        if projections is not None:
            for events in feed_each(engines, op):
                for event in events:
                    projections.pair(event)
        else:
            for engine in engines:
                for event in engine.feed(op):
                    encode_body(event)
    return (time.perf_counter() - start) / (n * subscribers) * 1e6


def _configmap(n: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "uid": f"cm-{n:05d}-uid",
            "name": f"cm-{n:05d}",
            "namespace": "app",
            "resourceVersion": str(1000 + n),
            "labels": {"app": "bench", "shard": str(n % 7)},
            "managedFields": [{"manager": "bench", "operation": "Update", "fieldsV1": {"f:data": {}}}],
        },
        "data": {"index": str(n), "text": "x" * 200},
    }


def _snapshot_us(objects: list[dict[str, Any]], repeats: int = 3) -> tuple[float, float]:
    """Per object: a joiner's snapshot with the projections already shared, and ``json.dumps``."""
    scope = Scope(version="v1", resource="configmaps", namespace="app")
    projections = SharedProjections()
    StreamEngine(scope, shared=projections).feed(Snapshot(objects))  # the first subscriber
    joiner, dumps_best = float("inf"), float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        events = StreamEngine(scope, shared=projections).feed(Snapshot(objects))
        chunk = b"".join(
            [frame(seq, pair[1]) for seq, event in enumerate(events, 1) if (pair := projections.pair(event))]
        )
        joiner = min(joiner, time.perf_counter() - start)
        assert chunk.count(b"\n\n") == len(objects)
        start = time.perf_counter()
        json.dumps(objects)
        dumps_best = min(dumps_best, time.perf_counter() - start)
    return joiner / len(objects) * 1e6, dumps_best / len(objects) * 1e6


def run(quick: bool) -> Iterable[dict[str, Any]]:
    n = 500 if quick else 5000
    obj = _deployment(4000, 1)
    event = Upsert("modified", project(obj, "krm-full/v1").object, ())
    assert _round_trip_encode(event) == encode_body(event)
    baseline = _per_call_us(lambda: _round_trip_encode(event), n)
    value = _per_call_us(lambda: encode_body(event), n)
    yield {
        "case": "encode",
        "unit": "us/event",
        "baseline": round(baseline, 2),
        "value": round(value, 2),
        "ratio": round(value / baseline, 3),
        "bytes": len(encode_body(event)),
    }
    floor = _per_call_us(lambda: json.dumps(obj, sort_keys=True), n)
    for case, projection in (("engine-delivered", "krm-full/v1"), ("engine-suppressed", "krm-spec/v1")):
        value = _feed_us(projection, n)
        yield {
            "case": case,
            "unit": "us/op",
            "baseline": round(floor, 2),
            "value": round(value, 2),
            "ratio": round(value / floor, 3),
        }
    rounds = 5 if quick else 20
    alone, together = _fanout_us(rounds, shared=False), _fanout_us(rounds, shared=True)
    yield {
        "case": "fanout-shared",
        "unit": "us/subscriber/event",
        "subscribers": SUBSCRIBERS,
        "baseline": round(alone, 2),
        "value": round(together, 2),
        "ratio": round(together / alone, 3),
    }
    objects = [_configmap(i) for i in range(SNAPSHOT_OBJECTS // 10 if quick else SNAPSHOT_OBJECTS)]
    joiner, dumps_us = _snapshot_us(objects)
    yield {
        "case": "snapshot-shared",
        "unit": "us/object",
        "objects": len(objects),
        "baseline": round(dumps_us, 3),
        "value": round(joiner, 3),
        "ratio": round(joiner / dumps_us, 3),
    }
