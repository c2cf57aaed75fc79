"""An edit reaching a worker whose view of the object went idle is made on the object as it is now.

A worker that answers a session's edits but serves none of its page channels holds its feed only
for a while after each request; once the feed has stopped, the next request starts it again and
waits for it to be live before the edit is made, so the edit record never takes a stale server
value as its base (every other worker would open a conflict on it, and a resolution made there
would come back as a conflict).
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterator

import gevent
import pytest

from flask_krm.testing.simulator import KubeSimulator
from flask_krm.ui import binding, live
from tests.drafts.test_concurrent_edits import edit_record, field
from tests.drafts.test_workers import NAMESPACE, Cluster, Roaming, editor_url, new_configmap
from tests.redis_server import RedisServer
from tests.security.hosts import make_namespace, merge_patch

HOLD: t.Final = 0.3
"""Seconds a request holds its worker's feed here (instead of half a minute)."""


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        make_namespace(simulator, NAMESPACE)
        yield simulator


@pytest.fixture
def cluster(kube: KubeSimulator, clean_redis: RedisServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    monkeypatch.setattr(binding, "RENDER_HOLD", HOLD)
    monkeypatch.setattr(live, "RENDER_HOLD", HOLD)
    found = Cluster(kube, clean_redis)
    for app in found.workers:
        app.config["KRM_WATCH_LINGER"] = 0
    yield found
    found.stop()


def test_an_edit_on_a_worker_whose_feed_stopped_builds_on_the_server_object_of_now(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    name = new_configmap(kube, a="a", b="b")
    roaming = Roaming(cluster)
    page = roaming.open(0, editor_url(name))
    assert field(roaming, 1, page, "set", ["data", "a"], value="mine-a")() == 200
    gevent.sleep(HOLD + 1.0)  # no channel holds either feed: both have stopped
    merge_patch(kube, NAMESPACE, "configmaps", name, {"data": {"b": "theirs-b"}})
    gevent.sleep(0.3)
    assert field(roaming, 1, page, "set", ["data", "b"], value="mine-b")() == 200
    record = edit_record(cluster.redis)
    bases = {edit["path"][-1]: edit.get("base") for edit in record["edits"]}
    assert bases == {"a": "a", "b": "theirs-b"}, record
    assert record.get("conflicts") == [], record
    roaming.close()
