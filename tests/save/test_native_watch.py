"""The native source against the simulator: LIST then WATCH, resume without a snapshot, relist on 410."""

from __future__ import annotations

import threading
import time
import typing as t

import pytest

from flask_krm.events import Reset, StreamError, Synced, Upsert
from flask_krm.save.writer import KubeWriter
from flask_krm.scope import Scope
from flask_krm.store import LiveResourceStore
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.upstream.native import ConnectionState, NativeItem, NativeWatch, StateChange

from .conftest import wait_for
from .test_perform import admin_patch, create_configmap


class Runner:
    """Runs a NativeWatch on a thread, applying its events to a native store."""

    def __init__(self, watch: NativeWatch) -> None:
        self.watch = watch
        self.store = LiveResourceStore()
        self.items: list[NativeItem] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for item in self.watch.items():
            self.items.append(item)
            if not isinstance(item, StateChange):
                self.store.apply(item)

    def states(self) -> list[ConnectionState]:
        return [i.state for i in self.items if isinstance(i, StateChange)]

    def resets(self) -> int:
        return sum(1 for i in self.items if isinstance(i, Reset))

    def stop(self) -> None:
        self.watch.close()
        self.thread.join(timeout=5)
        assert not self.thread.is_alive()


@pytest.fixture
def runners() -> t.Iterator[list[Runner]]:
    started: list[Runner] = []
    yield started
    for runner in started:
        runner.stop()


def start(runners: list[Runner], kube: KubeSimulator, namespace: str, user: str = "editor") -> Runner:
    scope = Scope(target="dev", version="v1", resource="configmaps", namespace=namespace)
    runner = Runner(NativeWatch(kube.api_client(user), scope, sleep=time.sleep, max_attempts=3))
    runners.append(runner)
    return runner


def test_list_then_watch_resume_without_a_snapshot_and_relist_on_410(kube, namespace, runners) -> None:
    uid = create_configmap(kube, namespace, "app", {"a": "1"})["metadata"]["uid"]
    runner = start(runners, kube, namespace)
    wait_for(lambda: ConnectionState.LIVE in runner.states(), what="live")
    kinds = [type(i).__name__ for i in runner.items]
    assert kinds == ["StateChange", "Reset", "Upsert", "Synced", "StateChange"]
    assert runner.items[1].projection == "native"

    runner.store.set_value(uid, ("data", "mine"), "draft")
    admin_patch(kube, namespace, "app", {"data": {"a": "2"}})
    wait_for(lambda: runner.store.server(uid)["data"]["a"] == "2", what="a live change")

    assert kube.faults.drop_watches() >= 1
    admin_patch(kube, namespace, "app", {"data": {"a": "3"}})  # while the watch is down
    wait_for(lambda: runner.store.server(uid)["data"]["a"] == "3", what="the change made while down")
    assert runner.resets() == 1, "a resume must not start a new snapshot"
    assert ConnectionState.RETRYING in runner.states()
    assert runner.store.draft(uid)["data"]["mine"] == "draft"

    kube.faults.compact()
    assert kube.faults.expire_watches() >= 1
    wait_for(lambda: runner.resets() == 2 and isinstance(runner.items[-1], (Synced, StateChange)), what="the relist")
    wait_for(lambda: runner.watch.state is ConnectionState.LIVE, what="live again")
    assert runner.store.draft(uid)["data"]["mine"] == "draft"  # a draft survives a relist while its uid does


def test_native_objects_are_unprojected(kube, namespace, runners) -> None:
    answer = KubeWriter(kube.api_client("admin")).request(
        "POST",
        f"/api/v1/namespaces/{namespace}/secrets",
        body={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "data": {"token": "dmFsdWU="}},
    )
    assert answer.ok
    scope = Scope(target="dev", version="v1", resource="secrets", namespace=namespace)
    runner = Runner(NativeWatch(kube.api_client("editor"), scope, sleep=time.sleep))
    runners.append(runner)
    wait_for(lambda: runner.watch.state is ConnectionState.LIVE, what="live")
    added = [i for i in runner.items if isinstance(i, Upsert)]
    assert added[0].object["data"] == {"token": "dmFsdWU="} and added[0].redacted == ()


def test_access_refusal_is_terminal(kube, namespace, runners) -> None:
    kube.add_user("nobody")
    runner = start(runners, kube, namespace, user="nobody")
    wait_for(lambda: runner.watch.state is ConnectionState.TERMINAL, what="terminal")
    errors = [i for i in runner.items if isinstance(i, StreamError)]
    assert [(e.code, e.terminal) for e in errors] == [("FORBIDDEN", True)]
    runner.thread.join(timeout=2)
    assert not runner.thread.is_alive()


def test_an_unreachable_server_exhausts_the_bounded_retries(kube, namespace, runners) -> None:
    kube.faults.refuse_connections(5.0, respond_503=True)
    try:
        runner = start(runners, kube, namespace)
        runner.watch.backoff = type(runner.watch.backoff)(initial=0.01, maximum=0.02)
        wait_for(lambda: runner.watch.state is ConnectionState.EXHAUSTED, what="exhausted")
    finally:
        kube.faults.accept_connections()
    assert runner.states().count(ConnectionState.RETRYING) == 2


def test_a_native_editor_saves_with_native_validation_and_recovers_with_a_native_read(
    kube, namespace, runners, caplog
) -> None:
    import logging

    from flask_krm.save.flow import SaveFlow
    from flask_krm.save.outcomes import OutcomeKind
    from flask_krm.save.perform import save_edit
    from flask_krm.save.publish import write_attempted
    from flask_krm.save.writer import WriteRequest, WriteResult, default_save

    from .conftest import editor_target, unconditional_patch

    answer = KubeWriter(kube.api_client("admin")).request(
        "POST",
        f"/api/v1/namespaces/{namespace}/secrets",
        body={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "data": {"token": "b2xk"}},
    )
    assert answer.ok and answer.body is not None
    uid = answer.body["metadata"]["uid"]
    scope = Scope(target="dev", version="v1", resource="secrets", namespace=namespace)
    runner = Runner(NativeWatch(kube.api_client("editor"), scope, sleep=time.sleep))
    runners.append(runner)
    wait_for(lambda: runner.watch.state is ConnectionState.LIVE, what="live")
    live = lambda: runner.watch.state is ConnectionState.LIVE  # noqa: E731

    def colleague_first(request: WriteRequest) -> WriteResult:
        unconditional_patch(kube, f"/api/v1/namespaces/{namespace}/secrets/creds", {"metadata": {"labels": {"x": "y"}}})
        return default_save(request)

    flow = SaveFlow(uid)
    runner.store.set_value(uid, ("data", "token"), "bmV3LXRva2Vu")  # native: the value is the person's to edit
    caplog.set_level(logging.DEBUG)
    records: list[t.Any] = []
    with write_attempted.connected_to(lambda sender, **kw: records.append(kw["record"])):
        stale = save_edit(
            editor_target(kube, scope, projection=None, hook=colleague_first), runner.store, flow, live=live()
        )
        assert stale.kind is OutcomeKind.VERSION_STALE  # a native read refreshed the base; the edit is kept
        assert runner.store.draft(uid)["data"]["token"] == "bmV3LXRva2Vu"
        saved = save_edit(editor_target(kube, scope, projection=None), runner.store, flow, live=live())
    assert saved.kind in (OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED)
    secret = KubeWriter(kube.api_client("admin")).request("GET", f"/api/v1/namespaces/{namespace}/secrets/creds").body
    assert (
        secret is not None
        and secret["data"] == {"token": "bmV3LXRva2Vu"}
        and secret["metadata"]["labels"] == {"x": "y"}
    )
    assert [r.outcome for r in records] == ["version-stale", saved.kind.value]
    assert all(r.redacted_paths == ("/data/token",) for r in records)
    assert "bmV3LXRva2Vu" not in caplog.text + repr(records) and "b2xk" not in caplog.text + repr(records)
