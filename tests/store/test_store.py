"""``LiveResourceStore`` as one object: its parts over one state, a private or a shared truth,
copies out and in, and the policy and schemas it is made with."""

from __future__ import annotations

import pytest

from flask_krm.events import Synced
from flask_krm.store import BUILTIN_LIST_SCHEMAS, EditPolicy, LiveResourceStore, ReadOnlyPathError
from flask_krm.store.truth import ServerTruth

from .objects import CM_UID, added, configmap, deployment, modified, reset, store_with, with_changes


def test_a_store_with_a_private_truth_is_fed_by_its_own_apply() -> None:
    store = LiveResourceStore()
    assert not store.shared
    assert store.apply(reset()) == set()
    assert store.apply(added(configmap())) == {CM_UID}
    assert not store.snapshot_complete
    store.apply(Synced())
    assert store.snapshot_complete
    assert store.uids() == [CM_UID]
    assert store.truth.get(CM_UID) is not None


def test_stores_of_one_shared_truth_see_one_server_object_and_keep_their_own_drafts() -> None:
    truth = ServerTruth()
    mine, theirs = LiveResourceStore(truth=truth), LiveResourceStore(truth=truth)
    assert mine.shared and theirs.shared
    truth.apply(reset())
    truth.apply(added(configmap()))
    truth.apply(Synced())
    assert mine.server(CM_UID) == theirs.server(CM_UID) == configmap()
    mine.set_value(CM_UID, ("data", "level"), "debug")
    assert mine.edited_uids() == [CM_UID]
    assert theirs.edited_uids() == []
    assert theirs.draft(CM_UID) == configmap()
    truth.apply(modified(with_changes(configmap(), "2", {("data", "replicas"): "5"})))
    assert mine.draft(CM_UID)["data"] == {"level": "debug", "replicas": "5"}  # type: ignore[index]
    assert theirs.draft(CM_UID)["data"] == {"level": "info", "replicas": "5"}  # type: ignore[index]


def test_a_store_applying_to_a_shared_truth_feeds_every_store_of_it() -> None:
    truth = ServerTruth()
    mine, theirs = LiveResourceStore(truth=truth), LiveResourceStore(truth=truth)
    mine.apply(reset())
    mine.apply(added(configmap()))
    assert theirs.uids() == [CM_UID]


def test_a_detached_store_keeps_what_it_held_and_catches_up_when_reattached() -> None:
    truth = ServerTruth()
    store = store_with(configmap(), store=LiveResourceStore(truth=truth))
    store.detach()
    assert not store.shared
    truth.apply(modified(with_changes(configmap(), "2", {("data", "level"): "warn"})))
    assert store.server(CM_UID)["data"]["level"] == "info"  # type: ignore[index]
    store.reattach()
    assert store.shared
    assert store.server(CM_UID)["data"]["level"] == "warn"  # type: ignore[index]


def test_every_getter_returns_a_copy_and_no_caller_object_is_aliased() -> None:
    obj = configmap()
    store = store_with(obj)
    obj["data"]["level"] = "changed by the caller"
    server, draft = store.server(CM_UID), store.draft(CM_UID)
    assert server is not None and draft is not None
    assert server["data"]["level"] == "info"
    server["data"]["level"] = draft["data"]["level"] = "changed again"
    labels = {"team": "x"}
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.set_value(CM_UID, ("metadata", "labels"), labels)
    labels["team"] = "changed by the caller"
    patch = store.patch(CM_UID)
    assert patch is not None
    patch["data"]["level"] = "tampered"
    assert store.server(CM_UID)["data"]["level"] == "info"  # type: ignore[index]
    assert store.patch(CM_UID) == {
        "data": {"level": "debug"},
        "metadata": {"labels": {"team": "x", "app.kubernetes.io/name": None}},
    }


def test_the_policy_it_is_made_with_decides_what_is_editable() -> None:
    store = store_with(configmap(), store=LiveResourceStore(EditPolicy.only(("data",))))
    store.set_value(CM_UID, ("data", "level"), "debug")
    with pytest.raises(ReadOnlyPathError):
        store.set_value(CM_UID, ("metadata", "labels", "team"), "x")
    assert store.is_read_only(CM_UID, ("metadata", "labels"))
    assert not store.is_read_only(CM_UID, ("data", "level"))


def test_the_schemas_it_is_made_with_give_the_kinds_keyed_lists() -> None:
    containers = ("spec", "template", "spec", "containers")
    keyed = store_with(deployment(), store=LiveResourceStore(schemas=BUILTIN_LIST_SCHEMAS))
    assert keyed.list_keys("deploy-1", containers) == ("name",)
    assert keyed.kind_schema("deploy-1") is BUILTIN_LIST_SCHEMAS[("apps/v1", "Deployment")]
    plain = store_with(deployment())
    assert plain.list_keys("deploy-1", containers) is None
    assert plain.kind_schema("deploy-1") is None
