"""The demo option: seeded objects, the rollout controller, periodic changes and the demo users' rights."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest

from flask_krm.testing.simulator import DEMO_NAMESPACES, KubeSimulator
from flask_krm.testing.simulator.demo import EDIT_EVERY, SCALE_EVERY
from tests.contract.kube import MERGE_PATCH, configmap, request, wait_until, watch

DEMO = DEMO_NAMESPACES[0]


@pytest.fixture
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        yield simulator


def _deployment(client: kubernetes.client.ApiClient, name: str, namespace: str = DEMO) -> dict[str, Any]:
    reply = request(client, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
    assert reply.status == 200
    return reply.body  # type: ignore[no-any-return]


def test_seeded_objects(kube: KubeSimulator) -> None:
    with kube.api_client("viewer") as viewer:
        names = {
            (item["metadata"]["namespace"], item["metadata"]["name"])
            for path in (
                "/api/v1/configmaps",
                "/api/v1/secrets",
                "/apis/apps/v1/deployments",
                "/apis/wardle.example.com/v1alpha1/flunders",
            )
            for item in request(viewer, "GET", path).body["items"]
        }
        flunder = request(viewer, "GET", f"/apis/wardle.example.com/v1alpha1/namespaces/{DEMO}/flunders/fl-1").body
    assert {(DEMO, "app-config"), (DEMO, "db-credentials"), (DEMO, "web"), (DEMO, "worker"), (DEMO, "fl-1")} <= names
    assert (DEMO_NAMESPACES[1], "web") in names
    assert [port["name"] for port in flunder["spec"]["ports"]] == ["http", "metrics"]


def test_rollout_progresses_like_a_deployment_controller(kube: KubeSimulator) -> None:
    with kube.api_client("admin") as admin:
        assert _deployment(admin, "web")["status"] == {}
        version = request(admin, "GET", f"/apis/apps/v1/namespaces/{DEMO}/deployments").body["metadata"][
            "resourceVersion"
        ]
        with watch(
            admin,
            f"/apis/apps/v1/namespaces/{DEMO}/deployments",
            resourceVersion=version,
            fieldSelector="metadata.name=web",
        ) as events:
            kube.demo_step(4)
            written = [event["object"] for event in events.take(3)]
        statuses = [obj["status"] for obj in written]
        assert [status.get("readyReplicas", 0) for status in statuses] == [0, 1, 2]
        assert [status["updatedReplicas"] for status in statuses] == [2, 2, 2]
        assert all(obj["spec"] == written[0]["spec"] and obj["metadata"]["generation"] == 1 for obj in written)
        final = _deployment(admin, "web")
        assert (
            final["metadata"]["resourceVersion"] == written[-1]["metadata"]["resourceVersion"]
        )  # the 4th step had nothing to do
    assert final["status"]["observedGeneration"] == 1 == final["metadata"]["generation"]
    assert final["status"]["updatedReplicas"] == 2 and final["status"]["availableReplicas"] == 2
    conditions = {condition["type"]: condition for condition in final["status"]["conditions"]}
    assert (
        conditions["Available"]["status"] == "True" and conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    )
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert final["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"


def test_a_spec_change_starts_a_new_rollout(kube: KubeSimulator) -> None:
    kube.demo_step(3)
    with kube.api_client("editor") as editor:
        patch = {
            "spec": {
                "replicas": 3,
                "template": {"spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.9"}]}},
            }
        }
        changed = request(
            editor, "PATCH", f"/apis/apps/v1/namespaces/{DEMO}/deployments/web", body=patch, content_type=MERGE_PATCH
        )
        assert changed.status == 200 and changed.body["metadata"]["generation"] == 2
        kube.demo_step()
        rolling = _deployment(editor, "web")
        assert rolling["status"]["observedGeneration"] == 2
        assert rolling["status"]["updatedReplicas"] == 3 and rolling["status"]["readyReplicas"] == 2
        assert rolling["status"]["replicas"] == 5
        assert {c["type"]: c["reason"] for c in rolling["status"]["conditions"]}["Progressing"] == "ReplicaSetUpdated"
        kube.demo_step(6)
        done = _deployment(editor, "web")
    assert done["status"]["readyReplicas"] == 3 and done["status"]["updatedReplicas"] == 3
    assert done["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"


def test_worker_is_scaled_now_and_then(kube: KubeSimulator) -> None:
    with kube.api_client("viewer") as viewer:
        before = _deployment(viewer, "worker")["spec"]["replicas"]
        kube.demo_step(SCALE_EVERY)
        after = _deployment(viewer, "worker")
    assert after["spec"]["replicas"] != before and after["metadata"]["generation"] == 2


def test_competing_edits() -> None:
    with KubeSimulator(demo=True, demo_tick=None, competing_edits=True) as kube, kube.api_client("viewer") as viewer:
        path = f"/api/v1/namespaces/{DEMO}/configmaps/app-config"
        before = request(viewer, "GET", path).body["data"]["greeting"]
        kube.demo_step(EDIT_EVERY)
        assert request(viewer, "GET", path).body["data"]["greeting"] != before


def test_the_controller_ticks_by_itself() -> None:
    with KubeSimulator(demo=True, demo_tick=0.02) as kube, kube.api_client("viewer") as viewer:
        wait_until(lambda: _deployment(viewer, "web").get("status", {}).get("readyReplicas") == 2, timeout=10)


def test_demo_users(kube: KubeSimulator) -> None:
    with (
        kube.api_client("editor") as editor,
        kube.api_client("viewer") as viewer,
        kube.api_client("krm-gateway") as gateway,
    ):
        patch = {"data": {"greeting": "hi"}}
        assert (
            request(
                editor,
                "PATCH",
                f"/api/v1/namespaces/{DEMO}/configmaps/app-config",
                body=patch,
                content_type=MERGE_PATCH,
            ).status
            == 200
        )
        assert request(editor, "POST", "/api/v1/namespaces/default/configmaps", body=configmap("x")).status == 403
        assert (
            request(
                viewer,
                "PATCH",
                f"/api/v1/namespaces/{DEMO}/configmaps/app-config",
                body=patch,
                content_type=MERGE_PATCH,
            ).status
            == 403
        )
        assert request(viewer, "GET", f"/api/v1/namespaces/{DEMO}/secrets/db-credentials").status == 200
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "editor",
                "resourceAttributes": {"verb": "patch", "resource": "configmaps", "namespace": DEMO},
            },
        }
        answered = request(gateway, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=review)
        assert answered.status == 201 and answered.body["status"]["allowed"] is True
        with watch(gateway, "/api/v1/configmaps", timeoutSeconds=1) as events:
            assert events.next()["type"] == "ADDED"
        assert (
            request(
                gateway,
                "PATCH",
                f"/api/v1/namespaces/{DEMO}/configmaps/app-config",
                body=patch,
                content_type=MERGE_PATCH,
            ).status
            == 403
        )
