"""The native source: a collection as Kubernetes serves it (unprojected LIST then WATCH).

:class:`NativeWatch` reads a collection as Kubernetes serves it (Secret values, managedFields and
status included) and turns it into store events for a dedicated native
:class:`~flask_krm.store.LiveResourceStore`: a LIST becomes ``reset``, ``added`` per item and
``synced``; the WATCH from the list's resourceVersion follows. It is live only once the snapshot is
applied and the WATCH accepted. A dropped or ended watch resumes from its checkpoint (the last event
applied, or the last bookmark) without a LIST or a new snapshot; only an expired history (HTTP or
in-stream 410) lists again. 401, 403 and other 4xx are terminal; a paginated LIST is refused.

Also here: the API-server URLs of a scope and the parsing of an API-server path into a scope, which
the native proxy (:mod:`flask_krm.native`) uses. A native object is never fed into a projected
editor: native stores are separate.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Final, TypeAlias

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from .. import concurrency
from ..events import Deleted, Event, Identity, Reset, StreamError, Synced, Upsert
from ..scope import Scope, ScopeError
from .reflector import Backoff, collection_path, iter_json_lines

logger = logging.getLogger("flask_krm.native")

NATIVE: Final = "native"
"""The projection name a native store, stream and authorization decision use."""


# ---- URLs ------------------------------------------------------------------------------------


def native_collection_url(base: str, scope: Scope) -> str:
    """``<base>/api/v1/namespaces/<ns>/<resource>`` (or ``/apis/<group>/<version>/...``), with the
    scope's label selector as a query."""
    url = base.rstrip("/") + collection_path(scope)
    if scope.label_selector:
        from urllib.parse import urlencode

        url += "?" + urlencode({"labelSelector": scope.label_selector})
    return url


def native_object_url(base: str, scope: Scope, name: str) -> str:
    """The URL of object ``name`` in ``scope``'s collection under ``base``."""
    return base.rstrip("/") + collection_path(replace(scope, label_selector="")) + "/" + name


class NativePathError(ValueError):
    """A proxy path that is not a plain collection or object URL of the Kubernetes API."""


def parse_native_path(path: str, *, target: str) -> Scope:
    """The scope (with ``name`` for an object URL) of an API-server path such as
    ``api/v1/namespaces/app/configmaps/web``. Subresources, discovery and anything else are refused.

    Trailing slashes name the same collection or object, as they do for the API server;
    namespaces are not namespaced, so ``namespaces/<ns>/namespaces`` is refused, as it answers 404.
    """
    parts = [p for p in path.strip("/").split("/")]
    if any(p in ("", ".", "..") for p in parts):
        raise NativePathError("empty or relative path segments are not served")
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise NativePathError("only /api/<version>/... and /apis/<group>/<version>/... are served")
    namespace = ""
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
        if rest[0] == "namespaces":
            raise NativePathError(f"namespaces are not namespaced: no namespaces in namespace {namespace!r}")
    if len(rest) not in (1, 2):
        raise NativePathError("only collections and objects are served, no subresources")
    try:
        return Scope(
            target=target,
            group=group,
            version=version,
            resource=rest[0],
            namespace=namespace,
            name=rest[1] if len(rest) == 2 else "",
        )
    except ScopeError as exc:
        raise NativePathError(exc.message) from None


# ---- the native source -----------------------------------------------------------------------


class ConnectionState(str, Enum):
    """A native connection's lifecycle."""

    CONNECTING = "connecting"
    SYNCING = "syncing"
    LIVE = "live"
    RETRYING = "retrying"
    CLOSED = "closed"
    TERMINAL = "terminal"
    EXHAUSTED = "exhausted"


@dataclass(frozen=True, slots=True)
class StateChange:
    """The connection entered ``state``; ``detail`` says why (value-free)."""

    state: ConnectionState
    detail: str = ""


NativeItem: TypeAlias = Event | StateChange


class _Expired(Exception):
    """The watch history expired (410): list again."""


class _Transient(Exception):
    """A dropped connection or a transient refusal: resume (or retry) after a pause."""


class _Terminal(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


TRANSIENT: Final = frozenset({408, 429, 500, 502, 503, 504})


@dataclass
class NativeWatch:
    """The native LIST-then-WATCH source of one collection, as one principal.

    Iterate :meth:`items` on a greenlet and apply each :class:`~flask_krm.events.Event` to the
    native store; :class:`StateChange` items report the lifecycle. :attr:`checkpoint` is where a
    resume starts.

    :param api: the principal's client.
    :param scope: the collection (a named scope watches one object).
    :param max_attempts: consecutive failed attempts before giving up (``EXHAUSTED``).
    :param watch_seconds: the server-side timeout of each WATCH request.
    """

    api: ApiClient
    scope: Scope
    backoff: Backoff = field(default_factory=Backoff)
    max_attempts: int = 8
    watch_seconds: int = 300
    connect_timeout: float = 10.0
    sleep: Callable[[float], None] = concurrency.sleep
    rng: Callable[[], float] = random.random
    checkpoint: str | None = None
    state: ConnectionState = ConnectionState.CONNECTING
    _closed: bool = field(default=False, init=False, repr=False)
    _response: urllib3.BaseHTTPResponse | None = field(default=None, init=False, repr=False)

    def close(self) -> None:
        """Stop: the open watch is closed and :meth:`items` ends with ``CLOSED``."""
        self._closed = True
        response = self._response
        if response is not None:
            response.shutdown()  # unblocks a read on another greenlet or thread

    def items(self) -> Iterator[NativeItem]:
        """Events and state changes until :meth:`close`, a terminal refusal or exhaustion."""
        attempt = 0
        while True:
            if self._closed:
                yield from self._set(ConnectionState.CLOSED)
                return
            try:
                if self.checkpoint is None:
                    yield from self._set(ConnectionState.SYNCING)
                    yield from self._list()
                response = self._open_watch()
                yield from self._set(ConnectionState.LIVE)
                opened = time.monotonic()
                delivered = yield from self._follow(response)
                if self._closed:
                    continue
                if not delivered and time.monotonic() - opened < 1.0:
                    raise _Transient("the watch closed at once")
                attempt = 0  # a watch that delivered or lasted: the failures before it are over
                yield from self._set(ConnectionState.RETRYING, "the watch ended; resuming")
            except _Expired:
                self.checkpoint = None
                yield from self._set(ConnectionState.RETRYING, "the watch history expired; listing again")
            except _Transient as exc:
                attempt += 1
                if attempt >= self.max_attempts:
                    yield from self._set(ConnectionState.EXHAUSTED, str(exc))
                    return
                yield from self._set(ConnectionState.RETRYING, str(exc))
                self.sleep(self.backoff.delay(attempt - 1, self.rng))
            except _Terminal as exc:
                yield StreamError(exc.code, exc.message, terminal=True)  # type: ignore[arg-type]
                yield from self._set(ConnectionState.TERMINAL, exc.message)
                return

    def _set(self, state: ConnectionState, detail: str = "") -> Iterator[NativeItem]:
        if state is not self.state or detail:
            self.state = state
            yield StateChange(state, detail)

    def _list(self) -> Iterator[NativeItem]:
        query = self._selectors()
        body = self._json(self._request(query, (self.connect_timeout, 60.0)))
        found = body.get("metadata")
        metadata: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if metadata.get("continue"):
            raise _Terminal("INTERNAL", "the LIST answer is paginated; native lists are not paginated")
        version = metadata.get("resourceVersion")
        if not isinstance(version, str) or not version:
            raise _Transient("the LIST answer has no resourceVersion")
        kind = str(body.get("kind") or "")
        item_kind = kind[: -len("List")] if kind.endswith("List") else ""
        api_version = str(body.get("apiVersion") or "")
        objects = []
        for item in body.get("items") or ():
            if not isinstance(item, Mapping) or not _uid(item):
                raise _Transient("the LIST answer holds an object without a uid")
            objects.append({"apiVersion": api_version, "kind": item_kind, **item})
        yield Reset(self.scope.to_wire(), NATIVE)
        for obj in objects:
            yield Upsert("added", obj)
        yield Synced()
        self.checkpoint = version

    def _open_watch(self) -> urllib3.BaseHTTPResponse:
        assert self.checkpoint is not None
        query = [
            *self._selectors(),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", self.checkpoint),
            ("timeoutSeconds", str(self.watch_seconds)),
        ]
        return self._request(query, (self.connect_timeout, self.watch_seconds + 30.0))

    def _follow(self, response: urllib3.BaseHTTPResponse) -> Generator[NativeItem, None, bool]:
        delivered = False
        self._response = response
        try:
            for line in iter_json_lines(response):
                kind = line.get("type") if isinstance(line, Mapping) else None
                obj = line.get("object") if isinstance(line, Mapping) else None
                if not isinstance(obj, Mapping):
                    raise _Transient("the watch sent an event without an object")
                if kind == "ERROR":
                    if obj.get("code") == 410 or obj.get("reason") in ("Expired", "Gone"):
                        raise _Expired()
                    raise _Transient("the watch reported an error")
                version = _resource_version(obj)
                if kind == "BOOKMARK":
                    if version:
                        self.checkpoint = version
                    continue
                uid = _uid(obj)
                if kind not in ("ADDED", "MODIFIED", "DELETED") or not uid:
                    raise _Expired()  # cannot vouch for continuity: list again
                delivered = True
                if kind == "DELETED":
                    yield Deleted(_identity(obj, uid))
                else:
                    yield Upsert("added" if kind == "ADDED" else "modified", obj)
                if version:
                    self.checkpoint = version  # only after the event was handed over
        except ValueError:
            raise _Transient("the watch sent a line that is not JSON") from None
        except (urllib3.exceptions.HTTPError, OSError):
            pass  # the connection dropped (or was closed): resume from the checkpoint, or stop
        finally:
            self._response = None
            response.release_conn()
        return delivered

    def _selectors(self) -> list[tuple[str, str]]:
        query = []
        if self.scope.label_selector:
            query.append(("labelSelector", self.scope.label_selector))
        if self.scope.name:
            query.append(("fieldSelector", f"metadata.name={self.scope.name}"))
        return query

    def _request(self, query: list[tuple[str, str]], timeout: tuple[float, float]) -> urllib3.BaseHTTPResponse:
        path = collection_path(replace(self.scope, name="", label_selector=""))
        try:
            method, url, headers, _, _ = self.api.param_serialize(
                "GET",
                path,
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response: urllib3.BaseHTTPResponse = self.api.call_api(
                method, url, header_params=headers, _request_timeout=timeout
            ).response
        except ApiException as exc:
            raise _Transient(f"request failed ({exc.status})") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _Transient(type(exc).__name__) from None
        if 200 <= response.status <= 299:
            return response
        status = response.status
        try:
            response.read()
        except (urllib3.exceptions.HTTPError, OSError):
            pass
        response.release_conn()
        if status == 410:
            raise _Expired()
        if status in TRANSIENT or status >= 500:
            raise _Transient(f"HTTP {status}")
        if status == 401:
            raise _Terminal("UNAUTHENTICATED", "the Kubernetes API server did not accept the credentials")
        if status == 403:
            raise _Terminal("FORBIDDEN", "access to this collection was refused")
        raise _Terminal("INTERNAL", f"the Kubernetes API server refused the request (HTTP {status})")

    def _json(self, response: urllib3.BaseHTTPResponse) -> Mapping[str, Any]:
        try:
            body = json.loads(response.data)
        except ValueError:
            raise _Transient("the LIST answer is not JSON") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _Transient(type(exc).__name__) from None
        finally:
            response.release_conn()
        if not isinstance(body, Mapping):
            raise _Transient("the LIST answer is not an object")
        return body


def _uid(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
    return uid if isinstance(uid, str) else ""


def _resource_version(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
    return version if isinstance(version, str) else ""


def _identity(obj: Mapping[str, Any], uid: str) -> Identity:
    metadata = obj.get("metadata") or {}
    return Identity(
        uid=uid,
        api_version=str(obj.get("apiVersion") or ""),
        kind=str(obj.get("kind") or ""),
        name=str(metadata.get("name") or ""),
        namespace=metadata.get("namespace") or None,
    )
