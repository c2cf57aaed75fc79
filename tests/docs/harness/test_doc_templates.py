"""Every Jinja example of the documentation, live in the quickstart's host against the simulator.

Copied next to the documentation's example files by ``tests/docs/test_examples.py``: each
``templates/NAME.html`` is rendered as the content of a page of ``myapp`` that also serves
Deployments, and the page must open live with every component showing the demo objects.
"""

from __future__ import annotations

import typing as t
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask, render_template_string
from flask_login import login_required
from kubernetes.client import AppsV1Api
from myapp import CONFIGMAPS, create_app

from flask_krm import AllowedResource, ScopePolicy
from flask_krm.runtime import find_runtime
from flask_krm.testing.pytest_plugin import LiveClient
from flask_krm.testing.simulator import KubeSimulator

TEMPLATES: t.Final = sorted((Path(__file__).parent / "templates").glob("*.html"))
DEPLOYMENTS: t.Final = "target=prod&group=apps&version=v1&resource=deployments&namespace=demo"
PAGE: t.Final = """{% extends "krm/base.html" %}
{% import "krm/_macros.html" as krm %}
{% block content %}EXAMPLE{% endblock %}"""


@pytest.fixture
def krm_app(krm_config: dict[str, t.Any], kube_simulator: KubeSimulator) -> Iterator[Flask]:
    policy = ScopePolicy(
        targets={"prod"},
        resources=[
            AllowedResource(group="", resource="configmaps"),
            AllowedResource(group="apps", resource="deployments"),
        ],
        namespaces={"demo"},
    )
    app = create_app({**krm_config, "KRM_SCOPE_POLICY": policy})
    api = AppsV1Api(kube_simulator.api_client("admin"))
    web = api.api_client.sanitize_for_serialization(api.read_namespaced_deployment("web", "demo"))

    @app.get("/doc-example/<name>")
    @login_required
    def example(name: str) -> str:
        source = (Path(__file__).parent / "templates" / name).read_text()
        return render_template_string(
            PAGE.replace("EXAMPLE", source), deployments=DEPLOYMENTS, scope=CONFIGMAPS, obj=web
        )

    yield app
    runtime = find_runtime(app)
    assert runtime is not None
    runtime.shutdown(timeout=2.0)


def test_there_are_examples() -> None:
    assert TEMPLATES


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: path.name)
def test_the_example_renders_live(template: Path, krm_client: Callable[[str], LiveClient]) -> None:
    page = krm_client("ada").live(f"/doc-example/{template.name}")
    assert page.components, "the example shows no live component"
    for component in page.components:
        body = page.bodies[component]
        assert "web" in body or "app-config" in body, f"{component} shows no demo object: {body[:2000]}"
