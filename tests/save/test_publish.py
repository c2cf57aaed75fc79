"""Publishing audit records: the reason a write is recorded with, the log line and the signals."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from flask_krm.principal import Principal
from flask_krm.save.audit import AuditRecord, ObjectIdentity, WriteCall
from flask_krm.save.outcomes import FieldCause, Outcome, OutcomeKind
from flask_krm.save.publish import audit_reason, publish, publish_native_patch, record_for, write_attempted
from flask_krm.scope import Scope
from flask_krm.signals import saved


def test_the_reason_of_a_refusal_is_recorded_without_values() -> None:
    assert audit_reason(Outcome(OutcomeKind.REFUSED, detail="at most 10 replicas")) == "at most 10 replicas"
    invalid = Outcome(
        OutcomeKind.INVALID,
        causes=(
            FieldCause("data.token", ("data", "token"), "FieldValueInvalid", None),  # withheld: a Secret value
            FieldCause("spec.replicas", ("spec", "replicas"), "FieldValueInvalid", "must be >= 0"),
        ),
    )
    assert audit_reason(invalid) == "data.token: FieldValueInvalid; spec.replicas: must be >= 0"
    assert audit_reason(Outcome(OutcomeKind.SAVED_PENDING)) is None


SCOPE = Scope(target="demo", group="apps", version="v1", resource="deployments", namespace="team", name="web")
SECRETS = Scope(target="demo", version="v1", resource="secrets", namespace="team", name="creds")
EDITOR = Principal("editor")


def record(outcome: str = "saved-pending", resource_version: str | None = "8", **options: Any) -> AuditRecord:
    return record_for(
        principal=EDITOR,
        scope=SCOPE,
        operation="patch",
        identity=ObjectIdentity("apps/v1", "Deployment", "web", "team", "uid-1"),
        outcome=outcome,
        diff=({"op": "replace", "path": "/spec/replicas", "value": 3},),
        resource_version=resource_version,
        **options,
    )


@contextmanager
def received() -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    attempts: list[dict[str, Any]] = []
    accepted: list[dict[str, Any]] = []
    with (
        write_attempted.connected_to(lambda sender, **kw: attempts.append(kw)),
        saved.connected_to(lambda sender, **kw: accepted.append(kw)),
    ):
        yield attempts, accepted


def test_a_record_names_the_scopes_target_resource_and_group_and_the_principal() -> None:
    made = record(reason="why", call=WriteCall(started=1.0, duration=0.5, code=200))
    assert (made.principal, made.target, made.resource, made.api_group) == ("editor", "demo", "deployments", "apps")
    assert made.reason == "why" and made.call is not None and made.call.code == 200
    assert made.outcome == "saved-pending" and made.resource_version == "8"


def test_an_accepted_write_is_sent_as_an_attempt_and_as_saved() -> None:
    made = record()
    with received() as (attempts, accepted):
        publish(made, principal=EDITOR, scope=SCOPE)
    assert attempts == [{"record": made}]
    assert len(accepted) == 1
    assert accepted[0]["principal"] is EDITOR and accepted[0]["scope"] == SCOPE
    assert accepted[0]["uid"] == "uid-1" and accepted[0]["resource_version"] == "8"
    assert accepted[0]["fields"] == made.fields and accepted[0]["diff"] == made.diff


@pytest.mark.parametrize(("outcome", "sent"), [("created", True), ("deleted", True), ("conflict", False)])
def test_a_write_without_a_version_is_saved_only_when_it_created_or_deleted(outcome: str, sent: bool) -> None:
    with received() as (attempts, accepted):
        publish(record(outcome, resource_version=None), principal=EDITOR, scope=SCOPE)
    assert len(attempts) == 1
    assert [a["outcome"] for a in accepted] == ([outcome] if sent else [])


def test_the_log_line_is_the_records_with_its_fields_as_attributes(caplog: pytest.LogCaptureFixture) -> None:
    made = record()
    with caplog.at_level(logging.INFO, logger="flask_krm.save"):
        publish(made, principal=EDITOR, scope=SCOPE)
    [line] = caplog.records
    assert line.getMessage() == made.log_line()
    assert line.krm_audit is made  # type: ignore[attr-defined]
    assert (line.krm_event, line.resource, line.operation, line.outcome) == (  # type: ignore[attr-defined]
        "write",
        "deployments.apps",
        "patch",
        "saved-pending",
    )


@dataclass
class Answer:
    code: int
    body: Any = None
    status: Any = None

    @property
    def ok(self) -> bool:
        return 200 <= self.code <= 299


def test_a_native_secret_patch_names_its_values_paths_and_never_their_values() -> None:
    patch = {"metadata": {"uid": "uid-s", "resourceVersion": "4"}, "data": {"password": "c2VjcmV0"}}
    with received() as (attempts, accepted):
        publish_native_patch(
            principal=EDITOR, scope=SECRETS, patch=patch, answer=Answer(200, {"metadata": {"resourceVersion": "5"}})
        )
    made = attempts[0]["record"]
    assert made.identity == ObjectIdentity("v1", "Secret", "creds", "team", "uid-s")
    assert made.redacted_paths == ("/data/password",)
    assert made.resource_version == "5" and made.reason is None
    assert "c2VjcmV0" not in repr(made) and "c2VjcmV0" not in repr(accepted)


def test_a_refused_native_patch_records_the_status_reason_and_no_version() -> None:
    forbidden = {"kind": "Status", "reason": "Forbidden", "code": 403}
    with received() as (attempts, accepted):
        publish_native_patch(
            principal=EDITOR, scope=SCOPE, patch={"spec": {"replicas": 2}}, answer=Answer(403, status=forbidden)
        )
    made = attempts[0]["record"]
    assert made.identity.kind == "deployments" and made.identity.uid == ""
    assert made.redacted_paths == () and made.resource_version is None
    assert made.reason == "Forbidden"
    assert accepted == []
