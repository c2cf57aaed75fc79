"""``/openapi/v3``: the discovery document, per group version documents, their ETags and caching, their schemas."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from typing import Any

import kubernetes.client
import pytest

from .kube import request

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


def _bundled() -> dict[str, Any]:
    """The simulator's built-in documents (the pinned release's, cut to what it serves)."""
    text = resources.files("flask_krm.testing.simulator").joinpath("openapi_v3.json").read_text()
    documents = json.loads(text)["documents"]
    assert isinstance(documents, dict)
    return documents


def _discovery(api: kubernetes.client.ApiClient) -> dict[str, str]:
    reply = request(api, "GET", "/openapi/v3")
    assert reply.status == 200
    return {path: entry["serverRelativeURL"] for path, entry in reply.body["paths"].items()}


def _etag(data: bytes) -> str:
    return '"' + hashlib.sha512(data).hexdigest().upper() + '"'


def test_discovery_names_each_group_version_by_its_hash(admin: kubernetes.client.ApiClient) -> None:
    reply = request(admin, "GET", "/openapi/v3")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.headers["Etag"] == _etag(reply.data)
    urls = _discovery(admin)
    assert set(SERVED) <= set(urls)
    for path in SERVED:
        prefix, _, digest = urls[path].partition("?hash=")
        assert prefix == f"/openapi/v3/{path}" and HASH.fullmatch(digest), urls[path]
    again = request(admin, "GET", "/openapi/v3", headers=[("If-None-Match", reply.headers["Etag"])])
    assert again.status == 304 and again.data == b""


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
    assert plain.headers.get("Cache-Control") != "public, immutable"
    unchanged = request(admin, "GET", "/openapi/v3/apis/apps/v1", headers=[("If-None-Match", f'"{digest}"')])
    assert unchanged.status == 304 and unchanged.data == b""
    stale = _unredirected_get(admin, "/openapi/v3/apis/apps/v1?hash=" + "0" * 128)
    assert stale.status == 301
    assert stale.headers["Location"] == url


def _unredirected_get(api: kubernetes.client.ApiClient, path: str) -> Any:
    """``GET path`` without following a redirect (the client follows them)."""
    _, url, headers, _, _ = api.param_serialize("GET", path, auth_settings=["BearerToken"])
    return api.rest_client.pool_manager.request("GET", url, headers=headers, redirect=False, timeout=10.0)


def test_built_in_schemas_are_the_release_documents(admin: kubernetes.client.ApiClient) -> None:
    """Every schema and operation the simulator serves is the real server's, unchanged."""
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
    assert container["properties"]["imagePullPolicy"]["type"] == "string"
    assert container["required"] == ["name"]
    pod_spec = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert pod_spec["x-kubernetes-list-type"] == "map" and pod_spec["x-kubernetes-list-map-keys"] == ["name"]
    core = request(admin, "GET", "/openapi/v3/api/v1").body
    operations = core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    assert {"get", "put", "patch", "delete"} <= set(operations)


def test_a_custom_resource_document_is_built_from_its_definition(admin: kubernetes.client.ApiClient) -> None:
    document = request(admin, "GET", "/openapi/v3/apis/wardle.example.com/v1alpha1").body
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
