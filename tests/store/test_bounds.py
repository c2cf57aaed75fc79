"""What a draft may hold, checked before it changes: strings in string maps, and Kubernetes' size
limits refusing only an edit that grows past them."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.store.bounds import (
    MAX_ANNOTATION_BYTES,
    MAX_DATA_BYTES,
    MAX_DRAFT_VALUES,
    DraftRefused,
    check_draft,
    count_values,
)


def configmap(**data: t.Any) -> dict[str, t.Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}}, "data": data}


def test_a_string_map_holds_text_and_is_a_map() -> None:
    server = configmap(k="v")
    with pytest.raises(DraftRefused) as number:
        check_draft(server, server, {**server, "metadata": {"name": "c", "labels": {"a": 1}}}, [("metadata", "labels")])
    assert number.value.path == ("metadata", "labels", "a") and "map of strings: it holds text, not a value" in str(
        number.value
    )
    with pytest.raises(DraftRefused) as listed:
        check_draft(server, server, {**server, "data": ["v"]}, [("data",)])
    assert listed.value.path == ("data",) and str(listed.value) == "/data is a map of strings, not a list"
    check_draft(server, server, {**server, "data": {"k": "w", "n": "2"}}, [("data", "n")])  # text is fine
    check_draft(server, server, {**server, "data": None}, [("data",)])  # so is removing the map


def test_a_map_the_server_holds_in_another_shape_is_not_checked() -> None:
    server = {"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"labels": ["x"]}}
    check_draft(server, server, {**server, "spec": {"labels": ["x", 2]}}, [("spec", "labels")])


def test_data_past_a_mebibyte_is_refused_only_when_it_grows() -> None:
    server = configmap(k="v")
    big = configmap(k="x" * MAX_DATA_BYTES)
    with pytest.raises(DraftRefused) as grown:
        check_draft(server, server, big, [("data", "k")])
    assert grown.value.limit and grown.value.path == () and "Kubernetes accepts at most 1048576" in str(grown.value)
    smaller = configmap(k="x" * (MAX_DATA_BYTES - 10))
    check_draft(big, big, smaller, [("data", "k")])  # a draft already past the limit may shrink


def test_annotations_and_value_counts_have_limits() -> None:
    server = configmap()
    annotated = {**server, "metadata": {"name": "c", "annotations": {"a": "x" * MAX_ANNOTATION_BYTES}}}
    with pytest.raises(DraftRefused) as annotations:
        check_draft(server, server, annotated, [("metadata", "annotations", "a")])
    assert annotations.value.path == ("metadata", "annotations") and annotations.value.limit
    many = configmap(**{f"k{n}": "v" for n in range(MAX_DRAFT_VALUES)})
    assert count_values(many) > MAX_DRAFT_VALUES
    with pytest.raises(DraftRefused, match="an editor holds at most 10000"):
        check_draft(server, server, many, [("data",)])
    check_draft(many, many, many, [("data", "k0")])  # the server's object may hold more


def test_count_values_counts_every_map_list_and_scalar() -> None:
    assert count_values({"a": [1, {"b": None}], "c": "d"}) == 6
    assert count_values("x") == 1
