"""The ``scale`` subresource: a Deployment's replicas seen and set as an ``autoscaling/v1`` ``Scale``."""

from __future__ import annotations

from typing import Any

from .catalog import ResourceType
from .errors import FieldError
from .selectors import selector_string

Object = dict[str, Any]

SCALE = ResourceType("autoscaling", "v1", "scale", "", "Scale", True, stored=False)
"""The ``Scale`` kind, for decoding and patching the subresource's bodies (never stored)."""

_SCALE_METADATA = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


def scale_of(deployment: Object) -> Object:
    """``scaleFromDeployment``: identity and version of the Deployment, its desired and current replicas, its selector."""
    metadata = {key: deployment["metadata"][key] for key in _SCALE_METADATA if key in deployment["metadata"]}
    replicas = (deployment.get("spec") or {}).get("replicas") or 0
    status: Object = {"replicas": (deployment.get("status") or {}).get("replicas") or 0}
    selector = selector_string((deployment.get("spec") or {}).get("selector"))
    if selector:
        status["selector"] = selector
    return {
        "kind": SCALE.kind,
        "apiVersion": SCALE.api_version,
        "metadata": metadata,
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }


def desired_replicas(scale: Object) -> int:
    """``spec.replicas`` of a Scale (left out: 0, as the Go type has no pointer)."""
    replicas = (scale.get("spec") or {}).get("replicas") or 0
    assert isinstance(replicas, int)
    return replicas


def validate_scale(scale: Object) -> list[FieldError]:
    """``ValidateScale``: a replica count that is not negative (other metadata is discarded, not checked)."""
    replicas = desired_replicas(scale)
    return [FieldError.invalid("spec.replicas", replicas, "must be greater than or equal to 0")] if replicas < 0 else []
