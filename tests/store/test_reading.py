"""Reading a store (``flask_krm.store.reading``): copies, names, changes and conflicts."""

from __future__ import annotations

from flask_krm.store import LiveResourceStore

from .objects import configmap, store_with


def test_every_getter_returns_a_copy() -> None:
    store = store_with(configmap(a="1"), store=LiveResourceStore())
    uid = store.uids()[0]
    draft, server = store.draft(uid), store.server(uid)
    assert draft is not None and server is not None
    draft["data"]["a"] = "mutated"
    server["data"]["a"] = "mutated"
    assert store.draft(uid)["data"]["a"] == "1" and store.server(uid)["data"]["a"] == "1"  # type: ignore[index]


def test_changes_dirty_paths_and_edited_uids_follow_the_draft() -> None:
    store = store_with(configmap(a="1"), store=LiveResourceStore())
    uid = store.uids()[0]
    assert store.edited_uids() == [] and not store.unsaved()
    store.set_value(uid, ("data", "b"), "2")
    assert store.edited_uids() == [uid] and store.unsaved()
    assert store.dirty(uid) == [("data", "b")] and store.is_dirty(uid, ("data",))
    [change] = store.changes(uid)
    assert (change.path, change.kind, change.new) == (("data", "b"), "add", "2")
    assert store.named(store.server(uid)["metadata"]["name"]) == [uid]  # type: ignore[index]
    assert store.edit_sequence(uid) == 1 and store.edit_sequence("nobody") == 0


def test_a_store_holding_nothing_of_its_own_reads_the_truth_for_clean_questions() -> None:
    store = store_with(configmap(uid="u-a"))
    assert store.holds_nothing_of("u-a")
    assert not store.holds_nothing_of("u-missing")
    assert store.clean("u-a") is store.truth.get("u-a")
    assert store.edit_sequence("u-a") == 0 and not store.is_dirty("u-a") and not store.is_dirty("u-a", ("data",))
    read_only = store.read_only_check("u-a")
    assert read_only(("metadata", "uid")) and not read_only(("data", "k"))
    assert read_only(("metadata", "uid")) == store.is_read_only("u-a", ("metadata", "uid"))

    store.set_value("u-a", ("data", "k"), "mine")
    assert not store.holds_nothing_of("u-a")
    assert store.clean("u-a") is None
    assert store.edit_sequence("u-a") == 1 and store.is_dirty("u-a") and store.is_dirty("u-a", ("data", "k"))
