"""The audit file (``KRM_AUDIT_LOG``): one Kubernetes-shaped audit event per write attempt, without values."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from flask_krm import KrmStream, Principal, Scope
from flask_krm.save.audit import ObjectIdentity, WriteCall
from flask_krm.save.publish import publish, record_for
from tests.apps import allow, make_app


def test_the_audit_file_holds_one_kubernetes_shaped_event_per_write_without_values(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    app = make_app(tmp_path, KRM_AUDIT_LOG=str(audit))
    KrmStream(app, authorizer=allow)
    scope = Scope(target="demo", version="v1", resource="secrets", namespace="app", name="s")
    started = time.time()
    with app.app_context():
        publish(
            record_for(
                principal=Principal("editor"),
                scope=scope,
                operation="patch",
                identity=ObjectIdentity("v1", "Secret", "s", "app", "uid-9"),
                outcome="saved-pending",
                diff=({"op": "replace", "path": "/data/password", "redacted": True},),
                redacted_paths=("/data/password",),
                resource_version="42",
                call=WriteCall(
                    started=started, duration=0.01, code=200, impersonated_user="editor", impersonated_groups=("team",)
                ),
            ),
            principal=Principal("editor"),
            scope=scope,
        )
        publish(
            record_for(
                principal=Principal("viewer"),
                scope=scope,
                operation="patch",
                identity=ObjectIdentity("v1", "Secret", "s", "app", "uid-9"),
                outcome="refused",
                diff=(),
                reason="not allowed here",
            ),
            principal=Principal("viewer"),
            scope=scope,
        )
    saved, refused = [json.loads(line) for line in audit.read_text().splitlines()]
    assert saved["kind"] == "Event" and saved["apiVersion"] == "audit.k8s.io/v1" and saved["level"] == "Metadata"
    assert re.fullmatch(r"[0-9a-f-]{36}", saved["auditID"]) and saved["auditID"] != refused["auditID"]
    assert saved["verb"] == "patch" and saved["stage"] == "ResponseComplete"
    assert saved["user"] == {"username": "editor"}
    assert saved["impersonatedUser"] == {"username": "editor", "groups": ["team"]}
    assert saved["objectRef"] == {
        "resource": "secrets",
        "apiVersion": "v1",
        "namespace": "app",
        "name": "s",
        "uid": "uid-9",
        "resourceVersion": "42",
    }
    assert saved["responseStatus"] == {"metadata": {}, "code": 200, "status": "Success"}
    assert saved["requestReceivedTimestamp"] <= saved["stageTimestamp"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", saved["stageTimestamp"])
    assert saved["annotations"]["flask-krm.io/fields"] == "/data/password"
    assert saved["annotations"]["flask-krm.io/withheld"] == "/data/password"
    assert refused["responseStatus"] == {"metadata": {}, "code": 0, "status": "Failure", "reason": "refused"}
    assert "impersonatedUser" not in refused and refused["user"] == {"username": "viewer"}
    assert refused["annotations"]["flask-krm.io/reason"] == "not allowed here"
    assert '"value"' not in audit.read_text()
