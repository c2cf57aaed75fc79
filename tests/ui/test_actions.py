"""Editor actions: the seam Save plugs into (buttons, routing, refusals, outcome region)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from flask import Flask, Response
from flask.testing import FlaskClient

from flask_krm.ui import EditorContext, editor_action
from flask_krm.ui import actions as actions_module
from tests.ui.conftest import CONFIGMAPS, PageHandle, Upstream, configmap, open_page
from tests.ui.test_rendering import editor_url


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EditorContext]]:
    """A ``probe`` action registered for one test only."""
    monkeypatch.setattr(actions_module, "_ACTIONS", dict(actions_module._ACTIONS))
    seen: list[EditorContext] = []

    @editor_action("probe", label="Probe <now>")
    def probe(ctx: EditorContext) -> Response:
        seen.append(ctx)
        return ctx.outcome(f"uid {ctx.uid}, live {ctx.live}, <b>{ctx.spec.scope.name}</b>")

    yield seen


def action_url(page: PageHandle) -> str:
    match = re.search(r'id="(krm-[0-9a-f]{12})-action-probe"\s+data-krm-flush\s+hx-post="([^"]+)"', page.html)
    assert match, page.html
    return match.group(2)


def test_an_action_is_a_button_of_every_editor_and_no_list(client: FlaskClient, upstream: Upstream, calls: list[EditorContext]) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, "/both")
    list_id, editor_id = page.component_ids
    assert f'id="{editor_id}-action-probe"' in page.html
    assert f'id="{list_id}-action-probe"' not in page.html
    assert ">Probe &lt;now&gt;</button>" in page.html
    assert action_url(page) == f"/krm/ui/components/{editor_id}/actions/probe"


def test_an_action_runs_with_its_editor_and_answers_into_the_outcome_region(
    client: FlaskClient, upstream: Upstream, calls: list[EditorContext]
) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    response = client.post(action_url(page), headers=page.headers)
    assert response.status_code == 200
    cid = page.component_ids[0]
    assert response.get_data(as_text=True) == (
        f'<hx-partial hx-target="#{cid}-outcome">uid uid-demo, live True, &lt;b&gt;demo&lt;/b&gt;</hx-partial>'
    )
    (ctx,) = calls
    assert ctx.component.id == cid and ctx.principal.name == "editor"
    assert ctx.store.draft("uid-demo") is not None
    assert ctx.page.id == page.page_id


def test_actions_are_refused_like_edits(app: Flask, client: FlaskClient, upstream: Upstream, calls: list[EditorContext]) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, "/both")
    url = action_url(page)
    list_id = page.component_ids[0]
    assert client.post(url, headers={"X-KRM-Page": page.headers["X-KRM-Page"]}).status_code == 400
    assert client.post(url.replace("/probe", "/nothing"), headers=page.headers).status_code == 404
    assert client.post(f"/krm/ui/components/{list_id}/actions/probe", headers=page.headers).status_code == 400
    other = app.test_client()
    other.get("/login/editor")
    own = open_page(other, editor_url())
    stolen = {**own.headers, "X-KRM-Page": page.headers["X-KRM-Page"]}
    assert other.post(url, headers=stolen).status_code == 404
    assert calls == []


def test_action_names_are_checked() -> None:
    for bad in ("", "Save", "save now", "a/b"):
        with pytest.raises(ValueError):
            editor_action(bad, label="x")
