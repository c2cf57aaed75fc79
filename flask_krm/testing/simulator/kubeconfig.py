"""Kubeconfig files the official client and kubectl load unmodified: one cluster, one context per user."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .authentication import User

CLUSTER_NAME = "krm-simulator"


def kubeconfig(url: str, ca_pem: bytes, users: Sequence[User], current: str) -> dict[str, Any]:
    """A ``Config`` with HTTPS cluster ``krm-simulator`` (trusting ``ca_pem``) and a bearer-token context per user."""
    cluster = {"server": url, "certificate-authority-data": base64.b64encode(ca_pem).decode("ascii")}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
        "users": [{"name": user.name, "user": {"token": user.token}} for user in users],
        "contexts": [{"name": user.name, "context": {"cluster": CLUSTER_NAME, "user": user.name}} for user in users],
        "current-context": current,
        "preferences": {},
    }


def write_kubeconfig(path: Path, url: str, ca_pem: bytes, users: Sequence[User], current: str) -> None:
    """Write the kubeconfig as JSON (valid YAML), readable only by its owner."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(
        path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600
    )  # never readable by others, not even briefly
    with open(descriptor, "w", encoding="utf-8") as file:
        file.write(json.dumps(kubeconfig(url, ca_pem, users, current), indent=2) + "\n")
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT
