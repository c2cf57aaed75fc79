"""Log lines cannot be forged: one record per write attempt, every person-chosen value quoted.

A draft key, an object name or a value holding a line feed, a carriage return, an ANSI escape or a
Unicode line separator would otherwise end the audit line early and start a forged one (or repaint
the terminal showing it). The test writes such keys and names through the UI, formats every record
of every logger as a plain handler would, and counts lines.
"""

from __future__ import annotations

import json
import logging
import typing as t
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from flask import Flask

from flask_krm import Scope
from flask_krm.projection import pointer
from flask_krm.testing.simulator import KubeSimulator

from .hosts import TARGET, Browser, Page, Recorder, configmap, create, make_host, read, shut_down

NAMESPACE: t.Final = "demo"
FORGED: t.Final = "\nINFO flask_krm.save: delete Secret demo/vault uid=- target=cluster outcome=deleted fields=-"
HOSTILE_KEYS: t.Final = (
    "key" + FORGED,
    "key\r" + FORGED.strip(),
    "key\x1b[1A\x1b[2Kpatch ConfigMap demo/forged outcome=saved",
    "key\u2028second line",
    "key outcome=saved fields=/spec",
)


class Lines(logging.Handler):
    """Every record of the ``flask_krm`` loggers, formatted as a plain handler writes it."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self.records: list[logging.LogRecord] = []
        self.text = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.text += self.format(record) + "\n"

    def audit(self) -> list[logging.LogRecord]:
        return [r for r in self.records if r.name == "flask_krm.save"]


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    logger = logging.getLogger("flask_krm")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture(scope="module")
def host(kube: KubeSimulator) -> Iterator[Flask]:
    app = make_host(kube, Recorder())
    yield app
    shut_down(app)


def scope_url(path: str, **params: str) -> str:
    scope = Scope(target=TARGET, version="v1", resource="configmaps", namespace=NAMESPACE)
    return f"{path}?scope={quote(scope.canonical_query(), safe='')}" + "".join(
        f"&{k}={quote(v, safe='')}" for k, v in params.items()
    )


def live(page: Page) -> None:
    channel = page.channel().until_text(": connected")
    if 'data-krm-stream="live"' not in page.html:
        channel.until_text('data-krm-stream="live"')
    channel.close()


def assert_one_line_per_record(lines: Lines) -> None:
    physical = lines.text.splitlines()  # splits at \n, \r, \x1c-\x1e, \x85, \u2028, \u2029 too
    assert len(physical) == len(lines.records), lines.text
    assert "\x1b" not in lines.text and "\r" not in lines.text, repr(lines.text)


def test_a_forged_draft_key_stays_inside_its_one_audit_line(host: Flask, kube: KubeSimulator, lines: Lines) -> None:
    host.config["KRM_DRY_RUN"] = False  # the write itself is sent and refused, so it is audited
    create(kube, NAMESPACE, "configmaps", configmap("forgery", NAMESPACE, {"a": "1"}))
    browser = Browser(host, "editor")
    page = browser.open(scope_url("/edit", name="forgery"))
    live(page)
    editor = page.component("editor")
    for key in HOSTILE_KEYS:
        added = browser.post(
            f"/krm/ui/components/{editor}/edit",
            {"op": "add_key", "path": '["data"]', "key": key, "value": "v"},
            page.headers(editor),
        )
        assert added.status_code == 200, added.get_data(as_text=True)
    saved = browser.post(f"/krm/ui/components/{editor}/actions/save", {}, page.headers(editor))
    assert 'data-krm-outcome="invalid"' in saved.get_data(
        as_text=True
    )  # Kubernetes refuses such keys; the attempt is audited
    stored = read(kube, NAMESPACE, "configmaps", "forgery")
    assert stored is not None and stored["data"] == {"a": "1"}

    audit = lines.audit()
    assert len(audit) == 1, [r.getMessage() for r in audit]  # one record for the one write attempt
    line = audit[0].getMessage()
    assert line.startswith("patch ConfigMap demo/forgery uid=") and " outcome=invalid fields=" in line
    pointers = {pointer("data", key) for key in HOSTILE_KEYS}
    for field in pointers:
        assert json.dumps(field, ensure_ascii=True) in line
    assert set(audit[0].krm_audit.fields) == pointers  # the record rides along, structured
    assert_one_line_per_record(lines)


def test_a_native_patch_with_forged_keys_is_one_audit_line(host: Flask, kube: KubeSimulator, lines: Lines) -> None:
    current = create(kube, NAMESPACE, "configmaps", configmap("native-forgery", NAMESPACE, {"a": "1"}))
    browser = Browser(host, "editor")
    browser.open(scope_url("/list"))
    patch = {
        "metadata": {
            "uid": current["metadata"]["uid"],
            "resourceVersion": current["metadata"]["resourceVersion"],
            "labels": {key: "v" for key in HOSTILE_KEYS},
        },
        "data": {key: "v" for key in HOSTILE_KEYS},
    }
    answer = browser.client.patch(
        f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps/native-forgery",
        data=json.dumps(patch),
        content_type="application/merge-patch+json",
        headers={"X-KRM-CSRF": browser.csrf_token() or ""},
    )
    assert answer.status_code == 422, answer.get_data(
        as_text=True
    )  # Kubernetes refuses the keys; the attempt is audited
    audit = lines.audit()
    assert len(audit) == 1 and audit[0].getMessage().startswith("patch configmaps demo/native-forgery uid="), audit
    assert len(audit[0].krm_audit.fields) == 2 * len(HOSTILE_KEYS)
    assert_one_line_per_record(lines)
