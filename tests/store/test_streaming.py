"""Applying protocol events: snapshot cycles, replacement, idempotence, notifications."""

from __future__ import annotations

import pytest

from flask_krm.events import RESYNC_REQUIRED, Redaction, Synced, Upsert
from flask_krm.store import InvalidEventError, LiveResourceStore, UnknownResourceError

from .objects import CM_UID, added, configmap, deleted, modified, reset, store_with, with_changes


def test_reset_prunes_nothing_and_synced_prunes_the_unseen() -> None:
    other = configmap(uid="cm-2")
    store = store_with(configmap(), other)
    assert store.apply(reset()) == set()
    assert store.uids() == [CM_UID, "cm-2"]
    assert not store.snapshot_complete
    store.apply(added(configmap()))
    assert store.apply(Synced()) == {"cm-2"}
    assert store.uids() == [CM_UID]
    assert store.snapshot_complete


def test_an_incomplete_cycle_prunes_nothing_and_a_second_reset_restarts_it() -> None:
    store = store_with(configmap(), configmap(uid="cm-2"))
    store.apply(reset())
    store.apply(added(configmap(uid="cm-2")))
    store.apply(reset())  # the connection dropped mid-cycle; a new cycle starts over
    store.apply(added(configmap()))
    assert store.uids() == [CM_UID, "cm-2"]
    assert store.apply(Synced()) == {"cm-2"}


def test_synced_without_an_open_cycle_is_ignored() -> None:
    store = LiveResourceStore()
    store.apply(added(configmap()))
    assert store.apply(Synced()) == set()
    assert store.uids() == [CM_UID]
    assert not store.snapshot_complete


def test_upserts_replace_the_server_object_and_never_deep_merge_it() -> None:
    store = store_with(configmap())
    store.apply(modified(with_changes(configmap(), "2", {("data", "replicas"): ...})))
    assert "replicas" not in store.server(CM_UID)["data"]
    assert "replicas" not in store.draft(CM_UID)["data"]


def test_reapplying_an_event_is_a_no_op_without_notification() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    event = modified(with_changes(configmap(), "2", {("data", "replicas"): "5"}))
    calls: list[frozenset[str]] = []
    store.subscribe(calls.append)
    assert store.apply(event) == {CM_UID}
    assert store.apply(event) == set()
    assert calls == [frozenset({CM_UID})]
    assert store.draft(CM_UID)["data"] == {"level": "debug", "replicas": "5"}


def test_a_redaction_revision_change_alone_is_a_change() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"uid": "s-1", "resourceVersion": "1"}}
    store = LiveResourceStore()
    store.apply(added(secret, Redaction("/data/token", 1)))
    rotated = with_changes(secret, "1", {})
    assert store.apply(modified(rotated, Redaction("/data/token", 2))) == {"s-1"}
    assert store.redactions("s-1") == (Redaction("/data/token", 2),)


def test_deleted_drops_the_uid_and_its_draft() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    assert store.apply(deleted(configmap())) == {CM_UID}
    assert store.uids() == []
    assert store.draft(CM_UID) is None
    assert store.apply(deleted(configmap())) == set()
    with pytest.raises(UnknownResourceError):
        store.dirty(CM_UID)


def test_a_recreated_object_is_a_different_uid() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.apply(deleted(configmap()))
    store.apply(added(configmap(uid="cm-new")))
    assert store.uids() == ["cm-new"]
    assert store.dirty("cm-new") == []


def test_errors_change_nothing() -> None:
    store = store_with(configmap())
    assert store.apply(RESYNC_REQUIRED) == set()
    assert store.uids() == [CM_UID]


def test_events_without_a_uid_or_with_a_malformed_redaction_are_refused() -> None:
    store = LiveResourceStore()
    with pytest.raises(InvalidEventError):
        store.apply(Upsert("added", {"metadata": {"name": "no-uid"}}))
    with pytest.raises(InvalidEventError):
        store.apply(added(configmap(), Redaction("data/token", 1)))
    with pytest.raises(InvalidEventError):
        store.apply("reset")  # type: ignore[arg-type]
    assert store.uids() == []


def test_notifications_name_the_changed_uids_and_unsubscribe_stops_them() -> None:
    store = LiveResourceStore()
    calls: list[frozenset[str]] = []
    unsubscribe = store.subscribe(calls.append)
    store.apply(reset())
    store.apply(added(configmap()))
    store.apply(added(configmap(uid="cm-2")))
    store.set_value("cm-2", ("data", "level"), "debug")
    unsubscribe()
    unsubscribe()
    store.apply(Synced())
    assert calls == [frozenset({CM_UID}), frozenset({"cm-2"}), frozenset({"cm-2"})]


def test_getters_return_copies_and_never_alias_the_callers_object() -> None:
    obj = configmap()
    store = store_with(obj)
    obj["data"]["level"] = "changed by the caller"
    assert store.server(CM_UID)["data"]["level"] == "info"
    store.draft(CM_UID)["data"]["level"] = "changed through a getter"
    store.server(CM_UID)["data"]["level"] = "changed through a getter"
    assert store.draft(CM_UID)["data"]["level"] == "info"
    assert store.server(CM_UID)["data"]["level"] == "info"
    assert store.server("nope") is None and store.draft("nope") is None
