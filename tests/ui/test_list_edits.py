"""Arrays as structure: keyed-list items and rows edited one by one, text arrays merged by lines.

Each edit names items of keyed lists by their keys and says what the field showed when the person
began typing (``from``); the upstream changes the object meanwhile, as a colleague would.
"""

from __future__ import annotations

import copy
import json
import re
import typing as t

import pytest
from flask.testing import FlaskClient

from tests.ui.conftest import DEPLOYMENTS, PageHandle, Upstream, field_id, input_value, open_page
from tests.ui.test_rendering import editor_url

CONTAINERS: t.Final = ("spec", "template", "spec", "containers")
TOLERATIONS: t.Final = [{"key": "a", "operator": "Exists"}, {"key": "z", "operator": "Exists"}]


def deployment(version: str = "9", **web: t.Any) -> dict[str, t.Any]:
    containers = [
        {
            "name": "web",
            "image": "nginx:1",
            "args": ["--port=80", "--verbose"],
            "env": [{"name": "MODE", "value": "fast"}, {"name": "LEVEL", "value": "1"}],
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            **web,
        },
        {"name": "log", "image": "fluent:1", "volumeMounts": [{"name": "logs", "mountPath": "/var/log"}]},
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "app", "uid": "uid-web", "resourceVersion": version},
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": containers, "tolerations": copy.deepcopy(TOLERATIONS)}},
        },
    }


def path(*segments: t.Any) -> str:
    return json.dumps(list(segments))


def web(*rest: t.Any) -> tuple[t.Any, ...]:
    return (*CONTAINERS, {"name": "web"}, *rest)


@pytest.fixture
def page(client: FlaskClient, upstream: Upstream) -> PageHandle:
    upstream.snapshot(DEPLOYMENTS, deployment())
    return open_page(client, editor_url(DEPLOYMENTS, "web"))


def reload(page: PageHandle) -> PageHandle:
    return open_page(page.client, editor_url(DEPLOYMENTS, "web"))


def edit(page: PageHandle, op: str, at: t.Sequence[t.Any], **form: str) -> t.Any:
    return page.edit(page.component_ids[0], op=op, path=path(*at), **form)


def value(page: PageHandle, at: t.Sequence[t.Any]) -> str | None:
    return input_value(reload(page).html, field_id(page.component_ids[0], tuple(at)))


def test_keyed_lists_are_fieldsets_per_item_and_string_lists_are_rows(page: PageHandle) -> None:
    cid = page.component_ids[0]
    html = page.html
    assert "krm-structured" in html, "tolerations (not keyed) stay text"
    assert 'class="krm-item-name">web<' in html and 'class="krm-item-name">log<' in html
    assert 'class="krm-item-name">MODE<' in html and 'class="krm-item-name">80/TCP<' in html
    assert input_value(html, field_id(cid, web("image"))) == "nginx:1"
    assert input_value(html, field_id(cid, web("env", {"name": "LEVEL"}, "value"))) == "1"
    assert input_value(html, field_id(cid, web("args", 1))) == "--verbose"
    assert f'data-krm-path="{"/".join(["", *CONTAINERS])}/[name=web]/env/[name=MODE]"' in html
    # keys are the item's identity: shown in its legend, not as an input
    assert input_value(html, field_id(cid, web("name"))) is None
    assert re.search(r'aria-label="Add an item to env"', html)
    assert re.search(r'aria-label="Add a row to args"', html)


def test_an_item_field_edit_follows_its_item_when_items_move_meanwhile(page: PageHandle, upstream: Upstream) -> None:
    moved = deployment("10")
    moved["spec"]["template"]["spec"]["containers"].reverse()
    moved["spec"]["template"]["spec"]["containers"][1]["env"].reverse()
    upstream.modified(moved)
    response = edit(page, "set", web("env", {"name": "MODE"}, "value"), value="slow", **{"from": "fast"})
    assert response.status_code == 200, response.data
    assert value(page, web("env", {"name": "MODE"}, "value")) == "slow"
    assert value(page, web("env", {"name": "LEVEL"}, "value")) == "1"
    assert value(page, (*CONTAINERS, {"name": "log"}, "image")) == "fluent:1"


def test_a_value_changed_under_the_typing_is_a_conflict_at_that_field(page: PageHandle, upstream: Upstream) -> None:
    upstream.modified(deployment("10", image="nginx:theirs"))
    response = edit(page, "set", web("image"), value="nginx:mine", **{"from": "nginx:1"})
    assert response.status_code == 200
    html = reload(page).html
    cid = page.component_ids[0]
    fid = field_id(cid, web("image"))
    assert input_value(html, fid) == "nginx:mine"
    conflict = re.search(rf'id="{fid}-conflict".*?<pre class="krm-theirs">([^<]*)</pre>', html, re.S)
    assert conflict and conflict.group(1) == "nginx:theirs"
    # typing on from what the draft holds is no conflict
    assert edit(page, "set", web("image"), value="nginx:mine2", **{"from": "nginx:mine"}).status_code == 200
    assert edit(page, "take_theirs", web("image")).status_code == 200
    assert value(page, web("image")) == "nginx:theirs"
    assert f"{fid}-conflict" not in reload(page).html


def test_a_value_set_without_a_start_is_set(page: PageHandle, upstream: Upstream) -> None:
    upstream.modified(deployment("10", image="nginx:theirs"))
    assert edit(page, "set", web("image"), value="nginx:mine").status_code == 200
    assert f"{field_id(page.component_ids[0], web('image'))}-conflict" not in reload(page).html


def test_items_are_added_removed_and_moved(page: PageHandle) -> None:
    env = web("env")
    assert edit(page, "add_item", env, **{"item.name": "EXTRA"}).status_code == 200
    assert value(page, (*env, {"name": "EXTRA"}, "value")) == ""
    assert edit(page, "add_item", env, **{"item.name": "EXTRA"}).status_code == 422
    assert edit(page, "add_item", env, **{"item.name": " "}).status_code == 422
    assert edit(page, "move_item", (*env, {"name": "EXTRA"}), to="up").status_code == 200
    assert edit(page, "remove_item", (*env, {"name": "MODE"})).status_code == 200
    html = reload(page).html
    assert re.findall(r'class="krm-item-name">(MODE|LEVEL|EXTRA)<', html) == ["EXTRA", "LEVEL"]
    ports = web("ports")
    assert edit(page, "add_item", ports, **{"item.containerPort": "8080", "item.protocol": "UDP"}).status_code == 200
    assert edit(page, "add_item", ports, **{"item.containerPort": "http", "item.protocol": "TCP"}).status_code == 422
    assert 'class="krm-item-name">8080/UDP<' in reload(page).html
    assert edit(page, "add_item", CONTAINERS, **{"item.name": "sidecar"}).status_code == 200
    assert value(page, (*CONTAINERS, {"name": "sidecar"}, "image")) == ""


def test_rows_are_edited_added_removed_and_moved(page: PageHandle, upstream: Upstream) -> None:
    args = web("args")
    assert edit(page, "add_item", args).status_code == 200
    assert edit(page, "set", (*args, 2), value="--json", **{"from": ""}).status_code == 200
    assert edit(page, "move_item", (*args, 2), to="up", value="--json").status_code == 200
    assert edit(page, "remove_item", (*args, 0), value="--port=80").status_code == 200
    assert [value(page, (*args, i)) for i in range(2)] == ["--json", "--verbose"]
    assert edit(page, "move_item", (*args, 0), to="up", value="--json").status_code == 409
    assert edit(page, "remove_item", (*args, 0), value="--gone").status_code == 409


def test_a_row_edit_finds_its_row_after_a_row_is_inserted_above(page: PageHandle, upstream: Upstream) -> None:
    upstream.modified(deployment("10", args=["--first", "--port=80", "--verbose"]))
    response = edit(page, "set", web("args", 1), value="--verbose=2", **{"from": "--verbose"})
    assert response.status_code == 200
    assert [value(page, web("args", i)) for i in range(3)] == ["--first", "--port=80", "--verbose=2"]


def test_a_text_array_edit_is_merged_by_lines_into_the_draft(page: PageHandle, upstream: Upstream) -> None:
    tolerations = ("spec", "template", "spec", "tolerations")
    started = json.dumps(TOLERATIONS, indent=2)
    theirs = deployment("10")
    theirs["spec"]["template"]["spec"]["tolerations"][1]["key"] = "y"
    upstream.modified(theirs)
    mine = started.replace('"key": "a"', '"key": "b"')
    assert edit(page, "set", tolerations, value=mine, **{"from": started}).status_code == 200
    assert json.loads(value(page, tolerations) or "null") == [
        {"key": "b", "operator": "Exists"},
        {"key": "y", "operator": "Exists"},
    ], "my line and their line"
    # their change to a line I changed too: mine is kept and the field conflicts with the server's value
    theirs["metadata"]["resourceVersion"] = "11"
    theirs["spec"]["template"]["spec"]["tolerations"][0]["key"] = "c"
    upstream.modified(theirs)
    fid = field_id(page.component_ids[0], tolerations)
    assert f"{fid}-conflict" in reload(page).html
    assert edit(page, "keep_mine", tolerations).status_code == 200
    shown = value(page, tolerations) or ""
    edited = shown.replace('"Exists"', '"Equal"', 1)
    assert edit(page, "set", tolerations, value=edited, **{"from": shown}).status_code == 200
    assert json.loads(value(page, tolerations) or "null")[0] == {"key": "b", "operator": "Equal"}
    assert f"{fid}-conflict" not in reload(page).html


def test_text_typed_over_a_changed_line_is_kept_and_conflicts(page: PageHandle, upstream: Upstream) -> None:
    tolerations = ("spec", "template", "spec", "tolerations")
    started = json.dumps(TOLERATIONS, indent=2)
    theirs = deployment("10")
    theirs["spec"]["template"]["spec"]["tolerations"][0]["key"] = "c"
    upstream.modified(theirs)
    mine = started.replace('"key": "a"', '"key": "b"')
    assert edit(page, "set", tolerations, value=mine, **{"from": started}).status_code == 200
    html = reload(page).html
    fid = field_id(page.component_ids[0], tolerations)
    assert json.loads(input_value(html, fid) or "null")[0]["key"] == "b"
    assert f"{fid}-conflict" in html and "&#34;c&#34;" in html


def test_a_text_array_edit_without_its_start_is_refused(page: PageHandle) -> None:
    tolerations = ("spec", "template", "spec", "tolerations")
    response = edit(page, "set", tolerations, value="[]")
    assert response.status_code == 400
    assert json.loads(value(page, tolerations) or "null") == TOLERATIONS


@pytest.mark.parametrize(
    ("op", "at", "form", "status"),
    [
        ("set", web("env", {"name": "GONE"}, "value"), {"value": "x"}, 409),
        ("set", (*CONTAINERS, 0, "image"), {"value": "x"}, 400),
        ("set", (*CONTAINERS, {"image": "nginx:1"}, "image"), {"value": "x"}, 400),
        ("set", (*CONTAINERS, {"name": ["web"]}, "image"), {"value": "x"}, 400),
        ("remove_item", web("env", {"name": "GONE"}), {}, 409),
        ("remove_item", web("image"), {}, 400),
        ("move_item", web("env", {"name": "MODE"}), {"to": "sideways"}, 400),
        ("move_item", web("env", {"name": "MODE"}), {"to": "up"}, 409),
        ("add_item", ("spec", "template", "spec", "tolerations"), {"value": "x"}, 400),
        ("add_item", ("spec", "replicas"), {}, 400),
        ("move_item", ("spec", "replicas", 0), {"to": "up"}, 400),
        ("add_item", web("env"), {}, 422),
    ],
)
def test_bad_item_edits_get_a_precise_4xx_and_change_nothing(
    page: PageHandle, op: str, at: tuple[t.Any, ...], form: dict[str, str], status: int
) -> None:
    before = reload(page).html
    response = edit(page, op, at, **form)
    assert response.status_code == status, response.data
    assert "krm-dirty-marker" not in reload(page).html
    assert before.count("krm-item-name") == reload(page).html.count("krm-item-name")


def test_a_hosts_list_schema_makes_its_lists_items(client: FlaskClient, upstream: Upstream) -> None:
    keyed = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"]}
    pod = {"properties": {"spec": {"properties": {"tolerations": keyed}}}}
    schema = {"properties": {"spec": {"properties": {"template": pod}}}}
    t.cast(t.Any, client.application).config["KRM_LIST_SCHEMAS"] = {("apps/v1", "Deployment"): schema}
    upstream.snapshot(DEPLOYMENTS, deployment())
    page = open_page(client, editor_url(DEPLOYMENTS, "web"))
    assert 'class="krm-item-name">a<' in page.html and 'class="krm-item-name">z<' in page.html
    assert 'class="krm-item-name">web<' not in page.html, "the host's schema replaces the built-in one"
    operator = ("spec", "template", "spec", "tolerations", {"key": "z"}, "operator")
    assert edit(page, "set", operator, value="Equal", **{"from": "Exists"}).status_code == 200
    assert value(page, operator) == "Equal"


def test_list_schemas_are_validated(client: FlaskClient) -> None:
    from flask_krm import config

    app = client.application
    for bad in ({"apps/v1 Deployment": {}}, {("apps/v1", "Deployment"): []}, [("a", "b")]):
        app.config["KRM_LIST_SCHEMAS"] = bad
        with pytest.raises(ValueError, match="KRM_LIST_SCHEMAS"):
            config.get(app, "LIST_SCHEMAS")
