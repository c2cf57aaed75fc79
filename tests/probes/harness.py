"""What the probes share: the application on the simulator's demo ConfigMaps, and running a probe
module in a child process to read its one JSON report."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import typing as t
from pathlib import Path

from flask import Flask

from flask_krm import AllowedResource, KrmStream, Principal, ScopePolicy

ROOT = Path(__file__).resolve().parents[2]


def demo_app(kubeconfig: str, **config: t.Any) -> Flask:
    """An application with the simulator as target ``sim`` and its ``demo`` ConfigMaps allowed."""
    app = Flask("probe", instance_path=tempfile.mkdtemp())
    app.config.update(
        SECRET_KEY="probe",
        KRM_TARGETS={"sim": {"kubeconfig": kubeconfig, "context": "admin"}},
        KRM_SCOPE_POLICY=ScopePolicy(
            targets=frozenset({"sim"}),
            resources=(AllowedResource(group="", resource="configmaps"),),
            namespaces=frozenset({"demo"}),
        ),
        KRM_WATCH_LINGER=0,
        **config,
    )
    return app


def allowing_krm(app: Flask) -> KrmStream:
    """flask-krm on ``app``: one principal, allowed every stream, acting as the target's identity."""
    return KrmStream(
        app,
        principal_loader=lambda: Principal("probe"),
        authorizer=lambda principal, scope, projection, verb: True,
        client_loader=lambda target, principal: None,
    )


def run_probe(module: str, timeout: float) -> dict[str, t.Any]:
    """Run ``python -m tests.probes.<module>``; what its last output line reports."""
    done = subprocess.run(
        [sys.executable, "-m", f"tests.probes.{module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))
