"""Three servers behind a round-robin balancer, one Redis: what no answered edit may lose.

Three gunicorn servers (one gevent worker each, keep-alive off, drafts in one Redis) behind a TCP
proxy that hands each new connection to the next server in turn, so a page's requests, its
channel and a session's JSON streams land on different servers.

- Two tabs type into two fields of one ConfigMap, the keys falling in turn: every key typed is in
  the draft and in what Save writes.
- Tab A signs out (or signs in as someone else) while tab B holds an editor with unsaved changes
  and JSON streams of the session are open: with no keystroke in tab B, within a second its editor
  shows the signed-out state and the unsaved changes for copy-out, its write buttons are off, and
  every JSON stream has ended with its terminal event, whichever server held it.
- While Redis is down an open page says drafts are unavailable and keeps what is typed; the notice
  clears when Redis is back, and the edit is in the draft.
"""

from __future__ import annotations

import os
import string
import subprocess
import sys
import time
import typing as t
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Browser, Page, expect

from flask_krm.testing import KubeSimulator
from tests.browser.conftest import ROOT, new_configmap, type_over, value_field, wait_live
from tests.browser.host_app import CONFIGMAPS
from tests.browser.proxy import TcpProxy
from tests.browser.save.test_outcomes import data_of, outcome, save
from tests.redis_server import RedisServer, free_port

pytestmark = pytest.mark.browser

SERVERS: t.Final = 3
KEYS: t.Final = 24
KEY_EVERY: t.Final = 0.05
"""Seconds between two keys (one in each tab in turn)."""


def gunicorn(kubeconfig: str, drafts_url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "KRM_TEST_KUBECONFIG": kubeconfig, "KRM_TEST_DRAFTS_URL": drafts_url}
    env.pop("KUBECONFIG", None)
    command = [sys.executable, "-m", "gunicorn", "--config", "example_app/gunicorn_conf.py", "--workers", "1"]
    command += ["--keep-alive", "0", "--bind", f"127.0.0.1:{port}", "--no-control-socket"]
    command += ["--error-logfile", str(log), "tests.browser.workers_app:app"]
    return subprocess.Popen(command, cwd=ROOT, env=env), f"http://127.0.0.1:{port}"


def wait_serving(url: str, timeout: float = 90.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/login/nobody", timeout=2).read()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not start")


@dataclass(frozen=True)
class Fleet:
    proxy: TcpProxy
    redis: RedisServer

    @property
    def url(self) -> str:
        return self.proxy.url


@pytest.fixture(scope="module")
def fleet(kube: KubeSimulator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """The round-robin proxy in front of :data:`SERVERS` servers sharing one Redis."""
    logs = tmp_path_factory.mktemp("round-robin")
    with RedisServer() as redis:
        servers = [gunicorn(kube.kubeconfig_path, redis.url, logs / f"server-{n}.log") for n in range(SERVERS)]
        try:
            for _, url in servers:
                wait_serving(url)
            with TcpProxy(*(url for _, url in servers)) as proxy:
                yield Fleet(proxy, redis)
        finally:
            for process, _ in servers:
                process.terminate()
            for process, _ in servers:
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()


@pytest.fixture
def on_fleet(browser: Browser, fleet: Fleet) -> Iterator[Callable[[str], Page]]:
    """``on_fleet(user)``: a new page of a browser profile signed in as ``user``, through the balancer."""
    contexts = []

    def open_as(user: str) -> Page:
        context = browser.new_context(base_url=fleet.url)
        contexts.append(context)
        page = context.new_page()
        page.goto(f"/login/{user}")
        return page

    yield open_as
    for context in contexts:
        context.close()


WITHIN: t.Final = 1.0
"""Seconds from the sign-out's answer to the other tab's signed-out state (and each stream's end)."""
STREAMS: t.Final = 3
"""JSON streams held at once (with tab B's page channel and tab A's requests, within the browser's
six connections per origin)."""

_OPEN_STREAMS = (
    """(count) => {
    window.krmStreams = [];
    for (let i = 0; i < count; i++) {
        const held = {ended: null, opened: false};
        const source = held.source = new EventSource("/krm/resource-stream/v1?%s");
        source.onopen = () => { held.opened = true; };
        source.onmessage = (event) => {
            if (event.data.includes('"UNAUTHENTICATED"') && held.ended === null) {
                held.ended = performance.now();
                source.close();
            }
        };
        window.krmStreams.push(held);
    }
}"""
    % CONFIGMAPS
)


def open_streams(page: Page, fleet: Fleet) -> None:
    """:data:`STREAMS` JSON streams of the page's session, one connection each, handed to the
    servers in turn by the balancer: held by at least two of them."""
    before = dict(fleet.proxy.connections)
    page.evaluate(_OPEN_STREAMS, STREAMS)
    page.wait_for_function("window.krmStreams.every(held => held.opened)")
    reached = [server for server, count in fleet.proxy.connections.items() if count > before[server]]
    assert len(reached) >= 2, f"every stream reached one server ({reached}): the test proves nothing"


def ended_streams(page: Page, since: float) -> list[float]:
    """For each stream: seconds from ``since`` (the page's clock) to its terminal event, or -1."""
    return t.cast(
        list[float],
        page.evaluate(
            "(since) => window.krmStreams.map(held => held.ended === null ? -1 : (held.ended - since) / 1000)", since
        ),
    )


def edited_tab(page: Page, core: kubernetes.client.CoreV1Api, typed: str) -> str:
    name = new_configmap(core, "ends", {"a": "start", "b": "other"})
    page.goto(f"/configmaps/{name}")
    wait_live(page)
    type_over(value_field(page, "a"), typed)
    expect(value_field(page, "a")).not_to_have_attribute("data-krm-unsent", "")
    return name


def assert_ended_with_copy_out(page: Page, typed: str) -> float:
    """Waits at most :data:`WITHIN` for the signed-out copy-out of ``typed``; returns when it came."""
    removed = page.locator(".krm-removed")
    expect(removed).to_contain_text("You are signed out", timeout=WITHIN * 1000)
    shown = time.monotonic()
    expect(removed.locator(".krm-recovery-copy")).to_contain_text(typed, timeout=500)
    expect(page.locator(".krm-connection").first).to_contain_text("signed out", timeout=500)
    for button in page.locator("button[hx-post]").all():
        expect(button).to_be_disabled(timeout=500)
    return shown


def screenshots(page: Page, shot: str) -> None:
    if os.environ.get("KRM_SCREENSHOTS"):
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.screenshot(path=os.path.join(os.environ["KRM_SCREENSHOTS"], f"{shot}-{width}.png"), full_page=True)


@pytest.mark.parametrize("ending", ["/logout", "/login/admin"])
def test_signing_out_or_in_as_someone_else_in_one_tab_ends_every_tab_and_stream_of_the_session_at_once(
    on_fleet: Callable[[str], Page], fleet: Fleet, kube: KubeSimulator, ending: str
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    first = on_fleet("editor")
    second = first.context.new_page()
    typed = f"unsaved before {ending.strip('/').replace('/', ' ')}"
    edited_tab(second, core, typed)
    streams = first.context.new_page()
    streams.goto("/login/editor")  # a page of the same session to hold the JSON streams
    open_streams(streams, fleet)
    started = t.cast(float, streams.evaluate("performance.now()"))
    clock = time.monotonic()
    first.goto(ending)  # tab A: sign out, or sign in as someone else
    answered = time.monotonic() - clock
    took = assert_ended_with_copy_out(second, typed) - clock - answered
    assert took <= WITHIN, f"tab B showed the end {took:.2f}s after the sign-out's answer"
    deadline = time.monotonic() + WITHIN
    while min(ended_streams(streams, started)) < 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    ended = ended_streams(streams, started)
    assert min(ended) >= 0, f"streams still open a second after the sign-out: {ended}"
    assert max(ended) <= answered + WITHIN, f"a stream ended later than a second after the sign-out: {ended}"
    screenshots(second, "signed-out-copy-out" if ending == "/logout" else "signed-in-other")
    second.reload()
    assert "unsaved before" not in second.content()  # the draft is gone with the session, on every worker


def test_an_open_page_says_drafts_are_unavailable_while_redis_is_down_and_loses_no_key(
    on_fleet: Callable[[str], Page], fleet: Fleet, kube: KubeSimulator
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    page = on_fleet("editor")
    name = edited_tab(page, core, "before the outage")
    notice = page.locator(".krm-drafts-notice").first
    expect(notice).to_have_count(0)
    fleet.redis.stop()
    try:
        expect(notice).to_contain_text("Drafts are unavailable", timeout=5_000)
        type_over(value_field(page, "a"), "typed while redis is down")  # kept in the page (or on a worker)
        time.sleep(1.0)
        expect(value_field(page, "a")).to_have_value("typed while redis is down")
        screenshots(page, "drafts-unavailable")
    finally:
        fleet.redis.start()
    expect(page.locator(".krm-drafts-notice")).to_have_count(0, timeout=10_000)
    expect(value_field(page, "a")).not_to_have_attribute("data-krm-unsent", "", timeout=15_000)
    page.reload()
    wait_live(page)
    expect(value_field(page, "a")).to_have_value("typed while redis is down")
    assert data_of(core, name)["a"] == "start"  # a draft, never written to Kubernetes


def test_two_tabs_typing_into_two_fields_of_one_object_through_a_round_robin_balancer_keep_every_key(
    on_fleet: Callable[[str], Page], fleet: Fleet, kube: KubeSimulator
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    name = new_configmap(core, "balanced", {"a": "a-", "b": "b-"})
    first = on_fleet("editor")
    tabs: list[Page] = [first, first.context.new_page()]
    for tab in tabs:
        tab.goto(f"/configmaps/{name}")
        wait_live(tab)
    fields = [value_field(tabs[0], "a"), value_field(tabs[1], "b")]
    for field in fields:
        field.click()
        field.press("End")
    keys = (string.ascii_lowercase + string.digits) * 2
    typed = ["", ""]
    tick = time.monotonic()
    for index in range(KEYS):
        side = index % 2
        fields[side].press(keys[index])  # each tab types into its own field, in turn
        typed[side] += keys[index]
        tick += KEY_EVERY
        time.sleep(max(0.0, tick - time.monotonic()))
    for field in fields:
        expect(field).not_to_have_attribute("data-krm-unsent", "", timeout=15_000)
    expect(value_field(tabs[1], "a")).to_have_value("a-" + typed[0], timeout=10_000)  # each tab shows both
    expect(value_field(tabs[0], "b")).to_have_value("b-" + typed[1], timeout=10_000)
    save(tabs[0])
    expect(outcome(tabs[0])).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "a-" + typed[0], "b": "b-" + typed[1]}
    assert all(count > 0 for count in fleet.proxy.connections.values()), fleet.proxy.connections
