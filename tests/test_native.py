"""The native proxy: only conditional merge patches, within the allowed scopes, as the signed-in person."""

from __future__ import annotations

import base64
import json
import logging
import typing as t
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from flask_login import LoginManager, login_user

from flask_krm import AllowedResource, KrmStream, ScopePolicy
from flask_krm.csrf import HEADER
from flask_krm.native import NativeProxy
from flask_krm.save.publish import write_attempted
from flask_krm.save.writer import KubeWriter
from flask_krm.testing.simulator import KubeSimulator
from tests.save.conftest import editable_namespace, simulator_with_roles, unconditional_patch
from tests.users import User

PLAIN = "n4tive-s3cret"
ENCODED = base64.b64encode(PLAIN.encode()).decode()


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with simulator_with_roles() as simulator:
        yield simulator


@pytest.fixture
def namespace(kube: KubeSimulator) -> str:
    return editable_namespace(kube)


@pytest.fixture
def app(tmp_path: Path, kube: KubeSimulator, namespace: str) -> Iterator[Flask]:
    app = Flask(__name__, instance_path=str(tmp_path))
    app.config.update(TESTING=True, SECRET_KEY="native test secret", KRM_SCOPE_POLICY=ScopePolicy())
    login = LoginManager(app)
    login.user_loader(lambda name: User(name))

    @app.get("/login/<name>")
    def sign_in(name: str) -> str:
        login_user(User(name))
        return krm.runtime().csrf_token()

    krm = KrmStream(
        app, authorizer=lambda *_: True, client_loader=lambda target, principal: kube.api_client(principal.name)
    )
    policy = ScopePolicy(
        targets=frozenset({"dev"}),
        resources=(AllowedResource(group="", resource="configmaps"), AllowedResource(group="", resource="secrets")),
        namespaces=frozenset({namespace}),
    )
    app.register_blueprint(NativeProxy(target="dev", policy=policy).blueprint())
    yield app
    krm.shutdown(app)


def signed_in(app: Flask, user: str = "editor") -> tuple[FlaskClient, dict[str, str]]:
    client = app.test_client()
    token = client.get(f"/login/{user}").get_data(as_text=True)
    return client, {HEADER: token}


@pytest.fixture
def configmap(kube: KubeSimulator, namespace: str) -> dict[str, t.Any]:
    answer = KubeWriter(kube.api_client("admin")).request(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"a": "1"}},
    )
    assert answer.ok and answer.body is not None
    return dict(answer.body)


def current(kube: KubeSimulator, namespace: str, name: str = "app", resource: str = "configmaps") -> dict[str, t.Any]:
    answer = KubeWriter(kube.api_client("admin")).request("GET", f"/api/v1/namespaces/{namespace}/{resource}/{name}")
    assert answer.ok and answer.body is not None
    return dict(answer.body)


def conditional(obj: dict[str, t.Any], patch: dict[str, t.Any]) -> str:
    metadata = {
        **patch.get("metadata", {}),
        "uid": obj["metadata"]["uid"],
        "resourceVersion": obj["metadata"]["resourceVersion"],
    }
    return json.dumps({**patch, "metadata": metadata})


MERGE = "application/merge-patch+json"


def test_a_conditional_merge_patch_is_forwarded_as_the_person_and_answers_204(app, kube, namespace, configmap) -> None:
    client, headers = signed_in(app)
    records: list[t.Any] = []
    with write_attempted.connected_to(lambda sender, **kw: records.append(kw["record"])):
        response = client.patch(
            f"/k8s/api/v1/namespaces/{namespace}/configmaps/app",
            data=conditional(configmap, {"data": {"a": "native"}}),
            headers={**headers, "Content-Type": MERGE},
        )
    assert response.status_code == 204 and response.get_data() == b""
    assert current(kube, namespace)["data"] == {"a": "native"}
    assert records[0].principal == "editor" and records[0].fields == ("/data/a",)


def test_the_kubernetes_answer_keeps_its_category(app, kube, namespace, configmap) -> None:
    client, headers = signed_in(app)
    stale = conditional(configmap, {"data": {"a": "x"}})
    unconditional_patch(kube, f"/api/v1/namespaces/{namespace}/configmaps/app", {"data": {"b": "other"}})
    conflict = client.patch(
        f"/k8s/api/v1/namespaces/{namespace}/configmaps/app", data=stale, headers={**headers, "Content-Type": MERGE}
    )
    assert conflict.status_code == 409 and conflict.get_json()["reason"] == "Conflict"
    viewer, viewer_headers = signed_in(app, "viewer")
    fresh = conditional(current(kube, namespace), {"data": {"a": "x"}})
    denied = viewer.patch(
        f"/k8s/api/v1/namespaces/{namespace}/configmaps/app",
        data=fresh,
        headers={**viewer_headers, "Content-Type": MERGE},
    )
    assert denied.status_code == 403 and denied.get_json()["reason"] == "Forbidden"
    assert current(kube, namespace)["data"] == {"a": "1", "b": "other"}


@pytest.mark.parametrize(
    ("content_type", "body", "status", "needle"),
    [
        ("application/json", None, 415, "merge-patch"),
        ("application/strategic-merge-patch+json", None, 415, "merge-patch"),
        ("application/json-patch+json", '[{"op": "replace", "path": "/data/a", "value": "x"}]', 415, "merge-patch"),
        (MERGE, '{"data": {"a": "x"}}', 422, "/metadata/uid"),
        (MERGE, "UID_ONLY", 422, "/metadata/resourceVersion"),
        (MERGE, "MANAGED_FIELDS", 422, "/metadata/managedFields"),
        (MERGE, "LAST_APPLIED", 422, "last-applied-configuration"),
        (MERGE, "[1, 2]", 400, "JSON object"),
        (MERGE, "{not json", 400, "not JSON"),
    ],
)
def test_refused_patches_never_reach_kubernetes(
    app, kube, namespace, configmap, content_type, body, status, needle
) -> None:
    client, headers = signed_in(app)
    uid, version = configmap["metadata"]["uid"], configmap["metadata"]["resourceVersion"]
    bodies = {
        None: conditional(configmap, {"data": {"a": "x"}}),
        "UID_ONLY": json.dumps({"metadata": {"uid": uid}, "data": {"a": "x"}}),
        "MANAGED_FIELDS": json.dumps({"metadata": {"uid": uid, "resourceVersion": version, "managedFields": None}}),
        "LAST_APPLIED": json.dumps(
            {
                "metadata": {
                    "uid": uid,
                    "resourceVersion": version,
                    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                }
            }
        ),
    }
    response = client.patch(
        f"/k8s/api/v1/namespaces/{namespace}/configmaps/app",
        data=bodies.get(body, body),
        headers={**headers, "Content-Type": content_type},
    )
    assert response.status_code == status and needle in response.get_json()["message"]
    assert current(kube, namespace)["metadata"]["resourceVersion"] == version


def test_paths_methods_and_parameters_outside_the_proxy_are_refused(app, kube, namespace, configmap) -> None:
    client, headers = signed_in(app)
    patch = conditional(configmap, {"data": {"a": "x"}})
    merge = {**headers, "Content-Type": MERGE}
    assert client.patch("/k8s/api/v1/namespaces/other/configmaps/app", data=patch, headers=merge).status_code == 403
    assert (
        client.patch(f"/k8s/apis/apps/v1/namespaces/{namespace}/deployments/app", data=patch, headers=merge).status_code
        == 403
    )
    assert (
        client.patch(f"/k8s/api/v1/namespaces/{namespace}/configmaps/app/status", data=patch, headers=merge).status_code
        == 404
    )
    assert client.patch(f"/k8s/api/v1/namespaces/{namespace}/configmaps", data=patch, headers=merge).status_code == 405
    assert (
        client.patch(
            f"/k8s/api/v1/namespaces/{namespace}/configmaps/app?dryRun=All", data=patch, headers=merge
        ).status_code
        == 400
    )
    assert (
        client.put(f"/k8s/api/v1/namespaces/{namespace}/configmaps/app", data=patch, headers=merge).status_code == 405
    )
    assert client.delete(f"/k8s/api/v1/namespaces/{namespace}/configmaps/app", headers=headers).status_code == 405
    assert client.post(f"/k8s/api/v1/namespaces/{namespace}/configmaps", data=patch, headers=merge).status_code == 405
    assert client.get(f"/k8s/api/v1/namespaces/{namespace}/configmaps?server=evil").status_code == 400
    assert client.get("/k8s/api/v1/namespaces/kube-system/configmaps").status_code == 403
    assert (
        client.patch(
            f"/k8s/api/v1/namespaces/{namespace}/configmaps/app", data=patch, headers={"Content-Type": MERGE}
        ).status_code
        == 400
    )  # no CSRF token
    assert current(kube, namespace)["metadata"]["resourceVersion"] == configmap["metadata"]["resourceVersion"]


def test_anonymous_callers_are_refused(app, kube, namespace, configmap) -> None:
    assert app.test_client().get(f"/k8s/api/v1/namespaces/{namespace}/configmaps/app").status_code == 401


def test_reads_are_native_and_never_carry_the_servers_credentials(app, kube, namespace, configmap) -> None:
    client, _ = signed_in(app)
    single = client.get(f"/k8s/api/v1/namespaces/{namespace}/configmaps/app")
    assert single.status_code == 200 and single.get_json()["metadata"]["uid"] == configmap["metadata"]["uid"]
    listing = client.get(f"/k8s/api/v1/namespaces/{namespace}/configmaps")
    assert [item["metadata"]["name"] for item in listing.get_json()["items"]] == ["app"]
    assert "editor-token" not in single.get_data(as_text=True) + str(single.headers)
    missing = client.get(f"/k8s/api/v1/namespaces/{namespace}/configmaps/none")
    assert missing.status_code == 404 and missing.get_json()["reason"] == "NotFound"


def test_a_native_secret_patch_is_audited_without_its_values(app, kube, namespace, caplog) -> None:
    created = (
        KubeWriter(kube.api_client("admin"))
        .request(
            "POST",
            f"/api/v1/namespaces/{namespace}/secrets",
            body={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "data": {"token": "b2xk"}},
        )
        .body
    )
    assert created is not None
    client, headers = signed_in(app)
    caplog.set_level(logging.DEBUG)
    records: list[t.Any] = []
    with write_attempted.connected_to(lambda sender, **kw: records.append(kw["record"])):
        response = client.patch(
            f"/k8s/api/v1/namespaces/{namespace}/secrets/creds",
            data=conditional(dict(created), {"data": {"token": ENCODED}}),
            headers={**headers, "Content-Type": MERGE},
        )
    assert response.status_code == 204 and response.get_data() == b""
    assert current(kube, namespace, "creds", "secrets")["data"] == {"token": ENCODED}
    assert records[0].redacted_paths == ("/data/token",) and records[0].diff == (
        {"op": "add", "path": "/data/token", "redacted": True},
    )
    assert ENCODED not in caplog.text + repr(records) and PLAIN not in caplog.text


def test_a_watch_is_relayed_line_by_line(app, kube, namespace, configmap) -> None:
    client, _ = signed_in(app)
    version = configmap["metadata"]["resourceVersion"]
    response = client.get(
        f"/k8s/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion={int(version) - 1}&timeoutSeconds=1"
    )
    assert response.status_code == 200
    events = [json.loads(line) for line in response.get_data(as_text=True).splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"] == [
        ("ADDED", "app")
    ]
    watched = client.get(f"/k8s/api/v1/namespaces/{namespace}/configmaps/app?watch=true")
    assert watched.status_code == 400
