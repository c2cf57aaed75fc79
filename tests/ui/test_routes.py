"""The live UI's routes (:mod:`flask_krm.ui.routes`): where each refusal of an editor's request is
shown, and how an editor action is dispatched."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from flask import Flask
from werkzeug.test import TestResponse

from flask_krm.htmx import SESSION_ENDED_HEADER
from flask_krm.ui.binding import PAGE_EXPIRED, UNKNOWN_COMPONENT
from flask_krm.ui.routes import CSRF_REFUSED, TOO_LARGE
from tests.ui.conftest import CONFIGMAPS, PageHandle, Upstream, configmap, make_app, open_page


@pytest.fixture
def small(tmp_path: Path, upstream: Upstream) -> Iterator[Flask]:
    app, krm = make_app(tmp_path, upstream, KRM_MAX_REQUEST_BYTES=2048)
    yield app
    krm.shutdown(app)


@pytest.fixture
def page(small: Flask, upstream: Upstream) -> PageHandle:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    client = small.test_client()
    client.get("/login/editor")
    return open_page(client, "/both")


def outcome(response: TestResponse, component_id: str) -> tuple[str, str]:
    """The outcome region a response targets, and the kind of outcome it shows."""
    text = response.get_data(as_text=True)
    target = re.fullmatch(r'<hx-partial hx-target="#([^"]+)">(.*)</hx-partial>', text, re.S)
    assert target, text
    kind = re.search(r'data-krm-outcome="([^"]+)"', target.group(2))
    assert kind, text
    assert target.group(1) == f"{component_id}-outcome"
    return target.group(1), kind.group(1)


def action(page: PageHandle, component_id: str, name: str, headers: dict[str, str] | None = None) -> TestResponse:
    return page.client.post(
        f"/krm/ui/components/{component_id}/actions/{name}", headers=page.headers if headers is None else headers
    )


@pytest.mark.parametrize(
    ("component", "name", "status", "message"),
    [
        (1, "launch", 404, "No editor action named launch."),  # the editor
        (0, "save", 400, "Actions apply to editors only."),  # the list
    ],
    ids=["unknown-action", "action-on-a-list"],
)
def test_a_refused_action_is_answered_in_the_components_outcome_region(
    page: PageHandle, component: int, name: str, status: int, message: str
) -> None:
    component_id = page.component_ids[component]
    answer = action(page, component_id, name)
    assert answer.status_code == status
    assert outcome(answer, component_id)[1] == "refused"
    assert message in answer.get_data(as_text=True)


def test_a_refusal_that_ends_the_pages_session_says_so_in_a_header(page: PageHandle) -> None:
    editor = page.component_ids[1]
    answer = action(page, editor, "discard", {**page.headers, "X-KRM-Page": "gone"})
    assert answer.status_code == 404
    assert outcome(answer, editor)[1] == "session-ended"
    assert unquote(answer.headers[SESSION_ENDED_HEADER]) == PAGE_EXPIRED


def test_an_action_naming_no_component_is_answered_in_escaped_plain_text(page: PageHandle) -> None:
    answer = action(page, "not-a-component", "save")
    assert answer.status_code == 404
    assert answer.mimetype == "text/plain"
    assert answer.get_data(as_text=True) == UNKNOWN_COMPONENT
    assert SESSION_ENDED_HEADER not in answer.headers
    unknown = action(page, "not-a-component", "<b>")
    assert unknown.mimetype == "text/plain"
    assert unknown.get_data(as_text=True) == "No editor action named &lt;b&gt;."


def test_a_missing_csrf_token_ends_the_pages_session_in_the_outcome_region(page: PageHandle) -> None:
    editor = page.component_ids[1]
    for url in (
        f"/krm/ui/components/{editor}/edit",
        f"/krm/ui/components/{editor}/yaml",
        f"/krm/ui/components/{editor}/actions/save",
    ):
        answer = page.client.post(url, headers={"X-KRM-Page": page.headers["X-KRM-Page"]})
        assert answer.status_code == 400, url
        assert outcome(answer, editor)[1] == "session-ended"
        assert unquote(answer.headers[SESSION_ENDED_HEADER]) == CSRF_REFUSED
        assert "krm-outcome-detail" in answer.get_data(as_text=True), "the guard's own words are the detail"


def test_a_body_over_the_limit_is_refused_in_the_outcome_region_and_the_page_goes_on(page: PageHandle) -> None:
    editor = page.component_ids[1]
    answer = page.edit(editor, op="set", path='["data","a"]', value="x" * 4096)
    assert answer.status_code == 413
    assert outcome(answer, editor)[1] == "too-large"
    text = answer.get_data(as_text=True)
    assert TOO_LARGE in text and "2048 bytes" in text
    assert SESSION_ENDED_HEADER not in answer.headers


def test_a_guard_refusal_of_a_url_naming_no_component_is_not_an_outcome(page: PageHandle) -> None:
    answer = page.client.post("/krm/ui/components/not-a-component/edit", data={"x": "1"})
    assert answer.status_code == 400
    assert "hx-partial" not in answer.get_data(as_text=True)
