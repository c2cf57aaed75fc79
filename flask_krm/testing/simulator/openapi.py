"""``/openapi/v3``: the OpenAPI v3 discovery document and one document per served group version.

Served as kube-apiserver serves them: the discovery document maps each path (``api/v1``,
``apis/apps/v1``, ``apis/apps``, ``version``, ...) to ``/openapi/v3/<path>?hash=<ETag>``, where the
ETag is the upper-case hex SHA-512 of the document's bytes; the discovery document itself goes out
as ``text/plain`` without an ETag, as the real server sends it. A path's document is JSON with
``Vary: Accept`` and its quoted ``Etag``; with the right ``hash`` it is cacheable for a year
(``Cache-Control: public, immutable``), with a stale one it is a 301 to the current URL, and a
matching ``If-None-Match`` is answered 304 (Go's ``http.ServeContent``); an unknown path is an empty 404. The built-in documents
are the pinned release's, cut to what the simulator serves (``openapi_v3.json``, written by
``scripts/simulator-schemas``); a custom resource's is built from its CRD (``crd_openapi``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import dataclass
from email.utils import formatdate
from importlib import resources
from typing import Any

from .catalog import CUSTOM_RESOURCE_DEFINITIONS_SERVED
from .crd_openapi import crd_document

PREFIX = "/openapi/v3"


@dataclass(frozen=True)
class Document:
    """One served document: its bytes and ETag."""

    data: bytes
    etag: str

    @classmethod
    def of(cls, document: Any) -> Document:
        data = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
        return cls(data, hashlib.sha512(data).hexdigest().upper())


@functools.cache
def _built_in() -> dict[str, Any]:
    bundle = json.loads(resources.files(__package__).joinpath("openapi_v3.json").read_text())
    documents = bundle["documents"]
    assert isinstance(documents, dict)
    return documents


@functools.cache
def documents() -> dict[str, Document]:
    """Every served group version's document, by its path (``api/v1``, ``apis/<group>/<version>``)."""
    served = {path: Document.of(document) for path, document in _built_in().items()}
    for resource, definition in CUSTOM_RESOURCE_DEFINITIONS_SERVED.items():
        served[f"apis/{resource.group}/{resource.version}"] = Document.of(crd_document(definition, resource.version))
    return served


@functools.cache
def discovery() -> Document:
    """The ``/openapi/v3`` document (keys sorted, as Go marshals a map)."""
    paths = {
        path: {"serverRelativeURL": f"{PREFIX}/{path}?hash={document.etag}"}
        for path, document in sorted(documents().items())
    }
    return Document.of({"paths": paths})


@dataclass(frozen=True)
class Reply:
    """What to send: status, headers and body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


NO_CACHE = "no-cache, private"
"""kube-apiserver's default ``Cache-Control`` (``WithCacheControl``)."""
STARTED = formatdate(usegmt=True)
"""``Last-Modified`` of every document: when the simulator's documents were built (its start)."""


def serve(path: str, query: dict[str, str], accept: str, if_none_match: str) -> Reply | None:
    """The reply to ``GET path`` below ``/openapi/v3``; ``None`` when ``path`` is not there."""
    if path == PREFIX:
        # kube-apiserver serves the discovery document without a type (Go sniffs text) and without an ETag
        headers = [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", NO_CACHE)]
        return Reply(200, headers + [("Last-Modified", STARTED), ("Accept-Ranges", "bytes")], discovery().data)
    if not path.startswith(PREFIX + "/"):
        return None
    group_version = path[len(PREFIX) + 1 :]
    document = documents().get(group_version)
    if document is None:
        return Reply(404, [("Cache-Control", NO_CACHE)], b"")
    headers = [("Vary", "Accept")]
    if not _accepts_json(accept or "*/*"):
        return Reply(406, headers + [("Cache-Control", NO_CACHE)], b"")
    headers += [("Content-Type", "application/json"), ("Etag", json.dumps(document.etag))]
    wanted = query.get("hash", "")
    if wanted and wanted != document.etag:
        # http.Redirect after the Content-Type was set: no HTML body
        location = f"{PREFIX}/{group_version}?hash={document.etag}"
        return Reply(301, headers + [("Cache-Control", NO_CACHE), ("Location", location)], b"")
    if wanted:
        headers += [("Cache-Control", "public, immutable"), ("Expires", _a_year_from_now())]
    else:
        headers += [("Cache-Control", NO_CACHE)]
    headers += [("Last-Modified", STARTED)]
    if _matches(if_none_match, json.dumps(document.etag)):
        # writeNotModified: no Content-Type, and no Last-Modified beside an ETag
        return Reply(304, [header for header in headers if header[0] not in ("Content-Type", "Last-Modified")], b"")
    return Reply(200, headers + [("Accept-Ranges", "bytes")], document.data)


def _matches(if_none_match: str, etag: str) -> bool:
    """``http.ServeContent``'s weak comparison of ``If-None-Match`` with the ETag."""
    for candidate in (part.strip() for part in if_none_match.split(",")):
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


def _accepts_json(accept: str) -> bool:
    for clause in accept.split(","):
        media = clause.split(";")[0].strip()
        if media in ("*/*", "application/*", "application/json"):
            return True
    return False


def _a_year_from_now() -> str:
    """``time.Now().AddDate(1, 0, 0).Format(time.RFC1123)`` (the server's zone is UTC)."""
    later = time.gmtime(time.time() + 365 * 86400)
    return time.strftime("%a, %d %b %Y %H:%M:%S UTC", later)
