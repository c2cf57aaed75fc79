"""What an editor's requests answer besides the draft change: the page's edit count, and every
refusal rendered in the editor's outcome region (with the session-ended header when the page can
make no more changes)."""

from __future__ import annotations

import json
import re
import typing as t
from urllib.parse import unquote

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.ui.conftest import CONFIGMAPS, PageHandle, Upstream, configmap, connect, open_page
from tests.ui.test_rendering import editor_url

SESSION_ENDED: t.Final = "X-KRM-Session-Ended"
EDITS: t.Final = "X-KRM-Edits"
A: t.Final = json.dumps(["data", "a"])


@pytest.fixture
def page(client: FlaskClient, upstream: Upstream) -> PageHandle:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1", "b": "2"}))
    return open_page(client, editor_url())


def outcome(response: t.Any, component_id: str) -> tuple[str, str]:
    """The outcome kind and text a response renders in ``component_id``'s outcome region."""
    body = response.get_data(as_text=True)
    match = re.fullmatch(
        rf'<hx-partial hx-target="#{component_id}-outcome">\s*<div class="krm-save-outcome krm-outcome-([a-z-]+)" '
        r'data-krm-outcome="\1">(.*)</div>\s*</hx-partial>',
        body,
        re.S,
    )
    assert match, body
    return match.group(1), re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(2))).strip()


def test_an_accepted_edit_answers_the_objects_edit_sequence(client: FlaskClient, page: PageHandle) -> None:
    cid = page.component_ids[0]
    assert page.edit(cid, op="set", path=A, value="x").headers[EDITS] == "1"
    assert page.edit(cid, op="revert", path=A).headers[EDITS] == "2"
    refused = page.edit(cid, op="rename_key", path=json.dumps(["data"]), key="a", new_key="")
    assert refused.status_code == 422 and EDITS not in refused.headers
    other_tab = open_page(client, editor_url())  # the same draft: its edits count too
    assert other_tab.edit(cid, op="set", path=A, value="y").headers[EDITS] == "3"
    assert page.edit(cid, op="set", path=A, value="z").headers[EDITS] == "4"


def test_renders_after_an_edit_carry_the_count_and_are_always_sent(page: PageHandle) -> None:
    cid = page.component_ids[0]
    reader = connect(page)
    page.edit(cid, op="set", path=A, value="x")
    message = reader.next()
    assert 'data-krm-edits="1"' in message.data and 'value="x"' in message.data
    # the same draft again: the render differs only by the count, and is sent
    page.edit(cid, op="set", path=A, value="x")
    message = reader.next()
    assert 'data-krm-edits="2"' in message.data
    reader.close()


def test_a_page_without_edits_renders_no_count(page: PageHandle, upstream: Upstream) -> None:
    reader = connect(page)
    upstream.modified(configmap("demo", {"a": "changed", "b": "2"}, rv="2"))
    message = reader.next()
    assert 'value="changed"' in message.data and "data-krm-edits" not in message.data
    reader.close()


@pytest.mark.parametrize("route", ["edit", "yaml", "actions/save"])
def test_csrf_refusals_render_at_the_editor_and_end_the_page_session(page: PageHandle, route: str) -> None:
    cid = page.component_ids[0]
    url = f"/krm/ui/components/{cid}/{route}"
    missing = page.client.post(url, data={"op": "set", "path": A, "value": "x"}, headers={"X-KRM-Page": page.page_id})
    assert missing.status_code == 400 and missing.mimetype == "text/html"
    kind, text = outcome(missing, cid)
    assert kind == "session-ended"
    assert text.startswith("This page can no longer make changes (its session ended or changed): reload the page.")
    assert "The CSRF token is missing" in text
    assert unquote(missing.headers[SESSION_ENDED]).startswith("This page can no longer make changes")
    forged = page.client.post(
        url, data={"op": "set", "path": A, "value": "x"}, headers={**page.headers, "X-KRM-CSRF": "x"}
    )
    assert forged.status_code == 400 and "The CSRF token is invalid" in outcome(forged, cid)[1]


def test_csrf_refusals_elsewhere_are_left_to_the_host(page: PageHandle) -> None:
    response = page.client.post("/krm/ui/components/not-a-component/edit", data={})
    assert response.status_code == 400 and "<hx-partial" not in response.get_data(as_text=True)
    assert "CSRF" in response.get_data(as_text=True) and SESSION_ENDED not in response.headers


@pytest.mark.parametrize("route", ["edit", "actions/save"])
def test_a_signed_out_page_is_told_at_the_editor(app: Flask, page: PageHandle, route: str) -> None:
    cid = page.component_ids[0]
    page.client.get("/logout")
    response = page.client.post(
        f"/krm/ui/components/{cid}/{route}", data={"op": "set", "path": A}, headers=page.headers
    )
    assert response.status_code in (400, 401)
    kind, text = outcome(response, cid)
    assert kind == "session-ended"
    assert unquote(response.headers[SESSION_ENDED]) in text


def test_an_expired_page_and_an_unknown_action_are_told_at_the_editor(page: PageHandle) -> None:
    cid = page.component_ids[0]
    expired = page.client.post(f"/krm/ui/components/{cid}/actions/save", headers={**page.headers, "X-KRM-Page": "gone"})
    assert expired.status_code == 404
    assert outcome(expired, cid) == ("session-ended", "This page has expired: reload it to continue.")
    assert unquote(expired.headers[SESSION_ENDED]) == "This page has expired: reload it to continue."
    unknown = page.client.post(f"/krm/ui/components/{cid}/actions/%3Cb%3Eno", headers=page.headers)
    assert unknown.status_code == 404 and SESSION_ENDED not in unknown.headers
    assert "No editor action named &lt;b&gt;no." in unknown.get_data(as_text=True)
    assert outcome(unknown, cid)[0] == "refused"


def test_a_body_too_large_is_told_at_the_editor(app: Flask, page: PageHandle) -> None:
    app.config["KRM_MAX_REQUEST_BYTES"] = 1024
    cid = page.component_ids[0]
    response = page.edit(cid, op="set", path=A, value="x" * 2048)
    assert response.status_code == 413
    assert outcome(response, cid) == (
        "too-large",
        "This change is too large to send. Your other changes are still here."
        " The request body is larger than 1024 bytes.",
    )
    assert SESSION_ENDED not in response.headers


def test_a_yaml_edit_too_large_or_malformed_is_told_at_the_editor(app: Flask, page: PageHandle) -> None:
    app.config["KRM_MAX_REQUEST_BYTES"] = 1024
    cid = page.component_ids[0]
    url = f"/krm/ui/components/{cid}/yaml"
    large = page.client.post(url, data={"before": "", "yaml": "x" * 2048}, headers=page.headers)
    assert large.status_code == 413
    assert outcome(large, cid)[0] == "too-large"
    undecodable = page.client.post(
        url, data=b"yaml=%ff\xff", headers={**page.headers, "Content-Type": "application/x-www-form-urlencoded"}
    )
    assert undecodable.status_code == 400
    assert outcome(undecodable, cid) == ("refused", "The form body is not UTF-8 text.")
