"""One server truth shared by the stores of several sessions: each holds only what its person did."""

from __future__ import annotations

import gc

from flask_krm.events import Synced
from flask_krm.store import LiveResourceStore, Refusal
from flask_krm.store.recovery import RecoveryCopies
from flask_krm.store.truth import ServerTruth

from .objects import CM_UID, added, configmap, deleted, modified, reset, with_changes


def _sessions(count: int, *objects: dict) -> tuple[ServerTruth, list[LiveResourceStore]]:
    truth = ServerTruth()
    truth.apply(reset())
    for obj in objects:
        truth.apply(added(obj))
    truth.apply(Synced())
    return truth, [LiveResourceStore(truth=truth) for _ in range(count)]


def test_a_store_made_after_the_truth_synced_shows_its_objects_at_once_without_copies() -> None:
    truth, (one, two) = _sessions(2, configmap(), configmap(uid="cm-2"))
    assert one.uids() == two.uids() == [CM_UID, "cm-2"]
    assert one.snapshot_complete
    assert one.server(CM_UID) == configmap()
    assert one.edited_uids() == [] and not one.unsaved()
    assert one._resources == {} and two._resources == {}  # a clean object costs a session nothing
    held = truth.get(CM_UID)
    assert held is not None
    one.server(CM_UID)["data"]["level"] = "mutated"  # a getter's copy, never the shared object
    assert held.object["data"]["level"] == "info"


def test_an_edit_stays_in_its_session_and_a_server_change_reaches_every_session() -> None:
    truth, (mine, theirs) = _sessions(2, configmap())
    seen: list[frozenset[str]] = []
    theirs.subscribe(seen.append)
    mine.set_value(CM_UID, ("data", "level"), "debug")
    assert theirs.draft(CM_UID)["data"]["level"] == "info"
    assert mine.edited_uids() == [CM_UID] and theirs.edited_uids() == []
    assert seen == []  # another session's edit tells this one nothing
    truth.apply(modified(with_changes(configmap(), "2", {("data", "replicas"): "5"})))
    assert mine.draft(CM_UID)["data"] == {"level": "debug", "replicas": "5"}
    assert theirs.draft(CM_UID)["data"] == {"level": "info", "replicas": "5"}
    assert seen == [frozenset({CM_UID})]
    assert theirs._resources == {}
    assert mine.patch(CM_UID) == {"data": {"level": "debug"}}
    assert ("data", "replicas") in mine.flashed(CM_UID)
    assert mine.flashed(CM_UID) == theirs.flashed(CM_UID)


def test_the_same_field_changed_on_the_server_is_a_conflict_only_where_it_was_edited() -> None:
    truth, (mine, theirs) = _sessions(2, configmap())
    mine.set_value(CM_UID, ("data", "level"), "debug")
    truth.apply(modified(with_changes(configmap(), "2", {("data", "level"): "warn"})))
    assert [c.path for c in mine.conflicts(CM_UID)] == [("data", "level")]
    assert theirs.conflicts(CM_UID) == []
    intent = mine.capture_save(CM_UID)
    assert intent is not None and intent.resource_version == "2"
    assert theirs.capture_save(CM_UID) is None


def test_an_optimistic_delete_hides_the_object_in_one_session_until_the_server_sends_it_again() -> None:
    truth, (mine, theirs) = _sessions(2, configmap(), configmap(uid="cm-2"))
    assert mine.remove_resource("cm-2")
    assert not mine.remove_resource("cm-2")
    assert mine.uids() == [CM_UID] and mine.server("cm-2") is None
    assert theirs.uids() == [CM_UID, "cm-2"]
    truth.apply(modified(with_changes(configmap(uid="cm-2"), "2", {("data", "level"): "warn"})))
    assert mine.uids() == [CM_UID, "cm-2"]


def test_an_unsaved_draft_of_a_deleted_object_is_kept_as_a_recovery_copy_in_its_session_only() -> None:
    truth = ServerTruth()
    truth.apply(added(configmap()))
    mine = LiveResourceStore(truth=truth, recovery=RecoveryCopies(60.0))
    theirs = LiveResourceStore(truth=truth, recovery=RecoveryCopies(60.0))
    mine.set_value(CM_UID, ("data", "level"), "debug")
    truth.apply(deleted(configmap()))
    assert mine.uids() == theirs.uids() == []
    copy = mine.recovery.for_uid(CM_UID)
    assert copy is not None and copy.draft["data"]["level"] == "debug"
    assert theirs.recovery.for_uid(CM_UID) is None


def test_an_edit_record_waits_for_its_object_in_the_shared_truth() -> None:
    truth = ServerTruth()
    source = LiveResourceStore(truth=ServerTruth())
    source.apply(added(configmap()))
    source.set_value(CM_UID, ("data", "level"), "debug")
    record = source.edit_record(CM_UID)
    assert record is not None
    restored = LiveResourceStore(truth=truth)
    restored.restore(record)
    assert restored.uids() == []
    truth.apply(added(configmap()))
    assert restored.draft(CM_UID)["data"]["level"] == "debug"
    assert restored.edit_sequence(CM_UID) == record.sequence


def test_a_guarded_read_is_refused_after_a_newer_delivery_and_adopted_only_in_its_session() -> None:
    truth, (mine, theirs) = _sessions(2, configmap())
    guard = mine.capture_reconciliation(CM_UID)
    truth.apply(modified(configmap()))  # re-delivered: a newer event even though nothing changed
    assert not guard(with_changes(configmap(), "3", {}))
    assert guard.refusal is Refusal.NEWER_EVENT
    guard = mine.capture_reconciliation(CM_UID)
    assert guard(with_changes(configmap(), "3", {("data", "level"): "read"}))
    assert mine.server(CM_UID)["data"]["level"] == "read"
    assert theirs.server(CM_UID)["data"]["level"] == "info"


def test_a_store_nobody_holds_is_not_kept_alive_by_its_truth() -> None:
    truth, stores = _sessions(1, configmap())
    stores.clear()
    gc.collect()
    assert len(truth._followers) == 0
    truth.apply(modified(with_changes(configmap(), "2", {("data", "level"): "warn"})))


def test_an_adopted_object_diverges_from_the_truth_until_the_truth_delivers_it() -> None:
    truth, (mine, theirs) = _sessions(2, configmap())
    assert mine.shared and not mine.diverged()
    saved = with_changes(configmap(), "2", {("data", "level"): "saved"})
    mine.adopt_saved(saved)
    assert mine.diverged() and not theirs.diverged()
    assert mine.server(CM_UID)["data"]["level"] == "saved"
    truth.apply(modified(saved))
    assert not mine.diverged()
    assert mine._resources[CM_UID].server is truth.get(CM_UID).object
    mine.remove_resource(CM_UID)
    assert mine.diverged()
    truth.apply(deleted(saved))
    assert not mine.diverged() and mine.uids() == theirs.uids() == []


def test_a_detached_store_takes_no_server_change_until_it_follows_the_truth_again() -> None:
    truth, (mine, theirs) = _sessions(2, configmap(), configmap(uid="cm-2"))
    mine.set_value(CM_UID, ("data", "level"), "debug")
    seen: list[frozenset[str]] = []
    mine.subscribe(seen.append)
    mine.detach()
    assert not mine.shared and theirs.shared
    truth.apply(modified(with_changes(configmap(), "2", {("data", "replicas"): "5"})))
    truth.apply(deleted(configmap(uid="cm-2")))
    assert seen == [] and mine.uids() == [CM_UID, "cm-2"]
    assert mine.server(CM_UID)["data"]["replicas"] == "3"
    mine.set_value(CM_UID, ("data", "level"), "trace")  # edits go on
    assert seen == [frozenset({CM_UID})]
    mine.reattach()
    assert mine.shared and mine.uids() == [CM_UID]
    assert mine.draft(CM_UID)["data"] == {"level": "trace", "replicas": "5"}
    assert seen[-1] == frozenset({CM_UID, "cm-2"})
