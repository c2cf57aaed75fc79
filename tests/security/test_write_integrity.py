"""Invariants 10, 11 and 13 through the HTTP routes: what a Save may write, and with which preconditions.

A patch holds only editable paths the person changed: attempts through the edit route on status
(spec view), machinery (managedFields, the last-applied annotation), identity and redacted Secret
values are refused and leave nothing to write. Every write carries the uid and resourceVersion
captured with the patch: the simulator's admission hook records what arrived, so a newer version
read in between (or a replacement under the same name) can never be substituted.
"""

from __future__ import annotations

import json
import re
import typing as t
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

import pytest
from flask import Flask

from flask_krm import Scope
from flask_krm.save.writer import WriteRequest, WriteResult
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.testing.simulator.registry import WriteRequest as AdmissionRequest

from .hosts import (
    TARGET,
    Browser,
    Page,
    Recorder,
    admin_writer,
    b64,
    configmap,
    create,
    make_host,
    make_namespace,
    merge_patch,
    read,
    shut_down,
)

NAMESPACE: t.Final = "integrity"
LAST_APPLIED: t.Final = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass
class Writes:
    """What the save hook was asked to write, and what reached the API server."""

    intents: list[dict[str, t.Any]] = field(default_factory=list)
    arrived: list[dict[str, t.Any]] = field(default_factory=list)
    before: t.Callable[[WriteRequest], None] | None = None


@pytest.fixture(scope="module")
def writes() -> Writes:
    return Writes()


@pytest.fixture(scope="module")
def host(kube: KubeSimulator, writes: Writes) -> Iterator[Flask]:
    make_namespace(kube, NAMESPACE)
    app = make_host(kube, Recorder())
    krm = app.extensions["krm"].extension
    inner = krm.hooks.saver

    def recording(request: WriteRequest) -> WriteResult:
        if request.intent is not None:
            writes.intents.append(request.intent.conditional_patch())
        if writes.before is not None:
            before, writes.before = writes.before, None
            before(request)
        return t.cast(WriteResult, inner(request))

    krm.save_hook(recording)

    def admitted(request: AdmissionRequest) -> None:
        if request.namespace == NAMESPACE and request.verb == "patch" and not request.dry_run:
            metadata = request.new.get("metadata") or {}
            writes.arrived.append(
                {
                    "name": request.name,
                    "uid": metadata.get("uid"),
                    "resourceVersion": metadata.get("resourceVersion"),
                    "object": request.new,
                }
            )

    remove = kube.faults.mutate_writes(admitted)
    yield app
    remove()
    shut_down(app)


def editor_page(
    browser: Browser,
    resource: str,
    name: str,
    *,
    group: str = "",
    projection: str = "krm-full/v1",
    policy: tuple[str, ...] = (),
) -> Page:
    scope = Scope(target=TARGET, group=group, version="v1", resource=resource, namespace=NAMESPACE)
    policies = "".join(f"&policy={quote(pointer, safe='')}" for pointer in policy)
    page = browser.open(
        f"/edit?scope={quote(scope.canonical_query(), safe='')}&name={name}&projection={projection}{policies}"
    )
    channel = page.channel().until_text(": connected")
    if 'data-krm-stream="live"' not in page.html:
        channel.until_text('data-krm-stream="live"')
    return page


def edit(browser: Browser, page: Page, op: str, path: list[t.Any], **form: str) -> int:
    editor = page.component("editor")
    return browser.post(
        f"/krm/ui/components/{editor}/edit", {"op": op, "path": json.dumps(path), **form}, page.headers(editor)
    ).status_code


def save(browser: Browser, page: Page, **form: str) -> str:
    editor = page.component("editor")
    body = browser.post(f"/krm/ui/components/{editor}/actions/save", form, page.headers(editor)).get_data(as_text=True)
    found = re.search(r'data-krm-outcome="([^"]+)"', body)
    return found.group(1) if found else body[:300]


MACHINERY_EDITS: t.Final[list[tuple[str, list[t.Any], dict[str, str]]]] = [
    ("set", ["metadata", "managedFields"], {"value": "[]"}),
    ("set", ["metadata", "managedFields", 0, "manager"], {"value": "me"}),
    ("remove_key", ["metadata", "managedFields"], {}),
    ("set", ["metadata", "annotations", LAST_APPLIED], {"value": "{}"}),
    ("add_key", ["metadata", "annotations"], {"key": LAST_APPLIED, "value": "{}"}),
    ("rename_key", ["metadata", "annotations"], {"key": "note", "new_key": LAST_APPLIED}),
    ("set", ["metadata", "uid"], {"value": "forged"}),
    ("set", ["metadata", "resourceVersion"], {"value": "1"}),
    ("set", ["metadata", "name"], {"value": "renamed"}),
    ("add_key", ["metadata"], {"key": "deletionTimestamp", "value": "now"}),
    ("add_key", [], {"key": "status", "value": "x"}),
]


def test_machinery_and_identity_cannot_be_edited_into_a_patch(host: Flask, kube: KubeSimulator, writes: Writes) -> None:
    applied = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": {"greeting": "applied"}})
    create(
        kube,
        NAMESPACE,
        "configmaps",
        configmap("machinery", NAMESPACE, {"greeting": "hello"}, annotations={LAST_APPLIED: applied, "note": "n"}),
    )
    browser = Browser(host, "editor")
    page = editor_page(browser, "configmaps", "machinery")
    for op, path, form in MACHINERY_EDITS:
        assert edit(browser, page, op, path, **form) in (400, 403, 404, 409, 422), (op, path)
    assert save(browser, page) == "nothing-to-save"

    assert edit(browser, page, "add_key", ["metadata", "labels"], key="tier", value="web") == 200
    mark = len(writes.intents)
    assert save(browser, page, krm_confirm="") in ("saved-pending", "saved")
    sent = writes.intents[mark:]
    current = read(kube, NAMESPACE, "configmaps", "machinery")
    assert current is not None
    assert sent == [
        {
            "metadata": {
                "labels": {"tier": "web"},
                "uid": current["metadata"]["uid"],
                "resourceVersion": sent[0]["metadata"]["resourceVersion"],
            }
        }
    ]
    assert current["metadata"]["annotations"][LAST_APPLIED] == applied


def test_status_is_never_written_from_the_spec_view(host: Flask, kube: KubeSimulator, writes: Writes) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "namespace": NAMESPACE},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "api", "image": "api:1"}]},
            },
        },
    }
    answer = admin_writer(kube).request("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", body=deployment)
    assert answer.ok, answer
    browser = Browser(host, "editor")
    page = editor_page(browser, "deployments", "api", group="apps", projection="krm-spec/v1")
    for op, path, form in (
        ("set", ["status", "replicas"], {"value": "9"}),
        ("add_key", ["status"], {"key": "replicas", "value": "9"}),
        ("add_key", [], {"key": "status", "value": "{}"}),
    ):
        assert edit(browser, page, op, path, **form) in (400, 403, 404, 409, 422), (op, path)
    assert edit(browser, page, "set", ["spec", "replicas"], value="3") == 200
    mark = len(writes.intents)
    assert save(browser, page) in ("saved-pending", "saved")
    sent = writes.intents[mark:]
    assert len(sent) == 1 and set(sent[0]) == {"spec", "metadata"} and sent[0]["spec"] == {"replicas": 3}
    assert set(sent[0]["metadata"]) == {"uid", "resourceVersion"}


def test_redacted_secret_values_cannot_be_edited_into_a_patch(host: Flask, kube: KubeSimulator, writes: Writes) -> None:
    create(
        kube,
        NAMESPACE,
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "keys", "namespace": NAMESPACE},
            "data": {"password": b64("hunter2"), "token": b64("t0k3n")},
        },
    )
    browser = Browser(host, "editor")
    page = editor_page(browser, "secrets", "keys")
    for op, path, form in (
        ("set", ["data", "password"], {"value": "mine"}),
        ("remove_key", ["data", "password"], {}),
        ("rename_key", ["data"], {"key": "token", "new_key": "stolen"}),
        ("set", ["data"], {"value": "{}"}),
        ("revert", ["data", "token"], {}),
        ("take_theirs", ["data", "password"], {}),
    ):
        assert edit(browser, page, op, path, **form) in (400, 403, 404, 409, 422), (op, path)
    assert edit(browser, page, "add_key", ["metadata", "labels"], key="rotated", value="no") == 200
    mark = len(writes.intents)
    assert save(browser, page) in ("saved-pending", "saved")
    sent = writes.intents[mark:]
    assert len(sent) == 1 and set(sent[0]) == {"metadata"} and sent[0]["metadata"]["labels"] == {"rotated": "no"}
    assert read(kube, NAMESPACE, "secrets", "keys")["data"] == {"password": b64("hunter2"), "token": b64("t0k3n")}  # type: ignore[index]


def test_a_save_writes_with_the_version_captured_with_its_patch(
    host: Flask, kube: KubeSimulator, writes: Writes
) -> None:
    create(kube, NAMESPACE, "configmaps", configmap("race", NAMESPACE, {"greeting": "hello"}))
    browser = Browser(host, "editor")
    page = editor_page(browser, "configmaps", "race")
    assert edit(browser, page, "set", ["data", "greeting"], value="mine") == 200
    captured = read(kube, NAMESPACE, "configmaps", "race")
    assert captured is not None

    # someone else writes after the Save captured its intent and before the write is sent
    def someone_else_writes(request: WriteRequest) -> None:
        merge_patch(kube, NAMESPACE, "configmaps", "race", {"data": {"other": "theirs"}})

    writes.before = someone_else_writes
    mark = len(writes.arrived)
    outcome = save(browser, page)
    arrived = [
        w for w in writes.arrived[mark:] if w["name"] == "race" and w["object"]["data"].get("greeting") == "mine"
    ]
    assert arrived, writes.arrived[mark:]
    assert {(w["uid"], w["resourceVersion"]) for w in arrived} == {
        (captured["metadata"]["uid"], captured["metadata"]["resourceVersion"])
    }
    assert outcome in ("version-stale", "draft-conflict"), outcome
    after = read(kube, NAMESPACE, "configmaps", "race")
    assert after is not None and after["data"] == {"greeting": "hello", "other": "theirs"}  # nothing was clobbered

    # the deliberate second Save writes with the version it now holds, and succeeds
    page_channel = page.channel().until_text(": connected").drain(0.5)
    page_channel.close()
    mark = len(writes.arrived)
    assert save(browser, page) in ("saved-pending", "saved")
    second = [w for w in writes.arrived[mark:] if w["name"] == "race"]
    assert [(w["uid"], w["resourceVersion"]) for w in second] == [
        (after["metadata"]["uid"], after["metadata"]["resourceVersion"])
    ]
    assert read(kube, NAMESPACE, "configmaps", "race")["data"] == {"greeting": "mine", "other": "theirs"}  # type: ignore[index]


def test_a_replacement_under_the_same_name_is_never_written(host: Flask, kube: KubeSimulator, writes: Writes) -> None:
    original = create(kube, NAMESPACE, "configmaps", configmap("replaced", NAMESPACE, {"greeting": "hello"}))
    browser = Browser(host, "editor")
    page = editor_page(browser, "configmaps", "replaced")
    assert edit(browser, page, "set", ["data", "greeting"], value="mine") == 200
    scope = Scope(target=TARGET, version="v1", resource="configmaps", namespace=NAMESPACE, name="replaced")

    def replace_it(request: WriteRequest) -> None:
        assert admin_writer(kube).delete(scope, uid=original["metadata"]["uid"]).ok
        create(kube, NAMESPACE, "configmaps", configmap("replaced", NAMESPACE, {"greeting": "new object"}))

    writes.before = replace_it
    outcome = save(browser, page)
    assert outcome == "unavailable", outcome  # the uid precondition refused the write
    replacement = read(kube, NAMESPACE, "configmaps", "replaced")
    assert replacement is not None and replacement["metadata"]["uid"] != original["metadata"]["uid"]
    assert replacement["data"] == {"greeting": "new object"}
    assert save(browser, page) != "saved-pending"  # the draft never lands on the replacement
    assert read(kube, NAMESPACE, "configmaps", "replaced")["data"] == {"greeting": "new object"}  # type: ignore[index]


def test_no_answer_to_a_write_carries_the_written_object(host: Flask, kube: KubeSimulator) -> None:
    original = create(
        kube, NAMESPACE, "configmaps", configmap("echo", NAMESPACE, {"greeting": "hello", "kept": "server-only-value"})
    )
    browser = Browser(host, "editor")
    page = editor_page(browser, "configmaps", "echo")
    editor = page.component("editor")
    assert edit(browser, page, "set", ["data", "greeting"], value="written-marker") == 200
    answers = [browser.post(f"/krm/ui/components/{editor}/actions/save", {}, page.headers(editor))]
    answers.append(
        browser.post(f"/krm/ui/components/{editor}/actions/save", {"krm_confirm": "1"}, page.headers(editor))
    )
    written = read(kube, NAMESPACE, "configmaps", "echo")
    assert written is not None and written["data"]["greeting"] == "written-marker"
    patch = {
        "metadata": {"uid": written["metadata"]["uid"], "resourceVersion": written["metadata"]["resourceVersion"]},
        "data": {"greeting": "native-marker"},
    }
    native = browser.client.patch(
        f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps/echo",
        data=json.dumps(patch),
        content_type="application/merge-patch+json",
        headers={"X-KRM-CSRF": browser.csrf_token() or ""},
    )
    assert native.status_code == 204 and native.get_data() == b""
    for answer in answers:
        body = answer.get_data(as_text=True)
        assert answer.status_code == 200 and 'data-krm-outcome="saved' in body
        for echoed in (
            "written-marker",
            "server-only-value",
            original["metadata"]["uid"],
            '"resourceVersion"',
            "managedFields",
        ):
            assert echoed not in body, echoed


def test_a_narrowed_editor_saves_only_what_it_may_edit(host: Flask, kube: KubeSimulator, writes: Writes) -> None:
    """Two editors of one object in one session, one for data and one for labels only: each holds
    its own draft, so a Save from the labels editor sends the labels and never the data edited in
    the other one, which stays unsaved there until its own Save."""
    create(kube, NAMESPACE, "configmaps", configmap("two-editors", NAMESPACE, {"greeting": "hello"}))
    browser = Browser(host, "editor")
    data_page = editor_page(browser, "configmaps", "two-editors", policy=("/data",))
    labels_page = editor_page(browser, "configmaps", "two-editors", policy=("/metadata/labels",))
    assert data_page.component("editor") != labels_page.component("editor")
    assert edit(browser, data_page, "set", ["data", "greeting"], value="data-editor-draft") == 200
    assert edit(browser, labels_page, "set", ["data", "greeting"], value="not-mine-to-edit") == 403
    assert edit(browser, labels_page, "add_key", ["metadata", "labels"], key="tier", value="web") == 200
    assert "data-editor-draft" not in browser.open(labels_page.response.request.url).html

    mark = len(writes.intents)
    assert save(browser, labels_page) in ("saved-pending", "saved")
    sent = writes.intents[mark:]
    assert len(sent) == 1 and set(sent[0]) == {"metadata"}, sent
    assert sent[0]["metadata"]["labels"] == {"tier": "web"}
    current = read(kube, NAMESPACE, "configmaps", "two-editors")
    assert current is not None
    assert current["data"] == {"greeting": "hello"} and current["metadata"]["labels"] == {"tier": "web"}
    assert "data-editor-draft" in browser.open(data_page.response.request.url).html  # still a draft there

    mark = len(writes.intents)
    assert save(browser, data_page) in ("saved-pending", "saved", "draft-conflict", "version-stale")
    if not writes.intents[mark:]:  # the labels write moved the object on: the data editor saves again once current
        data_page.channel().until_text(": connected").drain(0.5).close()
        assert save(browser, data_page) in ("saved-pending", "saved")
    sent = writes.intents[mark:]
    assert sent and all(set(patch) == {"data", "metadata"} and "labels" not in patch["metadata"] for patch in sent), (
        sent
    )
    assert read(kube, NAMESPACE, "configmaps", "two-editors")["data"] == {"greeting": "data-editor-draft"}  # type: ignore[index]
