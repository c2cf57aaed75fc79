"""The WSGI application: URL layout, authentication, impersonation, authorization and dispatch."""

from __future__ import annotations

import json
import socket
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

import gevent
import gevent.socket

from . import catalog as types
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
    unauthorized,
    unknown_resource,
    unsupported_media_type,
)
from .faults import FaultState
from .impersonation import impersonate, parse_impersonation
from .listing import LIST_OPTIONS_KIND, ListOptions, list_body
from .managed_fields import manager_from_user_agent
from .rbac import Attributes, RbacAuthorizer, require
from .registry import Preconditions, Registry
from .reviews import review
from .selectors import SelectorError, parse_field_selector
from .store import ObjectStore
from .watch import ConnectionDropped, Watcher, WatchSettings

StartResponse = Callable[..., Callable[[bytes], Any]]
HEADER_LINES = "simulator.header_lines"
CONNECTION = "simulator.connection"
MERGE_PATCH = "application/merge-patch+json"
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
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
    ) -> None:
        self.catalog = catalog
        self.store = store
        self.registry = registry
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.watch_settings = watch_settings
        self.faults = faults
        self.watchers: set[Watcher] = set()
        self.address = ""

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if self.faults.latency:
            gevent.sleep(self.faults.latency)
        try:
            if self.faults.refusing():
                if not self.faults.refuse_with_503:
                    raise ConnectionDropped()  # a kept-alive connection is closed as well
                raise service_unavailable("the server is currently unable to handle the request")
            return self._handle(environ, start_response)
        except ApiError as error:
            return _respond(start_response, error.code, error.status())
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
        wanted = parse_impersonation(environ.get(HEADER_LINES, []))
        query = {key: values[0] for key, values in parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True).items()}
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
            attributes = Attributes(requester, request.verb, resource.group, resource.plural, request.subresource, scope, name)
        user = requester if wanted is None else impersonate(self.authorizer, requester, wanted, attributes)
        require(self.authorizer, replace(attributes, user=user))
        if request is None:
            return _respond(start_response, 200, document)
        return self._dispatch(request, user, environ, query, start_response)

    def _resource_request(self, method: str, path: str, query: dict[str, str]) -> ResourceRequest:
        parts = [part for part in path.split("/") if part]
        if len(parts) >= 2 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise unknown_resource()
        namespace = ""
        if len(rest) >= 2 and rest[0] == "namespaces":
            namespace = rest[1]
            if len(rest) > 2 and rest[2] not in ("status", "finalize"):
                rest = rest[2:]
        if not rest or len(rest) > 3:
            raise unknown_resource()
        resource = self.catalog.find(group, version, rest[0])
        if resource is None:
            raise unknown_resource()
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        namespaced_path = bool(namespace) and resource != types.NAMESPACES
        if namespaced_path != resource.namespaced and (namespaced_path or name):
            raise unknown_resource()
        if subresource and (subresource != "status" or not resource.status_subresource):
            raise unknown_resource()
        verb = _verb(method, name, query)
        if verb not in resource.verbs:
            raise method_not_allowed()
        return ResourceRequest(verb, resource, namespace, name, subresource)

    def _dispatch(
        self, request: ResourceRequest, user: Identity, environ: dict[str, Any], query: dict[str, str], start_response: StartResponse
    ) -> Iterable[bytes]:
        resource, namespace, name = request.resource, request.namespace, request.name
        list_namespace = namespace if resource.namespaced and namespace else None
        if request.verb == "get":
            return _respond(start_response, 200, self.registry.get(resource, namespace if resource.namespaced else "", name))
        if request.verb == "list":
            return _respond(start_response, 200, list_body(self.store, resource, list_namespace, ListOptions.parse(query, resource)))
        if request.verb == "watch":
            options = ListOptions.parse(query, resource)
            if options.send_initial_events is not None and self.faults.refuses_streaming_list(resource.api_version):
                raise invalid(LIST_OPTIONS_KIND, "", [FieldError.forbidden("sendInitialEvents", WATCH_LIST_DISABLED)])
            return self._watch(resource, list_namespace, options, environ.get(CONNECTION), start_response)
        if "dryRun" in query:
            raise bad_request("dryRun is not supported by the Kubernetes simulator")  # better refused than applied
        body = _read_json(environ)
        scope = namespace if resource.namespaced else ""
        manager = query.get("fieldManager") or manager_from_user_agent(environ.get("HTTP_USER_AGENT", ""))
        if request.verb == "create" and not resource.stored:
            return _respond(start_response, 201, review(self.authorizer, body, resource.kind, user))
        if request.verb == "create":
            result, code = self.registry.create(resource, scope, body, manager), 201
        elif request.verb == "update":
            result, code = self.registry.replace(resource, scope, name, body, request.subresource, manager), 200
        elif request.verb == "patch":
            content_type = environ.get("CONTENT_TYPE", "").split(";")[0].strip()
            if content_type != MERGE_PATCH:
                raise unsupported_media_type([MERGE_PATCH])
            result, code = self.registry.patch(resource, scope, name, body, request.subresource, manager), 200
        else:
            result, code = self.registry.delete(resource, scope, name, _preconditions(body))[0], 200
        if self.faults.take_lost_write_response():
            raise ConnectionDropped()
        return _respond(start_response, code, result)

    def _watch(
        self, resource: ResourceType, namespace: str | None, options: ListOptions, connection: Any, start_response: StartResponse
    ) -> Iterator[bytes]:
        watcher = Watcher(self.store, resource, namespace, options, self.watch_settings)
        watcher.open()
        self.watchers.add(watcher)
        write = start_response("200 OK", [("Content-Type", "application/json"), ("Cache-Control", "no-cache, private")])
        write(b"")  # send the headers now: a watch answers before its first event
        return self._stream(watcher, connection)

    def _stream(self, watcher: Watcher, connection: Any) -> Iterator[bytes]:
        monitor = gevent.spawn(_end_when_closed, connection, watcher) if connection is not None else None
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
    """End ``watcher`` once its client has closed the connection (as a real server notices at once)."""
    try:
        gevent.socket.wait_read(connection.fileno())
        if connection.recv(1, socket.MSG_PEEK) == b"":
            watcher.end(drop=False)
    except OSError:
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
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    if method not in verbs or (method == "POST") == bool(name):
        raise method_not_allowed()
    return verbs[method]


def _read_json(environ: dict[str, Any]) -> Any:
    raw = environ["wsgi.input"].read()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as error:
        raise bad_request(f"couldn't get version/kind; json parse error: {error}") from None


def _preconditions(body: Any) -> Preconditions:
    if body is None:
        return Preconditions()
    if not isinstance(body, dict):
        raise bad_request("DeleteOptions in version \"v1\" cannot be handled as a DeleteOptions: the body is not a JSON object")
    given = body.get("preconditions") or {}
    return Preconditions(uid=given.get("uid"), resource_version=given.get("resourceVersion"))


def _respond(start_response: StartResponse, code: int, body: Any) -> list[bytes]:
    data = json.dumps(body, separators=(",", ":")).encode()
    headers = [
        ("Content-Type", "application/json"),
        ("Cache-Control", "no-cache, private"),
        ("Content-Length", str(len(data))),
    ]
    start_response(f"{code} {HTTPStatus(code).phrase}", headers)
    return [data]
