"""Editable, container and read-only regions of one object under one policy."""

from __future__ import annotations

from typing import Any

from flask_krm.store import DEFAULT_POLICY, READ_ONLY_POLICY, EditPolicy
from flask_krm.store.policy import LAST_APPLIED
from flask_krm.store.regions import Regions

SECRET = {
    "metadata": {"name": "s", "labels": {"a": "1"}, "annotations": {LAST_APPLIED: "{}", "note": "x"}},
    "data": {"password": "", "user": "YWRtaW4="},
    "binaryData": {"blob": "AA=="},
    "status": {},
}


def test_a_covered_path_is_editable_and_its_ancestors_lead_to_it() -> None:
    regions = Regions(DEFAULT_POLICY, SECRET)
    assert regions.editable(("metadata", "labels"))
    assert regions.editable(("metadata", "labels", "a"))
    assert regions.editable(("spec", "replicas"))
    assert not regions.editable(("metadata",))
    assert not regions.editable(("metadata", "name"))
    assert regions.container(("metadata",))
    assert regions.container(())
    assert not regions.container(("metadata", "name"))


def test_status_binary_data_and_machinery_are_read_only_under_every_policy() -> None:
    regions = Regions(DEFAULT_POLICY, SECRET)
    for path in [("status",), ("status", "phase"), ("binaryData", "blob"), ("metadata", "managedFields")]:
        assert not regions.editable(path)
        assert not regions.container(path)
    assert not regions.editable(("metadata", "annotations", LAST_APPLIED))
    assert regions.editable(("metadata", "annotations", "note"))


def test_the_annotations_are_a_container_because_they_hold_a_blocked_key() -> None:
    regions = Regions(DEFAULT_POLICY, SECRET)
    assert not regions.editable(("metadata", "annotations"))
    assert regions.container(("metadata", "annotations"))


def test_a_redacted_value_is_read_only_and_its_map_a_container() -> None:
    regions = Regions(DEFAULT_POLICY, SECRET, redacted=[("data", "password")])
    assert not regions.editable(("data", "password"))
    assert regions.editable(("data", "user"))
    assert not regions.editable(("data",))
    assert regions.container(("data",))
    assert Regions(DEFAULT_POLICY, SECRET).editable(("data",))


def test_an_opaque_value_is_blocked_like_a_redacted_one() -> None:
    obj = {"metadata": {}, "data": {"raw": b"\x00", "text": "ok"}}
    regions = Regions(DEFAULT_POLICY, obj)
    assert not regions.editable(("data", "raw"))
    assert regions.editable(("data", "text"))
    assert regions.container(("data",))


def test_a_blocked_path_through_a_list_blocks_the_whole_list() -> None:
    obj: dict[str, Any] = {"spec": {"items": [{"secret": "x"}, {"plain": "y"}], "other": "z"}}
    regions = Regions(DEFAULT_POLICY, obj, redacted=[("spec", "items", "0", "secret")])
    assert not regions.editable_in(obj, ("spec", "items", 1, "plain"))
    assert not regions.editable(("spec", "items"))
    assert regions.editable(("spec", "other"))


def test_an_edit_through_a_list_is_as_editable_as_the_list() -> None:
    obj = {"spec": {"containers": [{"image": "a"}]}, "status": {"conditions": [{"type": "Ready"}]}}
    regions = Regions(DEFAULT_POLICY, obj)
    assert regions.editable_in(obj, ("spec", "containers", 0, "image"))
    assert not regions.editable_in(obj, ("status", "conditions", 0, "type"))


def test_a_read_only_policy_has_no_editable_or_container_path() -> None:
    regions = Regions(READ_ONLY_POLICY, SECRET)
    assert not regions.editable(("data", "user"))
    assert not regions.container(())
    assert not regions.container(("metadata",))


def test_a_narrow_policy_leads_only_to_its_roots() -> None:
    regions = Regions(EditPolicy.only(("metadata", "labels")), SECRET)
    assert regions.container(("metadata",))
    assert not regions.container(("data",))
    assert not regions.editable(("data", "user"))
    assert regions.editable(("metadata", "labels", "new"))
