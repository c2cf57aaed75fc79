"""The client half of the conformance corpus: events and edits in, store state out.

Each fixture whose ``suites`` include ``client`` is one test. Its ``events`` (the wire-projected
bodies) are parsed by the shared wire parser and fed to a store; its ``edits`` run once event
``after`` has been applied; ``expect`` and every ``checkpoints`` entry are checked. An edit op or
an expectation key this runner does not know fails the test, so a new corpus feature is noticed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from flask_krm.events import Event, from_json
from flask_krm.store import LiveResourceStore, ReadOnlyPathError
from flask_krm.store.paths import MISSING, get_at
from tests.corpus import body, fixture_params

EDIT_KEYS = {"after", "op", "uid", "path", "value", "newKey", "body"}
EXPECT_KEYS = {"uids", "dirty", "conflicts", "draftSubset", "absentPaths", "readOnlyPaths", "flashed", "patch"}
CLIENT_KEYS = {"edits", "expect"}


def wire_event(fixture: Mapping[str, Any], spec: Mapping[str, Any]) -> Event:
    """The fixture event as the gateway writes it, parsed by the shared wire parser."""
    unknown = set(spec) - {"type", "body", "redacted", "identity", "code", "terminal"}
    assert not unknown, f"event fields this runner does not know: {sorted(unknown)}"
    wire: dict[str, Any] = {"type": spec["type"]}
    if spec["type"] == "reset":
        wire["scope"] = fixture.get("scope") or {}
        wire["projection"] = fixture.get("projection") or "krm-full/v1"
    elif spec["type"] in ("added", "modified"):
        wire["object"] = body(spec["body"])
        wire["redacted"] = spec.get("redacted", [])
    elif spec["type"] == "deleted":
        wire["identity"] = spec["identity"]
    elif spec["type"] == "error":
        wire.update(code=spec["code"], message="", terminal=spec.get("terminal", False))
    return from_json(wire)


def apply_edit(store: LiveResourceStore, edit: Mapping[str, Any]) -> None:
    """Run one fixture edit; ``path`` always addresses the field itself."""
    unknown = set(edit) - EDIT_KEYS
    assert not unknown, f"edit fields this runner does not know: {sorted(unknown)}"
    op = edit["op"]
    if op == "set":
        store.set_value(edit["uid"], edit["path"], edit["value"])
    elif op == "remove":
        store.remove_key(edit["uid"], edit["path"])
    elif op == "addKey":
        store.add_key(edit["uid"], edit["path"], edit.get("value", ""))
    elif op == "renameKey":
        store.rename_key(edit["uid"], edit["path"], edit["newKey"])
    elif op == "revert":
        store.revert(edit["uid"], edit.get("path"))
    elif op == "adopt":
        store.adopt_saved(body(edit["body"]))
    else:
        pytest.fail(f"edit op {op!r} is not known to this runner")


def is_subset(actual: Any, want: Any) -> bool:
    """Deep subset; arrays element-wise and of the same length."""
    if isinstance(want, list):
        return (
            isinstance(actual, list) and len(actual) == len(want) and all(is_subset(a, w) for a, w in zip(actual, want))
        )
    if isinstance(want, dict):
        return isinstance(actual, dict) and all(k in actual and is_subset(actual[k], v) for k, v in want.items())
    return type(actual) is type(want) and actual == want


def keyset(paths: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((tuple(p) for p in paths), key=repr)


def check(
    store: LiveResourceStore, flashed: dict[str, set[tuple[Any, ...]]], want: Mapping[str, Any], where: str
) -> None:
    unknown = set(want) - EXPECT_KEYS - {"after"}
    assert not unknown, f"{where}: expectation keys this runner does not know: {sorted(unknown)}"
    uids = store.uids()
    if "uids" in want:
        assert sorted(uids) == sorted(want["uids"]), f"{where}: uids"
    if "dirty" in want:
        dirty = [p for uid in uids for p in store.dirty(uid)]
        assert keyset(dirty) == keyset(want["dirty"]), f"{where}: dirty paths"
        assert keyset([c.path for uid in uids for c in store.changes(uid)]) == keyset(dirty)
        for path in want["dirty"]:
            assert any(store.is_dirty(uid, path) for uid in uids), f"{where}: is_dirty({path}) disagrees"
    if "conflicts" in want:
        got = [c for uid in uids for c in store.conflicts(uid)]
        wanted = [c if isinstance(c, dict) else {"path": c} for c in want["conflicts"]]
        assert keyset([c.path for c in got]) == keyset([c["path"] for c in wanted]), f"{where}: conflict paths"
        for expected in wanted:
            if "theirs" in expected:
                found = next(c for c in got if c.path == tuple(expected["path"]))
                assert found.present and found.theirs == expected["theirs"], f"{where}: theirs at {expected['path']}"
    subject = uids[0] if len(uids) == 1 else None
    if "draftSubset" in want:
        drafts = [store.draft(uid) for uid in ([subject] if subject else uids)]
        assert any(is_subset(d, want["draftSubset"]) for d in drafts), f"{where}: draftSubset; drafts: {drafts}"
    for path in want.get("absentPaths", []):
        uid = subject or uids[0]
        assert get_at(store.server(uid), path) is MISSING, f"{where}: {path} is a ghost in the server object"
        assert get_at(store.draft(uid), path) is MISSING, f"{where}: {path} is a ghost in the draft"
    for path in want.get("readOnlyPaths", []):
        uid = subject or uids[0]
        assert store.is_read_only(uid, path), f"{where}: {path} must be read-only"
        assert not store.is_dirty(uid, path), f"{where}: {path} is read-only and can never be dirty"
        with pytest.raises(ReadOnlyPathError):
            store.set_value(uid, path, "hunter2")
    for path in want.get("flashed", []):
        assert any(tuple(path) in f for f in flashed.values()), f"{where}: {path} must flash"
    if "patch" in want:
        for uid in [subject] if subject else uids:
            assert store.patch(uid) == want["patch"], f"{where}: patch({uid})"


@pytest.mark.parametrize("fixture", fixture_params("client"))
def test_client_fixture(fixture: dict[str, Any]) -> None:
    client = fixture.get("client") or {}
    assert not set(client) - CLIENT_KEYS, f"client keys this runner does not know: {sorted(set(client) - CLIENT_KEYS)}"
    assert client.get("expect"), "a client fixture without expectations would check nothing"
    events = [wire_event(fixture, spec) for spec in fixture["events"]]
    edits = client.get("edits") or []
    checkpoints = fixture.get("checkpoints") or []
    for position in [e["after"] for e in edits] + [c["after"] for c in checkpoints]:
        assert 0 <= position < len(events), f"after: {position} is outside the event list"

    store = LiveResourceStore()
    flashed: dict[str, set[tuple[Any, ...]]] = {}
    for index, event in enumerate(events):
        for uid in store.apply(event):
            if uid in store.uids():
                flashed.setdefault(uid, set()).update(store.flashed(uid))
        for edit in edits:
            if edit["after"] == index:
                apply_edit(store, edit)
        for checkpoint in checkpoints:
            if checkpoint["after"] == index:
                check(store, flashed, checkpoint, f"after event {index}")
    check(store, flashed, client["expect"], "at the end")
