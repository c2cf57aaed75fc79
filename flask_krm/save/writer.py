"""Kubernetes writes and guarded reads for saving, through the official client's raw layer.

Every request goes through ``ApiClient.call_api`` of the client the host's client loader returns,
so it acts as the signed-in principal (impersonation or the person's own token) and the browser
never supplies an address or a credential. What can be sent is deliberately narrow:

* :meth:`KubeWriter.patch` sends a JSON merge patch and always carries both preconditions,
  ``metadata.uid`` and ``metadata.resourceVersion``, from the captured intent; there is no PUT;
  with ``dry_run`` it is sent with ``dryRun=All``: checked by the API server, never stored;
* :meth:`KubeWriter.delete` always carries a uid precondition;
* :meth:`KubeWriter.create` POSTs an already sanitized body.

Answers are :class:`Answer` values: the status code and the parsed body. A raw written object stays
here: :func:`written_version` takes its resourceVersion and nothing else ever leaves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from ..principal import Principal
from ..projection import project
from ..scope import Scope
from ..store import PatchRejected, SaveIntent, validate_merge_patch, validate_native_merge_patch
from ..upstream.reflector import collection_path
from .flow import ReadResult
from .outcomes import FieldCause, Outcome, OutcomeKind, field_path

MERGE_PATCH: Final = "application/merge-patch+json"
DEFAULT_TIMEOUT: Final = (5.0, 30.0)
"""Connect and read timeouts of a write or read, in seconds. A timeout is an unknown outcome."""
FIELD_MANAGER: Final = "flask-krm"
DRY_RUN: Final = "dryRun"
DRY_RUN_ALL: Final = "All"


class MissingPrecondition(ValueError):
    """A conditional write was asked for without a uid or resourceVersion precondition."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What the API server answered.

    :param code: the HTTP status, or 0 when no complete answer arrived (timeout, connection lost).
    :param body: the parsed JSON body (a ``Status`` on failure, the raw object on success), or None.
        Never send it to a browser.
    :param error: the transport failure's class name when ``code`` is 0.
    """

    code: int
    body: Mapping[str, Any] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return 200 <= self.code <= 299

    @property
    def status(self) -> Mapping[str, Any] | None:
        """The Kubernetes ``Status`` of a failure, else None."""
        if self.ok or self.body is None or self.body.get("kind") != "Status":
            return None
        return self.body


def object_path(scope: Scope, name: str) -> str:
    """The URL path of object ``name`` in ``scope``'s collection."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not an object name: {name!r}")
    return f"{collection_path(scope)}/{name}"


def object_scope(scope: Scope, obj: Mapping[str, Any]) -> Scope:
    """``scope`` narrowed to the object ``obj`` (its name and namespace)."""
    found = obj.get("metadata")
    metadata: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    return replace(
        scope,
        name=str(metadata.get("name") or scope.name),
        namespace=str(metadata.get("namespace") or scope.namespace),
        label_selector="",
    )


def written_version(answer: Answer) -> str | None:
    """The resourceVersion of an accepted write's object (the only thing taken from it)."""
    metadata = answer.body.get("metadata") if answer.ok and answer.body else None
    version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
    return version if isinstance(version, str) else None


class KubeWriter:
    """Conditional writes and uncached reads for one principal on one target.

    :param api: the principal's ``ApiClient`` (from the host's client loader).
    :param timeout: connect and read timeouts in seconds.
    :param field_manager: the ``fieldManager`` recorded for writes.
    """

    def __init__(
        self, api: ApiClient, *, timeout: tuple[float, float] = DEFAULT_TIMEOUT, field_manager: str = FIELD_MANAGER
    ) -> None:
        self._api = api
        self._timeout = timeout
        self._field_manager = field_manager

    def patch(
        self, scope: Scope, patch: Mapping[str, Any], *, uid: str, resource_version: str, dry_run: bool = False
    ) -> Answer:
        """A JSON merge PATCH of object ``scope.name`` that applies only to that uid at that version.

        With ``dry_run`` the same request carries ``dryRun=All``: Kubernetes validates and admits it
        and answers as if it wrote it, but stores nothing."""
        if not uid or not resource_version:
            raise MissingPrecondition("a save PATCH needs both the uid and the resourceVersion it was captured at")
        body = dict(patch)
        metadata = body.get("metadata")
        body["metadata"] = {
            **(metadata if isinstance(metadata, Mapping) else {}),
            "uid": uid,
            "resourceVersion": resource_version,
        }
        return self.send_merge_patch(object_path(scope, scope.name), body, dry_run=dry_run)

    def send_merge_patch(self, path: str, body: Mapping[str, Any], *, dry_run: bool = False) -> Answer:
        """PATCH ``body`` to ``path`` as a JSON merge patch; both preconditions must be in it."""
        query = {"fieldManager": self._field_manager, **({DRY_RUN: DRY_RUN_ALL} if dry_run else {})}
        return self.request("PATCH", path, body=body, content_type=MERGE_PATCH, query=query)

    def delete(self, scope: Scope, *, uid: str, resource_version: str | None = None) -> Answer:
        """DELETE object ``scope.name`` only if it is still the object ``uid`` (and at that version)."""
        if not uid:
            raise MissingPrecondition("a delete needs the uid of the selected object")
        preconditions = {"uid": uid}
        if resource_version:
            preconditions["resourceVersion"] = resource_version
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": preconditions,
            "propagationPolicy": "Background",
        }
        return self.request("DELETE", object_path(scope, scope.name), body=body)

    def create(self, scope: Scope, body: Mapping[str, Any]) -> Answer:
        """POST ``body`` (sanitized by a ``CreatePolicy``) into ``scope``'s collection."""
        return self.request(
            "POST",
            collection_path(replace(scope, name="", label_selector="")),
            body=body,
            query={"fieldManager": self._field_manager},
        )

    def get(self, scope: Scope) -> Answer:
        """A most-recent GET of object ``scope.name`` (quorum read: no resourceVersion, no cache)."""
        return self.request("GET", object_path(scope, scope.name))

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
        query: Mapping[str, str] | None = None,
    ) -> Answer:
        """One request; transport failures become ``Answer(0, error=...)``, never exceptions.

        Raises :class:`MissingPrecondition` for a PATCH without both preconditions, a PATCH that is
        not a JSON merge patch, a DELETE without a uid precondition, and any PUT: none is ever sent.
        """
        _check_write(method, body, content_type)
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            method, url, headers, payload, _ = self._api.param_serialize(
                method,
                path,
                query_params=list((query or {}).items()),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(
                method, url, header_params=headers, body=payload, _request_timeout=self._timeout
            )
            data: bytes = response.read()  # type: ignore[no-untyped-call]
        except ApiException as exc:  # the client's wrapping of TLS failures
            return Answer(0, error=f"ApiException {exc.status}")
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            return Answer(0, error=type(exc).__name__)
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = None
        return Answer(response.status, parsed if isinstance(parsed, Mapping) else None)


def _check_write(method: str, body: Mapping[str, Any] | None, content_type: str) -> None:
    method = method.upper()
    if method == "PUT":
        raise MissingPrecondition("a whole-object PUT is never sent: it would drop fields the editor never saw")
    if method == "PATCH":
        metadata = body.get("metadata") if isinstance(body, Mapping) else None
        if content_type != MERGE_PATCH:
            raise MissingPrecondition(f"a PATCH is sent only as {MERGE_PATCH}")
        if not isinstance(metadata, Mapping) or not metadata.get("uid") or not metadata.get("resourceVersion"):
            raise MissingPrecondition("a merge PATCH must carry metadata.uid and metadata.resourceVersion")
    if method == "DELETE":
        preconditions = body.get("preconditions") if isinstance(body, Mapping) else None
        if not isinstance(preconditions, Mapping) or not preconditions.get("uid"):
            raise MissingPrecondition("a DELETE must carry a uid precondition")


def read_result(answer: Answer, projection: str | None) -> ReadResult:
    """A guarded read's answer as a :class:`ReadResult`; projected unless ``projection`` is None (native)."""
    if answer.ok and answer.body is not None and isinstance(answer.body.get("metadata"), Mapping):
        if projection is None:
            return ReadResult("object", answer.body, None)
        projected = project(answer.body, projection)
        return ReadResult("object", projected.object, tuple(projected.redacted_paths))
    if answer.code == 404:
        return ReadResult("not-found")
    if answer.code == 403:
        return ReadResult("forbidden")
    if answer.code == 401:
        return ReadResult("unauthorized")
    return ReadResult("failed")


# ---- the default save hook -----------------------------------------------------------------


class SaveRefused(Exception):
    """The host (or a validator) refused to send a write; nothing reached Kubernetes.

    :param detail: a short, value-free reason shown to the person.
    :param kind: the outcome reported: ``REFUSED`` (default), ``ACCESS_DENIED``, ``INVALID`` or
        ``RECOVERING`` (the current object could not be read).
    :param field: the field refused, as Kubernetes names fields (``spec.replicas``,
        ``spec.template.spec.containers[0].image``): the reason is then also shown at that field
        of the editor, and the detail reads ``<field>: <reason>``.
    """

    def __init__(self, detail: str, *, kind: OutcomeKind = OutcomeKind.REFUSED, field: str | None = None) -> None:
        super().__init__(f"{field}: {detail}" if field else detail)
        self.detail = f"{field}: {detail}" if field else detail
        self.kind = kind
        self.cause = FieldCause(field, field_path(field), "Refused", detail) if field else None

    def outcome(self) -> Outcome:
        """The outcome the person sees: the detail, and the field's cause when one is named."""
        return Outcome(self.kind, causes=(self.cause,) if self.cause else (), detail=self.detail)


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """One write for a save hook.

    :param operation: ``patch`` (``intent`` set), ``create`` (``body`` set) or ``delete`` (``uid``
        and optionally ``resource_version`` set).
    :param scope: the object's scope: target, kind, namespace and (patch, delete) name.
    :param projection: the editor's projection; ``None`` for a native editor.
    :param api: the principal's client from the host's client loader.
    :param rebase: for a patch, ``rebase(intent, current)`` is the same intent based on the newest
        known version whose projection is what the person edited (or ``intent`` itself). A hook
        calls it right before sending, after any preflight read, passing the raw object that read
        returned as ``current`` (or ``None``): the newer of it and the shared watch's object is
        the candidate, so a change the person cannot see that landed meanwhile does not bounce the
        write, even while the watch lags. The patch never changes; ``current`` never leaves the
        process.
    """

    operation: Literal["patch", "create", "delete"]
    principal: Principal
    scope: Scope
    projection: str | None
    api: ApiClient
    intent: SaveIntent | None = None
    body: Mapping[str, Any] | None = None
    uid: str | None = None
    resource_version: str | None = None
    rebase: Callable[[SaveIntent, Mapping[str, Any] | None], SaveIntent] | None = None


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a save hook reports: never the written object, only its new resourceVersion.

    :param code: the HTTP status from Kubernetes, 0 when no answer arrived.
    :param status: the Kubernetes ``Status`` of a failure.
    :param written_version: the resourceVersion an accepted write produced.
    :param uid: the uid of a created object.
    """

    code: int
    status: Mapping[str, Any] | None = None
    written_version: str | None = None
    uid: str | None = None
    error: str | None = None

    @classmethod
    def of(cls, answer: Answer) -> WriteResult:
        """Keep only what the save flow needs from ``answer``; the raw object is dropped."""
        metadata = answer.body.get("metadata") if answer.ok and answer.body else None
        uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
        return cls(
            answer.code, answer.status, written_version(answer), uid if isinstance(uid, str) else None, answer.error
        )


SaveHook = Callable[[WriteRequest], WriteResult]


def default_save(request: WriteRequest) -> WriteResult:
    """The default save hook: the conditional write for ``request.operation``, as the principal.

    A patch is validated with ``validate_merge_patch`` (projected editors) or
    ``validate_native_merge_patch`` (native editors) against the current object, read just before,
    and sent with the intent's uid and resourceVersion (after ``request.rebase``, when given). A
    delete carries a uid precondition. A create POSTs the sanitized body. Raises
    :class:`SaveRefused` when validation refuses the patch or the current object cannot be read.
    """
    writer = KubeWriter(request.api)
    if request.operation == "patch":
        intent = _required(request.intent, "intent")
        return WriteResult.of(_conditional_patch(writer, request, intent))
    if request.operation == "delete":
        return WriteResult.of(
            writer.delete(request.scope, uid=_required(request.uid, "uid"), resource_version=request.resource_version)
        )
    if request.operation == "create":
        return WriteResult.of(writer.create(request.scope, _required(request.body, "body")))
    raise ValueError(f"unknown write operation {request.operation!r}")


def _conditional_patch(writer: KubeWriter, request: WriteRequest, intent: SaveIntent) -> Answer:
    current = writer.get(request.scope)
    if not current.ok or current.body is None:
        if current.code in (401, 403, 404) or 400 <= current.code <= 499:
            return current  # the same refusal the write would get
        raise SaveRefused("the current configuration could not be read", kind=OutcomeKind.RECOVERING)
    try:
        if request.projection is None:
            validate_native_merge_patch(intent.conditional_patch())
        else:
            validate_merge_patch(request.projection, current.body, intent.patch)
    except PatchRejected as rejected:
        raise SaveRefused(_rejection(rejected)) from None
    if request.rebase is not None:
        intent = request.rebase(intent, current.body)
    return writer.patch(request.scope, intent.patch, uid=intent.uid, resource_version=intent.resource_version)


def _rejection(rejected: PatchRejected) -> str:
    path = getattr(rejected, "path", "")
    reason = getattr(rejected, "reason", "") or str(rejected)
    return f"{path}: {reason}" if path else str(reason)


def _required(value: Any, name: str) -> Any:
    if value is None:
        raise ValueError(f"this write request needs {name}")
    return value
