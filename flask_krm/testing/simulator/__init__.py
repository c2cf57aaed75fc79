"""An in-memory Kubernetes API server for tests and demos, spoken to by the official client unmodified.

``KubeSimulator`` serves plain HTTP on a free 127.0.0.1 port and writes a kubeconfig with one
context per user (bearer tokens)::

    with KubeSimulator(demo=True, demo_tick=None) as kube:
        api = kube.api_client("editor")          # kubernetes.client.ApiClient from the kubeconfig
        kube.demo_step(3)                         # run the demo controller now
        kube.faults.drop_watches()                # and break things on purpose

or from the command line: ``python -m flask_krm.testing.simulator --port 8001 --kubeconfig PATH --demo``.

Threads and gevent: the server runs in a native thread with its own gevent hub (``hub_thread``),
so callers may or may not be monkey-patched; the store lives on that hub and every control call
(faults, ``demo_step``, ``add_user``, ``call``) is marshalled onto it.

What it serves, shaped and worded as kube-apiserver 1.37 does (the contract suite in
``tests/contract`` passes against both): discovery; namespaces, configmaps, secrets, deployments
(with ``/status``), RBAC roles and bindings (which also drive authorization), Flunders
(``wardle.example.com/v1alpha1``, status subresource, and their CRD read-only), SubjectAccessReview
and SelfSubjectAccessReview. One global resourceVersion; lists with selectors, pagination and
resourceVersion semantics; watches with bookmarks, streaming lists and a bounded history
(410 Expired as an ERROR event on a watch, HTTP 410 on a list); merge patch only (other patch
types are 415); optimistic concurrency, preconditions, finalizers, immutable fields, no-op
writes, managedFields; bearer tokens, RBAC and (constrained) impersonation.

Known differences: no strategic-merge, JSON or apply patches, no dryRun (refused), no
deletecollection, no field validation directives (unknown fields are dropped silently), the
namespace controller empties a deleted namespace at once, managedFields own lists as a whole,
and CRDs cannot be created.
"""

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
