"""Audit records as Kubernetes audit events: who, what, how it ended and when, at level Metadata."""

from __future__ import annotations

import re
from typing import Any

import pytest

from flask_krm.save.audit import AuditRecord, ObjectIdentity, WriteCall
from flask_krm.save.audit_events import ANNOTATION_PREFIX, audit_event

NOW = 1_700_000_000.25
SECRET = "c3VwZXItc2VjcmV0"


def record(**changes: Any) -> AuditRecord:
    fields: dict[str, Any] = {
        "principal": "editor",
        "target": "demo",
        "operation": "patch",
        "identity": ObjectIdentity("apps/v1", "Deployment", "web", "team", "uid-1"),
        "outcome": "saved-pending",
        "diff": ({"op": "replace", "path": "/spec/replicas", "value": 3},),
        "resource_version": "8",
        "resource": "deployments",
        "api_group": "apps",
        "call": WriteCall(started=NOW - 0.5, duration=0.5, code=200),
    }
    return AuditRecord(**{**fields, **changes})


def test_an_accepted_patch_is_a_successful_metadata_level_event() -> None:
    event = audit_event(record(), now=NOW, audit_id="id-1")
    assert event == {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": "id-1",
        "stage": "ResponseComplete",
        "verb": "patch",
        "user": {"username": "editor"},
        "objectRef": {
            "resource": "deployments",
            "apiVersion": "v1",
            "apiGroup": "apps",
            "namespace": "team",
            "name": "web",
            "uid": "uid-1",
            "resourceVersion": "8",
        },
        "responseStatus": {"metadata": {}, "code": 200, "status": "Success"},
        "requestReceivedTimestamp": "2023-11-14T22:13:19.750000Z",
        "stageTimestamp": "2023-11-14T22:13:20.250000Z",
        "annotations": {
            ANNOTATION_PREFIX + "outcome": "saved-pending",
            ANNOTATION_PREFIX + "target": "demo",
            ANNOTATION_PREFIX + "fields": "/spec/replicas",
        },
    }


def test_an_attempt_never_sent_is_a_failure_with_code_0_received_now() -> None:
    event = audit_event(record(outcome="refused", call=None, resource_version=None, reason="no"), now=NOW)
    assert event["responseStatus"] == {"metadata": {}, "code": 0, "status": "Failure", "reason": "refused"}
    assert event["requestReceivedTimestamp"] == event["stageTimestamp"]
    assert "resourceVersion" not in event["objectRef"]
    assert event["annotations"][ANNOTATION_PREFIX + "reason"] == "no"
    assert "impersonatedUser" not in event
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", event["auditID"])
    assert audit_event(record(), now=NOW)["auditID"] != event["auditID"]


@pytest.mark.parametrize(
    ("code", "outcome", "status"),
    [
        (201, "created", "Success"),
        (200, "deleted", "Success"),
        (200, "saved", "Success"),
        (409, "version-stale", "Failure"),
        (200, "invalid", "Failure"),  # an answer in 2xx that the flow did not accept
    ],
)
def test_success_needs_a_2xx_answer_and_an_accepting_outcome(code: int, outcome: str, status: str) -> None:
    event = audit_event(record(outcome=outcome, call=WriteCall(NOW, 0.0, code)), now=NOW)
    assert event["responseStatus"]["status"] == status
    assert event["responseStatus"]["code"] == code
    assert ("reason" in event["responseStatus"]) is (status == "Failure")


def test_a_cluster_scoped_core_object_has_no_group_or_namespace_and_a_failed_create_no_uid() -> None:
    identity = ObjectIdentity("v1", "Namespace", "team")
    event = audit_event(record(identity=identity, api_group="", resource="namespaces", operation="create"), now=NOW)
    assert event["objectRef"] == {"resource": "namespaces", "apiVersion": "v1", "name": "team", "resourceVersion": "8"}
    assert event["verb"] == "create"


def test_the_impersonated_user_and_groups_are_named() -> None:
    call = WriteCall(NOW, 0.1, 200, impersonated_user="alice", impersonated_groups=("team", "dev"))
    assert audit_event(record(call=call), now=NOW)["impersonatedUser"] == {
        "username": "alice",
        "groups": ["team", "dev"],
    }
    alone = WriteCall(NOW, 0.1, 200, impersonated_user="alice")
    assert audit_event(record(call=alone), now=NOW)["impersonatedUser"] == {"username": "alice"}


def test_withheld_paths_are_named_and_no_value_is_in_the_event() -> None:
    diff = ({"op": "replace", "path": "/data/password", "value": SECRET},)
    event = audit_event(record(diff=diff, redacted_paths=("/data/password",)), now=NOW)
    assert event["annotations"][ANNOTATION_PREFIX + "withheld"] == "/data/password"
    assert event["annotations"][ANNOTATION_PREFIX + "fields"] == "/data/password"
    assert SECRET not in repr(event)
