"""Official-client helpers for the contract scenarios: raw requests, watch streams, Status bodies."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import kubernetes.client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines
from urllib3._collections import HTTPHeaderDict

MERGE_PATCH = "application/merge-patch+json"


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def status_of(error: ApiException) -> dict[str, Any]:
    """The ``Status`` object an API error carried."""
    body = json.loads(error.body)
    assert isinstance(body, dict)
    return body


@dataclass(frozen=True)
class Reply:
    """A raw response: HTTP status, body (decoded when JSON, else ``None``), headers and the body's bytes."""

    status: int
    body: Any
    headers: Any
    data: bytes = b""


def request(
    api: kubernetes.client.ApiClient,
    method: str,
    path: str,
    *,
    query: Iterable[tuple[str, Any]] = (),
    body: Any = None,
    content_type: str = "application/json",
    headers: Iterable[tuple[str, str]] = (),
    timeout: float = 10.0,
    accept: str = "application/json",
) -> Reply:
    """One request through ``ApiClient.call_api``; never raises for HTTP errors. ``headers`` may repeat a name."""
    header_params = {"Accept": accept}
    if body is not None:
        header_params["Content-Type"] = content_type
    method, url, serialized_headers, serialized_body, _ = api.param_serialize(
        method, path, query_params=list(query), header_params=header_params, body=body, auth_settings=["BearerToken"]
    )
    all_headers = HTTPHeaderDict()
    for name, value in list(serialized_headers.items()) + list(headers):
        all_headers.add(name, value)
    response = api.call_api(method, url, header_params=all_headers, body=serialized_body, _request_timeout=timeout)
    response.read()
    data = bytes(response.data or b"")
    is_json = response.headers.get("Content-Type", "").startswith("application/json")
    return Reply(response.status, json.loads(data) if data and is_json else None, response.headers, data)


class WatchStream:
    """The events of an open watch, read line by line from the raw response."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self._lines = iter_resp_lines(response)

    def next(self) -> dict[str, Any]:
        """The next event (the read fails with a timeout if none arrives)."""
        for line in self._lines:
            if line:
                event = json.loads(line)
                assert isinstance(event, dict)
                return event
        raise AssertionError("the watch ended")

    def take(self, count: int) -> list[dict[str, Any]]:
        return [self.next() for _ in range(count)]

    def until(self, predicate: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Events up to and including the first one ``predicate`` accepts."""
        events = [self.next()]
        while not predicate(events[-1]):
            events.append(self.next())
        return events

    def rest(self) -> list[dict[str, Any]]:
        """Every remaining event until the server ends the stream."""
        return [json.loads(line) for line in self._lines if line]


@contextmanager
def watch(
    api: kubernetes.client.ApiClient,
    path: str,
    *,
    read_timeout: float = 10.0,
    headers: Iterable[tuple[str, str]] = (),
    accept: str = "application/json",
    **query: Any,
) -> Iterator[WatchStream]:
    """Open ``GET path?watch=1&...`` and yield its stream; 4xx/5xx at open raise ``ApiException``."""
    parameters = [("watch", "1")] + [(key, value) for key, value in query.items() if value is not None]
    method, url, serialized_headers, _, _ = api.param_serialize(
        "GET", path, query_params=parameters, header_params={"Accept": accept}, auth_settings=["BearerToken"]
    )
    all_headers = HTTPHeaderDict()
    for name, value in list(serialized_headers.items()) + list(headers):
        all_headers.add(name, value)
    response = api.call_api(method, url, header_params=all_headers, _request_timeout=(5.0, read_timeout))
    if not 200 <= response.status <= 299:
        response.read()
        ApiException.from_response(http_resp=response, body=None, data=None)
    try:
        yield WatchStream(response.response)
    finally:
        response.response.close()
        response.response.release_conn()


def wait_until(condition: Callable[[], bool], timeout: float = 10.0, interval: float = 0.05) -> None:
    """Poll ``condition`` until it holds (a real server applies RBAC changes asynchronously)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


def configmap(name: str, data: dict[str, str] | None = None, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}, "data": data or {}}
