"""The OpenAPI v3 documents the simulator serves come from the pinned kube-apiserver (the contract
suite compares what is served with kube-apiserver's own)."""

from __future__ import annotations

import json
from importlib import resources

from tests.realkube import pinned_kubernetes_version


def test_the_openapi_documents_come_from_the_pinned_server() -> None:
    bundle = json.loads(resources.files("flask_krm.testing.simulator").joinpath("openapi_v3.json").read_text())
    assert bundle["source"] == f"kube-apiserver {pinned_kubernetes_version()} /openapi/v3"
    assert set(bundle["crd_documents"]) == {"apis/wardle.example.com/v1alpha1"}
