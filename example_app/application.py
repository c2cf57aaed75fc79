"""The application factory: configuration, the extension and its hooks, sign-in, pages, audit."""

from __future__ import annotations

import secrets
import typing as t
from collections.abc import Mapping

from flask import Flask

from flask_krm import KrmStream
from flask_krm.guards import refuse_malformed_request
from flask_krm.save.review import ReviewViews
from flask_krm.save.staging import CreatePolicy

from . import access, kinds, pages
from .accounts import init_accounts
from .audit import init_audit
from .saving import limit_replicas

DEFAULTS: t.Final[Mapping[str, t.Any]] = {
    "EXAMPLE_TARGET": "cluster",
    "EXAMPLE_NAMESPACES": ("demo", "demo-staging"),
    "EXAMPLE_IMPERSONATE": True,
    "EXAMPLE_MAX_REPLICAS": 10,
    "EXAMPLE_CLUSTER_DESCRIPTION": "",
    "KRM_WATCH_LINGER": 10.0,
    # Probes for Kubernetes (docs/guide/operations.md); metrics with FLASK_KRM_METRICS_PATH=/metrics.
    "KRM_LIVENESS_PATH": "/livez",
    "KRM_READINESS_PATH": "/readyz",
    # The session cookie carries the CSRF token's session and the draft session id: out of scripts'
    # reach (HttpOnly) and never sent on cross-site requests but top-level navigations (Lax).
    # SESSION_COOKIE_SECURE is the deployment's choice: set it (FLASK_SESSION_COOKIE_SECURE=true)
    # whenever the application is served over HTTPS; the local demo runs on plain HTTP.
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SAMESITE": "Lax",
}
"""The example's own settings (``EXAMPLE_*``) and the flask-krm keys it sets differently.

- ``EXAMPLE_TARGET``: the name of the one Kubernetes target in ``KRM_TARGETS``.
- ``EXAMPLE_NAMESPACES``: the namespaces served (the scope policy allows exactly these).
- ``EXAMPLE_IMPERSONATE``: act as the signed-in person (Kubernetes RBAC applies too) instead of
  the target's own identity.
- ``EXAMPLE_MAX_REPLICAS``: the save hook refuses more replicas than this.
- ``EXAMPLE_CLUSTER_DESCRIPTION``: shown in the page footer (which cluster this is).
"""

CONFIGMAP_CREATES: t.Final = CreatePolicy(
    "v1", "ConfigMap", allowed=(("metadata", "name"), ("metadata", "labels"), ("data",))
)
"""What a person may put in a new ConfigMap: a name, labels and data (nothing Kubernetes sets)."""


def create_app(config: Mapping[str, t.Any] | None = None) -> Flask:
    """The example application.

    Configuration comes from :data:`DEFAULTS`, then ``FLASK_*`` environment variables (JSON
    values: ``FLASK_KRM_TARGETS='{"cluster": {"kubeconfig": "..."}}'``), then ``config``.
    ``KRM_TARGETS`` must name ``EXAMPLE_TARGET``; ``KRM_SCOPE_POLICY`` is derived from
    ``EXAMPLE_TARGET`` and ``EXAMPLE_NAMESPACES`` unless given. Without ``SECRET_KEY`` a random one
    is made, so sessions end when the process does.
    """
    app = Flask(__name__)
    app.config.update(DEFAULTS)
    app.config.from_prefixed_env()
    app.config.update(config or {})
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = secrets.token_hex(32)
    app.config.setdefault(
        "KRM_SCOPE_POLICY", kinds.scope_policy(app.config["EXAMPLE_TARGET"], app.config["EXAMPLE_NAMESPACES"])
    )

    # The example's own views read request.args too: refuse undecodable requests everywhere.
    app.before_request(refuse_malformed_request)
    krm = KrmStream(
        authorizer=access.authorize,
        save_hook=limit_replicas(int(app.config["EXAMPLE_MAX_REPLICAS"])),
        # Creates and deletes from live lists, reviewed and saved together (see templates/krm/list.html).
        review=ReviewViews(policies={("", "configmaps"): CONFIGMAP_CREATES}),
    )
    krm.client_loader(access.client_loader(krm, impersonate=bool(app.config["EXAMPLE_IMPERSONATE"])))
    krm.init_app(app)

    init_accounts(app)
    init_audit(app)
    app.register_blueprint(pages.bp)
    return app
