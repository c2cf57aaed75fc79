"""The Save editor action over Flask: outcome fragments, statuses and wording, writes to the simulator.

The editor's stream is the hand-driven upstream of the UI tests (``tests.ui.conftest.Upstream``);
the test relays what Kubernetes holds into it where a watch would deliver it. Every write goes to
the simulator over HTTP as the signed-in person.
"""

from __future__ import annotations

import base64
import logging
import re
import typing as t
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from flask import Flask, render_template_string
from flask.testing import FlaskClient

from flask_krm import KrmStream
from flask_krm.save.outcomes import OutcomeTexts
from flask_krm.save.writer import KubeWriter
from flask_krm.sessions import SessionDrafts
from flask_krm.testing.simulator import KubeSimulator
from tests.ui.conftest import PageHandle, Upstream, field_id, open_page

from .conftest import admin_delete, signing_in_app, unconditional_patch

EDITOR_PAGE = (
    '{% import "krm/_macros.html" as krm %}<html><head>{{ krm_script() }}</head><body>'
    "{{ krm.editor(scope, name) }}</body></html>"
)
PLAIN = "v3ry-s3cret"
ENCODED = base64.b64encode(PLAIN.encode()).decode()


@pytest.fixture
def app(tmp_path: Path, kube: KubeSimulator, upstream: Upstream) -> Iterator[Flask]:
    app = signing_in_app(tmp_path, "save test secret", ("configmaps", "secrets"))

    @app.get("/edit")
    def edit() -> str:
        from flask import request

        return render_template_string(EDITOR_PAGE, scope=request.args["scope"], name=request.args["name"])

    read_only: set[str] = {"viewer"}
    krm = KrmStream(
        app,
        authorizer=lambda principal, scope, projection, verb: (
            verb in ("watch", "get", "list") or principal.name not in read_only
        ),
        client_loader=lambda target, principal: kube.api_client(principal.name),
    )
    krm.plug_source("dev", upstream.source, app)
    app.config["KRM_SAVE_CONFIRM_TIMEOUT"] = 0.3
    yield app
    krm.shutdown(app)


def client_for(app: Flask, user: str) -> FlaskClient:
    client = app.test_client()
    client.get(f"/login/{user}")
    return client


def scope_query(namespace: str, resource: str = "configmaps") -> str:
    return f"target=dev&version=v1&resource={resource}&namespace={namespace}"


def kube_object(kube: KubeSimulator, namespace: str, name: str, resource: str = "configmaps") -> dict[str, t.Any]:
    answer = KubeWriter(kube.api_client("admin")).request("GET", f"/api/v1/namespaces/{namespace}/{resource}/{name}")
    assert answer.ok and answer.body is not None
    return dict(answer.body)


def create(
    kube: KubeSimulator, namespace: str, body: dict[str, t.Any], resource: str = "configmaps"
) -> dict[str, t.Any]:
    answer = KubeWriter(kube.api_client("admin")).request(
        "POST", f"/api/v1/namespaces/{namespace}/{resource}", body=body
    )
    assert answer.ok and answer.body is not None
    return dict(answer.body)


def open_editor(
    client: FlaskClient,
    upstream: Upstream,
    kube: KubeSimulator,
    namespace: str,
    name: str,
    resource: str = "configmaps",
) -> PageHandle:
    query = scope_query(namespace, resource)
    upstream.snapshot(query, kube_object(kube, namespace, name, resource))
    return open_page(client, f"/edit?scope={quote(query)}&name={name}")


def set_field(page: PageHandle, path: list[t.Any], value: str) -> None:
    import json

    response = page.edit(page.component_ids[0], op="set", path=json.dumps(path), value=value)
    assert response.status_code == 200, response.get_data(as_text=True)


def post_save(page: PageHandle, **form: str) -> t.Any:
    return page.client.post(f"/krm/ui/components/{page.component_ids[0]}/actions/save", data=form, headers=page.headers)


def outcome_kind(response: t.Any) -> str:
    found = re.search(r'data-krm-outcome="([^"]+)"', response.get_data(as_text=True))
    assert found, response.get_data(as_text=True)
    return found.group(1)


@pytest.fixture
def configmap(kube: KubeSimulator, namespace: str) -> dict[str, t.Any]:
    return create(
        kube,
        namespace,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"a": "1", "b": "1"}},
    )


def test_every_editor_has_a_save_button(app: Flask, kube, namespace, upstream, configmap) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    assert f"/krm/ui/components/{page.component_ids[0]}/actions/save" in page.html


def test_save_answers_pending_then_the_echo_confirms(app: Flask, kube, namespace, upstream, configmap) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    set_field(page, ["data", "a"], "mine")
    response = post_save(page)
    body = response.get_data(as_text=True)
    assert response.status_code == 200 and outcome_kind(response) == "saved-pending"
    assert "Saved to Kubernetes; waiting for live confirmation." in body
    assert 'hx-trigger="load"' in body and "krm_confirm" in body
    assert configmap["metadata"]["uid"] not in body and "resourceVersion" not in body  # no object in the answer
    assert kube_object(kube, namespace, "app")["data"] == {"a": "mine", "b": "1"}
    upstream.modified(kube_object(kube, namespace, "app"))  # the watch echo
    confirmed = post_save(page, krm_confirm="1")
    assert confirmed.status_code == 200 and outcome_kind(confirmed) == "saved"


def test_without_an_echo_a_guarded_read_confirms(app: Flask, kube, namespace, upstream, configmap) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    set_field(page, ["data", "a"], "mine")
    assert outcome_kind(post_save(page)) == "saved-pending"
    confirmed = post_save(page, krm_confirm="1")  # no echo relayed: waits 0.3 s, then reads
    assert outcome_kind(confirmed) == "saved"


def test_a_409_is_answered_409_with_the_refreshed_wording(app: Flask, kube, namespace, upstream, configmap) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    set_field(page, ["data", "a"], "mine")
    unconditional_patch(kube, f"/api/v1/namespaces/{namespace}/configmaps/app", {"data": {"b": "colleague"}})
    response = post_save(page)
    assert response.status_code == 409 and outcome_kind(response) == "version-stale"
    assert "Configuration refreshed. Your edits are intact; review and save again." in response.get_data(as_text=True)
    again = post_save(page)
    assert again.status_code == 200 and outcome_kind(again) == "saved-pending"
    assert kube_object(kube, namespace, "app")["data"] == {"a": "mine", "b": "colleague"}


def test_a_422_puts_its_cause_at_the_field_and_the_next_outcome_clears_it(
    app: Flask, kube, namespace, upstream, configmap
) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    cid = page.component_ids[0]
    added = page.edit(cid, op="add_key", path='["metadata", "labels"]', key="tier", value="not valid!")
    assert added.status_code == 200, added.get_data(as_text=True)
    response = post_save(page)
    body = response.get_data(as_text=True)
    assert response.status_code == 422 and outcome_kind(response) == "invalid"
    error_id = field_id(cid, ("metadata", "labels"), "-error")
    assert f'<hx-partial hx-target="#{error_id}" hx-swap="innerHTML"><span class="krm-cause">' in body
    set_field(page, ["metadata", "labels", "tier"], "valid")
    fixed = post_save(page)
    assert outcome_kind(fixed) == "saved-pending"
    assert f'<hx-partial hx-target="#{error_id}" hx-swap="innerHTML"></hx-partial>' in fixed.get_data(as_text=True)


def test_a_principal_without_patch_rights_is_refused_without_a_write(
    app: Flask, kube, namespace, upstream, configmap
) -> None:
    page = open_editor(client_for(app, "viewer"), upstream, kube, namespace, "app")
    cid = page.component_ids[0]
    assert f"/krm/ui/components/{cid}/actions/save" not in page.html  # no Save offered
    set_field(page, ["data", "a"], "mine")
    response = post_save(page)  # a forged Save
    assert response.status_code == 403 and outcome_kind(response) == "access-denied"
    assert (
        kube_object(kube, namespace, "app")["metadata"]["resourceVersion"] == configmap["metadata"]["resourceVersion"]
    )


def test_no_save_while_the_stream_is_not_live(app: Flask, kube, namespace, upstream, configmap) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    set_field(page, ["data", "a"], "mine")
    upstream.fail(scope_query(namespace), "UPSTREAM_UNAVAILABLE", "retrying", terminal=False)
    response = post_save(page)
    assert response.status_code == 503 and outcome_kind(response) == "reconnecting"
    assert "Reconnecting. Your unsaved changes are still here." in response.get_data(as_text=True)
    assert kube_object(kube, namespace, "app")["data"]["a"] == "1"


def test_host_wording_replaces_the_defaults(app: Flask, kube, namespace, upstream, configmap) -> None:
    app.config.update(
        KRM_SAVE_CONFIRM_TIMEOUT=0.3, KRM_OUTCOME_TEXTS=OutcomeTexts({"nothing-to-save": "Nothing changed."})
    )
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    assert "Nothing changed." in post_save(page).get_data(as_text=True)


def test_a_deleted_object_is_unavailable_with_its_recovery_copy(
    app: Flask, kube, namespace, upstream, configmap
) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    set_field(page, ["data", "a"], "mine")
    assert admin_delete(kube, f"/api/v1/namespaces/{namespace}/configmaps/app")
    replacement = create(
        kube, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"a": "new"}}
    )
    response = post_save(page)
    body = response.get_data(as_text=True)
    assert response.status_code == 409 and outcome_kind(response) == "unavailable"
    assert "This configuration was removed. A replacement must be opened separately." in body
    assert replacement["metadata"]["uid"] in body
    assert "krm-recovery-copy" in body and "mine" in body
    assert kube_object(kube, namespace, "app")["data"] == {"a": "new"}


def test_a_reload_after_the_deletion_still_offers_the_recovery_copy_to_its_session_only(
    app: Flask, kube, namespace, upstream, configmap
) -> None:
    client = client_for(app, "editor")
    page = open_editor(client, upstream, kube, namespace, "app")
    set_field(page, ["data", "a"], "mine")
    assert admin_delete(kube, f"/api/v1/namespaces/{namespace}/configmaps/app")
    upstream.deleted(configmap)
    url = f"/edit?scope={quote(scope_query(namespace))}&name=app"
    reloaded = open_page(client, url)
    assert "This configuration was deleted while you had unsaved changes." in reloaded.html
    assert "krm-recovery-copy" in reloaded.html and "mine" in reloaded.html
    assert "krm-recovery-copy" not in open_page(client_for(app, "viewer"), url).html  # another person's session
    replacement = create(
        kube, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"a": "new"}}
    )
    upstream.added(replacement)
    client.get("/login/editor")  # the viewer's sign-in above is what the test's shared g remembers
    opened = open_page(client, url)  # a page opened after the name was taken again edits the new object
    assert "krm-recovery-copy" not in opened.html and 'value="new"' in opened.html


def test_a_secret_label_saves_and_no_byte_or_log_line_holds_its_value(
    app: Flask, kube, namespace, upstream, caplog
) -> None:
    create(
        kube,
        namespace,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "data": {"token": ENCODED}},
        "secrets",
    )
    caplog.set_level(logging.DEBUG)
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "creds", "secrets")
    added = page.edit(page.component_ids[0], op="add_key", path='["metadata", "labels"]', key="team", value="payments")
    assert added.status_code == 200, added.get_data(as_text=True)
    response = post_save(page)
    assert outcome_kind(response) == "saved-pending"
    upstream.modified(kube_object(kube, namespace, "creds", "secrets"))
    confirmed = post_save(page, krm_confirm="1")
    secret = kube_object(kube, namespace, "creds", "secrets")
    assert secret["metadata"]["labels"] == {"team": "payments"} and secret["data"] == {"token": ENCODED}
    sent = page.html + response.get_data(as_text=True) + confirmed.get_data(as_text=True) + caplog.text
    assert ENCODED not in sent and PLAIN not in sent


def test_an_echo_arriving_while_waiting_confirms_at_once(app: Flask, kube, namespace, upstream, configmap) -> None:
    import time

    import gevent

    app.config["KRM_SAVE_CONFIRM_TIMEOUT"] = 10.0
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    set_field(page, ["data", "a"], "mine")
    assert outcome_kind(post_save(page)) == "saved-pending"
    started = time.monotonic()
    waiting = gevent.spawn(post_save, page, krm_confirm="1")
    gevent.sleep(0.1)
    assert not waiting.ready()
    upstream.modified(kube_object(kube, namespace, "app"))
    confirmed = waiting.get(timeout=5)
    assert outcome_kind(confirmed) == "saved" and time.monotonic() - started < 5


def test_typing_in_the_saved_field_makes_its_echo_a_conflict_there(
    app: Flask, kube, namespace, upstream, configmap
) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    cid = page.component_ids[0]
    set_field(page, ["data", "a"], "mine")
    assert outcome_kind(post_save(page)) == "saved-pending"
    set_field(page, ["data", "a"], "mine, and more")  # typed while the save is in flight
    upstream.modified(kube_object(kube, namespace, "app"))
    confirmed = post_save(page, krm_confirm="1")
    body = confirmed.get_data(as_text=True)
    assert confirmed.status_code == 409 and outcome_kind(confirmed) == "draft-conflict"
    assert f'<a href="#{field_id(cid, ("data", "a"))}-field">/data/a</a>' in body
    keep = page.edit(cid, op="keep_mine", path='["data", "a"]')
    assert keep.status_code == 200
    assert outcome_kind(post_save(page)) == "saved-pending"
    assert kube_object(kube, namespace, "app")["data"]["a"] == "mine, and more"


def test_a_save_while_another_holds_the_editors_lock_is_busy_and_writes_nothing(
    app: Flask, kube, namespace, upstream, configmap, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    set_field(page, ["data", "a"], "mine")
    asked: list[str] = []

    def held(self: SessionDrafts, name: str, ttl: float) -> int | None:
        asked.append(name)
        return None

    monkeypatch.setattr(SessionDrafts, "lock", held)
    assert outcome_kind(post_save(page)) == "busy"
    assert len(asked) == 1 and asked[0].startswith("flow:") and asked[0].endswith(":" + configmap["metadata"]["uid"])
    assert kube_object(kube, namespace, "app")["data"] == {"a": "1", "b": "1"}
    monkeypatch.undo()
    assert outcome_kind(post_save(page)) == "saved-pending"
