"""Audit diffs: RFC 6902, redacted paths named but never valued."""

from __future__ import annotations

import json

import jsonpatch
from hypothesis import given
from hypothesis import strategies as st

from flask_krm.logvalues import log_value
from flask_krm.projection import pointer
from flask_krm.save.audit import (
    AuditRecord,
    ObjectIdentity,
    create_diff,
    delete_diff,
    diff,
    merge_patch_ops,
    patch_diff,
    secret_value_paths,
    withhold,
)

SECRET_VALUE = "c3VwZXItc2VjcmV0"


def test_patch_diff_is_an_rfc6902_patch_that_reproduces_the_write() -> None:
    before = {"metadata": {"name": "app", "labels": {"a": "1"}}, "data": {"x": "1", "y": "2"}}
    patch = {"metadata": {"labels": {"b": "2"}, "uid": "u", "resourceVersion": "9"}, "data": {"x": None}}
    ops = patch_diff(before, patch)
    assert jsonpatch.apply_patch(before, list(ops)) == {
        "metadata": {"name": "app", "labels": {"a": "1", "b": "2"}},
        "data": {"y": "2"},
    }
    assert {op["path"] for op in ops} == {"/metadata/labels/b", "/data/x"}


def test_values_at_or_under_redacted_paths_are_withheld() -> None:
    ops = withhold(
        [
            {"op": "replace", "path": "/data/token", "value": SECRET_VALUE},
            {"op": "add", "path": "/data", "value": {"token": SECRET_VALUE, "user": SECRET_VALUE}},
            {"op": "add", "path": "/metadata/labels/a", "value": "visible"},
            {"op": "move", "from": "/data/token", "path": "/data/other"},
            {"op": "copy", "from": "/metadata/labels/a", "path": "/data/token"},
        ],
        ["/data/token", "/data/user"],
    )
    assert SECRET_VALUE not in json.dumps(ops)
    assert ops[0] == {"op": "replace", "path": "/data/token", "redacted": True}
    assert ops[1] == {"op": "add", "path": "/data", "value": {}, "redacted": True}
    assert ops[2] == {"op": "add", "path": "/metadata/labels/a", "value": "visible"}
    assert ops[3:5] == ({"op": "remove", "path": "/data/token"}, {"op": "add", "path": "/data/other", "redacted": True})
    assert ops[5] == {"op": "add", "path": "/data/token", "redacted": True}


def test_whole_object_diffs_withhold_secret_values() -> None:
    secret = {"kind": "Secret", "metadata": {"name": "s"}, "data": {"token": SECRET_VALUE}}
    paths = secret_value_paths(secret, {"stringData": {"new/key": "x"}})
    assert paths == ("/data/token", "/stringData/new~1key")
    assert SECRET_VALUE not in json.dumps(create_diff(secret, paths))
    assert SECRET_VALUE not in json.dumps(diff({}, secret, paths))
    assert SECRET_VALUE not in json.dumps(diff(secret, {**secret, "data": {"token": "b3RoZXI="}}, paths))


def test_a_delete_removes_the_root() -> None:
    assert delete_diff() == ({"op": "remove", "path": ""},)


def test_log_line_names_paths_never_values() -> None:
    record = AuditRecord(
        principal="editor",
        target="dev",
        operation="patch",
        identity=ObjectIdentity.of(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "team", "uid": "u-1"}}
        ),
        outcome="saved-pending",
        diff=withhold(
            [
                {"op": "replace", "path": "/data/token", "value": SECRET_VALUE},
                {"op": "add", "path": "/metadata/labels/a", "value": "b"},
            ],
            ["/data/token"],
        ),
        redacted_paths=("/data/token",),
    )
    line = record.log_line()
    assert line == "patch Secret team/s uid=u-1 target=dev outcome=saved-pending fields=/data/token,/metadata/labels/a"
    assert SECRET_VALUE not in line and SECRET_VALUE not in repr(record)


@given(st.text(), st.text(), st.lists(st.text(), max_size=4))
def test_a_log_line_is_one_line_whatever_the_names_and_keys(name: str, namespace: str, keys: list[str]) -> None:
    record = AuditRecord(
        principal="p",
        target="dev",
        operation="patch",
        identity=ObjectIdentity("v1", "ConfigMap", name, namespace or None, "u"),
        outcome="invalid",
        diff=tuple({"op": "add", "path": pointer("data", key), "value": "v"} for key in keys),
    )
    line = record.log_line()
    assert len(line.splitlines()) == 1 and line.isascii() and line.isprintable()
    assert line.endswith("fields=" + (",".join(log_value(f) for f in record.fields) or "-"))


def test_merge_patch_ops_without_the_original_object() -> None:
    patch = {
        "metadata": {"uid": "u", "resourceVersion": "3", "labels": {"a/b": "1", "gone": None}},
        "data": {"token": SECRET_VALUE},
        "spec": {},
    }
    ops = merge_patch_ops(patch, secret_value_paths({"kind": "Secret"}, patch))
    assert ops == (
        {"op": "add", "path": "/metadata/labels/a~1b", "value": "1"},
        {"op": "remove", "path": "/metadata/labels/gone"},
        {"op": "add", "path": "/data/token", "redacted": True},
    )


def test_annotations_holding_a_copy_of_a_secret_are_secret_value_paths() -> None:
    copy_of_it = json.dumps({"kind": "Secret", "data": {"token": SECRET_VALUE}})
    secret = {
        "kind": "Secret",
        "metadata": {"annotations": {"kapp.k14s.io/original": "{}", "note": "x", "backup": copy_of_it}},
    }
    paths = secret_value_paths(secret, {"metadata": {"annotations": {"other/copy": copy_of_it}}})
    assert paths == (
        "/metadata/annotations/kapp.k14s.io~1original",
        "/metadata/annotations/backup",
        "/metadata/annotations/other~1copy",
    )
    ops = merge_patch_ops({"metadata": {"annotations": {"backup": copy_of_it, "note": "y"}}}, paths)
    assert SECRET_VALUE not in json.dumps(ops)
    assert {"op": "add", "path": "/metadata/annotations/note", "value": "y"} in ops
