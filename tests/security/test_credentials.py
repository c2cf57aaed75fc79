"""Invariant 15 (second half): the browser never supplies an API-server address or a credential.

Query parameters naming an address, a credential or an identity to act as are refused by the
stream endpoint (a terminal ``SCOPE_INVALID``) and by every other ``krm`` route (400, or a close
event on a page channel); routes outside the blueprint that ignore them must do so without effect.
Request headers naming an identity (``Authorization``, ``Impersonate-User``) are never forwarded:
the person acts only as themselves. The native proxy's verb is what Kubernetes will do, however
the ``watch`` flag is spelled.
"""

from __future__ import annotations

import json
import typing as t
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from flask import Flask

from flask_krm import Scope
from flask_krm.testing.simulator import KubeSimulator

from .conftest import CapturedLogs
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

NAMESPACE: t.Final = "creds"
READ_ONLY: t.Final = "creds-read-only"
NAME: t.Final = "target-config"

PROBES: t.Final = (
    ("server", "http://127.0.0.1:9"),
    ("host", "127.0.0.1:9"),
    ("url", "http://127.0.0.1:9"),
    ("apiServer", "http://127.0.0.1:9"),
    ("token", "admin-token"),
    ("bearer_token", "admin-token"),
    ("kubeconfig", "/etc/kubernetes/admin.conf"),
    ("context", "admin"),
    ("cluster", "other"),
    ("user", "admin"),
    ("as", "admin"),
    ("as-group", "system:masters"),
    ("impersonate-user", "admin"),
    ("Impersonate-Group", "system:masters"),
    ("impersonate_uid", "0"),
    ("Impersonate-Extra-Scopes", "all"),
    ("client-key-data", "LS0t"),
)
"""(parameter, value) pairs a browser could add to any URL."""

IDENTITY_HEADERS: t.Final = {
    "Authorization": "Bearer admin-token",
    "Impersonate-User": "admin",
    "Impersonate-Group": "system:masters",
}


@pytest.fixture(scope="module")
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(scope="module")
def host(kube: KubeSimulator, recorder: Recorder) -> Iterator[Flask]:
    make_namespace(kube, NAMESPACE)
    make_namespace(kube, READ_ONLY, editable=False)
    for namespace in (NAMESPACE, READ_ONLY):
        create(kube, namespace, "configmaps", configmap(NAME, namespace, {"greeting": "hello"}))
    kube.add_user("outsider")  # a Kubernetes user without any role
    app = make_host(kube, recorder)
    yield app
    shut_down(app)


def scope(namespace: str = NAMESPACE, name: str = "") -> Scope:
    return Scope(target=TARGET, version="v1", resource="configmaps", namespace=namespace, name=name)


def page_url(path: str, scope_: Scope, **params: str) -> str:
    extra = "".join(f"&{k}={quote(v, safe='')}" for k, v in params.items())
    return f"{path}?scope={quote(scope_.canonical_query(), safe='')}{extra}"


@pytest.mark.parametrize(("parameter", "value"), PROBES, ids=[p for p, _ in PROBES])
def test_the_stream_refuses_an_address_or_credential_parameter(parameter: str, value: str, host: Flask) -> None:
    browser = Browser(host, "editor")
    query = f"{scope(name=NAME).canonical_query()}&{quote(parameter)}={quote(value, safe='')}"
    events = browser.stream(f"{STREAM_URL}?{query}").until_end()
    assert event_types(events) == ["error"]
    assert terminal_code(events) == "SCOPE_INVALID"
    assert "hello" not in events.text


@pytest.mark.parametrize(("parameter", "value"), PROBES, ids=[p for p, _ in PROBES])
def test_every_other_krm_route_refuses_them(parameter: str, value: str, host: Flask) -> None:
    browser = Browser(host, "editor")
    page = browser.open(page_url("/edit", scope(), name=NAME))
    editor = page.component("editor")
    suffix = f"?{quote(parameter)}={quote(value, safe='')}"
    edit = browser.post(
        f"/krm/ui/components/{editor}/edit{suffix}",
        {"op": "add_key", "path": '["data"]', "key": "probe", "value": "x"},
        page.headers(editor),
    )
    save = browser.post(f"/krm/ui/components/{editor}/actions/save{suffix}", {}, page.headers(editor))
    for response in (edit, save):
        assert response.status_code == 400, response.get_data(as_text=True)
        assert "names an API server" in response.get_data(as_text=True)
    channel = browser.stream(f"{page.channel_url}{suffix}").until_end()
    assert "krm-close" in channel.text and "names an API server" in channel.text
    assert "probe" not in browser.open(page_url("/edit", scope(), name=NAME)).html  # the edit never happened


def test_identity_headers_and_parameters_never_change_who_acts(host: Flask, kube: KubeSimulator) -> None:
    outsider = Browser(host, "outsider")
    events = outsider.stream(f"{STREAM_URL}?{scope(name=NAME).canonical_query()}", IDENTITY_HEADERS).until_end()
    assert terminal_code(events) == "FORBIDDEN" and "hello" not in events.text  # Kubernetes refused the outsider

    outsider.open(page_url("/list", scope()))
    for path in (
        f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps",
        f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps/{NAME}",
    ):
        response = outsider.client.get(path, headers=IDENTITY_HEADERS)
        assert response.status_code == 403, response.get_data(as_text=True)
        assert "hello" not in response.get_data(as_text=True)
    for parameter, value in PROBES:
        response = outsider.client.get(
            f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps?{quote(parameter)}={quote(value, safe='')}"
        )
        assert response.status_code == 400, parameter

    current = read(kube, READ_ONLY, "configmaps", NAME)
    assert current is not None
    patch = {
        "metadata": {"uid": current["metadata"]["uid"], "resourceVersion": current["metadata"]["resourceVersion"]},
        "data": {"greeting": "hijacked"},
    }
    editor = Browser(host, "editor")
    editor.open(page_url("/list", scope()))
    response = editor.client.patch(
        f"/k8s/api/v1/namespaces/{READ_ONLY}/configmaps/{NAME}",
        data=json.dumps(patch),
        content_type="application/merge-patch+json",
        headers={**IDENTITY_HEADERS, **csrf_headers(editor.csrf_token())},
    )
    assert response.status_code == 403  # as editor, who may not write there
    query = "&".join(f"{quote(p)}={quote(v, safe='')}" for p, v in PROBES)
    response = editor.client.patch(
        f"/k8s/api/v1/namespaces/{READ_ONLY}/configmaps/{NAME}?{query}",
        data=json.dumps(patch),
        content_type="application/merge-patch+json",
        headers=csrf_headers(editor.csrf_token()),
    )
    assert response.status_code == 400
    assert read(kube, READ_ONLY, "configmaps", NAME)["data"] == {"greeting": "hello"}  # type: ignore[index]


def test_a_save_acts_as_the_person_whatever_the_request_says(host: Flask, kube: KubeSimulator) -> None:
    browser = Browser(host, "editor")
    page = browser.open(page_url("/edit", scope(READ_ONLY), name=NAME))
    editor = page.component("editor")
    headers = {**page.headers(editor), **IDENTITY_HEADERS}
    assert (
        browser.post(
            f"/krm/ui/components/{editor}/edit",
            {"op": "set", "path": '["data", "greeting"]', "value": "hijacked"},
            headers,
        ).status_code
        == 200
    )
    channel = page.channel().until_text(": connected")
    channel.until(lambda s: 'data-krm-stream="live"' in s.text or "hijacked" in s.text, what="the live editor")
    saved = browser.post(f"/krm/ui/components/{editor}/actions/save", {}, headers)
    channel.close()
    assert saved.status_code == 403, saved.get_data(as_text=True)
    assert 'data-krm-outcome="access-denied"' in saved.get_data(as_text=True)
    assert read(kube, READ_ONLY, "configmaps", NAME)["data"] == {"greeting": "hello"}  # type: ignore[index]


@pytest.mark.parametrize(("parameter", "value"), PROBES, ids=[p for p, _ in PROBES])
def test_review_routes_refuse_them_too(parameter: str, value: str, host: Flask, kube: KubeSimulator) -> None:
    browser = Browser(host, "editor")
    page = browser.open(page_url("/list", scope(), column="/metadata/uid"))
    listed = page.component("list")
    target = read(kube, NAMESPACE, "configmaps", NAME)
    assert target is not None
    suffix = f"?{quote(parameter)}={quote(value, safe='')}"
    headers = {**page.headers(listed), **IDENTITY_HEADERS}
    answers = [
        browser.client.get(f"/krm/review/{listed}{suffix}", headers=headers),
        browser.post(
            f"/krm/review/{listed}/create{suffix}",
            {"body": json.dumps({"metadata": {"name": "probe"}, "data": {}})},
            headers,
        ),
        browser.post(f"/krm/review/{listed}/delete{suffix}", {"uid": target["metadata"]["uid"]}, headers),
        browser.post(f"/krm/review/{listed}/discard{suffix}", {"key": target["metadata"]["uid"]}, headers),
        browser.post(f"/krm/review/{listed}/save{suffix}", {}, headers),
    ]
    for response in answers:
        assert response.status_code == 400, response.get_data(as_text=True)
        assert "names an API server" in response.get_data(as_text=True)
    review = browser.client.get(f"/krm/review/{listed}", headers=page.headers(listed)).get_data(as_text=True)
    assert "data-krm-review-kind" not in review  # nothing was staged
    assert read(kube, NAMESPACE, "configmaps", NAME) is not None


def watch_through_the_proxy(host: Flask, recorder: Recorder, spelling: str) -> tuple[int, str]:
    """A principal refused ``watch`` (but allowed ``list``) asks the proxy for a watch."""
    recorder.deny = lambda call: call.verb == "watch"
    try:
        response = Browser(host, "editor").client.get(
            f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps?watch={spelling}&timeoutSeconds=1"
        )
        return response.status_code, response.get_data(as_text=True)
    finally:
        recorder.deny = lambda call: False


@pytest.mark.parametrize("spelling", ["true", "1"])
def test_the_native_proxy_refuses_a_watch_the_authorizer_refuses(
    spelling: str, host: Flask, recorder: Recorder
) -> None:
    status, body = watch_through_the_proxy(host, recorder, spelling)
    assert status == 403 and '"type"' not in body
    assert recorder.calls[-1] == Call("editor", scope(), "native", "watch")


@pytest.mark.parametrize("spelling", ["True", "TRUE", "t", "T"])
def test_the_native_proxy_authorizes_a_watch_however_it_is_spelled(
    spelling: str, host: Flask, recorder: Recorder
) -> None:
    status, body = watch_through_the_proxy(host, recorder, spelling)
    assert status == 403 and '"type"' not in body, body[:300]  # no watch event came through
    assert recorder.calls[-1] == Call("editor", scope(), "native", "watch")


@pytest.mark.parametrize("spelling", ["", "yes", "on", "FaLsE", "tRUE", "2", "true "])
def test_the_native_proxy_refuses_a_watch_flag_it_cannot_read(spelling: str, host: Flask, recorder: Recorder) -> None:
    """Kubernetes reads every value but 0 and false as true: a value that is neither spelling is
    refused before anyone is asked, never taken for a list."""
    mark = len(recorder.calls)
    status, body = watch_through_the_proxy(host, recorder, quote(spelling))
    assert status == 400 and "watch" in body and '"type"' not in body, body[:300]
    assert recorder.since(mark) == []


@pytest.mark.parametrize("spelling", ["0", "f", "F", "false", "False", "FALSE"])
def test_a_false_watch_flag_is_a_list_and_is_not_forwarded(spelling: str, host: Flask, recorder: Recorder) -> None:
    """A false flag is authorized as ``list`` and dropped from the forwarded query, so the API
    server (which would read ``f`` as true) lists too."""
    status, body = watch_through_the_proxy(host, recorder, spelling)
    assert status == 200 and json.loads(body)["kind"] == "ConfigMapList", body[:300]
    assert recorder.calls[-1] == Call("editor", scope(), "native", "list")


def test_the_native_proxy_refuses_a_repeated_parameter(host: Flask, recorder: Recorder) -> None:
    mark = len(recorder.calls)
    status, body = watch_through_the_proxy(host, recorder, "false&watch=true")
    assert status == 400 and "more than once" in body
    assert recorder.since(mark) == []


def test_the_targets_credential_never_leaves_the_server(
    host: Flask, kube: KubeSimulator, debug_logs: CapturedLogs
) -> None:
    """The target acts with the admin context's bearer token; no answer and no log line holds it."""
    credential = "admin-token"
    browser = Browser(host, "editor")
    sent: list[str] = []
    events = browser.stream(f"{STREAM_URL}?{scope(name=NAME).canonical_query()}").until(
        lambda s: "synced" in event_types(s)
    )
    sent.append(events.text)
    page = browser.open(page_url("/both", scope(), name=NAME, column="/metadata/uid"))
    sent.append(page.html)
    editor = page.component("editor")
    channel = page.channel().until_text(": connected")
    for response in (
        browser.post(
            f"/krm/ui/components/{editor}/edit",
            {"op": "add_key", "path": '["metadata", "labels"]', "key": "seen", "value": "yes"},
            page.headers(editor),
        ),
        browser.post(f"/krm/ui/components/{editor}/actions/save", {}, page.headers(editor)),
        browser.post(f"/krm/ui/components/{editor}/actions/save", {"krm_confirm": "1"}, page.headers(editor)),
        browser.client.get(f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps/{NAME}"),
        browser.client.get(f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps?watch=true&timeoutSeconds=1"),
        browser.client.get(f"/krm/review/{page.component('list')}", headers=page.headers()),
    ):
        assert response.status_code < 500
        sent.append(str(response.headers) + response.get_data(as_text=True))
    sent.append(channel.drain(0.3).text)
    browser.close()
    assert read(kube, NAMESPACE, "configmaps", NAME)["metadata"]["labels"] == {"seen": "yes"}  # type: ignore[index]
    assert credential not in "\n".join(sent)
    assert credential not in debug_logs.text
    assert any(line.startswith("urllib3") and "DEBUG" in line for line in debug_logs.lines)  # DEBUG lines were captured


def test_the_example_pages_ignore_such_parameters_without_effect(kube: KubeSimulator, host: Flask) -> None:
    from .hosts import make_example

    example = make_example(kube)
    try:
        viewer = Browser(example, "viewer")
        query = "?" + "&".join(f"{quote(p)}={quote(v, safe='')}" for p, v in PROBES)
        plain = viewer.open("/namespaces/demo/configmaps/app-config")
        probed = viewer.open(f"/namespaces/demo/configmaps/app-config{query}")
        assert list(probed.components) == list(plain.components)  # the same components, the same scope
        assert "read-only" in probed.html and 'data-krm-stream="live"' in probed.html
        editor = probed.component("editor")
        answer = viewer.post(f"/krm/ui/components/{editor}/actions/save{query}", {}, probed.headers(editor))
        assert answer.status_code == 400  # refused outright by the krm blueprint
        answer = viewer.post(
            f"/krm/ui/components/{editor}/actions/save", {}, {**probed.headers(editor), **IDENTITY_HEADERS}
        )
        assert answer.status_code == 403 and 'data-krm-outcome="access-denied"' in answer.get_data(as_text=True)
        viewer.close()
    finally:
        shut_down(example)
