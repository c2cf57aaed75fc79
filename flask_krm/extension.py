"""The ``KrmStream`` extension object: registration, host hooks, per-app state and shutdown."""

from __future__ import annotations

import contextvars
import logging
import typing as t
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import gevent
import gevent.queue
from flask import Flask, Response, current_app, g, has_app_context, request
from gevent.pool import Group

from . import config, csrf, sessions, signals
from .errors import ScopeDenied, ScopeInvalid, Unauthenticated
from .events import Event, StreamError
from .ops import Failure, SourceOp
from .principal import Principal, flask_login_principal
from .scope import Scope, ScopeError, ScopePolicy, parse_scope
from .sse import HEARTBEAT, FrameSequencer, heartbeat_interval
from .stream import StreamEngine

if t.TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from .save.writer import WriteRequest, WriteResult
    from .ui.actions import EditorActions, T_action_view
    from .upstream.clients import ApiClients
    from .upstream.hub import Hub, HubObserver

logger = logging.getLogger("flask_krm")

Verb: t.TypeAlias = t.Literal["get", "list", "watch", "create", "patch", "delete"]
"""What an authorization decision is about. Streams ask for ``"watch"`` (which includes listing)."""

PrincipalLoader: t.TypeAlias = Callable[[], "Principal | None"]
Authorizer: t.TypeAlias = Callable[["Principal", "Scope", str, str], bool]
ClientLoader: t.TypeAlias = Callable[[str, "Principal"], "ApiClient | None"]
SaveHook: t.TypeAlias = Callable[["WriteRequest"], "WriteResult"]
OpsSource: t.TypeAlias = Callable[["Scope", str, "Principal"], Iterable[SourceOp]]
"""A plugged source: ``source(scope, projection, principal)`` returns one connection's operations.

It is called once per subscription, in a greenlet of the application; iterating may block on
gevent primitives. When the iteration ends the stream ends, as the connection of a replayed
fixture does.
"""

SHUTDOWN_ERROR: t.Final = StreamError("INTERNAL", "the server is shutting down", terminal=True)
SOURCE_FAILED: t.Final = Failure("INTERNAL", "the stream source failed", terminal=True)
CLIENT_FAILED: t.Final = StreamError("INTERNAL", "no client for the target could be obtained", terminal=True)

_preauthorized: contextvars.ContextVar[tuple[Principal, Scope, str] | None] = contextvars.ContextVar(
    "krm_preauthorized", default=None
)

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
    """Open streams with an ``end_for_shutdown()`` method (page channels, plugged subscriptions)."""
    sources: dict[str, OpsSource] = field(default_factory=dict)
    clients: ApiClients | None = None
    hub: Hub | None = None
    shut_down: bool = False


class ShutdownAware(t.Protocol):
    """Something open that the application's :meth:`KrmStream.shutdown` must end (a stream, a feed)."""

    def end_for_shutdown(self) -> None:
        """End now: the application is shutting down. Must not block."""
        ...


class Subscription(t.Protocol):
    """One stream of one scope under one projection, as :meth:`KrmStream.subscribe` returns it.

    Iterate it for SSE bytes (``seq`` from 1, heartbeats while idle) or use :meth:`batches` for
    protocol events; either ends after a terminal error or when the source ends, and closes the
    subscription. :class:`flask_krm.upstream.hub.Subscriber` is one.
    """

    def __iter__(self) -> Iterator[bytes]: ...

    def batches(self, timeout: float | None = None) -> Iterator[list[Event]]:
        """Events as they arrive; an empty batch after each idle ``timeout``."""
        ...

    def close(self) -> None:
        """Stop being served. Idempotent."""
        ...


@dataclass(frozen=True, slots=True)
class RegisteredHooks:
    """The host hooks registered with a :class:`KrmStream`; ``None`` means the default applies."""

    principal_loader: PrincipalLoader | None
    authorizer: Authorizer | None
    client_loader: ClientLoader | None
    save_hook: SaveHook | None


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
        from .ui.actions import EditorActions

        self.editor_actions: EditorActions = EditorActions()
        """The editor actions (buttons) of every application this instance serves; see :meth:`editor_action`."""
        if app is not None:
            self.init_app(app)

    # -------------------------------------------------------------------------- registration --

    def init_app(self, app: Flask) -> None:
        """Register the extension with ``app``: configuration, blueprint and template globals.

        Validates every ``KRM_*`` key (``ValueError`` naming the key) and mounts the blueprint at
        ``KRM_URL_PREFIX``; adds the ``flask krm`` command group. Starts nothing. Raises ``RuntimeError`` if ``app`` already has a
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

        app.register_blueprint(make_blueprint(self), url_prefix=state.url_prefix)
        app.add_template_global(csrf.csrf_token, "krm_csrf_token")
        from .cli import krm_cli

        app.cli.add_command(krm_cli)
        app.extensions["krm"] = self
        self._states[app] = state

    def _get_state(self, app: Flask | None = None) -> _State:
        """The per-app state; ``app`` defaults to ``current_app``. :meta private:"""
        app = self._app(app)
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
        """Decorator: register ``f(target, principal) -> kubernetes.client.ApiClient | None``.

        The client the upstream watches and writes use for the principal: per-user credentials or
        impersonation (``krm.api_clients().acting_as(target, Impersonation(principal.name))``), or
        ``None`` for the target's own service identity, one watch shared by every principal with
        the authorizer as the only boundary (re-asked on a timer). Required for Kubernetes
        targets. Returns ``f`` unchanged.
        """
        self._client_loader = f
        return f

    def save_hook(self, f: T_save_hook) -> T_save_hook:
        """Decorator: register ``f(request: WriteRequest) -> WriteResult``, which performs writes.

        Optional; the default (:func:`flask_krm.save.writer.default_save`) makes the conditional
        write (merge PATCH with uid and resourceVersion preconditions, create, delete) as the
        principal. See :mod:`flask_krm.save`. Returns ``f`` unchanged.
        """
        self._save_hook = f
        return f

    def editor_action(self, name: str, *, label: str) -> Callable[[T_action_view], T_action_view]:
        """Decorator: register ``f(ctx: EditorContext) -> Response`` as the editor action ``name``.

        Every live editor of the applications this instance serves gets a button labelled
        ``label`` posting to ``/ui/components/<id>/actions/<name>`` (see
        :mod:`flask_krm.ui.actions`); the blueprint registers ``save``. Returns ``f`` unchanged.
        Raises ``ValueError`` for a name that is not a lowercase URL segment or is already taken.
        """
        return self.editor_actions.register(name, label=label)

    def registered_hooks(self) -> RegisteredHooks:
        """Which host hooks are registered (``None`` where the extension's default is in force)."""
        return RegisteredHooks(
            principal_loader=None if self._principal_loader is flask_login_principal else self._principal_loader,
            authorizer=self._authorizer,
            client_loader=self._client_loader,
            save_hook=self._save_hook,
        )

    def open_streams(self, app: Flask | None = None) -> list[t.Any]:
        """A snapshot of ``app``'s open streams (page channels and plugged subscriptions)."""
        return list(self._get_state(app).streams)

    def track_stream(self, stream: ShutdownAware, app: Flask | None = None) -> Callable[[], None]:
        """Have :meth:`shutdown` of ``app`` call ``stream.end_for_shutdown()``; returns the undo function."""
        streams = self._get_state(app).streams
        streams.add(stream)
        return lambda: streams.discard(stream)

    def greenlets(self, app: Flask | None = None) -> Group:
        """``app``'s greenlet group: spawn long-lived work here, so :meth:`shutdown` joins, then kills it."""
        return self._get_state(app).group

    def is_shut_down(self, app: Flask | None = None) -> bool:
        """Whether :meth:`shutdown` was called for ``app`` (it then opens no new streams)."""
        return self._get_state(app).shut_down

    @property
    def saver(self) -> SaveHook:
        """The save hook in force: the registered one, or the default conditional write."""
        if self._save_hook is not None:
            return self._save_hook
        from .save.writer import default_save

        return default_save

    # ---------------------------------------------------------------- request-time operations --

    def current_principal(self) -> Principal | None:
        """The principal of the current request (``None``: nobody signed in), loaded once per request.

        Requires a request context. Raises ``TypeError`` if the principal loader returns something
        other than a :class:`~flask_krm.principal.Principal` or ``None``; exceptions of the loader
        propagate.
        """
        # Keyed by the request: an outer app context (a test's) shares ``g`` between requests.
        current = request._get_current_object()  # type: ignore[attr-defined]
        cached = g.get("_krm_principal")
        if cached is not None and cached[0] is current:
            return t.cast("Principal | None", cached[1])
        principal = self._principal_loader()
        if principal is not None and not isinstance(principal, Principal):
            raise TypeError(
                "the @krm.principal_loader function must return a flask_krm.Principal or None,"
                f" got {type(principal).__name__}"
            )
        g._krm_principal = (current, principal)
        return principal

    def require_principal(self) -> Principal:
        """The current principal. Raises :class:`~flask_krm.errors.Unauthenticated` (401) if none."""
        principal = self.current_principal()
        if principal is None:
            raise Unauthenticated("Sign in to use this view.")
        return principal

    def is_authorized(self, principal: Principal, scope: Scope, projection: str, verb: Verb) -> bool:
        """Ask the host's authorizer: ``True`` only when it returns ``True``.

        An authorizer may also refuse by raising
        :class:`flask_krm.upstream.authz.AccessDenied` (which gives ``False`` here); any other
        exception propagates. Raises ``RuntimeError`` naming ``@krm.authorizer`` if none is
        registered.
        """
        from .upstream.authz import AccessDenied

        authorizer = self._require_authorizer()
        try:
            return authorizer(principal, scope, projection, verb) is True
        except AccessDenied:
            return False

    def authorize(self, principal: Principal, scope: Scope, projection: str, verb: Verb) -> None:
        """Raise :class:`~flask_krm.errors.ScopeDenied` (403) unless the authorizer allows it."""
        from .upstream.authz import AccessDenied

        authorizer = self._require_authorizer()
        try:
            allowed = authorizer(principal, scope, projection, verb) is True
        except AccessDenied as denied:
            raise ScopeDenied(denied.message) from None
        if not allowed:
            raise ScopeDenied(f"You may not {verb} this resource with the {projection} view.")

    def _stream_refusal(self, principal: Principal, scope: Scope, projection: str) -> StreamError | None:
        """The terminal error refusing a stream, or ``None`` when it is allowed. :meta private:

        Mirrors the hub: ``False`` is ``FORBIDDEN``, ``AccessDenied`` carries its own code and
        message, any other failure of the authorizer is ``INTERNAL`` (never an allow).
        """
        from .upstream.authz import AccessDenied

        authorizer = self._require_authorizer()
        try:
            allowed = authorizer(principal, scope, projection, "watch") is True
        except AccessDenied as denied:
            return StreamError(denied.code, denied.message, terminal=True)
        except Exception:
            logger.exception("the authorizer failed; the stream is refused")
            return StreamError("INTERNAL", "the authorization check failed", terminal=True)
        if not allowed:
            return StreamError("FORBIDDEN", "this stream is not permitted for the signed-in principal", terminal=True)
        return None

    def _require_authorizer(self) -> Authorizer:
        if self._authorizer is None:
            raise RuntimeError(
                "flask-krm needs an authorizer: decorate a function (principal, scope, projection,"
                " verb) -> bool with @krm.authorizer, or pass authorizer= to KrmStream()."
            )
        return self._authorizer

    def client_for(self, target: str, principal: Principal) -> ApiClient:
        """The ``ApiClient`` that reads and writes ``target`` for ``principal``.

        The client loader's answer, or the target's service client (:meth:`api_clients`) when it
        answers ``None``. Raises ``RuntimeError`` naming ``@krm.client_loader`` if none is
        registered.
        """
        client = self._require_client_loader()(target, principal)
        return self.api_clients().service(target) if client is None else client

    def _require_client_loader(self) -> ClientLoader:
        if self._client_loader is None:
            raise RuntimeError(
                "flask-krm needs a client loader for Kubernetes targets: decorate a function"
                " (target, principal) -> kubernetes.client.ApiClient | None with"
                " @krm.client_loader, or pass client_loader= to KrmStream()."
            )
        return self._client_loader

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

    def scope_from(self, query: Scope | Mapping[str, t.Any] | str, app: Flask | None = None) -> Scope:
        """Parse query parameters into a :class:`~flask_krm.scope.Scope` this application serves.

        For views that take a scope outside a stream. Raises
        :class:`~flask_krm.errors.ScopeInvalid` (400) with the reason when the scope is malformed,
        refused by ``KRM_SCOPE_POLICY`` or names a target that is neither configured nor plugged.
        """
        try:
            scope = query if isinstance(query, Scope) else parse_scope(query)
            self.scope_policy(app).check(scope)
        except ScopeError as exc:
            raise ScopeInvalid(exc.message) from None
        if not self.serves_target(scope.target, app):
            raise ScopeInvalid(f"target {scope.target!r} is not served here")
        return scope

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
        app = self._app(None)
        state = self._get_state(app)
        session_id = sessions.session_key(state.drafts, principal.name)
        limits = sessions.Limits(
            store_expiry=config.get(app, "DRAFT_EXPIRY"),
            session_lifetime=app.permanent_session_lifetime.total_seconds(),
            max_stores=config.get(app, "MAX_STORES_PER_SESSION"),
            max_sessions=config.get(app, "MAX_SESSIONS"),
        )
        return state.drafts.namespace(session_id, principal.name, limits)

    def follow_principal(self) -> bool:
        """Bind the browser session's flask-krm state to the current principal; whether it changed.

        When another principal than the one the session belongs to is signed in, the previous
        principal's drafts are discarded and the draft session id and the CSRF token replaced
        (:func:`flask_krm.sessions.follow_principal`). The CSRF functions and :meth:`drafts` call it;
        a host may call it right after its own sign-in. Requires a request context.
        """
        principal = self.current_principal()
        return sessions.follow_principal(self._get_state().drafts, principal.name if principal is not None else None)

    def csrf_token(self) -> str:
        """The current session's CSRF token (also the ``krm_csrf_token()`` template global)."""
        return csrf.csrf_token()

    def setting(self, key: str, app: Flask | None = None) -> t.Any:
        """The validated value of ``KRM_<key>`` for ``app`` (default: the current app)."""
        app = self._app(app)
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

    # ------------------------------------------------------------------------- subscriptions --

    def plug_source(self, target: str, source: OpsSource, app: Flask | None = None) -> None:
        """Serve ``target`` of ``app`` from ``source`` instead of a Kubernetes API server.

        For tests, demos and hosts with their own backend: each subscription calls
        ``source(scope, projection, principal)`` for its own operations (nothing is shared between
        subscriptions) and runs them through its own stream engine. A plugged target needs no
        ``KRM_TARGETS`` entry, but the scope policy must still list it.
        """
        self._get_state(app).sources[target] = source

    def subscribe(
        self, principal: Principal, scope: Scope, projection: str, app: Flask | None = None
    ) -> Subscription:
        """A new subscription to ``scope`` under ``projection``, acting for ``principal``.

        The caller has checked the scope policy. The authorizer is asked (a refusal or a failure
        gives a subscription that yields only the terminal error); a Kubernetes target is served by
        the application's shared hub with the client from the client loader, a plugged target by
        its source. ``app`` defaults to the current application or, in a greenlet without an
        application context, to the only application this extension is registered on.

        Raises ``RuntimeError`` when a Kubernetes target is requested in a process that gevent has
        not monkey-patched, or after :meth:`shutdown`.
        """
        if app is None and not has_app_context() and len(self._states) == 1:
            app = next(iter(self._states.keys()))
        app = self._app(app)
        state = self._get_state(app)
        if state.shut_down:
            raise RuntimeError("flask-krm was shut down for this application; it opens no new streams")
        engine = StreamEngine(scope, projection)
        source = state.sources.get(scope.target)
        if source is not None:
            if _preauthorized.get() != (principal, scope, projection):
                refusal = self._stream_refusal(principal, scope, projection)
                if refusal is not None:
                    return _Refused(refusal)
            return _PluggedSubscription(
                state,
                engine,
                principal,
                source,
                heartbeat=heartbeat_interval(config.get(app, "HEARTBEAT_INTERVAL")),
                queue_depth=config.get(app, "QUEUE_DEPTH"),
            )
        hub = self._hub(app, state)
        loader = self._require_client_loader()
        try:
            client = loader(scope.target, principal)
        except Exception:
            logger.exception("the client loader failed; the stream ends")
            return _Refused(CLIENT_FAILED)
        return hub.subscribe(scope, projection, principal, client=client)

    def _subscribe_authorized(
        self, principal: Principal, scope: Scope, projection: str, app: Flask
    ) -> Subscription:
        """:meth:`subscribe` when the caller has just asked the authorizer. :meta private:"""
        token = _preauthorized.set((principal, scope, projection))
        try:
            return self.subscribe(principal, scope, projection, app)
        finally:
            _preauthorized.reset(token)

    def serves_target(self, target: str, app: Flask | None = None) -> bool:
        """Whether ``target`` is configured in ``KRM_TARGETS`` or plugged with :meth:`plug_source`."""
        state = self._get_state(app)
        return target in state.sources or target in state.targets

    def _hub(self, app: Flask, state: _State) -> Hub:
        if state.hub is None:
            from .upstream.hub import Hub, HubObserver

            def authorize(principal: Principal, scope: Scope, projection: str) -> bool:
                if _preauthorized.get() == (principal, scope, projection):
                    return True
                return self._require_authorizer()(principal, scope, projection, "watch") is True

            state.hub = Hub(
                self.api_clients(app),
                authorize,
                queue_depth=config.get(app, "QUEUE_DEPTH"),
                linger=config.get(app, "WATCH_LINGER"),
                heartbeat=config.get(app, "HEARTBEAT_INTERVAL"),
                observer=t.cast("HubObserver", _SignalObserver(app)),
            )
        return state.hub

    def _app(self, app: Flask | None) -> Flask:
        if app is not None:
            return app
        if not has_app_context():
            raise RuntimeError("Working outside of application context: pass the app, or push an app context.")
        return t.cast(Flask, current_app._get_current_object())  # type: ignore[attr-defined]

    # ------------------------------------------------------------------------------ shutdown --

    def shutdown(self, app: Flask | None = None, *, timeout: float | None = None) -> None:
        """End every stream of ``app`` with a terminal event and stop its watches. Idempotent.

        Waits up to ``timeout`` seconds (default ``KRM_SHUTDOWN_TIMEOUT``) for greenlets to finish,
        then kills the rest. Call it from the server's exit path (gunicorn ``worker_exit``, a
        SIGTERM handler). Afterwards the application's streams are refused.
        """
        app = self._app(app)
        state = self._get_state(app)
        if state.shut_down:
            return
        state.shut_down = True
        if timeout is None:
            timeout = config.get(app, "SHUTDOWN_TIMEOUT")
        for stream in list(state.streams):
            stream.end_for_shutdown()
        if state.hub is not None:
            state.hub.shutdown(timeout)
        state.group.join(timeout=timeout)
        state.group.kill(block=True, timeout=1)
        if state.clients is not None:
            state.clients.close()


class _Last:
    """The final batch of a plugged subscription (possibly empty)."""

    __slots__ = ("events",)

    def __init__(self, events: list[Event]) -> None:
        self.events = events


class _PluggedSubscription:
    """A subscription served by a plugged source, through its own engine. :meta private:

    A pump greenlet in the application's group feeds the source's operations to the engine and
    queues the events; the bounded queue holds the source back when the reader is slow (nothing
    is shared, so nobody else waits).
    """

    def __init__(
        self,
        state: _State,
        engine: StreamEngine,
        principal: Principal,
        source: OpsSource,
        *,
        heartbeat: float,
        queue_depth: int,
    ) -> None:
        self._state = state
        self.engine = engine
        self.principal = principal
        self._heartbeat = heartbeat
        self._queue: gevent.queue.Queue[list[Event] | _Last] = gevent.queue.Queue(maxsize=queue_depth)
        self._ended = False
        self._closed = False
        state.streams.add(self)
        self._pump: gevent.Greenlet = state.group.spawn(self._run, source)

    def __iter__(self) -> Iterator[bytes]:
        sequencer = FrameSequencer()
        try:
            while True:
                events = self.take(self._heartbeat)
                if events is None:
                    return
                if not events:
                    yield HEARTBEAT
                    continue
                yield b"".join([sequencer.frame(event) for event in events])
        finally:
            self.close()

    def batches(self, timeout: float | None = None) -> Iterator[list[Event]]:
        wait = self._heartbeat if timeout is None else timeout
        try:
            while True:
                events = self.take(wait)
                if events is None:
                    return
                yield events
        finally:
            self.close()

    def take(self, timeout: float | None) -> list[Event] | None:
        """The next events, ``[]`` after ``timeout`` idle seconds, ``None`` once over."""
        if self._closed or self._ended:
            self.close()
            return None
        try:
            item = self._queue.get(timeout=timeout)
        except gevent.queue.Empty:
            return []
        if isinstance(item, _Last):
            self._ended = True
            return item.events or self.take(timeout)
        return t.cast("list[Event]", item)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._state.streams.discard(self)
        if self._pump is not gevent.getcurrent():
            self._pump.kill(block=True)

    def end_for_shutdown(self) -> None:
        """End with a terminal error as the next event; what was queued is dropped."""
        if self._closed or self._ended:
            return
        self._pump.kill(block=True)
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(_Last([SHUTDOWN_ERROR] if not self.engine.closed else []))

    def _run(self, source: OpsSource) -> None:
        engine = self.engine
        ops: Iterable[SourceOp] = ()
        try:
            ops = source(engine.scope, engine.projection, self.principal)
            for op in ops:
                events = engine.feed(op)
                if engine.closed:
                    self._queue.put(_Last(events))
                    return
                if events:
                    self._queue.put(events)
            self._queue.put(_Last([]))
        except Exception:
            logger.exception("a plugged stream source failed; its stream ends")
            self._queue.put(_Last(engine.feed(SOURCE_FAILED)))
        finally:
            close = getattr(ops, "close", None)
            if callable(close):
                close()


class _Refused:
    """A subscription refused before it started: its only event is the terminal error.

    :meta private:
    """

    def __init__(self, error: StreamError) -> None:
        self.error = error

    def __iter__(self) -> Iterator[bytes]:
        yield FrameSequencer().frame(self.error)

    def batches(self, timeout: float | None = None) -> Iterator[list[Event]]:
        yield [self.error]

    def close(self) -> None:
        """Nothing to release."""


class _SignalObserver:
    """Sends the hub's lifecycle events as :mod:`flask_krm.signals`. :meta private:"""

    def __init__(self, app: Flask) -> None:
        self._app = weakref.ref(app)

    def _send(self, signal: t.Any, **kwargs: t.Any) -> None:
        app = self._app()
        if app is not None:
            signal.send(app, **kwargs)

    def watch_started(self, scope: Scope) -> None:
        self._send(signals.watch_started, target=scope.target, scope=scope)

    def watch_stopped(self, scope: Scope) -> None:
        self._send(signals.watch_stopped, target=scope.target, scope=scope)

    def watch_failed(self, scope: Scope, failure: Failure) -> None:
        self._send(signals.watch_failed, target=scope.target, scope=scope, failure=failure)

    def subscriber_overflowed(self, scope: Scope) -> None:
        self._send(signals.subscriber_overflowed, scope=scope)
