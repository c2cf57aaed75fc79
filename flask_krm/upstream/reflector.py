"""The raw Kubernetes watch: one scope's LIST/WATCH cycles as source operations.

:class:`Reflector` talks to the API server through the official client's raw layer (untouched
JSON, ``_preload_content``-style streaming, its own line reader, explicit connect and read
timeouts) and yields :mod:`flask_krm.ops` values. It blocks on sockets, so it runs in a gevent
greenlet of a monkey-patched process; kill the greenlet to stop it (the open response is closed).

A cycle starts with a streaming list (``sendInitialEvents=true``, ``resourceVersionMatch=
NotOlderThan``, ending at the ``k8s.io/initial-events-end`` bookmark). A server that refuses
streaming lists (a 400, 403 or 422 naming ``sendInitialEvents``) gets LIST then WATCH from the
list's resourceVersion instead, and that refusal is remembered per target and group/version.

What it yields:

- ``Snapshot`` once the cycle's watch is open; every later cycle is preceded by ``ContinuityLost``.
- ``Change`` per live event and ``Bookmark`` per routine bookmark.
- A dropped or routinely closed watch is resumed from the last resourceVersion without a new
  cycle; an expired one (410), a watch ``ERROR``, a metadata-only object or a delete without a uid
  start a new cycle.
- Connection failures and transient server errors (429, 5xx) yield one non-terminal
  ``Failure(UPSTREAM_UNAVAILABLE)`` per outage, then retry with bounded, jittered exponential
  backoff; recovery is always a new cycle.
- 401 and 403 end it with a terminal ``UNAUTHENTICATED`` or ``FORBIDDEN``; any other refusal with a
  terminal ``INTERNAL``. Nothing follows a terminal ``Failure``.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from .. import concurrency
from ..events import ErrorCode
from ..ops import Bookmark, Change, ContinuityLost, Failure, Snapshot, SourceOp
from ..scope import Scope

INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"
PARTIAL_KINDS: Final = frozenset({"PartialObjectMetadata", "PartialObjectMetadataList"})
TRANSIENT_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})
UNAVAILABLE_MESSAGE: Final = "the Kubernetes API server is unavailable; retrying"
QUICK_CLOSE_SECONDS: Final = 1.0
"""A watch that ends sooner than this without any event is resumed only after a backoff pause."""

Sleep = Callable[[float], None]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Bounded, jittered exponential backoff: attempt ``n`` waits about ``initial * factor**n``
    (at most ``maximum``), scaled by a random factor in ``[1 - jitter, 1]``."""

    initial: float = 0.5
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.5

    def delay(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        base = min(self.maximum, self.initial * self.factor ** min(attempt, 64))
        return base * (1.0 - self.jitter * rng())


@dataclass(frozen=True, slots=True)
class WatchSettings:
    """Timeouts and sizes of one reflector.

    ``watch_seconds`` is the server-side ``timeoutSeconds`` of a watch request, spread over
    ``[watch_seconds, 2 * watch_seconds)`` so many watches do not reopen together; ``read_timeout``
    is the client-side limit on silence from the server (default: the watch timeout plus 30 s,
    ``2 * watch_seconds + 30``). ``page_size`` pages a plain LIST.
    """

    connect_timeout: float = 10.0
    read_timeout: float | None = None
    watch_seconds: int = 300
    page_size: int = 500
    backoff: Backoff = field(default_factory=Backoff)

    def watch_timeout(self, rng: Callable[[], float] = random.random) -> int:
        return int(self.watch_seconds * (1.0 + rng()))

    def request_timeout(self, watch_timeout: int) -> tuple[float, float]:
        read = self.read_timeout if self.read_timeout is not None else watch_timeout + 30.0
        return (self.connect_timeout, read)


class StreamingListMemory:
    """Which (target, group/version) pairs refused a streaming list; later cycles skip the probe."""

    def __init__(self) -> None:
        self._refused: set[tuple[str, str]] = set()

    def refuses(self, key: tuple[str, str]) -> bool:
        return key in self._refused

    def remember_refusal(self, key: tuple[str, str]) -> None:
        self._refused.add(key)


def collection_path(scope: Scope) -> str:
    """The scope's collection URL path (cluster-level when it has no namespace)."""
    root = f"/apis/{scope.group}/{scope.version}" if scope.group else f"/api/{scope.version}"
    if scope.namespace:
        root += f"/namespaces/{scope.namespace}"
    return f"{root}/{scope.resource}"


def _selectors(scope: Scope) -> list[tuple[str, str]]:
    query = []
    if scope.label_selector:
        query.append(("labelSelector", scope.label_selector))
    if scope.name:
        query.append(("fieldSelector", f"metadata.name={scope.name}"))
    return query


# --------------------------------------------------------------------------- cycle outcomes --


class _Restart(Exception):
    """Start a new cycle (after ``delay`` seconds) without telling subscribers of an outage."""

    def __init__(self, reason: str, *, backoff: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.backoff = backoff


class _Unavailable(Exception):
    """The API server could not be reached or answered with a transient error."""

    def __init__(self, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


class _Refused(Exception):
    """A terminal answer: nothing retrying could change."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _HttpStatus(Exception):
    """A non-2xx answer to a request, with its Kubernetes ``Status`` body when it had one."""

    def __init__(self, status: int, body: Mapping[str, Any], retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.retry_after = retry_after


def _mentions_send_initial_events(body: Mapping[str, Any]) -> bool:
    texts = [str(body.get("message", ""))]
    details = body.get("details")
    if isinstance(details, Mapping):
        for cause in details.get("causes") or ():
            if isinstance(cause, Mapping):
                texts += [str(cause.get("field", "")), str(cause.get("message", ""))]
    return any("sendInitialEvents" in text for text in texts)


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


# ------------------------------------------------------------------------------ line reader --


def iter_json_lines(response: urllib3.BaseHTTPResponse, chunk_size: int = 65536) -> Iterator[Any]:
    """Decode a newline-delimited JSON body as it arrives, one value per non-empty line.

    Reads whatever the socket has (``read1``), so an event is handed over as soon as its line is
    complete. Raises ``ValueError`` on a line that is not JSON.
    """
    pending = b""
    while True:
        data = response.read1(chunk_size)
        if not data:
            break
        pending += data
        if b"\n" not in data:
            continue
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)
    if pending.strip():
        yield json.loads(pending)


def _close(response: urllib3.BaseHTTPResponse) -> None:
    response.close()
    response.release_conn()


@dataclass(slots=True)
class _OpenWatch:
    """An open watch response and the JSON-line iterator reading it (possibly partly read)."""

    response: urllib3.BaseHTTPResponse
    lines: Iterator[Any]

    @classmethod
    def of(cls, response: urllib3.BaseHTTPResponse) -> _OpenWatch:
        return cls(response, iter_json_lines(response))


# -------------------------------------------------------------------------------- reflector --


class Reflector:
    """LIST/WATCH cycles of one scope through one ``ApiClient``; iterate :meth:`ops`.

    :param api: the client to act with (the target's own, or an impersonating view of it).
    :param scope: what to watch; its ``target`` keys the streaming-list memory.
    :param streaming_lists: shared memory of servers that refused streaming lists.
    """

    def __init__(
        self,
        api: ApiClient,
        scope: Scope,
        *,
        streaming_lists: StreamingListMemory | None = None,
        settings: WatchSettings | None = None,
        sleep: Sleep = concurrency.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._api = api
        self._scope = scope
        self._path = collection_path(scope)
        self._memory = streaming_lists if streaming_lists is not None else StreamingListMemory()
        self._memory_key = (scope.target, scope.api_version)
        self._settings = settings or WatchSettings()
        self._sleep = sleep
        self._rng = rng
        self._attempt = 0
        self.resource_version = ""
        """The last resourceVersion seen (a list, an event or a bookmark): where a resume starts."""

    # -- the loop --------------------------------------------------------------------------

    def ops(self) -> Generator[SourceOp, None, None]:
        """Source operations for as long as the watch lasts (forever, unless terminal)."""
        delivered = False  # a Snapshot was yielded: later cycles begin with ContinuityLost
        outage = False  # a Failure was yielded for the current outage
        reason = ""  # why the next cycle is needed
        failed_opens = 0  # cycles that failed to open since the last Snapshot
        while True:
            watch: _OpenWatch | None = None
            try:
                try:
                    objects, watch = self._open_cycle()
                    if delivered:
                        yield ContinuityLost(reason or "a new snapshot cycle")
                    yield Snapshot(objects)
                    delivered, outage, reason, failed_opens = True, False, "", 0
                    self._attempt = 0
                    yield from self._live(watch)
                finally:
                    if watch is not None:
                        _close(watch.response)
            except _Restart as restart:
                reason = reason or restart.reason
                self._pause(restart.backoff or failed_opens > 0)
                failed_opens += 1
            except _Unavailable as unavailable:
                reason = reason or "the API server was unavailable"
                if not outage:
                    outage = True
                    yield Failure("UPSTREAM_UNAVAILABLE", UNAVAILABLE_MESSAGE, terminal=False)
                self._pause(True, unavailable.retry_after)
                failed_opens += 1
            except _Refused as refused:
                yield Failure(refused.code, refused.message, terminal=True)
                return

    def _pause(self, backoff: bool, at_least: float | None = None) -> None:
        if not backoff:
            return
        delay = self._settings.backoff.delay(self._attempt, self._rng)
        self._attempt += 1
        if at_least is not None:
            delay = max(delay, min(at_least, self._settings.backoff.maximum))
        self._sleep(delay)

    # -- cycles ----------------------------------------------------------------------------

    def _open_cycle(self) -> tuple[list[Mapping[str, Any]], _OpenWatch]:
        """The members of a new cycle and the open watch that continues it."""
        if not self._memory.refuses(self._memory_key):
            try:
                return self._streaming_list()
            except _HttpStatus as refusal:
                if refusal.status not in (400, 403, 422) or not _mentions_send_initial_events(refusal.body):
                    raise self._classify(refusal) from None
                self._memory.remember_refusal(self._memory_key)
        return self._list_then_watch()

    def _streaming_list(self) -> tuple[list[Mapping[str, Any]], _OpenWatch]:
        query = [
            ("watch", "true"),
            ("sendInitialEvents", "true"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("allowWatchBookmarks", "true"),
            *_selectors(self._scope),
        ]
        watch = _OpenWatch.of(self._watch_request(query))
        members: dict[str, Mapping[str, Any]] = {}
        try:
            for kind, obj in self._events(watch.lines):
                if kind == "BOOKMARK":
                    annotations = (obj.get("metadata") or {}).get("annotations") or {}
                    if annotations.get(INITIAL_EVENTS_END) == "true":
                        self.resource_version = _resource_version(obj) or self.resource_version
                        return list(members.values()), watch
                    continue
                uid = _guard(kind, obj)
                if kind == "DELETED":
                    members.pop(uid, None)
                else:
                    members[uid] = obj
        except BaseException:
            _close(watch.response)
            raise
        _close(watch.response)
        raise _Restart("the watch ended before its initial events did", backoff=True)

    def _list_then_watch(self) -> tuple[list[Mapping[str, Any]], _OpenWatch]:
        items: list[Mapping[str, Any]] = []
        continue_token = ""
        while True:
            query = [*_selectors(self._scope), ("limit", str(self._settings.page_size))]
            if continue_token:
                query.append(("continue", continue_token))
            try:
                page = self._get_json(query)
            except _HttpStatus as refusal:
                raise self._classify(refusal) from None
            items += _with_kind(page)
            meta = page.get("metadata") or {}
            continue_token = meta.get("continue") or ""
            if not continue_token:
                break
        self.resource_version = str(meta.get("resourceVersion") or "")
        for obj in items:
            _guard("ADDED", obj)
        return items, self._open_watch()

    def _open_watch(self) -> _OpenWatch:
        """A plain WATCH from :attr:`resource_version` (after a LIST, or to resume)."""
        if not self.resource_version:
            raise _Restart("no resourceVersion to resume from", backoff=False)
        query = [
            ("watch", "true"),
            ("resourceVersion", self.resource_version),
            ("allowWatchBookmarks", "true"),
            *_selectors(self._scope),
        ]
        try:
            return _OpenWatch.of(self._watch_request(query))
        except _HttpStatus as refusal:
            raise self._classify(refusal) from None

    # -- the live phase --------------------------------------------------------------------

    def _live(self, watch: _OpenWatch) -> Iterator[SourceOp]:
        """Live events until continuity is lost; dropped or closed watches are resumed."""
        while True:
            delivered = False
            opened = time.monotonic()
            try:
                for kind, obj in self._events(watch.lines):
                    delivered = True
                    rv = _resource_version(obj)
                    if kind == "BOOKMARK":
                        if rv:
                            self.resource_version = rv
                            yield Bookmark(rv)
                        continue
                    _guard(kind, obj)
                    if rv:
                        self.resource_version = rv
                    yield Change(kind, obj)  # type: ignore[arg-type]
            except _Unavailable:
                pass  # the connection dropped mid-stream: resume below
            finally:
                _close(watch.response)
            if delivered or time.monotonic() - opened >= QUICK_CLOSE_SECONDS:
                self._attempt = 0
            else:
                self._pause(True)  # closed at once with nothing to say: do not spin
            watch = self._open_watch()

    def _events(self, lines: Iterator[Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """``(type, object)`` per watch event; ERROR events and undecodable input end the cycle."""
        try:
            for event in lines:
                if not isinstance(event, Mapping):
                    raise _Refused("INTERNAL", f"the watch of {self._path} sent a non-object event")
                kind = event.get("type")
                obj = event.get("object")
                if kind == "ERROR":
                    raise _watch_error(obj)
                if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK") or not isinstance(obj, Mapping):
                    raise _Refused("INTERNAL", f"the watch of {self._path} sent an event of unknown type {kind!r}")
                yield kind, obj
        except ValueError:
            raise _Restart("the watch sent a line that is not JSON", backoff=True) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _Unavailable(type(exc).__name__) from None

    # -- requests --------------------------------------------------------------------------

    def _request(self, query: list[tuple[str, str]], timeout: tuple[float, float]) -> urllib3.BaseHTTPResponse:
        method, url, headers, _, _ = self._api.param_serialize(
            "GET",
            self._path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        try:
            response: urllib3.BaseHTTPResponse = self._api.call_api(
                method, url, header_params=headers, _request_timeout=timeout
            ).response
        except ApiException as exc:  # the client's own wrapping of TLS failures (status 0)
            raise _Unavailable(f"request failed: {exc.reason}") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _Unavailable(type(exc).__name__) from None
        if not 200 <= response.status <= 299:
            try:
                data = response.data
            except (urllib3.exceptions.HTTPError, OSError):
                data = b""
            finally:
                _close(response)
            try:
                body = json.loads(data) if data else {}
            except ValueError:
                body = {}
            raise _HttpStatus(
                response.status, body if isinstance(body, Mapping) else {}, _retry_after(response.headers)
            )
        return response

    def _watch_request(self, query: list[tuple[str, str]]) -> urllib3.BaseHTTPResponse:
        seconds = self._settings.watch_timeout(self._rng)
        query = [*query, ("timeoutSeconds", str(seconds))]
        return self._request(query, self._settings.request_timeout(seconds))

    def _get_json(self, query: list[tuple[str, str]]) -> Mapping[str, Any]:
        response = self._request(query, self._settings.request_timeout(self._settings.watch_seconds))
        try:
            body = json.loads(response.data)
        except ValueError:
            raise _Restart("a LIST answer was not JSON", backoff=True) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _Unavailable(type(exc).__name__) from None
        finally:
            _close(response)
        if not isinstance(body, Mapping):
            raise _Restart("a LIST answer was not an object", backoff=True)
        return body

    def _classify(self, refusal: _HttpStatus) -> Exception:
        status = refusal.status
        if status == 410:
            return _Restart("the resourceVersion expired", backoff=False)
        if status in TRANSIENT_STATUSES or status >= 500:
            return _Unavailable(f"HTTP {status}", refusal.retry_after)
        if status == 401:
            return _Refused("UNAUTHENTICATED", "the Kubernetes API server did not accept the credentials")
        reason = str(refusal.body.get("message") or f"HTTP {status}")
        if status == 403:
            return _Refused("FORBIDDEN", f"access to {self._path} was refused: {reason}")
        return _Refused("INTERNAL", f"the Kubernetes API server refused to watch {self._path}: {reason}")


def _resource_version(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def _guard(kind: str, obj: Mapping[str, Any]) -> str:
    """The object's uid; a metadata-only object or a uid-less one starts a new cycle instead."""
    meta = obj.get("metadata")
    uid = meta.get("uid") if isinstance(meta, Mapping) else None
    if not uid:
        what = "a delete" if kind == "DELETED" else "an object"
        raise _Restart(f"the watch delivered {what} without a uid", backoff=False)
    if kind != "DELETED" and obj.get("kind") in PARTIAL_KINDS:
        raise _Restart("the watch delivered a metadata-only object", backoff=False)
    return str(uid)


def _watch_error(status: Any) -> Exception:
    if isinstance(status, Mapping) and (status.get("code") == 410 or status.get("reason") in ("Expired", "Gone")):
        return _Restart("the resourceVersion expired", backoff=False)
    return _Restart("the watch reported an error", backoff=True)


def _with_kind(page: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The page's items with ``kind`` and ``apiVersion`` filled in from the list where missing."""
    list_kind = str(page.get("kind") or "")
    kind = list_kind[: -len("List")] if list_kind.endswith("List") else ""
    api_version = str(page.get("apiVersion") or "")
    items = []
    for item in page.get("items") or ():
        if not isinstance(item, Mapping):
            raise _Restart("a LIST item was not an object", backoff=True)
        if (kind and "kind" not in item) or (api_version and "apiVersion" not in item):
            item = {"apiVersion": api_version, "kind": kind, **item}
        items.append(item)
    return items
