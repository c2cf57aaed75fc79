"""Performing saves, creates and deletes for one session store: the flow with its I/O.

:func:`save_edit` runs one deliberate Save of one editor: the :class:`~flask_krm.save.flow.SaveFlow`
decides, the save hook writes, a guarded read follows where the flow asks for one, and the attempt
is audited. :class:`Confirmation` waits for an accepted write's echo and, when none arrives in
time, lets a guarded read decide. :func:`save_review` writes a review list: deletes, creates, then
edits, each with its own outcome. Everything here blocks on sockets: run it on a request or a
greenlet of a monkey-patched process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubernetes.client import ApiClient

from ..concurrency import Greenlet, getcurrent, spawn_later
from ..events import Redaction
from ..logvalues import log_value
from ..principal import Principal
from ..projection import is_secret
from ..scope import Scope
from ..store import LiveResourceStore, SaveIntent, newest_equivalent_base, newest_of
from ..upstream.clients import Impersonation
from .audit import ObjectIdentity, WriteCall, create_diff, delete_diff, patch_diff, secret_value_paths
from .flow import Done, KnownVersions, Read, SaveFlow, Step
from .outcomes import Outcome, OutcomeKind, WriteVerdict, classify_write, field_causes, status_detail, status_reason
from .publish import audit_reason, publish, record_for
from .staging import PendingCreate, PendingDelete, ReviewItem, Staging
from .writer import KubeWriter, SaveHook, SaveRefused, WriteRequest, WriteResult, object_scope, read_result

logger = logging.getLogger("flask_krm.save")

NewestObject = Callable[[str], Mapping[str, Any] | None]
"""The newest raw object known for a uid (the shared watch's cache), or ``None``."""
Rebase = Callable[[SaveIntent, Mapping[str, Any] | None], SaveIntent]


@dataclass(frozen=True, slots=True)
class EditorTarget:
    """Where an editor's writes go and who makes them.

    :param scope: the editor's (or list's) scope, target included.
    :param projection: the stream's projection; ``None`` for a native store.
    :param api: the principal's client (from the host's client loader).
    :param hook: the save hook (:func:`~flask_krm.save.writer.default_save` or the host's).
    """

    principal: Principal
    scope: Scope
    projection: str | None
    api: ApiClient
    hook: SaveHook


def _audit_redactions(
    scope: Scope,
    projection: str | None,
    store: LiveResourceStore,
    uid: str,
    before: Mapping[str, Any],
    patch: Mapping[str, Any],
) -> tuple[str, ...]:
    """Paths whose values an audit withholds: the stream's redactions, or a native Secret's values."""
    held = tuple(r.path for r in store.redactions(uid))
    if projection is None and is_secret(scope.group, scope.resource):
        return tuple(dict.fromkeys(held + secret_value_paths(before, patch)))
    return held


def audit_unsent_save(
    principal: Principal,
    scope: Scope,
    projection: str | None,
    store: LiveResourceStore,
    intent: SaveIntent,
    outcome: Outcome,
    reason: str | None,
) -> None:
    """Audit a Save of ``intent`` that was refused before anything was sent (the cluster's check of
    the draft refused it), as a save hook's refusal is audited: the diff it would have written, the
    outcome, ``reason``, and no call."""
    before = store.server(intent.uid) or {}
    redacted = _audit_redactions(scope, projection, store, intent.uid, before, intent.patch)
    written = object_scope(scope, before)
    record = record_for(
        principal=principal,
        scope=written,
        operation="patch",
        identity=ObjectIdentity.of(before, uid=intent.uid),
        outcome=outcome.kind.value,
        diff=patch_diff(before, intent.patch, redacted),
        redacted_paths=redacted,
        reason=reason,
    )
    publish(record, principal=principal, scope=written)


def save_edit(
    target: EditorTarget, store: LiveResourceStore, flow: SaveFlow, *, live: bool, newest: NewestObject | None = None
) -> Outcome:
    """One deliberate Save of ``flow.uid``. Never raises for a Kubernetes or transport failure.

    ``newest(uid)`` gives the newest raw object the shared watch knows (projected editors only):
    the intent is based on it when the editor's view of it is identical (see
    :class:`~flask_krm.save.flow.KnownVersions`).
    """
    known = KnownVersions(target.projection, newest) if newest is not None and target.projection is not None else None
    step: Step = flow.begin(store, live=live, known=known)
    if isinstance(step, Read):
        return guarded_read(target, store, flow, step, object_scope(target.scope, store.server(flow.uid) or {})).outcome
    if isinstance(step, Done):
        return step.outcome
    intent = step.intent
    before = store.server(intent.uid) or {}
    redacted = _audit_redactions(target.scope, target.projection, store, intent.uid, before, intent.patch)
    scope = object_scope(target.scope, before)
    rebase = _rebase(known, before, store.redactions(intent.uid)) if known is not None else None
    result, call = _call_hook(
        target.hook,
        WriteRequest("patch", target.principal, scope, target.projection, target.api, intent=intent, rebase=rebase),
    )
    if isinstance(result, Outcome):
        step = flow.not_sent(result)
        version = None
    else:
        step = flow.written(
            store,
            classify_write(result.code, result.status),
            status=result.status,
            code=result.code,
            written_version=result.written_version,
            redacted_paths=redacted,
        )
        version = result.written_version if 200 <= result.code <= 299 else None
    if isinstance(step, Read):
        step = guarded_read(target, store, flow, step, scope)
    assert isinstance(step, Done)
    record = record_for(
        principal=target.principal,
        scope=scope,
        operation="patch",
        identity=ObjectIdentity.of(before, uid=intent.uid),
        outcome=step.outcome.kind.value,
        diff=patch_diff(before, intent.patch, redacted),
        redacted_paths=redacted,
        resource_version=version,
        reason=audit_reason(step.outcome),
        call=call,
    )
    publish(record, principal=target.principal, scope=scope)
    return step.outcome


def _rebase(known: KnownVersions, base: Mapping[str, Any], redactions: Sequence[Redaction]) -> Rebase:
    """The capture rule again, for right before sending: ``base`` is the view the patch was made against.

    The candidate is the newest version known now: the shared watch's, or the object the hook's
    preflight read returned when the watch has not delivered that version yet (under load a watch
    lags the API server by more than the time between a controller's status writes). Either is
    used only as :func:`~flask_krm.store.newest_equivalent_base` allows: same uid, a newer decimal
    version, a projection equal to ``base``, nothing withheld.
    """

    def rebase(intent: SaveIntent, current: Mapping[str, Any] | None) -> SaveIntent:
        newest = newest_of(known.newest(intent.uid), current)
        return newest_equivalent_base(intent, base, redactions, newest, known.projection)

    return rebase


def guarded_read(target: EditorTarget, store: LiveResourceStore, flow: SaveFlow, step: Read, scope: Scope) -> Done:
    """Read the object (projected like the stream, or native) and hand it to the step's guard."""
    answer = KubeWriter(target.api).get(scope)
    return flow.read(store, step, read_result(answer, target.projection))


def _call_hook(hook: SaveHook, request: WriteRequest) -> tuple[WriteResult | Outcome, WriteCall | None]:
    """Run the save hook; a refusal is an outcome (nothing was sent: no call), an unexpected error
    an unknown result."""
    started, clock = time.time(), time.perf_counter()
    result = _run_hook(hook, request)
    if isinstance(result, Outcome):
        return result, None
    identity = getattr(request.api, "identity", None)
    acting = identity if isinstance(identity, Impersonation) else None
    call = WriteCall(
        started=started,
        duration=time.perf_counter() - clock,
        code=result.code,
        impersonated_user=acting.user if acting is not None else None,
        impersonated_groups=acting.groups if acting is not None else (),
    )
    return result, call


def _run_hook(hook: SaveHook, request: WriteRequest) -> WriteResult | Outcome:
    try:
        result = hook(request)
    except SaveRefused as refused:
        return refused.outcome()
    except Exception:  # the host's hook failed somewhere: whether it wrote is unknown
        logger.exception(
            "the save hook failed for %s %s", log_value(request.operation), log_value(request.scope.resource)
        )
        return WriteResult(0, error="save hook error")
    if not isinstance(result, WriteResult):
        logger.error("the save hook returned %s, not a WriteResult", type(result).__name__)
        return WriteResult(0, error="save hook result")
    return result


def confirm_now(target: EditorTarget, store: LiveResourceStore, flow: SaveFlow) -> Outcome | None:
    """Stop waiting for an echo: a guarded read decides. ``None`` when no write awaits confirmation."""
    step = flow.confirm(store)
    if step is None:
        return None
    if isinstance(step, Read):
        scope = object_scope(target.scope, store.server(flow.uid) or {})
        step = guarded_read(target, store, flow, step, scope)
    return step.outcome


class Confirmation:
    """Waits for an accepted write's echo; without one within ``timeout`` seconds, a guarded read
    decides. ``notify(outcome)`` is called once with the result (``SAVED``, ``DRAFT_CONFLICT``,
    ``NOT_APPLIED``, ``UNAVAILABLE``, ``RECOVERING``...), on the store's or the timer's greenlet.
    """

    def __init__(
        self,
        target: EditorTarget,
        store: LiveResourceStore,
        flow: SaveFlow,
        *,
        timeout: float,
        notify: Callable[[Outcome], None],
    ) -> None:
        self._target = target
        self._store = store
        self._flow = flow
        self._timeout = timeout
        self._notify = notify
        self._unsubscribe: Callable[[], None] | None = None
        self._timer: Greenlet | None = None
        self.outcome: Outcome | None = None

    def start(self) -> Confirmation:
        """Begin waiting (returns immediately). An echo that already arrived settles it now."""
        self._unsubscribe = self._store.subscribe(self._changed)
        self._timer = spawn_later(self._timeout, self._expire)
        outcome = self._flow.observe(self._store)
        if outcome is not None:
            self._settle(outcome)
        return self

    def cancel(self) -> None:
        """Stop waiting without an outcome."""
        self._stop(kill_timer=True)

    def _changed(self, uids: frozenset[str]) -> None:
        if self.outcome is None and self._flow.uid in uids:
            outcome = self._flow.observe(self._store)
            if outcome is not None:
                self._settle(outcome)

    def _expire(self) -> None:
        self._stop(kill_timer=False)
        if self.outcome is None:
            outcome = confirm_now(self._target, self._store, self._flow)
            if outcome is not None:
                self._settle(outcome)

    def _settle(self, outcome: Outcome) -> None:
        self._stop(kill_timer=True)
        self.outcome = outcome
        try:
            self._notify(outcome)
        except Exception:
            logger.exception("a save confirmation receiver failed")

    def _stop(self, *, kill_timer: bool) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        timer, self._timer = self._timer, None
        if kill_timer and timer is not None and timer is not getcurrent():
            timer.kill(block=False)


# ---- creates and deletes ---------------------------------------------------------------------


def _identity_of_scope(scope: Scope, kind: str, name: str, uid: str = "") -> ObjectIdentity:
    return ObjectIdentity(
        api_version=scope.api_version, kind=kind, name=name, namespace=scope.namespace or None, uid=uid
    )


def _write_outcome(result: WriteResult, success: OutcomeKind, redacted: tuple[str, ...] = ()) -> Outcome:
    """The outcome of a create or delete; Kubernetes categories kept (404, 409, 422, 403, 401)."""
    verdict = classify_write(result.code, result.status)
    if verdict is WriteVerdict.ACCEPTED:
        return Outcome(success)
    if verdict is WriteVerdict.INVALID:
        return Outcome(OutcomeKind.INVALID, causes=field_causes(result.status, redacted))
    detail = status_detail(result.status, result.code, withheld=bool(redacted))
    if verdict is WriteVerdict.FORBIDDEN:
        return Outcome(OutcomeKind.ACCESS_DENIED, detail=detail)
    if verdict is WriteVerdict.UNAUTHORIZED:
        return Outcome(OutcomeKind.SIGNED_OUT)
    if verdict is WriteVerdict.NOT_FOUND:
        return Outcome(OutcomeKind.UNAVAILABLE, http_status=404)
    if verdict is WriteVerdict.REPLACED:
        return Outcome(OutcomeKind.UNAVAILABLE, detail=status_reason(result.status, result.code))
    if verdict is WriteVerdict.UNKNOWN:
        return Outcome(OutcomeKind.UNKNOWN, detail=status_reason(result.status, result.code))
    return Outcome(OutcomeKind.REJECTED, detail=detail, http_status=result.code)


def create_scope(scope: Scope, pending: PendingCreate) -> Scope:
    """Where ``pending`` is created: the collection of ``scope`` in the body's namespace (the
    list's, pinned by the create policy). What a create is authorized for and written to."""
    metadata = pending.body.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    return replace(scope, namespace=str(namespace or scope.namespace), name="", label_selector="")


def delete_scope(scope: Scope, pending: PendingDelete) -> Scope:
    """The object ``pending`` deletes: its namespace and name. What a delete is authorized for and
    written to."""
    return replace(scope, name=pending.name, namespace=pending.namespace or scope.namespace, label_selector="")


def create(target: EditorTarget, pending: PendingCreate, kind: str) -> Outcome:
    """POST a pending create (already validated against the host's create policy)."""
    body = pending.body
    redacted = secret_value_paths(body) if is_secret(target.scope.group, target.scope.resource) else ()
    scope = create_scope(target.scope, pending)
    result, call = _call_hook(
        target.hook, WriteRequest("create", target.principal, scope, target.projection, target.api, body=body)
    )
    outcome = result if isinstance(result, Outcome) else _write_outcome(result, OutcomeKind.CREATED, redacted)
    uid = "" if isinstance(result, Outcome) else (result.uid or "")
    publish(
        record_for(
            principal=target.principal,
            scope=scope,
            operation="create",
            identity=_identity_of_scope(scope, kind, pending.name, uid),
            outcome=outcome.kind.value,
            diff=create_diff(body, redacted),
            redacted_paths=redacted,
            resource_version=None if isinstance(result, Outcome) or not outcome.wrote else result.written_version,
            reason=audit_reason(outcome),
            call=call,
        ),
        principal=target.principal,
        scope=scope,
    )
    return outcome


def delete(target: EditorTarget, pending: PendingDelete, kind: str) -> Outcome:
    """DELETE the object the person selected, bound to its uid (and version, when captured)."""
    scope = delete_scope(target.scope, pending)
    request = WriteRequest(
        "delete",
        target.principal,
        scope,
        target.projection,
        target.api,
        uid=pending.uid,
        resource_version=pending.resource_version,
    )
    result, call = _call_hook(target.hook, request)
    outcome = result if isinstance(result, Outcome) else _write_outcome(result, OutcomeKind.DELETED)
    publish(
        record_for(
            principal=target.principal,
            scope=scope,
            operation="delete",
            identity=_identity_of_scope(scope, kind, pending.name, pending.uid),
            outcome=outcome.kind.value,
            diff=delete_diff(),
            reason=audit_reason(outcome),
            call=call,
        ),
        principal=target.principal,
        scope=scope,
    )
    return outcome


@dataclass(frozen=True, slots=True)
class ReviewResult:
    """One review item and what its write did."""

    item: ReviewItem
    outcome: Outcome


def save_review(
    target: EditorTarget,
    store: LiveResourceStore,
    staging: Staging,
    flows: Callable[[str], SaveFlow],
    *,
    kind: str,
    live: bool,
) -> list[ReviewResult]:
    """One Save for the whole review list: deletes, creates, then edits, each audited.

    Successful creates and deletes leave the staging area; failed ones stay with their outcome.
    Nothing is written while the stream is not live.
    """
    items = staging.review(store)
    if not live:
        return [ReviewResult(item, Outcome(OutcomeKind.RECONNECTING)) for item in items]
    results = []
    for item in items:
        if item.kind == "delete":
            pending_delete = next(d for d in staging.deletes() if d.uid == item.key)
            outcome = delete(target, pending_delete, kind)
        elif item.kind == "create":
            pending_create = next(c for c in staging.creates() if c.draft_id == item.key)
            outcome = create(target, pending_create, kind)
        else:
            results.append(ReviewResult(item, save_edit(target, store, flows(item.key), live=live)))
            continue
        if item.kind == "delete" and outcome.kind is OutcomeKind.UNAVAILABLE and outcome.status_code == 404:
            staging.discard(item.key)  # already gone: nothing is left to delete
        else:
            staging.record(item.key, outcome)
        results.append(ReviewResult(item, outcome))
    return results
