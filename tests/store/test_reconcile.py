"""Save intents, guarded reconciliation, adoption and removal."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.events import Redaction, Synced
from flask_krm.projection import project
from flask_krm.store import LiveResourceStore, Refusal, SaveIntent, UnversionedResourceError

from .objects import CM_UID, added, configmap, deleted, modified, reset, store_with, with_changes


def test_capture_save_is_detached_from_later_typing() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    intent = store.capture_save(CM_UID)
    assert intent == SaveIntent(CM_UID, "1", {"data": {"level": "debug"}})
    store.set_value(CM_UID, ("data", "level"), "trace")
    store.set_value(CM_UID, ("data", "more"), "x")
    store.apply(modified(with_changes(configmap(), "2", {("data", "replicas"): "9"})))
    assert intent == SaveIntent(CM_UID, "1", {"data": {"level": "debug"}})
    assert store.capture_save(CM_UID) == SaveIntent(CM_UID, "2", {"data": {"level": "trace", "more": "x"}})


def test_capture_save_is_none_when_clean_and_refuses_an_unversioned_object() -> None:
    store = store_with(configmap())
    assert store.capture_save(CM_UID) is None
    unversioned = configmap(uid="cm-2")
    del unversioned["metadata"]["resourceVersion"]
    store.apply(added(unversioned))
    store.set_value("cm-2", ("data", "level"), "debug")
    with pytest.raises(UnversionedResourceError):
        store.capture_save("cm-2")


def editing() -> LiveResourceStore:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    return store


def test_an_accepted_read_advances_the_base_and_keeps_edits_made_meanwhile() -> None:
    store = editing()
    guard = store.capture_reconciliation(CM_UID)
    store.set_value(CM_UID, ("data", "typed-during-read"), "x")  # typing while the GET runs
    calls: list[frozenset[str]] = []
    store.subscribe(calls.append)
    read = with_changes(configmap(), "5", {("data", "replicas"): "7"})
    assert guard(read, redacted_paths=[]) is True
    assert guard.refusal is None
    assert calls == [frozenset({CM_UID})]
    assert store.server(CM_UID)["metadata"]["resourceVersion"] == "5"
    assert store.draft(CM_UID)["data"] == {"level": "debug", "replicas": "7", "typed-during-read": "x"}
    assert store.capture_save(CM_UID).resource_version == "5"


def test_an_accepted_read_records_conflicts() -> None:
    store = editing()
    guard = store.capture_reconciliation(CM_UID)
    assert guard(with_changes(configmap(), "5", {("data", "level"): "warn"}))
    assert [(c.path, c.theirs) for c in store.conflicts(CM_UID)] == [(("data", "level"), "warn")]


def test_refused_after_a_newer_event_for_the_uid() -> None:
    store = editing()
    guard = store.capture_reconciliation(CM_UID)
    store.apply(modified(with_changes(configmap(), "6", {("data", "replicas"): "6"})))
    assert guard(with_changes(configmap(), "5", {})) is False
    assert guard.refusal is Refusal.NEWER_EVENT
    assert store.server(CM_UID)["metadata"]["resourceVersion"] == "6"


def test_an_event_for_another_uid_does_not_refuse() -> None:
    store = store_with(configmap(), configmap(uid="cm-2"))
    guard = store.capture_reconciliation(CM_UID)
    store.apply(modified(with_changes(configmap(uid="cm-2"), "6", {})))
    assert guard(with_changes(configmap(), "5", {}))


def test_refused_after_a_new_snapshot_began() -> None:
    store = editing()
    guard = store.capture_reconciliation(CM_UID)
    store.apply(reset())
    assert guard(with_changes(configmap(), "5", {})) is False
    assert guard.refusal is Refusal.SNAPSHOT


def test_refused_for_a_replacement_object() -> None:
    store = editing()
    guard = store.capture_reconciliation(CM_UID)
    assert guard(configmap(uid="cm-replacement")) is False
    assert guard.refusal is Refusal.REPLACED
    assert store.draft(CM_UID)["data"]["level"] == "debug"


def test_refused_when_the_object_was_removed() -> None:
    store = editing()
    guard = store.capture_reconciliation(CM_UID)
    store.apply(deleted(configmap()))
    assert guard(configmap()) is False
    assert guard.refusal is Refusal.REMOVED


@pytest.mark.parametrize("read", [None, "text", {"metadata": {}}, {"metadata": {"uid": ""}}])
def test_refused_for_something_that_is_not_an_object_with_a_uid(read: Any) -> None:
    store = editing()
    guard = store.capture_reconciliation(CM_UID)
    assert guard(read) is False
    assert guard.refusal is Refusal.INVALID_OBJECT


def test_a_guard_applies_once() -> None:
    store = editing()
    guard = store.capture_reconciliation(CM_UID)
    assert guard(with_changes(configmap(), "5", {}))
    assert guard(with_changes(configmap(), "4", {})) is False
    assert guard.refusal is Refusal.NEWER_EVENT


def secret(version: str = "1", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"uid": "s-1", "name": "creds", "resourceVersion": version, "labels": {"a": "b"}},
        "data": data or {"token": "aHVudGVyMg==", "username": "Ym9i"},
    }


def secret_store() -> LiveResourceStore:
    store = LiveResourceStore()
    store.apply(reset())
    projected = project(secret(), "krm-full/v1")
    store.apply(added(projected.object, Redaction("/data/token", 3), Redaction("/data/username", 1)))
    store.apply(Synced())
    store.set_value("s-1", ("metadata", "labels", "a"), "c")
    return store


def test_redaction_paths_of_a_read_keep_known_revisions_and_drop_absent_ones() -> None:
    store = secret_store()
    guard = store.capture_reconciliation("s-1")
    projected = project(secret("2", token="bmV3"), "krm-full/v1")
    assert guard(projected.object, list(projected.redacted_paths))
    assert store.redactions("s-1") == (Redaction("/data/token", 3),)
    assert store.is_read_only("s-1", ("data", "token"))
    assert store.patch("s-1") == {"metadata": {"labels": {"a": "c"}}}


def test_omitted_redaction_metadata_keeps_existing_protections() -> None:
    store = secret_store()
    guard = store.capture_reconciliation("s-1")
    assert guard(project(secret("2"), "krm-full/v1").object)
    assert store.redactions("s-1") == (Redaction("/data/token", 3), Redaction("/data/username", 1))
    assert store.is_read_only("s-1", ("data", "username"))


def test_unknown_redaction_paths_refuse_the_whole_read() -> None:
    store = secret_store()
    guard = store.capture_reconciliation("s-1")
    projected = project(secret("2", token="x", password="eQ=="), "krm-full/v1")
    assert guard(projected.object, list(projected.redacted_paths)) is False
    assert guard.refusal is Refusal.UNKNOWN_REDACTION
    assert store.server("s-1")["metadata"]["resourceVersion"] == "1"
    guard = store.capture_reconciliation("s-1")
    assert guard(projected.object, "/data/token") is False  # a string is not a list of paths
    assert guard.refusal is Refusal.UNKNOWN_REDACTION


def test_explicit_stream_revisions_are_accepted_and_both_forms_together_are_an_error() -> None:
    store = secret_store()
    guard = store.capture_reconciliation("s-1")
    obj = project(secret("2"), "krm-full/v1").object
    with pytest.raises(ValueError):
        guard(obj, ["/data/token"], redacted=[Redaction("/data/token", 4)])
    assert guard(obj, redacted=[Redaction("/data/token", 4), Redaction("/data/username", 2)])
    assert store.redactions("s-1") == (Redaction("/data/token", 4), Redaction("/data/username", 2))
    guard = store.capture_reconciliation("s-1")
    assert guard(obj, redacted=[Redaction("data/token", 1)]) is False
    assert guard.refusal is Refusal.UNKNOWN_REDACTION


def test_adopt_saved_inserts_a_created_object_and_its_echo_is_a_no_op() -> None:
    store = store_with(configmap())
    created = configmap(uid="cm-new")
    store.adopt_saved(created)
    store.set_value("cm-new", ("data", "level"), "debug")
    assert store.apply(added(created)) == set()
    assert store.uids() == [CM_UID, "cm-new"]
    assert store.dirty("cm-new") == [("data", "level")]


def test_adopt_saved_merges_a_known_object_and_keeps_its_redactions() -> None:
    store = secret_store()
    store.set_value("s-1", ("metadata", "labels", "later"), "typed after the save request")
    saved = project(secret("2"), "krm-full/v1").object
    saved["metadata"]["labels"]["a"] = "c"  # the save landed
    store.adopt_saved(saved)
    assert store.redactions("s-1") == (Redaction("/data/token", 3), Redaction("/data/username", 1))
    assert store.patch("s-1") == {"metadata": {"labels": {"later": "typed after the save request"}}}
    store.adopt_saved(saved, redacted=[Redaction("/data/token", 3)])
    assert store.redactions("s-1") == (Redaction("/data/token", 3),)


def test_remove_resource_drops_it_now_and_the_deleted_echo_is_a_no_op() -> None:
    store = editing()
    calls: list[frozenset[str]] = []
    store.subscribe(calls.append)
    assert store.remove_resource(CM_UID) is True
    assert store.remove_resource(CM_UID) is False
    assert store.apply(deleted(configmap())) == set()
    assert store.uids() == [] and calls == [frozenset({CM_UID})]
