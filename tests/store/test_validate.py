"""The host's merge-patch validators: every refusal, named by RFC 6901 path."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.projection import UnknownProjection
from flask_krm.store import PatchRejected, validate_merge_patch, validate_native_merge_patch

LAST_APPLIED_KEY = "kubectl.kubernetes.io/last-applied-configuration"
LAST_APPLIED = "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"uid": "s-1", "name": "creds", "resourceVersion": "4", "labels": {"a": "b"}},
    "data": {"token": "aHVudGVyMg==", "a/b": "eA=="},
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"uid": "d-1", "name": "web", "resourceVersion": "3"},
    "spec": {"replicas": 2},
    "status": {"readyReplicas": 1},
}


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        ({"data": {"token": "bmV3"}}, "/data/token"),
        ({"data": {"token": None}}, "/data/token"),
        ({"data": {"token": {}}}, "/data/token"),  # {} replaces a string
        ({"data": {"a/b": "x"}}, "/data/a~1b"),
        ({"data": None}, "/data"),  # deleting the parent deletes the hidden values
        ({"data": "x"}, "/data"),
        ({"data": {"token": {"deeper": 1}}}, "/data/token/deeper"),
        ({"metadata": {"managedFields": []}}, "/metadata/managedFields"),
        ({"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}}, LAST_APPLIED),
        ({"metadata": {"annotations": None}}, "/metadata/annotations"),
        ({"metadata": None}, "/metadata"),
        (None, ""),
        ([], ""),
        ("{", ""),
        (b"\xff", ""),
        ('{"a": 1, "a": 2}', ""),
        ('{"a": NaN}', ""),
        ({"data": {"x": b"bytes"}}, "/data/x"),
        ({1: "x"}, ""),
    ],
)
def test_full_projection_refusals(patch: Any, path: str) -> None:
    with pytest.raises(PatchRejected) as refused:
        validate_merge_patch("krm-full/v1", SECRET, patch)
    assert refused.value.path == path


def test_a_refusal_names_the_protected_path_and_why() -> None:
    with pytest.raises(PatchRejected) as refused:
        validate_merge_patch("krm-full/v1", SECRET, {"data": None})
    assert refused.value.protected in ("/data/a~1b", "/data/token")
    assert refused.value.reason == "redacted by the effective projection"


@pytest.mark.parametrize(
    "patch",
    [
        {"metadata": {"labels": {"a": "c"}}},
        {"data": {"fresh": "eA=="}},
        {"data": {}},
        b'{"metadata": {"labels": {"a": null}}}',
        '{"type": "Opaque"}',
        {},
    ],
)
def test_full_projection_accepts_visible_editable_changes(patch: Any) -> None:
    assert isinstance(validate_merge_patch("krm-full/v1", SECRET, patch), dict)


def test_raw_projection_reveals_secret_values_but_still_protects_machinery() -> None:
    assert validate_merge_patch("krm-raw/v1", SECRET, {"data": {"token": "bmV3"}}) == {"data": {"token": "bmV3"}}
    with pytest.raises(PatchRejected):
        validate_merge_patch("krm-raw/v1", SECRET, {"metadata": {"managedFields": None}})


def test_status_is_protected_under_the_spec_projection_only() -> None:
    for patch in ({"status": {"readyReplicas": 3}}, {"status": None}, {"status": {}}):
        with pytest.raises(PatchRejected) as refused:
            validate_merge_patch("krm-spec/v1", DEPLOYMENT, patch)
        assert refused.value.path.startswith("/status")
    assert validate_merge_patch("krm-full/v1", DEPLOYMENT, {"status": {"readyReplicas": 3}})
    assert validate_merge_patch("krm-spec/v1", DEPLOYMENT, {"spec": {"replicas": 3}})


def test_an_unknown_projection_is_refused() -> None:
    with pytest.raises(UnknownProjection):
        validate_merge_patch("krm-everything/v1", DEPLOYMENT, {})


def test_a_native_patch_needs_both_preconditions() -> None:
    ok = {"metadata": {"uid": "d-1", "resourceVersion": "3"}, "spec": {"replicas": 3}}
    assert validate_native_merge_patch(ok) == ok
    for patch, path in [
        ({"spec": {"replicas": 3}}, "/metadata/uid"),
        ({"metadata": {"uid": "d-1"}}, "/metadata/resourceVersion"),
        ({"metadata": {"resourceVersion": "3"}}, "/metadata/uid"),
        ({"metadata": {"uid": "", "resourceVersion": "3"}}, "/metadata/uid"),
        ({"metadata": {"uid": "d-1", "resourceVersion": 3}}, "/metadata/resourceVersion"),
        ({"metadata": "x"}, "/metadata/uid"),
    ]:
        with pytest.raises(PatchRejected) as refused:
            validate_native_merge_patch(patch)
        assert refused.value.path == path


def test_a_native_patch_never_touches_machinery() -> None:
    base = {"uid": "d-1", "resourceVersion": "3"}
    for patch, path in [
        ({"metadata": {**base, "managedFields": None}}, "/metadata/managedFields"),
        ({"metadata": {**base, "annotations": {LAST_APPLIED_KEY: "x"}}}, LAST_APPLIED),
        ({"metadata": {**base, "annotations": None}}, "/metadata/annotations"),
    ]:
        with pytest.raises(PatchRejected) as refused:
            validate_native_merge_patch(patch)
        assert refused.value.path == path
    with pytest.raises(PatchRejected):
        validate_native_merge_patch("[]")
