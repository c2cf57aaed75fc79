"""The native source's URLs and path parsing, and ``NativeWatch`` (LIST then WATCH) driven by
scripted API-server answers."""

from __future__ import annotations

import pytest

from flask_krm.scope import Scope
from flask_krm.upstream.native import NativePathError, native_collection_url, native_object_url, parse_native_path


def test_urls_and_paths() -> None:
    scope = Scope(version="v1", resource="configmaps", namespace="app", label_selector="tier=web")
    assert native_collection_url("/k8s", scope) == "/k8s/api/v1/namespaces/app/configmaps?labelSelector=tier%3Dweb"
    apps = Scope(group="apps", version="v1", resource="deployments", namespace="app")
    assert native_object_url("/k8s/", apps, "web") == "/k8s/apis/apps/v1/namespaces/app/deployments/web"
    assert parse_native_path("apis/apps/v1/namespaces/app/deployments/web", target="dev") == Scope(
        target="dev", group="apps", version="v1", resource="deployments", namespace="app", name="web"
    )
    for refused in (
        "api/v1/namespaces/app/pods/web/exec",
        "api",
        "version",
        "api/v1/namespaces/../secrets",
        "api/v1/namespaces/app/Pods",
    ):
        with pytest.raises(NativePathError):
            parse_native_path(refused, target="dev")
