"""Sending a draft's check: the Save's own merge patch as ``dryRun=All``, and when to send it.

:func:`capture_check` captures what a Save would send now (the same rule as
:meth:`~flask_krm.save.flow.SaveFlow.begin`: the store's intent, based on the newest equivalent
version the shared watch holds); :func:`send_check` sends it with both preconditions and
``dryRun=All`` through the principal's client, once, and classifies the answer
(:func:`~flask_krm.save.checks.classify_check`). Nothing here ever sends a write: a dry run that
fails is reported, never retried, and never turned into a Save. :class:`Debouncer` runs a check
once a draft has been still for a moment, in one greenlet per draft at a time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubernetes.client import ApiClient

from ..concurrency import Greenlet, Group, sleep
from ..logvalues import log_value
from ..scope import Scope
from ..store import LiveResourceStore, SaveIntent, newest_equivalent_base
from .checks import CheckResult, draft_key
from .checks import classify_check as classify
from .writer import KubeWriter, object_scope

logger = logging.getLogger("flask_krm")

DEFAULT_DELAY: Final = 0.4
"""Seconds a draft must be still before it is checked (``KRM_DRY_RUN_DELAY``)."""

NewestObject = Callable[[str], Mapping[str, Any] | None]


def capture_check(
    store: LiveResourceStore, uid: str, projection: str | None, newest: NewestObject | None = None
) -> SaveIntent | None:
    """What a Save of ``uid`` would send now, or ``None`` when it would send nothing (no changes,
    open conflicts, no object)."""
    if uid not in store.uids() or store.conflicts(uid):
        return None
    intent = store.capture_save(uid)
    if intent is None or newest is None or projection is None:
        return intent
    view = store.server(uid)
    if view is None:
        return intent
    return newest_equivalent_base(intent, view, store.redactions(uid), newest(uid), projection)


def send_check(api: ApiClient, scope: Scope, store: LiveResourceStore, intent: SaveIntent) -> CheckResult:
    """Send ``intent`` as a dry run to object ``intent.uid`` of ``scope`` and classify the answer.

    The request is the Save's: the same merge patch, the same uid and resourceVersion
    preconditions, plus ``dryRun=All``. Causes under the stream's redacted paths lose their
    messages, as a Save's do.
    """
    target = object_scope(scope, store.server(intent.uid) or {})
    answer = KubeWriter(api).patch(
        target, intent.patch, uid=intent.uid, resource_version=intent.resource_version, dry_run=True
    )
    redacted = tuple(r.path for r in store.redactions(intent.uid))
    result = classify(
        draft_key(intent.uid, intent.patch), intent.resource_version, answer.code, answer.status, redacted
    )
    logger.debug(
        "dry run of %s %s: HTTP %s, %s",
        log_value(target.resource),
        log_value(target.name),
        answer.code,
        result.verdict.value,
    )
    return result


class Debouncer:
    """Runs ``action`` once no :meth:`poke` came for ``delay`` seconds, in one greenlet of
    ``group`` at a time. A poke while the action runs makes it run once more afterwards, so a
    burst of pokes costs one run and the last poke is never missed."""

    def __init__(self, group: Group, delay: float, action: Callable[[], None]) -> None:
        self._group = group
        self._delay = delay
        self._action = action
        self._due: float | None = None
        self._greenlet: Greenlet | None = None

    @property
    def pending(self) -> bool:
        """Whether a run is due or running."""
        return self._greenlet is not None

    def poke(self, *, postpone: bool = True) -> None:
        """Run the action ``delay`` seconds from now, postponing a run not yet started; with
        ``postpone=False`` a run already due keeps its time (a change that is not the person's,
        such as the server's, never starves the run)."""
        if postpone or self._due is None:
            self._due = time.monotonic() + self._delay
        if self._greenlet is None:
            self._greenlet = self._group.spawn(self._run)

    def cancel(self) -> None:
        """Drop a pending run (a running action finishes)."""
        self._due = None

    def _run(self) -> None:
        try:
            while self._due is not None:
                wait = self._due - time.monotonic()
                if wait > 0:
                    sleep(wait)
                    continue
                self._due = None
                try:
                    self._action()
                except Exception:
                    logger.exception("a draft check failed")
        finally:
            self._greenlet = None
