"""Invariant 6: under krm-full/v1 and krm-spec/v1, no Secret value is in any byte the server sends
or in any log line.

A Secret with distinctive values (also copied, as kubectl does, into the last-applied annotation)
is driven through every path that could carry it: the JSON stream, page channel fragments, editor
and list pages, field edits, every save outcome (saved, 409, 422 echoing the value, unknown,
refused, denied), the review list (create, 422 on create, delete), the audit signals and the
example's audit page, error responses, and every log line at DEBUG level from every logger. A
rotation of a value must show as a redaction revision bump, still without the value. Every value
is looked for as is, base64-encoded (padded and not), JSON-escaped and HTML-escaped.
"""

from __future__ import annotations

import json
import secrets
import typing as t
from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest
from flask import Flask
from werkzeug.test import TestResponse

from flask_krm import Scope, signals
from flask_krm.save.publish import write_attempted
from flask_krm.save.writer import WriteRequest, WriteResult
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.testing.simulator.errors import FieldError, invalid
from flask_krm.testing.simulator.registry import WriteRequest as AdmissionRequest

from .conftest import CapturedLogs
from .hosts import (
    STREAM_URL,
    TARGET,
    Browser,
    Page,
    Recorder,
    Stream,
    b64,
    create,
    event_types,
    forms,
    leaks,
    make_example,
    make_host,
    merge_patch,
    read,
    shut_down,
)

NAMESPACE: t.Final = "demo"
NAME: t.Final = "vault"
PROJECTIONS: t.Final = ("krm-full/v1", "krm-spec/v1")
EDITOR_URL: t.Final = f"/namespaces/{NAMESPACE}/secrets/{NAME}"

VALUES: list[str] = []
"""Every value the Secret ever held in this module (rotations add to it)."""


def new_value(prefix: str) -> str:
    value = f"{prefix}-{secrets.token_hex(10)}"
    VALUES.append(value)
    return value


def needles() -> list[str]:
    return forms(*VALUES)


KAPP_ORIGINAL: t.Final = "kapp.k14s.io/original"
BACKUP: t.Final = "backup.example.com/copy"
"""Annotations in which other tools keep copies of the Secret, values included."""
COPY_PATHS: t.Final = ("/metadata/annotations/backup.example.com~1copy", "/metadata/annotations/kapp.k14s.io~1original")


def kapp_copy(value: str) -> str:
    return json.dumps(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": NAME}, "data": {"password": b64(value)}}
    )


def rotate(kube: KubeSimulator, key: str = "password") -> str:
    """Someone changes one value of the Secret; returns the new value."""
    value = new_value(f"rotated-{key}")
    merge_patch(kube, NAMESPACE, "secrets", NAME, {"data": {key: b64(value)}})
    return value


class Wire:
    """Everything the server sent in one test: responses (headers too), streams and signals."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __call__(self, response: TestResponse) -> TestResponse:
        self.parts.append(str(response.headers) + response.get_data(as_text=True))
        return response

    def stream(self, stream: Stream) -> Stream:
        self.parts.append(stream.text)
        return stream

    @property
    def text(self) -> str:
        return "\n".join(self.parts)


@pytest.fixture(scope="module")
def secret(kube: KubeSimulator) -> dict[str, t.Any]:
    password, token, other = new_value("password"), new_value("token"), new_value("string-data")
    applied = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": NAME},
            "stringData": {"password": password, "token": token},
        }
    )
    annotations = {
        "kubectl.kubernetes.io/last-applied-configuration": applied,
        KAPP_ORIGINAL: kapp_copy(new_value("kapp-copy")),
        BACKUP: json.dumps({"kind": "Secret", "stringData": {"token": new_value("backup-copy")}}),
        "note": "keep",
    }
    return create(
        kube,
        NAMESPACE,
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"app": "vault"}, "annotations": annotations},
            "data": {"password": b64(password), "token": b64(token)},
            "stringData": {"extra": other},
        },
    )


@pytest.fixture(scope="module")
def signal_log() -> Iterator[list[str]]:
    """The arguments of every flask-krm signal and audit record, as text."""
    seen: list[str] = []

    def receive(sender: object, **kwargs: t.Any) -> None:
        seen.append(repr(kwargs))

    sent = [
        write_attempted,
        signals.saved,
        signals.stream_opened,
        signals.stream_closed,
        signals.watch_started,
        signals.watch_stopped,
        signals.watch_failed,
        signals.subscriber_overflowed,
    ]
    for signal in sent:
        signal.connect(receive, weak=False)
    yield seen
    for signal in sent:
        signal.disconnect(receive)


class HookSwitch:
    """A save hook around the example's: runs ``before(request)`` first when armed."""

    def __init__(self, inner: Callable[[WriteRequest], WriteResult]) -> None:
        self.inner = inner
        self.before: Callable[[WriteRequest], WriteResult | None] | None = None

    def __call__(self, request: WriteRequest) -> WriteResult:
        if self.before is not None:
            answer = self.before(request)
            if answer is not None:
                return answer
        return self.inner(request)


@pytest.fixture(scope="module")
def example(kube: KubeSimulator, secret: dict[str, t.Any]) -> Iterator[Flask]:
    app = make_example(kube)
    krm = app.extensions["krm"].extension
    krm.save_hook(HookSwitch(krm.hooks.saver))
    yield app
    shut_down(app)


@pytest.fixture
def hook(example: Flask) -> Iterator[HookSwitch]:
    switch = t.cast(HookSwitch, example.extensions["krm"].extension.hooks.saver)
    yield switch
    switch.before = None


@pytest.fixture
def wire() -> Wire:
    return Wire()


def assert_no_value(wire: Wire, logs: CapturedLogs, signal_log: list[str]) -> None:
    assert any(" DEBUG " in line for line in logs.lines), "no DEBUG line was captured"
    found = leaks(needles(), wire.text, logs.text, "\n".join(signal_log))
    assert not found, f"Secret values on the wire or in logs: {found}"


def wait_live(page: Page, channel: Stream) -> None:
    if 'data-krm-stream="live"' not in page.html:
        channel.until_text('data-krm-stream="live"')


def editor_call(browser: Browser, page: Page, what: str, data: dict[str, str]) -> TestResponse:
    editor = page.component("editor")
    return browser.post(f"/krm/ui/components/{editor}/{what}", data, page.headers(editor))


def save(browser: Browser, page: Page, wire: Wire, *, confirm: bool = True) -> list[TestResponse]:
    answers = [wire(editor_call(browser, page, "actions/save", {}))]
    if confirm and 'data-krm-outcome="saved-pending"' in answers[0].get_data(as_text=True):
        answers.append(wire(editor_call(browser, page, "actions/save", {"krm_confirm": "1"})))
    return answers


def outcome(response: TestResponse) -> str:
    import re

    found = re.search(r'data-krm-outcome="([^"]+)"', response.get_data(as_text=True))
    return found.group(1) if found else f"none (HTTP {response.status_code})"


# ------------------------------------------------------------------------------- the stream --


@pytest.mark.parametrize("projection", PROJECTIONS)
def test_the_json_stream_carries_no_value_and_a_rotation_bumps_the_revision(
    projection: str, example: Flask, kube: KubeSimulator, wire: Wire, debug_logs: CapturedLogs, signal_log: list[str]
) -> None:
    browser = Browser(example, "editor")
    scope = Scope(target=TARGET, version="v1", resource="secrets", namespace=NAMESPACE, name=NAME)
    stream = browser.stream(f"{STREAM_URL}?{scope.canonical_query(projection)}").until(
        lambda s: "synced" in event_types(s)
    )
    added = next(e for e in stream.events if e["type"] == "added")
    assert "data" not in added["object"] and "stringData" not in added["object"]
    assert added["object"]["metadata"]["annotations"] == {"note": "keep"}
    revisions = {r["path"]: r["rev"] for r in added["redacted"]}
    assert set(revisions) == {"/data/extra", "/data/password", "/data/token", *COPY_PATHS} and set(
        revisions.values()
    ) == {1}
    rotate(kube)
    stream.until(lambda s: s.events[-1]["type"] == "modified", what="the rotation")
    assert {r["path"]: r["rev"] for r in stream.events[-1]["redacted"]} == {**revisions, "/data/password": 2}
    merge_patch(
        kube,
        NAMESPACE,
        "secrets",
        NAME,
        {"metadata": {"annotations": {KAPP_ORIGINAL: kapp_copy(new_value("kapp-rotated"))}}},
    )
    stream.until(lambda s: len([e for e in s.events if e["type"] == "modified"]) == 2, what="the new copy")
    assert {r["path"]: r["rev"] for r in stream.events[-1]["redacted"]} == {
        **revisions,
        "/data/password": 2,
        "/metadata/annotations/kapp.k14s.io~1original": 2,
    }
    wire.stream(stream)
    secrets = Scope(target=TARGET, version="v1", resource="secrets", namespace=NAMESPACE)
    listing = browser.stream(f"{STREAM_URL}?{secrets.canonical_query(projection)}")
    wire.stream(listing.until(lambda s: "synced" in event_types(s)))
    raw = browser.stream(f"{STREAM_URL}?{scope.canonical_query('krm-raw/v1')}").until_end()
    assert event_types(raw) == ["error"]  # the example never sends values: raw is refused
    wire.stream(raw)
    browser.close()
    assert_no_value(wire, debug_logs, signal_log)


# ------------------------------------------------------------------ pages, channels, edits --


def test_pages_channels_and_edits_carry_no_value(
    example: Flask, kube: KubeSimulator, wire: Wire, debug_logs: CapturedLogs, signal_log: list[str]
) -> None:
    browser = Browser(example, "editor")
    overview = browser.open(f"/namespaces/{NAMESPACE}")
    wire(overview.response)
    page = browser.open(EDITOR_URL)
    wire(page.response)
    assert "password" in page.html and "token" in page.html  # keys are shown, values never
    channel = page.channel()
    list_channel = overview.channel()
    wait_live(page, channel)
    rotate(kube)
    channel.until_text("(revision 2)")
    list_channel.until_text(": connected").drain(0.3)

    edits: list[tuple[dict[str, str], int]] = [
        ({"op": "add_key", "path": '["metadata", "labels"]', "key": "owner", "value": "payments"}, 200),
        ({"op": "set", "path": '["data", "password"]', "value": "overwrite"}, 403),
        ({"op": "add_key", "path": '["data"]', "key": "new", "value": "x"}, 403),
        ({"op": "rename_key", "path": '["data"]', "key": "token", "new_key": "renamed"}, 403),
        ({"op": "remove_key", "path": '["data", "token"]'}, 403),
        ({"op": "revert", "path": '["data", "password"]'}, 403),
        ({"op": "take_theirs", "path": '["data"]'}, 403),
        ({"op": "set", "path": '["data"]', "value": "{}"}, 403),
        ({"op": "revert", "path": '["metadata", "labels"]'}, 200),
    ]
    for form, status in edits:
        answer = wire(editor_call(browser, page, "edit", form))
        assert answer.status_code == status, (form, answer.get_data(as_text=True))
    channel.drain(0.3)
    wire.stream(channel)
    wire.stream(list_channel)
    again = browser.open(EDITOR_URL)
    wire(again.response)
    assert "(revision 2)" in again.html
    browser.close()
    assert_no_value(wire, debug_logs, signal_log)


# ---------------------------------------------------------------------------- save outcomes --


def test_no_save_outcome_carries_a_value(
    example: Flask, kube: KubeSimulator, hook: HookSwitch, wire: Wire, debug_logs: CapturedLogs, signal_log: list[str]
) -> None:
    browser = Browser(example, "editor")
    page = browser.open(EDITOR_URL)
    wire(page.response)
    channel = page.channel()
    wait_live(page, channel)
    seen: list[str] = []

    def label(value: str) -> None:
        answer = wire(
            editor_call(
                browser,
                page,
                "edit",
                {"op": "add_key", "path": '["metadata", "labels"]', "key": "round", "value": value},
            )
        )
        if answer.status_code == 422:  # the key exists from an earlier round: set it instead
            answer = wire(
                editor_call(
                    browser, page, "edit", {"op": "set", "path": '["metadata", "labels", "round"]', "value": value}
                )
            )
        assert answer.status_code == 200, answer.get_data(as_text=True)

    def settle() -> None:
        channel.drain(0.5)
        for _ in range(3):  # a guarded read or an echo may still be outstanding
            answers = save(browser, page, wire)
            if outcome(answers[-1]) in ("saved", "nothing-to-save"):
                return
            channel.drain(0.3)

    # accepted, then confirmed by the echo
    label("one")
    seen += [outcome(r) for r in save(browser, page, wire)]

    # 409: the Secret is rotated between the Save and its write; a guarded (projected) read follows
    label("two")

    def rotate_first(request: WriteRequest) -> None:
        hook.before = None
        rotate(kube)

    hook.before = rotate_first
    seen += [outcome(r) for r in save(browser, page, wire)]
    settle()

    # 422 from an admission webhook that quotes the value, at the value's field and elsewhere
    def echoing_webhook(request: AdmissionRequest) -> None:
        if request.resource.plural == "secrets" and request.name == NAME and request.verb != "delete":
            value = str((request.new.get("data") or {}).get("password", ""))
            decoded = __import__("base64").b64decode(value).decode()
            raise invalid(
                request.resource.group_kind,
                request.name,
                [
                    FieldError.invalid("data[password]", value, f"must not be {decoded}"),
                    FieldError.invalid("", decoded, "is a weak password"),
                    FieldError.invalid("metadata.labels", "round", "label refused"),
                ],
            )

    label("three")
    remove = kube.faults.mutate_writes(echoing_webhook)
    try:
        invalid_answer = save(browser, page, wire)[-1]
    finally:
        remove()
    seen.append(outcome(invalid_answer))
    assert invalid_answer.status_code == 422 and "label refused" in invalid_answer.get_data(as_text=True)
    assert "data[password]" in invalid_answer.get_data(as_text=True)  # the field is named, its message withheld

    # the answer to the write is lost: the result is unknown, a guarded read decides later
    kube.faults.lose_next_write_response()
    seen += [outcome(r) for r in save(browser, page, wire)]
    settle()

    # the host's hook reports a transport failure and an error body quoting the value
    label("four")
    hook.before = lambda request: WriteResult(0, status={"kind": "Status", "message": VALUES[0]}, error=VALUES[0])
    seen += [outcome(r) for r in save(browser, page, wire)]
    hook.before = None
    settle()

    # a viewer may not write: refused before anything is sent
    viewer = Browser(example, "viewer")
    viewer_page = viewer.open(EDITOR_URL)
    wire(viewer_page.response)
    seen += [outcome(r) for r in save(viewer, viewer_page, wire)]

    assert {"saved", "invalid", "unknown", "access-denied"} <= set(seen), seen
    assert {"version-stale", "draft-conflict", "saved"} & set(seen[1:3]), seen
    audit = wire(browser.client.get("/audit"))
    assert audit.status_code == 200 and "Secret demo/vault" in audit.get_data(as_text=True)
    channel.drain(0.3)
    wire.stream(channel)
    browser.close()
    assert_no_value(wire, debug_logs, signal_log)
    assert any("write_attempted" in line or "record" in line for line in signal_log)


# --------------------------------------------------------------------------- the review list --


@pytest.fixture(scope="module")
def host(kube: KubeSimulator, secret: dict[str, t.Any]) -> Iterator[Flask]:
    app = make_host(kube, Recorder())
    yield app
    shut_down(app)


def host_url(path: str, projection: str, **params: str | list[str]) -> str:
    scope = Scope(target=TARGET, version="v1", resource="secrets", namespace=NAMESPACE)
    pairs = [(k, v) for k, values in params.items() for v in ([values] if isinstance(values, str) else values)]
    extra = "".join(f"&{k}={quote(v, safe='')}" for k, v in pairs)
    return f"{path}?scope={quote(scope.canonical_query(), safe='')}&projection={projection}{extra}"


@pytest.mark.parametrize("projection", PROJECTIONS)
def test_spec_and_full_editors_lists_and_reviews_carry_no_value(
    projection: str, host: Flask, kube: KubeSimulator, wire: Wire, debug_logs: CapturedLogs, signal_log: list[str]
) -> None:
    browser = Browser(host, "editor")
    page = browser.open(host_url("/both", projection, name=NAME, column=["/metadata/name", "/data", "/stringData"]))
    wire(page.response)
    channel = page.channel()
    wait_live(page, channel)
    rotate(kube, "token")
    channel.until_text("(revision 2)")

    listed = page.component("list")
    headers = page.headers(listed)
    review = f"/krm/review/{listed}"
    created_name = f"made-{projection[4:8]}"
    plain, encoded = new_value("created-plain"), new_value("created-encoded")
    body = {
        "metadata": {"name": created_name},
        "type": "Opaque",
        "data": {"k": b64(encoded)},
        "stringData": {"s": plain},
    }
    assert wire(browser.post(f"{review}/create", {"body": json.dumps(body)}, headers)).status_code == 200
    assert wire(browser.post(f"{review}/save", {}, headers)).status_code == 200
    created = read(kube, NAMESPACE, "secrets", created_name)
    assert created is not None and created["data"]["k"] == b64(encoded)

    refused = {"metadata": {"name": "refused"}, "data": {"k": b64(VALUES[0])}, "status": {"v": VALUES[0]}}
    assert wire(browser.post(f"{review}/create", {"body": json.dumps(refused)}, headers)).status_code == 422

    def echo_on_create(request: AdmissionRequest) -> None:
        if request.verb == "create" and request.resource.plural == "secrets":
            value = str((request.new.get("data") or {}).get("k", ""))
            raise invalid(
                request.resource.group_kind,
                request.name,
                [FieldError.invalid("data[k]", value, "is weak"), FieldError.invalid("data", value, "is weak")],
            )

    echoed = {"metadata": {"name": "echoed"}, "data": {"k": b64(new_value("echoed"))}}
    assert wire(browser.post(f"{review}/create", {"body": json.dumps(echoed)}, headers)).status_code == 200
    remove = kube.faults.mutate_writes(echo_on_create)
    try:
        answer = wire(browser.post(f"{review}/save", {}, headers))
    finally:
        remove()
    assert answer.status_code == 422 and 'data-krm-outcome="invalid"' in answer.get_data(as_text=True)
    wire(browser.post(f"{review}/discard", {"key": _draft_key(answer)}, headers))

    channel.until_text(created_name)
    assert wire(browser.post(f"{review}/delete", {"uid": created["metadata"]["uid"]}, headers)).status_code == 200
    assert wire(browser.post(f"{review}/save", {}, headers)).status_code == 200
    assert read(kube, NAMESPACE, "secrets", created_name) is None
    wire(browser.client.get(review, headers=headers))
    channel.drain(0.3)
    wire.stream(channel)
    browser.close()
    assert_no_value(wire, debug_logs, signal_log)


def test_copies_of_the_secret_in_annotations_are_never_editable_and_never_audited(
    host: Flask, kube: KubeSimulator, wire: Wire, debug_logs: CapturedLogs, signal_log: list[str]
) -> None:
    browser = Browser(host, "editor")
    page = browser.open(host_url("/edit", "krm-full/v1", name=NAME, policy="/metadata/annotations"))
    wire(page.response)
    assert "kapp.k14s.io/original" in page.html and "(revision" in page.html  # named as withheld, never valued
    channel = page.channel()
    wait_live(page, channel)
    before = read(kube, NAMESPACE, "secrets", NAME)
    assert before is not None
    copy_path = ["metadata", "annotations", KAPP_ORIGINAL]
    edits: list[tuple[dict[str, str], int]] = [
        ({"op": "set", "path": json.dumps(copy_path), "value": "{}"}, 403),
        ({"op": "remove_key", "path": json.dumps(copy_path)}, 403),
        ({"op": "add_key", "path": '["metadata", "annotations"]', "key": KAPP_ORIGINAL, "value": "{}"}, 403),
        ({"op": "rename_key", "path": '["metadata", "annotations"]', "key": "note", "new_key": BACKUP}, 403),
        ({"op": "set", "path": '["metadata", "annotations"]', "value": "{}"}, 403),
        ({"op": "set", "path": '["metadata", "annotations", "note"]', "value": "changed"}, 200),
    ]
    for form, status in edits:
        answer = wire(editor_call(browser, page, "edit", form))
        assert answer.status_code == status, (form, answer.get_data(as_text=True))
    answers = save(browser, page, wire)
    assert outcome(answers[0]) == "saved-pending", answers[0].get_data(as_text=True)
    after = read(kube, NAMESPACE, "secrets", NAME)
    assert after is not None and after["metadata"]["annotations"]["note"] == "changed"
    for key in (KAPP_ORIGINAL, BACKUP):
        assert after["metadata"]["annotations"][key] == before["metadata"]["annotations"][key]

    records: list[t.Any] = []

    def keep(sender: object, record: t.Any, **_: t.Any) -> None:
        records.append(record)

    write_attempted.connect(keep, weak=False)
    try:
        native = wire(
            browser.client.patch(
                f"/k8s/api/v1/namespaces/{NAMESPACE}/secrets/{NAME}",
                data=json.dumps(
                    {
                        "metadata": {
                            "uid": after["metadata"]["uid"],
                            "resourceVersion": after["metadata"]["resourceVersion"],
                            "annotations": {KAPP_ORIGINAL: kapp_copy(new_value("kapp-by-proxy"))},
                        }
                    }
                ),
                content_type="application/merge-patch+json",
                headers=page.headers(page.component("editor")),
            )
        )
    finally:
        write_attempted.disconnect(keep)
    assert native.status_code == 204, native.get_data(as_text=True)
    assert "/metadata/annotations/kapp.k14s.io~1original" in records[-1].redacted_paths
    assert {"op": "add", "path": "/metadata/annotations/kapp.k14s.io~1original", "redacted": True} in records[-1].diff
    channel.drain(0.3)
    wire.stream(channel)
    browser.close()
    assert_no_value(wire, debug_logs, signal_log)


def _draft_key(answer: TestResponse) -> str:
    import re

    found = re.search(r'hx-vals=\'\{"key": "([^"]+)"\}\'', answer.get_data(as_text=True))
    return found.group(1) if found else ""


def test_the_checks_find_a_value_when_one_is_sent(host: Flask, wire: Wire, debug_logs: CapturedLogs) -> None:
    """The control: a host that allows krm-raw/v1 does send the values, and the search finds them."""
    browser = Browser(host, "editor")
    scope = Scope(target=TARGET, version="v1", resource="secrets", namespace=NAMESPACE, name=NAME)
    raw = browser.stream(f"{STREAM_URL}?{scope.canonical_query('krm-raw/v1')}").until(
        lambda s: "synced" in event_types(s)
    )
    wire.stream(raw)
    browser.close()
    assert leaks(needles(), wire.text)
