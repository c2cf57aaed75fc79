"""Workload status as Kubernetes people read it: ready/desired, availability, conditions, rollout.

Pure: no Flask, no gevent. :func:`workload_status` reads a Deployment, ReplicaSet, StatefulSet or
DaemonSet (as the API serves it, or projected with its status) into a :class:`WorkloadStatus`:
the counts, the conditions with their reasons, one health (``healthy``, ``progressing``,
``failed``) and a rollout line worded like ``kubectl rollout status``. The templates
``krm/_status.html`` (macros ``badges``, ``conditions`` and ``rollout``) draw it; a live list shows
it with a status column (``("Status", "/status", "status")``, see :data:`CELL_KINDS`).
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping
from dataclasses import dataclass

Health: t.TypeAlias = t.Literal["healthy", "progressing", "failed", "unknown"]
Tone: t.TypeAlias = t.Literal["ok", "warn", "bad", "neutral"]

CELL_KINDS: t.Final = ("status", "conditions", "rollout")
"""The list cells that draw a workload's status instead of a value: ``status`` (health, ready/
desired, available), ``conditions`` (each condition with its reason) and ``rollout`` (the rollout
line with its progress bar). Each reads the whole object; its column's pointer (conventionally
``/status``) only names it."""

HEALTH_LABELS: t.Final[Mapping[Health, str]] = {
    "healthy": "Healthy",
    "progressing": "Progressing",
    "failed": "Failed",
    "unknown": "Unknown",
}

_GOOD_WHEN_FALSE: t.Final = frozenset({"ReplicaFailure"})
"""Condition types that are bad news when True (every other type is good news when True)."""


@dataclass(frozen=True, slots=True)
class Condition:
    """One ``status.conditions`` entry."""

    type: str
    status: str
    reason: str = ""
    message: str = ""

    @property
    def tone(self) -> Tone:
        """``ok`` when the condition says what one hopes, ``bad`` when not, ``neutral`` when unknown."""
        if self.status not in ("True", "False"):
            return "neutral"
        hoped = "False" if self.type in _GOOD_WHEN_FALSE else "True"
        return "ok" if self.status == hoped else "bad"

    @property
    def failed(self) -> bool:
        """A condition that means the rollout failed (ProgressDeadlineExceeded, ReplicaFailure)."""
        return (self.type == "Progressing" and self.status == "False") or (
            self.type == "ReplicaFailure" and self.status == "True"
        )


@dataclass(frozen=True, slots=True)
class WorkloadStatus:
    """The status of a workload that runs replicas."""

    desired: int
    ready: int
    updated: int
    available: int
    current: int
    """Replicas that exist now, old and new (``status.replicas``)."""
    observed: bool
    """Whether the controller has seen the latest spec (``observedGeneration >= generation``)."""
    conditions: tuple[Condition, ...] = ()

    @property
    def unavailable(self) -> int:
        return max(self.desired - self.available, 0)

    @property
    def health(self) -> Health:
        """``failed`` on a failing condition; ``progressing`` until every desired replica is
        updated, available and alone; else ``healthy``."""
        if any(c.failed for c in self.conditions):
            return "failed"
        if self.rolling:
            return "progressing"
        return "healthy"

    @property
    def health_label(self) -> str:
        return HEALTH_LABELS[self.health]

    @property
    def rolling(self) -> bool:
        """Whether a rollout or a scale is still under way."""
        return (
            not self.observed
            or self.updated < self.desired
            or self.current > self.updated
            or self.available < self.desired
            or self.ready < self.desired
        )

    @property
    def progress(self) -> int:
        """How many desired replicas are updated and available (the progress bar's value)."""
        return min(self.updated, self.available, self.desired)

    @property
    def rollout(self) -> str:
        """The rollout as one line, worded like ``kubectl rollout status``."""
        if not self.observed:
            return "Waiting for the controller to see the latest change"
        if any(c.failed for c in self.conditions):
            failing = next(c for c in self.conditions if c.failed)
            return f"Rollout failed: {failing.reason or failing.type}"
        if self.updated < self.desired:
            return f"Rolling out: {self.updated} of {self.desired} replicas updated"
        if self.current > self.updated:
            old = self.current - self.updated
            return f"Rolling out: {old} old {'replica' if old == 1 else 'replicas'} still running"
        if self.available < self.desired:
            return f"Rolling out: {self.available} of {self.desired} replicas available"
        if self.desired == 0:
            return "Scaled to zero"
        return f"Rolled out: {self.desired} of {self.desired} replicas available"


def _count(value: t.Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _conditions(status: Mapping[str, t.Any]) -> tuple[Condition, ...]:
    found = status.get("conditions")
    if not isinstance(found, list):
        return ()
    return tuple(
        Condition(
            str(c.get("type") or ""),
            str(c.get("status") or ""),
            str(c.get("reason") or ""),
            str(c.get("message") or ""),
        )
        for c in found
        if isinstance(c, Mapping) and c.get("type")
    )


def workload_status(obj: Mapping[str, t.Any] | None) -> WorkloadStatus | None:
    """The status of a replica-running object, or ``None`` when ``obj`` has no status to read."""
    if not isinstance(obj, Mapping):
        return None
    status, spec, metadata = (obj.get(key) for key in ("status", "spec", "metadata"))
    if not isinstance(status, Mapping):
        return None
    spec = spec if isinstance(spec, Mapping) else {}
    metadata = metadata if isinstance(metadata, Mapping) else {}
    generation, observed = metadata.get("generation"), status.get("observedGeneration")
    seen = not isinstance(generation, int) or (isinstance(observed, int) and observed >= generation)
    if "desiredNumberScheduled" in status:  # a DaemonSet
        desired = _count(status.get("desiredNumberScheduled"))
        return WorkloadStatus(
            desired=desired,
            ready=_count(status.get("numberReady")),
            updated=_count(status.get("updatedNumberScheduled")),
            available=_count(status.get("numberAvailable")),
            current=_count(status.get("currentNumberScheduled")),
            observed=seen,
            conditions=_conditions(status),
        )
    replicas = spec.get("replicas", 1)
    updated = status.get("updatedReplicas")
    return WorkloadStatus(
        desired=_count(replicas),
        ready=_count(status.get("readyReplicas")),
        # a ReplicaSet has no updatedReplicas: all of its replicas are of its template
        updated=_count(updated if updated is not None else status.get("replicas")),
        available=_count(status.get("availableReplicas")),
        current=_count(status.get("replicas")),
        observed=seen,
        conditions=_conditions(status),
    )
