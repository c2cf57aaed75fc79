"""The host application of the browser tests: sign-in, a live list and live editors.

It uses flask-krm the way a host does: ``KrmStream()``, an authorizer, a client loader, and
templates that extend ``krm/base.html`` and call the ``krm.list`` / ``krm.editor`` macros. The
Kubernetes target ``sim`` is the simulator named by ``kubeconfig``. It comes in two flavours:

* the live UI app (``saving=False``): reads with the target's own identity and offers an editor
  action of its own, "Show draft";
* the saving app (``saving=True``): acts for the signed-in person by impersonation, so Kubernetes
  RBAC decides every write (``viewer`` may read but not write), saves with the default save hook,
  waits ``KRM_SAVE_CONFIRM_TIMEOUT`` (1 s) for an echo, shows Deployments through the spec
  projection, and offers creates and deletes of ConfigMaps through one review list
  (:class:`flask_krm.save.review.ReviewViews`).
"""

from __future__ import annotations

import json
import typing as t

import kubernetes.client
from flask import Flask, Response, render_template_string, request
from jinja2 import ChoiceLoader, DictLoader

from flask_krm import AllowedResource, KrmStream, Principal, Scope, ScopePolicy
from flask_krm.save.review import ReviewViews
from flask_krm.save.staging import CreatePolicy
from flask_krm.ui import EditorContext
from flask_krm.upstream.clients import Impersonation
from tests.users import add_sign_in

NAMESPACE: t.Final = "demo"
CONFIGMAPS: t.Final = f"target=sim&version=v1&resource=configmaps&namespace={NAMESPACE}"
SECRETS: t.Final = f"target=sim&version=v1&resource=secrets&namespace={NAMESPACE}"
DEPLOYMENTS: t.Final = f"target=sim&group=apps&version=v1&resource=deployments&namespace={NAMESPACE}"
BULK: t.Final = "bulk"
"""The namespace of the many-objects list (``tests.browser.serve`` fills it when asked)."""
BULK_CONFIGMAPS: t.Final = f"target=sim&version=v1&resource=configmaps&namespace={BULK}"
USERS: t.Final = ("admin", "editor", "viewer")
CONFIRM_TIMEOUT: t.Final = 1.0
"""``KRM_SAVE_CONFIRM_TIMEOUT`` of the saving app."""
AUDIT_SUFFIX: t.Final = ".audit.jsonl"
"""``serve.py`` appends one JSON line per write the saving app made to ``TRAFFIC_LOG + AUDIT_SUFFIX``."""

LIST_PAGE: t.Final = """{% extends "krm/base.html" %}
{% import "krm/_macros.html" as krm %}
{% block content %}{{ krm.list(scope, columns=["/metadata/name", ("Greeting", "/data/greeting")],
                                link="/configmaps/{name}", title="ConfigMaps", row_actions=row_actions) }}
{% endblock %}"""

BULK_PAGE: t.Final = """{% extends "krm/base.html" %}
{% import "krm/_macros.html" as krm %}
{% block content %}{{ krm.list(scope, columns=["/metadata/name", ("Value", "/data/value"),
                                         ("Labels", "/metadata/labels")],
                                link="/bulk/{name}", title="Many ConfigMaps", page_size=page_size) }}
{% endblock %}"""
"""The many-objects list; the host's own ``size`` parameter sets its page size."""

EDITOR_PAGE: t.Final = """{% extends "krm/base.html" %}
{% import "krm/_macros.html" as krm %}
{% block content %}{{ krm.editor(scope, name, projection=projection) }}{% endblock %}"""

MANAGED_LIST: t.Final = """{% if channel %}{% include "krm/_channel.html" %}{% endif %}
<section id="{{ component.id }}" class="krm-component krm-list" data-krm-component data-krm-kind="list"
         data-krm-connection="connecting" hx-headers:inherited='{{ headers|tojson }}'
         aria-labelledby="{{ component.id }}-title">
  {% include "krm/_component_header.html" %}
  <div id="{{ component.body_id }}" class="krm-body">{{ body }}</div>
  {%- if offered("create") %}
  <form hx-post="{{ url_for('krm_review.create', component_id=component.id) }}" hx-swap="none">
    <label>New ConfigMap (JSON) <textarea name="body"></textarea></label>
    <button type="submit">Add to review</button>
  </form>
  {%- endif %}
  <div id="{{ component.id }}-review" hx-get="{{ url_for('krm_review.show', component_id=component.id) }}"
       hx-trigger="load" hx-swap="none" aria-live="polite"></div>
</section>"""
"""``krm/list.html`` of the saving app: a create form (for a person who may create) and the review
list under every list (its rows' Delete buttons come from the list's ``row_actions``)."""


def bulk_configmaps(count: int) -> list[dict[str, t.Any]]:
    """``count`` ConfigMaps of the namespace ``bulk``: ``item-00000`` ... with a value and a label."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"item-{n:05d}", "namespace": BULK, "labels": {"batch": str(n % 7)}},
            "data": {"value": f"v{n}"},
        }
        for n in range(count)
    ]


def show_draft(ctx: EditorContext) -> Response:
    """An editor action (as Save is one): shows the session's draft data in the outcome region."""
    uid = ctx.uid
    draft = ctx.store.draft(uid) if uid is not None else None
    return ctx.outcome(json.dumps((draft or {}).get("data", {}), sort_keys=True))


def create_app(
    kubeconfig: str, instance_path: str, *, saving: bool = False, drafts_url: str | None = None
) -> tuple[Flask, KrmStream]:
    """The host app, serving the simulator's ``demo`` namespace as target ``sim``; ``drafts_url``
    is its ``KRM_DRAFTS_URL`` (drafts in Redis, for several workers)."""
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
            namespaces=frozenset({NAMESPACE, BULK}),
        ),
        KRM_WATCH_LINGER=5.0,
        KRM_HEARTBEAT_INTERVAL=5.0,
        KRM_DRAFTS_URL=drafts_url,
    )
    if saving:
        app.config["KRM_SAVE_CONFIRM_TIMEOUT"] = CONFIRM_TIMEOUT
    add_sign_in(app, USERS)
    row_actions = [("Delete", "krm_review.delete")] if saving else None
    # The spec projection: a status-only change is invisible, so the held version can go stale.
    deployment_projection = "krm-spec/v1" if saving else None

    @app.get("/configmaps")
    def configmaps() -> str:
        return render_template_string(LIST_PAGE, scope=CONFIGMAPS, row_actions=row_actions)

    @app.get("/bulk")
    def bulk() -> str:
        size = request.args.get("size", "50")
        return render_template_string(BULK_PAGE, scope=BULK_CONFIGMAPS, page_size=int(size) if size.isdigit() else 50)

    @app.get("/configmaps/<name>")
    def configmap(name: str) -> str:
        return render_template_string(EDITOR_PAGE, scope=CONFIGMAPS, name=name, projection=None, title=name)

    @app.get("/secrets/<name>")
    def secret(name: str) -> str:
        return render_template_string(EDITOR_PAGE, scope=SECRETS, name=name, projection=None, title=name)

    @app.get("/deployments/<name>")
    def deployment(name: str) -> str:
        return render_template_string(
            EDITOR_PAGE, scope=DEPLOYMENTS, name=name, projection=deployment_projection, title=name
        )

    krm = KrmStream()

    @krm.authorizer
    def authorize(principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
        if principal.name == "viewer" and verb == "delete":
            return False  # the host's own rule: viewers never delete; every other write is left to RBAC
        return principal.name in USERS  # with saving, Kubernetes RBAC decides what each may write

    @krm.client_loader
    def client(target: str, principal: Principal) -> kubernetes.client.ApiClient | None:
        if not saving:
            return None  # the target's own identity; the authorizer is the boundary
        return krm.runtime().api_clients().acting_as(target, Impersonation(principal.name))

    krm.init_app(app)
    if saving:
        creates = CreatePolicy("v1", "ConfigMap", allowed=(("metadata", "name"), ("metadata", "labels"), ("data",)))
        app.register_blueprint(ReviewViews(policies={("", "configmaps"): creates}).blueprint())
        app.jinja_env.loader = ChoiceLoader(
            [DictLoader({"krm/list.html": MANAGED_LIST}), t.cast(t.Any, app.jinja_env.loader)]
        )
    else:
        krm.editor_action("show-draft", label="Show draft")(show_draft)
    return app, krm
