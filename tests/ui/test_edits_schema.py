"""Edits a field's schema shapes: members added and removed in one action, values the schema
refuses answered at the field (422) and kept out of the draft. The schema here is a host's
``KRM_LIST_SCHEMAS`` entry (the recorded kube-apiserver Deployment schema), as a plugged source
publishes none; a cluster's published schema reaches the same store and widgets."""

from __future__ import annotations

import json
import re
import typing as t
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_krm.kube_schema import kind_schemas
from flask_krm.testing.simulator import openapi
from tests.ui.conftest import DEPLOYMENTS, PageHandle, Upstream, field_id, input_value, make_app, open_page
from tests.ui.test_list_edits import deployment, path, web
from tests.ui.test_rendering import editor_url

DEPLOYMENT_SCHEMA: t.Final = kind_schemas(json.loads(openapi.documents()["apis/apps/v1"].data), "apps", "v1")[
    ("apps/v1", "Deployment")
]


@pytest.fixture
def app(tmp_path: Path, upstream: Upstream) -> Iterator[Flask]:
    app, krm = make_app(tmp_path, upstream, KRM_LIST_SCHEMAS={("apps/v1", "Deployment"): DEPLOYMENT_SCHEMA})
    yield app
    krm.shutdown(app)


@pytest.fixture
def page(client: FlaskClient, upstream: Upstream) -> PageHandle:
    upstream.snapshot(DEPLOYMENTS, deployment(imagePullPolicy="IfNotPresent"))
    return open_page(client, editor_url(DEPLOYMENTS, "web"))


def edit(page: PageHandle, op: str, at: t.Sequence[t.Any], **form: str) -> t.Any:
    return page.edit(page.component_ids[0], op=op, path=path(*at), **form)


def reload(page: PageHandle) -> str:
    return open_page(page.client, editor_url(DEPLOYMENTS, "web")).html


def test_the_form_shows_the_schema(page: PageHandle) -> None:
    cid = page.component_ids[0]
    policy = field_id(cid, web("imagePullPolicy"))
    select = re.search(rf'<select class="krm-input" id="{policy}".*?</select>', page.html, re.S)
    assert select, "imagePullPolicy is a select"
    assert re.findall(r'<option value="([^"]*)"', select.group(0)) == ["Always", "IfNotPresent", "Never"]
    assert re.search(r'<option value="IfNotPresent" selected>', select.group(0))
    assert f'id="{policy}-help">Image pull policy. One of Always, Never, IfNotPresent.' in page.html
    assert 'aria-label="Remove Image pull policy"' in page.html
    member = re.search(rf'<select[^>]*id="{field_id(cid, web())}-member".*?</select>', page.html, re.S)
    assert member and '<option value="volumeMounts">Volume mounts</option>' in member.group(0)
    assert '<option value="env">' not in member.group(0)  # web has env already
    assert 'max="2147483647"' in page.html  # replicas: an int32


def test_a_member_is_added_with_its_starting_value_and_removed_in_one_action(page: PageHandle) -> None:
    cid = page.component_ids[0]
    assert edit(page, "add_member", web(), member="volumeMounts").status_code == 200
    html = reload(page)
    assert 'aria-label="Add an item to volumeMounts"' in html
    assert '>Mount path<span class="krm-vh"> of the new item of volumeMounts<' in html
    assert edit(page, "add_member", web(), member="workingDir").status_code == 200
    assert input_value(reload(page), field_id(cid, web("workingDir"))) == ""
    assert edit(page, "remove_member", web("workingDir")).status_code == 200
    assert edit(page, "remove_member", web("imagePullPolicy")).status_code == 200
    html = reload(page)
    assert field_id(cid, web("workingDir")) + '"' not in html
    assert field_id(cid, web("imagePullPolicy")) + '"' not in html


@pytest.mark.parametrize(
    ("form", "status", "message"),
    [
        ({"op": "add_member", "member": "noSuchField"}, 422, "Choose a field to add."),
        ({"op": "add_member", "member": ""}, 422, "Choose a field to add."),
        ({"op": "add_member"}, 400, "The request has no member."),
    ],
)
def test_a_member_the_schema_does_not_declare_is_refused(
    page: PageHandle, form: dict[str, str], status: int, message: str
) -> None:
    response = page.edit(page.component_ids[0], path=path(*web()), **form)
    assert response.status_code == status and message in response.get_data(as_text=True)


def test_a_required_member_cannot_be_removed(page: PageHandle) -> None:
    response = edit(page, "remove_member", web("name"))
    assert response.status_code == 422
    assert "This field cannot be removed" in response.get_data(as_text=True)


@pytest.mark.parametrize(
    ("at", "typed", "start", "message"),
    [
        (web("imagePullPolicy"), "Sometimes", "IfNotPresent", "Choose one of Always, IfNotPresent, Never."),
        (("spec", "replicas"), "2.5", "2", "Enter a whole number."),
    ],
)
def test_a_value_the_schema_refuses_is_answered_at_its_field_and_not_kept(
    page: PageHandle, at: tuple[t.Any, ...], typed: str, start: str, message: str
) -> None:
    cid = page.component_ids[0]
    response = edit(page, "set", at, value=typed, **{"from": start})
    assert response.status_code == 422
    body = response.get_data(as_text=True)
    assert f'hx-target="#{field_id(cid, at, "-error")}">{message}<' in body
    assert typed not in reload(page)


def test_a_quantity_is_checked_when_typed(page: PageHandle) -> None:
    cid = page.component_ids[0]
    assert edit(page, "add_member", web(), member="resources").status_code == 200
    assert edit(page, "add_member", web("resources"), member="limits").status_code == 200
    limits = web("resources", "limits")
    refused = edit(page, "add_key", limits, key="cpu", value="a lot")
    assert refused.status_code == 422 and "Enter a quantity" in refused.get_data(as_text=True)
    assert edit(page, "add_key", limits, key="cpu", value="500m").status_code == 200
    assert edit(page, "set", (*limits, "cpu"), value="1.5Gi", **{"from": "500m"}).status_code == 200
    bad = edit(page, "set", (*limits, "cpu"), value="1.5 Gi", **{"from": "1.5Gi"})
    assert bad.status_code == 422
    assert input_value(reload(page), field_id(cid, (*limits, "cpu"))) == "1.5Gi"


OPEN_SPEC: t.Final = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "required": ["replicas"],
            "properties": {"replicas": {"type": "integer"}, "extra": {"x-kubernetes-preserve-unknown-fields": True}},
        }
    },
}
"""A host's schema of a Deployment whose ``spec`` keeps members it does not declare (as a CRD's may)."""


@pytest.fixture
def open_page_(tmp_path: Path, upstream: Upstream) -> Iterator[PageHandle]:
    app, krm = make_app(tmp_path, upstream, KRM_LIST_SCHEMAS={("apps/v1", "Deployment"): OPEN_SPEC})
    upstream.snapshot(DEPLOYMENTS, deployment())
    client = app.test_client()
    client.get("/login/editor")
    yield open_page(client, editor_url(DEPLOYMENTS, "web"))
    krm.shutdown(app)


def yaml_text_of(html: str, element_id: str) -> str | None:
    found = re.search(
        rf'<textarea class="krm-input krm-structured krm-yaml-value" id="{element_id}".*?>\n(.*?)</textarea>',
        html,
        re.S,
    )
    return found.group(1) if found else None


def test_a_member_the_schema_leaves_open_is_edited_as_yaml(open_page_: PageHandle) -> None:
    page = open_page_
    cid = page.component_ids[0]
    template = field_id(cid, ("spec", "template"))
    shown = yaml_text_of(page.html, template)
    assert shown is not None and shown.startswith("spec:\n  containers:\n  - name: web\n")
    typed = "spec:\n  containers:\n  - name: web\n    image: nginx:2\n"
    assert edit(page, "set", ("spec", "template"), value=typed, **{"from": shown}).status_code == 200
    html = reload(open_page_)
    assert yaml_text_of(html, template) == typed.rstrip("\n")
    assert edit(page, "add_member", ("spec",), member="extra").status_code == 200
    assert yaml_text_of(reload(open_page_), field_id(cid, ("spec", "extra"))) == "{}"
    assert edit(page, "set", ("spec", "extra"), value="size: 3\ntags: [a, b]", **{"from": "{}"}).status_code == 200
    assert yaml_text_of(reload(open_page_), field_id(cid, ("spec", "extra"))) == "size: 3\ntags:\n- a\n- b"


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("a: 1\nb: [2\n", "(line 3, column 1)"),
        ("a: 1\na: 2\n", "written twice"),
        ("a: !withheld 'not shown'\n", "not a value"),
        ("", "The YAML is empty"),
    ],
)
def test_yaml_a_field_cannot_hold_is_refused_at_the_field_and_not_kept(
    open_page_: PageHandle, typed: str, message: str
) -> None:
    page = open_page_
    cid = page.component_ids[0]
    at = ("spec", "template")
    before = yaml_text_of(page.html, field_id(cid, at))
    response = edit(page, "set", at, value=typed, **{"from": before or ""})
    body = response.get_data(as_text=True)
    assert response.status_code == 422 and f'hx-target="#{field_id(cid, at, "-error")}">' in body
    assert message in body
    assert yaml_text_of(reload(page), field_id(cid, at)) == before


def test_a_required_member_is_marked_and_cannot_be_emptied(open_page_: PageHandle) -> None:
    page = open_page_
    cid = page.component_ids[0]
    replicas = field_id(cid, ("spec", "replicas"))
    assert re.search(
        rf'<label class="krm-label" for="{replicas}">Replicas <span class="krm-required">required</span>', page.html
    )
    assert re.search(rf'id="{replicas}"[^>]*aria-required="true"', page.html)
    assert 'aria-label="Remove Replicas"' not in page.html
    response = edit(page, "set", ("spec", "replicas"), value=" ", **{"from": "2"})
    assert response.status_code == 422
    assert "This field is required: enter a value." in response.get_data(as_text=True)
    assert input_value(reload(page), replicas) == "2"


def test_a_member_of_an_empty_member_is_added_in_one_action(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(DEPLOYMENTS, deployment(resources={}))
    page = open_page(client, editor_url(DEPLOYMENTS, "web"))
    cid = page.component_ids[0]
    assert field_id(cid, web("resources")) + '-group"' not in page.html
    assert '<option value="resources/limits">Resources: Limits</option>' in page.html
    assert edit(page, "add_member", web(), member="resources/limits").status_code == 200
    html = reload(page)
    assert field_id(cid, web("resources")) + '-group"' in html and field_id(cid, web("resources", "limits")) in html
    refused = edit(page, "add_member", web(), member="resources/nothing")
    assert refused.status_code == 422 and "Choose a field to add." in refused.get_data(as_text=True)
