"""``deploy/`` and the ``Dockerfile`` as the tests read them: rendered manifests, the application
container's environment and the image's command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing as t
from pathlib import Path

import yaml

ROOT: t.Final = Path(__file__).resolve().parents[2]
DEPLOY: t.Final = ROOT / "deploy"
BASE: t.Final = DEPLOY / "base"
REDIS_OVERLAY: t.Final = DEPLOY / "overlays" / "redis"
APP: t.Final = "flask-krm-example"
APP_NAMESPACE: t.Final = "flask-krm"
SERVED_NAMESPACE: t.Final = "demo"
RBAC_ARGUMENTS: t.Final = ("krm", "rbac", "--namespace", APP_NAMESPACE, "--service-account", APP)
"""``flask --app example_app`` + these, in the Deployment's environment, made ``deploy/base/rbac.yaml``."""


def kustomize(directory: Path) -> str:
    """``kubectl kustomize directory``: the rendered manifests as YAML text."""
    result = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def objects(rendered: str) -> list[dict[str, t.Any]]:
    return [document for document in yaml.safe_load_all(rendered) if document]


def find(rendered: list[dict[str, t.Any]], kind: str, name: str = APP) -> dict[str, t.Any]:
    return next(o for o in rendered if o["kind"] == kind and o["metadata"]["name"] == name)


def app_container(rendered: list[dict[str, t.Any]]) -> dict[str, t.Any]:
    containers = find(rendered, "Deployment")["spec"]["template"]["spec"]["containers"]
    return t.cast(dict[str, t.Any], next(c for c in containers if c["name"] == "app"))


def container_environment(rendered: list[dict[str, t.Any]]) -> dict[str, str]:
    """The application container's environment variables given by value (not from Secrets)."""
    return {variable["name"]: variable["value"] for variable in app_container(rendered)["env"] if "value" in variable}


def image_entrypoint() -> list[str]:
    """The Dockerfile's exec-form ``ENTRYPOINT``."""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("ENTRYPOINT "):
            return t.cast(list[str], json.loads(line.removeprefix("ENTRYPOINT ")))
    raise AssertionError("the Dockerfile has no ENTRYPOINT")


def host_environment(deployment_env: dict[str, str], **extra: str) -> dict[str, str]:
    """This process's environment without a kubeconfig, plus the container's variables and ``extra``."""
    base = {k: v for k, v in os.environ.items() if k != "KUBECONFIG" and not k.startswith("FLASK_")}
    return {**base, **deployment_env, **extra, "PYTHONUNBUFFERED": "1"}


def flask_krm(env: dict[str, str], *arguments: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``flask --app example_app <arguments>`` from the repository root in ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "flask", "--app", "example_app", *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
