"""The example in production shape: gunicorn with gevent workers, metrics scraped by a real
Prometheus, and a SIGTERM to the master with many streams open.

- Metrics: 3 workers on one Redis, keep-alive off (any worker takes any request, the scrapes
  too); Chromium edits and saves (one Save refused with 409), raw JSON streams receive live
  changes; Debian's ``prometheus`` scrapes the example every second and PromQL over what it
  scraped must give the totals across workers, with no series naming an object, a namespace or a
  person.
- SIGTERM: :data:`STREAMS` page streams and as many JSON streams open (200 each with
  ``KRM_SIGTERM_STREAMS=200``), and a real page in Chromium with unsaved edits. Readiness must
  answer 503 within a second, every stream must get its ending (memory backend: the copy-out in
  Chromium, then the close; Redis: ``retry`` and the page reconnects by itself to the next
  deployment's workers, its draft intact), the workers must exit within 5 seconds and gunicorn
  must never log its graceful-timeout kill. The measured times are printed
  (``-s``) and written to ``tmp_path/times.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import typing as t
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from flask_krm.testing import KubeSimulator
from tests.browser.conftest import type_over, value_field
from tests.browser.proxy import TcpProxy
from tests.browser.save.test_outcomes import RECORD_OUTCOMES, faults_of
from tests.redis_server import RedisServer

from .conftest import CHROMIUM, CHROMIUM_ARGS
from .operations import JSON_STREAM, Gunicorn, RawStreams, ReadinessProber, Session, free_port, get

pytestmark = pytest.mark.browser

NAMESPACE: t.Final = "demo"
MERGE_PATCH: t.Final = "application/merge-patch+json"
STREAMS: t.Final = int(os.environ.get("KRM_SIGTERM_STREAMS") or 50)
"""Page streams, and as many JSON streams, open at SIGTERM (``KRM_SIGTERM_STREAMS=200``: the
measurement in docs/guide/operations.md; the default keeps the test run short)."""
PAGES: t.Final = STREAMS
JSON_STREAMS: t.Final = STREAMS
SESSIONS: t.Final = max(1, -(-STREAMS // 50))  # each session keeps at most 64 pages
FORBIDDEN_LABELS: t.Final = frozenset({"name", "namespace", "principal", "user", "session", "uid", "pid"})
PROMETHEUS: t.Final = shutil.which("prometheus") or "/usr/bin/prometheus"


@pytest.fixture
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        yield simulator


@pytest.fixture
def core(kube: KubeSimulator) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(kube.api_client(user="admin"))


@pytest.fixture
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def configmap(core: kubernetes.client.CoreV1Api, name: str) -> str:
    core.create_namespaced_config_map(
        NAMESPACE, {"metadata": {"name": name}, "data": {"greeting": "hello", "other": "kept"}}
    )
    return f"/namespaces/{NAMESPACE}/configmaps/{name}"


def signed_in_page(browser: Browser, base_url: str, user: str = "editor") -> Page:
    page = browser.new_context(base_url=base_url).new_page()
    page.goto("/sign-in")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", user)
    page.click("button[type=submit]")
    expect(page.locator("header.site .who strong")).to_have_text(user)
    return page


def open_live(page: Page, path: str) -> None:
    page.goto(path)
    expect(page.locator(".krm-connection").first).to_have_text("Live")


def edit(page: Page, key: str, text: str) -> None:
    type_over(value_field(page, key), text)
    expect(value_field(page, key)).not_to_have_attribute("data-krm-unsent", "")


def save(page: Page, expected: str) -> None:
    shown = len(t.cast(list[str], page.evaluate("window.krmOutcomes")))
    page.get_by_role("button", name="Save", exact=True).click()
    try:
        page.wait_for_function(
            "([n, kind]) => window.krmOutcomes.slice(n).includes(kind)", arg=[shown, expected], timeout=20_000
        )
    except Exception:
        shown_now = page.locator(".krm-outcome").first.inner_text()
        raise AssertionError(f"no {expected!r} outcome: {page.evaluate('window.krmOutcomes')}; {shown_now}") from None


# -- metrics -----------------------------------------------------------------------------------


class Prometheus:
    """Debian's prometheus, scraping ``target`` every second."""

    def __init__(self, target: str, folder: Path) -> None:
        folder.mkdir()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = folder / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
            "scrape_configs:\n  - job_name: krm\n    metrics_path: /metrics\n"
            f"    static_configs:\n      - targets: ['{target}']\n"
        )
        self.log = (folder / "prometheus.log").open("w")
        self.process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def api(self, path: str, **params: str) -> t.Any:
        status, body = get(f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}", timeout=5)
        assert status == 200, (status, body)
        answer = json.loads(body)
        assert answer["status"] == "success", answer
        return answer["data"]

    def value(self, promql: str) -> float | None:
        result = self.api("query", query=promql)["result"]
        return float(result[0]["value"][1]) if result else None

    def wait_for(self, promql: str, expected: float, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        found = None
        while time.monotonic() < deadline:
            try:
                found = self.value(promql)
            except AssertionError:
                found = None  # not up yet
            if found == expected:
                return
            time.sleep(0.3)
        raise AssertionError(f"{promql} is {found}, expected {expected}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)
        self.log.close()


def frames(received: bytes) -> int:
    """The spec-v1 frames in a JSON stream's bytes."""
    return received.count(b'data: {"seq":')


def test_prometheus_totals_across_three_workers(
    kube: KubeSimulator, core: kubernetes.client.CoreV1Api, browser: Browser, tmp_path: Path
) -> None:
    name = "metrics-cm"
    path = configmap(core, name)
    with RedisServer() as redis:
        example = Gunicorn(
            kube.kubeconfig_path,
            tmp_path / "gunicorn",
            workers=3,
            drafts_url=redis.url,
            env={"FLASK_KRM_METRICS_PATH": "/metrics", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "multiproc")},
        )
        prometheus = Prometheus(f"127.0.0.1:{example.port}", tmp_path / "prometheus")
        streams = RawStreams()
        try:
            page = signed_in_page(browser, example.url)
            open_live(page, path)
            page.evaluate(RECORD_OUTCOMES)
            edit(page, "greeting", "first save")
            save(page, "saved")
            # A colleague's change lands after the person's view and before the PATCH: 409
            faults = faults_of(kube)
            faults.hold_watch_events()
            try:
                edit(page, "greeting", "second save")
                core.patch_namespaced_config_map(name, NAMESPACE, {"data": {"other": "theirs"}})
                save(page, "version-stale")
            finally:
                faults.release_watch_events()
            session = Session(example.url).sign_in("viewer")
            # three streams on each of two workers: the kernel may hand every connection of a quiet
            # machine to one worker, so the others are paused while each worker takes its streams
            holders = sorted(example.worker_pids())[:2]
            for holder in holders:
                with only_worker(example, holder):
                    for _ in range(3):
                        streams.open(example.port, JSON_STREAM, session.cookie, "json")
                    assert streams.pump(lambda: all(b'"synced"' in c.received for c in streams.of("json")), 30)
            for n in range(10):
                core.patch_namespaced_config_map(name, NAMESPACE, {"data": {"count": str(n)}})
            assert streams.pump(lambda: all(c.received.count(b'"count"') >= 10 for c in streams.of("json")), 30)
            delivered = sum(frames(c.received) for c in streams.of("json"))
            outcomes = t.cast(list[str], page.evaluate("window.krmOutcomes"))

            prometheus.wait_for('sum(krm_streams_open{kind="json"})', 6)
            prometheus.wait_for('sum(krm_streams_open{kind="page"})', 1)
            prometheus.wait_for('sum(krm_writes_total{operation="patch",outcome="version-stale"})', 1)
            prometheus.wait_for('sum(krm_writes_total{operation="patch",outcome=~"saved.*"})', 1)
            prometheus.wait_for('sum(krm_writes_total{operation="patch"})', 2)
            prometheus.wait_for('sum(krm_deliveries_total{kind="json"})', delivered)
            assert (prometheus.value("sum(krm_upstream_watches)") or 0) >= 1
            # the lag is observed once per written chunk: the ten changes may reach a stream as one
            assert (prometheus.value('sum(krm_delivery_lag_seconds_count{resource="configmaps"})') or 0) >= 6
            # every scrape, whichever worker answered it, counted the streams both holders serve
            seen = []
            for _ in range(4):
                seen.append(prometheus.value('sum(krm_streams_open{kind="json"})'))
                time.sleep(1.0)  # the next scrape
            assert seen == [6.0] * 4, seen

            series = prometheus.api("series", **{"match[]": '{__name__=~"krm_.+"}'})
            assert len(series) > 20
            labels = {label for entry in series for label in entry}
            assert not labels & FORBIDDEN_LABELS, labels & FORBIDDEN_LABELS
            values = {value for entry in series for value in entry.values()}
            assert not values & {name, NAMESPACE, "editor", "viewer"}, values & {name, NAMESPACE, "editor", "viewer"}
            (tmp_path / "promql.json").write_text(json.dumps({"delivered": delivered, "outcomes": outcomes}))
        finally:
            streams.close()
            prometheus.stop()
            example.stop()


@contextlib.contextmanager
def only_worker(example: Gunicorn, pid: int) -> Iterator[None]:
    """Every worker of ``example`` but ``pid`` paused (SIGSTOP) meanwhile: new connections go to ``pid``."""
    paused = sorted(example.worker_pids() - {pid})
    for other in paused:
        os.kill(other, signal.SIGSTOP)
    try:
        yield
    finally:
        for other in paused:
            os.kill(other, signal.SIGCONT)


# -- SIGTERM -----------------------------------------------------------------------------------


def open_streams(example: Gunicorn, streams: RawStreams, page_path: str) -> None:
    """:data:`PAGES` page channels over :data:`SESSIONS` sessions and :data:`JSON_STREAMS` JSON
    streams, all open and past their first bytes."""
    sessions = [Session(example.url).sign_in("editor") for _ in range(SESSIONS)]
    for n in range(PAGES):
        session = sessions[n % SESSIONS]
        streams.open(example.port, session.channel_path(page_path), session.cookie, "page")
    for n in range(JSON_STREAMS):
        streams.open(example.port, JSON_STREAM, sessions[n % SESSIONS].cookie, "json")
    assert streams.pump(
        lambda: (
            all(b": connected" in c.received for c in streams.of("page"))
            and all(b'"synced"' in c.received for c in streams.of("json"))
        ),
        60,
    ), "every stream opened"


def sigterm_and_measure(example: Gunicorn, streams: RawStreams, prober: ReadinessProber) -> dict[str, float]:
    """SIGTERM to the master; the seconds until readiness said 503, until the last stream's ending
    arrived, until the server closed the last connection (after its keep-alive wait) and until the
    last old worker exited."""
    workers = example.worker_pids()
    assert len(workers) == example.workers
    time.sleep(0.3)
    start = time.monotonic()
    os.kill(example.process.pid, signal.SIGTERM)
    assert streams.pump(lambda: all(c.ended_at is not None for c in streams.connections), 10), "every stream ended"
    last_bytes = max(t.cast(float, c.last_data_at) for c in streams.connections) - start
    closed = max(t.cast(float, c.ended_at) for c in streams.connections) - start
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() and "Z" not in _state(pid) for pid in workers):
        assert time.monotonic() < deadline, "the old workers did not exit"
        time.sleep(0.02)
    exited = time.monotonic() - start
    example.process.wait(timeout=10)
    not_ready = prober.first(503, start)
    assert not_ready is not None, f"readiness never answered 503: {prober.answers[-20:]}"
    return {
        "readiness_503_s": round(not_ready[0], 3),
        "readiness_503_probe_sent_s": round(not_ready[1], 3),
        "last_ending_received_s": round(last_bytes, 3),
        "last_connection_closed_s": round(closed, 3),
        "workers_exited_s": round(exited, 3),
    }


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def assert_endings(streams: RawStreams, page_ending: bytes) -> None:
    for connection in streams.of("page"):
        assert page_ending in connection.received, bytes(connection.received[-300:])
    for connection in streams.of("json"):
        tail = bytes(connection.received[-400:])
        assert b'"type":"error"' in tail and b'"code":"INTERNAL"' in tail and b'"terminal":true' in tail, tail


def assert_times(times: dict[str, float], example: Gunicorn, tmp_path: Path) -> None:
    print(f"\nSIGTERM with {PAGES} page and {JSON_STREAMS} JSON streams open: {times}")
    (tmp_path / "times.json").write_text(json.dumps(times))
    assert times["readiness_503_s"] <= 1.0, times
    assert times["last_ending_received_s"] <= 2.0, times
    assert times["workers_exited_s"] <= 5.0, times
    log = example.error_log.read_text()
    assert "graceful timeout" not in log.lower(), log[-3000:]
    assert "Traceback" not in log, log[-3000:]


def test_sigterm_with_memory_drafts_ends_every_stream_and_shows_the_copy_out(
    kube: KubeSimulator, core: kubernetes.client.CoreV1Api, browser: Browser, tmp_path: Path
) -> None:
    path = configmap(core, "sigterm-memory")
    example = Gunicorn(kube.kubeconfig_path, tmp_path / "gunicorn", workers=1)
    streams = RawStreams()
    prober = ReadinessProber(f"{example.url}/readyz")
    try:
        page = signed_in_page(browser, example.url)
        open_live(page, path)
        edit(page, "greeting", "typed before the restart")
        open_streams(example, streams, path)
        times = sigterm_and_measure(example, streams, prober)

        removed = page.locator(".krm-removed")
        expect(removed).to_contain_text("The server is restarting")
        expect(removed.locator(".krm-recovery-copy")).to_contain_text('"greeting": "typed before the restart"')
        expect(page.locator(".krm-connection").first).to_contain_text("restarting")
        page.screenshot(path=str(tmp_path / "sigterm-copy-out.png"), full_page=True)
        assert_endings(streams, b"event: krm-close\ndata: The server is restarting")
        assert_times(times, example, tmp_path)
    finally:
        prober.stop()
        streams.close()
        example.stop()


def test_sigterm_with_redis_drafts_sends_pages_to_the_next_workers_with_their_drafts(
    kube: KubeSimulator, core: kubernetes.client.CoreV1Api, browser: Browser, tmp_path: Path
) -> None:
    path = configmap(core, "sigterm-redis")
    with RedisServer() as redis:
        old = Gunicorn(kube.kubeconfig_path, tmp_path / "old", workers=3, drafts_url=redis.url)
        new = Gunicorn(kube.kubeconfig_path, tmp_path / "new", workers=3, drafts_url=redis.url)
        streams = RawStreams()
        prober = ReadinessProber(f"{old.url}/readyz")
        with TcpProxy(old.url) as service:  # the Service in front of the deployment
            try:
                page = signed_in_page(browser, service.url)
                open_live(page, path)
                edit(page, "greeting", "typed before the restart")
                open_streams(old, streams, path)
                service.retarget(new.url)  # the old pods left the endpoints
                times = sigterm_and_measure(old, streams, prober)

                # the old processes are gone: the page reconnects by itself to the new workers, where
                # its draft is, and their stream is live
                assert old.process.poll() is not None
                expect(page.locator(".krm-connection").first).to_have_text("Live")
                expect(value_field(page, "greeting")).to_have_value("typed before the restart")
                core.patch_namespaced_config_map("sigterm-redis", NAMESPACE, {"data": {"other": "after the restart"}})
                expect(value_field(page, "other")).to_have_value("after the restart")
                page.reload()  # and a reload is served by the new workers from Redis
                expect(page.locator(".krm-connection").first).to_have_text("Live")
                expect(value_field(page, "greeting")).to_have_value("typed before the restart")
                page.screenshot(path=str(tmp_path / "sigterm-redis-reconnected.png"), full_page=True)
                assert_endings(streams, b"retry: 1000")
                assert_times(times, old, tmp_path)
            finally:
                prober.stop()
                streams.close()
                old.stop()
                new.stop()
