"""One worker's draft sync over the memory backend: attaching replays what the backend holds, only
changed records are written, records wait while the backend is unreachable and are written when it
is back, messages are replayed or ignored, touches are spaced, and an edit always contended is
refused. (The contract suite, test_backend.py, runs the sync's cross-worker cases on every backend.)"""

from __future__ import annotations

import logging
import typing as t

import pytest

from flask_krm.drafts.backend import BackendUnavailable, DraftBackend, session_tag
from flask_krm.drafts.memory_backend import MemoryBackend
from flask_krm.drafts.sync import EDIT, EDIT_ATTEMPTS, RECOVERY, DraftSync, EditContended, field_name
from flask_krm.store import Edit, EditRecord, LiveResourceStore, RecoveryCopies
from tests.store.objects import CM_UID, configmap, modified, store_with

SESSION = "session-1"
EDITS = field_name(EDIT, "store-1", CM_UID)


class Switchable:
    """The memory backend behind a switch: while ``down``, every call raises BackendUnavailable;
    counts the swaps that reached it."""

    def __init__(self, inner: MemoryBackend | None = None) -> None:
        self.inner = inner or MemoryBackend()
        self.down = False
        self.swaps = 0
        self.touches = 0

    def __getattr__(self, name: str) -> t.Any:
        if self.down:
            raise BackendUnavailable("connection refused")
        return getattr(self.inner, name)

    def swap(self, *args: t.Any, **kwargs: t.Any) -> dict[str, int] | None:
        if self.down:
            raise BackendUnavailable("connection refused")
        self.swaps += 1
        return self.inner.swap(*args, **kwargs)

    def touch(self, session_id: str, lifetime: float) -> None:
        if self.down:
            raise BackendUnavailable("connection refused")
        self.touches += 1
        self.inner.touch(session_id, lifetime)


def record(level: str, sequence: int = 1) -> dict[str, t.Any]:
    return EditRecord(CM_UID, (Edit(("data", "level"), "info", level),), (), sequence).to_json()


def attached(backend: Switchable, worker: str = "worker-a") -> tuple[DraftSync, LiveResourceStore]:
    sync = DraftSync(t.cast(DraftBackend, backend), worker)
    store = store_with(configmap(), store=LiveResourceStore(recovery=RecoveryCopies(lifetime=600)))
    sync.attach(SESSION, "store-1", store, 60.0)
    return sync, store


def test_a_record_field_names_its_kind_store_and_uid() -> None:
    assert field_name(EDIT, "store-1", "uid-1") == "edit:store-1:uid-1"
    assert field_name(RECOVERY, "store-1", "") == "recovery:store-1:"


def test_attaching_replays_the_held_edit_records_and_ignores_a_malformed_one(caplog: pytest.LogCaptureFixture) -> None:
    backend = Switchable()
    backend.inner.write(SESSION, {EDITS: record("debug", 3), field_name(EDIT, "store-1", "cm-2"): {"no": "record"}}, 60)
    with caplog.at_level(logging.WARNING, logger="flask_krm.drafts"):
        _, store = attached(backend)
    assert store.draft(CM_UID)["data"]["level"] == "debug"  # type: ignore[index]
    assert store.edit_sequence(CM_UID) == 3
    assert "ignoring a malformed edit record in the draft backend" in caplog.text


def test_attaching_needs_the_backend() -> None:
    backend = Switchable()
    backend.down = True
    with pytest.raises(BackendUnavailable):
        attached(backend)


def test_an_edit_is_written_and_a_change_that_leaves_the_edits_writes_nothing() -> None:
    backend = Switchable()
    sync, store = attached(backend)
    sync.edit(SESSION, "store-1", lambda: store.set_value(CM_UID, ("data", "level"), "debug"))
    assert backend.swaps == 1
    held = EditRecord.from_json(backend.inner.read(SESSION)[EDITS])
    assert [(e.path, e.mine) for e in held.edits] == [(("data", "level"), "debug")]
    store.apply(modified(configmap("2", level="info", replicas="9")))  # the edit is as it was
    assert backend.swaps == 1
    store.revert(CM_UID)
    assert backend.swaps == 2


def test_an_edit_on_a_store_not_attached_is_just_made() -> None:
    sync = DraftSync(t.cast(DraftBackend, Switchable()), "worker-a")
    assert sync.edit(SESSION, "elsewhere", lambda: "made") == "made"


def test_records_wait_while_the_backend_is_down_and_are_written_when_it_is_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("flask_krm.drafts.sync.EDIT_RETRY_PAUSES", (0.0,))
    backend = Switchable()
    sync, store = attached(backend)
    told: list[bool] = []
    stop = sync.on_availability(told.append)
    backend.down = True
    sync.edit(SESSION, "store-1", lambda: store.set_value(CM_UID, ("data", "level"), "first"))
    sync.edit(SESSION, "store-1", lambda: store.set_value(CM_UID, ("data", "level"), "second"))
    assert sync.unavailable and told == [False]
    assert not sync.flush()
    backend.down = False
    assert sync.flush() and not sync.unavailable and told == [False, True]
    held = EditRecord.from_json(backend.inner.read(SESSION)[EDITS])
    assert held.edits[0].mine == "second"
    assert sync.flush()  # nothing waits
    stop()
    backend.down = True
    sync.edit(SESSION, "store-1", lambda: store.set_value(CM_UID, ("data", "level"), "third"))
    assert told == [False, True]  # no longer told


def test_another_workers_message_is_replayed_and_this_workers_own_or_a_malformed_one_ignored() -> None:
    sync, store = attached(Switchable())
    tag, other = session_tag(SESSION), session_tag("other")

    def level() -> str:
        return str(store.draft(CM_UID)["data"]["level"])  # type: ignore[index]

    for ignored in (
        {"worker": "worker-a", "session": tag, "records": {EDITS: record("own")}, "versions": {EDITS: 1}},
        {"worker": "worker-b", "session": tag, "records": {EDITS: record("no version")}, "versions": {}},
        {"worker": "worker-b", "session": tag, "records": {EDITS: record("str")}, "versions": {EDITS: "1"}},
        {"worker": "worker-b", "session": 7, "records": {EDITS: record("bad tag")}, "versions": {EDITS: 1}},
        {"worker": "worker-b", "session": tag, "records": {"page:p": record("page")}, "versions": {"page:p": 1}},
        {
            "worker": "worker-b",
            "session": other,
            "records": {EDITS: record("x")},
            "versions": {EDITS: 1},
        },
    ):
        sync.receive(ignored)  # type: ignore[arg-type]
        assert level() == "info"
    sync.receive({"worker": "worker-b", "session": tag, "records": {EDITS: record("theirs")}, "versions": {EDITS: 2}})
    assert level() == "theirs"
    sync.receive({"worker": "worker-b", "session": tag, "records": {EDITS: None}, "versions": {EDITS: 3}})
    assert level() == "info"  # a removed record: the edits are gone


def test_an_ended_session_is_forgotten_and_its_listener_told() -> None:
    backend = Switchable()
    sync, store = attached(backend)
    ended: list[str] = []
    sync.on_session_ended = ended.append
    sync.receive({"worker": "worker-b", "session": session_tag(SESSION), "ended": True})
    assert ended == [session_tag(SESSION)]
    store.set_value(CM_UID, ("data", "level"), "after the end")
    assert backend.swaps == 0


def test_a_session_is_touched_at_most_once_per_tenth_of_its_lifetime(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr("flask_krm.drafts.sync.time.monotonic", lambda: now[0])
    backend = Switchable()
    sync = DraftSync(t.cast(DraftBackend, backend), "worker-a")
    sync.touch(SESSION, 60.0)
    now[0] += 5.9
    sync.touch(SESSION, 60.0)
    assert backend.touches == 1
    now[0] += 0.2
    backend.down = True
    sync.touch(SESSION, 60.0)  # unreachable: nothing, and the next touch tries again
    backend.down = False
    sync.touch(SESSION, 60.0)
    assert backend.touches == 2


class AlwaysNewer(Switchable):
    """A backend where another worker always wrote a newer record first."""

    def swap(self, *args: t.Any, **kwargs: t.Any) -> dict[str, int] | None:
        self.swaps += 1
        return None


def test_an_edit_that_always_finds_a_newer_record_is_refused_as_contended() -> None:
    backend = AlwaysNewer()
    sync, store = attached(backend)
    made: list[int] = []

    def apply() -> None:
        made.append(1)
        store.set_value(CM_UID, ("data", "level"), f"try-{len(made)}")

    with pytest.raises(EditContended):
        sync.edit(SESSION, "store-1", apply)
    assert len(made) == EDIT_ATTEMPTS and backend.swaps == EDIT_ATTEMPTS


def test_a_recovery_copy_is_written_when_its_object_goes() -> None:
    backend = Switchable()
    sync, store = attached(backend)
    sync.edit(SESSION, "store-1", lambda: store.set_value(CM_UID, ("data", "level"), "debug"))
    store.remove_resource(CM_UID)
    held = backend.inner.read(SESSION)
    assert EDITS not in held or held[EDITS] is None
    assert held.get(field_name(RECOVERY, "store-1", CM_UID)) is not None
