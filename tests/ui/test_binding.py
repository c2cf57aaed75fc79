"""Finding a request's live component (:mod:`flask_krm.ui.binding`), through a host endpoint that
binds as a row action's would."""

from __future__ import annotations

import typing as t
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask, request

from flask_krm.htmx import PAGE_HEADER
from flask_krm.runtime import runtime
from flask_krm.ui.binding import PAGE_EXPIRED, SIGNED_OUT, TOO_MANY_DRAFTS, UNKNOWN_COMPONENT, Refusal, bind
from tests.ui.conftest import CONFIGMAPS, PageHandle, Upstream, configmap, make_app, open_page
from tests.ui.test_rendering import editor_url


def probed(app: Flask) -> Flask:
    """Add ``POST /probe/<component_id>``: what :func:`bind` found, or how it refused."""

    @app.post("/probe/<component_id>")
    def probe(component_id: str) -> dict[str, t.Any]:
        try:
            found = bind(runtime(), request.headers.get(PAGE_HEADER), component_id)
        except Refusal as refusal:
            return {"status": refusal.status, "message": refusal.message, "ends": refusal.ends_session}
        return {
            "status": 200,
            "principal": found.principal.name,
            "page": found.page.id,
            "component": found.component.id,
            "scope": found.component.scope.name,
            "held": sorted(found.store.server(uid)["metadata"]["name"] for uid in found.store.uids()),
            "feed": found.feed.running,
        }

    return app


@pytest.fixture
def bound_app(tmp_path: Path, upstream: Upstream) -> Iterator[Flask]:
    app, krm = make_app(tmp_path, upstream, KRM_MAX_STORES_PER_SESSION=1)
    yield probed(app)
    krm.shutdown(app)


def signed_in(app: Flask, url: str) -> PageHandle:
    client = app.test_client()
    client.get("/login/editor")
    return open_page(client, url)


def probe(page: PageHandle, component_id: str | None = None, **headers: str) -> dict[str, t.Any]:
    response = page.client.post(f"/probe/{component_id or page.component_ids[0]}", headers=headers or page.headers)
    return t.cast("dict[str, t.Any]", response.get_json())


def test_a_component_of_the_callers_page_is_bound_with_its_store_and_running_feed(
    bound_app: Flask, upstream: Upstream
) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}), configmap("other", {}))
    page = signed_in(bound_app, editor_url())
    assert probe(page) == {
        "status": 200,
        "principal": "editor",
        "page": page.page_id,
        "component": page.component_ids[0],
        "scope": "demo",
        "held": ["demo"],
        "feed": True,
    }


def test_a_signed_out_caller_is_refused_and_the_page_session_ends(bound_app: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = signed_in(bound_app, editor_url())
    page.client.get("/logout")
    assert probe(page) == {"status": 401, "message": SIGNED_OUT, "ends": True}


def test_an_unknown_or_other_sessions_page_has_expired(bound_app: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = signed_in(bound_app, editor_url())
    expired = {"status": 404, "message": PAGE_EXPIRED, "ends": True}
    assert probe(page, **{PAGE_HEADER: "no-such-page"}) == expired
    assert probe(page, **{"X-Other": "no page header"}) == expired
    elsewhere = signed_in(bound_app, editor_url())
    assert probe(elsewhere, page.component_ids[0], **page.headers) == expired, "the same person's other session"


def test_a_component_not_on_the_page_is_refused(bound_app: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = signed_in(bound_app, editor_url())
    other = signed_in(bound_app, editor_url(name="other")).component_ids[0]
    assert other != page.component_ids[0]
    assert probe(page, other) == {"status": 404, "message": UNKNOWN_COMPONENT, "ends": True}


def test_a_principal_the_host_denies_is_refused_without_ending_the_page(bound_app: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    page = signed_in(bound_app, editor_url())
    bound_app.config["denied"].add("editor")
    refused = probe(page)
    assert refused["status"] == 403 and refused["ends"] is False and refused["message"]


def test_a_session_full_of_unsaved_drafts_is_refused_another_store(bound_app: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    client = bound_app.test_client()
    client.get("/login/editor")
    narrowed = open_page(client, editor_url(field="/data"))
    whole = open_page(client, editor_url())
    assert narrowed.component_ids != whole.component_ids, "two editors, two session stores"
    assert probe(narrowed)["status"] == 200, "the one store of the session may be replaced while it is clean"
    assert whole.edit(whole.component_ids[0], op="set", path='["data","a"]', value="mine").status_code == 200
    assert probe(narrowed) == {"status": 409, "message": TOO_MANY_DRAFTS, "ends": False}
