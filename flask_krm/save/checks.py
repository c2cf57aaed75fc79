"""Checks of a draft by the API server (``dryRun=All``): what an answer means, and which one applies.

Pure: no Flask, no gevent, no network. A check sends the merge patch a Save would send, with the
same uid and resourceVersion preconditions, as a dry run: Kubernetes runs validation, admission
webhooks and CRD schema validation and stores nothing. :func:`classify_check` turns its answer into
a :class:`CheckResult`; :class:`DraftCheck` keeps one editor's latest result and says whether it
applies to the draft as it is now (:meth:`DraftCheck.applies`) or whether a newer check is due
(:meth:`DraftCheck.due`).

A check is keyed by the draft it checked (:func:`draft_key`: the uid and the patch). A result for
an older draft is never shown and never blocks a Save. A 409 (the object changed on the server
since the draft's base) is not a refusal: the next check, on the newer base, decides.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .outcomes import FieldCause, WriteVerdict, classify_write, field_causes, status_detail


class CheckVerdict(str, enum.Enum):
    """What the API server said about a draft."""

    PASSED = "passed"
    """Kubernetes would accept the Save as it is now."""
    REFUSED = "refused"
    """Kubernetes would refuse it: validation, an admission webhook, a CRD schema (422, 400...)."""
    STALE = "stale"
    """409: the object changed since the draft's base. Not an error; the next check decides."""
    UNCHECKED = "unchecked"
    """No verdict: the check could not be made (transport, 5xx, 403, 401, 404). The Save decides."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's answer for one draft.

    :param key: the draft checked (:func:`draft_key`).
    :param resource_version: the base resourceVersion the check was conditioned on.
    :param verdict: what Kubernetes said.
    :param causes: the refusal's causes, placed at their fields (``REFUSED`` only).
    :param detail: Kubernetes' own message of a refusal without causes, or the code.
    """

    key: str
    resource_version: str
    verdict: CheckVerdict
    causes: tuple[FieldCause, ...] = ()
    detail: str | None = None

    @property
    def refused(self) -> bool:
        return self.verdict is CheckVerdict.REFUSED


def draft_key(uid: str, patch: Mapping[str, Any]) -> str:
    """A short digest naming a draft: the object's uid and the merge patch a Save would send."""
    text = json.dumps([uid, patch], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


REFUSING_VERDICTS = frozenset({WriteVerdict.INVALID, WriteVerdict.REJECTED})
"""Write verdicts that, for a dry run, mean the Save would be refused for its content."""


def classify_check(
    key: str,
    resource_version: str,
    code: int,
    status: Mapping[str, Any] | None,
    redacted_paths: tuple[str, ...] = (),
) -> CheckResult:
    """A dry run's answer as a :class:`CheckResult`.

    2xx passes; 422 and other definite content refusals (400, an admission webhook's 4xx) refuse,
    with their causes (messages withheld under ``redacted_paths``, like a Save's); 409 is
    ``STALE``; everything else (no answer, 5xx, 401, 403, 404, a replaced uid) leaves the
    decision to the Save.
    """
    verdict = classify_write(code, status)
    if verdict is WriteVerdict.ACCEPTED:
        return CheckResult(key, resource_version, CheckVerdict.PASSED)
    if verdict is WriteVerdict.CONFLICT:
        return CheckResult(key, resource_version, CheckVerdict.STALE)
    if verdict in REFUSING_VERDICTS and code != 429:
        causes = field_causes(status, redacted_paths)
        detail = status_detail(status, code, withheld=bool(redacted_paths))
        return CheckResult(key, resource_version, CheckVerdict.REFUSED, causes, detail)
    return CheckResult(key, resource_version, CheckVerdict.UNCHECKED)


@dataclass(eq=False)
class DraftCheck:
    """The checks of one editor's draft of one object in one session.

    ``generation`` counts the changes of what is shown (a new result, or the result withdrawn), so
    each page channel sends the check once per change.
    """

    uid: str
    result: CheckResult | None = None
    generation: int = 0
    running: str | None = None
    """The key of the draft whose check is in flight, if any."""

    def due(self, key: str | None, resource_version: str | None) -> bool:
        """Whether the draft ``key`` (on base ``resource_version``) needs a check now."""
        if key is None or resource_version is None or self.running == key:
            return False
        last = self.result
        if last is None or last.key != key:
            return True
        return (
            last.verdict in (CheckVerdict.STALE, CheckVerdict.UNCHECKED) and last.resource_version != resource_version
        )

    def applies(self, key: str | None) -> CheckResult | None:
        """The result that applies to the draft ``key`` as it is now, or ``None``."""
        last = self.result
        return last if last is not None and key is not None and last.key == key else None

    def record(self, result: CheckResult, current_key: str | None) -> bool:
        """Keep ``result`` unless the draft changed while it was checked (then it is discarded).
        Returns whether what is shown changed."""
        if self.running == result.key:
            self.running = None
        if result.key != current_key:
            return False
        before = self.result
        self.result = result
        if _shown(before) != _shown(result):
            self.generation += 1
            return True
        return False

    def withdraw(self) -> bool:
        """Forget the result (no unsaved changes any more). Returns whether what is shown changed."""
        before, self.result = self.result, None
        if _shown(before) is not None:
            self.generation += 1
            return True
        return False


def _shown(result: CheckResult | None) -> tuple[Any, ...] | None:
    """What a page shows of ``result``: refusals and passes; a stale or unchecked draft shows nothing."""
    if result is None or result.verdict in (CheckVerdict.STALE, CheckVerdict.UNCHECKED):
        return None
    return (result.key, result.verdict, result.causes, result.detail)
