"""Drafts hold only what their object can hold: every way of editing refuses, at the field or line,
what would break the page or Save or grow past Kubernetes' limits, and leaves the draft as it was."""

from __future__ import annotations

import copy
import html
import json
import typing as t

import pytest
from flask.testing import FlaskClient

from flask_krm.store.bounds import MAX_ANNOTATION_BYTES, MAX_DATA_BYTES
from flask_krm.ui.widgets import MAX_FORM_VALUES
from flask_krm.yaml_text import load_yaml
from tests.ui.conftest import CONFIGMAPS, DEPLOYMENTS, PageHandle, Upstream, configmap, field_id, open_page
from tests.ui.test_rendering import DEPLOYMENT, editor_url
from tests.ui.test_yaml_edits import partials, post_yaml, source

NO_CHANGES: t.Final = "No changes: Save has nothing to send."


@pytest.fixture
def demo(client: FlaskClient, upstream: Upstream) -> PageHandle:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"greeting": "hello"}, labels={"app": "web"}))
    return open_page(client, editor_url(CONFIGMAPS, "demo"))


def problems_of(response: t.Any, cid: str) -> str:
    return html.unescape(partials(response)[f"{cid}-yaml-problems"])


def unchanged(page: PageHandle, url: str) -> None:
    """The page still renders, with no change in the draft."""
    again = open_page(page.client, url)
    assert NO_CHANGES in again.html


@pytest.mark.parametrize(
    ("edit", "line", "what"),
    [
        (lambda t: t.replace("greeting: hello", "greeting: hello\n  other: x\n  greeting: bye"), 11, "'greeting'"),
        (lambda t: t.replace("app: web", "app: web\n    app: db"), 8, "'app'"),
        (lambda t: t + "data:\n  more: x\n", 10, "'data'"),
    ],
    ids=["data-key", "label", "top-level-data"],
)
def test_a_key_written_twice_is_refused_at_its_line(
    demo: PageHandle, edit: t.Callable[[str], str], line: int, what: str
) -> None:
    cid = demo.component_ids[0]
    before = source(demo.html, cid)
    for name, body in (("yaml", (before, edit(before))), ("before", (edit(before), before))):
        response = post_yaml(demo, cid, *body)
        assert response.status_code == (422 if name == "yaml" else 400), name
        problems = problems_of(response, cid)
        assert f"Line {line}," in problems and f"The key {what} is written twice" in problems, (name, problems)
    unchanged(demo, editor_url(CONFIGMAPS, "demo"))


@pytest.mark.parametrize(
    "number", ["0x" + "f" * 20_000, "-" + "9" * 5000, "0b" + "1" * 30_000, "9" * 4301], ids=["hex", "neg", "bin", "dec"]
)
def test_an_integer_past_the_digit_limit_is_refused_in_either_text(demo: PageHandle, number: str) -> None:
    cid = demo.component_ids[0]
    before = source(demo.html, cid)
    typed = before.replace("greeting: hello", "greeting: hello\n  big: " + number)
    for body, status in (((before, typed), 422), ((typed, before), 400)):
        response = post_yaml(demo, cid, *body)
        assert response.status_code == status
        assert "Line 10, column 8:" in problems_of(response, cid)
        assert "The number has more than 4300 digits" in problems_of(response, cid)
    unchanged(demo, editor_url(CONFIGMAPS, "demo"))


@pytest.mark.parametrize(
    ("typed", "line", "message"),
    [
        ("  x: [a, b]\n", 10, "/data/x is an entry of a map of strings: it holds text, not a list"),
        ("  x:\n    nested: y\n", 10, "/data/x is an entry of a map of strings: it holds text, not a map"),
        ("  x: 3\n", 10, "/data/x is an entry of a map of strings: it holds text, not a value"),
    ],
)
def test_a_value_of_the_wrong_type_for_its_place_is_refused_at_its_line(
    demo: PageHandle, typed: str, line: int, message: str
) -> None:
    cid = demo.component_ids[0]
    before = source(demo.html, cid)
    response = post_yaml(demo, cid, before, before.replace("  greeting: hello\n", "  greeting: hello\n" + typed))
    assert response.status_code == 422
    problems = problems_of(response, cid)
    assert f"Line {line}:" in problems and message in problems, problems
    unchanged(demo, editor_url(CONFIGMAPS, "demo"))


def test_labels_hold_strings(demo: PageHandle) -> None:
    cid = demo.component_ids[0]
    before = source(demo.html, cid)
    response = post_yaml(demo, cid, before, before.replace("app: web", "app: [web]"))
    assert response.status_code == 422
    problems = problems_of(response, cid)
    assert "Line 7:" in problems and "/metadata/labels/app is an entry of a map of strings" in problems, problems
    unchanged(demo, editor_url(CONFIGMAPS, "demo"))


def test_annotations_cannot_grow_past_kubernetes_limit(demo: PageHandle) -> None:
    cid = demo.component_ids[0]
    half = "x" * (MAX_ANNOTATION_BYTES // 2)
    first = demo.edit(cid, op="add_key", path='["metadata","annotations"]', key="a", value=half)
    assert first.status_code == 200
    refused = demo.edit(cid, op="add_key", path='["metadata","annotations"]', key="b", value=half)
    assert refused.status_code == 422
    text = refused.get_data(as_text=True)
    assert f"annotations would take {MAX_ANNOTATION_BYTES + 2} bytes; Kubernetes accepts at most" in text
    assert field_id(cid, ["metadata", "annotations"], "-error") in text
    page = open_page(demo.client, editor_url(CONFIGMAPS, "demo"))
    assert page.html.count(half) >= 1 and "&#34;b&#34;" not in page.html
    assert demo.edit(cid, op="remove_key", path='["metadata","annotations","a"]').status_code == 200


def test_configmap_data_cannot_grow_past_a_mebibyte_through_yaml(demo: PageHandle) -> None:
    cid = demo.component_ids[0]
    before = source(demo.html, cid)
    big = "y" * MAX_DATA_BYTES
    response = post_yaml(demo, cid, before, before.replace("greeting: hello", f"greeting: hello\n  big: {big}"))
    assert response.status_code == 422
    problems = problems_of(response, cid)
    assert "Line 10:" in problems and "The data of a ConfigMap would take" in problems, problems[:300]
    unchanged(demo, editor_url(CONFIGMAPS, "demo"))


def test_add_key_inside_a_list_item_answers_its_fresh_row(client: FlaskClient, upstream: Upstream) -> None:
    deployment = copy.deepcopy(DEPLOYMENT)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "1"}}
    upstream.snapshot(DEPLOYMENTS, deployment)
    page = open_page(client, editor_url(DEPLOYMENTS, "web"))
    cid = page.component_ids[0]
    limits = ["spec", "template", "spec", "containers", {"name": "web"}, "resources", "limits"]
    response = page.edit(cid, op="add_key", path=json.dumps(limits), key="memory", value="1Gi")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert f'hx-target="#{field_id(cid, limits)}-add"' in response.get_data(as_text=True)
    after = open_page(client, editor_url(DEPLOYMENTS, "web"))
    assert load_yaml(source(after.html, cid)).value["spec"]["template"]["spec"]["containers"][0]["resources"][
        "limits"
    ] == {"cpu": "1", "memory": "1Gi"}


def test_a_draft_that_cannot_render_says_so_and_offers_discard(
    demo: PageHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid = demo.component_ids[0]
    assert demo.edit(cid, op="set", path='["data","greeting"]', value="bye", **{"from": "hello"}).status_code == 200

    def broken(*args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        raise ValueError("cannot render")

    monkeypatch.setattr("flask_krm.ui.render.build_editor", broken)
    page = open_page(demo.client, editor_url(CONFIGMAPS, "demo"))
    assert "Your unsaved changes to this object cannot be shown or saved." in page.html
    assert 'class="krm-unrenderable"' in page.html and "Discard changes" in page.html
    discarded = demo.client.post(f"/krm/ui/components/{cid}/actions/discard", headers=page.headers)
    assert discarded.status_code == 200
    monkeypatch.undo()
    assert NO_CHANGES in open_page(demo.client, editor_url(CONFIGMAPS, "demo")).html


def test_an_object_too_large_for_a_form_is_edited_on_its_yaml_tab(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("big", {f"k{i}": "v" for i in range(MAX_FORM_VALUES)}))
    page = open_page(client, editor_url(CONFIGMAPS, "big"))
    cid = page.component_ids[0]
    assert f"more than {MAX_FORM_VALUES} values under this editor" in page.html
    assert 'class="krm-field ' not in page.html and 'class="krm-field"' not in page.html
    before = source(page.html, cid)
    response = post_yaml(page, cid, before, before.replace("k7: v", "k7: changed"))
    assert response.status_code == 200
    assert (
        load_yaml(source(open_page(client, editor_url(CONFIGMAPS, "big")).html, cid)).value["data"]["k7"] == "changed"
    )
