"""SubjectAccessReview and SelfSubjectAccessReview, answered by the same RBAC authorizer as requests."""

from __future__ import annotations

from typing import Any

from .authentication import Identity
from .catalog import GroupKind
from .errors import FieldError, bad_request, invalid
from .rbac import Attributes, RbacAuthorizer


def _attributes(user: Identity, spec: dict[str, Any]) -> Attributes:
    resource = spec.get("resourceAttributes")
    if resource is not None:
        return Attributes(
            user=user,
            verb=resource.get("verb", ""),
            group=resource.get("group", ""),
            resource=resource.get("resource", ""),
            subresource=resource.get("subresource", ""),
            namespace=resource.get("namespace", ""),
            name=resource.get("name", ""),
        )
    non_resource = spec.get("nonResourceAttributes") or {}
    return Attributes(
        user=user, verb=non_resource.get("verb", ""), resource_request=False, path=non_resource.get("path", "")
    )


def _spec_errors(spec: dict[str, Any], self_review: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    has_resource, has_non_resource = (
        spec.get("resourceAttributes") is not None,
        spec.get("nonResourceAttributes") is not None,
    )
    if has_resource and has_non_resource:
        errors.append(
            FieldError.invalid(
                "spec.nonResourceAttributes",
                spec["nonResourceAttributes"],
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if not has_resource and not has_non_resource:
        errors.append(
            FieldError.invalid(
                "spec.resourceAttributes",
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if not self_review and not spec.get("user") and not spec.get("groups"):
        errors.append(
            FieldError.invalid("spec.user", spec.get("user", ""), "at least one of user or group must be specified")
        )
    return errors


def review(authorizer: RbacAuthorizer, body: Any, kind: str, requester: Identity) -> dict[str, Any]:
    """The review object with ``status`` filled in; ``kind`` is SubjectAccessReview or SelfSubjectAccessReview."""
    if not isinstance(body, dict) or not isinstance(body.get("spec", {}), dict):
        raise bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: the body is not a JSON object')
    spec = dict(body.get("spec") or {})
    self_review = kind == "SelfSubjectAccessReview"
    errors = _spec_errors(spec, self_review)
    if errors:
        raise invalid(GroupKind("authorization.k8s.io", ""), "", errors)  # the decoded object has lost its kind
    if self_review:
        subject = requester
    else:
        extra = {key: tuple(values) for key, values in (spec.get("extra") or {}).items()}
        subject = Identity(spec.get("user", ""), tuple(spec.get("groups") or ()), spec.get("uid", ""), extra)
    allowed, reason = authorizer.authorize(_attributes(subject, spec))
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return {"kind": kind, "apiVersion": "authorization.k8s.io/v1", "metadata": {}, "spec": spec, "status": status}
