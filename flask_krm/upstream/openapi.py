"""The kinds' schemas each target's API server publishes (OpenAPI v3), read once per document.

kube-apiserver's ``/openapi/v3`` index maps every group version to its document's URL, which
carries the document's hash (``/openapi/v3/apis/apps/v1?hash=<ETag>``): a URL names one content
for good. :class:`OpenApiSchemas` reads the index of a target at most every ``index_lifetime``
seconds and each group version's document once per URL, through the target's official
``ApiClient`` (its authentication and TLS), and keeps the kinds' schemas
(:func:`flask_krm.kube_schema.kind_schemas`) per target and URL; a read of a document already
held sends ``If-None-Match`` with its ETag. One greenlet reads a target at a time; the others wait
for its answer. A failed read (no index entry, a refusal, a network error, a document that is not
JSON) is logged once with its reason, answered with no schemas (editors then use their built-in
widgets) and retried after ``retry_after`` seconds.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import typing as t
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from ..kube_schema import KindKey, SchemaView, group_version_path, kind_schemas

log = logging.getLogger("flask_krm")

INDEX_PATH: t.Final = "/openapi/v3"
INDEX_LIFETIME: t.Final = 300.0
"""Seconds an index is used before it is read again (a new CRD version shows up this late at most)."""
RETRY_AFTER: t.Final = 30.0
"""Seconds after a failed read before a target's group version is asked for again."""
TIMEOUT: t.Final = (5.0, 20.0)
"""Connect and read timeouts of one document read."""


class SchemaUnavailable(Exception):
    """Why a group version's schemas could not be read (the reason, in words)."""


@dataclass
class _Document:
    etag: str
    kinds: dict[KindKey, SchemaView]


@dataclass
class _Target:
    lock: threading.Lock = field(default_factory=threading.Lock)
    index: dict[str, str] = field(default_factory=dict)
    index_read: float | None = None
    documents: dict[str, _Document] = field(default_factory=dict)
    """By group version path: the document last read and its ETag."""
    urls: dict[str, str] = field(default_factory=dict)
    """By group version path: the URL ``documents`` was read from."""
    failed: dict[str, float] = field(default_factory=dict)
    """By group version path: when its last read failed."""


class OpenApiSchemas:
    """Per target, the schemas of the kinds of each group version, by ``(apiVersion, kind)``."""

    def __init__(
        self,
        *,
        index_lifetime: float = INDEX_LIFETIME,
        retry_after: float = RETRY_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.index_lifetime = index_lifetime
        self.retry_after = retry_after
        self.clock = clock
        self.reads = 0
        """Documents read from API servers (the index included), for tests and metrics."""
        self._targets: dict[str, _Target] = {}
        self._lock = threading.Lock()

    def kinds(self, target: str, api: ApiClient, group: str, version: str) -> Mapping[KindKey, SchemaView]:
        """The schemas of ``group``/``version``'s kinds on ``target`` (empty when they cannot be
        read now; the reason is logged once per failure)."""
        with self._lock:
            held = self._targets.setdefault(target, _Target())
        path = group_version_path(group, version)
        with held.lock:
            failed = held.failed.get(path)
            if failed is not None and self.clock() - failed < self.retry_after:
                document = held.documents.get(path)
                return document.kinds if document is not None else {}
            try:
                return self._read(held, api, path)
            except SchemaUnavailable as reason:
                held.failed[path] = self.clock()
                log.warning(
                    "the OpenAPI v3 schema of %s on target %s cannot be read (%s); its editors show built-in widgets",
                    path,
                    target,
                    reason,
                )
                document = held.documents.get(path)
                return document.kinds if document is not None else {}

    def _read(self, held: _Target, api: ApiClient, path: str) -> Mapping[KindKey, SchemaView]:
        now = self.clock()
        if held.index_read is None or now - held.index_read >= self.index_lifetime or path not in held.index:
            status, data, _ = self._get(api, INDEX_PATH)
            if status != 200:
                raise SchemaUnavailable(f"GET {INDEX_PATH} answered {status}")
            held.index = _index(data)
            held.index_read = now
        url = held.index.get(path)
        if url is None:
            raise SchemaUnavailable(f"the server's {INDEX_PATH} index has no {path}")
        document = held.documents.get(path)
        if document is not None and held.urls.get(path) == url:
            held.failed.pop(path, None)
            return document.kinds
        status, data, etag = self._get(api, url, etag=document.etag if document is not None else None)
        if status == 304 and document is not None:
            kinds = document.kinds
        elif status == 200:
            try:
                parsed = json.loads(data)
            except ValueError:
                raise SchemaUnavailable(f"the document at {url} is not JSON") from None
            if not isinstance(parsed, Mapping):
                raise SchemaUnavailable(f"the document at {url} is not an object")
            group, _, version = path.removeprefix("apis/").removeprefix("api/").rpartition("/")
            kinds = kind_schemas(parsed, group, version)
        else:
            raise SchemaUnavailable(f"GET {url} answered {status}")
        held.documents[path] = _Document(etag, kinds)
        held.urls[path] = url
        held.failed.pop(path, None)
        return kinds

    def _get(self, api: ApiClient, url: str, etag: str | None = None) -> tuple[int, bytes, str]:
        """``(status, body, ETag)`` of ``GET url`` (a path with its query) through ``api``."""
        parts = urlsplit(url)
        headers = {"Accept": "application/json"}
        if etag:
            headers["If-None-Match"] = etag
        self.reads += 1
        try:
            method, full, headers, _, _ = api.param_serialize(
                "GET",
                parts.path,
                query_params=parse_qsl(parts.query),
                header_params=headers,
                auth_settings=["BearerToken"],
            )
            response = api.call_api(method, full, header_params=headers, _request_timeout=TIMEOUT)
            data: bytes = response.read()  # type: ignore[no-untyped-call]
        except ApiException as exc:  # the client's wrapping of TLS failures
            raise SchemaUnavailable(f"request failed: {exc.reason}") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise SchemaUnavailable(f"request failed: {type(exc).__name__}") from None
        return response.status, data, str(response.response.headers.get("ETag") or "")


def _index(data: bytes) -> dict[str, str]:
    """The group version paths of an ``/openapi/v3`` index and their documents' URLs."""
    try:
        parsed = json.loads(data)
    except ValueError:
        raise SchemaUnavailable(f"the {INDEX_PATH} index is not JSON") from None
    paths = parsed.get("paths") if isinstance(parsed, Mapping) else None
    if not isinstance(paths, Mapping):
        raise SchemaUnavailable(f"the {INDEX_PATH} index has no paths")
    found: dict[str, str] = {}
    for path, entry in paths.items():
        url = entry.get("serverRelativeURL") if isinstance(entry, Mapping) else None
        if isinstance(path, str) and isinstance(url, str) and url.startswith(INDEX_PATH + "/"):
            found[path] = url
    return found


__all__ = ["OpenApiSchemas", "SchemaUnavailable"]
