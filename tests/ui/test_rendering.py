"""Pages with live components: first paint, widgets, escaping, masks, conflicts, read-only fields."""

from __future__ import annotations

import html
import re
import typing as t
from pathlib import Path
from urllib.parse import quote, urlencode

from flask import Flask
from flask.testing import FlaskClient

from tests.ui.conftest import (
    CONFIGMAPS,
    DEPLOYMENTS,
    SECRETS,
    Upstream,
    configmap,
    connect,
    open_page,
)

XSS_SCRIPT: t.Final = "<script>window.pwned=1</script>"
XSS_ATTR: t.Final = '"><img src=x onerror="window.pwned=1">'

SECRET: t.Final[dict[str, t.Any]] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "creds", "namespace": "app", "uid": "uid-creds", "resourceVersion": "4"},
    "type": "Opaque",
    "data": {"token": "czNjcjN0LXRva2Vu", "password": "aHVudGVyMg=="},
    "stringData": {"note": "plain-s3cr3t-note"},
}
SECRET_VALUES: t.Final = ("czNjcjN0LXRva2Vu", "aHVudGVyMg==", "plain-s3cr3t-note", "s3cr3t-token", "hunter2")

DEPLOYMENT: t.Final[dict[str, t.Any]] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "app", "uid": "uid-web", "resourceVersion": "9", "labels": {"app": "web"}},
    "spec": {"replicas": 2, "paused": False, "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    "status": {"readyReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]},
}


def editor_url(scope: str = CONFIGMAPS, name: str = "demo", **extra: str | list[str]) -> str:
    query = f"/edit?scope={quote(scope)}&name={name}"
    for key, value in extra.items():
        for item in value if isinstance(value, list) else [value]:
            query += f"&{key}={quote(item)}"
    return query


def inputs(page_html: str) -> list[str]:
    return re.findall(r"<(?:input|textarea)\b[^>]*>", page_html)


def test_list_columns_follow_the_pointers(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("alpha", {"color": "blue"}, labels={"tier": "db"}))
    page = open_page(client, "/configmaps?column=/metadata/name&column=/data/color&column=/metadata/labels")
    assert re.findall(r'<th scope="col">\s*<a class="krm-sort" href="[^"]*">([^<]*)</a></th>', page.html) == [
        "Name",
        "Color",
        "Labels",
    ]
    assert "<td>blue</td>" in page.html
    assert '<td><ul class="krm-chips"><li class="krm-chip">tier=db</li></ul></td>' in page.html


def test_every_value_type_gets_its_widget(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(DEPLOYMENTS, DEPLOYMENT)
    page = open_page(client, editor_url(DEPLOYMENTS, "web"))
    assert re.search(r'<input type="number"[^>]*name="value" value="2"', page.html)
    assert re.search(r'<input type="checkbox"[^>]*name="value" value="true"(?! checked)', page.html)
    # containers are a keyed list: one fieldset per container, named in its legend
    assert re.search(
        r'<fieldset class="krm-group krm-item"[^>]*>\s*<legend><span class="krm-item-name">web<', page.html
    )
    assert re.search(r'<input type="text" class="krm-input"[^>]*name="value" value="nginx"', page.html)
    assert 'hx-trigger="input delay:400ms, krm-flush" hx-sync="this:queue last"' in page.html


def test_status_is_shown_but_never_editable(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(DEPLOYMENTS, DEPLOYMENT)
    page = open_page(client, editor_url(DEPLOYMENTS, "web"))
    assert re.search(r'<output class="krm-readonly" id="[^"]+">1</output>', page.html)
    assert "Available" in page.html
    assert not [tag for tag in inputs(page.html) if "status" in tag]
    assert not re.search(r'hx-vals=\'[^\']*\\"status\\"', page.html)


def test_values_are_escaped_everywhere(client: FlaskClient, upstream: Upstream) -> None:
    hostile = configmap(
        "demo",
        {"script": XSS_SCRIPT, "attr": XSS_ATTR, XSS_ATTR: "key is hostile", "multi": f"line\n{XSS_SCRIPT}"},
        labels={"app": XSS_ATTR},
        annotations={"note": XSS_SCRIPT},
    )
    upstream.snapshot(CONFIGMAPS, hostile)
    page = open_page(client, editor_url())
    for raw in (XSS_SCRIPT, XSS_ATTR, "<img"):
        assert raw not in page.html
    assert html.escape(XSS_SCRIPT) in page.html
    assert 'value="&#34;&gt;&lt;img src=x onerror=&#34;window.pwned=1&#34;&gt;"' in page.html
    list_page = open_page(client, "/configmaps?column=/data/script")
    assert XSS_SCRIPT not in list_page.html and html.escape(XSS_SCRIPT) in list_page.html


def test_secret_values_appear_nowhere_only_masks_with_revisions(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(SECRETS, SECRET)
    page = open_page(client, editor_url(SECRETS, "creds"))
    for value in SECRET_VALUES:
        assert value not in page.html
    masks = re.findall(
        r'<label class="krm-key" for="[^"]+">(\w+)</label>\s*<span class="krm-masked" id="[^"]+">hidden value',
        page.html,
    )
    assert sorted(masks) == ["note", "password", "token"]
    assert "(revision 1)" in page.html
    mask_ids = re.findall(r'<span class="krm-masked" id="([^"]+)"', page.html)
    for mask_id in mask_ids:
        assert not re.search(rf'<(?:input|textarea)[^>]*id="{mask_id}"', page.html)
    reader = connect(page)
    rotated = {
        **SECRET,
        "metadata": {**SECRET["metadata"], "resourceVersion": "5"},
        "data": {"token": "bmV3LXRva2Vu", "password": "aHVudGVyMg=="},
    }
    upstream.modified(rotated)
    message = reader.next()
    reader.close()
    for value in (*SECRET_VALUES, "bmV3LXRva2Vu"):
        assert value not in message.data
    assert "(revision 2)" in message.data


def test_binary_data_is_its_size_only(client: FlaskClient, upstream: Upstream) -> None:
    cm = configmap("demo", {})
    cm["binaryData"] = {"blob": "AAECAwQFBgc="}
    upstream.snapshot(CONFIGMAPS, cm)
    page = open_page(client, editor_url())
    assert ">8 bytes</output>" in page.html
    assert "AAECAwQFBgc=" not in page.html


def test_fields_selects_and_policy_narrows(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}, labels={"tier": "db"}))
    page = open_page(client, editor_url(field=["/metadata/labels", "/data"], policy="read-only"))
    assert page.html.index("Labels</legend>") < page.html.index("Data</legend>")
    assert not inputs(page.html)
    assert '<output class="krm-readonly" id=' in page.html
    editable = open_page(client, editor_url(field=["/data"]))
    assert "Labels</legend>" not in editable.html
    assert re.search(r'<input type="text"[^>]*name="value" value="1"', editable.html)


def test_a_missing_object_says_so(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("other", {}))
    page = open_page(client, editor_url(name="absent"))
    assert "configmaps “absent” does not exist in namespace app." in page.html


def test_connection_state_and_writes_start_disabled(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    assert re.search(r'<fieldset class="krm-writes" id="[^"]+" disabled>', page.html)
    assert re.search(r'<p class="krm-connection" id="[^"]+">Connecting…</p>', page.html), "shown, not announced"
    assert page.html.count('<p id="krm-page-status" class="krm-vh" role="status" aria-live="polite"></p>') == 1
    assert 'hx-sse:close="krm-close"' in page.html
    assert set(page.headers) == {"X-KRM-CSRF", "X-KRM-Page"}
    assert 'aria-live="polite"' in page.html


def test_templates_are_overridden_by_path(tmp_path: Path, app: Flask, client: FlaskClient, upstream: Upstream) -> None:
    override = tmp_path / "templates" / "krm"
    override.mkdir(parents=True)
    (override / "list_row.html").write_text('<tr id="{{ row_id }}"><td>custom {{ cells[0] }}</td></tr>')
    from jinja2 import ChoiceLoader, FileSystemLoader

    app.jinja_loader = ChoiceLoader([FileSystemLoader(str(tmp_path / "templates")), app.jinja_loader])  # type: ignore[list-item]
    upstream.snapshot(CONFIGMAPS, configmap("alpha", {}))
    page = open_page(client, "/configmaps")
    assert "<td>custom alpha</td>" in page.html


def test_list_column_pointers_index_into_arrays(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(DEPLOYMENTS, DEPLOYMENT)
    query = urlencode(
        [
            ("scope", DEPLOYMENTS),
            ("column", "/metadata/name"),
            ("column", "/spec/template/spec/containers/0/image"),
            ("column", "/spec/template/spec/containers/01/image"),
            ("column", "/spec/template/spec/containers/7/image"),
        ]
    )
    page = open_page(client, f"/configmaps?{query}")
    assert re.findall(r"<td>([^<]*)</td>", page.html) == ["nginx", "", ""]


def test_every_single_value_widget_has_its_parser_entry_and_its_own_template() -> None:
    from flask_krm.ui.widgets import WIDGETS, WidgetKind

    kinds = set(t.get_args(WidgetKind))
    assert set(WIDGETS) == kinds - {"map", "group", "items", "item", "rows"}
    templates = Path(__file__).resolve().parents[2] / "flask_krm" / "templates"
    for kind, widget in WIDGETS.items():
        assert widget.kind == kind and (templates / widget.template).is_file(), kind
    editable = {kind for kind, widget in WIDGETS.items() if widget.parse is not None}
    assert editable == {"text", "multiline", "number", "boolean", "select", "structured", "yaml"}


def test_one_widget_template_is_overridden_alone(
    tmp_path: Path, app: Flask, client: FlaskClient, upstream: Upstream
) -> None:
    override = tmp_path / "templates" / "krm" / "widgets"
    override.mkdir(parents=True)
    (override / "boolean.html").write_text(
        '<select class="krm-input custom-boolean" id="{{ fid }}" name="value" {{ attrs }}>'
        "<option{% if f.checked %} selected{% endif %}>on</option></select>"
    )
    from jinja2 import ChoiceLoader, FileSystemLoader

    app.jinja_loader = ChoiceLoader([FileSystemLoader(str(tmp_path / "templates")), app.jinja_loader])  # type: ignore[list-item]
    upstream.snapshot(DEPLOYMENTS, DEPLOYMENT)
    page = open_page(client, editor_url(DEPLOYMENTS, "web"))
    assert re.search(
        r'<select class="krm-input custom-boolean" id="[^"]+" name="value" hx-post="[^"]+"'
        r' hx-trigger="change, krm-flush"',
        page.html,
    )
    assert 'type="checkbox"' not in page.html
    assert re.search(r'<input type="number"[^>]*name="value" value="2"', page.html)
    assert re.search(r'<input type="text" class="krm-input"[^>]*name="value" value="web"', page.html)
