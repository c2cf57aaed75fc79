"""A small host application for the browser tests: sign-in, a live list and live editors.

It uses flask-krm the way a host does: ``KrmStream(app)``, an authorizer, a client loader, an
editor action of its own, and templates that extend ``krm/base.html`` and call the ``krm.list`` /
``krm.editor`` macros. The Kubernetes target ``sim`` is the simulator named by ``kubeconfig``.
"""

from __future__ import annotations

import json
import typing as t

from flask import Flask, Response, render_template_string
from flask_login import LoginManager, UserMixin, login_user, logout_user

from flask_krm import AllowedResource, KrmStream, Principal, Scope, ScopePolicy
from flask_krm.ui import EditorContext

NAMESPACE: t.Final = "demo"
CONFIGMAPS: t.Final = f"target=sim&version=v1&resource=configmaps&namespace={NAMESPACE}"
SECRETS: t.Final = f"target=sim&version=v1&resource=secrets&namespace={NAMESPACE}"
DEPLOYMENTS: t.Final = f"target=sim&group=apps&version=v1&resource=deployments&namespace={NAMESPACE}"

LIST_PAGE: t.Final = """{% extends "krm/base.html" %}
{% import "krm/_macros.html" as krm %}
{% block content %}{{ krm.list(scope, columns=["/metadata/name", ("Greeting", "/data/greeting")],
                                link="/configmaps/{name}", title="ConfigMaps") }}{% endblock %}"""

EDITOR_PAGE: t.Final = """{% extends "krm/base.html" %}
{% import "krm/_macros.html" as krm %}
{% block content %}{{ krm.editor(scope, name) }}{% endblock %}"""


def show_draft(ctx: EditorContext) -> Response:
    """An editor action (as Save is one): shows the session's draft data in the outcome region."""
    uid = ctx.uid
    draft = ctx.store.draft(uid) if uid is not None else None
    return ctx.outcome(json.dumps((draft or {}).get("data", {}), sort_keys=True))


class User(UserMixin):  # type: ignore[misc]
    def __init__(self, name: str) -> None:
        self.id = name


def create_app(kubeconfig: str, instance_path: str) -> tuple[Flask, KrmStream]:
    """The host app, serving the simulator's ``demo`` namespace as target ``sim``."""
    app = Flask(__name__, instance_path=instance_path)
    app.config.update(
        SECRET_KEY="browser test secret",
        KRM_TARGETS={"sim": {"kubeconfig": kubeconfig, "context": "admin"}},
        KRM_SCOPE_POLICY=ScopePolicy(
            targets=frozenset({"sim"}),
            resources=(
                AllowedResource(group="", resource="configmaps"),
                AllowedResource(group="", resource="secrets"),
                AllowedResource(group="apps", resource="deployments"),
            ),
            namespaces=frozenset({NAMESPACE}),
        ),
        KRM_WATCH_LINGER=5.0,
        KRM_HEARTBEAT_INTERVAL=5.0,
    )
    login = LoginManager(app)
    login.user_loader(lambda name: User(name) if name in ("admin", "editor", "viewer") else None)

    @app.get("/login/<name>")
    def sign_in(name: str) -> str:
        login_user(User(name))
        return "signed in"

    @app.get("/logout")
    def sign_out() -> str:
        logout_user()
        return "signed out"

    @app.get("/configmaps")
    def configmaps() -> str:
        return render_template_string(LIST_PAGE, scope=CONFIGMAPS)

    @app.get("/configmaps/<name>")
    def configmap(name: str) -> str:
        return render_template_string(EDITOR_PAGE, scope=CONFIGMAPS, name=name, title=name)

    @app.get("/deployments/<name>")
    def deployment(name: str) -> str:
        return render_template_string(EDITOR_PAGE, scope=DEPLOYMENTS, name=name, title=name)

    @app.get("/secrets/<name>")
    def secret(name: str) -> str:
        return render_template_string(EDITOR_PAGE, scope=SECRETS, name=name, title=name)

    krm = KrmStream(app)

    @krm.authorizer
    def authorize(principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
        return principal.name in ("admin", "editor", "viewer")

    @krm.client_loader
    def client(target: str, principal: Principal) -> None:
        return None  # the target's own identity; the authorizer is the boundary

    krm.editor_action("show-draft", label="Show draft")(show_draft)
    return app, krm
