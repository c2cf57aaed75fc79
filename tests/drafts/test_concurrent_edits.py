"""Two edits of one object arriving at the same instant on two workers: both land, every time.

One browser session sends pairs of requests at once, one to each worker (a load balancer without
sticky sessions, two tabs, or a reconnect flushing queued edits): field edits, items added to one
list, YAML texts and conflict resolutions. After each pair the session's edit record in Redis (what
every worker and the next Save build on) must hold both. ``KRM_EDIT_PAIRS`` sets the pairs per
kind (default 8; 130 sends over 1,000 edits).
"""

from __future__ import annotations

import html
import json
import os
import re
import secrets
import typing as t
from collections.abc import Callable, Iterator
from urllib.parse import quote

import gevent
import gevent.event
import pytest

from flask_krm import Scope
from flask_krm.drafts.redis_backend import RedisBackend
from flask_krm.testing.simulator import KubeSimulator
from tests.drafts.test_workers import NAMESPACE, Cluster, Roaming, editor_url, new_configmap, records
from tests.redis_server import RedisServer
from tests.security.hosts import TARGET, Page, admin_writer, make_namespace, merge_patch

PAIRS: t.Final = int(os.environ.get("KRM_EDIT_PAIRS", "8"))


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        make_namespace(simulator, NAMESPACE)
        yield simulator


@pytest.fixture
def cluster(kube: KubeSimulator, clean_redis: RedisServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """Two workers; after the test, at least one write must have found a newer record (else the
    pairs never met, and the test proved nothing)."""
    refused = []
    swap = RedisBackend.swap

    def counted(self: RedisBackend, *args: t.Any, **kwargs: t.Any) -> dict[str, int] | None:
        written = swap(self, *args, **kwargs)
        if written is None:
            refused.append(1)
        return written

    monkeypatch.setattr(RedisBackend, "swap", counted)
    found = Cluster(kube, clean_redis)
    yield found
    found.stop()
    assert refused, "no two edits of a pair ever met: nothing was tested"


def edit_record(redis: RedisServer) -> dict[str, t.Any]:
    found = [value for name, value in records(redis).items() if name.startswith("edit:")]
    assert len(found) == 1, found
    return found[0]


def mine(record: dict[str, t.Any]) -> dict[tuple[t.Any, ...], t.Any]:
    """Each edited path of ``record`` (items named as the record holds them) -> the value the person gave it."""
    return {tuple(json.dumps(s) for s in edit["path"]): edit.get("mine") for edit in record["edits"]}


def at_once(*requests: Callable[[], int]) -> list[int]:
    """Send ``requests`` together (each in its own greenlet, released at the same moment)."""
    start = gevent.event.Event()

    def run(request: Callable[[], int]) -> int:
        start.wait()
        return request()

    greenlets = [gevent.spawn(run, request) for request in requests]
    gevent.sleep(0)
    start.set()
    gevent.joinall(greenlets, raise_error=True)
    return [g.value for g in greenlets]


def post(roaming: Roaming, index: int, page: Page, action: str, form: dict[str, str]) -> Callable[[], int]:
    editor = page.component("editor")
    return lambda: roaming.post(index, f"/krm/ui/components/{editor}/{action}", form, page.headers(editor))[0]


def field(roaming: Roaming, index: int, page: Page, op: str, path: list[t.Any], **form: str) -> Callable[[], int]:
    return post(roaming, index, page, "edit", {"op": op, "path": json.dumps(path), **form})


def test_simultaneous_field_edits_of_one_object_on_two_workers_both_land(cluster: Cluster, kube: KubeSimulator) -> None:
    name = new_configmap(kube, a="", b="")
    roaming = Roaming(cluster)
    page = roaming.open(0, editor_url(name))
    lost = []
    for n in range(PAIRS):
        answers = at_once(
            field(roaming, 0, page, "set", ["data", "a"], value=f"a{n}"),
            field(roaming, 1, page, "set", ["data", "b"], value=f"b{n}"),
        )
        assert answers == [200, 200]
        held = mine(edit_record(cluster.redis))
        lost += [key for key in "ab" if held.get(('"data"', f'"{key}"')) != f"{key}{n}"]
    assert lost == [], f"{len(lost)} of {2 * PAIRS} answered edits lost"
    roaming.close()


def test_simultaneous_item_additions_to_one_list_on_two_workers_both_land(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    name = f"web-{secrets.token_hex(4)}"
    container = {"name": "web", "image": "nginx", "env": [{"name": "START", "value": "1"}]}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }
    answer = admin_writer(kube).request("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", body=body)
    assert answer.ok, answer
    scope = Scope(target=TARGET, group="apps", version="v1", resource="deployments", namespace=NAMESPACE)
    roaming = Roaming(cluster)
    page = roaming.open(0, f"/edit?scope={quote(scope.canonical_query(), safe='')}&name={name}")
    env = ["spec", "template", "spec", "containers", {"name": "web"}, "env"]
    for n in range(PAIRS):
        answers = at_once(
            field(roaming, 0, page, "add_item", env, **{"item.name": f"A{n}"}),
            field(roaming, 1, page, "add_item", env, **{"item.name": f"B{n}"}),
        )
        assert answers == [200, 200]
    held = json.dumps([edit.get("mine") for edit in edit_record(cluster.redis)["edits"]])
    missing = [f"{side}{n}" for n in range(PAIRS) for side in "AB" if f'"name": "{side}{n}"' not in held]
    assert missing == [], f"{len(missing)} of {2 * PAIRS} answered item additions lost: {held}"
    roaming.close()


def test_simultaneous_yaml_edits_of_one_object_on_two_workers_both_land(cluster: Cluster, kube: KubeSimulator) -> None:
    name = new_configmap(kube, a="a", b="b")
    roaming = Roaming(cluster)
    page = roaming.open(0, editor_url(name))
    editor = page.component("editor")
    found = re.search(rf'<pre class="krm-yaml-source" id="{editor}-yaml-source" hidden>(.*?)</pre>', page.html, re.S)
    assert found is not None
    source = html.unescape(found.group(1))
    assert "  a: a\n" in source and "  b: b\n" in source, source
    lost = []
    before = source
    for n in range(PAIRS):
        after_a = re.sub(r"(?m)^  a: .*$", f"  a: a{n}", before)
        after_b = re.sub(r"(?m)^  b: .*$", f"  b: b{n}", before)
        answers = at_once(
            post(roaming, 0, page, "yaml", {"before": before, "yaml": after_a}),
            post(roaming, 1, page, "yaml", {"before": before, "yaml": after_b}),
        )
        assert answers == [200, 200]
        held = mine(edit_record(cluster.redis))
        lost += [key for key in "ab" if held.get(('"data"', f'"{key}"')) != f"{key}{n}"]
        before = re.sub(r"(?m)^  b: .*$", f"  b: b{n}", after_a)
    assert lost == [], f"{len(lost)} of {2 * PAIRS} answered YAML edits lost"
    roaming.close()


def test_simultaneous_conflict_resolutions_on_two_workers_both_land(cluster: Cluster, kube: KubeSimulator) -> None:
    name = new_configmap(kube, a="a", b="b")
    roaming = Roaming(cluster)
    page = roaming.open(0, editor_url(name))
    wrong = []
    for n in range(max(2, PAIRS // 2)):  # each needs a server change both workers see
        assert at_once(
            field(roaming, 0, page, "set", ["data", "a"], value=f"mine-a{n}"),
            field(roaming, 1, page, "set", ["data", "b"], value=f"mine-b{n}"),
        ) == [200, 200]
        merge_patch(kube, NAMESPACE, "configmaps", name, {"data": {"a": f"theirs-a{n}", "b": f"theirs-b{n}"}})
        with gevent.Timeout(10, AssertionError(f"no conflicts opened: {edit_record(cluster.redis)}")):
            while len(edit_record(cluster.redis).get("conflicts", [])) < 2:
                gevent.sleep(0.02)
        gevent.sleep(0.3)  # both workers' watches delivered the change
        assert at_once(
            field(roaming, 0, page, "keep_mine", ["data", "a"]),
            field(roaming, 1, page, "take_theirs", ["data", "b"]),
        ) == [200, 200]
        record = edit_record(cluster.redis)
        held = mine(record)
        if record.get("conflicts") or held.get(('"data"', '"a"')) != f"mine-a{n}" or ('"data"', '"b"') in held:
            wrong.append(record)
    assert wrong == [], f"{len(wrong)} pairs of answered resolutions lost one: {wrong[:2]}"
    roaming.close()


def test_two_tabs_typing_into_two_fields_through_three_workers_in_turn_keep_every_key(
    kube: KubeSimulator, clean_redis: RedisServer
) -> None:
    cluster = Cluster(kube, clean_redis, count=3)
    try:
        name = new_configmap(kube, a="a-", b="b-")
        roaming = Roaming(cluster)
        page = roaming.open(0, editor_url(name))
        typed = {"a": "a-", "b": "b-"}
        turn = iter(range(10_000))

        def tab(key: str) -> None:
            for n in range(PAIRS * 2):
                before = typed[key]
                typed[key] += "xyz"[n % 3]
                worker = next(turn) % 3
                assert field(roaming, worker, page, "set", ["data", key], value=typed[key], **{"from": before})() == 200

        gevent.joinall([gevent.spawn(tab, "a"), gevent.spawn(tab, "b")], raise_error=True)
        held = mine(edit_record(cluster.redis))
        assert held.get(('"data"', '"a"')) == typed["a"] and held.get(('"data"', '"b"')) == typed["b"], held
        roaming.close()
    finally:
        cluster.stop()
