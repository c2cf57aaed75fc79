"""Controls offered by what Kubernetes' RBAC lets the person do: a SelfSubjectAccessReview as the
impersonated person decides whether an editor offers Save, over an authorizer that allows everything."""

from __future__ import annotations

import typing as t
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from flask import Flask, render_template_string

from flask_krm import KrmStream
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.upstream.clients import ActingApiClient, Impersonation
from tests.ui.conftest import Upstream, open_page

from .conftest import signing_in_app
from .test_editor import EDITOR_PAGE, create, kube_object, scope_query


@pytest.fixture
def app(tmp_path: Path, kube: KubeSimulator, upstream: Upstream) -> Iterator[Flask]:
    app = signing_in_app(tmp_path, "controls test secret")

    @app.get("/edit")
    def edit() -> str:
        from flask import request

        return render_template_string(EDITOR_PAGE, scope=request.args["scope"], name=request.args["name"])

    admin = kube.api_client("admin")
    krm = KrmStream(
        app,
        authorizer=lambda principal, scope, projection, verb: True,  # Kubernetes' RBAC is the boundary
        client_loader=lambda target, principal: ActingApiClient(admin, Impersonation(principal.name)),
    )
    krm.plug_source("dev", upstream.source, app)
    yield app
    krm.shutdown(app)


def test_kubernetes_rbac_as_the_person_decides_whether_save_is_offered(
    app: Flask, kube: KubeSimulator, namespace: str, upstream: Upstream
) -> None:
    create(kube, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"a": "1"}})
    query = scope_query(namespace)
    upstream.snapshot(query, kube_object(kube, namespace, "app"))
    url = f"/edit?scope={quote(query)}&name=app"

    def page_for(user: str) -> t.Any:
        client = app.test_client()
        client.get(f"/login/{user}")
        return open_page(client, url)

    editor = page_for("editor")  # may patch in this namespace (its RoleBinding)
    assert f"/krm/ui/components/{editor.component_ids[0]}/actions/save" in editor.html
    viewer = page_for("viewer")  # may only read: Kubernetes says so, the authorizer allows all
    cid = viewer.component_ids[0]
    assert f"/krm/ui/components/{cid}/actions/save" not in viewer.html
    assert viewer.edit(cid, op="set", path='["data", "a"]', value="mine").status_code == 200
    forged = viewer.client.post(f"/krm/ui/components/{cid}/actions/save", headers=viewer.headers)
    assert forged.status_code == 403  # sent as the viewer: Kubernetes refuses the write itself
    assert kube_object(kube, namespace, "app")["data"] == {"a": "1"}
