"""Prometheus metrics through the Flask test client: stream and write counts, no names in labels
(multi-worker metrics are in ``tests/example/test_operations_gunicorn.py``)."""

from __future__ import annotations

import gc
import re
import time
import typing as t

import gevent
import pytest
from flask import Flask

from flask_krm import KrmStream, Principal, Scope
from flask_krm.drafts.backend import BackendUnavailable
from flask_krm.drafts.memory_backend import MemoryBackend
from flask_krm.metrics import MeteredBackend, Metrics
from flask_krm.save.audit import ObjectIdentity, WriteCall
from flask_krm.save.publish import publish, record_for
from tests.test_stream_view import QUERY, URL, Held, read_body

FORBIDDEN_LABELS: t.Final = re.compile(r'\b(namespace|name|principal|user|session|uid)="')


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


class Unreachable(MemoryBackend):
    """A memory backend whose ``touch`` fails as an unreachable server does."""

    def touch(self, session_id: str, lifetime: float) -> None:
        raise BackendUnavailable("down")


def test_a_metered_backend_forwards_every_member_and_times_the_protocols_calls() -> None:
    metrics = Metrics()
    inner = Unreachable()
    backend = MeteredBackend.around(inner, metrics)
    assert backend.outlives_process is False
    assert backend.write("s1", {"draft": {"a": "one"}}, 60.0) is True
    assert backend.read("s1") == inner.read("s1") and backend.read("s1")
    token = backend.lock("s1", "save", 5.0)
    assert token is not None and backend.lock("s1", "save", 5.0) is None
    backend.unlock("s1", "save", token)
    with pytest.raises(BackendUnavailable):
        backend.touch("s1", 60.0)
    text = metrics.exposition()[0].decode()
    assert metric(text, "krm_draft_backend_seconds_count", operation="write") == 1
    assert metric(text, "krm_draft_backend_seconds_count", operation="read") == 2
    assert metric(text, "krm_draft_backend_seconds_count", operation="lock") == 2
    assert metric(text, "krm_draft_backend_seconds_count", operation="unlock") == 1
    assert metric(text, "krm_draft_backend_errors_total", operation="touch") == 1
    assert 'operation="write"' not in text.split("krm_draft_backend_errors_total")[-1]
