"""Saving a Deployment in a real browser while its controller writes status continuously.

Under ``krm-spec/v1`` the editor never sees status writes, so the version it holds falls behind
within a fraction of a second. A Save is based on the newest version known (the shared watch's, or
the save hook's preflight read when the watch lags) whose projection is what the person sees, so
status churn rarely bounces it; a change the person could see still produces the refreshed
message, and every click sends exactly one PATCH (counted at the simulator), never an automatic
re-send.

:data:`SAVES` saves are made (8; ``FLASK_KRM_CHURN_SAVES`` for more, 30 for the full run), and at
most :data:`BOUNCES_ALLOWED` of them (one in ten, at least two) may need a second click: without
the newest-base rule nearly every one would.
"""

from __future__ import annotations

import os
import threading
import typing as t
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Page, expect

from flask_krm.testing import KubeSimulator
from flask_krm.testing.simulator import WriteRequest
from tests.browser.conftest import MERGE_PATCH, goto_live, type_over, unique
from tests.browser.host_app import NAMESPACE
from tests.browser.save.conftest import SignedIn
from tests.browser.save.test_outcomes import STALE, deployment_body, faults_of, outcome

pytestmark = pytest.mark.browser

SAVES: t.Final = int(os.environ.get("FLASK_KRM_CHURN_SAVES") or 8)
BOUNCES_ALLOWED: t.Final = max(2, SAVES // 10)
FIRST_CLICK_SAVED_AT_LEAST: t.Final = SAVES - BOUNCES_ALLOWED
STATUS_EVERY: t.Final = 0.2
"""Seconds between two status writes of the controller."""

RECORD_EACH_OUTCOME: t.Final = """() => {
    window.krmShown = [];
    const region = document.querySelector(".krm-outcome");
    new MutationObserver(records => {
        for (const record of records) for (const node of record.addedNodes) {
            if (!(node instanceof Element)) continue;
            const shown = node.matches(".krm-save-outcome") ? node : node.querySelector(".krm-save-outcome");
            if (shown) window.krmShown.push(shown.getAttribute("data-krm-outcome"));
        }
    }).observe(region, {childList: true, subtree: true});
}"""
"""Keeps the kind of every outcome element the region receives, in order, in ``window.krmShown``."""

FINAL_AFTER: t.Final = (
    """count => window.krmShown.length > count && window.krmShown[window.krmShown.length - 1] !== "saved-pending" """
)


@dataclass
class Controller:
    """Writes the Deployment's status every :data:`STATUS_EVERY` seconds on a thread, as a rollout does."""

    apps: kubernetes.client.AppsV1Api
    name: str
    writes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Controller:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(STATUS_EVERY):
            self.writes += 1
            status = {
                "observedGeneration": 1,
                "replicas": 1,
                "readyReplicas": self.writes % 2,
                "updatedReplicas": self.writes,
            }
            # the raw response: building client models would take the simulator's CPU in this process
            response = self.apps.patch_namespaced_deployment_status(
                self.name, NAMESPACE, {"status": status}, _content_type=MERGE_PATCH, _preload_content=False
            )
            response.read()
            response.release_conn()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


@dataclass
class SpecPatches:
    """The PATCHes of the Deployment itself (not its status, nor a dry run) that reach the simulator."""

    name: str
    count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: WriteRequest) -> None:
        if request.verb == "patch" and request.name == self.name and not request.subresource and not request.dry_run:
            with self._lock:
                self.count += 1


@pytest.fixture
def churning(kube: KubeSimulator, apps: kubernetes.client.AppsV1Api) -> Iterator[tuple[str, Controller, SpecPatches]]:
    name = unique("churn")
    apps.create_namespaced_deployment(NAMESPACE, t.cast(t.Any, deployment_body(name)))
    patches = SpecPatches(name)
    remove = faults_of(kube).mutate_writes(patches)
    controller = Controller(kubernetes.client.AppsV1Api(kube.api_client("admin")), name).start()
    yield name, controller, patches
    controller.stop()
    remove()


def click_save(page: Page) -> str:
    """Click Save once; the outcome the click ends with (after a pending confirmation)."""
    shown = len(t.cast(list[str], page.evaluate("window.krmShown")))
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_function(FINAL_AFTER, arg=shown)
    return t.cast(str, page.evaluate("window.krmShown[window.krmShown.length - 1]"))


def save_until_saved(page: Page) -> tuple[bool, int]:
    """Save, and save again after each refreshed message, as the person would: whether the first
    click saved, and how many clicks it took."""
    clicks, result = 1, click_save(page)
    while result != "saved":
        assert result == "version-stale", result
        expect(outcome(page).locator(".krm-outcome-message")).to_have_text(STALE)
        assert clicks < 5, "a deliberate retry goes through"
        clicks, result = clicks + 1, click_save(page)
    return clicks == 1, clicks


def set_replicas(page: Page, value: int) -> None:
    replicas = page.get_by_label("Replicas", exact=True)
    type_over(replicas, str(value))
    expect(replicas).not_to_have_attribute("data-krm-unsent", "")


def test_saves_during_continuous_status_writes_rarely_bounce_and_never_resend(
    signed_in: SignedIn,
    apps: kubernetes.client.AppsV1Api,
    kube: KubeSimulator,
    churning: tuple[str, Controller, SpecPatches],
    tmp_path: Path,
) -> None:
    name, controller, patches = churning
    page = goto_live(signed_in("editor"), f"/deployments/{name}")
    page.evaluate(RECORD_EACH_OUTCOME)
    first_click_saved = 0
    clicks = 0
    for i in range(SAVES):
        wanted = 2 + i
        set_replicas(page, wanted)
        first, taken = save_until_saved(page)
        first_click_saved += first
        clicks += taken
        assert apps.read_namespaced_deployment(name, NAMESPACE).spec.replicas == wanted
        assert patches.count == clicks, "exactly one PATCH per click"
    assert controller.writes >= SAVES, "status was written continuously throughout"
    assert first_click_saved >= FIRST_CLICK_SAVED_AT_LEAST, f"{first_click_saved} of {SAVES} saved on the first click"

    # A change the person can see lands after their view and before the PATCH (the watch lags):
    # the Save is refused once, the refreshed base is explained, and nothing is sent again.
    faults = faults_of(kube)
    faults.hold_watch_events()
    try:
        set_replicas(page, 50)
        apps.patch_namespaced_deployment(name, NAMESPACE, {"spec": {"minReadySeconds": 7}}, _content_type=MERGE_PATCH)
        colleague = 1
        clicks += 1
        assert click_save(page) == "version-stale"
        expect(outcome(page).locator(".krm-outcome-message")).to_have_text(STALE)
        assert patches.count == clicks + colleague
        current = apps.read_namespaced_deployment(name, NAMESPACE).spec
        assert (current.replicas, current.min_ready_seconds) == (2 + SAVES - 1, 7)
        expect(page.get_by_label("Replicas", exact=True)).to_have_value("50")
        expect(page.get_by_label("Min ready seconds", exact=True)).to_have_value("7")
        page.screenshot(path=str(tmp_path / "save-refreshed-during-churn.png"), full_page=True)
    finally:
        faults.release_watch_events()
    clicks += save_until_saved(page)[1]
    assert patches.count == clicks + colleague
    current = apps.read_namespaced_deployment(name, NAMESPACE).spec
    assert (current.replicas, current.min_ready_seconds) == (50, 7)
