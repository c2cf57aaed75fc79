"""Reading the kinds' schemas from a server's ``/openapi/v3``, through the official client, under
gevent: once per document, again only when the index names a new one, and a failure logged and
answered with no schemas (editors keep their built-in widgets), never raised."""

from __future__ import annotations

import logging

import gevent
import kubernetes.client
import pytest

from flask_krm.testing.simulator import KubeSimulator
from flask_krm.upstream.openapi import OpenApiSchemas


def test_a_group_versions_kinds_are_read_once_and_shared_by_concurrent_greenlets(kube: KubeSimulator) -> None:
    schemas = OpenApiSchemas()
    api = kube.api_client("admin")
    readers = [gevent.spawn(schemas.kinds, "sim", api, "apps", "v1") for _ in range(5)]
    gevent.joinall(readers, raise_error=True)
    found = [reader.value for reader in readers]
    assert all(kinds is found[0] for kinds in found)
    deployment = found[0][("apps/v1", "Deployment")]
    assert deployment.at(("spec", "template", "spec", "containers", 0, "imagePullPolicy"))["enum"] == [  # type: ignore[index]
        "Always",
        "IfNotPresent",
        "Never",
    ]
    assert schemas.reads == 2  # the index and apps/v1, for five readers
    assert schemas.kinds("sim", api, "apps", "v1") is found[0]
    assert schemas.reads == 2
    core = schemas.kinds("sim", api, "", "v1")
    assert ("v1", "ConfigMap") in core and schemas.reads == 3  # the index is still current
    crd = schemas.kinds("sim", api, "wardle.example.com", "v1alpha1")
    flunder = crd[("wardle.example.com/v1alpha1", "Flunder")]
    assert flunder.at(("spec", "ports"))["x-kubernetes-list-map-keys"] == ["name"]  # type: ignore[index]


def test_an_old_index_is_read_again_and_a_document_at_the_same_url_is_not(kube: KubeSimulator) -> None:
    now = [0.0]
    schemas = OpenApiSchemas(index_lifetime=10.0, clock=lambda: now[0])
    api = kube.api_client("admin")
    first = schemas.kinds("sim", api, "apps", "v1")
    now[0] = 11.0
    assert schemas.kinds("sim", api, "apps", "v1") is first
    assert schemas.reads == 3  # the index twice, the document once: its URL (and hash) did not change


def test_a_refusal_is_logged_once_answered_with_nothing_and_retried_later(
    kube: KubeSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    now = [0.0]
    schemas = OpenApiSchemas(retry_after=30.0, clock=lambda: now[0])
    configuration = kubernetes.client.Configuration()
    admin = kube.api_client("admin").configuration  # the same server, a token it does not know
    configuration.host, configuration.ssl_ca_cert = admin.host, admin.ssl_ca_cert
    configuration.api_key = {"authorization": "Bearer not-a-token"}
    stranger = kubernetes.client.ApiClient(configuration)
    with caplog.at_level(logging.WARNING, logger="flask_krm"):
        assert schemas.kinds("sim", stranger, "apps", "v1") == {}
        assert schemas.kinds("sim", stranger, "apps", "v1") == {}
    warnings = [record.getMessage() for record in caplog.records if "OpenAPI v3" in record.getMessage()]
    assert warnings == [
        "the OpenAPI v3 schema of apis/apps/v1 on target sim cannot be read (GET /openapi/v3 answered 401);"
        " its editors show built-in widgets"
    ]
    assert schemas.reads == 1
    now[0] = 31.0
    assert ("apps/v1", "Deployment") in schemas.kinds("sim", kube.api_client("admin"), "apps", "v1")


def test_a_group_version_the_server_does_not_publish_is_named(
    kube: KubeSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    schemas = OpenApiSchemas()
    with caplog.at_level(logging.WARNING, logger="flask_krm"):
        assert schemas.kinds("sim", kube.api_client("admin"), "batch", "v1") == {}
    assert "the server's /openapi/v3 index has no apis/batch/v1" in caplog.text


def test_an_unreachable_server_is_a_logged_reason(caplog: pytest.LogCaptureFixture) -> None:
    configuration = kubernetes.client.Configuration()
    configuration.host = "https://127.0.0.1:9"  # nothing listens on the discard port
    configuration.retries = 0
    schemas = OpenApiSchemas()
    with caplog.at_level(logging.WARNING, logger="flask_krm"):
        assert schemas.kinds("sim", kubernetes.client.ApiClient(configuration), "apps", "v1") == {}
    assert "cannot be read (request failed: " in caplog.text
