"""A recording, fault-injecting HTTP proxy in front of the simulator (patched processes only).

It forwards every request to the simulator over HTTPS, verifying the simulator's certificate
against its CA, and streams the answer back line by line, recording
each request, and can refuse streaming lists the way an aggregated API server does, or rewrite
watch events on their way (to deliver what a conforming server never sends, such as a
metadata-only object).
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from gevent.pywsgi import WSGIServer

STREAMING_LIST_REFUSAL = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
    "reason": "Invalid",
    "details": {
        "group": "meta.k8s.io",
        "kind": "ListOptions",
        "causes": [
            {
                "reason": "FieldValueForbidden",
                "message": (
                    "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
                ),
                "field": "sendInitialEvents",
            }
        ],
    },
    "code": 422,
}

EventRewriter = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")

    @property
    def is_streaming_list(self) -> bool:
        return self.is_watch and self.query.get("sendInitialEvents") == "true"


class Proxy:
    """``with Proxy(upstream_url, upstream_ca_pem) as proxy:`` then point clients at ``proxy.url``."""

    def __init__(self, upstream: str, ca_pem: bytes) -> None:
        parts = urlsplit(upstream)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 443
        self._tls = ssl.create_default_context(cadata=ca_pem.decode("ascii"))
        self.requests: list[Request] = []
        self.refuse_streaming_lists = False
        self.rewrite: EventRewriter | None = None
        self._server = WSGIServer(("127.0.0.1", 0), self._app, log=None)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> Proxy:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop(timeout=1)

    def watches(self, path_fragment: str = "") -> list[Request]:
        return [r for r in self.requests if r.is_watch and path_fragment in r.path]

    def _app(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes] | list[bytes]:
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "/")
        raw_query = environ.get("QUERY_STRING", "")
        request = Request(method, path, dict(parse_qsl(raw_query, keep_blank_values=True)))
        self.requests.append(request)
        if self.refuse_streaming_lists and request.is_streaming_list:
            start_response("422 Unprocessable Entity", [("Content-Type", "application/json")])
            return [json.dumps(STREAMING_LIST_REFUSAL).encode()]
        headers = {
            key[5:].replace("_", "-").title(): value for key, value in environ.items() if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else None
        upstream = http.client.HTTPSConnection(self._host, self._port, timeout=600, context=self._tls)
        upstream.request(method, path + ("?" + raw_query if raw_query else ""), body=body, headers=headers)
        response = upstream.getresponse()
        passed = [(k, v) for k, v in response.getheaders() if k.lower() in ("content-type", "retry-after")]
        write = start_response(f"{response.status} {response.reason}", passed)
        if not request.is_watch or response.status != 200:
            data = response.read()
            upstream.close()
            return [data]
        write(b"")  # headers now: a watch answers before its first event
        return self._stream(upstream, response)

    def _stream(self, upstream: http.client.HTTPConnection, response: http.client.HTTPResponse) -> Iterator[bytes]:
        pending = b""
        try:
            while True:
                data = response.read1(65536)
                if not data:
                    return
                pending += data
                *lines, pending = pending.split(b"\n")
                out = []
                for line in lines:
                    if not line.strip():
                        continue
                    if self.rewrite is not None:
                        line = json.dumps(self.rewrite(json.loads(line))).encode()
                    out.append(line + b"\n")
                if out:
                    yield b"".join(out)
        finally:
            upstream.close()
