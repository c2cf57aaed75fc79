"""One access decision: the scope policy, the host's authorizer and the principal, asked once.

:func:`decide` turns a question (may ``principal`` ``verb`` ``scope`` under ``projection``?) into a
:class:`Decision`. The decision knows how to become each kind of refusal: a terminal stream error
(the JSON stream, a page channel), an upstream failure (the hub's re-checks), an HTTP error
(``ScopeDenied``), or a refusal a person reads in the live UI. An authorizer allows only by
returning ``True``; it refuses by returning anything else or by raising
:class:`~flask_krm.upstream.authz.AccessDenied` (with its own code and message); any other
exception is a check that could not be completed, logged and never an allow.
"""

from __future__ import annotations

import enum
import logging
import typing as t
from dataclasses import dataclass

from .errors import ScopeDenied
from .events import ErrorCode, StreamError
from .ops import Failure
from .scope import Scope, ScopeError, ScopePolicy
from .upstream.authz import AccessDenied

logger = logging.getLogger("flask_krm")

NOT_PERMITTED_MESSAGE: t.Final = "this stream is not permitted for the signed-in principal"
CHECK_FAILED_MESSAGE: t.Final = "the authorization check failed"

UI_NOT_PERMITTED: t.Final = "You may not view this."
UI_NOT_SERVED: t.Final = "This view is not available."
UI_CHECK_FAILED: t.Final = "The access check failed: reload the page to try again."


class Verdict(enum.Enum):
    """Why a decision came out as it did."""

    ALLOWED = "allowed"
    NOT_SERVED = "not-served"
    """The scope policy does not serve the scope."""
    DENIED = "denied"
    """The authorizer refused."""
    FAILED = "failed"
    """The check could not be completed."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer to one access question, and what it becomes for each kind of caller."""

    verdict: Verdict
    principal: t.Any
    scope: Scope
    projection: str
    verb: str
    code: ErrorCode = "FORBIDDEN"
    message: str = ""
    """The refusal's protocol message (empty when allowed)."""

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOWED

    def covers(self, principal: t.Any, scope: Scope, projection: str, verb: str = "watch") -> bool:
        """Whether this is an allow for exactly this principal, scope, projection and verb."""
        return self.allowed and (self.principal, self.scope, self.projection, self.verb) == (
            principal,
            scope,
            projection,
            verb,
        )

    def stream_error(self) -> StreamError:
        """The terminal stream error refusing a stream. Only for a refusal."""
        return StreamError(self.code, self.message, terminal=True)

    def failure(self) -> Failure:
        """The same refusal as an upstream failure (the hub ends a subscriber with it)."""
        return Failure(self.code, self.message, terminal=True)

    def http_error(self) -> ScopeDenied:
        """The 403 an HTTP view raises for this refusal."""
        if self.verdict is Verdict.DENIED and self.message and self.message != NOT_PERMITTED_MESSAGE:
            return ScopeDenied(self.message)
        return ScopeDenied(f"You may not {self.verb} this resource with the {self.projection} view.")

    def ui_message(self) -> str:
        """What a person reads in the live UI when the view is refused (shown with a 403)."""
        if self.verdict is Verdict.NOT_SERVED:
            return UI_NOT_SERVED
        if self.verdict is Verdict.FAILED:
            return UI_CHECK_FAILED
        return UI_NOT_PERMITTED


Ask: t.TypeAlias = t.Callable[[t.Any, Scope, str, str], object]
"""The authorizer as asked: ``ask(principal, scope, projection, verb)``; only ``True`` allows."""


def decide(
    ask: Ask,
    principal: t.Any,
    scope: Scope,
    projection: str,
    verb: str,
    *,
    policy: ScopePolicy | None = None,
) -> Decision:
    """Decide whether ``principal`` may ``verb`` ``scope`` under ``projection``.

    ``policy``, when given, is checked first (a scope it refuses is :attr:`Verdict.NOT_SERVED`,
    ``SCOPE_INVALID``). Then the authorizer is asked. Never raises for the authorizer's failures.
    """

    def refused(verdict: Verdict, code: ErrorCode, message: str) -> Decision:
        return Decision(verdict, principal, scope, projection, verb, code, message)

    if policy is not None:
        try:
            policy.check(scope)
        except ScopeError as exc:
            return refused(Verdict.NOT_SERVED, "SCOPE_INVALID", exc.message)
    try:
        answer = ask(principal, scope, projection, verb)
    except AccessDenied as denied:
        return refused(Verdict.DENIED, denied.code, denied.message)
    except Exception:
        logger.exception("the authorizer failed; access is refused")
        return refused(Verdict.FAILED, "INTERNAL", CHECK_FAILED_MESSAGE)
    if answer is not True:
        return refused(Verdict.DENIED, "FORBIDDEN", NOT_PERMITTED_MESSAGE)
    return Decision(Verdict.ALLOWED, principal, scope, projection, verb)
