"""Suite-wide settings: hypothesis profiles (CI runs every property with 500 examples), the shared
real kube-apiserver, and the Flask applications of the top-level modules' tests (``app`` and
``served``: see ``tests/apps.py``; suites with an application of their own override ``app``)."""

from __future__ import annotations

import os
import typing as t
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from hypothesis import HealthCheck, settings

from flask_krm import KrmStream
from tests.apps import AuthorizerLog, allow, make_app, unreachable_kubeconfig
from tests.redis_server import free_port

if t.TYPE_CHECKING:
    from tests.realkube import KubeApiServer

settings.register_profile("ci", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def real_kube() -> Iterator[KubeApiServer]:
    """The real kube-apiserver (``apiserver`` marker), started once per test session for every test
    that needs one it may share: tests work in namespaces of their own."""
    from tests.realkube import start_kube_apiserver

    with start_kube_apiserver() as server:
        yield server


@pytest.fixture
def authorizer() -> AuthorizerLog:
    return AuthorizerLog()


@pytest.fixture
def krm(authorizer: AuthorizerLog) -> KrmStream:
    return KrmStream(authorizer=authorizer)


@pytest.fixture
def app(tmp_path: Path, krm: KrmStream) -> Iterator[Flask]:
    app = make_app(tmp_path)
    krm.init_app(app)
    yield app
    krm.shutdown(app)
    assert not krm.runtime(app).group, "greenlets outlived shutdown"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Flask, KrmStream]]:
    """An application with probes and metrics on, whose API server and Redis nobody listens on."""
    krm = KrmStream(authorizer=allow)
    app = make_app(
        tmp_path,
        KRM_TARGETS={"demo": {"kubeconfig": unreachable_kubeconfig(tmp_path / "kubeconfig")}},
        KRM_DRAFTS_URL=f"redis://127.0.0.1:{free_port()}/0",  # nobody listens there either
        KRM_METRICS_PATH="/metrics",
        KRM_LIVENESS_MAX_LAG=0.5,
        KRM_LIVENESS_PATH="/livez",
        KRM_READINESS_PATH="/readyz",
    )
    krm.init_app(app)
    yield app, krm
    krm.shutdown(app)
    assert not krm.runtime(app).group, "greenlets outlived shutdown"
