"""An in-memory Kubernetes API server for tests and demos (see ``KubeSimulator``)."""

from __future__ import annotations

from .authentication import User
from .catalog import FLUNDER_CRD
from .identities import DEMO_NAMESPACES, DEMO_USERS, cluster_rbac_objects, namespace_rbac_objects
from .registry import WriteRequest
from .server import KubeSimulator

__all__ = [
    "DEMO_NAMESPACES",
    "DEMO_USERS",
    "FLUNDER_CRD",
    "KubeSimulator",
    "User",
    "WriteRequest",
    "cluster_rbac_objects",
    "namespace_rbac_objects",
]
