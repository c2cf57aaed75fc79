"""Controls offered by what Kubernetes' RBAC lets the person do: a SelfSubjectAccessReview as the
impersonated person decides whether an editor offers Save, Add and Remove and a list its rows'
Delete, over an authorizer that allows everything. The component is the same for everyone (one id);
what each person is shown differs, on the first paint and in every live update, and a control sent
anyway is refused by Kubernetes with nothing written."""

from __future__ import annotations

import typing as t
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import gevent
import pytest
from flask import Flask, render_template_string

from flask_krm import KrmStream
from flask_krm.save.controls import offer_for, verbs_shown
from flask_krm.save.review import ReviewViews
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.ui.offer import NOTHING, Offer
from flask_krm.ui.page import Component, EditorSpec, ListSpec, RowAction
from flask_krm.upstream.clients import ActingApiClient, Impersonation
from tests.ui.conftest import ChannelReader, PageHandle, Upstream, connect, open_page
from tests.users import User

from .conftest import signing_in_app, unconditional_patch
from .test_editor import EDITOR_PAGE, create, kube_object, scope_query

BOTH_PAGE = (
    '{% import "krm/_macros.html" as krm %}<html><head>{{ krm_script() }}</head><body>'
    '{{ krm.list(scope, columns=["/metadata/name", ("B", "/data/b")], row_actions=[("Delete", "krm_review.delete")]) }}'
    "{{ krm.editor(scope, name) }}</body></html>"
)
"""A list whose rows offer Delete and an editor of one of its objects, on one page."""


@pytest.fixture
def app(tmp_path: Path, kube: KubeSimulator, upstream: Upstream) -> Iterator[Flask]:
    app = signing_in_app(tmp_path, "controls test secret")

    @app.get("/edit")
    def edit() -> str:
        from flask import request

        return render_template_string(EDITOR_PAGE, scope=request.args["scope"], name=request.args["name"])

    @app.get("/both")
    def both() -> str:
        from flask import request

        return render_template_string(BOTH_PAGE, scope=request.args["scope"], name=request.args["name"])

    admin = kube.api_client("admin")
    krm = KrmStream(
        app,
        authorizer=lambda principal, scope, projection, verb: True,  # Kubernetes' RBAC is the boundary
        client_loader=lambda target, principal: ActingApiClient(admin, Impersonation(principal.name)),
    )
    krm.plug_source("dev", upstream.source, app)
    app.register_blueprint(ReviewViews().blueprint())
    yield app
    krm.shutdown(app)


def test_kubernetes_rbac_as_the_person_decides_whether_save_is_offered(
    app: Flask, kube: KubeSimulator, namespace: str, upstream: Upstream
) -> None:
    create(kube, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"a": "1"}})
    query = scope_query(namespace)
    upstream.snapshot(query, kube_object(kube, namespace, "app"))
    url = f"/edit?scope={quote(query)}&name=app"

    def page_for(user: str) -> t.Any:
        client = app.test_client()
        client.get(f"/login/{user}")
        return open_page(client, url)

    editor = page_for("editor")  # may patch in this namespace (its RoleBinding)
    assert f"/krm/ui/components/{editor.component_ids[0]}/actions/save" in editor.html
    viewer = page_for("viewer")  # may only read: Kubernetes says so, the authorizer allows all
    cid = viewer.component_ids[0]
    assert f"/krm/ui/components/{cid}/actions/save" not in viewer.html
    assert viewer.edit(cid, op="set", path='["data", "a"]', value="mine").status_code == 200
    forged = viewer.client.post(f"/krm/ui/components/{cid}/actions/save", headers=viewer.headers)
    assert forged.status_code == 403  # sent as the viewer: Kubernetes refuses the write itself
    assert kube_object(kube, namespace, "app")["data"] == {"a": "1"}


def page_as(app: Flask, user: str, url: str) -> PageHandle:
    client = app.test_client()
    client.get(f"/login/{user}")
    return open_page(client, url)


@pytest.fixture
def both_url(kube: KubeSimulator, namespace: str, upstream: Upstream) -> str:
    """The page of a list offering Delete and an editor of its ConfigMap ``app``."""
    create(kube, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"a": "1"}})
    query = scope_query(namespace)
    upstream.snapshot(query, kube_object(kube, namespace, "app"))
    return f"/both?scope={quote(query)}&name=app"


ADD_REMOVE = ("krm-add-key", "krm-remove-key")
"""The classes of the editor's Add (a key) and Remove (a key) buttons of a ConfigMap's data."""
DELETE = "krm-row-action-delete"


def test_the_editor_and_the_list_show_add_remove_and_delete_only_to_a_person_who_may(app: Flask, both_url: str) -> None:
    editor, viewer = page_as(app, "editor", both_url), page_as(app, "viewer", both_url)
    assert editor.component_ids == viewer.component_ids, "one component for everyone: only what is shown differs"
    for control in (*ADD_REMOVE, DELETE, '<span class="krm-vh">Actions</span>'):
        assert control in editor.html, control
        assert control not in viewer.html, control
    assert 'name="new_key" value="a"' in viewer.html, "the viewer still sees (and may draft) the value"


def _messages_until(reader: ChannelReader, *needles: str) -> str:
    """The channel's messages until together they hold every one of ``needles``."""
    seen = ""
    while not all(needle in seen for needle in needles):
        seen += str(reader.next(timeout=3.0).data)
    return seen


def test_live_updates_of_shared_rows_and_editor_parts_keep_each_persons_controls(
    app: Flask, kube: KubeSimulator, namespace: str, upstream: Upstream, both_url: str
) -> None:
    editor, viewer = page_as(app, "editor", both_url), page_as(app, "viewer", both_url)
    readers = {"editor": connect(editor), "viewer": connect(viewer)}
    try:
        gevent.sleep(0.3)  # both channels sent what changed since the paint (nothing) and wait
        path = f"/api/v1/namespaces/{namespace}/configmaps/app"
        unconditional_patch(kube, path, {"data": {"a": "1", "b": "two"}})
        upstream.modified(kube_object(kube, namespace, "app"))
        # the editor's session renders first: the row and the editor's map are then shared renders
        seen = {
            who: _messages_until(readers[who], "two", "data-krm-uid", 'name="new_key" value="b"')
            for who in ("editor", "viewer")
        }
    finally:
        for reader in readers.values():
            reader.close()
    assert DELETE in seen["editor"] and "krm-remove-key" in seen["editor"] and "krm-add-key" in seen["editor"]
    for control in (DELETE, *ADD_REMOVE):
        assert control not in seen["viewer"], control


def test_add_remove_and_delete_sent_anyway_are_refused_by_kubernetes_and_nothing_is_written(
    app: Flask, kube: KubeSimulator, namespace: str, both_url: str
) -> None:
    viewer = page_as(app, "viewer", both_url)
    list_id, editor_id = viewer.component_ids
    # Add and Remove change the person's draft only; the write they lead to is Kubernetes' to refuse
    assert viewer.edit(editor_id, op="add_key", path='["data"]', key="b", value="2").status_code == 200
    assert viewer.edit(editor_id, op="remove_key", path='["data", "a"]').status_code == 200
    saved = viewer.client.post(f"/krm/ui/components/{editor_id}/actions/save", headers=viewer.headers)
    assert saved.status_code == 403
    assert "User &#34;viewer&#34; cannot patch resource &#34;configmaps&#34;" in saved.get_data(as_text=True)
    uid = kube_object(kube, namespace, "app")["metadata"]["uid"]
    staged = viewer.client.post(f"/krm/review/{list_id}/delete", data={"uid": uid}, headers=viewer.headers)
    assert staged.status_code == 200  # the authorizer allows it: Kubernetes decides when it is written
    deleted = viewer.client.post(f"/krm/review/{list_id}/save", headers=viewer.headers)
    assert deleted.status_code == 403, deleted.get_data(as_text=True)
    assert "You do not have permission to make this change." in deleted.get_data(as_text=True)
    assert kube_object(kube, namespace, "app")["data"] == {"a": "1"}, "not patched, not deleted"


def test_what_each_component_may_offer_and_to_whom(app: Flask, kube: KubeSimulator, namespace: str) -> None:
    import dataclasses

    from flask_krm.scope import parse_scope
    from flask_krm.store import EditPolicy

    scope = parse_scope(scope_query(namespace))
    named = dataclasses.replace(scope, name="app")
    editor = Component("krm-000000000001", EditorSpec(named, "krm-full/v1", EditPolicy.only(["data"])))
    deleting = Component(
        "krm-000000000002",
        ListSpec(
            scope,
            "krm-full/v1",
            (),
            row_actions=(RowAction("Delete", "krm_review.delete"), RowAction("Show", "x.show")),
        ),
    )
    assert verbs_shown(editor) == {"patch"} and verbs_shown(deleting) == {"delete"}
    with app.test_request_context():
        from flask_login import login_user

        from flask_krm.runtime import runtime
        from flask_krm.ui.binding import session_of

        krm = runtime()
        login_user(User("viewer"))
        principal, drafts = session_of(krm)
        assert offer_for(krm, principal, drafts, editor) == NOTHING
        assert offer_for(krm, principal, drafts, deleting) == NOTHING
        login_user(User("editor"))
        principal, drafts = session_of(krm)
        assert offer_for(krm, principal, drafts, editor) == Offer(frozenset({"patch"}))
        assert offer_for(krm, principal, drafts, deleting) == Offer(frozenset({"delete"}))
