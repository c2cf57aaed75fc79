"""An in-memory Kubernetes API server for tests and demos, spoken to by the official client unmodified.

``KubeSimulator`` serves HTTPS on a free 127.0.0.1 port with a certificate from its own fresh CA,
and writes a kubeconfig that trusts that CA, with one context per user (bearer tokens)::

    with KubeSimulator(demo=True, demo_tick=None) as kube:
        api = kube.api_client("editor")          # kubernetes.client.ApiClient from the kubeconfig
        kube.demo_step(3)                         # run the demo controller now
        kube.faults.drop_watches()                # and break things on purpose

or from the command line: ``python -m flask_krm.testing.simulator --port 8001 --kubeconfig PATH --demo``.

Threads and gevent: the server runs in a native thread with its own gevent hub (``hub_thread``),
so callers may or may not be monkey-patched; the store lives on that hub and every control call
(faults, ``demo_step``, ``add_user``, ``call``) is marshalled onto it.

What it serves, shaped and worded as kube-apiserver 1.37 does (the contract suite in
``tests/contract`` passes against both): discovery (verbs, storageVersionHash, categories);
namespaces, configmaps, secrets, deployments (with ``/status``), RBAC roles and bindings (which
also drive authorization), Flunders (``wardle.example.com/v1alpha1``, status subresource, and their
CRD read-only), SubjectAccessReview and SelfSubjectAccessReview. One global resourceVersion; lists
with selectors, pagination and resourceVersion semantics (a future version is waited for, then
504); watches with bookmarks and streaming lists; the history kept since start-up until a
compaction (every 5 minutes, or ``faults.compact()``: then 410 Expired, an ERROR event on a
watch); merge, JSON and strategic merge patches; ``dryRun=All``; deletecollection; ``Accept``
negotiation (JSON, YAML, ``PartialObjectMetadata(List)``, ``Table``, 406); optimistic concurrency,
preconditions, finalizers, immutable fields, no-op writes, managedFields; bearer tokens, RBAC and
(constrained) impersonation.

Known differences (``docs/real-kubernetes.md`` has the list): server-side apply is refused (415),
protobuf is never served, field validation directives are ignored (unknown fields are dropped
silently), CRD schemas are not enforced and CRDs cannot be created, managedFields own lists as a
whole, and the namespace controller empties a deleted namespace at once.
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
