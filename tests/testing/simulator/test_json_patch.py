"""RFC 6902 JSON patches directly (the contract suite checks them against kube-apiserver)."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.json_patch import PatchFailed, apply_json_patch


def test_json_patch_leaves_its_input_alone_and_stops_at_the_first_failure() -> None:
    document = {"data": {"a": "1"}}
    with pytest.raises(PatchFailed):
        apply_json_patch(
            document, [{"op": "add", "path": "/data/b", "value": "2"}, {"op": "remove", "path": "/data/c"}]
        )
    assert document == {"data": {"a": "1"}}
    assert apply_json_patch(document, [{"op": "replace", "path": "", "value": {"other": True}}]) == {"other": True}


def test_json_patch_tells_numbers_from_booleans() -> None:
    with pytest.raises(PatchFailed):
        apply_json_patch({"spec": {"n": 1}}, [{"op": "test", "path": "/spec/n", "value": True}])
    with pytest.raises(PatchFailed):
        apply_json_patch({"spec": {"n": 1}}, [{"op": "test", "path": "/spec/n", "value": 1.0}])
    assert apply_json_patch({"spec": {"n": 1}}, [{"op": "test", "path": "/spec/n", "value": 1}]) == {"spec": {"n": 1}}
