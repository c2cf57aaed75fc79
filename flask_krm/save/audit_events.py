"""Audit records as Kubernetes audit events (``audit.k8s.io/v1`` ``Event``, level ``Metadata``).

Pure: no Flask, no gevent, no network. An event says who (``user``: the signed-in principal;
``impersonatedUser``: whom the write's client impersonated, when it did), what (``verb``,
``objectRef``), how it ended (``responseStatus``) and when (``requestReceivedTimestamp``,
``stageTimestamp``), at level ``Metadata``: no request or response body, so no value, Secret or
other, is ever in it. flask-krm's own view of the attempt rides in ``annotations``: the outcome,
the target and the paths written (names only).
"""

from __future__ import annotations

import typing as t
import uuid
from datetime import datetime, timezone

from .audit import AuditRecord

__all__ = ["ANNOTATION_PREFIX", "audit_event"]

ANNOTATION_PREFIX: t.Final = "flask-krm.io/"

_VERBS: t.Final = {"patch": "patch", "create": "create", "delete": "delete"}
_ACCEPTED: t.Final = frozenset({"saved", "saved-pending", "created", "deleted"})


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def audit_event(record: AuditRecord, *, now: float, audit_id: str | None = None) -> dict[str, t.Any]:
    """The audit event of ``record``, completed at ``now`` (seconds since the epoch).

    ``requestReceivedTimestamp`` is when the write was sent (``record.call``), or ``now`` for an
    attempt that was never sent (a refusal by the host, a busy editor). ``responseStatus.code`` is
    the API server's answer; an attempt without one has code 0 and status ``Failure``.
    """
    call = record.call
    identity = record.identity
    object_ref: dict[str, t.Any] = {"resource": record.resource, "apiVersion": identity.api_version.rpartition("/")[2]}
    if record.api_group:
        object_ref["apiGroup"] = record.api_group
    if identity.namespace:
        object_ref["namespace"] = identity.namespace
    if identity.name:
        object_ref["name"] = identity.name
    if identity.uid:
        object_ref["uid"] = identity.uid
    if record.resource_version:
        object_ref["resourceVersion"] = record.resource_version
    code = call.code if call is not None else 0
    status: dict[str, t.Any] = {"metadata": {}, "code": code}
    if not (200 <= code <= 299 and record.outcome in _ACCEPTED):
        status["status"] = "Failure"
        status["reason"] = record.outcome
    else:
        status["status"] = "Success"
    annotations = {
        ANNOTATION_PREFIX + "outcome": record.outcome,
        ANNOTATION_PREFIX + "target": record.target,
    }
    if record.fields:
        annotations[ANNOTATION_PREFIX + "fields"] = ",".join(record.fields)
    if record.redacted_paths:
        annotations[ANNOTATION_PREFIX + "withheld"] = ",".join(record.redacted_paths)
    if record.reason:
        annotations[ANNOTATION_PREFIX + "reason"] = record.reason
    event: dict[str, t.Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": audit_id or str(uuid.uuid4()),
        "stage": "ResponseComplete",
        "verb": _VERBS.get(record.operation, record.operation),
        "user": {"username": record.principal},
        "objectRef": object_ref,
        "responseStatus": status,
        "requestReceivedTimestamp": _timestamp(call.started if call is not None else now),
        "stageTimestamp": _timestamp(now),
        "annotations": annotations,
    }
    if call is not None and call.impersonated_user is not None:
        impersonated: dict[str, t.Any] = {"username": call.impersonated_user}
        if call.impersonated_groups:
            impersonated["groups"] = list(call.impersonated_groups)
        event["impersonatedUser"] = impersonated
    return event
