"""The WSGI application: URL layout, authentication, impersonation, authorization and dispatch."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

import yaml

from ... import concurrency
from . import catalog as types
from . import openapi
from .authentication import Authenticator, Identity
from .catalog import Catalog, ResourceType
from .discovery import discovery_document
from .errors import (
    ApiError,
    FieldError,
    bad_request,
    internal,
    invalid,
    method_not_allowed,
    service_unavailable,
    too_large_resource_version,
    unauthorized,
    unknown_resource,
    unsupported_media_type,
    unwrapped,
)
from .faults import FaultState
from .field_validation import FieldValidation
from .impersonation import impersonate, parse_impersonation
from .listing import LIST_OPTIONS_KIND, ListOptions, list_body
from .managed_fields import manager_from_user_agent
from .negotiation import JSON, PARTIAL_LIST, TABLE, YAML, Representation, error_media_type, negotiate, transform
from .options import APPLY_PATCH_TYPES, DeleteOptions, Query, delete_options, write_options
from .patches import APPLY_PATCH, accepted_patch_types, applied_patch_types, decode_apply_body, decode_body
from .rbac import Attributes, RbacAuthorizer, require
from .registry import Registry
from .reviews import review
from .selectors import SelectorError, parse_field_selector
from .store import Event, Object, ObjectStore
from .watch import ConnectionDropped, Watcher, WatchSettings

StartResponse = Callable[..., Callable[[bytes], Any]]
HEADER_LINES = "simulator.header_lines"
CONNECTION = "simulator.connection"
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
REGISTERED_ROOTS = frozenset(
    {"api", "version", "openapi", "metrics", "logs", "livez", "readyz", "healthz", ".well-known"}
)
"""First path segments the API server's mux has handlers for; what the simulator does not serve
under them is its ``Status`` 404, not Go's plain-text page."""
NOT_FOUND_PAGE = b"404 page not found\n"
"""The body of the API server's 404 for a path no handler is registered at (Go's ``http.NotFound``)."""
SUBRESOURCE_VERBS = ("get", "update", "patch")
WATCH_LIST_DISABLED = "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"


@dataclass(frozen=True)
class ResourceRequest:
    """``RequestInfo`` for a resource URL."""

    verb: str
    resource: ResourceType
    namespace: str
    name: str
    subresource: str


class ApiServer:
    """A WSGI application serving the Kubernetes API from an ``ObjectStore``."""

    def __init__(
        self,
        catalog: Catalog,
        store: ObjectStore,
        registry: Registry,
        authenticator: Authenticator,
        authorizer: RbacAuthorizer,
        watch_settings: WatchSettings,
        faults: FaultState,
        resource_version_wait: float = 3.0,
    ) -> None:
        self.catalog = catalog
        self.store = store
        self.registry = registry
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.watch_settings = watch_settings
        self.faults = faults
        self.resource_version_wait = resource_version_wait
        self.watchers: set[Watcher] = set()
        self.address = ""

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if self.faults.latency:
            concurrency.sleep(self.faults.latency)
        try:
            if self.faults.refusing():
                if not self.faults.refuse_with_503:
                    raise ConnectionDropped()  # a kept-alive connection is closed as well
                raise service_unavailable("the server is currently unable to handle the request")
            return self._handle(environ, start_response)
        except ApiError as error:
            return _respond(start_response, error.code, error.status(), error_media_type(environ.get("HTTP_ACCEPT")))
        except ConnectionDropped:
            raise
        except Exception as error:  # a simulator bug: answer like the apiserver's panic handler, and say where
            traceback.print_exc()
            failure = internal(f"{type(error).__name__}: {error}")
            return _respond(start_response, failure.code, failure.status())

    def _handle(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "") or "/"
        method = environ["REQUEST_METHOD"]
        if path in HEALTH_PATHS:
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "2")])
            return [b"ok"]
        requester = self.authenticator.authenticate(environ.get("HTTP_AUTHORIZATION"))
        if requester is None:
            raise unauthorized()
        if path.strip("/") and self._unrouted(path):
            return _not_found_page(start_response)
        if _has_empty_segment(path):
            raise unknown_resource()
        wanted = parse_impersonation(environ.get(HEADER_LINES, []))
        query_lists = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        query = {key: values[0] for key, values in query_lists.items()}
        if path == openapi.PREFIX or path.startswith(openapi.PREFIX + "/"):
            require(self.authorizer, Attributes(requester, "get", resource_request=False, path=path))
            reply = openapi.serve(path, query, environ.get("HTTP_ACCEPT", ""), environ.get("HTTP_IF_NONE_MATCH", ""))
            if reply is not None:
                length = [] if reply.status == 304 else [("Content-Length", str(len(reply.body)))]
                start_response(f"{reply.status} {HTTPStatus(reply.status).phrase}", reply.headers + length)
                return [reply.body]
        document = discovery_document(self.catalog, path, self.address)
        request: ResourceRequest | None = None
        if document is not None:
            if method != "GET":
                raise method_not_allowed()
            attributes = Attributes(requester, "get", resource_request=False, path=path)
        else:
            request = self._resource_request(method, path, query)
            resource = request.resource
            name = _selected_name(query, resource) if request.verb in ("list", "watch") else request.name
            scope = request.namespace if resource.namespaced or resource == types.NAMESPACES else ""
            attributes = Attributes(
                requester, request.verb, resource.group, resource.plural, request.subresource, scope, name
            )
        user = requester if wanted is None else impersonate(self.authorizer, requester, wanted, attributes)
        require(self.authorizer, replace(attributes, user=user))
        if request is None:
            return _respond(start_response, 200, document)
        return self._dispatch(request, user, environ, query, query_lists, start_response)

    def _unrouted(self, path: str) -> bool:
        """Whether the API server's mux has no handler for ``path``, which it answers with Go's
        plain-text page: outside :data:`REGISTERED_ROOTS` and ``/apis``, or under ``/apis/`` a
        group not served (``/foo``, ``//api``, ``/apis/nope/v1``, ``/apis//apps/v1``)."""
        parts = path.rstrip("/").split("/")[1:]
        if parts[0] in REGISTERED_ROOTS:
            return False
        if parts[0] != "apis":
            return True
        return len(parts) > 1 and (not parts[1] or parts[1] not in self.catalog.group_versions())

    def _resource_request(self, method: str, path: str, query: dict[str, str]) -> ResourceRequest:
        parts = [part for part in path.split("/") if part]
        if len(parts) >= 2 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise unknown_resource()
        namespace = ""
        namespaced_path = False  # /namespaces/<ns>/<resource>..., not a namespace itself
        if len(rest) >= 2 and rest[0] == "namespaces":
            namespace = rest[1]
            if len(rest) > 2 and rest[2] not in ("status", "finalize"):
                rest = rest[2:]
                namespaced_path = True
        if not rest or len(rest) > 3:
            raise unknown_resource()
        resource = self.catalog.find(group, version, rest[0])
        if resource is None:
            raise unknown_resource()
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if namespaced_path != resource.namespaced and (namespaced_path or name):
            raise unknown_resource()
        if subresource and subresource not in resource.subresources:
            raise unknown_resource()
        verb = _verb(method, name, query)
        if verb not in resource.verbs or (subresource and verb not in SUBRESOURCE_VERBS):
            raise method_not_allowed()
        return ResourceRequest(verb, resource, namespace, name, subresource)

    def _dispatch(
        self,
        request: ResourceRequest,
        user: Identity,
        environ: dict[str, Any],
        query: dict[str, str],
        query_lists: Query,
        start_response: StartResponse,
    ) -> Iterable[bytes]:
        resource, namespace, name = request.resource, request.namespace, request.name
        list_namespace = namespace if resource.namespaced and namespace else None
        scope = namespace if resource.namespaced else ""
        patch_type = environ.get("CONTENT_TYPE", "").split(";")[0].strip()
        if request.verb == "patch" and patch_type not in accepted_patch_types(resource):
            if resource.custom:
                raise unsupported_media_type(accepted_patch_types(resource))
            raise ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})  # go-restful's refusal
        representation = negotiate(
            environ.get("HTTP_ACCEPT"),
            resource,
            query,
            collection_read=request.verb in ("list", "watch"),
            watch=request.verb == "watch",
        )

        validation = FieldValidation()

        def respond(code: int, body: Object) -> list[bytes]:
            transformed = transform(body, representation, resource)
            return _respond(start_response, code, transformed, representation.media_type, validation.warnings)

        if request.verb == "get":
            requested = _object_version(query.get("resourceVersion", ""))
            if requested is not None:
                self._await_version(requested)
            if request.subresource == "scale":
                return respond(200, self.registry.scale(resource, scope, name))
            return respond(200, self.registry.get(resource, scope, name))
        if request.verb == "list":
            options = ListOptions.parse(query, resource)
            if not options.continue_token and (requested := options.requested_version()) is not None:
                self._await_version(requested)
            return respond(200, list_body(self.store, resource, list_namespace, options))
        if request.verb == "watch":
            options = ListOptions.parse(query, resource)
            if options.send_initial_events is not None and self.faults.refuses_streaming_list(resource.api_version):
                raise invalid(LIST_OPTIONS_KIND, "", [FieldError.forbidden("sendInitialEvents", WATCH_LIST_DISABLED)])
            _object_version(options.resource_version)  # refuses one that is not a number
            return self._watch(
                resource, list_namespace, options, environ.get(CONNECTION), start_response, representation
            )
        if request.verb == "deletecollection":
            options = ListOptions.parse(query, resource)
            deletion = delete_options(query_lists, _read_json(environ))
            return respond(200, self._delete_collection(resource, list_namespace, options, deletion))

        def manager_of(chosen: str) -> str:
            return chosen or manager_from_user_agent(environ.get("HTTP_USER_AGENT", ""))

        if request.verb == "create":
            written = write_options("CreateOptions", query_lists)
            dry_run = written.dry_run
            validation.directive = written.field_validation
            body = _read_json(environ)
            if not resource.stored:
                return respond(201, review(self.authorizer, body, resource.kind, user))
            result = self.registry.create(
                resource, scope, body, manager_of(written.field_manager), dry_run=written.dry_run, validation=validation
            )
            code = 201
        elif request.verb == "update":
            written = write_options("UpdateOptions", query_lists)
            dry_run = written.dry_run
            validation.directive = written.field_validation
            body = _read_json(environ)
            result = self.registry.replace(
                resource,
                scope,
                name,
                body,
                request.subresource,
                manager_of(written.field_manager),
                dry_run=written.dry_run,
                validation=validation,
            )
            code = 200
        elif request.verb == "patch":
            written = write_options("PatchOptions", query_lists, patch_type)
            dry_run = written.dry_run
            validation.directive = written.field_validation
            if patch_type in APPLY_PATCH_TYPES:
                if patch_type != APPLY_PATCH or request.subresource:
                    raise unsupported_media_type(applied_patch_types(resource))  # see docs/real-kubernetes.md
                applied = decode_apply_body(environ["wsgi.input"].read())
                result, created = self.registry.apply(
                    resource,
                    scope,
                    name,
                    applied,
                    written.field_manager,
                    force=written.force,
                    dry_run=written.dry_run,
                    validation=validation,
                )
                if not written.dry_run and self.faults.take_lost_write_response():
                    raise ConnectionDropped()
                return respond(201 if created else 200, result)
            patch = decode_body(environ["wsgi.input"].read())
            result = self.registry.patch(
                resource,
                scope,
                name,
                patch,
                request.subresource,
                manager_of(written.field_manager),
                patch_type=patch_type,
                dry_run=written.dry_run,
                validation=validation,
            )
            code = 200
        else:
            deletion = delete_options(query_lists, _read_json(environ))
            result, gone = self.registry.delete(resource, scope, name, deletion)
            code = 202 if not gone and deletion.orphan_dependents is False else 200
            dry_run = deletion.dry_run
        if not dry_run and self.faults.take_lost_write_response():  # a dry run's answer is never the one lost
            raise ConnectionDropped()
        return respond(code, result)

    def _delete_collection(
        self, resource: ResourceType, namespace: str | None, options: ListOptions, deletion: DeleteOptions
    ) -> Object:
        """Delete what a list with ``options`` returns (one by one, finalizers respected); answer that list."""
        listed = list_body(self.store, resource, namespace, options)
        for item in listed["items"]:
            metadata = item["metadata"]
            try:
                self.registry.delete(resource, metadata.get("namespace", ""), metadata["name"], deletion)
            except ApiError as error:
                if error.code != 404:
                    raise
        return listed

    def _await_version(self, requested: int) -> None:
        """Wait until the store reaches ``requested`` (as the watch cache does), else 504 ``Too large resource version``."""
        if requested <= self.store.resource_version:
            return
        reached = concurrency.Event()

        def check(event: Event) -> None:
            if event.resource_version >= requested:
                reached.set()

        unsubscribe = self.store.subscribe(check)
        try:
            reached.wait(self.resource_version_wait)
        finally:
            unsubscribe()
        if self.store.resource_version < requested:
            raise too_large_resource_version(requested, self.store.resource_version)

    def _watch(
        self,
        resource: ResourceType,
        namespace: str | None,
        options: ListOptions,
        connection: Any,
        start_response: StartResponse,
        representation: Representation,
    ) -> Iterator[bytes]:
        watcher = Watcher(
            self.store,
            resource,
            namespace,
            options,
            self.watch_settings,
            render=_event_renderer(resource, representation),
        )
        watcher.open()
        self.watchers.add(watcher)
        write = start_response("200 OK", [("Content-Type", "application/json"), ("Cache-Control", "no-cache, private")])
        write(b"")  # send the headers now: a watch answers before its first event
        return self._stream(watcher, connection)

    def _stream(self, watcher: Watcher, connection: Any) -> Iterator[bytes]:
        monitor = concurrency.spawn(_end_when_closed, connection, watcher) if connection is not None else None
        try:
            yield from watcher.lines()
        finally:
            self.watchers.discard(watcher)
            if monitor is not None:
                monitor.kill(block=False)

    def end_watches(self) -> None:
        """Finish every open watch cleanly (server shutdown)."""
        for watcher in list(self.watchers):
            watcher.close()
            watcher.end(drop=False)


def _end_when_closed(connection: Any, watcher: Watcher) -> None:
    """End ``watcher`` once its client has closed the connection (as a real server notices at once).

    A client sends nothing more on a connection that carries a watch, so the connection turning
    readable means it is closing: the end of the stream, or TLS's close_notify alert before it.
    """
    try:
        concurrency.wait_readable(connection.fileno())
    except OSError:
        pass
    watcher.end(drop=False)


def _selected_name(query: dict[str, str], resource: ResourceType) -> str:
    """The name a list or watch is narrowed to by ``fieldSelector=metadata.name=...`` (authorized as that name)."""
    try:
        selector = parse_field_selector(
            query.get("fieldSelector", ""), resource.supported_field_labels(), resource.unsupported_field_label
        )
        return selector.exact("metadata.name") or ""
    except SelectorError:
        return ""


def _verb(method: str, name: str, query: dict[str, str]) -> str:
    if method == "GET":
        if name:
            return "get"
        return "watch" if query.get("watch", "false") in ("1", "t", "T", "true", "TRUE", "True") else "list"
    if method == "DELETE" and not name:
        return "deletecollection"
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    if method not in verbs or (method == "POST") == bool(name):
        raise method_not_allowed()
    return verbs[method]


def _object_version(text: str) -> int | None:
    """A GET's or WATCH's ``resourceVersion`` (``None``: any); not a number is the 500 kube-apiserver answers."""
    if text in ("", "0"):
        return None
    if not text.isascii() or not text.isdigit():
        raise unwrapped(
            f'resourceVersion: Invalid value: "{text}": strconv.ParseUint: parsing "{text}": invalid syntax'
        )
    return int(text)


def _event_renderer(resource: ResourceType, representation: Representation) -> Callable[[Object], Object | None]:
    """Each watch event's object as ``representation`` asks (``None``: not sent); a Table's columns come once."""
    if not representation.target:
        return lambda obj: obj
    if representation.target == PARTIAL_LIST:
        return lambda obj: None  # kube-apiserver fails to encode every event of such a watch and sends nothing
    sent_columns = False

    def render(obj: Object) -> Object | None:
        nonlocal sent_columns
        try:
            rendered = transform(obj, representation, resource, headers=not sent_columns)
        except ApiError:
            return obj
        sent_columns = sent_columns or representation.target == TABLE
        return rendered

    return render


def _read_json(environ: dict[str, Any]) -> Any:
    raw = environ["wsgi.input"].read()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as error:
        raise bad_request(f"couldn't get version/kind; json parse error: {error}") from None


def _has_empty_segment(path: str) -> bool:
    """Whether ``path`` has an empty segment before its trailing slashes: the API server finds
    nothing there (``/api//v1/namespaces``), while trailing slashes name the same URL."""
    return "" in path.rstrip("/").split("/")[1:]


def _not_found_page(start_response: StartResponse) -> list[bytes]:
    headers = [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("X-Content-Type-Options", "nosniff"),
        ("Content-Length", str(len(NOT_FOUND_PAGE))),
    ]
    start_response("404 Not Found", headers)
    return [NOT_FOUND_PAGE]


def _respond(
    start_response: StartResponse, code: int, body: Any, media_type: str = JSON, warnings: Sequence[str] = ()
) -> list[bytes]:
    if media_type == YAML:
        data = yaml.safe_dump(body, default_flow_style=False, sort_keys=True, allow_unicode=True).encode()
    else:
        data = json.dumps(body, separators=(",", ":")).encode()
    headers = [
        ("Content-Type", media_type),
        ("Cache-Control", "no-cache, private"),
        ("Content-Length", str(len(data))),
    ]
    headers += [("Warning", f"299 - {json.dumps(warning)}") for warning in dict.fromkeys(warnings)]
    start_response(f"{code} {HTTPStatus(code).phrase}", headers)
    return [data]
