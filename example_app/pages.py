"""The example's pages: a namespace overview, editors for each kind, and the Secret page.

Every page is an ordinary Flask view rendering an ordinary template; the live parts are the
``krm.list`` and ``krm.editor`` macro calls in the templates. A viewer gets the same pages with
read-only editors (the authorizer refuses their writes anyway; the page just says so up front).
"""

from __future__ import annotations

import typing as t

from flask import Blueprint, abort, current_app, redirect, render_template, url_for
from flask_login import current_user, login_required
from werkzeug.exceptions import NotFound
from werkzeug.wrappers import Response

from flask_krm.scope import ScopeError

from .kinds import CONFIGMAPS, DEPLOYMENTS, FLUNDERS, SECRETS, Kind

bp = Blueprint("pages", __name__)

EDITOR_FIELDS: t.Final[dict[str, tuple[str | tuple[str, str], ...] | None]] = {
    CONFIGMAPS.resource: ("/metadata/labels", "/data"),
    DEPLOYMENTS.resource: (
        "/metadata/labels",
        ("Replicas", "/spec/replicas"),
        ("Containers", "/spec/template/spec/containers"),
    ),
    SECRETS.resource: ("/metadata/labels", "/type", ("Keys", "/data")),
    FLUNDERS.resource: None,
}
"""What each editor shows: pointers labelled from their path ("/metadata/labels" is "Labels") or
``(label, pointer)`` pairs; ``None``: labels, annotations and the whole ``spec``, as the cluster's
schema of the kind describes them. Secret values are withheld by the projection: the page lists
keys only."""

SECRET_POLICY: t.Final = ("/metadata/labels",)
"""On the Secret page only labels are editable (the keys are shown, their values never are)."""


def namespaces() -> tuple[str, ...]:
    return tuple(current_app.config["EXAMPLE_NAMESPACES"])


def target() -> str:
    return t.cast(str, current_app.config["EXAMPLE_TARGET"])


def _namespace(namespace: str) -> str:
    if namespace not in namespaces():
        abort(404, description=f"Namespace {namespace!r} is not served by this application.")
    return namespace


def _policy(editable: t.Any = None) -> t.Any:
    """The editor policy for the signed-in account: read-only for anyone who may not write.

    ``None`` is flask-krm's least privilege: exactly the fields the editor shows are editable.
    """
    return editable if current_user.can_write else "read-only"


@bp.app_errorhandler(NotFound)
def not_found(error: NotFound) -> tuple[str, int]:
    """Every 404 of the application as a page of it: what was not found, and where to go instead."""
    return render_template("example/not_found.html", reason=error.description, namespaces=namespaces()), 404


@bp.get("/")
@login_required
def home() -> Response:
    return redirect(url_for("pages.overview", namespace=namespaces()[0]))


@bp.get("/namespaces/<namespace>")
@login_required
def overview(namespace: str) -> str:
    namespace = _namespace(namespace)
    return render_template(
        "example/overview.html",
        namespace=namespace,
        configmaps=CONFIGMAPS.scope(target(), namespace),
        deployments=DEPLOYMENTS.scope(target(), namespace),
        secrets=SECRETS.scope(target(), namespace),
        flunders=FLUNDERS.scope(target(), namespace),
    )


def _editor_page(template: str, kind: Kind, namespace: str, name: str, **context: t.Any) -> str:
    namespace = _namespace(namespace)
    return render_template(
        template,
        kind=kind,
        namespace=namespace,
        name=name,
        scope=kind.scope(target(), namespace),
        fields=EDITOR_FIELDS[kind.resource],
        policy=_policy(context.pop("editable", None)),
        **context,
    )


@bp.get("/namespaces/<namespace>/configmaps/<name>")
@login_required
def configmap(namespace: str, name: str) -> str:
    return _editor_page("example/editor.html", CONFIGMAPS, namespace, name)


@bp.get("/namespaces/<namespace>/flunders/<name>")
@login_required
def flunder(namespace: str, name: str) -> str:
    return _editor_page("example/editor.html", FLUNDERS, namespace, name)


@bp.get("/namespaces/<namespace>/deployments/<name>")
@login_required
def deployment(namespace: str, name: str) -> str:
    try:
        status = DEPLOYMENTS.scope(target(), _namespace(namespace), name)
    except ScopeError:  # no object can have this name (krm.editor answers the same 404 itself)
        abort(404, description="No such object.")
    return _editor_page("example/deployment.html", DEPLOYMENTS, namespace, name, status_scope=status)


@bp.get("/namespaces/<namespace>/secrets/<name>")
@login_required
def secret(namespace: str, name: str) -> str:
    return _editor_page("example/secret.html", SECRETS, namespace, name, editable=list(SECRET_POLICY))
