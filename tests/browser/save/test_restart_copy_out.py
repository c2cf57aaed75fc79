"""A server that stops while drafts live only in its memory: the person is offered a copy of what
they typed, in the editor, before the page is closed for good (Chromium, a server of its own)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Browser, BrowserContext, expect

from flask_krm.testing import KubeSimulator
from tests.browser.conftest import new_configmap, serving, type_over, value_field, wait_live

pytestmark = pytest.mark.browser


@pytest.fixture
def own_server(kube: KubeSimulator, tmp_path: Path) -> Iterator[dict[str, str]]:
    with serving(tmp_path / "responses.log", kube.kubeconfig_path) as info:
        yield info


@pytest.fixture
def context(browser: Browser, own_server: dict[str, str]) -> Iterator[BrowserContext]:
    made = browser.new_context(base_url=own_server["url"])
    yield made
    made.close()


def test_a_restart_offers_the_unsaved_changes_for_copy_out_and_closes_the_page(
    context: BrowserContext, own_server: dict[str, str], core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    name = new_configmap(core, "restart-copy", {"greeting": "hello", "other": "kept"})
    page = context.new_page()
    page.goto("/login/editor")
    page.goto(f"/configmaps/{name}")
    wait_live(page)
    type_over(value_field(page, "greeting"), "typed before the restart")
    expect(value_field(page, "greeting")).not_to_have_attribute("data-krm-unsent", "")
    os.kill(int(own_server["pid"]), signal.SIGTERM)
    removed = page.locator(".krm-removed")
    expect(removed).to_contain_text("The server is restarting")
    expect(removed.locator(".krm-recovery-copy")).to_contain_text('"greeting": "typed before the restart"')
    expect(removed.locator(".krm-recovery-changed")).to_contain_text("/data/greeting")
    expect(page.locator(".krm-connection").first).to_contain_text("restarting")
    for control in (".krm-action-save", ".krm-action-discard", ".krm-tabs"):
        expect(page.locator(control)).to_be_hidden()  # nothing to save to until the page is reloaded
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(tmp_path / "restart-copy-out.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(tmp_path / "restart-copy-out-390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.wait_for_timeout(1500)  # the page stays as it is: no reconnect replaces the copy
    expect(removed.locator(".krm-recovery-copy")).to_contain_text("typed before the restart")
