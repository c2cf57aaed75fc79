"""Edits made in a whole-object YAML view, applied to the draft as leaf-level edits.

- For random objects and random edits, editing the YAML view gives the same draft (and patch) as
  making the same edits through the form's operations.
- A server change that arrived after the view was rendered survives where the person did not edit,
  exactly as when the edits had gone through the form first; a change to the same value becomes a
  conflict holding the server's value.
- Keyed list items are matched by key, never replaced as a whole array.
- Read-only paths, the editor's narrower policy and withheld values are refused, each at its place,
  and a refused edit changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flask_krm.events import Redaction, Reset, Synced, Upsert
from flask_krm.store import (
    BUILTIN_LIST_SCHEMAS,
    DEFAULT_POLICY,
    EditPolicy,
    EditRefused,
    EditView,
    LiveResourceStore,
    PathTypeError,
    ProblemKind,
)
from flask_krm.store.paths import MISSING, Path, get_at, pointer_to_path
from flask_krm.store.values import json_copy, json_equal, set_in
from flask_krm.yaml_text import dump_yaml, load_yaml, with_placeholders

from .objects import deployment
from .test_properties import KEYS, SCALARS, UID, VALUES, editable_candidates, node_paths, objects, server_change


def loaded(store: LiveResourceStore, uid: str) -> Any:
    """The store's draft through its YAML text (as the YAML tab shows it)."""
    draft = store.draft(uid)
    withheld = [pointer_to_path(r.path) for r in store.redactions(uid)]
    return load_yaml(dump_yaml(with_placeholders(draft or {}, withheld))).value


def store_with(
    obj: dict[str, Any], redacted: tuple[Redaction, ...] = (), policy: EditPolicy = DEFAULT_POLICY
) -> LiveResourceStore:
    store = LiveResourceStore(policy, schemas=BUILTIN_LIST_SCHEMAS)
    store.apply(Reset({}, "krm-full/v1"))
    store.apply(Upsert("added", obj, redacted))
    store.apply(Synced())
    return store


@st.composite
def form_edits(draw: st.DrawFn, obj: dict[str, Any]) -> list[tuple[str, Path, Any]]:
    """Random form operations on ``obj``: set a value (anywhere editable) or remove a map key."""
    ops: list[tuple[str, Path, Any]] = []
    current = json_copy(obj)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(editable_candidates(current)))
        if draw(st.booleans()) and isinstance(path[-1], str) and get_at(current, path) is not MISSING:
            ops.append(("remove", path, None))
        else:
            value = draw(st.text(alphabet="pq", max_size=2) if path[0] in ("data", "metadata") else VALUES)
            ops.append(("set", path, value))
        try:
            current = set_in(current, path, "placeholder") if ops[-1][0] == "set" else current
        except PathTypeError:
            ops.pop()
    return ops


def through_form(store: LiveResourceStore, ops: list[tuple[str, Path, Any]]) -> None:
    for op, path, value in ops:
        try:
            if op == "set":
                store.set_value(UID, path, value)
            else:
                store.remove_key(UID, path)
        except PathTypeError:
            continue


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_editing_yaml_equals_editing_through_the_form(data: st.DataObject) -> None:
    obj = data.draw(objects())
    ops = data.draw(form_edits(obj))
    form = store_with(obj)
    through_form(form, ops)
    yaml = store_with(obj)
    before = loaded(yaml, UID)
    after = load_yaml(dump_yaml(form.draft(UID))).value
    yaml.perform(UID, EditView(before, after))
    assert json_equal(yaml.draft(UID), form.draft(UID))
    assert json_equal(yaml.patch(UID), form.patch(UID))
    assert yaml.conflicts(UID) == []


def _whole(path: Path) -> Path:
    """``path`` cut at its first list index: an edit in a list (unkeyed here) changes the whole list."""
    for depth, segment in enumerate(path):
        if isinstance(segment, int):
            return path[:depth]
    return path


def _disjoint(a: Path, b: Path) -> bool:
    n = min(len(a), len(b))
    return tuple(map(str, a[:n])) != tuple(map(str, b[:n]))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_server_changes_meanwhile_are_merged_as_if_the_edits_came_first(data: st.DataObject) -> None:
    obj = data.draw(objects())
    ops = data.draw(form_edits(obj))
    form = store_with(obj)
    through_form(form, ops)
    person = form.draft(UID)
    changed = server_change(data.draw, obj, 2)
    # (ii) the server may touch anything; (i) the untouched part is compared below.
    yaml = store_with(obj)
    before = loaded(yaml, UID)
    yaml.apply(Upsert("modified", changed))
    yaml.perform(UID, EditView(before, load_yaml(dump_yaml(person)).value))
    form.apply(Upsert("modified", changed))
    assert json_equal(yaml.draft(UID), form.draft(UID))
    assert {c.path for c in yaml.conflicts(UID)} == {c.path for c in form.conflicts(UID)}
    for path in node_paths(changed):
        edited = [_whole(p) for _, p, _ in ops]
        if path[0] != "status" and all(_disjoint(path, p) for p in edited) and not isinstance(path[-1], int):
            assert json_equal(get_at(yaml.draft(UID), path), get_at(changed, path)), path


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_same_value_changed_on_the_server_becomes_a_conflict(data: st.DataObject) -> None:
    obj = data.draw(objects())
    key = data.draw(KEYS)
    mine, theirs = data.draw(SCALARS), data.draw(SCALARS)
    if json_equal(mine, theirs):
        return
    obj["spec"][key] = "seen"
    store = store_with(obj)
    before = loaded(store, UID)
    after = json_copy(before)
    after["spec"][key] = mine
    store.apply(Upsert("modified", set_in(set_in(obj, ("spec", key), theirs), ("metadata", "resourceVersion"), "2")))
    result = store.perform(UID, EditView(before, after))
    assert result.conflicts == (("spec", key),)
    assert get_at(store.draft(UID), ("spec", key)) == mine
    [conflict] = store.conflicts(UID)
    assert (conflict.path, conflict.theirs) == (("spec", key), theirs)
    store.take_theirs(UID, ("spec", key))
    assert store.conflicts(UID) == [] and store.patch(UID) is None


def test_keyed_items_are_matched_by_key_and_edited_leaf_by_leaf() -> None:
    obj = deployment()
    store = store_with(obj)
    before = loaded(store, "deploy-1")
    after = json_copy(before)
    after["spec"]["replicas"] = 5
    after["spec"]["template"]["spec"]["containers"][1]["image"] = "log:2"
    after["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "MODE", "value": "fast"}]
    # Meanwhile a controller puts a sidecar first and changes web's image and the status.
    theirs = json_copy(obj)
    theirs["metadata"]["resourceVersion"] = "2"
    theirs["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2"
    theirs["spec"]["template"]["spec"]["containers"].insert(0, {"name": "mesh", "image": "mesh:1"})
    theirs["status"] = {"readyReplicas": 2}
    store.apply(Upsert("modified", theirs))
    result = store.perform("deploy-1", EditView(before, after))
    assert result.conflicts == ()
    containers = store.draft("deploy-1")["spec"]["template"]["spec"]["containers"]
    assert containers == [
        {"name": "mesh", "image": "mesh:1"},
        {"name": "web", "image": "web:2", "env": [{"name": "MODE", "value": "fast"}]},
        {"name": "log", "image": "log:2"},
    ]
    assert store.draft("deploy-1")["spec"]["replicas"] == 5
    assert store.draft("deploy-1")["status"] == {"readyReplicas": 2}


def test_keyed_items_added_and_removed_apply_to_the_list_as_it_is_now() -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    store = store_with(obj)
    before = loaded(store, "deploy-1")
    after = json_copy(before)
    env = after["spec"]["template"]["spec"]["containers"][0]["env"]
    env[:] = [{"name": "A", "value": "1"}, {"name": "NEW", "value": "n"}]  # B removed, NEW added after A
    theirs = json_copy(obj)
    theirs["metadata"]["resourceVersion"] = "2"
    theirs["spec"]["template"]["spec"]["containers"][0]["env"].insert(0, {"name": "Z", "value": "z"})
    store.apply(Upsert("modified", theirs))
    store.perform("deploy-1", EditView(before, after))
    draft_env = store.draft("deploy-1")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert draft_env == [{"name": "Z", "value": "z"}, {"name": "A", "value": "1"}, {"name": "NEW", "value": "n"}]
    assert store.conflicts("deploy-1") == []


def test_removing_an_item_the_server_changed_meanwhile_conflicts() -> None:
    obj = deployment()
    store = store_with(obj)
    before = loaded(store, "deploy-1")
    after = json_copy(before)
    del after["spec"]["template"]["spec"]["containers"][1]
    theirs = json_copy(obj)
    theirs["metadata"]["resourceVersion"] = "2"
    theirs["spec"]["template"]["spec"]["containers"][1]["image"] = "log:9"
    store.apply(Upsert("modified", theirs))
    result = store.perform("deploy-1", EditView(before, after))
    path = ("spec", "template", "spec", "containers")
    assert result.conflicts == (path,)
    assert [c["name"] for c in store.draft("deploy-1")["spec"]["template"]["spec"]["containers"]] == ["web"]


@pytest.mark.parametrize(
    ("path", "value", "view_path", "kind"),
    [
        (("status", "readyReplicas"), 9, ("status", "readyReplicas"), ProblemKind.READ_ONLY),
        (("metadata", "name"), "other", ("metadata", "name"), ProblemKind.READ_ONLY),
        (("metadata", "resourceVersion"), "7", ("metadata", "resourceVersion"), ProblemKind.READ_ONLY),
        (("spec", "paused"), None, ("spec", "paused"), ProblemKind.NULL_IN_MAP),
    ],
)
def test_refused_edits_name_their_place_and_change_nothing(
    path: Path, value: Any, view_path: Path, kind: ProblemKind
) -> None:
    store = store_with(deployment())
    before = loaded(store, "deploy-1")
    after = set_in(set_in(before, ("spec", "replicas"), 4), path, value)
    with pytest.raises(EditRefused) as refused:
        store.perform("deploy-1", EditView(before, after))
    [problem] = refused.value.problems
    assert (problem.path, problem.kind) == (view_path, kind)
    assert store.patch("deploy-1") is None


def test_the_editors_narrower_policy_refuses_at_the_path() -> None:
    store = store_with(deployment(), policy=EditPolicy.only(("metadata", "labels")))
    before = loaded(store, "deploy-1")
    after = set_in(set_in(before, ("spec", "replicas"), 4), ("metadata", "labels"), {"a": "b"})
    with pytest.raises(EditRefused) as refused:
        store.perform("deploy-1", EditView(before, after))
    assert [(p.path, p.kind) for p in refused.value.problems] == [(("spec", "replicas"), ProblemKind.READ_ONLY)]
    assert store.patch("deploy-1") is None


def secret() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"uid": "s-1", "name": "creds", "namespace": "demo", "resourceVersion": "1"},
        "type": "Opaque",
    }


REDACTED = (Redaction("/data/password", 1),)


def test_a_withheld_placeholder_left_in_place_writes_nothing() -> None:
    store = store_with(secret(), REDACTED)
    before = loaded(store, "s-1")
    after = set_in(before, ("metadata", "labels"), {"team": "a"})
    after = set_in(after, ("data", "token"), "dG9r")
    store.perform("s-1", EditView(before, after))
    assert store.patch("s-1") == {"metadata": {"labels": {"team": "a"}}, "data": {"token": "dG9r"}}


@pytest.mark.parametrize("edit", ["change", "remove", "copy", "remove-map"])
def test_a_withheld_value_cannot_be_changed_removed_or_copied(edit: str) -> None:
    store = store_with(secret(), REDACTED)
    before = loaded(store, "s-1")
    after = json_copy(before)
    if edit == "change":
        after["data"]["password"] = "aHVudGVyMg=="
    elif edit == "remove":
        after["data"]["other"] = "eA=="
        del after["data"]["password"]
    elif edit == "copy":
        after["data"]["copy"] = after["data"]["password"]
    else:
        del after["data"]
    with pytest.raises(EditRefused) as refused:
        store.perform("s-1", EditView(before, after))
    withheld = {ProblemKind.WITHHELD_CHANGED, ProblemKind.WITHHELD_COPIED}
    assert refused.value.problems and all(p.kind in withheld for p in refused.value.problems)
    assert store.patch("s-1") is None


NAMES = st.sampled_from(["web", "log", "mesh", "init"])
ENV = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["A", "B", "C"]), "value": st.text("xy", max_size=2)}),
    max_size=3,
    unique_by=lambda e: e["name"],
)
CONTAINERS = st.lists(
    st.fixed_dictionaries({"name": NAMES, "image": st.text("ab", min_size=1, max_size=2), "env": ENV}),
    min_size=1,
    max_size=3,
    unique_by=lambda c: c["name"],
)
CONTAINERS_PATH: Path = ("spec", "template", "spec", "containers")


def by_name(value: Any) -> Any:
    """``value`` with every list of named items in name order: a new keyed item goes where the
    person put it in YAML, while the merge appends it after the server's items."""
    if isinstance(value, dict):
        return {k: by_name(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [by_name(v) for v in value]
        named = all(isinstance(v, dict) and "name" in v for v in items)
        return sorted(items, key=lambda v: v["name"]) if named else items
    return value


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_keyed_items_edited_in_yaml_land_on_the_same_items_as_form_edits_despite_server_changes(
    data: st.DataObject,
) -> None:
    obj = deployment(containers=data.draw(CONTAINERS))
    containers = obj["spec"]["template"]["spec"]["containers"]
    ops: list[tuple[Path, Any]] = []
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(containers) - 1))
        if data.draw(st.booleans()):
            ops.append((CONTAINERS_PATH + (index, "image"), data.draw(st.text("cd", min_size=1, max_size=2))))
        else:
            ops.append((CONTAINERS_PATH + (index, "env"), data.draw(ENV)))
    # Meanwhile the server puts a new container first and changes another image.
    theirs = json_copy(obj)
    theirs["metadata"]["resourceVersion"] = "2"
    theirs_containers = theirs["spec"]["template"]["spec"]["containers"]
    theirs_containers.insert(0, {"name": "sidecar", "image": "s"})
    changed = data.draw(st.integers(1, len(theirs_containers) - 1))
    theirs_containers[changed]["image"] = "server"
    form = store_with(obj)
    for path, value in ops:
        form.set_value("deploy-1", path, value)
    form.apply(Upsert("modified", theirs))
    yaml = store_with(obj)
    before = loaded(yaml, "deploy-1")
    after = json_copy(before)
    for path, value in ops:
        after = set_in(after, path, value)
    yaml.apply(Upsert("modified", theirs))
    yaml.perform("deploy-1", EditView(before, after))
    assert json_equal(by_name(yaml.draft("deploy-1")), by_name(form.draft("deploy-1")))
    assert {c.path for c in yaml.conflicts("deploy-1")} == {c.path for c in form.conflicts("deploy-1")}
