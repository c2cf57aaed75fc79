"""Several workers on one Redis: pages, edits, Saves and sign-out behave as on one worker.

Each "worker" is a whole application (the security suite's minimal host) with the same secret key
and ``KRM_DRAFTS_URL``, in this one process; a :class:`Roaming` browser sends each request to the
worker the test names, carrying its cookie, as a load balancer without sticky sessions would. A
restart is every application shut down and new ones made.
"""

from __future__ import annotations

import json
import re
import secrets
import typing as t
from collections.abc import Iterator
from urllib.parse import quote

import gevent
import pytest
from flask import Flask
from flask_login import logout_user

from flask_krm import Scope
from flask_krm.drafts.backend import session_tag
from flask_krm.drafts.redis_backend import RedisBackend
from flask_krm.sessions import SESSION_ID_KEY
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.testing.simulator.registry import WriteRequest as AdmissionRequest
from tests.redis_server import RedisServer
from tests.security.hosts import (
    TARGET,
    Browser,
    Page,
    Recorder,
    Stream,
    admin_writer,
    configmap,
    create,
    make_host,
    make_namespace,
    merge_patch,
    read,
    shut_down,
)

NAMESPACE: t.Final = "workers"


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        make_namespace(simulator, NAMESPACE)
        yield simulator


class Cluster:
    """Workers sharing one Redis and one secret key; :meth:`restart` replaces every one of them."""

    def __init__(self, kube: KubeSimulator, redis: RedisServer, count: int = 2) -> None:
        self.kube, self.redis, self.count = kube, redis, count
        self.secret_key = secrets.token_hex(16)
        self.workers: list[Flask] = []
        self.start()

    def start(self) -> None:
        self.workers = [self._worker() for _ in range(self.count)]

    def _worker(self) -> Flask:
        app = make_host(self.kube, Recorder(), SECRET_KEY=self.secret_key, KRM_DRAFTS_URL=self.redis.url)
        app.add_url_rule("/logout", "logout", lambda: (logout_user(), "signed out")[1])
        return app

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        for app in self.workers:
            shut_down(app)
        self.workers = []


@pytest.fixture
def cluster(kube: KubeSimulator, clean_redis: RedisServer) -> Iterator[Cluster]:
    found = Cluster(kube, clean_redis)
    yield found
    found.stop()


class Roaming:
    """One browser session whose requests reach whichever worker the test names."""

    def __init__(self, cluster: Cluster, user: str = "editor") -> None:
        self.cluster = cluster
        self.browsers: dict[int, Browser] = {}
        self.cookie: str | None = None
        self.user = user
        self.answered: t.Any = None
        """The headers of the last answer to :meth:`post`."""
        self.on(0).sign_in(user)
        self._keep(self.browsers[0])

    def on(self, index: int) -> Browser:
        """The browser, pointed at worker ``index``, with the session cookie it last had."""
        app = self.cluster.workers[index]
        browser = self.browsers.get(index)
        if browser is None or browser.app is not app:
            browser = self.browsers[index] = Browser(app)
        if self.cookie is not None:
            browser.client.set_cookie("session", self.cookie)
        return browser

    def _keep(self, browser: Browser) -> None:
        cookie = browser.client.get_cookie("session")
        self.cookie = cookie.value if cookie is not None else None

    def open(self, index: int, url: str, status: int = 200) -> Page:
        browser = self.on(index)
        page = browser.open(url, status)
        self._keep(browser)
        return page

    def post(self, index: int, url: str, data: dict[str, str], headers: dict[str, str]) -> tuple[int, str]:
        browser = self.on(index)
        answer = browser.post(url, data, headers)
        self._keep(browser)
        self.answered = answer.headers
        return answer.status_code, answer.get_data(as_text=True)

    def get(self, index: int, url: str) -> int:
        browser = self.on(index)
        status = browser.client.get(url).status_code
        self._keep(browser)
        return status

    def close(self) -> None:
        for browser in self.browsers.values():
            browser.close()


def editor_url(name: str) -> str:
    scope = Scope(target=TARGET, version="v1", resource="configmaps", namespace=NAMESPACE)
    return f"/edit?scope={quote(scope.canonical_query(), safe='')}&name={name}"


def new_configmap(kube: KubeSimulator, **data: str) -> str:
    name = f"cm-{secrets.token_hex(4)}"
    create(kube, NAMESPACE, "configmaps", configmap(name, NAMESPACE, data or {"level": "info"}))
    return name


def edit(roaming: Roaming, index: int, page: Page, key: str, value: str) -> int:
    editor = page.component("editor")
    form = {"op": "set", "path": json.dumps(["data", key]), "value": value}
    return roaming.post(index, f"/krm/ui/components/{editor}/edit", form, page.headers(editor))[0]


def save(roaming: Roaming, index: int, page: Page, **form: str) -> str:
    editor = page.component("editor")
    status, body = roaming.post(index, f"/krm/ui/components/{editor}/actions/save", form, page.headers(editor))
    found = re.search(r'data-krm-outcome="([^"]+)"', body)
    return found.group(1) if found else f"HTTP {status}: {body[:300]}"


def records(redis: RedisServer) -> dict[str, t.Any]:
    """Every record of every session in Redis."""
    client = redis.client()
    out: dict[str, t.Any] = {}
    for key in client.scan_iter(match="krm:*:records"):
        for name, value in client.hgetall(key).items():
            out[name.decode()] = json.loads(value)
    return out


def opened_editor(cluster: Cluster, kube: KubeSimulator, **data: str) -> tuple[Roaming, str, Page]:
    """A new session, a new ConfigMap's name (with ``data``) and its editor page, rendered by worker 0."""
    name = new_configmap(kube, **data)
    roaming = Roaming(cluster)
    return roaming, name, roaming.open(0, editor_url(name))


def watched_editor(cluster: Cluster, kube: KubeSimulator, channel_on: int) -> tuple[Roaming, str, Page, Stream]:
    """A new ConfigMap's name and editor page, rendered by worker 0, and its channel open on ``channel_on``."""
    roaming, name, page = opened_editor(cluster, kube)
    channel = roaming.on(channel_on).stream(t.cast(str, page.channel_url))
    channel.until_text(": connected")
    return roaming, name, page, channel


def test_an_edit_on_one_worker_reaches_the_page_stream_another_worker_holds(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    roaming, name, page, channel = watched_editor(cluster, kube, channel_on=1)
    assert edit(roaming, 0, page, "level", "debug-from-worker-0") == 200
    channel.until_text("debug-from-worker-0", timeout=3.0)
    assert edit(roaming, 1, page, "level", "trace-from-worker-1") == 200  # the page is known on worker 1 too
    channel.until_text("trace-from-worker-1", timeout=3.0)
    assert read(kube, NAMESPACE, "configmaps", name)["data"] == {"level": "info"}  # type: ignore[index]
    roaming.close()


def test_a_channel_on_a_worker_still_loading_the_objects_leaves_the_page_as_it_is_until_they_come(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    roaming, name, page = opened_editor(cluster, kube)
    assert edit(roaming, 0, page, "level", "typed-on-worker-0") == 200
    kube.faults.set_latency(1.0)  # worker 1's first list of the objects takes a second
    try:
        channel = roaming.on(1).stream(t.cast(str, page.channel_url))
        channel.until_text(": connected")
        channel.drain(0.6)
        assert not channel.messages, "a render before the objects came would replace the page with a placeholder"
    finally:
        kube.faults.set_latency(0.0)
    channel.until_text("typed-on-worker-0", timeout=10.0)
    assert "Loading" not in channel.text
    roaming.close()


def test_edits_on_any_worker_are_counted_in_one_sequence_that_every_workers_renders_carry(
    kube: KubeSimulator, clean_redis: RedisServer
) -> None:
    cluster = Cluster(kube, clean_redis, count=3)
    try:
        roaming, _, page, channel = watched_editor(cluster, kube, channel_on=2)
        answered = []
        for index, value in enumerate(["first", "second", "third"]):
            assert edit(roaming, index % 2, page, "level", value) == 200
            answered.append(roaming.answered["X-KRM-Edits"])
        assert answered == ["1", "2", "3"]
        channel.until_text('data-krm-edits="3"', timeout=3.0)
        for message in channel.messages:  # a render carrying a count shows every edit up to it
            for count in re.findall(r'data-krm-edits="(\d+)"', message.data):
                assert ["first", "second", "third"][int(count) - 1] in message.data, message.data
        roaming.close()
    finally:
        cluster.stop()


def test_an_edit_builds_on_the_edits_another_worker_took_just_before(cluster: Cluster, kube: KubeSimulator) -> None:
    roaming, name, page = opened_editor(cluster, kube, a="", b="", c="", d="")
    for index, key in enumerate(["a", "b", "c", "d"]):  # straight after the other worker's answer
        assert edit(roaming, index % 2, page, key, f"{key}-on-{index % 2}") == 200
    assert save(roaming, 1, page) in ("saved", "saved-pending")  # the write is made either way
    assert read(kube, NAMESPACE, "configmaps", name)["data"] == {  # type: ignore[index]
        "a": "a-on-0",
        "b": "b-on-1",
        "c": "c-on-0",
        "d": "d-on-1",
    }
    roaming.close()


def test_a_worker_that_stops_ends_its_page_streams_for_a_reconnect_that_finds_the_draft(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    roaming, _, page, channel = watched_editor(cluster, kube, channel_on=0)
    assert edit(roaming, 0, page, "level", "typed-before-the-restart") == 200
    channel.until_text("typed-before-the-restart")
    stopping = gevent.spawn(shut_down, cluster.workers[0])
    channel.until_end()
    assert channel.text.endswith("retry: 1000\n\n") and "krm-close" not in channel.text
    stopping.join(timeout=10)
    again = roaming.on(1).stream(t.cast(str, page.channel_url))  # the browser's reconnect, on another worker
    again.until_text("typed-before-the-restart")
    roaming.close()


def test_drafts_are_all_back_after_every_worker_restarted(cluster: Cluster, kube: KubeSimulator) -> None:
    roaming, name, page = opened_editor(cluster, kube, level="info", keep="me")
    assert edit(roaming, 0, page, "level", "survives-restart") == 200
    assert edit(roaming, 1, page, "keep", "edited-on-1") == 200
    markers = roaming.open(1, editor_url(name)).html.count("krm-dirty-marker")
    assert markers >= 2
    roaming.close()
    cluster.restart()
    again = roaming.open(1, editor_url(name))
    assert "survives-restart" in again.html and "edited-on-1" in again.html
    assert again.html.count("krm-dirty-marker") == markers
    outcome = save(roaming, 0, again)
    assert outcome in ("saved", "saved-pending"), outcome
    deadline = 5.0
    while read(kube, NAMESPACE, "configmaps", name)["data"] != {"level": "survives-restart", "keep": "edited-on-1"}:  # type: ignore[index]
        gevent.sleep(0.05)
        deadline -= 0.05
        assert deadline > 0, "the restored draft was not saved"
    roaming.close()


def test_a_recovery_copy_is_back_after_every_worker_restarted(cluster: Cluster, kube: KubeSimulator) -> None:
    roaming, name, page, channel = watched_editor(cluster, kube, channel_on=1)
    assert edit(roaming, 0, page, "level", "typed-before-the-deletion") == 200
    uid = read(kube, NAMESPACE, "configmaps", name)["metadata"]["uid"]  # type: ignore[index]
    path = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{name}"
    assert admin_writer(kube).request("DELETE", path, body={"preconditions": {"uid": uid}}).ok
    channel.until_text("deleted while you had unsaved changes", timeout=5.0)  # worker 1 offers the copy
    deadline = 5.0
    while not [field for field in records(cluster.redis) if field.startswith("recovery:")]:
        gevent.sleep(0.05)
        deadline -= 0.05
        assert deadline > 0, f"no recovery copy was written: {records(cluster.redis)}"
    roaming.close()
    cluster.restart()
    again = roaming.open(0, editor_url(name))  # a reload, on a new worker that never saw the object
    assert "deleted while you had unsaved changes" in again.html
    assert "typed-before-the-deletion" in again.html and "krm-recovery-copy" in again.html
    roaming.close()


def list_url(**more: str) -> str:
    scope = Scope(target=TARGET, version="v1", resource="configmaps", namespace=NAMESPACE)
    extra = "".join(f"&{k}={v}" for k, v in more.items())
    return f"/list?scope={quote(scope.canonical_query(), safe='')}&delete=1{extra}"


def review(roaming: Roaming, index: int, page: Page, action: str = "", **form: str) -> tuple[int, str]:
    listing = page.component("list")
    url = f"/krm/review/{listing}" + (f"/{action}" if action else "")
    if not action:
        browser = roaming.on(index)
        answer = browser.client.get(url, headers=page.headers(listing))
        return answer.status_code, answer.get_data(as_text=True)
    return roaming.post(index, url, form, page.headers(listing))


def test_staged_creates_and_deletes_are_shared_by_every_worker_and_back_after_a_restart(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    doomed = new_configmap(kube)
    roaming = Roaming(cluster)
    page = roaming.open(0, list_url())
    uid = read(kube, NAMESPACE, "configmaps", doomed)["metadata"]["uid"]  # type: ignore[index]
    assert review(roaming, 0, page, "delete", uid=uid)[0] == 200
    fresh = f"cm-{secrets.token_hex(4)}"
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": fresh}, "data": {"k": "v"}})
    assert review(roaming, 1, page, "create", body=body)[0] == 200
    status, shown = review(roaming, 0, page)
    assert status == 200 and doomed in shown and fresh in shown, shown
    cluster.restart()
    page = roaming.open(1, list_url())
    status, shown = review(roaming, 1, page)
    assert status == 200 and doomed in shown and fresh in shown, shown
    status, saved = review(roaming, 0, page, "save")
    assert status == 200, saved
    assert read(kube, NAMESPACE, "configmaps", doomed) is None
    assert read(kube, NAMESPACE, "configmaps", fresh)["data"] == {"k": "v"}  # type: ignore[index]
    assert not [name for name in records(cluster.redis) if name.startswith("staging:")]
    status, shown = review(roaming, 1, page)
    assert status == 200 and doomed not in shown and fresh not in shown, shown
    roaming.close()


def test_sign_out_ends_the_draft_session_on_every_worker(cluster: Cluster, kube: KubeSimulator) -> None:
    roaming, name, page = opened_editor(cluster, kube)
    assert edit(roaming, 1, page, "level", "before-sign-out") == 200
    assert any(k.startswith("edit:") for k in records(cluster.redis))
    copied = roaming.cookie
    assert roaming.get(1, "/logout") == 200
    assert records(cluster.redis) == {}
    roaming.cookie = copied  # a copy of the cookie taken before signing out opens nothing
    stale = roaming.open(0, editor_url(name))
    assert "before-sign-out" not in stale.html
    roaming.cookie = None
    roaming.on(0).sign_in("editor")
    roaming._keep(roaming.browsers[0])
    fresh = roaming.open(1, editor_url(name))
    assert "before-sign-out" not in fresh.html
    roaming.close()


@pytest.fixture
def writes(kube: KubeSimulator) -> Iterator[list[str]]:
    """The names of the ConfigMaps PATCHed in the namespace, one entry per write that arrived."""
    arrived: list[str] = []

    def admitted(request: AdmissionRequest) -> None:
        if request.namespace == NAMESPACE and request.verb == "patch" and not request.dry_run:
            arrived.append(str(request.name))

    remove = kube.faults.mutate_writes(admitted)
    yield arrived
    remove()


def test_a_save_whose_answer_was_lost_on_one_worker_is_never_resent_by_another(
    cluster: Cluster, kube: KubeSimulator, writes: list[str]
) -> None:
    roaming, name, page = opened_editor(cluster, kube)
    assert edit(roaming, 0, page, "level", "lost-answer") == 200
    kube.faults.lose_next_write_response()
    assert save(roaming, 0, page) == "unknown"
    assert writes.count(name) == 1
    outcome = save(roaming, 1, page)
    assert outcome == "saved", outcome
    assert writes.count(name) == 1  # worker 1 read and found the write applied; it sent nothing
    roaming.close()


def test_a_save_in_flight_on_a_worker_that_died_is_never_resent(
    cluster: Cluster, kube: KubeSimulator, writes: list[str]
) -> None:
    roaming, name, page = opened_editor(cluster, kube)
    assert edit(roaming, 0, page, "level", "in-flight") == 200
    flows_before = {k for k in records(cluster.redis) if k.startswith("flow:")}
    assert flows_before == set()
    held = read(kube, NAMESPACE, "configmaps", name)
    assert held is not None
    # What a worker writes before it sends the PATCH, and then dies before the answer: the state
    # says a write was in flight, the write reached the server, and its lock expired.
    backend = RedisBackend.from_url(cluster.redis.url)
    session_records = next(iter(cluster.redis.client().scan_iter(match="krm:*:records"))).decode()
    edit_field = next(k for k in records(cluster.redis) if k.startswith("edit:"))
    store_id, uid = edit_field.split(":")[1:]
    flow_field = f"flow:{store_id}:{uid}"
    patch = {"data": {"level": "in-flight"}}
    state = {
        "uid": uid,
        "phase": "writing",
        "intent": {"uid": uid, "resourceVersion": held["metadata"]["resourceVersion"], "patch": patch},
    }
    cluster.redis.client().hset(session_records, flow_field, json.dumps(state))
    merge_patch(
        kube,
        NAMESPACE,
        "configmaps",
        name,
        {"metadata": {"resourceVersion": held["metadata"]["resourceVersion"]}, **patch},
    )
    sent = writes.count(name)
    outcome = save(roaming, 1, page)
    assert outcome == "saved", outcome
    assert writes.count(name) == sent  # a guarded read, never the write again
    backend.close()
    roaming.close()


def test_one_save_at_a_time_per_editor_across_workers(cluster: Cluster, kube: KubeSimulator, writes: list[str]) -> None:
    roaming, name, page = opened_editor(cluster, kube)
    assert edit(roaming, 0, page, "level", "locked") == 200
    edit_field = next(k for k in records(cluster.redis) if k.startswith("edit:"))
    store_id, uid = edit_field.split(":")[1:]
    session_key = next(iter(cluster.redis.client().scan_iter(match="krm:*:records"))).decode()
    tag = session_key.split("{")[1].split("}")[0]
    with roaming.on(0).client.session_transaction() as browser_session:
        session_id = browser_session[SESSION_ID_KEY]
    # the session's records and locks are named by its digest, never by the id the cookie carries
    assert tag == session_tag(session_id)
    assert session_id not in session_key
    backend = RedisBackend.from_url(cluster.redis.url)
    # another worker's Save holds the editor's lock
    lock_key = f"krm:{{{tag}}}:lock:flow:{store_id}:{uid}"
    cluster.redis.client().set(lock_key, "999", px=30_000)
    assert save(roaming, 1, page) == "busy"
    assert save(roaming, 0, page) == "busy"
    assert writes.count(name) == 0
    cluster.redis.client().delete(lock_key)
    assert save(roaming, 1, page) in ("saved", "saved-pending")
    assert writes.count(name) == 1
    backend.close()
    roaming.close()


def test_drafts_are_temporarily_unavailable_while_redis_is_down_and_nothing_acknowledged_is_lost(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    roaming, name, page = opened_editor(cluster, kube)
    assert edit(roaming, 0, page, "level", "before-outage") == 200
    cluster.redis.stop()
    try:
        assert edit(roaming, 0, page, "level", "during-outage") == 200  # kept by worker 0, written later
        other = Roaming(cluster)
        refused = other.on(1).client.get(editor_url(name))
        assert refused.status_code == 503
        assert "temporarily unavailable" in refused.get_data(as_text=True).lower()
        other.close()
    finally:
        cluster.redis.start()
    deadline = 10.0
    while "during-outage" not in json.dumps(records(cluster.redis)):
        gevent.sleep(0.1)
        deadline -= 0.1
        assert deadline > 0, f"the change made during the outage was not written: {records(cluster.redis)}"
    again = roaming.open(1, editor_url(name))
    assert "during-outage" in again.html
    roaming.close()
