"""Publishing audit records: one value-free log line and the signals.

Every write attempt (patch, create, delete, native patch) becomes an
:class:`~flask_krm.save.audit.AuditRecord`, sent with :data:`write_attempted`; an accepted write is
also sent with the extension's :data:`flask_krm.signals.saved`. Receivers must return promptly and
never raise. No record, log line or signal argument holds a redacted value.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from blinker import Namespace

from ..log_fields import request_id
from ..principal import Principal
from ..projection import is_secret
from ..proxies import current_app_or_none
from ..scope import Scope
from ..signals import saved
from .audit import AuditRecord, ObjectIdentity, Operation, WriteCall, merge_patch_ops, secret_value_paths
from .outcomes import Outcome, OutcomeKind, classify_write, status_reason

logger = logging.getLogger("flask_krm.save")

_signals = Namespace()

#: Every write attempt and its outcome, accepted or not. Keyword arguments: ``record`` (an
#: :class:`~flask_krm.save.audit.AuditRecord`: principal, target, operation, object identity,
#: outcome and an RFC 6902 diff whose redacted paths are named but never valued).
write_attempted = _signals.signal("krm-write-attempted")


def publish(record: AuditRecord, *, principal: Principal, scope: Scope) -> None:
    """Log ``record`` (one line, no values; the record itself rides along as the log record's
    ``krm_audit`` attribute, for structured handlers) and send it to the signals' receivers."""
    sender = current_app_or_none()
    fields = {
        "krm_event": "write",
        "request_id": request_id(),
        "target": record.target,
        "resource": f"{record.resource}.{record.api_group}" if record.api_group else record.resource,
        "operation": record.operation,
        "outcome": record.outcome,
    }
    logger.info("%s", record.log_line(), extra={"krm_audit": record, **fields})
    write_attempted.send(sender, record=record)
    if record.resource_version is not None or record.outcome in (OutcomeKind.CREATED, OutcomeKind.DELETED):
        saved.send(
            sender,
            principal=principal,
            target=record.target,
            scope=scope,
            uid=record.identity.uid,
            resource_version=record.resource_version,
            fields=record.fields,
            identity=record.identity,
            operation=record.operation,
            outcome=record.outcome,
            diff=record.diff,
            redacted_paths=record.redacted_paths,
        )


def record_for(
    *,
    principal: Principal,
    scope: Scope,
    operation: Operation,
    identity: ObjectIdentity,
    outcome: str,
    diff: tuple[Mapping[str, Any], ...],
    redacted_paths: tuple[str, ...] = (),
    resource_version: str | None = None,
    reason: str | None = None,
    call: WriteCall | None = None,
) -> AuditRecord:
    """An audit record for a write in ``scope`` by ``principal``; ``call`` when it was sent."""
    return AuditRecord(
        principal=principal.name,
        target=scope.target,
        operation=operation,
        identity=identity,
        outcome=str(outcome),
        diff=diff,
        redacted_paths=redacted_paths,
        resource_version=resource_version,
        reason=reason,
        resource=scope.resource,
        api_group=scope.group,
        call=call,
    )


def audit_reason(outcome: Outcome) -> str | None:
    """Why ``outcome`` wrote nothing (or was refused), value-free: its detail, else its 422 causes
    (field and message; a message at a redacted path was withheld when the cause was read)."""
    if outcome.detail:
        return outcome.detail
    causes = [f"{c.field or 'the object'}: {c.message or c.reason or 'invalid'}" for c in outcome.causes]
    return "; ".join(causes) or None


def publish_native_patch(*, principal: Principal, scope: Scope, patch: Mapping[str, Any], answer: Any) -> None:
    """Audit a proxied native merge patch; Secret values in it are named, never valued."""
    found = patch.get("metadata")
    metadata: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    kind = "Secret" if is_secret(scope.group, scope.resource) else ""
    redacted = secret_value_paths({}, patch) if kind else ()
    outcome = classify_write(answer.code, answer.status).value
    version = None
    if answer.ok and isinstance(answer.body, Mapping):
        written = answer.body.get("metadata")
        version = written.get("resourceVersion") if isinstance(written, Mapping) else None
    identity = ObjectIdentity(
        api_version=scope.api_version,
        kind=kind or scope.resource,
        name=scope.name,
        namespace=scope.namespace or None,
        uid=str(metadata.get("uid") or ""),
    )
    record = record_for(
        principal=principal,
        scope=scope,
        operation="patch",
        identity=identity,
        outcome=outcome,
        diff=merge_patch_ops(patch, redacted),
        redacted_paths=redacted,
        resource_version=version if isinstance(version, str) else None,
        reason=None if answer.ok else status_reason(answer.status, answer.code),
    )
    publish(record, principal=principal, scope=scope)
