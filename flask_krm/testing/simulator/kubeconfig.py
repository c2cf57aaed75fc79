"""Kubeconfig files the official client loads unmodified: one cluster, one context per user."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .authentication import User

CLUSTER_NAME = "krm-simulator"


def kubeconfig(url: str, users: Sequence[User], current: str) -> dict[str, Any]:
    """A ``Config`` with plain-HTTP cluster ``krm-simulator`` and a bearer-token context per user."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME, "cluster": {"server": url}}],
        "users": [{"name": user.name, "user": {"token": user.token}} for user in users],
        "contexts": [{"name": user.name, "context": {"cluster": CLUSTER_NAME, "user": user.name}} for user in users],
        "current-context": current,
        "preferences": {},
    }


def write_kubeconfig(path: Path, url: str, users: Sequence[User], current: str) -> None:
    """Write the kubeconfig as JSON (valid YAML), readable only by its owner."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kubeconfig(url, users, current), indent=2) + "\n")
    path.chmod(0o600)
