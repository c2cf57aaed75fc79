"""The native source's URLs and path parsing, and ``NativeWatch`` (LIST then WATCH) driven by
scripted API-server answers."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
import urllib3

from flask_krm.events import Deleted, Reset, StreamError, Synced, Upsert
from flask_krm.scope import Scope
from flask_krm.upstream.native import (
    NATIVE,
    ConnectionState,
    NativeItem,
    NativePathError,
    NativeWatch,
    StateChange,
    native_collection_url,
    native_object_url,
    parse_native_path,
)
from flask_krm.upstream.reflector import Backoff


def test_urls_and_paths() -> None:
    scope = Scope(version="v1", resource="configmaps", namespace="app", label_selector="tier=web")
    assert native_collection_url("/k8s", scope) == "/k8s/api/v1/namespaces/app/configmaps?labelSelector=tier%3Dweb"
    apps = Scope(group="apps", version="v1", resource="deployments", namespace="app")
    assert native_object_url("/k8s/", apps, "web") == "/k8s/apis/apps/v1/namespaces/app/deployments/web"
    assert parse_native_path("apis/apps/v1/namespaces/app/deployments/web", target="dev") == Scope(
        target="dev", group="apps", version="v1", resource="deployments", namespace="app", name="web"
    )
    for refused in (
        "api/v1/namespaces/app/pods/web/exec",
        "api",
        "version",
        "api/v1/namespaces/../secrets",
        "api/v1/namespaces/app/Pods",
    ):
        with pytest.raises(NativePathError):
            parse_native_path(refused, target="dev")


def test_a_path_parses_into_a_cluster_or_namespaced_collection_or_object() -> None:
    assert parse_native_path("/api/v1/namespaces/", target="dev") == Scope(
        target="dev", version="v1", resource="namespaces"
    )
    assert parse_native_path("api/v1/namespaces/app/configmaps", target="dev") == Scope(
        target="dev", version="v1", resource="configmaps", namespace="app"
    )
    assert parse_native_path("apis/rbac.authorization.k8s.io/v1/clusterroles/view", target="dev") == Scope(
        target="dev", group="rbac.authorization.k8s.io", version="v1", resource="clusterroles", name="view"
    )
    for refused in ("apis/apps/v1", "api/v1/namespaces/app//configmaps", "api/v1/./configmaps"):
        with pytest.raises(NativePathError):
            parse_native_path(refused, target="dev")


def test_trailing_slashes_name_the_same_collection_or_object_as_for_the_api_server() -> None:
    # kube-apiserver v1.37 answers GET .../configmaps/ with the list and .../configmaps/web// with the object
    assert parse_native_path("api/v1/namespaces/app/configmaps/", target="dev") == parse_native_path(
        "api/v1/namespaces/app/configmaps", target="dev"
    )
    assert parse_native_path("apis/apps/v1/namespaces/app/deployments/web//", target="dev") == Scope(
        target="dev", group="apps", version="v1", resource="deployments", namespace="app", name="web"
    )
    assert parse_native_path("api/v1/namespaces/app/", target="dev") == Scope(
        target="dev", version="v1", resource="namespaces", name="app"
    )


def test_namespaces_inside_a_namespace_are_refused_as_the_api_server_does() -> None:
    for refused in ("api/v1/namespaces/app/namespaces/other", "api/v1/namespaces/app/namespaces/"):
        with pytest.raises(NativePathError, match="no namespaces in namespace 'app'"):
            parse_native_path(refused, target="dev")


def test_an_object_url_drops_the_label_selector_and_a_cluster_collection_has_no_namespace() -> None:
    scope = Scope(version="v1", resource="configmaps", namespace="app", label_selector="tier=web")
    assert native_object_url("https://k8s", scope, "web") == "https://k8s/api/v1/namespaces/app/configmaps/web"
    nodes = Scope(version="v1", resource="nodes")
    assert native_collection_url("https://k8s/", nodes) == "https://k8s/api/v1/nodes"


# ---- NativeWatch against scripted answers ------------------------------------------------------


@dataclass
class Answer:
    """One scripted API-server answer: a status and a JSON body, or watch lines."""

    status: int = 200
    body: Any = None
    lines: Iterable[Any] = ()
    drop: bool = False
    """The connection drops after the lines."""

    released: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        chunks = [json.dumps(line).encode() + b"\n" for line in self.lines]
        self._chunks = chunks

    @property
    def data(self) -> bytes:
        return json.dumps(self.body).encode()

    def read(self) -> bytes:
        return self.data

    def read1(self, size: int) -> bytes:
        if self._chunks:
            return self._chunks.pop(0)
        if self.drop:
            raise urllib3.exceptions.ProtocolError("connection dropped")
        return b""

    def release_conn(self) -> None:
        self.released = True

    def shutdown(self) -> None:
        self._chunks = []


class ScriptedApi:
    """An ``ApiClient`` stand-in answering each GET with the next scripted answer; once they run
    out, every request is refused with 403 (a terminal end for the watch under test)."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.given: list[Answer] = []
        self.queries: list[dict[str, str]] = []

    def param_serialize(self, method: str, path: str, **options: Any) -> tuple[Any, ...]:
        assert method == "GET" and path == "/api/v1/namespaces/app/configmaps"
        self._last_query = options["query_params"]
        return method, path, options["header_params"], None, None

    def call_api(self, method: str, url: str, **options: Any) -> Any:
        self.queries.append(dict(self._last_query))
        answer = self.answers.pop(0) if self.answers else Answer(403, {})
        self.given.append(answer)
        return type("Call", (), {"response": answer})()


SCOPE = Scope(target="dev", version="v1", resource="configmaps", namespace="app")


def cm(name: str, rv: str, uid: str | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "app", "uid": uid or f"uid-{name}", "resourceVersion": rv}}


def listed(*items: dict[str, Any], rv: str = "10", **metadata: Any) -> Answer:
    return Answer(
        body={
            "kind": "ConfigMapList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": rv, **metadata},
            "items": list(items),
        }
    )


def watch_of(api: ScriptedApi, scope: Scope = SCOPE, **options: Any) -> tuple[NativeWatch, list[float]]:
    slept: list[float] = []
    watch = NativeWatch(api, scope, sleep=slept.append, rng=lambda: 0.0, **options)  # type: ignore[arg-type]
    return watch, slept


def run(watch: NativeWatch) -> list[NativeItem]:
    return list(watch.items())


def states(items: list[NativeItem]) -> list[tuple[ConnectionState, str]]:
    return [(i.state, i.detail) for i in items if isinstance(i, StateChange)]


def events(items: list[NativeItem]) -> list[NativeItem]:
    return [i for i in items if not isinstance(i, StateChange)]


def test_a_list_becomes_a_snapshot_and_the_watch_follows_from_its_version() -> None:
    api = ScriptedApi(
        listed(cm("a", "7")),
        Answer(
            lines=[
                {"type": "ADDED", "object": {"kind": "ConfigMap", "apiVersion": "v1", **cm("b", "11")}},
                {"type": "MODIFIED", "object": {"kind": "ConfigMap", "apiVersion": "v1", **cm("a", "12")}},
                {"type": "DELETED", "object": {"kind": "ConfigMap", "apiVersion": "v1", **cm("b", "13")}},
            ]
        ),
    )
    watch, _ = watch_of(api)
    items = run(watch)
    found = events(items)
    assert found[:3] == [
        Reset(SCOPE.to_wire(), NATIVE),
        Upsert("added", {"apiVersion": "v1", "kind": "ConfigMap", **cm("a", "7")}),
        Synced(),
    ]
    assert [type(e).__name__ for e in found[3:6]] == ["Upsert", "Upsert", "Deleted"]
    assert isinstance(found[5], Deleted) and found[5].uid == "uid-b" and found[5].identity.name == "b"
    assert states(items)[:2] == [(ConnectionState.SYNCING, ""), (ConnectionState.LIVE, "")]
    watching = api.queries[1]
    assert watching["watch"] == "true" and watching["allowWatchBookmarks"] == "true"
    assert watching["resourceVersion"] == "10"
    assert api.queries[2]["resourceVersion"] == "13"  # resumed from the last event, without a LIST
    assert "watch" in api.queries[2]
    assert all(answer.released for answer in api.given)


def test_a_bookmark_moves_the_checkpoint_and_a_dropped_watch_resumes_from_it() -> None:
    api = ScriptedApi(
        listed(rv="10"),
        Answer(lines=[{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}}], drop=True),
    )
    watch, _ = watch_of(api)
    items = run(watch)
    assert api.queries[2]["resourceVersion"] == "20"
    assert sum(isinstance(i, Reset) for i in items) == 1


@pytest.mark.parametrize(
    "expired",
    [
        Answer(410, {}),
        Answer(lines=[{"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}]),
        Answer(lines=[{"type": "ERROR", "object": {"reason": "Gone"}}]),
        Answer(lines=[{"type": "SURPRISE", "object": cm("a", "11")}]),
    ],
)
def test_an_expired_history_lists_again(expired: Answer) -> None:
    api = ScriptedApi(listed(rv="10"), expired, listed(rv="30"))
    watch, slept = watch_of(api)
    items = run(watch)
    assert sum(isinstance(i, Reset) for i in items) == 2
    assert (ConnectionState.RETRYING, "the watch history expired; listing again") in states(items)
    assert "watch" not in api.queries[2]
    assert api.queries[3]["resourceVersion"] == "30"
    assert slept == []


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "UNAUTHENTICATED"), (403, "FORBIDDEN"), (404, "INTERNAL"), (422, "INTERNAL")],
)
def test_a_refusal_is_terminal_and_the_last_item(status: int, code: str) -> None:
    api = ScriptedApi(Answer(status, {"kind": "Status"}))
    watch, slept = watch_of(api)
    items = run(watch)
    error = items[-2]
    assert isinstance(error, StreamError) and error.code == code and error.terminal
    assert items[-1] == StateChange(ConnectionState.TERMINAL, error.message)
    assert watch.state is ConnectionState.TERMINAL
    assert len(api.queries) == 1 and slept == []


def test_a_paginated_list_is_refused() -> None:
    api = ScriptedApi(listed(cm("a", "7"), **{"continue": "token"}))
    items = run(watch_of(api)[0])
    error = events(items)[0]
    assert isinstance(error, StreamError) and error.terminal and "paginated" in error.message
    assert not any(isinstance(i, Reset) for i in items)


@pytest.mark.parametrize(
    "bad",
    [
        Answer(503, {}),
        Answer(429, {}),
        listed(rv=""),
        listed({"metadata": {"name": "no-uid"}}),
        Answer(body=["not", "an", "object"]),
    ],
)
def test_transient_failures_retry_with_backoff_until_exhausted(bad: Answer) -> None:
    api = ScriptedApi(*[Answer(bad.status, bad.body) for _ in range(3)])
    watch, slept = watch_of(api, max_attempts=3, backoff=Backoff(initial=1.0, factor=2.0, maximum=30.0))
    items = run(watch)
    assert [s for s, _ in states(items)] == [
        ConnectionState.SYNCING,
        ConnectionState.RETRYING,
        ConnectionState.SYNCING,
        ConnectionState.RETRYING,
        ConnectionState.SYNCING,
        ConnectionState.EXHAUSTED,
    ]
    assert slept == [1.0, 2.0]
    assert not any(isinstance(i, Reset) for i in items)


def test_watches_that_close_at_once_back_off_and_exhaust_the_attempts() -> None:
    api = ScriptedApi(listed(rv="10"), Answer(), Answer(), Answer())
    watch, slept = watch_of(api, max_attempts=3, backoff=Backoff(initial=1.0, factor=2.0, maximum=30.0))
    items = run(watch)
    assert states(items)[-1] == (ConnectionState.EXHAUSTED, "the watch closed at once")
    assert slept == [1.0, 2.0]
    assert len(api.queries) == 4  # one LIST, three watches


def test_a_line_that_is_not_json_is_a_transient_failure() -> None:
    broken = Answer()
    broken._chunks = [b"{not json\n"]
    api = ScriptedApi(listed(rv="10"), broken)
    items = run(watch_of(api, max_attempts=1)[0])
    assert states(items)[-1] == (ConnectionState.EXHAUSTED, "the watch sent a line that is not JSON")


def test_selectors_are_sent_on_the_list_and_the_watch() -> None:
    api = ScriptedApi(listed(rv="10"))
    scope = Scope(target="dev", version="v1", resource="configmaps", namespace="app", name="web", label_selector="a=b")
    run(watch_of(api, scope)[0])
    assert api.queries[0] == {"labelSelector": "a=b", "fieldSelector": "metadata.name=web"}
    assert api.queries[1]["fieldSelector"] == "metadata.name=web"


def test_a_closed_watch_ends_without_a_request() -> None:
    api = ScriptedApi()
    watch, _ = watch_of(api)
    watch.close()
    assert run(watch) == [StateChange(ConnectionState.CLOSED)]
    assert api.queries == []
