"""Playing a conformance fixture's watch script: its ops as source operations per connection, the
errors of a script that cannot be played, and the SSE bytes of each connection."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.events import Deleted, Reset, StreamError, Synced, Upsert
from flask_krm.ops import Bookmark, Change, ContinuityLost, Snapshot
from flask_krm.projection import DEFAULT_PROJECTION
from flask_krm.scope import Scope
from flask_krm.sse import comment
from flask_krm.upstream.scripted import (
    ScriptedFixture,
    ScriptError,
    partial_object,
    render_fixture,
    script_connections,
    tombstone_object,
)
from flask_krm.versions import Ordering


def configmap(name: str, rv: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "app", "uid": f"uid-{name}", "resourceVersion": rv},
        "data": {"k": name},
    }


BODIES = {
    "a1": configmap("a", "1"),
    "a2": configmap("a", "2"),
    "b3": configmap("b", "3"),
    "opaque": configmap("c", "x"),
}
SCOPE = {"target": "demo", "version": "v1", "resource": "configmaps", "namespace": "app"}


def fixture(*watch: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"id": "t", "scope": SCOPE, "watch": list(watch), **more}


def test_each_op_becomes_its_source_operations_and_a_disconnect_starts_a_connection() -> None:
    watch = [
        {"op": "list", "bodies": ["a1"]},
        {"op": "added", "body": "b3"},
        {"op": "bookmark", "resourceVersion": "4"},
        {"op": "disconnect"},
        {"op": "relist", "bodies": []},
        {"op": "modified", "body": "a2"},
        {"op": "partial", "body": "a2"},
        {"op": "tombstone", "body": "b3"},
        {"op": "deleted", "body": "a2"},
    ]
    assert script_connections(watch, BODIES) == [
        [Snapshot((BODIES["a1"],)), Change("ADDED", BODIES["b3"]), Bookmark("4")],
        [
            ContinuityLost("relist"),
            Snapshot(()),
            Change("MODIFIED", BODIES["a2"]),
            Change("MODIFIED", partial_object(BODIES["a2"])),
            Change("DELETED", tombstone_object(BODIES["b3"])),
            Change("DELETED", BODIES["a2"]),
        ],
    ]


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"op": "resize"}, "unknown watch op 'resize'"),
        ("list", "unknown watch op None"),
        ({"op": "added", "body": "missing"}, "unknown body 'missing'"),
        ({"op": "added"}, "unknown body None"),
        ({"op": "list", "bodies": "a1"}, "a list op needs `bodies`"),
        ({"op": "relist"}, "a list op needs `bodies`"),
        ({"op": "bookmark", "resourceVersion": 4}, "a bookmark op needs a string `resourceVersion`"),
    ],
)
def test_a_script_that_cannot_be_played_is_refused_with_what_is_wrong(step: Any, message: str) -> None:
    with pytest.raises(ScriptError, match=message.replace("(", r"\(")):
        script_connections([step], BODIES)


def test_a_partial_object_keeps_only_the_metadata_and_a_tombstone_loses_only_the_uid() -> None:
    body = BODIES["a1"]
    assert partial_object(body) == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": body["metadata"],
    }
    tombstone = tombstone_object(body)
    assert "uid" not in tombstone["metadata"] and tombstone["metadata"]["name"] == "a"
    assert tombstone["data"] == body["data"]
    assert body["metadata"]["uid"] == "uid-a"  # the body itself is untouched
    assert partial_object({"metadata": "bad"})["metadata"] == {}
    assert tombstone_object({"metadata": None})["metadata"] == {}


def test_a_fixture_loads_its_scope_its_projection_or_the_default_and_its_connections() -> None:
    loaded = ScriptedFixture.load(fixture({"op": "list", "bodies": []}, {"op": "disconnect"}), BODIES)
    assert loaded.id == "t"
    assert loaded.scope == Scope(target="demo", version="v1", resource="configmaps", namespace="app")
    assert loaded.projection == DEFAULT_PROJECTION
    assert loaded.connections == ((Snapshot(()),), ())
    assert ScriptedFixture.load(fixture(projection="krm-spec/v1"), BODIES).projection == "krm-spec/v1"


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ({"id": "t", "scope": SCOPE}, "fixture 't' has no watch script"),
        ({"id": "t", "scope": SCOPE, "watch": 3}, "fixture 't' has no watch script"),
        ({"id": "t", "watch": []}, "fixture 't' has no scope"),
    ],
)
def test_a_fixture_without_a_script_or_scope_is_refused(broken: dict[str, Any], message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        ScriptedFixture.load(broken, BODIES)


def test_each_connection_plays_through_an_engine_of_its_own() -> None:
    played = ScriptedFixture.load(
        fixture(
            {"op": "list", "bodies": ["a1"]},
            {"op": "disconnect"},
            {"op": "list", "bodies": ["a2"]},
            {"op": "deleted", "body": "a2"},
        ),
        BODIES,
    )
    first, second = played.events()
    assert [type(e) for e in first] == [Reset, Upsert, Synced]
    assert [type(e) for e in second] == [Reset, Upsert, Synced, Deleted]
    assert second[1].object["metadata"]["resourceVersion"] == "2"  # type: ignore[union-attr]


def test_a_connection_stops_at_its_terminal_error() -> None:
    played = ScriptedFixture.load(
        fixture({"op": "list", "bodies": ["a1"]}, {"op": "modified", "body": "opaque"}, {"op": "added", "body": "b3"}),
        BODIES,
    )
    [strict] = played.events()
    assert isinstance(strict[-1], StreamError) and strict[-1].terminal and strict[-1].code == "INTERNAL"
    assert not any(isinstance(e, Upsert) and e.object["metadata"]["name"] == "b" for e in strict)
    [lenient] = played.events(Ordering.LENIENT)
    assert isinstance(lenient[-1], Upsert) and lenient[-1].object["metadata"]["name"] == "b"


def test_the_rendering_numbers_each_connection_from_seq_1_after_its_comment() -> None:
    script = fixture({"op": "list", "bodies": []}, {"op": "disconnect"}, {"op": "list", "bodies": []})
    rendered = render_fixture(script, BODIES)
    first, second = rendered.split(comment("connection 2"))
    assert first.startswith(comment("connection 1") + b'data: {"seq":1,"type":"reset"')
    assert second.startswith(b'data: {"seq":1,"type":"reset"')
    assert second.endswith(b'data: {"seq":2,"type":"synced"}\n\n')
    assert rendered == ScriptedFixture.load(script, BODIES).render()
