"""A kind's schema in a group version's OpenAPI v3 document: found by its group-version-kind mark,
``$ref`` and ``allOf`` resolved on access (the recorded kube-apiserver v1.37.2 documents, and the
Flunder CRD's as the simulator builds it), read by the store's keyed lists as a plain schema."""

from __future__ import annotations

import pytest

from flask_krm.kube_schema import (
    SchemaView,
    as_view,
    group_version_path,
    is_int_or_string,
    is_quantity,
    required_members,
)
from flask_krm.store.keyed_lists import KeyedLists
from tests.published_schemas import CONTAINER, deployment_schema, flunder_schema, published


@pytest.fixture(scope="module")
def deployment() -> SchemaView:
    return deployment_schema()


@pytest.fixture(scope="module")
def flunder() -> SchemaView:
    return flunder_schema()


def test_kinds_are_found_by_their_group_version_kind_marks() -> None:
    kinds = published("apis/apps/v1", "apps", "v1")
    assert "Deployment" in {kind for _, kind in kinds}
    assert all(api_version == "apps/v1" for api_version, _ in kinds)
    assert ("v1", "ConfigMap") in published("api/v1", "", "v1")


def test_refs_and_all_of_resolve_through_a_deployment_to_its_container(deployment: SchemaView) -> None:
    container = deployment.at(CONTAINER)
    assert container is not None and container["required"] == ["name"]
    assert container.member("imagePullPolicy")["enum"] == ["Always", "IfNotPresent", "Never"]  # type: ignore[index]
    ports = container.member("ports")
    assert ports is not None and ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    # allOf beside a description: the member's own description wins, the referred type's members come along
    resources = container.member("resources")
    assert resources is not None and resources["description"].startswith("Compute Resources required")
    assert set(resources.members()) >= {"limits", "requests"}
    assert deployment.at(("metadata", "labels")) is not None


def test_the_published_schema_gives_the_store_its_keyed_lists(deployment: SchemaView, flunder: SchemaView) -> None:
    assert KeyedLists(flunder).map_keys(("spec", "ports")) == ("name",)
    assert KeyedLists(deployment).map_keys((*CONTAINER, "env")) == ("name",)
    assert KeyedLists(deployment).map_keys(("spec", "template", "spec", "tolerations")) is None  # atomic


def test_what_a_node_is(deployment: SchemaView) -> None:
    container = deployment.at(CONTAINER)
    assert container is not None and required_members(container) == {"name"}
    assert is_quantity(deployment.at((*CONTAINER, "resources", "requests", "memory")))  # type: ignore[arg-type]
    assert is_int_or_string(deployment.at(("spec", "strategy", "rollingUpdate", "maxUnavailable")))  # type: ignore[arg-type]
    assert not is_int_or_string(deployment.at(("spec", "replicas")))  # type: ignore[arg-type]
    assert deployment.at(("spec", "noSuchMember")) is None


def test_a_reference_loop_reads_as_an_empty_schema() -> None:
    components = {"A": {"allOf": [{"$ref": "#/components/schemas/A"}], "description": "loops"}}
    view = SchemaView(components, {"$ref": "#/components/schemas/A"})
    assert view["description"] == "loops"
    assert as_view({"type": "string"})["type"] == "string" and as_view(view) is view


def test_group_version_paths() -> None:
    assert group_version_path("", "v1") == "api/v1"
    assert group_version_path("apps", "v1") == "apis/apps/v1"
