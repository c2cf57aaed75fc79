"""SubjectAccessReview and SelfSubjectAccessReview answered by the RBAC authorizer, and their refusals."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.testing.simulator.authentication import AUTHENTICATED, Identity
from flask_krm.testing.simulator.errors import ApiError
from flask_krm.testing.simulator.rbac import RbacAuthorizer
from flask_krm.testing.simulator.reviews import review

EDITOR = Identity("editor", (AUTHENTICATED,))
GATEWAY = Identity("krm-gateway", (AUTHENTICATED,))
PATCH_DEPLOYMENT = {"verb": "patch", "group": "apps", "resource": "deployments", "namespace": "demo", "name": "web"}


def test_a_review_asks_about_the_user_it_names(demo_authorizer: RbacAuthorizer) -> None:
    body = {"spec": {"user": "editor", "groups": [AUTHENTICATED], "resourceAttributes": PATCH_DEPLOYMENT}}
    answer = review(demo_authorizer, body, "SubjectAccessReview", GATEWAY)
    assert answer["kind"] == "SubjectAccessReview" and answer["apiVersion"] == "authorization.k8s.io/v1"
    assert answer["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "krm-demo-edit-editor/demo" of ClusterRole "krm-demo-edit" '
        'to User "editor"',
    }
    assert answer["spec"] == body["spec"]
    viewer = {"spec": {"user": "viewer", "resourceAttributes": PATCH_DEPLOYMENT}}
    assert review(demo_authorizer, viewer, "SubjectAccessReview", GATEWAY)["status"] == {"allowed": False}


def test_a_self_review_asks_about_the_requester_whatever_the_spec_names(demo_authorizer: RbacAuthorizer) -> None:
    body = {"spec": {"user": "admin", "resourceAttributes": PATCH_DEPLOYMENT}}
    assert review(demo_authorizer, body, "SelfSubjectAccessReview", EDITOR)["status"]["allowed"] is True
    elsewhere = {"spec": {"resourceAttributes": {**PATCH_DEPLOYMENT, "namespace": "demo-staging"}}}
    assert review(demo_authorizer, elsewhere, "SelfSubjectAccessReview", EDITOR)["status"] == {"allowed": False}


def test_non_resource_attributes_are_reviewed_as_a_path(demo_authorizer: RbacAuthorizer) -> None:
    body = {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/version"}}}
    assert review(demo_authorizer, body, "SelfSubjectAccessReview", EDITOR)["status"]["allowed"] is True
    body = {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/metrics"}}}
    assert review(demo_authorizer, body, "SelfSubjectAccessReview", EDITOR)["status"]["allowed"] is False


def invalid_causes(authorizer: RbacAuthorizer, spec: dict[str, t.Any], kind: str) -> list[tuple[str, str]]:
    with pytest.raises(ApiError) as refused:
        review(authorizer, {"spec": spec}, kind, EDITOR)
    assert refused.value.code == 422
    return [(cause["field"], cause["message"]) for cause in (refused.value.details or {})["causes"]]


def test_a_review_needs_exactly_one_kind_of_attributes(demo_authorizer: RbacAuthorizer) -> None:
    both = {"resourceAttributes": {}, "nonResourceAttributes": {}}
    assert invalid_causes(demo_authorizer, both, "SelfSubjectAccessReview") == [
        ("spec.nonResourceAttributes", "Invalid value: {}: cannot be specified in combination with resourceAttributes")
    ]
    assert invalid_causes(demo_authorizer, {}, "SelfSubjectAccessReview") == [
        (
            "spec.resourceAttributes",
            "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )
    ]


def test_a_subject_access_review_needs_a_user_or_a_group(demo_authorizer: RbacAuthorizer) -> None:
    causes = invalid_causes(demo_authorizer, {"resourceAttributes": PATCH_DEPLOYMENT}, "SubjectAccessReview")
    assert causes == [("spec.user", 'Invalid value: "": at least one of user or group must be specified')]
    answer = review(
        demo_authorizer,
        {"spec": {"groups": ["system:masters"], "resourceAttributes": PATCH_DEPLOYMENT}},
        "SubjectAccessReview",
        GATEWAY,
    )
    assert answer["status"]["allowed"] is True


@pytest.mark.parametrize("body", [[], "text", {"spec": []}])
def test_a_body_that_is_no_object_is_a_bad_request(demo_authorizer: RbacAuthorizer, body: t.Any) -> None:
    with pytest.raises(ApiError) as refused:
        review(demo_authorizer, body, "SubjectAccessReview", GATEWAY)
    assert refused.value.code == 400 and "cannot be handled as a SubjectAccessReview" in refused.value.message
