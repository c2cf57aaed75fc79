"""The ``KrmStream`` extension object: registration, host hooks, per-app state and shutdown."""

from __future__ import annotations

import logging
import typing as t
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from flask import Flask, Response, current_app, g, has_app_context
from gevent.pool import Group

from . import config, csrf, sessions
from .errors import ScopeDenied, Unauthenticated
from .principal import Principal, flask_login_principal

if t.TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from .scope import Scope, ScopePolicy
    from .upstream.clients import ApiClients

logger = logging.getLogger("flask_krm")

Verb: t.TypeAlias = t.Literal["get", "list", "watch", "create", "patch", "delete"]
"""What an authorization decision is about. Streams ask for ``"watch"`` (which includes listing)."""

PrincipalLoader: t.TypeAlias = Callable[[], "Principal | None"]
Authorizer: t.TypeAlias = Callable[["Principal", "Scope", str, str], bool]
ClientLoader: t.TypeAlias = Callable[[str, "Principal"], "ApiClient"]
SaveHook: t.TypeAlias = Callable[..., t.Any]

T_principal_loader = t.TypeVar("T_principal_loader", bound=PrincipalLoader)
T_authorizer = t.TypeVar("T_authorizer", bound=Authorizer)
T_client_loader = t.TypeVar("T_client_loader", bound=ClientLoader)
T_save_hook = t.TypeVar("T_save_hook", bound=SaveHook)


@dataclass(eq=False)
class _State:
    """Per-application state. :meta private:"""

    url_prefix: str
    targets: Mapping[str, config.TargetSpec]
    policy: ScopePolicy
    group: Group = field(default_factory=Group)
    drafts: sessions.DraftRegistry = field(default_factory=sessions.DraftRegistry)
    streams: set[t.Any] = field(default_factory=set)
    clients: ApiClients | None = None
    shut_down: bool = False


class KrmStream:
    """The flask-krm extension: live, editable Kubernetes resource views for a Flask application.

    Create it with the application, or without one and call :meth:`init_app` later; one instance
    may serve several applications. Register the host's hooks with the decorators
    :meth:`principal_loader`, :meth:`authorizer`, :meth:`client_loader` and :meth:`save_hook` (or
    pass them as keyword arguments). Nothing is started until the first stream is requested.

    :param app: the application to register with now.
    :param principal_loader: see :meth:`principal_loader`.
    :param authorizer: see :meth:`authorizer`.
    :param client_loader: see :meth:`client_loader`.
    :param save_hook: see :meth:`save_hook`.
    """

    def __init__(
        self,
        app: Flask | None = None,
        *,
        principal_loader: PrincipalLoader | None = None,
        authorizer: Authorizer | None = None,
        client_loader: ClientLoader | None = None,
        save_hook: SaveHook | None = None,
    ) -> None:
        self._principal_loader: PrincipalLoader = principal_loader or flask_login_principal
        self._authorizer = authorizer
        self._client_loader = client_loader
        self._save_hook = save_hook
        self._states: weakref.WeakKeyDictionary[Flask, _State] = weakref.WeakKeyDictionary()
        if app is not None:
            self.init_app(app)

    # -------------------------------------------------------------------------- registration --

    def init_app(self, app: Flask) -> None:
        """Register the extension with ``app``: configuration, blueprint and template globals.

        Validates every ``KRM_*`` key (``ValueError`` naming the key) and mounts the blueprint at
        ``KRM_URL_PREFIX``. Starts nothing. Raises ``RuntimeError`` if ``app`` already has a
        flask-krm extension registered.
        """
        if "krm" in app.extensions:
            raise RuntimeError(
                "A 'KrmStream' instance has already been registered on this Flask app. Import and"
                " use that instance instead."
            )
        config.apply_defaults(app)
        state = _State(
            url_prefix=config.get(app, "URL_PREFIX"),
            targets=config.get(app, "TARGETS"),
            policy=config.get(app, "SCOPE_POLICY"),
        )
        from .views import make_blueprint

        app.register_blueprint(make_blueprint(self, app), url_prefix=state.url_prefix)
        app.add_template_global(csrf.csrf_token, "krm_csrf_token")
        app.extensions["krm"] = self
        self._states[app] = state

    def _get_state(self, app: Flask | None = None) -> _State:
        """The per-app state; ``app`` defaults to ``current_app``. :meta private:"""
        if app is None:
            if not has_app_context():
                raise RuntimeError(
                    "Working outside of application context: pass the app, or push an app context."
                )
            app = t.cast(Flask, current_app._get_current_object())  # type: ignore[attr-defined]
        try:
            return self._states[app]
        except KeyError:
            raise RuntimeError(
                "The current Flask app is not registered with this 'KrmStream' instance. Did you"
                " forget to call 'init_app', or did you create multiple 'KrmStream' instances?"
            ) from None

    # --------------------------------------------------------------------------------- hooks --

    def principal_loader(self, f: T_principal_loader) -> T_principal_loader:
        """Decorator: register ``f() -> Principal | None``, who the current request acts for.

        Called in a request context; ``None`` means nobody is signed in. The default uses
        Flask-Login's ``current_user`` when it is authenticated (principal name: ``get_id()``).
        Returns ``f`` unchanged.
        """
        self._principal_loader = f
        return f

    def authorizer(self, f: T_authorizer) -> T_authorizer:
        """Decorator: register ``f(principal, scope, projection, verb) -> bool``.

        Called before every stream (verb ``"watch"``), read and write, for the exact scope and
        projection; ``False`` refuses with ``FORBIDDEN``. Required: there is no default, since
        allowing everything must be a deliberate choice. Returns ``f`` unchanged.
        """
        self._authorizer = f
        return f

    def client_loader(self, f: T_client_loader) -> T_client_loader:
        """Decorator: register ``f(target, principal) -> kubernetes.client.ApiClient``.

        The client the upstream watches and writes use for the principal: per-user credentials or
        impersonation (see :meth:`api_clients`), or one shared identity with the authorizer as the
        only boundary. Required for Kubernetes targets. Returns ``f`` unchanged.
        """
        self._client_loader = f
        return f

    def save_hook(self, f: T_save_hook) -> T_save_hook:
        """Decorator: register the function that performs a save (see :mod:`flask_krm.save`).

        Optional; without it saves use the default conditional merge PATCH as the principal.
        Returns ``f`` unchanged.
        """
        self._save_hook = f
        return f

    @property
    def saver(self) -> SaveHook | None:
        """The registered save hook, or ``None`` for the default save flow."""
        return self._save_hook

    # ---------------------------------------------------------------- request-time operations --

    def current_principal(self) -> Principal | None:
        """The principal of the current request (``None``: nobody signed in), loaded once per request.

        Requires a request context. Raises ``TypeError`` if the principal loader returns something
        other than a :class:`~flask_krm.principal.Principal` or ``None``; exceptions of the loader
        propagate.
        """
        if "_krm_principal" not in g:
            principal = self._principal_loader()
            if principal is not None and not isinstance(principal, Principal):
                raise TypeError(
                    "the @krm.principal_loader function must return a flask_krm.Principal or None,"
                    f" got {type(principal).__name__}"
                )
            g._krm_principal = principal
        return t.cast("Principal | None", g._krm_principal)

    def require_principal(self) -> Principal:
        """The current principal. Raises :class:`~flask_krm.errors.Unauthenticated` (401) if none."""
        principal = self.current_principal()
        if principal is None:
            raise Unauthenticated("Sign in to use this view.")
        return principal

    def is_authorized(self, principal: Principal, scope: Scope, projection: str, verb: Verb) -> bool:
        """Ask the host's authorizer. Raises ``RuntimeError`` naming ``@krm.authorizer`` if none."""
        if self._authorizer is None:
            raise RuntimeError(
                "flask-krm needs an authorizer: decorate a function (principal, scope, projection,"
                " verb) -> bool with @krm.authorizer, or pass authorizer= to KrmStream()."
            )
        return self._authorizer(principal, scope, projection, verb) is True

    def authorize(self, principal: Principal, scope: Scope, projection: str, verb: Verb) -> None:
        """Raise :class:`~flask_krm.errors.ScopeDenied` (403) unless the authorizer allows it."""
        if not self.is_authorized(principal, scope, projection, verb):
            raise ScopeDenied(f"You may not {verb} this resource with the {projection} view.")

    def client_for(self, target: str, principal: Principal) -> ApiClient:
        """The ``ApiClient`` for ``principal`` on ``target``, from the host's client loader.

        Raises ``RuntimeError`` naming ``@krm.client_loader`` if none is registered.
        """
        if self._client_loader is None:
            raise RuntimeError(
                "flask-krm needs a client loader for Kubernetes targets: decorate a function"
                " (target, principal) -> kubernetes.client.ApiClient with @krm.client_loader, or"
                " pass client_loader= to KrmStream()."
            )
        return self._client_loader(target, principal)

    def api_clients(self, app: Flask | None = None) -> ApiClients:
        """The application's per-target API clients built from ``KRM_TARGETS``, for client loaders.

        ``api_clients().service(target)`` acts with the target's own credentials;
        ``api_clients().acting_as(target, Impersonation(principal.name))`` impersonates.
        """
        state = self._get_state(app)
        if state.clients is None:
            from .upstream.clients import ApiClients

            state.clients = ApiClients(state.targets)
        return state.clients

    def scope_policy(self, app: Flask | None = None) -> ScopePolicy:
        """The application's scope policy (``KRM_SCOPE_POLICY``)."""
        return self._get_state(app).policy

    def drafts(self) -> sessions.SessionDrafts:
        """The current browser session's drafts for the signed-in principal.

        Requires a request context and a configured ``SECRET_KEY`` (the session id lives in the
        signed session cookie). Raises :class:`~flask_krm.errors.Unauthenticated` when nobody is
        signed in.
        """
        principal = self.require_principal()
        app = t.cast(Flask, current_app._get_current_object())  # type: ignore[attr-defined]
        state = self._get_state(app)
        session_id = sessions.session_key(state.drafts, principal.name)
        limits = sessions.Limits(
            store_expiry=config.get(app, "DRAFT_EXPIRY"),
            session_lifetime=app.permanent_session_lifetime.total_seconds(),
            max_stores=config.get(app, "MAX_STORES_PER_SESSION"),
        )
        return state.drafts.namespace(session_id, principal.name, limits)

    def csrf_token(self) -> str:
        """The current session's CSRF token (also the ``krm_csrf_token()`` template global)."""
        return csrf.csrf_token()

    def setting(self, key: str, app: Flask | None = None) -> t.Any:
        """The validated value of ``KRM_<key>`` for ``app`` (default: the current app)."""
        if app is None:
            app = t.cast(Flask, current_app._get_current_object())  # type: ignore[attr-defined]
        self._get_state(app)
        return config.get(app, key)

    def stream_response(
        self, scope: Scope | Mapping[str, t.Any] | str, projection: str | None = None
    ) -> Response:
        """A spec-v1 SSE ``Response`` for ``scope``, for hosts that mount their own stream route.

        ``scope`` is a :class:`~flask_krm.scope.Scope` or query parameters to parse;
        ``projection`` defaults to ``KRM_PROJECTION``. The signed-in principal is authenticated and
        authorized first; every refusal is a single terminal error event over HTTP 200, as the
        protocol requires. Requires a request context.
        """
        from .views import stream_response

        return stream_response(self, scope, projection)

    # ------------------------------------------------------------------------------ shutdown --

    def shutdown(self, app: Flask | None = None, *, timeout: float | None = None) -> None:
        """End every stream of ``app`` with a terminal event and stop its watches. Idempotent.

        Waits up to ``timeout`` seconds (default ``KRM_SHUTDOWN_TIMEOUT``) for greenlets to finish,
        then kills the rest. Call it from the server's exit path (gunicorn ``worker_exit``, a
        SIGTERM handler). After it, streams of ``app`` are refused.
        """
        if app is None:
            app = t.cast(Flask, current_app._get_current_object())  # type: ignore[attr-defined]
        state = self._get_state(app)
        if state.shut_down:
            return
        state.shut_down = True
        if timeout is None:
            timeout = config.get(app, "SHUTDOWN_TIMEOUT")
        for stream in list(state.streams):
            stream.end_for_shutdown()
        state.group.join(timeout=timeout)
        state.group.kill(block=True, timeout=1)
        if state.clients is not None:
            state.clients.close()
