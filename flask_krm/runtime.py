"""The per-application runtime: everything flask-krm keeps for one Flask application.

:meth:`KrmStream.init_app <flask_krm.KrmStream.init_app>` makes one :class:`KrmRuntime` and keeps it
in ``app.extensions["krm"]``; :func:`runtime` is the one place that reads it. The runtime holds the
hooks (shared with the extension object), the settings, the greenlet group, the shutdown registry,
the hub and the API clients, the plugged sources, the draft registry, the fragment cache and the
feeds, and performs the request-time operations every view needs: who is signed
in, their drafts, access decisions, subscriptions.
"""

from __future__ import annotations

import logging
import time
import typing as t
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from flask import Flask, request

from . import config, csrf, sessions, signals
from .access import Decision, decide
from .concurrency import Group, sleep
from .errors import ScopeInvalid, Unauthenticated
from .event_loop import LoopTicker
from .hooks import Hooks, HooksOwner, OpsSource, Verb
from .kube_schema import KindKey, SchemaView
from .ops import Failure
from .principal import Principal
from .proxies import current_app_object
from .save.outcomes import OutcomeTexts
from .scope import Scope, ScopeError, ScopePolicy, parse_scope
from .sse import heartbeat_interval
from .store import DEFAULT_POLICY, LiveResourceStore
from .store.truth import ServerTruth
from .stream import StreamEngine
from .subscriptions import CLIENT_FAILED, PluggedSubscription, Refused, ShutdownAware, Subscription
from .ui.feeds import Feed
from .ui.page import Component
from .ui.render import FragmentCache
from .ui.state import new_store, store_policy
from .upstream.clients import ActingApiClient, ApiClients
from .upstream.hub import Hub, HubObserver
from .upstream.openapi import OpenApiSchemas

if t.TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from .metrics import Metrics

logger = logging.getLogger("flask_krm")

EXTENSION_KEY: t.Final = "krm"
"""Where the application's :class:`KrmRuntime` lives in ``app.extensions``."""

SESSION_COUNT_EVERY: t.Final = 5.0
"""Seconds between two counts of the sessions and their unsaved edits, for the metrics."""

PRINCIPAL_KEY: t.Final = "flask_krm.principal"
"""Where the current request's principal is kept, once loaded (``request.environ``)."""

NOT_REGISTERED: t.Final = (
    "The current Flask app is not registered with this 'KrmStream' instance. Did you"
    " forget to call 'init_app', or did you create multiple 'KrmStream' instances?"
)


@dataclass(eq=False)
class KrmRuntime:
    """flask-krm's state and request-time operations for one application."""

    app_ref: weakref.ref[Flask]
    extension: HooksOwner
    """The :class:`~flask_krm.KrmStream` that registered the application (for hosts that reach it
    through ``app.extensions["krm"].extension``)."""
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
    cache: FragmentCache = field(default_factory=FragmentCache)
    openapi: OpenApiSchemas = field(default_factory=OpenApiSchemas)
    """The kinds' schemas each target publishes (editors' widgets, keyed lists)."""
    """Rendered fragments shared across sessions."""
    feeds: weakref.WeakKeyDictionary[LiveResourceStore, Feed] = field(default_factory=weakref.WeakKeyDictionary)
    """The feed keeping each session store current."""
    session_feeds: weakref.WeakSet[Feed] = field(default_factory=weakref.WeakSet)
    """Every session feed that may still run: one whose store went (its session ended, or the store
    was evicted) is no longer in :attr:`feeds` but runs until its holds expire; shutdown closes it."""
    truths: weakref.WeakValueDictionary[tuple[t.Any, ...], ServerTruth] = field(
        default_factory=weakref.WeakValueDictionary
    )
    """The server truth of each hub watch and projection, while a session store reads it."""
    truth_feeds: weakref.WeakKeyDictionary[ServerTruth, Feed] = field(default_factory=weakref.WeakKeyDictionary)
    """The one feed of each shared truth."""
    listener: t.Any = None
    """The greenlet receiving the other workers' draft changes (a shared draft backend only)."""
    metrics: Metrics | None = None
    """The application's Prometheus metrics (``KRM_METRICS_PATH``), or ``None``: nothing is counted."""
    ticker: LoopTicker = field(default_factory=LoopTicker)
    """The event loop's ticker, which the liveness probe reads."""
    draining: bool = False
    """The server is stopping (:meth:`begin_drain`): readiness fails, streams are ending."""

    @property
    def hooks(self) -> Hooks:
        """The host's hooks (shared with the extension: a hook registered later is seen here)."""
        return self.extension.hooks

    @property
    def app(self) -> Flask:
        app = self.app_ref()
        if app is None:
            raise RuntimeError("the application of this flask-krm runtime no longer exists")
        return app

    def setting(self, key: str) -> t.Any:
        """The validated value of ``KRM_<key>``."""
        return config.get(self.app, key)

    def outcome_texts(self) -> OutcomeTexts:
        """The Save outcome wording now in force (``KRM_OUTCOME_TEXTS``)."""
        return t.cast(OutcomeTexts, self.setting("OUTCOME_TEXTS"))

    # -- who is asking -----------------------------------------------------------------------

    def current_principal(self) -> Principal | None:
        """The principal of the current request (``None``: nobody signed in), loaded once per request.

        Raises ``TypeError`` if the principal loader returns something other than a
        :class:`~flask_krm.principal.Principal` or ``None``; exceptions of the loader propagate.
        """
        # Kept in the request's environ: an outer app context (a test's) shares ``g`` between requests.
        environ = request.environ
        if PRINCIPAL_KEY in environ:
            return t.cast("Principal | None", environ[PRINCIPAL_KEY])
        principal = self.hooks.principal_loader()
        if principal is not None and not isinstance(principal, Principal):
            raise TypeError(
                "the @krm.principal_loader function must return a flask_krm.Principal or None,"
                f" got {type(principal).__name__}"
            )
        environ[PRINCIPAL_KEY] = principal
        return principal

    def require_principal(self) -> Principal:
        """The current principal. Raises :class:`~flask_krm.errors.Unauthenticated` (401) if none."""
        principal = self.current_principal()
        if principal is None:
            raise Unauthenticated("Sign in to use this view.")
        return principal

    def follow_principal(self) -> bool:
        """Bind the browser session to the current principal; whether it changed
        (:func:`flask_krm.sessions.follow_principal`)."""
        principal = self.current_principal()
        return sessions.follow_principal(self.drafts, principal.name if principal is not None else None)

    def session_drafts(self) -> sessions.SessionDrafts:
        """The current browser session's drafts for the signed-in principal.

        Raises :class:`~flask_krm.errors.Unauthenticated` when nobody is signed in.
        """
        principal = self.require_principal()
        self.listen_for_drafts()
        session_id = sessions.session_key(self.drafts, principal.name)
        limits = sessions.Limits(
            store_expiry=self.setting("DRAFT_EXPIRY"),
            session_lifetime=self.app.permanent_session_lifetime.total_seconds(),
            max_stores=self.setting("MAX_STORES_PER_SESSION"),
            max_sessions=self.setting("MAX_SESSIONS"),
        )
        return self.drafts.namespace(session_id, principal.name, limits)

    def listen_for_drafts(self) -> None:
        """Start this worker's one subscription to the draft backend's change messages (once per
        process: after a fork, in the worker that serves requests)."""
        sync = self.drafts.sync
        if self.shut_down or (self.listener is not None and not self.listener.dead):
            return
        self.listener = self.group.spawn(sync.run, sleep)

    def csrf_token(self) -> str:
        """The current session's CSRF token, for the signed-in principal (also the
        ``krm_csrf_token()`` template global). The session first follows the principal, so a token
        made right after a sign-in belongs to it. Requires a request context."""
        self.follow_principal()
        return csrf.csrf_token()

    def end_session(self) -> None:
        """End the browser session's drafts (sign-out; see :func:`flask_krm.sessions.end_session`)."""
        sessions.end_session(self.drafts)

    # -- what may be asked for -----------------------------------------------------------------

    def plug_source(self, target: str, source: OpsSource) -> None:
        """Serve ``target`` from ``source`` (see :meth:`KrmStream.plug_source <flask_krm.KrmStream.plug_source>`)."""
        self.sources[target] = source

    def serves_target(self, target: str) -> bool:
        """Whether ``target`` is configured in ``KRM_TARGETS`` or plugged."""
        return target in self.sources or target in self.targets

    def scope_from(self, query: Scope | Mapping[str, t.Any] | str) -> Scope:
        """Parse and check a scope this application serves. Raises :class:`ScopeInvalid` (400)."""
        try:
            scope = query if isinstance(query, Scope) else parse_scope(query)
            self.policy.check(scope)
        except ScopeError as exc:
            raise ScopeInvalid(exc.message) from None
        if not self.serves_target(scope.target):
            raise ScopeInvalid(f"target {scope.target!r} is not served here")
        return scope

    def decide(
        self, principal: Principal, scope: Scope, projection: str, verb: Verb, *, check_policy: bool = False
    ) -> Decision:
        """The access decision for ``principal`` (see :func:`flask_krm.access.decide`); with
        ``check_policy`` the scope policy is asked first."""
        return decide(
            self.hooks.require_authorizer(),
            principal,
            scope,
            projection,
            verb,
            policy=self.policy if check_policy else None,
        )

    # -- upstream ----------------------------------------------------------------------------

    def api_clients(self) -> ApiClients:
        """The per-target API clients built from ``KRM_TARGETS``."""
        if self.clients is None:
            self.clients = ApiClients(self.targets)
        return self.clients

    def client_for(self, target: str, principal: Principal) -> ApiClient:
        """The client loader's client for ``principal``, or the target's service client."""
        client = self.hooks.require_client_loader()(target, principal)
        return self.api_clients().service(target) if client is None else client

    def subscribe(
        self,
        principal: Principal,
        scope: Scope,
        projection: str,
        decision: Decision | None = None,
        *,
        guard: bool = False,
    ) -> Subscription:
        """A new subscription to ``scope`` under ``projection``, acting for ``principal``.

        ``decision`` is the caller's access decision for exactly this stream, when it has one; the
        authorizer is asked otherwise (a refusal gives a subscription that yields only its
        terminal error). ``guard``: a hub target's stream yields only that terminal error
        (:meth:`~flask_krm.upstream.hub.Hub.guard`). Raises ``RuntimeError`` after :meth:`shutdown`.
        """
        if self.shut_down:
            raise RuntimeError("flask-krm was shut down for this application; it opens no new streams")
        authorized = decision is not None and decision.covers(principal, scope, projection)
        source = self.sources.get(scope.target)
        if source is not None:
            if not authorized:
                asked = self.decide(principal, scope, projection, "watch")
                if not asked.allowed:
                    return Refused(asked.stream_error())
            return PluggedSubscription(
                StreamEngine(scope, projection),
                principal,
                source,
                group=self.group,
                track=self.track_stream,
                heartbeat=heartbeat_interval(self.setting("HEARTBEAT_INTERVAL")),
                queue_depth=self.setting("QUEUE_DEPTH"),
            )
        hub = self.shared_hub()
        loader = self.hooks.require_client_loader()
        try:
            client = loader(scope.target, principal)
        except Exception:
            logger.exception("the client loader failed; the stream ends")
            return Refused(CLIENT_FAILED)
        if guard:
            return hub.guard(scope, projection, principal, client=client, authorized=authorized)
        return hub.subscribe(scope, projection, principal, client=client, authorized=authorized)

    def shared_hub(self) -> Hub:
        """The application's shared hub, made on first use (counting deliveries with the metrics)."""
        if self.hub is None:
            authorizer = self.hooks.require_authorizer()

            def ask(principal: Principal, scope: Scope, projection: str) -> bool:
                return authorizer(principal, scope, projection, "watch")

            self.hub = Hub(
                self.api_clients(),
                ask,
                queue_depth=self.setting("QUEUE_DEPTH"),
                linger=self.setting("WATCH_LINGER"),
                heartbeat=self.setting("HEARTBEAT_INTERVAL"),
                observer=t.cast(HubObserver, SignalObserver(self.app, self.metrics)),
                meter=self.metrics,
            )
        return self.hub

    # -- the live UI's stores and feeds -------------------------------------------------------

    def store_for(
        self, drafts: sessions.SessionDrafts, component: Component, principal: Principal | None = None
    ) -> LiveResourceStore:
        """The session's store for ``component``'s scope, projection and edit policy (made on first use).

        An editor with a narrowed policy gets a store of its own that enforces that policy
        (:func:`~flask_krm.ui.state.store_policy`). A new store keeps recovery copies for
        ``KRM_RECOVERY_LIFETIME`` seconds. Given the ``principal`` it is made for, a new store of a
        hub target reads the server truth shared by every store of the same watch
        (:meth:`shared_truth`). Raises :class:`~flask_krm.errors.DraftLimitReached` when the
        session holds too many stores with unsaved edits.
        """
        lifetime = float(self.setting("RECOVERY_LIFETIME"))
        schemas = self.setting("LIST_SCHEMAS")
        policy = store_policy(component)

        def create() -> LiveResourceStore:
            truth = self.shared_truth(principal, component) if principal is not None else None
            published = self.published_schemas(principal, component) if principal is not None else {}
            return new_store(lifetime, policy or DEFAULT_POLICY, schemas, truth=truth, published=published)

        return drafts.store(component.scope, component.projection, create, policy=policy)

    def published_schemas(self, principal: Principal, component: Component) -> Mapping[KindKey, SchemaView]:
        """The schemas of the kinds of ``component``'s group version as its target publishes them
        (read through the client ``principal`` reads it with); none for a plugged source, or when
        they cannot be read (the reason is logged)."""
        scope = component.scope
        if scope.target in self.sources or self.shut_down:
            return {}
        try:
            client = self.hooks.require_client_loader()(scope.target, principal)
            api = client if client is not None else self.shared_hub().clients.service(scope.target)
        except Exception:  # the session's own subscription reports it
            return {}
        return self.openapi.kinds(scope.target, api, scope.group, scope.version)

    def shared_truth(self, principal: Principal, component: Component) -> ServerTruth | None:
        """The server truth of the hub watch ``principal``'s stream of ``component`` joins, shared
        by every session of that watch and projection in this process (made on first use, fed by
        one hub subscriber of its own, :meth:`~flask_krm.upstream.hub.Hub.follow`).

        Watches are keyed as the hub keys them, by scope and identity: the target's service identity
        (whose every subscriber the authorizer decides) or one impersonated identity, so principals
        share only what each of their own watches would deliver. ``None`` (the store keeps its own
        objects, fed by the session's subscription) for plugged sources, clients the hub keys by
        object, a failing client loader and an unpatched process.
        """
        scope, projection = component.scope, component.projection
        if scope.target in self.sources or self.shut_down:
            return None
        try:
            client = self.hooks.require_client_loader()(scope.target, principal)
            hub = self.shared_hub()
            service = hub.clients.service(scope.target)
        except Exception:  # the session's own subscription reports it (CLIENT_FAILED, unpatched...)
            return None
        if client is not None and client is not service and not isinstance(client, ActingApiClient):
            return None
        key = (hub.watch_key(scope, client), projection)
        truth = self.truths.get(key)
        if truth is None:
            truth = self.truths[key] = ServerTruth()
            self.truth_feeds[truth] = Feed(
                truth,
                lambda: hub.follow(scope, projection, client=client),
                self.group,
                linger=float(self.setting("WATCH_LINGER")),
            )
        return truth

    def feed_for(self, store: LiveResourceStore, principal: Principal, component: Component) -> Feed:
        """The feed that keeps ``store`` current (made on first use): it authorizes the session, and
        when ``store`` reads a shared truth, that truth's feed applies the events (the session's own
        subscription is then only a guard of its access, :meth:`~flask_krm.upstream.hub.Hub.guard`)."""
        feed = self.feeds.get(store)
        if feed is None:
            scope, projection, app = component.scope, component.projection, self.app
            source = self.truth_feeds.get(store.truth)

            def opener() -> Subscription:
                with app.app_context():
                    return self.subscribe(principal, scope, projection, guard=source is not None)

            feed = Feed(store, opener, self.group, linger=float(self.setting("WATCH_LINGER")), source=source)
            self.feeds[store] = feed
            self.session_feeds.add(feed)
        return feed

    # -- shutdown ----------------------------------------------------------------------------

    def track_stream(self, stream: ShutdownAware) -> Callable[[], None]:
        """Have :meth:`shutdown` call ``stream.end_for_shutdown()``; returns the undo function."""
        self.streams.add(stream)
        return lambda: self.streams.discard(stream)

    # -- health --------------------------------------------------------------------------------

    def start_ticker(self) -> None:
        """Start the event loop's ticker in this process (once; not after :meth:`shutdown`). With
        metrics, each tick also sets the loop lag, and the session counts every few seconds."""
        if self.shut_down or self.ticker.started:
            return
        metrics = self.metrics
        if metrics is not None and not self.ticker.on_tick:
            counted = [0.0]

            def measure(lag: float) -> None:
                metrics.loop_lag.set(lag)
                metrics.flush()
                now = time.monotonic()
                if now - counted[0] >= SESSION_COUNT_EVERY:
                    counted[0] = now
                    metrics.session_counts(*self.drafts.counts())

            self.ticker.on_tick.append(measure)
        self.ticker.start(self.group)

    def ping_drafts(self) -> str:
        """Whether the draft backend answers now: a short description, or raises
        :class:`~flask_krm.drafts.backend.BackendUnavailable`."""
        return self.drafts.backend.ping()

    def begin_drain(self) -> None:
        """The server is stopping: readiness fails from now on (streams end with :meth:`shutdown`)."""
        if not self.draining:
            self.draining = True
            logger.info("draining: readiness fails from now on", extra={"krm_event": "drain"})

    # -- shutdown ----------------------------------------------------------------------------

    def shutdown(self, timeout: float | None = None) -> None:
        """End every stream with a terminal event and stop every watch and feed. Idempotent."""
        if self.shut_down:
            return
        self.begin_drain()
        self.shut_down = True
        self.ticker.stop()
        if timeout is None:
            timeout = self.setting("SHUTDOWN_TIMEOUT")
        for stream in list(self.streams):
            stream.end_for_shutdown()
        for feed in [*self.session_feeds, *self.truth_feeds.values()]:
            feed.close()
        if self.listener is not None:
            self.listener.kill(block=False)  # waits for messages until killed: nothing to finish
        if self.hub is not None:
            self.hub.shutdown(timeout)
        self.group.join(timeout=timeout)
        self.group.kill(block=True, timeout=1)
        if self.clients is not None:
            self.clients.close()
        self.drafts.backend.close()
        if self.metrics is not None:
            self.metrics.close()


class SignalObserver:
    """Sends the hub's lifecycle events as :mod:`flask_krm.signals`, and counts them in the metrics."""

    def __init__(self, app: Flask, metrics: Metrics | None = None) -> None:
        self._app = weakref.ref(app)
        self._metrics = metrics

    def _send(self, signal: t.Any, **kwargs: t.Any) -> None:
        app = self._app()
        if app is not None:
            signal.send(app, **kwargs)

    def watch_started(self, scope: Scope) -> None:
        if self._metrics is not None:
            self._metrics.watch_started(scope)
        self._send(signals.watch_started, target=scope.target, scope=scope)

    def watch_stopped(self, scope: Scope) -> None:
        if self._metrics is not None:
            self._metrics.watch_stopped(scope)
        self._send(signals.watch_stopped, target=scope.target, scope=scope)

    def watch_restarted(self, scope: Scope, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.watch_restarted(scope, reason)
        log_fields = {"krm_event": "watch-restart", "target": scope.target, "resource": scope.resource}
        logger.info("upstream watch restarts: %s", reason, extra={**log_fields, "reason": reason})

    def watch_failed(self, scope: Scope, failure: Failure) -> None:
        self._send(signals.watch_failed, target=scope.target, scope=scope, failure=failure)

    def subscriber_overflowed(self, scope: Scope) -> None:
        if self._metrics is not None:
            self._metrics.resnapshot(scope)
        self._send(signals.subscriber_overflowed, scope=scope)


def find_runtime(app: Flask) -> KrmRuntime | None:
    """``app``'s runtime, or ``None`` when flask-krm is not registered on it."""
    found = app.extensions.get(EXTENSION_KEY)
    return found if isinstance(found, KrmRuntime) else None


def install(app: Flask, runtime: KrmRuntime) -> None:
    """Keep ``runtime`` as ``app``'s. Raises ``RuntimeError`` if ``app`` already has one."""
    if EXTENSION_KEY in app.extensions:
        raise RuntimeError(
            "A 'KrmStream' instance has already been registered on this Flask app. Import and"
            " use that instance instead."
        )
    app.extensions[EXTENSION_KEY] = runtime


def runtime(app: Flask | None = None) -> KrmRuntime:
    """The runtime of ``app`` (default: the current application).

    Raises ``RuntimeError`` when there is no application context or flask-krm is not registered.
    """
    found = find_runtime(app if app is not None else current_app_object())
    if found is None:
        raise RuntimeError(NOT_REGISTERED)
    return found


def krm_csrf_token() -> str:
    """The current session's CSRF token, for the signed-in principal (the ``krm_csrf_token()``
    template global). The session first follows the principal, so a token rendered right after a
    sign-in belongs to it. Requires a request context."""
    found = find_runtime(current_app_object())
    return found.csrf_token() if found is not None else csrf.csrf_token()
