"""Field edits: values read back with their widget, refusals with precise statuses and messages."""

from __future__ import annotations

import json
import re
import typing as t
from urllib.parse import quote

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.ui.conftest import (
    CONFIGMAPS,
    DEPLOYMENTS,
    SECRETS,
    PageHandle,
    Upstream,
    configmap,
    field_id,
    input_value,
    open_page,
)
from tests.ui.test_rendering import DEPLOYMENT, SECRET, SECRET_VALUES, editor_url


def path(*segments: t.Any) -> str:
    return json.dumps(list(segments))


@pytest.fixture
def page(client: FlaskClient, upstream: Upstream) -> PageHandle:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1", "b": "2"}, labels={"tier": "db"}))
    return open_page(client, editor_url())


@pytest.fixture
def deployment(client: FlaskClient, upstream: Upstream) -> PageHandle:
    upstream.snapshot(DEPLOYMENTS, DEPLOYMENT)
    return open_page(client, editor_url(DEPLOYMENTS, "web"))


def reload(page: PageHandle, url: str = editor_url()) -> PageHandle:
    return open_page(page.client, url)


def error_partial(response: t.Any) -> tuple[str, str]:
    match = re.fullmatch(
        r'<hx-partial hx-target="#([^"]+)">(.*?)</hx-partial>.*', response.get_data(as_text=True), re.S
    )
    assert match, response.get_data(as_text=True)
    return match.group(1), match.group(2)


def test_a_text_edit_changes_the_draft_and_clears_the_field_error(page: PageHandle) -> None:
    cid = page.component_ids[0]
    response = page.edit(cid, op="set", path=path("data", "a"), value="typed")
    assert response.status_code == 200
    assert error_partial(response) == (field_id(cid, ("data", "a"), "-error"), "")
    again = reload(page)
    assert input_value(again.html, field_id(cid, ("data", "a"))) == "typed"
    assert re.search(
        rf'id="{field_id(cid, ("data", "a"))}-field" data-krm-path="/data/a">.*?krm-dirty-marker', again.html, re.S
    )


def test_text_area_line_breaks_are_stored_as_sent_by_the_object(page: PageHandle) -> None:
    cid = page.component_ids[0]
    assert page.edit(cid, op="set", path=path("data", "a"), value="one\r\ntwo").status_code == 200
    assert input_value(reload(page).html, field_id(cid, ("data", "a"))) == "one\ntwo"


def test_numbers_booleans_and_arrays_keep_their_types(deployment: PageHandle) -> None:
    cid = deployment.component_ids[0]
    url = editor_url(DEPLOYMENTS, "web")
    assert deployment.edit(cid, op="set", path=path("spec", "replicas"), value=" 7 ").status_code == 200
    assert deployment.edit(cid, op="set", path=path("spec", "paused"), value="true").status_code == 200
    containers = ("spec", "template", "spec", "containers")
    started = json.dumps([{"name": "web", "image": "nginx"}], indent=2)
    typed = started.replace('"nginx"', '"nginx:1.28"')
    response = deployment.edit(cid, op="set", path=path(*containers), value=typed, **{"from": started})
    assert response.status_code == 200
    page = reload(deployment, url)
    assert input_value(page.html, field_id(cid, ("spec", "replicas"))) == "7"
    assert re.search(rf'<input type="checkbox"[^>]*id="{field_id(cid, ("spec", "paused"))}"[^>]* checked', page.html)
    assert input_value(page.html, field_id(cid, (*containers, {"name": "web"}, "image"))) == "nginx:1.28"
    assert deployment.edit(cid, op="set", path=path("spec", "paused")).status_code == 200
    assert not re.search(r'type="checkbox"[^>]* checked', reload(deployment, url).html)
    assert deployment.edit(cid, op="set", path=path("spec", "replicas"), value="2.5").status_code == 200
    assert input_value(reload(deployment, url).html, field_id(cid, ("spec", "replicas"))) == "2.5"


@pytest.mark.parametrize(
    ("target", "value", "message"),
    [
        (("spec", "replicas"), "many", "Enter a number."),
        (("spec", "replicas"), "inf", "Enter a finite number."),
        (
            ("spec", "template", "spec", "containers"),
            "[{",
            "Not valid JSON: Expecting property name enclosed in double quotes (line 1, column 3).",
        ),
        (
            ("spec", "template", "spec", "containers"),
            '{"a": 1}',
            "Enter a JSON array, such as [&#34;a&#34;, &#34;b&#34;].",
        ),
        (
            ("spec", "template", "spec", "containers"),
            '[{"name": NaN}]',
            "Enter finite numbers: JSON has no NaN or Infinity.",
        ),
        (("spec", "template", "spec", "containers"), "[1e999]", "Enter finite numbers: JSON has no NaN or Infinity."),
        (
            ("spec", "template", "spec", "containers"),
            "[-Infinity]",
            "Enter finite numbers: JSON has no NaN or Infinity.",
        ),
    ],
)
def test_values_the_widget_cannot_read_are_refused_at_the_field(
    deployment: PageHandle, target: tuple[str, ...], value: str, message: str
) -> None:
    cid = deployment.component_ids[0]
    response = deployment.edit(cid, op="set", path=path(*target), value=value)
    assert response.status_code == 422
    assert error_partial(response) == (field_id(cid, target, "-error"), message)
    assert (
        input_value(reload(deployment, editor_url(DEPLOYMENTS, "web")).html, field_id(cid, ("spec", "replicas"))) == "2"
    )


def test_keys_are_added_renamed_and_removed(page: PageHandle) -> None:
    cid = page.component_ids[0]
    added = page.edit(cid, op="add_key", path=path("data"), key="c", value="3")
    assert added.status_code == 200
    body = added.get_data(as_text=True)
    assert f'<hx-partial hx-target="#{field_id(cid, ("data",))}-add" hx-swap="outerHTML">' in body
    assert (
        'name="key" spellcheck' in body and "value=" not in body.split('hx-swap="outerHTML">', 1)[1].split("<button")[0]
    )
    assert page.edit(cid, op="rename_key", path=path("data"), key="a", new_key="alpha").status_code == 200
    assert page.edit(cid, op="remove_key", path=path("data", "b")).status_code == 200
    html = reload(page).html
    assert input_value(html, field_id(cid, ("data", "alpha"))) == "1"
    assert input_value(html, field_id(cid, ("data", "c"))) == "3"
    assert input_value(html, field_id(cid, ("data", "a"))) is None
    assert input_value(html, field_id(cid, ("data", "b"))) is None


def test_key_collisions_and_empty_keys_are_refused(page: PageHandle) -> None:
    cid = page.component_ids[0]
    exists = page.edit(cid, op="add_key", path=path("data"), key="a", value="x")
    assert exists.status_code == 422
    assert error_partial(exists) == (field_id(cid, ("data",), "-error"), "A key named a already exists.")
    rename = page.edit(cid, op="rename_key", path=path("data"), key="a", new_key="b")
    assert rename.status_code == 422 and "A key named b already exists." in rename.get_data(as_text=True)
    empty = page.edit(cid, op="rename_key", path=path("data"), key="a", new_key="")
    assert empty.status_code == 422
    assert error_partial(empty) == (field_id(cid, ("data", "a"), "-error"), "A key cannot be empty.")
    gone = page.edit(cid, op="rename_key", path=path("data"), key="zzz", new_key="y")
    assert gone.status_code == 409 and "That key no longer exists." in gone.get_data(as_text=True)


def test_read_only_paths_are_refused_with_a_message(deployment: PageHandle) -> None:
    cid = deployment.component_ids[0]
    for target in (("status", "readyReplicas"), ("metadata", "name"), ("kind",)):
        response = deployment.edit(cid, op="set", path=path(*target), value="5")
        assert response.status_code == 403, target
        assert error_partial(response) == (field_id(cid, target, "-error"), "This field is read-only.")


def test_a_narrowed_policy_is_enforced_on_edits(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}, labels={"tier": "db"}))
    page = open_page(client, editor_url(policy="read-only"))
    cid = page.component_ids[0]
    for form in (
        {"op": "set", "path": path("data", "a"), "value": "x"},
        {"op": "add_key", "path": path("metadata", "labels"), "key": "k"},
    ):
        response = page.edit(cid, **form)
        assert response.status_code == 403
        assert "This field is read-only." in response.get_data(as_text=True)
    assert input_value(reload(page, editor_url(policy="read-only")).html, field_id(cid, ("data", "a"))) is None


SHOWN: t.Final = ["/metadata/labels", "/spec/replicas", "/spec/template/spec/containers"]


def test_an_editor_given_fields_may_edit_exactly_those(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(DEPLOYMENTS, DEPLOYMENT)
    url = editor_url(DEPLOYMENTS, "web", field=SHOWN)
    page = open_page(client, url)
    cid = page.component_ids[0]
    for form in (
        {"op": "set", "path": path("spec", "template", "spec", "serviceAccountName"), "value": "root"},
        {"op": "add_key", "path": path("spec", "template", "spec"), "key": "serviceAccountName", "value": "root"},
        {"op": "set", "path": path("spec", "paused"), "value": "true"},
        {"op": "add_key", "path": path("metadata", "annotations"), "key": "k", "value": "v"},
        {"op": "rename_key", "path": path("spec"), "key": "paused", "new_key": "replicas2"},
        {"op": "remove_key", "path": path("spec", "paused")},
        {"op": "revert", "path": path("spec")},
        {"op": "keep_mine", "path": path("spec", "template")},
    ):
        response = page.edit(cid, **form)
        assert response.status_code == 403, form
        assert "This field is read-only." in response.get_data(as_text=True)
    assert page.edit(cid, op="set", path=path("spec", "replicas"), value="3").status_code == 200
    image = path("spec", "template", "spec", "containers", {"name": "web"}, "image")
    assert page.edit(cid, op="set", path=image, value="nginx:2", **{"from": "nginx"}).status_code == 200
    assert page.edit(cid, op="add_key", path=path("metadata", "labels"), key="tier", value="web").status_code == 200
    again = reload(page, url)
    assert input_value(again.html, field_id(cid, ("spec", "replicas"))) == "3"
    assert "serviceAccountName" not in again.html and "root" not in again.html


def test_a_broader_policy_must_be_asked_for(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(DEPLOYMENTS, DEPLOYMENT)
    page = open_page(client, editor_url(DEPLOYMENTS, "web", field=SHOWN, policy="default"))
    cid = page.component_ids[0]
    forged = {"op": "add_key", "path": path("spec", "template", "spec"), "key": "serviceAccountName", "value": "root"}
    assert page.edit(cid, **forged).status_code == 200
    narrow = open_page(client, editor_url(DEPLOYMENTS, "web", field=SHOWN))
    assert narrow.component_ids[0] != cid, "a different policy is a different editor (and store)"


def test_redacted_secret_keys_cannot_be_edited(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(SECRETS, SECRET)
    page = open_page(client, editor_url(SECRETS, "creds"))
    cid = page.component_ids[0]
    for form in (
        {"op": "set", "path": path("data", "token"), "value": "x"},
        {"op": "remove_key", "path": path("data", "token")},
        {"op": "set", "path": path("data"), "value": "{}"},
    ):
        response = page.edit(cid, **form)
        assert response.status_code in (400, 403), form
        for value in SECRET_VALUES:
            assert value not in response.get_data(as_text=True)


def test_conflicts_are_resolved_by_keep_mine_and_take_theirs(page: PageHandle, upstream: Upstream) -> None:
    cid = page.component_ids[0]
    page.edit(cid, op="set", path=path("data", "a"), value="mine-a")
    page.edit(cid, op="set", path=path("data", "b"), value="mine-b")
    upstream.modified(configmap("demo", {"a": "theirs-a", "b": "theirs-b"}, labels={"tier": "db"}, rv="2"))
    html = reload(page).html
    assert html.count('class="krm-conflict"') == 2
    assert "2 fields were changed by someone else" in html
    assert '<pre class="krm-theirs">theirs-a</pre>' in html
    assert page.edit(cid, op="keep_mine", path=path("data", "a")).status_code == 200
    assert page.edit(cid, op="take_theirs", path=path("data", "b")).status_code == 200
    html = reload(page).html
    assert 'class="krm-conflict"' not in html
    assert input_value(html, field_id(cid, ("data", "a"))) == "mine-a"
    assert input_value(html, field_id(cid, ("data", "b"))) == "theirs-b"
    assert page.edit(cid, op="revert", path=path("data", "a")).status_code == 200
    assert input_value(reload(page).html, field_id(cid, ("data", "a"))) == "theirs-a"


@pytest.mark.parametrize(
    "form",
    [
        {},
        {"op": "explode", "path": path("data", "a")},
        {"op": "set", "path": "data.a", "value": "x"},
        {"op": "set", "path": '"data"', "value": "x"},
        {"op": "set", "path": "[1.5]", "value": "x"},
        {"op": "set", "path": path("data", "a")},
        {"op": "set", "value": "x"},
        {"op": "set", "path": path("data"), "value": "x"},
    ],
)
def test_malformed_edits_are_bad_requests(page: PageHandle, form: dict[str, str]) -> None:
    response = page.edit(page.component_ids[0], **form)
    assert response.status_code == 400
    assert input_value(reload(page).html, field_id(page.component_ids[0], ("data", "a"))) == "1"


def test_unknown_components_and_pages_are_not_found(page: PageHandle) -> None:
    cid = page.component_ids[0]
    unknown = page.edit("krm-000000000000", op="set", path=path("data", "a"), value="x")
    assert unknown.status_code == 404
    assert "This view is not part of the page" in unknown.get_data(as_text=True)
    for page_id in ("no-such-page", ""):
        headers = {**page.headers, "X-KRM-Page": page_id}
        response = page.edit(cid, headers=headers, op="set", path=path("data", "a"), value="x")
        assert response.status_code == 404
        assert "This page has expired" in response.get_data(as_text=True)
    assert page.client.post(f"/krm/ui/components/{quote('<x>')}/edit", headers=page.headers).status_code == 404


def test_edits_without_the_csrf_token_are_refused(page: PageHandle) -> None:
    cid = page.component_ids[0]
    missing = page.edit(
        cid, headers={"X-KRM-Page": page.headers["X-KRM-Page"]}, op="set", path=path("data", "a"), value="x"
    )
    assert missing.status_code == 400
    wrong = page.edit(
        cid, headers={**page.headers, "X-KRM-CSRF": "forged"}, op="set", path=path("data", "a"), value="x"
    )
    assert wrong.status_code == 400
    assert input_value(reload(page).html, field_id(cid, ("data", "a"))) == "1"


def test_another_session_cannot_edit_through_a_page_it_does_not_own(app: Flask, page: PageHandle) -> None:
    other = app.test_client()
    other.get("/login/editor")
    own = open_page(other, editor_url())
    cid = page.component_ids[0]
    stolen = {**own.headers, "X-KRM-Page": page.headers["X-KRM-Page"]}
    response = own.edit(cid, headers=stolen, op="set", path=path("data", "a"), value="hijack")
    assert response.status_code == 404
    assert input_value(reload(page).html, field_id(cid, ("data", "a"))) == "1"
    assert input_value(reload(own).html, field_id(cid, ("data", "a"))) == "1"


def test_signed_out_edits_are_refused(app: Flask, page: PageHandle) -> None:
    page.client.get("/logout")
    response = page.edit(page.component_ids[0], op="set", path=path("data", "a"), value="x")
    assert response.status_code == 401
    assert "signed out" in response.get_data(as_text=True)
