"""Kubernetes writes and guarded reads for saving: only conditional writes are ever sent, answers
are kept to what the save flow needs, and the default save hook reads, validates and writes."""

from __future__ import annotations

import pytest

from flask_krm.save.writer import KubeWriter, MissingPrecondition

from .test_races import create_configmap, editor_scope, read


def test_the_writer_never_sends_an_unconditional_write(kube, namespace) -> None:
    created = create_configmap(kube, namespace, "app", {"a": "1"})
    writer = KubeWriter(kube.api_client("admin"))
    path = f"/api/v1/namespaces/{namespace}/configmaps/app"
    scope = editor_scope(namespace, "app")
    uid, version = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    refused = [
        lambda: writer.request("PUT", path, body=created),
        lambda: writer.request("PATCH", path, body={"data": {"a": "x"}}, content_type="application/merge-patch+json"),
        lambda: writer.request(
            "PATCH",
            path,
            body={"metadata": {"uid": uid}, "data": {"a": "x"}},
            content_type="application/merge-patch+json",
        ),
        lambda: writer.request(
            "PATCH",
            path,
            body={"metadata": {"uid": uid, "resourceVersion": version}},
            content_type="application/json-patch+json",
        ),
        lambda: writer.request("DELETE", path),
        lambda: writer.patch(scope, {"data": {"a": "x"}}, uid="", resource_version=version),
        lambda: writer.patch(scope, {"data": {"a": "x"}}, uid=uid, resource_version=""),
        lambda: writer.delete(scope, uid=""),
    ]
    for attempt in refused:
        with pytest.raises(MissingPrecondition):
            attempt()
    assert read(kube, namespace, "app")["metadata"]["resourceVersion"] == version
    forged = writer.patch(
        scope,
        {"metadata": {"uid": "forged", "resourceVersion": "1"}, "data": {"a": "x"}},
        uid=uid,
        resource_version=version,
    )
    assert forged.ok and read(kube, namespace, "app")["data"] == {"a": "x"}  # the intent's preconditions win
