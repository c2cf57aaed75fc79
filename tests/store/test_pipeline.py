"""The edit pipeline: every operation through ``LiveResourceStore.perform``, outcomes and typed problems."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from flask_krm.store import (
    BUILTIN_LIST_SCHEMAS,
    AddItem,
    AddKey,
    EditLines,
    EditRefused,
    EditView,
    KeepMine,
    LiveResourceStore,
    MoveItem,
    Operation,
    ProblemKind,
    RemoveItem,
    RemoveKey,
    RenameKey,
    Revert,
    SetField,
    TakeTheirs,
)
from flask_krm.store.pipeline import array_text

from .objects import deployment, modified, store_with

UID = "deploy-1"
CONTAINERS = ("spec", "template", "spec", "containers")
WEB = {"name": "web", "image": "web:1", "args": ["--a", "--b", "--c"]}
LOG = {"name": "log", "image": "log:1"}


def a_store(*containers: dict[str, Any]) -> LiveResourceStore:
    obj = deployment("1", [copy.deepcopy(c) for c in (containers or (WEB, LOG))])
    return store_with(obj, store=LiveResourceStore(schemas=BUILTIN_LIST_SCHEMAS))


def server_moves(store: LiveResourceStore, change: Any) -> None:
    """A colleague's change reaches the draft (a newer server object, merged three-way)."""
    obj = store.server(UID)
    assert obj is not None
    change(obj)
    obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
    store.apply(modified(obj))


def refused(store: LiveResourceStore, operation: Operation) -> ProblemKind:
    draft, sequence = store.draft(UID), store.edit_sequence(UID)
    with pytest.raises(EditRefused) as raised:
        store.perform(UID, operation)
    assert store.draft(UID) == draft and store.edit_sequence(UID) == sequence  # nothing changed
    [problem] = raised.value.problems
    return problem.kind


def test_a_field_set_from_the_value_it_showed_is_set_and_counted() -> None:
    store = a_store()
    outcome = store.perform(UID, SetField(("spec", "replicas"), 4, started=2))
    assert (outcome.applied, outcome.conflicts, outcome.path, outcome.sequence) == (1, (), ("spec", "replicas"), 1)
    assert store.draft(UID)["spec"]["replicas"] == 4
    again = store.perform(UID, SetField(("spec", "replicas"), 4, started=2))
    assert again.sequence == 2  # every accepted edit counts, even one the draft already held


def test_a_field_the_server_moved_meanwhile_is_set_and_conflicts_at_the_field() -> None:
    store = a_store()
    server_moves(store, lambda obj: obj["spec"].update(replicas=7))
    outcome = store.perform(UID, SetField(("spec", "replicas"), 4, started=2))
    assert outcome.conflicts == (("spec", "replicas"),)
    assert store.draft(UID)["spec"]["replicas"] == 4
    [conflict] = store.conflicts(UID)
    assert (conflict.path, conflict.theirs) == (("spec", "replicas"), 7)


def test_a_field_holding_the_persons_own_edit_takes_what_is_typed_last() -> None:
    store = a_store()
    store.perform(UID, SetField(("spec", "replicas"), 4, started=2))  # another tab
    outcome = store.perform(UID, SetField(("spec", "replicas"), 5, started=2))
    assert outcome.conflicts == () and store.draft(UID)["spec"]["replicas"] == 5


def test_a_field_without_a_start_is_set_whatever_the_draft_holds() -> None:
    store = a_store()
    server_moves(store, lambda obj: obj["spec"].update(replicas=7))
    outcome = store.perform(UID, SetField(("spec", "replicas"), 4))
    assert outcome.conflicts == () and store.conflicts(UID) == []


def test_a_row_is_found_by_the_text_it_started_from() -> None:
    store = a_store()
    args = (*CONTAINERS, {"name": "web"}, "args")
    server_moves(store, lambda obj: obj["spec"]["template"]["spec"]["containers"][0]["args"].insert(0, "--new"))
    outcome = store.perform(UID, SetField((*args, 1), "--B", started="--b"))  # --b is now row 2
    assert outcome.path == (*CONTAINERS, 0, "args", 2)
    assert store.draft(UID)["spec"]["template"]["spec"]["containers"][0]["args"] == ["--new", "--a", "--B", "--c"]


def test_a_row_past_the_end_of_its_list_moved_meanwhile() -> None:
    store = a_store()
    args = (*CONTAINERS, {"name": "web"}, "args")
    assert refused(store, SetField((*args, 9), "--x", started="--c")) is ProblemKind.ROW_MOVED
    assert refused(store, RemoveItem((*args, 0), row="--gone")) is ProblemKind.ROW_MOVED


def test_an_array_written_as_text_merges_by_lines_with_what_reached_the_draft() -> None:
    store = a_store()
    args = (*CONTAINERS, {"name": "web"}, "args")
    started = array_text(WEB["args"])
    server_moves(store, lambda obj: obj["spec"]["template"]["spec"]["containers"][0]["args"].append("--d"))
    typed = started.replace('"--a"', '"--A"')
    outcome = store.perform(UID, EditLines(args, typed, started, ["--A", "--b", "--c"]))
    assert outcome.conflicts == ()
    assert store.draft(UID)["spec"]["template"]["spec"]["containers"][0]["args"] == ["--A", "--b", "--c", "--d"]


def test_colliding_lines_set_the_typed_array_as_a_conflict() -> None:
    store = a_store()
    args = (*CONTAINERS, {"name": "web"}, "args")
    started = array_text(WEB["args"])
    server_moves(store, lambda obj: obj["spec"]["template"]["spec"]["containers"][0]["args"].__setitem__(0, "--x"))
    outcome = store.perform(UID, EditLines(args, started.replace('"--a"', '"--y"'), started, ["--y", "--b", "--c"]))
    assert outcome.conflicts == ((*CONTAINERS, 0, "args"),)
    assert store.draft(UID)["spec"]["template"]["spec"]["containers"][0]["args"] == ["--y", "--b", "--c"]


def test_keys_are_added_renamed_and_removed() -> None:
    store = a_store()
    labels = ("metadata", "labels")
    assert store.perform(UID, AddKey((*labels, "team"), "a")).path == (*labels, "team")
    assert refused(store, AddKey((*labels, "team"), "b")) is ProblemKind.KEY_EXISTS
    assert store.perform(UID, RenameKey((*labels, "team"), "owner")).path == (*labels, "owner")
    same = store.perform(UID, RenameKey((*labels, "owner"), "owner"))
    assert same.applied == 0  # a rename to the same key changes nothing
    assert refused(store, RenameKey((*labels, "gone"), "x")) is ProblemKind.MISSING_KEY
    store.perform(UID, RemoveKey((*labels, "owner")))
    assert "owner" not in (store.draft(UID)["metadata"].get("labels") or {})


def test_items_are_added_moved_and_removed_by_their_keys() -> None:
    store = a_store()
    added = store.perform(UID, AddItem(CONTAINERS, {"name": "mesh", "image": "mesh:1"}))
    assert added.path == (*CONTAINERS, 2)
    assert refused(store, AddItem(CONTAINERS, {"name": "mesh", "image": "x"})) is ProblemKind.ITEM_EXISTS
    assert refused(store, AddItem(CONTAINERS, {"image": "x"})) is ProblemKind.INVALID_VALUE
    assert refused(store, MoveItem((*CONTAINERS, {"name": "web"}), -1)) is ProblemKind.ALREADY_FIRST
    assert refused(store, MoveItem((*CONTAINERS, {"name": "mesh"}), 1)) is ProblemKind.ALREADY_LAST
    assert store.perform(UID, MoveItem((*CONTAINERS, {"name": "mesh"}), -1)).path == (*CONTAINERS, 1)
    store.perform(UID, RemoveItem((*CONTAINERS, {"name": "web"})))
    names = [c["name"] for c in store.draft(UID)["spec"]["template"]["spec"]["containers"]]
    assert names == ["mesh", "log"]
    assert refused(store, RemoveItem((*CONTAINERS, {"name": "web"}))) is ProblemKind.MISSING_ITEM
    assert refused(store, RemoveItem(("spec", "replicas"))) is ProblemKind.NOT_AN_ITEM


def test_revert_take_theirs_keep_mine_and_discard() -> None:
    store = a_store()
    store.perform(UID, SetField(("spec", "replicas"), 4, started=2))
    server_moves(store, lambda obj: obj["spec"].update(replicas=7))
    assert store.conflicts(UID)
    store.perform(UID, KeepMine(("spec", "replicas")))
    assert store.conflicts(UID) == [] and store.draft(UID)["spec"]["replicas"] == 4
    store.perform(UID, TakeTheirs(("spec", "replicas")))
    assert store.draft(UID)["spec"]["replicas"] == 7
    store.perform(UID, SetField(("spec", "paused"), True))
    store.perform(UID, Revert(("spec", "paused")))
    assert store.patch(UID) is None
    store.perform(UID, SetField(("spec", "replicas"), 9))
    store.perform(UID, AddKey(("metadata", "labels", "a"), "b"))
    discarded = store.perform(UID, Revert())
    assert discarded.path == () and store.patch(UID) is None and store.conflicts(UID) == []


def test_a_view_edit_answers_its_edits_and_conflicts() -> None:
    store = a_store()
    before = store.draft(UID)
    after = copy.deepcopy(before)
    after["spec"]["replicas"] = 3
    after["metadata"]["labels"] = {"a": "b"}
    server_moves(store, lambda obj: obj["spec"].update(replicas=7))
    outcome = store.perform(UID, EditView(before, after))
    assert outcome.applied == 2 and outcome.conflicts == (("spec", "replicas"),)
    assert outcome.sequence == store.edit_sequence(UID)


def test_a_view_edit_lists_every_problem_at_its_place_and_changes_nothing() -> None:
    store = a_store()
    before = store.draft(UID)
    after = copy.deepcopy(before)
    after["spec"]["paused"] = None
    after["status"] = {"readyReplicas": 9}
    after["spec"]["replicas"] = 5
    with pytest.raises(EditRefused) as raised:
        store.perform(UID, EditView(before, after))
    found = {(p.kind, p.path) for p in raised.value.problems}
    assert found == {
        (ProblemKind.NULL_IN_MAP, ("spec", "paused")),
        (ProblemKind.READ_ONLY, ("status", "readyReplicas")),
    }
    assert store.patch(UID) is None


@pytest.mark.parametrize(
    ("operation", "kind"),
    [
        (SetField(("status", "readyReplicas"), 3), ProblemKind.READ_ONLY),
        (SetField(("metadata", "name"), "x"), ProblemKind.READ_ONLY),
        (SetField((*CONTAINERS, 0, "image"), "x"), ProblemKind.MALFORMED_PATH),  # keyed: named by its keys
        (SetField((*CONTAINERS, {"name": "gone"}, "image"), "x"), ProblemKind.MISSING_ITEM),
        (SetField(("spec", "replicas", "x"), 1), ProblemKind.SHAPE_CHANGED),
        (SetField(("metadata", "labels", "a"), 1), ProblemKind.INVALID_VALUE),  # a label holds text
        (SetField(("spec", "selector", "x"), float("nan")), ProblemKind.INVALID_VALUE),
    ],
)
def test_refused_operations_answer_a_typed_problem_and_change_nothing(operation: Operation, kind: ProblemKind) -> None:
    assert refused(a_store(), operation) is kind


def test_an_unknown_object_is_a_problem() -> None:
    store = a_store()
    with pytest.raises(EditRefused) as raised:
        store.perform("nobody", SetField(("spec", "replicas"), 1))
    assert [p.kind for p in raised.value.problems] == [ProblemKind.UNKNOWN_OBJECT]


def test_a_problem_carries_the_stores_detail_not_a_status() -> None:
    store = a_store()
    with pytest.raises(EditRefused) as raised:
        store.perform(UID, SetField(("metadata", "labels", "a"), 1))
    [problem] = raised.value.problems
    assert problem.path == ("metadata", "labels", "a") and "map of strings" in problem.detail
    assert not hasattr(problem, "status")


def test_subscribers_hear_of_an_operation_once_after_the_lock_is_released() -> None:
    store = a_store()
    heard: list[frozenset[str]] = []
    free: list[bool] = []

    def listener(changed: frozenset[str]) -> None:
        heard.append(changed)
        other = threading.Thread(target=lambda: free.append(store.draft(UID) is not None))
        other.start()  # another thread can read the store: the lock is not held
        other.join(timeout=5)

    store.subscribe(listener)
    args = (*CONTAINERS, {"name": "web"}, "args")
    started = array_text(WEB["args"])
    server_moves(store, lambda obj: obj["spec"]["template"]["spec"]["containers"][0]["args"].__setitem__(0, "--x"))
    heard.clear()
    free.clear()
    store.perform(UID, EditLines(args, started.replace('"--a"', '"--y"'), started, ["--y", "--b", "--c"]))
    assert heard == [frozenset({UID})] and free == [True]


def test_a_refused_operation_notifies_nobody() -> None:
    store = a_store()
    heard: list[frozenset[str]] = []
    store.subscribe(heard.append)
    with pytest.raises(EditRefused):
        store.perform(UID, SetField(("status", "x"), 1))
    assert heard == []
