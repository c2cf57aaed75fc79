"""YAML edits (:mod:`flask_krm.ui.yaml_edits`) at the Flask level, from the tab that offers them: applied
edits, refusals by line, conflicts, secrets."""

from __future__ import annotations

import copy
import html
import json
import re
import typing as t
from pathlib import Path

import gevent
import pytest
from flask import render_template_string
from flask.testing import FlaskClient

from flask_krm.ui.yaml_edits import MAX_PROBLEMS
from flask_krm.yaml_text import MAX_ALIASED_VALUES, MAX_YAML_BYTES, PAUSE_EVERY, load_yaml
from tests.ui.conftest import (
    CONFIGMAPS,
    DEPLOYMENTS,
    SECRETS,
    PageHandle,
    Upstream,
    configmap,
    make_app,
    open_page,
)
from tests.ui.test_rendering import DEPLOYMENT, SECRET, SECRET_VALUES, editor_url


def source(page_html: str, cid: str) -> str:
    found = re.search(rf'<pre class="krm-yaml-source" id="{cid}-yaml-source" hidden>(.*?)</pre>', page_html, re.S)
    assert found, "no YAML source in the editor"
    return html.unescape(found.group(1))


def post_yaml(page: PageHandle, cid: str, before: str, after: str, headers: dict[str, str] | None = None) -> t.Any:
    return page.client.post(
        f"/krm/ui/components/{cid}/yaml",
        data={"before": before, "yaml": after},
        headers=dict(page.headers if headers is None else headers),
    )


def partials(response: t.Any) -> dict[str, str]:
    body = response.get_data(as_text=True)
    return dict(re.findall(r'<hx-partial hx-target="#([^"]+)">(.*?)</hx-partial>', body, re.S))


@pytest.fixture
def deployment(client: FlaskClient, upstream: Upstream) -> PageHandle:
    upstream.snapshot(DEPLOYMENTS, DEPLOYMENT)
    return open_page(client, editor_url(DEPLOYMENTS, "web"))


def test_every_editor_has_a_yaml_tab_with_the_projected_draft(deployment: PageHandle) -> None:
    cid = deployment.component_ids[0]
    assert 'role="tab"' in deployment.html and f'id="{cid}-yaml-text"' in deployment.html
    text = source(deployment.html, cid)
    assert load_yaml(text).value["spec"]["replicas"] == 2
    assert "managedFields" not in text
    assert "No changes: Save has nothing to send." in deployment.html


def test_the_host_can_leave_the_yaml_tab_out(tmp_path: Path, upstream: Upstream) -> None:
    app, krm = make_app(tmp_path, upstream)
    template = '{% import "krm/_macros.html" as krm %}{{ krm.editor(scope, "demo", yaml=False) }}'
    app.add_url_rule("/plain", "plain", lambda: render_template_string(template, scope=CONFIGMAPS))
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    client = app.test_client()
    client.get("/login/editor")
    try:
        page = open_page(client, "/plain")
        assert "krm-yaml" not in page.html and 'role="tab"' not in page.html
        assert 'class="krm-field' in page.html
        cid = page.component_ids[0]
        refused = post_yaml(page, cid, "a: 1\n", "a: 2\n")
        assert refused.status_code == 400
    finally:
        krm.shutdown(app)


def test_a_yaml_edit_applies_the_difference_and_answers_the_new_text(
    deployment: PageHandle, upstream: Upstream
) -> None:
    cid = deployment.component_ids[0]
    before = source(deployment.html, cid)
    after = before.replace("replicas: 2", "replicas: 5").replace("image: nginx", "image: nginx:2")
    moved = copy.deepcopy(DEPLOYMENT)
    moved["metadata"]["resourceVersion"] = "10"
    moved["spec"]["paused"] = True  # a change the person's text does not have
    moved["status"]["readyReplicas"] = 2
    upstream.modified(moved)
    response = post_yaml(deployment, cid, before, after)
    assert response.status_code == 200
    answered = partials(response)
    assert answered[f"{cid}-yaml-message"] == "Applied 2 changes to your draft."
    assert answered[f"{cid}-yaml-problems"].strip() == ""
    fresh = html.unescape(re.search(r"data-krm-yaml-fresh>(.*?)</pre>", answered[f"{cid}-yaml-fresh"], re.S).group(1))
    draft = load_yaml(fresh).value
    assert draft["spec"]["replicas"] == 5 and draft["spec"]["paused"] is True
    assert draft["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    page = open_page(deployment.client, editor_url(DEPLOYMENTS, "web"))
    changes = html.unescape(re.search(r'id="[^"]+-changes-yaml">(.*?)</pre>', page.html, re.S).group(1))
    assert load_yaml(changes).value == {
        "spec": {"replicas": 5, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}
    }


def test_a_same_field_change_is_a_conflict_listed_by_line(deployment: PageHandle, upstream: Upstream) -> None:
    cid = deployment.component_ids[0]
    before = source(deployment.html, cid)
    moved = copy.deepcopy(DEPLOYMENT)
    moved["metadata"]["resourceVersion"] = "10"
    moved["spec"]["replicas"] = 7
    upstream.modified(moved)
    response = post_yaml(deployment, cid, before, before.replace("replicas: 2", "replicas: 5"))
    assert response.status_code == 200
    assert "1 was also changed by someone else meanwhile" in partials(response)[f"{cid}-yaml-message"]
    page = open_page(deployment.client, editor_url(DEPLOYMENTS, "web"))
    line = source(page.html, cid).splitlines().index("  replicas: 5") + 1
    conflict = re.search(r'<li class="krm-yaml-conflict".*?</li>', page.html, re.S)
    assert conflict
    assert f'data-krm-yaml-line="{line}">Line {line}</button>' in conflict.group(0)
    assert "/spec/replicas" in conflict.group(0) and '<pre class="krm-theirs">7</pre>' in conflict.group(0)
    assert "Keep mine" in conflict.group(0) and "Take theirs" in conflict.group(0)
    assert "changed by someone else" in page.html.split(f'id="{cid}-yaml-source"')[0]  # the form shows it too


@pytest.mark.parametrize(
    ("edit", "status", "where", "message"),
    [
        (
            lambda t: t.replace("readyReplicas: 1", "readyReplicas: 3"),
            403,
            "Line 17:",
            "/status/readyReplicas is read-only",
        ),
        (
            lambda t: t.replace("name: web\n  namespace", "name: other\n  namespace"),
            403,
            "Line 4:",
            "/metadata/name is read-only",
        ),
        (
            lambda t: t.replace("replicas: 2", "replicas: [2"),
            422,
            "Line 10, column 9:",
            "Did not find expected ',' or ']'",
        ),
        (lambda t: t.replace("paused: false", "paused:"), 422, "Line 10:", "An empty value (null) cannot be stored"),
        (lambda t: "", 422, "", "The YAML is empty"),
        (lambda t: t + "x: " + "y" * MAX_YAML_BYTES, 422, "", f"at most {MAX_YAML_BYTES} bytes"),
    ],
)
def test_refused_yaml_names_the_line_and_changes_nothing(
    deployment: PageHandle, edit: t.Callable[[str], str], status: int, where: str, message: str
) -> None:
    cid = deployment.component_ids[0]
    before = source(deployment.html, cid)
    after = edit(before.replace("replicas: 2", "replicas: 2").replace("image: nginx", "image: changed"))
    response = post_yaml(deployment, cid, before, after)
    assert response.status_code == status, response.get_data(as_text=True)
    answered = partials(response)
    assert answered[f"{cid}-yaml-message"].startswith("Nothing was applied")
    problems = html.unescape(answered[f"{cid}-yaml-problems"])
    assert message in problems and where in problems, problems
    page = open_page(deployment.client, editor_url(DEPLOYMENTS, "web"))
    assert "No changes: Save has nothing to send." in page.html


def test_other_requests_run_while_a_yaml_bomb_is_composed(deployment: PageHandle) -> None:
    cid = deployment.component_ids[0]
    before = source(deployment.html, cid)
    items = 6 * PAUSE_EVERY  # composed before 63 aliases of them are refused
    bomb = before + "bomb: &a [" + ",".join(["item"] * items) + "]\nbombs: [" + ",".join(["*a"] * 63) + "]\n"
    turns = 0
    stop = False

    def other_request() -> None:
        nonlocal turns
        while not stop:
            turns += 1
            gevent.sleep(0)

    other = gevent.spawn(other_request)
    gevent.sleep(0)
    started_with = turns
    try:
        response = post_yaml(deployment, cid, before, bomb)
    finally:
        stop = True
        other.join(timeout=2)
    assert response.status_code == 422
    assert f"stand for more than {MAX_ALIASED_VALUES} values" in html.unescape(response.get_data(as_text=True))
    assert turns - started_with >= items // PAUSE_EVERY, "another greenlet ran at every pause of the composing"


def test_a_field_outside_fields_is_refused_at_its_line(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(DEPLOYMENTS, DEPLOYMENT)
    page = open_page(client, editor_url(DEPLOYMENTS, "web", field="/spec/replicas"))
    cid = page.component_ids[0]
    before = source(page.html, cid)
    assert "paused" not in before and "status" not in before, "the tab shows the editor's fields only"
    response = post_yaml(page, cid, before, before.replace("replicas: 2", "replicas: 2\n  paused: true"))
    assert response.status_code == 403
    problems = html.unescape(partials(response)[f"{cid}-yaml-problems"])
    assert "Line 8:" in problems and "/spec/paused is read-only in this editor" in problems
    assert post_yaml(page, cid, before, before.replace("replicas: 2", "replicas: 3")).status_code == 200


def test_yaml_edits_need_the_csrf_token_and_the_page(deployment: PageHandle) -> None:
    cid = deployment.component_ids[0]
    before = source(deployment.html, cid)
    after = before.replace("replicas: 2", "replicas: 5")
    no_csrf = {k: v for k, v in deployment.headers.items() if "CSRF" not in k.upper()}
    assert post_yaml(deployment, cid, before, after, headers=no_csrf).status_code in (400, 403)
    no_page = {k: v for k, v in deployment.headers.items() if k != "X-KRM-Page"}
    assert post_yaml(deployment, cid, before, after, headers=no_page).status_code == 404
    missing = deployment.client.post(f"/krm/ui/components/{cid}/yaml", data={"yaml": after}, headers=deployment.headers)
    assert missing.status_code == 400
    assert "No changes: Save has nothing to send." in open_page(deployment.client, editor_url(DEPLOYMENTS, "web")).html


def test_a_secret_shows_placeholders_and_a_placeholder_never_becomes_a_value(
    client: FlaskClient, upstream: Upstream
) -> None:
    upstream.snapshot(SECRETS, SECRET)
    page = open_page(client, editor_url(SECRETS, "creds"))
    cid = page.component_ids[0]
    before = source(page.html, cid)
    assert "password: !withheld 'not shown'" in before
    for value in SECRET_VALUES:
        assert value not in page.html
    kept = post_yaml(page, cid, before, before.replace("type: Opaque", "type: Opaque\nimmutable: false"))
    assert kept.status_code == 403  # immutable is outside the editable regions
    copied = post_yaml(page, cid, before, before.replace("\ndata:\n", "\ndata:\n  copy: !withheld 'not shown'\n"))
    assert copied.status_code == 422
    assert "placeholder of a withheld value is not a value" in html.unescape(partials(copied)[f"{cid}-yaml-problems"])
    changed = post_yaml(page, cid, before, before.replace("password: !withheld 'not shown'", "password: aGk="))
    assert changed.status_code == 422
    added = post_yaml(page, cid, before, before.replace("\ndata:\n", "\ndata:\n  extra: ZXh0cmE=\n"))
    assert added.status_code == 200
    again = open_page(client, editor_url(SECRETS, "creds"))
    changes = html.unescape(re.search(r'id="[^"]+-changes-yaml">(.*?)</pre>', again.html, re.S).group(1))
    assert load_yaml(changes).value == {"data": {"extra": "ZXh0cmE="}}
    for value in SECRET_VALUES:
        assert value not in again.html and value not in added.get_data(as_text=True)


def test_yaml_edits_field_edits_and_discard_count_in_one_edit_sequence(deployment: PageHandle) -> None:
    """The YAML tab's edits take the same path as field edits: the same ``X-KRM-Edits`` count."""
    cid = deployment.component_ids[0]
    replicas = json.dumps(["spec", "replicas"])
    field = deployment.edit(cid, op="set", path=replicas, value="3", **{"from": "2"})
    assert field.status_code == 200 and field.headers["X-KRM-Edits"] == "1"
    before = source(deployment.html, cid)
    typed = post_yaml(deployment, cid, before, before.replace("paused: false", "paused: true"))
    assert typed.status_code == 200 and typed.headers["X-KRM-Edits"] == "2"
    refused = post_yaml(deployment, cid, before, before.replace("paused: false", "paused:"))
    assert refused.status_code == 422 and "X-KRM-Edits" not in refused.headers
    discarded = deployment.client.post(f"/krm/ui/components/{cid}/actions/discard", headers=deployment.headers)
    assert discarded.status_code == 200  # an action: its outcome stays shown (no edits header)
    assert deployment.edit(cid, op="set", path=replicas, value="4", **{"from": "2"}).headers["X-KRM-Edits"] == "4"


def test_the_message_counts_what_was_applied_and_what_conflicts(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1", "b": "2", "c": "3"}))
    page = open_page(client, editor_url())
    cid = page.component_ids[0]
    before = source(page.html, cid)
    same = post_yaml(page, cid, before, before)
    assert same.status_code == 200 and partials(same)[f"{cid}-yaml-message"] == "No changes to apply."
    one = post_yaml(page, cid, before, before.replace("a: '1'", "a: x"))
    assert partials(one)[f"{cid}-yaml-message"] == "Applied 1 change to your draft."
    upstream.modified(configmap("demo", {"a": "1", "b": "theirs", "c": "theirs"}, rv="2"))
    both = post_yaml(page, cid, before, before.replace("b: '2'", "b: mine").replace("c: '3'", "c: mine"))
    assert partials(both)[f"{cid}-yaml-message"] == (
        "Applied 2 changes to your draft. 2 were also changed by someone else meanwhile: "
        "choose “Keep mine” or “Take theirs” below."
    )


def test_problems_are_listed_by_line_up_to_a_bound(client: FlaskClient, upstream: Upstream) -> None:
    status = {f"s{n:02}": n for n in range(MAX_PROBLEMS + 5)}
    upstream.snapshot(CONFIGMAPS, {**configmap("demo", {"a": "1"}), "status": status})
    page = open_page(client, editor_url())
    cid = page.component_ids[0]
    before = source(page.html, cid)
    two = post_yaml(page, cid, before, before.replace("s01: 1", "s01: 9").replace("s00: 0", "s00: 9"))
    assert two.status_code == 403
    answered = partials(two)
    assert answered[f"{cid}-yaml-message"] == "Nothing was applied: fix the 2 problems below."
    listed = re.findall(r"Line (\d+)", html.unescape(answered[f"{cid}-yaml-problems"]))
    assert len(listed) == 2 and listed == sorted(listed, key=int)
    every = before
    for n in range(MAX_PROBLEMS + 5):
        every = every.replace(f"s{n:02}: {n}\n", f"s{n:02}: 999\n")
    many = post_yaml(page, cid, before, every)
    answered = partials(many)
    assert answered[f"{cid}-yaml-message"] == (
        f"Nothing was applied: fix the {MAX_PROBLEMS + 5} problems (the first {MAX_PROBLEMS} are below)."
    )
    assert html.unescape(answered[f"{cid}-yaml-problems"]).count("is read-only") == MAX_PROBLEMS


def test_a_request_without_its_texts_or_with_an_unreadable_start_is_a_400(
    client: FlaskClient, upstream: Upstream
) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, "/both")
    listing, editor = page.component_ids
    before = "a: 1\n"
    no_yaml = page.client.post(f"/krm/ui/components/{editor}/yaml", data={"before": before}, headers=page.headers)
    assert no_yaml.status_code == 400
    assert "The request has no yaml." in partials(no_yaml)[f"{editor}-yaml-problems"]
    unreadable = post_yaml(page, editor, "a: [1\n", before)
    assert unreadable.status_code == 400
    assert "The text you started from cannot be read" in html.unescape(partials(unreadable)[f"{editor}-yaml-problems"])
    on_list = post_yaml(page, listing, before, before)
    assert on_list.status_code == 400
    answered = partials(on_list)
    assert answered[f"{listing}-yaml-message"] == "This view has no YAML tab: nothing was applied."
    assert answered[f"{listing}-yaml-problems"].strip() == ""
