"""``Accept`` negotiation as kube-apiserver does it, and the conversions it selects."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.catalog import CONFIGMAPS, FLUNDERS
from flask_krm.testing.simulator.negotiation import (
    JSON,
    PLAIN_JSON,
    YAML,
    Representation,
    error_media_type,
    negotiate,
    transform,
)
from tests.testing.simulator.conftest import refusal

TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io"
PARTIAL_V1 = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
PARTIAL_LIST_V1 = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        (None, PLAIN_JSON),
        ("", PLAIN_JSON),
        ("*/*", PLAIN_JSON),
        ("application/yaml", Representation(YAML)),
        ("application/json;q=0.5, application/yaml", Representation(YAML)),
        ("application/*;q=0.9, application/yaml;q=0.8", Representation(JSON)),
        ("application/vnd.kubernetes.protobuf, application/json", Representation(JSON)),
        (f"{TABLE_V1}, application/json", Representation(JSON, "Table", "v1")),
        ("application/yaml;as=Table;v=v1beta1;g=meta.k8s.io", Representation(YAML, "Table", "v1beta1")),
        ("application/json;as=Table;v=v2;g=meta.k8s.io, application/yaml", Representation(YAML)),
        ("application/json;as=Table;v=v1;g=example.com, application/json", Representation(JSON)),
        ("application/json;sv=v2, application/yaml", Representation(YAML)),
        (PARTIAL_V1, Representation(JSON, "PartialObjectMetadata", "v1")),
    ],
)
def test_the_first_clause_that_can_be_served_wins(header: str | None, chosen: Representation) -> None:
    assert negotiate(header, CONFIGMAPS, {}) == chosen


def test_a_table_carries_its_include_object_option() -> None:
    assert negotiate(TABLE_V1, CONFIGMAPS, {"includeObject": "Object"}).include_object == "Object"
    assert refusal(lambda: negotiate(TABLE_V1, CONFIGMAPS, {"includeObject": "All"})).code == 400


def test_only_protobuf_is_not_acceptable() -> None:
    error = refusal(lambda: negotiate("application/vnd.kubernetes.protobuf", CONFIGMAPS, {}))
    assert (error.code, error.message) == (
        406,
        "only the following media types are accepted: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    )


def test_a_built_in_kind_s_route_refuses_what_it_does_not_produce_and_a_custom_resource_s_handler_does() -> None:
    route = refusal(lambda: negotiate("text/html", CONFIGMAPS, {}))
    assert route.code == 406 and route.message.startswith(
        "406: Not Acceptable\n\nAvailable representations: application/json,"
    )
    handler = refusal(lambda: negotiate("text/html", FLUNDERS, {}))
    assert handler.code == 406 and handler.message.startswith("only the following media types are accepted")


def test_a_watch_streams_json_only() -> None:
    assert negotiate("application/json;stream=watch", CONFIGMAPS, {}, collection_read=True, watch=True) == PLAIN_JSON
    error = refusal(lambda: negotiate("application/yaml", CONFIGMAPS, {}, collection_read=True, watch=True))
    assert error.message == (
        "only the following media types are accepted: application/json;stream=watch, "
        "application/vnd.kubernetes.protobuf;stream=watch"
    )


@pytest.mark.parametrize(
    ("header", "media_type"),
    [
        (None, JSON),
        ("application/yaml", YAML),
        ("application/json, application/yaml", JSON),
        ("application/yaml;as=Table", JSON),
        ("text/html", JSON),
    ],
)
def test_failures_are_yaml_only_when_that_is_preferred(header: str | None, media_type: str) -> None:
    assert error_media_type(header) == media_type


CONFIG_MAP = {
    "kind": "ConfigMap",
    "apiVersion": "v1",
    "metadata": {"name": "a", "resourceVersion": "5"},
    "data": {"k": "v"},
}
LIST = {
    "kind": "ConfigMapList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "9", "continue": "tok"},
    "items": [CONFIG_MAP],
}


def test_partial_object_metadata_keeps_only_the_metadata() -> None:
    converted = transform(CONFIG_MAP, negotiate(PARTIAL_V1, CONFIGMAPS, {}), CONFIGMAPS)
    assert converted == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": CONFIG_MAP["metadata"],
    }
    listed = transform(LIST, negotiate(PARTIAL_LIST_V1, CONFIGMAPS, {}), CONFIGMAPS)
    assert listed["kind"] == "PartialObjectMetadataList" and listed["metadata"] == {
        "resourceVersion": "9",
        "continue": "tok",
    }
    assert [item["kind"] for item in listed["items"]] == ["PartialObjectMetadata"]


def test_a_conversion_to_the_wrong_shape_is_406_naming_the_go_type() -> None:
    single = refusal(lambda: transform(LIST, negotiate(PARTIAL_V1, CONFIGMAPS, {}), CONFIGMAPS))
    assert (
        single.message
        == "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    )
    listed = refusal(lambda: transform({"metadata": {}}, negotiate(PARTIAL_LIST_V1, FLUNDERS, {}), FLUNDERS))
    assert listed.message == (
        "you requested PartialObjectMetadataList, but the requested object is not a list (*unstructured.Unstructured)"
    )


def test_a_table_of_one_object_and_a_status_left_as_it_is() -> None:
    converted = transform(CONFIG_MAP, negotiate(TABLE_V1, CONFIGMAPS, {}), CONFIGMAPS)
    assert (
        converted["kind"] == "Table"
        and len(converted["rows"]) == 1
        and converted["metadata"] == {"resourceVersion": "5"}
    )
    assert converted["rows"][0]["cells"][0] == "a"
    status = {"kind": "Status", "code": 404}
    assert transform(status, negotiate(TABLE_V1, CONFIGMAPS, {}), CONFIGMAPS) is status
    assert transform(CONFIG_MAP, PLAIN_JSON, CONFIGMAPS) is CONFIG_MAP
