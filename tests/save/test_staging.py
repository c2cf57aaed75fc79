"""Pending creates and deletes: validation against allowed fields, clearing on success."""

from __future__ import annotations

import json

import pytest

from flask_krm.save.outcomes import Outcome, OutcomeKind
from flask_krm.save.staging import CreatePolicy, CreateRejected, Staging, StagingError

POLICY = CreatePolicy(
    api_version="v1",
    kind="ConfigMap",
    allowed=(("metadata", "name"), ("metadata", "labels"), ("data",)),
)


def test_a_valid_body_is_pinned_to_kind_version_and_namespace() -> None:
    body = {"metadata": {"name": "app", "labels": {"app.kubernetes.io/name": "web"}}, "data": {"k": "v"}}
    assert POLICY.validate(body, namespace="team") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "labels": {"app.kubernetes.io/name": "web"}, "namespace": "team"},
        "data": {"k": "v"},
    }
    assert body == {"metadata": {"name": "app", "labels": {"app.kubernetes.io/name": "web"}}, "data": {"k": "v"}}


@pytest.mark.parametrize(
    ("body", "path", "reason"),
    [
        ([], (), "JSON object"),
        ({"metadata": {"name": "a"}, "spec": {"x": 1}}, ("spec", "x"), "not a field"),
        ({"metadata": {"name": "a", "uid": "u-1"}}, ("metadata", "uid"), "set by Kubernetes"),
        ({"metadata": {"name": "a", "resourceVersion": "5"}}, ("metadata", "resourceVersion"), "set by Kubernetes"),
        ({"metadata": {"name": "a", "managedFields": []}}, ("metadata", "managedFields"), "set by Kubernetes"),
        ({"metadata": {"name": "a"}, "status": {}}, ("status",), "set by Kubernetes"),
        ({"metadata": {"name": "a"}, "data": {"k": None}}, ("data", "k"), "no null"),
        ({"metadata": {"name": "a"}, "data": {"k": {1, 2}}}, ("data", "k"), "not a JSON value"),
        ({"metadata": {"name": "a"}, "kind": "Secret"}, ("kind",), "must be ConfigMap"),
        ({"metadata": {"name": "a"}, "apiVersion": "v2"}, ("apiVersion",), "must be v1"),
        ({"metadata": {"name": "a", "namespace": "other"}}, ("metadata", "namespace"), "fixed by the view"),
        ({"data": {"k": "v"}}, ("metadata", "name"), "required"),
        ({"metadata": {"name": "Not_Valid"}}, ("metadata", "name"), "DNS subdomain"),
        ({"metadata": {"name": "a"}, "data": {"k": float("nan")}}, ("data", "k"), "not a finite number"),
        ({"metadata": {"name": "a"}, "data": {"k": float("inf")}}, ("data", "k"), "not a finite number"),
        (
            {"metadata": {"name": "a", "labels": {"k": [1, -float("inf")]}}},
            ("metadata", "labels", "k"),
            "not a finite number",
        ),
        ({"metadata": {"name": "a"}, "data": {"k": [[[[float("nan")]]]]}}, ("data", "k"), "not a finite number"),
    ],
)
def test_invalid_bodies_are_refused_at_their_field(body: object, path: tuple, reason: str) -> None:
    with pytest.raises(CreateRejected, match=reason) as caught:
        POLICY.validate(body, namespace="team")
    assert caught.value.path == path


def test_a_body_nested_past_the_bound_is_refused_whole_without_recursing() -> None:
    deep: object = "leaf"
    for _ in range(50_000):  # far past the interpreter's recursion limit
        deep = {"k": deep}
    with pytest.raises(CreateRejected, match="nested deeper than 64 levels") as caught:
        POLICY.validate({"metadata": {"name": "a"}, "data": deep}, namespace="team")
    assert caught.value.path == ()


def test_last_applied_annotation_is_refused_even_when_annotations_are_allowed() -> None:
    policy = CreatePolicy("v1", "ConfigMap", allowed=(("metadata",),))
    with pytest.raises(CreateRejected) as caught:
        policy.validate(
            {"metadata": {"name": "a", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}},
            namespace=None,
        )
    assert caught.value.path == ("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")


def test_matching_pinned_fields_are_accepted() -> None:
    out = POLICY.validate(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "team"}}, namespace="team"
    )
    assert out["metadata"] == {"name": "a", "namespace": "team"}


def test_creates_are_keyed_by_local_draft_ids_never_uids() -> None:
    ids = iter(["draft-1", "draft-2"])
    staging = Staging(new_id=lambda: next(ids))
    first = staging.stage_create({"metadata": {"name": "a"}}, POLICY, namespace="team")
    second = staging.stage_create({"metadata": {"name": "b"}}, POLICY, namespace="team")
    assert (first.draft_id, second.draft_id) == ("draft-1", "draft-2")
    assert "uid" not in first.body["metadata"]
    assert [c.name for c in staging.creates()] == ["a", "b"]


def test_default_draft_ids_are_distinct_and_marked_local() -> None:
    staging = Staging()
    ids = {staging.stage_create({"metadata": {"name": "a"}}, POLICY, namespace=None).draft_id for _ in range(50)}
    assert len(ids) == 50 and all(i.startswith("draft-") for i in ids)


def test_an_invalid_create_is_not_staged() -> None:
    staging = Staging()
    with pytest.raises(CreateRejected):
        staging.stage_create({"metadata": {"name": "a"}, "spec": {}}, POLICY, namespace=None)
    assert staging.creates() == []


def test_success_clears_an_entry_and_failure_keeps_it_with_its_outcome() -> None:
    staging = Staging(new_id=lambda: "draft-x")
    staging.stage_create({"metadata": {"name": "a"}}, POLICY, namespace=None)
    staging.stage_delete("uid-1", name="old")
    staging.record("draft-x", Outcome(OutcomeKind.REJECTED, http_status=409, detail="AlreadyExists"))
    staging.record("uid-1", Outcome(OutcomeKind.ACCESS_DENIED))
    assert staging.creates()[0].outcome == Outcome(OutcomeKind.REJECTED, http_status=409, detail="AlreadyExists")
    assert staging.deletes()[0].outcome == Outcome(OutcomeKind.ACCESS_DENIED)
    staging.record("draft-x", Outcome(OutcomeKind.CREATED))
    staging.record("uid-1", Outcome(OutcomeKind.DELETED))
    assert staging.creates() == [] and staging.deletes() == []
    with pytest.raises(StagingError):
        staging.record("uid-1", Outcome(OutcomeKind.DELETED))


def test_update_revalidates_and_clears_the_last_outcome() -> None:
    staging = Staging(new_id=lambda: "draft-x")
    staging.stage_create({"metadata": {"name": "a"}}, POLICY, namespace=None)
    staging.record("draft-x", Outcome(OutcomeKind.INVALID))
    updated = staging.update_create("draft-x", {"metadata": {"name": "b"}}, POLICY, namespace=None)
    assert updated.name == "b" and updated.outcome is None
    with pytest.raises(CreateRejected):
        staging.update_create("draft-x", {"metadata": {"name": "b"}, "status": {}}, POLICY, namespace=None)
    with pytest.raises(StagingError):
        staging.update_create("draft-none", {"metadata": {"name": "b"}}, POLICY, namespace=None)


def test_deletes_are_bound_to_a_uid_and_can_be_discarded() -> None:
    staging = Staging()
    with pytest.raises(StagingError):
        staging.stage_delete("", name="x")
    staging.stage_delete("uid-1", name="x", namespace="team", resource_version="7")
    assert staging.is_pending_delete("uid-1")
    staging.discard("uid-1")
    assert not staging.is_pending_delete("uid-1")
    with pytest.raises(StagingError):
        staging.discard("uid-1")


def test_what_is_pending_goes_through_json_and_keeps_the_outcomes_shown_here() -> None:
    policy = CreatePolicy("v1", "ConfigMap", allowed=(("metadata", "name"), ("data",)))
    here = Staging()
    create = here.stage_create({"metadata": {"name": "new"}, "data": {"k": "v"}}, policy, namespace="ns")
    here.stage_delete("uid-1", name="old", namespace="ns", resource_version="7")
    here.record(create.draft_id, Outcome(OutcomeKind.BUSY))
    assert Staging().to_json() is None
    data = json.loads(json.dumps(here.to_json()))
    there = Staging()
    there.adopt(data)
    assert [(c.draft_id, c.body, c.outcome) for c in there.creates()] == [(create.draft_id, create.body, None)]
    assert [(d.uid, d.name, d.namespace, d.resource_version) for d in there.deletes()] == [("uid-1", "old", "ns", "7")]
    here.adopt(data)  # the same entries: the outcome shown here stays
    assert [c.outcome for c in here.creates()] == [Outcome(OutcomeKind.BUSY)]
    here.adopt(None)
    assert here.creates() == [] and here.deletes() == []
    with pytest.raises(ValueError):
        here.adopt({"creates": [{"body": {}}], "deletes": []})


@pytest.mark.parametrize(
    ("body", "path", "reason"),
    [
        ({"data": {"a": ["b"]}}, ("data", "a"), "/data/a is an entry of a map of strings"),
        ({"metadata": {"labels": {"a": 1}}}, ("metadata", "labels", "a"), "/metadata/labels/a is an entry of a map"),
        ({"data": {"a": "x" * (1024 * 1024)}}, (), "the data of a ConfigMap would take 1048577 bytes"),
    ],
)
def test_a_create_holds_only_what_its_kind_can(body: dict[str, object], path: tuple[str, ...], reason: str) -> None:
    policy = CreatePolicy("v1", "ConfigMap", allowed=(("metadata", "name"), ("metadata", "labels"), ("data",)))
    with pytest.raises(CreateRejected) as rejected:
        policy.validate({**body, "metadata": {"name": "new", **body.get("metadata", {})}}, namespace="demo")  # type: ignore[dict-item]
    assert rejected.value.path == path and rejected.value.reason.startswith(reason)
