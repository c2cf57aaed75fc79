"""flask-krm's schema reader against the server: the kinds' schemas its editors follow are the
ones the server publishes at ``/openapi/v3`` (built-ins and the Flunder CRD), read through the
official client once per document."""

from __future__ import annotations

from typing import Any

from flask_krm.upstream.openapi import OpenApiSchemas


def test_the_editors_schemas_are_read_from_the_server(kube_server: Any) -> None:
    schemas = OpenApiSchemas()
    api = kube_server.api_client("viewer")  # every authenticated user may read the schemas
    apps = schemas.kinds(kube_server.name, api, "apps", "v1")
    container = apps[("apps/v1", "Deployment")].at(("spec", "template", "spec", "containers", 0))
    assert container is not None
    assert container.member("imagePullPolicy")["enum"] == ["Always", "IfNotPresent", "Never"]  # type: ignore[index]
    assert container.member("env")["x-kubernetes-list-map-keys"] == ["name"]  # type: ignore[index]
    assert container.member("ports")["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]  # type: ignore[index]
    assert schemas.reads == 2
    assert schemas.kinds(kube_server.name, api, "apps", "v1") is apps and schemas.reads == 2

    wardle = schemas.kinds(kube_server.name, api, "wardle.example.com", "v1alpha1")
    flunder = wardle[("wardle.example.com/v1alpha1", "Flunder")]
    assert flunder.at(("spec",))["description"] == "What the Flunder should be."  # type: ignore[index]
    assert flunder.at(("spec", "ports"))["x-kubernetes-list-map-keys"] == ["name"]  # type: ignore[index]
    port = flunder.at(("spec", "ports", 0, "port"))
    assert port is not None and (port["minimum"], port["maximum"]) == (1, 65535)
    metadata = flunder.at(("metadata", "labels"))  # the CRD's metadata refers to ObjectMeta
    assert metadata is not None and metadata["type"] == "object"
