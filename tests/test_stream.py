"""The stream engine: framing, recovery, suppression, ordering, redaction revisions, bad input."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from typing import Any

import pytest

from flask_krm.events import (
    RESYNC_MESSAGE,
    Deleted,
    Event,
    Identity,
    Redaction,
    Reset,
    StreamError,
    Synced,
    Upsert,
    encode_body,
)
from flask_krm.ops import Bookmark, Change, ContinuityLost, Failure, Snapshot, SourceOp
from flask_krm.projection import LAST_APPLIED_ANNOTATION, UnknownProjection
from flask_krm.scope import Scope
from flask_krm.stream import MAX_REMEMBERED_DELETIONS, StreamEngine
from flask_krm.versions import Ordering, unorderable_message

SCOPE = Scope(target="demo", version="v1", resource="configmaps", namespace="app")
RESYNC = StreamError("RESYNC_REQUIRED", RESYNC_MESSAGE, terminal=False)


def cm(uid: str = "u1", rv: str = "10", name: str | None = None, **fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"uid": uid, "name": name or f"cm-{uid}", "namespace": "app", "resourceVersion": rv},
        "data": {"k": "v"},
    }
    obj.update(fields)
    return obj


def secret(uid: str = "s1", rv: str = "10", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"uid": uid, "name": f"secret-{uid}", "namespace": "app", "resourceVersion": rv},
        "data": data,
    }


def feed_all(engine: StreamEngine, ops: Iterable[SourceOp]) -> list[Event]:
    out: list[Event] = []
    for op in ops:
        out.extend(engine.feed(op))
    return out


def types(events: Iterable[Event]) -> list[str]:
    return [e.code if isinstance(e, StreamError) else e.type for e in events]


def live(*objects: dict[str, Any], projection: str = "krm-full/v1", **kwargs: Any) -> StreamEngine:
    """An engine whose first cycle (of ``objects``) is complete."""
    engine = StreamEngine(kwargs.pop("scope", SCOPE), projection, **kwargs)
    engine.feed(Snapshot(list(objects)))
    assert engine.synced
    return engine


# -------------------------------------------------------------------------------- framing --


def test_the_first_snapshot_is_framed() -> None:
    engine = StreamEngine(SCOPE, "krm-full/v1")
    assert engine.needs_snapshot and not engine.synced
    events = engine.feed(Snapshot([cm("a"), cm("b")]))
    assert events == [
        Reset(scope=SCOPE.to_wire(), projection="krm-full/v1"),
        Upsert("added", cm("a"), ()),
        Upsert("added", cm("b"), ()),
        Synced(),
    ]
    assert not engine.needs_snapshot and engine.synced and engine.cycles == 1


def test_an_absent_named_object_is_reset_then_synced() -> None:
    named = Scope(version="v1", resource="configmaps", namespace="app", name="missing")
    assert StreamEngine(named).feed(Snapshot([])) == [
        Reset(scope=named.to_wire(), projection="krm-full/v1"),
        Synced(),
    ]


def test_the_reset_carries_the_scope_and_projection() -> None:
    reset = StreamEngine(SCOPE, "krm-spec/v1").feed(Snapshot([]))[0]
    assert isinstance(reset, Reset)
    assert reset.scope == {"target": "demo", "version": "v1", "resource": "configmaps", "namespace": "app"}
    assert reset.projection == "krm-spec/v1" and reset.target == "demo"


def test_live_changes_mirror_the_upstream_type() -> None:
    engine = live(cm("a"))
    assert engine.feed(Change("MODIFIED", cm("a", "11", data={"k": "2"})))[0].type == "modified"
    assert engine.feed(Change("ADDED", cm("a", "12", data={"k": "3"})))[0].type == "added"
    assert engine.feed(Change("ADDED", cm("b", "13"))) == [Upsert("added", cm("b", "13"), ())]


def test_bookmarks_are_absorbed() -> None:
    engine = live(cm("a"))
    assert engine.feed(Bookmark("1500")) == []
    assert engine.feed(Change("BOOKMARK", {"metadata": {"resourceVersion": "1600"}})) == []
    assert engine.synced


def test_continuity_loss_starts_a_new_cycle_on_the_same_connection() -> None:
    engine = live(cm("a"), cm("b"))
    assert engine.feed(ContinuityLost("410 Gone")) == [
        RESYNC,
        Reset(scope=SCOPE.to_wire(), projection="krm-full/v1"),
    ]
    assert engine.needs_snapshot and not engine.closed
    assert engine.feed(Snapshot([cm("a")])) == [Upsert("added", cm("a"), ()), Synced()]
    assert engine.cycles == 2 and engine.synced


def test_the_resync_message_is_generic() -> None:
    engine = live(cm("a"))
    error = engine.feed(ContinuityLost("too old resource version: 1 (2)"))[0]
    assert error == RESYNC and "too old" not in error.message


def test_continuity_loss_before_any_snapshot_or_twice_announces_once() -> None:
    engine = StreamEngine(SCOPE)
    assert engine.feed(ContinuityLost()) == []
    assert types(engine.feed(Snapshot([cm("a")]))) == ["reset", "added", "synced"]
    assert types(engine.feed(ContinuityLost())) == ["RESYNC_REQUIRED", "reset"]
    assert engine.feed(ContinuityLost()) == []
    assert types(engine.feed(Snapshot([]))) == ["synced"]


def test_an_unannounced_snapshot_is_a_new_cycle() -> None:
    engine = live(cm("a"))
    assert types(engine.feed(Snapshot([cm("a")]))) == ["RESYNC_REQUIRED", "reset", "added", "synced"]


def test_a_resync_failure_is_a_continuity_loss() -> None:
    engine = live(cm("a"))
    assert types(engine.feed(Failure("RESYNC_REQUIRED", "x", terminal=True))) == ["RESYNC_REQUIRED", "reset"]
    assert not engine.closed


def test_changes_while_a_snapshot_is_awaited_are_dropped() -> None:
    engine = StreamEngine(SCOPE)
    assert engine.feed(Change("ADDED", cm("a"))) == []
    engine.feed(Snapshot([cm("a")]))
    engine.feed(ContinuityLost())
    assert engine.feed(Change("MODIFIED", cm("a", "11", data={"k": "new"}))) == []
    assert engine.feed(Change("DELETED", cm("a", "12"))) == []
    assert types(engine.feed(Snapshot([cm("a", "12")]))) == ["added", "synced"]


# ----------------------------------------------------------------------------- suppression --


def test_unchanged_visible_content_is_suppressed() -> None:
    engine = live(cm("a"))
    assert engine.feed(Change("MODIFIED", cm("a", "11"))) == []  # only the resourceVersion moved
    bookkeeping = cm("a", "12")
    bookkeeping["metadata"]["managedFields"] = [{"manager": "x"}]
    bookkeeping["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: "{}"}
    assert engine.feed(Change("MODIFIED", bookkeeping)) == []
    assert types(engine.feed(Change("MODIFIED", cm("a", "13", data={"k": "2"})))) == ["modified"]
    assert engine.feed(Change("MODIFIED", cm("a", "14", data={"k": "2"}))) == []


def test_suppression_compares_with_what_was_last_delivered() -> None:
    engine = live(cm("a"))
    engine.feed(Change("MODIFIED", cm("a", "11", data={"k": "2"})))
    # back to the first content: different from the last delivered, so delivered
    assert types(engine.feed(Change("MODIFIED", cm("a", "12")))) == ["modified"]


@pytest.mark.parametrize(
    ("projection", "delivered"), [("krm-spec/v1", False), ("krm-full/v1", True), ("krm-raw/v1", True)]
)
def test_status_only_changes(projection: str, delivered: bool) -> None:
    engine = live(cm("a", status={"ready": 1}), projection=projection)
    events = engine.feed(Change("MODIFIED", cm("a", "11", status={"ready": 2})))
    assert types(events) == (["modified"] if delivered else [])


def test_every_cycle_delivers_every_member_again() -> None:
    engine = live(cm("a"), cm("b"))
    engine.feed(ContinuityLost())
    assert types(engine.feed(Snapshot([cm("a"), cm("b")]))) == ["added", "added", "synced"]


def test_a_delete_clears_the_suppression_memory() -> None:
    engine = live(cm("a"))
    engine.feed(Change("DELETED", cm("a", "11")))
    assert types(engine.feed(Change("ADDED", cm("a", "12")))) == ["added"]


# ------------------------------------------------------------------------------ redaction --


def test_a_secret_value_change_bumps_the_revision_and_is_delivered() -> None:
    engine = live(secret(token="a"))
    events = engine.feed(Change("MODIFIED", secret(rv="11", token="b")))
    assert len(events) == 1 and isinstance(events[0], Upsert)
    assert events[0].redacted == (Redaction("/data/token", 2),)
    assert "data" not in events[0].object
    assert engine.feed(Change("MODIFIED", secret(rv="12", token="b"))) == []


def test_under_raw_the_value_itself_is_visible() -> None:
    engine = live(secret(token="a"), projection="krm-raw/v1")
    events = engine.feed(Change("MODIFIED", secret(rv="11", token="b")))
    assert events == [Upsert("modified", secret(rv="11", token="b"), ())]


def test_revisions_survive_a_resync_on_the_same_connection() -> None:
    engine = live(secret(token="a"))
    engine.feed(ContinuityLost())
    added = engine.feed(Snapshot([secret(rv="12", token="b")]))[0]
    assert isinstance(added, Upsert) and added.redacted == (Redaction("/data/token", 2),)


def test_revisions_of_uids_a_cycle_did_not_deliver_are_discarded_at_synced() -> None:
    engine = live(secret(token="a"))
    engine.feed(Change("MODIFIED", secret(rv="11", token="b")))  # rev 2
    engine.feed(ContinuityLost())
    engine.feed(Snapshot([]))  # s1 not delivered in this cycle
    added = engine.feed(Change("ADDED", secret(rv="13", token="b")))[0]
    assert isinstance(added, Upsert) and added.redacted == (Redaction("/data/token", 1),)


def test_a_delete_drops_the_revisions() -> None:
    engine = live(secret(token="a"))
    engine.feed(Change("MODIFIED", secret(rv="11", token="b")))
    engine.feed(Change("DELETED", secret(rv="12", token="b")))
    added = engine.feed(Change("ADDED", secret(rv="13", token="b")))[0]
    assert isinstance(added, Upsert) and added.redacted == (Redaction("/data/token", 1),)


def test_a_new_connection_starts_fresh() -> None:
    first = live(secret(token="a"))
    first.feed(Change("MODIFIED", secret(rv="11", token="b")))
    added = StreamEngine(SCOPE).feed(Snapshot([secret(rv="11", token="b")]))[1]
    assert isinstance(added, Upsert) and added.redacted == (Redaction("/data/token", 1),)


def test_no_secret_value_is_in_any_encoded_event() -> None:
    engine = StreamEngine(SCOPE, "krm-full/v1")
    events = feed_all(
        engine,
        [
            Snapshot([secret(token="dG9wLXNlY3JldA==")]),
            Change("MODIFIED", secret(rv="11", token="bmV3LXNlY3JldA==")),
            Change("DELETED", secret(rv="12", token="bmV3LXNlY3JldA==")),
        ],
    )
    wire = b"".join(encode_body(e) for e in events)
    assert b"dG9wLXNlY3JldA" not in wire and b"bmV3LXNlY3JldA" not in wire
    assert types(events) == ["reset", "added", "synced", "modified", "deleted"]


# -------------------------------------------------------------------------------- deletes --


def test_a_delete_carries_a_complete_identity() -> None:
    engine = live(cm("a"))
    assert engine.feed(Change("DELETED", cm("a", "11"))) == [
        Deleted(Identity(uid="a", api_version="v1", kind="ConfigMap", name="cm-a", namespace="app"))
    ]


def test_a_cluster_scoped_delete_has_no_namespace() -> None:
    scope = Scope(version="v1", resource="namespaces")
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"uid": "n", "name": "app", "resourceVersion": "5"},
    }
    engine = live(ns, scope=scope)
    (deleted,) = engine.feed(Change("DELETED", {**ns, "metadata": {**ns["metadata"], "resourceVersion": "6"}}))
    assert isinstance(deleted, Deleted)
    assert deleted.identity.to_json() == {"uid": "n", "apiVersion": "v1", "kind": "Namespace", "name": "app"}


@pytest.mark.parametrize("missing", ["uid", "name"])
def test_a_delete_without_a_complete_identity_resnapshots(missing: str) -> None:
    engine = live(cm("a"))
    tombstone = cm("a", "11")
    del tombstone["metadata"][missing]
    assert engine.feed(Change("DELETED", tombstone)) == [
        RESYNC,
        Reset(scope=SCOPE.to_wire(), projection="krm-full/v1"),
    ]
    assert engine.needs_snapshot


@pytest.mark.parametrize("field", ["apiVersion", "kind"])
def test_a_delete_without_kind_or_api_version_resnapshots(field: str) -> None:
    engine = live(cm("a"))
    tombstone = cm("a", "11")
    tombstone[field] = ""
    assert types(engine.feed(Change("DELETED", tombstone))) == ["RESYNC_REQUIRED", "reset"]


def test_a_metadata_only_delete_resnapshots() -> None:
    engine = live(cm("a"))
    partial = {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": cm("a", "11")["metadata"],
    }
    assert types(engine.feed(Change("DELETED", partial))) == ["RESYNC_REQUIRED", "reset"]


# ------------------------------------------------------------------------ refused objects --


@pytest.mark.parametrize(
    "obj",
    [
        {
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": cm("a", "11")["metadata"],
        },
        {
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadataList",
            "metadata": cm("a", "11")["metadata"],
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": "a string"},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "11"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"uid": "", "resourceVersion": "11"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"uid": 7, "resourceVersion": "11"}},
        ["not", "an", "object"],
        "not an object",
        None,
    ],
    ids=[
        "partial",
        "partial-list",
        "no-metadata",
        "metadata-not-a-map",
        "no-uid",
        "empty-uid",
        "uid-not-a-string",
        "a-list",
        "a-string",
        "none",
    ],
)
def test_an_object_that_cannot_be_trusted_is_never_forwarded(obj: Any) -> None:
    engine = live(cm("a"))
    assert engine.feed(Change("MODIFIED", obj)) == [
        RESYNC,
        Reset(scope=SCOPE.to_wire(), projection="krm-full/v1"),
    ]
    assert engine.needs_snapshot and not engine.closed
    assert types(engine.feed(Snapshot([cm("a", "12")]))) == ["added", "synced"]


@pytest.mark.parametrize("kind", ["ERROR", "SOMETHING", ""])
def test_an_unknown_change_type_resnapshots(kind: str) -> None:
    engine = live(cm("a"))
    change = Change(kind, {"kind": "Status", "code": 410})  # type: ignore[arg-type]
    assert types(engine.feed(change)) == ["RESYNC_REQUIRED", "reset"]
    assert engine.needs_snapshot


def test_a_refused_member_interrupts_its_snapshot() -> None:
    engine = StreamEngine(SCOPE)
    partial = {"kind": "PartialObjectMetadata", "metadata": {"uid": "b", "resourceVersion": "3"}}
    events = engine.feed(Snapshot([cm("a"), partial, cm("c")]))
    assert types(events) == ["reset", "added", "RESYNC_REQUIRED", "reset"]  # no synced: nothing pruned
    assert engine.needs_snapshot


def test_objects_outside_the_scope_are_dropped() -> None:
    engine = live(cm("a"))
    elsewhere = cm("b")
    elsewhere["metadata"]["namespace"] = "kube-system"
    assert engine.feed(Change("ADDED", elsewhere)) == []
    assert engine.feed(Change("DELETED", elsewhere)) == []
    named = Scope(version="v1", resource="configmaps", namespace="app", name="cm-a")
    assert types(StreamEngine(named).feed(Snapshot([cm("a"), cm("b")]))) == ["reset", "added", "synced"]


def test_the_engine_never_mutates_the_objects_it_is_fed() -> None:
    objects = [cm("a"), secret(token="x"), cm("b", status={"s": 1})]
    objects[0]["metadata"]["managedFields"] = [{"m": 1}]
    before = copy.deepcopy(objects)
    engine = StreamEngine(SCOPE, "krm-spec/v1")
    feed_all(engine, [Snapshot(objects), Change("DELETED", objects[2])])
    assert objects == before


# --------------------------------------------------------------------------------- ordering --


def test_a_stale_upsert_or_delete_is_dropped_and_equal_passes() -> None:
    engine = live(cm("a", "20"))
    assert engine.feed(Change("MODIFIED", cm("a", "19", data={"k": "old"}))) == []
    assert engine.feed(Change("DELETED", cm("a", "19"))) == []
    assert types(engine.feed(Change("MODIFIED", cm("a", "20", data={"k": "same rv"})))) == ["modified"]
    assert types(engine.feed(Change("MODIFIED", cm("a", "100", data={"k": "newer"})))) == ["modified"]
    assert engine.feed(Change("MODIFIED", cm("a", "99", data={"k": "older"}))) == []


def test_big_resource_versions_order_as_decimals() -> None:
    forty = "2345678901234567890123456789012345678901"
    engine = live(cm("a", forty))
    assert types(engine.feed(Change("MODIFIED", cm("a", "1" + forty, data={"k": "2"})))) == ["modified"]
    assert engine.feed(Change("MODIFIED", cm("a", forty))) == []


def test_monotonicity_is_per_cycle() -> None:
    engine = live(cm("a", "20"))
    engine.feed(ContinuityLost())
    assert types(engine.feed(Snapshot([cm("a", "5")]))) == ["added", "synced"]


def test_a_replay_cannot_resurrect_a_deleted_uid() -> None:
    engine = live(cm("a", "20"))
    engine.feed(Change("DELETED", cm("a", "21")))
    assert engine.feed(Change("MODIFIED", cm("a", "20", data={"k": "old"}))) == []
    assert engine.feed(Change("ADDED", cm("a", "3"))) == []
    engine.feed(ContinuityLost())
    assert types(engine.feed(Snapshot([cm("a", "3")]))) == ["added", "synced"]  # a new cycle forgets


def test_deleted_uids_are_remembered_within_a_bound() -> None:
    engine = live(*[cm(f"u{i}", "10") for i in range(MAX_REMEMBERED_DELETIONS + 1)])
    for i in range(MAX_REMEMBERED_DELETIONS + 1):
        engine.feed(Change("DELETED", cm(f"u{i}", "11")))
    assert types(engine.feed(Change("ADDED", cm("u0", "5")))) == ["added"]  # the oldest was let go
    assert engine.feed(Change("ADDED", cm("u1", "5"))) == []


@pytest.mark.parametrize("rv", ["opaque-alpha", "", "0123", "1" * 2000, None, 17])
def test_strict_ordering_refuses_what_it_cannot_order(rv: Any) -> None:
    engine = StreamEngine(SCOPE)
    obj = cm("a")
    obj["metadata"]["resourceVersion"] = rv
    events = engine.feed(Snapshot([obj]))
    assert types(events) == ["reset", "INTERNAL"]
    error = events[-1]
    assert isinstance(error, StreamError) and error.terminal
    assert error.message == unorderable_message(rv) and "OrderingLenient" in error.message
    assert engine.closed and not engine.needs_snapshot
    assert engine.feed(Snapshot([cm("a")])) == [] and engine.feed(ContinuityLost()) == []


def test_strict_ordering_refuses_a_missing_version_on_a_live_change_or_delete() -> None:
    for kind in ("MODIFIED", "DELETED"):
        engine = live(cm("a"))
        obj = cm("a")
        del obj["metadata"]["resourceVersion"]
        assert types(engine.feed(Change(kind, obj))) == ["INTERNAL"]  # type: ignore[arg-type]
        assert engine.closed


def test_lenient_ordering_drops_nothing_it_cannot_order() -> None:
    engine = live(cm("a", "opaque-2"), ordering=Ordering.LENIENT)
    assert types(engine.feed(Change("MODIFIED", cm("a", "opaque-1", data={"k": "2"})))) == ["modified"]
    assert types(engine.feed(Change("MODIFIED", cm("a", "", data={"k": "3"})))) == ["modified"]
    assert types(engine.feed(Change("MODIFIED", cm("a", "7", data={"k": "4"})))) == ["modified"]
    assert engine.feed(Change("MODIFIED", cm("a", "6", data={"k": "5"}))) == []  # orderable: stale
    assert not engine.closed


def test_ordering_is_accepted_by_name() -> None:
    engine = StreamEngine(SCOPE, "krm-full/v1", "lenient")
    assert engine.ordering is Ordering.LENIENT
    assert types(engine.feed(Snapshot([cm("a", "x")]))) == ["reset", "added", "synced"]


# ---------------------------------------------------------------------------------- errors --


def test_upstream_unavailable_is_never_terminal() -> None:
    engine = live(cm("a"))
    events = engine.feed(Failure("UPSTREAM_UNAVAILABLE", "connection refused", terminal=True, retry_after_ms=500))
    assert events == [StreamError("UPSTREAM_UNAVAILABLE", "connection refused", False, 500)]
    assert not engine.closed


@pytest.mark.parametrize("code", ["FORBIDDEN", "UNAUTHENTICATED", "SCOPE_INVALID", "SLOW_CONSUMER"])
def test_terminal_codes_always_end_the_stream(code: str) -> None:
    engine = live(cm("a"))
    events = engine.feed(Failure(code, "no", terminal=False))  # type: ignore[arg-type]
    assert events == [StreamError(code, "no", True)]  # type: ignore[arg-type]
    assert engine.closed and engine.feed(Change("MODIFIED", cm("a", "11", data={"k": 2}))) == []


@pytest.mark.parametrize("terminal", [True, False])
def test_internal_follows_its_flag(terminal: bool) -> None:
    engine = live(cm("a"))
    assert engine.feed(Failure("INTERNAL", "boom", terminal)) == [StreamError("INTERNAL", "boom", terminal)]
    assert engine.closed is terminal


def test_a_failure_is_normalized() -> None:
    engine = live(cm("a"))
    (error,) = engine.feed(Failure("NOT_A_CODE", "", terminal=False, retry_after_ms=-1))  # type: ignore[arg-type]
    assert isinstance(error, StreamError)
    assert error.code == "INTERNAL" and error.message and error.retry_after_ms is None
    (error,) = engine.feed(Failure("UPSTREAM_UNAVAILABLE", "  ", terminal=False, retry_after_ms=True))  # type: ignore[arg-type]
    assert isinstance(error, StreamError) and error.message.strip() and error.retry_after_ms is None


def test_an_unknown_operation_ends_the_stream() -> None:
    engine = live(cm("a"))
    (error,) = engine.feed("LIST")  # type: ignore[arg-type]
    assert isinstance(error, StreamError) and error.code == "INTERNAL" and error.terminal
    assert engine.closed


@pytest.mark.parametrize(
    "op",
    [
        Snapshot(None),  # type: ignore[arg-type]
        Snapshot(7),  # type: ignore[arg-type]
        Snapshot({"a": 1}),  # type: ignore[arg-type]
        Snapshot([{**cm("a"), "data": {"k": object()}}]),
    ],
    ids=["none", "int", "mapping", "unencodable-value"],
)
def test_internal_failures_end_the_stream_and_never_escape(op: SourceOp, caplog: pytest.LogCaptureFixture) -> None:
    engine = StreamEngine(SCOPE)
    with caplog.at_level(logging.ERROR, logger="flask_krm.stream"):
        events = engine.feed(op)
    assert types(events)[0] == "reset" and types(events)[-1] == "INTERNAL"
    error = events[-1]
    assert isinstance(error, StreamError) and error.terminal
    assert engine.closed
    assert "the stream ends with INTERNAL" in caplog.text


def test_a_terminal_error_is_the_last_event() -> None:
    engine = StreamEngine(SCOPE)
    opaque = cm("b", "opaque")
    events = feed_all(
        engine, [Snapshot([cm("a")]), Change("ADDED", opaque), Change("ADDED", cm("c")), ContinuityLost()]
    )
    assert types(events) == ["reset", "added", "synced", "INTERNAL"]


# ---------------------------------------------------------------------------- construction --


def test_an_unknown_projection_is_refused_before_anything_streams() -> None:
    with pytest.raises(UnknownProjection):
        StreamEngine(SCOPE, "krm-everything/v1")


def test_the_scope_must_be_a_scope() -> None:
    with pytest.raises(TypeError):
        StreamEngine(SCOPE.to_wire(), "krm-full/v1")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        StreamEngine(SCOPE, "krm-full/v1", "sometimes")
