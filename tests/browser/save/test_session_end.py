"""A session that ends in one tab ends in every other tab and stream at once, on every worker.

The three gunicorn gevent workers of :mod:`tests.browser.save.test_workers` (Redis, no sticky
sessions, keep-alive off, so the tabs' requests and streams land on whichever worker accepts
them). Tab B holds an editor with unsaved changes and JSON streams of the same session are open;
tab A signs out (or signs in as someone else). With no keystroke in tab B, within a second its
editor shows the signed-out state and the unsaved changes for copy-out, its write buttons are off,
and every JSON stream has ended with its terminal event, whichever worker held it.

While Redis is down an open page says drafts are unavailable, keeps what is typed, and clears the
notice when Redis is back.
"""

from __future__ import annotations

import os
import time
import typing as t
from collections.abc import Callable

import kubernetes.client
import pytest
from playwright.sync_api import Page, expect

from flask_krm.testing import KubeSimulator
from tests.browser.conftest import new_configmap, type_over, value_field, wait_live
from tests.browser.host_app import CONFIGMAPS
from tests.browser.save import test_workers as three_workers
from tests.browser.save.test_outcomes import data_of
from tests.browser.save.test_workers import Gunicorn
from tests.redis_server import RedisServer

pytestmark = pytest.mark.browser

redis_server = three_workers.redis_server
workers = three_workers.workers
on_workers = three_workers.on_workers

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


def open_streams(page: Page, workers: Gunicorn) -> None:
    """:data:`STREAMS` JSON streams of the page's session, held by at least two workers (the
    connections on the port that are new and stay open: keep-alive is off)."""
    for _ in range(8):
        before = set(workers._connections())
        page.evaluate(_OPEN_STREAMS, STREAMS)
        page.wait_for_function("window.krmStreams.every(held => held.opened)")
        time.sleep(0.3)
        held = {pid for inode, pid in workers._connections().items() if inode not in before}
        if len(held) >= 2:
            return
        page.evaluate("window.krmStreams.forEach(held => held.source.close()); window.krmStreams = []")
    raise AssertionError("every stream reached one worker: the test proves nothing")


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
    on_workers: Callable[[str], Page], workers: Gunicorn, kube: KubeSimulator, ending: str
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    first = on_workers("editor")
    second = first.context.new_page()
    typed = f"unsaved before {ending.strip('/').replace('/', ' ')}"
    edited_tab(second, core, typed)
    streams = first.context.new_page()
    streams.goto("/login/editor")  # a page of the same session to hold the JSON streams
    open_streams(streams, workers)
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
    on_workers: Callable[[str], Page], workers: Gunicorn, kube: KubeSimulator, redis_server: RedisServer
) -> None:
    core = kubernetes.client.CoreV1Api(kube.api_client("admin"))
    page = on_workers("editor")
    name = edited_tab(page, core, "before the outage")
    notice = page.locator(".krm-drafts-notice").first
    expect(notice).to_have_count(0)
    redis_server.stop()
    try:
        expect(notice).to_contain_text("Drafts are unavailable", timeout=5_000)
        type_over(value_field(page, "a"), "typed while redis is down")  # kept in the page (or on a worker)
        time.sleep(1.0)
        expect(value_field(page, "a")).to_have_value("typed while redis is down")
        screenshots(page, "drafts-unavailable")
    finally:
        redis_server.start()
    expect(page.locator(".krm-drafts-notice")).to_have_count(0, timeout=10_000)
    expect(value_field(page, "a")).not_to_have_attribute("data-krm-unsent", "", timeout=15_000)
    page.reload()
    wait_live(page)
    expect(value_field(page, "a")).to_have_value("typed while redis is down")
    assert data_of(core, name)["a"] == "start"  # a draft, never written to Kubernetes
