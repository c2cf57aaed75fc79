"""WATCH: framing, resuming from a version, streaming lists, bookmarks, expiry, selectors and timeouts."""

from __future__ import annotations

import json
import time
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from .kube import MERGE_PATCH, configmap, request, watch

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def _version(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def _create(admin: kubernetes.client.ApiClient, namespace: str, name: str, **metadata: Any) -> dict[str, Any]:
    reply = request(
        admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap(name, {"k": name}, **metadata)
    )
    assert reply.status == 201, reply.body
    return reply.body  # type: ignore[no-any-return]


def _patch(admin: kubernetes.client.ApiClient, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = request(
        admin, "PATCH", f"/api/v1/namespaces/{namespace}/configmaps/{name}", body=body, content_type=MERGE_PATCH
    )
    assert reply.status == 200, reply.body
    return reply.body  # type: ignore[no-any-return]


def test_framing_of_a_typed_watch(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(admin)
    start = request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps").body["metadata"]["resourceVersion"]
    response = core.list_namespaced_config_map(
        namespace,
        watch=True,
        resource_version=start,
        timeout_seconds=10,
        _preload_content=False,
        _request_timeout=(5, 10),
    )
    try:
        assert response.headers["Content-Type"] == "application/json"
        assert response.headers["Transfer-Encoding"] == "chunked"
        _create(admin, namespace, "a")
        _patch(admin, namespace, "a", {"data": {"k": "changed"}})
        request(admin, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/a")
        lines = kubernetes.watch.watch.iter_resp_lines(response)
        events = [json.loads(next(lines)) for _ in range(3)]
    finally:
        response.close()
        response.release_conn()
    assert [event["type"] for event in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(set(event) == {"type", "object"} for event in events)
    assert all(event["object"]["kind"] == "ConfigMap" and event["object"]["apiVersion"] == "v1" for event in events)
    versions = [_version(event["object"]) for event in events]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert events[2]["object"]["metadata"]["uid"] == events[0]["object"]["metadata"]["uid"]
    assert events[2]["object"]["data"] == {"k": "changed"}


def test_watch_from_a_version_replays_later_changes_in_order(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    a = _create(admin, namespace, "a")
    _create(admin, namespace, "b")
    _patch(admin, namespace, "a", {"data": {"k": "a2"}})
    request(admin, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/b")
    with watch(
        admin, f"/api/v1/namespaces/{namespace}/configmaps", resourceVersion=a["metadata"]["resourceVersion"]
    ) as events:
        replayed = events.take(3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in replayed] == [
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
    ]
    assert replayed[1]["object"]["data"] == {"k": "a2"}


def test_streaming_list_ends_its_snapshot_with_a_bookmark(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    _create(admin, namespace, "a")
    b = _create(admin, namespace, "b")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    with watch(
        admin, path, sendInitialEvents="true", resourceVersionMatch="NotOlderThan", allowWatchBookmarks="true"
    ) as events:
        snapshot = events.until(lambda event: event["type"] == "BOOKMARK")
        c = _create(admin, namespace, "c")
        live = events.until(lambda event: event["type"] != "BOOKMARK")
    added, end = snapshot[:-1], snapshot[-1]
    assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in added) == [("ADDED", "a"), ("ADDED", "b")]
    assert set(end["object"]) == {"kind", "apiVersion", "metadata"}
    assert end["object"]["kind"] == "ConfigMap" and end["object"]["apiVersion"] == "v1"
    assert set(end["object"]["metadata"]) == {"resourceVersion", "annotations"}
    assert end["object"]["metadata"]["annotations"] == {INITIAL_EVENTS_END: "true"}
    assert _version(end["object"]) >= _version(b)
    assert live[-1]["type"] == "ADDED" and live[-1]["object"]["metadata"]["uid"] == c["metadata"]["uid"]


def test_streaming_list_needs_not_older_than(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        with watch(
            admin, f"/api/v1/namespaces/{namespace}/configmaps", sendInitialEvents="true", allowWatchBookmarks="true"
        ):
            pass
    assert caught.value.status == 422
    body = json.loads(caught.value.body)
    assert body["message"].startswith(
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires'
    )


def test_watch_without_a_version_starts_with_synthetic_adds(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    _create(admin, namespace, "a")
    with watch(admin, f"/api/v1/namespaces/{namespace}/configmaps") as events:
        first = events.next()
        _create(admin, namespace, "b")
        second = events.next()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "a")
    assert (second["type"], second["object"]["metadata"]["name"]) == ("ADDED", "b")


def test_bookmark_before_the_watch_times_out(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    """kube-apiserver sends a bookmark about two seconds before a watch's timeout (and about every minute)."""
    start = _create(admin, namespace, "a")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    with watch(
        admin, path, resourceVersion=start["metadata"]["resourceVersion"], allowWatchBookmarks="true", timeoutSeconds=3
    ) as events:
        changed = _patch(admin, namespace, "a", {"data": {"k": "b"}})
        seen = events.until(lambda event: event["type"] == "BOOKMARK")
    assert seen[0]["type"] == "MODIFIED"
    assert set(seen[-1]["object"]["metadata"]) == {"resourceVersion"}
    assert _version(seen[-1]["object"]) >= _version(changed)


def test_too_old_version_is_an_expired_error_event(compactable_server: Any) -> None:
    """A version older than the watch history: HTTP 200, then one ERROR event carrying a 410 Expired Status, then the end.

    Runs on a server of its own (``compactable_server``), so the compaction takes no history from
    other scenarios. The message names where the watch was served: the simulator's is the watch
    cache's (``too old resource version: <asked> (<oldest>)``); the real server here has no watch
    cache, so etcd's compaction reaches the watch and the message is etcd storage's. A third change
    after ``b`` puts the compaction past ``b``: etcd keeps the compacted revision itself, so a watch
    from ``a`` (needing ``b`` onwards) would still be served.
    """
    with compactable_server.api_client() as admin:
        assert request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": "compacted"}}).status == 201
        old = _create(admin, "compacted", "a")["metadata"]["resourceVersion"]
        _create(admin, "compacted", "b")
        _create(admin, "compacted", "c")
        compactable_server.faults.compact()
        with watch(admin, "/api/v1/namespaces/compacted/configmaps", resourceVersion=old) as events:
            events_seen = events.rest()
    assert len(events_seen) == 1
    error = events_seen[0]
    assert error["type"] == "ERROR"
    status = error["object"]
    assert status["kind"] == "Status" and status["apiVersion"] == "v1"
    assert status["status"] == "Failure" and status["code"] == 410 and status["reason"] == "Expired"
    if compactable_server.name == "simulator":
        assert status["message"].startswith(f"too old resource version: {old} (")
    else:
        assert status["message"] == "The resourceVersion for the provided watch is too old."


def test_label_selector_watch_sees_objects_enter_and_leave(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    start = _create(admin, namespace, "a", labels={"app": "db"})
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    with watch(admin, path, resourceVersion=start["metadata"]["resourceVersion"], labelSelector="app=web") as events:
        _create(admin, namespace, "other", labels={"app": "db"})
        entered = _patch(admin, namespace, "a", {"metadata": {"labels": {"app": "web"}}})
        _patch(admin, namespace, "a", {"data": {"k": "still web"}})
        left = _patch(admin, namespace, "a", {"metadata": {"labels": {"app": "db"}}})
        seen = events.take(3)
    assert [event["type"] for event in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert _version(seen[0]["object"]) == _version(entered)
    assert _version(seen[2]["object"]) == _version(left)
    assert seen[2]["object"]["metadata"]["labels"] == {"app": "web"}  # the last state the watcher was shown


def test_field_selector_watch_on_one_name(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    start = _create(admin, namespace, "a")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    with watch(
        admin, path, resourceVersion=start["metadata"]["resourceVersion"], fieldSelector="metadata.name=b"
    ) as events:
        _create(admin, namespace, "c")
        _create(admin, namespace, "b")
        seen = events.next()
    assert (seen["type"], seen["object"]["metadata"]["name"]) == ("ADDED", "b")


def test_all_namespaces_watch(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    start = request(admin, "GET", "/api/v1/configmaps", query=[("limit", 1)]).body["metadata"]["resourceVersion"]
    with watch(
        admin, "/api/v1/configmaps", resourceVersion=start, fieldSelector=f"metadata.namespace={namespace}"
    ) as events:
        _create(admin, namespace, "a")
        seen = events.next()
    assert seen["object"]["metadata"]["namespace"] == namespace


def test_timeout_seconds_ends_the_stream(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    started = time.monotonic()
    with watch(admin, f"/api/v1/namespaces/{namespace}/configmaps", timeoutSeconds=1) as events:
        assert events.rest() == []
    assert time.monotonic() - started < 5


def test_the_official_watch_helper(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    start = request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps").body["metadata"]["resourceVersion"]
    _create(admin, namespace, "a")
    watcher = kubernetes.watch.Watch(return_type=object)
    core = kubernetes.client.CoreV1Api(admin)
    for event in watcher.stream(
        core.list_namespaced_config_map, namespace, resource_version=start, timeout_seconds=5, _request_timeout=(5, 10)
    ):
        assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "a"
        break
    watcher.stop()
    assert watcher.resource_version == event["object"]["metadata"]["resourceVersion"]
