"""Simulator-only fault injection: these break the server on purpose, which a real kube-apiserver
cannot be asked to do."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest
import urllib3

from flask_krm.testing.simulator import KubeSimulator, WriteRequest
from flask_krm.testing.simulator.faults import Faults
from tests.contract.kube import MERGE_PATCH, configmap, request, unique_name, watch


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator() as simulator:
        yield simulator


@pytest.fixture
def faults(kube: KubeSimulator) -> Iterator[Faults]:
    yield kube.faults
    kube.faults.accept_connections()
    kube.faults.set_latency(0)


@pytest.fixture
def admin(kube: KubeSimulator) -> Iterator[kubernetes.client.ApiClient]:
    with kube.api_client("admin") as client:
        yield client


@pytest.fixture
def namespace(admin: kubernetes.client.ApiClient) -> str:
    name = unique_name("faults")
    assert request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": name}}).status == 201
    return name


def _create(admin: kubernetes.client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    reply = request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap(name, {"k": name}))
    assert reply.status == 201
    return reply.body  # type: ignore[no-any-return]


def test_drop_watches_cuts_the_stream_mid_response(
    admin: kubernetes.client.ApiClient, namespace: str, faults: Faults
) -> None:
    start = _create(admin, namespace, "a")
    with watch(
        admin, f"/api/v1/namespaces/{namespace}/configmaps", resourceVersion=start["metadata"]["resourceVersion"]
    ) as events:
        _create(admin, namespace, "b")
        assert events.next()["object"]["metadata"]["name"] == "b"
        assert faults.drop_watches() >= 1
        with pytest.raises(urllib3.exceptions.ProtocolError):
            events.rest()


def test_expire_watches_sends_a_410_error_event(
    admin: kubernetes.client.ApiClient, namespace: str, faults: Faults
) -> None:
    start = _create(admin, namespace, "a")
    with watch(
        admin, f"/api/v1/namespaces/{namespace}/configmaps", resourceVersion=start["metadata"]["resourceVersion"]
    ) as events:
        _create(admin, namespace, "b")
        events.next()
        faults.expire_watches()
        remaining = events.rest()
    assert [event["type"] for event in remaining] == ["ERROR"]
    assert remaining[0]["object"]["code"] == 410 and remaining[0]["object"]["reason"] == "Expired"


def test_compaction_expires_old_versions(admin: kubernetes.client.ApiClient, namespace: str, faults: Faults) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    old = _create(admin, namespace, "a")["metadata"]["resourceVersion"]
    _create(admin, namespace, "b")
    token = request(admin, "GET", path, query=[("limit", 1)]).body["metadata"]["continue"]
    _create(admin, namespace, "c")
    horizon = faults.compact()
    with watch(admin, path, resourceVersion=old) as events:
        error = events.rest()[0]["object"]
    assert error["code"] == 410 and error["message"] == f"too old resource version: {old} ({horizon})"
    exact = request(admin, "GET", path, query=[("resourceVersion", old), ("resourceVersionMatch", "Exact")])
    assert exact.status == 410 and exact.body["message"] == "The resourceVersion for the provided list is too old."
    continued = request(admin, "GET", path, query=[("limit", 1), ("continue", token)])
    assert continued.status == 410 and continued.body["reason"] == "Expired"
    inconsistent = continued.body["metadata"]["continue"]
    rest = request(admin, "GET", path, query=[("continue", inconsistent)]).body
    assert [item["metadata"]["name"] for item in rest["items"]] == ["b", "c"]  # continued at the latest version
    with watch(admin, path, resourceVersion=str(horizon)) as events:
        _create(admin, namespace, "d")
        assert events.next()["object"]["metadata"]["name"] == "d"


def test_refused_connections_are_closed(admin: kubernetes.client.ApiClient, faults: Faults) -> None:
    assert request(admin, "GET", "/api/v1/namespaces/default").status == 200  # a kept-alive connection exists
    faults.refuse_connections(60)
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        request(admin, "GET", "/api/v1/namespaces/default")
    faults.accept_connections()
    assert request(admin, "GET", "/api/v1/namespaces/default").status == 200


def test_refused_requests_can_be_503(admin: kubernetes.client.ApiClient, faults: Faults) -> None:
    faults.refuse_connections(60, respond_503=True)
    reply = request(admin, "GET", "/api/v1/namespaces/default")
    assert reply.status == 503 and reply.body["reason"] == "ServiceUnavailable"


def test_refusal_ends_by_itself(admin: kubernetes.client.ApiClient, faults: Faults) -> None:
    faults.refuse_connections(0.2, respond_503=True)
    deadline = time.monotonic() + 5
    while request(admin, "GET", "/api/v1/namespaces/default").status == 503:
        assert time.monotonic() < deadline, "still refusing"
        time.sleep(0.05)


def test_latency(admin: kubernetes.client.ApiClient, faults: Faults) -> None:
    faults.set_latency(0.2)
    started = time.monotonic()
    assert request(admin, "GET", "/api/v1/namespaces/default").status == 200
    assert time.monotonic() - started >= 0.2


def test_lost_write_response_still_applies_the_write(
    admin: kubernetes.client.ApiClient, namespace: str, faults: Faults
) -> None:
    _create(admin, namespace, "a")
    path = f"/api/v1/namespaces/{namespace}/configmaps/a"
    faults.lose_next_write_response()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        request(admin, "PATCH", path, body={"data": {"k": "applied"}}, content_type=MERGE_PATCH)
    assert request(admin, "GET", path).body["data"] == {"k": "applied"}
    assert request(admin, "PATCH", path, body={"data": {"k": "again"}}, content_type=MERGE_PATCH).status == 200


def test_mutating_hook_runs_before_every_write(
    admin: kubernetes.client.ApiClient, namespace: str, faults: Faults
) -> None:
    seen: list[str] = []

    def restore_owner(write: WriteRequest) -> None:
        seen.append(write.verb)
        if write.resource.plural == "configmaps":
            write.new["metadata"].setdefault("labels", {})["owner"] = "platform"

    remove = faults.mutate_writes(restore_owner)
    try:
        created = _create(admin, namespace, "a")
        path = f"/api/v1/namespaces/{namespace}/configmaps/a"
        patched = request(
            admin, "PATCH", path, body={"metadata": {"labels": {"owner": None}}}, content_type=MERGE_PATCH
        ).body
    finally:
        remove()
    assert created["metadata"]["labels"] == {"owner": "platform"}
    assert patched["metadata"]["labels"] == {"owner": "platform"}
    assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # restored: nothing changed
    assert seen == ["create", "patch"]
    after = request(admin, "PATCH", path, body={"metadata": {"labels": {"owner": None}}}, content_type=MERGE_PATCH).body
    assert "labels" not in after["metadata"] or "owner" not in after["metadata"]["labels"]


def test_held_watch_events_arrive_in_order_after_release(
    admin: kubernetes.client.ApiClient, namespace: str, faults: Faults
) -> None:
    start = _create(admin, namespace, "a")
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    version = start["metadata"]["resourceVersion"]
    with (
        watch(admin, collection, resourceVersion=version) as events,
        watch(admin, collection, resourceVersion=version, read_timeout=0.5) as quiet,
    ):
        _create(admin, namespace, "b")
        assert events.next()["object"]["metadata"]["name"] == "b"
        assert quiet.next()["object"]["metadata"]["name"] == "b"
        assert faults.hold_watch_events() >= 2
        _create(admin, namespace, "c")
        path = f"{collection}/c"
        patched = request(admin, "PATCH", path, body={"data": {"k": "d"}}, content_type=MERGE_PATCH).body
        assert request(admin, "GET", path).body["data"] == {"k": "d"}, "reads see the store, not the watch"
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):
            quiet.next()  # nothing is delivered while held
        assert faults.release_watch_events() >= 1
        delivered = [events.next(), events.next()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in delivered] == [("ADDED", "c"), ("MODIFIED", "c")]
    assert delivered[1]["object"]["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]


def test_write_hooks_see_a_status_write_as_one(
    admin: kubernetes.client.ApiClient, namespace: str, faults: Faults
) -> None:
    seen: list[tuple[str, str]] = []
    remove = faults.mutate_writes(lambda write: seen.append((write.verb, write.subresource)))
    try:
        body = {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                },
            },
        }
        path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
        assert request(admin, "POST", path, body=body).status == 201
        status = request(
            admin, "PATCH", f"{path}/web/status", body={"status": {"readyReplicas": 1}}, content_type=MERGE_PATCH
        )
        spec = request(admin, "PATCH", f"{path}/web", body={"spec": {"replicas": 2}}, content_type=MERGE_PATCH)
        scale = request(admin, "PATCH", f"{path}/web/scale", body={"spec": {"replicas": 3}}, content_type=MERGE_PATCH)
    finally:
        remove()
    assert status.status == 200 and spec.status == 200 and scale.status == 200
    assert seen == [("create", ""), ("patch", "status"), ("patch", ""), ("patch", "scale")]


def test_refused_streaming_lists(admin: kubernetes.client.ApiClient, namespace: str, faults: Faults) -> None:
    faults.refuse_streaming_lists("wardle.example.com/v1alpha1")
    try:
        streaming = {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan", "allowWatchBookmarks": "true"}
        with pytest.raises(kubernetes.client.exceptions.ApiException) as refused:
            with watch(admin, f"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders", **streaming):
                pass
        status = json.loads(refused.value.body)
        assert refused.value.status == 422 and status["reason"] == "Invalid"
        assert status["details"]["causes"] == [
            {
                "reason": "FieldValueForbidden",
                "field": "sendInitialEvents",
                "message": (
                    "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
                ),
            }
        ]
        with watch(admin, f"/api/v1/namespaces/{namespace}/configmaps", **streaming) as events:
            assert events.next()["type"] == "BOOKMARK"  # other group versions still stream
    finally:
        faults.serve_streaming_lists()
