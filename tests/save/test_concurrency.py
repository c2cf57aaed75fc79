"""Two editors and a controller saving the same object concurrently: no lost update."""

from __future__ import annotations

import threading
import time

from flask_krm.save.flow import Phase, SaveFlow
from flask_krm.save.outcomes import OutcomeKind
from flask_krm.save.perform import save_edit
from flask_krm.testing.simulator import WriteRequest as SimulatorWrite

from .conftest import editor_target, new_store, wait_for
from .test_perform import admin_patch, create_configmap, editor_scope, read

ROUNDS = 12
ACCEPTED = {OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED}
SURFACED = {OutcomeKind.VERSION_STALE, OutcomeKind.DRAFT_CONFLICT, OutcomeKind.RECOVERING}


def test_two_editors_and_a_controller_never_lose_an_update(kube, namespace, feeds) -> None:
    created = create_configmap(kube, namespace, "app", {"shared": "initial", "counter": "0"})
    uid = created["metadata"]["uid"]
    scope = editor_scope(namespace, "app")
    applied: list[tuple[str | None, str | None]] = []  # (old shared, new shared) per applied write, in order

    def record(write: SimulatorWrite) -> None:
        # admission runs before the version check: a write applies when its precondition holds
        if write.namespace == namespace and write.verb == "patch" and write.old is not None:
            if write.new["metadata"]["resourceVersion"] == write.old["metadata"]["resourceVersion"]:
                applied.append((write.old["data"].get("shared"), write.new["data"].get("shared")))

    remove = kube.faults.mutate_writes(record)
    attempts: dict[str, list[tuple[str, str, OutcomeKind]]] = {"alice": [], "bob": []}
    stop_controller = threading.Event()
    controller_writes: list[str] = []

    def controller() -> None:
        n = 0
        while not stop_controller.is_set():
            n += 1
            admin_patch(kube, namespace, "app", {"data": {"counter": str(n)}})
            controller_writes.append(str(n))
            time.sleep(0.005)

    def editor(name: str) -> None:
        store = new_store()
        feed = feeds(store, scope, kube.api_client("editor"))
        flow = SaveFlow(uid)
        target = editor_target(kube, scope)
        for n in range(ROUNDS):
            value = f"{name}-{n}"
            wait_for(lambda: flow.observe(store) or flow.phase is not Phase.CONFIRMING, what="an echo")
            if store.conflicts(uid):
                store.revert(uid, ("data", "shared"))
            store.set_value(uid, ("data", "shared"), value)
            seen = store.server(uid)["data"]["shared"]
            outcome = save_edit(target, store, flow, live=feed.live)
            attempts[name].append((value, seen, outcome.kind))

    try:
        threads = [threading.Thread(target=controller)] + [threading.Thread(target=editor, args=(n,)) for n in attempts]
        for thread in threads:
            thread.start()
        for thread in threads[1:]:
            thread.join(timeout=60)
        stop_controller.set()
        threads[0].join(timeout=10)
    finally:
        remove()

    every = [a for name in attempts for a in attempts[name]]
    assert len(every) == 2 * ROUNDS
    # every attempt was either accepted or surfaced to the person: nothing else happened
    assert {kind for _, _, kind in every} <= ACCEPTED | SURFACED | {OutcomeKind.NOTHING_TO_SAVE}
    accepted = [(value, seen) for value, seen, kind in every if kind in ACCEPTED]
    assert accepted, "no editor write was ever accepted"
    assert any(kind in SURFACED for _, _, kind in every), "no write was ever rejected: no race happened"
    # no lost update: an accepted write replaced exactly the value its editor had seen
    writes_of = {new: old for old, new in applied if old != new}
    for value, seen in accepted:
        assert writes_of[value] == seen, f"{value} overwrote {writes_of[value]!r}, but its editor saw {seen!r}"
    # the controller's field was never overwritten by an editor's narrow patch
    final = read(kube, namespace, "app")["data"]
    assert final["counter"] == controller_writes[-1]
    last_shared = [new for old, new in applied if old != new][-1]
    assert final["shared"] == last_shared
