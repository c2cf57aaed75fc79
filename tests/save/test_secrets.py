"""A Secret edited under krm-full/v1: labels save, values are never written, logged or audited."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from flask_krm.principal import Principal
from flask_krm.save.flow import SaveFlow
from flask_krm.save.outcomes import OutcomeKind
from flask_krm.save.perform import save_edit
from flask_krm.save.publish import write_attempted
from flask_krm.save.writer import KubeWriter, SaveRefused, WriteRequest, default_save
from flask_krm.scope import Scope
from flask_krm.signals import saved
from flask_krm.store import SaveIntent

from .conftest import editor_target, new_store, wait_for

PLAIN = "s3cr3t-token-value"
ENCODED = base64.b64encode(PLAIN.encode()).decode()


def create_secret(kube: Any, namespace: str) -> dict[str, Any]:
    answer = KubeWriter(kube.api_client("admin")).request(
        "POST",
        f"/api/v1/namespaces/{namespace}/secrets",
        body={
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds"},
            "type": "Opaque",
            "data": {"token": ENCODED},
        },
    )
    assert answer.ok and answer.body is not None
    return dict(answer.body)


def secret_scope(namespace: str) -> Scope:
    return Scope(target="dev", version="v1", resource="secrets", namespace=namespace, name="creds")


def server_secret(kube: Any, namespace: str) -> dict[str, Any]:
    answer = KubeWriter(kube.api_client("admin")).request("GET", f"/api/v1/namespaces/{namespace}/secrets/creds")
    assert answer.ok and answer.body is not None
    return dict(answer.body)


def test_a_label_edit_saves_and_no_value_is_written_logged_or_audited(kube, namespace, feeds, caplog) -> None:
    uid = create_secret(kube, namespace)["metadata"]["uid"]
    store = new_store()
    feed = feeds(store, secret_scope(namespace), kube.api_client("editor"))
    assert "token" not in (store.server(uid).get("data") or {})
    assert store.redactions(uid)[0].path == "/data/token"
    records: list[Any] = []
    signals: list[dict[str, Any]] = []
    caplog.set_level(logging.DEBUG)
    with (
        write_attempted.connected_to(lambda sender, **kw: records.append(kw["record"])),
        saved.connected_to(lambda sender, **kw: signals.append(kw)),
    ):
        store.set_value(uid, ("metadata", "labels"), {"team": "payments"})
        flow = SaveFlow(uid)
        outcome = save_edit(editor_target(kube, secret_scope(namespace)), store, flow, live=feed.live)
        assert outcome.kind in (OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED)
        wait_for(lambda: flow.observe(store) or flow.last.kind is OutcomeKind.SAVED, what="the echo")
    secret = server_secret(kube, namespace)
    assert secret["metadata"]["labels"] == {"team": "payments"}
    assert secret["data"] == {"token": ENCODED}
    assert len(records) == 1 and records[0].fields == ("/metadata/labels",)
    assert signals and signals[0]["uid"] == uid and signals[0]["outcome"] == outcome.kind.value
    everything = caplog.text + repr(records) + repr(signals) + json.dumps(store.draft(uid)) + repr(outcome)
    assert ENCODED not in everything and PLAIN not in everything
    assert "/metadata/labels" in caplog.text


def test_a_forged_patch_touching_a_redacted_value_is_refused_before_sending(kube, namespace) -> None:
    created = create_secret(kube, namespace)
    uid, version = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    api = kube.api_client("editor")
    for patch in ({"data": None}, {"data": {"token": "b3ZlcndyaXR0ZW4="}}, {"metadata": {"managedFields": None}}):
        request = WriteRequest(
            "patch",
            Principal("editor"),
            secret_scope(namespace),
            "krm-full/v1",
            api,
            intent=SaveIntent(uid, version, patch),
        )
        with pytest.raises(SaveRefused) as refused:
            default_save(request)
        assert refused.value.kind is OutcomeKind.REFUSED
        assert "b3ZlcndyaXR0ZW4=" not in refused.value.detail
    secret = server_secret(kube, namespace)
    assert secret["data"] == {"token": ENCODED} and secret["metadata"]["resourceVersion"] == version
