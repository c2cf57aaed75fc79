"""What the YAML and "Your changes" tabs show (:mod:`flask_krm.ui.yaml_view`), without Flask."""

from __future__ import annotations

import typing as t

from flask_krm.store import MISSING
from flask_krm.ui.widgets import ObjectState
from flask_krm.ui.yaml_view import MACHINERY, build_yaml_view, draft_yaml
from flask_krm.yaml_text import WITHHELD, load_yaml

SECRET: t.Final[dict[str, t.Any]] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {
        "name": "db",
        "namespace": "app",
        "uid": "u-db",
        "resourceVersion": "9",
        "generation": 2,
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "managedFields": [{"manager": "kubectl"}],
        "labels": {"tier": "db"},
    },
    "type": "Opaque",
    "data": {"user": "YWRtaW4=", "password": "c2VjcmV0"},
}

CONFIG: t.Final[dict[str, t.Any]] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "web", "namespace": "app", "uid": "u-web", "resourceVersion": "3"},
    "data": {"level": "info", "mode": "fast"},
    "binaryData": {"logo": "iVBORw0KGgo="},
}


def loaded(text: str) -> t.Any:
    return load_yaml(text).value


def test_the_text_leaves_out_the_machinery_and_withholds_redacted_values() -> None:
    text = draft_yaml(SECRET, [("data", "password")])
    shown = loaded(text)
    assert not MACHINERY & shown["metadata"].keys()
    assert shown["metadata"] == {"name": "db", "namespace": "app", "labels": {"tier": "db"}}
    assert shown["data"] == {"user": "YWRtaW4=", "password": WITHHELD}
    assert "c2VjcmV0" not in text


def test_each_bytes_map_value_is_withheld_whatever_the_redactions() -> None:
    shown = loaded(draft_yaml(CONFIG, []))
    assert shown["binaryData"] == {"logo": WITHHELD}
    assert shown["data"] == CONFIG["data"]


def test_roots_select_the_identity_and_the_fields_under_them_only() -> None:
    shown = loaded(draft_yaml(SECRET, [("data", "password")], roots=[("metadata", "labels"), ("data", "password")]))
    assert shown == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "app", "labels": {"tier": "db"}},
        "data": {"password": WITHHELD},
    }
    assert loaded(draft_yaml(CONFIG, [], roots=[("spec", "replicas")])) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "web", "namespace": "app"},
    }, "a root the object does not have is left out"


def test_roots_naming_an_array_item_keep_the_whole_object() -> None:
    shown = loaded(draft_yaml(CONFIG, [], roots=[("data",), ("items", 0)]))
    assert shown["data"] == CONFIG["data"] and "binaryData" in shown


def state(draft: t.Mapping[str, t.Any], conflicts: t.Mapping[t.Any, t.Any] | None = None) -> ObjectState:
    return ObjectState(draft=draft, server=draft, read_only=lambda path: False, conflicts=conflicts or {})


def test_conflicts_are_listed_by_the_line_of_their_field_in_the_text() -> None:
    draft = {**CONFIG, "data": {"level": "debug", "mode": "fast"}}
    view = build_yaml_view(
        state(draft, {("data", "mode"): "slow", ("data", "level"): {"nested": [1]}, ("spec", "gone"): MISSING}), None
    )
    lines = view.text.splitlines()
    by_pointer = {c.view.pointer: c for c in view.conflicts}
    level, mode, gone = by_pointer["/data/level"], by_pointer["/data/mode"], by_pointer["/spec/gone"]
    assert level.line is not None and lines[level.line - 1].strip() == "level: debug"
    assert mode.line is not None and lines[mode.line - 1].strip() == "mode: fast"
    assert (mode.view.theirs_text, mode.view.theirs_removed) == ("slow", False)
    assert level.view.theirs_text == "nested:\n- 1"
    assert gone.line is None and gone.view.theirs_removed and gone.view.theirs_text == ""
    assert [c.view.pointer for c in view.conflicts] == ["/spec/gone", "/data/level", "/data/mode"], (
        "sorted by line, those off the text first"
    )


def test_a_conflict_under_a_field_the_text_does_not_have_is_at_its_nearest_shown_parent() -> None:
    view = build_yaml_view(state(CONFIG, {("data", "extra", "deep"): "x"}), None)
    (conflict,) = view.conflicts
    assert conflict.line is not None and view.text.splitlines()[conflict.line - 1].strip() == "data:"


def test_your_changes_is_the_merge_patch_as_yaml_or_nothing() -> None:
    assert build_yaml_view(state(CONFIG), None).changes is None
    assert build_yaml_view(state(CONFIG), {}).changes is None
    view = build_yaml_view(state(CONFIG), {"data": {"level": "debug", "mode": None}})
    assert view.changes is not None and loaded(view.changes) == {"data": {"level": "debug", "mode": None}}
    assert view.conflicts == ()
