"""Subscriber authorization: the authorizer seam and a SubjectAccessReview authorizer.

An authorizer is a callable ``authorize(principal, scope, projection) -> bool``: ``True`` allows,
``False`` refuses with ``FORBIDDEN``, and raising :class:`AccessDenied` refuses with a chosen code
(``FORBIDDEN`` or ``UNAUTHENTICATED``) and message. Any other exception is a decision that could
not be made: the hub ends that stream with a terminal ``INTERNAL`` and never treats it as an allow.
The hub calls the authorizer before a subscriber receives anything, again before each new snapshot
cycle of that subscriber (a relist, an overflow resync, a recovery after an outage) and, for watches
shared under the service identity, on a timer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from kubernetes.client import ApiClient

from ..scope import Scope
from .clients import ApiClients

REVIEW_PATH: Final = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SELF_REVIEW_PATH: Final = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
AUTHENTICATED_GROUP: Final = "system:authenticated"


class AccessDenied(Exception):
    """The principal may not stream this scope and projection. The stream ends with ``code``."""

    def __init__(self, message: str, code: Literal["FORBIDDEN", "UNAUTHENTICATED"] = "FORBIDDEN") -> None:
        super().__init__(message)
        self.message = message
        self.code: Literal["FORBIDDEN", "UNAUTHENTICATED"] = code


class ReviewFailed(Exception):
    """An access review could not be completed (never an allow)."""


class Authorizer(Protocol):
    """Allow (``True``) or refuse (``False``, or raise :class:`AccessDenied`) one subscriber."""

    def __call__(self, principal: Any, scope: Scope, projection: str) -> bool: ...


def allow_all(principal: Any, scope: Scope, projection: str) -> bool:
    """An authorizer that allows everything: for per-user watches, where Kubernetes RBAC decides."""
    return True


@dataclass(frozen=True, slots=True)
class Subject:
    """Who a SubjectAccessReview asks about. Add ``system:authenticated`` to ``groups`` yourself
    when the subject is a signed-in user (the review uses the groups exactly as given)."""

    user: str = ""
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def principal_subject(principal: Any) -> Subject:
    """The default subject: ``principal.name`` and ``principal.groups`` plus ``system:authenticated``."""
    name = getattr(principal, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError("the principal has no name")
    groups = tuple(getattr(principal, "groups", ()) or ())
    if AUTHENTICATED_GROUP not in groups:
        groups += (AUTHENTICATED_GROUP,)
    return Subject(user=name, groups=groups)


class SubjectAccessReviewAuthorizer:
    """Asks the target's API server, as the service identity, whether the subject may perform a
    verb on the scope. ``watch`` (the default, what a stream needs) sends two reviews, ``list``
    then ``watch``; a named scope names its object.

    Allowed only when ``status.allowed`` is true and ``status.denied`` is not. A refusal raises
    :class:`AccessDenied` whose message names the verb, the resource, the user and the server's
    reason; a review that cannot be completed raises :class:`ReviewFailed`. It also fits the
    extension's ``(principal, scope, projection, verb)`` authorizer hook through :meth:`allows`.
    The service identity needs ``create`` on ``subjectaccessreviews`` (the
    ``system:auth-delegator`` role), not impersonation.

    :param clients: the per-target clients (the review runs as each target's service identity).
    :param subject_for: maps a principal to a :class:`Subject`; an exception, or a subject with
        neither user nor groups, is a refusal without any review being sent.
    :param timeout: connect and read timeouts of one review, in seconds.
    """

    def __init__(
        self,
        clients: ApiClients,
        subject_for: Callable[[Any], Subject] = principal_subject,
        *,
        timeout: tuple[float, float] = (5.0, 10.0),
    ) -> None:
        self._clients = clients
        self._subject_for = subject_for
        self._timeout = timeout

    def __call__(self, principal: Any, scope: Scope, projection: str, verb: str = "watch") -> bool:
        """``True`` when allowed; raises :class:`AccessDenied` or :class:`ReviewFailed` otherwise."""
        try:
            subject = self._subject_for(principal)
        except Exception:
            raise AccessDenied("not authenticated: the principal maps to no Kubernetes subject") from None
        if not subject.user and not subject.groups:
            raise AccessDenied("not authenticated: the principal maps to no Kubernetes subject")
        api = self._clients.service(scope.target)
        for asked in ("list", "watch") if verb == "watch" else (verb,):
            status = self._review(api, subject, scope, asked)
            if not status.get("allowed") or status.get("denied"):
                reason = status.get("evaluationError") or status.get("reason") or "no rule allows it"
                what = f"{scope.resource}.{scope.group}" if scope.group else scope.resource
                who = subject.user or "the subject"
                raise AccessDenied(f"{who} may not {asked} {what}: {reason}")
        return True

    def allows(self, principal: Any, scope: Scope, projection: str, verb: str = "watch") -> bool:
        """Like calling it, but a refusal is ``False`` instead of :class:`AccessDenied`."""
        try:
            return self(principal, scope, projection, verb)
        except AccessDenied:
            return False

    def _review(self, api: ApiClient, subject: Subject, scope: Scope, verb: str) -> Mapping[str, Any]:
        spec: dict[str, Any] = {"resourceAttributes": _attributes(scope, verb)}
        if subject.user:
            spec["user"] = subject.user
        if subject.groups:
            spec["groups"] = list(subject.groups)
        if subject.uid:
            spec["uid"] = subject.uid
        if subject.extra:
            spec["extra"] = {key: list(values) for key, values in subject.extra.items()}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        return _send_review(api, REVIEW_PATH, body, self._timeout)


def self_access_allowed(api: ApiClient, scope: Scope, verb: str, *, timeout: tuple[float, float] = (5.0, 10.0)) -> bool:
    """Whether the identity ``api`` acts as (an impersonated user, a person's own token) may
    ``verb`` ``scope``, as Kubernetes itself answers a SelfSubjectAccessReview sent through ``api``.

    Needs no permission beyond the identity's own (every authenticated user may create one).
    Raises :class:`ReviewFailed` when the review cannot be completed (never an allow).
    """
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": _attributes(scope, verb)},
    }
    status = _send_review(api, SELF_REVIEW_PATH, body, timeout)
    return bool(status.get("allowed")) and not status.get("denied")


def _attributes(scope: Scope, verb: str) -> dict[str, str]:
    attributes = {"verb": verb, "group": scope.group, "version": scope.version, "resource": scope.resource}
    if scope.namespace:
        attributes["namespace"] = scope.namespace
    if scope.name:
        attributes["name"] = scope.name
    return attributes


def _send_review(api: ApiClient, path: str, body: Mapping[str, Any], timeout: tuple[float, float]) -> Mapping[str, Any]:
    """POST an access review and return its ``status``; :class:`ReviewFailed` when that fails."""
    method, url, headers, payload, _ = api.param_serialize(
        "POST",
        path,
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    try:
        response = api.call_api(method, url, header_params=headers, body=payload, _request_timeout=timeout)
        data = response.read()  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise ReviewFailed(f"the access review could not be sent: {type(exc).__name__}") from None
    if not 200 <= response.status <= 299:
        raise ReviewFailed(f"the access review was refused with HTTP {response.status}")
    try:
        answer = json.loads(data)
    except ValueError:
        raise ReviewFailed("the access review answer was not JSON") from None
    status = answer.get("status") if isinstance(answer, Mapping) else None
    if not isinstance(status, Mapping):
        raise ReviewFailed("the access review answer has no status")
    return status
