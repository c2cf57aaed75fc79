"""Editor actions: the seam Save plugs into (buttons, routing, refusals, outcome region, ownership)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flask import Flask, Response
from flask.testing import FlaskClient

from flask_krm import KrmStream
from flask_krm.runtime import runtime
from flask_krm.save.editor import save
from flask_krm.ui import EditorActions, EditorContext
from flask_krm.ui.discard import discard
from tests.ui.conftest import CONFIGMAPS, PageHandle, Upstream, configmap, make_app, open_page
from tests.ui.test_rendering import editor_url


@pytest.fixture
def calls(app: Flask) -> list[EditorContext]:
    """A ``probe`` action registered on the test application's extension."""
    seen: list[EditorContext] = []
    krm = runtime(app)

    @krm.hooks.editor_actions.register("probe", label="Probe <now>")
    def probe(ctx: EditorContext) -> Response:
        seen.append(ctx)
        return ctx.outcome(f"uid {ctx.uid}, live {ctx.live}, <b>{ctx.spec.scope.name}</b>")

    return seen


def action_url(page: PageHandle) -> str:
    match = re.search(r'id="(krm-[0-9a-f]{12})-action-probe"\s+data-krm-flush\s+hx-post="([^"]+)"', page.html)
    assert match, page.html
    return match.group(2)


def test_an_action_is_a_button_of_every_editor_and_no_list(
    client: FlaskClient, upstream: Upstream, calls: list[EditorContext]
) -> None:
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


def test_actions_are_refused_like_edits(
    app: Flask, client: FlaskClient, upstream: Upstream, calls: list[EditorContext]
) -> None:
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
    actions = EditorActions()
    for bad in ("", "Save", "save now", "a/b", "sävé"):
        with pytest.raises(ValueError):
            actions.register(bad, label="x")
    assert len(actions) == 0


def test_a_name_belongs_to_one_view_and_registering_it_again_relabels() -> None:
    actions = EditorActions()
    actions.add("save", save, label="Save")
    actions.add("save", save, label="Save now")
    assert [(a.name, a.label) for a in actions] == [("save", "Save now")]
    with pytest.raises(ValueError, match="already registered"):
        actions.add("save", lambda ctx: ctx.outcome("other"), label="Save")
    assert actions.get("save") is not None and actions.get("save").view is save  # type: ignore[union-attr]


def test_two_applications_in_one_process_have_their_own_actions(tmp_path: Path) -> None:
    upstreams = Upstream(), Upstream()
    (first, first_krm), (second, second_krm) = (
        make_app(tmp_path / name, upstream) for name, upstream in zip(("first", "second"), upstreams)
    )
    try:

        @first_krm.editor_action("probe", label="Probe")
        def probe(ctx: EditorContext) -> Response:
            return ctx.outcome("probed")

        pages = []
        for app, upstream in zip((first, second), upstreams):
            upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
            client = app.test_client()
            client.get("/login/editor")
            pages.append(open_page(client, editor_url()))
        first_page, second_page = pages
        (cid,) = first_page.component_ids
        assert [a.name for a in first_krm.hooks.editor_actions] == ["save", "discard", "probe"]
        assert [a.name for a in second_krm.hooks.editor_actions] == ["save", "discard"]
        assert f'id="{cid}-action-probe"' in first_page.html and f'id="{cid}-action-save"' in first_page.html
        assert f'id="{cid}-action-probe"' not in second_page.html and f'id="{cid}-action-save"' in second_page.html
        url = f"/krm/ui/components/{cid}/actions/probe"
        assert (
            first_page.client.post(url, headers=first_page.headers)
            .get_data(as_text=True)
            .endswith(">probed</hx-partial>")
        )
        assert second_page.client.post(url, headers=second_page.headers).status_code == 404
    finally:
        first_krm.shutdown(first)
        second_krm.shutdown(second)


def test_one_extension_serving_two_applications_registers_save_once(tmp_path: Path) -> None:
    krm = KrmStream(authorizer=lambda principal, scope, projection, verb: True)
    apps = [Flask(__name__, instance_path=str(tmp_path / name)) for name in ("a", "b")]
    for app in apps:
        krm.init_app(app)
    assert [(a.name, a.label, a.view) for a in krm.hooks.editor_actions] == [
        ("save", "Save", save),
        ("discard", "Discard changes", discard),
    ]
    for app in apps:
        krm.shutdown(app)
