"""``KRM_*`` configuration: defaults, validation and the typed accessor.

Structural keys (:data:`STRUCTURAL`) are read once by :meth:`flask_krm.KrmStream.init_app`;
changing them afterwards has no effect. Behavioural keys are read at use time through :func:`get`,
so tests and hosts may change them on a running application. Every key is validated, and an
unknown ``KRM_`` key is refused with a message naming it.
"""

from __future__ import annotations

import typing as t
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from flask import Flask

from .drafts import checked_url
from .projection import PROJECTIONS
from .save.outcomes import OutcomeKind, OutcomeTexts
from .scope import ScopeError, check_target_name

PREFIX: t.Final = "KRM_"

DEFAULTS: t.Final[Mapping[str, t.Any]] = {
    "URL_PREFIX": "/krm",
    "TARGETS": {},
    "SCOPE_POLICY": None,
    "HEARTBEAT_INTERVAL": 20.0,
    "QUEUE_DEPTH": 256,
    "WATCH_LINGER": 30.0,
    "PROJECTION": "krm-full/v1",
    "SHUTDOWN_TIMEOUT": 5.0,
    "DRAFT_EXPIRY": 1800.0,
    "MAX_STORES_PER_SESSION": 16,
    "SERVE_HTMX": True,
    "SAVE_CONFIRM_TIMEOUT": 5.0,
    "RECOVERY_LIFETIME": 3600.0,
    "MAX_REQUEST_BYTES": 3 * 1024 * 1024,
    "MAX_SESSIONS": 10_000,
    "OUTCOME_TEXTS": {},
    "DRAFTS_URL": None,
    "LIST_SCHEMAS": {},
    "METRICS_PATH": None,
    "LIVENESS_PATH": None,
    "READINESS_PATH": None,
    "LIVENESS_MAX_LAG": 10.0,
    "DRAIN_DELAY": 1.0,
    "AUDIT_LOG": None,
    "SERVER_DRIVER": True,
    "DRY_RUN": True,
    "DRY_RUN_DELAY": 0.4,
    "PERMISSION_CACHE": 30.0,
}
"""Every key without its ``KRM_`` prefix, with its default.

- ``URL_PREFIX`` (structural): where the blueprint is mounted.
- ``TARGETS`` (structural): target name -> connection spec, see :class:`TargetSpec`.
- ``SCOPE_POLICY`` (structural): a :class:`flask_krm.scope.ScopePolicy`; ``None`` is the zero
  policy, which refuses every scope.
- ``HEARTBEAT_INTERVAL``: seconds between ``: heartbeat`` comments on an idle stream.
- ``QUEUE_DEPTH``: live events buffered per subscriber before it is resnapshotted.
- ``WATCH_LINGER``: seconds an upstream watch stays open after its last subscriber left.

  The shared watch hub reads these three once, when it starts (the application's first
  Kubernetes stream); page channels and session feeds read them on each use.
- ``PROJECTION``: the projection a stream uses when the request names none.
- ``SHUTDOWN_TIMEOUT``: seconds :meth:`~flask_krm.KrmStream.shutdown` waits before killing greenlets.
- ``DRAFT_EXPIRY``: seconds a session's draft store without unsaved edits survives unused.
- ``MAX_STORES_PER_SESSION``: draft stores one session may hold at once.
- ``SERVE_HTMX``: whether the page script tags include the vendored htmx.
- ``SAVE_CONFIRM_TIMEOUT``: seconds an accepted Save waits for its echo on the live stream before
  a guarded read decides whether it stuck (more than 0, at most 300).
- ``RECOVERY_LIFETIME``: seconds a session keeps the copy of an unsaved draft after its object was
  deleted or replaced, for copy-out (read when a session's draft store is made; the copy never
  outlives its store).
- ``MAX_REQUEST_BYTES``: the largest body a state-changing request to flask-krm's routes (the
  ``krm`` blueprint, the review views, the native proxy) may carry; a larger one is refused with
  413 before it is read. The application's ``MAX_CONTENT_LENGTH`` applies instead when smaller.
- ``MAX_SESSIONS``: browser sessions whose drafts the server holds at once; beyond it, the least
  recently used session without unsaved edits is dropped (and when every one has unsaved edits, a
  new session's first draft is refused with 409).
- ``OUTCOME_TEXTS``: the wording of Save outcomes a host overrides: outcome kind (such as
  ``"busy"`` or ``OutcomeKind.BUSY``) -> sentence, or a :class:`flask_krm.save.OutcomeTexts`;
  unnamed outcomes keep their default wording.
- ``DRAFTS_URL`` (structural): where drafts are kept between requests. ``None`` (or ``memory://``):
  in the process, lost at a restart; a ``redis://``, ``rediss://`` or ``unix://`` URL: in Redis,
  shared by every worker and kept across restarts for the session lifetime (needs the ``redis``
  package: ``pip install flask-krm[redis]``).
- ``LIST_SCHEMAS``: structural OpenAPI schemas by ``(apiVersion, kind)``, each replacing for its
  kind the schema the target publishes (``/openapi/v3``) and the built-in
  :data:`~flask_krm.store.BUILTIN_LIST_SCHEMAS` entry: lists marked ``x-kubernetes-list-type: map``
  merge and are edited item by item, by their ``x-kubernetes-list-map-keys``, and editors' widgets
  follow it; read when a session's draft store is made.
- ``METRICS_PATH`` (structural): where the Prometheus metrics are served (``"/metrics"``, say);
  ``None``: no metrics are kept at all (needs ``pip install flask-krm[metrics]``). Under gunicorn
  with ``PROMETHEUS_MULTIPROC_DIR`` set, every worker's metrics are served together
  (:mod:`flask_krm.serving`).
- ``LIVENESS_PATH`` (structural): the liveness probe's path (``"/livez"``, say), or ``None``. It
  fails only when the process's event loop is stuck (see ``LIVENESS_MAX_LAG``).
- ``READINESS_PATH`` (structural): the readiness probe's path (``"/readyz"``, say), or ``None``.
  503 until the extension serves and from the first moment of a drain; ``?verbose`` lists every
  check.
- ``LIVENESS_MAX_LAG``: seconds the event loop may fall behind its ticker before liveness fails.
- ``DRAIN_DELAY``: seconds a gunicorn worker keeps accepting requests after SIGTERM (readiness
  503, every stream already ended) before it stops listening (:mod:`flask_krm.serving`).
- ``AUDIT_LOG`` (structural): a file that receives one JSON line per write attempt, shaped like a
  Kubernetes audit event (``None``: no such file; the log line and the signals stay).
- ``SERVER_DRIVER``: whether the gevent ``pywsgi`` server driver may write streams' chunks to the
  socket itself and set the process's garbage collector policy where it applies (pywsgi's own
  handler, no middleware, plain TCP; :mod:`flask_krm.pywsgi_driver`). ``False``: the server
  writes every chunk and the collector is left alone. Read when each stream's response is made.
- ``DRY_RUN``: whether an editor's draft is checked by the API server while it is edited and
  before each Save (its merge patch sent with ``dryRun=All``; :mod:`flask_krm.save.checks`).
  ``False``: no check is sent; Kubernetes' refusals show after Save only.
- ``DRY_RUN_DELAY``: seconds a draft must be still before it is checked (more than 0).
- ``PERMISSION_CACHE``: seconds an answer to "may this person patch this object" is kept
  per session for offering Save (0: ask on every render). Writes are always authorized when
  they happen.
"""

STRUCTURAL: t.Final = frozenset(
    {
        "URL_PREFIX",
        "TARGETS",
        "SCOPE_POLICY",
        "DRAFTS_URL",
        "METRICS_PATH",
        "LIVENESS_PATH",
        "READINESS_PATH",
        "AUDIT_LOG",
    }
)


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """How to reach one target's API server.

    Written in configuration as ``{"kubeconfig": path, "context": name}`` (``context`` optional:
    the kubeconfig's current context) or ``{"in_cluster": True}``: the pod's service account, its
    token and CA read from ``/var/run/secrets/kubernetes.io/serviceaccount`` (another folder with
    ``"service_account_dir": path``) and the API server from ``KUBERNETES_SERVICE_HOST`` and
    ``KUBERNETES_SERVICE_PORT``.
    """

    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False
    service_account_dir: str | None = None

    @classmethod
    def parse(cls, name: str, spec: t.Any) -> TargetSpec:
        """Validate one ``KRM_TARGETS`` entry. Raises ``ValueError`` naming the target."""
        where = f"KRM_TARGETS[{name!r}]"
        if isinstance(spec, TargetSpec):
            return spec
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where} must be a mapping, got {type(spec).__name__}")
        allowed = ("kubeconfig", "context", "in_cluster", "service_account_dir")
        unknown = sorted(set(spec) - set(allowed))
        if unknown:
            raise ValueError(f"{where} has unknown keys {', '.join(unknown)}; allowed: {', '.join(allowed)}")
        in_cluster = spec.get("in_cluster", False)
        kubeconfig = spec.get("kubeconfig")
        context = spec.get("context")
        account_dir = spec.get("service_account_dir")
        if not isinstance(in_cluster, bool):
            raise ValueError(f"{where}['in_cluster'] must be a bool")
        if kubeconfig is not None and (not isinstance(kubeconfig, str) or not kubeconfig):
            raise ValueError(f"{where}['kubeconfig'] must be a non-empty path string")
        if context is not None and (not isinstance(context, str) or not context):
            raise ValueError(f"{where}['context'] must be a non-empty string")
        if in_cluster == (kubeconfig is not None):
            raise ValueError(f"{where} needs exactly one of 'kubeconfig' or 'in_cluster': True")
        if in_cluster and context is not None:
            raise ValueError(f"{where}: 'context' applies only with 'kubeconfig'")
        if account_dir is not None:
            if not in_cluster:
                raise ValueError(f"{where}: 'service_account_dir' applies only with 'in_cluster': True")
            if not isinstance(account_dir, str) or not account_dir:
                raise ValueError(f"{where}['service_account_dir'] must be a non-empty path string")
        return cls(kubeconfig=kubeconfig, context=context, in_cluster=in_cluster, service_account_dir=account_dir)


def _positive_number(key: str, value: t.Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"KRM_{key} must be a positive number of seconds, got {value!r}")
    return float(value)


def _non_negative_number(key: str, value: t.Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"KRM_{key} must be zero or a positive number of seconds, got {value!r}")
    return float(value)


def _confirm_timeout(key: str, value: t.Any) -> float:
    seconds = _positive_number(key, value)
    if seconds > 300:
        raise ValueError(f"KRM_{key} must be at most 300 seconds, got {value!r}")
    return seconds


def _positive_int(key: str, value: t.Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"KRM_{key} must be a positive integer, got {value!r}")
    return value


def _url_prefix(key: str, value: t.Any) -> str:
    if not isinstance(value, str) or not value.startswith("/") or value.endswith("/"):
        raise ValueError(f"KRM_{key} must be a path starting with '/' and not ending with '/', got {value!r}")
    return value


def _optional_path(key: str, value: t.Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith("/") or value == "/" or "?" in value:
        raise ValueError(f"KRM_{key} must be None or a path starting with '/' (such as '/metrics'), got {value!r}")
    return value


def _optional_file(key: str, value: t.Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"KRM_{key} must be None or a file path, got {value!r}")
    return value


def _drafts_url(key: str, value: t.Any) -> str | None:
    return checked_url(value)  # the drafts package alone knows its backends


def _targets(key: str, value: t.Any) -> dict[str, TargetSpec]:
    if not isinstance(value, Mapping):
        raise ValueError(f"KRM_{key} must be a mapping of target name to connection spec")
    parsed: dict[str, TargetSpec] = {}
    for name, spec in value.items():
        if not isinstance(name, str):
            raise ValueError(f"KRM_{key} keys must be target name strings, got {name!r}")
        try:
            check_target_name(name)
        except ScopeError as error:
            raise ValueError(f"KRM_{key}[{name!r}]: {error}; a scope could never name it") from None
        parsed[name] = TargetSpec.parse(name, spec)
    return parsed


def _scope_policy(key: str, value: t.Any) -> t.Any:
    from .scope import ScopePolicy

    if value is None:
        return ScopePolicy()
    if not isinstance(value, ScopePolicy):
        raise ValueError(
            f"KRM_{key} must be a flask_krm.scope.ScopePolicy or None (refuse every scope), got {type(value).__name__}"
        )
    return value


def _projection(key: str, value: t.Any) -> str:
    if value not in PROJECTIONS:
        raise ValueError(f"KRM_{key} must be one of {', '.join(PROJECTIONS)}, got {value!r}")
    return t.cast(str, value)


def _outcome_texts(key: str, value: t.Any) -> OutcomeTexts:
    if isinstance(value, OutcomeTexts):
        return value
    if not isinstance(value, Mapping) or not all(isinstance(text, str) for text in value.values()):
        raise ValueError(f"KRM_{key} must map outcome kinds to sentences, got {value!r}")
    try:
        return OutcomeTexts(dict(value))
    except ValueError:
        unknown = [k for k in value if k not in {kind.value for kind in OutcomeKind} and not isinstance(k, OutcomeKind)]
        raise ValueError(f"KRM_{key} names unknown outcome kinds: {', '.join(map(repr, unknown))}") from None


def _list_schemas(key: str, value: t.Any) -> dict[tuple[str, str], Mapping[str, t.Any]]:
    if not isinstance(value, Mapping) or not all(
        isinstance(kind, tuple) and len(kind) == 2 and all(isinstance(part, str) and part for part in kind)
        for kind in value
    ):
        raise ValueError(f"KRM_{key} must map (apiVersion, kind) tuples to schemas, got {value!r}")
    for kind, schema in value.items():
        if not isinstance(schema, Mapping):
            raise ValueError(f"KRM_{key}[{kind!r}] must be a structural schema (a mapping)")
    return dict(value)


def _flag(key: str, value: t.Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"KRM_{key} must be True or False, got {value!r}")
    return value


_VALIDATORS: t.Final[Mapping[str, Callable[[str, t.Any], t.Any]]] = {
    "URL_PREFIX": _url_prefix,
    "TARGETS": _targets,
    "SCOPE_POLICY": _scope_policy,
    "HEARTBEAT_INTERVAL": _positive_number,
    "QUEUE_DEPTH": _positive_int,
    "WATCH_LINGER": _non_negative_number,
    "PROJECTION": _projection,
    "SHUTDOWN_TIMEOUT": _positive_number,
    "DRAFT_EXPIRY": _positive_number,
    "MAX_STORES_PER_SESSION": _positive_int,
    "SERVE_HTMX": _flag,
    "SAVE_CONFIRM_TIMEOUT": _confirm_timeout,
    "RECOVERY_LIFETIME": _positive_number,
    "MAX_REQUEST_BYTES": _positive_int,
    "MAX_SESSIONS": _positive_int,
    "OUTCOME_TEXTS": _outcome_texts,
    "DRAFTS_URL": _drafts_url,
    "LIST_SCHEMAS": _list_schemas,
    "METRICS_PATH": _optional_path,
    "LIVENESS_PATH": _optional_path,
    "READINESS_PATH": _optional_path,
    "LIVENESS_MAX_LAG": _positive_number,
    "DRAIN_DELAY": _non_negative_number,
    "AUDIT_LOG": _optional_file,
    "SERVER_DRIVER": _flag,
    "DRY_RUN": _flag,
    "DRY_RUN_DELAY": _positive_number,
    "PERMISSION_CACHE": _non_negative_number,
}


def apply_defaults(app: Flask) -> None:
    """Set every missing ``KRM_*`` key to its default, then validate all of them.

    Raises ``ValueError`` naming unknown ``KRM_`` keys or the first invalid value.
    """
    unknown = sorted(k for k in app.config if k.startswith(PREFIX) and k[len(PREFIX) :] not in DEFAULTS)
    if unknown:
        known = ", ".join(PREFIX + k for k in DEFAULTS)
        raise ValueError(f"unknown flask-krm configuration keys: {', '.join(unknown)} (known keys: {known})")
    for key, default in DEFAULTS.items():
        app.config.setdefault(PREFIX + key, default)
    for key in DEFAULTS:
        get(app, key)


def get(app: Flask, key: str) -> t.Any:
    """The validated value of ``KRM_<key>`` (``key`` without the prefix) as a typed value.

    ``TARGETS`` is returned as ``dict[str, TargetSpec]`` and ``SCOPE_POLICY`` as a ``ScopePolicy``.
    Raises ``KeyError`` for a key flask-krm does not define and ``ValueError`` for a bad value.
    """
    try:
        validate = _VALIDATORS[key]
    except KeyError:
        raise KeyError(f"flask-krm defines no configuration key KRM_{key}") from None
    return validate(key, app.config.get(PREFIX + key, DEFAULTS[key]))
