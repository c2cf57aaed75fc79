"""What a principal may do, for offering controls: the authorizer and Kubernetes, asked briefly once.

A control that writes (Save, Add, Remove, Create, Delete) is offered only when the write would be
allowed: the host's authorizer allows the verb (:func:`flask_krm.access.decide`) and, when the
principal's client acts as the person (impersonation, or their own token), Kubernetes itself
agrees through a SelfSubjectAccessReview sent as that identity. :class:`Permissions` keeps each
answer per verb, scope and projection for a short time (``KRM_PERMISSION_CACHE`` seconds), so a page
with many editors asks once. Offering is a courtesy, not a guard: every write is authorized again
when it happens, and a forged request is refused as before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from typing import Final

from kubernetes.client import ApiClient

from .scope import Scope
from .upstream.authz import ReviewFailed, self_access_allowed
from .upstream.clients import BearerToken, Impersonation

logger = logging.getLogger("flask_krm")

DEFAULT_TTL: Final = 30.0
"""Seconds an answer is kept (``KRM_PERMISSION_CACHE``)."""
MAX_ANSWERS: Final = 512
"""Answers one session keeps at most; the oldest goes first."""


def acts_as_person(api: ApiClient | None) -> bool:
    """Whether ``api`` talks to Kubernetes as the person (impersonation or their own token), so
    Kubernetes RBAC applies to them and a SelfSubjectAccessReview through it asks about them."""
    return isinstance(getattr(api, "identity", None), (Impersonation, BearerToken))


def kubernetes_allows(api: ApiClient | None, scope: Scope, verb: str) -> bool:
    """Kubernetes' answer for the identity ``api`` acts as, or ``True`` when ``api`` acts as the
    application itself (then the authorizer is the only boundary). A review that cannot be
    completed is ``False`` (never an allow)."""
    if api is None or not acts_as_person(api):
        return True
    try:
        return self_access_allowed(api, scope, verb)
    except ReviewFailed as failed:
        logger.warning("the access review for offering %s failed: %s", verb, failed)
        return False


class Permissions:
    """One session's answers: ``allowed(key, ask)`` asks at most once per ``ttl`` seconds per key.

    :param ttl: seconds an answer is kept; 0 asks every time.
    :param clock: the monotonic clock (tests pass their own).
    """

    def __init__(self, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._answers: dict[Hashable, tuple[float, bool]] = {}

    def allowed(self, key: Hashable, ask: Callable[[], bool]) -> bool:
        """The kept answer for ``key`` while it is fresh, else ``ask()`` (kept ``ttl`` seconds)."""
        now = self._clock()
        held = self._answers.get(key)
        if held is not None and held[0] > now:
            return held[1]
        answer = bool(ask())
        self._answers.pop(key, None)
        if self.ttl > 0:
            while len(self._answers) >= MAX_ANSWERS:
                del self._answers[next(iter(self._answers))]
            self._answers[key] = (now + self.ttl, answer)
        return answer
