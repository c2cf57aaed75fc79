"""Authentication, RBAC, impersonation and access reviews, with the Status bodies a real server sends."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import kubernetes.client
import pytest

from .kube import MERGE_PATCH, configmap, request, unique_name, wait_until

RBAC = "/apis/rbac.authorization.k8s.io/v1"
REVIEWS = "/apis/authorization.k8s.io/v1"


def _client_with_token(kube_server: Any, token: str | None) -> kubernetes.client.ApiClient:
    client = kube_server.api_client("admin")
    client.configuration.refresh_api_key_hook = None  # a kubeconfig-loaded client would restore the token
    client.configuration.api_key = {"authorization": f"Bearer {token}"} if token else {}
    client.configuration.api_key_prefix = {}
    return client


def _allowed(admin: kubernetes.client.ApiClient, user: str, groups: Iterable[str], **attributes: str) -> bool:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": list(groups), "resourceAttributes": attributes},
    }
    reply = request(admin, "POST", f"{REVIEWS}/subjectaccessreviews", body=review)
    assert reply.status == 201, reply.body
    return bool(reply.body["status"]["allowed"])


def _grant(admin: kubernetes.client.ApiClient, namespace: str, rule: dict[str, Any], subject: dict[str, str]) -> None:
    """A Role with ``rule`` bound to ``subject`` in ``namespace``."""
    role = unique_name("role")
    created = request(
        admin,
        "POST",
        f"{RBAC}/namespaces/{namespace}/roles",
        body={
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": role},
            "rules": [rule],
        },
    )
    assert created.status == 201, created.body
    bound = request(
        admin,
        "POST",
        f"{RBAC}/namespaces/{namespace}/rolebindings",
        body={
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", **subject}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        },
    )
    assert bound.status == 201, bound.body


@pytest.mark.parametrize("token", [None, "not-a-token"])
def test_unauthenticated_requests_get_401(kube_server: Any, token: str | None) -> None:
    with _client_with_token(kube_server, token) as client:
        reply = request(client, "GET", "/api/v1/namespaces")
    assert reply.status == 401
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


def test_forbidden_write(
    admin: kubernetes.client.ApiClient, viewer: kubernetes.client.ApiClient, namespace: str
) -> None:
    request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("a"))
    assert request(viewer, "GET", f"/api/v1/namespaces/{namespace}/configmaps/a").status == 200
    reply = request(
        viewer,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/a",
        body={"data": {"k": "v"}},
        content_type=MERGE_PATCH,
    )
    assert reply.status == 403
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'configmaps "a" is forbidden: User "viewer" cannot patch resource "configmaps" in API group "" in the namespace "{namespace}"',
        "reason": "Forbidden",
        "details": {"name": "a", "kind": "configmaps"},
        "code": 403,
    }


def test_forbidden_list_at_cluster_scope(viewer: kubernetes.client.ApiClient) -> None:
    reply = request(viewer, "GET", f"{RBAC}/clusterroles")
    assert reply.status == 403
    assert reply.body["message"] == (
        'clusterroles.rbac.authorization.k8s.io is forbidden: User "viewer" cannot list resource "clusterroles" '
        'in API group "rbac.authorization.k8s.io" at the cluster scope'
    )
    assert reply.body["details"] == {"group": "rbac.authorization.k8s.io", "kind": "clusterroles"}


def test_forbidden_subresource(
    admin: kubernetes.client.ApiClient, viewer: kubernetes.client.ApiClient, namespace: str
) -> None:
    labels = {"app": "web"}
    request(
        admin,
        "POST",
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        body={
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
                },
            },
        },
    )
    reply = request(
        viewer,
        "PATCH",
        f"/apis/apps/v1/namespaces/{namespace}/deployments/web/status",
        body={"status": {}},
        content_type=MERGE_PATCH,
    )
    assert reply.status == 403
    assert reply.body["message"] == (
        f'deployments.apps "web" is forbidden: User "viewer" cannot patch resource "deployments/status" in API group "apps" '
        f'in the namespace "{namespace}"'
    )


def test_role_with_resource_names(
    admin: kubernetes.client.ApiClient, viewer: kubernetes.client.ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("allowed", "other"):
        request(admin, "POST", path, body=configmap(name))
    _grant(
        admin,
        namespace,
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"], "resourceNames": ["allowed"]},
        {"kind": "User", "name": "viewer"},
    )
    wait_until(
        lambda: _allowed(
            admin,
            "viewer",
            ["system:authenticated"],
            verb="patch",
            resource="configmaps",
            namespace=namespace,
            name="allowed",
        )
    )
    assert (
        request(viewer, "PATCH", f"{path}/allowed", body={"data": {"k": "v"}}, content_type=MERGE_PATCH).status == 200
    )
    assert request(viewer, "PATCH", f"{path}/other", body={"data": {"k": "v"}}, content_type=MERGE_PATCH).status == 403
    assert not _allowed(
        admin,
        "viewer",
        ["system:authenticated"],
        verb="patch",
        resource="configmaps",
        namespace=namespace,
        name="other",
    )


def test_impersonation_acts_as_the_impersonated_user(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    request(admin, "POST", path, body=configmap("a"))
    as_viewer = [("Impersonate-User", "viewer")]
    assert request(admin, "GET", f"{path}/a", headers=as_viewer).status == 200
    reply = request(admin, "PATCH", f"{path}/a", body={"data": {"k": "v"}}, content_type=MERGE_PATCH, headers=as_viewer)
    assert reply.status == 403 and 'User "viewer" cannot patch' in reply.body["message"]


def test_impersonation_needs_permission(viewer: kubernetes.client.ApiClient) -> None:
    """With constrained impersonation (1.37) the refusal names the impersonate-on check of the request itself."""
    reply = request(viewer, "GET", "/api/v1/namespaces", headers=[("Impersonate-User", "admin")])
    assert reply.status == 403
    assert reply.body["message"] == (
        'namespaces is forbidden: User "viewer" cannot impersonate-on:user-info:list resource "namespaces" '
        'in API group "" at the cluster scope'
    )
    assert reply.body["details"] == {"kind": "namespaces"}


def test_impersonating_groups_needs_a_user(admin: kubernetes.client.ApiClient) -> None:
    reply = request(admin, "GET", "/api/v1/namespaces", headers=[("Impersonate-Group", "g")])
    assert reply.status == 400
    assert reply.body["message"] == (
        'requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"g"}, Extra:map[string][]string(nil)} '
        "without impersonating a user name"
    )


def test_impersonated_groups_are_one_per_header(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    user, first, second = unique_name("someone"), unique_name("group"), unique_name("group")
    _grant(
        admin,
        namespace,
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]},
        {"kind": "Group", "name": second},
    )
    wait_until(lambda: _allowed(admin, user, [second], verb="list", resource="configmaps", namespace=namespace))

    def can_list(groups: list[str]) -> bool:
        headers = [("Impersonate-User", user)] + [("Impersonate-Group", group) for group in groups]
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "list", "resource": "configmaps", "namespace": namespace}},
        }
        reply = request(admin, "POST", f"{REVIEWS}/selfsubjectaccessreviews", body=review, headers=headers)
        assert reply.status == 201, reply.body
        return bool(reply.body["status"]["allowed"])

    assert can_list([first, second])
    assert not can_list([first])
    assert not can_list([f"{first},{second}"])  # one header line is one group, commas and all
    listed = request(
        admin,
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps",
        headers=[("Impersonate-User", user), ("Impersonate-Group", first), ("Impersonate-Group", second)],
    )
    assert listed.status == 200


def test_subject_access_review(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    authorization = kubernetes.client.AuthorizationV1Api(admin)
    review = kubernetes.client.V1SubjectAccessReview(
        spec=kubernetes.client.V1SubjectAccessReviewSpec(
            user="viewer",
            groups=["system:authenticated"],
            resource_attributes=kubernetes.client.V1ResourceAttributes(
                namespace=namespace, verb="get", resource="configmaps"
            ),
        )
    )
    answered = authorization.create_subject_access_review(review)
    assert answered.status.allowed is True
    assert answered.status.reason.startswith("RBAC: allowed by ")
    assert answered.spec.user == "viewer"
    assert not _allowed(
        admin, "viewer", ["system:authenticated"], verb="delete", resource="configmaps", namespace=namespace
    )


def test_subject_access_review_needs_a_subject(admin: kubernetes.client.ApiClient) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "configmaps"}},
    }
    reply = request(admin, "POST", f"{REVIEWS}/subjectaccessreviews", body=review)
    assert reply.status == 422
    assert reply.body["message"] == (  # the kind is missing from the message: kube-apiserver words it so
        '.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified'
    )


def test_subject_access_reviews_need_permission(viewer: kubernetes.client.ApiClient) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "viewer", "resourceAttributes": {"verb": "get", "resource": "configmaps"}},
    }
    reply = request(viewer, "POST", f"{REVIEWS}/subjectaccessreviews", body=review)
    assert reply.status == 403
    assert reply.body["message"] == (
        'subjectaccessreviews.authorization.k8s.io is forbidden: User "viewer" cannot create resource "subjectaccessreviews" '
        'in API group "authorization.k8s.io" at the cluster scope'
    )


def test_self_subject_access_review(viewer: kubernetes.client.ApiClient, namespace: str) -> None:
    def review(verb: str) -> bool:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "resource": "configmaps", "namespace": namespace}},
        }
        reply = request(viewer, "POST", f"{REVIEWS}/selfsubjectaccessreviews", body=body)
        assert reply.status == 201 and reply.body["kind"] == "SelfSubjectAccessReview"
        return bool(reply.body["status"]["allowed"])

    assert review("watch") and not review("patch")


def test_legacy_impersonate_permission(
    admin: kubernetes.client.ApiClient, viewer: kubernetes.client.ApiClient, namespace: str
) -> None:
    """The ``impersonate`` verb on users lets a requester act as that user (who then needs rights of their own)."""
    someone, name = unique_name("someone"), unique_name("impersonate")
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": [someone]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
    }
    assert request(admin, "POST", f"{RBAC}/clusterroles", body=role).status == 201
    assert request(admin, "POST", f"{RBAC}/clusterrolebindings", body=binding).status == 201
    try:
        wait_until(
            lambda: _allowed(
                admin, "viewer", ["system:authenticated"], verb="impersonate", resource="users", name=someone
            )
        )
        reply = request(
            viewer, "GET", f"/api/v1/namespaces/{namespace}/configmaps", headers=[("Impersonate-User", someone)]
        )
        assert reply.status == 403
        assert reply.body["message"] == (
            f'configmaps is forbidden: User "{someone}" cannot list resource "configmaps" in API group "" in the namespace "{namespace}"'
        )
    finally:
        request(admin, "DELETE", f"{RBAC}/clusterrolebindings/{name}")
        request(admin, "DELETE", f"{RBAC}/clusterroles/{name}")
