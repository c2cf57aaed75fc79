"""Kubernetes API clients: one ``ApiClient`` per target, and views of it acting as someone else.

The official client is used as a thin raw transport (see ``docs/internals.md``). Each target gets
one :class:`kubernetes.client.ApiClient` whose urllib3 pool is sized for the number of watches
the process may hold open at once; per-user clients (impersonation or a user's own bearer token)
share that pool, so acting for many users costs no extra sockets.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeAlias
from urllib.parse import quote

from kubernetes import client, config
from kubernetes.config.incluster_config import InClusterConfigLoader
from urllib3._collections import HTTPHeaderDict

DEFAULT_POOL_MAXSIZE = 256
"""urllib3 connections kept per target: at least the number of concurrent watches."""

SERVICE_ACCOUNT_DIR: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where Kubernetes mounts a pod's service account token (``token``) and cluster CA (``ca.crt``)."""


class TargetConnection(Protocol):
    """How to reach one target's API server (``flask_krm.config.TargetSpec`` satisfies this)."""

    @property
    def kubeconfig(self) -> str | None: ...

    @property
    def context(self) -> str | None: ...

    @property
    def in_cluster(self) -> bool: ...


def service_account_dir(connection: TargetConnection) -> str:
    """The folder holding an in-cluster connection's ``token`` and ``ca.crt``."""
    return getattr(connection, "service_account_dir", None) or SERVICE_ACCOUNT_DIR


@dataclass(frozen=True, slots=True)
class Kubeconfig:
    """A kubeconfig file (``None``: the default location) and a context (``None``: its current one)."""

    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = field(default=False, init=False)


@dataclass(frozen=True, slots=True)
class InCluster:
    """The pod's service account: token and CA from ``service_account_dir`` (default: where
    Kubernetes mounts them), the API server from ``KUBERNETES_SERVICE_HOST``/``_PORT``."""

    service_account_dir: str = SERVICE_ACCOUNT_DIR
    kubeconfig: None = field(default=None, init=False)
    context: None = field(default=None, init=False)
    in_cluster: bool = field(default=True, init=False)


@dataclass(frozen=True, slots=True)
class ServiceIdentity:
    """Act with the target's own configured credentials (one identity shared by every user)."""


SERVICE_IDENTITY = ServiceIdentity()


@dataclass(frozen=True, slots=True)
class Impersonation:
    """Act as ``user`` (and its groups, uid and extra attributes) through impersonation headers.

    The target's configured credentials need RBAC verb ``impersonate``.
    """

    user: str
    groups: tuple[str, ...] = ()
    uid: str | None = None
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.user, str) or not self.user:
            raise ValueError("Impersonation needs a non-empty user name")

    def headers(self) -> list[tuple[str, str]]:
        """The impersonation header lines, one per value (groups repeat the header)."""
        lines = [("Impersonate-User", self.user)]
        lines += [("Impersonate-Group", group) for group in self.groups]
        if self.uid:
            lines.append(("Impersonate-Uid", self.uid))
        for key, values in self.extra:
            lines += [("Impersonate-Extra-" + quote(key, safe=""), value) for value in values]
        return lines


@dataclass(frozen=True, slots=True)
class BearerToken:
    """Act with a user's own bearer token (for example an OIDC ID token) instead of the target's."""

    token: str = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.token, str) or not self.token:
            raise ValueError("BearerToken needs a non-empty token")

    def headers(self) -> list[tuple[str, str]]:
        """The one ``Authorization`` header line."""
        return [("Authorization", "Bearer " + self.token)]


UpstreamIdentity: TypeAlias = ServiceIdentity | Impersonation | BearerToken
"""Who an upstream request acts as; part of the key of a shared watch."""


class UnknownTargetError(LookupError):
    """A target name that the host's target mapping does not define."""

    def __init__(self, target: str) -> None:
        super().__init__(f"no Kubernetes target named {target!r} is configured")
        self.target = target


class ActingApiClient(client.ApiClient):
    """A view of a base ``ApiClient`` that sends identity headers on every request.

    It shares the base client's connection pool (and never closes it). Headers that would name
    another identity (``Impersonate-*``, and ``Authorization`` when a token is given) are dropped
    from every request before the identity's own lines are added.
    """

    def __init__(self, base: client.ApiClient, identity: Impersonation | BearerToken) -> None:
        super().__init__(base.configuration)
        self.rest_client.close()
        self.rest_client = base.rest_client
        self.identity = identity
        self._lines = identity.headers()
        overridden = {"impersonate-"}
        if isinstance(identity, BearerToken):
            overridden.add("authorization")
        self._overridden = tuple(overridden)

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Mapping[str, str] | None = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        headers = HTTPHeaderDict()
        for key, value in (header_params or {}).items():
            if not key.lower().startswith(self._overridden):
                headers.add(key, value)
        for key, value in self._lines:
            headers.add(key, value)
        return super().call_api(
            method, url, header_params=headers, body=body, post_params=post_params, _request_timeout=_request_timeout
        )

    def close(self) -> None:
        """Nothing to release: the connection pool belongs to the base client."""


def build_api_client(
    connection: TargetConnection, *, pool_maxsize: int = DEFAULT_POOL_MAXSIZE, keep_alive: bool = True
) -> client.ApiClient:
    """A new ``ApiClient`` for one target, never touching the client's global default configuration."""
    cfg = client.Configuration()
    if connection.in_cluster:
        folder = service_account_dir(connection)
        InClusterConfigLoader(  # type: ignore[no-untyped-call]
            token_filename=os.path.join(folder, "token"), cert_filename=os.path.join(folder, "ca.crt")
        ).load_and_set(cfg)
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=connection.kubeconfig,
            context=connection.context,
            client_configuration=cfg,
            persist_config=False,
        )
    cfg.connection_pool_maxsize = pool_maxsize
    cfg.keep_alive = keep_alive
    return client.ApiClient(cfg)


class ApiClients:
    """One ``ApiClient`` per configured target, built on first use.

    :param targets: target name -> connection (``flask_krm.config.TargetSpec``, :class:`Kubeconfig`
        or :class:`InCluster`).
    :param pool_maxsize: connections kept per target; size it for the watches open at once.
    """

    def __init__(
        self,
        targets: Mapping[str, TargetConnection],
        *,
        pool_maxsize: int = DEFAULT_POOL_MAXSIZE,
        keep_alive: bool = True,
    ) -> None:
        if pool_maxsize < 1:
            raise ValueError(f"pool_maxsize must be at least 1, got {pool_maxsize}")
        self._targets = dict(targets)
        self._pool_maxsize = pool_maxsize
        self._keep_alive = keep_alive
        self._clients: dict[str, client.ApiClient] = {}

    @property
    def targets(self) -> Iterable[str]:
        """The configured target names."""
        return tuple(self._targets)

    def service(self, target: str) -> client.ApiClient:
        """The target's client, acting with the target's own credentials."""
        api = self._clients.get(target)
        if api is None:
            try:
                connection = self._targets[target]
            except KeyError:
                raise UnknownTargetError(target) from None
            api = build_api_client(connection, pool_maxsize=self._pool_maxsize, keep_alive=self._keep_alive)
            self._clients[target] = api
        return api

    def acting_as(self, target: str, identity: UpstreamIdentity) -> client.ApiClient:
        """A client for ``target`` acting as ``identity``, sharing the target's connection pool."""
        base = self.service(target)
        if isinstance(identity, ServiceIdentity):
            return base
        return ActingApiClient(base, identity)

    def close(self) -> None:
        """Close every connection pool. Clients handed out before must not be used afterwards."""
        clients, self._clients = self._clients, {}
        for api in clients.values():
            api.close()  # type: ignore[no-untyped-call]
