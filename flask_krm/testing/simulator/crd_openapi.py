"""The OpenAPI v3 document kube-apiserver builds for a custom resource's group version.

Its routes, list schema and the meta types they reach are the real server's document for the same
definition, kept in ``openapi_v3.json`` (``crd_documents``) by ``scripts/simulator-schemas --crd``;
the kind's own schema is rebuilt from the definition the simulator serves, as apiextensions-apiserver's
builder does: the version's ``openAPIV3Schema`` with ``apiVersion`` and ``kind`` from ``TypeMeta``,
``metadata`` referring to ``ObjectMeta`` and the kind's ``x-kubernetes-group-version-kind``.
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from typing import Any

OBJECT_META = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
API_VERSION = {
    "description": "APIVersion defines the versioned schema of this representation of an object. Servers should "
    "convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "type": "string",
}
KIND = {
    "description": "Kind is a string value representing the REST resource this object represents. Servers may infer "
    "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
    "type": "string",
}
METADATA = {
    "allOf": [{"$ref": OBJECT_META}],
    "description": "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}


@functools.cache
def _captured() -> dict[str, Any]:
    bundle = json.loads(resources.files(__package__).joinpath("openapi_v3.json").read_text())
    documents = bundle.get("crd_documents") or {}
    assert isinstance(documents, dict)
    return documents


def model_name(group: str, version: str, kind: str) -> str:
    """``gvkToModelName``: the group's parts reversed, then version and kind (``com.example.wardle.v1alpha1.Flunder``)."""
    return ".".join([*reversed(group.split(".")), version, kind])


def kind_schema(definition: dict[str, Any], version: str) -> dict[str, Any]:
    """The component schema of ``definition``'s kind at ``version`` (``buildKubeNative``)."""
    spec = definition["spec"]
    served = next(item for item in spec["versions"] if item["name"] == version)
    schema: dict[str, Any] = copy.deepcopy(served["schema"]["openAPIV3Schema"])
    properties = schema.setdefault("properties", {})
    properties.update(apiVersion=dict(API_VERSION), kind=dict(KIND), metadata=copy.deepcopy(METADATA))
    schema["x-kubernetes-group-version-kind"] = [
        {"group": spec["group"], "kind": spec["names"]["kind"], "version": version}
    ]
    return schema


def crd_document(definition: dict[str, Any], version: str) -> dict[str, Any]:
    """The document served at ``/openapi/v3/apis/<group>/<version>`` for ``definition``'s ``version``."""
    spec = definition["spec"]
    document: dict[str, Any] = copy.deepcopy(_captured()[f"apis/{spec['group']}/{version}"])
    name = model_name(spec["group"], version, spec["names"]["kind"])
    document["components"]["schemas"][name] = kind_schema(definition, version)
    return document
