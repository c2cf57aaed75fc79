"""The resource kinds the example serves, and the scope policy that serves exactly them."""

from __future__ import annotations

import typing as t
from collections.abc import Iterable
from dataclasses import dataclass

from flask_krm import AllowedResource, Scope, ScopePolicy


@dataclass(frozen=True, slots=True)
class Kind:
    """One resource kind: how people call it and where it lives in the Kubernetes API."""

    title: str
    group: str
    version: str
    resource: str

    def scope(self, target: str, namespace: str, name: str = "") -> Scope:
        """The scope of this kind's objects in ``namespace`` of ``target`` (one object with ``name``)."""
        return Scope(
            target=target,
            group=self.group,
            version=self.version,
            resource=self.resource,
            namespace=namespace,
            name=name,
        )


CONFIGMAPS: t.Final = Kind("ConfigMaps", "", "v1", "configmaps")
SECRETS: t.Final = Kind("Secrets", "", "v1", "secrets")
DEPLOYMENTS: t.Final = Kind("Deployments", "apps", "v1", "deployments")
FLUNDERS: t.Final = Kind("Flunders", "wardle.example.com", "v1alpha1", "flunders")
"""A custom resource (the sample API server's ``Flunder``), served like any built-in kind."""

ALL_KINDS: t.Final = (CONFIGMAPS, SECRETS, DEPLOYMENTS, FLUNDERS)


def scope_policy(target: str, namespaces: Iterable[str]) -> ScopePolicy:
    """Serve the example's kinds in ``namespaces`` of ``target``, and nothing else."""
    return ScopePolicy(
        targets=frozenset({target}),
        resources=tuple(AllowedResource(group=kind.group, resource=kind.resource) for kind in ALL_KINDS),
        namespaces=frozenset(namespaces),
    )
