"""Widget choice and field state, from a real store's view of an object (no Flask)."""

from __future__ import annotations

import copy
import typing as t
from dataclasses import replace

import pytest

from flask_krm.events import Redaction, Reset, Synced, Upsert
from flask_krm.store import DEFAULT_POLICY, MISSING, EditPolicy, LiveResourceStore
from flask_krm.ui.widgets import (
    Field,
    FieldSelectionError,
    ObjectState,
    build_editor,
    parse_field_roots,
    widget_for,
)

DEPLOYMENT: t.Final[dict[str, t.Any]] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "namespace": "app",
        "uid": "u-web",
        "resourceVersion": "7",
        "labels": {"app.kubernetes.io/name": "web"},
    },
    "spec": {
        "replicas": 2,
        "paused": False,
        "ratio": 0.5,
        "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}},
    },
    "status": {"readyReplicas": 1},
}


def held(
    obj: t.Mapping[str, t.Any], redacted: tuple[Redaction, ...] = (), policy: EditPolicy = DEFAULT_POLICY
) -> LiveResourceStore:
    store = LiveResourceStore(policy)
    store.apply(Reset({"target": "demo", "version": "v1", "resource": "x"}, "krm-full/v1"))
    store.apply(Upsert("added", obj, redacted))
    store.apply(Synced())
    return store


def state_of(store: LiveResourceStore, uid: str) -> ObjectState:
    return ObjectState(
        draft=store.draft(uid) or {},
        server=store.server(uid) or {},
        read_only=lambda path: store.is_read_only(uid, path),
        dirty_paths=store.dirty(uid),
        conflicts={c.path: (c.theirs if c.present else MISSING) for c in store.conflicts(uid)},
        redacted={tuple(r.path.strip("/").split("/")): r.rev for r in store.redactions(uid)},
    )


def find(fields: t.Iterable[Field], path: tuple[t.Any, ...]) -> Field:
    for f in fields:
        if f.path == path:
            return f
        try:
            return find(f.children, path)
        except LookupError:
            continue
    raise LookupError(path)


def test_each_value_type_gets_its_widget() -> None:
    view = build_editor(state_of(held(DEPLOYMENT), "u-web"))
    assert find(view.fields, ("spec", "replicas")).kind == "number"
    assert find(view.fields, ("spec", "replicas")).integral
    assert find(view.fields, ("spec", "ratio")).kind == "number"
    assert not find(view.fields, ("spec", "ratio")).integral
    paused = find(view.fields, ("spec", "paused"))
    assert (paused.kind, paused.checked, paused.editable) == ("boolean", False, True)
    containers = find(view.fields, ("spec", "template", "spec", "containers"))
    assert containers.kind == "structured" and containers.editable
    assert '"image": "nginx:1.27"' in containers.text
    assert find(view.fields, ("spec",)).kind == "group"
    labels = find(view.fields, ("metadata", "labels"))
    assert labels.kind == "map" and labels.can_add
    entry = find(view.fields, ("metadata", "labels", "app.kubernetes.io/name"))
    assert (entry.kind, entry.entry, entry.text, entry.key) == ("text", True, "web", "app.kubernetes.io/name")


def test_status_is_shown_read_only_and_identity_is_not_a_field() -> None:
    view = build_editor(state_of(held(DEPLOYMENT), "u-web"))
    ready = find(view.fields, ("status", "readyReplicas"))
    assert (ready.kind, ready.editable, ready.text) == ("number", False, "1")
    roots = [f.path for f in view.fields]
    assert ("apiVersion",) not in roots and ("kind",) not in roots and ("metadata",) not in roots
    assert roots[:3] == [("metadata", "labels"), ("metadata", "annotations"), ("spec",)]


def test_multi_line_text_uses_a_text_area_decided_by_either_side() -> None:
    assert widget_for(("data", "k"), "a\nb") == "multiline"
    assert widget_for(("data", "k"), "ab", "a\nb") == "multiline"
    assert widget_for(("data", "k"), "ab", "ab") == "text"


def test_redacted_secret_keys_are_masked_from_the_redaction_records_alone() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "app", "uid": "u-s", "resourceVersion": "3"},
        "type": "Opaque",
    }
    store = held(secret, (Redaction("/data/token", 2), Redaction("/data/password", 1)))
    view = build_editor(state_of(store, "u-s"))
    data = find(view.fields, ("data",))
    assert data.kind == "map"
    masked = [(c.key, c.kind, c.revision, c.text, c.editable) for c in data.children]
    assert masked == [("password", "masked", 1, "", False), ("token", "masked", 2, "", False)]


def test_binary_data_is_shown_as_its_size() -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "bin", "namespace": "app", "uid": "u-b", "resourceVersion": "1"},
        "binaryData": {"blob": "AAECAwQ=", "bad": "***"},
    }
    view = build_editor(state_of(held(cm), "u-b"))
    blob = find(view.fields, ("binaryData", "blob"))
    assert (blob.kind, blob.size, blob.editable) == ("bytes", 5, False)
    assert find(view.fields, ("binaryData", "bad")).size is None


def test_dirty_and_conflicts_are_placed_at_their_fields() -> None:
    store = held(DEPLOYMENT)
    store.set_value("u-web", ("spec", "replicas"), 5)
    store.set_value("u-web", ("metadata", "labels", "tier"), "front")
    changed = {
        **DEPLOYMENT,
        "metadata": {**DEPLOYMENT["metadata"], "resourceVersion": "8"},
        "spec": {**DEPLOYMENT["spec"], "replicas": 3},
    }
    store.apply(Upsert("modified", changed))
    view = build_editor(state_of(store, "u-web"))
    replicas = find(view.fields, ("spec", "replicas"))
    assert replicas.dirty and replicas.text == "5"
    assert (
        replicas.conflict is not None and replicas.conflict.theirs_text == "3" and not replicas.conflict.theirs_removed
    )
    assert find(view.fields, ("spec",)).dirty
    assert find(view.fields, ("metadata", "labels", "tier")).dirty
    assert not find(view.fields, ("metadata", "labels", "app.kubernetes.io/name")).dirty
    assert view.conflict_count == 1 and view.other_conflicts == ()


def test_a_conflict_outside_the_shown_fields_is_listed_apart() -> None:
    store = held(DEPLOYMENT)
    store.set_value("u-web", ("spec", "replicas"), 5)
    changed = {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 4}}
    store.apply(Upsert("modified", changed))
    view = build_editor(state_of(store, "u-web"), roots=[("metadata", "labels")])
    assert [c.path for c in view.other_conflicts] == [("spec", "replicas")]
    assert view.other_conflicts[0].theirs_text == "4"


def test_a_removed_value_is_a_conflict_with_nothing_on_their_side() -> None:
    store = held(DEPLOYMENT)
    store.set_value("u-web", ("spec", "replicas"), 5)
    spec = {k: v for k, v in DEPLOYMENT["spec"].items() if k != "replicas"}
    store.apply(Upsert("modified", {**DEPLOYMENT, "spec": spec}))
    conflict = find(build_editor(state_of(store, "u-web")).fields, ("spec", "replicas")).conflict
    assert conflict is not None and conflict.theirs_removed and conflict.theirs_text == ""


def test_a_narrower_policy_makes_fields_read_only() -> None:
    store = held(DEPLOYMENT)
    state = state_of(store, "u-web")
    narrowed = ObjectState(
        state.draft,
        state.server,
        lambda path: state.read_only(path) or not EditPolicy.only(("spec", "replicas")).covers(tuple(map(str, path))),
    )
    view = build_editor(narrowed)
    assert find(view.fields, ("spec", "replicas")).editable
    assert not find(view.fields, ("spec", "paused")).editable
    assert not find(view.fields, ("metadata", "labels")).can_add


def test_selected_fields_keep_their_order_and_absent_ones_say_so() -> None:
    roots = parse_field_roots(["/spec/replicas", ["metadata", "labels"], "/spec/minReadySeconds"])
    assert roots == (("spec", "replicas"), ("metadata", "labels"), ("spec", "minReadySeconds"))
    view = build_editor(state_of(held(DEPLOYMENT), "u-web"), roots)
    assert [(f.path, f.kind, f.label) for f in view.fields] == [
        (("spec", "replicas"), "number", "Replicas"),
        (("metadata", "labels"), "map", "Labels"),
        (("spec", "minReadySeconds"), "absent", "Min ready seconds"),
    ]


@pytest.mark.parametrize("bad", ["spec", ["spec"], [""], [[1.5]], [None], "/"])
def test_field_selections_that_are_not_paths_are_refused(bad: t.Any) -> None:
    with pytest.raises(FieldSelectionError):
        parse_field_roots(bad if bad != [""] else [""])


def test_empty_labels_and_annotations_are_offered_when_keys_can_be_added() -> None:
    bare = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "uid": "u-c", "resourceVersion": "1"},
        "data": {"a": "1"},
    }
    view = build_editor(state_of(held(bare), "u-c"))
    assert [(f.path, f.kind, f.can_add, f.children) for f in view.fields[:2]] == [
        (("metadata", "labels"), "map", True, ()),
        (("metadata", "annotations"), "map", True, ()),
    ]
    read_only = build_editor(state_of(held(bare, policy=EditPolicy.only(("data",))), "u-c"))
    assert [f.path for f in read_only.fields] == [("data",)]


def keyed_state(store: LiveResourceStore, uid: str) -> ObjectState:
    return replace(state_of(store, uid), list_keys=lambda path: store.list_keys(uid, path))


def test_keyed_lists_are_items_named_by_key_and_string_lists_rows() -> None:
    from flask_krm.store import BUILTIN_LIST_SCHEMAS

    obj = copy.deepcopy(DEPLOYMENT)
    obj["spec"]["template"]["spec"]["containers"] = [
        {"name": "web", "image": "nginx:1.27", "args": ["-v"], "env": [{"name": "A", "value": "1"}]},
        {"name": "log", "image": "fluent:1"},
    ]
    store = LiveResourceStore(DEFAULT_POLICY, BUILTIN_LIST_SCHEMAS)
    store.apply(Reset({"target": "demo", "version": "v1", "resource": "x"}, "krm-full/v1"))
    store.apply(Upsert("added", obj, ()))
    store.apply(Synced())
    containers = ("spec", "template", "spec", "containers")
    store.set_value("u-web", (*containers, 1, "image"), "fluent:2")
    view = build_editor(keyed_state(store, "u-web"))
    listed = find(view.fields, containers)
    assert listed.kind == "items" and [c.label for c in listed.children] == ["web", "log"]
    web, log = listed.children
    assert web.path == (*containers, {"name": "web"}) and web.kind == "item" and not web.dirty
    assert [c.label for c in web.children] == ["Image", "Args", "Env"], "the key is the legend, not a field"
    assert log.dirty and find(view.fields, (*containers, {"name": "log"}, "image")).dirty
    assert not find(view.fields, (*containers, {"name": "web"}, "image")).dirty, "only the edited item"
    args = find(view.fields, (*containers, {"name": "web"}, "args"))
    assert args.kind == "rows" and [(r.label, r.text) for r in args.children] == [("Args 1", "-v")]
    env = find(view.fields, (*containers, {"name": "web"}, "env"))
    assert env.kind == "items" and [k.name for k in env.keys] == ["name"]
    assert find(view.fields, (*containers, {"name": "web"}, "env", {"name": "A"}, "value")).text == "1"
    assert (web.movable, web.position, web.last, log.last) == (True, 0, False, True)


def _shared_state(store: LiveResourceStore, uid: str) -> ObjectState:
    """A clean object's state as the shared render reads it: the truth's own object, not a copy."""
    clean = store.clean(uid)
    assert clean is not None
    return ObjectState(draft=clean.object, server=clean.object, read_only=store.read_only_check(uid))


def test_a_build_from_the_last_one_takes_the_unchanged_fields_and_equals_a_fresh_build() -> None:
    from flask_krm.store import BUILTIN_LIST_SCHEMAS

    obj = copy.deepcopy(DEPLOYMENT)
    obj["spec"]["template"]["spec"]["containers"] = [
        {"name": "web", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}]},
        {"name": "log", "image": "fluent:1"},
    ]
    obj["data"] = {f"key-{n}": f"value {n}" for n in range(5)}
    store = LiveResourceStore(DEFAULT_POLICY, BUILTIN_LIST_SCHEMAS)
    store.apply(Reset({"target": "demo", "version": "v1", "resource": "x"}, "krm-full/v1"))
    store.apply(Upsert("added", obj, ()))
    store.apply(Synced())
    keyed = replace(_shared_state(store, "u-web"), list_keys=lambda path: store.list_keys("u-web", path))
    built: dict[t.Any, t.Any] = {}
    first = build_editor(keyed, built=built)
    assert build_editor(keyed) == first

    changed = copy.deepcopy(obj)
    changed["metadata"]["resourceVersion"] = "8"
    changed["data"]["key-3"] = "changed"
    changed["spec"]["template"]["spec"]["containers"][0]["name"] = "app"  # the item's key: its address moves
    store.apply(Upsert("modified", changed, ()))
    state = replace(_shared_state(store, "u-web"), list_keys=lambda path: store.list_keys("u-web", path))
    again: dict[t.Any, t.Any] = {}
    reused = build_editor(state, reuse=built, built=again)
    assert reused == build_editor(state)
    assert find(reused.fields, ("data", "key-3")).text == "changed"
    # the values the delivery left as they were keep their fields, as their parents show them
    assert find(reused.fields, ("data", "key-1")) is find(first.fields, ("data", "key-1"))
    assert find(reused.fields, ("spec", "replicas")) is find(first.fields, ("spec", "replicas"))
    # a field under an item whose key changed is addressed anew, not taken from the last build
    containers = ("spec", "template", "spec", "containers")
    env = find(reused.fields, (*containers, {"name": "app"}, "env"))
    assert env is not find(first.fields, (*containers, {"name": "web"}, "env"))
