"""``/openapi/v3``: the discovery document, per group version documents, their ETags and caching, their schemas."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from typing import Any

import kubernetes.client
import pytest

from flask_krm.testing.simulator import FLUNDER_CRD
from flask_krm.testing.simulator.crd_openapi import crd_document

from .kube import request, wait_until

SERVED = (
    "api/v1",
    "apis/apps/v1",
    "apis/rbac.authorization.k8s.io/v1",
    "apis/authorization.k8s.io/v1",
    "apis/apiextensions.k8s.io/v1",
    "apis/wardle.example.com/v1alpha1",
)
HASH = re.compile(r"[0-9A-F]{128}")
FLUNDER = "com.example.wardle.v1alpha1.Flunder"
FLUNDER_GROUP_VERSION = "apis/wardle.example.com/v1alpha1"


def _bundled() -> dict[str, Any]:
    """The simulator's built-in documents (the real server's, cut to what the simulator serves)."""
    text = resources.files("flask_krm.testing.simulator").joinpath("openapi_v3.json").read_text()
    documents = json.loads(text)["documents"]
    assert isinstance(documents, dict)
    return documents


def _flunder_document(api: kubernetes.client.ApiClient) -> Any:
    """The Flunder group version's document (the real server publishes a new CRD's shortly after serving it)."""
    wait_until(lambda: request(api, "GET", f"/openapi/v3/{FLUNDER_GROUP_VERSION}").body is not None)
    return request(api, "GET", f"/openapi/v3/{FLUNDER_GROUP_VERSION}").body


def _discovery(api: kubernetes.client.ApiClient) -> dict[str, str]:
    _flunder_document(api)
    reply = request(api, "GET", "/openapi/v3")
    assert reply.status == 200
    return {path: entry["serverRelativeURL"] for path, entry in json.loads(reply.data)["paths"].items()}


def _etag(data: bytes) -> str:
    """kube-openapi's ETag: the upper-case hex SHA-512 of the document's bytes, quoted."""
    return '"' + hashlib.sha512(data).hexdigest().upper() + '"'


def test_discovery_names_each_document_by_its_hash(admin: kubernetes.client.ApiClient) -> None:
    """The discovery document itself has no ETag and goes out as text (kube-apiserver does not type it)."""
    _flunder_document(admin)
    reply = request(admin, "GET", "/openapi/v3")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert reply.headers["Cache-Control"] == "no-cache, private"
    assert "Etag" not in reply.headers
    urls = {path: entry["serverRelativeURL"] for path, entry in json.loads(reply.data)["paths"].items()}
    assert set(SERVED) | {"api", "apis", "apis/apps", "version"} <= set(urls)
    for path, url in urls.items():
        prefix, _, digest = url.partition("?hash=")
        assert prefix == f"/openapi/v3/{path}" and HASH.fullmatch(digest), url
        if path in SERVED:
            assert request(admin, "GET", prefix).headers["Etag"] == f'"{digest}"'
    again = request(admin, "GET", "/openapi/v3", headers=[("If-None-Match", '"anything"')])
    assert again.status == 200


def test_an_unknown_path_or_a_type_other_than_json(admin: kubernetes.client.ApiClient) -> None:
    unknown = request(admin, "GET", "/openapi/v3/apis/nothing.example.com/v1")
    assert unknown.status == 404 and unknown.data == b""
    html = request(admin, "GET", "/openapi/v3/api/v1", accept="text/html")
    assert html.status == 406 and html.data == b"" and html.headers["Vary"] == "Accept"


def test_a_document_is_cached_by_its_hash(admin: kubernetes.client.ApiClient) -> None:
    url = _discovery(admin)["apis/apps/v1"]
    digest = url.partition("?hash=")[2]
    hashed = request(admin, "GET", url.partition("?")[0], query=[("hash", digest)])
    assert hashed.status == 200
    assert hashed.headers["Content-Type"] == "application/json"
    assert hashed.headers["Etag"] == f'"{digest}"' == _etag(hashed.data)
    assert hashed.headers["Cache-Control"] == "public, immutable"
    assert hashed.headers["Vary"] == "Accept"
    assert "Expires" in hashed.headers
    plain = request(admin, "GET", "/openapi/v3/apis/apps/v1")
    assert plain.status == 200 and plain.data == hashed.data
    assert plain.headers["Etag"] == f'"{digest}"'
    assert plain.headers["Cache-Control"] == "no-cache, private"
    unchanged = request(admin, "GET", "/openapi/v3/apis/apps/v1", headers=[("If-None-Match", f'"{digest}"')])
    assert unchanged.status == 304 and unchanged.data == b""
    stale = _unredirected_get(admin, "/openapi/v3/apis/apps/v1?hash=" + "0" * 128)
    assert stale.status == 301
    assert stale.headers["Location"] == url


def _unredirected_get(api: kubernetes.client.ApiClient, path: str) -> Any:
    """``GET path`` without following a redirect (the client follows them)."""
    _, url, headers, _, _ = api.param_serialize("GET", path, auth_settings=["BearerToken"])
    return api.rest_client.pool_manager.request("GET", url, headers=headers, redirect=False, timeout=10.0)


def test_built_in_schemas_are_the_real_server_s(admin: kubernetes.client.ApiClient) -> None:
    """Every schema and operation the simulator keeps is the real server's, unchanged (and whole documents
    for the discovery paths)."""
    for path, bundled in _bundled().items():
        served = request(admin, "GET", f"/openapi/v3/{path}").body
        assert served["openapi"] == bundled["openapi"] and served["info"] == bundled["info"]
        for name, schema in bundled["components"]["schemas"].items():
            assert served["components"]["schemas"][name] == schema, name
        for route, item in bundled["paths"].items():
            assert {key: served["paths"][route][key] for key in item} == item, route


def test_built_in_schemas_carry_what_a_form_needs(admin: kubernetes.client.ApiClient) -> None:
    schemas = request(admin, "GET", "/openapi/v3/apis/apps/v1").body["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    container = schemas["io.k8s.api.core.v1.Container"]
    assert container["properties"]["imagePullPolicy"]["enum"] == ["Always", "IfNotPresent", "Never"]
    assert container["required"] == ["name"]
    pod_spec = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert pod_spec["x-kubernetes-list-type"] == "map" and pod_spec["x-kubernetes-list-map-keys"] == ["name"]
    core = request(admin, "GET", "/openapi/v3/api/v1").body
    operations = core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    assert {"get", "put", "patch", "delete"} <= set(operations)


def test_a_custom_resource_document_is_built_from_its_definition(admin: kubernetes.client.ApiClient) -> None:
    document = _flunder_document(admin)
    schema = document["components"]["schemas"][FLUNDER]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "wardle.example.com", "kind": "Flunder", "version": "v1alpha1"}
    ]
    assert schema["description"] == "A Flunder names another Flunder and the ports it serves."
    ports = schema["properties"]["spec"]["properties"]["ports"]
    assert ports["x-kubernetes-list-map-keys"] == ["name"]
    assert ports["items"]["properties"]["protocol"]["enum"] == ["TCP", "UDP", "SCTP"]
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert set(document["paths"]) == {
        "/apis/wardle.example.com/v1alpha1/flunders",
        "/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders",
        "/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}",
        "/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}/status",
    }


@pytest.mark.parametrize("user", ["viewer", "admin"])
def test_every_authenticated_user_may_read_the_documents(kube_server: Any, user: str) -> None:
    with kube_server.api_client(user) as api:
        assert request(api, "GET", "/openapi/v3/api/v1").status == 200


def test_the_custom_resource_document_is_the_one_the_simulator_builds(admin: kubernetes.client.ApiClient) -> None:
    """On the real server this proves the simulator's Flunder document (captured routes, rebuilt kind schema) is its own."""
    served = _flunder_document(admin)
    assert served == crd_document(FLUNDER_CRD, "v1alpha1")
