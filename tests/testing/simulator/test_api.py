"""The simulator's WSGI application driven in-process: URL layout, authentication, impersonation,
authorization, dispatch, and the failures it answers in kube-apiserver's form."""

from __future__ import annotations

import json
import typing as t
from collections.abc import Iterator

import pytest
from werkzeug.test import Client, TestResponse

from flask_krm.testing.simulator.api import HEADER_LINES, ApiServer
from flask_krm.testing.simulator.authentication import User
from flask_krm.testing.simulator.identities import DEMO_USERS, namespace_rbac_objects
from flask_krm.testing.simulator.server import build_server, install_rbac
from flask_krm.testing.simulator.watch import WatchSettings

CONFIGMAPS = "/api/v1/namespaces/demo/configmaps"


@pytest.fixture
def application() -> ApiServer:
    """The demo users on a server with a ``demo`` namespace (the editor's) holding config map ``app``."""
    server = build_server(DEMO_USERS, None, WatchSettings(), resource_version_wait=0.05)
    install_rbac(server.registry, namespace_rbac_objects("demo"))
    return server


@pytest.fixture
def client(application: ApiServer) -> Iterator[Client]:
    client = Client(application)
    assert call(client, "POST", CONFIGMAPS, body={"metadata": {"name": "app"}, "data": {"k": "v"}}).status_code == 201
    yield client


def call(
    client: Client,
    method: str,
    path: str,
    user: str | None = "admin",
    body: t.Any = None,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
    impersonate: list[tuple[str, str]] | None = None,
    **query: str,
) -> TestResponse:
    sent = dict(headers or {})
    if user is not None:
        sent["Authorization"] = f"Bearer {user}-token"
    return client.open(
        path,
        method=method,
        headers=sent,
        query_string=query,
        data=None if body is None else json.dumps(body),
        content_type=content_type,
        environ_overrides={HEADER_LINES: impersonate or []},
    )


def status(response: TestResponse) -> tuple[int, str, str]:
    body = response.get_json()
    assert body["kind"] == "Status" and body["code"] == response.status_code
    return response.status_code, body.get("reason", ""), body["message"]


def test_health_needs_no_token_and_everything_else_does(client: Client) -> None:
    health = call(client, "GET", "/readyz", user=None)
    assert (health.status_code, health.data) == (200, b"ok")
    assert status(call(client, "GET", CONFIGMAPS, user=None)) == (401, "Unauthorized", "Unauthorized")
    assert status(call(client, "GET", CONFIGMAPS, user="stranger"))[0] == 401


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/configmaps/app",  # a namespaced resource by name without its namespace
        "/apis/apps/v1/namespaces/demo/deployments/web/rollback",
        "/api/v1/namespaces/demo/pods",
        "/api/v1/namespaces/demo/configmaps/app/status/extra",
        "/api/v1/namespaces/demo/namespaces/demo",  # namespaces are not namespaced
        "/api/v1/namespaces/demo/namespaces",
        "/metrics",
    ],
)
def test_urls_that_name_no_served_resource_are_404(client: Client, path: str) -> None:
    assert status(call(client, "GET", path)) == (404, "NotFound", "the server could not find the requested resource")


def test_a_list_across_namespaces_is_served_at_the_cluster_path(client: Client) -> None:
    listed = call(client, "GET", "/api/v1/configmaps")
    assert listed.status_code == 200 and [item["metadata"]["name"] for item in listed.get_json()["items"]] == ["app"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", f"{CONFIGMAPS}/app"),
        ("PUT", CONFIGMAPS),
        ("OPTIONS", f"{CONFIGMAPS}/app"),
        ("DELETE", "/api/v1/namespaces"),  # namespaces have no deletecollection
        ("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        ("DELETE", "/apis/apps/v1/namespaces/demo/deployments/web/status"),
        ("POST", "/apis/apps/v1"),
    ],
)
def test_verbs_a_resource_does_not_serve_are_405(client: Client, method: str, path: str) -> None:
    assert status(call(client, method, path))[:2] == (405, "MethodNotAllowed")


def test_requests_are_authorized_for_the_signed_in_user(client: Client) -> None:
    assert call(client, "GET", f"{CONFIGMAPS}/app", user="viewer").status_code == 200
    refused = call(
        client, "PATCH", f"{CONFIGMAPS}/app", user="viewer", body={}, content_type="application/merge-patch+json"
    )
    assert status(refused) == (
        403,
        "Forbidden",
        'configmaps "app" is forbidden: User "viewer" cannot patch resource "configmaps" in API group "" '
        'in the namespace "demo"',
    )
    patched = call(
        client,
        "PATCH",
        f"{CONFIGMAPS}/app",
        user="editor",
        body={"data": {"k": "w"}},
        content_type="application/merge-patch+json",
    )
    assert patched.status_code == 200 and patched.get_json()["data"] == {"k": "w"}


def test_a_list_narrowed_to_one_name_is_authorized_as_that_name(application: ApiServer, client: Client) -> None:
    application.authenticator.add(User("reader", "reader-token"))
    install_rbac(
        application.registry,
        [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "one", "namespace": "demo"},
                "rules": [
                    {"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["app"]}
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "one", "namespace": "demo"},
                "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "reader"}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "one"},
            },
        ],
    )
    narrowed = call(client, "GET", CONFIGMAPS, user="reader", fieldSelector="metadata.name=app")
    assert narrowed.status_code == 200 and len(narrowed.get_json()["items"]) == 1
    assert status(call(client, "GET", CONFIGMAPS, user="reader", fieldSelector="metadata.name=other"))[0] == 403
    whole = call(client, "GET", CONFIGMAPS, user="reader")
    assert status(whole)[0] == 403 and status(whole)[2].startswith("configmaps is forbidden: ")
    malformed = call(client, "GET", CONFIGMAPS, user="reader", fieldSelector="metadata.name=app,data.x=1")
    assert status(malformed)[0] == 403, "a selector that does not parse narrows nothing"


def test_impersonation_acts_as_the_wanted_user(client: Client) -> None:
    as_viewer = [("Impersonate-User", "viewer")]
    refused = call(
        client,
        "PATCH",
        f"{CONFIGMAPS}/app",
        body={},
        content_type="application/merge-patch+json",
        impersonate=as_viewer,
    )
    assert status(refused)[0] == 403 and 'User "viewer" cannot patch' in status(refused)[2]
    not_allowed = call(client, "GET", f"{CONFIGMAPS}/app", user="editor", impersonate=as_viewer)
    assert (
        status(not_allowed)[0] == 403 and 'User "editor" cannot impersonate-on:user-info:get' in status(not_allowed)[2]
    )
    group_only = call(client, "GET", CONFIGMAPS, impersonate=[("Impersonate-Group", "x")])
    assert status(group_only)[0] == 400


def test_a_self_subject_access_review_is_answered_for_the_requester(client: Client) -> None:
    body = {"spec": {"resourceAttributes": {"verb": "patch", "resource": "configmaps", "namespace": "demo"}}}
    answered = call(client, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", user="editor", body=body)
    assert answered.status_code == 201 and answered.get_json()["status"]["allowed"] is True
    answered = call(client, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", user="viewer", body=body)
    assert answered.get_json()["status"] == {"allowed": False}


def test_patch_types_a_resource_does_not_take_are_415(client: Client) -> None:
    built_in = call(client, "PATCH", f"{CONFIGMAPS}/app", body={}, content_type="text/plain")
    assert status(built_in) == (415, "UnsupportedMediaType", "415: Unsupported Media Type")
    flunder = "/apis/wardle.example.com/v1alpha1/namespaces/demo/flunders/f"
    custom = call(client, "PATCH", flunder, body={}, content_type="application/strategic-merge-patch+json")
    assert status(custom)[0] == 415 and "accepted media types include: application/json-patch+json" in status(custom)[2]


def test_a_dry_run_stores_nothing(application: ApiServer, client: Client) -> None:
    version = application.store.resource_version
    created = call(client, "POST", CONFIGMAPS, body={"metadata": {"name": "dry"}}, dryRun="All")
    assert created.status_code == 201 and created.get_json()["metadata"]["name"] == "dry"
    assert "resourceVersion" not in created.get_json()["metadata"]
    assert application.store.resource_version == version and call(client, "GET", f"{CONFIGMAPS}/dry").status_code == 404


def test_a_field_manager_defaults_to_the_user_agent(client: Client) -> None:
    created = call(
        client,
        "POST",
        CONFIGMAPS,
        body={"metadata": {"name": "ua"}, "data": {"k": "v"}},
        headers={"User-Agent": "kubectl/v1.37"},
    )
    assert [entry["manager"] for entry in created.get_json()["metadata"]["managedFields"]] == ["kubectl"]
    named = call(client, "POST", CONFIGMAPS, body={"metadata": {"name": "fm"}, "data": {"k": "v"}}, fieldManager="krm")
    assert [entry["manager"] for entry in named.get_json()["metadata"]["managedFields"]] == ["krm"]


def test_warnings_of_a_warned_write_are_warning_headers(client: Client) -> None:
    created = call(client, "POST", CONFIGMAPS, body={"metadata": {"name": "w"}, "extra": 1}, fieldValidation="Warn")
    assert created.status_code == 201 and created.headers.getlist("Warning") == ['299 - "unknown field \\"extra\\""']


def test_read_versions_wait_for_the_store_then_fail(client: Client) -> None:
    assert status(call(client, "GET", f"{CONFIGMAPS}/app", resourceVersion="999"))[:2] == (504, "Timeout")
    assert status(call(client, "GET", f"{CONFIGMAPS}/app", resourceVersion="12x")) == (
        500,
        "",
        'resourceVersion: Invalid value: "12x": strconv.ParseUint: parsing "12x": invalid syntax',
    )
    assert call(client, "GET", f"{CONFIGMAPS}/app", resourceVersion="1").status_code == 200


def test_bad_json_is_a_bad_request_and_failures_follow_accept(client: Client) -> None:
    broken = client.post(
        CONFIGMAPS, data="{", content_type="application/json", headers={"Authorization": "Bearer admin-token"}
    )
    assert status(broken)[:2] == (400, "BadRequest") and "json parse error" in status(broken)[2]
    as_yaml = call(client, "GET", f"{CONFIGMAPS}/missing", headers={"Accept": "application/yaml"})
    assert as_yaml.status_code == 404 and as_yaml.content_type == "application/yaml"
    assert "reason: NotFound" in as_yaml.get_data(as_text=True)


def test_a_simulator_bug_is_a_500_naming_it(
    application: ApiServer, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise KeyError("oops")

    monkeypatch.setattr(application.registry, "get", broken)
    assert status(call(client, "GET", f"{CONFIGMAPS}/app")) == (
        500,
        "InternalError",
        "Internal error occurred: KeyError: 'oops'",
    )


def test_a_delete_that_orphans_nothing_and_waits_on_finalizers_is_202(client: Client) -> None:
    call(client, "POST", CONFIGMAPS, body={"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    deleted = call(client, "DELETE", f"{CONFIGMAPS}/held", body={"orphanDependents": False})
    assert deleted.status_code == 202 and deleted.get_json()["metadata"]["deletionTimestamp"]
    assert call(client, "DELETE", f"{CONFIGMAPS}/app").status_code == 200


def test_delete_collection_deletes_what_the_list_selects(client: Client) -> None:
    call(client, "POST", CONFIGMAPS, body={"metadata": {"name": "b", "labels": {"x": "1"}}})
    deleted = call(client, "DELETE", CONFIGMAPS, labelSelector="x=1")
    assert [item["metadata"]["name"] for item in deleted.get_json()["items"]] == ["b"]
    assert [item["metadata"]["name"] for item in call(client, "GET", CONFIGMAPS).get_json()["items"]] == ["app"]


def test_a_lost_write_response_drops_the_connection_after_the_write(application: ApiServer, client: Client) -> None:
    from flask_krm.testing.simulator.watch import ConnectionDropped

    application.faults.lost_write_responses = 1
    assert call(client, "POST", CONFIGMAPS, body={"metadata": {"name": "d"}}, dryRun="All").status_code == 201
    with pytest.raises(ConnectionDropped):
        call(client, "POST", CONFIGMAPS, body={"metadata": {"name": "lost"}})
    assert call(client, "GET", f"{CONFIGMAPS}/lost").status_code == 200 and application.faults.lost_write_responses == 0


def test_a_refusing_server_answers_503_when_asked_to(application: ApiServer, client: Client) -> None:
    import time

    application.faults.refuse_until = time.monotonic() + 60
    application.faults.refuse_with_503 = True
    assert status(call(client, "GET", CONFIGMAPS))[:2] == (503, "ServiceUnavailable")


def test_a_watch_replays_history_and_forgets_its_watcher_when_closed(application: ApiServer, client: Client) -> None:
    response = client.get(
        CONFIGMAPS,
        query_string={"watch": "1", "resourceVersion": "1"},
        headers={"Authorization": "Bearer admin-token"},
        buffered=False,
    )
    assert response.status_code == 200 and len(application.watchers) == 1
    first = json.loads(next(chunk for chunk in response.response if chunk))  # the headers are sent first
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "app")
    response.close()
    assert application.watchers == set()
