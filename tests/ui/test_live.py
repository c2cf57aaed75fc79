"""The ``krm.list`` and ``krm.editor`` template globals (:mod:`flask_krm.ui.live`): a page's
components, its one channel, the first paint, and what a page that cannot show a component says."""

from __future__ import annotations

import re
import typing as t

import pytest
from flask import Flask, render_template_string
from flask.testing import FlaskClient

from flask_krm import Scope
from tests.ui.conftest import CONFIGMAPS, Upstream, configmap, open_page
from tests.ui.test_rendering import editor_url


def test_the_first_paint_shows_the_content_the_upstream_already_has(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("alpha", {"k": "1"}), configmap("beta", {"k": "2"}))
    page = open_page(client, "/configmaps")
    assert page.channel_url is not None and page.channel_url.endswith("/channel")
    rows = re.findall(r'<th scope="row">([^<]*)</th>', page.html)
    assert rows == ["alpha", "beta"]
    assert 'data-krm-stream="live"' in page.html
    assert page.html.count("hx-sse:connect=") == 1


def test_a_page_with_two_components_opens_one_channel(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"k": "1"}))
    page = open_page(client, "/both")
    assert page.html.count("hx-sse:connect=") == 1
    assert len(set(page.component_ids)) == 2
    assert re.search(r'<div id="krm-channel".*?<section id="krm-', page.html, re.S)


@pytest.mark.parametrize("name", ["Not-A-Name", "a..b", "a" * 300, "under_score", "%3Cb%3E"])
def test_an_editor_of_a_name_no_object_can_have_is_a_404(client: FlaskClient, upstream: Upstream, name: str) -> None:
    """The host passes the URL's name as it is; the macro answers the page with a 404 that names
    no internals, and opens nothing upstream."""
    upstream.snapshot(CONFIGMAPS, configmap("demo", {}))
    response = client.get(editor_url(name=name))
    body = response.get_data(as_text=True)
    assert response.status_code == 404, body[:300]
    assert "not a valid object name" in body and "<b>" not in body and "Traceback" not in body
    assert upstream.opened == []


def test_a_denied_principal_sees_the_reason_and_no_content(app: Flask, client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"secret-ish": "do-not-show"}))
    app.config["denied"].add("editor")
    page = open_page(client, editor_url())
    assert "do-not-show" not in page.html
    assert 'data-krm-stream="terminal" data-krm-reason="You may not view this."' in page.html
    assert page.channel_url is None
    assert upstream.opened == []


def test_the_same_component_twice_on_a_page_is_refused(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    with pytest.raises(ValueError, match="shown twice on this page"):
        client.get("/twice")
    page = open_page(client, "/titled")
    assert len(set(page.component_ids)) == 2


Served: t.TypeAlias = dict[str, tuple[str, dict[str, t.Any]]]


@pytest.fixture
def served(app: Flask) -> Served:
    """Pages the tests add while the application runs: ``/custom/<key>`` renders its template."""
    pages: Served = {}

    def custom(key: str) -> str:
        template, context = pages[key]
        return render_template_string('{% import "krm/_macros.html" as krm %}' + template, **context)

    app.add_url_rule("/custom/<key>", "custom", custom)
    return pages


@pytest.fixture
def client(app: Flask, served: Served) -> FlaskClient:
    client = app.test_client()
    client.get("/login/editor")
    return client


def serve(served: Served, template: str, **context: t.Any) -> str:
    """Add a page rendering ``template`` with ``context``; returns its URL."""
    key = str(len(served))
    served[key] = (template, context)
    return f"/custom/{key}"


def test_a_scope_is_a_scope_a_query_string_or_a_mapping(
    served: Served, client: FlaskClient, upstream: Upstream
) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    parsed = Scope.from_query(CONFIGMAPS)
    mapping = {"target": "demo", "version": "v1", "resource": "configmaps", "namespace": "app"}
    ids = {
        open_page(client, serve(served, "{{ krm.list(scope) }}", scope=scope)).component_ids[0]
        for scope in (parsed, CONFIGMAPS, mapping)
    }
    assert len(ids) == 1, "the same list however its scope is given"
    with pytest.raises(ValueError, match="neither a Scope, a query string nor a mapping"):
        client.get(serve(served, "{{ krm.list(scope) }}", scope=42))


def test_an_editor_needs_an_objects_name(served: Served, client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    with pytest.raises(ValueError, match="krm.editor needs the object's name"):
        client.get(serve(served, "{{ krm.editor(scope) }}", scope=CONFIGMAPS))
    named = open_page(client, serve(served, "{{ krm.editor(scope) }}", scope=CONFIGMAPS + "&name=demo"))
    assert named.component_ids and 'value="1"' in named.html


def test_titles_default_to_what_is_shown(served: Served, client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    everywhere = CONFIGMAPS.replace("&namespace=app", "")
    upstream.snapshot(everywhere, configmap("demo", {"a": "1"}))
    template = (
        "{{ krm.list(scope) }}{{ krm.list(across) }}{{ krm.editor(scope, 'demo') }}{{ krm.list(scope, title=t) }}"
    )
    page = open_page(client, serve(served, template, scope=CONFIGMAPS, across=everywhere, t="<Mine>"))
    titles = re.findall(r'<h2 class="krm-title"[^>]*>([^<]*)</h2>', page.html)
    assert titles == ["configmaps in app", "configmaps", "demo", "&lt;Mine&gt;"], page.html[:2000]


def test_a_signed_out_page_shows_each_component_refused_and_opens_no_channel(app: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "secret-ish"}))
    page = open_page(app.test_client(), "/both")
    assert page.channel_url is None and "secret-ish" not in page.html
    assert page.html.count('data-krm-stream="terminal" data-krm-reason="You are signed out') == 2
    assert upstream.opened == []


def test_an_editor_without_the_yaml_tab_posts_no_yaml(served: Served, client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, serve(served, "{{ krm.editor(scope, 'demo', yaml=False) }}", scope=CONFIGMAPS))
    cid = page.component_ids[0]
    assert f"/krm/ui/components/{cid}/yaml" not in page.html
    with_tab = open_page(client, editor_url())
    assert f"/krm/ui/components/{with_tab.component_ids[0]}/yaml" in with_tab.html
