"""The kinds' schemas as the simulator publishes them (its recorded ``/openapi/v3`` documents)."""

from __future__ import annotations

import json
import typing as t

from flask_krm.kube_schema import SchemaView, kind_schemas
from flask_krm.testing.simulator import openapi

CONTAINER: t.Final = ("spec", "template", "spec", "containers", 0)
"""The first container of a Deployment's pod template."""


def published(path: str, group: str, version: str) -> dict[tuple[str, str], SchemaView]:
    """The schemas of the kinds in the group-version document at ``path``."""
    return kind_schemas(json.loads(openapi.documents()[path].data), group, version)


def deployment_schema() -> SchemaView:
    """apps/v1 Deployment."""
    return published("apis/apps/v1", "apps", "v1")[("apps/v1", "Deployment")]


def flunder_schema() -> SchemaView:
    """The example's custom resource, wardle.example.com/v1alpha1 Flunder."""
    return published("apis/wardle.example.com/v1alpha1", "wardle.example.com", "v1alpha1")[
        ("wardle.example.com/v1alpha1", "Flunder")
    ]
