"""KubeSimulator's options: users and RBAC at start-up, added users, history and compaction, the bookmark interval,
how long a read waits for a future resourceVersion."""

from __future__ import annotations

import time
from collections.abc import Iterator

import kubernetes.client
import pytest

from flask_krm.testing.simulator import KubeSimulator
from tests.contract.kube import configmap, request, unique_name, watch


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator() as simulator:
        yield simulator


@pytest.fixture
def namespace(kube: KubeSimulator) -> str:
    name = unique_name("options")
    with kube.api_client() as admin:
        assert request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": name}}).status == 201
    return name


def _create(admin: kubernetes.client.ApiClient, namespace: str, name: str) -> dict[str, object]:
    reply = request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap(name, {"k": name}))
    assert reply.status == 201
    return reply.body  # type: ignore[no-any-return]


def test_history_window_bounds_replay() -> None:
    with KubeSimulator(history_window=3) as small, small.api_client() as admin:
        request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": "w"}})
        first = _create(admin, "w", "a")["metadata"]["resourceVersion"]
        for name in ("b", "c", "d", "e"):
            _create(admin, "w", name)
        with watch(admin, "/api/v1/namespaces/w/configmaps", resourceVersion=first) as events:
            assert events.next()["type"] == "ERROR"


def test_periodic_bookmarks() -> None:
    with KubeSimulator(bookmark_interval=0.1) as frequent, frequent.api_client() as admin:
        with watch(
            admin, "/api/v1/namespaces/default/configmaps", allowWatchBookmarks="true", resourceVersion="0"
        ) as events:
            bookmark = events.until(lambda event: event["type"] == "BOOKMARK")[-1]
    assert set(bookmark["object"]["metadata"]) == {"resourceVersion"}


def test_added_user(kube: KubeSimulator, namespace: str) -> None:
    kube.add_user("carol", groups=["testers"])
    with kube.api_client("carol") as carol:
        reply = request(carol, "GET", f"/api/v1/namespaces/{namespace}/configmaps")
    assert reply.status == 403 and 'User "carol" cannot list' in reply.body["message"]


def test_rbac_objects_at_start_up() -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "cm-writer", "namespace": "team"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "cm-writer", "namespace": "team"},
        "subjects": [{"kind": "User", "name": "viewer"}],
        "roleRef": {"kind": "Role", "name": "cm-writer"},
    }
    with KubeSimulator(rbac=[role, binding]) as kube, kube.api_client("viewer") as viewer:
        assert request(viewer, "POST", "/api/v1/namespaces/team/configmaps", body=configmap("mine")).status == 201
        assert request(viewer, "POST", "/api/v1/namespaces/default/configmaps", body=configmap("mine")).status == 403


def test_a_closed_watch_connection_ends_the_watch(kube: KubeSimulator, namespace: str) -> None:
    with kube.api_client() as admin:
        with watch(admin, f"/api/v1/namespaces/{namespace}/configmaps", resourceVersion="0"):
            assert kube.open_watches() == 1
        deadline = time.monotonic() + 5
        while kube.open_watches():
            assert time.monotonic() < deadline, "the watch outlived its connection"
            time.sleep(0.02)


def test_history_is_kept_from_start_up() -> None:
    with KubeSimulator() as kube, kube.api_client() as admin:
        with watch(admin, "/api/v1/namespaces", resourceVersion="1") as events:
            first = events.next()
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "default"


def test_periodic_compaction() -> None:
    """Each compaction forgets the history up to the version the previous one saw, as kube-apiserver compacts etcd."""
    with KubeSimulator(compaction_interval=0.05) as kube, kube.api_client() as admin:
        request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": "c"}})
        old = _create(admin, "c", "a")["metadata"]["resourceVersion"]
        _create(admin, "c", "b")
        application = kube.application
        assert application is not None
        deadline = time.monotonic() + 5
        while kube.call(lambda: application.store.horizon) <= int(old):
            assert time.monotonic() < deadline, "no compaction passed the old version"
            time.sleep(0.02)
        with watch(admin, "/api/v1/namespaces/c/configmaps", resourceVersion=old) as events:
            assert events.next()["object"]["code"] == 410


def test_resource_version_wait() -> None:
    with KubeSimulator(resource_version_wait=0.05) as kube, kube.api_client() as admin:
        started = time.monotonic()
        reply = request(admin, "GET", "/api/v1/namespaces/default", query=[("resourceVersion", "999999")])
        assert reply.status == 504 and reply.body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
        assert time.monotonic() - started < 2
