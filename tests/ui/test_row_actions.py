"""List rows: each carries its object's uid, and a list's row actions put a button on every row."""

from __future__ import annotations

import html
import json
import re

import pytest
from flask import Flask, render_template_string, request

from flask_krm.htmx import PAGE_HEADER
from flask_krm.runtime import runtime
from flask_krm.ui.binding import Refusal, bind
from tests.ui.conftest import CONFIGMAPS, PageHandle, Upstream, configmap, connect, open_page

ROWS_PAGE = '{% import "krm/_macros.html" as krm %}<html><body>{{ krm.list(scope, row_actions=actions) }}</body></html>'


def serve_rows(app: Flask, actions: object) -> None:
    """Add a page showing a list with ``actions``, and an ``archive`` endpoint that names the row's object."""

    @app.get("/rows")
    def rows() -> str:
        return render_template_string(ROWS_PAGE, scope=CONFIGMAPS, actions=actions)

    @app.post("/archive/<component_id>")
    def archive(component_id: str) -> tuple[str, int]:
        try:
            binding = bind(runtime(), request.headers.get(PAGE_HEADER), component_id)
        except Refusal as refusal:
            return refusal.message, refusal.status
        server = binding.store.server(request.form["uid"])
        return (f"archive {server['metadata']['name']}", 200) if server else ("no such row", 404)


def signed_in_page(app: Flask, url: str = "/rows") -> PageHandle:
    client = app.test_client()
    client.get("/login/editor")
    return open_page(client, url)


def buttons(page_html: str) -> list[dict[str, str]]:
    """Every row action button: its attributes, unescaped."""
    found = []
    for tag in re.findall(r"<button\b[^>]*>", page_html):
        pairs = re.findall(r"""([\w:-]+)=(?:"([^"]*)"|'([^']*)')""", tag)
        attrs = {name: html.unescape(double or single) for name, double, single in pairs}
        if "krm-row-action" in attrs.get("class", ""):
            found.append(attrs)
    return found


def test_every_row_carries_its_uid_and_no_buttons_by_default(app: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("alpha", {}), configmap("beta", {}))
    page = signed_in_page(app, "/configmaps")
    assert re.findall(r'<tr id="krm-[0-9a-f]{12}-r[0-9a-f]{12}" data-krm-uid="([^"]+)">', page.html) == [
        "uid-alpha",
        "uid-beta",
    ]
    assert buttons(page.html) == [] and "Actions" not in page.html


def test_row_actions_put_a_button_posting_the_rows_uid_on_every_row(app: Flask, upstream: Upstream) -> None:
    serve_rows(app, [("Archive", "archive")])
    upstream.snapshot(CONFIGMAPS, configmap("alpha", {}), configmap("beta", {}))
    page = signed_in_page(app)
    (cid,) = page.component_ids
    assert '<th scope="col"><span class="krm-vh">Actions</span></th>' in page.html
    found = buttons(page.html)
    assert [(b["aria-label"], json.loads(b["hx-vals"]), b["hx-post"]) for b in found] == [
        ("Archive alpha", {"uid": "uid-alpha"}, f"/archive/{cid}"),
        ("Archive beta", {"uid": "uid-beta"}, f"/archive/{cid}"),
    ]
    assert all("krm-row-action-archive" in b["class"].split() for b in found)
    answer = page.client.post(found[1]["hx-post"], data=json.loads(found[1]["hx-vals"]), headers=page.headers)
    assert (answer.status_code, answer.get_data(as_text=True)) == (200, "archive beta")


def test_rows_arriving_live_get_their_buttons(app: Flask, upstream: Upstream) -> None:
    serve_rows(app, {"Archive": "archive"})
    upstream.snapshot(CONFIGMAPS, configmap("alpha", {}))
    page = signed_in_page(app)
    reader = connect(page)
    upstream.snapshot(CONFIGMAPS, configmap("alpha", {}), configmap("gamma", {}))
    message = reader.next()
    assert 'data-krm-uid="uid-gamma"' in message.data
    assert [b["aria-label"] for b in buttons(message.data)] == ["Archive gamma"], "only the new row is sent"
    reader.close()


def test_a_row_action_naming_no_endpoint_is_refused_when_the_page_renders(app: Flask, upstream: Upstream) -> None:
    serve_rows(app, [("Archive", "nowhere")])
    upstream.snapshot(CONFIGMAPS, configmap("alpha", {}))
    client = app.test_client()
    client.get("/login/editor")
    with pytest.raises(ValueError, match="no endpoint 'nowhere'"):
        client.get("/rows")
