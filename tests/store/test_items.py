"""Keyed-list items named by their keys: addresses, item edits, and edits that stay with their item."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from flask_krm.store import (
    BUILTIN_LIST_SCHEMAS,
    InvalidValueError,
    ItemExistsError,
    LiveResourceStore,
    MalformedPathError,
    MissingItemError,
    PathTypeError,
    ReadOnlyPathError,
)
from flask_krm.store.items import as_address

from .objects import deployment, modified, store_with

UID = "deploy-1"
CONTAINERS = ("spec", "template", "spec", "containers")


def pod(*containers: dict[str, Any], version: str = "1") -> dict[str, Any]:
    return deployment(version, list(copy.deepcopy(containers)))


WEB = {"name": "web", "image": "web:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
LOG = {"name": "log", "image": "log:1", "args": ["--v", "--json"]}


def keyed_store(*containers: dict[str, Any]) -> LiveResourceStore:
    return store_with(pod(*(containers or (WEB, LOG))), store=LiveResourceStore(schemas=BUILTIN_LIST_SCHEMAS))


def containers_of(obj: dict[str, Any] | None) -> list[dict[str, Any]]:
    assert obj is not None
    return list(obj["spec"]["template"]["spec"]["containers"])


def test_an_address_resolves_to_the_items_position_now() -> None:
    store = keyed_store()
    assert store.resolve(UID, (*CONTAINERS, {"name": "log"}, "image")) == (*CONTAINERS, 1, "image")
    assert store.resolve(UID, (*CONTAINERS, {"name": "web"}, "env", {"name": "B"}, "value")) == (
        *CONTAINERS,
        0,
        "env",
        1,
        "value",
    )
    assert store.address(UID, (*CONTAINERS, 0, "env", 1)) == (*CONTAINERS, {"name": "web"}, "env", {"name": "B"})
    # a list of strings keeps its positions
    assert store.resolve(UID, (*CONTAINERS, {"name": "log"}, "args", 1)) == (*CONTAINERS, 1, "args", 1)


@pytest.mark.parametrize(
    ("address", "error"),
    [
        ((*CONTAINERS, {"name": "gone"}, "image"), MissingItemError),
        ((*CONTAINERS, 0, "image"), MalformedPathError),  # a position in a keyed list
        ((*CONTAINERS, {"image": "web:1"}, "image"), MalformedPathError),  # not the list's keys
        ((*CONTAINERS, {"name": "log"}, "args", {"name": "x"}), MalformedPathError),  # not a keyed list
        (("spec", {"name": "web"}), PathTypeError),  # an item key on a map
        ((*CONTAINERS, {"name": ["web"]}), MalformedPathError),  # a key value that is no scalar
        ((*CONTAINERS, {}), MalformedPathError),
    ],
)
def test_bad_addresses_are_refused_precisely(address: tuple[Any, ...], error: type[Exception]) -> None:
    store = keyed_store()
    with pytest.raises(error):
        store.resolve(UID, address)
    assert store.dirty(UID) == []


def test_as_address_refuses_what_is_no_address() -> None:
    with pytest.raises(MalformedPathError):
        as_address("spec.replicas")
    with pytest.raises(MalformedPathError):
        as_address(["spec", {1: "x"}])
    assert as_address(["a", {"name": "b"}, 0]) == ("a", {"name": "b"}, 0)


def test_an_item_field_edit_stays_with_its_item_when_a_colleague_reorders_and_inserts() -> None:
    store = keyed_store()
    store.set_value(UID, store.resolve(UID, (*CONTAINERS, {"name": "web"}, "env", {"name": "A"}, "value")), "mine")
    sidecar = {"name": "sidecar", "image": "s:1"}
    theirs = pod(sidecar, LOG, {**WEB, "image": "web:2"}, version="2")
    store.apply(modified(theirs))
    containers = containers_of(store.draft(UID))
    assert [c["name"] for c in containers] == ["sidecar", "log", "web"]
    assert containers[2]["image"] == "web:2", "their image is kept"
    assert containers[2]["env"][0] == {"name": "A", "value": "mine"}, "my env stays with web"
    assert store.conflicts(UID) == []
    assert store.resolve(UID, (*CONTAINERS, {"name": "web"}, "env", {"name": "A"}, "value"))[4] == 2


def test_undo_of_an_item_field_takes_the_servers_value_of_the_same_item() -> None:
    store = keyed_store()
    store.remove_item(UID, (*CONTAINERS, 0))  # web removed here: log is now first in the draft
    store.set_value(UID, (*CONTAINERS, 0, "image"), "log:mine")
    assert store.is_dirty(UID, (*CONTAINERS, 0, "image"))
    store.revert(UID, (*CONTAINERS, 0, "image"))
    assert containers_of(store.draft(UID)) == [LOG], "log's own image, not web's"
    assert not store.is_dirty(UID, (*CONTAINERS, 0, "image"))


def test_undo_of_an_added_item_removes_it() -> None:
    store = keyed_store()
    store.insert_item(UID, CONTAINERS, {"name": "new", "image": "n:1"})
    store.revert(UID, (*CONTAINERS, 2))
    assert containers_of(store.draft(UID)) == [WEB, LOG]
    assert store.dirty(UID) == []


def test_items_are_added_with_their_keys_removed_and_moved() -> None:
    store = keyed_store()
    env = (*CONTAINERS, 0, "env")
    assert store.insert_item(UID, env, {"name": "C", "value": ""}) == 2
    with pytest.raises(ItemExistsError):
        store.insert_item(UID, env, {"name": "A", "value": "again"})
    with pytest.raises(InvalidValueError):
        store.insert_item(UID, env, {"value": "no name"})
    store.move_item(UID, (*env, 2), 0)
    store.remove_item(UID, (*env, 1))
    assert [e["name"] for e in containers_of(store.draft(UID))[0]["env"]] == ["C", "B"]
    with pytest.raises(PathTypeError):
        store.move_item(UID, (*env, 0), 5)
    with pytest.raises(PathTypeError):
        store.remove_item(UID, (*env, 7))
    with pytest.raises(PathTypeError):
        store.remove_item(UID, (*env[:-1], "image"))
    # a list the object does not have yet is made by its first item
    store.insert_item(UID, (*CONTAINERS, 1, "env"), {"name": "X", "value": "1"})
    assert containers_of(store.draft(UID))[1]["env"] == [{"name": "X", "value": "1"}]


def test_item_edits_obey_the_policy() -> None:
    from flask_krm.store import EditPolicy

    store = store_with(pod(WEB), store=LiveResourceStore(EditPolicy.only(("spec", "replicas")), BUILTIN_LIST_SCHEMAS))
    with pytest.raises(ReadOnlyPathError):
        store.insert_item(UID, CONTAINERS, {"name": "x", "image": "x"})
    with pytest.raises(ReadOnlyPathError):
        store.remove_item(UID, (*CONTAINERS, 0))
    with pytest.raises(ReadOnlyPathError):
        store.move_item(UID, (*CONTAINERS, 0), 0)
    with pytest.raises(ReadOnlyPathError):
        store.set_contested(UID, (*CONTAINERS, 0, "image"), "x")
    assert store.dirty(UID) == []


def test_a_contested_set_records_a_conflict_at_the_item_field() -> None:
    store = keyed_store()
    store.apply(modified(pod({**WEB, "image": "web:theirs"}, LOG, version="2")))
    image = (*CONTAINERS, 0, "image")
    store.set_contested(UID, image, "web:mine")
    [conflict] = store.conflicts(UID)
    assert conflict.path == image and conflict.theirs == "web:theirs"
    store.keep_mine(UID, image)
    assert store.conflicts(UID) == []
    assert containers_of(store.draft(UID))[0]["image"] == "web:mine"


def test_a_contested_row_conflicts_at_the_list_merged_whole() -> None:
    store = keyed_store()
    args = (*CONTAINERS, 1, "args")
    store.set_contested(UID, (*args, 0), "--mine")
    [conflict] = store.conflicts(UID)
    assert conflict.path == args and conflict.theirs == ["--v", "--json"]
    store.take_theirs(UID, args)
    assert store.conflicts(UID) == [] and store.dirty(UID) == []


def test_a_contested_set_equal_to_the_server_records_nothing() -> None:
    store = keyed_store()
    store.set_contested(UID, (*CONTAINERS, 0, "image"), "web:1")
    assert store.conflicts(UID) == [] and store.dirty(UID) == []


def test_my_reorder_survives_a_colleagues_change_to_the_list() -> None:
    store = keyed_store()
    store.move_item(UID, (*CONTAINERS, 1), 0)  # log first
    store.apply(modified(pod({**WEB, "image": "web:2"}, LOG, {"name": "new", "image": "n:1"}, version="2")))
    assert [c["name"] for c in containers_of(store.draft(UID))] == ["log", "web", "new"]
    assert containers_of(store.draft(UID))[1]["image"] == "web:2"
    assert store.conflicts(UID) == []


def test_both_reordering_differently_is_a_conflict_at_the_list() -> None:
    third = {"name": "third", "image": "t:1"}
    store = keyed_store(WEB, LOG, third)
    store.move_item(UID, (*CONTAINERS, 2), 0)  # third, web, log
    store.apply(modified(pod(LOG, WEB, third, version="2")))  # they: log, web, third
    [conflict] = store.conflicts(UID)
    assert conflict.path == CONTAINERS
    assert [c["name"] for c in containers_of(store.draft(UID))] == ["third", "web", "log"]
