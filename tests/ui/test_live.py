"""The ``krm.list`` and ``krm.editor`` template globals (:mod:`flask_krm.ui.live`): a page's
components, its one channel, the first paint, and what a page that cannot show a component says."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

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
