"""The served resource types: names, verbs, discovery entries, storage keys and lookups. (Discovery as a
real server answers it is compared in ``tests/contract/test_discovery.py``.)"""

from __future__ import annotations

import dataclasses

from flask_krm.testing.simulator.catalog import (
    CONFIGMAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    DEFAULT_CATALOG,
    DEPLOYMENTS,
    FLUNDER_CRD,
    FLUNDERS,
    NAMESPACES,
    SECRETS,
    SUBJECT_ACCESS_REVIEWS,
    Catalog,
    GroupKind,
    GroupResource,
    established,
    openapi_schema,
)


def test_group_resources_and_kinds_print_as_kubernetes_prints_them() -> None:
    assert (str(GroupResource("", "configmaps")), str(GroupResource("apps", "deployments"))) == (
        "configmaps",
        "deployments.apps",
    )
    assert (str(GroupKind("", "ConfigMap")), str(DEPLOYMENTS.group_kind)) == ("ConfigMap", "Deployment.apps")
    assert (CONFIGMAPS.api_version, FLUNDERS.api_version, DEPLOYMENTS.list_kind) == (
        "v1",
        "wardle.example.com/v1alpha1",
        "DeploymentList",
    )


def test_verbs_follow_what_is_stored_and_how() -> None:
    assert SUBJECT_ACCESS_REVIEWS.verbs == ("create",)
    assert CUSTOM_RESOURCE_DEFINITIONS.verbs == ("get", "list", "watch")
    assert "deletecollection" not in NAMESPACES.verbs and "deletecollection" in CONFIGMAPS.verbs
    assert FLUNDERS.verbs[0] == "delete", "a custom resource's verbs are listed unsorted, as apiextensions does"
    assert list(CONFIGMAPS.verbs) == sorted(CONFIGMAPS.verbs)


def test_the_storage_version_hash_is_of_the_storage_version() -> None:
    assert (
        CUSTOM_RESOURCE_DEFINITIONS.storage_version_hash
        != dataclasses.replace(CUSTOM_RESOURCE_DEFINITIONS, storage_version="").storage_version_hash
    )
    assert dataclasses.replace(CONFIGMAPS, storage_version="v1").storage_version_hash == CONFIGMAPS.storage_version_hash
    assert len({resource.storage_version_hash for resource in DEFAULT_CATALOG.types}) == len(DEFAULT_CATALOG.types)


def test_field_labels_and_the_refusal_of_others() -> None:
    assert CONFIGMAPS.supported_field_labels() == ("metadata.name", "metadata.namespace")
    assert NAMESPACES.supported_field_labels() == ("metadata.name", "status.phase")
    assert SECRETS.supported_field_labels() == ("metadata.name", "metadata.namespace", "type")
    assert CONFIGMAPS.unsupported_field_label("data.x") == (
        '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    assert SECRETS.unsupported_field_label("data.x") == "field label not supported: data.x"
    assert FLUNDERS.unsupported_field_label("spec.x") == "field label not supported: spec.x"


def test_storage_keys() -> None:
    assert CONFIGMAPS.storage_key("demo", "app") == "/registry/configmaps/demo/app"
    assert NAMESPACES.storage_key("", "demo") == "/registry/namespaces/demo"
    assert FLUNDERS.storage_key("demo", "f") == "/registry/wardle.example.com/flunders/demo/f"


def test_discovery_entries_with_subresources() -> None:
    main, scale, status = DEPLOYMENTS.discovery()
    assert main["name"] == "deployments" and main["shortNames"] == ["deploy"] and main["categories"] == ["all"]
    assert main["storageVersionHash"] == DEPLOYMENTS.storage_version_hash
    assert (scale["name"], scale["group"], scale["kind"]) == ("deployments/scale", "autoscaling", "Scale")
    assert (status["name"], status["kind"], status["verbs"]) == (
        "deployments/status",
        "Deployment",
        ["get", "patch", "update"],
    )
    (review,) = SUBJECT_ACCESS_REVIEWS.discovery()
    assert "storageVersionHash" not in review and "shortNames" not in review
    assert DEPLOYMENTS.subresources == ("scale", "status") and FLUNDERS.subresources == ("status",)
    assert CONFIGMAPS.subresources == ()


def test_a_catalog_finds_types_by_group_version_and_plural() -> None:
    assert DEFAULT_CATALOG.find("apps", "v1", "deployments") is DEPLOYMENTS
    assert DEFAULT_CATALOG.find("", "v1", "deployments") is None
    assert DEFAULT_CATALOG.find("wardle.example.com", "v1", "flunders") is None
    catalog = Catalog((CONFIGMAPS, dataclasses.replace(CONFIGMAPS, version="v2"), DEPLOYMENTS, SECRETS))
    assert catalog.group_versions() == {"": ["v1", "v2"], "apps": ["v1"]}
    assert catalog.in_group_version("", "v1") == [CONFIGMAPS, SECRETS]


def test_the_served_definition_s_schema_and_its_established_status() -> None:
    assert openapi_schema(FLUNDERS) is FLUNDER_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    shown = established(FLUNDER_CRD, "2026-01-01T00:00:00Z")
    assert [condition["type"] for condition in shown["status"]["conditions"]] == ["NamesAccepted", "Established"]
    assert shown["status"]["acceptedNames"] == FLUNDER_CRD["spec"]["names"] and shown["status"]["storedVersions"] == [
        "v1alpha1"
    ]
    assert "status" not in FLUNDER_CRD, "the definition itself is left as it was"
