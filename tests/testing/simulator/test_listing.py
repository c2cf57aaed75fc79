"""List options and LIST bodies: validation, versions served, pagination and continue tokens."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.testing.simulator.catalog import CONFIGMAPS, FLUNDERS, NAMESPACES
from flask_krm.testing.simulator.listing import (
    CONTINUE_EXPIRED,
    LIST_EXPIRED,
    ListOptions,
    decode_continue,
    encode_continue,
    list_body,
)
from flask_krm.testing.simulator.registry import Registry
from tests.testing.simulator.conftest import refusal


@pytest.fixture
def filled(registry: Registry) -> Registry:
    """Namespace ``a`` with config maps ``m0``..``m4`` (``m0``..``m2`` labelled ``tier=front``) and ``b`` with ``x``."""
    for namespace in ("a", "b"):
        registry.create(NAMESPACES, "", {"metadata": {"name": namespace}})
    for index in range(5):
        labels = {"tier": "front"} if index < 3 else {}
        registry.create(CONFIGMAPS, "a", {"metadata": {"name": f"m{index}", "labels": labels}})
    registry.create(CONFIGMAPS, "b", {"metadata": {"name": "x"}})
    return registry


def options(**query: str) -> ListOptions:
    return ListOptions.parse(query, CONFIGMAPS)


def names(body: dict[str, t.Any]) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


def test_query_values_are_decoded() -> None:
    parsed = options(watch="1", limit="5", timeoutSeconds="30", allowWatchBookmarks="True", labelSelector="tier=front")
    assert (parsed.watch, parsed.limit, parsed.timeout_seconds, parsed.allow_watch_bookmarks) == (True, 5, 30, True)
    assert not parsed.label_selector.empty and parsed.field_selector.empty and not parsed.unfiltered
    assert options().unfiltered and options().timeout_seconds is None


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"watch": "yes"}, 'strconv.ParseBool: parsing "yes": invalid syntax'),
        ({"limit": "ten"}, 'strconv.ParseInt: parsing "ten": invalid syntax'),
        (
            {"fieldSelector": "data.x=1"},
            '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
    ],
)
def test_undecodable_values_are_a_bad_request(query: dict[str, str], message: str) -> None:
    error = refusal(lambda: options(**query))
    assert error.code == 400 and message in error.message


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ({"resourceVersionMatch": "Exact"}, "resourceVersionMatch is forbidden unless resourceVersion is provided"),
        (
            {"resourceVersionMatch": "Exact", "resourceVersion": "0"},
            'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
        ({"resourceVersionMatch": "Newest", "resourceVersion": "3"}, 'Unsupported value: "Newest"'),
        (
            {"resourceVersionMatch": "Exact", "resourceVersion": "3", "continue": "x"},
            "forbidden when continue is provided",
        ),
        ({"sendInitialEvents": "true"}, "sendInitialEvents is forbidden for list"),
        (
            {"watch": "1", "sendInitialEvents": "true"},
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
        (
            {"watch": "1", "resourceVersionMatch": "NotOlderThan"},
            "forbidden for watch unless sendInitialEvents is provided",
        ),
        (
            {"watch": "1", "resourceVersionMatch": "Exact", "sendInitialEvents": "false"},
            'supported values: "NotOlderThan"',
        ),
    ],
)
def test_invalid_combinations_are_422_on_list_options(query: dict[str, str], detail: str) -> None:
    error = refusal(lambda: options(**query))
    assert (
        error.code == 422
        and error.message.startswith('ListOptions.meta.k8s.io "" is invalid: ')
        and detail in error.message
    )


def test_a_watch_may_ask_for_initial_events_not_older_than_a_version() -> None:
    parsed = options(watch="true", sendInitialEvents="true", resourceVersionMatch="NotOlderThan")
    assert parsed.send_initial_events is True


def test_requested_version_and_pagination() -> None:
    assert options().requested_version() is None and options(resourceVersion="0").requested_version() is None
    assert options(resourceVersion="12").requested_version() == 12
    error = refusal(lambda: options(resourceVersion="12a").requested_version())
    assert error.code == 400 and 'strconv.ParseUint: parsing "12a"' in error.message
    assert options(limit="2").paginated and not options(limit="0").paginated
    assert not options(limit="2", resourceVersion="0").paginated, "the watch cache serves version 0 whole"


def test_continue_tokens_round_trip_and_bad_ones_are_named() -> None:
    assert decode_continue(encode_continue("a/m1\x00", 7)) == ("a/m1\x00", 7)
    assert "=" not in encode_continue("a", 1)
    for token, reason in [
        ("%%%", "continue key is not valid"),
        (encode_continue("a", 0), "incorrect encoded start resourceVersion"),
        (encode_continue("", 3), "encoded start key empty"),
    ]:
        error = refusal(lambda token=token: decode_continue(token))
        assert error.code == 400 and reason in error.message


def test_a_list_is_paginated_with_a_continue_token_and_a_remaining_count(filled: Registry) -> None:
    store = filled.store
    first = list_body(store, CONFIGMAPS, "a", options(limit="2"))
    assert names(first) == ["m0", "m1"] and first["metadata"]["remainingItemCount"] == 3
    assert first["kind"] == "ConfigMapList" and "kind" not in first["items"][0]
    filled.create(CONFIGMAPS, "a", {"metadata": {"name": "m10"}})  # after m1: not seen, the list is of its version
    second = list_body(store, CONFIGMAPS, "a", options(limit="2", **{"continue": first["metadata"]["continue"]}))
    assert (
        names(second) == ["m2", "m3"] and second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    )
    last = list_body(store, CONFIGMAPS, "a", options(limit="2", **{"continue": second["metadata"]["continue"]}))
    assert names(last) == ["m4"] and "continue" not in last["metadata"]


def test_a_filtered_page_has_no_remaining_count(filled: Registry) -> None:
    page = list_body(filled.store, CONFIGMAPS, None, options(limit="2", labelSelector="tier=front"))
    assert (
        names(page) == ["m0", "m1"] and "continue" in page["metadata"] and "remainingItemCount" not in page["metadata"]
    )
    fields = list_body(filled.store, CONFIGMAPS, None, options(fieldSelector="metadata.namespace=b"))
    assert names(fields) == ["x"]


def test_a_continue_after_compaction_expires_with_a_token_for_the_rest(filled: Registry) -> None:
    first = list_body(filled.store, CONFIGMAPS, "a", options(limit="2"))
    filled.create(CONFIGMAPS, "a", {"metadata": {"name": "late"}})
    filled.store.compact()
    error = refusal(
        lambda: list_body(
            filled.store, CONFIGMAPS, "a", options(limit="2", **{"continue": first["metadata"]["continue"]})
        )
    )
    assert (error.code, error.message) == (410, CONTINUE_EXPIRED)
    rest = list_body(filled.store, CONFIGMAPS, "a", options(**{"continue": error.status_metadata["continue"]}))
    assert names(rest) == ["m2", "m3", "m4"], "the fresh token continues after the same key, at the latest version"


def test_exact_versions_are_served_from_the_history(filled: Registry) -> None:
    version = filled.store.resource_version
    filled.create(CONFIGMAPS, "a", {"metadata": {"name": "new"}})
    exact = list_body(
        filled.store, CONFIGMAPS, "a", options(resourceVersion=str(version), resourceVersionMatch="Exact")
    )
    assert "new" not in names(exact) and exact["metadata"]["resourceVersion"] == str(version)
    newest = list_body(filled.store, CONFIGMAPS, "a", options(resourceVersion=str(version)))
    assert "new" in names(newest), "without a limit or Exact, a version is a lower bound"
    filled.store.compact()
    assert (
        refusal(
            lambda: list_body(filled.store, CONFIGMAPS, "a", options(resourceVersion=str(version), limit="1"))
        ).message
        == LIST_EXPIRED
    )
    too_new = refusal(lambda: list_body(filled.store, CONFIGMAPS, "a", options(resourceVersion="999")))
    assert too_new.code == 504


def test_continue_with_a_resource_version_is_refused(filled: Registry) -> None:
    token = encode_continue("a/m1\x00", filled.store.resource_version)
    error = refusal(
        lambda: list_body(filled.store, CONFIGMAPS, "a", options(resourceVersion="3", **{"continue": token}))
    )
    assert (error.code, error.message) == (400, "specifying resource version is not allowed when using continue")


def test_a_custom_resource_list_is_unstructured(registry: Registry) -> None:
    body = list_body(registry.store, FLUNDERS, "a", ListOptions.parse({}, FLUNDERS))
    assert list(body) == ["apiVersion", "items", "kind", "metadata"]
    assert body["metadata"] == {"continue": "", "resourceVersion": str(registry.store.resource_version)}
