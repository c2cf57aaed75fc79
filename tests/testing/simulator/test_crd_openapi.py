"""The OpenAPI v3 document of a custom resource's group version, built from the definition served."""

from __future__ import annotations

import copy

from flask_krm.testing.simulator.catalog import FLUNDER_CRD
from flask_krm.testing.simulator.crd_openapi import OBJECT_META, crd_document, kind_schema, model_name


def test_model_names_reverse_the_group() -> None:
    assert model_name("wardle.example.com", "v1alpha1", "Flunder") == "com.example.wardle.v1alpha1.Flunder"
    assert model_name("apps", "v1", "Deployment") == "apps.v1.Deployment"


def test_the_kind_schema_is_the_version_s_schema_with_type_meta_and_object_meta() -> None:
    (served,) = [version for version in FLUNDER_CRD["spec"]["versions"] if version["served"]]
    own = served["schema"]["openAPIV3Schema"]
    schema = kind_schema(FLUNDER_CRD, served["name"])
    assert set(schema["properties"]) == set(own.get("properties", {})) | {"apiVersion", "kind", "metadata"}
    assert schema["properties"]["metadata"]["allOf"] == [{"$ref": OBJECT_META}]
    assert schema["properties"]["kind"]["type"] == schema["properties"]["apiVersion"]["type"] == "string"
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "wardle.example.com", "kind": "Flunder", "version": served["name"]}
    ]
    assert "apiVersion" not in own.get("properties", {}), "the definition itself is left as it was"


def test_the_document_carries_the_schema_of_the_definition_as_it_is_now() -> None:
    definition = copy.deepcopy(FLUNDER_CRD)
    version = definition["spec"]["versions"][0]
    version["schema"]["openAPIV3Schema"]["properties"]["extra"] = {"type": "integer"}
    document = crd_document(definition, version["name"])
    schemas = document["components"]["schemas"]
    name = model_name("wardle.example.com", version["name"], "Flunder")
    assert schemas[name]["properties"]["extra"] == {"type": "integer"}
    assert OBJECT_META.rsplit("/", 1)[1] in schemas, "the meta types the routes reach come from the captured document"
    assert any(path.startswith("/apis/wardle.example.com/") for path in document["paths"])
    assert "extra" not in crd_document(FLUNDER_CRD, version["name"])["components"]["schemas"][name]["properties"]
