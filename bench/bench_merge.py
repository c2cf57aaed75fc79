"""Merge and patch cost of the draft store, next to ``copy.deepcopy`` of the same object.

For objects of 100, 1,000 and 10,000 leaves, with a few edits in the draft:

- ``merge-few``: applying a ``modified`` event that changes a few leaves (the common case: a
  controller bumps a field), including the copy of the incoming object the store must make;
- ``merge-all``: applying a ``modified`` event in which every leaf changed (the worst case);
- ``patch``: building the merge patch (changes derived from draft vs server).

Each result carries the baseline (one ``copy.deepcopy`` of the same object, measured in the same
run) and the ratio; the target is a merge costing at most three deep copies.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from flask_krm.events import Reset, Synced, Upsert
from flask_krm.store import LiveResourceStore

UID = "bench-1"


def make_object(leaves: int, version: int, changed: Callable[[int], bool]) -> dict[str, Any]:
    """A Deployment-like object with ``leaves`` leaves under ``spec`` (groups of ten) and a status."""
    groups = {
        f"group-{g}": {
            f"field-{i}": (f"v{version}-{g}-{i}" if changed(g * 10 + i) else f"value-{g}-{i}")
            for i in range(min(10, leaves - g * 10))
        }
        for g in range((leaves + 9) // 10)
    }
    return {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {
            "uid": UID,
            "name": "thing",
            "namespace": "bench",
            "resourceVersion": str(version),
            "labels": {"app.kubernetes.io/name": "bench"},
        },
        "spec": groups,
        "status": {"observedGeneration": version},
    }


def best_of(repeats: int, number: int, action: Callable[[int], object]) -> float:
    """Seconds per call: the fastest of ``repeats`` runs of ``number`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(number):
            action(i)
        best = min(best, (time.perf_counter() - start) / number)
    return best


def edited_store(obj: dict[str, Any]) -> LiveResourceStore:
    store = LiveResourceStore()
    store.apply(Reset({}, "krm-full/v1"))
    store.apply(Upsert("added", obj))
    store.apply(Synced())
    for g in range(0, len(obj["spec"]), max(1, len(obj["spec"]) // 5)):
        store.set_value(UID, ("spec", f"group-{g}", "field-0"), "edited")
    return store


def measure(leaves: int, repeats: int) -> Iterator[dict[str, Any]]:
    number = max(3, 20_000 // leaves)
    base = make_object(leaves, 1, lambda i: False)
    deepcopy = best_of(repeats, number, lambda i: copy.deepcopy(base))

    few = [make_object(leaves, 2 + k, lambda i: i % 97 == 1) for k in range(2)]
    store = edited_store(base)
    merge_few = best_of(repeats, number, lambda i: store.apply(Upsert("modified", few[i % 2])))

    every = [make_object(leaves, 10 + k, lambda i: True) for k in range(2)]
    store = edited_store(base)
    merge_all = best_of(repeats, number, lambda i: store.apply(Upsert("modified", every[i % 2])))

    patch = best_of(repeats, number, lambda i: store.patch(UID))
    assert store.patch(UID) is not None

    for name, seconds in (("merge-few", merge_few), ("merge-all", merge_all), ("patch", patch)):
        yield {
            "case": name,
            "leaves": leaves,
            "seconds": round(seconds, 7),
            "baseline": "copy.deepcopy",
            "baseline_seconds": round(deepcopy, 7),
            "ratio": round(seconds / deepcopy, 3),
        }


def run(quick: bool) -> Iterable[dict[str, Any]]:
    """Results for 100, 1,000 and 10,000 leaves (quick: fewer repeats)."""
    for leaves in (100, 1_000, 10_000):
        yield from measure(leaves, repeats=2 if quick else 5)
