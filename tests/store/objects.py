"""Small KRM objects and event helpers for the store's unit tests."""

from __future__ import annotations

import copy
from typing import Any

from flask_krm.events import Deleted, Identity, Redaction, Reset, Synced, Upsert
from flask_krm.store import LiveResourceStore

CM_UID = "cm-1"


def configmap(version: str = "1", uid: str = CM_UID, **data: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "uid": uid,
            "name": "app",
            "namespace": "demo",
            "resourceVersion": version,
            "labels": {"app.kubernetes.io/name": "shop"},
            "annotations": {"note": "keep"},
        },
        "data": data or {"level": "info", "replicas": "3"},
    }


def deployment(version: str = "1", containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"uid": "deploy-1", "name": "web", "namespace": "demo", "resourceVersion": version},
        "spec": {
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": containers
                    if containers is not None
                    else [{"name": "web", "image": "web:1"}, {"name": "log", "image": "log:1"}]
                }
            },
        },
        "status": {"readyReplicas": 1},
    }


def with_changes(obj: dict[str, Any], version: str, changes: dict[tuple[Any, ...], Any]) -> dict[str, Any]:
    """A copy of ``obj`` at ``version`` with each path set (or removed, for ``...``)."""
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = version
    for path, value in changes.items():
        node = out
        for segment in path[:-1]:
            node = node[segment]
        if value is ...:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return out


def added(obj: dict[str, Any], *redacted: Redaction) -> Upsert:
    return Upsert("added", obj, tuple(redacted))


def modified(obj: dict[str, Any], *redacted: Redaction) -> Upsert:
    return Upsert("modified", obj, tuple(redacted))


def deleted(obj: dict[str, Any]) -> Deleted:
    meta = obj["metadata"]
    return Deleted(Identity(meta["uid"], obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")))


def reset() -> Reset:
    return Reset({"target": "demo"}, "krm-full/v1")


def store_with(*objects: dict[str, Any], store: LiveResourceStore | None = None) -> LiveResourceStore:
    """A store that has completed a snapshot of ``objects``."""
    store = store or LiveResourceStore()
    store.apply(reset())
    for obj in objects:
        store.apply(added(obj))
    store.apply(Synced())
    return store
