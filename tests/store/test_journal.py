"""Edit records: exporting what the person did and replaying it onto another store."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flask_krm.events import Synced
from flask_krm.store import MISSING, Edit, EditRecord, LiveResourceStore, RecoveryCopies

from .objects import CM_UID, added, configmap, deployment, reset, store_with, with_changes


def moved(record: EditRecord | None) -> EditRecord:
    """``record`` through JSON, as a backend keeps it."""
    assert record is not None
    return EditRecord.from_json(json.loads(json.dumps(record.to_json())))


def test_a_clean_object_records_no_edits_and_an_unknown_one_none() -> None:
    store = store_with(configmap())
    assert store.edit_record(CM_UID) == EditRecord(CM_UID, (), ())
    assert store.edit_record("nope") is None


def test_edits_carry_their_bases_adds_and_removals_included() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.set_value(CM_UID, ("data", "new"), "x")
    store.remove_key(CM_UID, ("data", "replicas"))
    record = store.edit_record(CM_UID)
    assert record is not None
    assert set(record.edits) == {
        Edit(("data", "level"), "info", "debug"),
        Edit(("data", "new"), MISSING, "x"),
        Edit(("data", "replicas"), "3", MISSING),
    }
    assert moved(record) == record


def test_a_record_replayed_onto_a_fresh_store_before_its_object_arrives_gives_the_same_draft() -> None:
    first = store_with(configmap())
    first.set_value(CM_UID, ("data", "level"), "debug")
    first.remove_key(CM_UID, ("data", "replicas"))
    other = LiveResourceStore()
    other.restore(moved(first.edit_record(CM_UID)))
    assert other.edit_record(CM_UID) is not None  # held until the object arrives
    store_with(configmap(), store=other)
    assert other.draft(CM_UID) == first.draft(CM_UID)
    assert other.patch(CM_UID) == {"data": {"level": "debug", "replicas": None}}
    assert other.conflicts(CM_UID) == []


def test_an_edit_whose_base_moved_on_becomes_a_conflict_and_untouched_values_follow_the_server() -> None:
    first = store_with(configmap())
    first.set_value(CM_UID, ("data", "level"), "debug")
    record = moved(first.edit_record(CM_UID))
    other = store_with(with_changes(configmap(), "2", {("data", "level"): "warn", ("data", "replicas"): "5"}))
    other.restore(record)
    assert other.draft(CM_UID)["data"] == {"level": "debug", "replicas": "5"}
    assert [(c.path, c.theirs) for c in other.conflicts(CM_UID)] == [(("data", "level"), "warn")]


def test_an_edit_the_server_already_made_converges() -> None:
    first = store_with(configmap())
    first.set_value(CM_UID, ("data", "level"), "debug")
    other = store_with(with_changes(configmap(), "2", {("data", "level"): "debug"}))
    other.restore(moved(first.edit_record(CM_UID)))
    assert other.dirty(CM_UID) == [] and other.conflicts(CM_UID) == []


def test_an_open_conflict_stays_open_and_a_kept_one_stays_resolved() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.set_value(CM_UID, ("data", "replicas"), "9")
    store.apply(added(with_changes(configmap(), "2", {("data", "level"): "warn", ("data", "replicas"): "4"})))
    store.keep_mine(CM_UID, ("data", "replicas"))
    record = moved(store.edit_record(CM_UID))
    assert record.conflicts == (("data", "level"),)
    other = store_with(with_changes(configmap(), "2", {("data", "level"): "warn", ("data", "replicas"): "4"}))
    other.restore(record)
    assert [c.path for c in other.conflicts(CM_UID)] == [("data", "level")]
    assert other.draft(CM_UID)["data"] == {"level": "debug", "replicas": "9"}
    assert other.patch(CM_UID) == store.patch(CM_UID)


def test_a_record_replaces_the_draft_held_and_notifies() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "local")
    seen: list[frozenset[str]] = []
    store.subscribe(seen.append)
    remote = EditRecord(CM_UID, (Edit(("data", "new"), MISSING, "remote"),), (), 2)  # another worker's, newer
    store.restore(remote)
    assert store.draft(CM_UID)["data"] == {"level": "info", "replicas": "3", "new": "remote"}
    assert seen == [frozenset({CM_UID})]
    store.restore(remote)
    assert seen == [frozenset({CM_UID})]  # the same record again changes nothing


def test_a_restored_draft_gets_a_recovery_copy() -> None:
    first = store_with(configmap())
    first.set_value(CM_UID, ("data", "level"), "debug")
    other = LiveResourceStore(recovery=RecoveryCopies(60))
    other.restore(moved(first.edit_record(CM_UID)))
    store_with(configmap(), store=other)
    copy = other.recovery.for_uid(CM_UID) if other.recovery is not None else None
    assert copy is not None and copy.patch == {"data": {"level": "debug"}}


def test_a_record_for_an_object_the_snapshot_does_not_have_is_forgotten() -> None:
    other = LiveResourceStore()
    other.restore(EditRecord("gone", (Edit(("data", "x"), MISSING, "1"),)))
    other.apply(reset())
    other.apply(Synced())
    assert other.edit_record("gone") is None


def test_an_added_value_the_server_has_meanwhile_added_too_is_a_conflict() -> None:
    first = store_with(deployment())
    first.set_value("deploy-1", ("spec", "strategy", "type"), "Recreate")
    other = store_with(with_changes(deployment(), "2", {("spec", "strategy"): "odd"}))
    other.restore(moved(first.edit_record("deploy-1")))
    assert other.draft("deploy-1")["spec"]["strategy"] == {"type": "Recreate"}
    assert [(c.path, c.theirs) for c in other.conflicts("deploy-1")] == [(("spec", "strategy"), "odd")]


def test_an_edit_under_a_value_that_is_no_longer_a_map_yields_to_the_server() -> None:
    first = store_with(with_changes(deployment(), "1", {("spec", "strategy"): {"type": "RollingUpdate"}}))
    first.set_value("deploy-1", ("spec", "strategy", "type"), "Recreate")
    other = store_with(with_changes(deployment(), "2", {("spec", "strategy"): "odd"}))
    other.restore(moved(first.edit_record("deploy-1")))
    assert other.draft("deploy-1")["spec"]["strategy"] == "odd"
    assert other.dirty("deploy-1") == []


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"uid": ""},
        {"uid": "u", "edits": {}},
        {"uid": "u", "edits": [{"path": []}]},
        {"uid": "u", "edits": [{"path": "data.x"}]},
        {"uid": "u", "edits": [{"path": ["data", -1]}]},
        {"uid": "u", "edits": [{"path": ["data", True]}]},
        {"uid": "u", "edits": ["x"]},
        {"uid": "u", "edits": [], "conflicts": [[1.5]]},
        {"uid": "u", "edits": [], "sequence": -1},
        {"uid": "u", "edits": [], "sequence": "3"},
        {"uid": "u", "edits": [], "sequence": True},
    ],
)
def test_what_is_not_a_record_is_refused(data: Any) -> None:
    with pytest.raises(ValueError):
        EditRecord.from_json(data)


keys = st.sampled_from(["level", "replicas", "new", "other"])
values = st.text(max_size=3)  # a ConfigMap's data holds strings


@settings(max_examples=60, deadline=None)
@given(
    edits=st.lists(st.tuples(keys, st.one_of(st.just(...), values)), max_size=5),
    server=st.dictionaries(keys, st.text(max_size=3), max_size=4),
)
def test_a_replayed_record_gives_the_same_draft_and_patch(edits: list[tuple[str, Any]], server: dict[str, str]) -> None:
    first = store_with(configmap(**server) if server else configmap())
    for key, value in edits:
        if value is ...:
            first.remove_key(CM_UID, ("data", key))
        else:
            first.set_value(CM_UID, ("data", key), value)
    other = LiveResourceStore()
    other.restore(moved(first.edit_record(CM_UID)))
    store_with(configmap(**server) if server else configmap(), store=other)
    assert other.draft(CM_UID) == first.draft(CM_UID)
    assert other.patch(CM_UID) == first.patch(CM_UID)


def test_every_edit_counts_in_the_sequence_a_record_carries_and_a_replay_never_lowers() -> None:
    store = store_with(configmap())
    assert store.edit_sequence(CM_UID) == 0 and store.edit_sequence("nope") == 0
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.revert(CM_UID, ("data", "level"))
    store.keep_mine(CM_UID, ("data", "level"))  # no conflict there: nothing to keep, not an edit
    assert store.edit_sequence(CM_UID) == 2
    record = moved(store.edit_record(CM_UID))
    assert record == EditRecord(CM_UID, (), (), 2)
    other = store_with(configmap())
    seen: list[frozenset[str]] = []
    other.subscribe(seen.append)
    other.restore(record)
    assert other.edit_sequence(CM_UID) == 2 and seen == [frozenset({CM_UID})]  # the same draft, a new count
    other.restore(EditRecord(CM_UID, (), (), 1))
    assert other.edit_sequence(CM_UID) == 2 and len(seen) == 1
