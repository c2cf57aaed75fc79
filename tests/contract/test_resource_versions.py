"""resourceVersion at the edges: versions from the future, from the start of history, and not versions at all."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kubernetes.client

from .kube import Reply, configmap, request, watch

INVALID_SYNTAX = 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax'


def _current(admin: kubernetes.client.ApiClient) -> int:
    return int(request(admin, "GET", "/api/v1/namespaces", query=[("limit", 1)]).body["metadata"]["resourceVersion"])


def test_reads_at_a_future_version_time_out(
    kube_server: Any, admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    """kube-apiserver waits about 3 s for the version to arrive, then answers 504 (the three reads wait together)."""
    request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("a"))
    before = _current(admin)
    future = str(before + 100_000)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    reads = [
        (f"{path}/a", [("resourceVersion", future)]),
        (path, [("resourceVersion", future)]),
        (path, [("resourceVersion", future), ("resourceVersionMatch", "Exact")]),
    ]

    def read(target: tuple[str, list[tuple[str, str]]]) -> Reply:
        with kube_server.api_client("admin") as client:
            return request(client, "GET", target[0], query=target[1], timeout=30)

    with ThreadPoolExecutor(len(reads)) as pool:
        replies = list(pool.map(read, reads))
    for reply in replies:
        assert reply.status == 504
        current = int(reply.body["message"].rsplit(" ", 1)[1])
        assert current >= before
        assert reply.body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"Timeout: Too large resource version: {future}, current: {current}",
            "reason": "Timeout",
            "details": {
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            },
            "code": 504,
        }


def test_a_read_waits_for_a_version_about_to_arrive(
    kube_server: Any, admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    next_version = str(_current(admin) + 1)
    replies: list[Reply] = []

    def read() -> None:
        with kube_server.api_client("admin") as client:
            replies.append(
                request(
                    client,
                    "GET",
                    f"/api/v1/namespaces/{namespace}/configmaps",
                    query=[("resourceVersion", next_version)],
                )
            )

    reader = threading.Thread(target=read)
    reader.start()
    request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("arrives"))
    reader.join(30)
    [reply] = replies
    assert reply.status == 200, reply.body
    assert int(reply.body["metadata"]["resourceVersion"]) >= int(next_version)


def test_a_watch_from_a_future_version_stays_silent(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    started = time.monotonic()
    with watch(admin, path, resourceVersion=str(_current(admin) + 100_000), timeoutSeconds=1) as events:
        request(admin, "POST", path, body=configmap("unseen"))
        assert events.rest() == []
    assert time.monotonic() - started < 5


def test_history_reaches_back_to_the_first_version(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    """Until a compaction, every version since the server started can be listed and watched from."""
    first = request(
        admin, "GET", "/api/v1/namespaces", query=[("resourceVersion", "1"), ("resourceVersionMatch", "Exact")]
    )
    assert first.status == 200
    assert first.body == {
        "kind": "NamespaceList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "1"},
        "items": [],
    }
    with watch(admin, "/api/v1/namespaces", resourceVersion="1") as events:
        replayed = events.until(lambda event: event["object"]["metadata"]["name"] == namespace)
    added = {event["object"]["metadata"]["name"] for event in replayed if event["type"] == "ADDED"}
    assert replayed[0]["type"] == "ADDED" and {"default", "kube-system", "kube-public", namespace} <= added


def test_resource_versions_that_are_not_numbers(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("a"))
    unwrapped = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": INVALID_SYNTAX,
        "code": 500,
    }
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert request(admin, "GET", f"{path}/a", query=[("resourceVersion", "abc")]).body == unwrapped
    watched = request(admin, "GET", path, query=[("watch", "1"), ("resourceVersion", "abc")])
    assert (watched.status, watched.body) == (500, unwrapped)
    listed = request(admin, "GET", path, query=[("resourceVersion", "abc")])
    assert listed.status == 400 and listed.body["message"] == f"invalid resource version: {INVALID_SYNTAX}"
