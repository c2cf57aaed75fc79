"""Three gunicorn gevent workers on one real Redis, no sticky sessions, driven by Chromium.

gunicorn serves the saving host app (``tests.browser.workers_app``) with :data:`WORKERS` gevent
workers on one port, keep-alive off, so each request of a page is accepted by whichever worker
takes it; its access log names the worker (pid) of every request. The Kubernetes simulator runs in
this process, so the tests count the writes that reach it. Faults are real: ``kill -9`` of the
worker holding the page's stream (found by its socket in ``/proc``), ``SIGHUP`` of the master
(every worker replaced), and the worker serving a Save killed while its write is in flight.
"""

from __future__ import annotations

import os
import signal
import string
import subprocess
import sys
import time
import typing as t
from collections.abc import Callable, Iterator
from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Browser, Page, expect

from flask_krm.testing import KubeSimulator
from flask_krm.testing.simulator import WriteRequest
from tests.browser.conftest import (
    ROOT,
    create_configmap,
    goto_live,
    new_configmap,
    row,
    type_over,
    unique,
    value_field,
    wait_live,
)
from tests.browser.save.conftest import WriteCounter
from tests.browser.save.test_churn import RECORD_EACH_OUTCOME, click_save
from tests.browser.save.test_outcomes import data_of, outcome, save
from tests.browser.save.test_review import names, review, review_item, stage_create
from tests.redis_server import RedisServer, free_port

pytestmark = pytest.mark.browser

WORKERS: t.Final = 3
KEY_EVERY: t.Final = 0.1


class Gunicorn:
    """gunicorn with :data:`WORKERS` gevent workers serving the saving host app, drafts in Redis."""

    def __init__(self, kubeconfig: str, drafts_url: str, log_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.access_log = log_dir / "access.log"
        self.error_log = log_dir / "error.log"
        env = {**os.environ, "KRM_TEST_KUBECONFIG": kubeconfig, "KRM_TEST_DRAFTS_URL": drafts_url}
        env.pop("KUBECONFIG", None)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "--config",
                "example_app/gunicorn_conf.py",
                "--workers",
                str(WORKERS),
                "--keep-alive",
                "0",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--access-logfile",
                str(self.access_log),
                "--access-logformat",
                "%(p)s %(m)s %(U)s %(s)s",
                "--no-control-socket",
                "--error-logfile",
                str(self.error_log),
                "tests.browser.workers_app:app",
            ],
            cwd=ROOT,
            env=env,
        )
        self.wait_for_workers(WORKERS)

    def worker_pids(self) -> set[int]:
        """The live worker processes (children of the master)."""
        found = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == self.process.pid:
                found.add(int(entry.name))
        return found

    def wait_for_workers(self, count: int, timeout: float = 90.0) -> None:
        import urllib.request

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.worker_pids()) >= count:
                try:
                    urllib.request.urlopen(f"{self.url}/login/nobody", timeout=2).read()
                    return
                except OSError:
                    pass
            time.sleep(0.1)
        raise AssertionError(f"gunicorn did not start {count} workers: {self.error_log.read_text()[-2000:]}")

    def logged(self) -> int:
        """The requests logged so far (for :meth:`pids_serving`'s ``after``)."""
        return len(self.access_log.read_text().splitlines())

    def pids_serving(self, path_part: str, after: int = 0) -> set[int]:
        """The workers that answered requests whose path contains ``path_part`` (access log), of
        those logged after the first ``after``."""
        pids = set()
        for line in self.access_log.read_text().splitlines()[after:]:
            pid, _method, path, _status = (line.split(" ") + ["", "", "", ""])[:4]
            pid = pid.strip("<>")  # gunicorn writes the pid as <1234>
            if path_part in path and pid.isdigit():
                pids.add(int(pid))
        return pids

    def stream_holder(self) -> int:
        """The worker holding a long-lived connection on the port (with keep-alive off: the page's stream)."""
        first = self._connections()
        time.sleep(0.4)
        second = self._connections()
        held = {inode: pid for inode, pid in second.items() if inode in first}
        assert len(set(held.values())) == 1, f"expected one worker holding the stream, found {held}"
        return next(iter(held.values()))

    def _connections(self) -> dict[str, int]:
        established = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                lines = Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == self.port and fields[3] == "01":  # ESTABLISHED, server side
                    established.add(fields[9])
        out = {}
        for pid in self.worker_pids():
            try:
                for fd in Path(f"/proc/{pid}/fd").iterdir():
                    target = os.readlink(fd)
                    if target.startswith("socket:[") and target[8:-1] in established:
                        out[target[8:-1]] = pid
            except OSError:
                continue
        return out

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
def workers(
    kube: KubeSimulator, redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gunicorn]:
    server = Gunicorn(kube.kubeconfig_path, redis_server.url, tmp_path_factory.mktemp("gunicorn"))
    yield server
    server.stop()


@pytest.fixture
def on_workers(browser: Browser, workers: Gunicorn) -> Iterator[Callable[[str], Page]]:
    """``on_workers(user)``: a new page of a browser profile signed in as ``user``, on the workers."""
    contexts = []

    def open_as(user: str) -> Page:
        context = browser.new_context(base_url=workers.url)
        contexts.append(context)
        page = context.new_page()
        page.goto(f"/login/{user}")
        return page

    yield open_as
    for context in contexts:
        context.close()


@pytest.fixture
def count_writes(kube: KubeSimulator) -> Iterator[Callable[[str], WriteCounter]]:
    import threading

    removers = []

    def start(name: str) -> WriteCounter:
        counter = WriteCounter(name, [], threading.Lock())
        removers.append(kube.faults.mutate_writes(counter))
        return counter

    yield start
    for remove in removers:
        remove()


def typed_keys(page: Page, field_key: str, count: int, during: Callable[[int], None]) -> str:
    """Type ``count`` keys at the end of the field, one per :data:`KEY_EVERY`; ``during(index)``
    runs before each key."""
    field = value_field(page, field_key)
    field.click()
    page.keyboard.press("End")
    keys = (string.ascii_lowercase + string.digits) * 4
    typed = ""
    tick = time.monotonic()
    for index in range(count):
        during(index)
        page.keyboard.press(keys[index])
        typed += keys[index]
        tick += KEY_EVERY
        time.sleep(max(0.0, tick - time.monotonic()))
    return typed


def test_typing_conflicts_saves_and_second_tabs_work_across_workers_without_stickiness(
    on_workers: Callable[[str], Page],
    workers: Gunicorn,
    kube: KubeSimulator,
    count_writes: Callable[[str], WriteCounter],
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    name = new_configmap(core, "workers", {"a": "start-", "b": "other"})
    writes = count_writes(name)
    page = on_workers("editor")
    page.goto(f"/configmaps/{name}")
    wait_live(page)
    second = page.context.new_page()  # a second tab of the same session
    second.goto(f"/configmaps/{name}")
    wait_live(second)
    typed = typed_keys(page, "a", 20, lambda index: None)
    expect(value_field(second, "a")).to_have_value("start-" + typed)  # reached the other tab's worker too
    core.patch_namespaced_config_map(name, "demo", {"data": {"a": "theirs"}})  # someone else changes it
    expect(page.locator(".krm-conflicted")).to_have_count(1)
    expect(second.locator(".krm-conflicted")).to_have_count(1)
    page.locator(".krm-conflicted").get_by_role("button", name="Keep mine").click()
    expect(second.locator(".krm-conflicted")).to_have_count(0)
    assert writes.count() == 1  # someone else's
    save(second)
    expect(outcome(second)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "start-" + typed, "b": "other"}
    assert writes.count() == 2  # and one Save
    for _ in range(10):  # which worker accepts a connection is the kernel's choice: ask until two did
        if len(workers.pids_serving(f"/configmaps/{name}") | workers.pids_serving("/krm/")) >= 2:
            break
        second.reload()
        wait_live(second)
    served = workers.pids_serving(f"/configmaps/{name}") | workers.pids_serving("/krm/")
    assert len(served) >= 2, f"every request of the page reached one worker ({served}): the test proves nothing"
    expect(value_field(second, "a")).to_have_value("start-" + typed)


def test_review_lists_stage_and_save_across_workers_without_stickiness(
    on_workers: Callable[[str], Page], workers: Gunicorn, kube: KubeSimulator
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    tag = unique("review")
    doomed, created = f"{tag}-doomed", f"{tag}-created"
    create_configmap(core, doomed, {"greeting": "bye"})
    logged = workers.logged()
    page = on_workers("editor")
    listed = f"/configmaps?configmaps.q={tag}"
    goto_live(page, listed)
    expect(review(page)).to_contain_text("No pending changes.")
    row(page, doomed).get_by_role("button", name=f"Delete {doomed}").click()
    expect(review_item(page, "delete", doomed)).to_be_visible()
    stage_create(page, {"metadata": {"name": created}, "data": {"greeting": "hello"}})
    expect(review_item(page, "create", created)).to_be_visible()
    expect(review_item(page, "delete", doomed)).to_be_visible()  # the create's answer lists the delete too
    second = goto_live(page.context.new_page(), listed)  # a second tab of the same session
    expect(review_item(second, "delete", doomed)).to_be_visible()
    expect(review_item(second, "create", created)).to_be_visible()
    expect(row(second, doomed)).to_have_attribute("data-krm-pending-delete", "")
    assert names(core) >= {doomed} and created not in names(core), "nothing is written before Save all"
    review(second).get_by_role("button", name="Save all").click()
    expect(review(second).locator(".krm-review-saved")).to_have_text("2 changes saved")
    expect(row(page, created)).to_contain_text("hello")  # the first tab's live list, on its own worker
    expect(row(page, doomed)).to_have_count(0)
    assert created in names(core) and doomed not in names(core)
    for _ in range(10):  # which worker accepts a connection is the kernel's choice: ask until two did
        page.reload()
        wait_live(page)
        expect(review(page)).to_contain_text("No pending changes.")  # on whichever worker answers
        if len(workers.pids_serving("/krm/review/", after=logged)) >= 2:
            break
    served = workers.pids_serving("/krm/review/", after=logged)
    assert len(served) >= 2, f"every review request reached one worker ({served}): the test proves nothing"


def test_kill_9_of_the_streams_worker_while_typing_loses_no_key(
    on_workers: Callable[[str], Page], workers: Gunicorn, kube: KubeSimulator
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    name = new_configmap(core, "kill", {"a": "start-", "b": "other"})
    page = on_workers("editor")
    page.goto(f"/configmaps/{name}")
    wait_live(page)
    killed: list[int] = []

    def kill_the_stream_worker(index: int) -> None:
        if index == 10:
            pid = workers.stream_holder()
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    typed = typed_keys(page, "a", 40, kill_the_stream_worker)
    assert killed
    workers.wait_for_workers(WORKERS)
    wait_live(page)
    field = value_field(page, "a")
    expect(field).to_have_value("start-" + typed)
    expect(field).not_to_have_attribute("data-krm-unsent", "")
    page.reload()
    wait_live(page)
    expect(value_field(page, "a")).to_have_value("start-" + typed)  # the server's draft is whole
    assert workers.stream_holder() not in killed


def test_drafts_staged_changes_and_recovery_copies_are_back_after_every_worker_restarted(
    on_workers: Callable[[str], Page], workers: Gunicorn, kube: KubeSimulator
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    name = new_configmap(core, "restart", {"a": "start-", "b": "other"})
    gone = new_configmap(core, "restart-gone", {"a": "start"})
    doomed = new_configmap(core, "restart-doomed", {"a": "start"})
    page = on_workers("editor")
    page.goto(f"/configmaps/{name}")
    wait_live(page)
    typed = typed_keys(page, "a", 8, lambda index: None)
    expect(value_field(page, "a")).not_to_have_attribute("data-krm-unsent", "")
    expect(page.locator(".krm-dirty-marker").first).to_be_visible()
    markers = page.locator(".krm-dirty-marker").count()
    removed = goto_live(page.context.new_page(), f"/configmaps/{gone}")  # edited, then deleted by someone else
    type_over(value_field(removed, "a"), "typed then deleted")
    expect(value_field(removed, "a")).not_to_have_attribute("data-krm-unsent", "")
    core.delete_namespaced_config_map(gone, "demo")
    expect(removed.locator(".krm-removed")).to_contain_text("deleted while you had unsaved changes")
    listed = goto_live(page.context.new_page(), f"/configmaps?configmaps.q={doomed}")  # a staged delete
    row(listed, doomed).get_by_role("button", name=f"Delete {doomed}").click()
    expect(review_item(listed, "delete", doomed)).to_be_visible()
    before = workers.worker_pids()
    os.kill(workers.process.pid, signal.SIGHUP)  # gunicorn replaces every worker
    expect(page.locator(".krm-connection").first).not_to_have_text("Live", timeout=15_000)
    deadline = time.monotonic() + 30
    while (workers.worker_pids() & before or len(workers.worker_pids()) < WORKERS) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not workers.worker_pids() & before, "the workers were not replaced"
    # The old workers ended every stream at once (retry), so the page waits for a new worker to
    # serve: under load, booting one can take longer than the page's wait below.
    workers.wait_for_workers(WORKERS)
    wait_live(page)  # the page reconnected by itself, to a new worker
    more = typed_keys(page, "a", 2, lambda index: None)
    expect(value_field(page, "a")).not_to_have_attribute("data-krm-unsent", "")
    page.reload()
    wait_live(page)
    expect(value_field(page, "a")).to_have_value("start-" + typed + more)
    expect(page.locator(".krm-dirty-marker")).to_have_count(markers)
    removed.reload()
    expect(removed.locator(".krm-removed .krm-recovery-copy")).to_contain_text('"a": "typed then deleted"')
    if os.environ.get("KRM_SCREENSHOTS"):
        for width in (1280, 390):
            removed.set_viewport_size({"width": width, "height": 900})
            removed.screenshot(path=os.path.join(os.environ["KRM_SCREENSHOTS"], f"recovery-after-restart-{width}.png"))
    listed.reload()
    wait_live(listed)
    expect(review_item(listed, "delete", doomed)).to_be_visible()
    expect(row(listed, doomed)).to_have_attribute("data-krm-pending-delete", "")
    assert doomed in names(core)


def test_a_save_in_flight_when_its_worker_dies_is_never_written_twice(
    on_workers: Callable[[str], Page],
    workers: Gunicorn,
    kube: KubeSimulator,
    count_writes: Callable[[str], WriteCounter],
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    name = new_configmap(core, "inflight", {"a": "start", "b": "other"})
    page = on_workers("editor")
    page.goto(f"/configmaps/{name}")
    wait_live(page)
    typed_keys(page, "a", 5, lambda index: None)
    expect(value_field(page, "a")).not_to_have_attribute("data-krm-unsent", "")
    writes = count_writes(name)
    arrived: list[int] = []

    def slow(request: WriteRequest) -> None:
        if request.name == name and request.verb == "patch" and not request.dry_run:
            arrived.append(1)
            time.sleep(2.0)  # the write is in flight; its worker dies meanwhile

    remove = kube.faults.mutate_writes(slow)
    try:
        save(page)
        deadline = time.monotonic() + 10
        while not arrived and time.monotonic() < deadline:
            time.sleep(0.02)
        assert arrived, f"the Save never reached the server: {outcome(page).inner_text()!r}"
        for pid in workers.worker_pids():  # the worker sending it dies (and every other, to be sure)
            os.kill(pid, signal.SIGKILL)
    finally:
        remove()
    workers.wait_for_workers(WORKERS)
    wait_live(page)
    page.evaluate(RECORD_EACH_OUTCOME)
    deadline = time.monotonic() + 30
    while True:  # the dead worker's lock expires; meanwhile a Save answers "busy"
        shown = click_save(page)
        if shown != "busy" or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert shown == "saved", shown
    assert writes.count() == 1, "the Save was sent again"
    assert data_of(core, name)["a"].startswith("start")
