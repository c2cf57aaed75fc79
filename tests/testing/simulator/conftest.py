"""The simulator's parts without a server: a registry on an empty store, and RBAC decisions from
the demo users' roles and bindings stored in it (``demo`` namespace only)."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.testing.simulator.errors import ApiError
from flask_krm.testing.simulator.identities import cluster_rbac_objects, namespace_rbac_objects
from flask_krm.testing.simulator.rbac import RbacAuthorizer
from flask_krm.testing.simulator.registry import Registry
from flask_krm.testing.simulator.server import install_rbac
from flask_krm.testing.simulator.store import ObjectStore


def refusal(call: t.Callable[[], object]) -> ApiError:
    """The :class:`ApiError` that ``call()`` raises."""
    with pytest.raises(ApiError) as refused:
        call()
    return refused.value


@pytest.fixture
def registry() -> Registry:
    return Registry(ObjectStore())


@pytest.fixture
def demo_authorizer(registry: Registry) -> RbacAuthorizer:
    """RBAC of the demo users, the editor's binding in the ``demo`` namespace only."""
    install_rbac(registry, cluster_rbac_objects() + namespace_rbac_objects("demo"))
    return RbacAuthorizer(registry.store)
