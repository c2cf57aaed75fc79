"""``/openapi/v3``: the OpenAPI v3 discovery document and one document per served group version.

Served as kube-openapi's ``handler3`` serves them: the discovery document maps each group version
(``api/v1``, ``apis/apps/v1``, ...) to ``/openapi/v3/<group version>?hash=<ETag>``, where the ETag
is the upper-case hex SHA-512 of the document's bytes. A group version's document is JSON with
``Vary: Accept`` and its quoted ``Etag``; with the right ``hash`` it is cacheable for a year
(``Cache-Control: public, immutable``), with a stale one it is a 301 to the current URL, and a
matching ``If-None-Match`` is answered 304 (Go's ``http.ServeContent``). The built-in documents
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


STARTED = formatdate(usegmt=True)
"""``Last-Modified`` of every document: when the simulator's documents were built (its start)."""


def serve(path: str, query: dict[str, str], accept: str, if_none_match: str) -> Reply | None:
    """The reply to ``GET path`` below ``/openapi/v3``; ``None`` when ``path`` is not there."""
    if path == PREFIX:
        return _content(discovery(), [], if_none_match)
    if not path.startswith(PREFIX + "/"):
        return None
    group_version = path[len(PREFIX) + 1 :]
    headers = [("Vary", "Accept")]
    if not _accepts_json(accept or "*/*"):
        return Reply(406, headers, b"")
    document = documents().get(group_version)
    if document is None:
        return Reply(200, headers, b"")  # handler3 writes nothing for an unknown group version
    headers += [("Content-Type", "application/json"), ("Etag", json.dumps(document.etag))]
    wanted = query.get("hash", "")
    if wanted and wanted != document.etag:
        location = f"{PREFIX}/{group_version}?hash={document.etag}"
        body = f'<a href="{location}">Moved Permanently</a>.\n\n'.encode()
        moved = [("Location", location), ("Content-Type", "text/html; charset=utf-8")]
        return Reply(301, [header for header in headers if header[0] != "Content-Type"] + moved, body)
    if wanted:
        headers += [("Cache-Control", "public, immutable"), ("Expires", _a_year_from_now())]
    return _content(document, headers, if_none_match)


def _content(document: Document, headers: list[tuple[str, str]], if_none_match: str) -> Reply:
    if not any(name == "Content-Type" for name, _ in headers):
        headers = headers + [("Content-Type", "application/json"), ("Etag", json.dumps(document.etag))]
    headers = headers + [("Last-Modified", STARTED)]
    if _matches(if_none_match, json.dumps(document.etag)):
        return Reply(304, [header for header in headers if header[0] not in ("Content-Type",)], b"")
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
