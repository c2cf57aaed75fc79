"""Strategic merge patches directly (the contract suite checks them against kube-apiserver)."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.testing.simulator.patch_meta import patch_meta
from flask_krm.testing.simulator.strategic_merge_patch import StrategicMergeError, strategic_merge

DEPLOYMENT = patch_meta("Deployment")


def _pod(containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": containers}}}}


def _names(result: dict[str, Any]) -> list[str]:
    return [container["name"] for container in result["spec"]["template"]["spec"]["containers"]]


def test_strategic_merge_leaves_its_inputs_alone() -> None:
    original = _pod([{"name": "a", "image": "1"}])
    patch = _pod([{"name": "a", "image": "2"}, {"name": "b", "image": "3"}])
    merged = strategic_merge(original, patch, DEPLOYMENT)
    assert _names(merged) == ["a", "b"] and merged["spec"]["template"]["spec"]["containers"][0]["image"] == "2"
    assert original == _pod([{"name": "a", "image": "1"}]) and len(patch["spec"]["template"]["spec"]["containers"]) == 2


def test_patch_items_keep_their_order_among_server_items() -> None:
    original = _pod([{"name": name} for name in "abcd"])
    merged = strategic_merge(original, _pod([{"name": "d"}, {"name": "x"}, {"name": "b"}]), DEPLOYMENT)
    assert _names(merged) == ["a", "c", "d", "x", "b"]  # as kube-apiserver v1.37 orders them


def test_lists_without_a_merge_strategy_are_replaced() -> None:
    original = {"metadata": {"name": "r"}, "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]}
    assert strategic_merge(original, {"rules": [{"verbs": ["watch"]}]}, patch_meta("Role"))["rules"] == [
        {"verbs": ["watch"]}
    ]


def test_set_element_order_must_agree_with_the_patch() -> None:
    original = _pod([{"name": "a"}, {"name": "b"}])
    patch = {
        "spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "b"}]}}}
    }
    with pytest.raises(StrategicMergeError) as refused:
        strategic_merge(original, patch, DEPLOYMENT)
    assert refused.value.code == 500 and "doesn't match $setElementOrder list" in refused.value.message


def test_lists_of_lists_and_mixed_lists_are_refused() -> None:
    with pytest.raises(StrategicMergeError) as nested:
        strategic_merge({"metadata": {"finalizers": [["a"]]}}, {"metadata": {"finalizers": [["b"]]}}, DEPLOYMENT)
    assert (nested.value.code, nested.value.message) == (422, "lists of lists are not supported")
    with pytest.raises(StrategicMergeError) as mixed:
        strategic_merge({"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": [1]}}, DEPLOYMENT)
    assert mixed.value.code == 500 and mixed.value.message.startswith("list element types are not identical: ")


def test_merge_directive_in_a_list_is_refused() -> None:
    with pytest.raises(StrategicMergeError) as refused:
        strategic_merge(_pod([{"name": "a"}]), _pod([{"$patch": "merge"}]), DEPLOYMENT)
    assert refused.value.message == "merging lists cannot yet be specified in the patch"
