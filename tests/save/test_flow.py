"""The per-editor save state machine, driven against a real LiveResourceStore."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.events import Deleted, Identity, Reset, Synced, Upsert
from flask_krm.save.flow import Done, KnownVersions, Phase, Read, ReadReason, ReadResult, SaveFlow, Write, patch_applied
from flask_krm.save.outcomes import OutcomeKind, WriteVerdict
from flask_krm.store import LiveResourceStore

UID = "uid-1"


def cm(rv: str, data: dict[str, str], uid: str = UID, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "app", "namespace": "team", "uid": uid, "resourceVersion": rv}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


@pytest.fixture
def store() -> LiveResourceStore:
    s = LiveResourceStore()
    s.apply(Reset({"version": "v1", "resource": "configmaps"}, "krm-full/v1"))
    s.apply(Upsert("added", cm("10", {"a": "1", "b": "1"})))
    s.apply(Synced())
    return s


def begin_write(flow: SaveFlow, store: LiveResourceStore) -> Write:
    step = flow.begin(store, live=True)
    assert isinstance(step, Write)
    return step


def test_a_save_captures_uid_version_and_patch_before_any_io(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    step = begin_write(flow, store)
    store.set_value(UID, ("data", "b"), "typed-later")
    assert (step.intent.uid, step.intent.resource_version, step.intent.patch) == (UID, "10", {"data": {"a": "2"}})
    assert flow.phase is Phase.WRITING
    assert store.draft(UID)["data"]["b"] == "typed-later"


def test_saves_are_serialized_per_editor(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    busy = flow.begin(store, live=True)
    assert isinstance(busy, Done) and busy.outcome.kind is OutcomeKind.BUSY
    assert flow.phase is Phase.WRITING


def test_no_write_unless_the_stream_is_live(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    step = flow.begin(store, live=False)
    assert isinstance(step, Done) and step.outcome.kind is OutcomeKind.RECONNECTING
    assert step.outcome.status_code == 503 and flow.phase is Phase.IDLE


def test_nothing_to_save_and_unresolved_conflicts_send_nothing(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    step = flow.begin(store, live=True)
    assert isinstance(step, Done) and step.outcome.kind is OutcomeKind.NOTHING_TO_SAVE
    store.set_value(UID, ("data", "a"), "mine")
    store.apply(Upsert("modified", cm("11", {"a": "theirs", "b": "1"})))
    step = flow.begin(store, live=True)
    assert isinstance(step, Done) and step.outcome.kind is OutcomeKind.DRAFT_CONFLICT
    assert step.outcome.conflicts == (("data", "a"),)
    store.keep_mine(UID, ("data", "a"))
    step = flow.begin(store, live=True)
    assert isinstance(step, Write) and step.intent.resource_version == "11"


def test_accepted_write_waits_for_its_echo(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    done = flow.written(store, WriteVerdict.ACCEPTED, written_version="12")
    assert isinstance(done, Done) and done.outcome.kind is OutcomeKind.SAVED_PENDING
    store.apply(Upsert("modified", cm("11", {"a": "1", "b": "other"})))  # someone else's older write
    assert flow.observe(store) is None
    store.apply(Upsert("modified", cm("12", {"a": "2", "b": "other"})))
    outcome = flow.observe(store)
    assert outcome is not None and outcome.kind is OutcomeKind.SAVED
    assert flow.phase is Phase.IDLE and store.dirty(UID) == []


def test_typing_in_the_saved_field_turns_the_echo_into_a_conflict(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    flow.written(store, WriteVerdict.ACCEPTED, written_version="12")
    store.set_value(UID, ("data", "a"), "23")
    store.apply(Upsert("modified", cm("12", {"a": "2", "b": "1"})))
    outcome = flow.observe(store)
    assert outcome is not None and outcome.kind is OutcomeKind.DRAFT_CONFLICT
    assert outcome.conflicts == (("data", "a"),)
    assert store.draft(UID)["data"]["a"] == "23"


def test_conflict_reads_once_and_keeps_the_edits(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    step = flow.written(store, WriteVerdict.CONFLICT, status={"reason": "Conflict"})
    assert isinstance(step, Read) and step.reason is ReadReason.AFTER_CONFLICT
    store.set_value(UID, ("data", "b"), "typed-during-read")
    done = flow.read(store, step, ReadResult("object", cm("15", {"a": "1", "b": "1"}), ()))
    assert done.outcome.kind is OutcomeKind.VERSION_STALE and done.outcome.status_code == 409
    assert store.server(UID)["metadata"]["resourceVersion"] == "15"
    assert store.draft(UID)["data"] == {"a": "2", "b": "typed-during-read"}
    again = begin_write(flow, store)
    assert again.intent.resource_version == "15"


def test_conflict_with_a_field_conflict_reports_the_fields(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    step = flow.written(store, WriteVerdict.CONFLICT)
    assert isinstance(step, Read)
    done = flow.read(store, step, ReadResult("object", cm("15", {"a": "other", "b": "1"}), ()))
    assert done.outcome.kind is OutcomeKind.DRAFT_CONFLICT and done.outcome.conflicts == (("data", "a"),)


def test_a_replacement_is_named_and_never_applied(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    step = flow.written(store, WriteVerdict.CONFLICT)
    assert isinstance(step, Read)
    done = flow.read(store, step, ReadResult("object", cm("20", {"a": "new"}, uid="uid-2"), ()))
    assert done.outcome.kind is OutcomeKind.UNAVAILABLE and done.outcome.replacement_uid == "uid-2"
    assert store.server(UID)["metadata"]["resourceVersion"] == "10"
    assert store.draft(UID)["data"]["a"] == "2"
    after = flow.begin(store, live=True)
    assert isinstance(after, Done) and after.outcome.kind is OutcomeKind.UNAVAILABLE
    assert after.outcome.replacement_uid == "uid-2"


def test_deleted_object_is_unavailable(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    step = flow.written(store, WriteVerdict.NOT_FOUND)
    assert isinstance(step, Done) and step.outcome.kind is OutcomeKind.UNAVAILABLE and step.outcome.status_code == 404
    other = SaveFlow(UID)
    store.apply(Deleted(Identity(UID, "v1", "ConfigMap", "app", "team")))
    assert other.observe(store) is not None and other.phase is Phase.UNAVAILABLE


def test_lost_response_never_replays_and_the_next_save_reads_first(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    done = flow.written(store, WriteVerdict.UNKNOWN, code=0)
    assert isinstance(done, Done) and done.outcome.kind is OutcomeKind.UNKNOWN
    step = flow.begin(store, live=True)
    assert isinstance(step, Read) and step.reason is ReadReason.RECOVER
    # the write had applied: the read shows it, and nothing else is written
    done = flow.read(store, step, ReadResult("object", cm("11", {"a": "2", "b": "1"}), ()))
    assert done.outcome.kind is OutcomeKind.SAVED and store.dirty(UID) == []


def test_lost_response_that_did_not_apply_refreshes(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    flow.written(store, WriteVerdict.UNKNOWN)
    step = flow.begin(store, live=True)
    assert isinstance(step, Read)
    done = flow.read(store, step, ReadResult("object", cm("10", {"a": "1", "b": "1"}), ()))
    assert done.outcome.kind is OutcomeKind.VERSION_STALE
    assert isinstance(flow.begin(store, live=True), Write)


def test_no_echo_confirms_through_a_guarded_read(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    flow.written(store, WriteVerdict.ACCEPTED, written_version="11")
    step = flow.confirm(store)
    assert isinstance(step, Read) and step.reason is ReadReason.CONFIRM
    # an admission webhook restored the field: accepted, but not applied
    done = flow.read(store, step, ReadResult("object", cm("11", {"a": "1", "b": "1"}), ()))
    assert done.outcome.kind is OutcomeKind.NOT_APPLIED
    assert store.draft(UID)["data"]["a"] == "2" and store.dirty(UID) == [("data", "a")]


def test_save_while_confirmation_pending_is_a_guarded_read(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    flow.written(store, WriteVerdict.ACCEPTED, written_version="11")
    store.set_value(UID, ("data", "b"), "more")
    step = flow.begin(store, live=True)
    assert isinstance(step, Read) and step.reason is ReadReason.CONFIRM
    done = flow.read(store, step, ReadResult("object", cm("11", {"a": "2", "b": "1"}), ()))
    assert done.outcome.kind is OutcomeKind.SAVED
    assert store.dirty(UID) == [("data", "b")]


def test_a_refused_guard_leaves_the_flow_recovering(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    step = flow.written(store, WriteVerdict.CONFLICT)
    assert isinstance(step, Read)
    store.apply(Reset({"version": "v1", "resource": "configmaps"}, "krm-full/v1"))  # a snapshot began
    done = flow.read(store, step, ReadResult("object", cm("15", {"a": "1", "b": "1"}), ()))
    assert done.outcome.kind is OutcomeKind.RECOVERING and flow.phase is Phase.NEEDS_READ
    assert store.server(UID)["metadata"]["resourceVersion"] == "10"
    assert isinstance(flow.begin(store, live=True), Read)


def test_a_newer_event_during_the_read_counts_as_refreshed(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    step = flow.written(store, WriteVerdict.CONFLICT)
    assert isinstance(step, Read)
    store.apply(Upsert("modified", cm("16", {"a": "1", "b": "x"})))
    done = flow.read(store, step, ReadResult("object", cm("15", {"a": "1", "b": "1"}), ()))
    assert done.outcome.kind is OutcomeKind.VERSION_STALE
    assert store.server(UID)["metadata"]["resourceVersion"] == "16"


@pytest.mark.parametrize(
    ("result", "kind", "phase"),
    [
        (ReadResult("failed"), OutcomeKind.RECOVERING, Phase.NEEDS_READ),
        (ReadResult("forbidden"), OutcomeKind.ACCESS_DENIED, Phase.NEEDS_READ),
        (ReadResult("unauthorized"), OutcomeKind.SIGNED_OUT, Phase.NEEDS_READ),
        (ReadResult("not-found"), OutcomeKind.UNAVAILABLE, Phase.UNAVAILABLE),
    ],
)
def test_failed_reads(store: LiveResourceStore, result: ReadResult, kind: OutcomeKind, phase: Phase) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    step = flow.written(store, WriteVerdict.CONFLICT)
    assert isinstance(step, Read)
    assert flow.read(store, step, result).outcome.kind is kind and flow.phase is phase


@pytest.mark.parametrize(
    ("verdict", "kind", "code"),
    [
        (WriteVerdict.INVALID, OutcomeKind.INVALID, 422),
        (WriteVerdict.FORBIDDEN, OutcomeKind.ACCESS_DENIED, 403),
        (WriteVerdict.UNAUTHORIZED, OutcomeKind.SIGNED_OUT, 401),
        (WriteVerdict.REJECTED, OutcomeKind.REJECTED, 429),
    ],
)
def test_definite_refusals_keep_their_category_and_allow_a_new_save(
    store: LiveResourceStore, verdict: WriteVerdict, kind: OutcomeKind, code: int
) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    done = flow.written(store, verdict, code=code)
    assert isinstance(done, Done) and done.outcome.kind is kind and done.outcome.status_code == code
    assert flow.phase is Phase.IDLE and store.draft(UID)["data"]["a"] == "2"
    assert isinstance(flow.begin(store, live=True), Write)


def test_invalid_causes_are_placed_at_their_fields(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    status = {
        "code": 422,
        "reason": "Invalid",
        "details": {"causes": [{"field": "data[a]", "reason": "FieldValueInvalid", "message": "bad"}]},
    }
    done = flow.written(store, WriteVerdict.INVALID, status=status, code=422)
    assert isinstance(done, Done)
    assert [(c.path, c.message) for c in done.outcome.causes] == [(("data", "a"), "bad")]


def test_flow_refuses_out_of_order_calls(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    with pytest.raises(RuntimeError, match="idle, not writing"):
        flow.written(store, WriteVerdict.ACCEPTED)


def test_patch_applied() -> None:
    obj = {"metadata": {"labels": {"a": "1"}}, "data": {"x": "1"}, "list": [1, 2]}
    assert patch_applied(obj, {"metadata": {"labels": {"a": "1"}, "uid": "u", "resourceVersion": "9"}})
    assert patch_applied(obj, {"data": {"y": None}, "list": [1, 2], "spec": {}})
    assert not patch_applied(obj, {"data": {"x": None}})
    assert not patch_applied(obj, {"data": {"x": "2"}})
    assert not patch_applied(obj, {"list": [1]})
    assert not patch_applied(obj, {"spec": {"replicas": 1}})


def test_a_conflict_after_the_object_left_the_store_still_names_the_replacement(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    store.apply(Deleted(Identity(UID, "v1", "ConfigMap", "app", "team")))
    step = flow.written(store, WriteVerdict.CONFLICT)
    assert isinstance(step, Read) and step.guard is None
    done = flow.read(store, step, ReadResult("object", cm("30", {"a": "new"}, uid="uid-3"), ()))
    assert done.outcome.kind is OutcomeKind.UNAVAILABLE and done.outcome.replacement_uid == "uid-3"


def known(*objects: dict[str, Any], projection: str = "krm-full/v1") -> KnownVersions:
    """The shared watch's cache as the flow sees it: the newest raw object per uid."""
    by_uid = {obj["metadata"]["uid"]: obj for obj in objects}
    return KnownVersions(projection, by_uid.get)


def with_bookkeeping(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as Kubernetes holds it after a write that changed only machinery."""
    obj["metadata"]["managedFields"] = [{"manager": "controller", "operation": "Update"}]
    return obj


def test_an_invisibly_newer_version_is_captured_as_the_base(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    step = flow.begin(store, live=True, known=known(with_bookkeeping(cm("17", {"a": "1", "b": "1"}))))
    assert isinstance(step, Write)
    assert (step.intent.resource_version, step.intent.patch) == ("17", {"data": {"a": "2"}})
    assert store.server(UID)["metadata"]["resourceVersion"] == "10", "the view itself is unchanged"


def test_a_visibly_newer_or_foreign_version_is_not_captured(store: LiveResourceStore) -> None:
    store.set_value(UID, ("data", "a"), "2")
    for newest in (cm("17", {"a": "1", "b": "colleague"}), cm("17", {"a": "1", "b": "1"}, uid="uid-2")):
        flow = SaveFlow(UID)
        step = flow.begin(store, live=True, known=known(newest))
        assert isinstance(step, Write) and step.intent.resource_version == "10"


def test_after_a_newer_base_the_older_view_is_not_taken_for_the_echo(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    flow.begin(store, live=True, known=known(with_bookkeeping(cm("17", {"a": "1", "b": "1"}))))
    done = flow.written(store, WriteVerdict.ACCEPTED)  # a host hook that reports no written version
    assert isinstance(done, Done) and done.outcome.kind is OutcomeKind.SAVED_PENDING
    assert flow.observe(store) is None, "the view still holds version 10, older than the base"
    store.apply(Upsert("modified", cm("18", {"a": "2", "b": "1"})))
    outcome = flow.observe(store)
    assert outcome is not None and outcome.kind is OutcomeKind.SAVED


def test_a_409_on_a_newer_base_follows_the_recovery_unchanged(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    flow.begin(store, live=True, known=known(with_bookkeeping(cm("17", {"a": "1", "b": "1"}))))
    step = flow.written(store, WriteVerdict.CONFLICT, status={"reason": "Conflict"})
    assert isinstance(step, Read) and step.reason is ReadReason.AFTER_CONFLICT
    assert flow.pending_intent is None, "the old patch is dropped, never re-sent with a newer version"
    done = flow.read(store, step, ReadResult("object", cm("19", {"a": "1", "b": "colleague"}), ()))
    assert done.outcome.kind is OutcomeKind.VERSION_STALE
    assert store.draft(UID)["data"] == {"a": "2", "b": "colleague"}
    again = flow.begin(store, live=True, known=known(cm("19", {"a": "1", "b": "colleague"})))
    assert isinstance(again, Write) and again.intent.resource_version == "19"


# ---- another process goes on with the flow ---------------------------------------------------


def moved(flow: SaveFlow) -> SaveFlow:
    import json

    return SaveFlow.resumed(json.loads(json.dumps(flow.state())))


def test_a_write_in_flight_elsewhere_resumes_as_a_guarded_read_and_is_never_resent(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    seen: list[Phase] = []
    flow.observer = lambda f: seen.append(f.phase)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    assert seen == [Phase.WRITING]  # told before the write is sent
    other = moved(flow)  # that worker died with the write in flight
    assert other.phase is Phase.NEEDS_READ and other.pending_intent == flow.pending_intent
    step = other.begin(store, live=True)
    assert isinstance(step, Read) and step.reason is ReadReason.RECOVER
    done = other.read(store, step, ReadResult("object", cm("11", {"a": "2", "b": "1"}), ()))
    assert done.outcome.kind is OutcomeKind.SAVED


def test_a_flow_waiting_for_its_echo_resumes_waiting_and_an_idle_one_idle(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    assert moved(flow).phase is Phase.IDLE
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    flow.written(store, WriteVerdict.ACCEPTED, written_version="11")
    other = moved(flow)
    assert other.phase is Phase.CONFIRMING
    store.apply(Upsert("modified", cm("11", {"a": "2", "b": "1"})))
    confirmed = other.observe(store)
    assert confirmed is not None and confirmed.kind is OutcomeKind.SAVED


def test_a_read_in_flight_elsewhere_resumes_as_a_guarded_read(store: LiveResourceStore) -> None:
    flow = SaveFlow(UID)
    store.set_value(UID, ("data", "a"), "2")
    begin_write(flow, store)
    flow.written(store, WriteVerdict.UNKNOWN)
    assert isinstance(flow.begin(store, live=True), Read)
    assert flow.phase is Phase.READING
    assert moved(flow).phase is Phase.NEEDS_READ


@pytest.mark.parametrize(
    "state",
    [None, {}, {"uid": 1}, {"uid": UID, "phase": "flying"}, {"uid": UID, "phase": "idle", "intent": {"uid": UID}}],
)
def test_what_is_not_a_flow_state_is_refused(state: Any) -> None:
    with pytest.raises(ValueError):
        SaveFlow.resumed(state)
