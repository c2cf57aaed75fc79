"""Demo objects and a tiny controller that keeps them alive.

``seed()`` creates the demo namespaces and objects. Each ``step()`` moves every Deployment's
rollout one pod further (status written through ``/status`` as the deployment controller does),
scales the ``worker`` Deployment now and then, and, if asked, makes a competing edit to a
ConfigMap. ``start()`` runs ``step()`` every ``tick`` seconds in a greenlet.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from ... import concurrency
from . import catalog
from .identities import DEMO_NAMESPACES, namespace_rbac_objects
from .registry import Registry, now
from .store import Object

_HASH_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
DEMO_MANAGER = "krm-demo"
CONTROLLER_MANAGER = "kube-controller-manager"
SCALE_EVERY = 15
EDIT_EVERY = 9


def template_hash(template: Any) -> str:
    """A pod-template-hash in the style of the deployment controller (FNV-1a, safe alphabet)."""
    value = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True).encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    digits = ""
    while True:
        value, digit = divmod(value, len(_HASH_ALPHABET))
        digits += _HASH_ALPHABET[digit]
        if not value:
            return digits


def _deployment(name: str, namespace: str, replicas: int, image: str) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": name, "image": image, "ports": [{"containerPort": 8080, "protocol": "TCP"}]}
                    ]
                },
            },
        },
    }


def demo_objects() -> list[Object]:
    """Everything ``seed()`` creates, in creation order."""
    first, second = DEMO_NAMESPACES
    objects: list[Object] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in DEMO_NAMESPACES
    ]
    for namespace in DEMO_NAMESPACES:
        objects += namespace_rbac_objects(namespace)
    objects += [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app-config", "namespace": first, "labels": {"app": "web"}},
            "data": {"greeting": "hello", "log-level": "info", "max-connections": "100"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "feature-flags", "namespace": first, "labels": {"app": "web"}},
            "data": {"new-checkout": "false", "dark-mode": "true"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app-config", "namespace": second, "labels": {"app": "web"}},
            "data": {"greeting": "hello from staging", "log-level": "debug"},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "db-credentials", "namespace": first},
            "type": "Opaque",
            "stringData": {"username": "app", "password": "correct-horse-battery-staple"},
        },
        _deployment("web", first, 2, "registry.k8s.io/pause:3.10"),
        _deployment("worker", first, 1, "registry.k8s.io/pause:3.10"),
        _deployment("web", second, 1, "registry.k8s.io/pause:3.10"),
        {
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "fl-1", "namespace": first},
            "spec": {"reference": "fl-2", "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]},
        },
        {
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "fl-2", "namespace": first},
            "spec": {"reference": "", "ports": [{"name": "http", "port": 8080}]},
        },
    ]
    return objects


@dataclass
class _Rollout:
    """What the controller remembers of one Deployment: template hash, revision, ready pods of old and new template."""

    template_hash: str
    revision: int = 1
    old_ready: int = 0
    new_ready: int = 0


@dataclass
class DemoController:
    """Seeds the demo objects and plays deployment controller (and a competing editor) on a tick."""

    registry: Registry
    tick: float | None = 1.0
    competing_edits: bool = False
    steps: int = 0
    _rollouts: dict[str, _Rollout] = field(default_factory=dict)
    _greenlet: concurrency.Greenlet | None = None

    def seed(self) -> None:
        """Create the demo namespaces, RBAC bindings and objects."""
        by_kind = {t.kind: t for t in catalog.DEFAULT_CATALOG.types}
        for obj in demo_objects():
            resource = by_kind[obj["kind"]]
            self.registry.create(resource, obj["metadata"].get("namespace", ""), obj, DEMO_MANAGER)

    def start(self) -> None:
        """Run ``step()`` every ``tick`` seconds (not at all when ``tick`` is ``None``)."""
        if self.tick is not None:
            self._greenlet = concurrency.spawn(self._run, self.tick)

    def stop(self) -> None:
        """Stop the periodic steps."""
        if self._greenlet is not None:
            self._greenlet.kill()
            self._greenlet = None

    def _run(self, tick: float) -> None:
        while True:
            concurrency.sleep(tick)
            self.step()

    def step(self) -> None:
        """One controller pass: roll every Deployment on, scale ``worker`` and edit a ConfigMap when due."""
        self.steps += 1
        for deployment in self.registry.store.items(catalog.DEPLOYMENTS):
            if not deployment["metadata"].get("deletionTimestamp"):
                self._roll(deployment)
        if self.steps % SCALE_EVERY == 0:
            worker = self.registry.store.get(catalog.DEPLOYMENTS, DEMO_NAMESPACES[0], "worker")
            if worker is not None:
                replicas = 3 if worker["spec"]["replicas"] == 1 else 1
                self.registry.patch(
                    catalog.DEPLOYMENTS,
                    DEMO_NAMESPACES[0],
                    "worker",
                    {"spec": {"replicas": replicas}},
                    manager=DEMO_MANAGER,
                )
        if self.competing_edits and self.steps % EDIT_EVERY == 0:
            if self.registry.store.get(catalog.CONFIGMAPS, DEMO_NAMESPACES[0], "app-config") is not None:
                greeting = f"hello #{self.steps // EDIT_EVERY}"
                patch = {"data": {"greeting": greeting}}
                self.registry.patch(catalog.CONFIGMAPS, DEMO_NAMESPACES[0], "app-config", patch, manager=DEMO_MANAGER)

    def _roll(self, deployment: Object) -> None:
        """Observe a new generation (all new pods created, none ready yet), else make one more pod ready."""
        metadata, spec = deployment["metadata"], deployment["spec"]
        desired = int(spec.get("replicas", 1))
        current_hash = template_hash(spec.get("template"))
        rollout = self._rollouts.setdefault(metadata["uid"], _Rollout(current_hash))
        if deployment.get("status", {}).get("observedGeneration") != metadata.get("generation"):
            if rollout.template_hash != current_hash:
                rollout.template_hash = current_hash
                rollout.revision += 1
                rollout.old_ready, rollout.new_ready = rollout.old_ready + rollout.new_ready, 0
            rollout.new_ready = min(rollout.new_ready, desired)
        elif rollout.new_ready < desired:
            rollout.new_ready += 1
            rollout.old_ready = max(rollout.old_ready - 1, 0)
        else:
            rollout.old_ready = max(rollout.old_ready - 1, 0)
        updated = copy.deepcopy(deployment)
        annotations = updated["metadata"].setdefault("annotations", {})
        annotations["deployment.kubernetes.io/revision"] = str(rollout.revision)
        updated["status"] = self._status(deployment, rollout, desired)
        self.registry.replace(
            catalog.DEPLOYMENTS, metadata["namespace"], metadata["name"], updated, "status", manager=CONTROLLER_MANAGER
        )

    @staticmethod
    def _status(deployment: Object, rollout: _Rollout, desired: int) -> dict[str, Any]:
        name = deployment["metadata"]["name"]
        ready = rollout.old_ready + rollout.new_ready
        max_unavailable = desired // 4
        replica_set = f'ReplicaSet "{name}-{rollout.template_hash}"'
        done = rollout.new_ready == desired and rollout.old_ready == 0
        available = (
            ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
            if ready >= desired - max_unavailable
            else ("False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
        )
        progressing = (
            ("True", "NewReplicaSetAvailable", f"{replica_set} has successfully progressed.")
            if done
            else ("True", "ReplicaSetUpdated", f"{replica_set} is progressing.")
        )
        previous = {c["type"]: c for c in deployment.get("status", {}).get("conditions", [])}
        conditions = []
        for kind, (state, reason, message) in (("Available", available), ("Progressing", progressing)):
            old = previous.get(kind)
            unchanged = old is not None and (old["status"], old["reason"], old["message"]) == (state, reason, message)
            stamp = now()
            conditions.append(
                {
                    "type": kind,
                    "status": state,
                    "lastUpdateTime": old["lastUpdateTime"] if unchanged and old else stamp,
                    "lastTransitionTime": old["lastTransitionTime"] if old and old["status"] == state else stamp,
                    "reason": reason,
                    "message": message,
                }
            )
        status: dict[str, Any] = {"observedGeneration": deployment["metadata"]["generation"]}
        for key, value in (
            ("replicas", desired + rollout.old_ready),
            ("updatedReplicas", desired),
            ("readyReplicas", ready),
            ("availableReplicas", ready),
            ("unavailableReplicas", max(desired - ready, 0)),
        ):
            if value:
                status[key] = value
        status["conditions"] = conditions
        return status
