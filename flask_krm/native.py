"""The native proxy: API-server paths for a browser native client, as the signed-in person.

:class:`NativeProxy` mounts API-server paths under a base such as ``/k8s``: GET (object, list,
watch) and PATCH, within the host's scope policy. A PATCH must be ``application/merge-patch+json``
and carry both preconditions (``validate_native_merge_patch``); machinery and every other method,
content type, path or query parameter are refused. The ``watch`` flag is read as Go's
``strconv.ParseBool`` reads it (anything else is a 400) and authorized as ``watch`` when true;
flags are forwarded as ``true`` or not at all, so the API server does what was authorized. A body
is bounded by ``KRM_MAX_REQUEST_BYTES`` (413) and its JSON by :func:`~flask_krm.bodies.load_json`
(400). Credentials never leave the server; a write answers 204 with no object. The native source
a browser client's store is fed from is :mod:`flask_krm.upstream.native`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Final

import urllib3
from flask import Blueprint, Response, request, stream_with_context
from kubernetes.client.exceptions import ApiException

from . import guards
from .bodies import JsonRefused, load_json
from .hooks import Verb
from .principal import Principal
from .runtime import runtime
from .save.publish import publish_native_patch
from .save.writer import KubeWriter, MissingPrecondition
from .scope import Scope, ScopeError, ScopePolicy
from .store import PatchRejected, validate_native_merge_patch
from .upstream.native import NATIVE, NativePathError, parse_native_path
from .upstream.reflector import collection_path

MERGE_PATCH: Final = "application/merge-patch+json"


# ---- the native proxy ------------------------------------------------------------------------

READ_PARAMETERS: Final = frozenset(
    {"watch", "resourceVersion", "resourceVersionMatch", "allowWatchBookmarks", "timeoutSeconds", "labelSelector"}
)
"""Query parameters a proxied GET may carry; anything else is refused."""

FLAG_PARAMETERS: Final = frozenset({"watch", "allowWatchBookmarks"})
"""Boolean query parameters: read with :func:`parse_flag` and forwarded only as ``true``."""

TRUE_SPELLINGS: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
FALSE_SPELLINGS: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class FlagError(ValueError):
    """A boolean query parameter whose value is neither a true nor a false spelling."""


def parse_flag(name: str, value: str) -> bool:
    """A boolean query parameter as Go's ``strconv.ParseBool`` reads it (``1``, ``t``, ``T``,
    ``TRUE``, ``true``, ``True`` and their false counterparts). Raises :class:`FlagError` otherwise.

    Kubernetes itself reads any value but ``0`` and ``false`` (any case) as true, so the proxy never
    forwards what the person sent: it forwards ``true`` for a true flag and drops a false one, and
    what it authorized is what the API server does.
    """
    if value in TRUE_SPELLINGS:
        return True
    if value in FALSE_SPELLINGS:
        return False
    raise FlagError(f"query parameter {name!r} must be true or false")


_REASONS: Final = {400: "BadRequest", 413: "RequestEntityTooLarge"}


def _status(code: int, reason: str, message: str) -> Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    return Response(json.dumps(body), status=code, mimetype="application/json", headers={"Cache-Control": "no-store"})


class NativeProxy:
    """API-server paths under ``base`` for a browser native client, as the signed-in person.

    :param target: the one target this proxy forwards to.
    :param policy: the collections it serves (deny by default); names are not part of a policy.
    :param base: where the blueprint is mounted (``/k8s``).
    :param timeout: connect and read timeouts of forwarded non-watch requests.

    Authorization asks the host's authorizer with projection :data:`NATIVE` and verb ``get``,
    ``list``, ``watch`` or ``patch``. Opt in with ``KrmStream(app, ..., native=NativeProxy(...))``
    (or ``app.register_blueprint(proxy.blueprint())`` after ``init_app``).
    """

    def __init__(
        self,
        *,
        target: str,
        policy: ScopePolicy,
        base: str = "/k8s",
        timeout: tuple[float, float] = (5.0, 30.0),
    ) -> None:
        self.target = target
        self.policy = policy
        self.base = base.rstrip("/")
        self.timeout = timeout

    def blueprint(self, name: str = "krm_native") -> Blueprint:
        """The proxy's blueprint: ``GET`` and ``PATCH`` on ``<base>/<api path>``; other methods get 405."""
        bp = Blueprint(name, __name__, url_prefix=self.base)
        guards.install(bp, lambda status, message, kind: _status(status, _REASONS[status], message))
        bp.add_url_rule("/<path:api_path>", "read", self._read, methods=["GET"])
        bp.add_url_rule("/<path:api_path>", "patch", self._patch, methods=["PATCH"])
        return bp

    # -- views -----------------------------------------------------------------------------

    def _read(self, api_path: str) -> Response:
        krm = runtime()
        principal = krm.require_principal()
        unknown = sorted(set(request.args) - READ_PARAMETERS)
        if unknown:
            return _status(400, "BadRequest", f"query parameter {unknown[0]!r} is not served by this proxy")
        repeated = sorted(name for name in request.args if len(request.args.getlist(name)) > 1)
        if repeated:
            return _status(400, "BadRequest", f"query parameter {repeated[0]!r} is given more than once")
        try:
            flags = {name: parse_flag(name, request.args[name]) for name in FLAG_PARAMETERS & set(request.args)}
        except FlagError as exc:
            return _status(400, "BadRequest", str(exc))
        scope = self._scope(api_path, label_selector=request.args.get("labelSelector", ""))
        if isinstance(scope, Response):
            return scope
        watching = flags.get("watch", False)
        if watching and scope.name:
            return _status(400, "BadRequest", "watch a collection (with a name selector), not an object URL")
        verb: Verb = "watch" if watching else "get" if scope.name else "list"
        refused = self._authorize(principal, scope, verb)
        if refused is not None:
            return refused
        api = krm.client_for(self.target, principal)
        query = [(k, v) for k, v in request.args.items() if k not in FLAG_PARAMETERS]
        query += [(name, "true") for name in sorted(flags) if flags[name]]
        timeout = (self.timeout[0], None) if watching else self.timeout
        try:
            method, url, headers, _, _ = api.param_serialize(
                "GET",
                collection_path(replace(scope, name="", label_selector="")) + (f"/{scope.name}" if scope.name else ""),
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            upstream = api.call_api(method, url, header_params=headers, _request_timeout=timeout).response
        except (ApiException, urllib3.exceptions.HTTPError, OSError):
            return _status(502, "ServiceUnavailable", "the Kubernetes API server could not be reached")
        content_type = upstream.headers.get("Content-Type", "application/json")
        if not watching or not 200 <= upstream.status <= 299:
            try:
                data = upstream.data
            except (urllib3.exceptions.HTTPError, OSError):
                return _status(502, "ServiceUnavailable", "the Kubernetes API server answer was cut off")
            finally:
                upstream.release_conn()
            return Response(
                data, status=upstream.status, content_type=content_type, headers={"Cache-Control": "no-store"}
            )

        def relay() -> Iterator[bytes]:
            try:
                while True:
                    chunk = upstream.read1(65536)
                    if not chunk:
                        return
                    yield chunk
            except (urllib3.exceptions.HTTPError, OSError):
                return
            finally:
                upstream.close()
                upstream.release_conn()

        return Response(
            stream_with_context(relay()),
            status=upstream.status,
            content_type=content_type,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    def _patch(self, api_path: str) -> Response:
        krm = runtime()
        principal = krm.require_principal()
        if request.mimetype != MERGE_PATCH:
            return _status(415, "UnsupportedMediaType", f"only {MERGE_PATCH} is accepted")
        if request.args:
            return _status(400, "BadRequest", "a proxied PATCH takes no query parameters")
        scope = self._scope(api_path)
        if isinstance(scope, Response):
            return scope
        if not scope.name:
            return _status(405, "MethodNotAllowed", "PATCH an object URL, not a collection")
        try:
            patch = load_json(request.get_data(cache=False))
        except JsonRefused as not_accepted:
            return _status(400, "BadRequest", str(not_accepted))
        if not isinstance(patch, dict):
            return _status(400, "BadRequest", "a merge patch is a JSON object")
        try:
            validate_native_merge_patch(patch)
        except PatchRejected as rejected:
            return _status(422, "Invalid", str(rejected))
        refused = self._authorize(principal, scope, "patch")
        if refused is not None:
            return refused
        writer = KubeWriter(krm.client_for(self.target, principal), timeout=self.timeout)
        try:
            answer = writer.send_merge_patch(collection_path(replace(scope, name="")) + "/" + scope.name, patch)
        except MissingPrecondition as exc:  # validated above; kept as a second line of defence
            return _status(422, "Invalid", str(exc))
        publish_native_patch(principal=principal, scope=scope, patch=patch, answer=answer)
        if answer.ok:
            return Response(status=204, headers={"Cache-Control": "no-store"})
        if answer.code == 0:
            return _status(
                502, "Unknown", "the write was sent but its result is unknown; read the object before writing again"
            )
        status = answer.status
        if status is None:
            return _status(answer.code, "Failure", f"the Kubernetes API server answered HTTP {answer.code}")
        return Response(
            json.dumps(status), status=answer.code, mimetype="application/json", headers={"Cache-Control": "no-store"}
        )

    # -- checks ----------------------------------------------------------------------------

    def _scope(self, api_path: str, *, label_selector: str = "") -> Scope | Response:
        try:
            scope = parse_native_path(api_path, target=self.target)
            if label_selector:
                scope = replace(scope, label_selector=label_selector)
        except (NativePathError, ScopeError) as exc:
            return _status(404, "NotFound", f"not served by this proxy: {exc}")
        if not self.policy.permits(replace(scope, name="")):
            return _status(403, "Forbidden", "this collection is not served by this proxy")
        return scope

    def _authorize(self, principal: Principal, scope: Scope, verb: Verb) -> Response | None:
        if not runtime().decide(principal, scope, NATIVE, verb).allowed:
            return _status(403, "Forbidden", f"you may not {verb} this resource")
        return None
