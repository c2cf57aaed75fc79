"""Invariant 15: every stream, read and write is authorized for the signed-in principal and the
exact scope and projection.

The minimal host's authorizer records every question. Each route must ask it about exactly the
scope and projection the request uses (never a narrower or wider one, never another projection),
with the verb of what it does; a principal refused one scope gets nothing of it through any route:
not by guessing page or component ids, not by changing the projection, not by widening the scope.
"""

from __future__ import annotations

import dataclasses
import json
import typing as t
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from flask import Flask

from flask_krm import Scope
from flask_krm.store.policy import DEFAULT_POLICY
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.ui.page import EditorSpec, ListSpec, make_component, parse_columns
from flask_krm.upstream.native import NATIVE, native_collection_url

from .hosts import (
    STREAM_URL,
    TARGET,
    Browser,
    Call,
    Recorder,
    configmap,
    create,
    csrf_headers,
    event_types,
    make_host,
    make_namespace,
    read,
    shut_down,
    terminal_code,
)

OPEN: t.Final = "authz-open"
CLOSED: t.Final = "authz-closed"
OPEN_VALUE: t.Final = "open-value-5f1c"
CLOSED_VALUE: t.Final = "closed-value-93ad"
NAME: t.Final = "settings"


def scope(namespace: str = OPEN, name: str = "", **changes: str) -> Scope:
    return Scope(target=TARGET, version="v1", resource="configmaps", namespace=namespace, name=name, **changes)


@pytest.fixture(scope="module")
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(scope="module")
def host(kube: KubeSimulator, recorder: Recorder) -> Iterator[Flask]:
    for namespace, value in ((OPEN, OPEN_VALUE), (CLOSED, CLOSED_VALUE)):
        make_namespace(kube, namespace)
        create(kube, namespace, "configmaps", configmap(NAME, namespace, {"secret-ish": value}))
    app = make_host(kube, recorder)
    yield app
    shut_down(app)


@pytest.fixture(autouse=True)
def allow_everything(recorder: Recorder) -> Iterator[None]:
    recorder.deny = lambda call: False
    yield
    recorder.deny = lambda call: False


@pytest.fixture
def browser(host: Flask) -> Iterator[Browser]:
    browser = Browser(host, "editor")
    yield browser
    browser.close()


def url(path: str, scope_: Scope, **params: str) -> str:
    query = "scope=" + quote(scope_.canonical_query(), safe="")
    for key, value in params.items():
        query += f"&{key}={quote(value, safe='')}"
    return f"{path}?{query}"


def stream(browser: Browser, scope_: Scope, projection: str | None = None, **extra: str) -> t.Any:
    query = scope_.canonical_query(projection)
    for key, value in extra.items():
        query += f"&{key}={quote(value, safe='')}"
    return browser.stream(f"{STREAM_URL}?{query}")


def synced(events: t.Any) -> bool:
    return "synced" in event_types(events) or terminal_code(events) is not None


def asked(recorder: Recorder, mark: int, expected: Call) -> None:
    calls = recorder.since(mark)
    assert expected in calls, f"{expected} not among {calls}"


def only_scopes(recorder: Recorder, mark: int, *scopes: Scope) -> None:
    """Every question since ``mark`` was about one of ``scopes``, for ``editor``."""
    for call in recorder.since(mark):
        assert call.principal == "editor", call
        assert call.scope in scopes, f"the authorizer was asked about {call.scope}, not one of {scopes}"


# ---------------------------------------------------------------------- the exact question --


def test_the_json_stream_asks_about_the_exact_scope_and_projection(browser: Browser, recorder: Recorder) -> None:
    for exact, projection in (
        (scope(name=NAME), "krm-spec/v1"),
        (scope(), "krm-full/v1"),
        (scope(label_selector="a=b"), "krm-raw/v1"),
    ):
        mark = len(recorder.calls)
        events = stream(browser, exact, projection).until(synced)
        assert event_types(events)[-1] == "synced"
        asked(recorder, mark, Call("editor", exact, projection, "watch"))
        only_scopes(recorder, mark, exact)
        events.close()


def test_pages_channels_edits_and_saves_ask_about_the_editor_scope(browser: Browser, recorder: Recorder) -> None:
    exact = scope(name=NAME)
    mark = len(recorder.calls)
    page = browser.open(url("/edit", scope(), name=NAME, projection="krm-spec/v1"))
    asked(recorder, mark, Call("editor", exact, "krm-spec/v1", "watch"))
    editor = page.component("editor")

    mark = len(recorder.calls)
    channel = page.channel().until_text(": connected")
    asked(recorder, mark, Call("editor", exact, "krm-spec/v1", "watch"))

    mark = len(recorder.calls)
    edit = browser.post(
        f"/krm/ui/components/{editor}/edit",
        {"op": "add_key", "path": '["metadata", "labels"]', "key": "tier", "value": "web"},
        page.headers(editor),
    )
    assert edit.status_code == 200, edit.get_data(as_text=True)
    asked(recorder, mark, Call("editor", exact, "krm-spec/v1", "watch"))

    mark = len(recorder.calls)
    saved = browser.post(f"/krm/ui/components/{editor}/actions/save", {}, page.headers(editor))
    assert saved.status_code == 200, saved.get_data(as_text=True)
    asked(recorder, mark, Call("editor", exact, "krm-spec/v1", "patch"))
    only_scopes(recorder, mark, exact)
    channel.close()


def test_review_writes_ask_with_their_verb_about_the_exact_object_scope(
    browser: Browser, recorder: Recorder, kube: KubeSimulator
) -> None:
    listed = scope(label_selector="made-by=review")
    page = browser.open(url("/list", listed, column="/metadata/uid"))
    component = page.component("list")
    headers = page.headers(component)
    base = f"/krm/review/{component}"
    body = json.dumps(configmap("made-by-review", OPEN, {"k": "v"}, labels={"made-by": "review"}))

    mark = len(recorder.calls)
    assert browser.post(f"{base}/create", {"body": body}, headers).status_code == 200
    asked(recorder, mark, Call("editor", listed, "krm-full/v1", "watch"))
    mark = len(recorder.calls)
    assert browser.post(f"{base}/save", {}, headers).status_code == 200
    asked(recorder, mark, Call("editor", scope(), "krm-full/v1", "create"))  # the namespace, not the selection
    assert Call("editor", listed, "krm-full/v1", "create") not in recorder.since(mark)
    only_scopes(recorder, mark, listed, scope(), scope(name="made-by-review"))

    created = read(kube, OPEN, "configmaps", "made-by-review")
    assert created is not None
    channel = page.channel().until_text(created["metadata"]["uid"])  # the list shows it: it can be staged
    mark = len(recorder.calls)
    assert browser.post(f"{base}/delete", {"uid": created["metadata"]["uid"]}, headers).status_code == 200
    assert browser.post(f"{base}/save", {}, headers).status_code == 200
    asked(recorder, mark, Call("editor", scope(name="made-by-review"), "krm-full/v1", "delete"))
    assert not [c for c in recorder.since(mark) if c.verb == "delete" and c.scope != scope(name="made-by-review")]
    only_scopes(recorder, mark, listed, scope(name="made-by-review"))
    channel.close()
    assert read(kube, OPEN, "configmaps", "made-by-review") is None


def test_a_delete_from_a_list_across_namespaces_is_refused_where_the_object_lives(
    browser: Browser, recorder: Recorder, kube: KubeSimulator
) -> None:
    """The list spans every namespace; the authorizer refuses deletes in one of them. Asking about
    the list's scope would allow the delete; the object's namespace and name refuse it."""
    victim = create(kube, CLOSED, "configmaps", configmap("keep-me", CLOSED, {"k": "v"}))
    everywhere = scope(namespace="")
    page = browser.open(url("/list", everywhere, column="/metadata/uid"))
    component = page.component("list")
    headers = page.headers(component)
    base = f"/krm/review/{component}"
    channel = page.channel().until_text(": connected")
    if victim["metadata"]["uid"] not in page.html:
        channel.until_text(victim["metadata"]["uid"])  # the list shows it: it can be staged
    recorder.deny = lambda call: call.verb == "delete" and call.scope.namespace == CLOSED
    mark = len(recorder.calls)
    staged = browser.post(f"{base}/delete", {"uid": victim["metadata"]["uid"]}, headers)
    assert staged.status_code == 403 and "data-krm-review-kind" not in staged.get_data(
        as_text=True
    )  # refused when staged
    asked(recorder, mark, Call("editor", scope(CLOSED, name="keep-me"), "krm-full/v1", "delete"))

    recorder.deny = lambda call: False
    assert browser.post(f"{base}/delete", {"uid": victim["metadata"]["uid"]}, headers).status_code == 200
    recorder.deny = lambda call: call.verb == "delete" and call.scope.namespace == CLOSED
    mark = len(recorder.calls)
    saved = browser.post(f"{base}/save", {}, headers)
    assert saved.status_code == 403 and 'data-krm-outcome="access-denied"' in saved.get_data(
        as_text=True
    )  # and when saved
    asked(recorder, mark, Call("editor", scope(CLOSED, name="keep-me"), "krm-full/v1", "delete"))
    assert read(kube, CLOSED, "configmaps", "keep-me") is not None
    channel.close()


def test_the_native_proxy_asks_with_the_native_projection(
    browser: Browser, recorder: Recorder, kube: KubeSimulator
) -> None:
    browser.open(url("/list", scope()))  # a page gives the session its CSRF token
    base = f"/k8s/api/v1/namespaces/{OPEN}/configmaps"
    cases = [
        (f"{base}/{NAME}", scope(name=NAME), "get"),
        (base, scope(), "list"),
        (f"{base}?labelSelector=a%3Db", scope(label_selector="a=b"), "list"),
        (f"{base}?watch=true&timeoutSeconds=1", scope(), "watch"),
    ]
    for path, exact, verb in cases:
        mark = len(recorder.calls)
        response = browser.client.get(path)
        assert response.status_code == 200, (path, response.get_data(as_text=True)[:300])
        assert recorder.since(mark) == [Call("editor", exact, NATIVE, verb)]
    current = read(kube, OPEN, "configmaps", NAME)
    assert current is not None
    mark = len(recorder.calls)
    patch = {
        "metadata": {
            "uid": current["metadata"]["uid"],
            "resourceVersion": current["metadata"]["resourceVersion"],
            "labels": {"native": "yes"},
        }
    }
    response = browser.client.patch(
        f"{base}/{NAME}",
        data=json.dumps(patch),
        content_type="application/merge-patch+json",
        headers=csrf_headers(browser.csrf_token()),
    )
    assert response.status_code == 204, response.get_data(as_text=True)
    assert recorder.since(mark) == [Call("editor", scope(name=NAME), NATIVE, "patch")]


# ------------------------------------------------------------------------- a refused scope --


def deny_closed(call: Call) -> bool:
    return call.scope.namespace == CLOSED


def test_a_refused_namespace_is_not_streamed_in_any_shape_or_projection(browser: Browser, recorder: Recorder) -> None:
    recorder.deny = deny_closed
    for shape in (scope(CLOSED), scope(CLOSED, NAME), scope(CLOSED, label_selector="x!=y")):
        for projection in ("krm-full/v1", "krm-spec/v1", "krm-raw/v1"):
            events = stream(browser, shape, projection).until_end()
            assert event_types(events) == ["error"], events.text
            assert terminal_code(events) == "FORBIDDEN"
            assert CLOSED_VALUE not in events.text


def test_a_refused_component_cannot_be_reached_by_guessing_its_id(browser: Browser, recorder: Recorder) -> None:
    recorder.deny = deny_closed
    refused_page = browser.open(url("/edit", scope(CLOSED), name=NAME))
    assert CLOSED_VALUE not in refused_page.html
    assert "You may not view this." in refused_page.html
    assert refused_page.channel_url is None  # nothing of it was registered on a page

    allowed = browser.open(url("/both", scope(), name=NAME, column="/metadata/uid"))
    headers = allowed.headers()
    guessed_editor = make_component(EditorSpec(scope(CLOSED, NAME), "krm-full/v1", DEFAULT_POLICY, None, NAME)).id
    guessed_list = make_component(
        ListSpec(
            scope(CLOSED),
            "krm-full/v1",
            parse_columns(["/metadata/uid"], scope(CLOSED)),
            None,
            f"configmaps in {CLOSED}",
        )
    ).id
    assert guessed_editor == refused_page.component("editor")
    answers = [
        browser.post(
            f"/krm/ui/components/{guessed_editor}/edit",
            {"op": "set", "path": '["data", "secret-ish"]', "value": "x"},
            headers,
        ),
        browser.post(f"/krm/ui/components/{guessed_editor}/actions/save", {}, headers),
        browser.client.get(f"/krm/review/{guessed_list}", headers=headers),
        browser.post(f"/krm/review/{guessed_list}/create", {"body": json.dumps(configmap("n", CLOSED, {}))}, headers),
        browser.post(f"/krm/review/{guessed_list}/save", {}, headers),
    ]
    for answer in answers:
        assert answer.status_code == 404, answer.get_data(as_text=True)
        assert CLOSED_VALUE not in answer.get_data(as_text=True)
    channel = allowed.channel().until_text(": connected").drain(0.5)
    assert CLOSED_VALUE not in channel.text
    channel.close()


def test_the_native_proxy_refuses_a_refused_namespace(
    browser: Browser, recorder: Recorder, kube: KubeSimulator
) -> None:
    recorder.deny = deny_closed
    browser.open(url("/list", scope()))
    base = f"/k8s/api/v1/namespaces/{CLOSED}/configmaps"
    for path in (base, f"{base}/{NAME}", f"{base}?watch=true&timeoutSeconds=1", f"{base}?labelSelector=a"):
        response = browser.client.get(path)
        assert response.status_code == 403, path
        assert CLOSED_VALUE not in response.get_data(as_text=True)
    current = read(kube, CLOSED, "configmaps", NAME)
    assert current is not None
    patch = {
        "metadata": {"uid": current["metadata"]["uid"], "resourceVersion": current["metadata"]["resourceVersion"]},
        "data": {"secret-ish": "overwritten"},
    }
    response = browser.client.patch(
        f"{base}/{NAME}",
        data=json.dumps(patch),
        content_type="application/merge-patch+json",
        headers=csrf_headers(browser.csrf_token()),
    )
    assert response.status_code == 403
    assert read(kube, CLOSED, "configmaps", NAME)["data"] == {"secret-ish": CLOSED_VALUE}  # type: ignore[index]


def test_revoked_access_stops_every_route_of_an_open_page(
    browser: Browser, recorder: Recorder, kube: KubeSimulator
) -> None:
    page = browser.open(url("/both", scope(), name=NAME, column="/metadata/uid"))
    editor, listed = page.component("editor"), page.component("list")
    headers = page.headers()
    edit = {"op": "add_key", "path": '["data"]', "key": "after-revocation", "value": "x"}
    assert browser.post(f"/krm/ui/components/{editor}/edit", edit, headers).status_code == 200

    recorder.deny = lambda call: call.scope.namespace == OPEN
    answers = {
        "edit": browser.post(f"/krm/ui/components/{editor}/edit", {**edit, "key": "later"}, headers),
        "save": browser.post(f"/krm/ui/components/{editor}/actions/save", {}, headers),
        "review": browser.client.get(f"/krm/review/{listed}", headers=headers),
        "create": browser.post(
            f"/krm/review/{listed}/create", {"body": json.dumps(configmap("late", OPEN, {}))}, headers
        ),
        "delete": browser.post(
            f"/krm/review/{listed}/delete",
            {"uid": (read(kube, OPEN, "configmaps", NAME) or {}).get("metadata", {}).get("uid", "")},
            headers,
        ),
        "review save": browser.post(f"/krm/review/{listed}/save", {}, headers),
    }
    for what, answer in answers.items():
        assert answer.status_code == 403, (what, answer.status_code, answer.get_data(as_text=True))
        assert OPEN_VALUE not in answer.get_data(as_text=True), what
    channel = page.channel().until_end()
    assert OPEN_VALUE not in channel.text
    assert "krm-close" in channel.text and "You may not view this." in channel.text
    assert "after-revocation" not in (read(kube, OPEN, "configmaps", NAME) or {}).get("data", {})


# ------------------------------------------------------------- projection and widened scopes --


def test_the_projection_is_part_of_the_question(browser: Browser, recorder: Recorder) -> None:
    recorder.deny = lambda call: call.projection == "krm-raw/v1"
    mark = len(recorder.calls)
    events = stream(browser, scope(name=NAME), "krm-raw/v1").until_end()
    assert terminal_code(events) == "FORBIDDEN" and OPEN_VALUE not in events.text
    assert recorder.since(mark) == [Call("editor", scope(name=NAME), "krm-raw/v1", "watch")]
    page = browser.open(url("/edit", scope(), name=NAME, projection="krm-raw/v1"))
    assert OPEN_VALUE not in page.html and "You may not view this." in page.html
    unknown = stream(browser, scope(name=NAME), "krm-everything/v1").until_end()
    assert terminal_code(unknown) == "SCOPE_INVALID"
    allowed = stream(browser, scope(name=NAME), "krm-full/v1").until(synced)
    assert OPEN_VALUE in allowed.text  # the same object under an allowed projection
    allowed.close()


@pytest.mark.parametrize(
    "widened",
    [
        scope(),  # the name removed
        dataclasses.replace(scope(), namespace=""),  # the namespace removed too: every namespace
        scope(name=NAME, label_selector="tier"),  # a label selector added
        scope(label_selector="!tier"),
    ],
    ids=["name-removed", "namespace-removed", "selector-added", "selector-instead-of-name"],
)
def test_a_grant_for_one_object_never_covers_a_wider_scope(
    widened: Scope, browser: Browser, recorder: Recorder
) -> None:
    exact = scope(name=NAME)
    recorder.deny = lambda call: call.scope != exact
    mark = len(recorder.calls)
    events = stream(browser, widened).until_end()
    assert terminal_code(events) == "FORBIDDEN" and OPEN_VALUE not in events.text
    assert recorder.since(mark) == [Call("editor", widened, "krm-full/v1", "watch")]
    page = browser.open(url("/list", widened))
    assert OPEN_VALUE not in page.html
    native = browser.client.get(native_collection_url("/k8s", dataclasses.replace(widened, name="")))
    assert native.status_code in (403, 404) and OPEN_VALUE not in native.get_data(as_text=True)
    granted = stream(browser, exact).until(synced)
    assert OPEN_VALUE in granted.text
    granted.close()


# --------------------------------------------------------------------------- guessed pages --


def test_unknown_and_foreign_page_ids_reach_nothing(host: Flask, browser: Browser) -> None:
    other = Browser(host, "viewer")
    theirs = other.open(url("/edit", scope(), name=NAME))
    mine = browser.open(url("/list", scope()))
    for page_id in (theirs.page_id, "A" * 22, "x" * 65, "..", "%2e%2e"):
        channel = browser.stream(f"/krm/ui/pages/{page_id}/channel").until_end()
        assert "krm-close" in channel.text and OPEN_VALUE not in channel.text, page_id
        edit = browser.post(
            f"/krm/ui/components/{theirs.component('editor')}/edit",
            {"op": "set", "path": '["data", "secret-ish"]', "value": "x"},
            csrf_headers(browser.csrf_token(), page_id),
        )
        assert edit.status_code == 404, page_id
    assert mine.page_id != theirs.page_id
    other.close()


def test_a_revocation_ends_the_stream_at_its_next_snapshot_cycle(
    browser: Browser, recorder: Recorder, kube: KubeSimulator
) -> None:
    events = stream(browser, scope()).until(synced)
    recorder.deny = lambda call: call.scope.namespace == OPEN
    assert kube.faults.expire_watches() >= 1  # the watch history expires: a new snapshot cycle
    events.until(lambda s: event_types(s).count("reset") >= 2 or terminal_code(s) is not None, what="the next cycle")
    events.drain(0.5)
    assert terminal_code(events) == "FORBIDDEN", event_types(events)
    assert event_types(events).count("synced") == 1  # nothing of the new cycle reached the revoked principal


def test_a_watch_shared_under_the_service_identity_never_serves_a_refused_principal(
    kube: KubeSimulator, host: Flask
) -> None:
    recorder = Recorder(deny=lambda call: call.principal == "viewer")
    shared = make_host(kube, recorder)
    shared.extensions["krm"].extension.client_loader(
        lambda target, principal: None
    )  # one watch per scope, for everyone
    try:
        allowed, refused = Browser(shared, "editor"), Browser(shared, "viewer")
        open_stream = stream(allowed, scope()).until(synced)
        assert OPEN_VALUE in open_stream.text
        for shape in (scope(), scope(name=NAME)):
            joined = stream(refused, shape).until_end()
            assert terminal_code(joined) == "FORBIDDEN" and OPEN_VALUE not in joined.text
        page = refused.open(url("/edit", scope(), name=NAME))
        assert OPEN_VALUE not in page.html and "You may not view this." in page.html
        assert [c.verb for c in recorder.calls if c.principal == "viewer"] == ["watch", "watch", "watch"]
        allowed.close()
    finally:
        shut_down(shared)
