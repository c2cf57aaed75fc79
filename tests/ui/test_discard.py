"""The "Discard changes" editor action (:mod:`flask_krm.ui.discard`), through the app's routes."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.ui.conftest import CONFIGMAPS, Upstream, configmap, field_id, open_page
from tests.ui.test_rendering import editor_url


def test_discard_changes_drops_the_sessions_draft_and_needs_the_csrf_token(
    client: FlaskClient, upstream: Upstream
) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    (cid,) = page.component_ids
    assert f'id="{cid}-action-discard"' in page.html and ">Discard changes</button>" in page.html
    url = f"/krm/ui/components/{cid}/actions/discard"
    assert page.edit(cid, op="set", path='["data","a"]', value="mine").status_code == 200
    assert client.post(url, headers={"X-KRM-Page": page.headers["X-KRM-Page"]}).status_code == 400
    assert 'value="mine"' in open_page(client, editor_url()).html, "a refused discard leaves the draft"

    answer = client.post(url, headers=page.headers)
    assert answer.status_code == 200
    assert 'data-krm-outcome="discarded"' in answer.get_data(as_text=True)
    reopened = open_page(client, editor_url())
    assert 'value="mine"' not in reopened.html and 'value="1"' in reopened.html
    again = client.post(url, headers=page.headers).get_data(as_text=True)
    assert "There are no changes to discard." in again


def test_discarding_a_conflict_takes_the_servers_value(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    (cid,) = page.component_ids
    assert page.edit(cid, op="set", path='["data","a"]', value="mine").status_code == 200
    upstream.modified(configmap("demo", {"a": "theirs"}, rv="2"))
    conflict = f'id="{field_id(cid, ("data", "a"), "-conflict")}"'
    conflicted = open_page(client, editor_url()).html
    assert 'value="mine"' in conflicted and conflict in conflicted

    answer = client.post(f"/krm/ui/components/{cid}/actions/discard", headers=page.headers)
    assert answer.status_code == 200 and 'data-krm-outcome="discarded"' in answer.get_data(as_text=True)
    reopened = open_page(client, editor_url()).html
    assert 'value="theirs"' in reopened and 'value="mine"' not in reopened
    assert conflict not in reopened


def test_there_is_nothing_to_discard_without_an_object(client: FlaskClient, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = open_page(client, editor_url())
    (cid,) = page.component_ids
    url = f"/krm/ui/components/{cid}/actions/discard"
    assert page.edit(cid, op="set", path='["data","a"]', value="mine").status_code == 200
    upstream.deleted(configmap("demo", {"a": "1"}))
    answer = client.post(url, headers=page.headers)
    assert answer.status_code == 404
    text = answer.get_data(as_text=True)
    assert 'data-krm-outcome="unavailable"' in text and "there is nothing to discard" in text

    missing = open_page(client, editor_url(name="absent"))
    (absent,) = missing.component_ids
    answer = client.post(f"/krm/ui/components/{absent}/actions/discard", headers=missing.headers)
    assert answer.status_code == 404 and 'data-krm-outcome="unavailable"' in answer.get_data(as_text=True)
