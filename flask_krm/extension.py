"""The ``KrmStream`` extension object: the host's hooks and ``init_app``, the one wiring place.

:meth:`KrmStream.init_app` validates the configuration, checks the required hooks, makes the
application's :class:`~flask_krm.runtime.KrmRuntime` and registers everything the host needs: the
``krm`` blueprint (the JSON stream, the live UI, the Save editor action and their request guards),
the ``krm_csrf_token`` template global and the ``flask krm`` commands. The review views and the
native proxy are opt-in blueprints (:mod:`flask_krm.save.review`, :mod:`flask_krm.native`). The
extension object is the host's face only: the hooks, ``init_app`` and a few calls a host makes
from its own code (plug a source, mount a stream, end a session, shut down); every service of an
application is reached through its runtime, :meth:`KrmStream.runtime`.
"""

from __future__ import annotations

import typing as t
import weakref
from collections.abc import Callable, Mapping

from flask import Blueprint, Flask, Response, has_app_context, has_request_context, request

from . import config, guards, health, stream_view
from .cli import krm_cli
from .drafts import backend_from_url
from .hooks import (
    Authorizer,
    ClientLoader,
    Hooks,
    OpsSource,
    PrincipalLoader,
    RegisteredHooks,
    SaveHook,
    T_action_view,
    Verb,
)
from .native import NativeProxy
from .proxies import current_app_object
from .runtime import NOT_REGISTERED, PRINCIPAL_KEY, KrmRuntime, find_runtime, install, krm_csrf_token
from .save import editor as save_editor
from .save.audit import AuditRecord
from .save.audit_sink import AuditSink
from .save.publish import write_attempted
from .save.review import ReviewViews
from .scope import Scope
from .sessions import DraftRegistry, end_previous_principal
from .subscriptions import ShutdownAware, Subscription
from .ui import discard as discard_action
from .ui import routes as ui_routes

if t.TYPE_CHECKING:
    from .metrics import Metrics

__all__ = ["KrmStream", "RegisteredHooks", "ShutdownAware", "Subscription", "Verb"]

T_principal_loader = t.TypeVar("T_principal_loader", bound=PrincipalLoader)
T_authorizer = t.TypeVar("T_authorizer", bound=Authorizer)
T_client_loader = t.TypeVar("T_client_loader", bound=ClientLoader)
T_save_hook = t.TypeVar("T_save_hook", bound=SaveHook)


class KrmStream:
    """The flask-krm extension: live, editable Kubernetes resource views for a Flask application.

    Create it with the application, or without one and call :meth:`init_app` later; one instance
    may serve several applications. Give it the host's hooks as keyword arguments, or register
    them with the decorators :meth:`principal_loader`, :meth:`authorizer`, :meth:`client_loader`
    and :meth:`save_hook` before :meth:`init_app`. Nothing is started until the first stream is
    requested.

    The instance is the host's face: the hooks, :meth:`init_app` and a few calls. Everything
    flask-krm runs for one application (who is signed in, access decisions, Kubernetes clients,
    drafts, subscriptions, settings, greenlets) is reached through that application's runtime,
    ``krm.runtime()`` (:class:`~flask_krm.runtime.KrmRuntime`), as Flask-SQLAlchemy's ``db``
    reaches the current application's engine.

    :param app: the application to register with now.
    :param principal_loader: see :meth:`principal_loader`.
    :param authorizer: see :meth:`authorizer` (required).
    :param client_loader: see :meth:`client_loader` (required for Kubernetes targets).
    :param save_hook: see :meth:`save_hook`.
    :param review: :class:`~flask_krm.save.review.ReviewViews` to register (create and delete
        through live lists), or ``None``.
    :param native: a :class:`~flask_krm.native.NativeProxy` to register, or ``None``.
    """

    def __init__(
        self,
        app: Flask | None = None,
        *,
        principal_loader: PrincipalLoader | None = None,
        authorizer: Authorizer | None = None,
        client_loader: ClientLoader | None = None,
        save_hook: SaveHook | None = None,
        review: ReviewViews | None = None,
        native: NativeProxy | None = None,
    ) -> None:
        self.review = review
        """The create/delete/review views, registered by :meth:`init_app` when given (opt-in)."""
        self.native = native
        """The native proxy, registered by :meth:`init_app` when given (opt-in)."""
        self.hooks = Hooks(authorizer=authorizer, client_loader=client_loader, save_hook=save_hook)
        """The host's hooks, shared by the runtime of every application this instance serves."""
        if principal_loader is not None:
            self.hooks.principal_loader = principal_loader
        self._apps: weakref.WeakSet[Flask] = weakref.WeakSet()
        if app is not None:
            self.init_app(app)

    # -------------------------------------------------------------------------- registration --

    def init_app(self, app: Flask) -> None:
        """Register the extension with ``app``: configuration, runtime, blueprint, template global
        and commands.

        Validates every ``KRM_*`` key (``ValueError`` naming the key), then the hooks: raises
        :class:`~flask_krm.hooks.MissingHook` (a ``RuntimeError``) naming ``@krm.authorizer`` when
        no authorizer is registered. Mounts the
        ``krm`` blueprint at ``KRM_URL_PREFIX``, then the review views and the native proxy given to
        the constructor, and adds the ``flask krm`` command group. Starts
        nothing. Raises ``RuntimeError`` if ``app`` already has a flask-krm extension registered.
        """
        if find_runtime(app) is not None:
            raise RuntimeError(
                "A 'KrmStream' instance has already been registered on this Flask app. Import and"
                " use that instance instead."
            )
        config.apply_defaults(app)
        self.hooks.check()
        metrics_path = config.get(app, "METRICS_PATH")
        metrics = _metrics() if metrics_path is not None else None
        backend = backend_from_url(config.get(app, "DRAFTS_URL"))
        if metrics is not None:
            from .metrics import MeteredBackend

            backend = MeteredBackend.around(backend, metrics)
        runtime = KrmRuntime(
            weakref.ref(app),
            self,
            url_prefix=config.get(app, "URL_PREFIX"),
            targets=config.get(app, "TARGETS"),
            policy=config.get(app, "SCOPE_POLICY"),
            drafts=DraftRegistry(backend=backend),
            metrics=metrics,
        )
        install(app, runtime)
        _end_sessions_on_logout(app)
        _observe_writes(app, metrics, config.get(app, "AUDIT_LOG"))
        self.hooks.editor_actions.add(save_editor.ACTION_NAME, save_editor.save, label=save_editor.ACTION_LABEL)
        self.hooks.editor_actions.add(
            discard_action.ACTION_NAME, discard_action.discard, label=discard_action.ACTION_LABEL
        )
        app.register_blueprint(self._blueprint(), url_prefix=runtime.url_prefix)
        for opted_in in (self.review, self.native):
            if opted_in is not None:
                app.register_blueprint(opted_in.blueprint())
        health.register(app, config.get(app, "LIVENESS_PATH"), config.get(app, "READINESS_PATH"), metrics_path)
        app.add_template_global(krm_csrf_token, "krm_csrf_token")
        app.cli.add_command(krm_cli)
        self._apps.add(app)

    def _blueprint(self) -> Blueprint:
        """The ``krm`` blueprint: request guards, the JSON stream endpoint, the live UI's routes,
        templates and static files."""
        bp = Blueprint("krm", __name__, template_folder="templates", static_folder="static")
        guards.install(bp)

        @bp.get("/resource-stream/v1")
        @guards.refuses_as(stream_view.refusal_form, checks_parameters=True, sessionless=True)
        def resource_stream() -> Response:
            return stream_view.stream_response(request.args, request.args.get("projection") or None)

        ui_routes.register(bp)
        return bp

    def runtime(self, app: Flask | None = None) -> KrmRuntime:
        """``app``'s :class:`~flask_krm.runtime.KrmRuntime`: every service flask-krm runs for it.

        ``app`` defaults to the current application or, outside an application context (a
        greenlet of the host's), to the only application this instance is registered on. Through
        it a host reaches who is signed in (``current_principal()``), access decisions
        (``decide()``), Kubernetes clients (``api_clients()``, ``client_for()``), the session's
        drafts (``session_drafts()``), subscriptions (``subscribe()``) and settings
        (``setting()``).

        Raises ``RuntimeError`` outside an application context when the instance serves no single
        application, or when ``app`` is not registered with this instance.
        """
        if app is None and not has_app_context() and len(self._apps) == 1:
            app = next(iter(self._apps))
        found = find_runtime(app if app is not None else current_app_object())
        if found is None or found.extension is not self:
            raise RuntimeError(NOT_REGISTERED)
        return found

    # --------------------------------------------------------------------------------- hooks --

    def principal_loader(self, f: T_principal_loader) -> T_principal_loader:
        """Decorator: register ``f() -> Principal | None``, who the current request acts for.

        Called in a request context; ``None`` means nobody is signed in. The default uses
        Flask-Login's ``current_user`` when it is authenticated (principal name: ``get_id()``).
        Returns ``f`` unchanged.
        """
        self.hooks.principal_loader = f
        return f

    def authorizer(self, f: T_authorizer) -> T_authorizer:
        """Decorator: register ``f(principal, scope, projection, verb) -> bool``.

        Called before every stream (verb ``"watch"``), read and write, for the exact scope and
        projection; ``False`` refuses with ``FORBIDDEN``. Required, before :meth:`init_app`: there
        is no default, since allowing everything must be a deliberate choice. Returns ``f``
        unchanged.
        """
        self.hooks.authorizer = f
        return f

    def client_loader(self, f: T_client_loader) -> T_client_loader:
        """Decorator: register ``f(target, principal) -> kubernetes.client.ApiClient | None``.

        The client the upstream watches and writes use for the principal: per-user credentials or
        impersonation (``krm.runtime().api_clients().acting_as(target, Impersonation(principal.name))``), or
        ``None`` for the target's own service identity, one watch shared by every principal with
        the authorizer as the only boundary (re-asked on a timer). Required for Kubernetes
        targets. Returns ``f`` unchanged.
        """
        self.hooks.client_loader = f
        return f

    def save_hook(self, f: T_save_hook) -> T_save_hook:
        """Decorator: register ``f(request: WriteRequest) -> WriteResult``, which performs writes.

        Optional; the default (:func:`flask_krm.save.writer.default_save`) makes the conditional
        write (merge PATCH with uid and resourceVersion preconditions, create, delete) as the
        principal. See :mod:`flask_krm.save`. Returns ``f`` unchanged.
        """
        self.hooks.save_hook = f
        return f

    def editor_action(self, name: str, *, label: str) -> Callable[[T_action_view], T_action_view]:
        """Decorator: register ``f(ctx: EditorContext) -> Response`` as the editor action ``name``.

        Every live editor of the applications this instance serves gets a button labelled
        ``label`` posting to ``/ui/components/<id>/actions/<name>`` (see
        :mod:`flask_krm.ui.actions`); :meth:`init_app` registers ``save``. Returns ``f`` unchanged.
        Raises ``ValueError`` for a name that is not a lowercase URL segment or is already taken.
        """
        return self.hooks.editor_actions.register(name, label=label)

    # ------------------------------------------------------------------- documented host calls --

    def plug_source(self, target: str, source: OpsSource, app: Flask | None = None) -> None:
        """Serve ``target`` of ``app`` from ``source`` instead of a Kubernetes API server.

        For tests, demos and hosts with their own backend: each subscription calls
        ``source(scope, projection, principal)`` for its own operations (nothing is shared between
        subscriptions) and runs them through its own stream engine. A plugged target needs no
        ``KRM_TARGETS`` entry, but the scope policy must still list it.
        """
        self.runtime(app).plug_source(target, source)

    def stream_response(self, scope: Scope | Mapping[str, t.Any] | str, projection: str | None = None) -> Response:
        """A spec-v1 SSE ``Response`` for ``scope``, for hosts that mount their own stream route.

        ``scope`` is a :class:`~flask_krm.scope.Scope` or query parameters to parse;
        ``projection`` defaults to ``KRM_PROJECTION``. The signed-in principal is authenticated and
        authorized first; every refusal is a single terminal error event over HTTP 200, as the
        protocol requires. Requires a request context.
        """
        self.runtime()
        return stream_view.stream_response(scope, projection)

    def end_session(self) -> None:
        """End the browser session's drafts on the server: call it when the person signs out.

        The principal's drafts are discarded (in the draft backend too, so every worker forgets
        them), the draft session id dropped and the CSRF token revoked: a copy of the cookie taken
        before opens nothing, and the next sign-in starts clean. With Flask-Login this happens by
        itself on ``logout_user()``. Requires a request context.
        """
        self.runtime().end_session()

    def shutdown(self, app: Flask | None = None, *, timeout: float | None = None) -> None:
        """End every stream of ``app`` with a terminal event and stop its watches. Idempotent.

        Waits up to ``timeout`` seconds (default ``KRM_SHUTDOWN_TIMEOUT``) for greenlets to finish,
        then kills the rest. Call it from the server's exit path (gunicorn ``worker_exit``, a
        SIGTERM handler). Afterwards the application's streams are refused.
        """
        self.runtime(app).shutdown(timeout)


def _metrics() -> Metrics:
    """The application's metrics; ``RuntimeError`` naming the extra when prometheus_client is missing."""
    try:
        from .metrics import Metrics
    except ImportError:
        raise RuntimeError(
            "KRM_METRICS_PATH needs the prometheus_client package: pip install flask-krm[metrics]"
        ) from None
    return Metrics()


def _observe_writes(app: Flask, metrics: Metrics | None, audit_log: str | None) -> None:
    """Count every write attempt of ``app`` in the metrics and append it to the audit file, for
    whichever of them the configuration asks for."""
    sink = AuditSink(audit_log) if audit_log is not None else None
    if metrics is None and sink is None:
        return

    def attempted(sender: Flask, record: AuditRecord, **_: t.Any) -> None:
        if metrics is not None:
            metrics.write(record)
            if record.call is not None:
                metrics.saved_in(record.target, record.operation, record.call.duration)
        if sink is not None:
            sink.write(record)

    write_attempted.connect(attempted, app, weak=False)


def _end_sessions_on_logout(app: Flask) -> None:
    """With Flask-Login installed, end the session's drafts when ``logout_user()`` runs in ``app``,
    and when ``login_user()`` signs in someone other than the principal the session belonged to
    (its open pages and streams end at once, not at the new principal's first request)."""
    try:
        from flask_login import user_logged_in, user_logged_out
    except ImportError:  # pragma: no cover - Flask-Login is a dependency; a host may vendor without it
        return

    def ended(sender: Flask, **_: t.Any) -> None:
        found = find_runtime(sender)
        if found is not None:
            found.end_session()

    def signed_in(sender: Flask, **_: t.Any) -> None:
        found = find_runtime(sender)
        if found is None or not has_request_context():
            return
        request.environ.pop(PRINCIPAL_KEY, None)  # loaded before the sign-in, if at all
        principal = found.current_principal()
        if principal is not None:
            end_previous_principal(found.drafts, principal.name)

    user_logged_out.connect(ended, app, weak=False)
    user_logged_in.connect(signed_in, app, weak=False)
