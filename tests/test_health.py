"""Probes, metrics, structured logs and the audit file, through the Flask test client.

The event loop's ticker is a greenlet: in this unpatched process it runs whenever the test blocks
on gevent (``gevent.sleep``), and a ``time.sleep`` holds it up as a stuck event loop would. The
multi-worker behaviour (gunicorn, Redis, a real Prometheus) is in
``tests/example/test_operations_gunicorn.py``.
"""

from __future__ import annotations

import gc
import json
import logging
import re
import time
import typing as t
from collections.abc import Iterator
from pathlib import Path

import gevent
import pytest
from flask import Flask

from flask_krm import KrmStream, Principal, Scope
from flask_krm.log_json import JsonFormatter
from flask_krm.save.audit import ObjectIdentity, WriteCall
from flask_krm.save.publish import publish, record_for
from tests.apps import allow, make_app
from tests.redis_server import free_port
from tests.test_stream_view import QUERY, URL, Held, read_body

PROBES: t.Final = {"KRM_LIVENESS_PATH": "/livez", "KRM_READINESS_PATH": "/readyz"}
FORBIDDEN_LABELS: t.Final = re.compile(r'\b(namespace|name|principal|user|session|uid)="')


def unreachable_kubeconfig(path: Path) -> str:
    """A kubeconfig naming an API server nobody listens on."""
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Flask, KrmStream]]:
    krm = KrmStream(authorizer=allow)
    app = make_app(
        tmp_path,
        KRM_TARGETS={"demo": {"kubeconfig": unreachable_kubeconfig(tmp_path / "kubeconfig")}},
        KRM_DRAFTS_URL=f"redis://127.0.0.1:{free_port()}/0",  # nobody listens there either
        KRM_METRICS_PATH="/metrics",
        KRM_LIVENESS_MAX_LAG=0.5,
        **PROBES,
    )
    krm.init_app(app)
    yield app, krm
    krm.shutdown(app)
    assert not krm.runtime(app).group, "greenlets outlived shutdown"


def test_probes_and_metrics_are_off_by_default(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    KrmStream(app, authorizer=allow)
    client = app.test_client()
    for path in ("/livez", "/readyz", "/metrics", "/healthz"):
        assert client.get(path).status_code == 404


@pytest.mark.parametrize("key", ["KRM_METRICS_PATH", "KRM_LIVENESS_PATH", "KRM_READINESS_PATH"])
@pytest.mark.parametrize("value", ["metrics", "/", "/x?y", 3])
def test_a_path_setting_must_be_a_path(tmp_path: Path, key: str, value: t.Any) -> None:
    app = make_app(tmp_path, **{key: value})
    with pytest.raises(ValueError, match=key):
        KrmStream(app, authorizer=allow)


def test_readiness_waits_for_the_event_loop_then_fails_from_the_first_moment_of_a_drain(
    served: tuple[Flask, KrmStream],
) -> None:
    app, krm = served
    client = app.test_client()
    first = client.get("/readyz?verbose")
    assert first.status_code == 503
    assert "[-]event-loop failed (starting: the ticker has not ticked yet)" in first.text
    gevent.sleep(0.7)
    assert client.get("/readyz").status_code == 200
    assert client.get("/readyz").text == "ok"
    krm.runtime(app).begin_drain()
    drained = client.get("/readyz?verbose")
    assert drained.status_code == 503
    assert "[-]shutdown failed (draining: the server is stopping)" in drained.text
    assert drained.text.endswith("readyz check failed\n")
    assert client.get("/livez").status_code == 200  # draining is not dying


def test_liveness_and_readiness_stay_up_while_redis_and_the_api_server_are_down(
    served: tuple[Flask, KrmStream],
) -> None:
    app, _ = served
    client = app.test_client()
    client.get("/livez")
    gevent.sleep(0.7)
    live = client.get("/livez?verbose")
    assert live.status_code == 200, live.text
    assert re.match(r"\[\+\]event-loop ok \(\d+\.\dms behind\)\nlivez check passed\n", live.text)
    ready = client.get("/readyz?verbose")
    assert ready.status_code == 200, ready.text
    lines = ready.text.splitlines()
    assert lines[0] == "[+]shutdown ok"
    assert lines[1].startswith("[+]event-loop ok")
    assert lines[2] == "[-]drafts failed (unreachable: BackendUnavailable) [not counted]"
    assert re.fullmatch(r"\[-\]target:demo failed \(unreachable: \w+\) \[not counted\]", lines[3]), lines[3]
    assert lines[4] == "[+]watches ok (none open)"
    assert lines[5] == "readyz check passed"
    assert "127.0.0.1" not in ready.text  # no address leaks from the errors
    assert client.get("/readyz").text == "ok"


def test_liveness_fails_while_the_event_loop_is_held_and_recovers(served: tuple[Flask, KrmStream]) -> None:
    app, _ = served
    client = app.test_client()
    client.get("/livez")
    gevent.sleep(0.7)
    assert client.get("/livez").status_code == 200
    time.sleep(1.2)  # no greenlet runs: the ticker is overdue by more than KRM_LIVENESS_MAX_LAG
    stuck = client.get("/livez?verbose")
    assert stuck.status_code == 503
    assert re.match(r"\[-\]event-loop failed \(\d+\.\d{3}s behind, more than 0\.5s\)", stuck.text), stuck.text
    gevent.sleep(1.2)  # the ticker wakes (late: that lag is reported once), then on time
    assert client.get("/livez").status_code == 200


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one series in a text exposition."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        found_name, _, found_labels = series.partition("{")
        if found_name == name and ",".join(sorted(found_labels.rstrip("}").split(","))) == wanted:
            return float(value)
    raise AssertionError(f"no series {name}{{{wanted}}} in:\n{text}")


def test_metrics_count_json_streams_and_writes_without_names(served: tuple[Flask, KrmStream]) -> None:
    app, krm = served
    held = Held()
    krm.plug_source("demo", held, app)
    client = app.test_client()
    client.get("/login/viewer")
    response = client.get(f"{URL}?{QUERY}", buffered=False)
    with gevent.Timeout(5):
        next(response.response)  # the stream is open and has sent its snapshot
    exposition = client.get("/metrics")
    assert exposition.content_type.startswith("text/plain; version=")
    assert metric(exposition.text, "krm_streams_open", kind="json") == 1
    assert metric(exposition.text, "krm_streams_opened_total", kind="json") == 1
    response.close()
    after = client.get("/metrics").text
    assert metric(after, "krm_streams_open", kind="json") == 0

    scope = Scope(target="demo", version="v1", resource="configmaps", namespace="app", name="cm")
    with app.app_context():
        for outcome, code in (("saved-pending", 200), ("version-stale", 409)):
            publish(
                record_for(
                    principal=Principal("editor"),
                    scope=scope,
                    operation="patch",
                    identity=ObjectIdentity("v1", "ConfigMap", "cm", "app", "uid-1"),
                    outcome=outcome,
                    diff=({"op": "replace", "path": "/data/a", "value": "x"},),
                    call=WriteCall(started=time.time(), duration=0.02, code=code),
                ),
                principal=Principal("editor"),
                scope=scope,
            )
    text = client.get("/metrics").text
    labels = {"target": "demo", "kind": "ConfigMap", "operation": "patch"}
    assert metric(text, "krm_writes_total", outcome="saved-pending", **labels) == 1
    assert metric(text, "krm_writes_total", outcome="version-stale", **labels) == 1
    assert metric(text, "krm_save_duration_seconds_count", target="demo", operation="patch") == 2
    gc.collect()  # noted by the collector's callback, observed at the next scrape (or tick)
    assert metric(client.get("/metrics").text, "krm_gc_pause_seconds_count", generation="2") >= 1
    assert not FORBIDDEN_LABELS.search(text), FORBIDDEN_LABELS.search(text)
    assert "uid-1" not in text and "editor" not in text and '"cm"' not in text


def test_the_json_formatter_writes_the_structured_fields(
    served: tuple[Flask, KrmStream], caplog: pytest.LogCaptureFixture
) -> None:
    app, krm = served
    krm.plug_source("demo", Held(), app)
    client = app.test_client()
    client.get("/login/viewer")
    with caplog.at_level(logging.DEBUG, logger="flask_krm"):
        response = client.get(f"{URL}?{QUERY}", headers={"X-Request-Id": "req-42"}, buffered=False)
        with gevent.Timeout(5):
            next(response.response)
        response.close()
    formatter = JsonFormatter()
    lines = [
        json.loads(formatter.format(r)) for r in caplog.records if getattr(r, "krm_event", "").startswith("stream")
    ]
    assert [line["krm_event"] for line in lines] == ["stream-open", "stream-close"]
    opened, closed = lines
    assert opened["request_id"] == closed["request_id"] == "req-42"
    assert opened["stream_id"] == closed["stream_id"] and re.fullmatch(r"[0-9a-f]{16}", opened["stream_id"])
    assert opened["target"] == "demo" and opened["resource"] == "configmaps" and opened["kind"] == "json"
    assert closed["outcome"] == "client-closed"
    assert opened["level"] == "DEBUG" and opened["logger"] == "flask_krm" and opened["time"].endswith("+00:00")


def test_a_forged_request_id_is_replaced(served: tuple[Flask, KrmStream], caplog: pytest.LogCaptureFixture) -> None:
    app, krm = served
    krm.plug_source("demo", Held(), app)
    client = app.test_client()
    client.get("/login/viewer")
    with caplog.at_level(logging.DEBUG, logger="flask_krm"):
        response = client.get(f"{URL}?{QUERY}", headers={"X-Request-Id": "a b;forged=1"}, buffered=False)
        with gevent.Timeout(5):
            next(response.response)
        response.close()
    ids = {r.request_id for r in caplog.records if hasattr(r, "request_id")}  # type: ignore[attr-defined]
    assert len(ids) == 1 and re.fullmatch(r"[0-9a-f]{16}", ids.pop())


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


def test_a_stream_body_read_to_its_end_still_counts(served: tuple[Flask, KrmStream]) -> None:
    """A stream that ends by itself (its source ended) leaves no open stream in the metrics."""
    app, krm = served

    def ended(scope: Scope, projection: str, principal: Principal) -> list[t.Any]:
        return []

    krm.plug_source("demo", ended, app)
    client = app.test_client()
    client.get("/login/viewer")
    response = client.get(f"{URL}?{QUERY}")
    read_body(response)
    response.close()
    assert metric(client.get("/metrics").text, "krm_streams_open", kind="json") == 0
